"""User-facing text cites papers by author, title and year: no pointers to files a
user of the package does not have (the project's research notes), in docstrings of
public objects, CLI help or the README, nor in code comments."""
import importlib
import inspect
import pathlib
import pkgutil
import re

import pytest

import aucopt

FORBIDDEN = re.compile(r"ALGORITHMS\.md|seeds/|\.\./shared|\berrat(um|a) \d|"
                       r"\b(D|N|O|F|A) (Sec|Alg|Table|Fig|eq|Ch|Prop|App)s?\.? ?\d|"
                       r"dissertation 00\d|paper 00\d|thesis 00\d|file ``00\d")


def _public_modules():
    names = ["aucopt"]
    for info in pkgutil.walk_packages(aucopt.__path__, "aucopt."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return [importlib.import_module(n) for n in names]


def _docstrings():
    for module in _public_modules():
        yield module.__name__, module.__doc__ or ""
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            yield f"{module.__name__}.{name}", inspect.getdoc(obj) or ""
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if callable(member) and not attr.startswith("_"):
                        yield f"{module.__name__}.{name}.{attr}", inspect.getdoc(member) or ""


def test_docstrings_do_not_point_at_research_notes():
    bad = [(where, m.group(0)) for where, doc in _docstrings()
           for m in [FORBIDDEN.search(doc)] if m]
    assert not bad, bad[:20]


def test_readme_and_cli_help_do_not_point_at_research_notes(capsys):
    readme = pathlib.Path(__file__).resolve().parents[1] / "README.md"
    hits = [m.group(0) for m in FORBIDDEN.finditer(readme.read_text())]
    assert not hits, hits[:10]
    from aucopt.cli import _build_parser

    parser = _build_parser()
    texts = [parser.format_help()]
    for action in parser._subparsers._group_actions:
        texts += [p.format_help() for p in action.choices.values()]
    assert not [t for t in texts if FORBIDDEN.search(t)]


@pytest.mark.parametrize("name", sorted(aucopt.available()))
def test_every_learner_docstring_names_its_paper(name):
    doc = inspect.getdoc(aucopt.registry.get_class(name)) or ""
    assert re.search(r"\b(19|20)\d\d\b", doc), f"{name}: no year of a cited paper"


@pytest.mark.parametrize("name", sorted(n for n in aucopt.available()
                                         if aucopt.registry.get_class(n)._retry_param))
def test_learners_that_retry_a_diverged_fit_document_n_retries(name):
    from aucopt._docs import entries

    found = [text for names, text in entries(aucopt.registry.get_class(name).__doc__,
                                             "Attributes") if "n_retries_" in names]
    assert len(found) == 1 and "``fit`` diverged" in found[0], found


@pytest.mark.parametrize("name", sorted(aucopt.available()))
def test_every_learner_docstring_documents_each_parameter_once(name):
    # a class decorator that adds the parameters' entries (repeated_passes) fails
    # silently when it lands on another class: this catches the gap
    from aucopt._docs import entries

    cls = aucopt.registry.get_class(name)
    documented = [n for names, _ in entries(cls.__doc__, "Parameters") for n in names]
    params = cls._get_param_names()
    assert sorted(p for p in documented if p in params) == sorted(params), (
        name, sorted(set(params) - set(documented)),
        sorted(p for p in set(documented) if documented.count(p) > 1))


# Code comments too: the research notes (their specification, design notes and list of
# errata) are not in the repository, so the source says what it means and cites papers.
NOTE_POINTER = re.compile(r"ALGORITHMS\.md|DESIGN\.md|\bDESIGN\b|(?i:\berrat(um|a)\b)")
SOURCE_SUFFIXES = {".py", ".pyx", ".pxd", ".md", ".sh", ".txt", ".cfg", ".toml"}


def test_source_does_not_point_at_research_notes():
    root = pathlib.Path(__file__).resolve().parents[1]
    me = pathlib.Path(__file__).resolve()
    files = [p for folder in ("aucopt", "tools", "tests") if (root / folder).is_dir()
             for p in sorted((root / folder).rglob("*"))
             if p.suffix in SOURCE_SUFFIXES and p.resolve() != me]
    assert any(p.name == "base.py" for p in files)  # the walk found the package
    hits = [f"{p.relative_to(root)}:{n}: {m.group(0)}" for p in files
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            for m in [NOTE_POINTER.search(line)] if m]
    assert not hits, hits[:20]


def test_docstrings_are_assembled_by_one_helper():
    """aucopt._docs.docstring assembles every docstring: no f-string docstrings,
    ``str.format`` / ``replace`` on templates or paragraph filling of their own."""
    root = pathlib.Path(__file__).resolve().parents[1] / "aucopt"
    pattern = re.compile(r'__doc__ = f"|^import textwrap|_PARAMS\.format\(|\.replace\("COEF|'
                         r'__doc__\.replace\(', re.M)
    hits = [f"{p.relative_to(root)}: {m.group(0)}" for p in sorted(root.rglob("*.py"))
            if p.name != "_docs.py" for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert not hits, hits


def test_the_docstring_helper():
    from aucopt._docs import docstring, entries

    doc = docstring('''Summary {what}.

    Parameters
    ----------
    a : int, default=1
        The a.

    Attributes
    ----------
    b_ : float
    ''', fields={"what": "here"}, paragraphs=["Merging: " + "word " * 30],
                    parameters=["    c : {{x}}\n        The c."], attributes=["    d_ : int"])
    assert doc.startswith("Summary here.\n\n    Merging: word")
    assert all(len(line) <= 84 for line in doc.splitlines())
    assert doc.index("Merging") < doc.index("Parameters") < doc.index("    c : {{x}}") \
        < doc.index("Attributes") < doc.index("    d_ : int")
    assert [names for names, _ in entries(doc)] == [("a",), ("c",)]
    assert [names for names, _ in entries(doc, "Attributes")] == [("b_",), ("d_",)]
    # a part of a docstring only has its fields filled
    part = docstring("\n    x : int, default={d}", fields={"d": 3})
    assert part == "\n    x : int, default=3"
