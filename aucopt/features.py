"""Explicit kernel feature maps: random Fourier features and Nystrom embeddings.

A linear AUC learner trained on ``psi(X)`` learns a kernel scoring function,
because ``psi(x) . psi(y)`` approximates the kernel ``k(x, y)``:

* :class:`RandomFourierFeatures` -- random Fourier features (Rahimi & Recht,
  "Random Features for Large-Scale Kernel Machines", NIPS 2007) of the Gaussian or
  Laplacian kernel, in the two forms used by M. Khalid Alnnfai, "Scalable Large
  Margin Pairwise Learning Algorithms", PhD dissertation, Colorado State
  University, 2019 (cosines with random phases, eq. 3.2, for FBAM / FASAM; sine and
  cosine pairs, eq. 5.2, for FCBR) and by Y. Ding, C. Liu, P. Zhao and S. C. H. Hoi,
  "Large Scale Kernel Methods for Online AUC Maximization", ICDM 2017 (FOAM);
* :class:`KMeansNystroem` -- the k-means Nystrom embedding of the dissertation
  (Sec. 2.3, Alg. 2; NBAM, NASAM, NPSAM), after K. Zhang, I. W. Tsang and J. T. Kwok,
  "Improved Nystrom Low-Rank Approximation and Error Analysis", ICML 2008;
* :class:`Nystroem` -- the plain Nystrom map of Ding et al. 2017 (NOAM, Alg. 5):
  landmark rows sampled uniformly by ``fit``, or handed over by a learner that
  collected them (:meth:`Nystroem.from_landmarks`), top ``0.4 Q`` eigenpairs.

All three are scikit-learn compatible transformers (``fit``, ``transform``,
``fit_transform``, ``get_params``/``set_params``) for dense arrays and sparse
matrices; the output is always a dense float64 array. ``transform`` works in
blocks of ``block_size`` rows, so its scratch memory grows with the block, not
with the number of rows. Fitted attributes are numpy arrays and numbers only (the
drawn frequencies themselves, the landmarks, the eigenpairs).

Dense and sparse input give bit-identical maps and outputs: each row is routed by
its number of nonzero values, rows with at least ``d / 8`` nonzeros through a
dense BLAS product and the others through a sparse product in index order; a row
takes the same route, with the same arithmetic, whether it came in a dense array
or a CSR matrix. Rows transformed in different blocks (another ``block_size``, a
single row) agree to rounding, about 1e-15 relative: BLAS sums in an order that
depends on the matrix shape.
"""
import math
import numbers
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from aucopt._docs import docstring
from aucopt._estimator import Estimator
from aucopt._kernels._rows import RowSource
from aucopt._state import Array, Scalar
from aucopt.exceptions import not_fitted_error
from aucopt.validation import (auto_or_positive, check_choice, check_count, check_n_jobs,
                               check_positive, check_random_state, check_seed, check_X,
                               finite_rows, n_threads)

__all__ = ["RandomFourierFeatures", "Nystroem", "KMeansNystroem"]

# Bandwidth heuristic over the first rows only (dissertation Sec. 3.4.2, 6.6.1:
# "the average square distance between the first 80k instances and the mean").
HEURISTIC_ROWS = 80000
# A row with at least d / _DENSE_ROW nonzero values goes through BLAS: measured
# cross-over of densify + dgemm against scipy's CSR product is a density of 0.1-0.15.
_DENSE_ROW = 8
_DEFAULT_BLOCK = 4096
# k-means assigns rows in blocks of at most this many scores (1 MiB: cache-resident);
# sparse rows meet the landmarks in copies of at most this many values; random
# frequencies are drawn in blocks of this many (interruptible between blocks)
_CACHE_FLOATS = 2**17
_DEFAULT_MAX_BYTES = 2**31


# --------------------------------------------------------------------------- rows


def _routed(X):
    """Split a block of validated rows into a dense part and a sparse part.

    Yields ``(sel, rows)``: ``sel`` selects the rows of the block (a full slice
    when all rows take one route), ``rows`` is a C-contiguous float64 array for rows
    with at least ``d / _DENSE_ROW`` nonzeros and a CSR matrix without stored zeros
    for the others. The route and the representation depend only on a row's values,
    so dense and CSR input reach identical arithmetic.
    """
    d = X.shape[1]
    if sp.issparse(X):
        nonzero = np.concatenate(([0], np.cumsum(X.data != 0)))
        counts = nonzero[X.indptr[1:]] - nonzero[X.indptr[:-1]]
    else:
        counts = np.count_nonzero(X, axis=1)
    dense = counts * _DENSE_ROW >= d
    for route, mask in ((True, dense), (False, ~dense)):
        if not mask.any():
            continue
        sel = slice(None) if mask.all() else np.flatnonzero(mask)
        rows = X[sel]
        if route:
            rows = rows.toarray() if sp.issparse(rows) else rows
        elif not sp.issparse(rows):
            rows = sp.csr_matrix(rows)
        elif not rows.data.all():
            rows = rows.copy()
            rows.eliminate_zeros()
        yield sel, rows


def _validated(X, norms=False, n_features=None, estimator=None, name="X"):
    """The validated matrix of ``X``: a RowSource's own (its maker validated the
    rows; with ``norms`` they must have finite norms, checked on the cached ones),
    anything else through :func:`check_X` (and :func:`finite_rows` with ``norms``:
    distances and bandwidths must not overflow)."""
    if not isinstance(X, RowSource):
        X = check_X(X, name=name, n_features=n_features, estimator=estimator, norms=norms)
        if norms:
            finite_rows(X)
        return X
    if n_features is not None and X.n_features != n_features:
        raise ValueError(f"{name} has {X.n_features} features, but {estimator} is expecting "
                         f"{n_features} features as input")
    if norms:
        X.check_finite_norms()
    return X.matrix


def _product(rows, T, out):
    """``out[...] = rows @ T`` (BLAS straight into ``out`` for dense rows)."""
    if sp.issparse(rows):
        out[...] = rows @ T
    else:
        np.matmul(rows, T, out=out)


def _row_ids(rows):
    """Row number of every stored value of a CSR matrix."""
    return np.repeat(np.arange(rows.shape[0]), np.diff(rows.indptr))


def _row_sum(rows, values):
    """Per-row sums of values given per stored entry of CSR ``rows`` (in index order)."""
    return np.bincount(_row_ids(rows), weights=values, minlength=rows.shape[0])


def _sqnorms(rows):
    """Squared Euclidean norms of the rows of one route."""
    if sp.issparse(rows):
        return _row_sum(rows, rows.data * rows.data)
    return np.einsum("ij,ij->i", rows, rows)


def _dense_copy(rows):
    return rows.toarray() if sp.issparse(rows) else np.array(rows, dtype=np.float64)


def _chunks(n, d):
    """Slices of ``n`` rows of width ``d`` holding at most :data:`_CACHE_FLOATS` x 8
    values each: large array operations in pieces, so that Ctrl-C (handled between
    Python statements) stops them within a fraction of a second."""
    step = max(1, 8 * _CACHE_FLOATS // max(d, 1))
    return [slice(start, min(n, start + step)) for start in range(0, n, step)]


def _dense_rows_at(X, index):
    """``X[index]`` as a dense float64 array, copied in chunks (see :func:`_chunks`)."""
    out = np.empty((len(index), X.shape[1]))
    for part in _chunks(len(index), X.shape[1]):
        out[part] = _dense_copy(X[index[part]])
    return out


def _kernel_columns(landmarks, bandwidth):
    """What :func:`_gaussian` needs of the landmarks ``u`` (rows of ``landmarks``):
    the landmarks themselves, ``||u||^2 / bandwidth`` and the bandwidth."""
    return landmarks, np.einsum("ij,ij->i", landmarks, landmarks) / bandwidth, bandwidth


def _cross(rows, landmarks):
    """``rows @ landmarks.T`` without a copy of the landmarks: dense rows through
    BLAS on the transposed view; sparse rows (scipy needs a C-contiguous right-hand
    side) against copies of at most :data:`_CACHE_FLOATS` landmark values at a time,
    so that a call's memory is bounded by the block, not by the map's state."""
    if not sp.issparse(rows):
        return rows @ landmarks.T
    m, d = landmarks.shape
    K = np.empty((rows.shape[0], m))
    step = max(1, _CACHE_FLOATS // max(d, 1))
    for start in range(0, m, step):
        stop = min(m, start + step)
        K[:, start:stop] = rows @ np.ascontiguousarray(landmarks[start:stop].T)
    return K


def _gaussian(rows, columns):
    """``exp(-||x - u||^2 / bandwidth)`` of ``rows`` against the landmarks of
    ``columns`` (from :func:`_kernel_columns`).

    ``-||x - u||^2 / s = 2 x.u / s - ||x||^2 / s - ||u||^2 / s`` (clamped at 0 before
    the exponential), so a sparse row costs O(nnz(x)) per landmark.
    """
    landmarks, tsq, bandwidth = columns
    K = _cross(rows, landmarks)
    K *= 2.0 / bandwidth
    K -= (_sqnorms(rows) / bandwidth)[:, None]
    K -= tsq
    np.minimum(K, 0.0, out=K)
    return np.exp(K, out=K)


def _column_means(X):
    """Column means, summed over rows in row order for dense and CSR alike."""
    ones = sp.csr_matrix(np.ones((1, X.shape[0])))
    total = ones @ X
    total = total.toarray() if sp.issparse(total) else total
    return total.ravel() / X.shape[0]


def _distance_to_mean(X, norm, block_size, name):
    """Mean distance of the first ``HEURISTIC_ROWS`` rows to their mean.

    ``norm="sq"``: mean squared Euclidean distance (the dissertation's Nystrom
    bandwidth); ``norm="l1"``: mean L1 distance. Sparse rows use
    ``||x - mu||^2 = ||mu||^2 + sum_nz x (x - 2 mu)`` and
    ``||x - mu||_1 = ||mu||_1 + sum_nz (|x - mu| - |mu|)``. ``name`` is the
    parameter set to ``"auto"``, for the error raised when the rows do not vary.
    """
    X0 = X[:HEURISTIC_ROWS]
    mu = _column_means(X0)
    per_row = np.empty(X0.shape[0])
    for lo in range(0, X0.shape[0], block_size):
        out = per_row[lo:lo + block_size]
        for sel, rows in _routed(X0[lo:lo + block_size]):
            if not sp.issparse(rows):
                diff = rows - mu
                out[sel] = (np.square(diff, out=diff) if norm == "sq"
                            else np.abs(diff, out=diff)).sum(axis=1)
                continue
            mu_nz = mu[rows.indices]
            if norm == "sq":
                out[sel] = mu @ mu + _row_sum(rows, rows.data * (rows.data - 2.0 * mu_nz))
            else:
                out[sel] = (np.abs(mu).sum()
                            + _row_sum(rows, np.abs(rows.data - mu_nz) - np.abs(mu_nz)))
    value = float(per_row.sum() / X0.shape[0])
    # identical rows leave only rounding errors of the size of eps * ||mu||
    rounding = 1e-12 * (mu @ mu if norm == "sq" else np.abs(mu).sum())
    if not value > rounding:
        raise ValueError(
            f"{name}='auto' found no spread: the first {X0.shape[0]} rows of X are all "
            f"identical (e.g. X has one sample); pass a positive {name}")
    return value


def _check_dense_size(what, rows, cols, max_bytes):
    need = rows * cols * 8
    if need > max_bytes:
        raise ValueError(
            f"{what} would be a dense {rows} x {cols} float64 matrix ({need / 2**30:.2f} "
            f"GiB), above max_bytes={max_bytes}; use fewer components or features, or "
            "raise max_bytes")


def _for_blocks(n_rows, block_size, n_jobs, work):
    """Call ``work(lo, hi)`` on consecutive blocks of rows, in ``n_jobs`` threads.

    Blocks write disjoint slices and their arithmetic does not depend on the
    thread, so the result is the same for every ``n_jobs``. Each thread takes the
    next block when it is done with one, so at most ``n_jobs`` blocks are in
    progress (the memory bound). numpy's products and element-wise functions
    release the GIL. An exception in a block (or Ctrl-C in the waiting thread)
    stops the threads after their current block and is raised.
    """
    starts = iter(range(0, n_rows, block_size))
    n_blocks = -(-n_rows // block_size)
    workers = min(n_threads(n_jobs), n_blocks)
    if workers <= 1:
        for lo in starts:
            work(lo, min(lo + block_size, n_rows))
        return
    lock, stop = threading.Lock(), threading.Event()

    def worker():
        while not stop.is_set():
            with lock:
                lo = next(starts, None)
            if lo is None:
                return
            try:
                work(lo, min(lo + block_size, n_rows))
            except BaseException:
                stop.set()
                raise

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for future in [pool.submit(worker) for _ in range(workers)]:
            future.result()
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True)


# --------------------------------------------------------------------------- base


# n_components="auto": ceil(4 sqrt(n)) for n training rows, within these bounds, on
# rows of at most AUTO_MAX_FEATURES features; the upper bound on wider rows
AUTO_COMPONENTS = (256, 1600)
AUTO_MAX_FEATURES = 1000


def auto_components(n, d):
    """The number of components ``n_components="auto"`` gives for ``n`` training rows
    of ``d`` features."""
    low, high = AUTO_COMPONENTS
    if d > AUTO_MAX_FEATURES:
        return high
    return int(min(high, max(low, math.ceil(4.0 * math.sqrt(n)))))


class _FeatureMap(Estimator):
    """``fit``/``transform`` plumbing shared by the feature maps.

    Subclasses implement ``_check_params()``, ``_fit(X)`` (returns the fitted
    attributes as a dict, so a failing fit leaves the previous state untouched),
    ``_prepare()`` (per-call constants of ``transform``) and
    ``_map(rows, prepared, out)`` (writes the features of the rows of one route
    into ``out``).
    """

    def __sklearn_tags__(self):
        # only scikit-learn calls this, so it is installed when we get here
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=TransformerTags(),
                    input_tags=InputTags(sparse=True, allow_nan=False))

    def __sklearn_is_fitted__(self):
        return hasattr(self, "n_features_in_")

    def _check_common(self):
        if isinstance(self.n_components, str):
            if self.n_components != "auto":
                raise ValueError("n_components must be 'auto' or a positive integer, got "
                                 f"{self.n_components!r}")
        else:
            check_count("n_components", self.n_components)
        check_count("block_size", self.block_size)
        check_count("max_bytes", self.max_bytes)
        check_n_jobs(self.n_jobs)

    def _auto_components(self):
        return isinstance(self.n_components, str)  # "auto" (checked by _check_common)

    def _components(self, n, d):
        """``n_components`` for ``n`` training rows of ``d`` features (resolving "auto")."""
        return auto_components(n, d) if self._auto_components() else int(self.n_components)

    def _most_components(self):
        """The largest ``n_components`` a fitted state may hold."""
        return AUTO_COMPONENTS[1] if self._auto_components() else int(self.n_components)

    def fit(self, X, y=None):
        """Fit the map to ``X``; ``y`` is ignored.

        Parameters
        ----------
        X : array-like, sparse matrix or RowSource of shape (n_samples, n_features)
            Dense or sparse rows, or the row source of rows validated once, with
            their norms (:func:`aucopt.validation.finite_rows`), which is not
            validated again (its cached norms must be finite).

        Returns
        -------
        self
        """
        self._check_params()
        return self._fit_validated(_validated(X, norms=True))

    def _fit_validated(self, X):
        """:meth:`fit` on a validated matrix of rows with finite norms, the
        parameters checked (a learner on this map checks them with its own)."""
        return self._store(self._fit(X), X.shape[1])

    def _store(self, state, n_features):
        """Replace the fitted state by ``state`` (of a map of ``n_features`` inputs)."""
        state["n_features_in_"] = n_features
        self._clear_fitted()
        self.__dict__.update(state)
        return self

    def transform(self, X, out=None):
        """Map the rows of ``X`` to the feature space.

        Parameters
        ----------
        X : array-like, sparse matrix or RowSource of shape (n_samples, ``n_features_in_``)
            Dense or sparse rows, or a RowSource of validated rows (as for
            :meth:`fit`; no norms needed).
        out : ndarray of shape (n_samples, ``n_features_out_``), optional
            C-contiguous float64 array to write the result to (e.g. a
            ``numpy.memmap``); a new array by default.

        Returns
        -------
        ndarray of shape (n_samples, ``n_features_out_``)
            Dense float64 features, computed ``block_size`` rows at a time.
        """
        if not self.__sklearn_is_fitted__():
            raise not_fitted_error(f"This {type(self).__name__} instance is not fitted "
                                   "yet; call fit with training data first")
        check_count("block_size", self.block_size)
        check_n_jobs(self.n_jobs)
        return self._transform_validated(_validated(X, n_features=self.n_features_in_,
                                                    estimator=type(self).__name__), out)

    def _transform_validated(self, X, out=None):
        """:meth:`transform` of a validated matrix of rows of ``n_features_in_``
        features, the map fitted and its parameters checked."""
        shape = (X.shape[0], self.n_features_out_)
        if out is None:
            out = np.empty(shape)
        elif not isinstance(out, np.ndarray) or out.dtype != np.float64:
            raise TypeError("out must be a float64 numpy array, got "
                            f"{type(out).__name__} {getattr(out, 'dtype', '')}")
        elif (out.shape != shape or not out.flags.writeable
              or not out.flags.c_contiguous):
            raise ValueError(f"out must be a writeable C-contiguous array of shape "
                             f"{shape}, got shape {out.shape}")
        prepared = self._prepare()

        def work(lo, hi):
            block = out[lo:hi]
            for sel, rows in _routed(X[lo:hi]):
                if isinstance(sel, slice):  # the whole block: write in place
                    self._map(rows, prepared, block)
                else:
                    part = np.empty((rows.shape[0], shape[1]))
                    self._map(rows, prepared, part)
                    block[sel] = part

        _for_blocks(X.shape[0], self.block_size, self.n_jobs, work)
        return out

    def fit_transform(self, X, y=None):
        """``fit(X)`` then ``transform(X)``."""
        return self.fit(X).transform(X)


# --------------------------------------------------------------------------- RFF


_SCALES = ("unbiased", "dissertation", "none")

_WIDTH_FACTOR = """width_factor : float, default=1.0
        Multiplies the width that ``"auto"`` derives: the denominator ``s`` of the
        Gaussian kernel's exponent (``2 sigma^2``; the Laplacian kernel's ``sigma``).
        1 is the dissertation's heuristic; a larger factor gives a smoother kernel,
        closer to a linear model (FBAM, FASAM and NPSAM default to 8: their
        docstrings give the measurements). No effect on a numeric width."""


class RandomFourierFeatures(_FeatureMap):
    __doc__ = docstring("""Random Fourier features of the Gaussian or Laplacian kernel.

    Approximates a shift-invariant kernel by ``psi(x) . psi(y)`` (Rahimi & Recht,
    "Random Features for Large-Scale Kernel Machines", NIPS 2007), with the two
    maps of M. Khalid Alnnfai, "Scalable Large Margin Pairwise Learning
    Algorithms", PhD dissertation, Colorado State University, 2019:

    * ``variant="cos_phase"`` (eq. 3.2, FBAM and FASAM):
      ``psi(x) = sqrt(2/D) [cos(theta_1.x + b_1), ..., cos(theta_D.x + b_D)]`` with
      ``b_j ~ U[0, 2 pi)``; ``D = n_components`` output columns;
    * ``variant="sincos"`` (eq. 5.2, FCBR):
      ``psi(x) = c [sin(theta_1.x), cos(theta_1.x), ..., sin(theta_m.x), cos(theta_m.x)]``;
      ``2 m = 2 n_components`` output columns. Ding, Liu, Zhao & Hoi, "Large Scale
      Kernel Methods for Online AUC Maximization", ICDM 2017 (FOAM) order each pair
      as cos, sin: a fixed permutation of the columns, which changes no inner
      product and hence no learner's scores.

    Kernels: ``"gaussian"`` ``exp(-||x - y||^2 / (2 sigma^2))`` with
    ``theta ~ N(0, sigma^-2 I)``; ``"laplacian"`` ``exp(-||x - y||_1 / sigma)`` with
    independent ``Cauchy(0, 1/sigma)`` coordinates.

    Parameters
    ----------
    n_components : int or "auto", default=1600
        Number of random frequencies ``theta_j``. The dissertation uses 1600 for
        FBAM / FASAM and 150 sine/cosine pairs (300 columns) for FCBR and FOAM.
        "auto": ``ceil(4 sqrt(n))`` for ``n`` training rows, at least 256 and at
        most 1600, on rows of at most 1000 features; 1600 on wider rows (the
        default of the kernelized learners; FASAM's docstring says why).
    kernel : {{"gaussian", "laplacian"}}, default="gaussian"
    sigma : float or "auto", default="auto"
        Kernel width. ``"auto"`` derives it from the data with the bandwidth
        heuristic of the dissertation's k-means Nystrom map: ``s`` = mean squared
        distance of the first ``min(n, 80000)`` training rows to their mean, and
        ``sigma = sqrt(s / 2)``, i.e. the kernel ``exp(-||x - y||^2 / s)`` (the same
        kernel as :class:`KMeansNystroem`'s default, and close to scikit-learn's
        ``gamma="scale"``); two typical rows then have similarity about
        ``exp(-2)``, on any scale of the data. For the Laplacian kernel ``"auto"`` is
        the mean L1 distance of those rows to their mean. The papers tune the width
        instead (FCBR: ``sigma = 100`` on their scaled data); tune it too when the
        default is not good enough.
    {_WIDTH_FACTOR}
    variant : {{"cos_phase", "sincos"}}, default="cos_phase"
        The dissertation's batch and stochastic learners use ``cos_phase``; at an
        equal number of output columns ``sincos`` approximates the Gaussian kernel
        with lower variance (Sutherland & Schneider, "On the Error of Random Fourier
        Features", UAI 2015).
    scale : {{"unbiased", "dissertation", "none"}}, default="unbiased"
        The constant factor of the map. ``"unbiased"`` makes ``E[psi(x).psi(y)]``
        equal ``k(x, y)``: ``sqrt(2/D)`` for ``cos_phase``, ``sqrt(1/m)`` for
        ``sincos``. ``"dissertation"`` is the factor as printed: ``sqrt(2/D)``
        (eq. 3.2, unbiased) and ``sqrt(2/m)`` (eq. 5.2, giving ``2 k``). ``"none"``
        is 1, as printed for FOAM by Ding et al. 2017 (giving ``m k`` for
        ``sincos``). A constant factor only moves the best C or learning rate.
    random_state : None, int, numpy Generator or RandomState
        Seed of the frequencies (drawn first) and phases.
    block_size : int, default=4096
        Rows per block in ``transform``; its scratch memory is about
        ``block_size * n_components * 8`` bytes (52 MB at the defaults).
    n_jobs : int or None, default=None
        Threads over the blocks of rows in ``transform`` (-1: one per core; None: 1). numpy's
        products and element-wise functions release the GIL; blocks write disjoint
        rows with the same arithmetic, so the output is identical for every
        ``n_jobs``, and the scratch memory is ``n_jobs`` blocks.
    max_bytes : int, default=2**31
        Refuse to fit when the dense ``n_features x n_components`` frequency matrix
        would exceed this many bytes (high-dimensional sparse data).

    Attributes
    ----------
    sigma_ : float
        Kernel width used.
    frequencies_ : ndarray of shape (``n_features_in_``, n_components)
        The drawn ``theta_j`` as columns.
    offsets_ : ndarray of shape (n_components,)
        The phases ``b_j`` (``cos_phase`` only).
    scale_ : float
        The factor in front of the map.
    n_features_in_ : int
    n_features_out_ : int
        ``n_components`` for ``cos_phase``, ``2 n_components`` for ``sincos``.
    """, fields={"_WIDTH_FACTOR": _WIDTH_FACTOR})

    def __init__(self, n_components=1600, kernel="gaussian", sigma="auto", width_factor=1.0,
                 variant="cos_phase", scale="unbiased", random_state=None,
                 block_size=_DEFAULT_BLOCK, n_jobs=None, max_bytes=_DEFAULT_MAX_BYTES):
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.width_factor = width_factor
        self.variant = variant
        self.scale = scale
        self.random_state = random_state
        self.block_size = block_size
        self.n_jobs = n_jobs
        self.max_bytes = max_bytes

    def _check_params(self):
        check_choice("kernel", self.kernel, ("gaussian", "laplacian"))
        auto_or_positive("sigma", self.sigma)
        check_positive("width_factor", self.width_factor)
        check_choice("variant", self.variant, ("cos_phase", "sincos"))
        check_choice("scale", self.scale, _SCALES)
        check_seed(self.random_state)
        self._check_common()

    _state = {
        "n_features_in_": Scalar(int, low=1),
        "n_features_out_": Scalar(int, low=1),
        "sigma_": Scalar(float, low=0.0),
        "frequencies_": Array("f8", ("d", "m")),
        "offsets_": Array("f8", ("m",), optional=True),
        "scale_": Scalar(float, low=0.0),
    }

    def _state_dims(self):
        per = 1 if self.variant == "cos_phase" else 2
        return {"d": self.n_features_in_, "m": self.n_features_out_ // per}

    def _check_state(self):
        cos_phase = self.variant == "cos_phase"
        if cos_phase != ("offsets_" in self.__dict__):
            raise ValueError("offsets_ must be present exactly for variant='cos_phase'")
        per = 1 if cos_phase else 2
        m, rest = divmod(self.n_features_out_, per)
        if rest or m > self._most_components() or (
                not self._auto_components() and m != self.n_components):
            raise ValueError("n_features_out_ does not match n_components and variant")

    def _fit(self, X):
        d, m = X.shape[1], self._components(*X.shape)
        _check_dense_size("the frequency matrix", d, m, self.max_bytes)
        if self.sigma != "auto":
            sigma = float(self.sigma)
        elif self.kernel == "gaussian":
            s = _distance_to_mean(X, "sq", self.block_size, "sigma")
            sigma = float(np.sqrt(float(self.width_factor) * s / 2.0))
        else:
            sigma = float(self.width_factor) * _distance_to_mean(X, "l1", self.block_size,
                                                                 "sigma")
        rng = check_random_state(self.random_state)
        draw = rng.standard_normal if self.kernel == "gaussian" else rng.standard_cauchy
        frequencies = np.empty((d, m))
        step = max(1, _CACHE_FLOATS // max(m, 1))
        for start in range(0, d, step):  # the same stream as one draw((d, m)); blocks
            block = frequencies[start:start + step]  # keep Ctrl-C prompt at large d
            block[...] = draw(block.shape)
            block /= sigma
        state = {"sigma_": sigma, "frequencies_": frequencies}
        if self.variant == "cos_phase":
            state["offsets_"] = rng.uniform(0.0, 2.0 * np.pi, m)
            unbiased = np.sqrt(2.0 / m)
            factors = {"unbiased": unbiased, "dissertation": unbiased, "none": 1.0}
            state["n_features_out_"] = m
        else:
            factors = {"unbiased": np.sqrt(1.0 / m), "dissertation": np.sqrt(2.0 / m),
                       "none": 1.0}
            state["n_features_out_"] = 2 * m
        state["scale_"] = float(factors[self.scale])
        return state

    def _prepare(self):
        return None

    def _map(self, rows, prepared, out):
        if hasattr(self, "offsets_"):
            _product(rows, self.frequencies_, out)
            out += self.offsets_
            np.cos(out, out=out)
        else:
            P = rows @ self.frequencies_
            np.sin(P, out=out[:, 0::2])
            np.cos(P, out=out[:, 1::2])
        out *= self.scale_


# --------------------------------------------------------------------------- Nystrom


class _NystroemMap(_FeatureMap):
    """Nystrom embedding from dense landmarks (shared by both Nystrom classes).

    Subclasses choose the landmarks: ``_landmarks(X, m)`` returns ``m`` dense rows
    and a dict of extra fitted attributes.

    Kernel ``k(x, y) = exp(-||x - y||^2 / bandwidth)``; ``W = k(U, U)`` with
    eigenpairs ``W = V Sigma V^T`` (descending), of which those with
    ``sigma_i > rank_tol * sigma_1`` are kept (at most ``n_eigen``); the map is
    ``psi(x) = Sigma_r^{-1/2} V_r^T [k(x, u_1), ..., k(x, u_m)]``, so that
    ``psi(x) . psi(y) = e(x)^T W_r^+ e(y)``.
    """

    def _check_params(self):
        auto_or_positive("bandwidth", self.bandwidth)
        check_positive("width_factor", self.width_factor)
        n_eigen = self.n_eigen
        if isinstance(n_eigen, numbers.Integral) and not isinstance(n_eigen, bool):
            check_count("n_eigen", n_eigen)
        elif isinstance(n_eigen, numbers.Real) and not isinstance(n_eigen, bool):
            if not 0.0 < n_eigen <= 1.0:
                raise ValueError("n_eigen as a float is a fraction of the landmarks "
                                 f"and must be in (0, 1], got {n_eigen!r}")
        elif n_eigen is not None:
            raise TypeError("n_eigen must be None, an int or a float in (0, 1], got "
                            f"{type(n_eigen).__name__} {n_eigen!r}")
        check_positive("rank_tol", self.rank_tol, allow_zero=True)
        if not self.rank_tol < 1.0:
            raise ValueError(f"rank_tol must be < 1, got {self.rank_tol!r}")
        check_seed(self.random_state)
        self._check_common()

    _state = {
        "n_features_in_": Scalar(int, low=1),
        "n_features_out_": Scalar(int, low=1),
        "bandwidth_": Scalar(float, low=0.0),
        "landmarks_": Array("f8", ("*", "d")),
        "eigenvalues_": Array("f8", ("r",), low=0.0),
        "projection_": Array("f8", ("*", "r")),
        "n_iter_": Scalar(int, low=0, optional=True),
    }

    def _state_dims(self):
        return {"d": self.n_features_in_, "r": self.n_features_out_}

    def _check_state(self):
        m = self.landmarks_.shape[0]
        if not 1 <= m <= self._most_components() or self.projection_.shape[0] != m \
                or self.n_features_out_ > m or self.bandwidth_ <= 0.0:
            raise ValueError("landmarks_, projection_ and n_features_out_ do not fit "
                             "together")

    def _fit(self, X):
        n, d = X.shape
        m = min(self._components(n, d), n)
        _check_dense_size("the landmark matrix", m, d, self.max_bytes)
        bandwidth = self._bandwidth(X)
        landmarks, extra = self._landmarks(X, m)
        state = self._embedding(landmarks, bandwidth)
        state.update(extra)
        return state

    def _bandwidth(self, X):
        if self.bandwidth == "auto":
            return float(self.width_factor) * _distance_to_mean(X, "sq", self.block_size,
                                                                "bandwidth")
        return float(self.bandwidth)

    def _embedding(self, landmarks, bandwidth):
        """Fitted attributes of the map from dense ``(m, d)`` landmarks."""
        m = landmarks.shape[0]
        columns = _kernel_columns(landmarks, bandwidth)
        W = np.empty((m, m))
        for part in _chunks(m, landmarks.shape[1] + m):
            block = W[part]
            for sel, rows in _routed(landmarks[part]):
                block[sel] = _gaussian(rows, columns)
        sigma, V = scipy.linalg.eigh(W)
        sigma, V = sigma[::-1], V[:, ::-1]
        r = int(np.count_nonzero(sigma > self.rank_tol * sigma[0]))
        if isinstance(self.n_eigen, numbers.Integral):
            r = min(r, int(self.n_eigen))
        elif self.n_eigen is not None:
            r = min(r, max(1, round(self.n_eigen * m)))
        sigma, V = sigma[:r], V[:, :r]
        # sign convention: the largest entry of each eigenvector is positive
        V = V * np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(r)])
        return {"bandwidth_": bandwidth, "landmarks_": landmarks,
                "eigenvalues_": np.ascontiguousarray(sigma),
                "projection_": np.ascontiguousarray(V / np.sqrt(sigma)),
                "n_features_out_": r}

    def _prepare(self):
        return _kernel_columns(self.landmarks_, self.bandwidth_)

    def _map(self, rows, prepared, out):
        np.matmul(_gaussian(rows, prepared), self.projection_, out=out)


_NYSTROEM_ATTRIBUTES = """Attributes
    ----------
    bandwidth_ : float
        The ``s`` of ``exp(-||x - y||^2 / s)`` used.
    landmarks_ : ndarray of shape (m, ``n_features_in_``)
        The landmark rows ``u_1 .. u_m`` (dense).
    eigenvalues_ : ndarray of shape (``n_features_out_``,)
        The kept eigenvalues of ``W``, descending.
    projection_ : ndarray of shape (m, ``n_features_out_``)
        ``V_r Sigma_r^{-1/2}``: ``psi(x) = [k(x, u_1), ..., k(x, u_m)] @ projection_``.
        (A learner that holds kernel coefficients ``alpha`` on the landmarks, like
        NOAM, gets the equivalent weights as ``eigenvalues_ * (projection_.T @ alpha)``.)
    n_features_in_ : int
    n_features_out_ : int
        Number of kept eigenpairs ``r``."""

_NYSTROEM_PARAMETERS = """bandwidth : float or "auto", default="auto"
        ``s`` in the kernel ``exp(-||x - y||^2 / s)``. ``"auto"`` is the
        dissertation's heuristic: the mean squared distance of the first
        ``min(n, 80000)`` training rows to their mean. For the Gaussian of width
        ``sigma``, ``exp(-||x - y||^2 / (2 sigma^2))``, pass ``2 * sigma**2``."""

_NYSTROEM_COMMON = """rank_tol : float, default=1e-10
        Eigenpairs with ``sigma_i <= rank_tol * sigma_1`` are dropped (their
        ``sigma_i^{-1/2}`` would amplify rounding errors).
    random_state : None, int, numpy Generator or RandomState
        Seed of the landmark choice.
    block_size : int, default=4096
        Rows per block in ``fit`` and ``transform``; their scratch memory is about
        ``block_size * m * 8`` bytes (52 MB for 1600 landmarks).
    n_jobs : int or None, default=None
        Threads over the blocks of rows in ``transform`` (and in k-means' assignment steps) (-1: one per core; None: 1). numpy's
        products and element-wise functions release the GIL; blocks write disjoint
        rows with the same arithmetic, so the output is identical for every
        ``n_jobs``, and the scratch memory is ``n_jobs`` blocks.
    max_bytes : int, default=2**31
        Refuse to fit when the dense ``m x n_features`` landmark matrix would exceed
        this many bytes (high-dimensional sparse data). ``fit`` and ``transform``
        hold two or three matrices of that size (landmarks, their transpose, the
        k-means sums)."""


_NYSTROEM_FIELDS = {"_NYSTROEM_PARAMETERS": _NYSTROEM_PARAMETERS, "_WIDTH_FACTOR": _WIDTH_FACTOR,
                    "_NYSTROEM_COMMON": _NYSTROEM_COMMON,
                    "_NYSTROEM_ATTRIBUTES": _NYSTROEM_ATTRIBUTES}


def _distinct_rows(rng, n, m):
    """``m`` distinct row numbers out of ``n``, drawn uniformly, in increasing order."""
    return np.sort(rng.choice(n, size=m, replace=False))


class Nystroem(_NystroemMap):
    __doc__ = docstring("""Plain Nystrom map of a Gaussian kernel (uniform or given landmarks).

    The Nystrom method as used by Ding, Liu, Zhao & Hoi, "Large Scale Kernel Methods
    for Online AUC Maximization", ICDM 2017 (NOAM, Alg. 5, eq. 4): ``W`` is the
    kernel matrix of ``Q`` landmark rows, ``[V, D_k] = eigs(W, k)`` with
    ``k = 0.4 Q``, and ``z(x) = D_k^{{-1/2}} V^T [k(x_1, x), ..., k(x_Q, x)]``
    (Williams & Seeger, "Using the Nystrom Method to Speed Up Kernel Machines",
    NIPS 2001). ``fit`` samples the ``Q = n_components`` landmarks uniformly
    without replacement from the training rows (all rows when there are fewer);
    NOAM itself uses the first ``Q`` support vectors of a kernel online run, which a
    learner passes to :meth:`from_landmarks`.

    Parameters
    ----------
    n_components : int, default=200
        Number of landmarks ``Q`` (Ding et al. vary it from 100 to 200).
    {_NYSTROEM_PARAMETERS}
    {_WIDTH_FACTOR}
    n_eigen : int, float in (0, 1] or None, default=0.4
        Eigenpairs kept: a fraction of the landmarks (``0.4``: the ``k = 0.4 Q`` of
        Ding et al.), a count, or None for all above ``rank_tol``.
    {_NYSTROEM_COMMON}

    {_NYSTROEM_ATTRIBUTES}
    """, fields=_NYSTROEM_FIELDS)

    def __init__(self, n_components=200, bandwidth="auto", width_factor=1.0, n_eigen=0.4,
                 rank_tol=1e-10, random_state=None, block_size=_DEFAULT_BLOCK, n_jobs=None,
                 max_bytes=_DEFAULT_MAX_BYTES):
        self.n_components = n_components
        self.bandwidth = bandwidth
        self.width_factor = width_factor
        self.n_eigen = n_eigen
        self.rank_tol = rank_tol
        self.random_state = random_state
        self.block_size = block_size
        self.n_jobs = n_jobs
        self.max_bytes = max_bytes

    def _landmarks(self, X, m):
        """``m`` distinct rows drawn uniformly (all rows when ``m = n``)."""
        index = (_distinct_rows(check_random_state(self.random_state), X.shape[0], m)
                 if m < X.shape[0] else np.arange(X.shape[0]))
        return _dense_rows_at(X, index), {}

    @classmethod
    def from_landmarks(cls, X_landmarks, *, bandwidth="auto", n_eigen=0.4, rank_tol=1e-10,
                       block_size=_DEFAULT_BLOCK, n_jobs=None, max_bytes=_DEFAULT_MAX_BYTES):
        """A fitted map whose landmarks are exactly the rows of ``X_landmarks``.

        For learners that collect their landmarks themselves (NOAM: the first ``Q``
        support vectors of a kernel online run).

        Parameters
        ----------
        X_landmarks : array-like or sparse matrix of shape (Q, n_features)
        bandwidth : float or "auto", default="auto"
            ``s`` of ``exp(-||x - y||^2 / s)``; ``"auto"``: the mean squared distance
            of the landmark rows to their mean. NOAM's Gaussian of width ``sigma``
            is ``bandwidth=2 * sigma**2``.
        n_eigen : int, float in (0, 1] or None, default=0.4
            As in the class (``0.4``: ``k = 0.4 Q``).
        rank_tol, block_size, n_jobs, max_bytes
            As in the class.

        Returns
        -------
        Nystroem
            Fitted, with ``n_components = Q``; calling ``fit`` on it again samples
            new landmarks from the data it is given.
        """
        X = _validated(X_landmarks, name="X_landmarks")
        est = cls(n_components=X.shape[0], bandwidth=bandwidth, n_eigen=n_eigen,
                  rank_tol=rank_tol, block_size=block_size, n_jobs=n_jobs,
                  max_bytes=max_bytes)
        est._check_params()
        return est._fit_landmarks(X, est._bandwidth(X))

    def _fit_landmarks(self, X, bandwidth):
        """Fit on exactly the rows of the validated matrix ``X`` as landmarks, with
        kernel bandwidth ``bandwidth`` (the parameters checked)."""
        _check_dense_size("the landmark matrix", X.shape[0], X.shape[1], self.max_bytes)
        return self._store(self._embedding(_dense_copy(X), bandwidth), X.shape[1])


class KMeansNystroem(_NystroemMap):
    __doc__ = docstring("""k-means Nystrom map of a Gaussian kernel.

    The embedding of M. Khalid Alnnfai, "Scalable Large Margin Pairwise Learning
    Algorithms", PhD dissertation, Colorado State University, 2019 (Sec. 2.3,
    Alg. 2; used by NBAM, NASAM and NPSAM), after Zhang, Tsang & Kwok, "Improved
    Nystrom Low-Rank Approximation and Error Analysis", ICML 2008: the landmarks are
    ``m`` k-means centroids of the training rows, ``W = k(U, U) = V Sigma V^T`` and
    ``psi(x) = Sigma_r^{{-1/2}} V_r^T [k(x, u_1), ..., k(x, u_m)]``.

    k-means (the dissertation gives no initialisation or iteration count): ``m``
    distinct random rows as initial centres, then Lloyd iterations (assign each
    row to its nearest centre, move each centre to the mean of its rows) until no
    assignment changes or ``max_iter`` updates; a centre that loses all its rows is
    re-seeded with a random row. With ``n <= m`` rows, all rows are the landmarks.
    Centres are dense ``m x n_features`` even for sparse input; distances are
    computed block-wise by matrix products. ``fit`` costs
    ``O(nnz(X) m max_iter + m^3)``; to save time on large data, fit on a random
    subset and transform everything.

    Parameters
    ----------
    n_components : int or "auto", default=1600
        Number of landmarks ``m``: 1600 in the dissertation, except cifar10 (3000),
        epsilon (2800) and susy (400). "auto": ``ceil(4 sqrt(n))`` for ``n``
        training rows, at least 256 and at most 1600, on rows of at most 1000
        features; 1600 on wider rows (the default of the kernelized learners;
        NBAM's docstring says why).
    {_NYSTROEM_PARAMETERS}
        The dissertation does not say whether ``s`` stands for ``sigma^2`` or
        ``2 sigma^2``; ``exp(-d^2 / s)`` is the convention of the code of Zhang et
        al. that it builds on.
    {_WIDTH_FACTOR}
    max_iter : int, default=10
        Most Lloyd updates (0 keeps the random initial rows).
    n_eigen : int, float in (0, 1] or None, default=None
        Eigenpairs kept: None for all above ``rank_tol`` (the dissertation's
        ``r = m``), a count, or a fraction of the landmarks.
    {_NYSTROEM_COMMON}

    {_NYSTROEM_ATTRIBUTES}
    n_iter_ : int
        Lloyd updates made.
    """, fields=_NYSTROEM_FIELDS)

    def __init__(self, n_components=1600, bandwidth="auto", width_factor=1.0, max_iter=10,
                 n_eigen=None, rank_tol=1e-10, random_state=None, block_size=_DEFAULT_BLOCK,
                 n_jobs=None, max_bytes=_DEFAULT_MAX_BYTES):
        self.n_components = n_components
        self.bandwidth = bandwidth
        self.width_factor = width_factor
        self.max_iter = max_iter
        self.n_eigen = n_eigen
        self.rank_tol = rank_tol
        self.random_state = random_state
        self.block_size = block_size
        self.n_jobs = n_jobs
        self.max_bytes = max_bytes

    def _check_params(self):
        super()._check_params()
        check_count("max_iter", self.max_iter, minimum=0)

    def _landmarks(self, X, m):
        """k-means centres (all rows when ``m = n``) and ``n_iter_``."""
        n = X.shape[0]
        if m == n:
            return _dense_rows_at(X, np.arange(n)), {"n_iter_": 0}
        rng = check_random_state(self.random_state)
        centres = _dense_rows_at(X, _distinct_rows(rng, n, m))
        labels = None
        n_iter = 0
        while n_iter < self.max_iter:
            new = self._assign(X, centres)
            if labels is not None and np.array_equal(new, labels):
                break
            labels = new
            counts = np.bincount(labels, minlength=m)
            # one-hot (m x n) matrix, rows in increasing order within each centre, so
            # the sums run over rows in order for dense and CSR X alike
            members = sp.csr_matrix(
                (np.ones(n), np.argsort(labels, kind="stable"),
                 np.concatenate(([0], np.cumsum(counts)))), shape=(m, n))
            sizes = np.maximum(counts, 1)[:, None]
            for part in _chunks(m, X.shape[1]):  # each centre's sum is its own row
                centres[part] = _dense_copy(members[part] @ X)
                centres[part] /= sizes[part]
            empty = np.flatnonzero(counts == 0)
            if empty.size:
                centres[empty] = _dense_copy(X[rng.choice(n, size=empty.size,
                                                          replace=False)])
            n_iter += 1
        return centres, {"n_iter_": n_iter}

    def _assign(self, X, centres):
        """Nearest centre of every row: argmin of ``||c||^2 - 2 x.c``.

        In blocks of at most ``_CACHE_FLOATS / m`` rows (and ``block_size``), so
        that the block's scores stay in cache between the product and the argmin.
        """
        T = np.empty(centres.shape[::-1])
        for part in _chunks(centres.shape[1], centres.shape[0]):
            np.multiply(centres[:, part].T, -2.0, out=T[part])  # exact: a power of two
        csq = np.einsum("ij,ij->i", centres, centres)
        labels = np.empty(X.shape[0], dtype=np.intp)

        def work(lo, hi):
            out = labels[lo:hi]
            for sel, rows in _routed(X[lo:hi]):
                score = rows @ T
                score += csq
                out[sel] = np.argmin(score, axis=1)

        block = max(1, min(self.block_size, _CACHE_FLOATS // centres.shape[0]))
        _for_blocks(X.shape[0], block, self.n_jobs, work)
        return labels
