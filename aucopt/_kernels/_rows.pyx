# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Row source over dense and CSR matrices.

Every kernel reads training rows through :class:`RowSource`, so one inner loop
serves dense and sparse input alike:

* a C-contiguous float64 ``(n, d)`` array gives row ``i`` as its ``d`` values and
  the shared feature-index array ``0 .. d-1``;
* a CSR matrix gives row ``i`` as its stored values and column indices.

``RowSource`` is the gate between user data and kernels that run without bounds
checks, so it trusts nothing about a CSR matrix: in one pass over the structure
(fused with the row norms) it checks that ``indptr`` starts at 0, never decreases
and ends within the index and value arrays, and that every column index lies in
``[0, n_features)`` and increases strictly within its row (canonical form: sorted,
no duplicates). A matrix outside these rules raises ``ValueError`` naming the
problem (:class:`NotCanonical`, a ``ValueError``, for sorted-ness and duplicates,
which :func:`aucopt.validation.row_source` repairs on a copy).

Column indices are held as int32 (a weight vector of 2**31 float64 entries would
need 16 GiB, so no trainable model has more features); int64 CSR indices are
narrowed in the same pass. Row pointers are held as int64, so matrices with more
than 2**31 stored values work. Canonical rows make dense and CSR input give
bit-identical dot products (the extra zeros of a dense row add exact zeros).

Squared row norms (summed in index order, so dense and CSR rows give identical
values) are computed in the same pass for kernels that need ``||x||^2``.

Validation makes that pass itself (:func:`check_rows`: the structure rules, every
value finite, the norms) and hands its result (:class:`Checked`) to the row source
of the same matrix, which then reads nothing again: one pass over the data per
``fit``, no copy.

:meth:`RowSource.take` gives a view that hands out the rows in another order
(a shuffled stream) without copying the matrix: row ``k`` of the view is row
``order[k]`` of the source.
"""
import weakref

import numpy as np
import scipy.sparse as sp

from libc.math cimport isfinite
from libc.stdint cimport int32_t, int64_t

INT32_MAX = 2147483647
_NO_INDICES = np.empty(0, dtype=np.int32)
_NO_POINTERS = np.empty(0, dtype=np.int64)


class NotCanonical(ValueError):
    """CSR rows whose column indices are unsorted or repeated (repairable)."""


ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused ptr_t:
    int32_t
    int64_t


cdef int _scan_csr(const ptr_t[::1] indptr, const index_t[::1] indices,
                   int64_t n_features, const double[::1] data, int32_t[::1] out_ind,
                   int64_t[::1] out_ptr, double[::1] norms, bint write_ind, bint write_ptr,
                   bint with_norms, int64_t* where, bint* nonfinite) noexcept nogil:
    """Check a CSR structure, narrow its indices to int32 (``write_ind``), widen its
    pointers to int64 (``write_ptr``) and sum row norms. Returns 0, or the failing
    rule (1 indptr start, 2 decreasing indptr, 3 indptr beyond the arrays, 4 index
    out of range, 5 not canonical) with the offending row in ``where``; with
    ``with_norms``, ``nonfinite`` tells whether a row's squared norm is NaN or
    infinite (a non-finite value, or an overflow), and the norms are stored when
    ``norms`` has a row's room."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, i
    cdef int64_t k, start, stop, prev, idx
    cdef int64_t size = indices.shape[0]
    cdef double s
    cdef int status = 0
    if indptr[0] != 0:
        where[0] = 0
        return 1
    if write_ptr:
        out_ptr[0] = 0
    for i in range(n):
        start = indptr[i]
        stop = indptr[i + 1]
        if stop < start:
            where[0] = i
            return 2
        if stop > size:
            where[0] = i
            return 3
        if write_ptr:
            out_ptr[i + 1] = stop
        prev = -1
        s = 0.0
        for k in range(start, stop):
            idx = indices[k]
            if idx < 0 or idx >= n_features:
                where[0] = i
                return 4
            if idx <= prev and status == 0:
                where[0] = i
                status = 5
            prev = idx
            if write_ind:
                out_ind[k] = <int32_t>idx
            if with_norms:
                s += data[k] * data[k]
        if with_norms:
            if norms.shape[0] > i:
                norms[i] = s
            if not isfinite(s):
                nonfinite[0] = True
    return status


_CSR_ERRORS = {
    1: "indptr[0] is {value}, not 0",
    2: "indptr decreases at row {row}",
    3: "indptr of row {row} points past the end of indices/data",
    4: "a column index of row {row} is outside [0, n_features)",
}


def _index_array(a):
    """An index array as int32 or int64, copied only when it is neither (or strided)."""
    if a.dtype == np.int32 or a.dtype == np.int64:
        return np.ascontiguousarray(a)
    small = a.dtype.itemsize < 4 or (a.dtype.kind == "i" and a.dtype.itemsize == 4)
    return np.ascontiguousarray(a, dtype=np.int32 if small else np.int64)


def _csr_index_arrays(X):
    """``(indptr, indices)`` of a CSR matrix, each as int32 or int64 (no copy when it
    already is: the scan reads both widths)."""
    n = X.shape[0]
    indptr = np.asarray(X.indptr)
    indices = np.asarray(X.indices)
    if indptr.ndim != 1 or indptr.shape[0] != n + 1:
        raise ValueError(f"malformed CSR matrix: indptr has {indptr.size} entries, "
                         f"expected n_rows + 1 = {n + 1}")
    if indptr.dtype.kind not in "iu" or indices.dtype.kind not in "iu" or indices.ndim != 1:
        raise TypeError("CSR indices and indptr must be 1-D integer arrays")
    return _index_array(indptr), _index_array(indices)


cdef int _scan(indptr, indices, Py_ssize_t n_features, data, out_ind, out_ptr, norms,
               bint write_ind, bint write_ptr, bint with_norms) except -1:
    """The CSR scan of this module's entry points (not one itself): checks, and the
    outputs the flags ask for. Returns whether a squared row norm is not finite."""
    cdef int64_t where = 0
    cdef bint nonfinite = False
    cdef int status
    cdef const double[::1] data_view = data
    cdef int32_t[::1] ind_view = out_ind
    cdef int64_t[::1] ptr_view = out_ptr
    cdef double[::1] norm_view = norms
    if indptr.dtype == np.int32 and indices.dtype == np.int32:
        status = _scan_csr[int32_t, int32_t](indptr, indices, n_features, data_view,
                                             ind_view, ptr_view, norm_view, write_ind,
                                             write_ptr, with_norms, &where, &nonfinite)
    elif indptr.dtype == np.int32:
        status = _scan_csr[int32_t, int64_t](indptr, indices, n_features, data_view,
                                             ind_view, ptr_view, norm_view, write_ind,
                                             write_ptr, with_norms, &where, &nonfinite)
    elif indices.dtype == np.int32:
        status = _scan_csr[int64_t, int32_t](indptr, indices, n_features, data_view,
                                             ind_view, ptr_view, norm_view, write_ind,
                                             write_ptr, with_norms, &where, &nonfinite)
    else:
        status = _scan_csr[int64_t, int64_t](indptr, indices, n_features, data_view,
                                             ind_view, ptr_view, norm_view, write_ind,
                                             write_ptr, with_norms, &where, &nonfinite)
    if status == 5:
        raise NotCanonical(f"CSR row {where} has unsorted or repeated column indices; "
                           "call X.sum_duplicates() (aucopt does it on a copy during "
                           "validation)")
    if status:
        raise ValueError("malformed CSR matrix: " + _CSR_ERRORS[status].format(
            row=where, value=indptr[0]) + "; rebuild it with "
            "scipy.sparse.csr_matrix((data, indices, indptr), shape=...)")
    return nonfinite


def csr_status(X):
    """Check the structure of a float64 CSR matrix without copying it.

    Returns True when it is canonical (sorted, duplicate-free indices), False when
    only the order or duplicates are off (repairable with ``sum_duplicates``);
    raises ``ValueError`` for a structure no kernel may read (bad ``indptr``,
    column index outside ``[0, n_features)``).
    """
    indptr, indices = _csr_index_arrays(X)
    empty_i = np.empty(0, dtype=np.int32)
    empty_p = np.empty(0, dtype=np.int64)
    try:
        _scan(indptr, indices, X.shape[1], np.empty(0), empty_i, empty_p, np.empty(0),
              False, False, False)
    except NotCanonical:
        return False
    return True


cdef class Checked:
    """What :func:`check_rows` found in one pass over a matrix: whether every value
    is finite, its squared row norms, and weak references to the matrix and the
    arrays the pass read. :class:`RowSource` given a ``Checked`` that
    :meth:`matches` its matrix skips its own scan; a ``Checked`` is made only by
    :func:`check_rows`."""
    cdef object _refs
    cdef tuple _shape
    cdef readonly object sqnorms
    cdef readonly bint finite

    def matches(self, X):
        """Whether ``X`` is the matrix that was checked, holding the same arrays."""
        if self._refs[0]() is not X or tuple(X.shape) != self._shape:
            return False
        if len(self._refs) == 1:
            return True
        return (self._refs[1]() is X.indptr and self._refs[2]() is X.indices
                and self._refs[3]() is X.data)


cdef Checked _checked(X, arrays, norms, bint finite):
    cdef Checked c = Checked.__new__(Checked)
    c._refs = tuple(weakref.ref(a) for a in (X,) + arrays)
    c._shape = tuple(X.shape)
    c.sqnorms = norms
    c.finite = finite
    return c


def check_rows(X, bint norms=True):
    """One pass over a C-contiguous float64 array or a float64 CSR matrix: for CSR
    the structure rules of :class:`RowSource` (``ValueError``, :class:`NotCanonical`
    for unsorted or repeated indices), and for both the squared row norms and
    whether every value is finite (the norms are finite unless a value is not or a
    square overflows; only then are the values read again). Returns a
    :class:`Checked`, with the norms if ``norms`` (else ``sqnorms`` is None and the
    pass allocates nothing); nothing is copied (int64 indices are read as they
    are)."""
    cdef const double[:, ::1] dense_view
    cdef double[::1] norm_view
    cdef Py_ssize_t i, k, n, d
    cdef double s
    cdef bint nonfinite = False
    n, d = X.shape
    sq = np.empty(n if norms else 0, dtype=np.float64)
    if sp.issparse(X):
        if X.format != "csr" or X.dtype != np.float64:
            raise TypeError("check_rows needs a float64 CSR matrix or ndarray")
        indptr, indices = _csr_index_arrays(X)
        data = np.ascontiguousarray(X.data)  # a strided copy never matches: rescanned
        if data.ndim != 1 or data.shape[0] != indices.shape[0]:
            raise ValueError(f"malformed CSR matrix: {data.size} values for "
                             f"{indices.shape[0]} column indices")
        nonfinite = _scan(indptr, indices, d, data, _NO_INDICES, _NO_POINTERS, sq,
                          False, False, True)
        arrays = (indptr, indices, data)
    else:
        if X.dtype != np.float64 or X.ndim != 2 or not X.flags.c_contiguous:
            raise TypeError("check_rows needs a C-contiguous float64 array")
        dense_view = X
        norm_view = sq
        with nogil:
            for i in range(n):
                s = 0.0
                for k in range(d):
                    s += dense_view[i, k] * dense_view[i, k]
                if norms:
                    norm_view[i] = s
                if not isfinite(s):
                    nonfinite = True
        data = X
        arrays = ()
    return _checked(X, arrays, sq if norms else None,
                    not nonfinite or bool(np.isfinite(data).all()))


cdef class RowSource:
    """Rows of a dense array or CSR matrix for Cython kernels.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features) or scipy.sparse CSR matrix
        Dense input must be C-contiguous float64; CSR input must have float64
        values (its structure is checked here, see the module docstring).
    norms : bool, default=True
        Compute the squared row norms (kernels that only score rows skip them).
    checked : Checked or None
        The result of :func:`check_rows` on ``X``: when it :meth:`~Checked.matches`
        ``X`` (same matrix, same arrays, int32 column indices), its norms are used
        and the structure is not scanned again.

    Raises
    ------
    ValueError
        For a malformed CSR structure (:class:`NotCanonical` for unsorted or
        repeated indices).
    TypeError
        For anything but a C-contiguous float64 array or a float64 CSR matrix.
    """

    def __cinit__(self, X, bint norms=True, Checked checked=None):
        cdef const double[:, ::1] dense_view
        cdef const double[::1] data_view
        cdef const int32_t[::1] ind_view
        cdef const int64_t[::1] ptr_view
        cdef double[::1] norm_view
        cdef const double* vals
        cdef const int32_t* ind
        cdef Py_ssize_t i, k, n, d
        cdef double s
        if sp.issparse(X):
            if X.format != "csr":
                raise TypeError(f"RowSource needs a CSR matrix, got format {X.format!r}")
            if X.dtype != np.float64:
                raise TypeError(f"RowSource needs float64 values, got {X.dtype}")
            n, d = X.shape
            if d > INT32_MAX:
                raise ValueError(f"{d} features exceed the int32 feature-index range; "
                                 "no aucopt model can have more than 2**31 - 1 features")
            indptr_in, indices_in = _csr_index_arrays(X)
            data = np.ascontiguousarray(X.data)
            if data.ndim != 1 or data.shape[0] != indices_in.shape[0]:
                raise ValueError(f"malformed CSR matrix: {data.size} values for "
                                 f"{indices_in.shape[0]} column indices")
            # int32 indices and int64 pointers are read in place (no copy of the matrix)
            narrow = indices_in.dtype != np.int32
            widen = indptr_in.dtype != np.int64
            indices = np.empty(indices_in.shape[0], dtype=np.int32) if narrow else indices_in
            indptr = np.empty(n + 1, dtype=np.int64) if widen else indptr_in
            if (checked is not None and not narrow and checked.matches(X)
                    and (checked.sqnorms is not None or not norms)):
                if widen:
                    indptr[:] = indptr_in
                normarr = checked.sqnorms if norms else np.empty(0, dtype=np.float64)
            else:
                normarr = np.empty(n if norms else 0, dtype=np.float64)
                _scan(indptr_in, indices_in, d, data, indices if narrow else _NO_INDICES,
                      indptr if widen else _NO_POINTERS, normarr, narrow, widen, norms)
            data_view = data
            ind_view = indices
            ptr_view = indptr
            norm_view = normarr
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
            given = (norms and checked is not None and checked.sqnorms is not None
                     and checked.matches(X))
            normarr = checked.sqnorms if given else np.empty(n if norms else 0,
                                                             dtype=np.float64)
            norm_view = normarr
            if norms and not given:
                with nogil:
                    for i in range(n):
                        vals = self.data + i * d
                        s = 0.0
                        for k in range(d):
                            s += vals[k] * vals[k]
                        norm_view[i] = s
        self.n_rows = n
        self.n_features = d
        self.sqnorms = &norm_view[0] if norms and n > 0 else NULL
        self.order = NULL
        # keep every array the raw pointers refer to alive
        self._refs = (X, data, indices, indptr, normarr, None)

    def take(self, order):
        """A view whose row ``k`` is row ``order[k]`` of this source (no copy).

        ``order`` (int64, every entry a row of this source) is checked here.
        """
        cdef RowSource view = RowSource.__new__(RowSource, np.zeros((0, 0)), False)
        cdef const int64_t[::1] ov
        order = np.ascontiguousarray(order, dtype=np.int64)
        if order.ndim != 1:
            raise ValueError("order must be 1-D")
        if self.order != NULL:
            order = np.asarray(self._refs[5])[order]
        if order.size and (order.min() < 0 or order.max() >= self.base_rows()):
            raise IndexError(f"order names rows outside 0..{self.base_rows() - 1}")
        ov = order
        view.data = self.data
        view.indices = self.indices
        view.indptr = self.indptr
        view.dense = self.dense
        view.sqnorms = self.sqnorms
        view.n_features = self.n_features
        view.n_rows = order.shape[0]
        view.order = &ov[0] if order.shape[0] > 0 else NULL
        view._refs = self._refs[:5] + (order,)
        return view

    def centred(self, double min_share, Py_ssize_t max_values):
        """The rows minus their mean row, as a new dense source (C-contiguous, with
        norms), in this source's row order, or None: when the mean row holds less than
        ``min_share`` of the mean squared row norm (``||mean||^2 / mean ||x||^2``),
        or when the dense copy would hold more than ``max_values`` values. Dense and
        CSR rows of the same values give the same numbers, bit for bit: the column
        means add the rows in order (a CSR row adds its entries; the zeros it skips
        add exact zeros in the dense form), and every entry of the copy is ``x - mean``
        (``0 - mean`` where CSR stores nothing). O(n d)."""
        cdef Py_ssize_t n = self.n_rows, d = self.n_features, i, k, nnz
        cdef const double* vals
        cdef const int32_t* ind
        cdef double total = 0.0, share
        self._require_norms()
        if n == 0 or d == 0 or n * d > max_values:
            return None
        mean = np.zeros(d)
        cdef double[::1] m = mean
        with nogil:
            for i in range(n):
                nnz = row_of(self, i, &vals, &ind)
                for k in range(nnz):
                    m[ind[k]] += vals[k]
                total += sqnorm_of(self, i)
            for k in range(d):
                m[k] /= n
        share = float(np.dot(mean, mean)) / (total / n) if total > 0.0 else 0.0
        if not share >= min_share:
            return None
        out = np.empty((n, d))
        cdef double[:, ::1] o = out
        with nogil:
            for i in range(n):
                for k in range(d):
                    o[i, k] = 0.0 - m[k]
                nnz = row_of(self, i, &vals, &ind)
                for k in range(nnz):
                    o[i, ind[k]] = vals[k] - m[ind[k]]
        return RowSource(out, norms=True)

    def base_rows(self):
        """Rows of the underlying matrix (``n_rows`` unless this is a ``take`` view)."""
        return self._refs[0].shape[0]

    @property
    def matrix(self):
        """The validated matrix this source views (``ValueError`` for a ``take``
        view, whose rows are not that matrix's): for code that works on whole
        matrices, such as the feature maps, given rows validated once."""
        if self.order != NULL:
            raise ValueError("a take() view of a RowSource has no matrix of its own")
        return self._refs[0]

    cdef Py_ssize_t row(self, Py_ssize_t i, const double** vals,
                        const int32_t** ind) noexcept nogil:
        """Point ``vals``/``ind`` at row ``i`` and return its number of entries."""
        return row_of(self, i, vals, ind)

    cdef double sqnorm(self, Py_ssize_t i) noexcept nogil:
        """Squared Euclidean norm of row ``i`` (cached; needs ``norms=True``)."""
        return sqnorm_of(self, i)

    @property
    def nnz(self):
        """Entries the rows hand out (``n_rows * n_features`` for dense rows)."""
        cdef Py_ssize_t i
        cdef int64_t total = 0
        if self.dense:
            return self.n_rows * self.n_features
        if self.order == NULL:
            return int(self.indptr[self.n_rows] - self.indptr[0]) if self.n_rows else 0
        for i in range(self.n_rows):
            total += self.indptr[self.order[i] + 1] - self.indptr[self.order[i]]
        return int(total)

    @property
    def has_norms(self):
        """Whether squared row norms were computed."""
        return self.sqnorms != NULL or self.n_rows == 0

    def _require_norms(self):
        if not self.has_norms:
            raise ValueError("this RowSource was built without row norms")

    def norms(self):
        """Squared row norms (in this view's order) as a new array."""
        self._require_norms()
        sq = np.asarray(self._refs[4])
        return sq[self._refs[5]] if self._refs[5] is not None else sq.copy()

    def max_sqnorm(self):
        """Largest squared row norm (0.0 for no rows)."""
        self._require_norms()
        return float(np.max(self.norms())) if self.n_rows else 0.0

    def check_finite_norms(self):
        """Raise if a row's squared norm overflows (values beyond ~1e154)."""
        self._require_norms()
        sq = self.norms()
        if self.n_rows and not np.isfinite(sq).all():
            bad = int(np.flatnonzero(~np.isfinite(sq))[0])
            raise ValueError(f"row {bad} has values so large that ||x||^2 overflows "
                             "float64 (|x| beyond ~1e154); scale the features, e.g. "
                             "with aucopt.datasets.Scaler")

    def checked(self, Py_ssize_t i):
        """``i`` if it is a row of this source, else ``IndexError`` (Python callers)."""
        if not 0 <= i < self.n_rows:
            raise IndexError(f"row {i} out of range for {self.n_rows} rows")
        return i

    def get_row(self, Py_ssize_t i):
        """Return ``(indices, values)`` of row ``i`` as new arrays (for tests)."""
        cdef const double* vals
        cdef const int32_t* ind
        cdef Py_ssize_t k, nnz = self.row(self.checked(i), &vals, &ind)
        out_ind = np.empty(nnz, dtype=np.int32)
        out_val = np.empty(nnz, dtype=np.float64)
        for k in range(nnz):
            out_ind[k] = ind[k]
            out_val[k] = vals[k]
        return out_ind, out_val

    def get_sqnorm(self, Py_ssize_t i):
        """Cached squared norm of row ``i`` (for tests)."""
        self._require_norms()
        return self.sqnorm(self.checked(i))
