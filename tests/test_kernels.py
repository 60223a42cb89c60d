"""Shared kernels (ALGORITHMS.md 0.1) against plain numpy: row source, scaled weight
vector with maintained norm, exact lazy averaging."""
import numpy as np
import pytest
import scipy.sparse as sp

from aucopt._kernels._rows import RowSource
from aucopt._kernels._weights import WeightVector


def _matrix(seed=0, n=30, d=12, density=0.3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) > density] = 0.0
    X[4] = 0.0  # an empty row
    return X


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_row_source_csr_rows_match_numpy(index_dtype):
    X = _matrix()
    Xs = sp.csr_matrix(X)
    Xs.indices = Xs.indices.astype(index_dtype)
    Xs.indptr = Xs.indptr.astype(index_dtype)
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
    with pytest.raises(ValueError, match="canonical"):
        RowSource(unsorted)


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
    w = WeightVector(np.zeros((12, 2)), track_norm=True, averaging=True)
    ref = np.zeros(12)
    total, weights = np.zeros(12), 0.0
    for op in _random_program(seed):
        if op[0] == "add":
            _, i, c = op
            assert w.py_dot(rows, i) == pytest.approx(ref @ X[i], rel=1e-9, abs=1e-12)
            w.py_add(rows, i, c)
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
        assert w.sqnorm == pytest.approx(ref @ ref, rel=1e-8, abs=1e-300)
        if weights:
            avg = total / weights
            np.testing.assert_allclose(w.average(), avg, rtol=1e-8,
                                       atol=1e-10 * np.abs(avg).max())
    assert 1e-9 <= abs(w.scale) <= 1e9


def test_weight_vector_fold_keeps_value_and_average():
    X = _matrix(3)
    rows = RowSource(X)
    w = WeightVector(np.zeros((12, 2)), averaging=True)
    w.py_add(rows, 0, 1.0)
    w.py_snapshot()
    w.py_scale(0.25)
    before_w, before_avg = w.coef(), w.average()
    w.py_fold()
    assert w.scale == 1.0
    np.testing.assert_allclose(w.coef(), before_w, rtol=1e-15)
    np.testing.assert_allclose(w.average(), before_avg, rtol=1e-15)


def test_weight_vector_without_averaging_returns_w():
    w = WeightVector(np.array([1.0, -2.0]), scale=3.0)
    np.testing.assert_array_equal(w.coef(), [3.0, -6.0])
    np.testing.assert_array_equal(w.average(), [3.0, -6.0])
    with pytest.raises(ValueError):
        WeightVector(np.zeros(2), scale=0.0)
    with pytest.raises(ValueError, match="shape"):
        WeightVector(np.zeros(2), averaging=True)
    with pytest.raises(ValueError, match="contiguous"):
        WeightVector(np.zeros((4, 2))[:, 0])
