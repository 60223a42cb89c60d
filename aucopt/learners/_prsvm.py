"""Truncated-Newton solver of linear PRSVM+ (the batch AUC learner BAM).

Chapelle & Keerthi, "Efficient algorithms for ranking with SVMs" (2010), as used
by Khalid, "Scalable Large Margin Pairwise Learning Algorithms" (2019), Sec. 3.3
(eq. 3.1, Alg. 1)::

    F(w) = 1/2 ||w||^2 + C sum_{i pos, j neg} max(0, 1 - w.(x_i - x_j))^2

Pairs are never formed: the loss, its gradient in the scores ``o = X w`` and the
generalised Hessian-vector products come from one sort of the scores per Newton
iterate (:class:`aucopt._kernels._ranksvm.PairSquaredHinge`); a gradient or
Hessian-vector product then costs O(nnz(X_active) + n), where ``X_active`` are the
rows in at least one violated pair.

This module is a solver, not a learner (the leading underscore keeps
``aucopt.learners`` from importing it as a learner family).
"""
import numpy as np

from aucopt._kernels import _ranksvm as K
from aucopt._kernels._rows import RowSource

# Alg. 1 of Khalid, Scalable Large Margin Pairwise Learning Algorithms (2019) takes the
# full Newton step (line_search=None)
LINE_SEARCHES = ("exact", "armijo", None)
ARMIJO_SLOPE = 1e-4       # sufficient-decrease fraction of the directional derivative
MAX_LS_TRIALS = 60        # halvings (Armijo) or bracketing trials (exact) per step
EXACT_LS_RTOL = 1e-10     # |phi'(t)| <= EXACT_LS_RTOL |phi'(0)| ends the exact search


class PRSVMObjective:
    """``F(w)`` on one data set: scores, loss state and the products CG needs."""

    def __init__(self, X, y, C, weights=None):
        self.rows = X if isinstance(X, RowSource) else RowSource(X)
        self.loss = K.PairSquaredHinge(y, weights)
        if self.rows.n_rows != self.loss.n_rows:
            raise ValueError(f"X has {self.rows.n_rows} rows but y has {self.loss.n_rows} "
                             "labels; pass one label per row")
        self.C = C
        n, d = self.rows.n_rows, self.rows.n_features
        self.all_rows = np.arange(n, dtype=np.int64)
        self.active = self.all_rows
        self.grad_o = np.empty(n)      # dL/do
        self.z = np.empty(n)           # alpha * delta - gamma
        self.xd = np.empty(d)          # X^T (...) scratch

    def scores(self, w, rows, out):
        """``out[rows] = X[rows] w``."""
        K.rows_dot(self.rows, w, rows, out)
        return out

    def value(self, w, o):
        """``F(w)`` for scores ``o = X w``; freezes the active pairs."""
        return 0.5 * K.dot(w, w) + self.C * self.loss.evaluate(o, self.grad_o)

    def value_grad(self, w, o):
        """``F(w)`` and ``grad F(w)`` for scores ``o = X w``; freezes the active pairs.

        ``grad F = w + C X^T dL/do`` with ``dL/do_k = 2 (alpha_k yhat_k - beta_k)``.
        """
        # Khalid 2019, Alg. 1 prints the gradient without the squared hinge's factor 2
        value = self.value(w, o)
        self.active = self.loss.active_rows()
        K.rows_combine(self.rows, self.grad_o, self.active, self.xd)
        return value, w + self.C * self.xd

    def hess_dot(self, p, xp, out):
        """``out = H p = p + 2 C X^T (alpha * X p - gamma)``; ``xp[active] = X p``."""
        self.scores(p, self.active, xp)
        self.loss.hessian(xp, self.z)
        K.rows_combine(self.rows, self.z, self.active, out)
        out *= 2.0 * self.C
        out += p
        return out

    def along(self, o, delta, ws, ss, ww, t, curvature):
        """``phi(t) = F(w + t s)`` and ``phi'(t)`` (and ``phi''(t)`` if ``curvature``).

        With ``o = X w`` and ``delta = X s`` no product with X is needed: the
        loss is re-sorted at ``o + t delta`` (O(n log n)). Overwrites the frozen
        active pairs, so :meth:`value_grad` must follow before further products.
        """
        loss = self.loss.evaluate(o + t * delta, self.grad_o)
        phi = 0.5 * ww + t * ws + 0.5 * t * t * ss + self.C * loss
        dphi = ws + t * ss + self.C * K.dot(self.grad_o, delta)
        if not curvature:
            return phi, dphi, None
        self.loss.hessian(delta, self.z)
        return phi, dphi, ss + 2.0 * self.C * K.dot(delta, self.z)


def _conjugate_gradient(obj, grad, gnorm, max_cg, cg_tol):
    """Solve ``H s = -grad`` from ``s = 0``; also return ``X s`` on the active rows.

    Stops when ``||H s + grad|| <= cg_tol ||grad||`` or after ``max_cg`` iterations.
    """
    n = obj.rows.n_rows
    s = np.zeros_like(grad)
    xs = np.zeros(n)              # X s, accumulated on the active rows
    xp = np.zeros(n)
    hp = np.empty_like(grad)
    r = -grad
    p = r.copy()
    rr = K.dot(r, r)
    goal = (cg_tol * gnorm) ** 2
    it = 0
    while it < max_cg:
        it += 1
        obj.hess_dot(p, xp, hp)
        a = rr / K.dot(p, hp)
        s += a * p
        xs += a * xp
        r -= a * hp
        rr_new = K.dot(r, r)
        if rr_new <= goal:
            break
        p *= rr_new / rr
        p += r
        rr = rr_new
    return s, xs, it


def _exact_step(obj, o, delta, ws, ss, ww, f0, slope0):
    """Minimise ``phi(t) = F(w + t s)`` exactly; returns ``(t, trials)``.

    ``phi`` is a convex piecewise quadratic in ``t``, so Newton's method on
    ``phi'`` lands on the minimiser as soon as it starts in the minimiser's
    piece; a bracket ``phi'(lo) < 0 < phi'(hi)`` with bisection keeps it safe.
    The first trial is ``t = 1``, the minimiser of the CG quadratic model.
    Should the search stall (rounding), the best trial so far is returned, or
    ``t = 0`` if none is below ``f0 = phi(0)``.
    """
    lo, hi = 0.0, np.inf
    best_t, best_phi = 0.0, f0
    t = 1.0
    for trial in range(1, MAX_LS_TRIALS + 1):
        phi, dphi, d2phi = obj.along(o, delta, ws, ss, ww, t, curvature=True)
        if phi < best_phi:
            best_t, best_phi = t, phi
        if abs(dphi) <= EXACT_LS_RTOL * abs(slope0):
            return t, trial
        if dphi < 0.0:
            lo = t
        else:
            hi = t
        t_next = t - dphi / d2phi
        if not lo < t_next < hi:
            t_next = 0.5 * (lo + hi) if np.isfinite(hi) else 2.0 * t
        if t_next == t or hi - lo <= 4 * np.finfo(float).eps * hi:
            break
        t = t_next
    return best_t, trial


def _armijo_step(obj, o, delta, ws, ss, ww, f0, slope0):
    """Backtracking from ``t = 1`` by halves to sufficient decrease; ``(t, trials)``.

    Returns ``t = 0`` when no trial decreases ``F`` enough (rounding at the optimum).
    """
    t = 1.0
    for trial in range(1, MAX_LS_TRIALS + 1):
        phi, _, _ = obj.along(o, delta, ws, ss, ww, t, curvature=False)
        if phi <= f0 + ARMIJO_SLOPE * t * slope0:
            return t, trial
        t *= 0.5
    return 0.0, MAX_LS_TRIALS


class PRSVMSolver:
    """Truncated Newton on linear PRSVM+, one Newton step at a time.

    Minimises ``F(w) = 1/2 ||w||^2 + C sum_{i pos, j neg} max(0, 1 - w.(x_i - x_j))^2``
    (Chapelle & Keerthi, "Efficient algorithms for ranking with SVMs", 2010;
    Khalid, "Scalable Large Margin Pairwise Learning Algorithms", 2019, eq. 3.1
    and Alg. 1) from ``w = 0``. Each Newton iterate sorts the scores once; the
    direction solves ``H s = -grad F`` by conjugate gradients with the generalised
    Hessian ``H`` (violated pairs frozen at the iterate), started from ``s = 0``.

    ``solver = PRSVMSolver(X, y, C, ...)``, then :meth:`step` until ``done``.
    ``w`` is the iterate, ``f`` and ``gnorm`` are ``F(w)`` and ``||grad F(w)||``,
    ``newton_steps`` and ``last_cg`` count the steps and the CG iterations of the
    last one, ``stop`` is ``"tol"``, ``"max_newton"`` or ``"no_progress"`` (the
    line search found no decrease) once done. The caller (the learner
    :class:`aucopt.learners.batch.BAM`) has checked the parameters.

    Parameters
    ----------
    X : RowSource, C-contiguous float64 ndarray or canonical CSR matrix of shape (n, d)
    y : ndarray of shape (n,)
        float64 labels, each -1.0 or +1.0, both present.
    C : float
        Weight of the pairwise loss, > 0. The loss is a sum (not a mean) over the
        ``n+ n-`` pairs.
    tol : float
        Stop when ``||grad F(w)|| <= tol ||grad F(0)||``.
    max_newton : int
        Most Newton steps, >= 1.
    max_cg : int
        Most CG iterations per Newton step.
    cg_tol : float
        CG stops when its residual is below ``cg_tol ||grad F(w)||``.
    line_search : {"exact", "armijo", None}
        Step length along the Newton direction ``s``. ``"exact"`` minimises
        ``F(w + t s)`` over ``t`` (a convex piecewise quadratic; each trial costs a
        sort of the scores and no product with ``X``); ``"armijo"`` backtracks from
        ``t = 1`` by halves; ``None`` takes the full step ``t = 1`` as Khalid's
        Alg. 1 does. Chapelle & Keerthi pair the Newton direction with a line
        search: the full step can overshoot when the active pairs change much, and
        the exact step costs no product with ``X``.
    """

    def __init__(self, X, y, C, *, tol, max_newton, max_cg, cg_tol, line_search,
                 sample_weight=None):
        self.obj = PRSVMObjective(X, y, float(C), sample_weight)
        self.tol, self.max_newton, self.max_cg, self.cg_tol = tol, max_newton, max_cg, cg_tol
        self.line_search = line_search
        n, d = self.obj.rows.n_rows, self.obj.rows.n_features
        self.o = np.zeros(n)
        self.w = np.zeros(d)
        self.newton_steps = 0
        self.stop = None
        self._evaluate()
        self.gnorm0 = self.gnorm
        self._check_stop()

    def _evaluate(self):
        self.f, self.grad = self.obj.value_grad(self.w, self.o)
        self.gnorm = np.sqrt(K.dot(self.grad, self.grad))

    def _check_stop(self):
        if self.gnorm <= self.tol * self.gnorm0:
            self.stop = "tol"
        elif self.newton_steps == self.max_newton:
            self.stop = "max_newton"

    @property
    def done(self):
        """Whether the stopping rule has been met."""
        return self.stop is not None

    def step(self):
        """One Newton step: CG direction, line search, move. Returns the step length."""
        obj, n = self.obj, self.o.shape[0]
        s, delta, n_cg = _conjugate_gradient(obj, self.grad, self.gnorm, self.max_cg,
                                             self.cg_tol)
        inactive = np.ones(n, dtype=bool)
        inactive[obj.active] = False
        obj.scores(s, np.flatnonzero(inactive).astype(np.int64), delta)  # X s, other rows
        w, o = self.w, self.o
        ws, ss, slope0 = K.dot(w, s), K.dot(s, s), K.dot(self.grad, s)
        if self.line_search is None:
            t = 1.0
        elif self.line_search == "exact":
            t, _ = _exact_step(obj, o, delta, ws, ss, K.dot(w, w), self.f, slope0)
        else:
            t, _ = _armijo_step(obj, o, delta, ws, ss, K.dot(w, w), self.f, slope0)
        self.newton_steps += 1
        self.last_cg = n_cg
        if t == 0.0:
            self.stop = "no_progress"
            return t
        w += t * s
        o += t * delta
        self._evaluate()
        self._check_stop()
        return t
