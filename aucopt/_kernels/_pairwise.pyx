# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Stochastic pairwise learners (Khalid 2019 Ch.6-7; AlQuabeh & Abdurahimov): pair loops.

Each step takes a positive row ``x_i`` and a negative row ``x_j`` (drawn by the
caller, ALGORITHMS.md 0.2), computes the margin ``m = w.x_i - w.x_j`` with two
sparse dot products and applies ``w <- w + c (x_i - x_j)`` through the weight
primitive: the difference is never materialised. Dense and CSR rows come through
the same :class:`RowSource`, so one loop serves both, bit for bit.

* :func:`hinge_pairs` -- SAM, ASAM, PSAM: hinge loss, the step of a violated pair
  given by a :class:`PairRule` (:class:`Subgradient` or :class:`HingeProx`), the
  SVMSGD2 schedule of a :class:`Schedule` (scheduled L2 shrink every ``rskip``
  steps, O(1) through the scale; averaging every ``askip`` steps, exact and lazy).
* :func:`square_prox_pairs` -- adaDSGD: pairwise square loss with an elastic-net
  proximal step applied just in time (O(nnz) per step).
"""
from libc.math cimport pow
from libc.stdlib cimport calloc, free
from libc.stdint cimport int32_t, int64_t

from aucopt._kernels._interrupt cimport poll
from aucopt._kernels._pairs cimport pair_sqdist
from aucopt._kernels._rows cimport RowSource
from aucopt._kernels._weights cimport ElasticNetWeights, Weights

cdef extern from *:
    """
    #if defined(__GNUC__)
    #define AUCOPT_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define AUCOPT_PREFETCH(p) ((void)(p))
    #endif
    """
    void AUCOPT_PREFETCH(const void* p) noexcept nogil


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
    enters the running average. ``t`` counts steps taken; ``rcount`` / ``acount``
    are the steps left before the next shrink / snapshot.
    """

    def __init__(self, double lam, double t0, int64_t rskip, int64_t askip=0,
                 int64_t t=0, int64_t rcount=-1, int64_t acount=-1):
        if not lam > 0.0 or t0 < 0.0 or rskip < 1 or askip < 0 or t < 0:
            raise ValueError("Schedule needs lam > 0, t0 >= 0, rskip >= 1, askip >= 0, t >= 0")
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.askip = askip
        self.t = t
        self.rcount = rskip if rcount < 0 else rcount
        self.acount = askip if acount < 0 else acount


cdef inline void prefetch_row(RowSource X, Py_ssize_t i) noexcept nogil:
    """Ask the cache for the start of row ``i`` (the next step's rows are random)."""
    cdef const double* vals
    cdef const int32_t* ind
    cdef Py_ssize_t nnz = X.row(i, &vals, &ind), k
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


def hinge_pairs(RowSource X, Weights w, const int64_t[::1] pos_rows,
                const int64_t[::1] neg_rows, PairRule rule not None,
                Schedule sched not None):
    """Pairwise hinge steps of SAM / ASAM (Alg. 10) or PSAM (Alg. 11).

    For ``k = 0 .. len(pos_rows) - 1``, with ``t <- t + 1`` and
    ``eta = 1 / (lam (t + t0))``::

        m = w.(x_i - x_j)
        if m < 1:  w <- w + rule.step(m, eta, ||x_i - x_j||^2) (x_i - x_j)
        every rskip steps:  w <- r w      (Schedule)
        every askip steps:  snapshot w into the running average

    The shrink equals ``1 - rskip eta lam`` (ALGORITHMS.md erratum 37: no lambda
    is missing). ``sched`` is advanced in place.
    """
    cdef Py_ssize_t k, n_steps = pos_rows.shape[0], work = 0
    cdef Py_ssize_t i, j, ni, nj
    cdef const double* vi
    cdef const double* vj
    cdef const int32_t* ii
    cdef const int32_t* ij
    cdef double eta, m, r, tt, step, zz = 0.0
    cdef bint sqdist = rule.needs_sqdist
    if w.n_features != X.n_features:
        raise ValueError("weights and rows differ in the number of features")
    if sched.askip > 0 and not w.averaging:
        raise ValueError("averaging needs Weights with an accumulator")
    _check_pairs(X, pos_rows, neg_rows)
    cdef double* scratch = NULL
    if sqdist:
        scratch = <double*>calloc(max(X.n_features, 1), sizeof(double))
        if scratch == NULL:
            raise MemoryError()
    try:
        with nogil:
            for k in range(n_steps):
                sched.t += 1
                tt = <double>sched.t + sched.t0
                eta = 1.0 / (sched.lam * tt)
                i = pos_rows[k]
                j = neg_rows[k]
                if k + 1 < n_steps:
                    prefetch_row(X, pos_rows[k + 1])
                    prefetch_row(X, neg_rows[k + 1])
                ni = X.row(i, &vi, &ii)
                nj = X.row(j, &vj, &ij)
                m = w.dot(vi, ii, ni) - w.dot(vj, ij, nj)
                if m < 1.0:
                    if sqdist:
                        zz = pair_sqdist(scratch, X.sqnorm(i), X.sqnorm(j),
                                         vi, ii, ni, vj, ij, nj)
                    step = rule.step(m, eta, zz)
                    if step > 0.0:
                        w.add_pair(step, vi, ii, ni, vj, ij, nj)
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
                        w.snapshot(1.0)
                        sched.acount = sched.askip
                poll(&work, ni + nj + 8)
    finally:
        free(scratch)


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
    cdef Py_ssize_t k, n_steps = pos_rows.shape[0], work = 0
    cdef Py_ssize_t ni, nj
    cdef const double* vi
    cdef const double* vj
    cdef const int32_t* ii
    cdef const int32_t* ij
    cdef double m, c
    if w.n_features != X.n_features:
        raise ValueError("weights and rows differ in the number of features")
    _check_pairs(X, pos_rows, neg_rows)
    with nogil:
        for k in range(n_steps):
            ni = X.row(pos_rows[k], &vi, &ii)
            nj = X.row(neg_rows[k], &vj, &ij)
            m = w.dot(vi, ii, ni)
            m = m - w.dot(vj, ij, nj)
            c = step * weight * 2.0 * (1.0 - m)
            w.add_pair(c, vi, ii, ni, vj, ij, nj)
            w.prox_step(theta, shrink)
            poll(&work, 2 * (ni + nj) + 8)
