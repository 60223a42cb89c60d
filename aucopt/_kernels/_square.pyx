# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Square-loss and saddle-point learners (ALGORITHMS.md sections 4 and 5): the loops.

One loop per piece of shared math, over the shared row source (dense and CSR rows
in one form, so both give bit-identical results):

* :func:`opauc_steps` -- OPAUC (O Alg. 1, eqs. 3-5) and AdaOAM (N Alg. 9): the
  exact square-loss gradient from the opposite class's sum and sum of outer
  products (upper triangle, rank-1 update over the row's nonzeros, O(nnz^2));
  the covariance product through BLAS ``dsymv`` (O(d^2));
* :func:`opaucr_steps` -- OPAUCr (O eqs. 6-11, errata 21-22) with the weight
  vector kept in factored form, so a step costs O(nnz tau + tau^2) and never
  touches a dense d-vector or a d x tau matrix (see the function docstring);
* :func:`uniexp_steps` -- online Uni-Exp (ALGORITHMS.md 4.4, reconstruction);
* :func:`saddle_coef` -- the x-coefficient of the gradient of SOLAM's function F
  (N eq. 2.23), shared by SOLAM (N Alg. 10 / 18) and SPAM (N Alg. 20);
* :func:`solam_steps`, :func:`spam_steps` -- their loops (O(nnz) per step with
  the scaled weight vector; SPAM-NET's soft-threshold is O(d));
* :func:`spdam_dual` -- SPDAM's mini-batch dual step (N Alg. 21, erratum 34:
  on the transformed rows, centred implicitly so CSR rows stay sparse).
"""
import numpy as np

from libc.math cimport exp, sqrt, fabs
from libc.stdint cimport int32_t, int64_t
from scipy.linalg.cython_blas cimport ddot, daxpy, dsymv, dgemv, dscal

from aucopt._kernels._rows cimport RowSource
from aucopt._kernels._weights cimport WeightVector

cdef double EXP_CLIP = 30.0


cdef inline double row_dot(const double* w, const double* vals, const int32_t* ind,
                           Py_ssize_t nnz) noexcept nogil:
    """``w . x`` for a plain dense ``w``."""
    cdef Py_ssize_t k
    cdef double s = 0.0
    for k in range(nnz):
        s += w[ind[k]] * vals[k]
    return s


cdef inline double row_sq(const double* vals, Py_ssize_t nnz) noexcept nogil:
    """``||x||^2`` summed in row order (the same bits for dense and CSR rows)."""
    cdef Py_ssize_t k
    cdef double s = 0.0
    for k in range(nnz):
        s += vals[k] * vals[k]
    return s


cdef inline void row_axpy(double c, const double* vals, const int32_t* ind,
                          Py_ssize_t nnz, double* w) noexcept nogil:
    """``w <- w + c x`` for a plain dense ``w``."""
    cdef Py_ssize_t k
    for k in range(nnz):
        w[ind[k]] += c * vals[k]


# ----------------------------------------------------------------------------- statistics


def class_sums(RowSource X, const double[::1] y, double[::1] counts, double[:, ::1] sums):
    """Add each row to its class's count and sum (index 0 = negative, 1 = positive).

    The class means and positive rate of SPAM / SPDAM come from these; summing
    row by row gives the same bits for dense and CSR input.
    """
    cdef Py_ssize_t i, nnz
    cdef const double* vals
    cdef const int32_t* ind
    cdef int cls
    with nogil:
        for i in range(X.n_rows):
            nnz = X.row(i, &vals, &ind)
            cls = 1 if y[i] > 0 else 0
            counts[cls] += 1.0
            row_axpy(1.0, vals, ind, nnz, &sums[cls, 0])


def max_centred_norm(RowSource X, const double[::1] y, const double[::1] m_pos,
                     const double[::1] m_neg, double inv_pos, double inv_neg):
    """``max_i ||(x_i - m_y) inv_y||`` without forming the centred rows.

    With zero means and unit factors this is ``kappa = max_i ||x_i||`` (SOLAM's
    bounds, N Alg. 10); with the class means it is SPDAM's ``kappa`` for the
    transformed rows (N eq. 5.7, Thm 5.1).
    """
    cdef Py_ssize_t i, nnz
    cdef const double* vals
    cdef const int32_t* ind
    cdef double mp2 = 0.0, mn2 = 0.0, best = 0.0, val, inv
    cdef Py_ssize_t j
    for j in range(m_pos.shape[0]):
        mp2 += m_pos[j] * m_pos[j]
        mn2 += m_neg[j] * m_neg[j]
    with nogil:
        for i in range(X.n_rows):
            nnz = X.row(i, &vals, &ind)
            if y[i] > 0:
                val = row_sq(vals, nnz) - 2.0 * row_dot(&m_pos[0], vals, ind, nnz) + mp2
                inv = inv_pos
            else:
                val = row_sq(vals, nnz) - 2.0 * row_dot(&m_neg[0], vals, ind, nnz) + mn2
                inv = inv_neg
            val = val * inv * inv
            if val > best:
                best = val
    return sqrt(best)


# ----------------------------------------------------------------------------- OPAUC


def opauc_steps(RowSource X, const double[::1] y, double[::1] w,
                double[::1] counts, double[:, ::1] sums, double[:, :, ::1] sxx,
                double eta, double lam, double[::1] grad,
                double[::1] ada=None, double delta=0.5, double radius=0.0):
    """OPAUC / AdaOAM steps over the rows of ``X`` in order (O Alg. 1; N Alg. 9).

    Class statistics (index 0 = negative, 1 = positive): ``counts[c] = T_c``,
    ``sums[c] = sum x`` and ``sxx[c] = sum x x^T`` (upper triangle in C order,
    i.e. BLAS 'L' in Fortran order). For a row ``x`` of label ``y`` the own
    class's statistics are updated, then, if the opposite class ``o`` has
    ``T = T_o > 0`` rows, the gradient of O eq. (4)/(5) at the current ``w``::

        c = sums[o] / T,  k = (x - c).w
        g = lam w + S w + (k - y)(x - c),   S w = sxx[o] w / T - c (c.w)

    (``L_t = 0`` while ``T_o = 0``: no step, O Sec. 3). OPAUC: ``w <- w - eta g``.
    AdaOAM (``ada`` given, the running sum of squared gradients, ALGORITHMS.md
    4.3, erratum 23): ``ada += g^2``, ``w <- w - eta g / (delta + sqrt(ada))``,
    then the Euclidean projection onto ``||w|| <= radius``. ``grad`` (length d)
    receives the last gradient (scratch space).
    """
    cdef Py_ssize_t n = X.n_rows, d = X.n_features
    cdef Py_ssize_t i, a, b, j, nnz
    cdef const double* vals
    cdef const int32_t* ind
    cdef double* row
    cdef double* wp = &w[0]
    cdef double* gp = &grad[0]
    cdef double* adap = NULL
    cdef int cls, o, dn = <int>d, one = 1
    cdef double yt, T, cw, xw, k, va, alpha, zero = 0.0, coef, nrm
    cdef char uplo = b'L'
    if ada is not None:
        adap = &ada[0]
    with nogil:
        for i in range(n):
            nnz = X.row(i, &vals, &ind)
            yt = y[i]
            cls = 1 if yt > 0 else 0
            o = 1 - cls
            # own-class statistics (O Alg. 1 lines 4-6 / 9-11)
            counts[cls] += 1.0
            row_axpy(1.0, vals, ind, nnz, &sums[cls, 0])
            for a in range(nnz):
                va = vals[a]
                row = &sxx[cls, ind[a], 0]
                for b in range(a, nnz):
                    row[ind[b]] += va * vals[b]
            T = counts[o]
            if T == 0.0:
                continue
            # gradient from the opposite class (O eqs. 4-5)
            cw = ddot(&dn, &sums[o, 0], &one, wp, &one) / T
            xw = row_dot(wp, vals, ind, nnz)
            k = xw - cw
            alpha = 1.0 / T
            dsymv(&uplo, &dn, &alpha, &sxx[o, 0, 0], &dn, wp, &one, &zero, gp, &one)
            daxpy(&dn, &lam, wp, &one, gp, &one)
            coef = -(cw + k - yt) / T
            daxpy(&dn, &coef, &sums[o, 0], &one, gp, &one)
            row_axpy(k - yt, vals, ind, nnz, gp)
            if adap == NULL:
                coef = -eta
                daxpy(&dn, &coef, gp, &one, wp, &one)
            else:
                nrm = 0.0
                for j in range(d):
                    adap[j] += gp[j] * gp[j]
                    wp[j] -= eta * gp[j] / (delta + sqrt(adap[j]))
                    nrm += wp[j] * wp[j]
                if nrm > radius * radius:
                    coef = radius / sqrt(nrm)
                    dscal(&dn, &coef, wp, &one)


# ----------------------------------------------------------------------------- OPAUCr

# layout of the scalar state of opaucr_steps
cdef enum:
    R_SIGMA = 0      # scale of v
    R_B0 = 1         # b_0, b_1: coefficients of s_0, s_1
    R_VS0 = 3        # v.s_0, v.s_1
    R_SS = 5         # s_c.s_e at 5 + 2c + e
    R_LEN = 9

OPAUCR_STATE_LEN = R_LEN


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


def opaucr_steps(RowSource X, const double[::1] y, const double[:, ::1] rho,
                 double[::1] v, double[:, :, ::1] Z, double[:, ::1] s, double[:, ::1] q,
                 double[::1] counts, double[:, ::1] acoef, double[:, ::1] Zv,
                 double[:, :, ::1] Zs, double[:, :, :, ::1] G, double[::1] st,
                 double eta, double lam, double[:, ::1] work):
    """OPAUCr steps in factored form (O Sec. 3 eqs. 6-11; ALGORITHMS.md 4.2, errata 21-22).

    Per class ``c`` (0 = negative, 1 = positive) the sketch is ``Z_c = sum x r^T``,
    ``q_c = sum r``, ``s_c = sum x`` and ``T_c`` rows, with ``r = rho[i]`` the row's
    draw from N(0, I/tau) (erratum 21: scale 1/sqrt(tau), so E[R R^T] = I). The
    covariance estimate is the centred sketch (erratum 22)::

        S_hat_c w = Zc (Zc^T w) / T_c,   Zc = Z_c - m_c q_c^T,  m_c = s_c / T_c

    and the step is OPAUC's with ``S_hat`` for ``S``. The weight vector is never
    stored densely; it is ``w = sigma v + Z_0 a_0 + Z_1 a_1 + b_0 s_0 + b_1 s_1``,
    because the gradient ``lam w + S_hat_o w + (k - y)(x - m_o)`` is ``w``
    scaled, a combination of ``Z_o``'s columns, ``s_o`` and ``x``. Adding a row
    to ``Z_c``/``s_c`` would change ``w`` by ``x ((r.a_c) + b_c)``: ``v`` takes the
    opposite sparse update, so ``w`` is unchanged. Everything a step reads is kept
    up to date in O(nnz tau + tau^2): ``Zv[c] = Z_c^T v``, ``Zs[c, e] = Z_c^T s_e``,
    ``G[c, e] = Z_c^T Z_e``, and in ``st``: sigma, b_0, b_1, v.s_0, v.s_1 and
    s_c.s_e. ``work`` is (4, tau) scratch. Use :func:`opaucr_coef` for the dense ``w``.
    """
    cdef Py_ssize_t n = X.n_rows, tau = Z.shape[2]
    cdef Py_ssize_t i, kk, j, e, nnz
    cdef const double* vals
    cdef const int32_t* ind
    cdef const double* r
    cdef double* zrow
    cdef double* xz0 = &work[0, 0]
    cdef double* xz1 = &work[1, 0]
    cdef double* u = &work[2, 0]
    cdef double* xz[2]
    cdef double xs[2]
    cdef double yt, xx, xv, va, gam, wx, ws, T, cw, kdiff, qu, shrink, ra
    cdef int c, o
    xz[0] = xz0
    xz[1] = xz1
    with nogil:
        for i in range(n):
            nnz = X.row(i, &vals, &ind)
            yt = y[i]
            c = 1 if yt > 0 else 0
            o = 1 - c
            r = &rho[i, 0]
            xx = row_sq(vals, nnz)
            # x^T Z_e, x.s_e, x.v
            for e in range(2):
                for j in range(tau):
                    xz[e][j] = 0.0
                xs[e] = 0.0
                for kk in range(nnz):
                    va = vals[kk]
                    zrow = &Z[e, ind[kk], 0]
                    for j in range(tau):
                        xz[e][j] += va * zrow[j]
                    xs[e] += va * s[e, ind[kk]]
            xv = row_dot(&v[0], vals, ind, nnz)
            # (A) add x to class c's sketch; Z_c^T v, Z^T s, Z^T Z, s.s, v.s follow
            ra = tdot(r, &acoef[c, 0], tau) + st[R_B0 + c]
            taxpy(xv, r, &Zv[c, 0], tau)
            for j in range(tau):
                Zs[c, c, j] += xz[c][j] + r[j] * (xs[c] + xx)
                Zs[c, o, j] += r[j] * xs[o]
                Zs[o, c, j] += xz[o][j]
            for j in range(tau):
                for kk in range(tau):
                    G[c, c, j, kk] += xz[c][j] * r[kk] + r[j] * xz[c][kk] + xx * r[j] * r[kk]
                    G[c, o, j, kk] += r[j] * xz[o][kk]
                    G[o, c, j, kk] += xz[o][j] * r[kk]
            st[R_SS + 3 * c] += 2.0 * xs[c] + xx
            st[R_SS + 1] += xs[o]
            st[R_SS + 2] = st[R_SS + 1]
            st[R_VS0 + c] += xv
            taxpy(xx, r, xz[c], tau)
            xs[c] += xx
            for kk in range(nnz):
                taxpy(vals[kk], r, &Z[c, ind[kk], 0], tau)
            row_axpy(1.0, vals, ind, nnz, &s[c, 0])
            taxpy(1.0, r, &q[c, 0], tau)
            counts[c] += 1.0
            # keep w unchanged: v <- v - (ra / sigma) x
            gam = -ra / st[R_SIGMA]
            for e in range(2):
                taxpy(gam, xz[e], &Zv[e, 0], tau)
                st[R_VS0 + e] += gam * xs[e]
            xv += gam * xx
            row_axpy(gam, vals, ind, nnz, &v[0])
            # (B) gradient step with the opposite class's sketch
            T = counts[o]
            if T == 0.0:
                continue
            wx = st[R_SIGMA] * xv
            ws = st[R_SIGMA] * st[R_VS0 + o]
            for j in range(tau):
                u[j] = st[R_SIGMA] * Zv[o, j]
            for e in range(2):
                wx += tdot(xz[e], &acoef[e, 0], tau) + st[R_B0 + e] * xs[e]
                ws += tdot(&Zs[e, o, 0], &acoef[e, 0], tau) + st[R_B0 + e] * st[R_SS + 2 * e + o]
                taxpy(st[R_B0 + e], &Zs[o, e, 0], u, tau)
                for j in range(tau):
                    u[j] += tdot(&G[o, e, j, 0], &acoef[e, 0], tau)
            cw = ws / T
            kdiff = wx - cw - yt
            # u = Zc^T w = Z_o^T w - q_o (m_o.w)
            taxpy(-cw, &q[o, 0], u, tau)
            qu = tdot(&q[o, 0], u, tau)
            shrink = 1.0 - eta * lam
            st[R_SIGMA] *= shrink
            for e in range(2):
                st[R_B0 + e] *= shrink
                for j in range(tau):
                    acoef[e, j] *= shrink
            taxpy(-eta / T, u, &acoef[o, 0], tau)
            st[R_B0 + o] += eta * (qu / T + kdiff) / T
            gam = -eta * kdiff / st[R_SIGMA]
            for e in range(2):
                taxpy(gam, xz[e], &Zv[e, 0], tau)
                st[R_VS0 + e] += gam * xs[e]
            row_axpy(gam, vals, ind, nnz, &v[0])
            if fabs(st[R_SIGMA]) < 1e-9:
                _opaucr_fold(v, Zv, st)


cdef void _opaucr_fold(double[::1] v, double[:, ::1] Zv, double[::1] st) noexcept nogil:
    """Fold sigma into v (O(d), rare)."""
    cdef Py_ssize_t j
    cdef double sg = st[R_SIGMA]
    for j in range(v.shape[0]):
        v[j] *= sg
    for j in range(Zv.shape[1]):
        Zv[0, j] *= sg
        Zv[1, j] *= sg
    st[R_VS0] *= sg
    st[R_VS0 + 1] *= sg
    st[R_SIGMA] = 1.0


def opaucr_coef(double[::1] v, double[:, :, ::1] Z, double[:, ::1] s,
                double[:, ::1] acoef, double[::1] st, double[::1] out):
    """``out = sigma v + Z_0 a_0 + Z_1 a_1 + b_0 s_0 + b_1 s_1`` (O(d tau), BLAS dgemv)."""
    cdef int dn = <int>Z.shape[1], tn = <int>Z.shape[2], one = 1
    cdef double alpha = 1.0, beta = 1.0, coef
    cdef char trans = b'T'
    cdef Py_ssize_t j, e
    for j in range(v.shape[0]):
        out[j] = st[R_SIGMA] * v[j]
    if tn == 0:
        return
    for e in range(2):
        # Z_e is (d, tau) in C order = (tau, d) in Fortran order: out += Z_e a_e
        dgemv(&trans, &tn, &dn, &alpha, &Z[e, 0, 0], &tn, &acoef[e, 0], &one,
              &beta, &out[0], &one)
        coef = st[R_B0 + e]
        daxpy(&dn, &coef, &s[e, 0], &one, &out[0], &one)


# ----------------------------------------------------------------------------- Uni-Exp


def uniexp_steps(RowSource X, const double[::1] y, WeightVector w, double[::1] counts,
                 int64_t t, double eta):
    """Online Uni-Exp (ALGORITHMS.md 4.4; reconstruction, erratum 25) over the rows in order.

    With ``T_y`` the running count of the row's class and ``t`` the step::

        w <- w + eta (t / T_y) y exp(min(-y w.x, 30)) x

    (the inverse running class prior weights the two classes' exponential losses
    equally, Kotlowski et al. 2011). O(nnz) per step. Returns the new ``t``.
    """
    cdef Py_ssize_t i, nnz, n = X.n_rows
    cdef const double* vals
    cdef const int32_t* ind
    cdef double yt, m
    cdef int cls
    with nogil:
        for i in range(n):
            nnz = X.row(i, &vals, &ind)
            yt = y[i]
            cls = 1 if yt > 0 else 0
            t += 1
            counts[cls] += 1.0
            m = -yt * w.dot(vals, ind, nnz)
            if m > EXP_CLIP:
                m = EXP_CLIP
            w.add(eta * (<double>t / counts[cls]) * yt * exp(m), vals, ind, nnz, 0.0, 0.0)
    return t


# ----------------------------------------------------------------------------- SOLAM / SPAM


cdef inline double saddle_coef(double yt, double sx, double a, double b, double alpha,
                               double p) noexcept nogil:
    """x-coefficient of d/dw F(w, a, b, alpha; (x, y)) at ``w.x = sx`` (N eq. 2.23).

    ``y = +1``: ``2(1-p)(sx - a) - 2(1+alpha)(1-p)``;
    ``y = -1``: ``2p(sx - b) + 2(1+alpha)p`` (ALGORITHMS.md section 5).
    """
    if yt > 0:
        return 2.0 * (1.0 - p) * (sx - a) - 2.0 * (1.0 + alpha) * (1.0 - p)
    return 2.0 * p * (sx - b) + 2.0 * (1.0 + alpha) * p


def py_saddle_coef(double yt, double sx, double a, double b, double alpha, double p):
    """Python access to :func:`saddle_coef` (tests)."""
    return saddle_coef(yt, sx, a, b, alpha, p)


# layout of SOLAM's scalar state
cdef enum:
    S_T = 0
    S_NPOS = 1
    S_A = 2
    S_B = 3
    S_ALPHA = 4
    S_ABAR = 5
    S_BBAR = 6
    S_ALPHABAR = 7
    S_GBAR = 8
    S_SQNORM = 9
    S_LEN = 10

SOLAM_STATE_LEN = S_LEN


cdef inline double clip(double x, double lim) noexcept nogil:
    if x > lim:
        return lim
    if x < -lim:
        return -lim
    return x


def solam_steps(RowSource X, const double[::1] y, WeightVector w, double[::1] st,
                double eta, double lam, double R, double kappa):
    """SOLAM / regSOLAM steps over the rows in order (N Alg. 10 and 18; ALGORITHMS.md 5.1-5.2).

    ``gamma_t = eta / sqrt(t)`` (erratum 27), ``p_hat`` the running positive rate.
    The gamma-weighted averages take the pre-update iterate (as N Alg. 10 prints);
    ``w``'s average is the weight vector's lazy average (``snapshot(gamma_t)``).
    Gradients of F at ``(w, a, b, alpha)``: ``dw = saddle_coef * x + lam w`` (regSOLAM's
    ``lam/2 ||w||^2``), ``da``, ``db`` descend, ``dalpha`` ascends (erratum 26).
    Projections: ``||w|| <= R``, ``|a|, |b| <= R kappa``, ``|alpha| <= 2 R kappa``.
    ``||w||^2`` is maintained in ``st`` (so the projection is O(1)); a step is O(nnz).
    """
    cdef Py_ssize_t i, nnz, n = X.n_rows
    cdef const double* vals
    cdef const int32_t* ind
    cdef double yt, t, p, gam, sx, c, da, db, dalpha, shrink, wx, f, gbar
    with nogil:
        for i in range(n):
            nnz = X.row(i, &vals, &ind)
            yt = y[i]
            st[S_T] += 1.0
            t = st[S_T]
            if yt > 0:
                st[S_NPOS] += 1.0
            p = st[S_NPOS] / t
            gam = eta / sqrt(t)
            # gamma-weighted averages of the pre-update iterate
            w.snapshot(gam)
            gbar = st[S_GBAR] + gam
            st[S_ABAR] += gam / gbar * (st[S_A] - st[S_ABAR])
            st[S_BBAR] += gam / gbar * (st[S_B] - st[S_BBAR])
            st[S_ALPHABAR] += gam / gbar * (st[S_ALPHA] - st[S_ALPHABAR])
            st[S_GBAR] = gbar
            sx = w.dot(vals, ind, nnz)
            c = saddle_coef(yt, sx, st[S_A], st[S_B], st[S_ALPHA], p)
            if yt > 0:
                da = -2.0 * (1.0 - p) * (sx - st[S_A])
                db = 0.0
                dalpha = -2.0 * (1.0 - p) * sx - 2.0 * p * (1.0 - p) * st[S_ALPHA]
            else:
                da = 0.0
                db = -2.0 * p * (sx - st[S_B])
                dalpha = 2.0 * p * sx - 2.0 * p * (1.0 - p) * st[S_ALPHA]
            shrink = 1.0 - gam * lam
            if shrink != 1.0:
                w.scale_by(shrink)
                st[S_SQNORM] *= shrink * shrink
            wx = sx * shrink
            w.add(-gam * c, vals, ind, nnz, 0.0, 0.0)
            st[S_SQNORM] += -2.0 * gam * c * wx + gam * gam * c * c * row_sq(vals, nnz)
            st[S_A] = clip(st[S_A] - gam * da, R * kappa)
            st[S_B] = clip(st[S_B] - gam * db, R * kappa)
            st[S_ALPHA] = clip(st[S_ALPHA] + gam * dalpha, 2.0 * R * kappa)
            if st[S_SQNORM] > R * R:
                f = R / sqrt(st[S_SQNORM])
                w.scale_by(f)
                st[S_SQNORM] = R * R


def spam_steps(RowSource X, const double[::1] y, const int64_t[::1] order, WeightVector w,
               const double[::1] m_pos, const double[::1] m_neg, double p,
               double[::1] st, double beta, double beta1, double eta, double t0,
               bint invsqrt):
    """SPAM-L2 / SPAM-NET steps over ``X[order]`` (N Alg. 20, Sec. 4.3; ALGORITHMS.md 5.4).

    ``st = [t, w.m+, w.m-]``. Per step, with the closed-form inner variables
    ``a = w.m+``, ``b = w.m-``, ``alpha = b - a`` (N eqs. 4.5-4.6)::

        w_hat = w - eta_t saddle_coef(y, w.x, a, b, alpha, p) x
        SPAM-L2 : w = w_hat / (1 + eta_t beta)                        O(nnz)
        SPAM-NET: w = soft(w_hat, eta_t beta1) / (1 + eta_t beta)     O(d) (erratum in 5.4(7))

    ``eta_t = eta / (beta (t + t0))`` or, with ``invsqrt``, ``eta / sqrt(t + t0)``
    (erratum 30). The cached ``w.m+-`` follow the axpy through ``x.m+-`` (O(nnz))
    and the scaling; SPAM-NET recomputes them in its dense pass.
    """
    cdef Py_ssize_t k, i, j, nnz, n = order.shape[0], d = X.n_features
    cdef const double* vals
    cdef const int32_t* ind
    cdef double yt, t, et, c, a, b, sx, f, thr, vj, wmp, wmn
    cdef double* vp
    with nogil:
        for k in range(n):
            i = order[k]
            nnz = X.row(i, &vals, &ind)
            yt = y[i]
            st[0] += 1.0
            t = st[0]
            if invsqrt:
                et = eta / sqrt(t + t0)
            else:
                et = eta / (beta * (t + t0))
            a = st[1]
            b = st[2]
            sx = w.dot(vals, ind, nnz)
            c = -et * saddle_coef(yt, sx, a, b, b - a, p)
            w.add(c, vals, ind, nnz, 0.0, 0.0)
            f = 1.0 / (1.0 + et * beta)
            if beta1 == 0.0:
                st[1] = (a + c * row_dot(&m_pos[0], vals, ind, nnz)) * f
                st[2] = (b + c * row_dot(&m_neg[0], vals, ind, nnz)) * f
                w.scale_by(f)
            else:
                w.fold()
                vp = w.v
                thr = et * beta1
                wmp = 0.0
                wmn = 0.0
                for j in range(d):
                    vj = vp[j]
                    if vj > thr:
                        vj = (vj - thr) * f
                    elif vj < -thr:
                        vj = (vj + thr) * f
                    else:
                        vj = 0.0
                    vp[j] = vj
                    wmp += vj * m_pos[j]
                    wmn += vj * m_neg[j]
                st[1] = wmp
                st[2] = wmn


# ----------------------------------------------------------------------------- SPDAM


def spdam_dual(RowSource X, const int64_t[::1] batch, const double[::1] y,
               const double[::1] wbar, double[::1] beta, double wm_pos, double wm_neg,
               double inv_pos, double inv_neg, double sigma, double[::1] dx,
               double[::1] dsum):
    """SPDAM's dual step on a mini-batch (N Alg. 21; ALGORITHMS.md 5.5, erratum 34).

    The transformed row is ``xt_i = (x_i - m_y) * inv_y`` (``inv_y`` = 1/sqrt(p_y)
    or 1/sqrt(2 p_y)), never formed: ``wbar.xt_i = (wbar.x_i - wbar.m_y) inv_y``.
    For ``i`` in ``batch``::

        beta_i' = (sigma wbar.xt_i + beta_i) / (sigma + 1)      (closed-form argmax)
        dx     += (beta_i' - beta_i) inv_y x_i                   (sparse)
        dsum[y] += (beta_i' - beta_i) inv_y

    so that ``sum_I (beta_i' - beta_i) xt_i = dx - m+ dsum[1] - m- dsum[0]``.
    ``dx`` and ``dsum`` are accumulated into (zero them first).
    """
    cdef Py_ssize_t k, i, nnz, n = batch.shape[0]
    cdef const double* vals
    cdef const int32_t* ind
    cdef double inv, wm, z, nb, dlt
    cdef int cls
    with nogil:
        for k in range(n):
            i = batch[k]
            nnz = X.row(i, &vals, &ind)
            cls = 1 if y[i] > 0 else 0
            inv = inv_pos if cls == 1 else inv_neg
            wm = wm_pos if cls == 1 else wm_neg
            z = (row_dot(&wbar[0], vals, ind, nnz) - wm) * inv
            nb = (sigma * z + beta[i]) / (sigma + 1.0)
            dlt = (nb - beta[i]) * inv
            beta[i] = nb
            row_axpy(dlt, vals, ind, nnz, &dx[0])
            dsum[cls] += dlt
