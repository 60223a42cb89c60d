# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""FSAUC (Liu et al. 2018): one stage of primal-dual stochastic gradient (PDSG).

The algorithm, its constants and the driver are specified in
``aucopt.learners._fsauc_core``; this module is the inner loop of one stage,
O(nnz) per step on CSR rows.

Representation. A stage starts at the centre ``c = (w1, a1, b1)`` and keeps
``w = w1 + e`` with ``e = sigma w1 + s v``: ``sigma`` a scalar, ``s v`` a
:class:`Weights` (scale ``s``, dense ``v``, exact lazy average). With
``K = ||w1||^2`` (once per stage) the kernel maintains ``EW = e.w1`` and
``EE = ||e||^2``:

* ``w.x = w1.x + sigma (w1.x) + s (v.x)``: two sparse dot products, O(nnz);
* the gradient step ``e <- e + g x`` is a sparse axpy on ``v``, with
  ``EE += 2 g (e.x) + g^2 ||x||^2`` and ``EW += g (w1.x)``;
* every projected point is ``w = rho (w1 + t e)`` (see :func:`project_primal`),
  i.e. ``e <- (rho - 1) w1 + rho t e``: ``sigma`` and ``s`` change in O(1) and
  ``EE``, ``EW`` follow from ``K``, ``EW``, ``EE``;
* the average of the stage's iterates is ``(1 + mean(sigma)) w1`` plus the
  weight vector's lazy average: O(d) once per stage;
* the class sums are sparse adds (two more :class:`Weights` of scale 1).

The one O(d) cost inside the loop is the weight vector's fold of its scale
into ``v``, once the product of the shrink factors ``rho t`` since the last fold
drops below 1e-4: never while the ball and ``||w|| <= R`` are inactive, every
~``9 / -ln(rho t)`` projected steps otherwise (``n_shrunk`` counts them). With
steps far larger than the ball (``rho t ~ 0.1``) a step costs O(d / 4).

Dense and CSR rows come through the same :class:`RowSource` and every sum runs
in index order, so both give bit-identical results. The row order is an input
(drawn by the caller). The loop polls for signals (Ctrl-C) every few ms.
"""
import numpy as np

from libc.math cimport sqrt
from libc.stdint cimport int32_t, int64_t

from aucopt._kernels._interrupt cimport poll
from aucopt._kernels._rows cimport RowSource, cap_factor, check_cap_value, prefetch_rows_ahead
from aucopt._kernels._weights cimport Weights

# the search for t stops when phi(t) is this close to r^2 (relative) ...
cdef double PHI_RTOL = 1e-13
# ... or the bracket [t_lo, t_hi] is this narrow (relative to t_hi)
cdef double T_RTOL = 1e-15
cdef int MAX_SEARCH = 200


cdef struct Ball:
    # One primal projection onto Omega1 ∩ Ball(c, r); u = c + (e, da, db) is the point.
    double K       # ||w1||^2
    double EW      # e.w1
    double EE      # ||e||^2
    double da      # a_u - a1
    double db      # b_u - b1
    double a1
    double b1
    double R       # ||w|| <= R
    double Rk      # |a|, |b| <= R kappa
    double r       # radius of the ball around c


cdef inline double clip(double x, double lo, double hi) noexcept nogil:
    if x > hi:
        return hi
    if x < lo:
        return lo
    return x


cdef double phi(const Ball* B, double t, double* rho, double* a, double* b) noexcept nogil:
    """``||P_Omega1(c + t (u - c)) - c||^2``; sets the projected point's ``rho``, ``a``, ``b``.

    The w-part of ``c + t (u - c)`` is ``q = w1 + t e`` with
    ``||q||^2 = K + 2 t EW + t^2 EE``; its projection onto ``||w|| <= R`` is
    ``rho q``, ``rho = min(1, R / ||q||)``, at squared distance
    ``R^2 - 2 rho (K + t EW) + K`` from ``w1`` when ``rho < 1``.
    """
    cdef double Q = B.K + t * (2.0 * B.EW + t * B.EE)
    cdef double part
    if Q > B.R * B.R:
        rho[0] = B.R / sqrt(Q)
        part = B.R * B.R - 2.0 * rho[0] * (B.K + t * B.EW) + B.K
    else:
        rho[0] = 1.0
        part = t * t * B.EE
    a[0] = clip(B.a1 + t * B.da, -B.Rk, B.Rk)
    b[0] = clip(B.b1 + t * B.db, -B.Rk, B.Rk)
    return part + (a[0] - B.a1) * (a[0] - B.a1) + (b[0] - B.b1) * (b[0] - B.b1)


cdef double project_primal(const Ball* B, double* rho, double* a, double* b) noexcept nogil:
    """Euclidean projection of ``u`` onto ``Omega1 ∩ Ball(c, r)``; returns ``t``.

    For ``c`` in ``Omega1``, the projection is ``P_Omega1(c + t (u - c))`` with
    ``t = 1`` if that point lies in the ball, else the ``t`` in (0, 1) where it
    lies on the sphere (KKT: with multiplier ``mu`` of the ball constraint the
    minimiser over ``Omega1`` of ``||x - u||^2 + mu ||x - c||^2`` is
    ``P_Omega1(c + (u - c) / (1 + mu))``, and its distance to ``c`` does not
    decrease with ``t = 1 / (1 + mu)``). The sphere point is found in closed form
    when ``Omega1`` is inactive there (``t = r / ||u - c||``), else by a
    bracketed search (Illinois false position alternating with bisection) that
    keeps the feasible end. The projected ``w`` is ``rho (w1 + t e)``.
    """
    cdef double r2 = B.r * B.r
    cdef double t_lo, t_hi, g_lo, g_hi, t, g, dist2
    cdef int it, side = 0
    if phi(B, 1.0, rho, a, b) <= r2:
        return 1.0
    dist2 = B.EE + B.da * B.da + B.db * B.db
    if dist2 <= r2:  # phi(1) > r^2 >= ||u - c||^2 only through rounding
        return 1.0
    # the plain ball projection; P_Omega1 is non-expansive and fixes c, so
    # phi(t_lo) <= t_lo^2 ||u - c||^2 = r^2: a feasible lower end
    t_lo = B.r / sqrt(dist2)
    g_lo = phi(B, t_lo, rho, a, b) - r2
    if rho[0] == 1.0 and a[0] == B.a1 + t_lo * B.da and b[0] == B.b1 + t_lo * B.db:
        return t_lo  # Omega1 inactive at the sphere point
    if g_lo >= 0.0:
        return t_lo
    t_hi = 1.0
    g_hi = phi(B, 1.0, rho, a, b) - r2
    for it in range(MAX_SEARCH):
        if g_lo >= -PHI_RTOL * r2 or t_hi - t_lo <= T_RTOL * t_hi:
            break
        t = 0.5 * (t_lo + t_hi)
        if it % 2 == 0:
            t = t_lo - g_lo * (t_hi - t_lo) / (g_hi - g_lo)
            if not (t_lo < t < t_hi):
                t = 0.5 * (t_lo + t_hi)
        g = phi(B, t, rho, a, b) - r2
        if g <= 0.0:
            t_lo = t
            g_lo = g
            if side == -1:
                g_hi *= 0.5
            side = -1
        else:
            t_hi = t
            g_hi = g
            if side == 1:
                g_lo *= 0.5
            side = 1
    phi(B, t_lo, rho, a, b)
    return t_lo


def py_project_primal(ball):
    """Python access to :func:`project_primal` (tests): ``ball`` maps the fields of
    the projection (``K``, ``EW``, ``EE``, ``da``, ``db``, ``a1``, ``b1``, ``R``,
    ``Rk``, ``r``, as the ``Ball`` struct) to floats; returns ``(t, rho, a, b)``."""
    cdef Ball B = Ball(ball["K"], ball["EW"], ball["EE"], ball["da"], ball["db"],
                       ball["a1"], ball["b1"], ball["R"], ball["Rk"], ball["r"])
    cdef double rho = 1.0, a = 0.0, b = 0.0, t
    if not (B.r > 0.0 and B.R > 0.0 and B.Rk >= 0.0 and B.K >= 0.0 and B.EE >= 0.0):
        raise ValueError("need r > 0, R > 0, Rk >= 0, K >= 0 and EE >= 0")
    t = project_primal(&B, &rho, &a, &b)
    return t, rho, a, b


cdef class StagePoint:
    """A point ``(w, a, b, alpha)`` of FSAUC's saddle problem (a stage's centre)."""
    cdef readonly object w
    cdef readonly double a
    cdef readonly double b
    cdef readonly double alpha

    def __init__(self, w, double a=0.0, double b=0.0, double alpha=0.0):
        self.w = np.array(w, dtype=np.float64)  # a private copy
        if self.w.ndim != 1:
            raise ValueError(f"w must be 1-d, got shape {self.w.shape}")
        self.a, self.b, self.alpha = a, b, alpha


cdef class StageSteps:
    """A stage's step ``eta`` and sets: ``Omega1 = {||w|| <= R, |a|, |b| <= R kappa}``,
    ``Omega2 = {|alpha| <= 2 R kappa}``, the ball of radius ``r`` around the centre
    in ``(w, a, b)`` and ``[alpha1 - D, alpha1 + D]`` for ``alpha`` (``D`` may be inf).
    ``cap > 0`` multiplies row ``i``'s step by ``min(1, cap / ||x_i||^2)`` (0: the
    paper's step)."""
    cdef readonly double eta
    cdef readonly double R
    cdef readonly double kappa
    cdef readonly double r
    cdef readonly double D
    cdef readonly double cap

    def __init__(self, double eta, double R, double kappa, double r, double D,
                 double cap=0.0):
        if not (R > 0.0 and R < np.inf and kappa > 0.0 and kappa < np.inf):
            raise ValueError(f"need finite R > 0 and kappa > 0, got R={R!r}, kappa={kappa!r}")
        if not (r > 0.0 and r < np.inf and D > 0.0 and eta >= 0.0 and eta < np.inf):
            raise ValueError(f"need finite r > 0, D > 0 and finite eta >= 0, got r={r!r}, "
                             f"D={D!r}, eta={eta!r}")
        check_cap_value(cap)
        self.eta, self.R, self.kappa, self.r, self.D = eta, R, kappa, r, D
        self.cap = cap


def _buffer(buf, shape, name):
    """A zeroed float64 array of ``shape``: ``buf`` itself when given (checked)."""
    if buf is None:
        return np.zeros(shape)
    if (not isinstance(buf, np.ndarray) or buf.shape != shape or buf.dtype != np.float64
            or not buf.flags.c_contiguous or not buf.flags.writeable):
        raise ValueError(f"{name} must be a writable C-contiguous float64 array of shape "
                         f"{shape}")
    buf.fill(0.0)
    return buf


def fsauc_stage(RowSource X, const double[::1] y, const int64_t[::1] order,
                StagePoint start not None, StageSteps steps not None, work=None, sums=None):
    """One PDSG stage of FSAUC over the rows ``X[order]`` (Liu et al. 2018, Alg. 2).

    Starts at ``(w, a, b, alpha) = start`` (the centre ``(w1, a1, b1, alpha1)``); per
    step, with ``p`` the stage's positive rate so far (this row included), ``F`` the
    saddle function of Ying et al. (2016) and ``eta``, ``r``, ``D``, ``Omega1``,
    ``Omega2`` of ``steps``::

        (w, a, b) <- P_{Omega1 ∩ Ball((w1, a1, b1), r)}((w, a, b) - eta grad_{w,a,b} F)
        alpha     <- P_{Omega2 ∩ [alpha1 - D, alpha1 + D]}(alpha + eta grad_alpha F)

    The centre must lie in Omega1 and ``alpha1`` in Omega2. ``work`` (shape
    (n_features, 2)) and ``sums`` (shape (2, n_features)), C-contiguous float64, are
    optional buffers the stage overwrites (a driver reuses them: fresh large arrays
    cost page faults).

    Returns
    -------
    w_avg : ndarray of shape (n_features,)
        Mean of the iterates ``w_1 .. w_T`` (``w_1`` = centre; the last update's
        result is not included, as in the paper's ``sum_{t=1}^T v_t / T``).
    a_avg, b_avg : float
        Means of ``a_1 .. a_T`` and ``b_1 .. b_T``.
    sums : ndarray of shape (2, n_features)
        Row sums of the stage's negatives (row 0) and positives (row 1)
        (the ``sums`` buffer when given).
    counts : tuple (n_neg, n_pos)
    last : tuple (w, a, b, alpha)
        The iterate after the last step.
    n_shrunk : int
        Steps whose projection moved ``w - w1`` by a factor ``rho t < 1`` (the ball
        or ``||w|| <= R`` was active); each costs O(1), and every ~``log(1e4)``
        of accumulated shrinkage one O(d) fold of the weight vector's scale.
    """
    cdef Py_ssize_t n_steps = order.shape[0], d = X.n_features
    cdef Py_ssize_t k, i, nnz, counter = 0, n_shrunk = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef double K, EW = 0.0, EE = 0.0, sigma = 0.0, sum_sigma = 0.0
    cdef double a1 = start.a, b1 = start.b, alpha1 = start.alpha
    cdef double eta = steps.eta, R = steps.R, r = steps.r, D = steps.D, cap = steps.cap
    cdef double et, q
    cdef double a = a1, b = b1, alpha = alpha1, sum_a = 0.0, sum_b = 0.0
    cdef double n_pos = 0.0, n_neg = 0.0, p, xw1, ex, sx, c, da, db, dalpha, g
    cdef double rho = 1.0, t, f, ee_new, Rk = R * steps.kappa
    cdef double lo, hi
    cdef Ball B
    cdef Weights e, w1, sum_neg, sum_pos
    centre = start.w  # read through w1
    if centre.shape[0] != d:
        raise ValueError(f"centre has shape {centre.shape} for {d} features")
    if y.shape[0] != X.n_rows:
        raise ValueError(f"y has {y.shape[0]} labels for {X.n_rows} rows")
    if n_steps == 0:
        raise ValueError("a stage needs at least one row")
    idx = np.asarray(order)
    if idx.min() < 0 or idx.max() >= X.n_rows:
        raise ValueError(f"order holds row indices outside [0, {X.n_rows})")
    w1 = Weights(centre)  # scale 1: w1.dot is the plain row sum
    K = w1.sqnorm()
    if not (K <= R * R * (1.0 + 1e-9) and abs(a1) <= Rk and abs(b1) <= Rk
            and abs(alpha1) <= 2.0 * Rk):
        raise ValueError("the centre must lie in Omega1 and alpha1 in Omega2")
    lo = max(-2.0 * Rk, alpha1 - D)
    hi = min(2.0 * Rk, alpha1 + D)
    work = _buffer(work, (d, 2), "work")
    sums = _buffer(sums, (2, d), "sums")
    e = Weights(work, averaging=True)
    sum_neg = Weights(sums[0])
    sum_pos = Weights(sums[1])
    with nogil:
        for k in range(n_steps):
            i = order[k]
            prefetch_rows_ahead(X, &order[0], k, n_steps)
            nnz = X.row(i, &vals, &ind)
            if y[i] > 0:
                n_pos += 1.0
                sum_pos.add(1.0, vals, ind, nnz)
            else:
                n_neg += 1.0
                sum_neg.add(1.0, vals, ind, nnz)
            p = n_pos / (n_pos + n_neg)
            # the mean is over the pre-update iterates v_1 .. v_T
            e.snapshot(1.0)
            sum_sigma += sigma
            sum_a += a
            sum_b += b
            # gradient of F at (w, a, b, alpha), w.x = w1.x + e.x
            xw1 = w1.dot(vals, ind, nnz)
            ex = sigma * xw1 + e.dot(vals, ind, nnz)
            sx = xw1 + ex
            if y[i] > 0:
                c = 2.0 * (1.0 - p) * (sx - a) - 2.0 * (1.0 + alpha) * (1.0 - p)
                da = -2.0 * (1.0 - p) * (sx - a)
                db = 0.0
                dalpha = -2.0 * (1.0 - p) * sx - 2.0 * p * (1.0 - p) * alpha
            else:
                c = 2.0 * p * (sx - b) + 2.0 * (1.0 + alpha) * p
                da = 0.0
                db = -2.0 * p * (sx - b)
                dalpha = 2.0 * p * sx - 2.0 * p * (1.0 - p) * alpha
            # descent in (w, a, b), ascent in alpha (a row beyond the cap: a shorter step)
            q = X.sqnorm(i)
            et = eta * cap_factor(q, cap)
            g = -et * c
            if g != 0.0:
                e.add(g, vals, ind, nnz)
                EE += 2.0 * g * ex + g * g * q
                if EE < 0.0:
                    EE = 0.0
                EW += g * xw1
            B = Ball(K, EW, EE, a - et * da - a1, b - et * db - b1, a1, b1, R, Rk, r)
            t = project_primal(&B, &rho, &a, &b)
            f = rho * t
            if f != 1.0:
                # e <- (rho - 1) w1 + rho t e
                n_shrunk += 1
                sigma = (rho - 1.0) + f * sigma
                ee_new = ((rho - 1.0) * (rho - 1.0) * K + 2.0 * (rho - 1.0) * f * EW
                          + f * f * EE)
                EW = (rho - 1.0) * K + f * EW
                EE = ee_new if ee_new > 0.0 else 0.0
                e.scale_by(f)
            alpha = clip(alpha + et * dalpha, lo, hi)
            poll(&counter, 4 * nnz + 64)
    T = float(n_steps)
    w_avg = ((T + sum_sigma) / T) * centre + e.average()
    w_last = (1.0 + sigma) * centre + e.coef()
    return (w_avg, sum_a / T, sum_b / T, sums, (n_neg, n_pos),
            (w_last, a, b, alpha), n_shrunk)
