# The pair rule of the pairwise SGD loop (_pairwise.pyx): called on every drawn pair
# with its margin; it returns the step along x_i - x_j (0: no move). `Pair` names the
# pair's two rows for a rule that needs more than the margin (`pair_zz`).
from libc.stdint cimport int32_t, int64_t, uint16_t

from aucopt._kernels._pairs cimport POSITION_LIMIT, pair_sqdist


cdef struct Pair:
    const double* vi      # x_i: values, indices, nnz
    const int32_t* ii
    Py_ssize_t ni
    const double* vj      # x_j
    const int32_t* ij
    Py_ssize_t nj
    Py_ssize_t i          # the rows' indices in the source
    Py_ssize_t j
    const double* sqnorms # the source's squared row norms, and its row order (or NULL)
    const int64_t* order
    uint16_t* positions   # pair_sqdist's scratch: a zeroed row of length d and a row
    double* values        # i's values (NULL: the index lists are merged)


cdef inline double pair_zz(Pair* p) noexcept nogil:
    """``||x_i - x_j||^2`` of the pair (for a rule with ``needs_sqdist``; computed
    when asked: a rule that needs it on few pairs pays for those only)."""
    cdef Py_ssize_t i = p.i, j = p.j
    if p.order != NULL:
        i = p.order[i]
        j = p.order[j]
    return pair_sqdist(p.positions, p.values, p.sqnorms[i], p.sqnorms[j], p.vi, p.ii, p.ni,
                       p.vj, p.ij, p.nj)


cdef class PairRule:
    cdef readonly bint needs_sqdist
    cdef public bint skip_satisfied
    cdef double step(self, double m, double eta, Pair* pair) except? -1.0 nogil

cdef class Schedule:
    cdef public double lam
    cdef public double t0
    cdef public int64_t rskip
    cdef public int64_t askip
    cdef public int64_t t
    cdef public int64_t rcount
    cdef public int64_t acount
    cdef public double avg_power
    cdef public double hinge_sum
    cdef public double ranked_sum
