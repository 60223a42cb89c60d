# The pair helper shared by the pairwise and the buffered kernels: x_i . x_j (and the
# pair's squared distance) by scattering one row into a zeroed dense scratch and
# gathering along the other, never merging index lists and never forming x_i - x_j.
# Measured twice as fast as a sorted merge; dense rows give the CSR result exactly
# (their zeros add exact zeros, in index order). `stride` lets the scratch live in
# an interleaved column.
from libc.stdint cimport int32_t


cdef inline void scatter(double* s, Py_ssize_t stride, const double* vals,
                         const int32_t* ind, Py_ssize_t nnz) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(nnz):
        s[ind[k] * stride] = vals[k]


cdef inline void unscatter(double* s, Py_ssize_t stride, const int32_t* ind,
                           Py_ssize_t nnz) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(nnz):
        s[ind[k] * stride] = 0.0


cdef inline double gather(const double* s, Py_ssize_t stride, const double* vals,
                          const int32_t* ind, Py_ssize_t nnz) noexcept nogil:
    cdef Py_ssize_t k
    cdef double acc = 0.0
    for k in range(nnz):
        acc += s[ind[k] * stride] * vals[k]
    return acc


cdef inline double pair_sqdist(double* s, double sq_i, double sq_j,
                               const double* vi, const int32_t* ii, Py_ssize_t ni,
                               const double* vj, const int32_t* ij,
                               Py_ssize_t nj) noexcept nogil:
    """``||x_i - x_j||^2`` from the rows' squared norms and ``x_i . x_j``; 0 for
    (near) equal rows (below 1e-12 of the two norms: one point up to the rounding
    of this expansion). ``s`` is an all-zero scratch of length d, left all zero."""
    cdef double norms = sq_i + sq_j
    cdef double zz
    scatter(s, 1, vi, ii, ni)
    zz = norms - 2.0 * gather(s, 1, vj, ij, nj)
    unscatter(s, 1, ii, ni)
    return zz if zz > 1e-12 * norms else 0.0
