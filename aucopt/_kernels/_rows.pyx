# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Row source over dense and CSR matrices (ALGORITHMS.md section 0.1, DESIGN "rows").

Every kernel reads training rows through :class:`RowSource`, so one inner loop
serves dense and sparse input alike:

* a C-contiguous float64 ``(n, d)`` array gives row ``i`` as its ``d`` values and
  the shared feature-index array ``0 .. d-1``;
* a CSR matrix gives row ``i`` as its stored values and column indices.

Column indices are held as int32 (a weight vector of 2**31 float64 entries would
need 16 GiB, so no trainable model has more features); int64 CSR indices are
accepted and narrowed once, after a range check. Row pointers are held as int64,
so matrices with more than 2**31 stored values work. Rows of a CSR matrix must be
in canonical form (sorted, duplicate-free indices): then dense and CSR input give
bit-identical dot products, because the extra zeros of a dense row add exact
zeros to the sums. ``aucopt.base`` canonicalises once during validation.

Squared row norms are computed once at construction (O(nnz), summed in index
order so that dense and CSR rows give identical values) for the kernels
that need ``||x||^2`` (projections, proximal steps, maintained ``||w||^2``).
"""
import numpy as np
import scipy.sparse as sp

from libc.stdint cimport int32_t, int64_t

INT32_MAX = 2147483647


cdef class RowSource:
    """Rows of a dense array or CSR matrix for Cython kernels.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features) or scipy.sparse CSR matrix
        Dense input must be C-contiguous float64; CSR input must have float64
        values and canonical (sorted, duplicate-free) indices. No conversion is
        made here: validation happens once, in ``aucopt.base``.
    """

    def __cinit__(self, X):
        cdef const double[:, ::1] dense_view
        cdef const double[::1] data_view
        cdef const int32_t[::1] ind_view
        cdef const int64_t[::1] ptr_view
        cdef const double[::1] norm_view
        if sp.issparse(X):
            if X.format != "csr":
                raise TypeError(f"RowSource needs a CSR matrix, got format {X.format!r}")
            if X.dtype != np.float64:
                raise TypeError(f"RowSource needs float64 values, got {X.dtype}")
            if not X.has_canonical_format:
                raise ValueError("RowSource needs canonical CSR (sorted indices, no duplicates)")
            n, d = X.shape
            if d > INT32_MAX:
                raise ValueError(f"{d} features exceed the int32 feature-index range")
            data = np.ascontiguousarray(X.data)
            indices = np.ascontiguousarray(X.indices, dtype=np.int32)
            indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
            data_view = data
            ind_view = indices
            ptr_view = indptr
            self.data = &data_view[0] if data.shape[0] > 0 else NULL
            self.indices = &ind_view[0] if indices.shape[0] > 0 else NULL
            self.indptr = &ptr_view[0]
            self.dense = False
        else:
            if not isinstance(X, np.ndarray) or X.ndim != 2:
                raise TypeError("RowSource needs a 2-D ndarray or a CSR matrix")
            if X.dtype != np.float64 or not X.flags.c_contiguous:
                raise TypeError("RowSource needs a C-contiguous float64 array")
            n, d = X.shape
            if d > INT32_MAX:
                raise ValueError(f"{d} features exceed the int32 feature-index range")
            data = X
            indices = np.arange(d, dtype=np.int32)
            indptr = None
            dense_view = X
            ind_view = indices
            self.data = &dense_view[0, 0] if n > 0 and d > 0 else NULL
            self.indices = &ind_view[0] if d > 0 else NULL
            self.indptr = NULL
            self.dense = True
        self.n_rows = n
        self.n_features = d
        norms = np.empty(n, dtype=np.float64)
        self._fill_sqnorms(norms)
        norm_view = norms
        self.sqnorms = &norm_view[0] if n > 0 else NULL
        # keep every array the raw pointers refer to alive
        self._refs = (X, data, indices, indptr, norms)

    cdef void _fill_sqnorms(self, double[::1] out):
        # one sequential sum per row, in index order: dense rows only add exact
        # zeros, so dense and CSR input give bit-identical norms
        cdef const double* vals
        cdef const int32_t* ind
        cdef Py_ssize_t i, k, nnz
        cdef double s
        with nogil:
            for i in range(self.n_rows):
                nnz = self.row(i, &vals, &ind)
                s = 0.0
                for k in range(nnz):
                    s += vals[k] * vals[k]
                out[i] = s

    cdef Py_ssize_t row(self, Py_ssize_t i, const double** vals,
                        const int32_t** ind) noexcept nogil:
        """Point ``vals``/``ind`` at row ``i`` and return its number of entries."""
        cdef int64_t start
        if self.dense:
            vals[0] = self.data + i * self.n_features
            ind[0] = self.indices
            return self.n_features
        start = self.indptr[i]
        vals[0] = self.data + start
        ind[0] = self.indices + start
        return <Py_ssize_t>(self.indptr[i + 1] - start)

    cdef double sqnorm(self, Py_ssize_t i) noexcept nogil:
        """Squared Euclidean norm of row ``i`` (cached)."""
        return self.sqnorms[i]

    def max_sqnorm(self):
        """Largest squared row norm (0.0 for no rows)."""
        cdef Py_ssize_t i
        cdef double s = 0.0
        for i in range(self.n_rows):
            if self.sqnorms[i] > s:
                s = self.sqnorms[i]
        return s

    def get_row(self, Py_ssize_t i):
        """Return ``(indices, values)`` of row ``i`` as new arrays (for tests)."""
        cdef const double* vals
        cdef const int32_t* ind
        cdef Py_ssize_t k, nnz
        if not 0 <= i < self.n_rows:
            raise IndexError(f"row {i} out of range for {self.n_rows} rows")
        nnz = self.row(i, &vals, &ind)
        out_ind = np.empty(nnz, dtype=np.int32)
        out_val = np.empty(nnz, dtype=np.float64)
        for k in range(nnz):
            out_ind[k] = ind[k]
            out_val[k] = vals[k]
        return out_ind, out_val

    def get_sqnorm(self, Py_ssize_t i):
        """Cached squared norm of row ``i`` (for tests)."""
        if not 0 <= i < self.n_rows:
            raise IndexError(f"row {i} out of range for {self.n_rows} rows")
        return self.sqnorms[i]
