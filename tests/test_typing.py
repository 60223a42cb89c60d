"""The package is typed (PEP 561 marker) and its public functions are annotated."""
import importlib.resources
import inspect
import pathlib
import typing

import pytest

import aucopt
import aucopt.datasets
import aucopt.metrics
import aucopt.plot

PUBLIC = [aucopt.get, aucopt.load, aucopt.merge, aucopt.available, aucopt.register,
          aucopt.metrics.roc_auc, aucopt.metrics.roc_curve, aucopt.metrics.precision_at_k,
          aucopt.metrics.optroc_accuracy, aucopt.datasets.load, aucopt.datasets.list_datasets,
          aucopt.datasets.load_svmlight, aucopt.datasets.iter_svmlight,
          aucopt.datasets.dump_svmlight, aucopt.datasets.split, aucopt.datasets.binarize,
          aucopt.datasets.scale, aucopt.plot.roc, aucopt.plot.history,
          aucopt.plot.time_to_auc, aucopt.plot.save]


def test_py_typed_is_shipped():
    assert importlib.resources.files("aucopt").joinpath("py.typed").is_file()
    pyproject = pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml"
    assert 'aucopt = ["py.typed"]' in pyproject.read_text()  # package-data: in the wheel


@pytest.mark.parametrize("func", PUBLIC, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_public_functions_are_annotated(func):
    hints = typing.get_type_hints(func)  # every annotation resolves
    params = [p for p in inspect.signature(func).parameters.values()]
    assert all(p.name in hints for p in params), [p.name for p in params if p.name not in hints]
    assert "return" in hints
