# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Stochastic pairwise learners (Khalid 2019 Ch.6-7; AlQuabeh & Abdurahimov): pair loops.

Each step takes a positive row ``x_i`` and a negative row ``x_j`` (drawn by the
caller uniformly with replacement per class), computes the margin ``m = w.x_i - w.x_j`` with two
sparse dot products and applies ``w <- w + c (x_i - x_j)`` through the weight
primitive: the difference is never materialised. Dense and CSR rows come through
the same :class:`RowSource`, so one loop serves both, bit for bit. Row access and
dots are the inline forms of ``_rows.pxd`` / ``_weights.pxd``.

* :func:`sgd_pairs` -- SAM, ASAM, PSAM (and plugins): the step of every pair
  given by a :class:`PairRule` from its margin (:class:`Subgradient` or
  :class:`HingeProx`: hinge loss; :class:`CallbackRule`: a rule in Python), the
  SVMSGD2 schedule of a :class:`Schedule` (scheduled L2 shrink every ``rskip``
  steps, O(1) through the scale; averaging every ``askip`` steps, exact and lazy).
* :func:`square_prox_pairs` -- adaDSGD: pairwise square loss with an elastic-net
  proximal step applied just in time (O(nnz) per step).
* :func:`sgd_lane` / :func:`square_lane` -- the same steps on several threads
  at once (see "Threads" below).

Threads
-------
With ``n_jobs > 1`` ``P`` threads run the steps of one block of pairs at once on the
*same* weight vector, without locks: Hogwild (Recht, Re, Wright & Niu, "Hogwild!:
A Lock-Free Approach to Parallelizing Stochastic Gradient Descent", NIPS 2011).
The lanes read and add to the shared state as they go; when two lanes write one
coordinate at the same moment, one of the two updates can be lost (rare on sparse
rows, and harmless to convergence by Hogwild's analysis).

The lanes (:func:`sgd_lane`, :func:`square_lane`) claim the block's pairs from a
shared cursor, :data:`LANE_CHUNK` at a time, until none is left: a lane that
falls behind takes fewer pairs, and holds the others up at the end of the block
for at most the claim it is working on. Pair ``k`` of the block is step ``t + k +
1`` whichever lane takes it, with that step's size. The state's scalars have one
writer: the *lead* lane (``p = 0``) applies the schedule of every step in order,
the other lanes' included (before its own next step, and after its last claim
for the rest of the block): SAM / ASAM / PSAM's L2 shrinks and the average's
snapshots, adaDSGD's lazy elastic-net proximal steps. So the scale (the
elastic net's products), the average's snapshot sums and the schedule's counts
after a block are those of one thread, exactly; only the coordinates depend on
how the lanes interleave, and one lane that takes every pair is the sequential
loop, bit for bit.

A lane steps at the scale the lead has reached, so paced lanes
(``Lanes(paced=True)``, as ``aucopt.learners._lanes.in_lanes`` runs them) do not
claim pairs more than ``max(2 LANE_CHUNK, (t + t0) / 8)`` beyond those whose
schedule the lead has applied. Unpaced, when the system stalled the lead for a
whole block, the other lane took every pair at the block's first scale, and the
shrinks the lead applied afterwards left an iterate 1/750 of one thread's. The
bound cost 0.99-1.03x in time on two-thread 10-pass PSAM fits (20 Newsgroups,
Reuters-21578 acq, sector; medians of 8 interleaved fits each).

The maintained ``||v||^2`` is not kept by the lanes
(:func:`close_lanes`, or the fold after it, recomputes it); folds are held
(``hold_folds``) and done between blocks (:func:`refold`), which the caller keeps
short enough for the scale to stay within the fold band.

Copies: with ``own``, :func:`sgd_lane` steps a copy of the weights that its lane
leads itself (``Weights.assign`` makes the copy, as the weights were at the block's
start). The lane's schedule is a copy of the lead's (``Schedule.copy``), and applies
the same shrinks and snapshots after the same steps, so the copy's scalars end the
block as the lead's, bit for bit. The caller then adds each copy's changes to the
shared weights (``Weights.add_changes``). No two lanes write the same memory, at the
price of two O(d) passes per block and of lanes that see each other's steps only
after it; the SAM / ASAM / PSAM driver runs blocks of many more pairs than features
that way (``aucopt.learners.stochastic._block_limit``).
"""
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.math cimport fabs, pow
from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy

# The struct behind a numpy BitGenerator's "BitGenerator" capsule (numpy's bitgen.h,
# the layout its documentation gives for extending numpy.random), declared here so
# that the kernels need no numpy headers.
cdef extern from *:
    """
    typedef struct aucopt_bitgen {
        void *state;
        uint64_t (*next_uint64)(void *st);
        uint32_t (*next_uint32)(void *st);
        double (*next_double)(void *st);
        uint64_t (*next_raw)(void *st);
    } aucopt_bitgen;
    """
    ctypedef struct bitgen_t "aucopt_bitgen":
        void* state
        uint64_t (*next_uint64)(void* st) noexcept nogil
        uint32_t (*next_uint32)(void* st) noexcept nogil

import numpy as np

from aucopt._kernels._interrupt cimport poll
from aucopt._kernels._rows cimport (BOUNDS_AHEAD, PREFETCH_AHEAD, RowSource, cap_factor,
                                    check_cap, check_cap_value, prefetch_bounds,
                                    prefetch_row, row_of, sqnorm_of)
from aucopt._kernels._weights cimport (ElasticNetWeights, Weights, renormalize_limit,
                                      weights_margin)

cdef extern from *:
    """
    /* the halt flag another thread may set: read without a data race */
    #if defined(__GNUC__)
    static int aucopt_halted(const int* flag) { return __atomic_load_n(flag, __ATOMIC_RELAXED); }
    #else
    static int aucopt_halted(const int* flag) { return *(volatile const int*)flag; }
    #endif
    """
    int aucopt_halted(const int* flag) noexcept nogil


cdef class PairRule:
    """The step of a pair: called on every drawn pair, it returns how far ``w``
    moves along ``x_i - x_j`` (0: not at all).

    ``step(m, eta, pair)`` gets the margin ``m = w.(x_i - x_j)``, the scheduled rate
    ``eta`` and the pair's rows (:func:`pair_zz` gives ``||x_i - x_j||^2`` when
    ``needs_sqdist``). For a pair loss ``l(m)`` a gradient rule returns ``-eta
    l'(m)``; a hinge rule returns 0 at ``m >= 1``, as scikit-learn's ``dloss`` of
    the hinge does. The base class is the hinge subgradient step.

    ``skip_satisfied`` (set by the hinge rules): the rule returns 0 at ``m >= 1``,
    so the loop does not call it there (76% of the pairs of PSAM's iterate after two
    passes with its defaults on 20 Newsgroups TF-IDF, 80% after three; calling it
    there cost 1% of an epoch by the median of interleaved runs, up to 7% by their
    minimum). The model is the same either way; setting it on a rule that moves
    satisfied pairs changes the rule.

    A rule in Python (for prototypes) is a :class:`CallbackRule`; a compiled rule
    derives from this class in a ``.pyx`` that cimports it.
    """

    def __cinit__(self):
        self.skip_satisfied = type(self) in (PairRule, Subgradient, HingeProx)

    cdef double step(self, double m, double eta, Pair* pair) except? -1.0 nogil:
        return eta if m < 1.0 else 0.0


cdef class Subgradient(PairRule):
    """SAM / ASAM (Khalid 2019, Alg. 10): the hinge subgradient step ``eta`` on a
    violated pair (``m < 1``)."""


cdef class HingeProx(PairRule):
    """PSAM (Khalid 2019, Alg. 11, App. A with the clip to [0, 1] it omits): the
    closed-form proximal map of the pair's hinge loss, ``tau = min(eta, (1 - m) /
    ||x_i - x_j||^2)`` on a violated pair (``m < 1``): it moves at most onto the
    hinge. Pairs with ``x_i = x_j`` do not move."""

    def __cinit__(self):
        self.needs_sqdist = True

    cdef double step(self, double m, double eta, Pair* pair) except? -1.0 nogil:
        cdef double zz
        if m >= 1.0:
            return 0.0
        zz = pair_zz(pair)
        if zz == 0.0:
            return 0.0
        return min(eta, (1.0 - m) / zz)


cdef class CallbackRule(PairRule):
    """A rule in Python: ``fn(m, eta)`` (``fn(m, eta, zz)`` with ``needs_sqdist``,
    ``zz = ||x_i - x_j||^2``) returns the step, a float. For prototypes: each pair
    takes the GIL for the call (about a microsecond), and an exception raised by
    ``fn`` ends the call that ran the loop.

    Parameters
    ----------
    fn : callable
    needs_sqdist : bool, default=False
    """
    cdef object fn

    def __init__(self, fn, bint needs_sqdist=False):
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.needs_sqdist = needs_sqdist

    cdef double step(self, double m, double eta, Pair* pair) except? -1.0 nogil:
        cdef double zz = pair_zz(pair) if self.needs_sqdist else 0.0
        with gil:
            if self.needs_sqdist:
                return float(self.fn(m, eta, zz))
            return float(self.fn(m, eta))


cdef class Schedule:
    """SVMSGD2's schedule on pairs, with its state under names.

    ``eta_t = 1 / (lam (t + t0))``; every ``rskip`` steps ``w <- r w`` with
    ``r = 1 - rskip / (t + t0)`` (``(1 - 1/(t + t0))**rskip`` when ``r < 0.8``,
    SVMSGD2's guard); every ``askip`` steps (``askip > 0``) a snapshot of ``w``
    enters the running average with weight ``t ** avg_power`` (0: the plain mean).
    ``t`` counts steps taken; ``rcount`` / ``acount`` are the steps left before the
    next shrink / snapshot.

    What the steps saw, summed over their pairs (from 0 here; each lane sums its
    own): ``hinge_sum`` of ``max(0, 1 - m)`` and ``ranked_sum`` of ``[m > 0] +
    [m = 0] / 2``, ``m`` the margin of the pair before its step. A pass's mean of
    them is the iterate's progressive hinge loss and share of pairs ranked right,
    at one addition a pair.
    """

    def __init__(self, double lam, double t0, int64_t rskip, int64_t askip=0,
                 int64_t t=0, int64_t rcount=-1, int64_t acount=-1, double avg_power=0.0):
        if (not lam > 0.0 or t0 < 0.0 or rskip < 1 or askip < 0 or t < 0
                or not 0.0 <= avg_power < 16.0):
            raise ValueError("Schedule needs lam > 0, t0 >= 0, rskip >= 1, askip >= 0, "
                             "t >= 0, 0 <= avg_power < 16")
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.askip = askip
        self.t = t
        self.rcount = rskip if rcount < 0 else rcount
        self.acount = askip if acount < 0 else acount
        self.avg_power = avg_power
        self.hinge_sum = 0.0
        self.ranked_sum = 0.0

    def copy(self):
        """The same schedule at the same step (for a lane that leads a copy of the
        weights: ``sgd_lane``'s ``own``), with its sums from 0."""
        return Schedule(self.lam, self.t0, self.rskip, self.askip, self.t, self.rcount,
                        self.acount, self.avg_power)


cdef inline void prefetch_pair(RowSource X, const int64_t* pos_rows, const int64_t* neg_rows,
                               Py_ssize_t k, Py_ssize_t stride, Py_ssize_t stop,
                               const double* sqnorms) noexcept nogil:
    """Prefetch the rows of the pair :data:`PREFETCH_AHEAD` steps after pair ``k``,
    and the bounds of the rows (``sqnorms``: their norms too, unless NULL) of the
    pair :data:`BOUNDS_AHEAD` steps after it."""
    cdef Py_ssize_t ahead = k + PREFETCH_AHEAD * stride
    cdef Py_ssize_t far = k + BOUNDS_AHEAD * stride
    if far < stop:
        prefetch_bounds(X, pos_rows[far], sqnorms)
        prefetch_bounds(X, neg_rows[far], sqnorms)
    if ahead < stop:
        prefetch_row(X, pos_rows[ahead])
        prefetch_row(X, neg_rows[ahead])


cdef int _check_pairs(RowSource X, const int64_t[::1] pos_rows,
                      const int64_t[::1] neg_rows) except -1:
    cdef Py_ssize_t k
    if neg_rows.shape[0] != pos_rows.shape[0]:
        raise ValueError("pos_rows and neg_rows must have the same length")
    for k in range(pos_rows.shape[0]):
        if not (0 <= pos_rows[k] < X.n_rows and 0 <= neg_rows[k] < X.n_rows):
            raise IndexError(f"pair {k} names a row outside 0..{X.n_rows - 1}")
    return 0


cdef int _check_sgd(RowSource X, Weights w, PairRule rule, Schedule sched) except -1:
    if w.n_features != X.n_features:
        raise ValueError("weights and rows differ in the number of features")
    if sched.askip > 0 and not w.averaging:
        raise ValueError("averaging needs Weights with an accumulator")
    if rule.needs_sqdist and not X.has_norms:
        raise ValueError("the rule needs the rows' norms (RowSource(X, norms=True))")
    return 0


cdef extern from *:
    """
    /* a lane worker's hand-over cells: acquire / release loads and stores, and the
       CPU's spin-wait hint */
    #if defined(__x86_64__) || defined(__i386__)
    #define AUCOPT_RELAX() __builtin_ia32_pause()
    #elif defined(__aarch64__) || defined(__arm__)
    #define AUCOPT_RELAX() __asm__ __volatile__("yield")
    #else
    #define AUCOPT_RELAX() ((void)0)
    #endif
    /* give the CPU to another thread that is ready to run on it, if any */
    #if defined(_WIN32)
    #include <windows.h>
    #define AUCOPT_YIELD() ((void)SwitchToThread())
    #else
    #include <sched.h>
    #define AUCOPT_YIELD() ((void)sched_yield())
    #endif
    static inline int64_t aucopt_load_acquire(const int64_t* p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    static inline void aucopt_store_release(int64_t* p, int64_t v) {
        __atomic_store_n(p, v, __ATOMIC_RELEASE);
    }
    /* a lane's claim of the next pairs of a block: the cursor before the addition */
    static inline int64_t aucopt_claim(int64_t* p, int64_t n) {
        return __atomic_fetch_add(p, n, __ATOMIC_RELAXED);
    }
    """
    void AUCOPT_RELAX() noexcept nogil
    void AUCOPT_YIELD() noexcept nogil
    int64_t aucopt_load_acquire(const int64_t* p) noexcept nogil
    void aucopt_store_release(int64_t* p, int64_t v) noexcept nogil
    int64_t aucopt_claim(int64_t* p, int64_t n) noexcept nogil


cdef enum:
    # the pairs a lane claims at a time (module docstring, "Threads")
    _CHUNK = 128
    # how far a lane's next claim may start beyond the pairs the lead has ticked:
    # at least this many pairs, else an eighth of the steps up to the lead's
    _AHEAD_MIN = 2 * _CHUNK
    # wait_change yields the CPU after every this many spin-wait hints (a power of 2)
    _YIELD_SPINS = 256

LANE_CHUNK = _CHUNK


cdef inline int64_t spin(int64_t k) noexcept nogil:
    """One spin of a wait, the ``k``-th: the CPU's spin-wait hint, and every
    ``_YIELD_SPINS`` spins a yield of the CPU (see :func:`wait_change`); returns
    ``k + 1``."""
    AUCOPT_RELAX()
    k += 1
    if k & (_YIELD_SPINS - 1) == 0:
        AUCOPT_YIELD()
    return k


def wait_change(int64_t[::1] cell not None, int64_t value, int64_t spins):
    """Read ``cell[0]``, and while it equals ``value`` spin, with the GIL released,
    reading it again, at most ``spins`` times (a spin-wait hint each); returns the
    last value read (``value``: it did not change; with ``spins=0`` the one read).
    The reads are acquires: what the writer of the new value wrote before
    :func:`publish` is visible after. For a lane worker waiting for its next block
    a few milliseconds awake, instead of a sleep the system takes milliseconds to
    wake from (aucopt.learners._lanes).

    Every 256 hints (about 7 us) it yields the CPU (``sched_yield``): the system
    sometimes places the thread that will change the cell on the spinner's CPU, and a
    spin that never yields holds it off until the spinner is preempted.

    - Two-thread PSAM fits with both lanes forced onto one CPU: a later pass took
      8.0 ms on reuters_acq (2.3-3.0 ms with one thread) and 16.0 ms on 20
      Newsgroups (9-17 ms), against 2.6-3.9 ms and 9.2-11.0 ms with the yields.
    - ``tools/bench.py``'s two-fit rows, where the system had left both lanes on one
      CPU for 7-8 of a fit's 10 passes (their ``sched_getcpu``): the lanes ran at
      0.38-0.56x one thread on reuters_acq and 0.57-0.72x on sector, against
      0.97-1.0x and 0.90-1.11x with the yields (alternating runs). Lanes on two
      CPUs are as fast either way."""
    cdef int64_t k = 0, seen
    if cell.shape[0] < 1:
        raise ValueError("cell must hold one int64")
    with nogil:
        seen = aucopt_load_acquire(&cell[0])
        while seen == value and k < spins:
            k = spin(k)
            seen = aucopt_load_acquire(&cell[0])
    return seen


def publish(int64_t[::1] cell not None, int64_t value):
    """``cell[0] = value`` as a release store (see :func:`wait_change`)."""
    if cell.shape[0] < 1:
        raise ValueError("cell must hold one int64")
    aucopt_store_release(&cell[0], value)


cdef class Lanes:
    """The lanes of a block: their number, a flag that stops them all (one lane's
    Ctrl-C stops the others), the cursor from which the lanes claim the block's
    pairs, :data:`LANE_CHUNK` at a time, and the pairs whose schedule the lead has
    applied (published at each of its claims). With ``paced``, the other lanes'
    claims run ahead of those by a bounded number of pairs (module docstring,
    "Threads"): only for lanes that run at once, since a lane run before its lead
    would wait for it forever."""
    cdef readonly int n_lanes
    cdef readonly bint paced
    cdef int flag
    cdef int64_t cursor
    cdef int64_t lead_done

    def __init__(self, int n_lanes, bint paced=False):
        if n_lanes < 1:
            raise ValueError(f"n_lanes must be >= 1, got {n_lanes}")
        self.n_lanes = n_lanes
        self.paced = paced

    def set(self):
        """Ask every lane to stop after its current step."""
        self.flag = 1

    def halted(self):
        """Whether :meth:`set` was called."""
        return self.flag != 0


cdef class SquareStep:
    """adaDSGD's step constants: the step ``step``, the importance weight
    ``weight`` of the stage, the elastic net's proximal step ``soft(., theta) /
    shrink``, and ``cap``: with ``cap > 0`` a pair's step is multiplied by ``min(1,
    cap / max(||x_i||^2, ||x_j||^2))`` (the rows need their norms)."""
    cdef readonly double step
    cdef readonly double weight
    cdef readonly double theta
    cdef readonly double shrink
    cdef readonly double cap

    def __init__(self, double step, double weight, double theta, double shrink,
                 double cap=0.0):
        check_cap_value(cap)
        self.step = step
        self.weight = weight
        self.theta = theta
        self.shrink = shrink
        self.cap = cap



cdef inline int schedule_tick(Weights w, int64_t t, double t0, int64_t rskip,
                              int64_t askip, double avg_power, int64_t* rcount,
                              int64_t* acount) except -1 nogil:
    """The schedule after step ``t``: the L2 shrink every ``rskip`` steps and the
    average's snapshot every ``askip`` steps (:class:`Schedule`), counted down in
    ``rcount`` / ``acount``."""
    cdef double tt = <double>t + t0, r
    rcount[0] -= 1
    if rcount[0] <= 0:
        r = 1.0 - <double>rskip / tt
        if r < 0.8:
            r = pow(1.0 - 1.0 / tt, <double>rskip)
        w.scale_by(r)
        rcount[0] = rskip
    if askip > 0:
        acount[0] -= 1
        if acount[0] <= 0:
            w.snapshot(1.0 if avg_power == 0.0 else pow(<double>t, avg_power))
            acount[0] = askip
    return 0


cdef inline int ticks_until(Weights w, int64_t last, double t0, int64_t rskip,
                            int64_t askip, double avg_power, int64_t* tick, int64_t* rcount,
                            int64_t* acount) except -1 nogil:
    """The lead's schedule (:func:`schedule_tick`) after every step from ``tick[0] +
    1`` to ``last``: the steps other lanes took before its next one, or after its
    last one."""
    while tick[0] < last:
        tick[0] += 1
        schedule_tick(w, tick[0], t0, rskip, askip, avg_power, rcount, acount)
    return 0


cdef Py_ssize_t sgd_steps(RowSource X, Weights w, const int64_t* pos_rows,
                          const int64_t* neg_rows, Py_ssize_t start, Py_ssize_t stop,
                          Py_ssize_t end, int64_t base, PairRule rule, Schedule sched,
                          bint lead, uint16_t* positions, double* values, const int* halt,
                          Py_ssize_t* work) except -1 nogil:
    """The steps on pairs ``start .. stop - 1`` of a block of ``end`` pairs whose pair
    ``k`` is step ``base + k + 1`` (its step size ``1 / (lam (t + t0))``). With
    ``lead``, ``sched`` applies the schedule (:func:`schedule_tick`) after every step
    up to each of these, in order: those of other lanes first, then the pair's own
    (with one lane on all the pairs, the sequential algorithm); ``sched.t`` is the
    last step it ticked; every lane adds its pairs' hinge and ranking to its
    ``sched``'s sums. ``positions`` / ``values``: the scratch of
    ``pair_sqdist``. Ends early when ``halt`` is set; returns the steps taken. The
    schedule is read into locals and written back at the end: the lanes' Schedule
    objects may share cache lines, which per-step writes to them would bounce
    between cores."""
    cdef Py_ssize_t k, i, j, ni, nj, taken = 0
    cdef const double* vi
    cdef const double* vj
    cdef const int32_t* ii
    cdef const int32_t* ij
    cdef Pair pair
    cdef double eta, m, step
    cdef bint skip = rule.skip_satisfied
    cdef const double* norms = X.sqnorms if rule.needs_sqdist else NULL  # read by the rule
    cdef double lam = sched.lam, t0 = sched.t0, avg_power = sched.avg_power
    cdef int64_t t, tick = sched.t, rcount = sched.rcount, acount = sched.acount
    cdef int64_t rskip = sched.rskip, askip = sched.askip
    cdef double hinge = sched.hinge_sum, ranked = sched.ranked_sum
    pair.positions = positions
    pair.values = values
    pair.sqnorms = X.sqnorms
    pair.order = X.order
    k = start
    try:
        while k < stop:
            if halt != NULL and aucopt_halted(halt):
                break
            t = base + k + 1
            eta = 1.0 / (lam * (<double>t + t0))
            if lead:
                ticks_until(w, t - 1, t0, rskip, askip, avg_power, &tick, &rcount, &acount)
                tick = t  # counted from here on, as the one thread counts a step
            i = pos_rows[k]
            j = neg_rows[k]
            prefetch_pair(X, pos_rows, neg_rows, k, 1, end, norms)
            ni = row_of(X, i, &vi, &ii)
            nj = row_of(X, j, &vj, &ij)
            m = weights_margin(w, vi, ii, ni, vj, ij, nj)
            if m < 1.0:
                hinge += 1.0 - m
            ranked += 1.0 if m > 0.0 else (0.5 if m == 0.0 else 0.0)
            if not (skip and m >= 1.0):
                pair.vi, pair.ii, pair.ni, pair.i = vi, ii, ni, i
                pair.vj, pair.ij, pair.nj, pair.j = vj, ij, nj, j
                step = rule.step(m, eta, &pair)
                if step != 0.0:
                    w.add_pair(step, vi, ii, ni, vj, ij, nj)
            if lead:
                schedule_tick(w, t, t0, rskip, askip, avg_power, &rcount, &acount)
            poll(work, ni + nj + 8)
            k += 1
            taken += 1
    finally:
        sched.hinge_sum = hinge
        sched.ranked_sum = ranked
        if lead:
            sched.t = tick
            sched.rcount = rcount
            sched.acount = acount
    return taken


cdef int finish_ticks(Weights w, Schedule sched, int64_t last) except -1 nogil:
    """The lead's schedule after every step up to ``last`` it has not ticked (the
    steps other lanes took after its own last one)."""
    cdef int64_t tick = sched.t, rcount = sched.rcount, acount = sched.acount
    try:
        ticks_until(w, last, sched.t0, sched.rskip, sched.askip, sched.avg_power, &tick,
                    &rcount, &acount)
    finally:
        sched.t = tick
        sched.rcount = rcount
        sched.acount = acount
    return 0


cdef class _Scratch:
    """The scratch of ``pair_sqdist`` for a rule that needs it (NULL otherwise): an
    all-zero uint16 row of length d, and one double more than the longest row
    ``i`` of the pairs it numbers (longer rows than ``POSITION_LIMIT`` are merged),
    freed with the object."""
    cdef uint16_t* positions
    cdef double* values

    def __cinit__(self, PairRule rule, RowSource X, const int64_t[::1] pos_rows):
        cdef Py_ssize_t k, longest = 0
        cdef const double* vals
        cdef const int32_t* ind
        if rule.needs_sqdist:
            for k in range(pos_rows.shape[0]):  # checked rows (_check_pairs)
                longest = max(longest, row_of(X, pos_rows[k], &vals, &ind))
            self.positions = <uint16_t*>calloc(max(X.n_features, 1), sizeof(uint16_t))
            self.values = <double*>malloc((min(longest, POSITION_LIMIT) + 1) * sizeof(double))
            if self.positions == NULL or self.values == NULL:
                raise MemoryError()

    def __dealloc__(self):
        free(self.positions)
        free(self.values)


def sgd_pairs(RowSource X, Weights w, const int64_t[::1] pos_rows,
              const int64_t[::1] neg_rows, PairRule rule not None, Schedule sched not None):
    """Pairwise SGD steps: SAM / ASAM (Alg. 10), PSAM (Alg. 11), or any pair rule.

    For ``k = 0 .. len(pos_rows) - 1``, with ``t <- t + 1`` and
    ``eta = 1 / (lam (t + t0))``::

        m = w.(x_i - x_j)
        w <- w + rule.step(m, eta, pair) (x_i - x_j)     (every pair; 0: no move)
        every rskip steps:  w <- r w      (Schedule)
        every askip steps:  snapshot w into the running average (weight t ** avg_power)

    The shrink equals ``1 - rskip eta lam`` (SVMSGD2's; Khalid 2019's ``w - rskip (t+t0)^-1 w``
    misses no lambda). ``sched`` is advanced in place.
    """
    cdef Py_ssize_t n_steps = pos_rows.shape[0], work = 0
    _check_sgd(X, w, rule, sched)
    _check_pairs(X, pos_rows, neg_rows)
    if n_steps == 0:
        return
    cdef _Scratch scratch = _Scratch(rule, X, pos_rows)
    with nogil:
        sgd_steps(X, w, &pos_rows[0], &neg_rows[0], 0, n_steps, n_steps, sched.t, rule,
                  sched, True, scratch.positions, scratch.values, NULL, &work)


cdef int _check_lane(RowSource X, const int64_t[::1] pos_rows, const int64_t[::1] neg_rows,
                     Lanes lanes, int lane) except -1:
    _check_pairs(X, pos_rows, neg_rows)
    if not 0 <= lane < lanes.n_lanes:
        raise ValueError(f"lane {lane} out of range for {lanes.n_lanes} lanes")
    return 0


cdef inline bint claim(Lanes lanes, Py_ssize_t n, Py_ssize_t* start, Py_ssize_t* stop,
                       bint lead, int64_t done, double clock) noexcept nogil:
    """The next pairs ``start .. stop - 1`` of a block of ``n`` for a lane: False
    when none is left or the lanes are halted. The lead publishes ``done``, the
    pairs whose schedule it has applied. Another lane of paced lanes waits
    (spinning as :func:`wait_change` does) while the next claim would start
    more than ``max(2 LANE_CHUNK, (clock + done) / 8)`` pairs beyond the lead's
    ``done`` (``clock``: the block's first ``t + t0``; 0 for a constant bound)."""
    cdef int64_t nxt, ahead, spins = 0
    if lead:
        aucopt_store_release(&lanes.lead_done, done)
    elif lanes.paced:
        while not aucopt_halted(&lanes.flag):
            nxt = aucopt_load_acquire(&lanes.cursor)
            ahead = aucopt_load_acquire(&lanes.lead_done)
            if nxt >= n or nxt - ahead <= max(<double>_AHEAD_MIN, (clock + ahead) / 8.0):
                break
            spins = spin(spins)
    if aucopt_halted(&lanes.flag):
        return False
    start[0] = <Py_ssize_t>aucopt_claim(&lanes.cursor, _CHUNK)
    stop[0] = min(start[0] + _CHUNK, n)
    return start[0] < n


def sgd_lane(RowSource X, Weights w, const int64_t[::1] pos_rows,
             const int64_t[::1] neg_rows, Lanes lanes not None, int lane,
             PairRule rule not None, Schedule sched not None, bint own=False):
    """Lane ``lane`` of ``lanes.n_lanes`` threads (module docstring, "Threads"): the
    steps of :func:`sgd_pairs` on the pairs it claims from ``lanes``,
    :data:`LANE_CHUNK` at a time, until none is left, on weights the lanes share
    (prepared by :func:`open_lanes`). Pair ``k`` is step ``sched.t + k + 1`` (each
    lane's ``sched.t`` is the step count before the block); lane 0 leads: its
    ``sched`` applies the schedule after every step of the block, the other lanes'
    included, and ends at ``sched.t + len(pos_rows)``. With ``own``, ``w`` is this
    lane's own copy of the weights (``Weights.assign``, prepared by
    :func:`open_lanes`) and the lane leads it: its ``sched`` (a copy of the lead's)
    applies the same schedule, so the copy's scalars end as the lead's, bit for bit.
    Releases the GIL; call it from ``n_lanes`` threads at once, with one ``lanes``
    for the block."""
    cdef Py_ssize_t work = 0, n = pos_rows.shape[0], start, stop
    cdef int64_t base = sched.t
    cdef bint lead = lane == 0 or own
    _check_sgd(X, w, rule, sched)
    _check_lane(X, pos_rows, neg_rows, lanes, lane)
    if n == 0:
        return
    cdef _Scratch scratch = _Scratch(rule, X, pos_rows)
    with nogil:
        while claim(lanes, n, &start, &stop, lead, sched.t - base, base + sched.t0):
            sgd_steps(X, w, &pos_rows[0], &neg_rows[0], start, stop, n, base, rule, sched,
                      lead, scratch.positions, scratch.values, &lanes.flag, &work)
        if lead and not aucopt_halted(&lanes.flag):
            finish_ticks(w, sched, base + n)


cdef inline int prox_until(ElasticNetWeights w, Py_ssize_t last, double theta,
                           double shrink, Py_ssize_t* proxed) except -1 nogil:
    """The lead's lazy proximal steps ``(theta, shrink)`` of the pairs ``proxed[0] ..
    last - 1``: those other lanes took before its next pair, or after its last."""
    while proxed[0] < last:
        w.prox_step(theta, shrink)
        proxed[0] += 1
    return 0


cdef Py_ssize_t square_steps(RowSource X, ElasticNetWeights w, const int64_t* pos_rows,
                             const int64_t* neg_rows, Py_ssize_t start, Py_ssize_t stop,
                             Py_ssize_t end, Py_ssize_t* proxed, double step, double weight,
                             double theta, double shrink, double cap, bint lead,
                             const int* halt, Py_ssize_t* work) except -1 nogil:
    """adaDSGD's steps on pairs ``start .. stop - 1`` of a block of ``end`` pairs. With
    ``lead`` each is followed by the lazy proximal step ``(theta, shrink)``, and
    preceded by those of the pairs before it that other lanes took (``proxed``: the
    pairs whose proximal step the lead has applied; as :func:`sgd_steps`)."""
    cdef Py_ssize_t k, ni, nj, taken = 0
    cdef const double* vi
    cdef const double* vj
    cdef const int32_t* ii
    cdef const int32_t* ij
    cdef double m, c
    cdef const double* norms = X.sqnorms if cap > 0.0 else NULL  # read by the cap
    k = start
    while k < stop:
        if halt != NULL and aucopt_halted(halt):
            break
        if lead:
            prox_until(w, k, theta, shrink, proxed)
        prefetch_pair(X, pos_rows, neg_rows, k, 1, end, norms)
        ni = row_of(X, pos_rows[k], &vi, &ii)
        nj = row_of(X, neg_rows[k], &vj, &ij)
        m = w.dot(vi, ii, ni)
        m = m - w.dot(vj, ij, nj)
        c = step * weight * 2.0 * (1.0 - m)
        if cap > 0.0:
            c *= cap_factor(max(sqnorm_of(X, pos_rows[k]), sqnorm_of(X, neg_rows[k])), cap)
        w.add_pair(c, vi, ii, ni, vj, ij, nj)
        if lead:
            w.prox_step(theta, shrink)
            proxed[0] = k + 1
        poll(work, 2 * (ni + nj) + 8)
        k += 1
        taken += 1
    return taken


def square_prox_pairs(RowSource X, ElasticNetWeights w,
                      const int64_t[::1] pos_rows, const int64_t[::1] neg_rows,
                      SquareStep s not None):
    """adaDSGD steps (AlQuabeh & Abdurahimov, Alg. 1 inner loop): pairwise square
    loss + elastic net. For each pair, with the constants of ``s``::

        m = w.(x_i - x_j)
        w <- w + step * weight * 2 (1 - m) (x_i - x_j)     # gradient of weight (1 - m)^2
        w <- soft(w, theta) / shrink                         # prox of the elastic net

    ``weight`` is the importance weight ``c_s`` of the stage, ``theta = step * l1``
    and ``shrink = 1 + step * l2``; the prox is applied just in time, so a step
    costs O(nnz).
    """
    cdef Py_ssize_t n_steps = pos_rows.shape[0], work = 0, proxed = 0
    if w.n_features != X.n_features:
        raise ValueError("weights and rows differ in the number of features")
    _check_pairs(X, pos_rows, neg_rows)
    check_cap(X, s.cap)
    if n_steps == 0:
        return
    with nogil:
        square_steps(X, w, &pos_rows[0], &neg_rows[0], 0, n_steps, n_steps, &proxed,
                     s.step, s.weight, s.theta, s.shrink, s.cap, True, NULL, &work)


def square_lane(RowSource X, ElasticNetWeights w, const int64_t[::1] pos_rows,
                const int64_t[::1] neg_rows, Lanes lanes not None, int lane,
                SquareStep s not None):
    """Lane ``lane`` of ``lanes.n_lanes`` threads: :func:`square_prox_pairs` on the
    pairs it claims from ``lanes`` (as :func:`sgd_lane`). The lead lane applies the
    proximal step of every pair of the block in order, the other lanes' included."""
    cdef Py_ssize_t work = 0, n = pos_rows.shape[0], start, stop, proxed = 0
    cdef bint lead = lane == 0
    if w.n_features != X.n_features:
        raise ValueError("weights and rows differ in the number of features")
    _check_lane(X, pos_rows, neg_rows, lanes, lane)
    check_cap(X, s.cap)
    if n == 0:
        return
    with nogil:
        while claim(lanes, n, &start, &stop, lead, proxed, 0.0):
            square_steps(X, w, &pos_rows[0], &neg_rows[0], start, stop, n, &proxed, s.step,
                         s.weight, s.theta, s.shrink, s.cap, lead, &lanes.flag, &work)
        if lead and not aucopt_halted(&lanes.flag):
            prox_until(w, n, s.theta, s.shrink, &proxed)


def open_lanes(w):
    """Prepare ``Weights`` / ``ElasticNetWeights`` for lanes: a journal (if any)
    copies the state once now (lanes write without journaling), folds are held for
    :func:`refold`, and ``||v||^2`` is left alone until :func:`close_lanes`."""
    if isinstance(w, Weights):
        if (<Weights>w).journal is not None:
            (<Weights>w).journal.save_all()
        (<Weights>w).hold_folds = True
        (<Weights>w).defer_norm = True
    else:
        if (<ElasticNetWeights>w).journal is not None:
            (<ElasticNetWeights>w).journal.save_all()
        (<ElasticNetWeights>w).hold_folds = True


def refold(w, double margin):
    """Between blocks of lanes: fold when one is due or the scale (the elastic net's
    product ``P``) is within a factor ``margin`` of the fold band's edge, so that a
    block that moves it by less than ``margin`` cannot leave the band."""
    cdef Weights ww
    cdef ElasticNetWeights en
    if isinstance(w, Weights):
        ww = w
        if ww.fold_due or fabs(ww.scale) < margin * ww.fold_low:
            ww.fold()
    else:
        en = w
        if en.fold_due or en.P * margin > renormalize_limit():
            en.fold()


def close_lanes(w, bint norm=True):
    """After the lanes of a pass: folds as usual again, a fold still due done, and
    ``||v||^2`` recomputed (the lanes do not keep it), an O(d) pass; ``norm=False``
    leaves that to a fold the caller does next (which recomputes it anyway: a PSAM
    pass on 20 Newsgroups' 130,108 features saves 0.11 ms of its 5-6 ms on two
    threads)."""
    if isinstance(w, Weights):
        (<Weights>w).hold_folds = False
        (<Weights>w).defer_norm = not norm
        if (<Weights>w).fold_due:
            (<Weights>w).fold()
        elif norm:
            (<Weights>w).dense_end()
    else:
        (<ElasticNetWeights>w).hold_folds = False
        if (<ElasticNetWeights>w).fold_due:
            (<ElasticNetWeights>w).fold()


cdef inline uint64_t _interval(bitgen_t* bitgen, uint64_t top) noexcept nogil:
    """A uniform integer in ``[0, top]`` drawn as numpy's ``random_interval`` draws it
    (the smallest bit mask covering ``top``, masked 32-bit draws below 2^32 and
    64-bit ones above, rejected while above ``top``): ``Generator.shuffle`` takes
    these draws, so the cycles below are its shuffles exactly."""
    cdef uint64_t mask = top, value
    if top == 0:
        return 0
    mask |= mask >> 1
    mask |= mask >> 2
    mask |= mask >> 4
    mask |= mask >> 8
    mask |= mask >> 16
    mask |= mask >> 32
    if top <= 0xffffffffUL:
        value = bitgen.next_uint32(bitgen.state) & mask
        while value > top:
            value = bitgen.next_uint32(bitgen.state) & mask
    else:
        value = bitgen.next_uint64(bitgen.state) & mask
        while value > top:
            value = bitgen.next_uint64(bitgen.state) & mask
    return value


def shuffled_cycles(rng, const int64_t[::1] rows not None, int64_t[::1] out not None):
    """Fill ``out`` (a multiple of ``len(rows)`` long) with cycles of ``rows``, each
    a fresh random order: cycle ``c`` is ``rows[rng.permutation(len(rows))]`` for
    successive draws of the numpy Generator ``rng``, the same numbers and the same
    state of ``rng`` after, without a Python call per cycle (a class of 7 rows takes
    143 cycles for 1,000 pairs). Fisher-Yates as ``Generator.shuffle`` runs it."""
    cdef Py_ssize_t m = rows.shape[0], n = out.shape[0], base, i
    cdef uint64_t j
    cdef int64_t swap
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if m == 0 or n % m:
        raise ValueError(f"out ({n}) must hold whole cycles of the {m} rows")
    cdef object bit_generator = rng.bit_generator
    cdef bitgen_t* bitgen = <bitgen_t*>PyCapsule_GetPointer(bit_generator.capsule,
                                                            "BitGenerator")
    with bit_generator.lock, nogil:
        base = 0
        while base < n:
            memcpy(&out[base], &rows[0], m * sizeof(int64_t))
            for i in range(m - 1, 0, -1):
                j = _interval(bitgen, <uint64_t>i)
                swap = out[base + i]
                out[base + i] = out[base + <Py_ssize_t>j]
                out[base + <Py_ssize_t>j] = swap
            base += m
