"""Stochastic pairwise learners: SAM, ASAM, PSAM (dissertation 000 Ch.6-7) and adaDSGD
(paper 003 Alg. 1). ALGORITHMS.md sections 0.1, 0.2, 6.1, 6.2, 6.4 and 6.6.

All of them draw a positive and a negative row per step, independently and
uniformly with replacement from the class index lists (ALGORITHMS.md 0.2); one
epoch is ``n`` draws, ``n`` the number of rows given to ``fit``/``partial_fit``.
The inner loops are ``aucopt._kernels._pairwise``, over the shared row source and
weight vectors, so a step costs O(nnz(x_i) + nnz(x_j)) on CSR input: the pair
difference is never formed, the L2 shrink is O(1) through the weight vector's
scale, and averaging is the exact lazy scheme of ALGORITHMS.md 0.1 (O(1) per
snapshot, one O(d) read-out per call). Lazy rather than dense averaging because
on text data a dense snapshot costs d = 10^5 operations while a step touches a
few hundred: even one snapshot per 100 steps would double an epoch's time.
"""
import math
import time

import numpy as np

from aucopt._kernels._pairwise import PROXIMAL, SUBGRADIENT, hinge_pairs, square_prox_pairs
from aucopt._kernels._rows import RowSource
from aucopt._kernels._weights import ElasticNetWeights, WeightVector
from aucopt.base import BaseLearner, OnlineMixin, check_random_state
from aucopt.learners._params import check_count, check_finite_coef, check_positive
from aucopt.registry import register


def _draw_pairs(rng, pos, neg, n_steps):
    """Row indices of ``n_steps`` uniform draws with replacement from each class."""
    pos_rows = pos[rng.integers(0, pos.size, size=n_steps)].astype(np.int64)
    neg_rows = neg[rng.integers(0, neg.size, size=n_steps)].astype(np.int64)
    return pos_rows, neg_rows


def _check_common(learner):
    check_count("n_epochs", learner.n_epochs)
    check_count("verbose", learner.verbose, minimum=0)
    check_random_state(learner.random_state)


class _PairwiseSGD(OnlineMixin, BaseLearner):
    """Epoch driver shared by the pairwise SGD learners.

    ``fit`` = fresh state + ``n_epochs`` epochs; ``partial_fit`` = one more epoch
    on the given chunk, continuing the step counter, schedules and random stream,
    so ``fit(X, y)`` equals ``n_epochs`` calls of ``partial_fit(X, y)``. A chunk
    without one of the classes holds no pair and leaves the model unchanged.
    """

    def _fit(self, X, y):
        self._init_state(X.shape[1])
        self._epochs(X, y, self.n_epochs)

    def _partial_fit(self, X, y):
        self._epochs(X, y, 1)

    def _epochs(self, X, y, n_epochs):
        pos = np.flatnonzero(y > 0)
        neg = np.flatnonzero(y < 0)
        if pos.size == 0 or neg.size == 0:
            return
        rows = RowSource(X)  # once per call: its row norms cost a pass over X
        for _ in range(n_epochs):
            start = time.perf_counter()
            self._epoch(rows, pos, neg)
            check_finite_coef(self)
            self.n_epochs_done_ += 1
            if self.verbose:
                self._report(X, y, f"epoch {self.n_epochs_done_}",
                             time.perf_counter() - start, f"steps {self.t_}, ")



class _HingeSGD(_PairwiseSGD):
    """SAM / ASAM / PSAM: pairwise hinge loss, SVMSGD2 schedule, optional averaging."""

    _rule = SUBGRADIENT
    _averaged = False

    def _check_params(self):
        check_positive("lam", self.lam)
        if self.t0 is not None:
            check_positive("t0", self.t0, allow_zero=True)
        check_count("rskip", self.rskip)
        if self._averaged and self.askip is not None:
            check_count("askip", self.askip)
        _check_common(self)

    def _t0(self):
        return float(self.lam) ** -0.75 if self.t0 is None else float(self.t0)

    def _init_state(self, n_features):
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0
        self.t_ = 0
        self.rcount_ = int(self.rskip)
        self.n_epochs_done_ = 0
        self.random_state_ = check_random_state(self.random_state)
        if self._averaged:
            self.iterate_ = np.zeros((n_features, 2))
            self.n_snapshots_ = 0.0
            self.acount_ = None  # set from askip (which may depend on n) on the first epoch

    def _askip(self, n_rows):
        return max(1, n_rows // 100) if self.askip is None else int(self.askip)

    def _epoch(self, rows, pos, neg):
        pos_rows, neg_rows = _draw_pairs(self.random_state_, pos, neg, rows.n_rows)
        if not self._averaged:
            w = WeightVector(self.coef_)
            self.t_, self.rcount_, _ = hinge_pairs(
                rows, w, pos_rows, neg_rows, self._rule, float(self.lam), self._t0(),
                self.t_, int(self.rskip), self.rcount_, 0, 0)
            w.py_fold()  # coef_ holds w itself between calls
            return
        askip = self._askip(rows.n_rows)
        if self.acount_ is None:
            self.acount_ = askip
        # between calls the scale is folded, so the accumulator holds minus the sum
        w = WeightVector(self.iterate_, averaging=True, avg_c=0.0, avg_q=self.n_snapshots_)
        self.t_, self.rcount_, self.acount_ = hinge_pairs(
            rows, w, pos_rows, neg_rows, self._rule, float(self.lam), self._t0(),
            self.t_, int(self.rskip), self.rcount_, askip, self.acount_)
        w.py_fold()
        self.n_snapshots_ = float(w.avg_q)
        self.coef_ = w.average()


_COMMON_PARAMS = """
    lam : float, default=1e-4
        L2 strength (lambda). D Sec. 6.5.2 / 7.4.2 tune it on {1e-10, ..., 1e-7}
        for large sets by 3-fold CV; small training sets want larger values
        (roughly 1/n). Step ``eta_t = 1 / (lam (t + t0))``.
    t0 : float or None, default=None
        Step offset. ``None`` uses SVMSGD2's heuristic ``t0 = lam ** -0.75`` (first
        step about ``lam ** -0.25`` for rows of norm ~1); the dissertation only says
        it was "set experimentally" (ALGORITHMS.md gap 38).
    rskip : int, default=16
        Apply the L2 shrink every ``rskip`` steps (SVMSGD2's ``skip``; not reported
        in D, gap 38). With the scaled weight vector the shrink is O(1) anyway;
        ``rskip`` only changes the schedule."""

_AVERAGING_PARAMS = """
    askip : int or None, default=None
        Snapshot ``w`` into the average every ``askip`` steps; ``None`` means
        ``max(1, n // 100)`` (a hundred snapshots per epoch, ALGORITHMS.md 6.2).
        Snapshots cost O(1) (lazy averaging), so any value is affordable."""

_TAIL_PARAMS = """
    n_epochs : int, default=1
        Passes of ``fit``; one epoch is ``n`` pair draws (D Figs. 6.1 / 7.1).
    random_state : int, numpy Generator or None, default=None
        Seed of the pair draws; the same seed gives the same model, bit for bit,
        for dense and CSR input.
    verbose : int, default=0
        Print one progress line per epoch (steps, ``||w||``, training AUC, time).
    pos_label : label or None, default=None
        Which label is positive; default the larger of the two.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The ranking direction{coef_note}.
    intercept_ : float
        ``-threshold`` of the training OPTROC point; ranks do not depend on it.
    classes_ : ndarray of shape (2,)
        ``[negative label, positive label]``.
    n_features_in_ : int
    t_ : int
        Pair steps taken so far.
    n_epochs_done_ : int
        Epochs run (``fit`` epochs plus ``partial_fit`` calls with both classes)."""


@register("sam")
class SAM(_HingeSGD):
    __doc__ = f"""SAM: plain stochastic pairwise hinge SGD with scheduled L2 regularisation.

    Minimises the pairwise hinge objective (dissertation 000, Sec. 6.3 eq. 6.1)::

        lam/2 ||w||^2 + 1/(n+ n-) sum_{{i pos, j neg}} max(0, 1 - w.(x_i - x_j))

    with the update of Sec. 6.3 / Alg. 10 without averaging ("SAM is ASAM without
    the averaging", Sec. 6.5.5), i.e. Bottou's SVMSGD2 on pairs::

        eta_t = 1 / (lam (t + t0))
        if w.(x_i - x_j) < 1:  w <- w + eta_t (x_i - x_j)
        every rskip steps:      w <- (1 - rskip / (t + t0)) w

    The shrink is exactly ``1 - rskip * eta_t * lam`` (ALGORITHMS.md erratum 37:
    lambda is not missing), and when that factor drops below 0.8 it is replaced
    by ``(1 - 1/(t + t0))**rskip`` (SVMSGD2's guard). The last iterate is returned.

    Parameters
    ----------{_COMMON_PARAMS}{_TAIL_PARAMS.format(coef_note=" (the last iterate)")}
    """

    def __init__(self, lam=1e-4, t0=None, rskip=16, n_epochs=1, random_state=None,
                 verbose=0, pos_label=None):
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.n_epochs = n_epochs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


@register("asam")
class ASAM(_HingeSGD):
    __doc__ = f"""ASAM: accelerated stochastic AUC maximization (dissertation 000, Sec. 6.3, Alg. 10).

    SAM's pairwise hinge steps and scheduled L2 shrink, plus averaging: every
    ``askip`` steps ``wbar <- (q wbar + w) / (q + 1)``; the average is returned
    (Polyak-Juditsky / Xu 2011 averaging, D Sec. 6.3). Averaging is the exact lazy
    scheme of ALGORITHMS.md 0.1: O(1) per snapshot, O(nnz) per step.

    Parameters
    ----------{_COMMON_PARAMS}{_AVERAGING_PARAMS}{_TAIL_PARAMS.format(coef_note=" (the averaged iterate)")}
    iterate_ : ndarray of shape (n_features, 2)
        Column 0: the current (non-averaged) iterate ``w``; column 1: the lazy
        averaging accumulator (ALGORITHMS.md 0.1), minus the sum of the snapshots.
    n_snapshots_ : float
        Snapshots in the average.
    """

    _averaged = True

    def __init__(self, lam=1e-4, t0=None, rskip=16, askip=None, n_epochs=1,
                 random_state=None, verbose=0, pos_label=None):
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.askip = askip
        self.n_epochs = n_epochs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


@register("psam")
class PSAM(ASAM):
    __doc__ = f"""PSAM: proximal stochastic AUC maximization (dissertation 000, Sec. 7.3, Alg. 11, App. A).

    Each step is the proximal map of the pair's hinge loss with parameter
    ``lam_t = 1 / (lam (t + t0))`` (Alg. 11: ``w_(t+1) = prox_(lam_t f_t)(w_t)``;
    Sec. 7.3's "M prox" formula is garbled, erratum 41)::

        m = w.(x_i - x_j)
        if m < 1:  w <- w + tau (x_i - x_j),  tau = min(lam_t, (1 - m) / ||x_i - x_j||^2)

    i.e. ``tau = lam_t * clip((1 - m) / (lam_t ||z||^2), 0, 1)``: the closed form of
    Appendix A with the sign corrected and the clip it omits (errata 42-43); a
    violated pair is moved at most onto the hinge. ``||x_i - x_j||^2`` comes from
    cached row norms and one sparse merge for ``x_i.x_j``; pairs with
    ``x_i = x_j`` are skipped. Then ASAM's scheduled shrink and averaging; the
    average is returned. ``lam`` is Alg. 11's ``gamma`` (erratum 44).

    Parameters
    ----------{_COMMON_PARAMS}{_AVERAGING_PARAMS}{_TAIL_PARAMS.format(coef_note=" (the averaged iterate)")}
    iterate_ : ndarray of shape (n_features, 2)
        Column 0: the current iterate; column 1: the averaging accumulator.
    """

    _rule = PROXIMAL


@register("adadsgd")
class AdaDSGD(_PairwiseSGD):
    """adaDSGD / adaPSGD: adaptive sample size pairwise SGD with an elastic-net prox.

    Paper 003 (AlQuabeh & Abdurahimov), Alg. 1 with the AUC loss of eq. 23 and the
    prox of eq. 24 (ALGORITHMS.md 6.6; the title algorithm is "adaPSGD", Table 3
    calls it "adaDSGD", erratum 48). Minimises::

        1/(2 n+ n-) sum_{i pos, j neg} (1 - w.(x_i - x_j))^2 + l2/2 ||w||^2 + l1 ||w||_1

    (eq. 23 without its doubled lambda, erratum 46) stagewise: a random permutation
    is drawn; stage ``s`` trains on its first ``m`` rows (``m = m0``, then
    ``m <- min(growth * m, n)``, ``floor(log_growth(n / m0)) + 1`` stages), running
    ``m`` inner steps (``inner="stability"``: ``ceil(m ** (4/3))``, the ``T*`` of Sec.
    3.4, erratum 45), each on an opposite pair drawn from the stage's positives and
    negatives (Alg. 1 lines 5-6; erratum 49 for the loss) with importance weight
    ``c = 2 |P_m| |N_m| / (m (m - 1))`` (eq. 11)::

        w <- prox(w + eta c 2 (1 - w.(x_i - x_j)) (x_i - x_j)),
        prox(u) = soft(u, eta l1) / (1 + eta l2)        (eq. 24 corrected, erratum 47)

    The prox is applied just in time (ALGORITHMS.md 0.1), so a step is O(nnz).
    The last iterate is returned. ``n_epochs > 1`` adds full-sample epochs (``n``
    steps on all rows) after the stagewise schedule.

    Parameters
    ----------
    eta : float or "auto", default="auto"
        Constant step ``gamma`` within each stage (A Cor. 1 analyses constant
        steps); A tunes it on 10^[-4:0] without reporting a default (gap 50).
        ``"auto"``: ``0.1 / max ||x||^2`` over the rows given, i.e. 0.1 for the
        unit-norm rows of TF-IDF text, smaller for standardised dense data, where
        a constant step on the square loss must stay below ``1 / ||z||^2``.
    lam : float, default=1e-5
        Elastic-net strength; ``l1 = lam * l1_ratio``, ``l2 = lam * (1 - l1_ratio)``.
    l1_ratio : float in [0, 1], default=0.5
        Share of L1 in the penalty (A tunes l1 and l2 on 10^[-5:-1]).
    penalty : {"elasticnet", "l2"}, default="elasticnet"
        ``"l2"`` drops the L1 part (``l1_ratio`` is then ignored).
    l2_form : {"half", "printed"}, default="half"
        ``"half"``: ``l2/2 ||w||^2`` (prox divides by ``1 + eta l2``, as SPAM-NET);
        ``"printed"``: eq. 24's ``l2 ||w||^2`` (divides by ``1 + 2 eta l2``).
    m0 : int, default=1000
        First stage size (not reported in A, gap 50); grown if the first ``m0``
        permuted rows lack a class.
    growth : float > 1, default=2.0
        Stage growth factor ``beta``.
    inner : {"alg1", "stability"}, default="alg1"
        Inner iterations per stage: ``m`` (Alg. 1) or ``ceil(m ** (4/3))``.
    n_epochs : int, default=1
        1 = the stagewise schedule; each further epoch is ``n`` full-sample steps.
    random_state : int, numpy Generator or None, default=None
    verbose : int, default=0
        Print one progress line per stage / epoch.
    pos_label : label or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The last iterate.
    t_ : int
        Pair steps taken so far.
    n_epochs_done_ : int
        Stagewise schedules and full-sample epochs run.
    """

    def __init__(self, eta="auto", lam=1e-5, l1_ratio=0.5, penalty="elasticnet",
                 l2_form="half", m0=1000, growth=2.0, inner="alg1", n_epochs=1,
                 random_state=None, verbose=0, pos_label=None):
        self.eta = eta
        self.lam = lam
        self.l1_ratio = l1_ratio
        self.penalty = penalty
        self.l2_form = l2_form
        self.m0 = m0
        self.growth = growth
        self.inner = inner
        self.n_epochs = n_epochs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        if not (isinstance(self.eta, str) and self.eta == "auto"):
            check_positive("eta", self.eta)
        check_positive("lam", self.lam, allow_zero=True)
        check_positive("l1_ratio", self.l1_ratio, allow_zero=True)
        if self.l1_ratio > 1:
            raise ValueError(f"l1_ratio must be in [0, 1], got {self.l1_ratio!r}")
        for name, value, allowed in [("penalty", self.penalty, ("elasticnet", "l2")),
                                     ("l2_form", self.l2_form, ("half", "printed")),
                                     ("inner", self.inner, ("alg1", "stability"))]:
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        check_count("m0", self.m0, minimum=2)
        check_positive("growth", self.growth)
        if self.growth <= 1:
            raise ValueError(f"growth must be > 1, got {self.growth!r}")
        _check_common(self)

    def _fit(self, X, y):
        self._init_state(X.shape[1])
        self._partial_fit(X, y)
        rows = RowSource(X)
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        for _ in range(self.n_epochs - 1):
            start = time.perf_counter()
            self._stage(rows, pos, neg, X.shape[0], X.shape[0])
            check_finite_coef(self)
            self.n_epochs_done_ += 1
            if self.verbose:
                self._report(X, y, f"epoch {self.n_epochs_done_}",
                             time.perf_counter() - start, f"steps {self.t_}, ")

    def _init_state(self, n_features):
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0
        self.t_ = 0
        self.n_epochs_done_ = 0
        self.random_state_ = check_random_state(self.random_state)

    def _penalty(self):
        l1 = self.lam * self.l1_ratio if self.penalty == "elasticnet" else 0.0
        l2 = self.lam - l1
        return l1, (2.0 * l2 if self.l2_form == "printed" else l2)

    def _eta(self, rows):
        if isinstance(self.eta, str):
            max_sq = rows.max_sqnorm()
            return 0.1 / max_sq if max_sq > 0 else 0.1
        return float(self.eta)

    def _stage(self, rows, pos, neg, m, n_steps):
        """``n_steps`` prox steps on pairs from ``pos``/``neg`` (a stage of ``m`` rows)."""
        l1, l2 = self._penalty()
        eta = self._eta(rows)
        weight = 2.0 * pos.size * neg.size / (m * (m - 1.0))
        pos_rows, neg_rows = _draw_pairs(self.random_state_, pos, neg, n_steps)
        w = ElasticNetWeights(self.coef_)
        square_prox_pairs(rows, w, pos_rows, neg_rows, eta, weight, eta * l1, 1.0 + eta * l2)
        w.py_materialize()
        self.t_ += n_steps

    def _partial_fit(self, X, y):
        """One stagewise schedule (A Alg. 1) over the chunk, from the current ``w``."""
        n = X.shape[0]
        if not (y > 0).any() or not (y < 0).any():
            return
        start = time.perf_counter()
        rows = RowSource(X)
        perm = self.random_state_.permutation(n)
        growth = float(self.growth)
        n_stages = int(math.floor(math.log(n / min(n, self.m0)) / math.log(growth)
                                  + 1e-9)) + 1
        m = min(n, int(self.m0))
        for stage in range(n_stages):
            prefix = perm[:m]
            while not ((y[prefix] > 0).any() and (y[prefix] < 0).any()):
                m = min(n, int(math.ceil(growth * m)))  # the prefix lacks a class
                prefix = perm[:m]
            pos = prefix[y[prefix] > 0]
            neg = prefix[y[prefix] < 0]
            n_steps = m if self.inner == "alg1" else int(math.ceil(m ** (4.0 / 3.0)))
            self._stage(rows, pos, neg, m, n_steps)
            check_finite_coef(self)
            if self.verbose:
                self._report(X, y, f"stage {stage + 1}/{n_stages} (m = {m})",
                             time.perf_counter() - start, f"steps {self.t_}, ")
            m = min(n, int(math.ceil(growth * m)))
        self.n_epochs_done_ += 1
