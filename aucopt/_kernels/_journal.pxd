# Undo journal for arrays a kernel updates in place (transactions without a copy).
from libc.stdint cimport int32_t, int64_t, uint8_t

cdef class Journal:
    cdef double* base
    cdef readonly Py_ssize_t n_rows
    cdef readonly Py_ssize_t width
    cdef uint8_t* mark
    cdef int64_t* rows
    cdef double* saved
    cdef readonly Py_ssize_t count
    cdef Py_ssize_t alloc
    cdef readonly Py_ssize_t cap
    cdef double* full
    cdef readonly bint active
    cdef object _array

    cdef void _release_buffers(self) noexcept nogil
    cdef int save(self, Py_ssize_t row) except -1 nogil
    cdef int save_all(self) except -1 nogil


cdef inline int touch(Journal j, Py_ssize_t row) except -1 nogil:
    """Save ``row`` before its first write (no-op without a journal or once saved)."""
    if j is not None and j.active and not j.mark[row]:
        return j.save(row)
    return 0


cdef inline int touch_rows(Journal j, const int32_t* ind, Py_ssize_t nnz,
                           Py_ssize_t offset) except -1 nogil:
    """Save rows ``offset + ind[k]`` before their first write."""
    cdef Py_ssize_t k
    if j is None or not j.active:
        return 0
    for k in range(nnz):
        if not j.mark[offset + ind[k]]:
            j.save(offset + ind[k])
            if not j.active:
                break
    return 0
