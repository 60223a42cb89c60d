"""The documentation site's sources (docs/): the API reference covers the public API,
the gallery's examples use only bundled or generated data, build outputs are ignored.
(The site itself is built by ``sphinx-build -W --keep-going -b html docs
docs/_build/html``, a CI step.)"""
import ast
import pathlib
import re

import pytest

import aucopt
import aucopt.datasets
import aucopt.extend
import aucopt.metrics
import aucopt.plot
from aucopt.registry import BUILTIN, get_class

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = sorted((DOCS / "examples").glob("plot_*.py"))


def _api_names():
    return set(re.findall(r"^   (\w+)$", (DOCS / "api.rst").read_text(), re.M))


def test_api_reference_lists_the_public_api():
    listed = _api_names()
    learners = {get_class(n).__name__ for n, o in aucopt.available().items() if o == BUILTIN}
    expected = (learners | set(aucopt.metrics.__all__) | set(aucopt.plot.__all__)
                | {n for n in aucopt.datasets.__all__ if n != "choose_index_dtype"}
                | set(aucopt.extend.__all__)
                | {"get", "available", "register", "load", "merge"})
    assert expected <= listed, sorted(expected - listed)


def test_gallery_has_the_six_examples_and_more():
    names = {p.stem for p in EXAMPLES}
    assert {"plot_text_psam_vs_linearsvc", "plot_roc_curve", "plot_kernelized",
            "plot_streaming", "plot_grid_search", "plot_dask"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_use_bundled_or_generated_data_and_draw(path):
    source = path.read_text()
    tree = ast.parse(source)
    assert ast.get_docstring(tree), "a gallery example starts with its title and text"
    calls = {node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
             for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, (ast.Attribute, ast.Name))}
    assert not calls & {"open", "load_svmlight", "iter_svmlight", "read_csv", "loadtxt"}
    assert "show" in calls  # a figure for the gallery


def test_build_outputs_are_ignored():
    ignored = (ROOT / ".gitignore").read_text().split()
    for path in ("docs/_build/", "docs/auto_examples/", "docs/generated/"):
        assert path in ignored


def test_defaults_page_gathers_auto_and_measured_parameters():
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    import sys

    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from aucopt_defaults import _chosen
        from numpydoc.docscrape import ClassDoc
    finally:
        sys.path.pop(0)
    params = {p.name: _chosen(p) for p in ClassDoc(get_class("psam"))["Parameters"]}
    assert params["lam"] and params["avg_power"]  # "auto"; measured
    assert not params["verbose"] and not params["pos_label"]
