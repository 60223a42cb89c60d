# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Online buffered pairwise learners: one arrival loop, four update rules.

The loop is Alg. 4 of Khalid, Scalable Large Margin Pairwise Learning Algorithms, 2019 (and of
Natole's PhD thesis on stochastic AUC maximization):
for each arriving row ``(x_t, y_t)`` the buffer of its own class is updated first
(:class:`aucopt._kernels._buffers.Buffers`, reservoir = Alg. 5 or FIFO), then the
rule updates the model against every row ``x`` of the opposite buffer, in the
buffer's iteration order, with ``z = x_t - x``. The rule is an object with named
fields (:class:`OamSeq`, :class:`OamGra`, :class:`CbrDiag`, :class:`CbrFull`); the
ranking vector is a :class:`aucopt._kernels._weights.Weights`.

The difference ``z`` is never merged from the two index lists: the arriving row is
scattered once into a zeroed dense scratch and each buffered row is gathered
against it (the pair helper of ``_pairs.pxd``), so a pair's ``w.z = w.x - w.b`` and
``z' D z = x' D x + sum_i D_i b_i (b_i - 2 x_i)`` (D = I for OAM, ``diag(1/G)`` for
CBR-diag) cost one branch-free pass over the buffered row. Dense rows are rows
whose indices are ``0 .. d-1``, so one loop serves dense and CSR input with
bit-identical sums (the extra zeros add exact zeros, in the same index order).

Rules (OAM: Zhao et al., Online AUC Maximization, 2011; CBR: Khalid 2019, Ch. 4):

* :class:`OamSeq` (Natole's thesis Alg. 6, PA-I closed form of eq. 2.8, read as
  ``1/2||w - w_i||^2 + C_t h(y_t w.(x_t - x))``):
  ``l = 1 - y w.z``; if ``l > 0``: ``w += min(C_t, l/||z||^2) y z``.
* :class:`OamGra` (Natole's thesis Alg. 7): margins ``y w_t.z`` all at the frozen ``w_t``;
  each pair with margin ``<= 1`` adds ``C_t y z / 2``.
  Both use ``C_t = C max(1, M_opp^t / M_opp)`` (printed ``C max(1, N_t, N)``,
  the fraction bar lost).
* :class:`CbrFull` (Khalid 2019, Sec. 4.3, Prop. 1, Alg. 6, corrected: the outer
  product ``Sigma z z^T Sigma``, and SCW's ``beta``): SCW-I on
  the pair, full covariance, ``Sigma z`` by BLAS ``dsymv`` and the rank-one ``dsyr``
  update. In a journaled call the rank-one terms can be kept pending instead
  (``Sigma z = Sigma_old z - sum_k beta_k s_k (s_k . z)``) and written by
  :meth:`CbrFull.flush` once the call has succeeded.
* :class:`CbrDiag` (Khalid 2019, Sec. 4.4, Prop. 2, corrected: ``G`` is a precision,
  so ``v = sum z^2/G`` without the printed ``+C``): diagonal variance ``1/G`` kept
  as the second column of the weight state, every operation on the support of ``z``.

Numerical guards of the SCW closed form (shared by CBR and CBR-diag):

* a pair with ``v = z^T Sigma z <= 0`` (``z = 0``, or a covariance that lost
  definiteness by rounding) or non-finite ``v`` is skipped: the closed form divides
  by ``v`` and the loss direction is undefined;
* ``alpha``'s numerator ``-m psi + sqrt(m^2 phi^4/4 + v phi^2 zeta)`` is computed,
  for ``m > 0``, as ``zeta (v phi^2 - m^2) / (sqrt(.) + m psi)`` (the same number
  without cancellation), so ``alpha > 0`` exactly when the loss
  ``phi sqrt(v) - m`` is positive, and the radicand is a sum of non-negative terms;
* ``sqrt(u) = (sqrt(A^2 + 4v) - A) / 2`` with ``A = alpha v phi`` is computed as
  ``2v / (sqrt(A^2 + 4v) + A)``: no square root of a negative number and no
  cancellation to 0 when ``A^2 >> v`` (which would divide by zero in ``beta``);
  with ``v > 0`` every denominator is then positive.

The rules write the ranking vector's coordinates themselves (the SCW update couples
``mu_i`` with its variance ``1/G_i``; OAM's ``w_i += c (x_i - b_i)`` is rounded as
one step): through the primitive's write methods, ``touch`` (the call's undo
journal), ``put`` and ``moved`` (its ``||w||^2``), the variance in the rule's own
column of the state. They need ``scale == 1`` (they never rescale).
"""
import numpy as np

from libc.math cimport isfinite, sqrt
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memset
from scipy.linalg.cython_blas cimport daxpy, ddot, dsymv, dsyr

from aucopt._kernels._buffers cimport PUSH_NO_ROOM, Buffers
from aucopt._kernels._interrupt cimport poll
from aucopt._kernels._pairs cimport scatter, unscatter
from aucopt._kernels._rows cimport RowSource, prefetch_rows_ahead
from aucopt._kernels._weights cimport Weights

# pending rank-one terms of CbrFull are stored in blocks of this many terms
cdef enum:
    PENDING_BLOCK = 16


# ---------------------------------------------------------------- SCW closed form

cdef class Scw:
    """The constants of the SCW-I closed form: the penalty ``C``, ``phi =
    Phi^-1(eta)``, ``psi = 1 + phi^2 / 2`` and ``zeta = 1 + phi^2``."""
    cdef readonly double C
    cdef readonly double phi
    cdef readonly double psi
    cdef readonly double zeta

    def __init__(self, double C, double phi):
        if not (C > 0.0 and isfinite(C)) or not (phi > 0.0 and isfinite(phi)):
            raise ValueError(f"C and phi must be finite and > 0, got {C!r}, {phi!r}")
        self.C = C
        self.phi = phi
        self.psi = 1.0 + phi * phi / 2.0
        self.zeta = 1.0 + phi * phi


cdef inline double scw_alpha(Scw p, double m, double v) noexcept nogil:
    """SCW-I step ``alpha`` (Prop. 1/2): ``min(C, max(0, (-m psi + sqrt(m^2 phi^4/4
    + v phi^2 zeta)) / (v zeta)))``, computed without cancellation for ``m > 0``."""
    cdef double phi2 = p.phi * p.phi
    cdef double root = sqrt(m * m * phi2 * phi2 / 4.0 + v * phi2 * p.zeta)
    cdef double a
    if m > 0.0:
        a = (v * phi2 - m * m) / (v * (root + m * p.psi))
    else:
        a = (-m * p.psi + root) / (v * p.zeta)
    if a <= 0.0:
        return 0.0
    return a if a < p.C else p.C


cdef inline double scw_sqrt_u(double alpha, double v, double phi) noexcept nogil:
    """``sqrt(u)``, ``u = (-A + sqrt(A^2 + 4v))^2 / 4``, ``A = alpha v phi``, stably."""
    cdef double a = alpha * v * phi
    return 2.0 * v / (sqrt(a * a + 4.0 * v) + a)


cdef inline double scw_step(Scw p, double m, double v, bint printed, bint diagonal,
                            double* gain) noexcept nogil:
    """``alpha`` of a pair (0: no update) and, in ``gain``, its covariance step:
    ``beta = alpha phi / (sqrt(u) + v alpha phi)`` of SCW for the full covariance
    (``Sigma -= beta s s'``), ``alpha phi / sqrt(u)`` for the diagonal precision
    (``G += gain z^2``), or, ``printed``, ``alpha phi / sqrt(u + v alpha phi)`` as
    printed in Khalid 2019, Props. 1 / 2 (a misprint of SCW's form)."""
    cdef double alpha = scw_alpha(p, m, v), su
    if alpha <= 0.0:
        return 0.0
    su = scw_sqrt_u(alpha, v, p.phi)
    if printed:
        gain[0] = alpha * p.phi / sqrt(su * su + v * alpha * p.phi)
    elif diagonal:
        gain[0] = alpha * p.phi / su
    else:
        gain[0] = alpha * p.phi / (su + v * alpha * p.phi)
    return alpha


# ---------------------------------------------------------------- rules

cdef class ArrivalRule:
    """How the model learns from an arrival against the opposite buffer.

    ``n_updates`` counts the pairs that changed the model. The scratch (all zero
    between arrivals) is the caller's, allocated once; after an exception it may
    hold a scattered row, and :meth:`clear_scratch` zeroes it.
    """
    cdef readonly Weights w
    cdef public int64_t n_updates
    cdef double* scratch
    cdef Py_ssize_t scratch_size
    cdef list _refs

    def __init__(self, Weights w not None, scratch not None, int64_t n_updates=0):
        cdef double[:, ::1] view = scratch
        if w.scale != 1.0:
            raise ValueError("buffered rules need weights of scale 1 (they never rescale)")
        self.w = w
        self.scratch = &view[0, 0]
        self.scratch_size = scratch.size
        self.n_updates = n_updates
        self._refs = [scratch]

    cdef int arrive(self, Buffers B, int opp, const double* xv, const int32_t* xi,
                    Py_ssize_t nx, double y, double sq, Py_ssize_t* work) except -1 nogil:
        return 0

    def clear_scratch(self):
        """Zero the scratch (after an interrupted arrival)."""
        memset(self.scratch, 0, self.scratch_size * sizeof(double))


cdef struct Arrival:
    const double* xv    # the arriving row (values, indices, nnz)
    const int32_t* xi
    Py_ssize_t nx
    double y            # its label, +-1
    double sq           # ||x||^2
    double c_t          # the rule's weight C_t for this arrival
    double wx           # w.x, kept current through the pair updates
    double xgx          # x' D x, kept current


cdef class _ScatterRule(ArrivalRule):
    """Rules on the support of ``z``: the arrival scattered once into scratch row
    0 (its ``w.x`` and ``x' D x`` computed once and kept current), buffered rows
    gathered against it; a pair update scatters the buffered row into row 1.

    :meth:`against` visits the buffered rows in turn: :meth:`pair_stats` gives ``m =
    y w.z`` and ``v = z' D z`` (or skips the pair), :meth:`pair` updates the model.
    """
    cdef const double* v    # the weights' column 0, read here (written by Weights.put)
    cdef Py_ssize_t vs
    cdef double* var        # the rule's column of the weights (CBR-diag's variance)
    cdef double* xd
    cdef double* bd

    def __init__(self, Weights w not None, scratch not None, int64_t n_updates=0):
        super().__init__(w, scratch, n_updates)
        if scratch.shape != (2, w.n_features):
            raise ValueError(f"scratch must have shape (2, {w.n_features})")
        self.v = w.v
        self.vs = w.stride
        self.var = NULL
        self.xd = self.scratch
        self.bd = self.scratch + w.n_features

    cdef int arrive(self, Buffers B, int opp, const double* xv, const int32_t* xi,
                    Py_ssize_t nx, double y, double sq, Py_ssize_t* work) except -1 nogil:
        cdef Arrival a
        cdef Py_ssize_t k, i
        if B.size(opp) == 0:
            return 0
        a.xv = xv
        a.xi = xi
        a.nx = nx
        a.y = y
        a.sq = sq
        a.c_t = self.weight(B, opp)
        a.wx = 0.0
        a.xgx = 0.0
        scatter(self.xd, 1, xv, xi, nx)
        for k in range(nx):
            i = xi[k] * self.vs
            a.wx += self.v[i] * xv[k]
            a.xgx += xv[k] * xv[k] * (self.var[i] if self.var != NULL else 1.0)
        self.against(B, opp, &a, work)
        unscatter(self.xd, 1, xi, nx)
        return 0

    cdef double weight(self, Buffers B, int opp) noexcept nogil:
        """``C_t`` of the arrival (Alg. 4)."""
        return 0.0

    cdef int against(self, Buffers B, int opp, Arrival* a, Py_ssize_t* work) except -1 nogil:
        """UpdateRanker / UpdateClassifier: the buffered rows in iteration order."""
        cdef Py_ssize_t k, g, nb
        cdef const double* bv
        cdef const int32_t* bi
        cdef double m, v
        for k in range(B.size(opp)):
            g = B.slot(opp, k)
            nb = B.row(g, &bv, &bi)
            if self.pair_stats(a, bv, bi, nb, B.sqnorm(g), &m, &v):
                self.pair(a, m, v, bv, bi, nb)
            poll(work, a.nx + nb + 8)
        return 0

    cdef bint pair_stats(self, Arrival* a, const double* bv, const int32_t* bi,
                         Py_ssize_t nb, double sqb, double* m, double* v) noexcept nogil:
        """``m = y w.z`` and ``v = z' D z`` from one pass over ``b`` (:func:`row_stats`);
        False (skip) when ``v`` is below ``1e-12 (||x||^2 + ||b||^2)``: zero up to the
        rounding of this expansion (``z = 0``: nothing to learn, and the steps divide
        by ``v``). Since ``1/G_i <= 1``, ``x' D x + b' D b <= ||x||^2 + ||b||^2``."""
        cdef double wb, q
        row_stats(self, bv, bi, nb, &wb, &q)
        v[0] = a.xgx + q
        m[0] = a.y * (a.wx - wb)
        return v[0] > 1e-12 * (a.sq + sqb)

    cdef int pair(self, Arrival* a, double m, double v, const double* bv, const int32_t* bi,
                  Py_ssize_t nb) except -1 nogil:
        return 0


cdef inline void row_stats(_ScatterRule r, const double* bv, const int32_t* bi,
                           Py_ssize_t nb, double* wb, double* q) noexcept nogil:
    """One branch-free pass over a buffered row ``b``: ``w.b`` and
    ``sum D_i b_i (b_i - 2 x_i)`` against the scattered arrival."""
    cdef Py_ssize_t k, i
    cdef double s_wb = 0.0, s_q = 0.0
    cdef const double* g = r.var
    cdef const double* xd = r.xd
    cdef const double* v = r.v
    cdef Py_ssize_t vs = r.vs
    if g != NULL:
        for k in range(nb):
            i = bi[k] * vs
            s_wb += v[i] * bv[k]
            s_q += g[i] * bv[k] * (bv[k] - 2.0 * xd[bi[k]])
    else:
        for k in range(nb):
            s_wb += v[bi[k] * vs] * bv[k]
            s_q += bv[k] * (bv[k] - 2.0 * xd[bi[k]])
    wb[0] = s_wb
    q[0] = s_q


cdef int apply_pair(_ScatterRule r, Arrival* a, double c, double gain, const double* bv,
                    const int32_t* bi, Py_ssize_t nb) except -1 nogil:
    """Update every coordinate of ``supp(z)``, ``z = x - b``, once:
    ``w_i += c z_i s_i`` and, with a variance column, ``s_i <- s_i / (1 + gain z_i^2
    s_i)`` (``s = 1`` for OAM). ``b`` is scattered into scratch row 1; the
    arrival's coordinates take (and zero) their ``b_i`` first, the buffered row's
    loop then updates what is left (coordinates of ``b`` only). Each coordinate's
    update depends on its own ``z_i`` only, so the order does not change the
    result. ``w.x`` and ``x' D x`` of the arrival are kept current (they change only
    on ``supp(x)``), and so is ``||w||^2``."""
    cdef Py_ssize_t k, i, j
    cdef const double* xv = a.xv
    cdef const int32_t* xi = a.xi
    cdef const double* v = r.v
    cdef double* var = r.var
    cdef double* bd = r.bd
    cdef Py_ssize_t vs = r.vs
    cdef double z, bk, sk, snew, dw, dx = 0.0, dxx = 0.0, dv = 0.0
    r.w.touch(xi, a.nx)
    r.w.touch(bi, nb)
    scatter(bd, 1, bv, bi, nb)
    for k in range(a.nx):
        i = xi[k]
        z = xv[k] - bd[i]
        bd[i] = 0.0
        j = i * vs
        if var != NULL:
            sk = var[j]
            dw = c * z * sk
            snew = sk / (1.0 + gain * z * z * sk)
            var[j] = snew
            dxx += (snew - sk) * xv[k] * xv[k]
        else:
            dw = c * z
        dv += r.w.put(i, v[j] + dw)
        dx += dw * xv[k]
    for k in range(nb):
        i = bi[k]
        bk = bd[i]
        if bk == 0.0:  # taken by the arrival's loop, or a stored zero (no change)
            continue
        bd[i] = 0.0
        j = i * vs
        if var != NULL:
            sk = var[j]
            dv += r.w.put(i, v[j] - c * bk * sk)
            var[j] = sk / (1.0 + gain * bk * bk * sk)
        else:
            dv += r.w.put(i, v[j] - c * bk)
    r.w.moved(dv)
    a.wx += dx
    a.xgx += dxx
    r.n_updates += 1
    return 0


cdef class _Oam(_ScatterRule):
    """OAM's weight ``C_t = C max(1, M_opp^t / M_opp)`` (the opposite class's rows
    received so far over its buffer capacity; Natole's thesis prints
    ``C max(1, N_t, N)``, the fraction bar lost). ``limit_neg`` / ``limit_pos`` > 0
    cap the count of received rows of that class in ``C_t`` (a repeated pass over
    the same rows: the weight stays the one its first pass ended with).

    Parameters
    ----------
    w : Weights of shape (d, 1), scale 1
    scratch : float64 array of shape (2, d), all zero
    C : float
    n_updates : int
        Pair updates so far (continued).
    """
    cdef public double C
    cdef public int64_t limit_neg
    cdef public int64_t limit_pos

    def __init__(self, Weights w not None, scratch not None, double C, int64_t n_updates=0):
        super().__init__(w, scratch, n_updates)
        if not (C > 0.0 and isfinite(C)):
            raise ValueError(f"C must be finite and > 0, got {C!r}")
        self.C = C

    cdef double weight(self, Buffers B, int opp) noexcept nogil:
        cdef int64_t received = B.received(opp)
        cdef int64_t limit = self.limit_pos if opp == 1 else self.limit_neg
        cdef double ratio
        if 0 < limit < received:
            received = limit
        ratio = received / <double>B.capacity
        return self.C * (ratio if ratio > 1.0 else 1.0)


cdef class OamSeq(_Oam):
    """OAM_seq (thesis Alg. 6): PA-I on ``u = y z`` for each buffered row in turn,
    ``l = 1 - y w.z``; if ``l > 0``: ``w += min(C_t, l / ||z||^2) y z``.
    Parameters as :class:`_Oam`."""

    cdef int pair(self, Arrival* a, double m, double v, const double* bv, const int32_t* bi,
                  Py_ssize_t nb) except -1 nogil:
        cdef double tau
        if m < 1.0:
            tau = (1.0 - m) / v
            apply_pair(self, a, (tau if tau < a.c_t else a.c_t) * a.y, 0.0, bv, bi, nb)
        return 0


cdef class OamGra(_Oam):
    """OAM_gra (thesis Alg. 7): margins ``y w_t.z`` at the frozen ``w_t`` of the
    arrival, then ``w += C_t y z / 2`` for every pair with margin ``<= 1``.
    Parameters as :class:`_Oam`, and ``capacity``, the buffer capacity (room for
    the margins of one buffer)."""
    cdef readonly Py_ssize_t capacity
    cdef double* margins
    cdef bint strict

    def __init__(self, Weights w not None, scratch not None, double C, Py_ssize_t capacity,
                 int64_t n_updates=0):
        super().__init__(w, scratch, C, n_updates)
        self.strict = False
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        margins = np.empty(capacity)
        cdef double[::1] view = margins
        self.capacity = capacity
        self.margins = &view[0]
        self._refs.append(margins)

    cdef int against(self, Buffers B, int opp, Arrival* a, Py_ssize_t* work) except -1 nogil:
        cdef Py_ssize_t k, nb, n = B.size(opp)
        cdef const double* bv
        cdef const int32_t* bi
        cdef double wb, q
        if n > self.capacity:
            with gil:
                raise ValueError("the buffers are larger than the rule's capacity")
        for k in range(n):
            nb = B.row(B.slot(opp, k), &bv, &bi)
            row_stats(self, bv, bi, nb, &wb, &q)
            self.margins[k] = a.y * (a.wx - wb)
            poll(work, nb + 8)
        for k in range(n):
            if self.margins[k] < 1.0 or (self.margins[k] == 1.0 and not self.strict):
                nb = B.row(B.slot(opp, k), &bv, &bi)
                apply_pair(self, a, 0.5 * a.c_t * a.y, 0.0, bv, bi, nb)
                poll(work, a.nx + nb + 8)
        return 0


cdef class BufferOgd(OamGra):
    """FOAM's update (Ding, Liu, Zhao & Hoi, ICDM 2017, Algs. 3-4): one gradient step
    of the mean hinge loss over the opposite buffer at the frozen ``w_t``,
    ``w += (eta / |B|) sum_{margin < 1} y z / 2``. As :class:`OamGra` with the weight
    ``eta / |B_opp|`` (the buffer's current size) and a strict ``< 1``.
    Parameters as :class:`OamGra`, with ``C`` the step ``eta``."""

    def __init__(self, Weights w not None, scratch not None, double C, Py_ssize_t capacity,
                 int64_t n_updates=0):
        super().__init__(w, scratch, C, capacity, n_updates)
        self.strict = True

    cdef double weight(self, Buffers B, int opp) noexcept nogil:
        cdef Py_ssize_t size = B.size(opp)
        return self.C / <double>(size if size > 0 else 1)


cdef class CbrDiag(_ScatterRule):
    """CBR-diag (dissertation Sec. 4.4, Prop. 2): diagonal SCW-I on each pair, the
    variance ``s = 1 / G`` in column 1 of the weight state.

    ``mu += alpha y z s`` and ``G += g z^2`` as ``s <- s / (1 + g z^2 s)`` (one
    division per touched coordinate instead of two), with ``g = alpha phi /
    sqrt(u)`` (the precision form of the corrected Prop. 2) or, with ``printed``, Prop. 2 as
    printed: ``v = sum z^2 / (G + C)`` and ``g = alpha phi / sqrt(u + v alpha phi)``.

    Parameters
    ----------
    w : Weights of shape (d, 2) (``mu``, ``1/G``), scale 1
    scratch : float64 array of shape (2, d), all zero
    scw : Scw
    printed : bool
    n_updates : int
    """
    cdef readonly Scw scw
    cdef public bint printed

    def __init__(self, Weights w not None, scratch not None, Scw scw not None,
                 bint printed=False, int64_t n_updates=0):
        super().__init__(w, scratch, n_updates)
        if w.stride != 2:
            raise ValueError("CbrDiag needs weights with a variance column (d, 2)")
        self.scw = scw
        self.printed = printed
        self.var = w.column(1)

    cdef bint pair_stats(self, Arrival* a, const double* bv, const int32_t* bi,
                         Py_ssize_t nb, double sqb, double* m, double* v) noexcept nogil:
        """The printed reading sums ``mu.z`` and its ``v`` over ``supp(z)`` directly."""
        if not self.printed:
            return _ScatterRule.pair_stats(self, a, bv, bi, nb, sqb, m, v)
        printed_stats(self, a, bv, bi, nb, m, v)
        m[0] *= a.y
        return v[0] > 0.0 and isfinite(v[0])

    cdef int pair(self, Arrival* a, double m, double v, const double* bv, const int32_t* bi,
                  Py_ssize_t nb) except -1 nogil:
        """Prop. 2 given ``m = y mu.z`` and ``v``."""
        cdef double gain
        cdef double alpha = scw_step(self.scw, m, v, self.printed, True, &gain)
        if alpha <= 0.0:
            return 0
        return apply_pair(self, a, alpha * a.y, gain, bv, bi, nb)


cdef void printed_stats(CbrDiag r, Arrival* a, const double* bv, const int32_t* bi,
                        Py_ssize_t nb, double* m, double* v) noexcept nogil:
    """``mu.z`` and Prop. 2's printed ``v = sum z_i^2 / (G_i + C) = sum z_i^2 s_i /
    (1 + C s_i)`` over ``supp(z)``, by scattering ``b`` (as :func:`apply_pair`)."""
    cdef Py_ssize_t k, j
    cdef double z, s, C = r.scw.C, sm = 0.0, sv = 0.0
    cdef double* bd = r.bd
    scatter(bd, 1, bv, bi, nb)
    for k in range(a.nx):
        z = a.xv[k] - bd[a.xi[k]]
        bd[a.xi[k]] = 0.0
        j = a.xi[k] * r.vs
        s = r.var[j]
        sm += r.v[j] * z
        sv += z * z * s / (1.0 + C * s)
    for k in range(nb):
        z = -bd[bi[k]]
        if z == 0.0:
            continue
        bd[bi[k]] = 0.0
        j = bi[k] * r.vs
        s = r.var[j]
        sm += r.v[j] * z
        sv += z * z * s / (1.0 + C * s)
    m[0] = sm
    v[0] = sv


cdef class CbrFull(ArrivalRule):
    """CBR (dissertation Sec. 4.3, Prop. 1): SCW-I on each pair with a full
    covariance ``Sigma`` (row-major, lower triangle maintained)::

        s = Sigma z;  v = z.s;  m = y mu.z;  alpha, u as in Prop. 1
        beta = alpha phi / (sqrt(u) + v alpha phi)    (printed: / sqrt(u + v alpha phi))
        mu <- mu + alpha y s;   Sigma <- Sigma - beta s s'

    ``mu`` is the dense view of the weights (``dense_begin``; call :meth:`finish`
    after the run). The arrival is scattered once (scratch row 0) and ``z`` (row 1)
    is rebuilt from it on each buffered row's support.

    With ``pending_limit > 0`` the covariance is only read: the terms ``(beta_k,
    s_k)`` are kept, in blocks, and ``Sigma z = Sigma_old z - sum_k beta_k s_k (s_k .
    z)``; :meth:`flush` writes them into ``Sigma`` (once the call has succeeded).
    When more than ``pending_limit`` terms would be needed, ``on_limit()`` is called
    (the caller saves ``Sigma``), the terms are flushed and the rule writes
    ``Sigma`` directly from then on.

    Parameters
    ----------
    w : Weights of shape (d, 1)
    cov : float64 array of shape (d, d), C-contiguous
    scratch : float64 array of shape (3, d), all zero
    scw : Scw
    printed : bool
        ``beta`` as printed in Khalid 2019, Prop. 1 (not SCW's form).
    n_updates : int
    pending_limit : int
    on_limit : callable or None
    """
    cdef readonly Scw scw
    cdef public bint printed
    cdef int n
    cdef double* S
    cdef double* mu
    cdef double* xd
    cdef double* zd
    cdef double* sz
    cdef readonly bint pending
    cdef readonly Py_ssize_t pending_limit
    cdef Py_ssize_t n_pend
    cdef Py_ssize_t n_alloc
    cdef object on_limit
    cdef list blocks
    cdef double** block_ptr

    def __init__(self, Weights w not None, cov not None, scratch not None, Scw scw not None,
                 bint printed=False, int64_t n_updates=0,
                 Py_ssize_t pending_limit=0, on_limit=None):
        cdef double[:, ::1] cov_v = cov
        cdef Py_ssize_t d = w.n_features
        super().__init__(w, scratch, n_updates)
        if w.stride != 1 or scratch.shape != (3, d):
            raise ValueError(f"CbrFull needs weights of shape ({d}, 1) and scratch of "
                             f"shape (3, {d})")
        if cov_v.shape[0] != d or cov_v.shape[1] != d:
            raise ValueError(f"the covariance must be {d} x {d}, got {cov.shape}")
        if d > 2**31 - 1:
            raise ValueError("BLAS needs d < 2**31")
        if pending_limit > 0 and not callable(on_limit):
            raise ValueError("pending terms need an on_limit callable")
        self.scw = scw
        self.printed = printed
        self.n = <int>d
        self.S = &cov_v[0, 0]
        self.xd = self.scratch
        self.zd = self.scratch + d
        self.sz = self.scratch + 2 * d
        self.mu = w.dense_begin()
        self.pending = pending_limit > 0
        self.pending_limit = pending_limit
        self.on_limit = on_limit
        self.blocks = []
        self._refs.append(cov)

    def __dealloc__(self):
        free(self.block_ptr)

    @property
    def n_pending(self):
        """Rank-one terms kept pending."""
        return self.n_pend

    def finish(self):
        """Close the dense view of ``mu`` (``||mu||^2`` recomputed, O(d))."""
        self.w.dense_end()

    cdef int arrive(self, Buffers B, int opp, const double* xv, const int32_t* xi,
                    Py_ssize_t nx, double y, double sq, Py_ssize_t* work) except -1 nogil:
        cdef Py_ssize_t k, j, nb, n = B.size(opp)
        cdef const double* bv
        cdef const int32_t* bi
        cdef double* xd = self.xd
        cdef double* zd = self.zd
        if n == 0:
            return 0
        scatter(xd, 1, xv, xi, nx)
        scatter(zd, 1, xv, xi, nx)
        for k in range(n):
            nb = B.row(B.slot(opp, k), &bv, &bi)
            for j in range(nb):
                zd[bi[j]] = xd[bi[j]] - bv[j]
            self.pair(y)
            for j in range(nb):
                zd[bi[j]] = xd[bi[j]]
            poll(work, <Py_ssize_t>self.n * (2 * self.n + self.n_pend))
        unscatter(zd, 1, xi, nx)
        unscatter(xd, 1, xi, nx)
        return 0

    cdef int pair(self, double y) except -1 nogil:
        """Prop. 1 for ``z`` in scratch row 1."""
        cdef int n = self.n, one = 1
        cdef char uplo = b'U'       # Fortran upper = row-major lower triangle
        cdef double done = 1.0, dzero = 0.0, m, v, alpha, beta, c
        dsymv(&uplo, &n, &done, self.S, &n, self.zd, &one, &dzero, self.sz, &one)
        if self.n_pend:
            pending_product(self)
        v = ddot(&n, self.zd, &one, self.sz, &one)
        m = y * ddot(&n, self.zd, &one, self.mu, &one)
        if not (v > 0.0 and isfinite(v)):
            return 0
        alpha = scw_step(self.scw, m, v, self.printed, False, &beta)
        if alpha <= 0.0:
            return 0
        c = alpha * y
        daxpy(&n, &c, self.sz, &one, self.mu, &one)
        if self.pending:
            self.keep(beta)
        else:
            c = -beta
            dsyr(&uplo, &n, &c, self.sz, &one, self.S, &n)
        self.n_updates += 1
        return 0

    cdef int keep(self, double beta) except -1 nogil:
        """Keep ``(beta, Sigma z)`` pending: a new block when the last is full, or,
        past ``pending_limit``, ``on_limit()``, flush and write ``Sigma`` from now on."""
        cdef int n = self.n, one = 1
        cdef char uplo = b'U'
        cdef double c = -beta
        cdef double* s
        cdef Py_ssize_t k
        if self.n_pend == self.n_alloc:
            with gil:
                if self.n_alloc + PENDING_BLOCK > self.pending_limit:
                    self.on_limit()
                    self.flush()
                else:
                    self._add_block()
        if not self.pending:
            dsyr(&uplo, &n, &c, self.sz, &one, self.S, &n)
            return 0
        s = pending_term(self, self.n_pend)
        for k in range(n):
            s[k] = self.sz[k]
        s[n] = beta
        self.n_pend += 1
        return 0

    def _add_block(self):
        block = np.empty((PENDING_BLOCK, self.n + 1))
        cdef double[:, ::1] view = block
        cdef Py_ssize_t nb = len(self.blocks) + 1
        cdef double** ptr = <double**>realloc(self.block_ptr, nb * sizeof(double*))
        if ptr == NULL:
            raise MemoryError()
        self.block_ptr = ptr
        self.block_ptr[nb - 1] = &view[0, 0]
        self.blocks.append(block)
        self.n_alloc += PENDING_BLOCK

    def flush(self):
        """Write the pending terms into ``Sigma`` in order (``dsyr``), release them
        and write ``Sigma`` directly from now on."""
        cdef int n = self.n, one = 1
        cdef char uplo = b'U'
        cdef double c
        cdef double* s
        cdef Py_ssize_t k
        with nogil:
            for k in range(self.n_pend):
                s = pending_term(self, k)
                c = -s[n]
                dsyr(&uplo, &n, &c, s, &one, self.S, &n)
        self.n_pend = 0
        self.n_alloc = 0
        self.blocks = []
        self.pending = False


cdef inline double* pending_term(CbrFull r, Py_ssize_t k) noexcept nogil:
    """Pending term ``k``: ``s_k`` (``d`` values) followed by ``beta_k``."""
    return r.block_ptr[k // PENDING_BLOCK] + (k % PENDING_BLOCK) * (r.n + 1)


cdef void pending_product(CbrFull r) noexcept nogil:
    """``Sigma z -= sum_k beta_k s_k (s_k . z)`` over the pending terms. Plain loops:
    hundreds of length-d BLAS calls per pair would each wake BLAS's threads."""
    cdef Py_ssize_t k, i, n = r.n
    cdef const double* s
    cdef const double* z = r.zd
    cdef double* sz = r.sz
    cdef double c
    for k in range(r.n_pend):
        s = pending_term(r, k)
        c = 0.0
        for i in range(n):
            c += s[i] * z[i]
        c = -s[n] * c
        for i in range(n):
            sz[i] += c * s[i]


# ---------------------------------------------------------------- the arrival loop

def run_arrivals(RowSource rows not None, const double[::1] y, Buffers buffers not None,
                 ArrivalRule rule not None, const double[:, ::1] draws=None,
                 Py_ssize_t start=0, int64_t t0=0):
    """Process rows ``start ..`` of ``rows`` as arrivals ``t0 + i`` (Khalid 2019, Alg. 4).

    Parameters
    ----------
    rows : RowSource (with row norms)
    y : labels in {-1, +1}, checked row by row as the rows arrive (a call resumed
        after a repack does not rescan them): a row with another label raises
        ``ValueError`` when it is reached, after the rows before it were processed
        (the learners pass labels they have already mapped to -1 / +1)
    buffers : Buffers, updated in place
    rule : ArrivalRule, updates its weights in place
    draws : (n, 2) uniforms ``(u, r)`` per row, for a reservoir only
    start : first row to process
    t0 : arrival index of row 0

    Returns
    -------
    stop : int
        ``rows.n_rows`` when every row was processed; otherwise the sparse pool
        needs room (``buffers.repack()``) before resuming at ``stop``.
    """
    cdef Py_ssize_t n = rows.n_rows, i = start, nx, work = 0
    cdef const double* xv
    cdef const int32_t* xi
    cdef double u = 0.0, r = 0.0, sq
    cdef int cls
    cdef bint bad_label = False
    if y.shape[0] != n:
        raise ValueError(f"{n} rows but {y.shape[0]} labels")
    if not rows.has_norms:
        raise ValueError("the rows need their norms (RowSource(X, norms=True))")
    if buffers.n_features != rows.n_features or rule.w.n_features != rows.n_features:
        raise ValueError("rows, buffers and weights differ in the number of features")
    if buffers.reservoir and (draws is None or draws.shape[0] != n or draws.shape[1] != 2):
        raise ValueError("a reservoir needs one (u, r) pair of draws per row")
    if not (0 <= start <= n and t0 >= 0):
        raise ValueError(f"start must be in [0, {n}] and t0 >= 0")
    try:
        with nogil:
            while i < n:
                if y[i] != 1.0 and y[i] != -1.0:
                    bad_label = True  # checked here, not by a scan of y: a resumed call
                    break             # would rescan it
                cls = 1 if y[i] > 0.0 else 0
                prefetch_rows_ahead(rows, NULL, i, n)
                nx = rows.row(i, &xv, &xi)
                sq = rows.sqnorm(i)
                if buffers.reservoir:
                    u = draws[i, 0]
                    r = draws[i, 1]
                if buffers.push(cls, xv, xi, nx, sq, u, r, t0 + i) == PUSH_NO_ROOM:
                    break
                rule.arrive(buffers, 1 - cls, xv, xi, nx, y[i], sq, &work)
                poll(&work, nx + 8)
                i += 1
    except BaseException:
        rule.clear_scratch()
        raise
    if bad_label:
        done = f"rows {start} to {i - 1} were processed" if i > start else "no row was"
        raise ValueError(f"labels must be -1 or +1 (row {i}: {y[i]!r}; {done})")
    return i


def symmetrize(double[:, ::1] S):
    """Copy the maintained lower triangle (row-major) of ``S`` onto its upper one."""
    cdef Py_ssize_t i, j, d = S.shape[0]
    if S.shape[1] != d:
        raise ValueError("S must be square")
    with nogil:
        for i in range(d):
            for j in range(i + 1, d):
                S[i, j] = S[j, i]
