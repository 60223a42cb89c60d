# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Stochastic pairwise learners (dissertation 000, Ch.6-7): one loop over sampled pairs.

Each step takes a positive row ``x_i`` and a negative row ``x_j`` (drawn by the
caller, ALGORITHMS.md 0.2), computes the margin ``m = w.x_i - w.x_j`` with two
sparse dot products, and applies ``w <- w + c (x_i - x_j)`` as two sparse axpys:
the difference is never materialised. Regularisation is the scheduled shrink of
SVMSGD2 (every ``rskip`` steps, O(1) through the weight vector's scale).
"""
from libc.math cimport pow
from libc.stdint cimport int32_t, int64_t

from aucopt._kernels._rows cimport RowSource
from aucopt._kernels._weights cimport WeightVector


def sgd_pairs(RowSource X, WeightVector w,
              const int64_t[::1] pos_rows, const int64_t[::1] neg_rows,
              double lam, double t0, int64_t t, int64_t rskip, int64_t rcount):
    """Run SAM steps (dissertation 000 Sec. 6.3, Alg. 10 without averaging).

    For ``k = 0 .. len(pos_rows) - 1`` with ``t <- t + 1``::

        eta = 1 / (lam (t + t0))
        if w.(x_i - x_j) < 1:  w <- w + eta (x_i - x_j)      # hinge subgradient step
        every rskip steps:      w <- r w,  r = 1 - rskip / (t + t0)
                                (r = (1 - 1/(t + t0))**rskip when r < 0.8, SVMSGD2's guard)

    ``rskip * eta * lam = rskip / (t + t0)``: the shrink is the L2 step of ``rskip``
    skipped iterations (ALGORITHMS.md erratum 37: no lambda is missing).

    Parameters
    ----------
    X : RowSource
    w : WeightVector, updated in place
    pos_rows, neg_rows : int64 arrays of equal length
        Row indices of the positive and negative example of each step.
    lam, t0 : float
        Regularisation strength and step offset.
    t : int
        Steps taken before this call.
    rskip, rcount : int
        Regularisation period and the steps left before the next shrink.

    Returns
    -------
    (t, rcount) after the last step.
    """
    cdef Py_ssize_t k, n_steps = pos_rows.shape[0]
    cdef Py_ssize_t ni, nj
    cdef const double* vi
    cdef const double* vj
    cdef const int32_t* ii
    cdef const int32_t* ij
    cdef double eta, m, r, tt
    if neg_rows.shape[0] != n_steps:
        raise ValueError("pos_rows and neg_rows must have the same length")
    with nogil:
        for k in range(n_steps):
            t += 1
            tt = <double>t + t0
            eta = 1.0 / (lam * tt)
            ni = X.row(pos_rows[k], &vi, &ii)
            nj = X.row(neg_rows[k], &vj, &ij)
            m = w.dot(vi, ii, ni) - w.dot(vj, ij, nj)
            if m < 1.0:
                w.add_pair(eta, vi, ii, ni, vj, ij, nj, m, 0.0)
            rcount -= 1
            if rcount <= 0:
                r = 1.0 - <double>rskip / tt
                if r < 0.8:
                    r = pow(1.0 - 1.0 / tt, <double>rskip)
                w.scale_by(r)
                rcount = rskip
    return t, rcount
