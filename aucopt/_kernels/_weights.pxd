# Scaled weight vector w = scale * v with maintained ||w||^2 and exact lazy averaging.
from libc.stdint cimport int32_t

cdef class WeightVector:
    cdef double* v
    cdef double* u
    cdef readonly Py_ssize_t n_features
    cdef readonly double scale
    cdef readonly double sqnorm
    cdef readonly bint track_norm
    cdef readonly bint averaging
    cdef readonly double avg_c
    cdef readonly double avg_q
    cdef double fold_low
    cdef double fold_high
    cdef Py_ssize_t stride
    cdef object _state

    cdef double dot(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil
    cdef void add(self, double c, const double* vals, const int32_t* ind,
                  Py_ssize_t nnz, double wx, double xx) noexcept nogil
    cdef void add_pair(self, double c,
                       const double* vi, const int32_t* ii, Py_ssize_t ni,
                       const double* vj, const int32_t* ij, Py_ssize_t nj,
                       double wz, double zz) noexcept nogil
    cdef void scale_by(self, double a) noexcept nogil
    cdef void snapshot(self, double weight) noexcept nogil
    cdef void fold(self) noexcept nogil


cdef class ElasticNetWeights:
    cdef double* w
    cdef double* stamp_p
    cdef double* stamp_r
    cdef readonly Py_ssize_t n_features
    cdef readonly double P
    cdef readonly double R
    cdef object _arrays

    cdef void _update(self, Py_ssize_t k) noexcept nogil
    cdef void touch(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil
    cdef double dot(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil
    cdef void add(self, double c, const double* vals, const int32_t* ind,
                  Py_ssize_t nnz) noexcept nogil
    cdef void prox_step(self, double theta, double c) noexcept nogil
    cdef void materialize_all(self) noexcept nogil
