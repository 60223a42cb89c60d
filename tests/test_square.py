"""OPAUC, AdaOAM, OPAUCr, online Uni-Exp (Gao et al., One-Pass AUC Optimization, 2013;
Ding et al., An Adaptive Gradient Method for Online AUC Maximization, 2015): steps against
tests/reference.py, OPAUC's exact gradient, OPAUCr's sketch, the pending / journaled
covariance updates of a partial_fit, memory caps, rollback on Ctrl-C, quality.

The generic contract (dense == CSR, same seed, chunks == fit, persistence, bad
parameters, verbose) is tests/test_contract.py's."""
import copy
import math
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import aucopt
from aucopt import driver
from aucopt._kernels._rows import RowSource
from aucopt._kernels._square import Covariances, GradientStep, opauc_steps
from aucopt._kernels._stats import ClassSums
from aucopt._kernels._weights import Weights
from aucopt.datasets import Scaler, load, split
from aucopt.learners import square
from reference import (auc_pairs, opauc_bruteforce_gradient, opauc_steps_ref,
                       opaucr_steps_ref, uniexp_steps_ref)


def _data(seed=0, n=60, d=8, density=0.5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) > density] = 0.0
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def _close(a, b, rel=1e-12):
    np.testing.assert_allclose(a, b, rtol=0, atol=rel * max(np.abs(b).max(), 1e-300))


# ------------------------------------------------------------------ shared helpers


def snapshot(model):
    """Every attribute of ``model``, arrays by their bytes, generators by their state."""
    out = {}
    for key, value in vars(model).items():
        if isinstance(value, np.ndarray):
            out[key] = (value.dtype.str, value.shape, value.tobytes())
        elif isinstance(value, np.random.Generator):
            out[key] = copy.deepcopy(value.bit_generator.state)
        else:
            out[key] = copy.deepcopy(value)
    return out


def interrupted(monkeypatch, module, kernel, after=1):
    """Make ``module.kernel`` run normally ``after - 1`` times, then run once more and
    raise KeyboardInterrupt (Ctrl-C in the middle of a pass)."""
    real = getattr(module, kernel)
    calls = []

    def run_then_raise(*args, **kwargs):
        real(*args, **kwargs)
        calls.append(1)
        if len(calls) >= after:
            raise KeyboardInterrupt

    monkeypatch.setattr(module, kernel, run_then_raise)
    return calls


def learns_on_spambase(name, threshold, **params):
    """Fit on standardised, unit-length spambase rows; the test AUC beats ``threshold``."""
    X, y = load("spambase")
    X_tr, X_te, y_tr, y_te = split(X, y, test_size=0.2, random_state=0)
    scaler = Scaler("standard").fit(X_tr.toarray())
    X_tr, X_te = scaler.transform(X_tr.toarray()), scaler.transform(X_te.toarray())
    # the papers normalise rows to unit length (Natole's PhD thesis on stochastic AUC
    # maximization, Sec. 3.5)
    X_tr /= np.linalg.norm(X_tr, axis=1, keepdims=True)
    X_te /= np.linalg.norm(X_te, axis=1, keepdims=True)
    clf = aucopt.get(name, **params).fit(X_tr, y_tr)
    auc = clf.score(X_te, y_te)
    assert auc == pytest.approx(auc_pairs(y_te, clf.decision_function(X_te)), abs=1e-12)
    assert auc > threshold


# ------------------------------------------------------------------ OPAUC / AdaOAM


@pytest.mark.parametrize("sparse", [False, True])
def test_opauc_gradient_equals_bruteforce_over_all_opposite_rows(sparse):
    # Gao et al. eqs. 3-5: the gradient from class sums and sums of outer products
    # is exact; one kernel call per row
    X, y = _data(1, n=40)
    d = X.shape[1]
    state, counts, sums, sxx = np.zeros((d, 1)), np.zeros(2), np.zeros((2, d)), np.zeros((2, d, d))
    checked = 0
    for t in range(len(y)):
        rows = RowSource(sp.csr_matrix(X[t:t + 1]) if sparse else X[t:t + 1])
        w_before = state[:, 0].copy()
        opauc_steps(rows, y[t:t + 1], Weights(state), Covariances(ClassSums(counts, sums), sxx),
                    GradientStep(0.1), 0.3)
        opposite = X[:t][y[:t] == -y[t]]
        if len(opposite) == 0:
            np.testing.assert_array_equal(state[:, 0], w_before)  # L_t = 0: no step
            continue
        ref = opauc_bruteforce_gradient(w_before, X[t], y[t], opposite, 0.3)
        _close(state[:, 0], w_before - 0.1 * ref, 1e-10)
        checked += 1
    assert checked > 30


# one epoch of large steps, for the reference's numbers: OPAUC's model ranks its
# training rows backwards (ReversedModelWarning)
@pytest.mark.filterwarnings("ignore::aucopt.exceptions.ReversedModelWarning")
@pytest.mark.parametrize("name,lam,eta", [("opauc", 0.01, 0.2), ("adaoam", 0.01, 0.2),
                                          ("adaoam", 25.0, 1.0)])
def test_opauc_and_adaoam_equal_reference(name, lam, eta):
    X, y = _data(2)
    ref = opauc_steps_ref(X, y, eta, lam, ada=name == "adaoam")
    clf = aucopt.get(name, eta=eta, lam=lam, n_epochs=1, shuffle=False).fit(X, y)
    _close(clf.coef_, ref)
    if lam == 25.0:  # radius 1/sqrt(lam) = 0.2: the projection is active
        assert np.linalg.norm(clf.coef_) == pytest.approx(0.2, rel=1e-12)
    # the stored statistics give the class covariance
    Xp = X[y > 0]
    np.testing.assert_allclose(clf.covariance(1), np.cov(Xp.T, bias=True), atol=1e-12)


@pytest.mark.parametrize("name", ["opauc", "adaoam"])
@pytest.mark.parametrize("chunk", [1, 5])
def test_partial_fit_covariance_updates_pending_or_journaled(name, chunk):
    # d = 8: a 1-row chunk (8 entries <= 0.2 * 64) keeps its outer products pending
    # and commits them after the call; a 5-row chunk (40 entries) writes them in
    # place under a journal. Either way the stored sums are those of one fit, bit
    # for bit, and the model agrees with the one-fit reference
    X, y = _data(3, n=50)
    ref = opauc_steps_ref(X, y, 0.2, 0.01, ada=name == "adaoam")
    fitted = aucopt.get(name, eta=0.2, lam=0.01, n_epochs=1, shuffle=False).fit(X, y)
    stream = aucopt.get(name, eta=0.2, lam=0.01, n_epochs=1, shuffle=False).fit(X[:20], y[:20])
    for start in range(20, 50, chunk):
        stream.partial_fit(X[start:start + chunk], y[start:start + chunk])
    for key in ("class_count_", "class_sum_", "class_sxx_"):
        np.testing.assert_array_equal(getattr(stream, key), getattr(fitted, key))
    _close(stream.coef_, ref)
    if chunk == 5:  # in place: the same arithmetic as fit
        np.testing.assert_array_equal(stream.coef_, fitted.coef_)


@pytest.mark.parametrize("name", ["opauc", "adaoam"])
def test_small_partial_fit_does_not_copy_the_covariance_sums(name):
    d = 3000
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, d)) / math.sqrt(d)
    y = np.tile([1.0, -1.0], 10)
    clf = aucopt.get(name, n_epochs=1).fit(X[:10], y[:10])
    state = sum(v.nbytes for v in vars(clf).values() if isinstance(v, np.ndarray))
    tracemalloc.start()
    try:
        clf.partial_fit(X[10:], y[10:])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 0.25 * state, (peak, state)
    assert clf.class_count_.tolist() == [10.0, 10.0]


def test_covariance_learners_refuse_state_above_the_cap_before_allocating():
    X = sp.random(5, 20000, density=0.001, format="csr", random_state=0)
    y = [0, 1, 0, 1, 1]
    with pytest.raises(ValueError, match="opaucr"):  # two 20000^2 sums: 6 GiB > 4 GiB
        aucopt.get("opauc").fit(X, y)
    with pytest.raises(ValueError, match="max_state_bytes"):
        aucopt.get("adaoam", max_state_bytes=10_000).fit(np.eye(30)[:5], y)
    aucopt.get("adaoam", max_state_bytes=20_000).fit(np.eye(30)[:5], y)  # 15,600 bytes


# ------------------------------------------------------------------ OPAUCr


@pytest.mark.parametrize("sparse", [False, True])
def test_opaucr_factored_steps_equal_dense_reference(sparse):
    X, y = _data(3, n=80)
    rho = np.random.default_rng(4).standard_normal((len(y), 6)) / math.sqrt(6)
    w, Z, q = opaucr_steps_ref(X, y, rho, 0.1, 0.05)
    Xf = sp.csr_matrix(X) if sparse else X
    fitted = aucopt.get("opaucr", tau=6, eta=0.1, lam=0.05, random_state=4, n_epochs=1,
                        shuffle=False).fit(Xf, y)
    # a stream of chunks on a fitted model journals the sketch rows it writes
    stream = aucopt.get("opaucr", tau=6, eta=0.1, lam=0.05, random_state=4,
                        shuffle=False)
    for chunk in np.array_split(np.arange(len(y)), [13, 14, 50]):
        stream.partial_fit(Xf[chunk], y[chunk], classes=[-1.0, 1.0])
    for clf in (fitted, stream):
        _close(clf.coef_, w, 1e-11)
        _close(clf.sketch_, Z)
        _close(clf.sketch_q_, q)
        _close(clf.decision_function(X) - clf.intercept_, X @ w, 1e-11)


def test_opaucr_sketch_converges_to_opauc_covariance_product_as_tau_grows():
    # the sketch of one pass against the exact covariance of the same rows: a row
    # costs O(nnz tau + tau^2), so at tau = 1024 on 12 features the default fit's
    # nine passes took 27 s of the suite, one pass takes 3 s (seeds 1-3: errors
    # 0.09-0.11 at tau = 1024, decreasing with tau)
    X, y = _data(5, n=300, d=12, density=0.7)
    full = aucopt.get("opauc").fit(X, y)
    w = np.random.default_rng(0).standard_normal(X.shape[1])
    errors = []
    for tau in (4, 32, 256, 1024):
        sk = aucopt.get("opaucr", tau=tau, n_epochs=1, random_state=1).fit(X, y)
        err = 0.0
        for cls in (0, 1):
            exact = full.covariance(cls) @ w
            err += np.linalg.norm(sk.covariance_product(w, cls) - exact) / np.linalg.norm(exact)
        errors.append(err / 2)
    assert all(a > b for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 0.15, errors


def test_opaucr_model_state_is_two_sketches_and_three_vectors():
    X, y = _data(6, n=30, d=40)
    clf = aucopt.get("opaucr", tau=5, random_state=0).fit(sp.csr_matrix(X), y)
    d, tau = 40, 5
    state = [vars(clf)[k] for k, f in clf._state_spec().items()
             if f.kind == "array" and k in vars(clf)]
    assert sum(v.size for v in state if d in v.shape) == 2 * d * tau + 3 * d
    clf.partial_fit(X[:3], y[:3])
    assert "_coef_cache" not in vars(clf)  # coef_ (O(d tau)) is formed when read


def test_opaucr_refuses_a_huge_sketch_before_allocating():
    X = sp.random(4, 10**6, density=1e-5, format="csr", random_state=0)
    with pytest.raises(ValueError, match="tau must be <= 4096"):
        aucopt.get("opaucr", tau=10**5).fit(X, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="lower tau"):  # 2 x 10^6 x 4096 doubles: 61 GiB
        aucopt.get("opaucr", tau=4096).fit(X, [0, 1, 0, 1])


def test_opaucr_rejects_a_changed_tau_on_partial_fit():
    X, y = _data(19)
    clf = aucopt.get("opaucr", tau=4, random_state=0).fit(X, y)
    coef = clf.coef_.copy()
    clf.set_params(tau=8)
    with pytest.raises(ValueError, match="tau"):
        clf.partial_fit(X, y)
    np.testing.assert_array_equal(clf.coef_, coef)


def _correlated(seed=0, n=400, d=20):
    """Standardised rows of three correlated factors; the label follows the first."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, 3))
    X = Z @ rng.standard_normal((3, d)) + 0.3 * rng.standard_normal((n, d))
    X = (X - X.mean(0)) / X.std(0)
    return X, np.where(Z[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)


def _pair_square_loss(scores, y):
    """Mean of (1 - (s_i - s_j))^2 over every positive i and negative j, pair by pair."""
    return float(np.mean((1.0 - (scores[y > 0][:, None] - scores[y < 0][None, :])) ** 2))


@pytest.mark.parametrize("name", ["opauc", "opaucr"])
def test_square_loss_far_worse_than_zero_is_refused(name, monkeypatch):
    """A step too large leaves the iterate oscillating with finite, non-overflowing
    scores; the model is refused when its pairwise square loss on the training rows
    exceeds 100 times that of w = 0, and a fitted model stays as it was."""
    X, y = _correlated()
    s = float(np.mean(np.sum(X * X, axis=1)))
    # lam pinned at the paper-range 1e-4 s (the dense default 3e-2 s damps this step)
    params = {"eta": 2.0 ** 0.5 / s, "lam": 1e-4 * s, "n_epochs": 1, "shuffle": False,
              "random_state": 0}
    # without the limit the fit returns a broken model whose scores do not overflow
    monkeypatch.setattr(driver, "LOSS_LIMIT", math.inf)
    broken = aucopt.get(name, **params).fit(X, y)
    scores = broken.decision_function(X) - broken.intercept_
    assert np.abs(scores).max() < 1e10 and _pair_square_loss(scores, y) > 100.0
    monkeypatch.undo()
    model = aucopt.get(name, lam=params["lam"], shuffle=False, random_state=0).fit(X, y)
    assert _pair_square_loss(model.decision_function(X), y) < 1.0  # a sensible model
    model.set_params(eta=params["eta"], n_epochs=1)
    before = snapshot(model)
    with pytest.raises(FloatingPointError, match="mean pair loss.*lower eta"):
        model.fit(X, y)
    assert snapshot(model) == before


# ------------------------------------------------------------------ Uni-Exp


@pytest.mark.parametrize("clip", [30.0, 0.0, 0.5])
@pytest.mark.parametrize("cap", [0.0, 3.0])
@pytest.mark.parametrize("sparse", [False, True])
def test_uni_exp_equals_reference(sparse, cap, clip):
    X, y = _data(7)
    clf = aucopt.get("uni_exp", eta=0.05, norm_cap=cap, clip=clip, n_epochs=1,
                     shuffle=False).fit(sp.csr_matrix(X) if sparse else X, y)
    _close(clf.coef_, uniexp_steps_ref(X, y, 0.05, cap, clip))
    if cap:  # the cap binds on some rows of these
        assert np.sum(np.sum(X * X, axis=1) > cap) > 10
    assert clf.t_ == len(y)
    assert clf.class_count_.tolist() == [np.sum(y < 0), np.sum(y > 0)]


def _first_stable_eta(X, y, **params):
    """Reference of eta="auto" (with norm_cap="auto", the 75th percentile ``c`` of
    the squared row norms): a pass with 4^-j / c, j = 3, 4, ..., until one does not
    raise; that step over sqrt(2)."""
    s = float(np.quantile(np.sum(X * X, axis=1), 0.75))
    one_pass = {**params, "n_epochs": 1}
    for j in range(3, 3 + square._UNIEXP_TRIALS):
        try:
            aucopt.get("uni_exp", eta=4.0 ** -j / s, norm_cap=s, **one_pass).fit(X, y)
        except FloatingPointError:
            continue
        return 4.0 ** -j / s / math.sqrt(2.0)
    raise AssertionError("no stable step")


@pytest.mark.parametrize("outliers", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_uni_exp_auto_eta_is_the_largest_stable_step_over_sqrt2(outliers, shuffle):
    X, y = _data(9, n=300, d=6, density=1.0)
    if outliers:  # rows 300 times longer than the rest make the large steps diverge
        X[::50] *= 300.0
    # the exponential loss of the reconstruction (clip=30), one pass or several
    params = {"shuffle": shuffle, "random_state": 4, "clip": 30.0,
              "n_epochs": 1 if outliers else 3}
    expected = _first_stable_eta(X, y, **params)
    auto = aucopt.get("uni_exp", **params).fit(X, y)
    assert auto.eta_ == pytest.approx(expected, rel=1e-12)
    # the model is the fit with that step given explicitly (same order, same seed)
    np.testing.assert_array_equal(auto.coef_, aucopt.get("uni_exp", eta=auto.eta_,
                                                         **params).fit(X, y).coef_)
    if outliers:  # a trial diverged
        assert auto.eta_ * auto.norm_cap_ < 4.0 ** -3 / math.sqrt(2.0)


def test_uni_exp_step_search_trials_do_not_warn():
    """The trial passes of eta="auto" are refused when they diverge, and nothing
    else: a trial model that ranks backwards (here, scikit-learn's
    check_classifier_data_not_an_array rows) is no model the caller sees."""
    from aucopt.exceptions import ConstantModelWarning, ReversedModelWarning

    X = np.array([[3, 0], [0, 1], [0, 2], [1, 1], [1, 2], [2, 1], [0, 3], [1, 0], [2, 0],
                  [4, 4], [2, 3], [3, 2]], dtype=float)
    y = np.array([1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReversedModelWarning)
        warnings.simplefilter("error", ConstantModelWarning)
        model = aucopt.get("uni_exp", random_state=0).fit(X, y)
    assert model.score(X, y) > 0.5


def test_uni_exp_default_clip_takes_the_first_trial_step():
    # clip=0: a misranked row's step weight is at most 1, no step diverges, and
    # "auto" is the first trial 4^-3 / c over sqrt(2) (2^-6.5 / c), with the rows 300
    # times longer that make clip=30's first trials diverge
    X, y = _data(9, n=300, d=6, density=1.0)
    X[::50] *= 300.0
    auto = aucopt.get("uni_exp", random_state=4).fit(X, y)
    assert auto.clip == 0.0
    assert auto.eta_ * auto.norm_cap_ == pytest.approx(2.0 ** -6.5, rel=1e-12)
    assert _first_stable_eta(X, y, random_state=4, clip=30.0) < auto.eta_


def test_uni_exp_auto_eta_searches_on_the_first_chunk_only():
    X, y = _data(10, n=200, d=6, density=1.0)
    X[::40] *= 30.0
    stream = aucopt.get("uni_exp").partial_fit(X[:100], y[:100])
    assert stream.eta_ == pytest.approx(_first_stable_eta(X[:100], y[:100], shuffle=False),
                                        rel=1e-12)
    eta = stream.eta_
    stream.partial_fit(X[100:], y[100:])
    assert stream.eta_ == eta and stream.t_ == 200


# ------------------------------------------------------------------ family-wide


@pytest.mark.parametrize("name,kernel,params,chunk", [
    ("opauc", "opauc_steps", {"n_epochs": 1}, 1),     # d = 8: pending covariance updates
    ("opauc", "opauc_steps", {"n_epochs": 1}, 30),    # journaled covariance sums
    ("adaoam", "opauc_steps", {"n_epochs": 1}, 30),
    ("opaucr", "opaucr_steps", {"n_epochs": 1, "random_state": np.random.default_rng(3)}, 30),
    ("uni_exp", "uniexp_steps", {"n_epochs": 1}, 30)])
def test_ctrl_c_mid_pass_leaves_a_fitted_model_bit_identical(monkeypatch, name, kernel,
                                                             params, chunk):
    X, y = _data(8, n=80)
    clf = aucopt.get(name, **params).fit(X[:50], y[:50])
    clf.coef_  # a cached read-out is part of the state too
    before = snapshot(clf)
    calls = interrupted(monkeypatch, square, kernel)
    with pytest.raises(KeyboardInterrupt):
        clf.partial_fit(X[50:50 + chunk], y[50:50 + chunk])
    assert calls and snapshot(clf) == before  # (a generator passed as random_state too)
    monkeypatch.undo()
    clf.partial_fit(X[50:50 + chunk], y[50:50 + chunk])  # and the model still trains
    assert clf.t_ == 50 + chunk


@pytest.mark.parametrize("name,threshold", [
    ("opauc", 0.95), ("adaoam", 0.95), ("opaucr", 0.95), ("uni_exp", 0.94)])
def test_learns_on_bundled_real_data(name, threshold):
    # spambase: Khalid (2019) reports OPAUC .842 and AdaOAM .887; with defaults and
    # no tuning these learners reach .94-.97 on this split (a linear pairwise model
    # ~.97), a constant ranker 0.5
    learns_on_spambase(name, threshold, random_state=0)
