# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Stochastic pairwise learners (Khalid 2019 Ch.6-7; AlQuabeh & Abdurahimov): pair loops.

Each step takes a positive row ``x_i`` and a negative row ``x_j`` (drawn by the
caller, ALGORITHMS.md 0.2), computes the margin ``m = w.x_i - w.x_j`` with two
sparse dot products and applies ``w <- w + c (x_i - x_j)`` through the weight
primitive: the difference is never materialised. Dense and CSR rows come through
the same :class:`RowSource`, so one loop serves both, bit for bit. Row access and
dots are the inline forms of ``_rows.pxd`` / ``_weights.pxd``.

* :func:`hinge_pairs` -- SAM, ASAM, PSAM: hinge loss, the step of a violated pair
  given by a :class:`PairRule` (:class:`Subgradient` or :class:`HingeProx`), the
  SVMSGD2 schedule of a :class:`Schedule` (scheduled L2 shrink every ``rskip``
  steps, O(1) through the scale; averaging every ``askip`` steps, exact and lazy).
* :func:`square_prox_pairs` -- adaDSGD: pairwise square loss with an elastic-net
  proximal step applied just in time (O(nnz) per step).
* :class:`HingeMix` / :class:`SquareMix` -- the same steps on several threads (see
  "Threads" below).

Threads
-------
``P`` threads each own a private copy of the weight state (a *lane*) and take the
pairs ``p, p + P, p + 2P, ...`` of a block, in *rounds* of ``round_steps`` steps
each. After a round every lane's change is added into the shared base state
(``base + sum_p (lane_p - base)`` per coordinate, only on the coordinates the
round's updating pairs touched: O(what the round wrote), not O(d)) and copied
back into every lane, so each round starts from one model. Each lane merges the
coordinates of its own updating pairs, claiming each coordinate with an atomic
compare-and-swap of its round stamp (a coordinate two lanes wrote is merged once,
by whichever claims it first: the merged value is the same either way). This is Hogwild's
lock-free parallel SGD (Recht, Re, Wright & Niu, NIPS 2011) with its staleness
bounded by one round and its updates applied in a fixed order: no two threads
ever write the same memory, the result does not depend on timing, and it is
bit-for-bit the same for the same ``P``, seed and input (dense or CSR). Summing
the lanes' changes, rather than averaging the lanes (iterative parameter mixing),
keeps the progress per pair of the sequential algorithm; averaging divides a
proximal step that lands a pair on its hinge by ``P``.

Every lane runs the same number of steps with the same schedule, so the weight
vector's scale (the L2 shrink), the lazy average's scalars and the elastic net's
products evolve identically in all lanes; when a fold becomes due, every lane
stops after the same step, the round is merged there (its rest is a round of its
own) and the fold is done on every lane and the base alike. Threads wait for each
other at two barriers per round (spinning briefly, then yielding the core). The
base's ``||v||^2`` is recomputed exactly when a run ends (it is not needed within).
"""
import numpy as np

from cpython.ref cimport PyObject
from libc.math cimport pow
from libc.stdlib cimport calloc, free
from libc.string cimport memset
from libc.stdint cimport int32_t, int64_t

from aucopt._kernels._interrupt cimport poll
from aucopt._kernels._pairs cimport pair_sqdist
from aucopt._kernels._rows cimport RowSource, row_of, sqnorm_of
from aucopt._kernels._weights cimport ElasticNetWeights, Weights, lazy_value, weights_dot

cdef extern from *:
    """
    #if defined(__GNUC__)
    #define AUCOPT_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define AUCOPT_PREFETCH(p) ((void)(p))
    #endif
    #if defined(_WIN32)
    #include <windows.h>
    #define aucopt_yield() SwitchToThread()
    #else
    #include <sched.h>
    #define aucopt_yield() sched_yield()
    #endif

    /* A reusable barrier for the threads of one mix: the last thread to arrive
       starts the next generation; the others spin briefly, then yield the core.
       Once aborted, every wait returns -1 at once. */
    typedef struct { int n; int count; int gen; int aborted; } aucopt_barrier;

    static void aucopt_barrier_init(aucopt_barrier* b, int n) {
        b->n = n; b->count = 0; b->gen = 0; b->aborted = 0;
    }

    static void aucopt_barrier_abort(aucopt_barrier* b) {
        __atomic_store_n(&b->aborted, 1, __ATOMIC_SEQ_CST);
    }

    /* Claim a coordinate for this round: true for the first lane only. */
    static int aucopt_claim(unsigned int* stamp, unsigned int round) {
        unsigned int old = __atomic_load_n(stamp, __ATOMIC_RELAXED);
        return old != round && __atomic_compare_exchange_n(
            stamp, &old, round, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }

    static int aucopt_barrier_wait(aucopt_barrier* b) {
        int gen = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
        int spins = 0;
        if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == b->n) {
            __atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&b->gen, gen + 1, __ATOMIC_RELEASE);
        } else {
            while (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == gen) {
                if (__atomic_load_n(&b->aborted, __ATOMIC_ACQUIRE)) return -1;
                if (++spins > 256) aucopt_yield();
            }
        }
        return __atomic_load_n(&b->aborted, __ATOMIC_ACQUIRE) ? -1 : 0;
    }
    """
    void AUCOPT_PREFETCH(const void* p) noexcept nogil
    ctypedef struct aucopt_barrier:
        pass
    void aucopt_barrier_init(aucopt_barrier* b, int n) noexcept nogil
    void aucopt_barrier_abort(aucopt_barrier* b) noexcept nogil
    int aucopt_barrier_wait(aucopt_barrier* b) noexcept nogil
    bint aucopt_claim(unsigned int* stamp, unsigned int round) noexcept nogil


cdef class PairRule:
    """How far a violated pair (margin ``m < 1``) moves ``w`` along ``x_i - x_j``.

    ``step(m, eta, zz)`` gets the margin, the scheduled rate ``eta`` and, when
    ``needs_sqdist``, ``zz = ||x_i - x_j||^2``.
    """

    cdef double step(self, double m, double eta, double zz) noexcept nogil:
        return eta


cdef class Subgradient(PairRule):
    """SAM / ASAM (Khalid 2019, Alg. 10): the hinge subgradient step ``eta``."""


cdef class HingeProx(PairRule):
    """PSAM (Khalid 2019, Alg. 11, App. A with the clip to [0, 1] it omits): the
    closed-form proximal map of the pair's hinge loss, ``tau = min(eta, (1 - m) /
    ||x_i - x_j||^2)``: a violated pair moves at most onto the hinge. Pairs with
    ``x_i = x_j`` do not move."""

    def __cinit__(self):
        self.needs_sqdist = True

    cdef double step(self, double m, double eta, double zz) noexcept nogil:
        if zz == 0.0:
            return 0.0
        return min(eta, (1.0 - m) / zz)


cdef class Schedule:
    """SVMSGD2's schedule on pairs, with its state under names.

    ``eta_t = 1 / (lam (t + t0))``; every ``rskip`` steps ``w <- r w`` with
    ``r = 1 - rskip / (t + t0)`` (``(1 - 1/(t + t0))**rskip`` when ``r < 0.8``,
    SVMSGD2's guard); every ``askip`` steps (``askip > 0``) a snapshot of ``w``
    enters the running average with weight ``t ** avg_power`` (0: the plain mean).
    ``t`` counts steps taken; ``rcount`` / ``acount`` are the steps left before the
    next shrink / snapshot.
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


cdef inline void prefetch_row(RowSource X, Py_ssize_t i) noexcept nogil:
    """Ask the cache for the start of row ``i`` (the next step's rows are random)."""
    cdef const double* vals
    cdef const int32_t* ind
    cdef Py_ssize_t nnz = row_of(X, i, &vals, &ind), k
    for k in range(0, min(nnz, 32), 8):  # 8 doubles per 64-byte line
        AUCOPT_PREFETCH(vals + k)
    for k in range(0, min(nnz, 32), 16):
        AUCOPT_PREFETCH(ind + k)


cdef int _check_pairs(RowSource X, const int64_t[::1] pos_rows,
                      const int64_t[::1] neg_rows) except -1:
    cdef Py_ssize_t k
    if neg_rows.shape[0] != pos_rows.shape[0]:
        raise ValueError("pos_rows and neg_rows must have the same length")
    for k in range(pos_rows.shape[0]):
        if not (0 <= pos_rows[k] < X.n_rows and 0 <= neg_rows[k] < X.n_rows):
            raise IndexError(f"pair {k} names a row outside 0..{X.n_rows - 1}")
    return 0


cdef int _check_hinge(RowSource X, Weights w, Schedule sched) except -1:
    if w.n_features != X.n_features:
        raise ValueError("weights and rows differ in the number of features")
    if sched.askip > 0 and not w.averaging:
        raise ValueError("averaging needs Weights with an accumulator")
    return 0


cdef Py_ssize_t hinge_steps(RowSource X, Weights w, const int64_t* pos_rows,
                            const int64_t* neg_rows, Py_ssize_t start, Py_ssize_t stop,
                            Py_ssize_t stride, PairRule rule, Schedule sched,
                            double* scratch, int32_t* touched, Py_ssize_t* n_touched,
                            Py_ssize_t* work) except -1 nogil:
    """The steps on pairs ``start, start + stride, ... < stop``; returns the position
    after the last one taken. With ``touched`` the positions of the pairs that moved
    ``w`` are appended to it; with ``w.hold_folds`` the steps end after the step
    that made a fold due."""
    cdef Py_ssize_t k, i, j, ni, nj
    cdef const double* vi
    cdef const double* vj
    cdef const int32_t* ii
    cdef const int32_t* ij
    cdef double eta, m, r, tt, step, zz = 0.0
    cdef bint sqdist = rule.needs_sqdist
    k = start
    while k < stop:
        sched.t += 1
        tt = <double>sched.t + sched.t0
        eta = 1.0 / (sched.lam * tt)
        i = pos_rows[k]
        j = neg_rows[k]
        if k + stride < stop:
            prefetch_row(X, pos_rows[k + stride])
            prefetch_row(X, neg_rows[k + stride])
        ni = row_of(X, i, &vi, &ii)
        nj = row_of(X, j, &vj, &ij)
        m = weights_dot(w, vi, ii, ni) - weights_dot(w, vj, ij, nj)
        if m < 1.0:
            if sqdist:
                zz = pair_sqdist(scratch, sqnorm_of(X, i), sqnorm_of(X, j),
                                 vi, ii, ni, vj, ij, nj)
            step = rule.step(m, eta, zz)
            if step > 0.0:
                w.add_pair(step, vi, ii, ni, vj, ij, nj)
                if touched != NULL:
                    touched[n_touched[0]] = <int32_t>k
                    n_touched[0] += 1
        sched.rcount -= 1
        if sched.rcount <= 0:
            r = 1.0 - <double>sched.rskip / tt
            if r < 0.8:
                r = pow(1.0 - 1.0 / tt, <double>sched.rskip)
            w.scale_by(r)
            sched.rcount = sched.rskip
        if sched.askip > 0:
            sched.acount -= 1
            if sched.acount <= 0:
                w.snapshot(1.0 if sched.avg_power == 0.0
                           else pow(<double>sched.t, sched.avg_power))
                sched.acount = sched.askip
        poll(work, ni + nj + 8)
        k += stride
        if w.fold_due:
            break
    return k


def hinge_pairs(RowSource X, Weights w, const int64_t[::1] pos_rows,
                const int64_t[::1] neg_rows, PairRule rule not None,
                Schedule sched not None):
    """Pairwise hinge steps of SAM / ASAM (Alg. 10) or PSAM (Alg. 11).

    For ``k = 0 .. len(pos_rows) - 1``, with ``t <- t + 1`` and
    ``eta = 1 / (lam (t + t0))``::

        m = w.(x_i - x_j)
        if m < 1:  w <- w + rule.step(m, eta, ||x_i - x_j||^2) (x_i - x_j)
        every rskip steps:  w <- r w      (Schedule)
        every askip steps:  snapshot w into the running average (weight t ** avg_power)

    The shrink equals ``1 - rskip eta lam`` (ALGORITHMS.md erratum 37: no lambda
    is missing). ``sched`` is advanced in place.
    """
    cdef Py_ssize_t n_steps = pos_rows.shape[0], work = 0
    _check_hinge(X, w, sched)
    _check_pairs(X, pos_rows, neg_rows)
    if n_steps == 0:
        return
    cdef double* scratch = NULL
    if rule.needs_sqdist:
        scratch = <double*>calloc(max(X.n_features, 1), sizeof(double))
        if scratch == NULL:
            raise MemoryError()
    try:
        with nogil:
            hinge_steps(X, w, &pos_rows[0], &neg_rows[0], 0, n_steps, 1, rule, sched,
                        scratch, NULL, NULL, &work)
    finally:
        free(scratch)


cdef Py_ssize_t square_steps(RowSource X, ElasticNetWeights w, const int64_t* pos_rows,
                             const int64_t* neg_rows, Py_ssize_t start, Py_ssize_t stop,
                             Py_ssize_t stride, double step, double weight, double theta,
                             double shrink, int32_t* touched, Py_ssize_t* n_touched,
                             Py_ssize_t* work) except -1 nogil:
    """adaDSGD's steps on pairs ``start, start + stride, ... < stop`` (as
    :func:`hinge_steps`; every pair moves ``w``)."""
    cdef Py_ssize_t k, ni, nj
    cdef const double* vi
    cdef const double* vj
    cdef const int32_t* ii
    cdef const int32_t* ij
    cdef double m, c
    k = start
    while k < stop:
        ni = row_of(X, pos_rows[k], &vi, &ii)
        nj = row_of(X, neg_rows[k], &vj, &ij)
        m = w.dot(vi, ii, ni)
        m = m - w.dot(vj, ij, nj)
        c = step * weight * 2.0 * (1.0 - m)
        w.add_pair(c, vi, ii, ni, vj, ij, nj)
        w.prox_step(theta, shrink)
        if touched != NULL:
            touched[n_touched[0]] = <int32_t>k
            n_touched[0] += 1
        poll(work, 2 * (ni + nj) + 8)
        k += stride
        if w.fold_due:
            break
    return k


def square_prox_pairs(RowSource X, ElasticNetWeights w,
                      const int64_t[::1] pos_rows, const int64_t[::1] neg_rows,
                      double step, double weight, double theta, double shrink):
    """adaDSGD steps (AlQuabeh & Abdurahimov, Alg. 1 inner loop): pairwise square
    loss + elastic net. For each pair::

        m = w.(x_i - x_j)
        w <- w + step * weight * 2 (1 - m) (x_i - x_j)     # gradient of weight (1 - m)^2
        w <- soft(w, theta) / shrink                         # prox of the elastic net

    ``weight`` is the importance weight ``c_s`` of the stage, ``theta = step * l1``
    and ``shrink = 1 + step * l2``; the prox is applied just in time, so a step
    costs O(nnz).
    """
    cdef Py_ssize_t n_steps = pos_rows.shape[0], work = 0
    if w.n_features != X.n_features:
        raise ValueError("weights and rows differ in the number of features")
    _check_pairs(X, pos_rows, neg_rows)
    if n_steps == 0:
        return
    with nogil:
        square_steps(X, w, &pos_rows[0], &neg_rows[0], 0, n_steps, 1, step, weight, theta,
                     shrink, NULL, NULL, &work)


cdef void _free_each(void** arrays, int n) noexcept nogil:
    """Free ``arrays[0 .. n-1]`` (those allocated) and ``arrays`` itself."""
    cdef int p
    if arrays != NULL:
        for p in range(n):
            free(arrays[p])
    free(arrays)


cdef class _PairMix:
    """Rounds of pair steps on ``n_threads`` lanes, merged into a base state.

    The module docstring ("Threads") describes the scheme. A subclass supplies the
    lanes' steps (:meth:`steps`), the merge of one coordinate (:meth:`merge`) and
    the bookkeeping at the end of a round (:meth:`end_round`), and calls
    :meth:`_allocate` from its ``__init__``. Use: build it once per training call
    over the base state (the lanes start as copies of it; the base must then change
    only through the mix), then for every block of pairs :meth:`set_block` and
    :meth:`run` ``(p)`` from ``n_threads`` threads at once, and :meth:`finish`
    before the base is read.
    """
    cdef RowSource X
    cdef readonly int n_threads
    cdef Py_ssize_t round_steps
    cdef Py_ssize_t width
    cdef double* base
    cdef double** lanes
    cdef PyObject** lane_w
    cdef const int64_t* pos
    cdef const int64_t* neg
    cdef Py_ssize_t n_pairs
    cdef int32_t** touched
    cdef Py_ssize_t* n_touched
    cdef unsigned int* stamp
    cdef unsigned int rounds
    cdef aucopt_barrier barrier
    cdef object _base_state
    cdef list _lane_states
    cdef list _lane_weights
    cdef object _block

    def __cinit__(self, *args, **kwargs):
        self.n_threads = 0

    cdef int _allocate(self, RowSource X, base_state, int n_threads,
                       Py_ssize_t round_steps) except -1:
        cdef double[:, ::1] view
        cdef int p
        if n_threads < 2 or round_steps < 1:
            raise ValueError("a mix needs n_threads >= 2 and round_steps >= 1")
        if not (isinstance(base_state, np.ndarray) and base_state.ndim == 2
                and base_state.shape[0] == X.n_features and base_state.dtype == np.float64
                and base_state.flags.c_contiguous and base_state.flags.writeable):
            raise ValueError("the base state must be a writable C-contiguous "
                             "(n_features, width) float64 array")
        self.X = X
        self.round_steps = round_steps
        self.width = base_state.shape[1]
        self._base_state = base_state
        self._lane_states = [base_state.copy() for _ in range(n_threads)]
        self._lane_weights = []
        self.lanes = <double**>calloc(n_threads, sizeof(double*))
        self.lane_w = <PyObject**>calloc(n_threads, sizeof(PyObject*))
        self.touched = <int32_t**>calloc(n_threads, sizeof(int32_t*))
        self.n_touched = <Py_ssize_t*>calloc(n_threads, sizeof(Py_ssize_t))
        self.stamp = <unsigned int*>calloc(max(X.n_features, 1), sizeof(unsigned int))
        if (self.lanes == NULL or self.lane_w == NULL or self.touched == NULL
                or self.n_touched == NULL or self.stamp == NULL):
            raise MemoryError()
        self.n_threads = n_threads
        view = base_state
        self.base = &view[0, 0] if X.n_features > 0 else NULL
        for p in range(n_threads):
            view = self._lane_states[p]
            self.lanes[p] = &view[0, 0] if X.n_features > 0 else NULL
            self.touched[p] = <int32_t*>calloc(round_steps, sizeof(int32_t))
            if self.touched[p] == NULL:
                raise MemoryError()
        self.rounds = 0
        return 0

    cdef int _add_lane(self, lane) except -1:
        """Register the weight view of the next lane (over ``_lane_states[p]``)."""
        cdef Py_ssize_t p = len(self._lane_weights)
        self._lane_weights.append(lane)
        self.lane_w[p] = <PyObject*>lane
        return 0

    def __dealloc__(self):
        _free_each(<void**>self.touched, self.n_threads)
        free(self.lanes)
        free(self.lane_w)
        free(self.n_touched)
        free(self.stamp)

    def set_block(self, const int64_t[::1] pos_rows, const int64_t[::1] neg_rows):
        """The pairs of the next :meth:`run`: ``n_threads`` times as many as each
        lane takes (pair ``k`` goes to lane ``k % n_threads``)."""
        _check_pairs(self.X, pos_rows, neg_rows)
        if pos_rows.shape[0] % self.n_threads:
            raise ValueError(f"a block holds a multiple of {self.n_threads} pairs, "
                             f"got {pos_rows.shape[0]}")
        if pos_rows.shape[0] >= 2**31:
            raise ValueError("a block holds fewer than 2**31 pairs")
        self._block = (pos_rows, neg_rows)
        self.n_pairs = pos_rows.shape[0]
        self.pos = &pos_rows[0] if self.n_pairs else NULL
        self.neg = &neg_rows[0] if self.n_pairs else NULL
        aucopt_barrier_init(&self.barrier, self.n_threads)

    def run(self, int p):
        """Lane ``p``'s share of the block, in rounds; all lanes must run at once.

        An exception (Ctrl-C in the main thread) aborts the other lanes at their
        next barrier; the state is then unusable (the caller rolls back)."""
        if not 0 <= p < self.n_threads:
            raise ValueError(f"lane {p} out of range for {self.n_threads} threads")
        try:
            self._run(p)
        except BaseException:
            aucopt_barrier_abort(&self.barrier)
            raise

    def abort(self):
        """Release the lanes waiting at a barrier (they return without finishing)."""
        aucopt_barrier_abort(&self.barrier)

    cdef int _run(self, int p) except -1:
        cdef Py_ssize_t start = p, work = 0
        cdef unsigned int round_id = self.rounds
        cdef Py_ssize_t span = self.round_steps * self.n_threads
        cdef Py_ssize_t stop = min(span, self.n_pairs)
        with nogil:
            while start < self.n_pairs:
                # a round covers block positions [stop - span, stop); a fold due
                # inside it cuts it in two (every lane stops at the same step)
                start = self.steps(p, start, stop, &work)
                if start >= stop:
                    stop = min(stop + span, self.n_pairs)
                if aucopt_barrier_wait(&self.barrier):
                    return 0
                round_id = self._next_round(round_id)
                self._merge_touched(p, round_id)
                if aucopt_barrier_wait(&self.barrier):
                    return 0
                self.n_touched[p] = 0
                self.end_round(p)
        if p == 0:
            self.rounds = round_id
        return 0

    cdef unsigned int _next_round(self, unsigned int round_id) noexcept nogil:
        """The stamp of the next round (every lane computes the same; the stamps of
        all coordinates restart when the counter wraps, after 2**32 rounds)."""
        if round_id == <unsigned int>0xFFFFFFFF:
            memset(self.stamp, 0, max(self.X.n_features, 1) * sizeof(unsigned int))
            return 1
        return round_id + 1

    cdef void _merge_touched(self, int p, unsigned int round_id) noexcept nogil:
        """Merge the coordinates of the rows of lane ``p``'s pairs that moved it this
        round, those no other lane has claimed."""
        cdef int side
        cdef Py_ssize_t k, q, nnz
        cdef int32_t at
        cdef const double* vals
        cdef const int32_t* ind
        for k in range(self.n_touched[p]):
            at = self.touched[p][k]
            for side in range(2):
                nnz = row_of(self.X, self.pos[at] if side == 0 else self.neg[at], &vals, &ind)
                for q in range(nnz):
                    if aucopt_claim(&self.stamp[ind[q]], round_id):
                        self.merge(ind[q])

    cdef Py_ssize_t steps(self, int p, Py_ssize_t start, Py_ssize_t stop,
                          Py_ssize_t* work) except -1 nogil:
        return stop

    cdef void merge(self, Py_ssize_t c) noexcept nogil:
        pass

    cdef int end_round(self, int p) except -1 nogil:
        return 0

    def finish(self):
        """After the runs of a pass: bring derived scalars of the base up to date."""


cdef class HingeMix(_PairMix):
    """:func:`hinge_pairs` on ``len(scheds)`` threads (module docstring, "Threads").

    Parameters
    ----------
    X : RowSource
    w : Weights
        The base weights: a view of the learner's state; after a pass
        :meth:`set_weights` takes the next pass's view of the same state.
    scheds : list of Schedule
        One per lane, all equal: each lane counts its own steps.
    rule : PairRule
    round_steps : int
        Steps per lane between merges.
    """
    cdef Weights w
    cdef list _scheds
    cdef PyObject** lane_s
    cdef PairRule rule
    cdef double** scratch

    def __init__(self, RowSource X not None, Weights w not None, list scheds not None,
                 PairRule rule not None, Py_ssize_t round_steps):
        cdef int p
        cdef Weights lane
        self._allocate(X, w._state, len(scheds), round_steps)
        self.rule = rule
        self._scheds = list(scheds)
        self.lane_s = <PyObject**>calloc(self.n_threads, sizeof(PyObject*))
        self.scratch = <double**>calloc(self.n_threads, sizeof(double*))
        if self.lane_s == NULL or self.scratch == NULL:
            raise MemoryError()
        for p in range(self.n_threads):
            lane = Weights(self._lane_states[p], scale=w.scale, vsq=w.vsq,
                           averaging=w.averaging, avg_c=w.avg_c, avg_q=w.avg_q)
            lane.hold_folds = True
            _check_hinge(X, lane, scheds[p])
            self._add_lane(lane)
            self.lane_s[p] = <PyObject*>scheds[p]
            if rule.needs_sqdist:
                self.scratch[p] = <double*>calloc(max(X.n_features, 1), sizeof(double))
                if self.scratch[p] == NULL:
                    raise MemoryError()
        self.set_weights(w)

    def __dealloc__(self):
        _free_each(<void**>self.scratch, self.n_threads)
        free(self.lane_s)

    @property
    def schedule(self):
        """The lanes' schedule (every lane's is the same)."""
        return self._scheds[0]

    def set_weights(self, Weights w not None):
        """Merge into ``w`` from now on (a view of the same state; journaled views
        copy the state once: every merge writes it)."""
        if w._state is not self._base_state:
            raise ValueError("the weights must view the state the mix was built on")
        if w.journal is not None:
            w.journal.save_all()
        self.w = w

    cdef Py_ssize_t steps(self, int p, Py_ssize_t start, Py_ssize_t stop,
                          Py_ssize_t* work) except -1 nogil:
        return hinge_steps(self.X, <Weights>self.lane_w[p], self.pos, self.neg, start,
                           stop, self.n_threads, self.rule, <Schedule>self.lane_s[p],
                           self.scratch[p], self.touched[p], &self.n_touched[p], work)

    cdef void merge(self, Py_ssize_t c) noexcept nogil:
        """``base + sum_p (lane_p - base)`` in every column of coordinate ``c``,
        written to the base and every lane."""
        cdef Py_ssize_t off = c * self.width, col
        cdef int r
        cdef double b, m
        for col in range(self.width):
            b = self.base[off + col]
            m = self.lanes[0][off + col]
            for r in range(1, self.n_threads):
                m += self.lanes[r][off + col] - b
            self.base[off + col] = m
            for r in range(self.n_threads):
                self.lanes[r][off + col] = m

    cdef int end_round(self, int p) except -1 nogil:
        return self._end_round(p, <Weights>self.lane_w[p])

    cdef int _end_round(self, int p, Weights lane) except -1 nogil:
        """Lane 0's thread gives the base the lanes' scalars; a fold held during
        the round is done on every lane and the base."""
        if p == 0:
            self.w.scale = lane.scale
            self.w.avg_c = lane.avg_c
            self.w.avg_q = lane.avg_q
            if lane.fold_due:
                self.w.fold()
        if lane.fold_due:
            lane.fold()
        return 0

    def finish(self):
        """After a run: the base's (and every lane's) ``||v||^2``, recomputed."""
        cdef Py_ssize_t k
        cdef double s = 0.0
        cdef int p
        with nogil:
            for k in range(self.X.n_features):
                s += self.base[k * self.width] * self.base[k * self.width]
        self.w.vsq = s
        for p in range(self.n_threads):
            (<Weights>self.lane_w[p]).vsq = s


cdef inline double _current(const double* a, double P, double R) noexcept nogil:
    """An elastic-net coordinate ``(a, P0, R0)`` at the products ``(P, R)``."""
    if a[1] == P and a[2] == R:
        return a[0]
    return lazy_value(a[0], a[1], a[2], P, R)


cdef class SquareMix(_PairMix):
    """:func:`square_prox_pairs` on ``n_threads`` threads (module docstring,
    "Threads"): each coordinate is merged at the current step (its lazy prox
    applied), ``current(base) + sum_p (current(lane_p) - current(base))``.

    Parameters
    ----------
    X : RowSource
    w : ElasticNetWeights
        The base weights (a view of the learner's state; see :meth:`set_weights`).
    n_threads, round_steps : int
    """
    cdef ElasticNetWeights w
    cdef double step
    cdef double weight
    cdef double theta
    cdef double shrink

    def __init__(self, RowSource X not None, ElasticNetWeights w not None, int n_threads,
                 Py_ssize_t round_steps):
        cdef int p
        cdef ElasticNetWeights lane
        if w.n_features != X.n_features:
            raise ValueError("weights and rows differ in the number of features")
        self._allocate(X, w._state, n_threads, round_steps)
        for p in range(n_threads):
            lane = ElasticNetWeights(self._lane_states[p], P=w.P, R=w.R)
            lane.hold_folds = True
            self._add_lane(lane)
        self.set_weights(w)
        self.set_step(0.0, 0.0, 0.0, 1.0)

    def set_weights(self, ElasticNetWeights w not None):
        """Merge into ``w`` from now on (as :meth:`HingeMix.set_weights`)."""
        if w._state is not self._base_state:
            raise ValueError("the weights must view the state the mix was built on")
        if w.journal is not None:
            w.journal.save_all()
        self.w = w

    def set_step(self, double step, double weight, double theta, double shrink):
        """The step constants of the next blocks (as :func:`square_prox_pairs`)."""
        self.step, self.weight, self.theta, self.shrink = step, weight, theta, shrink

    cdef Py_ssize_t steps(self, int p, Py_ssize_t start, Py_ssize_t stop,
                          Py_ssize_t* work) except -1 nogil:
        return square_steps(self.X, <ElasticNetWeights>self.lane_w[p], self.pos, self.neg,
                            start, stop, self.n_threads, self.step, self.weight,
                            self.theta, self.shrink, self.touched[p], &self.n_touched[p],
                            work)

    cdef void merge(self, Py_ssize_t c) noexcept nogil:
        cdef Py_ssize_t off = 3 * c
        cdef int r
        cdef double P = (<ElasticNetWeights>self.lane_w[0]).P
        cdef double R = (<ElasticNetWeights>self.lane_w[0]).R
        cdef double b = _current(self.base + off, P, R)
        cdef double m = _current(self.lanes[0] + off, P, R)
        for r in range(1, self.n_threads):
            m += _current(self.lanes[r] + off, P, R) - b
        self.base[off] = m
        self.base[off + 1] = P
        self.base[off + 2] = R
        for r in range(self.n_threads):
            self.lanes[r][off] = m
            self.lanes[r][off + 1] = P
            self.lanes[r][off + 2] = R

    cdef int end_round(self, int p) except -1 nogil:
        return self._end_round(p, <ElasticNetWeights>self.lane_w[p])

    cdef int _end_round(self, int p, ElasticNetWeights lane) except -1 nogil:
        if p == 0:
            self.w.P = lane.P
            self.w.R = lane.R
            if lane.fold_due:
                self.w.fold()
        if lane.fold_due:
            lane.fold()
        return 0
