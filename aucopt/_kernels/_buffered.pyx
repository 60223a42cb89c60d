# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Online buffered pairwise learners: one arrival loop, four update rules.

The loop is ALGORITHMS.md section 3 (dissertation 000 Alg. 4, thesis 001 Alg. 4):
for each arriving row ``(x_t, y_t)`` the buffer of its own class is updated first
(:class:`aucopt._kernels._buffers.Buffers`, reservoir = Alg. 5 or FIFO), then the
model is updated against every row ``x`` of the opposite buffer, in the buffer's
iteration order, with ``z = x_t - x``. The difference ``z`` is a sorted sparse
merge of the two rows into scratch arrays (O(nnz(x_t) + nnz(x)), never a dense
vector except for CBR's BLAS calls); a dense row is a row whose indices are
``0 .. d-1``, so the same code serves dense and CSR input and gives bit-identical
sums (the extra zeros add exact zeros, in the same index order).

Rules (ALGORITHMS.md 3.1-3.3):

* ``OAM_SEQ`` (thesis Alg. 6, PA-I closed form of eq. 2.8, errata 9-10):
  ``l = 1 - y w.z``; if ``l > 0`` and ``||z|| > 0``: ``w += min(C_t, l/||z||^2) y z``.
* ``OAM_GRA`` (thesis Alg. 7): margins ``y w_t.z`` all at the frozen ``w_t``; each
  pair with margin ``<= 1`` adds ``C_t y z / 2``.
  Both use ``C_t = C max(1, M_opp^t / M_opp)`` (erratum 9).
* ``CBR`` (dissertation Sec. 4.3, Prop. 1, Alg. 6; errata 11-12): SCW-I on the pair,
  full covariance, ``Sigma z`` by BLAS ``dsymv`` and the rank-one ``dsyr`` update.
* ``CBR_DIAG`` (Sec. 4.4, Prop. 2; erratum 13): diagonal variance ``1/G``, every
  operation on the support of ``z`` only.

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
"""
import numpy as np

from libc.math cimport isfinite, sqrt
from libc.stdint cimport int32_t, int64_t
from scipy.linalg.cython_blas cimport daxpy, ddot, dsymv, dsyr

from aucopt._kernels._buffers cimport Buffers
from aucopt._kernels._rows cimport RowSource

cdef enum:
    RULE_OAM_SEQ = 0
    RULE_OAM_GRA = 1
    RULE_CBR = 2
    RULE_CBR_DIAG = 3

OAM_SEQ = RULE_OAM_SEQ
OAM_GRA = RULE_OAM_GRA
CBR = RULE_CBR
CBR_DIAG = RULE_CBR_DIAG
RULES = {"oam_seq": OAM_SEQ, "oam_gra": OAM_GRA, "cbr": CBR, "cbr_diag": CBR_DIAG}


cdef struct Model:
    int rule
    bint literal         # CBR: beta as printed; CBR-diag: Prop. 2 read literally
    double C
    double phi
    double psi
    double zeta
    Py_ssize_t d
    double* w            # ranking vector (w of OAM, mu of CBR), entry i at w[i * ws]
    double* var          # CBR-diag: diagonal variance 1/G, entry i at var[i * ws]
    double* xd           # the arriving row scattered, entry i at xd[i * ws]
    Py_ssize_t ws        # stride of the interleaved (w, [var,] xd) scratch; 1 for CBR
    double* S            # CBR: covariance, row-major d x d, lower triangle maintained
    double* zd           # CBR: dense z (kept all-zero between pairs)
    double* bd           # a buffered row scattered (all-zero between pairs)
    int64_t* mark        # mark[i] == stamp: feature i is in the arriving row
    double* Sz           # CBR: Sigma z
    double* zv           # sparse z: values
    int32_t* zi          # sparse z: indices
    double* marg         # OAM_gra: margins at the frozen w
    int64_t n_updates    # pairs that changed the model


cdef inline Py_ssize_t pair_diff(const double* av, const int32_t* ai, Py_ssize_t na,
                                 const double* bv, const int32_t* bi, Py_ssize_t nb,
                                 double* zv, int32_t* zi) noexcept nogil:
    """``z = a - b`` for two rows with sorted indices, as a sorted sparse vector."""
    cdef Py_ssize_t p = 0, q = 0, n = 0
    while p < na and q < nb:
        if ai[p] == bi[q]:
            zi[n] = ai[p]
            zv[n] = av[p] - bv[q]
            p += 1
            q += 1
        elif ai[p] < bi[q]:
            zi[n] = ai[p]
            zv[n] = av[p]
            p += 1
        else:
            zi[n] = bi[q]
            zv[n] = -bv[q]
            q += 1
        n += 1
    while p < na:
        zi[n] = ai[p]
        zv[n] = av[p]
        p += 1
        n += 1
    while q < nb:
        zi[n] = bi[q]
        zv[n] = -bv[q]
        q += 1
        n += 1
    return n


cdef inline double scw_alpha(double m, double v, Model* md) noexcept nogil:
    """SCW-I step ``alpha`` (Prop. 1/2): ``min(C, max(0, (-m psi + sqrt(m^2 phi^4/4
    + v phi^2 zeta)) / (v zeta)))``, computed without cancellation for ``m > 0``."""
    cdef double phi2 = md.phi * md.phi
    cdef double root = sqrt(m * m * phi2 * phi2 / 4.0 + v * phi2 * md.zeta)
    cdef double a
    if m > 0.0:
        a = (v * phi2 - m * m) / (v * (root + m * md.psi))
    else:
        a = (-m * md.psi + root) / (v * md.zeta)
    if a <= 0.0:
        return 0.0
    return a if a < md.C else md.C


cdef inline double scw_sqrt_u(double alpha, double v, double phi) noexcept nogil:
    """``sqrt(u)``, ``u = (-A + sqrt(A^2 + 4v))^2 / 4``, ``A = alpha v phi``, stably."""
    cdef double a = alpha * v * phi
    return 2.0 * v / (sqrt(a * a + 4.0 * v) + a)


cdef void cbr_pair(Model* md, Py_ssize_t nz, double y) noexcept nogil:
    """Prop. 1 (SCW-I, full covariance) for ``z`` in ``md.zv/zi``."""
    cdef int n = <int>md.d, one = 1
    cdef char uplo = b'U'       # Fortran upper = row-major lower triangle
    cdef double done = 1.0, dzero = 0.0, m, v, alpha, su, beta, c
    cdef Py_ssize_t k
    for k in range(nz):
        md.zd[md.zi[k]] = md.zv[k]
    dsymv(&uplo, &n, &done, md.S, &n, md.zd, &one, &dzero, md.Sz, &one)
    v = ddot(&n, md.zd, &one, md.Sz, &one)
    m = y * ddot(&n, md.zd, &one, md.w, &one)
    for k in range(nz):
        md.zd[md.zi[k]] = 0.0
    if not (v > 0.0 and isfinite(v)):
        return
    alpha = scw_alpha(m, v, md)
    if alpha <= 0.0:
        return
    su = scw_sqrt_u(alpha, v, md.phi)
    if md.literal:
        beta = alpha * md.phi / sqrt(su * su + v * alpha * md.phi)
    else:
        beta = alpha * md.phi / (su + v * alpha * md.phi)
    c = alpha * y
    daxpy(&n, &c, md.Sz, &one, md.w, &one)
    c = -beta
    dsyr(&uplo, &n, &c, md.Sz, &one, md.S, &n)
    md.n_updates += 1


cdef inline void arrival_stats(Model* md, const double* xv, const int32_t* xi,
                               Py_ssize_t nx, const double* g, double* wx,
                               double* xgx) noexcept nogil:
    """``w.x`` and ``sum_i g_i x_i^2`` (``g = NULL``: ``||x||^2``) of the arriving row."""
    cdef Py_ssize_t k, i
    wx[0] = 0.0
    xgx[0] = 0.0
    for k in range(nx):
        i = xi[k] * md.ws
        wx[0] += md.w[i] * xv[k]
        xgx[0] += xv[k] * xv[k] * (g[i] if g != NULL else 1.0)


cdef inline void row_stats(Model* md, const double* bv, const int32_t* bi, Py_ssize_t nb,
                           const double* g, double* wb, double* q) noexcept nogil:
    """One branch-free pass over a buffered row ``b``: ``w.b`` and
    ``sum g_i b_i (b_i - 2 x_i)`` with the arriving ``x`` scattered in ``md.xd``."""
    cdef Py_ssize_t k, i
    cdef double s_wb = 0.0, s_q = 0.0
    if g != NULL:
        for k in range(nb):
            i = bi[k] * md.ws
            s_wb += md.w[i] * bv[k]
            s_q += g[i] * bv[k] * (bv[k] - 2.0 * md.xd[i])
    else:
        for k in range(nb):
            i = bi[k] * md.ws
            s_wb += md.w[i] * bv[k]
            s_q += bv[k] * (bv[k] - 2.0 * md.xd[i])
    wb[0] = s_wb
    q[0] = s_q


cdef void apply_pair(Model* md, double c, double gain, const double* xv,
                     const int32_t* xi, Py_ssize_t nx, const double* bv,
                     const int32_t* bi, Py_ssize_t nb, int64_t stamp, double* wx,
                     double* xgx) noexcept nogil:
    """Update every coordinate of ``supp(z)``, ``z = x - b``, once:
    ``w_i += c z_i s_i`` and, for CBR-diag, ``s_i <- s_i / (1 + gain z_i^2 s_i)``
    (``s = 1`` for OAM). ``b`` is scattered into ``md.bd``; the coordinates of
    ``x`` (``md.mark[i] == stamp``) are visited first, then those only in ``b``;
    no merge. Each coordinate's update depends on its own ``z_i`` only, so the
    order does not change the result. ``w.x`` and ``x' D x`` of the arrival are
    kept current on the way (they change only on ``supp(x)``)."""
    cdef Py_ssize_t k, i, j
    cdef bint diag = md.rule == RULE_CBR_DIAG
    cdef double z, sk, snew, dw, dx = 0.0, dxx = 0.0
    for k in range(nb):
        md.bd[bi[k]] = bv[k]
    for k in range(nx):
        i = xi[k]
        j = i * md.ws
        z = xv[k] - md.bd[i]
        if diag:
            sk = md.var[j]
            dw = c * z * sk
            snew = sk / (1.0 + gain * z * z * sk)
            md.var[j] = snew
            dxx += (snew - sk) * xv[k] * xv[k]
        else:
            dw = c * z
        md.w[j] += dw
        dx += dw * xv[k]
    for k in range(nb):
        i = bi[k]
        md.bd[i] = 0.0
        if md.mark[i] == stamp:
            continue
        j = i * md.ws
        if diag:
            sk = md.var[j]
            md.w[j] -= c * bv[k] * sk
            md.var[j] = sk / (1.0 + gain * bv[k] * bv[k] * sk)
        else:
            md.w[j] -= c * bv[k]
    wx[0] += dx
    xgx[0] += dxx
    md.n_updates += 1


cdef bint cbr_diag_pair(Model* md, double m, double v, const double* xv,
                        const int32_t* xi, Py_ssize_t nx, const double* bv,
                        const int32_t* bi, Py_ssize_t nb, double y, int64_t stamp,
                        double* wx, double* xgx) noexcept nogil:
    """Prop. 2 (diagonal SCW-I) given ``m = y mu.z`` and ``v = z' diag(1/G) z``:
    precision form (default, erratum 13) or the printed ``beta`` (``literal``).
    Returns whether the model changed.

    The state is the diagonal variance ``s = 1 / G`` (``md.var``), which needs
    one division per touched coordinate instead of two: ``mu += alpha y z s``,
    and ``G += g z^2`` becomes ``s <- s / (1 + g z^2 s)`` with ``g = alpha phi /
    sqrt(u)`` (precision form) or the printed ``beta``.
    """
    cdef double alpha, su, gain
    alpha = scw_alpha(m, v, md)
    if alpha <= 0.0:
        return False
    su = scw_sqrt_u(alpha, v, md.phi)
    if md.literal:
        gain = alpha * md.phi / sqrt(su * su + v * alpha * md.phi)
    else:
        gain = alpha * md.phi / su
    apply_pair(md, alpha * y, gain, xv, xi, nx, bv, bi, nb, stamp, wx, xgx)
    return True


cdef void update_against(Model* md, Buffers B, int opp, const double* xv,
                         const int32_t* xi, Py_ssize_t nx, double y,
                         double c_t, int64_t stamp) noexcept nogil:
    """UpdateRanker / UpdateClassifier of the arriving row against buffer ``opp``.

    OAM_seq: PA-I on ``u = y z`` (thesis Alg. 6, eq. 2.8 as resolved, erratum 10):
    ``l = 1 - y w.z``; if ``l > 0``, ``||z|| > 0``: ``w += min(C_t, l/||z||^2) y z``.
    OAM_gra: margins at the frozen ``w_t`` first, then ``C_t y z / 2`` for each
    pair with margin ``<= 1`` (thesis Alg. 7).

    The arriving row is scattered into the dense scratch ``md.xd`` (and cleared
    after), so a pair's ``w.z = w.x - w.b`` and ``z' D z = x' D x + b' D b -
    2 b' D x`` (D = I for OAM, ``diag(1/G)`` for CBR-diag) cost one branch-free
    pass over the buffered row, O(nnz(b)); updates go through :func:`apply_pair`.
    A pair whose ``z' D z`` is below ``1e-12 (x' D x + b' D b)`` -- zero up to the
    rounding of this expansion -- is skipped (``z = 0``: nothing to learn, and the
    closed forms divide by ``z' D z``). CBR forms ``z`` by a sorted merge.
    """
    cdef Py_ssize_t k, j, g_slot, nb, nz, n = B.size(opp)
    cdef double wx = 0.0, xgx = 0.0, xx = 0.0, wb, q, m, v, tau
    cdef const double* bv
    cdef const int32_t* bi
    cdef const double* g = md.var if md.rule == RULE_CBR_DIAG else NULL
    if md.rule == RULE_CBR:
        for k in range(n):
            nb = B.row(B.slot(opp, k), &bv, &bi)
            nz = pair_diff(xv, xi, nx, bv, bi, nb, md.zv, md.zi)
            cbr_pair(md, nz, y)
        return
    for k in range(nx):
        md.xd[xi[k] * md.ws] = xv[k]
        md.mark[xi[k]] = stamp
        xx += xv[k] * xv[k]
    arrival_stats(md, xv, xi, nx, g, &wx, &xgx)
    if md.rule == RULE_OAM_GRA:
        for k in range(n):
            nb = B.row(B.slot(opp, k), &bv, &bi)
            row_stats(md, bv, bi, nb, NULL, &wb, &q)
            md.marg[k] = y * (wx - wb)
        for k in range(n):
            if md.marg[k] <= 1.0:
                nb = B.row(B.slot(opp, k), &bv, &bi)
                apply_pair(md, 0.5 * c_t * y, 0.0, xv, xi, nx, bv, bi, nb, stamp,
                           &wx, &xgx)
    else:
        for k in range(n):
            g_slot = B.slot(opp, k)
            nb = B.row(g_slot, &bv, &bi)
            if md.rule == RULE_CBR_DIAG and md.literal:
                # Prop. 2 as printed: v = sum z^2 / (G + C) = sum z^2 s / (1 + C s)
                nz = pair_diff(xv, xi, nx, bv, bi, nb, md.zv, md.zi)
                m = 0.0
                v = 0.0
                for j in range(nz):
                    m += md.w[md.zi[j] * md.ws] * md.zv[j]
                    tau = md.var[md.zi[j] * md.ws]
                    v += md.zv[j] * md.zv[j] * tau / (1.0 + md.C * tau)
                if v > 0.0 and isfinite(v):
                    cbr_diag_pair(md, y * m, v, xv, xi, nx, bv, bi, nb, y, stamp,
                                  &wx, &xgx)
                continue
            row_stats(md, bv, bi, nb, g, &wb, &q)
            v = xgx + q
            # (x'Dx + b'Db <= ||x||^2 + ||b||^2 since every 1/G_i <= 1)
            if not (v > 1e-12 * (xx + B.sqnorm(g_slot))):
                continue
            m = y * (wx - wb)
            if md.rule == RULE_OAM_SEQ:
                if m < 1.0:
                    tau = (1.0 - m) / v
                    apply_pair(md, (tau if tau < c_t else c_t) * y, 0.0, xv, xi, nx,
                               bv, bi, nb, stamp, &wx, &xgx)
            else:
                cbr_diag_pair(md, m, v, xv, xi, nx, bv, bi, nb, y, stamp, &wx, &xgx)
    for k in range(nx):
        md.xd[xi[k] * md.ws] = 0.0


def run_arrivals(RowSource X, const double[::1] y, Buffers B, int rule, double C,
                 double phi, bint literal, double[::1] w, double[::1] var,
                 double[:, ::1] S, const double[:, ::1] draws, Py_ssize_t start,
                 int64_t t0):
    """Process rows ``start ..`` of ``X`` as arrivals ``t0 + i`` (ALGORITHMS.md 3).

    Parameters
    ----------
    X : RowSource
    y : labels in {-1, +1}
    B : Buffers, updated in place
    rule : one of ``OAM_SEQ``, ``OAM_GRA``, ``CBR``, ``CBR_DIAG``
    C : penalty (C of Alg. 4; OAM scales it to ``C_t``)
    phi : ``Phi^{-1}(eta)`` (CBR rules)
    literal : CBR: ``beta`` as printed in Prop. 1; CBR-diag: Prop. 2 as printed
    w : ranking vector, updated in place
    var : CBR-diag diagonal variance ``1/G`` (length d), else any length-1 array
    S : CBR covariance (d x d, lower triangle in row-major order maintained), else
        any (1, 1) array
    draws : (n, 2) uniforms ``(u, r)`` per row for a reservoir (ignored for FIFO)
    start : first row to process
    t0 : arrival index of row 0

    Returns
    -------
    (stop, n_updates) : ``stop == n`` when every row was processed; otherwise
    the sparse pool must grow (``B.grow()``) before resuming at ``stop``.
    """
    cdef Py_ssize_t n = X.n_rows, d = X.n_features, i, nx
    cdef const double* xv
    cdef const int32_t* xi
    cdef int cls, code
    cdef double c_t
    cdef Model md
    if y.shape[0] != n:
        raise ValueError("y and X differ in length")
    if w.shape[0] != d or B.n_features != d:
        raise ValueError("w, buffers and X differ in the number of features")
    if B.reservoir and draws.shape[0] != n:
        raise ValueError("a reservoir needs one (u, r) draw pair per row")
    if rule not in (OAM_SEQ, OAM_GRA, CBR, CBR_DIAG):
        raise ValueError(f"unknown rule {rule}")
    if rule == CBR_DIAG and var.shape[0] != d:
        raise ValueError("var must have one entry per feature")
    if rule == CBR and (S.shape[0] != d or S.shape[1] != d):
        raise ValueError("S must be d x d")
    zv_arr = np.zeros(d)
    zi_arr = np.zeros(d, dtype=np.int32)
    zd_arr = np.zeros(d if rule == CBR else 1)
    bd_arr = np.zeros(d)
    mark_arr = np.zeros(d, dtype=np.int64)
    sz_arr = np.zeros(d if rule == CBR else 1)
    marg_arr = np.zeros(B.capacity)
    cdef double[::1] zv = zv_arr, zd = zd_arr, sz = sz_arr, marg = marg_arr, bd = bd_arr
    cdef int64_t[::1] mark = mark_arr
    cdef int32_t[::1] zi = zi_arr
    md.rule = rule
    md.literal = literal
    md.C = C
    md.phi = phi
    md.psi = 1.0 + phi * phi / 2.0
    md.zeta = 1.0 + phi * phi
    md.d = d
    # w, (1/G,) and the scattered arrival interleaved per feature: the loads of
    # one coordinate share a cache line (CBR keeps w contiguous for BLAS)
    cdef Py_ssize_t ws = 1 if rule == CBR else (3 if rule == CBR_DIAG else 2)
    wv_arr = np.zeros((d if rule != CBR else 1, ws))
    if rule != CBR:
        wv_arr[:, 0] = w
        if rule == CBR_DIAG:
            wv_arr[:, 1] = var
    cdef double[:, ::1] wv = wv_arr
    md.ws = ws
    if rule == CBR:
        md.w = &w[0]
        md.var = &var[0]
        md.xd = &wv[0, 0]
    else:
        md.w = &wv[0, 0]
        md.var = &wv[0, 1] if rule == CBR_DIAG else NULL
        md.xd = &wv[0, ws - 1]
    md.S = &S[0, 0]
    md.zd = &zd[0]
    md.bd = &bd[0]
    md.mark = &mark[0]
    md.Sz = &sz[0]
    md.zv = &zv[0]
    md.zi = &zi[0]
    md.marg = &marg[0]
    md.n_updates = 0
    with nogil:
        for i in range(start, n):
            cls = 1 if y[i] > 0.0 else 0
            nx = X.row(i, &xv, &xi)
            if B.reservoir:
                code = B.push(cls, xv, xi, nx, draws[i, 0], draws[i, 1], t0 + i)
            else:
                code = B.push(cls, xv, xi, nx, 0.0, 0.0, t0 + i)
            if code < 0:
                break
            c_t = C
            if rule == RULE_OAM_SEQ or rule == RULE_OAM_GRA:
                # C_t = C max(1, M_opp^t / M_opp) (erratum 9)
                c_t = B.received(1 - cls) / <double>B.capacity
                c_t = C * (c_t if c_t > 1.0 else 1.0)
            update_against(&md, B, 1 - cls, xv, xi, nx, y[i], c_t, i + 1)
        else:
            i = n
    if rule != CBR:
        np.asarray(w)[:] = wv_arr[:, 0]
    if rule == CBR_DIAG:
        np.asarray(var)[:] = wv_arr[:, 1]
    return i, md.n_updates


def symmetrize(double[:, ::1] S):
    """Copy the maintained lower triangle (row-major) of ``S`` onto its upper one."""
    cdef Py_ssize_t i, j, d = S.shape[0]
    with nogil:
        for i in range(d):
            for j in range(i + 1, d):
                S[i, j] = S[j, i]
