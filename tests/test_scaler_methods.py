"""Scaler methods "minmax" and "center" (the reproductions' scalings) against numpy."""
import numpy as np
import pytest
import scipy.sparse as sp

from aucopt.datasets import Scaler


def test_minmax_maps_the_training_range_onto_minus_one_one():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 4)) * [1, 10, 0.1, 0]
    out = Scaler("minmax").fit_transform(X)
    np.testing.assert_allclose(out[:, :3].min(axis=0), -1.0)
    np.testing.assert_allclose(out[:, :3].max(axis=0), 1.0)
    ref = 2 * (X[:, :3] - X[:, :3].min(0)) / np.ptp(X[:, :3], axis=0) - 1
    np.testing.assert_allclose(out[:, :3], ref, atol=1e-12)
    np.testing.assert_array_equal(out[:, 3], -1.0)  # a constant column
    scaler = Scaler("minmax").fit(X[:10])
    span = np.ptp(X[:10], 0)
    expected = 2 * (X[10:] - X[:10].min(0)) / np.where(span > 0, span, 2.0) - 1
    np.testing.assert_allclose(scaler.transform(X[10:]), expected, atol=1e-12)


def test_center_subtracts_the_training_means():
    X = np.arange(12.0).reshape(4, 3) ** 2
    np.testing.assert_allclose(Scaler("center").fit_transform(X), X - X.mean(0))


@pytest.mark.parametrize("method", ["minmax", "center"])
def test_shifting_methods_refuse_sparse_input(method):
    with pytest.raises(TypeError, match="sparse"):
        Scaler(method).fit(sp.csr_matrix(np.eye(3)))


@pytest.mark.parametrize("method", Scaler.METHODS)
def test_shifts_says_which_methods_refuse_sparse_input(method):
    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]]))
    scaler = Scaler(method)
    if scaler.shifts:
        with pytest.raises(TypeError, match="sparse"):
            scaler.fit(X)
        assert np.all(scaler.fit_transform(X.toarray()) != 0)  # the zeros were shifted
    else:
        assert sp.issparse(scaler.fit_transform(X))
