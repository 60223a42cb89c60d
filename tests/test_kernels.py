"""Shared kernels against plain numpy: row source (and its CSR
structure checks), the weight primitive with maintained norm, exact lazy averaging and
an undo journal, the lazy elastic-net weights."""
import numpy as np
import pytest
import scipy.sparse as sp

from aucopt._kernels._rows import RowSource, check_rows
from aucopt._kernels._journal import Journal
from aucopt._kernels._weights import ElasticNetWeights, Weights, dense_scores, row_add, row_dot


def _matrix(seed=0, n=30, d=12, density=0.3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) > density] = 0.0
    X[4] = 0.0  # an empty row
    return X


@pytest.mark.parametrize("ptr_dtype", [np.int32, np.int64, np.uint16])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.uint8])
def test_row_source_csr_rows_match_numpy(ptr_dtype, index_dtype):
    X = _matrix()
    Xs = sp.csr_matrix(X)
    Xs.indices = Xs.indices.astype(index_dtype)
    Xs.indptr = Xs.indptr.astype(ptr_dtype)
    rows = RowSource(Xs)
    assert (rows.n_rows, rows.n_features, rows.dense) == (30, 12, False)
    for i in range(X.shape[0]):
        ind, val = rows.get_row(i)
        np.testing.assert_array_equal(ind, np.flatnonzero(X[i]))
        np.testing.assert_array_equal(val, X[i][X[i] != 0])
        assert rows.get_sqnorm(i) == pytest.approx(X[i] @ X[i], rel=1e-15)


def test_row_source_dense_rows_match_numpy():
    X = _matrix(1)
    rows = RowSource(X)
    assert rows.dense
    for i in range(X.shape[0]):
        ind, val = rows.get_row(i)
        np.testing.assert_array_equal(ind, np.arange(12))
        np.testing.assert_array_equal(val, X[i])
    with pytest.raises(IndexError):
        rows.get_row(30)


def test_row_source_nnz_counts_the_entries_its_rows_hand_out():
    X = _matrix(2)
    Xs = sp.csr_matrix(X)
    order = np.array([5, 4, 5, 0], dtype=np.int64)
    assert RowSource(X).nnz == X.size
    assert RowSource(Xs).nnz == np.count_nonzero(X)
    assert RowSource(Xs).take(order).nnz == np.count_nonzero(X[order])
    assert RowSource(X).take(order).nnz == order.size * X.shape[1]
    assert RowSource(sp.csr_matrix((0, 12))).nnz == 0


def test_row_source_refuses_unvalidated_input():
    X = _matrix()
    with pytest.raises(TypeError):
        RowSource(sp.csc_matrix(X))
    with pytest.raises(TypeError):
        RowSource(X.astype(np.float32))
    with pytest.raises(TypeError):
        RowSource(np.asfortranarray(X))
    unsorted = sp.csr_matrix((np.array([1.0, 2.0]), np.array([3, 1]), np.array([0, 2])),
                             shape=(1, 5))
    with pytest.raises(ValueError, match="unsorted or repeated"):
        RowSource(unsorted)


def test_row_source_reads_int32_indices_and_int64_pointers_in_place():
    """A matrix in the kernels' index widths is not copied: the row source's extra
    memory is its row norms (rcv1-sized inputs must fit next to their CSR)."""
    import tracemalloc

    n, nnz_per_row, d = 20000, 50, 5000
    rng = np.random.default_rng(0)
    indices = np.sort(rng.choice(d, size=(n, nnz_per_row)), axis=1)
    indices += np.arange(nnz_per_row)  # strictly increasing within a row
    X = sp.csr_matrix((rng.random(n * nnz_per_row), indices.ravel().astype(np.int32),
                       np.arange(0, n * nnz_per_row + 1, nnz_per_row, dtype=np.int64)),
                      shape=(n, d + nnz_per_row))
    X.indptr = X.indptr.astype(np.int64)
    tracemalloc.start()
    rows = RowSource(X)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8 * n + 100_000  # the norms; a copy of the indices would be 4 MB
    assert rows.get_row(7)[0].tolist() == X[7].indices.tolist()
    X.indices = X.indices.astype(np.int64)  # other widths: one narrowed copy
    tracemalloc.start()
    RowSource(X)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak >= 4 * X.nnz


def _csr(X):
    A = sp.csr_matrix(X)
    return A.data.copy(), A.indices.copy(), A.indptr.copy()


@pytest.mark.parametrize("edit, match", [
    (lambda d, i, p: i.__setitem__(3, 4000000), "outside"),
    (lambda d, i, p: i.__setitem__(3, -1), "outside"),
    (lambda d, i, p: p.__setitem__(2, p[3] + 1), "decreases|past the end"),
    (lambda d, i, p: p.__setitem__(-1, p[-1] + 5), "past the end"),
    (lambda d, i, p: p.__setitem__(0, 1), "not 0"),
])
@pytest.mark.parametrize("ptr_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_row_source_refuses_malformed_csr(edit, match, ptr_dtype, index_dtype):
    """Kernels run without bounds checks: a CSR matrix edited into an invalid
    structure must never reach them (segfaults or silent reads before)."""
    data, ind, ptr = _csr(_matrix())
    ind, ptr = ind.astype(index_dtype), ptr.astype(ptr_dtype)
    edit(data, ind, ptr)
    X = sp.csr_matrix((3, 3))  # a shell whose arrays we replace without scipy's checks
    X.data, X.indices, X.indptr, X._shape = data, ind, ptr, (30, 12)
    with pytest.raises(ValueError, match=match):
        RowSource(X)


@pytest.mark.parametrize("edit, match", [
    (lambda d, i, p: i.__setitem__(3, 4000000), "outside"),
    (lambda d, i, p: i.__setitem__(3, -1), "outside"),
    (lambda d, i, p: p.__setitem__(2, p[3] + 1), "decreases|past the end"),
    (lambda d, i, p: p.__setitem__(-1, p[-1] + 5), "past the end"),
    (lambda d, i, p: d.__setitem__(5, np.nan), "NaN or infinity"),
    (lambda d, i, p: d.__setitem__(0, -np.inf), "NaN or infinity"),
])
def test_check_X_one_pass_refuses_malformed_or_non_finite_csr(edit, match):
    """check_X's one fused pass (structure, finiteness, norms) refuses what a kernel
    must never read, and what no model can train on."""
    from aucopt.validation import check_X

    data, ind, ptr = _csr(_matrix())
    edit(data, ind, ptr)
    X = sp.csr_matrix((3, 3))
    X.data, X.indices, X.indptr, X._shape = data, ind, ptr, (30, 12)
    with pytest.raises(ValueError, match=match):
        check_X(X)


@pytest.mark.parametrize("ptr_dtype", [np.int32, np.int64])
def test_check_rows_norms_match_numpy_dense_and_csr(ptr_dtype):
    X = _matrix(3)
    Xs = sp.csr_matrix(X)
    Xs.indptr = Xs.indptr.astype(ptr_dtype)
    dense, csr = check_rows(X), check_rows(Xs)
    assert dense.finite and csr.finite
    np.testing.assert_allclose(csr.sqnorms, (X * X).sum(axis=1), rtol=1e-14)
    np.testing.assert_array_equal(csr.sqnorms, dense.sqnorms)  # index order: bitwise
    # overflowing squares are finite values: only the row source's check refuses them
    big = X.copy()
    big[1, :] = 1e200
    assert check_rows(big).finite and check_rows(sp.csr_matrix(big)).finite
    assert not check_rows(np.where(X > 1, np.inf, X)).finite


def test_row_source_reuses_a_matching_check_and_rescans_otherwise():
    """A RowSource given the Checked of its own matrix takes its norms (no second
    scan); a Checked of another matrix, or of arrays since replaced, is ignored."""
    from aucopt.validation import check_X, row_source

    X = _matrix(7)
    Xs = check_X(sp.csr_matrix(X), norms=True)  # keeps its pass for row_source
    checked = check_rows(Xs)
    rows = RowSource(Xs, True, checked)
    np.testing.assert_array_equal(rows.norms(), checked.sqnorms)
    Xs.data *= 2.0  # the same arrays: the check's norms are taken, nothing is read again
    np.testing.assert_array_equal(RowSource(Xs, True, checked).norms(), checked.sqnorms)
    np.testing.assert_array_equal(RowSource(Xs).norms(), 4.0 * checked.sqnorms)
    Xs.data /= 2.0
    np.testing.assert_array_equal(row_source(Xs).norms(), RowSource(Xs).norms())
    np.testing.assert_array_equal(row_source(check_X(X, norms=True)).norms(),
                                  RowSource(X).norms())
    other = sp.csr_matrix(X[::-1])
    assert not checked.matches(other)
    np.testing.assert_allclose(RowSource(other, True, checked).norms(),
                               (X[::-1] ** 2).sum(axis=1), rtol=1e-14)
    bad = Xs.indices.copy()
    bad[0] = 10 ** 6
    Xs.indices = bad  # replaced after the check: scanned again, and refused
    assert not checked.matches(Xs)
    with pytest.raises(ValueError, match="outside"):
        RowSource(Xs, True, checked)
    with pytest.raises(ValueError, match="outside"):
        row_source(Xs)


def test_dense_scores_match_numpy_and_agree_for_dense_and_csr():
    X = _matrix(5)
    w = np.random.default_rng(0).standard_normal(12)
    a = dense_scores(RowSource(X, norms=False), w)
    b = dense_scores(RowSource(sp.csr_matrix(X), norms=False), w)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, X @ w, rtol=1e-12, atol=1e-14)


def _random_program(seed, n_ops=300):
    """A random sequence of weight-vector operations with scales near the fold limits."""
    rng = np.random.default_rng(seed)
    ops = []
    for _ in range(n_ops):
        kind = rng.choice(["add", "scale", "snap", "tiny"], p=[0.6, 0.25, 0.12, 0.03])
        if kind == "add":
            ops.append(("add", int(rng.integers(30)), float(rng.standard_normal())))
        elif kind == "scale":
            ops.append(("scale", float(rng.uniform(0.5, 1.0))))
        elif kind == "tiny":
            ops.append(("scale", 1e-6))  # drives the scale through the fold threshold
        else:
            ops.append(("snap", float(rng.uniform(0.5, 2.0))))
    return ops


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weight_vector_matches_numpy(sparse, seed):
    X = _matrix(seed)
    rows = RowSource(sp.csr_matrix(X) if sparse else X)
    w = Weights(np.zeros((12, 2)), averaging=True)
    ref = np.zeros(12)
    total, weights = np.zeros(12), 0.0
    for op in _random_program(seed):
        if op[0] == "add":
            _, i, c = op
            assert row_dot(w, rows, i) == pytest.approx(ref @ X[i], rel=1e-9, abs=1e-12)
            row_add(w, rows, i, c)
            ref = ref + c * X[i]
        elif op[0] == "scale":
            w.py_scale(op[1])
            ref = op[1] * ref
        else:
            w.py_snapshot(op[1])
            total += op[1] * ref
            weights += op[1]
        scale = max(np.abs(ref).max(), 1e-300)
        np.testing.assert_allclose(w.coef() / scale, ref / scale, rtol=0, atol=1e-10)
        assert w.py_sqnorm() == pytest.approx(ref @ ref, rel=1e-8, abs=1e-300)
        if weights:
            avg = total / weights
            np.testing.assert_allclose(w.average(), avg, rtol=1e-8,
                                       atol=1e-10 * np.abs(avg).max())
    assert 1e-9 <= abs(w.scale) <= 1e9


@pytest.mark.parametrize("averaging", [False, True])
def test_deferred_norm_changes_no_weight_and_returns_at_the_fold(averaging):
    X = _matrix(4)
    rows = RowSource(sp.csr_matrix(X))
    kept = Weights(np.zeros((12, 2 if averaging else 1)), averaging=averaging)
    deferred = Weights(np.zeros((12, 2 if averaging else 1)), averaging=averaging)
    deferred.defer_norm = True
    for w in (kept, deferred):
        for i, c in ((0, 1.0), (3, -0.5), (1, 2.0)):
            row_add(w, rows, i, c)
            w.py_snapshot()
            w.py_scale(0.5)
    np.testing.assert_array_equal(deferred.coef(), kept.coef())
    np.testing.assert_array_equal(deferred.average(), kept.average())
    ref = kept.coef()
    assert kept.py_sqnorm() == pytest.approx(ref @ ref, rel=1e-12)
    assert deferred.py_sqnorm() == 0.0  # left alone: the adds did not keep it
    deferred.py_fold()
    assert deferred.py_sqnorm() == pytest.approx(ref @ ref, rel=1e-12)


def test_weight_vector_fold_keeps_value_and_average():
    X = _matrix(3)
    rows = RowSource(X)
    w = Weights(np.zeros((12, 2)), averaging=True)
    row_add(w, rows, 0, 1.0)
    w.py_snapshot()
    w.py_scale(0.25)
    before_w, before_avg = w.coef(), w.average()
    w.py_fold()
    assert w.scale == 1.0
    np.testing.assert_allclose(w.coef(), before_w, rtol=1e-15)
    np.testing.assert_allclose(w.average(), before_avg, rtol=1e-15)


@pytest.mark.parametrize("columns", [1, 2, 3])
def test_weight_read_out_is_the_state_expression_bit_for_bit(columns):
    """coef() and average() read the state out in one loop: exactly ``scale * v`` and
    ``(avg_c v - u) / avg_q`` as numpy computes them from the state's columns."""
    rng = np.random.default_rng(7)
    state = rng.standard_normal((50, columns)) * 10.0 ** rng.integers(-8, 8, (50, 1))
    w = Weights(state.copy(), scale=0.37, averaging=columns >= 2)
    np.testing.assert_array_equal(w.coef(), 0.37 * state[:, 0])
    if columns >= 2:
        w.py_snapshot(1.7)
        w.py_snapshot(0.3)
        c, q = w.avg_c, w.avg_q
        np.testing.assert_array_equal(w.average(), (c * state[:, 0] - state[:, 1]) / q)
    else:
        np.testing.assert_array_equal(w.average(), w.coef())
    empty = Weights(np.zeros((0, columns)), averaging=columns >= 2)
    assert empty.coef().shape == empty.average().shape == (0,)


def test_weight_vector_without_averaging_returns_w():
    w = Weights(np.array([1.0, -2.0]), scale=3.0)
    np.testing.assert_array_equal(w.coef(), [3.0, -6.0])
    np.testing.assert_array_equal(w.average(), [3.0, -6.0])
    assert w.py_sqnorm() == 45.0
    with pytest.raises(ValueError):
        Weights(np.zeros(2), scale=0.0)
    with pytest.raises(ValueError, match="shape"):
        Weights(np.zeros(2), averaging=True)
    with pytest.raises(ValueError, match="contiguous"):
        Weights(np.zeros((4, 2))[:, 0])


def _apply(w, rows, ops):
    for op in ops:
        if op[0] == "add":
            row_add(w, rows, op[1], op[2])
        elif op[0] == "scale":
            w.py_scale(op[1])
        else:
            w.py_snapshot(op[1])


@pytest.mark.parametrize("n_ops", [3, 40, 300])
@pytest.mark.parametrize("sparse", [False, True])
def test_weights_journal_rollback_restores_every_bit(n_ops, sparse):
    """Short programs are undone from the journal, long ones (folds, every row
    touched) from the one full copy: either way the state comes back exactly."""
    X = _matrix(7)
    rows = RowSource(sp.csr_matrix(X) if sparse else X)
    state = np.zeros((12, 2))
    w = Weights(state, averaging=True)
    _apply(w, rows, _random_program(11, 50))
    before, scalars = state.copy(), w.scalars()
    w.begin()
    _apply(w, rows, _random_program(12, n_ops))
    assert not np.array_equal(state, before)
    w.rollback()
    np.testing.assert_array_equal(state, before)
    assert w.scalars() == scalars
    w.begin()
    _apply(w, rows, _random_program(13, n_ops))
    after = state.copy()
    w.commit()
    np.testing.assert_array_equal(state, after)


def test_journal_saves_rows_once_within_budget_then_copies():
    a = np.arange(2000.0).reshape(1000, 2)
    j = Journal(a)
    # marks (1 byte a row) + saved rows (8 + 16 bytes each) within 25% of the array
    assert j.cap == (0.25 * 8 * 2 * 1000 - 1000) // 24
    for r in (5, 5, 7):
        j.py_touch(r)
        a[r] = -1.0
    assert j.count == 2 and not j.copied
    for r in range(1000):
        j.py_touch(r)
        a[r] = -2.0
    assert j.copied and not j.active
    j.rollback()
    np.testing.assert_array_equal(a, np.arange(2000.0).reshape(1000, 2))
    with pytest.raises(ValueError, match="C-contiguous float64"):
        Journal(np.zeros(4, dtype=np.float32))


def _soft(u, t):
    return np.sign(u) * np.maximum(np.abs(u) - t, 0.0)


@pytest.mark.parametrize("sparse", [False, True])
def test_elastic_net_weights_equal_eager_prox(sparse):
    """Lazy just-in-time prox == applying soft(., theta)/c to every coordinate
    every step; scores and coef() read the current values without changing them."""
    X = _matrix(9)
    rows = RowSource(sp.csr_matrix(X) if sparse else X)
    rng = np.random.default_rng(0)
    state = ElasticNetWeights.fresh(12)
    w = ElasticNetWeights(state)
    ref = np.zeros(12)
    for step in range(200):
        i = int(rng.integers(30))
        assert row_dot(w, rows, i) == pytest.approx(ref @ X[i], rel=1e-9, abs=1e-12)
        c = float(rng.standard_normal())
        row_add(w, rows, i, c)
        ref = ref + c * X[i]
        theta, shrink = 0.01 * rng.random(), 1.0 + 0.05 * rng.random()
        w.py_prox(theta, shrink)
        ref = _soft(ref, theta) / shrink
        if step % 50 == 49:
            np.testing.assert_allclose(w.coef(), ref, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(w.scores(rows), X @ ref, rtol=1e-9, atol=1e-12)
    frozen = state.copy()
    w.coef(), w.scores(rows)
    sq, l1 = w.norms()
    assert sq == pytest.approx(ref @ ref, rel=1e-9) and l1 == pytest.approx(
        np.abs(ref).sum(), rel=1e-9)
    np.testing.assert_array_equal(state, frozen)
    w.py_fold()
    np.testing.assert_allclose(state[:, 0], ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_row_source_take_is_a_reordered_view(sparse):
    X = _matrix(4)
    rows = RowSource(sp.csr_matrix(X) if sparse else X)
    order = np.array([5, 0, 29, 5, 7])
    view = rows.take(order)
    assert view.n_rows == 5 and view.n_features == 12
    for k, i in enumerate(order):
        np.testing.assert_array_equal(view.get_row(k)[1], rows.get_row(i)[1])
        assert view.get_sqnorm(k) == rows.get_sqnorm(i)
    np.testing.assert_array_equal(view.take([4, 0]).get_row(0)[1], rows.get_row(7)[1])
    np.testing.assert_array_equal(view.norms(), rows.norms()[order])
    w = np.arange(12.0)
    np.testing.assert_array_equal(dense_scores(view, w), dense_scores(rows, w)[order])
    with pytest.raises(IndexError):
        rows.take([30])


def test_weight_norms_are_those_of_the_iterate_and_of_the_average():
    rng = np.random.default_rng(3)
    state = np.zeros((12, 2))
    w = Weights(state, averaging=True)
    assert w.norms(True) == (0.0, 0.0)
    for step in range(40):
        w.py_scale(0.9)
        state[:, 0] += rng.standard_normal(12)  # behind the view: a new one recomputes vsq
        w = Weights(state, scale=w.scale, averaging=True, avg_c=w.avg_c, avg_q=w.avg_q)
        w.py_snapshot(1.0 + step)
    for average, vector in ((False, w.coef()), (True, w.average())):
        sq, l1 = w.norms(average)
        assert sq == pytest.approx(vector @ vector, rel=1e-12)
        assert l1 == pytest.approx(np.abs(vector).sum(), rel=1e-12)
    assert not np.allclose(w.coef(), w.average())


def test_centred_rows_are_the_rows_minus_their_mean_the_same_for_dense_and_csr():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 6)) + 3.0  # the mean row holds ~0.9 of the squared norm
    X[rng.random(X.shape) < 0.3] = 0.0
    dense, csr = RowSource(X).centred(0.2, 10**6), RowSource(sp.csr_matrix(X)).centred(0.2, 10**6)
    a, b = dense.matrix, csr.matrix
    np.testing.assert_array_equal(a, b)  # bit for bit
    np.testing.assert_allclose(a, X - X.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(dense.norms(), (a * a).sum(axis=1), rtol=1e-12)
    # a take() view: its rows (repeats included) in its order, centred on their mean
    order = np.array([3, 3, 0, 7, 39], dtype=np.int64)
    view = RowSource(sp.csr_matrix(X)).take(order).centred(0.2, 10**6).matrix
    np.testing.assert_allclose(view, X[order] - X[order].mean(axis=0), rtol=0, atol=1e-12)
    # the mean row holds too little of the norm, or the copy would be too large: None
    assert RowSource(X - X.mean(axis=0)).centred(0.2, 10**6) is None
    assert RowSource(X).centred(0.2, X.size - 1) is None
    assert RowSource(X).centred(0.2, X.size) is not None
