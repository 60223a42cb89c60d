"""sample_weight beyond the contract (aucopt.testing.check_sample_weight): real data,
fractional weights, merge, save / load, GridSearch, plugins."""
import io
import warnings

import numpy as np
import pytest

import aucopt
from aucopt.base import BaseLearner
from aucopt.datasets import Scaler, load
from aucopt.metrics import roc_auc
from aucopt.model_selection import GridSearch, cross_val_auc
from aucopt.registry import BUILTIN, get_class
from aucopt.validation import check_sample_weight, weight_counts

NAMES = sorted(name for name, origin in aucopt.available().items() if origin == BUILTIN)
# learners on a fitted feature map cost a few seconds on the spambase sample below
MAPPED = {"nbam", "fbam", "nasam", "fasam", "npsam", "fcbr", "foam", "noam"}


def _learner(name, **params):
    cls = get_class(name)
    if "random_state" in cls._get_param_names():
        params.setdefault("random_state", 0)
    return cls(**params)


@pytest.fixture(scope="module")
def spambase():
    X, y = load("spambase")
    pick = np.random.default_rng(0).choice(X.shape[0], 400, replace=False)
    X = Scaler("standard").fit(X[pick].toarray()).transform(X[pick].toarray())
    return X[:300], y[pick][:300], X[300:], y[pick][300:]


@pytest.mark.parametrize("name", [n for n in NAMES if n not in MAPPED])
def test_integer_weights_equal_repeated_rows(spambase, name):
    """Weights 0-3 on spambase: the model of the rows repeated, to 1e-10 (in fact
    bit for bit: the copies are rows of the same view, in the same order)."""
    X, y, X_test, _ = spambase
    w = np.random.default_rng(1).integers(0, 4, X.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = _learner(name).fit(X, y, sample_weight=w)
        repeated = _learner(name).fit(X.repeat(w, axis=0), y.repeat(w))
    np.testing.assert_allclose(weighted.decision_function(X_test),
                               repeated.decision_function(X_test), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_mapped_weights_two_on_half(spambase, name):
    """Weight 2 on half of the rows against those rows repeated: the test AUC within
    0.005 (the map is fitted on the repeated rows too)."""
    X, y, X_test, y_test = spambase
    X, y = X[:150], y[:150]
    w = np.where(np.arange(X.shape[0]) % 2 == 0, 2, 1)
    params = {} if name == "noam" else {"n_components": 32}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = _learner(name, **params).fit(X, y, sample_weight=w)
        repeated = _learner(name, **params).fit(X.repeat(w, axis=0), y.repeat(w))
    a = roc_auc(y_test, weighted.decision_function(X_test))
    b = roc_auc(y_test, repeated.decision_function(X_test))
    assert abs(a - b) <= 0.005, (a, b)


def test_weight_counts():
    w = np.array([0.0, 1.0, 3.0, 0.25, 2.5])
    calls = []

    def rng():
        calls.append(1)
        return np.random.default_rng(0)

    np.testing.assert_array_equal(weight_counts(w[:3], rng), [0, 1, 3])
    assert not calls  # integer weights draw nothing
    draws = np.array([weight_counts(w, lambda s=s: np.random.default_rng(s))
                      for s in range(4000)])
    assert set(np.unique(draws[:, 3])) == {0, 1} and set(np.unique(draws[:, 4])) == {2, 3}
    np.testing.assert_allclose(draws.mean(axis=0), w, atol=0.03)  # unbiased


def test_check_sample_weight():
    np.testing.assert_array_equal(check_sample_weight(2, 3), [2.0, 2.0, 2.0])
    given = np.array([1, 0, 2])
    out = check_sample_weight(given, 3)
    assert out.dtype == np.float64 and out is not given
    assert check_sample_weight(None, 3) is None
    for bad, match in (([1, 2], "shape"), ([1, np.inf, 1], "finite"), ([1, -2, 1], ">= 0"),
                       ([0, 0, 0], "zero everywhere"), ([[1, 1, 1]], "shape")):
        with pytest.raises(ValueError, match=match):
            check_sample_weight(bad, 3)
    with pytest.raises(TypeError, match="real numbers"):
        check_sample_weight(["a", "b", "c"], 3)


def test_fractional_weights(spambase):
    """A fractional part is drawn: seeded (same seed, same model), and the model
    tracks the weighted objective (weights 0.5 / 1.5 rank like 1 / 3)."""
    X, y, X_test, y_test = spambase
    w = np.where(np.arange(X.shape[0]) % 2 == 0, 1.5, 0.5)
    a = _learner("psam").fit(X, y, sample_weight=w)
    b = _learner("psam").fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = _learner("psam", random_state=1).fit(X, y, sample_weight=w)
    assert not np.array_equal(a.coef_, c.coef_)
    ref = _learner("oam_seq").fit(X, y, sample_weight=np.where(w > 1, 3, 1))
    frac = _learner("oam_seq").fit(X, y, sample_weight=w)
    assert abs(roc_auc(y_test, ref.decision_function(X_test))
               - roc_auc(y_test, frac.decision_function(X_test))) < 0.02
    with pytest.raises(ValueError, match="scale sample_weight up"):
        _learner("psam").fit(X[:4], np.array([1, 1, -1, -1]), sample_weight=[1e-9] * 4)


def test_bam_weighs_pairs_exactly(spambase):
    """BAM's weights enter its sums (no draw): constant weights c scale its loss by c^2
    over a per-class C_ scaled by 1/c, i.e. the unweighted fit with C times c; so
    weights 0.5 / 1.5 with C equal the integer weights 1.5 / 4.5... times 2: weights
    1 / 3 with C / 2."""
    X, y, X_test, _ = spambase
    s = _learner("bam").fit(X, y).row_scale_
    for c in (0.5, 2.5):
        weighted = _learner("bam").fit(X, y, sample_weight=np.full(y.size, c))
        plain = _learner("bam", C=c / s).fit(X, y)
        np.testing.assert_allclose(weighted.coef_, plain.coef_, rtol=1e-9, atol=1e-12)
    w = np.where(np.arange(y.size) % 2 == 0, 1.5, 0.5)
    a = _learner("bam", C=1.0).fit(X, y, sample_weight=w)
    b = _learner("bam", C=0.5).fit(X, y, sample_weight=2 * w)  # integer weights 1 and 3
    np.testing.assert_allclose(a.decision_function(X_test) - a.intercept_,
                               b.decision_function(X_test) - b.intercept_,
                               rtol=1e-9, atol=1e-12)


def test_partial_fit_fractional_chunk_without_rows():
    """A chunk whose fractional weights draw no row leaves a fitted model as it was."""
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    model = _learner("oam_seq").partial_fit(X, [0, 1])
    before = model.coef_.copy()
    for seed in range(20):
        model.set_params(random_state=seed)
        model.partial_fit(X[:1], [0], sample_weight=[1e-12])
    np.testing.assert_array_equal(model.coef_, before)


@pytest.mark.parametrize("name", ["opauc", "adaoam"])
def test_exact_merge_of_weighted_parts(spambase, name):
    """Weighted shards merge (and solve) to the weighted fit's solve, to rounding;
    a saved weighted model loads and continues identically."""
    X, y, X_test, _ = spambase
    w = np.random.default_rng(2).integers(0, 4, X.shape[0]).astype(float)
    w[:2] = 1.0
    a = _learner(name, n_epochs=1).fit(X[:150], y[:150], sample_weight=w[:150])
    b = _learner(name, eta=a.eta_, lam=a.lam_, n_epochs=1).fit(X[150:], y[150:],
                                                               sample_weight=w[150:])
    merged = aucopt.merge([_learner(name, eta=a.eta_, lam=a.lam_, n_epochs=1).fit(
        X[:150], y[:150], sample_weight=w[:150]), b])
    whole = _learner(name, eta=a.eta_, lam=a.lam_, n_epochs=1).fit(
        X, y, sample_weight=w).solve()
    assert merged.t_ == w.sum()
    np.testing.assert_allclose(merged.coef_, whole.coef_, rtol=1e-9, atol=1e-12)
    buf = io.BytesIO()
    merged.save(buf)
    buf.seek(0)
    again = aucopt.load(buf)
    for model in (merged, again):
        model.partial_fit(X_test, np.where(np.arange(len(X_test)) % 3, 1, -1),
                          sample_weight=np.arange(len(X_test)) % 3)
    np.testing.assert_array_equal(merged.coef_, again.coef_)


def test_average_merge_weights_are_total_sample_weight(spambase):
    """An averaging learner's default merge weights are the parts' total weights."""
    X, y, _, _ = spambase
    w = np.random.default_rng(3).integers(1, 5, X.shape[0])
    parts = [_learner("oam_seq", C=1.0, n_epochs=1).fit(X[s], y[s], sample_weight=w[s])
             for s in (slice(0, 100), slice(100, 300))]
    default = aucopt.merge(parts)
    given = aucopt.merge(parts, weights=[w[:100].sum(), w[100:].sum()])
    np.testing.assert_array_equal(default.coef_, given.coef_)


def test_grid_search_passes_fold_weights(spambase):
    """GridSearch and cross_val_auc fit each fold with its rows' weights: integer
    weights give the scores of the learner fitted on the repeated rows."""
    X, y, _, _ = spambase
    w = np.random.default_rng(4).integers(0, 3, X.shape[0])
    w[:2] = 1
    folds = [(np.arange(0, 200), np.arange(200, 300)), (np.arange(100, 300), np.arange(100))]
    search = GridSearch(_learner("oam_seq"), {"C": [0.01, 1.0]}, cv=folds).fit(
        X, y, sample_weight=w)
    for k, (train, test) in enumerate(folds):
        for p, params in enumerate(search.cv_results_["params"]):
            tr = np.repeat(train, w[train])
            model = _learner("oam_seq", **params).fit(X[tr], y[tr])
            assert search.cv_results_[f"split{k}_test_auc"][p] == roc_auc(
                y[test], model.decision_function(X[test]))
    best = _learner("oam_seq", **search.best_params_).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(search.best_estimator_.coef_, best.coef_)
    aucs = cross_val_auc(_learner("oam_seq"), X, y, cv=folds, sample_weight=w)
    np.testing.assert_array_equal(aucs, [
        roc_auc(y[te], _learner("oam_seq").fit(X[np.repeat(tr, w[tr])],
                                               y[np.repeat(tr, w[tr])])
                .decision_function(X[te])) for tr, te in folds])


def test_plugin_without_weights_refuses_them():
    class Plain(BaseLearner):
        def __init__(self, pos_label=None):
            self.pos_label = pos_label

        def _fit(self, X, y):
            self.coef_ = np.ones(X.shape[1])

    class Weighted(Plain):
        def _fit(self, X, y, sample_weight=None):
            self.coef_ = (sample_weight * y) @ X

    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array([0, 1, 1])
    with pytest.raises(TypeError, match="does not support sample_weight"):
        Plain().fit(X, y, sample_weight=[1, 2, 3])
    Plain().fit(X, y)
    model = Weighted().fit(X, y, sample_weight=[1, 0, 3])
    np.testing.assert_array_equal(model.coef_, [2.0, 3.0])  # -x_0 + 3 x_2: row 1 dropped
