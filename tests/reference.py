"""Slow, plainly written reference implementations used by the test-suite.

Every function here favours obviousness over speed: it follows the papers' formulas
literally (D = Khalid, Scalable Large Margin Pairwise Learning Algorithms, 2019; N =
Natole's PhD thesis on stochastic AUC maximization; O = Gao et al., One-Pass AUC
Optimization, 2013; A = AlQuabeh & Abdurahimov, Pairwise Learning via Stagewise
Training in Proximal Setting, 2022) so the fast code in ``aucopt`` can be checked against
it. Labels are in {-1, +1} or {0, 1} (positive = the value 1); scores are
finite floats. Keep this a flat module of documented functions; append new
references at the end.
"""
from fractions import Fraction

import numpy as np


def _pos_mask(y):
    """Boolean mask of the positives for labels in {-1, +1} or {0, 1}."""
    y = np.asarray(y)
    values = set(np.unique(y).tolist())
    assert values <= {-1, 1} or values <= {0, 1}, values
    return y == 1


def auc_pairs(y, s):
    """Exact AUC by counting every (positive, negative) pair: O(n+ n-) time.

    Ties count 1/2: ``AUC = 1/(n+ n-) sum_{i pos} sum_{j neg}
    (I[s_i > s_j] + 0.5 I[s_i = s_j])``. The pair count is accumulated in
    Python integers (wins count 2, ties count 1) so the only rounding is the
    final division.
    """
    pos = _pos_mask(y)
    s = np.asarray(s, dtype=float)
    sp = s[pos].tolist()
    sn = s[~pos].tolist()
    twice = 0
    for a in sp:
        for b in sn:
            if a > b:
                twice += 2
            elif a == b:
                twice += 1
    return twice / (2 * len(sp) * len(sn))


def roc_points_bruteforce(y, s):
    """ROC points ``(fpr, tpr, thresholds)`` by trying every threshold.

    The first point is (0, 0) with threshold +inf, then for
    each distinct score ``t`` in decreasing order the point obtained by
    predicting positive iff ``score >= t``. Each point is recomputed from
    scratch over all samples (O(n * distinct) time).
    """
    pos = _pos_mask(y)
    s = np.asarray(s, dtype=float)
    n_pos = int(pos.sum())
    n_neg = len(s) - n_pos
    fpr, tpr, thr = [0.0], [0.0], [np.inf]
    for t in sorted(set(s.tolist()), reverse=True):
        pred = s >= t
        tp = int(np.sum(pred & pos))
        fp = int(np.sum(pred & ~pos))
        fpr.append(fp / n_neg)
        tpr.append(tp / n_pos)
        thr.append(t)
    return np.array(fpr), np.array(tpr), np.array(thr)


def optroc_bruteforce(y, s, slope=None):
    """OPTROC accuracy and threshold by trying every operating point.

    Candidates (MATLAB perfcurve's OPTROC point, unit costs): predict positive iff
    ``score > t`` with
    ``t`` = the max score (all negative), every midpoint between consecutive
    distinct scores, and ``min score - 1`` (all positive), visited from the
    all-negative end. The first candidate maximising ``TPR - slope * FPR``
    (default slope n-/n+; exact rational arithmetic) wins; returns ``(accuracy, t)`` with accuracy
    ``(TP + TN) / n`` recounted from scratch at that threshold.
    """
    pos = _pos_mask(y)
    s = np.asarray(s, dtype=float)
    n = len(s)
    n_pos = int(pos.sum())
    n_neg = n - n_pos
    # exact rationals: the default slope n-/n+, a float slope at its shortest
    # decimal repr (slope=0.3 means 3/10, so TPR - 0.3 FPR ties stay ties)
    slope = Fraction(n_neg, n_pos) if slope is None else Fraction(repr(float(slope)))
    distinct = sorted(set(s.tolist()), reverse=True)
    cands = [distinct[0]]
    for hi, lo in zip(distinct[:-1], distinct[1:]):
        t = (hi + lo) / 2
        if not lo <= t < hi:  # adjacent floats: the midpoint rounds onto hi
            t = lo
        cands.append(t)
    cands.append(distinct[-1] - 1.0)
    best, best_t = None, None
    for t in cands:
        pred = s > t
        tp = int(np.sum(pred & pos))
        fp = int(np.sum(pred & ~pos))
        obj = Fraction(tp, n_pos) - slope * Fraction(fp, n_neg)  # exact
        if best is None or obj > best:
            best, best_t = obj, t
    pred = s > best_t
    acc = (int(np.sum(pred & pos)) + int(np.sum(~pred & ~pos))) / n
    return acc, best_t


# ---- stochastic pairwise learners (issue 3) ----

def hinge_pair_steps(X, pos_rows, neg_rows, lam, t0, rskip, rule="subgradient",
                     askip=0, avg_power=0.0, schedule_after=False, margins=None):
    """SAM / ASAM / PSAM steps written plainly (D Alg. 10 / 11).

    ``rule="subgradient"``: ``w += eta z`` when ``w.z < 1``; ``rule="prox"``:
    ``w = hinge_prox(w, z, eta)``, ``eta = 1 / (lam (t + t0))`` at step ``t``.
    Scheduled shrink every ``rskip`` steps; with ``askip > 0`` a snapshot of ``w``
    every ``askip`` steps, the one after step ``t`` weighted by ``t ** avg_power``
    (0: the plain running mean). ``schedule_after``: every step first, then the
    schedule of every step (threads, ``aucopt._kernels._pairwise``: a lane other
    than the lead took all the pairs, and the lead applies the schedule after them).
    ``margins``: a list that gets each pair's ``w.z`` before its step.
    Returns ``(w, weighted mean of the snapshots or None)``.
    """
    X = np.asarray(X, dtype=np.float64)
    w = np.zeros(X.shape[1])
    total, weights = np.zeros(X.shape[1]), 0.0

    def schedule(w, t, total, weights):
        if t % rskip == 0:
            r = 1.0 - rskip / (t + t0)
            if r < 0.8:
                r = (1.0 - 1.0 / (t + t0)) ** rskip
            w = r * w
        if askip and t % askip == 0:
            total, weights = total + t ** avg_power * w, weights + t ** avg_power
        return w, total, weights

    for t, k in enumerate(range(len(pos_rows)), start=1):
        z = X[pos_rows[k]] - X[neg_rows[k]]
        eta = 1.0 / (lam * (t + t0))
        if margins is not None:
            margins.append(w @ z)
        if rule == "prox":
            w = hinge_prox(w, z, eta)
        elif w @ z < 1.0:
            w = w + eta * z
        if not schedule_after:
            w, total, weights = schedule(w, t, total, weights)
    for t in range(1, len(pos_rows) + 1) if schedule_after else ():
        w, total, weights = schedule(w, t, total, weights)
    return w, (total / weights if weights else None)


def hinge_prox(w, z, lam):
    """``argmin_v lam max(0, 1 - v.z) + 1/2 ||v - w||^2`` in closed form
    (D Appendix A, corrected: sign, ``z`` for ``g``, the step clipped to [0, 1]):
    ``w + lam clip((1 - w.z) /
    (lam ||z||^2), 0, 1) z``; ``w`` itself when ``z = 0``."""
    zz = z @ z
    if zz == 0.0:
        return w.copy()
    return w + lam * min(1.0, max(0.0, (1.0 - w @ z) / (lam * zz))) * z


def square_prox_pair_steps(X, pos_rows, neg_rows, step, weight, l1, l2, w=None, cap=0.0,
                           prox_after=False):
    """adaDSGD inner steps (A Alg. 1, eqs. 10-11, 24 corrected), with the
    elastic-net prox applied to EVERY coordinate at every step::

        w <- w + step weight 2 (1 - w.z) z ;  w <- soft(w, step l1) / (1 + step l2)

    With ``cap > 0`` a pair's step is multiplied by ``min(1, cap / max(||x_i||^2,
    ||x_j||^2))``. ``prox_after``: every gradient step first, then the prox of
    every step (threads: a lane other than the lead took all the pairs, and the
    lead applies the proximal steps after them)."""
    X = np.asarray(X, dtype=np.float64)
    w = np.zeros(X.shape[1]) if w is None else np.array(w, dtype=np.float64)

    def prox(w):
        return np.sign(w) * np.maximum(0.0, np.abs(w) - step * l1) / (1.0 + step * l2)

    for i, j in zip(pos_rows, neg_rows):
        z = X[i] - X[j]
        longest = max(X[i] @ X[i], X[j] @ X[j])
        c = min(1.0, cap / longest) if cap > 0 and longest > 0 else 1.0
        w = w + c * step * weight * 2.0 * (1.0 - w @ z) * z
        w = w if prox_after else prox(w)
    for _ in range(len(pos_rows)) if prox_after else ():
        w = prox(w)
    return w


def pairwise_hinge_objective(w, X, y, lam):
    """``lam/2 ||w||^2 + 1/(n+ n-) sum_{i pos, j neg} max(0, 1 - w.(x_i - x_j))`` and
    its (sub)gradient, by forming every pair's margin (D eq. 6.1)."""
    X = np.asarray(X, dtype=np.float64)
    s = X @ w
    pos, neg = y > 0, y < 0
    margins = s[pos][:, None] - s[neg][None, :]
    active = (margins < 1.0).astype(np.float64)
    n_pairs = margins.size
    value = 0.5 * lam * (w @ w) + np.maximum(0.0, 1.0 - margins).sum() / n_pairs
    coef = np.zeros(X.shape[0])
    coef[pos] = -active.sum(axis=1) / n_pairs
    coef[neg] = active.sum(axis=0) / n_pairs
    return value, lam * w + X.T @ coef


# ---- buffered online learners: OAM_seq, OAM_gra, CBR, CBR-diag (issue 4)

def buffer_update(buf, n_seen, t, x, capacity, policy, u=0.0, r=0.0):
    """UpdateBuffer (D Sec. 4.3) on a Python list of ``(t, x)`` kept in
    iteration order. ``n_seen`` already counts ``x`` (D Alg. 5's M_{t+1}).

    reservoir (Alg. 5): append while not full, else if ``u < M / n_seen`` replace
    slot ``floor(r M)``; FIFO: append, dropping the oldest when full.
    """
    if len(buf) < capacity:
        buf.append((t, x))
    elif policy == "reservoir":
        if u < capacity / n_seen:
            buf[min(int(r * capacity), capacity - 1)] = (t, x)
    else:
        buf.pop(0)
        buf.append((t, x))


def oam_seq_step(w, z, y, c_t):
    """One OAM_seq pair (thesis Alg. 6, PA-I closed form): ``u = y z``,
    ``l = max(0, 1 - w.u)``, ``w + min(C_t, l / ||u||^2) u`` when ``l > 0``."""
    u = y * np.asarray(z, dtype=float)
    loss = max(0.0, 1.0 - w @ u)
    if loss > 0 and u @ u > 0:
        w = w + min(c_t, loss / (u @ u)) * u
    return w


def oam_gra_step(w, x, buffer_rows, y, c_t):
    """OAM_gra against a whole buffer (thesis Alg. 7): margins at the frozen ``w``;
    each ``y w.(x - xb) <= 1`` adds ``C_t y (x - xb) / 2``."""
    w0 = np.array(w, dtype=float)
    w = w0.copy()
    for xb in buffer_rows:
        if y * (w0 @ (x - xb)) <= 1.0:
            w = w + c_t * y * (x - xb) / 2.0
    return w


def scw_alpha_u(m, v, C, phi):
    """``alpha`` and ``u`` of dissertation Prop. 1 / 2, written as printed."""
    psi, zeta = 1.0 + phi**2 / 2.0, 1.0 + phi**2
    alpha = min(C, max(0.0, (-m * psi + np.sqrt(m**2 * phi**4 / 4.0 + v * phi**2 * zeta))
                       / (v * zeta)))
    u = 0.25 * (-alpha * v * phi + np.sqrt(alpha**2 * v**2 * phi**2 + 4.0 * v)) ** 2
    return alpha, u


def cbr_step(mu, Sigma, z, y, C, phi, beta_form="scw"):
    """One CBR pair (D Prop. 1, corrected to SCW's beta): the dense SCW-I update with the
    outer product ``Sigma z z' Sigma``; ``beta_form='dissertation'`` uses the
    printed ``alpha phi / sqrt(u + v alpha phi)``. Pairs with ``v <= 0`` or
    ``alpha == 0`` leave the model as it is."""
    Sz = Sigma @ z
    v = z @ Sz
    m = y * (mu @ z)
    if v <= 0:
        return mu, Sigma
    alpha, u = scw_alpha_u(m, v, C, phi)
    if alpha == 0:
        return mu, Sigma
    if beta_form == "scw":
        beta = alpha * phi / (np.sqrt(u) + v * alpha * phi)
    else:
        beta = alpha * phi / np.sqrt(u + v * alpha * phi)
    return mu + alpha * y * Sz, Sigma - beta * np.outer(Sz, Sz)


def cbr_diag_step(mu, G, z, y, C, phi, diag_update="precision"):
    """One CBR-diag pair (Prop. 2): ``precision`` = D Prop. 2 corrected
    (``v = sum z^2/G``, ``G += alpha phi / sqrt(u) z^2``); ``dissertation`` = as
    printed (``v = sum z^2/(G + C)``, ``G += beta z^2``). ``mu += alpha y z / G``."""
    v = np.sum(z**2 / (G + C)) if diag_update == "dissertation" else np.sum(z**2 / G)
    m = y * (mu @ z)
    if v <= 0:
        return mu, G
    alpha, u = scw_alpha_u(m, v, C, phi)
    if alpha == 0:
        return mu, G
    if diag_update == "dissertation":
        gain = alpha * phi / np.sqrt(u + v * alpha * phi)
    else:
        gain = alpha * phi / np.sqrt(u)
    return mu + alpha * y * z / G, G + gain * z**2


def buffered_run(X, y, rule, C=1.0, capacity=50, policy="fifo", draws=None, eta=0.7,
                 literal=False, passes=1):
    """The whole buffered loop (D Alg. 4, N Alg. 4),
    plainly: per arrival, count it, update its class's buffer, then update the model
    against the opposite buffer in iteration order with ``z = x_t - x``.
    ``rule`` in {'oam_seq', 'oam_gra', 'cbr', 'cbr_diag'}; OAM uses
    ``C_t = C max(1, M_opp^t / M_opp)``, CBR ``C_t = C``. ``draws[t] = (u, r)``.
    ``literal`` selects the printed beta (cbr) / Prop. 2 (cbr_diag). ``passes``
    repeats the rows in the same order; OAM's ``M_opp^t`` in ``C_t`` then stops at
    the class's rows of one pass.

    Returns ``(w, G, Sigma, buffers)`` with ``buffers = {-1: [(t, x)...], 1: [...]}``.
    """
    from statistics import NormalDist

    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    w, G, Sigma = np.zeros(d), np.ones(d), np.eye(d)
    phi = NormalDist().inv_cdf(eta)
    buffers = {-1: [], 1: []}
    seen = {-1: 0, 1: 0}
    once = {label: int(np.sum((np.asarray(y) > 0) == (label > 0))) for label in (-1, 1)}
    n = len(y)
    for t in range(passes * n):
        x, yt = X[t % n], (1 if y[t % n] > 0 else -1)
        seen[yt] += 1
        u, r = (draws[t] if draws is not None else (0.0, 0.0))
        buffer_update(buffers[yt], seen[yt], t, x, capacity, policy, u, r)
        opposite = [xb for _, xb in buffers[-yt]]
        received = seen[-yt] if t < n else min(seen[-yt], once[-yt])
        c_t = C * max(1.0, received / capacity)
        if rule == "oam_gra":
            w = oam_gra_step(w, x, opposite, yt, c_t)
            continue
        for xb in opposite:
            if rule == "oam_seq":
                w = oam_seq_step(w, x - xb, yt, c_t)
            elif rule == "cbr":
                w, Sigma = cbr_step(w, Sigma, x - xb, yt, C, phi,
                                    "dissertation" if literal else "scw")
            else:
                w, G = cbr_diag_step(w, G, x - xb, yt, C, phi,
                                     "dissertation" if literal else "precision")
    return w, G, Sigma, buffers

# ---- square-loss / saddle-point learners (issue 5)


def opauc_bruteforce_gradient(w, x, y, X_opp, lam):
    """Gradient of OPAUC's per-step loss L_t (O Sec. 3) by summing over every earlier
    opposite-class row ``X_opp`` (an array of rows): ``L_t(w) = lam/2 ||w||^2 +
    sum_i (1 - y (x - x_i).w)^2 / (2 T)``."""
    X_opp = np.asarray(X_opp, dtype=np.float64)
    g = lam * np.asarray(w, dtype=np.float64).copy()
    for xi in X_opp:
        z = x - xi
        g -= (1.0 - y * (z @ w)) * y * z / len(X_opp)
    return g


def opauc_steps_ref(X, y, eta, lam, ada=None, delta=0.5):
    """OPAUC (O Alg. 1) or, with ``ada=True``, AdaOAM (N Alg. 9, Euclidean projection),
    over the rows in order, with the brute-force gradient over all stored rows.
    Returns the final ``w``."""
    X = np.asarray(X, dtype=np.float64)
    w = np.zeros(X.shape[1])
    G = np.zeros(X.shape[1])
    seen = {1.0: [], -1.0: []}
    for x, yt in zip(X, y):
        seen[yt].append(x)
        opp = seen[-yt]
        if not opp:
            continue
        g = opauc_bruteforce_gradient(w, x, yt, opp, lam)
        if ada:
            G += g * g
            w = w - eta * g / (delta + np.sqrt(G))
            norm = np.linalg.norm(w)
            if norm > 1.0 / np.sqrt(lam):
                w = w / (norm * np.sqrt(lam))
        else:
            w = w - eta * g
    return w


def opaucr_steps_ref(X, y, rho, eta, lam):
    """OPAUCr (O eqs. 6-11, scaled and centred as corrected) with dense ``w`` and explicit
    sketches:
    ``Z_c = sum x r^T``, ``q_c = sum r``, ``S_hat w = Zc Zc^T w / T``, ``Zc = Z - c q^T``.
    ``rho[i]`` is row i's draw (already scaled by 1/sqrt(tau)). Returns ``(w, Z, q)``
    with Z, q indexed by class (0 negative, 1 positive)."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    tau = rho.shape[1]
    w = np.zeros(d)
    Z = np.zeros((2, d, tau))
    q = np.zeros((2, tau))
    s = np.zeros((2, d))
    T = np.zeros(2)
    for x, yt, r in zip(X, y, rho):
        c = 1 if yt > 0 else 0
        o = 1 - c
        Z[c] += np.outer(x, r)
        q[c] += r
        s[c] += x
        T[c] += 1
        if T[o] == 0:
            continue
        mean = s[o] / T[o]
        Zc = Z[o] - np.outer(mean, q[o])
        Sw = Zc @ (Zc.T @ w) / T[o]
        k = (x - mean) @ w
        g = lam * w + Sw + (k - yt) * (x - mean)
        w = w - eta * g
    return w, Z, q


def uniexp_steps_ref(X, y, eta, cap=0.0, clip=30.0):
    """Online Uni-Exp as reconstructed from Kotlowski et al., Bipartite Ranking through
    Minimization of Univariate Loss, 2011; with ``cap > 0`` a row's step is multiplied
    by ``min(1, cap / ||x||^2)``; the exponent is at most ``clip``."""
    X = np.asarray(X, dtype=np.float64)
    w = np.zeros(X.shape[1])
    T = {1.0: 0, -1.0: 0}
    for t, (x, yt) in enumerate(zip(X, y), start=1):
        T[yt] += 1
        step = eta * (t / T[yt]) * yt * np.exp(min(-yt * (w @ x), clip))
        if cap > 0 and x @ x > cap:
            step *= cap / (x @ x)
        w = w + step * x
    return w


def saddle_grads_ref(w, a, b, alpha, x, y, p):
    """Gradients of F(w, a, b, alpha; (x, y)) (N eq. 2.23) w.r.t. w, a, b, alpha,
    written out from the definition."""
    s = w @ x
    if y > 0:
        return (2 * (1 - p) * (s - a) * x - 2 * (1 + alpha) * (1 - p) * x,
                -2 * (1 - p) * (s - a), 0.0, -2 * (1 - p) * s - 2 * p * (1 - p) * alpha)
    return (2 * p * (s - b) * x + 2 * (1 + alpha) * p * x, 0.0, -2 * p * (s - b),
            2 * p * s - 2 * p * (1 - p) * alpha)


def step_factor_ref(x, cap):
    """``min(1, cap / ||x||^2)`` (1 for ``cap = 0``): the factor on a row's step."""
    q = x @ x
    return cap / q if 0 < cap < q else 1.0


def solam_steps_ref(X, y, eta, lam, R, kappa, n_epochs=1, cap=0.0):
    """SOLAM / regSOLAM (N Alg. 10 / 18, alpha by ascent): gamma_t = eta/sqrt(t),
    running p_hat, projected descent in (w, a, b), ascent in alpha, gamma-weighted
    averages of the pre-update iterates; with ``cap`` a row's step (not its weight
    in the averages) times ``step_factor_ref``. Returns ``(wbar, abar, bbar,
    alphabar)``."""
    X = np.asarray(X, dtype=np.float64)
    w = np.zeros(X.shape[1])
    a = b = alpha = 0.0
    wsum = np.zeros(X.shape[1])
    asum = bsum = alsum = gsum = 0.0
    t = npos = 0
    for _ in range(n_epochs):
        for x, yt in zip(X, y):
            t += 1
            npos += yt > 0
            p = npos / t
            gam = eta / np.sqrt(t)
            wsum += gam * w
            asum += gam * a
            bsum += gam * b
            alsum += gam * alpha
            gsum += gam
            dw, da, db, dal = saddle_grads_ref(w, a, b, alpha, x, yt, p)
            gam *= step_factor_ref(x, cap)
            w = w - gam * (dw + lam * w)
            a, b, alpha = a - gam * da, b - gam * db, alpha + gam * dal
            norm = np.linalg.norm(w)
            if norm > R:
                w = w * (R / norm)
            a = min(max(a, -R * kappa), R * kappa)
            b = min(max(b, -R * kappa), R * kappa)
            alpha = min(max(alpha, -2 * R * kappa), 2 * R * kappa)
    return wsum / gsum, asum / gsum, bsum / gsum, alsum / gsum


def spam_steps_ref(X, y, order, m_pos, m_neg, p, lam, lam1, eta, t0, invsqrt=False,
                   w=None, t=0, cap=0.0):
    """SPAM-L2 (``lam1 = 0``) / SPAM-NET (N Alg. 20) over X[order]:
    a(w) = w.m+, b(w) = w.m-, alpha(w) = b - a recomputed from w at every step, the
    prox applied to every coordinate; with ``cap`` a row's ``eta_t`` times
    ``step_factor_ref``. Returns ``(w, t)``."""
    X = np.asarray(X, dtype=np.float64)
    w = np.zeros(X.shape[1]) if w is None else np.array(w, dtype=np.float64)
    for i in order:
        t += 1
        et = eta / np.sqrt(t + t0) if invsqrt else eta / (lam * (t + t0))
        et *= step_factor_ref(X[i], cap)
        a, b = w @ m_pos, w @ m_neg
        dw, _, _, _ = saddle_grads_ref(w, a, b, b - a, X[i], y[i], p)
        w_hat = w - et * dw
        w = np.sign(w_hat) * np.maximum(np.abs(w_hat) - et * lam1, 0.0) / (1 + et * lam)
    return w, t


def spdam_objective_ref(w, X, y, lam, scaling="consistent"):
    """SPDAM's primal objective (N eq. 5.8 after the dual maximisation, rows
    transformed with sqrt(p_y); ``scaling="printed"`` uses sqrt(2 p_y)):
    ``(1/2n) sum (w.xt_i)^2 + 1/2 (bvec.w)^2 + bvec.w + lam/2 ||w||^2``."""
    X = np.asarray(X, dtype=np.float64)
    pos = y > 0
    p = pos.mean()
    k = 2.0 if scaling == "printed" else 1.0
    m_pos, m_neg = X[pos].mean(axis=0), X[~pos].mean(axis=0)
    Xt = np.where(pos[:, None], (X - m_pos) / np.sqrt(k * p), (X - m_neg) / np.sqrt(k * (1 - p)))
    bvec = m_neg - m_pos
    return (np.sum((Xt @ w) ** 2) / (2 * len(y)) + 0.5 * (bvec @ w) ** 2 + bvec @ w
            + 0.5 * lam * (w @ w))

# ---- batch pairwise learner BAM = linear PRSVM+ (Chapelle & Keerthi 2010; D Alg. 1)


def prsvm_pairs(X, y):
    """Every (positive, negative) pair of rows as an ``(r, d)`` array of
    differences ``x_i - x_j`` (i positive, j negative), in the order of the double loop."""
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    pos = _pos_mask(y)
    return np.array([xi - xj for xi in X[pos] for xj in X[~pos]])


def pair_squared_hinge_ref(o, y, delta=None, c=None):
    """PRSVM+ loss on the scores ``o`` summed over every pair, written from its definition:
    ``L = sum_{i pos, j neg} c_i c_j max(0, 1 - (o_i - o_j))^2`` (row weights ``c``,
    default 1). Returns ``(L, dL/do, alpha)`` where ``alpha_k`` sums the weights of the
    opposite rows in the active pairs (``1 - (o_i - o_j) > 0``, strictly) of row k (their
    count when unweighted); with ``delta`` also ``z = (H_L delta) / 2`` for the
    generalised Hessian ``H_L`` of L in ``o`` (active pairs only): ``z_i = sum_j active
    c_i c_j (delta_i - delta_j)`` for a positive i, ``z_j = sum_i active c_i c_j (delta_j
    - delta_i)`` for a negative j."""
    o = np.asarray(o, dtype=np.float64)
    pos = _pos_mask(y)
    n = len(o)
    c = np.ones(n) if c is None else np.asarray(c, dtype=np.float64)
    L = 0.0
    grad, alpha, z = np.zeros(n), np.zeros(n), np.zeros(n)
    for i in np.flatnonzero(pos):
        for j in np.flatnonzero(~pos):
            m = 1.0 - (o[i] - o[j])
            if m > 0:
                cc = c[i] * c[j]
                L += cc * m * m
                grad[i] -= 2 * cc * m
                grad[j] += 2 * cc * m
                alpha[i] += c[j]
                alpha[j] += c[i]
                if delta is not None:
                    z[i] += cc * (delta[i] - delta[j])
                    z[j] += cc * (delta[j] - delta[i])
    return (L, grad, alpha) if delta is None else (L, grad, alpha, z)


def prsvm_objective_ref(w, X, y, C, s=None):
    """``F(w) = 1/2 ||w||^2 + C sum_pairs max(0, 1 - w.(x_i - x_j))^2`` (D eq. 3.1) over the
    explicit pair matrix, its gradient ``w - 2 C sum_pairs max(0, 1 - m) (x_i - x_j)`` and,
    with ``s``, the generalised Hessian product ``s + 2 C sum_{m < 1} (x_i - x_j)(x_i - x_j).s``.
    Returns ``(F, grad)`` or ``(F, grad, Hs)``."""
    w = np.asarray(w, dtype=np.float64)
    Z = prsvm_pairs(X, y)
    m = 1.0 - Z @ w
    act = m > 0
    F = 0.5 * w @ w + C * np.sum(m[act] ** 2)
    grad = w - 2 * C * Z[act].T @ m[act]
    if s is None:
        return F, grad
    return F, grad, s + 2 * C * Z[act].T @ (Z[act] @ s)


def prsvm_line_min_ref(w, s, X, y, C):
    """Exact minimiser over ``t >= 0`` of ``F(w + t s)`` (F as in ``prsvm_objective_ref``) by
    enumerating every pair's breakpoint ``t_p`` (where ``1 - (w + t s).z_p`` changes sign):
    between consecutive breakpoints the active set is fixed and F is a quadratic
    ``a t^2 + b t + c`` whose minimiser is clipped to the interval. Returns ``(t, F(w + t s))``."""
    w, s = np.asarray(w, dtype=np.float64), np.asarray(s, dtype=np.float64)
    Z = prsvm_pairs(X, y)
    m0, dm = 1.0 - Z @ w, -(Z @ s)      # margin term along the line: m0 + t dm
    cuts = sorted({-a / b for a, b in zip(m0, dm) if b != 0 and -a / b > 0})
    edges = [0.0] + cuts + [np.inf]
    best_t, best_f = 0.0, np.inf
    for lo, hi in zip(edges[:-1], edges[1:]):
        probe = lo + 1.0 if hi == np.inf else 0.5 * (lo + hi)
        act = m0 + probe * dm > 0
        a = 0.5 * s @ s + C * np.sum(dm[act] ** 2)
        b = w @ s + 2 * C * np.sum(m0[act] * dm[act])
        t = min(max(-b / (2 * a), lo), hi)
        m = m0 + t * dm
        f = 0.5 * (w + t * s) @ (w + t * s) + C * np.sum(np.maximum(m, 0) ** 2)
        if f < best_f:
            best_t, best_f = t, f
    return best_t, best_f



def fsauc_omega1_ref(v, R, Rk):
    """Projection of ``v = (w, a, b)`` onto FSAUC's / SOLAM's Omega1 =
    {||w|| <= R, |a| <= Rk, |b| <= Rk}: scale w to the ball, clip a and b."""
    v = np.array(v, dtype=np.float64)
    norm = np.linalg.norm(v[:-2])
    if norm > R:
        v[:-2] *= R / norm
    v[-2:] = np.clip(v[-2:], -Rk, Rk)
    return v


def fsauc_dykstra_ref(u, c, R, Rk, r, n_iter=20000):
    """Projection of ``u`` onto Omega1 ∩ Ball(c, r) by Dykstra's alternating
    projections (converges to the exact projection onto the intersection)."""
    x = np.array(u, dtype=np.float64)
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    for _ in range(n_iter):
        y_ = fsauc_omega1_ref(x + p, R, Rk)
        p = x + p - y_
        z = y_ + q - c
        norm = np.linalg.norm(z)
        x_new = c + z * min(1.0, r / norm) if norm > 0 else c.copy()
        q = y_ + q - x_new
        if np.array_equal(x_new, x):
            break
        x = x_new
    return x


def fsauc_project_ref(u, c, R, Rk, r):
    """Projection of ``u`` onto Omega1 ∩ Ball(c, r) (c in Omega1) on explicit vectors:
    ``P_Omega1(c + t (u - c))`` with the largest t in [0, 1] whose point lies within r
    of c, found by 200 bisection steps (the characterisation is checked against
    :func:`fsauc_dykstra_ref` in the tests)."""
    def point(t):
        return fsauc_omega1_ref(c + t * (u - c), R, Rk)
    if np.linalg.norm(point(1.0) - c) <= r:
        return point(1.0)
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.linalg.norm(point(mid) - c) <= r:
            lo = mid
        else:
            hi = mid
    return point(lo)


def fsauc_stage_ref(X, y, order, w1, a1, b1, alpha1, eta, R, kappa, r, D, cap=0.0,
                    trace=None):
    """One PDSG stage of FSAUC (Liu et al. 2018) over X[order], on dense vectors.

    Per step: class sums/counts and p_hat = T+/t including the row; gradients of
    SOLAM's F (:func:`saddle_grads_ref`); (w, a, b) descends and is projected onto
    Omega1 ∩ Ball((w1, a1, b1), r) (:func:`fsauc_project_ref`); alpha ascends and is
    clipped to [-2R kappa, 2R kappa] ∩ [alpha1 - D, alpha1 + D]; with ``cap`` a
    row's step times ``step_factor_ref``. Returns
    ``(w_avg, a_avg, b_avg, sums, (n_neg, n_pos), (w, a, b, alpha))``, the averages
    over the pre-update iterates v_1 .. v_T. With ``trace`` (a list), the result
    after every prefix ``order[:t]`` is appended to it (the same numbers as a call on
    that prefix)."""

    def result(t):
        avg = v_sum / t
        return (avg[:d], avg[d], avg[d + 1], sums.copy(), (counts[0], counts[1]),
                (v[:d].copy(), v[d], v[d + 1], alpha))

    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    Rk = R * kappa
    c = np.concatenate([w1, [a1, b1]])
    v = c.copy()
    alpha = alpha1
    sums = np.zeros((2, d))
    counts = [0, 0]
    v_sum = np.zeros(d + 2)
    for t, i in enumerate(order, start=1):
        cls = 1 if y[i] > 0 else 0
        counts[cls] += 1
        sums[cls] += X[i]
        p = counts[1] / t
        v_sum += v
        dw, da, db, dal = saddle_grads_ref(v[:d], v[d], v[d + 1], alpha, X[i], y[i], p)
        et = eta * step_factor_ref(X[i], cap)
        u = v - et * np.concatenate([dw, [da, db]])
        alpha = min(max(alpha + et * dal, -2 * Rk, alpha1 - D), 2 * Rk, alpha1 + D)
        v = fsauc_project_ref(u, c, R, Rk, r)
        if trace is not None:
            trace.append(result(t))
    return result(len(order))


def fsauc_ref(X, y, order, R, G, kappa, delta=0.1, steps="lemma"):
    """FSAUC (Liu et al. 2018) on dense rows, samples X[order], written out:
    m = max(1, floor(log2(2n / log2 n) / 2) - 1) stages of n0 = n // m samples;
    R_0 = 2 sqrt(1 + 2 kappa^2) R, beta_0 = 1 + 8 kappa^2, D_0 = 2 sqrt(2) kappa R_0;
    stage k: eta = sqrt(beta) R_{k-1} / (G sqrt(2 n0)) (``steps="halving"``: that value
    in stage 1, then half the previous eta), :func:`fsauc_stage_ref` from the
    previous stage's average, alpha_k = (mean of negatives - mean of positives) . w_k
    (clipped to |alpha| <= 2 R kappa), R_k = R_{k-1}/2, then beta, D from Lemma 1 with
    the positive rate of all samples so far (beta kept and D = inf when a denominator
    is <= 0). Returns the last stage's average w."""
    n = len(order)
    m = max(1, int(np.floor(0.5 * np.log2(2 * n / np.log2(n)))) - 1)
    n0 = n // m
    r = 2 * np.sqrt(1 + 2 * kappa ** 2) * R
    beta = 1 + 8 * kappa ** 2
    D = 2 * np.sqrt(2) * kappa * r
    w = np.zeros(np.shape(X)[1])
    a = b = alpha = 0.0
    n_pos = n_seen = 0
    L = np.log(12 / delta)
    eta1 = np.sqrt(beta) * r / (G * np.sqrt(2 * n0))
    for k in range(m):
        if steps == "lemma":
            eta = np.sqrt(beta) * r / (G * np.sqrt(2 * n0))
        else:
            eta = eta1 / 2 ** k
        stage = order[k * n0:(k + 1) * n0]
        w, a, b, sums, (cn, cp), _ = fsauc_stage_ref(X, y, stage, w, a, b, alpha, eta, R,
                                                     kappa, r, D)
        a = min(max(a, -R * kappa), R * kappa)
        b = min(max(b, -R * kappa), R * kappa)
        if cn > 0 and cp > 0:
            alpha = (sums[0] / cn - sums[1] / cp) @ w
            alpha = min(max(alpha, -2 * R * kappa), 2 * R * kappa)
        n_pos += cp
        n_seen += cn + cp
        r = r / 2
        q = min(n_pos / n_seen, 1 - n_pos / n_seen)
        if q - np.sqrt(2 * L / n0) > 0 and q * n0 - np.sqrt(2 * n0 * L) > 0:
            beta = (1 + 8 * kappa ** 2 + 32 * kappa ** 2 * (1 + 2 * kappa) ** 2
                    * (2 + np.sqrt(2 * L)) ** 2 / (q - np.sqrt(2 * L / n0)))
            D = (2 * np.sqrt(2) * kappa * r + 4 * np.sqrt(2) * kappa * (2 + np.sqrt(2 * L))
                 * (1 + 2 * kappa) * R / np.sqrt(q * n0 - np.sqrt(2 * n0 * L)))
        else:
            D = np.inf
    return w


def pairwise_square_minimiser(X, y, lam):
    """Minimiser of ``lam/2 ||w||^2 + sum_{i pos, j neg} (1 - w.(x_i - x_j))^2 /
    (2 n+ n-)`` (Gao et al. 2013, eq. 2) from every pair difference: the normal
    equations ``(lam I + D^T D / k) w = D^T 1 / k`` over the ``k = n+ n-`` rows of
    ``D``."""
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    pos = _pos_mask(y)
    D = (X[pos][:, None, :] - X[~pos][None, :, :]).reshape(-1, X.shape[1])
    k = D.shape[0]
    return np.linalg.solve(lam * np.eye(X.shape[1]) + D.T @ D / k, D.sum(axis=0) / k)


def sketched_square_minimiser(Z, q, counts, sums, lam):
    """The same objective with each class covariance replaced by its centred
    sketch ``Zc Zc^T / T`` (``Zc = Z - m q^T``, OPAUCr), solved densely (d x d)."""
    m = sums / counts[:, None]
    delta = m[1] - m[0]
    A = lam * np.eye(sums.shape[1]) + np.outer(delta, delta)
    for c in range(2):
        Zc = Z[c] - np.outer(m[c], q[c])
        A += Zc @ Zc.T / counts[c]
    return np.linalg.solve(A, delta)


def auc_pairs_weighted(y, s, w):
    """Weighted AUC by visiting every (positive, negative) pair: O(n+ n-) time.

    Each pair counts ``w_i w_j`` (a tie half of it), normalised by the product of
    the class weights: with integer weights, the AUC of the rows repeated.
    """
    pos = _pos_mask(y)
    s = np.asarray(s, dtype=float)
    w = np.asarray(w, dtype=float)
    num = 0.0
    for a, wa in zip(s[pos], w[pos]):
        for b, wb in zip(s[~pos], w[~pos]):
            num += wa * wb * (1.0 if a > b else 0.5 if a == b else 0.0)
    return num / (w[pos].sum() * w[~pos].sum())


def precision_at_k_bruteforce(y, s, k):
    """Top-k precision with ties broken at random, in expectation: each sample of
    the tied group at the k-th place is in the top k with probability (places left)
    / (group size). Counts every sample once (no weights)."""
    pos = _pos_mask(y)
    s = np.asarray(s, dtype=float)
    left, hits = float(k), 0.0
    for t in sorted(set(s.tolist()), reverse=True):
        group = s == t
        size = int(group.sum())
        take = min(left, size)
        hits += take * int(np.sum(group & pos)) / size
        left -= take
        if left <= 0:
            break
    return hits / k
