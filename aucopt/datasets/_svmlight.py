"""Reading and writing svmlight / LIBSVM text files."""
import bz2
import gzip
import lzma
import numbers
import os

import numpy as np
import scipy.sparse as sp

from aucopt._kernels import _svmlight as _kernel

__all__ = ["load_svmlight", "dump_svmlight", "choose_index_dtype"]

_INT32_MAX = np.iinfo(np.int32).max
_E = _kernel.ERROR_CODES

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open, ".lzma": lzma.open}
_MAGIC = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))


def choose_index_dtype(nnz, n_features):
    """Index dtype for a CSR matrix with ``nnz`` stored values and ``n_features`` columns.

    Parameters
    ----------
    nnz : int
        Number of stored entries (the last ``indptr`` value).
    n_features : int
        Number of columns; the largest column index is ``n_features - 1``.

    Returns
    -------
    numpy.dtype
        ``int32`` when both ``nnz`` and ``n_features`` are at most
        ``2**31 - 1``, else ``int64`` (used for both ``indices`` and ``indptr``).
    """
    if int(nnz) < 0 or int(n_features) < 0:
        raise ValueError("nnz and n_features must be non-negative")
    if int(nnz) <= _INT32_MAX and int(n_features) <= _INT32_MAX:
        return np.dtype(np.int32)
    return np.dtype(np.int64)


def _read_bytes(f):
    """Whole content of ``f`` (path, bytes-like or binary file object) as bytes."""
    if isinstance(f, bytes):
        return f
    if isinstance(f, (bytearray, memoryview)):
        return bytes(f)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        ext = os.path.splitext(os.fsdecode(path))[1].lower()
        opener = _OPENERS.get(ext)
        if opener is None:
            with open(path, "rb") as fh:  # FileNotFoundError propagates as is
                head = fh.read(6)
                opener = next((o for magic, o in _MAGIC if head.startswith(magic)), None)
                if opener is None:
                    return head + fh.read()
        with opener(path, "rb") as fh:
            return fh.read()
    if hasattr(f, "read"):
        content = f.read()
        if isinstance(content, str):
            raise TypeError(
                "load_svmlight needs a binary file object; open the file with "
                "mode 'rb' (got a text-mode file returning str)"
            )
        return bytes(content)
    raise TypeError(
        "f must be a path (str or os.PathLike), bytes or a binary file object, "
        f"got {type(f).__name__}"
    )


def _token(buf, start, end, limit=60):
    tok = buf[start:end].decode("utf-8", errors="replace")
    if len(tok) > limit:
        tok = tok[:limit] + "..."
    return tok


def _raise_parse_error(buf, res, n_features, zero_based):
    code, line = res[0], res[7]
    start, end, value = res[8], res[9], res[10]
    tok = _token(buf, start, end)
    where = f"line {line}: "
    if code == _E["EXPECTED_PAIR"]:
        msg = (f"expected 'index:value', got {tok!r}; features must be written as "
               "index:value pairs such as '3:0.5' after the label")
    elif code == _E["BAD_INDEX"]:
        idx = tok.split(":", 1)[0]
        msg = (f"feature index {idx!r} (in {tok!r}) is not a non-negative integer; "
               "indices must be whole numbers, as in '3:0.5'")
    elif code == _E["NEG_INDEX"]:
        idx = tok.split(":", 1)[0]
        msg = (f"negative feature index {idx!r} (in {tok!r}); indices start at 0 "
               "(zero-based files) or 1 (one-based files)")
    elif code == _E["HUGE_INDEX"]:
        msg = f"feature index in {tok!r} is too large (more than 2**62)"
    elif code == _E["BAD_VALUE"]:
        idx, val = tok.split(":", 1)
        msg = (f"value {val!r} of feature {idx} is not a number; write values as "
               "decimal numbers such as '0.5', '-3', '1e-3' or 'inf'")
    elif code == _E["BAD_LABEL"]:
        msg = (f"label {tok!r} is not a number; every line must start with a "
               "numeric label such as '+1', '-1' or '3'")
    elif code == _E["MISSING_LABEL"]:
        msg = (f"missing label: the line starts with {tok!r}; every line must start "
               "with a numeric label such as '+1' or '-1' followed by index:value pairs")
    elif code == _E["MULTILABEL"]:
        msg = (f"multilabel label {tok!r} is not supported; load_svmlight reads one "
               "numeric label per line (convert the file to a single label per row, "
               "e.g. one-vs-rest, before loading)")
    elif code == _E["DUPLICATE"]:
        msg = (f"feature index {value} appears more than once; each index may occur "
               "only once per line (merge or remove the duplicate entries)")
    elif code == _E["INDEX_LIMIT"]:
        msg = _range_message(value, n_features, zero_based)
    else:  # pragma: no cover - internal codes never escape
        msg = f"parse error (code {code}) at {tok!r}"
    raise ValueError(where + msg)


def _range_message(raw_index, n_features, zero_based):
    if zero_based == "auto":
        allowed = (f"largest allowed index: {n_features - 1} if the file is zero-based, "
                   f"{n_features} if one-based")
    elif zero_based:
        allowed = f"largest allowed zero-based index: {n_features - 1}"
    else:
        allowed = f"largest allowed one-based index: {n_features}"
    return (f"feature index {raw_index} is out of range for n_features={n_features} "
            f"({allowed}); pass a larger n_features, or n_features=None to infer "
            "it from the file")


def _parse(buf, limit, index_dtype, nnz_ub=None):
    n_rows_ub = buf.count(b"\n") + 1
    if nnz_ub is None:
        nnz_ub = buf.count(b":")
    labels = np.empty(n_rows_ub, dtype=np.float64)
    indptr = np.empty(n_rows_ub + 1, dtype=index_dtype)
    indices = np.empty(nnz_ub, dtype=index_dtype)
    data = np.empty(nnz_ub, dtype=np.float64)
    res = _kernel.parse(buf, labels, indptr, indices, data, limit)
    return res, labels, indptr, indices, data


def _trim(a, n):
    """``a[:n]``, copied when that frees a noticeable amount of memory."""
    if a.shape[0] - n > max(1024, n // 8):
        return a[:n].copy()
    return a[:n]


def load_svmlight(f, n_features=None, zero_based="auto", dtype=np.float64):
    """Load an svmlight / LIBSVM text file into a CSR matrix and a label vector.

    Each non-empty line reads ``<label> [qid:<n>] <index>:<value> ... [# comment]``.
    Blank lines and lines holding only a comment are skipped, ``qid:`` tokens
    are ignored, CRLF line ends are accepted. Indices within a line may come
    in any order (they are sorted); a repeated index on one line is an error.

    Parameters
    ----------
    f : str, os.PathLike, bytes or binary file object
        A path (``.gz``, ``.bz2`` and ``.xz`` files, recognised by extension
        or magic bytes, are decompressed transparently), the file content as
        bytes, or a file object opened in binary mode.
    n_features : int or None, default=None
        Number of columns of ``X``. Every index must fit (``index <
        n_features`` after conversion to zero-based), else ``ValueError``.
        ``None`` infers it as the largest index + 1. Pass it explicitly when
        loading train and test files separately.
    zero_based : bool or "auto", default="auto"
        Whether indices in the file start at 0 (``True``) or 1 (``False``).
        ``"auto"`` treats the file as zero-based iff some index 0 occurs.
    dtype : numpy dtype, default=numpy.float64
        dtype of ``X.data`` (values are always parsed in double precision).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Canonical CSR (sorted indices, no duplicates; explicit zeros written
        in the file are kept). ``int32`` indices / indptr when they fit,
        else ``int64`` (see :func:`choose_index_dtype`).
    y : numpy.ndarray of shape (n_samples,), float64
        The labels as written in the file.

    Raises
    ------
    ValueError
        On malformed input; the message starts with ``line N:`` (1-based line
        number of the file) and says what is wrong.
    FileNotFoundError
        If a path does not exist.

    Notes
    -----
    Numbers are converted exactly as ``float(token)`` converts them.

    Examples
    --------
    >>> X, y = load_svmlight(b"+1 1:0.5 3:2\\n-1 2:1 # comment\\n")
    >>> X.toarray()
    array([[0.5, 0. , 2. ],
           [0. , 1. , 0. ]])
    >>> y
    array([ 1., -1.])
    """
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if not isinstance(zero_based, str):
        zero_based = bool(zero_based)
    if n_features is not None:
        if not isinstance(n_features, numbers.Integral) or isinstance(n_features, bool) \
                or n_features < 0:
            raise ValueError(f"n_features must be a non-negative integer or None, "
                             f"got {n_features!r}")
        n_features = int(n_features)
    buf = _read_bytes(f)

    # raw (as written) index limit checked inside the parser
    if n_features is None:
        limit = -1
    elif zero_based is True:
        limit = n_features - 1
    else:  # one-based, or "auto" (the exact check for auto follows after parsing)
        limit = n_features

    nnz_ub = buf.count(b":")
    index_dtype = choose_index_dtype(nnz_ub, n_features or 0)
    res, labels, indptr, indices, data = _parse(buf, limit, index_dtype, nnz_ub)
    if res[0] == _E["NEED_INT64"]:
        index_dtype = np.dtype(np.int64)
        res, labels, indptr, indices, data = _parse(buf, limit, index_dtype, nnz_ub)
    if res[0] != _E["OK"]:
        _raise_parse_error(buf, res, n_features, zero_based)
    _, n_rows, nnz, min_idx, max_idx, first_zero_line, max_idx_line = res[:7]

    if zero_based == "auto":
        is_zero_based = min_idx == 0
    else:
        is_zero_based = bool(zero_based)
    if not is_zero_based and min_idx == 0:
        raise ValueError(
            f"line {first_zero_line}: feature index 0 found but zero_based=False "
            "(one-based indices start at 1); pass zero_based=True or zero_based='auto'"
        )
    needed = 0 if max_idx < 0 else (max_idx + 1 if is_zero_based else max_idx)
    if n_features is None:
        n_features = needed
    elif needed > n_features:
        # only reachable for zero_based="auto" resolved to zero-based: find the
        # first offending line by re-parsing with the exact limit
        res = _parse(buf, n_features - 1, index_dtype)[0]
        if res[0] == _E["INDEX_LIMIT"]:
            _raise_parse_error(buf, res, n_features, True)
        raise ValueError(f"line {max_idx_line}: "  # pragma: no cover - safety net
                         + _range_message(max_idx, n_features, True))

    labels = _trim(labels, n_rows)
    indices = _trim(indices, nnz)
    data = _trim(data, nnz)
    indptr = indptr[: n_rows + 1]
    if not is_zero_based and nnz:
        indices -= 1

    final_dtype = choose_index_dtype(nnz, n_features)
    if final_dtype != indices.dtype:
        indices = indices.astype(final_dtype)
        indptr = indptr.astype(final_dtype)
    dtype = np.dtype(dtype)
    if dtype != np.float64:
        data = data.astype(dtype)
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_features), copy=False)
    X.has_canonical_format = True
    return X, labels


def _as_print_objects(a):
    """List of Python numbers whose ``repr`` is the shortest round-trip text.

    Integral values (except -0.0) become ``int`` so they print without '.0'.
    """
    a = np.asarray(a, dtype=np.float64)
    integral = np.isfinite(a) & (np.abs(a) < 2.0 ** 53)
    integral[integral] = a[integral] == np.trunc(a[integral])
    integral &= ~((a == 0) & np.signbit(a))  # keep -0.0 a float: prints '-0.0'
    if not integral.any():
        return a.tolist()
    objs = a.astype(object)
    objs[integral] = a[integral].astype(np.int64).astype(object)
    return objs.tolist()


def dump_svmlight(X, y, f, zero_based=False, comment=None):
    """Write a data set in svmlight / LIBSVM text format.

    Parameters
    ----------
    X : array-like or scipy sparse matrix of shape (n_samples, n_features)
        Feature matrix. Dense input writes only its non-zero entries; sparse
        input writes its stored entries (duplicates are summed, explicit
        zeros are kept).
    y : array-like of shape (n_samples,)
        One numeric label per row.
    f : str, os.PathLike or binary file object
        Destination path (overwritten; written uncompressed whatever the
        extension) or a file object opened in binary mode.
    zero_based : bool, default=False
        Write indices starting at 0 (``True``) or 1 (``False``, the LIBSVM
        convention).
    comment : str or None, default=None
        Text written at the top of the file, each line prefixed with ``# ``.

    Notes
    -----
    Numbers are written with the shortest representation that reads back to
    the same double (integral values without decimals), so
    ``load_svmlight`` of the output restores ``X`` and ``y`` bit for bit.

    Examples
    --------
    >>> import io
    >>> buf = io.BytesIO()
    >>> dump_svmlight([[0.0, 0.5], [1.0, 0.0]], [1, -1], buf)
    >>> buf.getvalue()
    b'1 2:0.5\\n-1 1:1\\n'
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()  # also sorts the indices
    else:
        Xd = np.asarray(X, dtype=np.float64)
        if Xd.ndim != 2:
            raise ValueError(f"X must be 2-D, got an array of shape {Xd.shape}")
        X = sp.csr_matrix(Xd)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError("y must be 1-D (one label per row); multilabel output is "
                         f"not supported, got shape {y.shape}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels")

    lines = []
    if comment is not None:
        if isinstance(comment, bytes):
            comment = comment.decode("utf-8")
        if "\0" in comment:
            raise ValueError("comment must not contain NUL characters")
        lines.extend(("# " + c).rstrip() for c in comment.splitlines())

    offset = 0 if zero_based else 1
    pairs = list(map("%d:%r".__mod__,
                     zip((X.indices.astype(np.int64) + offset).tolist(),
                         _as_print_objects(X.data))))
    labels = list(map(repr, _as_print_objects(y)))
    indptr = X.indptr.tolist()
    for i in range(X.shape[0]):
        a, b = indptr[i], indptr[i + 1]
        lines.append(labels[i] + " " + " ".join(pairs[a:b]) if b > a else labels[i])
    text = ("\n".join(lines) + "\n").encode("ascii") if lines else b""

    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(text)
    elif hasattr(f, "write"):
        f.write(text)
    else:
        raise TypeError("f must be a path or a binary file object, "
                        f"got {type(f).__name__}")
