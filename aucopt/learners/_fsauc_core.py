"""FSAUC: fast stochastic AUC maximization by restarted primal-dual SGD.

Liu, Zhang, Chen, Wang & Yang, "Fast Stochastic AUC Maximization with
O(1/n)-Convergence Rate", ICML 2018. The core routine :func:`fsauc_fit`; the
registered learner wraps it.

Problem. The square-loss AUC surrogate as the saddle problem of Ying, Wen & Lyu,
"Stochastic Online AUC Maximization", NeurIPS 2016 (SOLAM)::

    min_{v=(w,a,b) in Omega1} max_{alpha in Omega2} E[F(w, a, b, alpha; x, y)]
    F = (1-p)(w.x - a)^2 I[y=1] + p (w.x - b)^2 I[y=-1]
        + 2(1+alpha)(p w.x I[y=-1] - (1-p) w.x I[y=1]) - p(1-p) alpha^2
    Omega1 = {||w|| <= R, |a| <= R kappa, |b| <= R kappa},  Omega2 = {|alpha| <= 2 R kappa}

with ``p = Pr(y = 1)``, ``kappa = sup ||x||`` (here: the largest row norm) and
Euclidean norms. The gradients are those of SOLAM (``dF/dw`` is a multiple of
``x``); ``p`` is replaced by the running positive rate ``p_hat``.

Algorithm (FSAUC with its PDSG subroutine and the constants of its Lemma 1).
``n`` = number of samples (``n_passes`` times the rows, each pass in a fresh
random order)::

    m = max(1, floor(1/2 log2(2n / log2 n)) - 1) stages of n0 = floor(n / m) samples
    R0 = 2 sqrt(1 + 2 kappa^2) R,  beta0 = 1 + 8 kappa^2,  D0 = 2 sqrt(2) kappa R0
    G  > max{(1 + 4 kappa) kappa (R + 1), 2 kappa (2R + 1 + 2R kappa),
             2 kappa (4 kappa R + 11 R + 1)}                 (gradient bound)
    v_0 = (0, 0, 0), alpha_0 = 0
    for k = 1 .. m:
        eta_k = sqrt(beta_{k-1}) R_{k-1} / (G sqrt(2 n0))
        PDSG on the stage's n0 samples, from (v_{k-1}, alpha_{k-1}); for t = 1 .. n0:
            A+-, T+- <- class sums and counts of the stage's samples so far (x_t included)
            p_hat = T+ / t
            v_{t+1}     = P_{Omega1 ∩ Ball(v_{k-1}, R_{k-1})}(v_t - eta_k grad_v F(v_t, alpha_t))
            alpha_{t+1} = P_{Omega2 ∩ [alpha_{k-1} - D_{k-1}, alpha_{k-1} + D_{k-1}]}
                              (alpha_t + eta_k grad_alpha F(v_t, alpha_t))
        v_k     = (1/n0) sum_{t=1..n0} v_t                    (average of the iterates)
        alpha_k = (A-/T- - A+/T+) . w_k                       (closed form, clipped to Omega2)
        R_k = R_{k-1} / 2
        with L = log(12 / delta), q = min(p_hat, 1 - p_hat):
        beta_k = 1 + 8 kappa^2 + 32 kappa^2 (1 + 2 kappa)^2 (2 + sqrt(2L))^2 / (q - sqrt(2L / n0))
        D_k    = 2 sqrt(2) kappa R_k
                 + 4 sqrt(2) kappa (2 + sqrt(2L)) (1 + 2 kappa) R / sqrt(q n0 - sqrt(2 n0 L))
    return w_m

``alpha_k`` is the maximiser of the expected ``F`` at ``w_k`` (``alpha*(w) =
w.(E[x|y=-1] - E[x|y=1])``) with the class means estimated from the stage; the
restarts from the stage average inside shrinking balls give the O~(1/n) rate.
The projection onto ``Omega1 ∩ Ball(c, r)`` is exact: it is ``P_Omega1(c + t (u -
c))`` with ``t`` in (0, 1] the largest value whose point stays within ``r`` of
``c`` (``t = 1`` when ``P_Omega1(u)`` already does), found in closed form or by a
one-dimensional bracketed search on scalars (``aucopt._kernels._fsauc``).

Cost. O(nnz) per step on CSR input: ``w = w_c + sigma w_c + s v`` with the
stage centre ``w_c``, scalars ``sigma``, ``s`` and maintained ``||w - w_c||^2``,
``(w - w_c).w_c``, so every projection is O(1); the class sums are sparse adds
and the average is lazy. O(d) per stage (average, ``alpha_k``). Dense and CSR
input give bit-identical models; the row order comes from ``random_state``.

Where the sources differ, what is implemented. Besides the paper's abstract, the
sources are the review of FSAUC in M. Natole Jr.'s PhD thesis on stochastic AUC
maximization (University at Albany; it prints the two algorithms without their
updates) and three public implementations: MATLAB code by the paper's second
author and two Python ports, all distributed with the sparse-auc project of
Zhou et al. (directory ``baselines/icml18_fsauc`` and its C version).

* Constants. The thesis prints ``beta0 = (1 + 8 kappa)^2`` and ``R0 = 2 sqrt(1 +
  2 kappa^2)`` (without ``R``) and does not state the ``beta``/``D`` updates
  ("Lemma 1"). We use the authors' ``R0 = 2 sqrt(1 + 2 kappa^2) R`` and ``beta0
  = 1 + 8 kappa^2`` (the ports): with ``D0 = 2 sqrt(2) kappa R0`` it is ``(R0^2
  + D0^2) / R0^2``, the primal-dual domain size the step ``eta_1`` balances, and
  the leading term of ``beta_k``. ``D_k`` is the authors' formula, ``beta_k``
  the ports' (the authors' code has no ``beta``); ``delta = 0.1`` in all three.
* ``p`` in ``beta_k``, ``D_k`` is the unknown positive rate in the analysis; we
  use the positive rate of all samples seen so far. When a denominator is not
  positive (``n0 <= 2L / q^2``: too few samples per stage for the concentration
  bound, e.g. small or very imbalanced data) the bound does not exist: we set
  ``D_k = inf`` (``alpha`` stays in Omega2 only) and keep ``beta_k =
  beta_{k-1}`` (the step then halves with the radius). The ports use 1e7 for
  both.
* The thesis projects ``alpha`` onto ``Omega1 ∩ Ball(alpha_{k-1}, r)``; it is
  ``Omega2`` and the dual radius is ``D`` (as in all three codes). PDSG's class
  sums, counts and ``p_hat`` start from zero in every stage, as the thesis
  prints; the authors' code and one port carry them across stages.
* ``Omega1`` uses the Euclidean norm of ``w`` (SOLAM's domain; O(nnz) steps).
  The three codes project ``w`` onto an l1 ball, and they project onto
  ``Omega1`` and then onto the ball, which is not the projection onto the
  intersection; we compute the exact projection onto the intersection.
* Averages are over ``v_1 .. v_T`` (``v_1`` = the centre), as the thesis
  prints; the codes average the iterates after each update. ``m >= 1`` for
  every ``n`` (the formula gives ``m <= 0`` below ~40 samples); the ``n - m n0``
  samples left over are not used.
* Step sizes. The printed ``eta_k = sqrt(beta_{k-1}) R_{k-1} / (G sqrt(2 n0))``
  (``steps="lemma"``, the default) multiplies the first stage's step by
  ``sqrt(beta_1 / beta_0) / 2`` in the second stage: about ``(1 + 2 kappa)
  sqrt(26 / q)``, i.e. x20 for unit rows and balanced classes, far more when
  ``q - sqrt(2L / n0)`` is barely positive (small ``n0``). Then it halves. The
  authors' code instead halves the step at every restart (``steps="halving"``:
  ``eta_k = eta_1 / 2^(k-1)``, same ``eta_1``); the ports cap ``eta_k`` at
  ``eta_{k-1}``. When a cross-validation fold has fewer stages than the final
  fit (small sets: ``m`` grows with ``n``), parameters tuned on the folds never
  saw the jump and ``"lemma"`` can fail; ``"halving"`` does not.
* ``G``: the analysis needs ``G`` above the bound; experiments tune it. The
  default is the bound itself. In the codes the tuned value (the ports' grid:
  2^[-10:10]) is the first step size; here ``G`` keeps the paper's role
  (``eta_1 = sqrt(beta0) R0 / (G sqrt(2 n0))``), so tune it around the bound,
  e.g. ``G_bound * 2^[-10:10]`` (``info["G_bound"]``).
* ``cap`` (not in the paper or the codes; the registered learner's default for
  data with outlier rows): a row whose squared norm exceeds ``cap > 0`` takes
  its step times ``cap / ||x||^2``; ``cap = 0`` is the paper's step.
"""
import math

import numpy as np

from aucopt._kernels._fsauc import StagePoint, StageSteps, fsauc_stage
from aucopt._kernels._rows import RowSource
from aucopt.validation import check_count, check_positive, check_random_state

__all__ = ["fsauc_fit", "fsauc_schedule", "fsauc_gradient_bound", "fsauc_lemma1"]


def fsauc_schedule(n_samples):
    """Number of stages ``m`` and stage length ``n0`` for ``n_samples`` samples.

    ``m = max(1, floor(1/2 log2(2n / log2 n)) - 1)``, ``n0 = floor(n / m)``.
    """
    check_count("n_samples", n_samples, minimum=2)
    n = float(n_samples)
    m = max(1, math.floor(0.5 * math.log2(2.0 * n / math.log2(n))) - 1)
    return m, n_samples // m


def fsauc_gradient_bound(kappa, R):
    """FSAUC's bound on the stochastic gradients; ``G`` must exceed it."""
    return max((1.0 + 4.0 * kappa) * kappa * (R + 1.0),
               2.0 * kappa * (2.0 * R + 1.0 + 2.0 * R * kappa),
               2.0 * kappa * (4.0 * kappa * R + 11.0 * R + 1.0))


def fsauc_lemma1(p, n0, kappa, R, radius, delta, beta_prev):
    """``(beta_k, D_k)`` after a stage, for positive rate ``p`` and the new ``radius``.

    Returns ``(beta_prev, inf)`` when ``n0`` is too small for the bound
    (see the module docstring).
    """
    L = math.log(12.0 / delta)
    c = 2.0 + math.sqrt(2.0 * L)
    q = min(p, 1.0 - p)
    den_beta = q - math.sqrt(2.0 * L / n0)
    den_d = q * n0 - math.sqrt(2.0 * n0 * L)
    if den_beta <= 0.0 or den_d <= 0.0:
        return beta_prev, math.inf
    beta = 1.0 + 8.0 * kappa ** 2 + 32.0 * kappa ** 2 * (1.0 + 2.0 * kappa) ** 2 * c * c / den_beta
    D = (2.0 * math.sqrt(2.0) * kappa * radius
         + 4.0 * math.sqrt(2.0) * kappa * c * (1.0 + 2.0 * kappa) * R / math.sqrt(den_d))
    return beta, D


def _check_labels(y, n_rows):
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise ValueError(f"y must be 1-D with one label per row ({n_rows}), got shape {y.shape}")
    if y.dtype != np.float64:
        raise TypeError(f"y must be float64 in {{-1, +1}}, got dtype {y.dtype}")
    if not np.all((y == 1.0) | (y == -1.0)):
        raise ValueError("y must hold only -1.0 and +1.0 (map the labels first)")
    if not (np.any(y > 0) and np.any(y < 0)):
        raise ValueError("y needs both classes: FSAUC ranks positives above negatives")
    return np.ascontiguousarray(y)


def fsauc_fit(X, y, *, R=10.0, G=None, n_passes=1, delta=0.1, kappa=None, random_state=None,
              steps="lemma", cap=0.0):
    """Train FSAUC (Liu et al. 2018) and return the ranking direction.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features) or scipy.sparse CSR matrix
        C-contiguous float64 array, or CSR with float64 values and canonical
        (sorted, duplicate-free) indices (``aucopt.validation.check_X`` gives either).
    y : ndarray of shape (n_samples,)
        float64 labels in {-1, +1}, both present.
    R : float, default=10.0
        Radius of the ``w`` ball (``||w|| <= R``); it also bounds ``a``, ``b``,
        ``alpha`` and scales ``R0``. The sparse-auc experiments tune it on
        10^[-1:5]; 10 is what 3-fold cross-validation on that grid chose most
        often for unit-norm rows in our runs (with ``G`` tuned).
    G : float or None, default=None
        Gradient-bound constant in the step ``eta_k = sqrt(beta_{k-1}) R_{k-1} /
        (G sqrt(2 n0))``. None: the bound of the analysis,
        ``max{(1+4kappa)kappa(R+1), 2kappa(2R+1+2R kappa), 2kappa(4kappa R+11R+1)}``,
        which puts ``eta_1 sqrt(2 n0)`` between 0.18 and 1 for any ``R`` and
        ``kappa`` (0.34 for unit rows and ``R >= 1``, near 1 for large
        ``kappa``). Smaller ``G`` = larger steps; tune on ``G_bound * 2^[-10:10]``.
    n_passes : int, default=1
        Passes over the rows; ``n = n_passes * n_samples`` samples in total, each
        pass in a fresh random order. Liu et al. analyse one pass.
    delta : float in (0, 1), default=0.1
        Confidence level of the class-mean bound in ``beta_k``, ``D_k``
        (0.1 in the public implementations).
    kappa : float or None, default=None
        ``sup ||x||`` for the domains and constants. None: the largest row norm
        of ``X``.
    random_state : int, numpy Generator or None, default=None
        Seed of the row orders; the same seed gives the same model, bit for bit,
        for dense and CSR input.
    steps : {"lemma", "halving"}, default="lemma"
        Stage step sizes: ``"lemma"`` is the paper's ``eta_k = sqrt(beta_{k-1})
        R_{k-1} / (G sqrt(2 n0))``; ``"halving"`` keeps ``eta_1`` and halves it at
        every restart, as the authors' code does (see the module docstring).
    cap : float, default=0.0
        A row whose squared norm exceeds ``cap > 0`` takes its step times ``cap /
        ||x||^2`` (0: the paper's step).

    Returns
    -------
    w : ndarray of shape (n_features,)
        The last stage's average ``w_m``.
    info : dict
        ``kappa``, ``G``, ``G_bound``, ``R0``, ``n_stages`` (m), ``stage_size``
        (n0), ``n_steps``; per stage lists ``eta``, ``radius``, ``D``, ``beta``
        (the values used in the stage) and ``n_shrunk`` (steps whose projection
        was active); the final centre's ``a``, ``b`` and the last ``alpha_m``.
    """
    rows = X if isinstance(X, RowSource) else RowSource(X)  # type and format checks
    y = _check_labels(y, rows.n_rows)
    check_positive("R", R)
    if G is not None:
        check_positive("G", G)
    check_count("n_passes", n_passes)
    check_positive("cap", cap, allow_zero=True)
    if steps not in ("lemma", "halving"):
        raise ValueError(f"steps must be 'lemma' or 'halving', got {steps!r}")
    check_positive("delta", delta)
    if delta >= 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    if kappa is None:
        kappa = math.sqrt(rows.max_sqnorm())
        if kappa == 0.0:
            raise ValueError("every row of X is zero: there is nothing to rank")
    else:
        check_positive("kappa", kappa)
    R, kappa = float(R), float(kappa)
    rng = check_random_state(random_state)
    n = rows.n_rows
    order = np.concatenate([rng.permutation(n) for _ in range(n_passes)]).astype(np.int64)
    m, n0 = fsauc_schedule(order.shape[0])

    g_bound = fsauc_gradient_bound(kappa, R)
    G = g_bound if G is None else float(G)
    radius = 2.0 * math.sqrt(1.0 + 2.0 * kappa * kappa) * R
    beta = 1.0 + 8.0 * kappa * kappa
    D = 2.0 * math.sqrt(2.0) * kappa * radius
    info = {"kappa": kappa, "G": G, "G_bound": g_bound, "R0": radius, "n_stages": m,
            "stage_size": n0, "n_steps": m * n0, "eta": [], "radius": [], "D": [], "beta": [],
            "n_shrunk": []}
    w_c = np.zeros(rows.n_features)
    work, sums = np.empty((rows.n_features, 2)), np.empty((2, rows.n_features))
    a_c = b_c = alpha_c = 0.0
    alpha_cap = 2.0 * R * kappa
    seen = np.zeros(2)  # (negatives, positives) over all stages, for beta_k and D_k
    for k in range(m):
        if steps == "lemma" or k == 0:
            eta = math.sqrt(beta) * radius / (G * math.sqrt(2.0 * n0))
        else:
            eta = eta / 2.0
        for key, value in (("eta", eta), ("radius", radius), ("D", D), ("beta", beta)):
            info[key].append(value)
        w_c, a_c, b_c, sums, counts, last, n_shrunk = fsauc_stage(
            rows, y, order[k * n0:(k + 1) * n0], StagePoint(w_c, a_c, b_c, alpha_c),
            StageSteps(eta, R, kappa, radius, D, float(cap)), work, sums)
        # means of values in [-R kappa, R kappa]; the clip only removes rounding
        a_c, b_c = (min(max(v, -R * kappa), R * kappa) for v in (a_c, b_c))
        info["n_shrunk"].append(n_shrunk)
        n_neg, n_pos = counts
        seen += counts
        if n_neg > 0 and n_pos > 0:  # else keep alpha_{k-1}: no class-mean estimate
            alpha_c = float(np.dot(sums[0] / n_neg - sums[1] / n_pos, w_c))
            alpha_c = min(max(alpha_c, -alpha_cap), alpha_cap)
        radius /= 2.0
        beta, D = fsauc_lemma1(seen[1] / seen.sum(), n0, kappa, R, radius, delta, beta)
    info.update(a=a_c, b=b_c, alpha=last[3])
    return w_c, info
