"""Linear PRSVM+ / BAM solver (Chapelle & Keerthi, Efficient algorithms for ranking with
SVMs, 2010; Khalid, Scalable Large Margin Pairwise Learning Algorithms, 2019, Alg. 1):
the pair-free loss, gradient and Hessian products against sums over every pair, the exact
line search against breakpoint enumeration, the optimum of the learner BAM against
L-BFGS-B on the all-pairs objective, dense vs CSR."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

import aucopt
from aucopt._kernels import _ranksvm as K
from aucopt._kernels._rows import RowSource
from aucopt.learners.batch import BAM
from aucopt.learners._prsvm import _exact_step, PRSVMObjective
from reference import (pair_squared_hinge_ref, prsvm_line_min_ref, prsvm_objective_ref,
                       prsvm_pairs)


def _labels(rng, n, p=0.35):
    y = np.where(rng.random(n) < p, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    return y


def _data(seed=0, n=40, d=6, density=0.6, integer=False):
    """Random rows; with ``integer`` small integer entries, so that scores from a
    weight vector of halves are exact and tie (also at margin exactly 1)."""
    rng = np.random.default_rng(seed)
    if integer:
        X = rng.integers(-2, 3, size=(n, d)).astype(np.float64)
    else:
        X = rng.standard_normal((n, d))
    X[rng.random((n, d)) > density] = 0.0
    return X, _labels(rng, n)


def _both(X):
    return [X, sp.csr_matrix(X)]


# ------------------------------------------------------------------ kernel vs all pairs


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_loss_gradient_hessian_equal_sums_over_all_pairs(ties, seed):
    rng = np.random.default_rng(seed)
    n = 57
    y = _labels(rng, n)
    # halves: many equal scores and many pairs at margin exactly 1 (not active)
    # (positives shifted up, so that some rows are in no active pair)
    o = (rng.integers(-4, 5, n) + 3 * (y > 0)) * 0.5 if ties else 3 * rng.standard_normal(n)
    delta = rng.standard_normal(n)
    loss = K.PairSquaredHinge(y)
    grad = np.empty(n)
    L = loss.evaluate(o, grad)
    z = np.empty(n)
    loss.hessian(delta, z)
    L_ref, grad_ref, alpha_ref, z_ref = pair_squared_hinge_ref(o, y, delta)
    if ties:  # the data do exercise margins of exactly 1 and rows in no active pair
        assert np.any(np.subtract.outer(o[y > 0], o[y < 0]) == 1.0)
        assert np.any(alpha_ref == 0)
    np.testing.assert_allclose(L, L_ref, rtol=1e-13)
    np.testing.assert_allclose(grad, grad_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(loss.alpha, alpha_ref)
    np.testing.assert_allclose(z, z_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(loss.active_rows(), np.flatnonzero(alpha_ref > 0))


@pytest.mark.parametrize("ties", [False, True])
def test_weighted_loss_gradient_hessian_equal_weighted_sums_over_all_pairs(ties):
    """Row weights c (sample_weight): every pair counts c_i c_j times."""
    rng = np.random.default_rng(11)
    n = 57
    y = _labels(rng, n)
    o = (rng.integers(-4, 5, n) + 3 * (y > 0)) * 0.5 if ties else 3 * rng.standard_normal(n)
    delta = rng.standard_normal(n)
    c = rng.random(n) * 3
    c[5] = 0.0
    loss = K.PairSquaredHinge(y, c)
    grad, z = np.empty(n), np.empty(n)
    L = loss.evaluate(o, grad)
    loss.hessian(delta, z)
    L_ref, grad_ref, alpha_ref, z_ref = pair_squared_hinge_ref(o, y, delta, c)
    np.testing.assert_allclose(L, L_ref, rtol=1e-12)
    np.testing.assert_allclose(grad, grad_ref, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(loss.alpha, alpha_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(z, z_ref, rtol=1e-11, atol=1e-11)
    ones = K.PairSquaredHinge(y, np.ones(n))  # unit weights: the unweighted sweeps, exactly
    plain = K.PairSquaredHinge(y)
    g1, g2 = np.empty(n), np.empty(n)
    assert ones.evaluate(o, g1) == plain.evaluate(o, g2)
    np.testing.assert_array_equal(g1, g2)
    for bad in (c[:-1], -c, np.where(y > 0, 0.0, 1.0)):
        with pytest.raises(ValueError, match="weights must hold"):
            K.PairSquaredHinge(y, bad)


def test_sort_orders_all_finite_doubles_negatives_first_among_ties():
    # the radix keys must order signs, zero, subnormals, huge values like numpy does
    rng = np.random.default_rng(3)
    special = np.array([0.0, 5e-324, -5e-324, 1e-310, -1e-310, 1e308, -1e308, 0.5, -0.5,
                        1.5, -1.5, 2.0, 1.0, -1.0])
    o = np.concatenate([special, rng.standard_normal(300) * 10.0 ** rng.integers(-5, 6, 300),
                        rng.integers(-3, 4, 200) * 0.5])
    y = _labels(rng, len(o))
    loss = K.PairSquaredHinge(y)
    grad = np.empty(len(o))
    loss.evaluate(o, grad)
    yhat = np.where(y > 0, o - 0.5, o + 0.5)
    expected = np.lexsort((np.arange(len(o)), y, yhat))  # by yhat, then -1 first, then row
    np.testing.assert_array_equal(loss.order, expected)
    np.testing.assert_array_equal(loss.sorted_yhat, yhat[expected])  # keys decode exactly


def test_loss_is_accurate_for_large_scores():
    # the sweeps add only non-negative terms: no cancellation when |o| >> margins
    rng = np.random.default_rng(5)
    y = _labels(rng, 30)
    gaps = rng.random(30)
    loss = K.PairSquaredHinge(y)
    grad = np.empty(30)
    L_big = loss.evaluate(1e8 + gaps, grad)
    L_ref, grad_ref, _ = pair_squared_hinge_ref(gaps, y)
    np.testing.assert_allclose(L_big, L_ref, rtol=1e-6)
    np.testing.assert_allclose(grad, grad_ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("ties", [False, True])
def test_objective_gradient_hessian_product_dense_and_csr(ties):
    X, y = _data(1, integer=ties)
    rng = np.random.default_rng(2)
    w = rng.integers(-2, 3, X.shape[1]) * 0.5 if ties else 0.3 * rng.standard_normal(X.shape[1])
    s = rng.standard_normal(X.shape[1])
    C = 0.7
    F_ref, g_ref, Hs_ref = prsvm_objective_ref(w, X, y, C, s)
    results = []
    for A in _both(X):
        obj = PRSVMObjective(A, y, C)
        o = obj.scores(w, obj.all_rows, np.empty(len(y)))
        F, g = obj.value_grad(w, o)
        Hs = obj.hess_dot(s, np.zeros(len(y)), np.empty_like(s))
        np.testing.assert_allclose(F, F_ref, rtol=1e-12)
        np.testing.assert_allclose(g, g_ref, rtol=1e-11, atol=1e-11 * np.abs(g_ref).max())
        np.testing.assert_allclose(Hs, Hs_ref, rtol=1e-11, atol=1e-11 * np.abs(Hs_ref).max())
        results.append((F, g, Hs))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)  # dense and CSR rows: same sums, same bits


def test_row_products_match_numpy_on_row_subsets():
    X, _ = _data(4, n=30, d=9)
    rng = np.random.default_rng(0)
    rows = np.array([0, 3, 4, 17, 29], dtype=np.int64)
    v, z = rng.standard_normal(9), rng.standard_normal(30)
    z[3] = 0.0
    for A in _both(X):
        R = RowSource(A)
        out = np.full(30, 7.0)
        K.rows_dot(R, v, rows, out)
        expected = np.full(30, 7.0)
        expected[rows] = X[rows] @ v
        np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-14)
        acc = np.full(9, 7.0)
        K.rows_combine(R, z, rows, acc)
        np.testing.assert_allclose(acc, X[rows].T @ z[rows], rtol=1e-14, atol=1e-14)
    a, b = rng.standard_normal(11), rng.standard_normal(11)
    np.testing.assert_allclose(K.dot(a, b), a @ b, rtol=1e-14)


# ------------------------------------------------------------------ line search


@pytest.mark.parametrize("seed", range(5))
def test_exact_line_search_finds_the_breakpoint_minimiser(seed):
    X, y = _data(seed, n=30, d=5)
    rng = np.random.default_rng(seed + 10)
    w = 0.5 * rng.standard_normal(5)
    C = [0.05, 0.5, 5.0][seed % 3]
    _, g = prsvm_objective_ref(w, X, y, C)
    s = -g * rng.uniform(0.2, 3.0) + 0.3 * np.linalg.norm(g) * rng.standard_normal(5)
    if g @ s >= 0:
        s = -s
    t_ref, f_ref = prsvm_line_min_ref(w, s, X, y, C)
    obj = PRSVMObjective(X, y, C)
    o, delta = X @ w, X @ s
    f0, _ = prsvm_objective_ref(w, X, y, C)
    t, trials = _exact_step(obj, o, delta, w @ s, s @ s, w @ w, f0, g @ s)
    f_t, _ = prsvm_objective_ref(w + t * s, X, y, C)
    assert trials >= 1
    np.testing.assert_allclose(t, t_ref, rtol=1e-7)
    assert f_t <= f_ref * (1 + 1e-12)


# ------------------------------------------------------------------ solver


def _lbfgs_optimum(X, y, C):
    res = minimize(lambda w: prsvm_objective_ref(w, X, y, C), np.zeros(X.shape[1]),
                   jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 20000})
    return res.fun


def _bam(**params):
    """The learner that runs the solver, on the raw objective (``C_ = C``)."""
    return BAM(C_scaling="none", **params)


@pytest.mark.parametrize("line_search", ["exact", "armijo", None])
@pytest.mark.parametrize("C", [0.01, 0.3, 10.0])
def test_optimum_matches_lbfgs_on_all_pairs(line_search, C):
    X, y = _data(6, n=36, d=5)
    f_ref = _lbfgs_optimum(X, y, C)
    clf = _bam(C=C, tol=1e-9, cg_tol=1e-6, line_search=line_search).fit(X, y)
    f, _ = prsvm_objective_ref(clf.coef_, X, y, C)
    assert clf.stop_reason_ == "tol"
    np.testing.assert_allclose(clf.objective_, f, rtol=1e-10)
    assert abs(f - f_ref) <= 1e-6 * f_ref


def test_default_tolerances_give_objective_within_1e_3():
    X, y = _data(7, n=50, d=8)
    C = 1.0
    f_ref = _lbfgs_optimum(X, y, C)
    clf = _bam(C=C).fit(X, y)
    f, g = prsvm_objective_ref(clf.coef_, X, y, C)
    _, g0 = prsvm_objective_ref(np.zeros(8), X, y, C)
    assert clf.stop_reason_ == "tol"
    assert np.linalg.norm(g) <= 1e-3 * np.linalg.norm(g0) * (1 + 1e-9)
    np.testing.assert_allclose(clf.objective_, f, rtol=1e-10)
    assert f - f_ref <= 1e-3 * f_ref


def test_per_class_scaling_weighs_the_sum_by_both_class_sizes():
    X, y = _data(10, n=40, d=5)
    n_pos, n_neg = np.sum(y > 0), np.sum(y < 0)
    scaled = BAM(C=2.0, tol=1e-9, cg_tol=1e-6).fit(X, y)
    raw = _bam(C=2.0 * (1 / n_pos + 1 / n_neg), tol=1e-9, cg_tol=1e-6).fit(X, y)
    np.testing.assert_allclose(scaled.C_, raw.C_, rtol=1e-15)
    np.testing.assert_allclose(scaled.coef_, raw.coef_, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("sparse", [False, True])
def test_objective_of_the_fitted_learner_equals_the_sum_over_all_pairs(sparse):
    X, y = _data(11, n=45, d=6)
    labels = np.where(y > 0, "spam", "ham")  # any two labels; the larger is positive
    A = sp.csr_matrix(X) if sparse else X
    clf = BAM(C=0.5, max_newton=3).fit(A, labels)
    X_new, y_new = _data(12, n=30, d=6)
    F_ref, g_ref = prsvm_objective_ref(clf.coef_, X_new, y_new, clf.C_)
    A_new = sp.csr_matrix(X_new) if sparse else X_new
    labels_new = np.where(y_new > 0, "spam", "ham")
    np.testing.assert_allclose(clf.objective(A_new, labels_new), F_ref, rtol=1e-12)
    F, g = clf.objective(A_new, labels_new, gradient=True)
    np.testing.assert_allclose(F, F_ref, rtol=1e-12)
    np.testing.assert_allclose(g, g_ref, rtol=1e-11, atol=1e-11 * np.abs(g_ref).max())
    np.testing.assert_allclose(clf.objective(A, labels), clf.objective_, rtol=1e-12)


def test_dense_and_csr_fits_are_identical():
    X, y = _data(8, n=60, d=10, density=0.3)
    fits = [_bam(C=0.5).fit(A, y) for A in _both(X)]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert fits[0].n_passes_ == fits[1].n_passes_
    assert fits[0].objective_ == fits[1].objective_


def test_stop_reasons_and_one_line_per_newton_step(capsys):
    X, y = _data(9)
    clf = _bam(C=1.0, tol=1e-12, max_newton=2).fit(X, y)
    assert clf.stop_reason_ == "max_newton" and clf.n_passes_ == 2
    np.testing.assert_allclose(clf.objective_, prsvm_objective_ref(clf.coef_, X, y, 1.0)[0],
                               rtol=1e-12)
    capsys.readouterr()
    clf = _bam(C=1.0, tol=1e-8, verbose=1).fit(X, y)
    assert clf.stop_reason_ == "tol" and clf.n_passes_ >= 2
    steps = [line for line in capsys.readouterr().out.splitlines() if "newton step" in line]
    assert [int(line.split("newton step ")[1].split(",")[0]) for line in steps] == \
        list(range(1, clf.n_passes_ + 1))


def test_pairs_reference_counts_every_pair():
    X, y = _data(0, n=12, d=3)
    Z = prsvm_pairs(X, y)
    assert Z.shape == (np.sum(y > 0) * np.sum(y < 0), 3)


# ------------------------------------------------------------------ errors


def test_errors_name_the_problem():
    X, y = _data(0, n=10, d=3)
    # the solver's data checks (the learner passes its validated rows and labels)
    with pytest.raises(ValueError, match="at least one of each"):
        PRSVMObjective(X, np.ones(10), 1.0)
    with pytest.raises(ValueError, match="10 rows but y has 9"):
        PRSVMObjective(X, y[:9], 1.0)
    with pytest.raises(ValueError, match="only -1.0 and \\+1.0"):
        PRSVMObjective(X, np.where(y > 0, 1.0, 0.0), 1.0)
    with pytest.raises(TypeError, match="float64"):
        PRSVMObjective(X, y.astype(np.int64), 1.0)
    with pytest.raises(TypeError, match="C-contiguous float64"):
        PRSVMObjective(np.asfortranarray(X), y, 1.0)
    # the learner's parameter checks, before any state changes
    with pytest.raises(ValueError, match="C must be finite"):
        BAM(C=0.0).fit(X, y)
    with pytest.raises(ValueError, match="line_search"):
        BAM(line_search="wolfe").fit(X, y)
    with pytest.raises(ValueError, match="max_newton must be >= 1"):
        BAM(max_newton=0).fit(X, y)
    loss = K.PairSquaredHinge(y)
    with pytest.raises(RuntimeError, match="evaluate"):
        loss.hessian(np.zeros(10), np.zeros(10))
    with pytest.raises(ValueError, match="o has length 9"):
        loss.evaluate(np.zeros(9), np.zeros(10))
    with pytest.raises(FloatingPointError, match="not finite"):
        loss.evaluate(np.array([0.0] * 9 + [np.inf]), np.zeros(10))
    with pytest.raises(ValueError, match="rows must lie"):
        K.rows_dot(RowSource(X), np.zeros(3), np.array([0, 10]), np.zeros(10))
    with pytest.raises(TypeError, match="int64"):
        K.rows_combine(RowSource(X), np.zeros(10), np.array([0, 1], dtype=np.int32),
                       np.zeros(3))


@pytest.mark.parametrize("name", ["bam", "fbam", "nbam"])
@pytest.mark.parametrize("params", [{"tol": 1.0}, {"tol": 5.0}])
def test_a_solver_done_before_its_first_step_gives_w_zero(name, params):
    """A tol the start already meets: no Newton step, w = 0 (it used to raise
    AttributeError '_step_info'; max_newton=0 is now refused, see above)."""
    import warnings

    from aucopt.exceptions import ConstantModelWarning
    from aucopt.testing import contract_data

    X, y = contract_data(0)
    extra = {"n_components": 8} if name != "bam" else {}
    model = aucopt.get(name, **params, **extra, verbose=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantModelWarning)
        model.fit(X, y)
    assert model.n_passes_ == 0
    assert model.stop_reason_ == "tol"
    np.testing.assert_array_equal(model.coef_, 0.0)
    assert "_step_info" not in vars(model) and "_solver" not in vars(model)
