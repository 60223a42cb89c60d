"""Stratified folds, cross-validated AUC and GridSearch, checked against plain loops."""
import numpy as np
import pytest

import aucopt
from aucopt.datasets import Scaler, load, split
from aucopt.metrics import roc_auc
from aucopt.model_selection import GridSearch, clone, cross_val_auc, stratified_folds


def _data():
    X, y = load("ionosphere")
    return Scaler("standard").fit_transform(X.toarray()), y


def test_stratified_folds_partition_each_repeat_and_keep_class_shares():
    y = np.array([1] * 30 + [0] * 70)
    splits = stratified_folds(y, n_folds=4, n_repeats=2, random_state=0)
    assert len(splits) == 8
    for r in range(2):
        tests = [te for _, te in splits[4 * r:4 * r + 4]]
        np.testing.assert_array_equal(np.sort(np.concatenate(tests)), np.arange(100))
        for tr, te in splits[4 * r:4 * r + 4]:
            assert np.intersect1d(tr, te).size == 0 and tr.size + te.size == 100
            assert abs(y[te].sum() - 7.5) <= 1 and te.size in (25, 25)
    assert [te.tolist() for _, te in stratified_folds(y, 4, random_state=5)] == \
           [te.tolist() for _, te in stratified_folds(y, 4, random_state=5)]
    with pytest.raises(ValueError, match="fewer than n_folds"):
        stratified_folds(np.array([1, 1, 0, 0, 0]), n_folds=3)
    with pytest.raises(ValueError, match="two classes"):
        stratified_folds(np.zeros(10), n_folds=2)


def test_cross_val_auc_equals_a_plain_loop_and_does_not_touch_the_learner():
    X, y = _data()
    learner = aucopt.get("psam", lam=1e-3, random_state=0)
    aucs = cross_val_auc(learner, X, y, cv=3, random_state=1)
    expected = []
    for tr, te in stratified_folds(y, 3, random_state=1):
        model = aucopt.get("psam", lam=1e-3, random_state=0).fit(X[tr], y[tr])
        expected.append(roc_auc(y[te], model.decision_function(X[te])))
    np.testing.assert_array_equal(aucs, expected)
    assert not hasattr(learner, "n_features_in_")
    np.testing.assert_array_equal(cross_val_auc(learner, X, y, 3, 1, n_jobs=2), aucs)


def test_grid_search_picks_the_best_mean_and_refits_it():
    X, y = _data()
    X_tr, X_te, y_tr, y_te = split(X, y, test_size=0.3, random_state=0)
    grid = {"lam": [1e-4, 1e-2, 1.0], "n_epochs": [1, 3]}
    search = GridSearch(aucopt.get("psam", random_state=0), grid, cv=3, random_state=2)
    search.fit(X_tr, y_tr)
    res = search.cv_results_
    assert len(res["params"]) == 6 and res["params"][0] == {"lam": 1e-4, "n_epochs": 1}
    for i, params in enumerate(res["params"]):
        manual = cross_val_auc(aucopt.get("psam", random_state=0, **params), X_tr, y_tr, 3, 2)
        np.testing.assert_array_equal([res[f"split{k}_test_auc"][i] for k in range(3)], manual)
        assert res["mean_test_auc"][i] == manual.mean()
    best = int(np.argmax(res["mean_test_auc"]))
    assert search.best_params_ == res["params"][best] and res["rank_test_auc"][best] == 1
    refit = aucopt.get("psam", random_state=0, **search.best_params_).fit(X_tr, y_tr)
    np.testing.assert_array_equal(search.decision_function(X_te), refit.decision_function(X_te))
    assert search.score(X_te, y_te) == refit.score(X_te, y_te)
    parallel = GridSearch(aucopt.get("psam", random_state=0), grid, cv=3, random_state=2,
                          n_jobs=2).fit(X_tr, y_tr)
    np.testing.assert_array_equal(parallel.cv_results_["mean_test_auc"], res["mean_test_auc"])


def test_grid_search_errors_and_parameters():
    X, y = _data()
    with pytest.raises(ValueError, match="not parameters of PSAM"):
        GridSearch(aucopt.get("psam"), {"C": [1.0]}).fit(X, y)
    with pytest.raises(ValueError, match="non-empty dict"):
        GridSearch(aucopt.get("psam"), {}).fit(X, y)
    search = GridSearch(aucopt.get("psam"), {"lam": [0.1]})
    with pytest.raises(aucopt.NotFittedError):
        search.predict(X)
    assert search.get_params()["estimator__lam"] == "auto"
    search.set_params(estimator__lam=0.5, cv=4)
    assert search.estimator.lam == 0.5 and search.cv == 4
    assert clone(search).get_params()["estimator__lam"] == 0.5


def test_grid_search_is_a_scikit_learn_estimator():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.base import clone as sk_clone

    X, y = _data()
    search = GridSearch(aucopt.get("psam", random_state=0), {"lam": [1e-3, 1e-1]})
    copy = sk_clone(search)
    assert copy.get_params()["estimator__lam"] == search.estimator.lam
    from sklearn.metrics import roc_auc_score
    auc = roc_auc_score(y, copy.fit(X, y).decision_function(X))
    assert auc > 0.8 and sklearn.__version__


def test_grid_points_that_diverge_are_never_chosen(monkeypatch):
    X, y = _data()
    from aucopt.learners.stochastic import PSAM

    work = PSAM._pass

    def diverge_for_big_lam(self, *args):
        if self.lam > 0.5:
            raise FloatingPointError("diverged")
        return work(self, *args)

    monkeypatch.setattr(PSAM, "_pass", diverge_for_big_lam)
    search = GridSearch(aucopt.get("psam", random_state=0), {"lam": [1.0, 1e-3]}).fit(X, y)
    assert np.isnan(search.cv_results_["mean_test_auc"][0])
    assert search.best_params_ == {"lam": 1e-3}
    with pytest.raises(FloatingPointError):
        GridSearch(aucopt.get("psam"), {"lam": [1.0]}, error_score="raise").fit(X, y)
    with pytest.raises(FloatingPointError, match="every grid point diverged"):
        GridSearch(aucopt.get("psam"), {"lam": [1.0, 2.0]}).fit(X, y)


def test_empty_grids_are_refused_clearly():
    X, y = _data()
    for grid in ({"lam": []}, [], [{"lam": [0.1]}, {"lam": [], "n_epochs": [1]}]):
        with pytest.raises(ValueError, match="no values for|empty list"):
            GridSearch(aucopt.get("psam"), grid).fit(X, y)


def test_threads_are_bounded_by_the_cores(monkeypatch):
    """n_jobs=-1 runs one thread per core, not one per grid point and fold."""
    import threading

    from aucopt import model_selection

    X, y = _data()
    monkeypatch.setattr(model_selection, "n_threads", lambda n_jobs: 2)
    seen, lock = set(), threading.Lock()
    work = model_selection._fold_auc

    def fold(*args, **kwargs):
        with lock:
            seen.add(threading.get_ident())
        return work(*args, **kwargs)

    monkeypatch.setattr(model_selection, "_fold_auc", fold)
    grid = {"lam": [1e-4, 1e-3, 1e-2, 1e-1]}
    search = GridSearch(aucopt.get("psam", random_state=0, n_epochs=1), grid,
                        n_jobs=-1).fit(X, y)
    assert 1 <= len(seen) <= 2 and len(search.cv_results_["params"]) == 4


def test_ctrl_c_stops_a_parallel_grid_search(sigint, monkeypatch):
    """SIGINT during GridSearch(n_jobs=2): no queued fit starts, the running ones
    are interrupted, and the caller gets KeyboardInterrupt."""
    import os
    import signal
    import threading
    import time

    from aucopt.learners.stochastic import PSAM

    X, y = _data()
    started, lock = [], threading.Lock()
    fit = PSAM.fit

    def slow_fit(self, *args, **kwargs):
        with lock:
            started.append(threading.get_ident())
            first = len(started) == 1
        if first:
            os.kill(os.getpid(), signal.SIGINT)
        for _ in range(200):  # Python code: where an interrupted thread stops
            time.sleep(0.01)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(PSAM, "fit", slow_fit)
    grid = {"lam": [10.0 ** -k for k in range(20)]}  # 60 fits of over 2 s each
    alive = set(threading.enumerate())
    with pytest.raises(KeyboardInterrupt):
        GridSearch(aucopt.get("psam", n_epochs=1), grid, n_jobs=2).fit(X, y)
    assert len(started) <= 2
    for thread in set(threading.enumerate()) - alive:
        try:
            thread.join(timeout=30)
        except RuntimeError:
            # the signal reached the pool inside Thread.start(), before the new
            # worker had started, and join refuses it (seen under load in CI); the
            # count below still checks that no fit started past the first two
            continue
        assert not thread.is_alive()
    assert len(started) <= 2
