"""Stochastic pairwise learners (dissertation 000, Ch.6-7; ALGORITHMS.md 0.2, 6.1).

All of them draw a positive and a negative row per step, independently and
uniformly with replacement from the class index lists (ALGORITHMS.md 0.2); one
epoch is ``n`` draws, ``n`` the number of rows given to ``fit``/``partial_fit``.
The inner loop is ``aucopt._kernels._pairwise``, over the shared row source and
scaled weight vector, so each step costs O(nnz(x_i) + nnz(x_j)) on CSR input and
the L2 shrink O(1).
"""
import time

import numpy as np

from aucopt._kernels._pairwise import sgd_pairs
from aucopt._kernels._rows import RowSource
from aucopt._kernels._weights import WeightVector
from aucopt.base import BaseLearner, OnlineMixin, check_random_state
from aucopt.learners._params import check_count, check_positive
from aucopt.registry import register


class _PairwiseSGD(OnlineMixin, BaseLearner):
    """Epoch driver shared by the pairwise SGD learners.

    ``fit`` = fresh state + ``n_epochs`` epochs; ``partial_fit`` = one more epoch
    on the given chunk, continuing the step counter, schedule and random stream,
    so ``fit(X, y)`` equals ``n_epochs`` calls of ``partial_fit(X, y)``. A chunk
    without one of the classes holds no pair and leaves the model unchanged.
    """

    def _fit(self, X, y):
        self._init_state(X.shape[1])
        for _ in range(self.n_epochs):
            self._partial_fit(X, y)

    def _partial_fit(self, X, y):
        pos = np.flatnonzero(y > 0)
        neg = np.flatnonzero(y < 0)
        if pos.size == 0 or neg.size == 0:
            return
        start = time.perf_counter()
        rng = self.random_state_
        n_steps = X.shape[0]
        pos_rows = pos[rng.integers(0, pos.size, size=n_steps)].astype(np.int64)
        neg_rows = neg[rng.integers(0, neg.size, size=n_steps)].astype(np.int64)
        self._run_steps(RowSource(X), pos_rows, neg_rows)
        self.n_epochs_done_ += 1
        if self.verbose:
            self._report(X, y, time.perf_counter() - start)

    def _report(self, X, y, seconds):
        from aucopt.metrics import roc_auc

        auc = roc_auc(y, self._raw_scores(X))
        print(f"-- {type(self).__name__} epoch {self.n_epochs_done_}: steps {self.t_}, "
              f"|w| {np.linalg.norm(self.coef_):.4g}, train AUC {auc:.4f}, "
              f"{seconds:.3f} s", flush=True)


@register("sam")
class SAM(_PairwiseSGD):
    """SAM: plain stochastic pairwise hinge SGD with scheduled L2 regularisation.

    Minimises the pairwise hinge objective (dissertation 000, Sec. 6.3 eq. 6.1)::

        lam/2 ||w||^2 + 1/(n+ n-) sum_{i pos, j neg} max(0, 1 - w.(x_i - x_j))

    with the update of Sec. 6.3 / Alg. 10 without averaging ("SAM is ASAM without
    the averaging", Sec. 6.5.5), i.e. Bottou's SVMSGD2 on pairs::

        eta_t = 1 / (lam (t + t0))
        if w.(x_i - x_j) < 1:  w <- w + eta_t (x_i - x_j)
        every rskip steps:      w <- (1 - rskip / (t + t0)) w

    The shrink is exactly ``1 - rskip * eta_t * lam`` (ALGORITHMS.md erratum 37:
    lambda is not missing), and when that factor drops below 0.8 it is replaced
    by ``(1 - 1/(t + t0))**rskip`` (SVMSGD2's guard). The last iterate is returned.

    Parameters
    ----------
    lam : float, default=1e-4
        L2 strength (lambda in the dissertation). Sec. 6.5.2 tunes it on
        {1e-10, ..., 1e-7} for large sets by 3-fold CV; smaller training sets want
        larger values (roughly 1/n).
    t0 : float or None, default=None
        Step offset. ``None`` uses SVMSGD2's heuristic ``t0 = lam ** -0.75``
        (first step about ``lam ** -0.25`` for rows of norm ~1); the dissertation
        only says it was "set experimentally" (ALGORITHMS.md gap 38).
    rskip : int, default=16
        Apply the L2 shrink every ``rskip`` steps (SVMSGD2's ``skip``). With the
        scaled weight vector the shrink is O(1) anyway; ``rskip`` only changes
        the schedule.
    n_epochs : int, default=1
        Passes of ``fit``; one epoch is ``n`` pair draws (Figs. 6.1 / 7.1).
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
        Weight vector (the ranking direction).
    intercept_ : float
        ``-threshold`` of the training OPTROC point; ranks do not depend on it.
    classes_ : ndarray of shape (2,)
        ``[negative label, positive label]``.
    n_features_in_ : int
    t_ : int
        Pair steps taken so far.
    n_epochs_done_ : int
        Epochs run (``fit`` epochs plus ``partial_fit`` calls with both classes).
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

    def _check_params(self):
        check_positive("lam", self.lam)
        if self.t0 is not None:
            check_positive("t0", self.t0, allow_zero=True)
        check_count("rskip", self.rskip)
        check_count("n_epochs", self.n_epochs)
        check_count("verbose", self.verbose, minimum=0)
        check_random_state(self.random_state)

    def _t0(self):
        return float(self.lam) ** -0.75 if self.t0 is None else float(self.t0)

    def _init_state(self, n_features):
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0
        self.t_ = 0
        self.rcount_ = int(self.rskip)
        self.n_epochs_done_ = 0
        self.random_state_ = check_random_state(self.random_state)

    def _run_steps(self, rows, pos_rows, neg_rows):
        w = WeightVector(self.coef_)
        self.t_, self.rcount_ = sgd_pairs(rows, w, pos_rows, neg_rows, float(self.lam),
                                          self._t0(), self.t_, int(self.rskip),
                                          self.rcount_)
        w.py_fold()  # coef_ holds w itself between calls
