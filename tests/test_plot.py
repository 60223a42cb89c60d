"""aucopt.plot (the optional extra [plot]) on the Agg backend, and ``aucopt eval --roc``."""
import io
import json
import os
import sys

import numpy as np
import pytest

import aucopt
import aucopt.plot
from aucopt.cli import main
from aucopt.datasets import dump_svmlight, load
from aucopt.metrics import roc_curve
from aucopt.testing import contract_data

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _fitted(**params):
    X, y = contract_data(0, n=120)
    X_val, y_val = contract_data(1, n=60)
    model = aucopt.get("psam", random_state=0, **params).fit(X, y,
                                                             validation_data=(X_val, y_val))
    return model, X_val, y_val


def test_roc_draws_the_curve_of_the_model_and_of_scores():
    model, X, y = _fitted()
    ax = aucopt.plot.roc(model, X, y)
    fpr, tpr, _ = roc_curve(y, model.decision_function(X))
    line = ax.get_lines()[-1]
    np.testing.assert_array_equal(line.get_xdata(), fpr)
    np.testing.assert_array_equal(line.get_ydata(), tpr)
    assert f"AUC {model.score(X, y):.4f}" in line.get_label()
    _, ax2 = plt.subplots()
    assert aucopt.plot.roc(model.decision_function(X), y=y, ax=ax2, label="s") is ax2
    assert ax2.get_lines()[-1].get_label().startswith("s (AUC")
    aucopt.plot.roc(-model.decision_function(X), y=y, ax=ax2, label="reversed")
    labels = [line.get_label() for line in ax2.get_lines()]
    assert labels.count("chance") == 1 and len(labels) == 3  # one chance line per axes
    with pytest.raises(ValueError, match="labels y"):
        aucopt.plot.roc(model, X)
    with pytest.raises(ValueError, match="rows X"):
        aucopt.plot.roc(model, y=y)


def test_history_draws_objective_and_validation_auc():
    model, _, _ = _fitted(n_epochs=4)
    ax = aucopt.plot.history(model)
    objective = ax.get_lines()[0]
    np.testing.assert_array_equal(objective.get_xdata(), [1, 2, 3, 4])
    np.testing.assert_array_equal(objective.get_ydata(), model.history_[:, 1])
    twin = [a for a in ax.figure.axes if a is not ax][0]
    np.testing.assert_array_equal(twin.get_lines()[0].get_ydata(), model.history_[:, 2])
    assert "4 passes" in ax.get_title()
    with pytest.raises(ValueError, match="has no history_"):
        aucopt.plot.history(aucopt.get("psam").partial_fit(*contract_data(2)))


def _record():
    return {"workloads": [
        {"name": "w1", "status": "ok", "contestants": [
            {"name": "a", "status": "ok", "median": 0.5, "extras": {"test AUC": "0.91"},
             "curve": [[0.1, 0.8], [0.3, 0.88], [0.5, 0.91]]},
            {"name": "b", "status": "ok", "median": 2.0, "extras": {"test AUC": 0.93}},
            {"name": "c", "status": "error: x", "times": []}]},
        {"name": "w2", "status": "ok", "contestants": [
            {"name": "a", "status": "ok", "median": 1.0, "extras": {"AUC": "0.7"}}]},
        {"name": "w3", "status": "ok", "contestants": [
            {"name": "a", "status": "ok", "median": 1.0, "extras": {"rows": 5}}]},
        {"name": "w4", "status": "unavailable: no data"}]}


def test_time_to_auc_one_panel_per_workload_with_an_auc(tmp_path):
    fig = aucopt.plot.time_to_auc(_record())
    panels = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in panels] == ["w1", "w2"]
    lines = panels[0].get_lines()
    np.testing.assert_array_equal(lines[0].get_xdata(), [0.1, 0.3, 0.5])  # a's curve
    assert [tuple(ln.get_xdata()) for ln in lines[1:]] == [(0.5,), (2.0,)]
    assert [tuple(ln.get_ydata()) for ln in lines[1:]] == [(0.91,), (0.93,)]
    assert panels[0].get_xscale() == "log"
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(_record()))
    assert len([a for a in aucopt.plot.time_to_auc(path).axes if a.get_visible()]) == 2
    with pytest.raises(ValueError, match="2 workloads"):
        aucopt.plot.time_to_auc(_record(), ax=plt.subplots()[1])
    with pytest.raises(ValueError, match="no workload"):
        aucopt.plot.time_to_auc({"workloads": _record()["workloads"][2:]})


def test_save_is_atomic(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    target = tmp_path / "f.png"
    aucopt.plot.save(fig, target)
    assert target.read_bytes().startswith(PNG)
    target.write_bytes(b"old")
    with pytest.raises(ValueError):
        aucopt.plot.save(fig, tmp_path / "f.unknownformat")
    assert sorted(os.listdir(tmp_path)) == ["f.png"]  # no partial or temporary file
    assert target.read_bytes() == b"old"


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    model, X, y = _fitted()
    with pytest.raises(ImportError, match=r'aucopt\[plot\]'):
        aucopt.plot.roc(model, X, y)


def test_eval_writes_the_roc_curve(tmp_path, monkeypatch):
    X, y = load("ionosphere")
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    dump_svmlight(X[:250], y[:250], train)
    dump_svmlight(X[250:], y[250:], test)
    model, roc = tmp_path / "m.npz", tmp_path / "roc.png"
    out = io.StringIO()
    assert main(["train", "psam", str(train), "--param", "random_state=0",
                 "--save", str(model)], out=out) == 0
    assert main(["eval", str(model), str(test), "--roc", str(roc)], out=out) == 0
    assert roc.read_bytes().startswith(PNG) and f"ROC curve    {roc}" in out.getvalue()
    assert main(["eval", str(model), str(test), "--roc", str(tmp_path / "no" / "r.png")],
                out=out) == 2
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    assert main(["eval", str(model), str(test), "--roc", str(roc)], out=out) == 2
