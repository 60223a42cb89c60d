"""Stochastic pairwise learners: SAM, ASAM, PSAM and adaDSGD.

SAM, ASAM and PSAM are the pairwise hinge learners of Khalid, "Scalable Large
Margin Pairwise Learning Algorithms" (PhD dissertation, Colorado State University,
2019), Ch. 6-7; adaDSGD is the stagewise learner of AlQuabeh & Abdurahimov,
"Pairwise Learning via Stagewise Training in Proximal Setting" (2022).

All of them draw a positive and a negative row per step, independently and
uniformly with replacement from the class index lists; one epoch is ``n`` draws,
``n`` the number of rows given to ``fit``/``partial_fit``. Pairs are random, so the
order of the rows does not matter (no shuffling is needed). The inner loops are
:mod:`aucopt._kernels._pairwise` over the shared row source and weight primitive:
a step costs O(nnz(x_i) + nnz(x_j)) on CSR input, the pair difference is never
formed, the L2 shrink is O(1) through the weight vector's scale, and averaging is
exact and lazy (O(1) per snapshot). Lazy rather than dense averaging because on
text data a dense snapshot costs d = 10^5 operations while a step touches a few
hundred.

Defaults that work on any row scale: the regularisation strength and the step
offset are measured against the mean squared row norm ``s`` of the training rows
(``row_scale_``): ``lam="auto"`` is ``1e-4 s`` and the step offset is
``t0 = (lam / s) ** -0.75`` (Bottou's SVMSGD2 heuristic ``lam ** -0.75`` for rows of
unit norm). Scaling the rows by ``c`` then scales ``w`` by ``1/c`` and leaves every
ranking unchanged; on unit-length TF-IDF rows (``s = 1``) these are the SVMSGD2
values, on standardised dense data or raw counts (``s`` = tens to hundreds) the
fixed values would under-regularise by that factor (measured on the benchmark sets:
SAM loses up to 0.09 AUC).
"""
import math

import numpy as np

from aucopt._kernels._pairwise import (HingeProx, Schedule, Subgradient, hinge_pairs,
                                       square_prox_pairs)
from aucopt._state import Generator, Scalar
from aucopt.base import BaseLearner, OnlineMixin
from aucopt.learners._common import (EPOCH_PARAMS, ElasticNetModel, WeightsModel,
                                     auto_or_positive, check_epochs, search_scale, settle,
                                     weights_state)
from aucopt.learners._objectives import mean_pair_hinge, mean_pair_square
from aucopt.validation import (check_choice, check_count, check_positive, check_random_state,
                               check_seed)

# Pairs are drawn and handed to the kernel in blocks: bounded memory whatever n.
PAIR_BLOCK = 1 << 16


def _pair_blocks(rng, pos, neg, n_steps):
    """Row indices of ``n_steps`` uniform draws with replacement from each class,
    in blocks of at most :data:`PAIR_BLOCK` (positives then negatives per block)."""
    for start in range(0, n_steps, PAIR_BLOCK):
        size = min(PAIR_BLOCK, n_steps - start)
        pos_rows = pos[rng.integers(0, pos.size, size=size)].astype(np.int64)
        neg_rows = neg[rng.integers(0, neg.size, size=size)].astype(np.int64)
        yield pos_rows, neg_rows


def _check_common(learner):
    check_epochs(learner)
    check_count("verbose", learner.verbose, minimum=0)
    check_seed(learner.random_state)


class _PairwiseSGD(OnlineMixin, BaseLearner):
    """Shared by the pairwise SGD learners.

    ``fit`` = fresh state + ``n_epochs`` passes; ``partial_fit`` = one more pass
    on the given chunk, continuing the step counter, schedules and random stream,
    so ``fit(X, y)`` equals ``n_epochs`` calls of ``partial_fit(X, y)``. A chunk
    without one of the classes holds no pair and leaves the model unchanged.
    """

    _state = {
        "t_": Scalar(int, low=0),
        "random_state_": Generator(),
    }
    _divergence_hint = "raise lam"
    _family = "pairwise SGD"
    _limits = "dense or sparse, any d"

    def _prepare(self, rows, y):
        self._pos = np.flatnonzero(y > 0)
        self._neg = np.flatnonzero(y < 0)

    def _progress(self):
        return f"steps {self.t_}, "


class _HingeSGD(WeightsModel, _PairwiseSGD):
    """SAM / ASAM / PSAM: pairwise hinge loss, SVMSGD2 schedule, optional averaging."""

    _rule = Subgradient
    _stream = "epochs"  # n_epochs partial_fit calls on the data == fit
    _state = {
        **weights_state(1),
        "rcount_": Scalar(int, low=1),
        "t0_": Scalar(float, low=0.0),
    }

    @classmethod
    def _state_spec(cls):
        spec = super()._state_spec()
        if cls._averaged:
            spec.update(weights_state(2, averaging=True))
            spec["acount_"] = Scalar(int, low=1, none=True)
        return spec

    def _check_params(self):
        auto_or_positive("lam", self.lam)
        if self.t0 is not None:
            check_positive("t0", self.t0, allow_zero=True)
        check_count("rskip", self.rskip)
        if self._averaged and self.askip is not None:
            check_count("askip", self.askip)
        _check_common(self)

    def _check_state(self):
        super()._check_state()
        if self.rcount_ > self.rskip:
            raise ValueError(f"rcount_ = {self.rcount_} exceeds rskip = {self.rskip}")

    _auto_params = {"lam": lambda self, s, rows: 1e-4 * s}

    def _prepare(self, rows, y):
        super()._prepare(rows, y)
        if "t0_" not in self.__dict__:  # fixed by the first data, like lam_
            self.t0_ = ((self.lam_ / self.row_scale_) ** -0.75 if self.t0 is None
                        else float(self.t0))

    def search_space(self, X):
        """The grid :class:`aucopt.model_selection.GridSearch` tries by default on
        ``X``: ``lam`` from 1e-6 to 1e-2 times the mean squared row norm (the
        dissertation tunes lam by 3-fold CV; its grids assume unit-length rows)."""
        s = search_scale(self, X)
        return {"lam": [c * s for c in (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)]}

    def _objective(self, rows, y):
        """``lam/2 ||w||^2 + mean pairwise hinge`` of the returned model (O(n log n))."""
        scores = self._raw_scores(rows)
        coef = self.coef_
        return (0.5 * self.lam_ * float(coef @ coef)
                + mean_pair_hinge(scores[y > 0], scores[y < 0]))

    def _init_state(self, n_features):
        self._init_weights(n_features, 2 if self._averaged else 1)
        self.intercept_ = 0.0
        self.t_ = 0
        self.rcount_ = int(self.rskip)
        self.random_state_ = check_random_state(self.random_state)
        if self._averaged:
            self.acount_ = None  # set from askip (which may depend on n) on the first pass

    def _askip(self, n_rows):
        return max(1, n_rows // 100) if self.askip is None else int(self.askip)

    def _pass(self, rows, y, index):
        if self._pos.size == 0 or self._neg.size == 0:
            return
        askip = 0
        if self._averaged:
            askip = self._askip(rows.n_rows)
            if self.acount_ is None:
                self.acount_ = askip
        sched = Schedule(self.lam_, self.t0_, int(self.rskip), askip, t=self.t_,
                         rcount=self.rcount_, acount=self.acount_ if askip else 0)
        w = self._open_weights()
        for pos_rows, neg_rows in _pair_blocks(self.random_state_, self._pos, self._neg,
                                               rows.n_rows):
            hinge_pairs(rows, w, pos_rows, neg_rows, self._rule(), sched)
        settle(w, rows.n_rows)
        self._store_weights(w)
        self.t_, self.rcount_ = int(sched.t), int(sched.rcount)
        if askip:
            self.acount_ = int(sched.acount)


_COMMON_PARAMS = """
    lam : float or "auto", default="auto"
        L2 strength (lambda). "auto" is ``1e-4 s`` with ``s`` the mean squared row
        norm (``row_scale_``), i.e. 1e-4 for unit-length text rows (see the module
        docstring). The dissertation tunes it by 3-fold CV on {1e-10, ..., 1e-7} for
        its large sets; the step is ``eta_t = 1 / (lam (t + t0))``.
    t0 : float or None, default=None
        Step offset. None: ``(lam / s) ** -0.75``, SVMSGD2's heuristic ``lam ** -0.75``
        for rows of unit norm, applied in the units of the data (the dissertation
        only says it was set experimentally).
    rskip : int, default=16
        Apply the L2 shrink every ``rskip`` steps (SVMSGD2's ``skip``; not reported
        by the dissertation). With the scaled weight vector the shrink costs O(1)
        anyway; ``rskip`` only changes the schedule."""

_AVERAGING_PARAMS = """
    askip : int or None, default=None
        Snapshot ``w`` into the average every ``askip`` steps; None means
        ``max(1, n // 100)`` (a hundred snapshots per epoch). Snapshots cost O(1)
        (lazy averaging), so any value is affordable."""

_TAIL_PARAMS = EPOCH_PARAMS.format(tol="3e-3") + """
    random_state : int, numpy Generator or None, default=None
        Seed of the pair draws; the same seed gives the same model, bit for bit,
        for dense and CSR input.
    verbose : int, default=0
        Print one progress line per epoch (steps, ``||w||``, objective, training
        AUC, time).
    pos_label : label or None, default=None
        Which label is positive; default the larger of the two.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The ranking direction (COEF_NOTE).
    intercept_ : float
        ``-threshold`` of the training OPTROC point; ranks do not depend on it.
    classes_ : ndarray of shape (2,)
        ``[negative label, positive label]``.
    n_features_in_ : int
    lam_, t0_ : float
        The regularisation strength and step offset in use.
    row_scale_ : float
        Mean squared row norm of the first training data (``fit`` or the first
        ``partial_fit`` chunk).
    t_ : int
        Pair steps taken so far.
    n_passes_ : int
        Epochs run (``fit`` epochs plus ``partial_fit`` calls).
    objective_ : float
        ``lam/2 ||w||^2`` + mean pairwise hinge after the last epoch (``n_epochs="auto"``).
    stop_reason_ : {"tol", "max_epochs", "n_epochs"}
    weights_ : ndarray of shape (n_features, 1) or (n_features, 2)
        The weight primitive's state: column 0 is ``v`` of the current iterate
        ``w = weights_scale_ * v``; with averaging, column 1 is the lazy average's
        accumulator (the average is ``(weights_avg_c_ v - u) / weights_avg_q_``)."""

_REFERENCE = """Khalid, "Scalable Large Margin Pairwise Learning Algorithms", PhD
    dissertation, Colorado State University, 2019"""


class SAM(_HingeSGD):
    __doc__ = f"""SAM: plain stochastic pairwise hinge SGD with scheduled L2 regularisation.

    Minimises the pairwise hinge objective ({_REFERENCE}, eq. 6.1)::

        lam/2 ||w||^2 + 1/(n+ n-) sum_{{i pos, j neg}} max(0, 1 - w.(x_i - x_j))

    with the update of the dissertation's Sec. 6.3 / Alg. 10 without averaging ("SAM
    is ASAM without the averaging", Sec. 6.5.5), i.e. Bottou's SVMSGD2 on pairs::

        eta_t = 1 / (lam (t + t0))
        if w.(x_i - x_j) < 1:  w <- w + eta_t (x_i - x_j)
        every rskip steps:      w <- (1 - rskip / (t + t0)) w

    The shrink is exactly ``1 - rskip * eta_t * lam`` (no lambda is missing from the
    printed update), and when that factor drops below 0.8 it is replaced by
    ``(1 - 1/(t + t0))**rskip`` (SVMSGD2's guard). The last iterate is returned.

    Parameters
    ----------""" + _COMMON_PARAMS + _TAIL_PARAMS.replace("COEF_NOTE", "the last iterate")

    _aucopt_name = "sam"

    def __init__(self, lam="auto", t0=None, rskip=16, n_epochs="auto", tol=3e-3,
                 n_iter_no_change=2, max_epochs=50, random_state=None, verbose=0,
                 pos_label=None):
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


class ASAM(_HingeSGD):
    __doc__ = f"""ASAM: accelerated stochastic AUC maximization ({_REFERENCE}, Sec. 6.3, Alg. 10).

    SAM's pairwise hinge steps and scheduled L2 shrink, plus averaging: every
    ``askip`` steps ``wbar <- (q wbar + w) / (q + 1)``; the average is returned
    (Polyak-Juditsky averaging as analysed by Xu, "Towards optimal one pass large
    scale learning with averaged stochastic gradient descent", 2011). Averaging is
    exact and lazy: O(1) per snapshot, O(nnz) per step.

    Parameters
    ----------""" + _COMMON_PARAMS + _AVERAGING_PARAMS + _TAIL_PARAMS.replace(
        "COEF_NOTE", "the averaged iterate")

    _aucopt_name = "asam"
    _averaged = True

    def __init__(self, lam="auto", t0=None, rskip=16, askip=None, n_epochs="auto", tol=3e-3,
                 n_iter_no_change=2, max_epochs=50, random_state=None, verbose=0,
                 pos_label=None):
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.askip = askip
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


class PSAM(ASAM):
    __doc__ = f"""PSAM: proximal stochastic AUC maximization ({_REFERENCE}, Sec. 7.3, Alg. 11, App. A).

    Each step is the proximal map of the pair's hinge loss with parameter
    ``lam_t = 1 / (lam (t + t0))`` (Alg. 11: ``w_(t+1) = prox_(lam_t f_t)(w_t)``; the
    "M prox" formula of Sec. 7.3 is garbled)::

        m = w.(x_i - x_j)
        if m < 1:  w <- w + tau (x_i - x_j),  tau = min(lam_t, (1 - m) / ||x_i - x_j||^2)

    i.e. ``tau = lam_t * clip((1 - m) / (lam_t ||z||^2), 0, 1)``: the closed form of
    Appendix A with its sign corrected and the clip it omits; a violated pair is
    moved at most onto the hinge. ``||x_i - x_j||^2`` comes from cached row norms
    and ``x_i.x_j`` by a scatter into a dense scratch row; pairs with ``x_i = x_j``
    are skipped. Then ASAM's scheduled shrink and averaging; the average is
    returned. ``lam`` is Alg. 11's ``gamma``.

    Parameters
    ----------""" + _COMMON_PARAMS + _AVERAGING_PARAMS + _TAIL_PARAMS.replace(
        "COEF_NOTE", "the averaged iterate")

    _aucopt_name = "psam"
    _rule = HingeProx


class AdaDSGD(ElasticNetModel, _PairwiseSGD):
    __doc__ = """adaDSGD / adaPSGD: adaptive sample size pairwise SGD with an elastic-net prox.

    AlQuabeh & Abdurahimov, "Pairwise Learning via Stagewise Training in Proximal
    Setting" (2022), Alg. 1 with the AUC loss of their eq. 23 and the prox of eq. 24
    (the paper's title algorithm is "adaPSGD"; its Table 3 calls it "adaDSGD").
    Minimises::

        1/(2 n+ n-) sum_{i pos, j neg} (1 - w.(x_i - x_j))^2 + l2/2 ||w||^2 + l1 ||w||_1

    (eq. 23 without its doubled lambda) stagewise: a random permutation is drawn;
    stage ``s`` trains on its first ``m`` rows (``m = m0``, then ``m <- min(growth * m,
    n)``, ``floor(log_growth(n / m0)) + 1`` stages), running ``m`` inner steps
    (``inner="stability"``: ``ceil(m ** (4/3))``, the ``T*`` of the paper's Sec. 3.4),
    each on an opposite pair drawn from the stage's positives and negatives with
    importance weight ``c = 2 |P_m| |N_m| / (m (m - 1))`` (eq. 11; the loss is
    ``(1 - f(x) + f(x'))^2``, with the sign the paper's Sec. 2 misprints)::

        w <- prox(w + eta c 2 (1 - w.(x_i - x_j)) (x_i - x_j)),
        prox(u) = soft(u, eta l1) / (1 + eta l2)        (eq. 24, corrected)

    The prox is applied just in time, so a step is O(nnz). The last iterate is
    returned. After the stagewise schedule (the first epoch), further epochs are
    ``n`` full-sample steps each.

    Parameters
    ----------
    eta : float or "auto", default="auto"
        Constant step ``gamma`` within each stage (the paper analyses constant steps
        and tunes it on 10^[-4:0] without a default). "auto": ``0.1 / max ||x||^2``
        over the rows given, i.e. 0.1 for the unit-norm rows of TF-IDF text, smaller
        for standardised dense data, where a constant step on the square loss must
        stay below ``1 / ||z||^2``.
    lam : float or "auto", default="auto"
        Elastic-net strength; ``l1 = lam * l1_ratio``, ``l2 = lam * (1 - l1_ratio)``.
        "auto" is ``1e-5 s`` with ``s`` the mean squared row norm, i.e. 1e-5 for
        unit-length rows (the paper tunes l1 and l2 on 10^[-5:-1]).
    l1_ratio : float in [0, 1], default=0.5
        Share of L1 in the penalty.
    penalty : {"elasticnet", "l2"}, default="elasticnet"
        ``"l2"`` drops the L1 part (``l1_ratio`` is then ignored).
    l2_form : {"half", "printed"}, default="half"
        ``"half"``: ``l2/2 ||w||^2`` (the prox divides by ``1 + eta l2``, as SPAM-NET);
        ``"printed"``: eq. 24's ``l2 ||w||^2`` (divides by ``1 + 2 eta l2``).
    m0 : int, default=1000
        First stage size (not reported in the paper); grown if the first ``m0``
        permuted rows lack a class.
    growth : float > 1, default=2.0
        Stage growth factor ``beta``.
    inner : {"alg1", "stability"}, default="alg1"
        Inner iterations per stage: ``m`` (Alg. 1) or ``ceil(m ** (4/3))``.""" \
        + EPOCH_PARAMS.format(tol="1e-3") + """
    random_state : int, numpy Generator or None, default=None
    verbose : int, default=0
        Print one progress line per epoch.
    pos_label : label or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The last iterate.
    eta_, lam_ : float
        Step and elastic-net strength in use.
    row_scale_ : float
        Mean squared row norm of the first training data.
    t_ : int
        Pair steps taken so far.
    n_passes_ : int
        Epochs run (the stagewise schedule counts as one).
    weights_ : ndarray of shape (n_features, 3)
        The lazy elastic-net state: per coordinate its value at its stamp and the
        stamp ``(P, R)``; ``weights_P_`` / ``weights_R_`` are the current products.
    """

    _aucopt_name = "adadsgd"
    _auto_params = {"lam": lambda self, s, rows: 1e-5 * s,
                    "eta": lambda self, s, rows: 0.1 / (rows.max_sqnorm() or 1.0)}

    def __init__(self, eta="auto", lam="auto", l1_ratio=0.5, penalty="elasticnet",
                 l2_form="half", m0=1000, growth=2.0, inner="alg1", n_epochs="auto",
                 tol=1e-3, n_iter_no_change=2, max_epochs=50, random_state=None, verbose=0,
                 pos_label=None):
        self.eta = eta
        self.lam = lam
        self.l1_ratio = l1_ratio
        self.penalty = penalty
        self.l2_form = l2_form
        self.m0 = m0
        self.growth = growth
        self.inner = inner
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label

    def search_space(self, X):
        """The grid :class:`aucopt.model_selection.GridSearch` tries by default on
        ``X``: ``lam`` from 1e-7 to 1e-3 times the mean squared row norm."""
        s = search_scale(self, X)
        return {"lam": [c * s for c in (1e-7, 1e-6, 1e-5, 1e-4, 1e-3)]}

    def _check_params(self):
        auto_or_positive("eta", self.eta)
        auto_or_positive("lam", self.lam, allow_zero=True)
        check_positive("l1_ratio", self.l1_ratio, allow_zero=True)
        if self.l1_ratio > 1:
            raise ValueError(f"l1_ratio must be in [0, 1], got {self.l1_ratio!r}")
        check_choice("penalty", self.penalty, ("elasticnet", "l2"))
        check_choice("l2_form", self.l2_form, ("half", "printed"))
        check_choice("inner", self.inner, ("alg1", "stability"))
        check_count("m0", self.m0, minimum=2)
        check_positive("growth", self.growth)
        if self.growth <= 1:
            raise ValueError(f"growth must be > 1, got {self.growth!r}")
        _check_common(self)

    def _init_state(self, n_features):
        self._init_weights(n_features)
        self.intercept_ = 0.0
        self.t_ = 0
        self.random_state_ = check_random_state(self.random_state)

    def _penalty(self):
        l1 = self.lam_ * self.l1_ratio if self.penalty == "elasticnet" else 0.0
        l2 = self.lam_ - l1
        return l1, (2.0 * l2 if self.l2_form == "printed" else l2)

    def _objective(self, rows, y):
        """Half the mean pairwise square loss plus the elastic net of the returned model."""
        scores = self._raw_scores(rows)
        coef = self.coef_
        l1, l2 = self._penalty()
        return (0.5 * mean_pair_square(scores[y > 0], scores[y < 0])
                + 0.5 * l2 * float(coef @ coef) + l1 * float(np.abs(coef).sum()))

    def _stage(self, rows, w, pos, neg, m, n_steps):
        """``n_steps`` prox steps on pairs from ``pos``/``neg`` (a stage of ``m`` rows)."""
        l1, l2 = self._penalty()
        eta = self.eta_
        weight = 2.0 * pos.size * neg.size / (m * (m - 1.0))
        for pos_rows, neg_rows in _pair_blocks(self.random_state_, pos, neg, n_steps):
            square_prox_pairs(rows, w, pos_rows, neg_rows, eta, weight, eta * l1,
                              1.0 + eta * l2)
        settle(w, n_steps)
        self.t_ += n_steps

    def _pass(self, rows, y, index):
        """Pass 0 of a call: the stagewise schedule (Alg. 1) over the rows; later
        passes of ``fit``: ``n`` full-sample steps."""
        if self._pos.size == 0 or self._neg.size == 0:
            return
        w = self._open_weights()
        n = rows.n_rows
        if index > 0:
            self._stage(rows, w, self._pos, self._neg, n, n)
            self._store_weights(w)
            return
        perm = self.random_state_.permutation(n)
        growth = float(self.growth)
        n_stages = int(math.floor(math.log(n / min(n, self.m0)) / math.log(growth)
                                  + 1e-9)) + 1
        m = min(n, int(self.m0))
        for _ in range(n_stages):
            prefix = perm[:m]
            while not ((y[prefix] > 0).any() and (y[prefix] < 0).any()):
                m = min(n, int(math.ceil(growth * m)))  # the prefix lacks a class
                prefix = perm[:m]
            pos = prefix[y[prefix] > 0]
            neg = prefix[y[prefix] < 0]
            n_steps = m if self.inner == "alg1" else int(math.ceil(m ** (4.0 / 3.0)))
            self._stage(rows, w, pos, neg, m, n_steps)
            m = min(n, int(math.ceil(growth * m)))
        self._store_weights(w)
