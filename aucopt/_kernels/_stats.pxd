# Shared class statistics (a kernel primitive: _square and _saddle use it): per-class
# row counts and sums, updated in place through an optional undo journal (one
# journal row per coordinate of the (2, d) sums), and the argument checks.
from libc.stdint cimport int32_t

from aucopt._kernels._journal cimport Journal
from aucopt._kernels._rows cimport RowSource


cdef class ClassSums:
    cdef double* count
    cdef double* sums
    cdef readonly Py_ssize_t n_features
    cdef readonly Journal journal
    cdef object _refs

    cdef int add(self, int cls, const double* vals, const int32_t* ind,
                 Py_ssize_t nnz) except -1 nogil
    cdef double dot(self, int cls, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil


cdef double* array_data(object array, tuple shape, str name) except NULL
cdef int check_rows(RowSource X, const double[::1] y, Py_ssize_t n_features) except -1
