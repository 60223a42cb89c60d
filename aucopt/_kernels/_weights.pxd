# The one weight primitive of every kernel: w = scale * v over a (d, stride) state
# array (column 0 = v, column 1 = the lazy-average accumulator when averaging, further
# columns = per-coordinate state of a rule), with a maintained squared norm (or one
# deferred to the next fold: defer_norm),
# an optional undo journal, and a lazy elastic-net variant with the same method names.
# `weights_dot` is the inline form of `Weights.dot` for hot loops in other modules.
from libc.stdint cimport int32_t

from aucopt._kernels._journal cimport Journal


cdef class Weights:
    cdef double* v
    cdef readonly Py_ssize_t n_features
    cdef readonly Py_ssize_t stride
    cdef readonly double scale
    cdef readonly double vsq
    cdef readonly bint averaging
    cdef readonly double avg_c
    cdef readonly double avg_q
    cdef double fold_low
    cdef double fold_high
    cdef public bint hold_folds
    cdef readonly bint fold_due
    cdef public bint defer_norm
    cdef readonly Journal journal
    cdef double saved[4]
    cdef object _state

    cdef double dot(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil
    cdef double avg_dot(self, const double* vals, const int32_t* ind,
                        Py_ssize_t nnz) noexcept nogil
    cdef int add(self, double c, const double* vals, const int32_t* ind,
                 Py_ssize_t nnz) except -1 nogil
    cdef int add_pair(self, double c,
                      const double* vi, const int32_t* ii, Py_ssize_t ni,
                      const double* vj, const int32_t* ij, Py_ssize_t nj) except -1 nogil
    cdef int scale_by(self, double a) except -1 nogil
    cdef void snapshot(self, double weight) noexcept nogil
    cdef int fold(self) except -1 nogil
    cdef double sqnorm(self) noexcept nogil
    cdef int touch(self, const int32_t* ind, Py_ssize_t nnz) except -1 nogil
    cdef double* dense_begin(self) except NULL nogil
    cdef void dense_end(self) noexcept nogil

    # writes of a rule that updates coordinates itself (scale 1): journal the rows
    # first (touch), set v_i with put, report the summed changes of sum v^2 with moved
    cdef inline double put(self, Py_ssize_t i, double value) noexcept nogil:
        """``v_i <- value`` (row ``i`` journaled by :meth:`touch` first); returns the
        change of ``sum v^2``, which the caller sums over its writes for :meth:`moved`."""
        cdef double* p = self.v + i * self.stride
        cdef double old = p[0]
        p[0] = value
        return (value - old) * (value + old)

    cdef inline void moved(self, double dv) noexcept nogil:
        """Add the summed changes of :meth:`put` to the maintained ``||v||^2`` (left
        alone while ``defer_norm``, as :meth:`add` does)."""
        if not self.defer_norm:
            self.vsq += dv

    cdef inline double* column(self, Py_ssize_t k) noexcept nogil:
        """Column ``k >= 1`` of the state (a rule's per-coordinate values, ``stride``
        apart), which the rule reads and writes itself after :meth:`touch`."""
        return self.v + k


cdef class ElasticNetWeights:
    cdef double* a
    cdef readonly Py_ssize_t n_features
    cdef readonly double P
    cdef readonly double R
    cdef public bint hold_folds
    cdef readonly bint fold_due
    cdef readonly Journal journal
    cdef double saved[2]
    cdef object _state

    cdef int _bring(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) except -1 nogil
    cdef double dot(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) except? -1 nogil
    cdef int add(self, double c, const double* vals, const int32_t* ind,
                 Py_ssize_t nnz) except -1 nogil
    cdef int add_pair(self, double c,
                      const double* vi, const int32_t* ii, Py_ssize_t ni,
                      const double* vj, const int32_t* ij, Py_ssize_t nj) except -1 nogil
    cdef int prox_step(self, double theta, double c) except -1 nogil
    cdef int fold(self) except -1 nogil


cdef inline double dot_from(const double* v, Py_ssize_t stride, const double* vals,
                            const int32_t* ind, Py_ssize_t start, Py_ssize_t stop,
                            double acc) noexcept nogil:
    """``acc`` plus entries ``start .. stop - 1`` of a row's dot with column 0 of a
    state ``v``, added in index order."""
    cdef Py_ssize_t k
    for k in range(start, stop):
        acc += v[ind[k] * stride] * vals[k]
    return acc


cdef inline double weights_dot(Weights w, const double* vals, const int32_t* ind,
                               Py_ssize_t nnz) noexcept nogil:
    """``w . x`` for a row given as (values, indices, nnz)."""
    return dot_from(w.v, w.stride, vals, ind, 0, nnz, 0.0) * w.scale


cdef inline double weights_margin(Weights w, const double* vi, const int32_t* ii,
                                  Py_ssize_t ni, const double* vj, const int32_t* ij,
                                  Py_ssize_t nj) noexcept nogil:
    """``w . x_i - w . x_j``: the two dots of :func:`weights_dot` in one loop. Each
    sum runs in its own row's order (the same numbers as two calls), and the two
    independent chains of additions overlap: PSAM epochs 8-10% faster on news20, 6%
    on sector, 4% on the rcv1-shaped set, 1% on reuters_acq (paired interleaved
    epochs; a dot over long rows is bound by the latency of its additions)."""
    cdef Py_ssize_t k, n = min(ni, nj)
    cdef double si = 0.0, sj = 0.0
    cdef const double* v = w.v
    cdef Py_ssize_t stride = w.stride
    for k in range(n):
        si += v[ii[k] * stride] * vi[k]
        sj += v[ij[k] * stride] * vj[k]
    si = dot_from(v, stride, vi, ii, n, ni, si)
    sj = dot_from(v, stride, vj, ij, n, nj, sj)
    return si * w.scale - sj * w.scale


cdef inline double renormalize_limit() noexcept nogil:
    """The product ``P`` above which :class:`ElasticNetWeights` folds."""
    return 1e100

