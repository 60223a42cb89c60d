"""``history_`` of fit (per pass: seconds, objective, validation AUC) and
``validation_data``: recorded by the driver for every built-in learner."""
import io

import numpy as np
import pytest

import aucopt
from aucopt.driver import HISTORY_COLUMNS
from aucopt.metrics import roc_auc
from aucopt.registry import BUILTIN, get_class
from aucopt.testing import assert_same_state, contract_data, fitted_state

NAMES = sorted(name for name, origin in aucopt.available().items() if origin == BUILTIN)


def _learner(name, **params):
    cls = get_class(name)
    if "random_state" in cls().get_params():
        params.setdefault("random_state", 0)
    return cls(**params)


@pytest.mark.parametrize("name", NAMES)
def test_every_learner_records_one_row_per_pass(name):
    X, y = contract_data(3, n=120)
    X_val, y_val = contract_data(4, n=60)
    model = _learner(name).fit(X, y, validation_data=(X_val, y_val))
    h = model.history_
    assert h.dtype == np.float64 and h.shape == (model.n_passes_, len(HISTORY_COLUMNS))
    seconds, objective, val_auc = h.T
    assert np.all(seconds > 0) and np.all(np.diff(seconds) >= 0)
    # the last row is the AUC of the fitted model (the intercept shifts every score)
    assert val_auc[-1] == pytest.approx(roc_auc(y_val, model.decision_function(X_val)),
                                        abs=1e-12)
    assert np.all((val_auc >= 0) & (val_auc <= 1))
    if hasattr(model, "_objective") or name in ("bam", "nbam", "fbam"):
        assert np.isfinite(objective).all()
    else:
        assert np.isnan(objective).all()


@pytest.mark.parametrize("monitor", ["rows", "pass"])
def test_objective_column_is_the_stopping_rules_objective(monitor):
    X, y = contract_data(5, n=200)
    model = _learner("psam", monitor=monitor).fit(X, y)  # n_epochs="auto"
    assert model.history_[-1, 1] == model.objective_
    assert np.isnan(model.history_[:, 2]).all()  # no validation data
    fixed = _learner("psam", monitor=monitor, n_epochs=3).fit(
        X, y, validation_data=contract_data(6))
    assert fixed.history_.shape == (3, 3) and np.isfinite(fixed.history_[:, 1]).all()
    # without validation data a fixed number of epochs scores no rows for an
    # objective; the pass's own objective costs nothing and is always there
    plain = _learner("psam", monitor=monitor, n_epochs=3).fit(X, y).history_[:, 1]
    assert (np.isfinite(plain) if monitor == "pass" else np.isnan(plain)).all()
    # the same passes give the same objectives, with or without the stopping rule
    np.testing.assert_allclose(fixed.history_[:, 1], model.history_[:3, 1], rtol=1e-12)


def test_history_survives_save_and_load():
    X, y = contract_data(6)
    model = _learner("sam", n_epochs=2).fit(X, y, validation_data=contract_data(7))
    buf = io.BytesIO()
    model.save(buf)
    buf.seek(0)
    loaded = aucopt.load(buf)
    np.testing.assert_array_equal(loaded.history_, model.history_)


def test_partial_fit_keeps_and_merge_drops_history():
    X, y = contract_data(8)
    a = _learner("psam", n_epochs=2, lam=1e-3).fit(X, y)
    before = a.history_.copy()
    a.partial_fit(X[:20], y[:20])
    np.testing.assert_array_equal(a.history_, before)
    b = _learner("psam", n_epochs=2, lam=1e-3).fit(*contract_data(9))
    assert not hasattr(aucopt.merge([a, b]), "history_")
    assert not hasattr(_learner("psam").partial_fit(X, y), "history_")


@pytest.mark.parametrize("validation_data, match", [
    ("not a pair", "must be a pair"),
    ((np.zeros((5, 8)),), "must be a pair"),
    ((np.zeros((10, 7)), np.r_[np.zeros(5), np.ones(5)]), "7 features"),
    ((np.zeros((10, 8)), np.zeros(9)), "9"),
    ((np.zeros((10, 8)), np.ones(10)), "one class only"),
    ((np.zeros((10, 8)), np.r_[np.zeros(5), np.full(5, 2)]), "2"),
    ((np.full((10, 8), np.nan), np.r_[np.zeros(5), np.ones(5)]), "NaN"),
])
def test_bad_validation_data_is_refused_and_leaves_the_model(validation_data, match):
    X, y = contract_data(10)
    model = _learner("psam", n_epochs=2).fit(X, y)
    before = fitted_state(model)
    with pytest.raises(ValueError, match=match):
        model.fit(X, y, validation_data=validation_data)
    assert_same_state(before, fitted_state(model), "after a refused validation_data")
