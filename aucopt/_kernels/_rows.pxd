# Row source shared by every learner kernel: dense C-contiguous rows and CSR rows
# handed out in one form, (values*, feature indices*, nnz). `row_of` / `sqnorm_of`
# are the inline forms of the methods, for hot loops in other modules (a cdef
# method call across modules cannot be inlined).
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


cdef inline Py_ssize_t row_of(RowSource X, Py_ssize_t i, const double** vals,
                              const int32_t** ind) noexcept nogil:
    """Point ``vals``/``ind`` at row ``i`` of ``X`` and return its number of entries."""
    cdef int64_t start
    if X.order != NULL:
        i = X.order[i]
    if X.dense:
        vals[0] = X.data + i * X.n_features
        ind[0] = X.indices
        return X.n_features
    start = X.indptr[i]
    vals[0] = X.data + start
    ind[0] = X.indices + start
    return <Py_ssize_t>(X.indptr[i + 1] - start)


cdef inline double sqnorm_of(RowSource X, Py_ssize_t i) noexcept nogil:
    """Cached squared norm of row ``i`` (the source needs ``norms=True``)."""
    if X.order != NULL:
        i = X.order[i]
    return X.sqnorms[i]


# The norm cap of a step rule (``norm_cap`` of Uni-Exp, adaDSGD, SOLAM, SPAM, FSAUC):
# a row of squared norm ``sq`` above ``cap`` takes its step times ``cap / sq``.

cdef inline double cap_factor(double sq, double cap) noexcept nogil:
    """``min(1, cap / sq)`` (1 for ``cap <= 0``: no cap)."""
    return cap / sq if cap > 0.0 and sq > cap else 1.0


cdef inline double row_cap_factor(RowSource X, Py_ssize_t i, double cap) noexcept nogil:
    """:func:`cap_factor` of row ``i`` (its norm read only when ``cap > 0``)."""
    return cap_factor(sqnorm_of(X, i), cap) if cap > 0.0 else 1.0


cdef inline int check_cap_value(double cap) except -1:
    if not cap >= 0.0:
        raise ValueError(f"cap must be >= 0, got {cap!r}")
    return 0


cdef inline int check_cap(RowSource X, double cap) except -1:
    """A valid cap, and the rows' norms when it caps (``cap > 0``)."""
    check_cap_value(cap)
    if cap > 0.0 and X.sqnorms == NULL and X.n_rows > 0:
        raise ValueError("a norm cap needs the rows' norms (RowSource(X, norms=True))")
    return 0
