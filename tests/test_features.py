"""Kernel feature maps (Rahimi & Recht, Random Features for Large-Scale Kernel Machines,
2007; Zhang, Tsang & Kwok, Improved Nystrom Low-Rank Approximation and Error Analysis,
2008): kernel approximation against brute-force
kernels, the bandwidth heuristic, k-means against a plain numpy Lloyd loop, dense vs
CSR, block sizes, seeding, errors and scikit-learn's transformer checks."""
import numpy as np
import pytest
import scipy.sparse as sp

from aucopt import features
from aucopt.datasets import load
from aucopt.exceptions import NotFittedError
from aucopt.features import KMeansNystroem, Nystroem, RandomFourierFeatures, auto_components

# ------------------------------------------------------------------ references


def gaussian_kernel(A, B, s):
    """exp(-||a - b||^2 / s) for every pair, by explicit differences."""
    return np.exp(-((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=-1) / s)


def laplacian_kernel(A, B, sigma):
    """exp(-||a - b||_1 / sigma) for every pair."""
    return np.exp(-np.abs(A[:, None, :] - B[None, :, :]).sum(axis=-1) / sigma)


def mean_distance_to_mean(X, p, rows=80000):
    """Mean of ||x_i - mu||_2^2 (p=2) or ||x_i - mu||_1 (p=1) over the first rows."""
    X0 = X[:rows]
    diff = X0 - X0.mean(axis=0)
    return (diff ** 2).sum(axis=1).mean() if p == 2 else np.abs(diff).sum(axis=1).mean()


def lloyd(X, m, max_iter, seed):
    """Plain k-means as specified: m distinct random rows (increasing order) as centres,
    full distance matrix, argmin (first on ties), means, empty clusters re-seeded
    with distinct random rows; stop when no label changes. Returns (centres, n_iter,
    number of re-seeded centres)."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    C = X[np.sort(rng.choice(n, size=m, replace=False))].copy()
    labels, it, reseeded = None, 0, 0
    while it < max_iter:
        new = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=-1).argmin(axis=1)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        empty = [j for j in range(m) if not np.any(labels == j)]
        for j in range(m):
            if j not in empty:
                C[j] = X[labels == j].mean(axis=0)
        if empty:
            C[empty] = X[rng.choice(n, size=len(empty), replace=False)]
            reseeded += len(empty)
        it += 1
    return C, it, reseeded


def _data(seed=0, n=60, d=5, shift=0.0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) + shift


def _mixed(seed=1, n=90, d=12):
    """Rows of very different density, so both product routes are used."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 0.3
    keep = rng.random((n, d)) < np.where(np.arange(n) % 3 == 0, 0.05, 0.9)[:, None]
    return np.where(keep, X, 0.0)


def _fitted(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_")}


def _slope(Ds, errors):
    return np.polyfit(np.log(Ds), np.log(errors), 1)[0]


MAPS = [
    lambda **kw: RandomFourierFeatures(n_components=40, random_state=0, **kw),
    lambda **kw: RandomFourierFeatures(n_components=25, kernel="laplacian",
                                       variant="sincos", random_state=0, **kw),
    lambda **kw: Nystroem(n_components=30, random_state=0, **kw),
    lambda **kw: KMeansNystroem(n_components=20, random_state=0, **kw),
]
MAP_IDS = ["rff_gauss_cos", "rff_lap_sincos", "nystroem", "kmeans_nystroem"]

# ------------------------------------------------------------------ random Fourier


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
@pytest.mark.parametrize("variant", ["cos_phase", "sincos"])
def test_rff_error_falls_like_inverse_sqrt_of_components(kernel, variant):
    X = _data(2, n=25, d=4)
    sigma = 2.0 if kernel == "gaussian" else 4.0
    K = (gaussian_kernel(X, X, 2 * sigma**2) if kernel == "gaussian"
         else laplacian_kernel(X, X, sigma))
    Ds = [32, 128, 512, 2048]
    errors = []
    for D in Ds:
        rms = []
        for seed in range(6):
            Z = RandomFourierFeatures(n_components=D, kernel=kernel, sigma=sigma,
                                      variant=variant, random_state=seed).fit_transform(X)
            rms.append(np.sqrt(np.mean((Z @ Z.T - K) ** 2)))
        errors.append(np.mean(rms))
    assert -0.7 < _slope(Ds, errors) < -0.3, errors
    # unbiased: the error itself is Monte-Carlo sized, not a bias plateau
    assert errors[-1] < 2.0 / np.sqrt(Ds[-1])


@pytest.mark.parametrize("variant, factors", [
    ("sincos", {"unbiased": 1.0, "dissertation": 2.0, "none": 20000.0}),
    ("cos_phase", {"unbiased": 1.0, "dissertation": 1.0, "none": 10000.0}),
])
def test_scale_options_give_k_2k_mk(variant, factors):
    m = 20000
    X = _data(3, n=6, d=3)
    K = gaussian_kernel(X, X, 2 * 1.5**2)
    base = None
    for scale, factor in factors.items():
        Z = RandomFourierFeatures(n_components=m, sigma=1.5, variant=variant, scale=scale,
                                  random_state=7).fit_transform(X)
        # Monte-Carlo mean of m terms bounded by 1 (cos_phase: by 2)
        np.testing.assert_allclose(Z @ Z.T / factor, K, atol=8 / np.sqrt(m))
        if base is None:
            base = Z
        else:  # the same frequencies, only the constant differs
            np.testing.assert_allclose(Z, base * np.sqrt(factor), rtol=1e-13, atol=1e-15)


def test_rff_maps_follow_the_printed_formulas():
    X = _data(4, n=7, d=3)
    cos = RandomFourierFeatures(n_components=5, sigma=0.7, random_state=1).fit(X)
    np.testing.assert_allclose(cos.transform(X), np.sqrt(2 / 5) * np.cos(
        X @ cos.frequencies_ + cos.offsets_), rtol=1e-13, atol=1e-15)
    sc = RandomFourierFeatures(n_components=5, sigma=0.7, variant="sincos",
                               random_state=1).fit(X)
    P = X @ sc.frequencies_
    expected = np.empty((7, 10))
    expected[:, 0::2], expected[:, 1::2] = np.sin(P), np.cos(P)
    np.testing.assert_allclose(sc.transform(X), expected / np.sqrt(5), rtol=1e-13,
                               atol=1e-15)
    assert not hasattr(sc, "offsets_") and sc.n_features_out_ == 10


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
def test_frequency_distributions(kernel):
    est = RandomFourierFeatures(n_components=20000, kernel=kernel, sigma=2.5,
                                random_state=5).fit(np.ones((2, 2)) * [[1], [2]])
    theta = est.frequencies_.ravel()
    if kernel == "gaussian":  # N(0, sigma^-2)
        assert abs(theta.std() - 1 / 2.5) < 0.02 / 2.5
    else:  # Cauchy(0, 1/sigma): median of |theta| is 1/sigma
        assert abs(np.median(np.abs(theta)) - 1 / 2.5) < 0.03 / 2.5
    assert np.all((est.offsets_ >= 0) & (est.offsets_ < 2 * np.pi))


@pytest.mark.parametrize("sparse", [False, True])
def test_auto_widths_equal_bruteforce(sparse, monkeypatch):
    X = _mixed(5, n=70)
    Xin = sp.csr_matrix(X) if sparse else X
    s = mean_distance_to_mean(X, 2)
    gauss = RandomFourierFeatures(n_components=3, random_state=0).fit(Xin)
    np.testing.assert_allclose(2 * gauss.sigma_**2, s, rtol=1e-12)
    lap = RandomFourierFeatures(n_components=3, kernel="laplacian", random_state=0).fit(Xin)
    np.testing.assert_allclose(lap.sigma_, mean_distance_to_mean(X, 1), rtol=1e-12)
    for cls in (Nystroem, KMeansNystroem):
        np.testing.assert_allclose(cls(n_components=4, random_state=0).fit(Xin).bandwidth_,
                                   s, rtol=1e-12)
    # only the first HEURISTIC_ROWS rows count
    monkeypatch.setattr(features, "HEURISTIC_ROWS", 20)
    np.testing.assert_allclose(KMeansNystroem(n_components=4, random_state=0)
                               .fit(Xin).bandwidth_, mean_distance_to_mean(X, 2, rows=20),
                               rtol=1e-12)
    assert not np.isclose(mean_distance_to_mean(X, 2, rows=20), s)


def test_auto_width_of_shifted_data_is_shift_free():
    X = _data(6, n=40, d=3)
    a = RandomFourierFeatures(n_components=3, random_state=0).fit(X).sigma_
    b = RandomFourierFeatures(n_components=3, random_state=0).fit(X + 1e4).sigma_
    np.testing.assert_allclose(a, b, rtol=1e-9)


# ------------------------------------------------------------------ Nystrom


@pytest.mark.parametrize("sparse", [False, True])
def test_nystroem_is_exact_when_all_rows_are_landmarks(sparse):
    X = _data(7, n=40, d=5)
    Xin = sp.csr_matrix(X) if sparse else X
    K = gaussian_kernel(X, X, mean_distance_to_mean(X, 2))
    for est in (KMeansNystroem(random_state=0).fit(Xin),          # n <= m: all rows
                Nystroem.from_landmarks(Xin, n_eigen=None)):
        np.testing.assert_array_equal(est.landmarks_, X)
        assert est.n_features_out_ == 40
        Z = est.transform(Xin)
        np.testing.assert_allclose(Z @ Z.T, K, rtol=0, atol=1e-8)
    assert KMeansNystroem(random_state=0).fit(X).n_iter_ == 0


def test_truncated_nystroem_equals_rank_r_pseudo_inverse():
    L, Y = _data(8, n=30, d=4), _data(9, n=10, d=4)
    est = Nystroem.from_landmarks(L, bandwidth=3.0)  # default n_eigen=0.4 -> r = 12
    assert est.n_features_out_ == 12 and est.n_components == 30
    w, V = np.linalg.eigh(gaussian_kernel(L, L, 3.0))
    w, V = w[::-1][:12], V[:, ::-1][:, :12]
    np.testing.assert_allclose(est.eigenvalues_, w, rtol=1e-10)
    E = gaussian_kernel(Y, L, 3.0)
    Z = est.transform(Y)
    np.testing.assert_allclose(Z @ Z.T, E @ V @ np.diag(1 / w) @ V.T @ E.T, rtol=1e-9,
                               atol=1e-12)
    # NOAM's weights for kernel coefficients alpha: sum_i alpha_i psi(x_i)
    alpha = np.random.default_rng(0).standard_normal(30)
    np.testing.assert_allclose(est.eigenvalues_ * (est.projection_.T @ alpha),
                               est.transform(L).T @ alpha, rtol=1e-8, atol=1e-10)
    assert Nystroem.from_landmarks(L, bandwidth=3.0, n_eigen=5).n_features_out_ == 5


def test_rank_tol_drops_duplicate_landmarks():
    points = np.array([[0.0, 0, 0], [3, 0, 0], [0, 3, 0], [0, 0, 3], [3, 3, 3]])
    L = np.repeat(points, 3, axis=0)
    est = Nystroem.from_landmarks(L, bandwidth=4.0, n_eigen=None)
    assert est.n_features_out_ == 5
    Z = est.transform(points)
    np.testing.assert_allclose(Z @ Z.T, gaussian_kernel(points, points, 4.0), atol=1e-8)


def test_uniform_landmarks_are_distinct_training_rows():
    X = _data(10, n=50, d=3)
    est = Nystroem(n_components=12, random_state=3).fit(X)
    rows = [np.flatnonzero((X == u).all(axis=1)) for u in est.landmarks_]
    assert all(len(r) == 1 for r in rows)
    idx = np.concatenate(rows)
    assert np.all(np.diff(idx) > 0)  # distinct, in row order
    assert est.n_features_out_ == round(0.4 * 12)


# ------------------------------------------------------------------ k-means


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("max_iter", [1, 3, 10])
def test_kmeans_equals_numpy_lloyd(seed, max_iter):
    X = _data(seed, n=150, d=3)
    est = KMeansNystroem(n_components=8, max_iter=max_iter, random_state=seed).fit(X)
    C, it, _ = lloyd(X, 8, max_iter, seed)
    assert est.n_iter_ == it
    np.testing.assert_allclose(est.landmarks_, C, rtol=1e-12, atol=1e-12)


def test_kmeans_reseeds_empty_clusters_like_the_reference():
    # 4 distinct rows, 6 centres: duplicated centres leave clusters empty. Integer
    # values keep every distance and mean exact, so the ties are exact in both codes.
    X = np.repeat([[0.0, 0.0], [3.0, 1.0], [-2.0, 4.0], [1.0, -3.0]], 25, axis=0)
    for seed in range(3):
        C, it, reseeded = lloyd(X, 6, 10, seed)
        assert reseeded > 0
        est = KMeansNystroem(n_components=6, random_state=seed).fit(X)
        assert est.n_iter_ == it
        np.testing.assert_allclose(est.landmarks_, C, rtol=1e-12, atol=1e-12)
        assert est.n_features_out_ == 4  # duplicated landmarks are rank deficient


def test_kmeans_landmarks_improve_on_random_rows():
    X = _data(11, n=300, d=4)
    K = gaussian_kernel(X, X, mean_distance_to_mean(X, 2))
    errors = []
    for max_iter in (0, 10):
        Z = KMeansNystroem(n_components=15, max_iter=max_iter, random_state=0).fit_transform(X)
        errors.append(np.abs(Z @ Z.T - K).mean())
    assert errors[1] < 0.8 * errors[0], errors


# ------------------------------------------------------------------ exactness


@pytest.mark.parametrize("make", MAPS, ids=MAP_IDS)
def test_dense_and_sparse_input_give_identical_maps(make):
    X = _mixed()
    ref = make().fit(X)
    Z = ref.transform(X)
    stored_zeros = sp.csr_matrix(X)
    stored_zeros.data[::4] = 0.0  # explicit zeros in a canonical CSR matrix
    X_zeros = stored_zeros.toarray()
    for Xs in (sp.csr_matrix(X), sp.csc_matrix(X), sp.csr_array(X)):
        est = make().fit(Xs)
        assert _fitted(est).keys() == _fitted(ref).keys()
        for name, value in _fitted(ref).items():
            np.testing.assert_array_equal(getattr(est, name), value, err_msg=name)
        np.testing.assert_array_equal(est.transform(Xs), Z)
        np.testing.assert_array_equal(est.transform(X), Z)
    np.testing.assert_array_equal(ref.transform(stored_zeros), ref.transform(X_zeros))


def test_dense_and_sparse_identical_on_bundled_data():
    X, _ = load("ionosphere")
    for make in MAPS:
        a, b = make().fit(X), make().fit(X.toarray())
        np.testing.assert_array_equal(a.transform(X), b.transform(X.toarray()))


@pytest.mark.parametrize("make", MAPS, ids=MAP_IDS)
def test_block_size_changes_nothing_but_rounding(make):
    X = _mixed(2)
    ref = make().fit(X)
    Z = ref.transform(X)
    for block_size in (1, 4, 37):
        est = make(block_size=block_size).fit(X)
        for name, value in _fitted(ref).items():  # fitting is block-free
            np.testing.assert_array_equal(getattr(est, name), value, err_msg=name)
        # BLAS sums in a shape-dependent order: rows agree to rounding
        np.testing.assert_allclose(est.transform(X), Z, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(est.transform(sp.csr_matrix(X)), Z, rtol=1e-12,
                                   atol=1e-13)


@pytest.mark.parametrize("make", MAPS, ids=MAP_IDS)
def test_same_seed_same_map(make):
    X = _data(12, n=80, d=6)
    a, b = make().fit(X), make().fit(X)
    for name, value in _fitted(a).items():
        np.testing.assert_array_equal(getattr(b, name), value)
    other = make().set_params(random_state=1).fit(X)
    assert not np.array_equal(other.transform(X[:5]), a.transform(X[:5]))
    gen = make().set_params(random_state=np.random.default_rng(0)).fit(X)
    assert gen.transform(X[:2]).shape == a.transform(X[:2]).shape


def test_transform_out_and_refit():
    X = _data(13, n=20, d=3)
    est = RandomFourierFeatures(n_components=8, random_state=0).fit(X)
    out = np.full((20, 8), np.nan)
    assert est.transform(X, out=out) is out
    np.testing.assert_array_equal(out, est.transform(X))
    with pytest.raises(ValueError, match="shape"):
        est.transform(X, out=np.empty((20, 9)))
    with pytest.raises(TypeError, match="float64"):
        est.transform(X, out=np.empty((20, 8), dtype=np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        est.transform(X, out=np.empty((20, 8), order="F"))
    # a refit replaces every fitted attribute (no stale phases)
    est.set_params(variant="sincos").fit(X)
    assert not hasattr(est, "offsets_") and est.transform(X).shape == (20, 16)


@pytest.mark.parametrize("make", MAPS, ids=MAP_IDS)
def test_threads_give_the_same_map_and_features(make):
    X = _mixed(3, n=300)
    ref = make(block_size=16).fit(X)
    Z = ref.transform(X)
    for n_jobs in (2, 3, -1):
        est = make(block_size=16, n_jobs=n_jobs).fit(X)
        for name, value in _fitted(ref).items():  # k-means assigns in threads too
            np.testing.assert_array_equal(getattr(est, name), value, err_msg=name)
        np.testing.assert_array_equal(est.transform(X), Z)
        np.testing.assert_array_equal(est.transform(sp.csr_matrix(X)), Z)


def test_an_error_in_a_thread_reaches_the_caller():
    calls = []

    def work(lo, hi):
        calls.append(lo)
        if lo == 20:
            raise ZeroDivisionError("block 2")

    with pytest.raises(ZeroDivisionError, match="block 2"):
        features._for_blocks(100, 10, 2, work)
    assert 20 in calls


def _transform_peak(est, X):
    """Peak of the memory numpy allocates while ``est`` maps ``X`` into a given ``out``."""
    import tracemalloc

    out = np.empty((X.shape[0], est.n_features_out_))
    tracemalloc.start()
    try:
        est.transform(X, out=out)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("make", MAPS, ids=MAP_IDS)
@pytest.mark.parametrize("sparse", [False, True])
def test_transform_memory_is_bounded_by_the_block_not_the_rows(make, sparse):
    rng = np.random.default_rng(4)
    block, m = 64, None
    est = make(block_size=block).fit(_mixed(4, n=200))
    m = est.n_features_out_
    peaks = {}
    for n in (1000, 8000):
        X = rng.standard_normal((n, 12)) * (rng.random((n, 12)) < 0.5)
        X = sp.csr_matrix(X) if sparse else X
        peaks[n] = _transform_peak(est, X)
    # a few block-sized scratch matrices (products, kernel values, the routed rows),
    # whatever n: 8x more rows may not cost 1.5x the memory
    per_block = block * max(m, est.n_components, 12) * 8
    assert peaks[8000] <= 6 * per_block + 64 * 1024, peaks
    assert peaks[8000] < 1.5 * peaks[1000] + 16 * 1024, peaks
    # threads hold one block each
    est.set_params(n_jobs=2)
    assert _transform_peak(est, X) <= 12 * per_block + 64 * 1024


@pytest.mark.parametrize("make", MAPS, ids=MAP_IDS)
def test_mapping_a_few_sparse_rows_costs_a_fraction_of_the_map(make):
    """A partial_fit chunk of a mapped learner: no copy of the landmarks (or
    frequencies) per call, whatever d (a copy takes at most 1 MiB at a time)."""
    X = sp.random(300, 50_000, density=0.001, format="csr", random_state=3)
    est = make().fit(X)
    state = sum(v.nbytes for v in vars(est).values() if isinstance(v, np.ndarray))
    assert _transform_peak(est, X[:10]) < 0.25 * state


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("make", MAPS, ids=MAP_IDS)
def test_not_fitted_and_feature_mismatch(make):
    X = _data(14, n=30, d=4)
    with pytest.raises(NotFittedError, match="not fitted"):
        make().transform(X)
    est = make().fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but .* expecting 4"):
        est.transform(X[:, :3])
    with pytest.raises(ValueError, match="'auto' found no spread"):
        make().fit(np.ones((5, 4)))


@pytest.mark.parametrize("cls, params, error, match", [
    (RandomFourierFeatures, dict(n_components=0), ValueError, "n_components"),
    (RandomFourierFeatures, dict(n_components=2.5), TypeError, "n_components"),
    (RandomFourierFeatures, dict(kernel="rbf"), ValueError, "kernel"),
    (RandomFourierFeatures, dict(sigma=-1.0), ValueError, "sigma"),
    (RandomFourierFeatures, dict(sigma="median"), TypeError, "sigma"),
    (RandomFourierFeatures, dict(sigma=[1.0]), TypeError, "sigma"),
    (RandomFourierFeatures, dict(variant="sin"), ValueError, "variant"),
    (RandomFourierFeatures, dict(scale=1.0), ValueError, "scale"),
    (RandomFourierFeatures, dict(random_state="x"), TypeError, "random_state"),
    (RandomFourierFeatures, dict(block_size=0), ValueError, "block_size"),
    (RandomFourierFeatures, dict(n_jobs=0), ValueError, "n_jobs"),
    (RandomFourierFeatures, dict(n_jobs=1.5), TypeError, "n_jobs"),
    (RandomFourierFeatures, dict(max_bytes=10), ValueError, "max_bytes"),
    (RandomFourierFeatures, dict(n_components="all"), ValueError, "n_components"),
    (Nystroem, dict(n_components=0), ValueError, "n_components"),
    (KMeansNystroem, dict(n_components=np.ones(2)), TypeError, "n_components"),
    (Nystroem, dict(bandwidth=0.0), ValueError, "bandwidth"),
    (Nystroem, dict(n_eigen=0), ValueError, "n_eigen"),
    (Nystroem, dict(n_eigen=1.5), ValueError, "n_eigen"),
    (Nystroem, dict(n_eigen="all"), TypeError, "n_eigen"),
    (Nystroem, dict(n_eigen=True), TypeError, "n_eigen"),
    (Nystroem, dict(rank_tol=1.0), ValueError, "rank_tol"),
    (Nystroem, dict(rank_tol=-1e-3), ValueError, "rank_tol"),
    (Nystroem, dict(max_bytes=10), ValueError, "max_bytes"),
    (KMeansNystroem, dict(max_iter=-1), ValueError, "max_iter"),
    (KMeansNystroem, dict(max_iter=2.0), TypeError, "max_iter"),
    (KMeansNystroem, dict(block_size=1.5), TypeError, "block_size"),
    (KMeansNystroem, dict(n_jobs=-2), ValueError, "n_jobs"),
    (KMeansNystroem, dict(max_bytes=10), ValueError, "max_bytes"),
])
def test_bad_parameters_fail_at_fit(cls, params, error, match):
    est = cls(**params)  # __init__ only stores
    with pytest.raises(error, match=match):
        est.fit(_data(15, n=20, d=4))


def test_from_landmarks_validates():
    with pytest.raises(ValueError, match="n_eigen"):
        Nystroem.from_landmarks(_data(16, n=5, d=2), n_eigen=2.0)
    with pytest.raises(ValueError, match="NaN"):
        Nystroem.from_landmarks(np.full((3, 2), np.nan))
    est = Nystroem.from_landmarks(sp.csr_matrix(_data(16, n=5, d=2)), bandwidth=1.0)
    assert est.n_features_in_ == 2 and est.landmarks_.shape == (5, 2)


# ------------------------------------------------------------------ scikit-learn


try:
    from sklearn.utils.estimator_checks import parametrize_with_checks
except ImportError:  # scikit-learn is optional
    parametrize_with_checks = None

if parametrize_with_checks is None:
    def test_sklearn_compatible():
        pytest.skip("scikit-learn is not installed")
else:
    @parametrize_with_checks([m() for m in MAPS])
    def test_sklearn_compatible(estimator, check):
        check(estimator)


@pytest.mark.parametrize("make", [
    lambda m: RandomFourierFeatures(n_components=m, random_state=0),
    lambda m: RandomFourierFeatures(n_components=m, variant="sincos", random_state=0),
    lambda m: KMeansNystroem(n_components=m, max_iter=1, random_state=0)])
def test_auto_components_grow_like_sqrt_n_between_256_and_1600(make):
    assert [auto_components(n, 10) for n in (1, 4096, 4097, 15_216, 160_000, 10**7)] == \
        [256, 256, 257, 494, 1600, 1600]
    assert auto_components(100, 1000) == 256 and auto_components(100, 1001) == 1600
    X = _data(3, n=5000, d=3)
    fmap = make("auto").fit(X)
    per = 2 if getattr(fmap, "variant", "") == "sincos" else 1
    m = fmap.landmarks_.shape[0] if hasattr(fmap, "landmarks_") else fmap.n_features_out_ // per
    assert m == auto_components(5000, 3) == 283
    np.testing.assert_array_equal(fmap.transform(X[:50]), make(283).fit(X).transform(X[:50]))
    # a fitted state may not hold more components than "auto" allows
    fmap.n_features_out_ = per * 1601
    with pytest.raises(ValueError, match="n_features_out_|landmarks_"):
        fmap._check_state()


@pytest.mark.parametrize("make", MAPS, ids=MAP_IDS)
def test_a_row_source_of_validated_rows_is_taken_as_it_is(make):
    """fit / transform take the row source a learner validated once (finite_rows)
    and give what they give on the matrix itself."""
    from aucopt.validation import check_X, finite_rows, row_source

    X = _mixed(4, n=120)
    ref = make().fit(X)
    for Xin in (X, sp.csr_matrix(X)):
        rows = finite_rows(check_X(Xin))
        est = make().fit(rows)
        for name, value in _fitted(ref).items():
            np.testing.assert_array_equal(getattr(est, name), value, err_msg=name)
        np.testing.assert_array_equal(est.transform(row_source(check_X(Xin), norms=False)),
                                      ref.transform(X))
    with pytest.raises(ValueError, match="features"):
        ref.transform(finite_rows(check_X(X[:, :-1])))
    with pytest.raises(ValueError, match="take"):
        ref.transform(finite_rows(check_X(X)).take(np.arange(3)))
    with pytest.raises(ValueError, match="without row norms"):
        make().fit(row_source(check_X(X), norms=False))  # fit needs the norms checked
