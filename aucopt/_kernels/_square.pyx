# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Square-loss learners: the loops.

Every loop reads rows through the shared :class:`RowSource` (dense and CSR rows in
one form, so both give the same bits) and keeps the ranking vector in the weight
primitive :class:`aucopt._kernels._weights.Weights`:

* :func:`opauc_steps` -- OPAUC (Gao et al. 2013, Alg. 1, eqs. 3-5) and AdaOAM
  (Ding et al. 2015): the exact square-loss gradient from the opposite class's sum
  and sum of outer products (:class:`Covariances`; upper triangle, rank-1 update
  over the row's nonzeros, O(nnz^2); the class sums are
  :class:`aucopt._kernels._stats.ClassSums`), the covariance product through BLAS ``dsymv``
  (O(d^2)) on the dense view of the weights (``dense_begin`` / ``dense_end``); the
  step is a :class:`GradientStep` (OPAUC) or an :class:`AdaGradStep` (AdaOAM, its
  accumulator in the weights' column 1);
* :func:`opaucr_steps` -- OPAUCr (Gao et al. 2013, eqs. 6-11) with the
  weight vector in factored form over a :class:`Sketch`, so a step costs
  O(nnz tau + tau^2) and never touches a dense d-vector or a d x tau matrix;
* :func:`uniexp_steps` -- online Uni-Exp (a reconstruction after Kotlowski et al. 2011).
"""
# O = Gao et al., One-Pass AUC Optimization, 2013;
# N = Natole's PhD thesis on stochastic AUC maximization
import numpy as np

from libc.math cimport exp, sqrt
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc
from scipy.linalg.cython_blas cimport daxpy, ddot, dgemv, dscal, dsymv

from aucopt._kernels._interrupt cimport poll
from aucopt._kernels._journal cimport Journal, touch_rows
from aucopt._kernels._pairs cimport gather
from aucopt._kernels._rows cimport RowSource, check_cap, prefetch_rows_ahead, row_cap_factor
from aucopt._kernels._stats cimport ClassSums, array_data, check_rows
from aucopt._kernels._weights cimport Weights

cdef double EXP_CLIP = 30.0


# ----------------------------------------------------------------------------- statistics


def stored_entries(RowSource X):
    """Number of values the rows of ``X`` hand to a kernel (``nnz``, or ``n d`` dense)."""
    cdef Py_ssize_t i, total = 0
    cdef const double* vals
    cdef const int32_t* ind
    for i in range(X.n_rows):
        total += X.row(i, &vals, &ind)
    return total


# ----------------------------------------------------------------------------- OPAUC


cdef inline void rank1_upper(double* mat, Py_ssize_t d, const double* vals,
                             const int32_t* ind, Py_ssize_t nnz) noexcept nogil:
    """``mat += x x^T`` on the upper triangle (C order) over the row's nonzeros."""
    cdef Py_ssize_t a, b
    cdef double va
    cdef double* row
    for a in range(nnz):
        va = vals[a]
        row = mat + ind[a] * d
        for b in range(a, nnz):
            row[ind[b]] += va * vals[b]


cdef class Covariances:
    """OPAUC's class statistics: :class:`ClassSums` and ``sum x x^T`` per class.

    ``sxx`` has shape (2, d, d) (upper triangle in C order, i.e. BLAS 'L' in
    Fortran order). Its rank-1 updates are written in place (journaled by
    ``journal``, rows of width d, when given), or, with ``pending``, kept pending:
    the rows are remembered, their terms ``(x_k . w) x_k`` join the covariance
    products of the call, and :meth:`commit` writes them in row order once the
    call has succeeded -- a small ``partial_fit`` then never copies the O(d^2)
    state. The stored sums end up bit-identical either way; the iterates of a
    pending call differ from in-place ones by rounding only.
    """

    cdef ClassSums stats
    cdef double* sxx
    cdef Py_ssize_t d
    cdef Journal journal
    cdef readonly bint pending
    cdef RowSource rows
    cdef int64_t[:, ::1] pend
    cdef Py_ssize_t n_pend[2]
    cdef object _refs

    def __cinit__(self, ClassSums stats not None, sxx not None, Journal journal=None,
                  bint pending=False):
        d = stats.n_features
        self.sxx = array_data(sxx, (2, d, d), "sxx")
        if journal is not None and (pending or journal.width != d or journal.n_rows != 2 * d):
            raise ValueError("the journal of sxx needs rows of width d and no pending mode")
        self.stats = stats
        self.d = d
        self.journal = journal
        self.pending = pending
        self.n_pend[0] = self.n_pend[1] = 0
        self._refs = sxx

    cdef int _start(self, RowSource X) except -1:
        if self.pending:
            if self.rows is not None:
                raise ValueError("commit the pending rows of the previous pass first")
            self.rows = X
            self.pend = np.empty((2, max(X.n_rows, 1)), dtype=np.int64)
        return 0

    cdef int add_outer(self, int cls, Py_ssize_t i, const double* vals, const int32_t* ind,
                       Py_ssize_t nnz) except -1 nogil:
        """Add ``x_i x_i^T`` to class ``cls`` (or keep it pending)."""
        if self.pending:
            self.pend[cls, self.n_pend[cls]] = i
            self.n_pend[cls] += 1
            return 0
        touch_rows(self.journal, ind, nnz, cls * self.d)
        rank1_upper(self.sxx + cls * self.d * self.d, self.d, vals, ind, nnz)
        return 0

    cdef void pending_product(self, int cls, double alpha, const double* w,
                              double* out) noexcept nogil:
        """``out += alpha sum_k (x_k . w) x_k`` over the pending rows of ``cls``."""
        cdef Py_ssize_t k, j, nnz
        cdef const double* vals
        cdef const int32_t* ind
        cdef double c
        for k in range(self.n_pend[cls]):
            nnz = self.rows.row(self.pend[cls, k], &vals, &ind)
            c = alpha * gather(w, 1, vals, ind, nnz)
            for j in range(nnz):
                out[ind[j]] += c * vals[j]

    def commit(self):
        """Write the pending rank-1 terms into ``sxx`` (in row order, per class)."""
        cdef Py_ssize_t k, nnz
        cdef int c
        cdef const double* vals
        cdef const int32_t* ind
        if self.rows is None:
            return
        with nogil:
            for c in range(2):
                for k in range(self.n_pend[c]):
                    nnz = self.rows.row(self.pend[c, k], &vals, &ind)
                    rank1_upper(self.sxx + c * self.d * self.d, self.d, vals, ind, nnz)
        self.n_pend[0] = self.n_pend[1] = 0
        self.rows = None


cdef class GradientStep:
    """OPAUC's step ``w <- w - eta g`` (Gao et al. 2013, Alg. 1)."""

    cdef readonly double eta
    cdef readonly Py_ssize_t columns

    def __cinit__(self, double eta, *args, **kwargs):
        if not eta > 0.0:
            raise ValueError("eta must be > 0")
        self.eta = eta
        self.columns = 1

    cdef void update(self, double* w, const double* g, double* acc, Py_ssize_t stride,
                     int d) noexcept nogil:
        """Step the dense ``w`` along the gradient ``g`` (``acc``: the rule's column
        of the weight state, ``stride`` apart)."""
        cdef int one = 1
        cdef double coef = -self.eta
        daxpy(&d, &coef, <double*>g, &one, w, &one)


# AdaOAM (Ding et al., An Adaptive Gradient Method for Online AUC Maximization, 2015):
# N eq. 2.18 prints ``w - eta H g``, missing ``H^-1``; the H-norm projection has no
# closed form, so the projection is Euclidean
cdef class AdaGradStep(GradientStep):
    """AdaOAM's step (Ding et al. 2015, with the Euclidean projection)::

        G <- G + g^2 ;  w <- w - eta g / (delta + sqrt(G)) ;  w <- w min(1, radius / ||w||)

    ``G`` lives in column 1 of the weight state.
    """

    cdef readonly double delta
    cdef readonly double radius

    def __cinit__(self, double eta, double delta, double radius):
        if not (delta > 0.0 and radius > 0.0):
            raise ValueError("delta and radius must be > 0")
        self.delta = delta
        self.radius = radius
        self.columns = 2

    cdef void update(self, double* w, const double* g, double* acc, Py_ssize_t stride,
                     int d) noexcept nogil:
        cdef Py_ssize_t j
        cdef double nrm = 0.0, coef
        cdef int one = 1
        for j in range(d):
            acc[j * stride] += g[j] * g[j]
            w[j] -= self.eta * g[j] / (self.delta + sqrt(acc[j * stride]))
            nrm += w[j] * w[j]
        if nrm > self.radius * self.radius:
            coef = self.radius / sqrt(nrm)
            dscal(&d, &coef, w, &one)


def opauc_steps(RowSource X, const double[::1] y, Weights w, Covariances cov not None,
                GradientStep step not None, double lam):
    """OPAUC / AdaOAM steps over the rows of ``X`` in order (Gao et al. 2013, Alg. 1).

    For a row ``x`` of label ``y`` the own class's statistics are updated, then, if
    the opposite class ``o`` has ``T = T_o > 0`` rows, the gradient of eqs. (4)-(5)
    at the current ``w``::

        c = s_o / T,  k = (x - c).w
        g = lam w + S w + (k - y)(x - c),   S w = sxx_o w / T - c (c.w)

    (``L_t = 0`` while ``T_o = 0``: no step, Sec. 3), and ``step`` moves ``w``.
    """
    cdef Py_ssize_t n = X.n_rows, d = X.n_features
    cdef Py_ssize_t i, j, nnz, stride, work = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef int cls, o, dn = <int>d, one = 1
    cdef double yt, T, cw, k, alpha, coef, zero = 0.0
    cdef char uplo = b'L'
    cdef ClassSums stats = cov.stats
    cdef double* v
    cdef double* wd
    cdef double* g
    cdef double* acc = NULL
    check_rows(X, y, cov.d)
    if w.n_features != d or w.stride < step.columns:
        raise ValueError(f"the weights need {d} features and {step.columns} columns")
    if d > 2147483647:
        raise ValueError("BLAS needs fewer than 2**31 features")
    cov._start(X)
    stride = w.stride
    v = w.dense_begin()
    g = <double*>malloc(d * sizeof(double))
    # BLAS wants w contiguous: a rule with its own column works on a copy of column 0
    wd = v if stride == 1 else <double*>malloc(d * sizeof(double))
    if g == NULL or wd == NULL:
        free(g)
        if wd != v:
            free(wd)
        w.dense_end()
        raise MemoryError()
    if stride > 1:
        acc = v + 1
        for j in range(d):
            wd[j] = v[j * stride]
    try:
        with nogil:
            for i in range(n):
                prefetch_rows_ahead(X, NULL, i, n)
                nnz = X.row(i, &vals, &ind)
                yt = y[i]
                cls = 1 if yt > 0 else 0
                o = 1 - cls
                # own-class statistics (Alg. 1 lines 4-6 / 9-11)
                stats.add(cls, vals, ind, nnz)
                cov.add_outer(cls, i, vals, ind, nnz)
                T = stats.count[o]
                poll(&work, nnz * nnz + d * d)
                if T == 0.0:
                    continue
                # gradient from the opposite class (eqs. 4-5)
                cw = ddot(&dn, stats.sums + o * d, &one, wd, &one) / T
                k = gather(wd, 1, vals, ind, nnz) - cw
                alpha = 1.0 / T
                dsymv(&uplo, &dn, &alpha, cov.sxx + o * d * d, &dn, wd, &one, &zero, g, &one)
                cov.pending_product(o, alpha, wd, g)
                daxpy(&dn, &lam, wd, &one, g, &one)
                coef = -(cw + k - yt) / T
                daxpy(&dn, &coef, stats.sums + o * d, &one, g, &one)
                coef = k - yt
                for j in range(nnz):
                    g[ind[j]] += coef * vals[j]
                step.update(wd, g, acc, stride, dn)
    finally:
        if wd != v:
            for j in range(d):
                v[j * stride] = wd[j]
            free(wd)
        free(g)
        w.dense_end()


# ----------------------------------------------------------------------------- OPAUCr


cdef inline double tdot(const double* a, const double* b, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j
    cdef double s = 0.0
    for j in range(n):
        s += a[j] * b[j]
    return s


cdef inline void taxpy(double c, const double* a, double* b, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(n):
        b[j] += c * a[j]


cdef inline void tscale(double c, double* a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(n):
        a[j] *= c


cdef class Sketch:
    """OPAUCr's state besides the weight primitive, under names.

    Per class ``c`` (0 = negative, 1 = positive): the sketch ``Z_c = sum x r^T``
    (``sketch``, shape (2, d, tau)), ``q_c = sum r`` (``q``), the class counts and
    sums ``s_c`` (``stats``). The weight vector is kept in the factored form

        w = u + Z_0 a_0 + Z_1 a_1 + b_0 s_0 + b_1 s_1

    with ``u`` the :class:`Weights` of the call, ``a_c`` = ``coef`` (2, tau) and
    ``b_c`` = ``sum_coef`` (2,), together with the products a step reads:
    ``sketch_w[c] = Z_c^T u``, ``sum_w[c] = s_c . u``, ``sketch_sum[c, e] = Z_c^T s_e``,
    ``gram[c, e] = Z_c^T Z_e`` and ``sum_gram[c, e] = s_c . s_e``. ``arrays`` maps
    these names (``sketch``, ``q``, ``coef``, ``sum_coef``, ``sketch_w``, ``sum_w``,
    ``sketch_sum``, ``gram``, ``sum_gram``) to the learner's arrays, updated in
    place; ``journal`` (rows of width tau over the (2 d, tau) sketch) saves the
    sketch rows a call writes.
    """

    cdef ClassSums stats
    cdef double* Z
    cdef double* q
    cdef double* a
    cdef double* b
    cdef double* zw
    cdef double* sw
    cdef double* zs
    cdef double* gram
    cdef double* ss
    cdef readonly Py_ssize_t n_features
    cdef readonly Py_ssize_t tau
    cdef Journal journal
    cdef object _refs

    def __init__(self, ClassSums stats not None, arrays, Journal journal=None):
        d = stats.n_features
        sketch = arrays["sketch"]
        tau = sketch.shape[2] if getattr(sketch, "ndim", 0) == 3 else 0
        self.Z = array_data(sketch, (2, d, tau), "sketch")
        self.q = array_data(arrays["q"], (2, tau), "q")
        self.a = array_data(arrays["coef"], (2, tau), "coef")
        self.b = array_data(arrays["sum_coef"], (2,), "sum_coef")
        self.zw = array_data(arrays["sketch_w"], (2, tau), "sketch_w")
        self.sw = array_data(arrays["sum_w"], (2,), "sum_w")
        self.zs = array_data(arrays["sketch_sum"], (2, 2, tau), "sketch_sum")
        self.gram = array_data(arrays["gram"], (2, 2, tau, tau), "gram")
        self.ss = array_data(arrays["sum_gram"], (2, 2), "sum_gram")
        if journal is not None and (journal.width != tau or journal.n_rows != 2 * d):
            raise ValueError("the journal of the sketch needs rows of width tau")
        self.stats = stats
        self.n_features = d
        self.tau = tau
        self.journal = journal
        self._refs = dict(arrays)

    cdef void products(self, const double* vals, const int32_t* ind, Py_ssize_t nnz,
                       double* xz, double* xs) noexcept nogil:
        """``xz[e] = Z_e^T x`` (tau each) and ``xs[e] = x . s_e``."""
        cdef Py_ssize_t e, k, j, tau = self.tau
        cdef double va
        cdef double* out
        cdef const double* zrow
        for e in range(2):
            out = xz + e * tau
            for j in range(tau):
                out[j] = 0.0
            for k in range(nnz):
                va = vals[k]
                zrow = self.Z + (e * self.n_features + ind[k]) * tau
                for j in range(tau):
                    out[j] += va * zrow[j]
            xs[e] = self.stats.dot(e, vals, ind, nnz)

    cdef double factored_dot(self, const double* xz, const double* xs) noexcept nogil:
        """``x . (Z_0 a_0 + Z_1 a_1 + b_0 s_0 + b_1 s_1)`` from the row's products."""
        cdef Py_ssize_t e
        cdef double s = 0.0
        for e in range(2):
            s += tdot(xz + e * self.tau, self.a + e * self.tau, self.tau) + self.b[e] * xs[e]
        return s


# OPAUCr (Gao et al. 2013, eqs. 6-11), corrected: the sketch is scaled by 1/sqrt(tau)
# (so E[R R^T] = I), and centred as ``Z - c q^T`` (the printed ``c 1^T R / T`` is off
# by a factor T)
def opaucr_steps(RowSource X, const double[::1] y, Py_ssize_t start,
                 const double[:, ::1] rho, Weights w, Sketch sk not None, double eta,
                 double lam):
    """OPAUCr steps on rows ``start .. start + len(rho) - 1`` of ``X`` (Gao et al.
    2013, Sec. 3, eqs. 6-11).

    ``rho[i - start]`` is row ``i``'s draw from N(0, I/tau) (scale 1/sqrt(tau), so
    E[R R^T] = I). The covariance estimate is the centred sketch::

        S_hat_c w = Zc (Zc^T w) / T_c,   Zc = Z_c - m_c q_c^T,  m_c = s_c / T_c

    and the step is OPAUC's with ``S_hat`` for ``S``: ``w <- w - eta (lam w + S_hat_o w
    + (k - y)(x - m_o))``. In the factored form of :class:`Sketch` that gradient is
    ``w`` scaled (the weights' scale and the coefficients), a combination of
    ``Z_o``'s columns (``a_o``), ``s_o`` (``b_o``) and ``x`` (a sparse step of ``u``).
    Adding a row to ``Z_c``/``s_c`` changes ``w`` by ``x ((r.a_c) + b_c)``: ``u``
    takes the opposite sparse step, so ``w`` is unchanged. The products follow in
    O(nnz tau + tau^2) per row.
    """
    cdef Py_ssize_t tau = sk.tau, d = sk.n_features
    cdef Py_ssize_t i, j, kk, e, nnz, work = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef const double* r
    cdef double* xz
    cdef double* u
    cdef double* a_e
    cdef double* zs_cc
    cdef double* zs_co
    cdef double* zs_oc
    cdef double* g_cc
    cdef double* g_co
    cdef double* g_oc
    cdef double xs[2]
    cdef double yt, xx, xw, ra, wx, ws, T, cw, kdiff, qu, shrink, step
    cdef int c, o
    cdef ClassSums stats = sk.stats
    cdef Py_ssize_t stop = start + rho.shape[0]
    check_rows(X, y, d)
    if w.n_features != d:
        raise ValueError("the weights and the sketch differ in the number of features")
    if not 0 <= start <= stop <= X.n_rows:
        raise ValueError(f"rows {start}..{stop} are outside 0..{X.n_rows}")
    if rho.shape[1] != tau:
        raise ValueError(f"rho must have {tau} columns, got {rho.shape[1]}")
    if not X.has_norms:
        raise ValueError("opaucr_steps needs a RowSource with row norms")
    xz = <double*>malloc(3 * tau * sizeof(double))
    if xz == NULL:
        raise MemoryError()
    u = xz + 2 * tau
    shrink = 1.0 - eta * lam
    try:
        with nogil:
            for i in range(start, stop):
                prefetch_rows_ahead(X, NULL, i, stop)
                nnz = X.row(i, &vals, &ind)
                yt = y[i]
                c = 1 if yt > 0 else 0
                o = 1 - c
                r = &rho[i - start, 0]
                xx = X.sqnorm(i)
                sk.products(vals, ind, nnz, xz, xs)
                xw = w.dot(vals, ind, nnz)
                # (A) add x to class c's sketch; the products follow
                ra = tdot(r, sk.a + c * tau, tau) + sk.b[c]
                taxpy(xw, r, sk.zw + c * tau, tau)
                zs_cc = sk.zs + (3 * c) * tau
                zs_co = sk.zs + (2 * c + o) * tau
                zs_oc = sk.zs + (2 * o + c) * tau
                for j in range(tau):
                    zs_cc[j] += xz[c * tau + j] + r[j] * (xs[c] + xx)
                    zs_co[j] += r[j] * xs[o]
                    zs_oc[j] += xz[o * tau + j]
                g_cc = sk.gram + (3 * c) * tau * tau
                g_co = sk.gram + (2 * c + o) * tau * tau
                g_oc = sk.gram + (2 * o + c) * tau * tau
                for j in range(tau):
                    for kk in range(tau):
                        g_cc[j * tau + kk] += (xz[c * tau + j] * r[kk] + r[j] * xz[c * tau + kk]
                                               + xx * r[j] * r[kk])
                        g_co[j * tau + kk] += r[j] * xz[o * tau + kk]
                        g_oc[j * tau + kk] += xz[o * tau + j] * r[kk]
                sk.ss[3 * c] += 2.0 * xs[c] + xx
                sk.ss[1] += xs[o]
                sk.ss[2] = sk.ss[1]
                sk.sw[c] += xw
                taxpy(xx, r, xz + c * tau, tau)
                xs[c] += xx
                touch_rows(sk.journal, ind, nnz, c * d)
                for kk in range(nnz):
                    taxpy(vals[kk], r, sk.Z + (c * d + ind[kk]) * tau, tau)
                stats.add(c, vals, ind, nnz)
                taxpy(1.0, r, sk.q + c * tau, tau)
                # keep w unchanged: u <- u - ra x
                for e in range(2):
                    taxpy(-ra, xz + e * tau, sk.zw + e * tau, tau)
                    sk.sw[e] -= ra * xs[e]
                xw -= ra * xx
                w.add(-ra, vals, ind, nnz)
                poll(&work, 4 * tau * (nnz + tau))
                # (B) gradient step with the opposite class's sketch
                T = stats.count[o]
                if T == 0.0:
                    continue
                wx = xw + sk.factored_dot(xz, xs)
                ws = sk.sw[o]
                for j in range(tau):
                    u[j] = sk.zw[o * tau + j]
                for e in range(2):
                    a_e = sk.a + e * tau
                    ws += tdot(sk.zs + (2 * e + o) * tau, a_e, tau) + sk.b[e] * sk.ss[2 * e + o]
                    taxpy(sk.b[e], sk.zs + (2 * o + e) * tau, u, tau)
                    for j in range(tau):
                        u[j] += tdot(sk.gram + ((2 * o + e) * tau + j) * tau, a_e, tau)
                cw = ws / T
                kdiff = wx - cw - yt
                # u = Zc^T w = Z_o^T w - q_o (m_o.w)
                taxpy(-cw, sk.q + o * tau, u, tau)
                qu = tdot(sk.q + o * tau, u, tau)
                w.scale_by(shrink)
                for e in range(2):
                    sk.b[e] *= shrink
                    sk.sw[e] *= shrink
                    tscale(shrink, sk.a + e * tau, tau)
                    tscale(shrink, sk.zw + e * tau, tau)
                taxpy(-eta / T, u, sk.a + o * tau, tau)
                sk.b[o] += eta * (qu / T + kdiff) / T
                step = -eta * kdiff
                for e in range(2):
                    taxpy(step, xz + e * tau, sk.zw + e * tau, tau)
                    sk.sw[e] += step * xs[e]
                w.add(step, vals, ind, nnz)
    finally:
        free(xz)


def sketch_scores(RowSource X, Weights w, Sketch sk not None):
    """``w . x`` of every row for the factored ``w`` of :class:`Sketch`, O(nnz tau)."""
    cdef Py_ssize_t i, nnz, tau = sk.tau, work = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef double xs[2]
    if X.n_features != sk.n_features or w.n_features != sk.n_features:
        raise ValueError("rows, weights and sketch differ in the number of features")
    out = np.empty(X.n_rows)
    cdef double[::1] o = out
    cdef double* xz = <double*>malloc(2 * tau * sizeof(double))
    if xz == NULL:
        raise MemoryError()
    try:
        with nogil:
            for i in range(X.n_rows):
                prefetch_rows_ahead(X, NULL, i, X.n_rows)
                nnz = X.row(i, &vals, &ind)
                sk.products(vals, ind, nnz, xz, xs)
                o[i] = w.dot(vals, ind, nnz) + sk.factored_dot(xz, xs)
                poll(&work, 2 * tau * nnz + 1)
    finally:
        free(xz)
    return out


def sketch_coef(Weights w, Sketch sk not None):
    """The dense ``w = u + Z_0 a_0 + b_0 s_0 + Z_1 a_1 + b_1 s_1`` (O(d tau), BLAS)."""
    cdef int dn = <int>sk.n_features, tn = <int>sk.tau, one = 1
    cdef double alpha = 1.0, beta = 1.0, coef
    cdef char trans = b'T'
    cdef int e
    if w.n_features != sk.n_features:
        raise ValueError("the weights and the sketch differ in the number of features")
    out = w.coef()
    cdef double[::1] o = out
    for e in range(2):
        # Z_e is (d, tau) in C order = (tau, d) in Fortran order: out += Z_e a_e
        dgemv(&trans, &tn, &dn, &alpha, sk.Z + e * sk.n_features * sk.tau, &tn,
              sk.a + e * sk.tau, &one, &beta, &o[0], &one)
        coef = sk.b[e]
        daxpy(&dn, &coef, sk.stats.sums + e * sk.n_features, &one, &o[0], &one)
    return out


# ----------------------------------------------------------------------------- Uni-Exp


# Online Uni-Exp is never defined by the papers that use it as a baseline: this is a
# reconstruction from Kotlowski et al., Bipartite Ranking through Minimization of
# Univariate Loss, 2011
def uniexp_steps(RowSource X, const double[::1] y, Weights w, double[::1] counts,
                 int64_t t, double eta, double cap=0.0, double clip=30.0):
    """Online Uni-Exp (a reconstruction) over the rows in order.

    With ``T_y`` the running count of the row's class (``counts``, index 0 negative,
    updated in place) and ``t`` the step::

        w <- w + eta (t / T_y) y exp(min(-y w.x, clip)) x

    (the inverse running class prior weights the two classes' exponential losses
    equally, Kotlowski et al. 2011). With ``cap > 0`` a row's step is multiplied
    by ``min(1, cap / ||x||^2)`` (the rows need their norms). ``clip`` (at most
    30, where ``exp`` is still far from overflow) bounds the exponent: a smaller one
    makes the steps those of the loss ``exp(m)`` up to ``m = clip`` and linear
    beyond (bounded gradients). O(nnz) per step.
    Returns the new ``t``.
    """
    cdef Py_ssize_t i, nnz, n = X.n_rows, work = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef double yt, m, step
    cdef int cls
    check_rows(X, y, w.n_features)
    if counts.shape[0] != 2:
        raise ValueError("counts must have shape (2,)")
    check_cap(X, cap)
    if not 0.0 <= clip <= EXP_CLIP:
        raise ValueError(f"clip must be in [0, {EXP_CLIP:g}], got {clip!r}")
    with nogil:
        for i in range(n):
            prefetch_rows_ahead(X, NULL, i, n)
            nnz = X.row(i, &vals, &ind)
            yt = y[i]
            cls = 1 if yt > 0 else 0
            t += 1
            counts[cls] += 1.0
            m = -yt * w.dot(vals, ind, nnz)
            if m > clip:
                m = clip
            step = eta * (<double>t / counts[cls]) * yt * exp(m)
            w.add(step * row_cap_factor(X, i, cap), vals, ind, nnz)
            poll(&work, 2 * nnz + 8)
    return t
