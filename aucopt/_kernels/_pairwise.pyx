# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Stochastic pairwise learners (dissertation 000 Ch.6-7; paper 003 Alg. 1): pair loops.

Each step takes a positive row ``x_i`` and a negative row ``x_j`` (drawn by the
caller, ALGORITHMS.md 0.2), computes the margin ``m = w.x_i - w.x_j`` with two
sparse dot products and applies ``w <- w + c (x_i - x_j)`` as two sparse axpys:
the difference ``z`` is never materialised. Dense and CSR rows come through the
same :class:`RowSource`, so one loop serves both, bit for bit.

* :func:`hinge_pairs` -- SAM, ASAM, PSAM: hinge loss, subgradient or proximal
  step, SVMSGD2's scheduled L2 shrink every ``rskip`` steps (O(1) through the
  scaled weight vector) and optional averaging every ``askip`` steps (exact lazy
  averaging, O(1) per event).
* :func:`square_prox_pairs` -- adaDSGD: pairwise square loss with an elastic-net
  proximal step applied just in time (O(nnz) per step).
"""
from libc.math cimport pow
from libc.stdlib cimport calloc, free
from libc.stdint cimport int32_t, int64_t

from aucopt._kernels._rows cimport RowSource

cdef extern from *:
    """
    #if defined(__GNUC__)
    #define AUCOPT_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define AUCOPT_PREFETCH(p) ((void)(p))
    #endif
    """
    void AUCOPT_PREFETCH(const void* p) noexcept nogil
from aucopt._kernels._weights cimport ElasticNetWeights, WeightVector

cdef enum:
    RULE_SUBGRADIENT = 0
    RULE_PROXIMAL = 1

# hinge_pairs rules, for Python callers
SUBGRADIENT = RULE_SUBGRADIENT
PROXIMAL = RULE_PROXIMAL

# relative size below which ||x_i - x_j||^2 counts as zero (the pair is one point)
cdef double ZERO_PAIR = 1e-12


cdef inline void prefetch_row(RowSource X, Py_ssize_t i) noexcept nogil:
    """Ask the cache for the start of row ``i`` (the next step's rows are random)."""
    cdef const double* vals
    cdef const int32_t* ind
    cdef Py_ssize_t nnz = X.row(i, &vals, &ind), k
    for k in range(0, min(nnz, 32), 8):  # 8 doubles per 64-byte line
        AUCOPT_PREFETCH(vals + k)
    for k in range(0, min(nnz, 32), 16):
        AUCOPT_PREFETCH(ind + k)


cdef inline double pair_sqnorm(RowSource X, Py_ssize_t i, Py_ssize_t j, double* scratch,
                               const double* vi, const int32_t* ii, Py_ssize_t ni,
                               const double* vj, const int32_t* ij,
                               Py_ssize_t nj) noexcept nogil:
    """``||x_i - x_j||^2`` from cached row norms and ``x_i . x_j``; 0 for (near) equal rows.

    ``x_i . x_j`` scatters ``x_i`` into the all-zero ``scratch`` (length d),
    gathers it along ``x_j`` in index order and clears it again: three
    predictable passes, measured twice as fast as merging the two index lists,
    and dense rows give the CSR result exactly (their zeros add exact zeros).
    """
    cdef Py_ssize_t k
    cdef double cross = 0.0
    cdef double norms = X.sqnorm(i) + X.sqnorm(j)
    cdef double zz
    for k in range(ni):
        scratch[ii[k]] = vi[k]
    for k in range(nj):
        cross += scratch[ij[k]] * vj[k]
    for k in range(ni):
        scratch[ii[k]] = 0.0
    zz = norms - 2.0 * cross
    return zz if zz > ZERO_PAIR * norms else 0.0


def hinge_pairs(RowSource X, WeightVector w,
                const int64_t[::1] pos_rows, const int64_t[::1] neg_rows, int rule,
                double lam, double t0, int64_t t, int64_t rskip, int64_t rcount,
                int64_t askip, int64_t acount):
    """Pairwise hinge steps of SAM / ASAM (D Alg. 10) or PSAM (D Alg. 11).

    For ``k = 0 .. len(pos_rows) - 1``, with ``t <- t + 1`` and
    ``eta = 1 / (lam (t + t0))``::

        m = w.(x_i - x_j)
        SUBGRADIENT (SAM, ASAM):  if m < 1:  w <- w + eta (x_i - x_j)
        PROXIMAL (PSAM):          if m < 1:  w <- w + tau (x_i - x_j),
                                  tau = min(eta, (1 - m) / ||x_i - x_j||^2)
        every rskip steps:        w <- r w,  r = 1 - rskip / (t + t0)
                                  (r = (1 - 1/(t + t0))**rskip when r < 0.8)
        every askip steps:        snapshot w into the running average (askip > 0)

    ``tau`` is the closed-form proximal map of the hinge loss (D Appendix A with
    the clip to [0, 1] the appendix omits: ALGORITHMS.md errata 42-43); pairs with
    ``||x_i - x_j|| = 0`` are skipped. The shrink equals ``1 - rskip eta lam``
    (erratum 37: no lambda is missing); the guard is SVMSGD2's.

    Parameters
    ----------
    X : RowSource
    w : WeightVector, updated in place (with an accumulator when askip > 0)
    pos_rows, neg_rows : int64 arrays of equal length
        Row indices of the positive and the negative example of each step.
    rule : SUBGRADIENT or PROXIMAL
    lam, t0 : float
    t : int
        Steps taken before this call.
    rskip, rcount : int
        Regularisation period and steps left before the next shrink.
    askip, acount : int
        Averaging period (0 = no averaging) and steps left before the next snapshot.

    Returns
    -------
    (t, rcount, acount) after the last step.
    """
    cdef Py_ssize_t k, n_steps = pos_rows.shape[0]
    cdef Py_ssize_t i, j, ni, nj
    cdef const double* vi
    cdef const double* vj
    cdef const int32_t* ii
    cdef const int32_t* ij
    cdef double eta, m, r, tt, step, zz
    if neg_rows.shape[0] != n_steps:
        raise ValueError("pos_rows and neg_rows must have the same length")
    if rule != RULE_SUBGRADIENT and rule != RULE_PROXIMAL:
        raise ValueError(f"unknown rule {rule}")
    if askip > 0 and not w.averaging:
        raise ValueError("averaging needs a WeightVector with an accumulator")
    cdef double* scratch = NULL
    if rule == RULE_PROXIMAL:
        scratch = <double*>calloc(max(X.n_features, 1), sizeof(double))
        if scratch == NULL:
            raise MemoryError()
    try:
        with nogil:
            for k in range(n_steps):
                t += 1
                tt = <double>t + t0
                eta = 1.0 / (lam * tt)
                i = pos_rows[k]
                j = neg_rows[k]
                if k + 1 < n_steps:
                    prefetch_row(X, pos_rows[k + 1])
                    prefetch_row(X, neg_rows[k + 1])
                ni = X.row(i, &vi, &ii)
                nj = X.row(j, &vj, &ij)
                m = w.dot(vi, ii, ni) - w.dot(vj, ij, nj)
                if m < 1.0:
                    step = eta
                    if rule == RULE_PROXIMAL:
                        zz = pair_sqnorm(X, i, j, scratch, vi, ii, ni, vj, ij, nj)
                        step = 0.0 if zz == 0.0 else min(eta, (1.0 - m) / zz)
                    if step > 0.0:
                        w.add_pair(step, vi, ii, ni, vj, ij, nj, m, 0.0)
                rcount -= 1
                if rcount <= 0:
                    r = 1.0 - <double>rskip / tt
                    if r < 0.8:
                        r = pow(1.0 - 1.0 / tt, <double>rskip)
                    w.scale_by(r)
                    rcount = rskip
                if askip > 0:
                    acount -= 1
                    if acount <= 0:
                        w.snapshot(1.0)
                        acount = askip
    finally:
        free(scratch)
    return t, rcount, acount


def square_prox_pairs(RowSource X, ElasticNetWeights w,
                      const int64_t[::1] pos_rows, const int64_t[::1] neg_rows,
                      double step, double weight, double theta, double shrink):
    """adaDSGD steps (paper 003 Alg. 1 inner loop): pairwise square loss + elastic net.

    For each pair::

        m = w.(x_i - x_j)
        w <- w + step * weight * 2 (1 - m) (x_i - x_j)     # gradient of weight (1 - m)^2
        w <- soft(w, theta) / shrink                         # prox of the elastic net

    ``weight`` is the importance weight ``c_s`` of the stage, ``theta = step * l1``
    and ``shrink = 1 + step * l2`` (``1 + 2 step l2`` for the printed eq. 24); the
    prox is applied just in time (ALGORITHMS.md 0.1), so a step costs O(nnz).
    """
    cdef Py_ssize_t k, n_steps = pos_rows.shape[0]
    cdef Py_ssize_t ni, nj
    cdef const double* vi
    cdef const double* vj
    cdef const int32_t* ii
    cdef const int32_t* ij
    cdef double m, c
    if neg_rows.shape[0] != n_steps:
        raise ValueError("pos_rows and neg_rows must have the same length")
    with nogil:
        for k in range(n_steps):
            ni = X.row(pos_rows[k], &vi, &ii)
            nj = X.row(neg_rows[k], &vj, &ij)
            w.touch(vi, ii, ni)
            w.touch(vj, ij, nj)
            m = w.dot(vi, ii, ni) - w.dot(vj, ij, nj)
            c = step * weight * 2.0 * (1.0 - m)
            w.add(c, vi, ii, ni)
            w.add(-c, vj, ij, nj)
            w.prox_step(theta, shrink)
