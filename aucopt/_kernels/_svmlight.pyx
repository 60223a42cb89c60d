# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Streaming svmlight / LIBSVM text parser.

The caller (``aucopt.datasets._svmlight``) reads the file in blocks that end
at a line end (or, for a line longer than its buffer, partial blocks whose
complete tokens the parser takes, keeping the row open until the line ends)
and feeds them to a :class:`Parser`, which appends the rows to
growable CSR buffers allocated with C ``realloc`` (capacity not yet written
costs no resident memory, and with glibc a large buffer grows by remapping
its pages rather than copying them). :meth:`Parser.take` hands the buffers
over to numpy arrays of the exact size without copying. The hot loop walks the raw
bytes with a pointer; no Python object is created per line or per token.

Numbers are converted with an exact fast path (Clinger 1990: an integer
mantissa m <= 2**53 scaled by 10**e with |e| <= 22 is a single correctly
rounded IEEE operation) and otherwise with ``PyOS_string_to_double``, the
locale-independent, correctly rounded routine behind Python's ``float()``.
Both give results bit-identical to ``float(token)``.

Errors are not raised here: the parser stops, records an error code, the
1-based line number of the whole file and the offending token, and the
Python wrapper builds the message.
"""
from cython.view cimport array as cvarray
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove
from cpython.ref cimport PyObject

from aucopt._kernels._interrupt cimport poll

import numpy as np


cdef extern from "Python.h":
    double PyOS_string_to_double(const char *s, char **endptr,
                                 PyObject *overflow_exception)
    PyObject *PyErr_Occurred()
    void PyErr_Clear()
    const Py_ssize_t PY_SSIZE_T_MAX


ctypedef fused index_t:
    int32_t
    int64_t


# Error codes (mirrored by name in aucopt/datasets/_svmlight.py).
cdef enum:
    OK = 0
    E_EXPECTED_PAIR = 1
    E_BAD_INDEX = 2
    E_NEG_INDEX = 3
    E_BAD_VALUE = 4
    E_BAD_LABEL = 5
    E_MISSING_LABEL = 6
    E_MULTILABEL = 7
    E_DUPLICATE = 8
    E_INDEX_LIMIT = 9
    E_NEED_INT64 = 10  # internal: the row is re-parsed with 64-bit indices
    E_HUGE_INDEX = 11
    E_ZERO_INDEX = 12

ERROR_CODES = {
    "OK": OK,
    "EXPECTED_PAIR": E_EXPECTED_PAIR,
    "BAD_INDEX": E_BAD_INDEX,
    "NEG_INDEX": E_NEG_INDEX,
    "BAD_VALUE": E_BAD_VALUE,
    "BAD_LABEL": E_BAD_LABEL,
    "MISSING_LABEL": E_MISSING_LABEL,
    "MULTILABEL": E_MULTILABEL,
    "DUPLICATE": E_DUPLICATE,
    "INDEX_LIMIT": E_INDEX_LIMIT,
    "HUGE_INDEX": E_HUGE_INDEX,
    "ZERO_INDEX": E_ZERO_INDEX,
}

cdef double[23] _POW10 = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]

# Largest raw (as written) feature index accepted: 2**62 - 1 keeps
# n_features = index + 1 and every later shift far from int64 overflow.
cdef int64_t _MAX_INDEX = ((<int64_t>1) << 62) - 1
cdef int64_t _MAX_INDEX_DIV10 = _MAX_INDEX // 10
cdef int64_t _MAX_INDEX_MOD10 = _MAX_INDEX % 10
MAX_INDEX = _MAX_INDEX
cdef int64_t _INT32_MAX = 2147483647
cdef uint64_t _TWO53 = (<uint64_t>1) << 53


# Byte classes: 1 = blank (space, \t, \v, \f, \r), 2 = newline, 4 = '#'.
# A token ends at any of them.
cdef unsigned char _CLASS[256]
_CLASS[:] = [0] * 256
for _c in (32, 9, 11, 12, 13):
    _CLASS[_c] = 1
_CLASS[10] = 2
_CLASS[35] = 4


cdef inline bint _is_ws(unsigned char c) noexcept nogil:
    # blanks; '\n' ends a line and is handled separately
    return _CLASS[c] == 1


cdef inline bint _is_term(unsigned char c) noexcept nogil:
    # a token ends at a blank, a newline or the start of a comment
    return _CLASS[c] != 0


cdef inline const unsigned char* _line_end(const unsigned char *p,
                                          const unsigned char *end) noexcept nogil:
    """The newline at or after ``p``, or ``end`` (a comment runs to it)."""
    while p < end and p[0] != 10:
        p += 1
    return p


cdef inline const unsigned char* _mantissa_digits(
        const unsigned char *p, const unsigned char *end, uint64_t *m, int *nd,
        int *n_read) noexcept nogil:
    """Append the decimal digits at ``p`` to the mantissa ``m``.

    ``nd`` counts significant digits (leading zeros skipped), ``n_read`` the
    digits read. Returns the first non-digit, or NULL when more than 19
    significant digits would overflow the exact fast path.
    """
    cdef unsigned int d
    n_read[0] = 0
    while p < end:
        d = p[0] - 48
        if d > 9:
            break
        n_read[0] += 1
        if m[0] != 0 or d != 0:
            if nd[0] >= 19:
                return NULL
            m[0] = m[0] * 10 + d
            nd[0] += 1
        p += 1
    return p


cdef inline bint _fast_double(const unsigned char *p, const unsigned char *end,
                              double *out) noexcept nogil:
    """Exact fast path; returns False when the slow path must decide."""
    cdef bint neg = False
    cdef bint any_digit = False
    cdef uint64_t m = 0
    cdef int nd = 0
    cdef int n_read = 0
    cdef int e10 = 0
    cdef int ex = 0
    cdef bint eneg = False
    cdef unsigned int d
    cdef double r
    if p < end and (p[0] == 43 or p[0] == 45):  # '+' '-'
        neg = p[0] == 45
        p += 1
    p = _mantissa_digits(p, end, &m, &nd, &n_read)
    if p == NULL:
        return False
    any_digit = n_read > 0
    if p < end and p[0] == 46:  # '.'
        p = _mantissa_digits(p + 1, end, &m, &nd, &n_read)
        if p == NULL:
            return False
        any_digit = any_digit or n_read > 0
        e10 = -n_read
    if not any_digit:
        return False
    if p < end and (p[0] == 101 or p[0] == 69):  # 'e' 'E'
        p += 1
        if p < end and (p[0] == 43 or p[0] == 45):
            eneg = p[0] == 45
            p += 1
        if p >= end:
            return False
        while p < end:
            d = p[0] - 48
            if d > 9:
                return False
            if ex > 100000:
                return False
            ex = ex * 10 + d
            p += 1
        e10 += -ex if eneg else ex
    if p != end:
        return False
    if m == 0:
        out[0] = -0.0 if neg else 0.0
        return True
    if m > _TWO53:
        return False
    r = <double>m
    if e10 == 0:
        pass
    elif 0 < e10 <= 22:
        r = r * _POW10[e10]
    elif -22 <= e10 < 0:
        r = r / _POW10[-e10]
    else:
        return False
    out[0] = -r if neg else r
    return True


cdef bint _slow_double(const unsigned char *p, const unsigned char *end,
                       double *out) noexcept:
    """Python's own correctly rounded conversion (``float()`` semantics)."""
    cdef Py_ssize_t n = end - p
    cdef char local[128]
    cdef char *s = local
    cdef char *endptr = NULL
    cdef double r
    cdef bint ok
    if n <= 0:
        return False
    if n >= 128:
        s = <char *> malloc(n + 1)
        if s == NULL:
            return False
    memcpy(s, p, n)
    s[n] = 0
    r = PyOS_string_to_double(s, &endptr, NULL)
    if PyErr_Occurred() != NULL:
        PyErr_Clear()
        ok = False
    else:
        ok = endptr == s + n
    if s != local:
        free(s)
    if ok:
        out[0] = r
    return ok


cdef inline bint _parse_double(const unsigned char *p, const unsigned char *end,
                               double *out) noexcept:
    if _fast_double(p, end, out):
        return True
    return _slow_double(p, end, out)


cdef void _sort_row(index_t *idx, double *val, Py_ssize_t n) noexcept nogil:
    """Sort (idx, val) pairs by idx: insertion sort, heapsort for long rows."""
    cdef Py_ssize_t i, j, start, end
    cdef index_t ki
    cdef double kv
    if n < 2:
        return
    if n <= 24:
        for i in range(1, n):
            ki = idx[i]
            kv = val[i]
            j = i - 1
            while j >= 0 and idx[j] > ki:
                idx[j + 1] = idx[j]
                val[j + 1] = val[j]
                j -= 1
            idx[j + 1] = ki
            val[j + 1] = kv
        return
    # heapsort (max-heap), O(n log n) worst case
    start = (n - 2) // 2
    while True:
        _sift_down(idx, val, start, n)
        if start == 0:
            break
        start -= 1
    end = n - 1
    while end > 0:
        idx[0], idx[end] = idx[end], idx[0]
        val[0], val[end] = val[end], val[0]
        _sift_down(idx, val, 0, end)
        end -= 1


cdef inline void _sift_down(index_t *idx, double *val, Py_ssize_t root,
                            Py_ssize_t n) noexcept nogil:
    """Restore the max-heap order of ``idx[0..n)`` below ``root`` (pairs move together)."""
    cdef Py_ssize_t child
    while 2 * root + 1 < n:
        child = 2 * root + 1
        if child + 1 < n and idx[child] < idx[child + 1]:
            child += 1
        if idx[root] < idx[child]:
            idx[root], idx[child] = idx[child], idx[root]
            val[root], val[child] = val[child], val[root]
            root = child
        else:
            break


cdef int _resize(void **p, Py_ssize_t n, Py_ssize_t itemsize) except -1:
    """``realloc`` ``p[0]`` to ``n`` items (at least one), raising MemoryError on failure."""
    cdef void *q
    if n < 1:
        n = 1
    if n > PY_SSIZE_T_MAX // itemsize:
        raise MemoryError(f"cannot allocate {n} items of {itemsize} bytes")
    q = realloc(p[0], <size_t>(n * itemsize))
    if q == NULL:
        raise MemoryError(f"cannot allocate {n * itemsize} bytes")
    p[0] = q
    return 0


cdef object _hand_over(void **p, Py_ssize_t n, object dtype):
    """numpy array of the first ``n`` items of ``p[0]``, which it then owns (``p[0]`` becomes NULL)."""
    cdef Py_ssize_t itemsize = np.dtype(dtype).itemsize
    cdef cvarray owner
    if n == 0:
        free(p[0])
        p[0] = NULL
        return np.empty(0, dtype=dtype)
    _resize(p, n, itemsize)  # shrink to the exact size: in place, no copy
    owner = cvarray(shape=(n * itemsize,), itemsize=1, format="B", allocate_buffer=False)
    owner.data = <char *> p[0]
    owner.callback_free_data = free
    p[0] = NULL
    return np.frombuffer(owner, dtype=dtype)


cdef class Parser:
    """Append svmlight rows to growable CSR buffers, one block of lines at a time.

    Parameters
    ----------
    limit : int
        Largest raw (as written) feature index accepted; a larger one stops
        the parser with ``INDEX_LIMIT``.
    soft_limit : int
        Larger indices are accepted but the first one is remembered in
        ``soft_line`` / ``soft_value`` (a limit that depends on whether the
        file turns out to be zero-based).
    reject_zero : bool
        Index 0 stops the parser with ``ZERO_INDEX`` (one-based files).
    wide : bool
        Store 64-bit indices from the start; otherwise 32-bit ones are used
        and widened in place when an index or the entry count needs it.
    store : bool
        ``False`` drops the rows after each :meth:`feed` and only keeps the
        statistics (a scan of the file in bounded memory).
    first_rows, first_nnz : int
        First capacity of the buffers, in rows and stored entries; they grow
        by 1.5x when full.

    Attributes
    ----------
    rows, nnz : int
        Rows and stored entries held since the last :meth:`take`.
    line : int
        1-based number of the line the parser is on.
    max_index : int
        Largest raw index seen in the whole file so far, -1 when none.
    first_zero_line : int
        Line of the first index 0, 0 when none.
    soft_line, soft_value : int
        Line and value of the first index above ``soft_limit`` (0, 0 when none).
    code, err_line, err_token, err_value
        The error that stopped the parser (``code`` 0 when none): its line,
        the offending token (bytes) and, for range and duplicate errors, the
        index.
    """
    cdef double *labels
    cdef void *indptr
    cdef void *indices
    cdef double *data
    cdef Py_ssize_t cap_rows  # labels hold cap_rows items, indptr cap_rows + 1
    cdef Py_ssize_t cap_nnz
    cdef readonly Py_ssize_t rows
    cdef readonly Py_ssize_t nnz
    cdef readonly bint wide
    cdef bint start_wide
    cdef bint store
    cdef bint reject_zero
    cdef Py_ssize_t first_rows
    cdef Py_ssize_t first_nnz
    cdef int64_t limit
    cdef int64_t soft_limit
    cdef readonly Py_ssize_t line
    cdef readonly int64_t max_index
    cdef readonly Py_ssize_t first_zero_line
    cdef readonly Py_ssize_t soft_line
    cdef readonly int64_t soft_value
    cdef readonly int code
    cdef readonly Py_ssize_t err_line
    cdef readonly bytes err_token
    cdef readonly int64_t err_value
    # a row that goes on in the next block (partial blocks, or widening to int64):
    # its label is stored at labels[rows], its entries from open_start to nnz
    cdef readonly bint open_row
    cdef Py_ssize_t open_start
    cdef int64_t open_prev
    cdef bint open_unsorted
    cdef bint in_comment  # a partial block ended inside a comment

    def __cinit__(self, int64_t limit, int64_t soft_limit, bint reject_zero=False,
                  bint wide=False, bint store=True, Py_ssize_t first_rows=1024,
                  Py_ssize_t first_nnz=16384):
        self.limit = limit
        self.soft_limit = soft_limit
        self.reject_zero = reject_zero
        self.wide = self.start_wide = wide
        self.store = store
        self.line = 1
        self.max_index = -1
        self.err_token = b""
        self.first_rows = max(first_rows, 1)
        self.first_nnz = max(first_nnz, 1)
        self._reserve(self.first_rows, self.first_nnz)

    def __dealloc__(self):
        free(self.labels)
        free(self.indptr)
        free(self.indices)
        free(self.data)

    cdef int _reserve(self, Py_ssize_t rows, Py_ssize_t nnz) except -1:
        """Room for ``rows`` rows and ``nnz`` entries; grows by at least 1.5x."""
        cdef Py_ssize_t isz = 8 if self.wide else 4
        cdef Py_ssize_t cap
        cdef bint first = self.indptr == NULL
        if rows > self.cap_rows or first:
            cap = max(rows, self.cap_rows + self.cap_rows // 2)
            _resize(<void **> &self.labels, cap, 8)
            _resize(&self.indptr, cap + 1, isz)
            self.cap_rows = cap
            if first:
                if self.wide:
                    (<int64_t *> self.indptr)[0] = 0
                else:
                    (<int32_t *> self.indptr)[0] = 0
        if nnz > self.cap_nnz or self.indices == NULL:
            cap = max(nnz, self.cap_nnz + self.cap_nnz // 2)
            _resize(&self.indices, cap, isz)
            _resize(<void **> &self.data, cap, 8)
            self.cap_nnz = cap
        return 0

    cdef int _set_width(self, bint wide) except -1:
        """Convert the stored indices and indptr to 64-bit (``wide``) or 32-bit, in place."""
        cdef Py_ssize_t i
        cdef int32_t *p32
        cdef int64_t *p64
        if wide == self.wide:
            return 0
        if wide:  # grow first, then widen from the end (never overwrites unread items)
            _resize(&self.indices, self.cap_nnz, 8)
            _resize(&self.indptr, self.cap_rows + 1, 8)
            p32, p64 = <int32_t *> self.indices, <int64_t *> self.indices
            for i in range(self.nnz - 1, -1, -1):
                p64[i] = p32[i]
            p32, p64 = <int32_t *> self.indptr, <int64_t *> self.indptr
            for i in range(self.rows, -1, -1):
                p64[i] = p32[i]
        else:  # narrow from the front, then shrink (callers checked the values fit)
            p32, p64 = <int32_t *> self.indices, <int64_t *> self.indices
            for i in range(self.nnz):
                p32[i] = <int32_t> p64[i]
            p32, p64 = <int32_t *> self.indptr, <int64_t *> self.indptr
            for i in range(self.rows + 1):
                p32[i] = <int32_t> p64[i]
            _resize(&self.indices, self.cap_nnz, 4)
            _resize(&self.indptr, self.cap_rows + 1, 4)
        self.wide = wide
        return 0

    def feed(self, const unsigned char[::1] buf, Py_ssize_t pos=0,
             Py_ssize_t max_rows=PY_SSIZE_T_MAX, bint partial=False):
        """Parse the lines of ``buf[pos:]`` until the parser holds ``max_rows`` rows.

        ``buf`` ends at a line end or at the end of the file (the last line then
        needs no newline), or, with ``partial``, anywhere: the middle of a line
        too long for the caller's buffer. The complete tokens of that line are
        parsed (its row stays open, ``open_row``, and a comment is skipped up to
        its newline in the next blocks); the rest, from the start of the token
        the block cuts, is to be fed again, followed by more of the line.
        Returns the position where parsing stopped: ``len(buf)`` once the block
        is done, the start of a cut token (``partial``), or the start of the
        rest, to be fed after :meth:`take`. On a syntax error ``code`` is set
        and the parser must be dropped.
        """
        cdef Py_ssize_t n = buf.shape[0]
        cdef const unsigned char *base = &buf[0] if n else <const unsigned char *> b""
        if self.code != OK:
            raise RuntimeError("Parser.feed after an error")
        if pos < 0 or pos > n:
            raise ValueError(f"pos={pos} is outside the block of {n} bytes")
        if pos == n and (partial or not self.open_row):
            return n
        while True:
            if self.wide:
                pos = _parse_lines(self, base, pos, n, max_rows, partial, <int64_t *> NULL)
            else:
                pos = _parse_lines(self, base, pos, n, max_rows, partial, <int32_t *> NULL)
            if self.code != E_NEED_INT64:
                break
            self.code = OK
            self._set_width(True)
        if not self.store:
            self._drop_rows()
        return pos

    cdef void _drop_rows(self) noexcept:
        """Forget the finished rows (``store=False``); an open row moves to the front."""
        cdef Py_ssize_t k = self.nnz - self.open_start if self.open_row else 0
        cdef Py_ssize_t isz = 8 if self.wide else 4
        if k:
            memmove(self.indices, <char *> self.indices + self.open_start * isz, k * isz)
            memmove(self.data, self.data + self.open_start, k * 8)
        if self.open_row:
            self.labels[0] = self.labels[self.rows]
            self.open_start = 0
        self.rows = 0
        self.nnz = k

    def take(self, bint wide):
        """The rows held, as exactly sized arrays ``(labels, indptr, indices, data)``.

        The arrays take over the buffers (no copy); indices and indptr are
        int64 when ``wide`` else int32 (the caller checked they fit). The
        parser then starts over with empty buffers; line number and
        statistics carry on.
        """
        cdef object idx_dtype = np.int64 if wide else np.int32
        cdef Py_ssize_t rows = self.rows, nnz = self.nnz
        if self.open_row:
            raise RuntimeError("Parser.take in the middle of a row")
        self._set_width(wide)
        out = (_hand_over(<void **> &self.labels, rows, np.float64),
               _hand_over(&self.indptr, rows + 1, idx_dtype),
               _hand_over(&self.indices, nnz, idx_dtype),
               _hand_over(<void **> &self.data, nnz, np.float64))
        self.rows = self.nnz = self.cap_rows = self.cap_nnz = 0
        self.wide = self.start_wide
        # room for a next chunk a quarter larger than this one: typically one
        # allocation per buffer and chunk, no growth (growing a buffer through
        # the C heap can leave the old copy there, resident)
        self._reserve(max(rows + rows // 4, self.first_rows),
                      max(nnz + nnz // 4, self.first_nnz))
        return out


cdef Py_ssize_t _parse_lines(Parser self, const unsigned char *base, Py_ssize_t pos,
                             Py_ssize_t n, Py_ssize_t max_rows, bint partial,
                             index_t *width) except -1:
    """The hot loop of :meth:`Parser.feed`; returns the stop position.

    ``width`` is a NULL pointer whose type selects the index width stored. A row
    left open by the last call (``open_row``) goes on first.
    """
    cdef const unsigned char *p = base + pos
    cdef const unsigned char *end = base + n
    cdef const unsigned char *row_begin = p
    cdef const unsigned char *ts = p
    cdef const unsigned char *te = p
    cdef const unsigned char *colon
    cdef const unsigned char *q
    cdef Py_ssize_t line = self.line
    cdef Py_ssize_t row = self.rows
    cdef Py_ssize_t nnz = self.nnz
    cdef Py_ssize_t row_start = nnz
    cdef Py_ssize_t k
    cdef double *labels = self.labels
    cdef index_t *indptr = <index_t *> self.indptr
    cdef index_t *indices = <index_t *> self.indices
    cdef double *data = self.data
    cdef Py_ssize_t cap_rows = self.cap_rows
    cdef Py_ssize_t cap_nnz = self.cap_nnz
    cdef int64_t limit = self.limit
    cdef int64_t soft_limit = self.soft_limit
    cdef bint reject_zero = self.reject_zero
    cdef int64_t max_index = self.max_index
    cdef Py_ssize_t first_zero_line = self.first_zero_line
    cdef Py_ssize_t soft_line = self.soft_line
    cdef int64_t soft_value = self.soft_value
    cdef bint narrow = index_t is int32_t
    cdef int64_t idx, prev = -1
    cdef bint unsorted = False
    cdef unsigned int d
    cdef unsigned char c
    cdef double v
    cdef int code = OK
    cdef int64_t err_value = 0
    cdef bint resume = self.open_row  # the row of the last call goes on
    cdef bint open_row = False  # this call stops inside a row

    if self.in_comment:  # the rest of a comment a partial block cut
        p = _line_end(p, end)
        self.in_comment = partial and p >= end
    if resume:
        row_start = self.open_start
        prev = self.open_prev
        unsorted = self.open_unsorted
        self.open_row = False

    while resume or (p < end and row < max_rows):
        if not resume:
            # ---- start of a line: skip blanks, empty and comment-only lines
            c = p[0]
            if _is_ws(c):
                p += 1
                continue
            if c == 10:
                line += 1
                p += 1
                continue
            if c == 35:
                p = _line_end(p, end)
                self.in_comment = partial and p >= end
                continue

            # ---- label token
            row_begin = p
            ts = p
            while p < end and not _is_term(p[0]):
                p += 1
            te = p
            if partial and p >= end:  # the label may go on in the next block
                p = ts
                break
            q = ts
            while q < te:
                if q[0] == 58:  # ':'
                    code = E_MISSING_LABEL
                    break
                if q[0] == 44:  # ','
                    code = E_MULTILABEL
                    break
                q += 1
            if code != OK:
                break
            if row >= cap_rows:
                self._reserve(row + 1, nnz)
                labels = self.labels
                indptr = <index_t *> self.indptr
                cap_rows = self.cap_rows
            if not _parse_double(ts, te, &labels[row]):
                code = E_BAD_LABEL
                break
            row_start = nnz
            prev = -1
            unsorted = False
        resume = False

        # ---- index:value pairs up to the end of the line
        while True:
            while p < end and _is_ws(p[0]):
                p += 1
            if p >= end:
                open_row = partial  # more of the line comes in the next block
                break
            if p[0] == 10:
                break
            if p[0] == 35:
                p = _line_end(p, end)
                self.in_comment = partial and p >= end
                break
            ts = p
            colon = NULL
            while p < end and not _is_term(p[0]):
                if p[0] == 58 and colon == NULL:
                    colon = p
                p += 1
            te = p
            if partial and p >= end:  # the block cuts this token: fed again
                p = ts
                open_row = True
                break
            if colon == NULL:
                code = E_EXPECTED_PAIR
                break
            if colon - ts == 3 and ts[0] == 113 and ts[1] == 105 and ts[2] == 100:
                continue  # 'qid:N' is ignored
            # index: digits only, checked against the maximum before each step
            if colon == ts:
                code = E_BAD_INDEX
                break
            if ts[0] == 45:  # '-'
                code = E_NEG_INDEX
                break
            idx = 0
            q = ts
            while q < colon:
                d = q[0] - 48
                if d > 9:
                    code = E_BAD_INDEX
                    break
                if idx >= _MAX_INDEX_DIV10 and (
                        idx > _MAX_INDEX_DIV10 or d > _MAX_INDEX_MOD10):
                    code = E_HUGE_INDEX
                    break
                idx = idx * 10 + d
                q += 1
            if code != OK:
                break
            if idx > limit:
                code = E_INDEX_LIMIT
                err_value = idx
                break
            if idx == 0 and reject_zero:
                code = E_ZERO_INDEX
                break
            if narrow and (idx > _INT32_MAX or nnz >= _INT32_MAX):
                # the row goes on from this pair once the indices are 64-bit
                code = E_NEED_INT64
                p = ts
                open_row = True
                break
            # value
            if not _parse_double(colon + 1, te, &v):
                code = E_BAD_VALUE
                break
            if idx <= prev:
                if idx == prev:
                    code = E_DUPLICATE
                    err_value = idx
                    break
                unsorted = True
            prev = idx
            if nnz >= cap_nnz:
                self._reserve(row + 1, nnz + 1)
                indices = <index_t *> self.indices
                data = self.data
                cap_nnz = self.cap_nnz
            indices[nnz] = <index_t> idx
            data[nnz] = v
            nnz += 1
            if idx > max_index:
                max_index = idx
            if idx == 0 and first_zero_line == 0:
                first_zero_line = line
            if idx > soft_limit and soft_line == 0:
                soft_line = line
                soft_value = idx
        if code != OK or open_row:
            break

        if unsorted:
            _sort_row(&indices[row_start], &data[row_start], nnz - row_start)
            for k in range(row_start + 1, nnz):
                if indices[k] == indices[k - 1]:
                    code = E_DUPLICATE
                    err_value = indices[k]
                    break
            if code != OK:
                ts = te = row_begin
                break
        row += 1
        indptr[row] = <index_t> nnz
        # the '\n' (if any) is consumed at the top of the loop

    if open_row:
        self.open_row = True
        self.open_start = row_start
        self.open_prev = prev
        self.open_unsorted = unsorted
    self.line = line
    self.max_index = max_index
    self.first_zero_line = first_zero_line
    self.soft_line = soft_line
    self.soft_value = soft_value
    self.rows = row
    self.nnz = nnz
    self.code = code
    if code != OK and code != E_NEED_INT64:
        self.err_line = line
        self.err_token = (<const char *> ts)[:te - ts]
        self.err_value = err_value
    return p - base


def check_csr(const index_t[::1] indptr, const index_t[::1] indices, int64_t n_rows,
              int64_t n_cols):
    """Describe the first violation of canonical CSR structure, or return None.

    Checks ``len(indptr) == n_rows + 1``, ``indptr[0] == 0``,
    ``indptr[-1] == len(indices)``, ``indptr`` non-decreasing, and within
    each row indices strictly increasing in ``[0, n_cols)``; O(nnz).
    """
    cdef Py_ssize_t nnz = indices.shape[0]
    cdef Py_ssize_t i, k, a, b
    cdef Py_ssize_t bad_row = -1
    cdef Py_ssize_t counter = 0
    if indptr.shape[0] != n_rows + 1:
        return f"indptr has {indptr.shape[0]} entries for {n_rows} rows"
    if indptr[0] != 0 or indptr[n_rows] != nnz:
        return (f"indptr runs from {indptr[0]} to {indptr[n_rows]} for {nnz} stored "
                "entries")
    with nogil:
        for i in range(n_rows):
            a = indptr[i]
            b = indptr[i + 1]
            if b < a or b > nnz:
                bad_row = i
                break
            if a < b and (indices[a] < 0 or indices[b - 1] >= n_cols):
                bad_row = i
                break
            for k in range(a + 1, b):
                if indices[k] <= indices[k - 1]:
                    bad_row = i
                    break
            if bad_row >= 0:
                break
            poll(&counter, b - a + 1)
    if bad_row >= 0:
        a, b = indptr[bad_row], indptr[bad_row + 1]
        shown = np.asarray(indices[a:min(b, a + 10)]).tolist() if a <= b <= nnz else []
        return (f"row {bad_row}: indptr {a} -> {b}, indices {shown} (must be strictly "
                f"increasing in [0, {n_cols}))")
    return None


def parse_float(const unsigned char[::1] token):
    """Convert one token with the parser's float routine (for tests).

    Returns ``None`` when the token is not a number.
    """
    cdef double v = 0.0
    cdef Py_ssize_t n = token.shape[0]
    if n == 0:
        return None
    if _parse_double(&token[0], &token[0] + n, &v):
        return v
    return None


def fast_path_taken(const unsigned char[::1] token):
    """True when ``token`` is converted by the exact fast path (for tests)."""
    cdef double v = 0.0
    cdef Py_ssize_t n = token.shape[0]
    if n == 0:
        return False
    return bool(_fast_double(&token[0], &token[0] + n, &v))
