# Row source shared by every learner kernel: dense C-contiguous rows and CSR rows
# handed out in one form, (values*, feature indices*, nnz).
from libc.stdint cimport int32_t, int64_t

cdef class RowSource:
    cdef const double* data
    cdef const int32_t* indices
    cdef const int64_t* indptr
    cdef readonly Py_ssize_t n_rows
    cdef readonly Py_ssize_t n_features
    cdef readonly bint dense
    cdef const double* sqnorms
    cdef const int64_t* order
    cdef object _refs

    cdef Py_ssize_t row(self, Py_ssize_t i, const double** vals,
                        const int32_t** ind) noexcept nogil
    cdef double sqnorm(self, Py_ssize_t i) noexcept nogil
