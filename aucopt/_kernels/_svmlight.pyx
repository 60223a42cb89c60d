# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Single-pass svmlight / LIBSVM text parser.

The caller (``aucopt.datasets._svmlight``) reads the whole file into one
``bytes`` object, allocates output arrays from cheap upper bounds (number of
newlines + 1 rows, number of ``':'`` bytes non-zeros) and calls :func:`parse`.
The hot loop walks the raw bytes with a pointer; no Python object is created
per line or per token.

Numbers are converted with an exact fast path (Clinger 1990: an integer
mantissa m <= 2**53 scaled by 10**e with |e| <= 22 is a single correctly
rounded IEEE operation) and otherwise with ``PyOS_string_to_double``, the
locale-independent, correctly rounded routine behind Python's ``float()``.
Both give results bit-identical to ``float(token)``.

Errors are not raised here: :func:`parse` returns an error code, the 1-based
line number and the byte span of the offending token, and the Python wrapper
builds the message.
"""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from cpython.ref cimport PyObject


cdef extern from "Python.h":
    double PyOS_string_to_double(const char *s, char **endptr,
                                 PyObject *overflow_exception)
    PyObject *PyErr_Occurred()
    void PyErr_Clear()


ctypedef fused index_t:
    int32_t
    int64_t


# Error codes (mirrored in aucopt/datasets/_svmlight.py).
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
    E_NEED_INT64 = 10
    E_HUGE_INDEX = 11

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
    "NEED_INT64": E_NEED_INT64,
    "HUGE_INDEX": E_HUGE_INDEX,
}

cdef double[23] _POW10 = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]

# Largest raw index accepted at all (keeps every later +1 / -1 safe in int64).
cdef int64_t _HUGE_INDEX = (<int64_t>1) << 62
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


def parse(const unsigned char[::1] buf, double[::1] labels, index_t[::1] indptr,
          index_t[::1] indices, double[::1] data, int64_t limit):
    """Parse svmlight text into preallocated CSR buffers.

    Parameters
    ----------
    buf : bytes
        The whole file content.
    labels : float64 array, length >= number of lines
    indptr : int32 or int64 array, length >= number of lines + 1
    indices : same dtype as ``indptr``, length >= number of ``':'`` bytes
    data : float64 array, same length as ``indices``
    limit : int
        Largest raw (as written) feature index accepted; -1 for no limit.

    Returns
    -------
    tuple
        ``(code, n_rows, nnz, min_index, max_index, first_zero_line,
        max_index_line, err_line, err_start, err_end, err_value)``.
        Indices are stored raw (not shifted); ``min_index`` is -1 when no
        feature was read.  On error ``code`` is non-zero, ``err_line`` the
        1-based line, ``err_start:err_end`` the byte span of the bad token and
        ``err_value`` an index for duplicate / range errors.
    """
    cdef const unsigned char *base = &buf[0] if buf.shape[0] > 0 else NULL
    cdef Py_ssize_t n = buf.shape[0]
    cdef const unsigned char *p = base
    cdef const unsigned char *end = base + n
    cdef const unsigned char *ts
    cdef const unsigned char *te
    cdef const unsigned char *colon
    cdef const unsigned char *q
    cdef Py_ssize_t line = 1
    cdef Py_ssize_t row = 0
    cdef Py_ssize_t nnz = 0
    cdef Py_ssize_t row_start, k
    cdef Py_ssize_t max_rows = labels.shape[0]
    cdef Py_ssize_t max_nnz = data.shape[0]
    cdef int64_t idx, prev
    cdef int64_t min_idx = -1
    cdef int64_t max_idx = -1
    cdef Py_ssize_t first_zero_line = 0
    cdef Py_ssize_t max_idx_line = 0
    cdef bint unsorted
    cdef bint index_is_32 = index_t is int32_t
    cdef unsigned int d
    cdef unsigned char c
    cdef double v
    cdef int code = OK
    cdef Py_ssize_t err_start = 0
    cdef Py_ssize_t err_end = 0
    cdef int64_t err_value = 0

    if indptr.shape[0] < max_rows + 1 or indices.shape[0] < max_nnz:
        raise ValueError("parse: output buffers have inconsistent sizes")
    indptr[0] = 0
    if n == 0:
        return (OK, 0, 0, -1, -1, 0, 0, 0, 0, 0, 0)

    while p < end:
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
            while p < end and p[0] != 10:
                p += 1
            continue

        # ---- label token
        ts = p
        while p < end and not _is_term(p[0]):
            p += 1
        te = p
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
            err_start = ts - base
            err_end = te - base
            break
        if row >= max_rows:
            raise RuntimeError("parse: row buffer too small (internal error)")
        if not _parse_double(ts, te, &labels[row]):
            code = E_BAD_LABEL
            err_start = ts - base
            err_end = te - base
            break

        # ---- index:value pairs up to the end of the line
        row_start = nnz
        prev = -1
        unsorted = False
        while True:
            while p < end and _is_ws(p[0]):
                p += 1
            if p >= end or p[0] == 10:
                break
            if p[0] == 35:
                while p < end and p[0] != 10:
                    p += 1
                break
            ts = p
            colon = NULL
            while p < end and not _is_term(p[0]):
                if p[0] == 58 and colon == NULL:
                    colon = p
                p += 1
            te = p
            if colon == NULL:
                code = E_EXPECTED_PAIR
                break
            if colon - ts == 3 and ts[0] == 113 and ts[1] == 105 and ts[2] == 100:
                continue  # 'qid:N' is ignored
            # index
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
                idx = idx * 10 + d
                if idx > _HUGE_INDEX:
                    code = E_HUGE_INDEX
                    break
                q += 1
            if code != OK:
                break
            if limit >= 0 and idx > limit:
                code = E_INDEX_LIMIT
                err_value = idx
                break
            if index_is_32 and idx > _INT32_MAX:
                code = E_NEED_INT64
                break
            # value
            if not _parse_double(colon + 1, te, &v):
                code = E_BAD_VALUE
                break
            if nnz >= max_nnz:
                raise RuntimeError("parse: nnz buffer too small (internal error)")
            if idx <= prev:
                if idx == prev:
                    code = E_DUPLICATE
                    err_value = idx
                    break
                unsorted = True
            prev = idx
            indices[nnz] = <index_t> idx
            data[nnz] = v
            nnz += 1
            if idx > max_idx:
                max_idx = idx
                max_idx_line = line
            if min_idx < 0 or idx < min_idx:
                min_idx = idx
            if idx == 0 and first_zero_line == 0:
                first_zero_line = line
        if code != OK:
            err_start = ts - base
            err_end = te - base
            break

        if unsorted:
            _sort_row(&indices[row_start], &data[row_start], nnz - row_start)
            for k in range(row_start + 1, nnz):
                if indices[k] == indices[k - 1]:
                    code = E_DUPLICATE
                    err_value = indices[k]
                    break
            if code != OK:
                break
        row += 1
        indptr[row] = <index_t> nnz
        # the '\n' (if any) is consumed at the top of the loop

    return (code, row, nnz, min_idx, max_idx, first_zero_line, max_idx_line,
            line, err_start, err_end, err_value)


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
