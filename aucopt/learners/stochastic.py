"""Stochastic pairwise learners: SAM, ASAM, PSAM and adaDSGD.

SAM, ASAM and PSAM are the pairwise hinge learners of Khalid, "Scalable Large
Margin Pairwise Learning Algorithms" (PhD dissertation, Colorado State University,
2019), Ch. 6-7; adaDSGD is the stagewise learner of AlQuabeh & Abdurahimov,
"Pairwise Learning via Stagewise Training in Proximal Setting" (2022).

All of them draw a positive and a negative row per step, independently and
uniformly with replacement from the class index lists (PSAM by default in random
cycles through each class, see its ``sampling``); one epoch is ``n`` draws, ``n``
the number of rows given to ``fit``/``partial_fit``. Pairs are random, so the
order of the rows does not matter (no shuffling is needed). The inner loops are
:mod:`aucopt._kernels._pairwise` over the shared row source and weight primitive:
a step costs O(nnz(x_i) + nnz(x_j)) on CSR input, the pair difference is never
formed, the L2 shrink is O(1) through the weight vector's scale, and averaging is
exact and lazy (O(1) per snapshot). Lazy rather than dense averaging because on
text data a dense snapshot costs d = 10^5 operations while a step touches a few
hundred.

Defaults that work on any row scale: the regularisation strength and the step
offset are measured against the mean squared row norm ``s`` of the training rows
(``row_scale_``): ``lam="auto"`` is ``s min(1e-4, 1/n)`` for PSAM, a multiple of
``s / n`` on small data for SAM and ASAM (``n`` the rows of the first training data;
see each one's ``lam``) and the step offset is
``t0 = (lam / s) ** -0.75`` (Bottou's SVMSGD2 heuristic ``lam ** -0.75`` for rows of
unit norm). Scaling the rows by ``c`` then scales ``w`` by ``1/c`` and leaves every
ranking unchanged; on unit-length TF-IDF rows (``s = 1``) these are the SVMSGD2
values, on standardised dense data or raw counts (``s`` = tens to hundreds) the
fixed values would under-regularise by that factor (measured on the benchmark sets:
SAM loses up to 0.09 AUC).
"""
import math
from dataclasses import replace

import numpy as np

from aucopt._kernels._weights import Weights
from aucopt._kernels._pairwise import (HingeProx, Schedule, SquareStep, Subgradient,
                                       close_lanes, open_lanes, refold, sgd_lane, sgd_pairs,
                                       shuffled_cycles, square_lane, square_prox_pairs)
from aucopt._docs import docstring
from aucopt._state import Generator, Scalar
from aucopt.base import BaseLearner, OnlineMixin
from aucopt.driver import PASS, Stall
from aucopt.traits import Traits
from aucopt.learners._common import (EPOCH_PARAMS, INPUT_ATTRIBUTES, SETTLE_RATIO,
                                     WEIGHTED_AVERAGES,
                                     ElasticNetModel, WeightsModel, auto_norm_cap,
                                     auto_or_positive, auto_value,
                                     check_epochs, document_weights, epoch_params,
                                     epoch_tail, merge_doc, monitored_rows_doc,
                                     search_scale, settle, settles, weights_state)
from aucopt.learners._lanes import (HOLD_SECONDS, PROBE_SECONDS, PROBE_SHARE, SLOWER, WATCH,
                                    in_lanes)
from aucopt.learners._objectives import mean_pair_hinge, mean_pair_square
from aucopt.metrics import roc_auc
from aucopt.validation import (check_choice, check_count, check_n_jobs, check_positive,
                               check_random_state, check_seed, n_threads)

# Pairs are drawn and handed to the kernel in blocks: bounded memory whatever n.
PAIR_BLOCK = 1 << 16
# With n_jobs > 1, each thread takes at least this many steps of a pass (else one
# thread does the pass): handing a block to the lanes costs ~0.1 ms, more when a
# worker had gone to sleep (aucopt.learners._lanes).
LANE_STEPS = 2048
# With n_jobs > 1, the fewest pairs of a block whose threads step copies of the
# weights (_block_limit).
COPY_STEPS = 8 * LANE_STEPS
# SAM / ASAM / PSAM: n_epochs="auto" evaluates the objective on at most this many
# training rows (traits.monitor_rows). Scoring every row after each pass cost a PSAM
# fit on 20 Newsgroups a fifth of its time (2.9 ms with the sorts, against a pass of
# 8-10 ms); on this many rows 1.1-1.3 ms. Passes / test AUC of the default fits,
# seeds 0-5, all rows (20,000) against 4,096: news20, sector, webkb_course the same
# passes; reuters_acq PSAM the same, ASAM one seed 5 -> 6 passes; SAM news20 two
# seeds 9 -> 8; w8a, a9a, ijcnn1_val, letter_z (PSAM) passes moved on 2-4 seeds
# of 6 with median test AUC within 0.0002. Training sets of up to 4,096 rows (the
# tabular tasks' folds) are monitored whole, as before; sets of over 131,072 rows
# monitor 1/32 of their rows up to 20,000 (driver.MONITOR_SHARE), as the rcv1-shaped
# set's 20,000 did.
HINGE_MONITOR_ROWS = 4096
# Between two blocks of threads the scale is folded when within this factor of the
# fold band, and a block shrinks it by less (aucopt._kernels._pairwise, "Threads").
FOLD_MARGIN = 100.0


class _Cycles:
    """Draws from ``rows`` in random cycles: each row once, in a fresh random order,
    before any row again (random reshuffling, per class)."""

    def __init__(self, rng, rows):
        self.rng = rng
        self.rows = np.ascontiguousarray(rows, dtype=np.int64)
        self.order = self.rows[:0]

    def __call__(self, size):
        """The next ``size`` draws: the rest of the current cycle, then as many fresh
        cycles as needed (``rows[rng.permutation(len(rows))]`` each, drawn by
        :func:`~aucopt._kernels._pairwise.shuffled_cycles` in one call); what the
        last one leaves is the next call's."""
        out = np.empty(size, dtype=np.int64)
        take = min(size, self.order.size)
        out[:take] = self.order[:take]
        self.order = self.order[take:]
        if take < size:
            m = self.rows.size
            fresh = np.empty(-(-(size - take) // m) * m, dtype=np.int64)
            shuffled_cycles(self.rng, self.rows, fresh)
            out[take:] = fresh[:size - take]
            self.order = fresh[size - take:]
        return out


def _pair_blocks(rng, pos, neg, n_steps, block=None, cycles=False):
    """Row indices of ``n_steps`` uniform draws with replacement from each class
    (``cycles``: draws in random cycles through each class, see :class:`_Cycles`),
    in blocks (positives then negatives per block) of at most :data:`PAIR_BLOCK`
    pairs, or of ``block(done)`` pairs after ``done``."""
    if cycles:
        draw_pos, draw_neg = _Cycles(rng, pos), _Cycles(rng, neg)
    else:
        def draw_pos(size):
            return pos[rng.integers(0, pos.size, size=size)].astype(np.int64)

        def draw_neg(size):
            return neg[rng.integers(0, neg.size, size=size)].astype(np.int64)
    start = 0
    while start < n_steps:
        size = min(PAIR_BLOCK if block is None else block(start), n_steps - start)
        pos_rows = draw_pos(size)
        neg_rows = draw_neg(size)
        yield pos_rows, neg_rows
        start += size


def _drawn_ahead(blocks, learner=None, n_steps=None):
    """The blocks of a :func:`_pair_blocks` generator as ``(pos_rows, neg_rows,
    draw)``: ``draw()`` draws the next block at once, so that the lanes' calling
    thread draws it while the other lanes start on this one (``in_lanes(...,
    meanwhile=draw)``); a block not drawn early is drawn when its turn comes. The
    blocks and the generator's state are the same either way. With a ``learner``,
    its ``_pass_done`` follows the blocks taken (for ``verbose``).

    On the rcv1-shaped set (12 blocks a pass) the draws took 7% of a two-thread
    pass, drawn between the blocks; drawn during them, the pass took 0.976 of the
    time (median of 8 interleaved fits; the lead thread still spends the draws'
    time, which the other lanes' claims make up only in part). Sets whose pass is
    one block (20 Newsgroups) draw it before the lanes, as before."""
    ahead = next(blocks, None)
    done = 0
    while ahead is not None:
        pos_rows, neg_rows = ahead
        drawn = []

        def draw(drawn=drawn):
            if not drawn:
                drawn.append(next(blocks, None))

        yield pos_rows, neg_rows, draw
        draw()
        ahead = drawn[0]
        done += pos_rows.shape[0]
        if learner is not None:
            learner._pass_done = done / n_steps


def _on_copies(steps, clock, d):
    """Whether a block of ``steps`` pairs from step ``clock = t + t0`` on ``d``
    features runs on copies of the weights (:func:`_block_limit`)."""
    return max(d, COPY_STEPS) <= steps <= clock / 8


def _block_limit(clock, d):
    """The most pairs a block of lanes takes at step ``clock = t + t0`` on ``d``
    features (``_HingeSGD._lanes_pass``).

    Shared weights (Hogwild): at most ``49 clock``. The shrinks of ``k`` steps from
    ``t`` multiply the scale by about ``clock / (clock + k)`` (SVMSGD2's guard keeps
    each >= 0.8), so such a block shrinks it by less than :data:`FOLD_MARGIN`.

    Copies, once ``clock / 8 >= max(d, COPY_STEPS)``: at most ``clock / 8``. Each
    thread then steps its own copy of the weights and sees the others' steps only
    at the block's end, a delay of at most an eighth of the steps taken so far. The
    copies cost O(d) per block, which at least ``d`` pairs amortise, and a block
    costs a hand-over to the threads, which :data:`COPY_STEPS` pairs amortise.

    Hogwild threads contend for the cache lines of the frequent features' weights.
    Copies remove that, which pays on sets of many more rows than features. On the
    rcv1-shaped set (724,000 x 47,236; blocks of 65,536 pairs after the first
    pass), PSAM's later passes on two threads against one ran 1.80x faster on
    copies (range 1.57-2.09) and 1.54x Hogwild (0.74-1.71), 12 alternating rounds
    of 4-epoch fits in one process; the test AUC after 4 epochs was one thread's
    within 0.0006 on copies and 0.0005 Hogwild. On three real sets of that shape
    (10-epoch fits, seeds 0-3, medians; copies from the third to fifth pass), two
    threads against one: a9a 1.25x on copies against 1.00x Hogwild, w8a 1.50x
    against 1.39x, shuttle 1.44x against 1.30x, with the mean test AUC within
    0.0010 of one thread's on copies and 0.0020 Hogwild. Longer delays cost AUC:
    on sector (629 positives), whole-pass blocks on copies (3,206 pairs a thread,
    up to half the steps taken) lost up to 0.0070 test AUC after 6 epochs against
    one thread, blocks of 2,048 or 4,096 pairs at most 0.0007."""
    if _on_copies(clock / 8, clock, d):
        return clock / 8
    return 49 * clock


def _lane_blocks(limit):
    """``block(done)`` for :func:`_pair_blocks`: blocks of at most :data:`PAIR_BLOCK`
    and ``limit(done)`` pairs, and at least one."""
    return lambda done: max(1, int(min(PAIR_BLOCK, limit(done))))


class _Probe:
    """The lane watch's probe in a pass on threads (:class:`~aucopt.learners._lanes.
    LaneWatch`), ``due`` once the learner has taken a pass's worth of steps (a first
    pass's first pairs cost more than its others) and the watch wants one: the first
    block's head runs on one thread (:meth:`head`), the rest on the lanes, and
    :meth:`done` gives the watch both times a pair."""

    def __init__(self, learner, rows):
        self.due = learner.t_ >= rows.n_rows and WATCH.probe_due()
        self.timing = None

    def head(self, pos_rows, neg_rows, threads, one_thread):
        """The block's pairs left for the lanes, after ``one_thread(pos, neg)`` (the
        sequential kernel) ran its head if a probe is due."""
        head = WATCH.head(pos_rows.shape[0], threads, LANE_STEPS) if self.due else 0
        self.due = False
        if not head:
            return pos_rows, neg_rows
        start = WATCH.clock()
        one_thread(pos_rows[:head], neg_rows[:head])
        now = WATCH.clock()
        self.timing = ((now - start) / head, now, pos_rows.shape[0] - head)
        return pos_rows[head:], neg_rows[head:]

    def done(self):
        """After the lanes of the block: the watch's verdict on the probe, if any."""
        if self.timing is not None:
            one, start, rest = self.timing
            self.timing = None
            WATCH.record(one, (WATCH.clock() - start) / rest)


def _check_common(learner):
    check_epochs(learner)
    check_count("verbose", learner.verbose, minimum=0)
    check_seed(learner.random_state)
    check_n_jobs(learner.n_jobs)


def lane_threads(n_jobs, n_steps, n_features):
    """Threads a pass of ``n_steps`` pair steps on rows of ``n_features`` features
    runs with ``n_jobs``: ``n_jobs``, or 1 when a thread would take fewer than
    :data:`LANE_STEPS` steps or the steps cannot amortise an O(d) pass over the
    model (the norm recomputed after the threads, as :func:`settle` amortises its
    fold)."""
    threads = n_threads(n_jobs)
    if threads > 1 and n_steps >= threads * LANE_STEPS and n_steps * SETTLE_RATIO >= n_features:
        return threads
    return 1


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
    traits = Traits(family="pairwise SGD", limits="dense or sparse, any d",
                    merge="average", divergence_hint="raise lam")
    # the step counter continues the parts' schedules (each took its steps from base)
    _merge_rules = {"t_": "mean", "w": "mean"}

    def _prepare(self, rows, y):
        self._pos = np.flatnonzero(y > 0)
        self._neg = np.flatnonzero(y < 0)

    def _threads(self, rows, n_steps):
        """Threads for ``n_steps`` steps on ``rows`` (:func:`lane_threads`): 1 while
        the lane watch holds threads off (``WATCH.allows()``; the ``verbose`` line
        says so)."""
        # compositions may lack n_jobs
        threads = lane_threads(getattr(self, "n_jobs", None), n_steps, rows.n_features)
        # set on every pass, so that no earlier pass's (or fit's) hold shows in verbose
        self._one_thread = threads > 1 and not WATCH.allows()  # threads were slower
        return 1 if self._one_thread else threads

    def _work_vectors(self):
        # a dense scratch row per thread of a pass
        return n_threads(self.n_jobs)

    def _progress(self):
        # a pass that the lane watch kept on one thread says so (see n_jobs)
        alone = ("on one thread (threads were slower), "
                 if getattr(self, "_one_thread", False) else "")
        return f"steps {self.t_}, {alone}"


class _HingeSGD(WeightsModel, _PairwiseSGD):
    """SAM / ASAM / PSAM: the kernel's pair loop with a pair rule (``_rule``: the
    hinge's), SVMSGD2 schedule, optional averaging. The objective is ``lam/2
    ||w||^2`` plus the mean pair loss ``_pair_loss`` (the traits' ``pair_loss``)."""

    _rule = Subgradient
    # n_epochs partial_fit calls on the data == fit
    traits = replace(_PairwiseSGD.traits, stream="epochs", pair_loss=mean_pair_hinge,
                     monitor_rows=HINGE_MONITOR_ROWS)
    _state = {
        **weights_state(1),
        "rcount_": Scalar(int, low=1),
        "t0_": Scalar(float, low=0.0),
    }

    _merge_rules = {**WEIGHTED_AVERAGES, "t0_": "mean", "t_": "sum"}

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
        if self._averaged:
            if self.askip is not None:
                check_count("askip", self.askip)
            power = self._avg_power()
            check_positive("avg_power", power, allow_zero=True)
            if power > 8:
                raise ValueError(f"avg_power must be at most 8, got {power!r}")
        _check_common(self)

    def _check_state(self):
        super()._check_state()
        if self.rcount_ > self.rskip:
            raise ValueError(f"rcount_ = {self.rcount_} exceeds rskip = {self.rskip}")

    _auto_params = {"lam": lambda self, s, rows: s * min(1e-4, 1.0 / max(rows.n_rows, 1))}

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
        """``lam/2 ||w||^2 +`` the mean pair loss of the returned model (O(n log n))."""
        return self._scores_objective(self._raw_scores(rows), y)

    def _scores_objective(self, scores, y):
        """:meth:`_objective` given the returned model's scores of the rows."""
        return (0.5 * self.lam_ * self._coef_norms()[0]
                + self._pair_loss(scores[y > 0], scores[y < 0]))

    def _pair_loss(self, pos_scores, neg_scores):
        """The mean pair loss of the objective: the declared ``traits.pair_loss``."""
        return self.traits.pair_loss(pos_scores, neg_scores)

    def _pair_rule(self):
        """The :class:`~aucopt._kernels._pairwise.PairRule` of a pass."""
        return self._rule()

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

    def _avg_power(self):
        return self.avg_power if self._averaged else 0.0

    def _cycles(self):
        """Whether a pass draws its pairs in random cycles through each class."""
        return False

    def _pass(self, rows, y, index):
        if self._pos.size == 0 or self._neg.size == 0:
            return
        askip = 0
        if self._averaged:
            askip = self._askip(rows.n_rows)
            if self.acount_ is None:
                self.acount_ = askip
        w = self._open_weights()
        sched = Schedule(self.lam_, self.t0_, int(self.rskip), askip, t=self.t_,
                         rcount=self.rcount_, acount=self.acount_ if askip else 0,
                         avg_power=self._avg_power())
        rule = self._pair_rule()
        threads = self._threads(rows, rows.n_rows)
        if threads > 1:
            self._lanes_pass(rows, w, threads, sched, rule)
        else:
            # the pass's closing fold recomputes ||v||^2: the steps need not keep it
            w.defer_norm = settles(w, rows.n_rows)
            for pos_rows, neg_rows, _ in _drawn_ahead(
                    _pair_blocks(self.random_state_, self._pos, self._neg, rows.n_rows,
                                 cycles=self._cycles()), self, rows.n_rows):
                sgd_pairs(rows, w, pos_rows, neg_rows, rule, sched)
        if sched.t > self.t_:  # what the pass's pairs saw (driver.PASS)
            self._pass_stats = (sched.hinge_sum / (sched.t - self.t_),
                                sched.ranked_sum / (sched.t - self.t_))
        self.t_ = int(sched.t)
        settle(w, rows.n_rows)
        self._store_weights(w)
        self.rcount_ = int(sched.rcount)
        if askip:
            self.acount_ = int(sched.acount)

    def _lanes_pass(self, rows, w, threads, lead, rule):
        """A pass on ``threads`` threads (see ``n_jobs``): the lanes claim the pass's
        pairs a few at a time until none is left (a lane that gets less of a core
        takes fewer of them), each pair with the step size of its place in the
        pass, ``eta = 1 / (lam (t + t0))``; the lead thread's schedule ``lead``
        applies the shrinks and snapshots of every step, the others' included. A
        block of many more pairs than features runs on copies (:func:`_block_limit`):
        lane 0 on ``w``, every other lane on a copy of ``w`` as it was at the
        block's start that it leads itself, whose changes are added to ``w`` after
        the block. Other blocks run Hogwild, all lanes on ``w``.

        A pass that the lane watch finds due a probe (:class:`_Probe`) runs the
        head of its first block on this thread alone, then the rest on the lanes."""
        clock = self.t_ + self.t0_
        d = rows.n_features
        open_lanes(w)
        copies = None
        at = clock  # t + t0 at the block's start
        probe = _Probe(self, rows)
        for pos_rows, neg_rows, draw in _drawn_ahead(_pair_blocks(
                self.random_state_, self._pos, self._neg, rows.n_rows,
                _lane_blocks(lambda done: _block_limit(clock + done, d)),
                cycles=self._cycles()), self, rows.n_rows):
            refold(w, FOLD_MARGIN)
            size = pos_rows.shape[0]
            pos_rows, neg_rows = probe.head(pos_rows, neg_rows, threads, lambda p, n: (
                sgd_pairs(rows, w, p, n, rule, lead)))
            at += size - pos_rows.shape[0]  # the probe's head
            own = _on_copies(pos_rows.shape[0], at, d)
            at += pos_rows.shape[0]
            if own and copies is None:  # the start and one copy per other lane, O(d) each
                copies = [self._weights_like(w) for _ in range(threads)]
            if own:
                copies[0].assign(w)
            # the other lanes' schedules: the lead's step count and sums from 0 (ticked
            # only by a lane that leads its own copy)
            scheds = [lead] + [lead.copy() for _ in range(threads - 1)]

            def lane(lanes, p):
                if own and p:
                    copies[p].assign(copies[0])  # on the lane's own thread and core
                sgd_lane(rows, copies[p] if own and p else w, pos_rows, neg_rows, lanes, p,
                         rule, scheds[p], own=own and p > 0)

            in_lanes(lane, threads, meanwhile=draw)
            probe.done()
            for copy in copies[1:] if own else ():
                w.add_changes(copy, copies[0])
            for other in scheds[1:]:  # the lead's sums hold the pass's
                lead.hinge_sum += other.hinge_sum
                lead.ranked_sum += other.ranked_sum
        close_lanes(w, norm=not settles(w, rows.n_rows))  # _pass's settle folds

    def _weights_like(self, w):
        """Weights on a new state array of ``w``'s shape, set up for a lane."""
        copy = Weights(np.empty_like(self.weights_), averaging=self._averaged, vsq=0.0)
        open_lanes(copy)
        return copy


_SAM_LAM = """
    lam : float or "auto", default="auto"
        L2 strength (lambda). "auto" is ``3 s / n``, ``s`` the mean squared row norm
        (``row_scale_``) and ``n`` the rows of the first training data. SAM returns
        its last iterate, whose noise a weak penalty leaves large: PSAM's
        ``s min(1e-4, 1/n)`` lost up to 0.059 AUC to SAM's own best on standardised
        dense sets (magic04 0.788 against 0.846, german 0.780 against 0.830, pima
        0.794 against 0.838). Chosen from a scan of ``lam = 2^k s`` over 28
        benchmark forms (4 text sets as TF-IDF, max-abs scaled and binary rows, 16
        dense sets standardised): ``3 s / n`` was within 0.012 AUC of the scan's
        best on all of them (``2 s / n``: 0.016, ``4 s / n``: 0.017)."""

_ASAM_LAM = """
    lam : float or "auto", default="auto"
        L2 strength (lambda). "auto" is ``s max(0.5/n, min(1e-4, 1/n))``, ``s`` the
        mean squared row norm (``row_scale_``) and ``n`` the rows of the first
        training data: ``0.5 s / n`` below 5,000 rows, then PSAM's ``s min(1e-4,
        1/n)`` (1e-4 up to 10^4 rows, then the ``1/n`` of a linear SVM with ``C =
        1``; see PSAM). The small-data value departs from PSAM's: ASAM's subgradient
        steps ``1 / (lam (t + t0))`` are not clipped at the hinge as PSAM's proximal
        steps are, and with ``1e-4 s`` the first steps on a few hundred standardised
        rows move ``w`` a hundred margins at a time; the average then keeps that
        noise where only tens of positives pin the direction. On the 56 tasks of
        ``tools/tabular.py`` (imbalanced tabular sets of 100-5,000 rows, 1-10%
        positives, half with heavy-tailed rows; stratified 5-fold CV, rows
        standardised) the mean test AUC minus LogisticRegression()'s was -0.0033
        with ``1e-4 s`` (plain / heavy-tailed tasks -0.0088 / +0.0021; 3 tasks more
        than 0.05 below it: sonar, dna_ei and ijcnn1 with 8-12 positives), +0.0072
        with this rule (+0.0044 / +0.0100; none), and with ``c s / n`` below
        ``c 10^4`` rows instead: +0.0022 (c = 0.1; 2 tasks), +0.0057 (0.3; none),
        +0.0049 (0.7; none), and ``s / n`` everywhere +0.0035 (none). Text
        sets of 5,000 rows or more keep the former value."""

_LAM = """
    lam : float or "auto", default="auto"
        L2 strength (lambda). "auto" is ``s min(1e-4, 1/n)``, ``s`` the mean squared
        row norm (``row_scale_``) and ``n`` the rows of the first training data:
        1e-4 for unit-length text rows up to 10^4 rows (see the module docstring),
        then the ``1/n`` of a linear SVM with ``C = 1`` (the dissertation tunes it by
        3-fold CV on {1e-10, ..., 1e-7} for its large sets). Measured: on the
        rcv1-shaped set (724,000 rows) PSAM's test AUC after 2 epochs is 0.851 with
        1e-4 and 0.919 with 1/n; on the text and dense sets below 50,000 rows the
        two agree within 0.0015."""

_COMMON_PARAMS = """
    t0 : float or None, default=None
        Offset of the step ``eta_t = 1 / (lam (t + t0))``. None: ``(lam / s) **
        -0.75``, SVMSGD2's heuristic ``lam ** -0.75`` for rows of unit norm, applied
        in the units of the data (the dissertation only says it was set
        experimentally).
    rskip : int, default=16
        Apply the L2 shrink every ``rskip`` steps (SVMSGD2's ``skip``; not reported
        by the dissertation). With the scaled weight vector the shrink costs O(1)
        anyway; ``rskip`` only changes the schedule."""

_AVERAGING_PARAMS = """
    askip : int or None, default=None
        Snapshot ``w`` into the average every ``askip`` steps; None means
        ``max(1, n // 100)`` (a hundred snapshots per epoch). Snapshots cost O(1)
        (lazy averaging), so any value is affordable.
    avg_power : float in [0, 8], default=2.0
        The snapshot after step ``t`` enters the average with weight ``t **
        avg_power``. 0 is the dissertation's plain running mean (Polyak-Juditsky
        averaging from the first step). The default differs: the first epoch's
        steps are large (proximal steps that land each pair on its hinge), and an
        average that weights them as much as the late ones needs more epochs to
        reach the same AUC. Weights growing with ``t`` discount them without a
        tuned start: ``avg_power=1`` is the weighted average of Lacoste-Julien,
        Schmidt & Bach, "A simpler approach to obtaining an O(1/t) convergence rate
        for the projected stochastic subgradient method" (2012), for
        ``1 / (lam t)`` steps as here; 2 is a polynomial-decay average as in
        Shamir & Zhang, "Stochastic Gradient Descent for Non-smooth Optimization:
        Convergence Results and Optimal Averaging Schemes" (ICML 2013).
        Measured on the four text sets (median of 3 seeds, test AUC after 1 / 3 /
        4 epochs), PSAM on news20: 0.9580 / 0.9635 / 0.9647 with 0, 0.9602 /
        0.9648 / 0.9659 with 1, 0.9608 / 0.9652 / 0.9663 with 2; as good or better
        on the other three; ASAM on news20 after 4 epochs 0.9632 with 0, 0.9662
        with 2."""

_N_JOBS_PARAMS = """
    n_jobs : int or None, default=None
        Threads for a pass (None: 1; -1: every core). With ``n_jobs > 1`` the
        threads claim a pass's pairs a few at a time, each pair with the step size
        of its place in the pass, and one thread applies the L2 shrinks and the
        average's snapshots (adaDSGD: the proximal steps) of every step in order,
        so the schedule is that of ``n_jobs=1`` exactly. The threads step the one
        shared model at once, without locks: Hogwild, Recht, Re, Wright & Niu,
        "Hogwild!: A Lock-Free Approach to Parallelizing Stochastic Gradient
        Descent" (NIPS 2011), whose analysis covers sparse updates like these.
        SAM, ASAM and PSAM step copies instead in blocks of at least
        ``max(n_features, {copy_steps})`` pairs, which come on sets of many more
        rows than features once a block may delay a thread's steps by an eighth of
        the steps taken: each thread but one steps its own copy of the model, and
        the copies' changes are added to the model after the block. Hogwild
        threads contend for the cache lines of the frequent features' weights,
        copies do not: on an rcv1-shaped set of 724,000 rows and 47,236 features,
        PSAM's later epochs ran 1.80x faster on two threads than on one with
        copies, 1.54x Hogwild (medians of 12 alternating rounds). An update can be
        lost when two Hogwild threads write one coordinate at the same moment, and
        the threads' shares of the pairs vary, so a model trained on threads is not
        reproducible bit for bit, but its quality after the same number of epochs
        is that of ``n_jobs=1`` (measured on the bundled and text sets: within the
        differences between seeds). The threads are started once and kept between
        passes. PSAM epochs with two threads against one, on two idle cores
        (medians of interleaved epochs): 20 Newsgroups 1.3-1.5x, reuters_acq and
        sector 1.2-1.3x (Hogwild), the rcv1-shaped set 1.7-1.8x (copies), with the
        test AUC after 4-10 epochs within 0.0008. The machine and the threads each
        keep that under 2x: on the machine of these numbers two independent
        one-thread fits at once had 1.4-2.1x the throughput of one, minute by
        minute, and two Hogwild threads 0.6-1.0 of that in the same minute,
        0.8-0.9 on copies (20 Newsgroups: a pair costs each thread 1.1-1.3x what it
        costs one thread alone; the pair draws and the fold, 0.5 ms, and the rest of
        the work between the lanes run on one thread: 0.7-0.9 ms of a 7-12 ms pass).
        Two Hogwild threads can also take up to twice as long as one: in some
        minutes on that machine a 20 Newsgroups pass took 14-19 ms on two Hogwild
        threads against 7-12 ms on one, while two threads that each stepped weights
        of their own (a timing experiment) took 5-8 ms in the same minutes, so the
        time went to the shared weights' cache lines. In one such minute, handing a
        cache line from one core to the other took 168 ns instead of the usual 30-40
        ns (the virtual machine's two cores far apart on its host), and reuters_acq
        passes ran at 0.47-0.52x one thread on two Hogwild threads, at 1.37-1.65x on
        two threads with weights of their own (at 30-40 ns, in the minutes after:
        0.71-1.50x, median 1.25x, against 1.18-1.91x, median 1.55x). So the passes
        watch the threads (:class:`aucopt.learners._lanes.LaneWatch`, one per
        process): at most every {probe_seconds} s, a pass (adaDSGD: a stage) after
        the first pass's worth of steps runs the first 1/{probe_share} of its first
        block on one thread and the rest on the threads, and compares their times a
        pair; when the threads took more than {slower} times one thread's, the
        passes that start in the next {hold_seconds} s run on one thread
        (``verbose`` says so), then a pass probes again. Measured on that machine in
        back-to-back rounds of three fits (two threads without the watch, two with
        it, one thread) for 60-90 s a set, as the speed-up of the total time over one
        thread's, without / with the watch: 20 Newsgroups 1.13x / 1.24x (10-epoch
        fits; two threads without the watch were slower than one in 13% of the
        rounds) and 0.75x / 1.12x (default fits; 47%), reuters_acq 0.95x / 1.04x
        (default fits; 13%), sector 1.05x / 1.17x (10-epoch fits; 11%); in the other
        rounds the watch cost 0.3-3% (probes, and holds that outlast a slow spell).
        Passes too short for threads (fewer than ``n_jobs * {lane_steps}`` or
        ``n_features / 16`` steps) run on one thread;
        ``n_jobs=1`` is the sequential algorithm, bit for bit."""

_N_JOBS_PARAMS = docstring(_N_JOBS_PARAMS, fields={
    "lane_steps": LANE_STEPS, "copy_steps": f"{COPY_STEPS:,}",
    "probe_seconds": PROBE_SECONDS, "probe_share": PROBE_SHARE, "slower": SLOWER,
    "hold_seconds": HOLD_SECONDS})
_HINGE_EPOCHS = epoch_params(HINGE_MONITOR_ROWS)
_OBJECTIVE_DOC = """
    objective_ : float
        ``lam/2 ||w||^2`` + mean pairwise hinge after the last epoch (``n_epochs="auto"``)."""

_TAIL_FIELDS = {"epochs": docstring(_HINGE_EPOCHS, fields={"tol": "3e-3"}),
                "objective": _OBJECTIVE_DOC,
                "n_jobs": _N_JOBS_PARAMS,
                "input_attributes": INPUT_ATTRIBUTES}

_TAIL_PARAMS = """{epochs}{n_jobs}
    random_state : int, numpy Generator or None, default=None
        Seed of the pair draws; the same seed gives the same model, bit for bit,
        for dense and CSR input (with ``n_jobs=1``).
    verbose : int, default=0
        Print one progress line per epoch (steps, ``||w||``, objective, training
        AUC, time).
    pos_label : label or None, default=None
        Which label is positive; default the larger of the two.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The ranking direction ({coef_note}).
    intercept_ : float
        ``-threshold`` of the training OPTROC point; ranks do not depend on it.
{input_attributes}
    lam_, t0_ : float
        The regularisation strength and step offset in use.
    row_scale_ : float
        Mean squared row norm of the first training data (``fit`` or the first
        ``partial_fit`` chunk).
    t_ : int
        Pair steps taken so far.
    n_passes_ : int
        Epochs run (``fit`` epochs plus ``partial_fit`` calls).{objective}
    stop_reason_ : {{"tol", "max_epochs", "n_epochs"}}
    weights_ : ndarray of shape (n_features, 1) or (n_features, 2)
        The weight primitive's state: column 0 is ``v`` of the current iterate
        ``w = weights_scale_ * v``; with averaging, column 1 is the lazy average's
        accumulator (the average is ``(weights_avg_c_ v - u) / weights_avg_q_``)."""

_ITERATE_MERGE = merge_doc("average", """averages the iterates with the models'
    weights (by default the pair steps each took); the step counter ``t_``, which sets
    the step size, is their weighted mean too (the schedule continues where the
    parts' schedules stand); with ``base`` it is a round of iterative parameter
    mixing.""")

# SAM / ASAM / PSAM: the step counter adds up (measured: see the text)
_SUMMED_STEPS = """with ``base`` it is a round of iterative parameter mixing. The
    step counter ``t_``, which sets the step size ``1 / (lam (t + t0))``, adds the
    steps the parts took (since ``base``): the schedule goes on as if they had been
    taken one after another. (Their weighted mean, each part's own schedule, takes
    larger steps: PSAM ranked 0.0017 AUC lower after 5 rounds of 2 parts on 804,414
    rcv1-shaped rows.)"""

_HINGE_MERGE = merge_doc("average", """averages the iterates with the models' weights
    (by default the pair steps each took); """ + _SUMMED_STEPS)

_AVERAGE_MERGE = merge_doc("average", """averages the iterates and the running
    averages with the models' weights (by default the pair steps each took); the
    averages' snapshot weights add, so that training continues the merged average;
    """ + _SUMMED_STEPS)

_REFERENCE = """Khalid, "Scalable Large Margin Pairwise Learning Algorithms", PhD
    dissertation, Colorado State University, 2019"""


class SAM(_HingeSGD):
    __doc__ = docstring("""SAM: plain stochastic pairwise hinge SGD with scheduled L2 regularisation.

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
{_HINGE_MERGE}

    Defaults that add to the dissertation (which tunes the epochs): ``n_epochs="auto"``
    stops after ``n_iter_no_change=5`` passes in a row that improve the objective by
    less than ``tol``, where ASAM and adaDSGD wait 2 and PSAM 1. The last iterate's
    objective moves from pass to pass by about ``tol`` on small data, so two passes
    without progress stop it early, before the passes that settle the direction on
    tens of positives. On the 56 tasks of ``tools/tabular.py`` (imbalanced tabular
    sets of 100-5,000 rows, 1-10% positives, half with heavy-tailed rows; stratified
    5-fold CV, rows standardised) the mean test AUC minus LogisticRegression()'s was
    +0.0020 with 2 (plain / heavy-tailed tasks +0.0045 / -0.0006; 5.0 passes on
    average; 3 tasks more than 0.05 below it: dna_ei and ijcnn1 with 7-8
    positives), +0.0014 with 3 (1 task), +0.0023 with 4 (1), +0.0023 with 5
    (+0.0042 / +0.0003; 8.7 passes; none), +0.0001 with 6 (1), and +0.0024 with
    50 fixed passes (none). (``tol=1e-3`` with 2 passes: +0.0015, 3 tasks; a
    smaller ``lam`` such as ``s / n``: +0.0004, 2 tasks.)

    Parameters
    ----------""", fields=dict(_REFERENCE=_REFERENCE, _HINGE_MERGE=_HINGE_MERGE)) \
        + _SAM_LAM + _COMMON_PARAMS + docstring(_TAIL_PARAMS, fields=dict(
            _TAIL_FIELDS, coef_note="the last iterate",
            epochs=_TAIL_FIELDS["epochs"].replace("n_iter_no_change : int, default=2",
                                                  "n_iter_no_change : int, default=5")))

    _aucopt_name = "sam"
    # the last iterate: a penalty of a few times 1/n (see lam)
    _auto_params = {"lam": lambda self, s, rows: 3.0 * s / max(rows.n_rows, 1)}

    def search_space(self, X):
        """The grid :class:`aucopt.model_selection.GridSearch` tries by default on
        ``X``: ``lam`` from 10^-2 to 10^2 times its "auto" value on ``X``."""
        lam = auto_value(self, "lam", X)
        return {"lam": [10.0 ** k * lam for k in range(-2, 3)]}

    def __init__(self, lam="auto", t0=None, rskip=16, n_epochs="auto", tol=3e-3,
                 n_iter_no_change=5, max_epochs=50, n_jobs=None, random_state=None,
                 verbose=0, pos_label=None):
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


class ASAM(_HingeSGD):
    __doc__ = docstring("""ASAM: accelerated stochastic AUC maximization ({_REFERENCE}, Sec. 6.3, Alg. 10).

    SAM's pairwise hinge steps and scheduled L2 shrink, plus averaging: every
    ``askip`` steps a snapshot of ``w`` enters a weighted running average, which
    is returned (Polyak-Juditsky averaging as analysed by Xu, "Towards optimal one
    pass large scale learning with averaged stochastic gradient descent", 2011;
    the dissertation's plain mean ``wbar <- (q wbar + w) / (q + 1)`` is
    ``avg_power=0``, the default weights late snapshots more, see ``avg_power``).
    Averaging is exact and lazy: O(1) per snapshot, O(nnz) per step.
{_AVERAGE_MERGE}

    Parameters
    ----------""", fields=dict(_REFERENCE=_REFERENCE, _AVERAGE_MERGE=_AVERAGE_MERGE)) \
        + _ASAM_LAM + _COMMON_PARAMS + _AVERAGING_PARAMS + docstring(_TAIL_PARAMS, fields=dict(
            _TAIL_FIELDS, coef_note="the averaged iterate"))

    _aucopt_name = "asam"
    _averaged = True
    # subgradient steps on small data: a penalty of 0.5 s / n (see lam)
    _auto_params = {"lam": lambda self, s, rows: max(
        0.5 * s / max(rows.n_rows, 1), _HingeSGD._auto_params["lam"](self, s, rows))}

    def __init__(self, lam="auto", t0=None, rskip=16, askip=None, avg_power=2.0,
                 n_epochs="auto", tol=3e-3, n_iter_no_change=2, max_epochs=50, n_jobs=None,
                 random_state=None, verbose=0, pos_label=None):
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.askip = askip
        self.avg_power = avg_power
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


# PSAM's default min_steps: n_epochs="auto" runs at least this many pair steps
PSAM_MIN_STEPS = 8000

_PSAM_PARAMS = docstring("""
    sampling : {{"cycles", "replacement"}}, default="cycles"
        How a pass draws its ``n`` pairs: "replacement", the dissertation's
        independent uniform draws of a positive and a negative row; "cycles",
        random reshuffling per class: each class's rows in a fresh random order,
        each once before any again (every pair is still uniform over the positive
        and negative rows; a pass starts new cycles, so ``fit`` is still ``n_epochs``
        calls of ``partial_fit``).
    min_steps : int, default={min_steps}
        ``n_epochs="auto"`` does not stop before ``fit`` has taken this many pair
        steps (on small data; 0: no floor).
    monitor : {{"pass", "rows"}}, default="pass"
        What ``n_epochs="auto"`` watches after each pass. "pass": what the pass's
        own steps saw, summed by the kernel as it steps (one addition a pair, no
        row scored): the objective is the iterate's mean hinge ``max(0, 1 -
        w.(x_i - x_j))`` over the pass's pairs, each taken before its step (a
        progressive estimate, as scikit-learn's ``SGDClassifier`` stops on the
        loss summed over its epoch), and ``auc_tol`` watches the share of those
        pairs the iterate ranked right. "rows": the objective ``lam/2 ||w||^2`` +
        mean pair hinge of the returned model on the training rows (a fixed
        random subsample of at most
        {monitor_rows}), and ``auc_tol`` its AUC on
        them: a scoring pass over those rows and two sorts after each pass.
        ``tol`` and ``auc_tol`` apply to the monitor's quantities: "rows" was the
        default with ``tol=1.2e-2, auc_tol=3e-4``.
    auc_tol : float or None, default=2e-3
        ``n_epochs="auto"`` does not stop either after a pass that raised the
        ranking the monitor watches (see ``monitor``) by at least this much over
        its best so far: the ranking still improves while the objective stalls
        (None: the objective alone).""", fields={
    "min_steps": PSAM_MIN_STEPS, "monitor_rows": monitored_rows_doc(HINGE_MONITOR_ROWS)})


_PSAM_EPOCHS = """
    n_epochs : int or "auto", default="auto"
        Passes over the data in ``fit``. "auto" runs passes until the training
        objective (see ``monitor``) stalls: training stops once
        ``n_iter_no_change`` passes in a row improved it by less than ``tol``
        (past ``min_steps``, and unless ``auc_tol`` holds it), or after
        ``max_epochs`` passes; ``stop_reason_`` says which. An int runs exactly
        that many passes.""" + epoch_tail("3e-2", 1)

_PSAM_OBJECTIVE_DOC = """
    objective_ : float
        The stopping rule's objective after the last epoch (``n_epochs="auto"``):
        with ``monitor="pass"`` the iterate's mean hinge over that pass's pairs,
        each before its step (also the objective column of ``history_`` in every
        fit); with "rows" ``lam/2 ||w||^2`` + mean pairwise hinge of the returned
        model on the monitored rows."""


class _PsamStall(Stall):
    """PSAM's stall rule with ``monitor="rows"``: the driver's, which does not stop
    before ``learner.t_`` reaches ``floor`` pair steps, nor while the training AUC
    of the monitored rows (from the scores the objective came from) improves on its
    best by at least ``auc_tol`` (None: the objective alone)."""

    def __init__(self, learner, floor, auc_tol=None):
        super().__init__(learner.tol, learner.n_iter_no_change)
        self.learner, self.floor, self.auc_tol = learner, floor, auc_tol
        self.best_auc = -math.inf

    def update(self, value, scores=None, y=None):
        auc = None
        if self.auc_tol is not None and scores is not None and (y > 0).any() and (y < 0).any():
            auc = roc_auc(y, scores)
        return self._guarded(value, auc)

    def _guarded(self, value, ranking):
        """The objective's verdict, held below the step floor and while
        ``ranking`` (None: not watched) still gains ``auc_tol`` on its best."""
        stalled = Stall.update(self, value) and self.learner.t_ >= self.floor
        if ranking is not None:
            stalled = stalled and ranking - self.best_auc < self.auc_tol
            self.best_auc = max(self.best_auc, ranking)
        return stalled


class _PsamPassStall(_PsamStall):
    """PSAM's stall rule with ``monitor="pass"``: the same rule on what the pass's
    steps saw (the kernel's sums, no rows scored): the iterate's mean hinge over
    the pass's pairs and, for ``auc_tol``, their share ranked right."""
    monitor = PASS

    def update(self, hinge, ranked):
        return self._guarded(hinge, None if self.auc_tol is None else ranked)


class PSAM(ASAM):
    __doc__ = docstring("""PSAM: proximal stochastic AUC maximization ({_REFERENCE}, Sec. 7.3, Alg. 11, App. A).

    Each step is the proximal map of the pair's hinge loss with parameter
    ``lam_t = 1 / (lam (t + t0))`` (Alg. 11: ``w_(t+1) = prox_(lam_t f_t)(w_t)``; the
    "M prox" formula of Sec. 7.3 is garbled)::

        m = w.(x_i - x_j)
        if m < 1:  w <- w + tau (x_i - x_j),  tau = min(lam_t, (1 - m) / ||x_i - x_j||^2)

    i.e. ``tau = lam_t * clip((1 - m) / (lam_t ||z||^2), 0, 1)``: the closed form of
    Appendix A with its sign corrected and the clip it omits; a violated pair is
    moved at most onto the hinge. ``||x_i - x_j||^2`` comes from cached row norms
    and ``x_i.x_j`` from row i's entries numbered in a scratch row; pairs with ``x_i = x_j``
    are skipped. Then ASAM's scheduled shrink and averaging; the average is
    returned. ``lam`` is Alg. 11's ``gamma``.
{_AVERAGE_MERGE}

    Defaults that add to the dissertation, chosen on the four text sets (news20,
    reuters_acq, sector, webkb_course) and checked on w8a and spambase: the average
    weights snapshot ``t`` by ``t ** 8`` (``avg_power=8``; the dissertation's plain
    mean is ``avg_power=0``), ``n_epochs="auto"`` stops after the first pass that
    improves the objective by less than ``tol`` (``n_iter_no_change=1``). Measured
    (median of 3 seeds, epochs of ``fit`` / test AUC, against ASAM's ``avg_power=2``
    and ``n_iter_no_change=2``): news20 6 / 0.9670 against 7-8 / 0.9678, reuters_acq
    4-5 / 0.9971 against 5-6 / 0.9971, sector 6 / 0.9881 against 7-8 / 0.9887,
    webkb_course 5 / 0.9974 against 6 / 0.9975, w8a 3 / 0.9685 against 4 / 0.9691,
    spambase 3-5 / 0.8246 against 4-6 / 0.8235: a fifth fewer epochs at the same
    AUC within 0.001.

    Then, for fewer epochs to the AUC of a linear SVM: the pairs are drawn in random
    cycles through each class (``sampling="cycles"``; the dissertation draws with
    replacement), ``tol=1.2e-2`` (was 3e-3), at least ``min_steps=8000`` pair
    steps, and no stop while the training AUC still rises by ``auc_tol=3e-4`` a
    pass. Measured on the train / test splits (seeds 0-2, epochs / test AUC;
    best of ``LinearSVC()`` and ``SGDClassifier(average=True)`` in brackets): with
    the former defaults news20 6,6,6 / 0.9670, 0.9667, 0.9677 (0.9677),
    reuters_acq 4,4,5 / 0.9971-0.9972 (0.9971), sector 6,6,6 / 0.9879-0.9888
    (0.9893), webkb_course 5,5,5 / 0.9973-0.9974 (0.9977); with these 3,3,3 /
    0.9663, 0.9664, 0.9659; 3,3,3 / 0.9970-0.9972; 3,3,3 / 0.9884-0.9897; 3,3,3 /
    0.9973-0.9976. On news20 every one of seeds 0-9 stops after 3 passes (median
    0.9661, two seeds at 0.9655 and 0.9648). The cycles give the AUC of 3 passes
    (news20, median of 10 seeds after 3 passes: 0.9661 against 0.9656 with draws
    with replacement), the tolerance stops there (the objective still falls by
    0.005-0.01 a pass). ``auc_tol`` is for harder sets, where the ranking improves
    while the objective flattens: on the rcv1-shaped set of ``tools/synth_rcv1.py``
    (724,000 training rows, seeds 0-1; ``LinearSVC()`` 0.9317 in 36 s) 7,8 /
    0.9305, 0.9309 in 6.7 s, against 5,5 / 0.9289, 0.9287 with ``auc_tol=1e-3``, 3 /
    0.9248 without it (seed 0) and 6,5 / 0.9271, 0.9264 with the former defaults; on
    the four sets above the training AUC is 0.9997-1 after 2 passes, and 1e-3 gave
    the same epochs except reuters_acq's 3,2,2; on the tabular tasks 1e-3, 5e-4
    and 3e-4 give the same mean (the step floor decides there).
    ``min_steps`` is for small data: there a pass is a few hundred steps, its
    objective is noisy, and the stop came after 2-4 passes; on the 56 tasks of
    ``tools/tabular.py`` (imbalanced tabular sets of 100-5,000 rows; stratified
    5-fold CV) the mean test AUC minus LogisticRegression()'s, seeds 0-3, was
    +0.0114, +0.0123, +0.0068, +0.0082 with the former defaults (1, 2, 3, 1 tasks
    more than 0.05 below it), +0.0064, +0.0109, +0.0064, +0.0117 with the cycles
    and ``tol=1e-2`` alone (5, 1, 4, 1 tasks), and +0.0097, +0.0110, +0.0120,
    +0.0104 with these defaults (0, 1, 0, 0 tasks; mean of the seeds on the plain /
    heavy-tailed tasks -0.0002 / +0.0218 against -0.0006 / +0.0199), with 24 passes
    on average instead of 3.5: 8,000 steps are 50 passes of 160 rows and less than
    3 of the smallest text set's 2,803. ``sampling="replacement", tol=3e-3,
    min_steps=0, auc_tol=None`` are the former defaults.

    Then, for a stopping rule that scores no rows: ``monitor="pass"`` with
    ``tol=3e-2`` and ``auc_tol=2e-3`` (the rule above is ``monitor="rows",
    tol=1.2e-2, auc_tol=3e-4``). It reads the iterate's mean hinge over each
    pass's pairs and their share ranked right, which the kernel sums as it steps;
    the rows rule scored up to 4,096 training rows and sorted their scores after
    every pass, 11-24% of a default fit on the four text sets. The tolerances come
    from the passes of those fits: the pass's mean hinge fell by 0.046-0.115 from
    pass 1 to 2 and by 0.006-0.023 from pass 2 to 3 on the four text sets (seeds
    0-1), and the share ranked right gained at most 0.0012 in their pass 3; on the
    rcv1-shaped set it gained 0.0026-0.0028 in pass 6 and 0.0022-0.0024 in pass 7,
    where 6 passes give a test AUC of 0.9295-0.9300 and 7 give 0.9304-0.9305.
    Measured (seeds 0-2, epochs / test AUC): the four text sets stop after the
    same 3 passes, with the same models; the rcv1-shaped set 8,8,8 / 0.9310,
    0.9309, 0.9309 against 7,8,10 / 0.9305, 0.9309, 0.9315; the 56 tabular tasks
    (seeds 0-3) +0.0098, +0.0110, +0.0120, +0.0105 against +0.0097, +0.0110,
    +0.0121, +0.0103, with 24.1 passes on average against 24.2 and half the CPU
    time; w8a 4,3,3 / 0.9695, 0.9691, 0.9680 against 2,2,3 / 0.9701, 0.9691,
    0.9680, spambase 4,5,4 / 0.8275, 0.8279, 0.8260 against 3,7,6 / 0.8203,
    0.8292, 0.8284, a9a 4,5,5 / 0.9020, 0.9025, 0.9018 against 3,4,4 / 0.9020,
    0.9023, 0.9020. A default fit takes 0.77-0.84 of its former time on the four
    text sets (paired medians of 40 interleaved fits).

    Checked afterwards on ten text tasks no default was chosen on: other classes of
    the same corpora against the rest (20 Newsgroups' rec.*, sci.*, talk.* and
    sci.med, Reuters-21578's earn, crude and money-fx, sector's classes 1-50, WebKB's
    student and faculty; seeds 0-2, 30 fits). The defaults stopped after 2-4 passes
    (3 in 20 fits). In 29 fits the test AUC was at least the best peer's minus 0.002
    (the best of ``LinearSVC()``, ``LinearSVC(class_weight="balanced")``,
    ``SGDClassifier(average=True)``, ``LogisticRegression(class_weight="balanced")``
    and Vowpal Wabbit); the other fit (sci.*, seed 0) was 0.0002 below. The fits took
    0.19-0.37 of ``LinearSVC()``'s time. The first pass alone reached that AUC in 23
    of the 30 fits, but the pass statistics the rule reads do not tell those fits from
    the ones that need more: the second pass's mean hinge is 0.38 of the first's on
    news20 (20 Newsgroups' classes 1-5) and on sector's classes 1-50, which need 3
    passes, and 0.34 on rec.*, where one pass is enough.

    Parameters
    ----------""", fields=dict(_REFERENCE=_REFERENCE, _AVERAGE_MERGE=_AVERAGE_MERGE)) \
        + _LAM + _COMMON_PARAMS \
        + _AVERAGING_PARAMS.replace("avg_power : float in [0, 8], default=2.0",
                                    "avg_power : float in [0, 8], default=8.0") \
        + _PSAM_PARAMS + docstring(_TAIL_PARAMS, fields=dict(
            _TAIL_FIELDS, coef_note="the averaged iterate", epochs=_PSAM_EPOCHS,
            objective=_PSAM_OBJECTIVE_DOC))

    _aucopt_name = "psam"
    _rule = HingeProx
    _auto_params = _HingeSGD._auto_params  # not ASAM's (see lam)

    _rows_tol = 1.2e-2  # the rows' tolerance of a distributed fit's rounds (aucopt.dask)

    def __init__(self, lam="auto", t0=None, rskip=16, askip=None, avg_power=8.0,
                 sampling="cycles", min_steps=PSAM_MIN_STEPS, monitor="pass", auc_tol=2e-3,
                 n_epochs="auto", tol=3e-2, n_iter_no_change=1, max_epochs=50, n_jobs=None,
                 random_state=None, verbose=0, pos_label=None):
        super().__init__(lam=lam, t0=t0, rskip=rskip, askip=askip, avg_power=avg_power,
                         n_epochs=n_epochs, tol=tol, n_iter_no_change=n_iter_no_change,
                         max_epochs=max_epochs, n_jobs=n_jobs, random_state=random_state,
                         verbose=verbose, pos_label=pos_label)
        self.sampling = sampling
        self.min_steps = min_steps
        self.monitor = monitor
        self.auc_tol = auc_tol

    def _check_params(self):
        check_choice("sampling", self.sampling, ("replacement", "cycles"))
        check_count("min_steps", self.min_steps, minimum=0)
        check_choice("monitor", self.monitor, (PASS, "rows"))
        if self.auc_tol is not None:
            check_positive("auc_tol", self.auc_tol, allow_zero=True)
        super()._check_params()

    def _stall_rule(self):
        rule = _PsamPassStall if self.monitor == PASS else _PsamStall
        return rule(self, int(self.min_steps), self.auc_tol)

    def _cycles(self):
        return self.sampling == "cycles"


def _next_stage(m, growth, n):
    """The next stage's size ``min(n, ceil(growth m))``, safe for any finite growth."""
    return int(min(n, math.ceil(min(growth * m, n))))


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
""" + _ITERATE_MERGE + """

    Parameters
    ----------
    eta : float or "auto", default="auto"
        Constant step ``gamma`` within each stage (the paper analyses constant steps
        and tunes it on 10^[-4:0] without a default). "auto": ``0.1 / c`` with ``c =
        norm_cap_`` (``0.1 / max ||x||^2`` with ``norm_cap=0``), i.e. 0.1 for the
        unit-norm rows of TF-IDF text, smaller for standardised dense data, where a
        constant step on the square loss must stay below ``1 / ||z||^2``. A default
        fit that diverges is run again with a quarter of the step (``n_retries_``).
    norm_cap : float or "auto", default="auto"
        A pair's step is multiplied by ``min(1, c / max(||x_i||^2, ||x_j||^2))``:
        pairs with a row longer than ``sqrt(c)`` move ``w`` no further than such a
        row would. "auto" is the 75th percentile of the squared row norms of the
        first training data (the mean for a distributed fit, whose statistics have
        no quantiles); 0 caps nothing (the paper's step). A departure for heavy
        tails: after standardising, a few outlier rows have squared norms 100 times
        the rest, and ``0.1 / max ||x||^2`` left every other pair a step too small
        to train. On the 56 tasks of ``tools/tabular.py`` the mean test AUC against
        LogisticRegression() went from -0.0331 (heavy-tailed tasks -0.0634, the
        others -0.0028; 12 tasks more than 0.05 below it) to +0.0054 (+0.0099 /
        +0.0010; none), the cap without the divergence retry to -0.0051 (7 fits
        raised FloatingPointError).
    lam : float or "auto", default="auto"
        Elastic-net strength; ``l1 = lam * l1_ratio``, ``l2 = lam * (1 - l1_ratio)``.
        "auto" is ``1e-6 s`` with ``s`` the mean squared row norm, i.e. 1e-6 for
        unit-length rows (the paper tunes l1 and l2 on 10^[-5:-1]; it returns the
        last iterate of a constant-step stagewise schedule, whose noise already
        regularises). Chosen from a scan of ``lam = 2^k s`` over 28 benchmark forms
        (4 text sets as TF-IDF, max-abs scaled and binary rows, 16 dense sets
        standardised): the AUC is flat below about ``1e-6 s`` on all of them, and
        ``1e-6 s`` was within 0.02 of the scan's best everywhere (largest gaps on
        the smallest sets: sonar 0.020, ionosphere 0.016), while the former ``1e-5
        s`` lost 0.038 on sector as binary rows (0.892 against 0.929).
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
        + docstring(EPOCH_PARAMS, fields={"tol": "1e-3"}) + _N_JOBS_PARAMS + """
    random_state : int, numpy Generator or None, default=None
    verbose : int, default=0
        Print one progress line per epoch.
    pos_label : label or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The last iterate.
    eta_, lam_, norm_cap_ : float
        Step, elastic-net strength and cap in use.
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
    traits = replace(_PairwiseSGD.traits, pair_loss=mean_pair_square)
    # a diverged default fit (eta="auto") is retried with a smaller eta
    _retry_param = "eta"
    # norm_cap before eta: "auto" eta is measured against the cap in use
    _auto_params = {"lam": lambda self, s, rows: 1e-6 * s,
                    "norm_cap": lambda self, s, rows: auto_norm_cap(rows, s),
                    "eta": lambda self, s, rows: 0.1 / (self.norm_cap_
                                                        or rows.max_sqnorm() or 1.0)}

    def __init__(self, eta="auto", lam="auto", norm_cap="auto", l1_ratio=0.5,
                 penalty="elasticnet", l2_form="half", m0=1000, growth=2.0, inner="alg1",
                 n_epochs="auto", tol=1e-3, n_iter_no_change=2, max_epochs=50, n_jobs=None,
                 random_state=None, verbose=0, pos_label=None):
        self.eta = eta
        self.lam = lam
        self.norm_cap = norm_cap
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
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label

    def search_space(self, X):
        """The grid :class:`aucopt.model_selection.GridSearch` tries by default on
        ``X``: ``lam`` from 1e-8 to 1e-4 times the mean squared row norm."""
        s = search_scale(self, X)
        return {"lam": [c * s for c in (1e-8, 1e-7, 1e-6, 1e-5, 1e-4)]}

    def _check_params(self):
        auto_or_positive("eta", self.eta)
        auto_or_positive("lam", self.lam, allow_zero=True)
        auto_or_positive("norm_cap", self.norm_cap, allow_zero=True)
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
        return self._scores_objective(self._raw_scores(rows), y)

    def _scores_objective(self, scores, y):
        """:meth:`_objective` given the returned model's scores of the rows."""
        l1, l2 = self._penalty()
        sq, l1_norm = self._coef_norms()
        return (0.5 * mean_pair_square(scores[y > 0], scores[y < 0])
                + 0.5 * l2 * sq + l1 * l1_norm)

    def _stage(self, rows, w, pos, neg, m, n_steps):
        """``n_steps`` prox steps on pairs from ``pos``/``neg`` (a stage of ``m`` rows),
        on ``n_jobs`` threads sharing ``w`` when the stage is long enough."""
        l1, l2 = self._penalty()
        eta = self.eta_
        weight = 2.0 * pos.size * neg.size / (m * (m - 1.0))
        shrink = 1.0 + eta * l2
        step = SquareStep(eta, weight, eta * l1, shrink, self.norm_cap_)
        threads = self._threads(rows, n_steps)
        if threads > 1:
            # a block multiplies the prox's product P by shrink ** size: by less than
            # FOLD_MARGIN
            most = (math.log(FOLD_MARGIN) / math.log(shrink) if shrink > 1.0 else math.inf)
            open_lanes(w)
            probe = _Probe(self, rows)
            for pos_rows, neg_rows, draw in _drawn_ahead(_pair_blocks(
                    self.random_state_, pos, neg, n_steps, _lane_blocks(lambda done: most))):
                refold(w, FOLD_MARGIN)
                pos_rows, neg_rows = probe.head(pos_rows, neg_rows, threads, lambda p, n: (
                    square_prox_pairs(rows, w, p, n, step)))
                in_lanes(lambda lanes, p: square_lane(rows, w, pos_rows, neg_rows, lanes, p,
                                                      step), threads, meanwhile=draw)
                probe.done()
            close_lanes(w, norm=not settles(w, n_steps))  # the settle below folds
        else:
            for pos_rows, neg_rows in _pair_blocks(self.random_state_, pos, neg, n_steps):
                square_prox_pairs(rows, w, pos_rows, neg_rows, step)
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
                m = _next_stage(m, growth, n)  # the prefix lacks a class
                prefix = perm[:m]
            pos = prefix[y[prefix] > 0]
            neg = prefix[y[prefix] < 0]
            n_steps = m if self.inner == "alg1" else int(math.ceil(m ** (4.0 / 3.0)))
            self._stage(rows, w, pos, neg, m, n_steps)
            m = _next_stage(m, growth, n)
        self._store_weights(w)


_PAIR_WEIGHTS = """The pairs are drawn uniformly among the copies: each row is
    drawn in proportion to its weight, so a pair's loss counts ``w_i w_j`` in the
    expected objective (drawing rows, rather than weighting steps, keeps the step sizes
    the same); an epoch is as many draws as copies."""
for _learner in (SAM, ASAM, PSAM, AdaDSGD):
    document_weights(_learner, _PAIR_WEIGHTS)
