# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Shared class statistics: a primitive of the kernels, as the rows and the weights.

* :class:`ClassSums` -- per-class row counts and sums, updated in place through an
  optional undo journal (the square-loss and the saddle-point kernels);
* ``array_data`` / ``check_rows`` -- the checks of a learner-owned state array and
  of rows against their labels and the state's width.
"""
import numpy as np

from cpython.buffer cimport (PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE,
                            PyBuffer_Release, PyObject_GetBuffer)
from libc.stdint cimport int32_t

from aucopt._kernels._interrupt cimport poll
from aucopt._kernels._journal cimport Journal, touch_rows
from aucopt._kernels._pairs cimport gather
from aucopt._kernels._rows cimport RowSource, prefetch_rows_ahead


cdef double* array_data(object array, tuple shape, str name) except NULL:
    """Pointer to the data of a writable C-contiguous float64 ``array`` of exactly
    ``shape`` (the caller keeps ``array`` alive)."""
    cdef Py_buffer view
    cdef Py_ssize_t k
    cdef bint ok
    if type(array) is not np.ndarray:
        raise ValueError(f"{name} must be a float64 array of shape {shape}, got "
                         f"{type(array).__name__}")
    try:
        PyObject_GetBuffer(array, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT)
    except (BufferError, ValueError) as exc:
        raise ValueError(f"{name} must be a writable C-contiguous array ({exc})") from None
    ok = (view.format[0] == b'd' and view.format[1] == 0 and view.ndim == len(shape)
          and view.len > 0)
    for k in range(view.ndim if ok else 0):
        ok = ok and view.shape[k] == shape[k]
    PyBuffer_Release(&view)
    if not ok:
        raise ValueError(f"{name} must be a non-empty float64 array of shape {shape}, got "
                         f"{array.dtype} {array.shape}")
    return <double*>view.buf


cdef int check_rows(RowSource X, const double[::1] y, Py_ssize_t n_features) except -1:
    """Labels for every row, and rows of the state's width."""
    if y.shape[0] != X.n_rows:
        raise ValueError(f"{X.n_rows} rows but {y.shape[0]} labels")
    if X.n_features != n_features:
        raise ValueError(f"rows have {X.n_features} features, the model {n_features}")
    return 0



cdef class ClassSums:
    """Per-class row counts and sums (index 0 = negative, 1 = positive), in place.

    Parameters
    ----------
    count : ndarray of shape (2,), float64
    sums : ndarray of shape (2, n_features), float64, C-contiguous
        Both are updated in place.
    journal : Journal or None
        Undo journal of ``sums`` with one value per journal row (``width=1``): a
        coordinate is saved before its first write.
    """

    def __cinit__(self, count not None, sums not None, Journal journal=None):
        d = sums.shape[1] if getattr(sums, "ndim", 0) == 2 else 0
        self.count = array_data(count, (2,), "count")
        self.sums = array_data(sums, (2, d), "sums")
        if journal is not None and (journal.width != 1 or journal.n_rows != 2 * d):
            raise ValueError("the journal of the class sums needs one row per value")
        self.n_features = d
        self.journal = journal
        self._refs = (count, sums)

    cdef int add(self, int cls, const double* vals, const int32_t* ind,
                 Py_ssize_t nnz) except -1 nogil:
        """Count the row in class ``cls`` and add it to the class's sum."""
        cdef Py_ssize_t k
        cdef double* s = self.sums + cls * self.n_features
        touch_rows(self.journal, ind, nnz, cls * self.n_features)
        self.count[cls] += 1.0
        for k in range(nnz):
            s[ind[k]] += vals[k]
        return 0

    cdef double dot(self, int cls, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil:
        """``x . s_cls``."""
        return gather(self.sums + cls * self.n_features, 1, vals, ind, nnz)

    def add_rows(self, RowSource X, const double[::1] y):
        """Add every row of ``X`` to its class (labels in {-1, +1}), in row order."""
        cdef Py_ssize_t i, nnz, work = 0
        cdef const double* vals
        cdef const int32_t* ind
        check_rows(X, y, self.n_features)
        with nogil:
            for i in range(X.n_rows):
                prefetch_rows_ahead(X, NULL, i, X.n_rows)
                nnz = X.row(i, &vals, &ind)
                self.add(1 if y[i] > 0 else 0, vals, ind, nnz)
                poll(&work, nnz + 1)
