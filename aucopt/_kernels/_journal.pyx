# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Undo journal: transactions over arrays that kernels update in place.

A failed or interrupted ``partial_fit`` must leave the model exactly as it was.
Copying the whole state before every call would cost O(state) time and memory,
which a one-row update of a 10^5-feature model cannot afford. A :class:`Journal`
instead saves each row of the array (``width`` doubles: a coordinate of a weight
vector with its interleaved columns, a row of a sketch) before its first write in
the call, so the copy is proportional to what the call touches.

The journal holds at most ``cap`` rows, chosen so that it and its one-byte marks
stay within ``budget`` (default 25%) of the array's size. A call that touches more
rows (an epoch over all features, a fold of the scaled weight vector) switches, once,
to a full copy of the original array and stops journaling: that call pays one copy,
which is the floor for a transaction over a state rewritten as a whole.

``rollback()`` restores the array; ``commit()`` (or garbage collection) frees the
journal. Kernels call :func:`touch` / :func:`touch_rows` (``_journal.pxd``) before
writing a row.
"""
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy

import numpy as np


cdef class Journal:
    """Start journaling ``array`` (float64, C-contiguous, at least 1-D).

    Parameters
    ----------
    array : ndarray
        Viewed as rows of ``width`` doubles (``width`` = the product of the
        trailing dimensions unless given).
    width : int or None
        Doubles per row.
    budget : float, default=0.25
        Memory of the journal, as a fraction of the array's bytes, before it
        switches to one full copy.
    """

    def __cinit__(self, array not None, width=None, double budget=0.25):
        cdef double[::1] flat
        if array.dtype != np.float64 or not array.flags.c_contiguous:
            raise ValueError("a journaled array must be C-contiguous float64")
        if not array.flags.writeable:
            raise ValueError("a journaled array must be writable")
        size = array.size
        w = int(width) if width is not None else (
            int(np.prod(array.shape[1:])) if array.ndim > 1 else 1)
        if w < 1 or size % w:
            raise ValueError(f"array of {size} values cannot be cut into rows of {w}")
        self.width = w
        self.n_rows = size // w
        self._array = array
        flat = array.reshape(-1)
        self.base = &flat[0] if size > 0 else NULL
        self.mark = <uint8_t*>calloc(max(self.n_rows, 1), 1)
        if self.mark == NULL:
            raise MemoryError()
        # journal bytes: n_rows marks + cap * (8 + 8 width) <= budget * 8 width n_rows
        self.cap = max(16, int((budget * 8 * w * self.n_rows - self.n_rows) // (8 + 8 * w)))
        self.count = 0
        self.alloc = 0
        self.rows = NULL
        self.saved = NULL
        self.full = NULL
        self.active = True

    def __dealloc__(self):
        self._release_buffers()

    cdef void _release_buffers(self) noexcept nogil:
        free(self.mark)
        free(self.rows)
        free(self.saved)
        free(self.full)
        self.mark = NULL
        self.rows = NULL
        self.saved = NULL
        self.full = NULL

    def _release(self):
        self._release_buffers()
        self.active = False

    cdef int save(self, Py_ssize_t row) except -1 nogil:
        """Save ``row`` (its first write in this transaction follows)."""
        cdef Py_ssize_t new_alloc
        cdef int64_t* r
        cdef double* s
        if not self.active or self.mark[row]:
            return 0
        if self.count == self.cap:
            return self.save_all()
        if self.count == self.alloc:
            new_alloc = min(self.cap, max(64, 2 * self.alloc))
            r = <int64_t*>realloc(self.rows, new_alloc * sizeof(int64_t))
            if r == NULL:
                with gil:
                    raise MemoryError()
            self.rows = r
            s = <double*>realloc(self.saved, new_alloc * self.width * sizeof(double))
            if s == NULL:
                with gil:
                    raise MemoryError()
            self.saved = s
            self.alloc = new_alloc
        self.rows[self.count] = row
        memcpy(self.saved + self.count * self.width, self.base + row * self.width,
               self.width * sizeof(double))
        self.mark[row] = 1
        self.count += 1
        return 0

    cdef int save_all(self) except -1 nogil:
        """Keep one full copy of the original array and stop journaling rows."""
        cdef Py_ssize_t k
        if not self.active:
            return 0
        self.full = <double*>malloc(max(self.n_rows * self.width, 1) * sizeof(double))
        if self.full == NULL:
            with gil:
                raise MemoryError()
        memcpy(self.full, self.base, self.n_rows * self.width * sizeof(double))
        for k in range(self.count):  # rows already written: their originals
            memcpy(self.full + self.rows[k] * self.width, self.saved + k * self.width,
                   self.width * sizeof(double))
        free(self.rows)
        free(self.saved)
        self.rows = NULL
        self.saved = NULL
        self.count = 0
        self.alloc = 0
        self.active = False
        return 0

    def rollback(self):
        """Restore the array as it was when the journal started; then release it."""
        cdef Py_ssize_t k
        if self.full != NULL:
            memcpy(self.base, self.full, self.n_rows * self.width * sizeof(double))
        else:
            for k in range(self.count):
                memcpy(self.base + self.rows[k] * self.width, self.saved + k * self.width,
                       self.width * sizeof(double))
        self._release()

    def commit(self):
        """Keep the changes; release the journal."""
        self._release()

    @property
    def copied(self):
        """True once the journal switched to a full copy."""
        return self.full != NULL

    def py_touch(self, Py_ssize_t row):
        """Save ``row`` before a write (tests)."""
        if not 0 <= row < self.n_rows:
            raise IndexError(f"row {row} out of range for {self.n_rows} rows")
        touch(self, row)
