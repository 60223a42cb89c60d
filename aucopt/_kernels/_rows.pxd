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


# Prefetching. Rows read in a random order (the pairs of the pairwise learners, a
# shuffled pass: a view's order or an index array) come from random places in memory;
# the loops ask the cache for the row PREFETCH_AHEAD steps ahead, its first
# PREFETCH_LINES cache lines of values (and the indices beside them), and the hardware
# prefetcher follows a row from there. Where a row starts is itself a load (indptr[i]
# at a random i): the loops ask for it (and for the squared norm, where they read it)
# BOUNDS_AHEAD steps ahead, so that the row prefetch does not wait for it.
# Chosen by the median of interleaved PSAM / ASAM epochs run from one saved state
# (kernel only). Rows: on the rcv1-shaped set of tools/synth_rcv1.py (724,000 rows,
# ~700 MB of CSR: the rows come from DRAM) 2 steps and 8 lines took 0.879 s a PSAM
# epoch, against 1.011 s with 1 step and 4 lines, 1.213 s without prefetching, and
# 0.94-0.96 s with 3-4 steps or 16 lines; on news20 (which fits the last-level cache)
# 5.57 X @ w against 6.36 with 1 step and 4 lines. Prefetching the weights that the
# next rows touch as well was slower (6.88 against 5.58 X @ w). Bounds 8 steps ahead,
# paired ratios of epoch times against none: rcv1-shaped PSAM 0.77 / 0.74, ASAM 0.81
# / 0.82 (16 and 32 steps: 0.74-0.86), its first quarter PSAM 0.84 and ASAM 0.91,
# news20 PSAM 0.94, ASAM 1.00, sector, reuters_acq and webkb_course 0.99-1.01.
# The row loops use the same distances: on the rcv1-shaped set a SOLAM pass took 0.77
# and a SPAM pass 0.67 of its time without prefetching, and 4 or 8 rows ahead with
# bounds 16 or 32 ahead were within 0.97-1.06 of 2 and 8 (paired medians of passes
# in one process); scoring a shuffled view, 0.50 (8 and 16 ahead: 0.42).
# Prefetching changes no arithmetic.
cdef extern from *:
    """
    #ifndef AUCOPT_PREFETCH
    #if defined(__GNUC__)
    #define AUCOPT_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define AUCOPT_PREFETCH(p) ((void)(p))
    #endif
    #endif
    """
    void AUCOPT_PREFETCH(const void* p) noexcept nogil

cdef enum:
    PREFETCH_AHEAD = 2
    PREFETCH_LINES = 8
    BOUNDS_AHEAD = 8


cdef inline void prefetch_row(RowSource X, Py_ssize_t i) noexcept nogil:
    """Ask the cache for the start of row ``i``."""
    cdef const double* vals
    cdef const int32_t* ind
    cdef Py_ssize_t nnz = row_of(X, i, &vals, &ind), k
    cdef Py_ssize_t head = min(nnz, 8 * PREFETCH_LINES)
    for k in range(0, head, 8):  # 8 doubles per 64-byte line
        AUCOPT_PREFETCH(vals + k)
    if not X.dense:
        for k in range(0, head, 16):
            AUCOPT_PREFETCH(ind + k)


cdef inline void prefetch_bounds(RowSource X, Py_ssize_t i, const double* sqnorms) noexcept nogil:
    """Ask the cache for where row ``i`` starts and ends (and its squared norm from
    ``sqnorms``, unless NULL); through a view's order (one load of it)."""
    if X.order != NULL:
        i = X.order[i]
    if not X.dense:
        AUCOPT_PREFETCH(X.indptr + i)
    if sqnorms != NULL:
        AUCOPT_PREFETCH(sqnorms + i)


cdef inline void prefetch_rows_ahead(RowSource X, const int64_t* index, Py_ssize_t k,
                                     Py_ssize_t stop) noexcept nogil:
    """In a loop that reads row ``index[k]`` of ``X`` at step ``k < stop`` (``index``
    NULL: row ``k``): when those rows come from random places (an index array, or a
    view's order), ask for the row :data:`PREFETCH_AHEAD` steps ahead and where the
    row :data:`BOUNDS_AHEAD` steps ahead starts. Rows in storage order are left to the
    hardware prefetcher."""
    cdef Py_ssize_t far = k + BOUNDS_AHEAD, ahead = k + PREFETCH_AHEAD
    if index == NULL and X.order == NULL:
        return
    if far < stop:
        prefetch_bounds(X, index[far] if index != NULL else far, NULL)
    if ahead < stop:
        prefetch_row(X, index[ahead] if index != NULL else ahead)


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
