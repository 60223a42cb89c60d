# Buffers of stored rows for online buffered pairwise learners:
# one negative (class 0) and one positive (class 1) buffer of `capacity` slots each,
# reservoir sampling (Khalid 2019, Alg. 5) or FIFO, dense (2M, d) block or pooled CSR.
from libc.stdint cimport int32_t, int64_t

from aucopt._kernels._journal cimport Journal

cdef enum:
    PUSH_REJECTED = 0
    PUSH_STORED = 1
    PUSH_NO_ROOM = 2


cdef class Buffers:
    cdef readonly Py_ssize_t capacity
    cdef readonly Py_ssize_t n_features
    cdef readonly bint dense
    cdef readonly bint reservoir
    cdef public int64_t top
    cdef readonly int64_t pending
    cdef int64_t* count
    cdef int64_t* seen
    cdef int64_t* head
    cdef int64_t* arrival
    cdef double* sqnorms
    cdef double* block
    cdef const int32_t* all_features
    cdef int64_t* start
    cdef int64_t* nnz
    cdef double* pool_val
    cdef int32_t* pool_ind
    cdef int64_t pool_cap
    cdef Journal journal
    cdef object _refs
    cdef object _pool

    cdef Py_ssize_t size(self, int cls) noexcept nogil
    cdef int64_t received(self, int cls) noexcept nogil
    cdef Py_ssize_t slot(self, int cls, Py_ssize_t k) noexcept nogil
    cdef double sqnorm(self, Py_ssize_t slot) noexcept nogil
    cdef Py_ssize_t row(self, Py_ssize_t slot, const double** vals,
                        const int32_t** ind) noexcept nogil
    cdef int push(self, int cls, const double* vals, const int32_t* ind, Py_ssize_t nnz,
                  double sq, double u, double r, int64_t t) except -1 nogil
