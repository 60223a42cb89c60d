# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# BAM = linear PRSVM+ (Chapelle & Keerthi, Efficient algorithms for ranking with SVMs,
# 2010; Khalid, Scalable Large Margin Pairwise Learning Algorithms, 2019, Sec. 3.3, Alg. 1)
"""Linear PRSVM+: the pair-free squared-hinge ranking loss.

Chapelle & Keerthi (2010) evaluate ``L = sum_{i pos, j neg} max(0, 1 - (o_i - o_j))^2``
on the scores ``o = X w`` without forming pairs: with ``yhat = o - 1/2`` for
positives and ``o + 1/2`` for negatives a pair is violated iff ``yhat_j > yhat_i``
and then costs ``(yhat_j - yhat_i)^2``. After one sort of ``yhat``:

* :meth:`PairSquaredHinge.evaluate` -- ``L`` and ``dL/do`` in two O(n) sweeps,
  and the per-row counts ``alpha`` (negatives above a positive, positives below a
  negative) that the Hessian products reuse;
* :meth:`PairSquaredHinge.hessian` -- ``alpha * delta - gamma`` for ``delta = X s``
  (the generalised Hessian of ``L`` in ``o``, active pairs frozen), one O(n)
  sweep over the stored order;
* :func:`rows_dot`, :func:`rows_combine` -- ``X v`` and ``X^T z`` over a list of
  rows (the active ones), on the shared row source, so dense and CSR input give
  bit-identical results;
* :func:`dot` -- the solver's vector inner products, single-threaded: a threaded
  BLAS ``ddot`` gains nothing on memory-bound vectors and, with its threads
  competing for busy cores, was measured 40x slower than this loop.

Numerics: the sweeps never form ``alpha yhat^2 - beta yhat`` (which cancels when
the scores are large beside the margins); they carry, for the current position
``v`` of the sweep, ``P = sum (yhat_j - v)`` and ``Q = sum (yhat_j - v)^2`` over
the rows passed, and move them by ``dv >= 0`` as ``Q += dv (2 P + cnt dv)``,
``P += cnt dv``: sums of non-negative terms only.

Row weights ``c`` (``sample_weight``): the loss is ``sum c_i c_j max(0, ...)^2``;
the sweeps count the rows passed by their weights (``cnt``, ``P``, ``Q`` become
weighted sums) and multiply a row's terms by its own weight. With all weights 1
every product is exact, so the unweighted results are unchanged bit for bit.

Ties: a pair with ``yhat_j == yhat_i`` is not active (strict ``>``). The sort
is a stable LSD radix sort (O(n) per 11-bit digit, interruptible) whose input
lists the negatives first, so that among equal ``yhat`` negatives precede
positives and the sweeps see exactly the strict order.

Memory access: the sorted keys, labels and counts are stored by sorted position,
so a sweep reads them in sequence; only the per-row vectors (``grad``,
``delta``, ``out``) are reached through the order (for n in the millions these
random accesses, not the arithmetic, set the cost).
"""
import numpy as np

from libc.stdint cimport int64_t, uint64_t, int32_t
from libc.string cimport memcpy, memset

from aucopt._kernels._interrupt cimport poll
from aucopt._kernels._rows cimport RowSource

cdef enum:
    DIGIT_BITS = 11
    N_BUCKETS = 2048            # 2 ** DIGIT_BITS
    N_DIGITS = 6                # ceil(64 / DIGIT_BITS)

cdef uint64_t SIGN_BIT = (<uint64_t>1) << 63


cdef union DoubleBits:
    double d
    uint64_t u


cdef inline uint64_t sort_key(double v) noexcept nogil:
    """Unsigned key with the order of the finite doubles (``-0.0`` is never passed)."""
    cdef DoubleBits b
    b.d = v
    if b.u & SIGN_BIT:
        return ~b.u
    return b.u | SIGN_BIT


cdef inline double key_value(uint64_t k) noexcept nogil:
    """The double whose :func:`sort_key` is ``k``."""
    cdef DoubleBits b
    b.u = k ^ SIGN_BIT if k & SIGN_BIT else ~k
    return b.d


cdef int radix_sort(uint64_t* keys, int64_t* rows, Py_ssize_t n, uint64_t* keys2,
                    int64_t* rows2, int64_t* hist, Py_ssize_t* counter) except -1 nogil:
    """Sort the pairs ``(keys[i], rows[i])`` by key, stably, in place.

    Six counting passes of 11 bits each, all histograms from one read; a pass
    whose digit is the same for every key is skipped. ``keys2``, ``rows2`` are
    scratch of length n, ``hist`` of length ``N_DIGITS * N_BUCKETS``.
    """
    cdef Py_ssize_t i, p, b
    cdef uint64_t k
    cdef int64_t total, c
    cdef int shift
    cdef uint64_t* ksrc = keys
    cdef uint64_t* kdst = keys2
    cdef int64_t* rsrc = rows
    cdef int64_t* rdst = rows2
    cdef uint64_t* kt
    cdef int64_t* rt
    memset(hist, 0, N_DIGITS * N_BUCKETS * sizeof(int64_t))
    for i in range(n):
        k = keys[i]
        for p in range(N_DIGITS):
            hist[p * N_BUCKETS + <Py_ssize_t>((k >> (p * DIGIT_BITS)) & (N_BUCKETS - 1))] += 1
        poll(counter, N_DIGITS)
    for p in range(N_DIGITS):
        shift = p * DIGIT_BITS
        if hist[p * N_BUCKETS + <Py_ssize_t>((ksrc[0] >> shift) & (N_BUCKETS - 1))] == n:
            continue  # every key has this digit: the pass would not move anything
        total = 0
        for b in range(N_BUCKETS):  # exclusive prefix sums: first slot of each bucket
            c = hist[p * N_BUCKETS + b]
            hist[p * N_BUCKETS + b] = total
            total += c
        for i in range(n):
            k = ksrc[i]
            b = <Py_ssize_t>((k >> shift) & (N_BUCKETS - 1))
            c = hist[p * N_BUCKETS + b]
            hist[p * N_BUCKETS + b] = c + 1
            kdst[c] = k
            rdst[c] = rsrc[i]
            poll(counter, 2)
        kt = ksrc
        ksrc = kdst
        kdst = kt
        rt = rsrc
        rsrc = rdst
        rdst = rt
    if ksrc != keys:
        memcpy(keys, ksrc, n * sizeof(uint64_t))
        memcpy(rows, rsrc, n * sizeof(int64_t))
    return 0


def _as_int64(name, a):
    """Check that an index array is 1-D int64; return it C-contiguous."""
    a = np.asarray(a)
    if a.dtype != np.int64 or a.ndim != 1:
        raise TypeError(f"{name} must be a 1-D int64 array, got {a.dtype} with shape {a.shape}")
    return np.ascontiguousarray(a)


def _check_length(name, Py_ssize_t got, Py_ssize_t want):
    if got != want:
        raise ValueError(f"{name} has length {got}, expected {want}")


cdef class PairSquaredHinge:
    """Squared hinge over all (positive, negative) pairs, without forming pairs.

    Chapelle & Keerthi, "Efficient algorithms for ranking with SVMs" (2010),
    the PRSVM+ loss ``L(o) = sum_{i pos, j neg} max(0, 1 - (o_i - o_j))^2``.

    Parameters
    ----------
    y : ndarray of shape (n,), float64
        Labels, every value exactly -1.0 or +1.0, both present.
    weights : ndarray of shape (n,), float64, optional
        Row weights ``c`` (finite, >= 0, positive on both classes): the pair
        ``(i, j)`` counts ``c_i c_j`` times. Default all 1.

    Notes
    -----
    :meth:`evaluate` sorts the scores and stores the order and the counts
    ``alpha``; :meth:`hessian` then reuses them, so it refers to the scores of
    the latest :meth:`evaluate`.
    """
    cdef readonly Py_ssize_t n_rows, n_pos, n_neg
    cdef unsigned char[::1] pos       # by row
    cdef double[::1] c                # by row: weight
    cdef double[::1] alpha_           # by row: weight of the opposite rows in violated pairs
    cdef int64_t[::1] start           # negatives first, then positives (tie order)
    # by sorted position (increasing yhat, negatives first among ties):
    cdef int64_t[::1] order_          # row
    cdef uint64_t[::1] keys           # sort_key(yhat)
    cdef unsigned char[::1] spos
    cdef double[::1] sc
    cdef double[::1] salpha
    cdef uint64_t[::1] keys2          # sort scratch
    cdef int64_t[::1] order2
    cdef int64_t[::1] hist
    cdef bint evaluated

    def __init__(self, y, weights=None):
        y = np.asarray(y)
        if y.dtype != np.float64 or y.ndim != 1:
            raise TypeError(f"y must be a 1-D float64 array, got {y.dtype} with shape {y.shape}")
        is_pos = y == 1.0
        is_neg = y == -1.0
        if not np.all(is_pos | is_neg):
            bad = y[~(is_pos | is_neg)][0]
            raise ValueError(f"y must hold only -1.0 and +1.0, found {bad!r}; map the "
                             "labels first (aucopt.base.check_y does)")
        self.n_rows = y.shape[0]
        self.n_pos = int(is_pos.sum())
        self.n_neg = self.n_rows - self.n_pos
        if self.n_pos == 0 or self.n_neg == 0:
            raise ValueError(f"y has {self.n_pos} positive and {self.n_neg} negative labels; "
                             "ranking needs at least one of each")
        n = self.n_rows
        if weights is None:
            self.c = np.ones(n)
        else:
            c = np.array(weights, dtype=np.float64)
            if c.shape != (n,) or not np.isfinite(c).all() or (c < 0).any() \
                    or not (c[is_pos].sum() > 0 and c[is_neg].sum() > 0):
                raise ValueError(f"weights must hold {n} finite values >= 0, positive on "
                                 "both classes")
            self.c = c
        self.pos = is_pos.astype(np.uint8)
        self.alpha_ = np.zeros(n, dtype=np.float64)
        self.start = np.concatenate([np.flatnonzero(is_neg), np.flatnonzero(is_pos)]).astype(
            np.int64)
        self.order_ = self.start.copy()
        self.keys = np.empty(n, dtype=np.uint64)
        self.spos = np.empty(n, dtype=np.uint8)
        self.sc = np.empty(n, dtype=np.float64)
        self.salpha = np.zeros(n, dtype=np.float64)
        self.keys2 = np.empty(n, dtype=np.uint64)
        self.order2 = np.empty(n, dtype=np.int64)
        self.hist = np.empty(N_DIGITS * N_BUCKETS, dtype=np.int64)
        self.evaluated = False

    def evaluate(self, const double[::1] o, double[::1] grad):
        """Sort the scores and return ``L(o)``; write ``dL/do`` into ``grad``.

        Parameters
        ----------
        o : ndarray of shape (n,), float64
            Scores ``X w``; must be finite.
        grad : ndarray of shape (n,), float64
            Output: ``dL/do_k = 2 (alpha_k yhat_k - beta_k)`` (0 on inactive rows).

        Returns
        -------
        loss : float
        """
        _check_length("o", o.shape[0], self.n_rows)
        _check_length("grad", grad.shape[0], self.n_rows)
        cdef Py_ssize_t n = self.n_rows, i, p, k, bad = -1
        cdef Py_ssize_t counter = 0
        cdef double v, prev, dv, P, Q, cnt, loss = 0.0
        self.evaluated = False
        with nogil:
            for i in range(n):
                k = self.start[i]
                v = o[k]
                if not (v - v == 0.0):  # NaN or infinity
                    bad = k
                    break
                self.keys[i] = sort_key(v - 0.5 if self.pos[k] else v + 0.5)
                self.order_[i] = k
        if bad >= 0:
            raise FloatingPointError(f"score o[{bad}] = {o[bad]!r} is not finite")
        with nogil:
            radix_sort(&self.keys[0], &self.order_[0], n, &self.keys2[0], &self.order2[0],
                       &self.hist[0], &counter)
            for p in range(n):
                self.spos[p] = self.pos[self.order_[p]]
                self.sc[p] = self.c[self.order_[p]]
            # from the top: each positive against the negatives strictly above it
            P = 0.0
            Q = 0.0
            cnt = 0.0
            prev = key_value(self.keys[n - 1])
            for p in range(n - 1, -1, -1):
                v = key_value(self.keys[p])
                dv = prev - v
                Q += dv * (2.0 * P + cnt * dv)
                P += cnt * dv
                prev = v
                if self.spos[p]:
                    k = self.order_[p]
                    self.salpha[p] = cnt
                    self.alpha_[k] = cnt
                    grad[k] = -2.0 * self.sc[p] * P
                    loss += self.sc[p] * Q
                else:
                    cnt += self.sc[p]
                poll(&counter, 4)
            # from the bottom: each negative against the positives strictly below it
            P = 0.0
            cnt = 0.0
            prev = key_value(self.keys[0])
            for p in range(n):
                v = key_value(self.keys[p])
                P += cnt * (v - prev)
                prev = v
                if self.spos[p]:
                    cnt += self.sc[p]
                else:
                    k = self.order_[p]
                    self.salpha[p] = cnt
                    self.alpha_[k] = cnt
                    grad[k] = 2.0 * self.sc[p] * P
                poll(&counter, 4)
        self.evaluated = True
        return loss

    def hessian(self, const double[::1] delta, double[::1] out):
        """Write ``c * (alpha * delta - gamma)`` into ``out`` (generalised Hessian of L / 2).

        ``gamma_i = sum_{j neg above i} c_j delta_j`` for a positive ``i`` and
        ``gamma_j = sum_{i pos below j} c_i delta_i`` for a negative ``j``, with the
        order and counts of the latest :meth:`evaluate`; ``H_L delta = 2 out``.
        Rows with ``alpha == 0`` get 0 and their ``delta`` is never read.

        One sweep in sorted order: a positive's ``gamma`` is the total over the
        active negatives minus those passed (the negatives tied with it come
        first, so they are passed); before it, one pass in row order sums the total.
        """
        if not self.evaluated:
            raise RuntimeError("call evaluate(o, grad) before hessian()")
        _check_length("delta", delta.shape[0], self.n_rows)
        _check_length("out", out.shape[0], self.n_rows)
        cdef Py_ssize_t n = self.n_rows, p, k
        cdef Py_ssize_t counter = 0
        cdef double a, d, neg_total = 0.0, neg_passed = 0.0, pos_passed = 0.0
        with nogil:
            for k in range(n):
                if not self.pos[k] and self.alpha_[k] > 0.0:
                    neg_total += self.c[k] * delta[k]
            for p in range(n):
                k = self.order_[p]
                a = self.salpha[p]
                if a == 0.0:
                    out[k] = 0.0
                    continue
                d = delta[k]
                if self.spos[p]:
                    out[k] = self.sc[p] * (a * d - (neg_total - neg_passed))
                    pos_passed += self.sc[p] * d
                else:
                    out[k] = self.sc[p] * (a * d - pos_passed)
                    neg_passed += self.sc[p] * d
                poll(&counter, 3)

    def active_rows(self):
        """Rows in at least one violated pair (``alpha > 0``), increasing, int64."""
        if not self.evaluated:
            raise RuntimeError("call evaluate(o, grad) before active_rows()")
        return np.flatnonzero(np.asarray(self.alpha_) > 0.0).astype(np.int64)

    @property
    def alpha(self):
        """Per-row weight of the opposite rows in violated pairs (their count when
        unweighted) from the latest :meth:`evaluate` (a copy)."""
        return np.array(self.alpha_)

    @property
    def order(self):
        """Rows by increasing ``yhat``, negatives first among ties (a copy)."""
        return np.array(self.order_)

    @property
    def sorted_yhat(self):
        """``yhat`` in :attr:`order` (decoded from the sort keys)."""
        cdef Py_ssize_t p
        out = np.empty(self.n_rows)
        for p in range(self.n_rows):
            out[p] = key_value(self.keys[p])
        return out


def _check_rows(RowSource X, rows):
    rows = _as_int64("rows", rows)
    if rows.shape[0] and (rows.min() < 0 or rows.max() >= X.n_rows):
        raise ValueError(f"rows must lie in [0, {X.n_rows}), got [{rows.min()}, {rows.max()}]")
    return rows


cdef int row_products(RowSource X, const double* src, const int64_t[::1] rows, double* dst,
                      bint transposed) except -1 nogil:
    """``dst[i] = x_i . src`` for ``i`` in ``rows``, or with ``transposed``
    ``dst += sum_i src[i] x_i`` (rows with ``src[i] == 0`` skipped)."""
    cdef Py_ssize_t a, i, k, nnz, counter = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef double acc
    for a in range(rows.shape[0]):
        i = rows[a]
        if transposed and src[i] == 0.0:
            continue
        nnz = X.row(i, &vals, &ind)
        if transposed:
            acc = src[i]
            for k in range(nnz):
                dst[ind[k]] += acc * vals[k]
        else:
            acc = 0.0
            for k in range(nnz):
                acc += src[ind[k]] * vals[k]
            dst[i] = acc
        poll(&counter, nnz + 1)
    return 0


def rows_dot(RowSource X, const double[::1] v, rows, double[::1] out):
    """``out[r] = x_r . v`` for every ``r`` in ``rows`` (other entries untouched)."""
    _check_length("v", v.shape[0], X.n_features)
    _check_length("out", out.shape[0], X.n_rows)
    cdef const int64_t[::1] r = _check_rows(X, rows)
    with nogil:
        row_products(X, &v[0], r, &out[0], False)


def rows_combine(RowSource X, const double[::1] z, rows, double[::1] out):
    """``out = sum_{r in rows} z[r] x_r`` (``out`` is overwritten; zero ``z[r]`` skipped)."""
    _check_length("z", z.shape[0], X.n_rows)
    _check_length("out", out.shape[0], X.n_features)
    cdef const int64_t[::1] r = _check_rows(X, rows)
    out[:] = 0.0
    with nogil:
        row_products(X, &z[0], r, &out[0], True)


def dot(const double[::1] a, const double[::1] b):
    """``a . b`` in one thread (four interleaved partial sums, fixed order)."""
    _check_length("b", b.shape[0], a.shape[0])
    cdef Py_ssize_t i, n = a.shape[0], m = a.shape[0] - a.shape[0] % 4
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    with nogil:
        for i in range(0, m, 4):
            s0 += a[i] * b[i]
            s1 += a[i + 1] * b[i + 1]
            s2 += a[i + 2] * b[i + 2]
            s3 += a[i + 3] * b[i + 3]
        for i in range(m, n):
            s0 += a[i] * b[i]
    return (s0 + s1) + (s2 + s3)
