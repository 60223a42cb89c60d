# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Saddle-point learners (Ying, Wen & Lyu 2016; Natole, Ying & Lyu 2018): the loops.

The square-loss AUC objective rewritten as ``E[F(w, a, b, alpha; z)]`` with
``F`` of Ying et al.; every loop reads rows through the
shared :class:`RowSource` and keeps ``w`` in the weight primitive
:class:`aucopt._kernels._weights.Weights`:

* :func:`saddle_coef` -- the x-coefficient of ``d/dw F``, shared by SOLAM and SPAM;
* :func:`solam_steps` -- SOLAM / regSOLAM over a :class:`SolamState`:
  O(nnz) per step, the projection O(1) through the maintained ``||w||^2``, the
  gamma-weighted average the exact lazy one of the primitive;
* :func:`spam_l2_steps`, :func:`spam_net_steps` -- SPAM-L2 (O(nnz) per step, the
  closed-form ``a = w.m+``, ``b = w.m-`` of a :class:`SpamSchedule` kept up to date
  from the class sums) and SPAM-NET (the soft-threshold pass is O(d) per step, on
  the dense view of the weights);
* :func:`centred_sqnorms`, :func:`spdam_dual` -- SPDAM's ``kappa^2`` and mini-batch
  dual step on the transformed rows, centred implicitly so CSR rows stay sparse
  (:class:`DualStep`).
"""
# N = Natole's PhD thesis on stochastic AUC maximization (F: N eq. 2.23; SOLAM N Alg. 10 / 18,
# alpha updated by ascent, not the printed descent, step eta/sqrt(t) as the thesis gives
# none; SPAM N Alg. 20, class statistics from the training rows as the thesis assumes them known;
# SPDAM N Alg. 21 with the transformed rows ``sqrt(p_y) x`` in the dual step and u-update)
from libc.math cimport sqrt
from libc.stdint cimport int32_t, int64_t

from aucopt._kernels._interrupt cimport poll
from aucopt._kernels._pairs cimport gather
from aucopt._kernels._rows cimport (RowSource, check_cap, check_cap_value, prefetch_rows_ahead,
                                    row_cap_factor)
from aucopt._kernels._stats cimport ClassSums, array_data, check_rows
from aucopt._kernels._weights cimport Weights


cdef inline double saddle_coef(double yt, double sx, double a, double b, double alpha,
                               double p) noexcept nogil:
    """x-coefficient of d/dw F(w, a, b, alpha; (x, y)) at ``w.x = sx``.

    ``y = +1``: ``2(1-p)(sx - a) - 2(1+alpha)(1-p)``;
    ``y = -1``: ``2p(sx - b) + 2(1+alpha)p``.
    """
    if yt > 0:
        return 2.0 * (1.0 - p) * (sx - a) - 2.0 * (1.0 + alpha) * (1.0 - p)
    return 2.0 * p * (sx - b) + 2.0 * (1.0 + alpha) * p


def py_saddle_coef(double yt, double sx, double a, double b, double alpha, double p):
    """Python access to :func:`saddle_coef` (tests)."""
    return saddle_coef(yt, sx, a, b, alpha, p)


cdef int _check_order(RowSource X, const int64_t[::1] order) except -1:
    cdef Py_ssize_t k
    for k in range(order.shape[0]):
        if not 0 <= order[k] < X.n_rows:
            raise IndexError(f"order[{k}] = {order[k]} is not a row of 0..{X.n_rows - 1}")
    return 0


# ----------------------------------------------------------------------------- SOLAM


cdef inline double clip(double x, double lim) noexcept nogil:
    if x > lim:
        return lim
    if x < -lim:
        return -lim
    return x


cdef class SolamState:
    """SOLAM's scalar state: steps ``t``, positives seen ``n_pos``, the current
    ``a``, ``b``, ``alpha`` and their gamma-weighted averages (the weights of the
    average are the primitive's ``avg_q``). Keyword arguments only."""

    cdef public int64_t t
    cdef public int64_t n_pos
    cdef public double a
    cdef public double b
    cdef public double alpha
    cdef public double a_avg
    cdef public double b_avg
    cdef public double alpha_avg

    def __init__(self, *, int64_t t=0, int64_t n_pos=0, double a=0.0, double b=0.0,
                 double alpha=0.0, double a_avg=0.0, double b_avg=0.0, double alpha_avg=0.0):
        if t < 0 or not 0 <= n_pos <= t:
            raise ValueError("SolamState needs 0 <= n_pos <= t")
        self.t, self.n_pos = t, n_pos
        self.a, self.b, self.alpha = a, b, alpha
        self.a_avg, self.b_avg, self.alpha_avg = a_avg, b_avg, alpha_avg


def solam_steps(RowSource X, const double[::1] y, Weights w, SolamState st not None,
                double eta, double lam, double R, double kappa, double cap=0.0):
    """SOLAM / regSOLAM steps over the rows in order (Ying, Wen & Lyu 2016).

    ``gamma_t = eta / sqrt(t)``, ``p_hat`` the running positive rate.
    The gamma-weighted averages take the pre-update iterate;
    ``w``'s average is the weight vector's lazy average (``snapshot(gamma_t)``).
    Gradients of F at ``(w, a, b, alpha)``: ``dw = saddle_coef * x + lam w`` (regSOLAM's
    ``lam/2 ||w||^2``), ``da``, ``db`` descend, ``dalpha`` ascends.
    Projections: ``||w|| <= R`` (O(1) with the maintained norm), ``|a|, |b| <= R kappa``,
    ``|alpha| <= 2 R kappa``. O(nnz) per step.
    ``cap > 0`` multiplies row ``i``'s step (of every variable, not its weight in
    the averages) by ``min(1, cap / ||x_i||^2)`` (the source needs its row norms);
    0 is the paper's step.
    """
    cdef Py_ssize_t i, nnz, n = X.n_rows, work = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef double yt, t, p, gam, sx, c, da, db, dalpha, shrink, gbar
    check_rows(X, y, w.n_features)
    if not w.averaging:
        raise ValueError("SOLAM needs Weights with an averaging accumulator")
    check_cap(X, cap)
    with nogil:
        for i in range(n):
            prefetch_rows_ahead(X, NULL, i, n)
            nnz = X.row(i, &vals, &ind)
            yt = y[i]
            st.t += 1
            t = <double>st.t
            if yt > 0:
                st.n_pos += 1
            p = <double>st.n_pos / t
            gam = eta / sqrt(t)
            # gamma-weighted averages of the pre-update iterate
            w.snapshot(gam)
            gbar = w.avg_q
            st.a_avg += gam / gbar * (st.a - st.a_avg)
            st.b_avg += gam / gbar * (st.b - st.b_avg)
            st.alpha_avg += gam / gbar * (st.alpha - st.alpha_avg)
            gam = gam * row_cap_factor(X, i, cap)
            sx = w.dot(vals, ind, nnz)
            c = saddle_coef(yt, sx, st.a, st.b, st.alpha, p)
            if yt > 0:
                da = -2.0 * (1.0 - p) * (sx - st.a)
                db = 0.0
                dalpha = -2.0 * (1.0 - p) * sx - 2.0 * p * (1.0 - p) * st.alpha
            else:
                da = 0.0
                db = -2.0 * p * (sx - st.b)
                dalpha = 2.0 * p * sx - 2.0 * p * (1.0 - p) * st.alpha
            shrink = 1.0 - gam * lam
            if shrink != 1.0:
                w.scale_by(shrink)
            w.add(-gam * c, vals, ind, nnz)
            st.a = clip(st.a - gam * da, R * kappa)
            st.b = clip(st.b - gam * db, R * kappa)
            st.alpha = clip(st.alpha + gam * dalpha, 2.0 * R * kappa)
            if w.sqnorm() > R * R:
                w.scale_by(R / sqrt(w.sqnorm()))
            poll(&work, 2 * nnz + 16)


# ----------------------------------------------------------------------------- SPAM


cdef class SpamSchedule:
    """SPAM's step schedule and closed-form inner variables, under names.

    ``eta_t = eta / (lam (t + t0))`` or, with ``invsqrt``, ``eta / sqrt(t + t0)``
    the prox divides by ``1 + eta_t lam`` and soft-thresholds at
    ``eta_t lam1``. ``p`` is the positive rate, ``a = w.m+`` and ``b = w.m-`` the
    inner variables, kept up to date by the loops; ``t`` counts
    steps. ``cap > 0`` multiplies row ``i``'s ``eta_t`` by ``min(1, cap /
    ||x_i||^2)`` (0: the paper's step). A schedule starts at ``t = 0``, ``a = b = 0``; :meth:`resume` continues
    a stored one.
    """

    cdef public int64_t t
    cdef public double t0
    cdef public double eta
    cdef public double lam
    cdef public double lam1
    cdef public bint invsqrt
    cdef public double p
    cdef public double a
    cdef public double b
    cdef public double cap

    def __init__(self, double eta, double lam, double lam1, double t0, bint invsqrt,
                 double p, double cap=0.0):
        if not (eta > 0.0 and lam >= 0.0 and lam1 >= 0.0 and t0 >= 0.0
                and 0.0 <= p <= 1.0) or (lam == 0.0 and not invsqrt):
            raise ValueError("SpamSchedule needs eta > 0, lam1, t0 >= 0, p in [0, 1] "
                             "and lam > 0 unless invsqrt")
        check_cap_value(cap)
        self.eta, self.lam, self.lam1, self.t0, self.invsqrt = eta, lam, lam1, t0, invsqrt
        self.p, self.cap = p, cap

    def resume(self, int64_t t, double a, double b):
        """Continue after ``t`` steps with the inner variables ``a``, ``b``; returns
        the schedule."""
        if t < 0:
            raise ValueError(f"t must be >= 0, got {t}")
        self.t, self.a, self.b = t, a, b
        return self

    cdef inline double next_rate(self) noexcept nogil:
        """Advance ``t`` and return ``eta_t``."""
        self.t += 1
        if self.invsqrt:
            return self.eta / sqrt(<double>self.t + self.t0)
        return self.eta / (self.lam * (<double>self.t + self.t0))


cdef inline double spam_gradient_step(SpamSchedule s, Weights w, double et, double yt,
                                      const double* vals, const int32_t* ind,
                                      Py_ssize_t nnz) except? -1 nogil:
    """``w <- w - eta_t saddle_coef(y, w.x, a, b, b - a, p) x``; returns the step's
    coefficient ``c`` of ``x``."""
    cdef double c = -et * saddle_coef(yt, w.dot(vals, ind, nnz), s.a, s.b, s.b - s.a, s.p)
    w.add(c, vals, ind, nnz)
    return c


def spam_l2_steps(RowSource X, const double[::1] y, const int64_t[::1] order, Weights w,
                  SpamSchedule s not None, ClassSums stats not None):
    """SPAM-L2 steps over ``X[order]`` (Natole, Ying & Lyu 2018)::

        w_hat = w - eta_t saddle_coef(y, w.x, a, b, b - a, p) x
        w = w_hat / (1 + eta_t lam)                                   O(nnz)

    ``a = w.m+`` and ``b = w.m-`` (``m`` the class means of ``stats``) follow the
    step through ``x.m+-`` and the scaling, in O(nnz).
    """
    cdef Py_ssize_t k, i, nnz, work = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef double et, c, f
    cdef double n_neg = max(stats.count[0], 1.0), n_pos = max(stats.count[1], 1.0)
    check_rows(X, y, w.n_features)
    if stats.n_features != w.n_features:
        raise ValueError("the class sums and the weights differ in the number of features")
    _check_order(X, order)
    check_cap(X, s.cap)
    with nogil:
        for k in range(order.shape[0]):
            i = order[k]
            prefetch_rows_ahead(X, &order[0], k, order.shape[0])
            nnz = X.row(i, &vals, &ind)
            et = s.next_rate() * row_cap_factor(X, i, s.cap)
            c = spam_gradient_step(s, w, et, y[i], vals, ind, nnz)
            f = 1.0 / (1.0 + et * s.lam)
            s.a = (s.a + c * stats.dot(1, vals, ind, nnz) / n_pos) * f
            s.b = (s.b + c * stats.dot(0, vals, ind, nnz) / n_neg) * f
            w.scale_by(f)
            poll(&work, 4 * nnz + 16)


cdef void soft_threshold(double* v, Py_ssize_t d, Py_ssize_t stride, double thr, double f,
                         const double* m_pos, const double* m_neg, double* wm_pos,
                         double* wm_neg) noexcept nogil:
    """``v <- soft(v, thr) f`` on every coordinate of a dense weight column, with
    ``v.m+`` and ``v.m-`` of the result."""
    cdef Py_ssize_t j
    cdef double vj, wmp = 0.0, wmn = 0.0
    for j in range(d):
        vj = v[j * stride]
        if vj > thr:
            vj = (vj - thr) * f
        elif vj < -thr:
            vj = (vj + thr) * f
        else:
            vj = 0.0
        v[j * stride] = vj
        wmp += vj * m_pos[j]
        wmn += vj * m_neg[j]
    wm_pos[0] = wmp
    wm_neg[0] = wmn


def spam_net_steps(RowSource X, const double[::1] y, const int64_t[::1] order, Weights w,
                   SpamSchedule s not None, const double[::1] m_pos,
                   const double[::1] m_neg):
    """SPAM-NET steps over ``X[order]`` (Natole, Ying & Lyu 2018)::

        w_hat = w - eta_t saddle_coef(y, w.x, a, b, b - a, p) x
        w = soft(w_hat, eta_t lam1) / (1 + eta_t lam)                 O(d)

    (the paper's printed argmin). The soft-threshold pass runs on the dense view of the
    weights (``dense_begin``: the scale folded, the call's journal a full copy),
    and gives ``a = w.m+``, ``b = w.m-`` of the class means ``m_pos``, ``m_neg``.
    """
    cdef Py_ssize_t k, i, nnz, d = w.n_features, work = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef double et
    cdef double* v
    check_rows(X, y, d)
    if m_pos.shape[0] != d or m_neg.shape[0] != d:
        raise ValueError(f"the class means need {d} entries")
    _check_order(X, order)
    check_cap(X, s.cap)
    v = w.dense_begin()
    try:
        with nogil:
            for k in range(order.shape[0]):
                i = order[k]
                prefetch_rows_ahead(X, &order[0], k, order.shape[0])
                nnz = X.row(i, &vals, &ind)
                et = s.next_rate() * row_cap_factor(X, i, s.cap)
                spam_gradient_step(s, w, et, y[i], vals, ind, nnz)
                soft_threshold(v, d, w.stride, et * s.lam1, 1.0 / (1.0 + et * s.lam),
                               &m_pos[0], &m_neg[0], &s.a, &s.b)
                poll(&work, 3 * d + 2 * nnz)
    finally:
        w.dense_end()


# ----------------------------------------------------------------------------- SPDAM


def centred_sqnorms(RowSource X, const double[::1] y, const double[::1] m_pos,
                    const double[::1] m_neg, double inv_pos, double inv_neg):
    """``(mean, max)`` of ``||(x_i - m_y) inv_y||^2`` without forming the centred
    rows: SPDAM's ``kappa^2`` for the transformed rows (the mean by default, the
    maximum as in the paper's theorem)."""
    cdef Py_ssize_t i, j, nnz, work = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef double mp2 = 0.0, mn2 = 0.0, total = 0.0, best = 0.0, val, inv
    check_rows(X, y, m_pos.shape[0])
    if m_neg.shape[0] != m_pos.shape[0]:
        raise ValueError("the class means differ in length")
    if not X.has_norms:
        raise ValueError("centred_sqnorms needs a RowSource with row norms")
    for j in range(m_pos.shape[0]):
        mp2 += m_pos[j] * m_pos[j]
        mn2 += m_neg[j] * m_neg[j]
    with nogil:
        for i in range(X.n_rows):
            prefetch_rows_ahead(X, NULL, i, X.n_rows)
            nnz = X.row(i, &vals, &ind)
            if y[i] > 0:
                val = X.sqnorm(i) - 2.0 * gather(&m_pos[0], 1, vals, ind, nnz) + mp2
                inv = inv_pos
            else:
                val = X.sqnorm(i) - 2.0 * gather(&m_neg[0], 1, vals, ind, nnz) + mn2
                inv = inv_neg
            val = val * inv * inv
            total += val
            if val > best:
                best = val
            poll(&work, nnz + 1)
    return (total / X.n_rows if X.n_rows else 0.0), best


cdef class DualStep:
    """SPDAM's dual state and the constants of its dual step, under names.

    ``beta`` (n) are the dual variables; ``dx`` (d) and ``dsum`` (2) receive the
    step's change of ``sum_i beta_i xt_i`` (see :func:`spdam_dual`). ``inv_pos`` /
    ``inv_neg`` scale the centred rows (``1/sqrt(p_y)``, or ``1/sqrt(2 p_y)``),
    ``sigma`` is the dual step size, ``wm_pos`` / ``wm_neg`` the products
    ``wbar.m+-`` of the current extrapolated point.
    """

    cdef double* beta
    cdef double* dx
    cdef double* dsum
    cdef readonly Py_ssize_t n_rows
    cdef readonly Py_ssize_t n_features
    cdef public double sigma
    cdef public double inv_pos
    cdef public double inv_neg
    cdef public double wm_pos
    cdef public double wm_neg
    cdef object _refs

    def __init__(self, beta, dx, dsum, double sigma, double inv_pos, double inv_neg):
        n = beta.shape[0] if getattr(beta, "ndim", 0) == 1 else 0
        d = dx.shape[0] if getattr(dx, "ndim", 0) == 1 else 0
        self.beta = array_data(beta, (n,), "beta")
        self.dx = array_data(dx, (d,), "dx")
        self.dsum = array_data(dsum, (2,), "dsum")
        self.n_rows, self.n_features = n, d
        self.sigma, self.inv_pos, self.inv_neg = sigma, inv_pos, inv_neg
        self._refs = (beta, dx, dsum)


def spdam_dual(RowSource X, const double[::1] y, const int64_t[::1] batch, Weights wbar,
               DualStep st not None):
    """SPDAM's dual step on a mini-batch (on the transformed rows, not ``x_i``).

    The transformed row is ``xt_i = (x_i - m_y) inv_y``, never formed:
    ``wbar.xt_i = (wbar.x_i - wbar.m_y) inv_y``. For ``i`` in ``batch``::

        beta_i' = (sigma wbar.xt_i + beta_i) / (sigma + 1)      (closed-form argmax)
        dx     += (beta_i' - beta_i) inv_y x_i                   (sparse)
        dsum[y] += (beta_i' - beta_i) inv_y

    so that ``sum_I (beta_i' - beta_i) xt_i = dx - m+ dsum[1] - m- dsum[0]``.
    ``dx`` and ``dsum`` are accumulated into (zero them first).
    """
    cdef Py_ssize_t k, i, j, nnz, work = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef double inv, wm, z, nb, dlt
    cdef int cls
    check_rows(X, y, wbar.n_features)
    if st.n_rows != X.n_rows or st.n_features != X.n_features:
        raise ValueError("the dual state does not match the rows")
    _check_order(X, batch)
    with nogil:
        for k in range(batch.shape[0]):
            i = batch[k]
            prefetch_rows_ahead(X, &batch[0], k, batch.shape[0])
            nnz = X.row(i, &vals, &ind)
            cls = 1 if y[i] > 0 else 0
            inv = st.inv_pos if cls == 1 else st.inv_neg
            wm = st.wm_pos if cls == 1 else st.wm_neg
            z = (wbar.dot(vals, ind, nnz) - wm) * inv
            nb = (st.sigma * z + st.beta[i]) / (st.sigma + 1.0)
            dlt = (nb - st.beta[i]) * inv
            st.beta[i] = nb
            for j in range(nnz):
                st.dx[ind[j]] += dlt * vals[j]
            st.dsum[cls] += dlt
            poll(&work, 2 * nnz + 8)
