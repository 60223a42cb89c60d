"""Reading and writing svmlight / LIBSVM text files.

The reader streams: the file is read in blocks of about a megabyte that end at
a line end and each block is parsed into growable CSR buffers
(:class:`aucopt._kernels._svmlight.Parser`), so no more than one block of the
(decompressed) text is held at a time. A line longer than a block is parsed
token by token as it is read (tokens of at most a megabyte).
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import numbers
import os
import stat
import sys
import zlib
from typing import IO, Iterator, Union

import numpy as np
import scipy.sparse as sp

from aucopt._atomic import atomic_write
from numpy.typing import ArrayLike, DTypeLike

from aucopt._kernels import _svmlight as _kernel

# what the reader and writer accept as a file: a path, the bytes themselves (reader)
# or a binary file object
Source = Union[str, os.PathLike, bytes, IO[bytes]]

__all__ = ["load_svmlight", "iter_svmlight", "dump_svmlight", "choose_index_dtype"]

_INT32_MAX = np.iinfo(np.int32).max
_E = _kernel.ERROR_CODES
MAX_INDEX = _kernel.MAX_INDEX  # largest feature index a file may contain: 2**62 - 1
_BLOCK_SIZE = 1 << 20  # bytes read (and parsed) at a time
_MAX_TOKEN = 1 << 20  # longest token (label, index:value) read
_FIRST_CAPACITY = (1024, 16384)  # rows, stored entries a parser starts with (grows 1.5x)
_ALL_ROWS = sys.maxsize

_COMPRESSED = {".gz": (gzip.open, "gzip"), ".bz2": (bz2.open, "bzip2"),
               ".xz": (lzma.open, "xz"), ".lzma": (lzma.open, "xz")}
_MAGIC = ((b"\x1f\x8b", _COMPRESSED[".gz"]), (b"BZh", _COMPRESSED[".bz2"]),
          (b"\xfd7zXZ\x00", _COMPRESSED[".xz"]))
_STREAM_KINDS = ((gzip.GzipFile, "gzip"), (bz2.BZ2File, "bzip2"), (lzma.LZMAFile, "xz"))


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


# ---------------------------------------------------------------- input


class _Source:
    """The bytes of an svmlight file, delivered in blocks that end at a line end.

    ``f`` is a path (plain, or gzip / bzip2 / xz compressed, recognised by
    extension or magic bytes), a bytes-like object or a binary file object.
    ``rereadable`` tells whether :meth:`blocks` may run more than once
    (paths of regular files, bytes and seekable file objects; not a pipe, a
    FIFO or a device such as ``/dev/stdin``, which can be read once).
    """

    def __init__(self, f):
        self._data = self._path = self._file = None
        if isinstance(f, (bytes, bytearray)):
            self._data, self.name = f, "<bytes>"
        elif isinstance(f, memoryview):
            self._data, self.name = f.tobytes(), "<bytes>"
        elif isinstance(f, (str, os.PathLike)):
            self._path = os.fspath(f)
            self.name = os.fsdecode(self._path)
        elif hasattr(f, "read"):
            if isinstance(f, io.TextIOBase):
                raise _text_mode_error()
            self._file, self.name = f, str(getattr(f, "name", f"<{type(f).__name__}>"))
            seekable = getattr(f, "seekable", None)
            self._start = f.tell() if seekable is not None and seekable() else None
        else:
            raise TypeError(
                "f must be a path (str or os.PathLike), bytes or a binary file object, "
                f"got {type(f).__name__}"
            )
        self._passes = 0

    @property
    def rereadable(self):
        if self._path is not None:
            try:
                return stat.S_ISREG(os.stat(self._path).st_mode)
            except OSError:  # reported when the path is opened
                return True
        return self._file is None or self._start is not None

    def read_once_error(self):
        """The ValueError for a second pass over input that can be read once."""
        what = ("the file object is not seekable" if self._path is None else
                f"{self.name} is not a regular file (a pipe, FIFO or device, not seekable)")
        return ValueError(
            "iter_svmlight needs a second pass over the file to infer n_features or "
            f"zero_based='auto', but {what}; pass n_features and zero_based=True or "
            "False to read it in one pass (or load it whole with load_svmlight)")

    def blocks(self):
        """Yield ``(view, partial)``: memoryviews of consecutive blocks of whole lines
        (the last may lack its newline), or with ``partial`` the start of a line
        longer than the buffer.

        Blocks hold about ``_BLOCK_SIZE`` bytes. After a partial block the
        generator must be sent the number of its bytes the parser consumed; the
        rest is the start of the next block. A view is only valid until the next
        block is requested.
        """
        block_size = _BLOCK_SIZE
        if self._passes and self._file is not None:
            try:
                self._file.seek(self._start)
            except OSError:  # seekable() said yes: a decompressing object over a pipe
                raise self.read_once_error() from None
        self._passes += 1
        if self._data is not None:
            yield from _memory_blocks(self._data, block_size)
        elif self._file is not None:
            kind = next((k for cls, k in _STREAM_KINDS if isinstance(self._file, cls)), None)
            yield from _stream_blocks(self._file, b"", block_size, kind, self.name)
        else:
            stream, head, kind, fh = _open_path(self._path)
            with fh, stream:
                yield from _stream_blocks(stream, head, block_size, kind, self.name)


def _text_mode_error():
    return TypeError("svmlight files must be read from a binary file object; open the "
                     "file with mode 'rb' (got a text-mode file returning str)")


def _open_path(path):
    """``(binary stream, bytes already read from it, compression name or None, file)``;
    ``file`` is the opened path, to be closed with the stream.

    The path is opened once: a pipe, a FIFO or ``/dev/stdin`` can be read once,
    so compressed data recognised by its magic bytes are decompressed from the
    bytes read, then the rest of the same file.
    """
    ext = os.path.splitext(os.fsdecode(path))[1].lower()
    if ext in _COMPRESSED:
        opener, kind = _COMPRESSED[ext]
        stream = opener(path, "rb")
        return stream, b"", kind, stream
    fh = open(path, "rb")  # FileNotFoundError propagates as is
    head = fh.read(6)
    for magic, (opener, kind) in _MAGIC:
        if head.startswith(magic):
            return opener(_Prefixed(head, fh), "rb"), b"", kind, fh
    return fh, head, None, fh


class _Prefixed(io.RawIOBase):
    """A binary stream: the bytes ``head``, then the rest of the file ``fh``."""

    def __init__(self, head, fh):
        super().__init__()
        self._head, self._fh = head, fh

    def readable(self):
        return True

    def readinto(self, view):
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._fh.readinto(view)


def _memory_blocks(data, block_size):
    view = memoryview(data)
    n, start = len(data), 0
    while start < n:
        stop = start + block_size
        if stop < n:
            stop = (data.rfind(b"\n", start, stop) + 1
                    or data.find(b"\n", stop) + 1  # a line longer than a block
                    or n)
        else:
            stop = n
        yield view[start:stop], False
        start = stop


def _stream_blocks(stream, head, block_size, kind, name):
    """Blocks of whole lines read from ``stream``, starting with the bytes ``head``
    (see :meth:`_Source.blocks`).

    The incomplete last line of a read is carried to the front of the next one. A
    line that fills the buffer is handed over as a partial block, whose complete
    tokens the parser consumes, so that a long line costs no more memory than
    its rows (a token longer than the buffer doubles it, up to ``_MAX_TOKEN``).
    ``kind`` names the compression, whose errors become a ValueError naming the
    file.
    """
    buf = bytearray(max(block_size, 2 * len(head)))
    buf[:len(head)] = head
    filled = len(head)
    while True:
        if filled == len(buf):  # one line fills the buffer
            consumed = yield memoryview(buf)[:filled], True
            if consumed:
                buf[:filled - consumed] = buf[consumed:filled]
                filled -= consumed
            else:  # a token as long as the buffer (the parser checked its length)
                bigger = bytearray(2 * len(buf))
                bigger[:filled] = buf
                buf = bigger
        n = _read_into(stream, memoryview(buf)[filled:], kind, name)
        if not n:
            break
        end = filled + n
        cut = buf.rfind(b"\n", filled, end) + 1  # the carried part holds no newline
        if cut:
            yield memoryview(buf)[:cut], False
            buf[:end - cut] = buf[cut:end]
            end -= cut
        filled = end
    yield memoryview(buf)[:filled], False  # also when empty: a row left open ends


def _read_into(stream, view, kind, name):
    """Read up to ``len(view)`` bytes of ``stream`` into ``view``; 0 at the end."""
    try:
        readinto = getattr(stream, "readinto", None)
        if readinto is not None:
            return readinto(view) or 0
        data = stream.read(len(view))
        if isinstance(data, str):
            raise _text_mode_error()
        view[:len(data)] = data
        return len(data)
    except (EOFError, OSError, lzma.LZMAError, zlib.error) as exc:
        if kind is None or (isinstance(exc, OSError) and exc.errno is not None):
            raise  # not a compressed stream, or a genuine I/O error
        raise ValueError(f"{name}: the {kind}-compressed file is truncated or corrupt "
                         f"({exc}); re-download or re-create it") from exc


# ---------------------------------------------------------------- parsing


def _token(tok, limit=60):
    if len(tok) > limit:
        tok = tok[:limit] + "..."
    return tok


def _parse_error(parser, n_features, zero_based):
    """The ValueError for the error that stopped ``parser``."""
    code, value = parser.code, parser.err_value
    raw = parser.err_token.decode("utf-8", errors="replace")
    # split before shortening: an index may be longer than the shown part
    idx, _, val = (_token(part) for part in raw.partition(":"))
    tok = _token(raw)
    if code == _E["EXPECTED_PAIR"]:
        msg = (f"expected 'index:value', got {tok!r}; features must be written as "
               "index:value pairs such as '3:0.5' after the label")
    elif code == _E["BAD_INDEX"]:
        msg = (f"feature index {idx!r} (in {tok!r}) is not a non-negative integer; "
               "indices must be whole numbers, as in '3:0.5'")
    elif code == _E["NEG_INDEX"]:
        msg = (f"negative feature index {idx!r} (in {tok!r}); indices start at 0 "
               "(zero-based files) or 1 (one-based files)")
    elif code == _E["HUGE_INDEX"]:
        msg = (f"feature index {idx!r} is too large: indices may be at most "
               f"2**62 - 1 = {MAX_INDEX}")
    elif code == _E["BAD_VALUE"]:
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
    elif code == _E["ZERO_INDEX"]:
        msg = ("feature index 0 found but zero_based=False (one-based indices start "
               "at 1); pass zero_based=True or zero_based='auto'")
    else:  # pragma: no cover - internal codes never escape
        msg = f"parse error (code {code}) at {tok!r}"
    return ValueError(f"line {parser.err_line}: {msg}")


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


def _check_options(n_features, zero_based, dtype):
    """Validated ``(n_features, zero_based, dtype)``."""
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
    return n_features, zero_based, np.dtype(dtype)


def _new_parser(n_features, zero_based, store=True):
    """A parser enforcing the index range implied by ``n_features`` and ``zero_based``.

    With ``zero_based="auto"`` the file may still turn out one-based, so
    index ``n_features`` is only noted (soft limit) and judged by
    :func:`_resolve` once the whole file is read.
    """
    if n_features is None:
        hard = soft = MAX_INDEX
    else:
        hard = n_features - 1 if zero_based is True else n_features
        soft = n_features if zero_based is False else n_features - 1
    return _kernel.Parser(min(hard, MAX_INDEX), min(soft, MAX_INDEX),
                          reject_zero=zero_based is False,
                          wide=n_features is not None and n_features > _INT32_MAX,
                          store=store, first_rows=_FIRST_CAPACITY[0],
                          first_nnz=_FIRST_CAPACITY[1])


def _feed(source, parser, n_features, zero_based, chunk_rows=_ALL_ROWS):
    """Feed the whole file to ``parser``; yield whenever it holds ``chunk_rows`` rows, and at the end.

    The consumer takes the rows (:meth:`Parser.take`) at each yield.
    """
    blocks, consumed = source.blocks(), None
    while True:
        try:
            block, partial = blocks.send(consumed)
        except StopIteration:
            break
        pos = 0
        while True:
            pos = parser.feed(block, pos, chunk_rows, partial)
            if parser.code:
                raise _parse_error(parser, n_features, zero_based)
            if parser.rows < chunk_rows:
                break
            yield
        if partial and not pos and len(block) >= _MAX_TOKEN:
            head = bytes(block[:40]).decode("utf-8", errors="replace")
            raise ValueError(f"line {parser.line}: a token of more than {_MAX_TOKEN} bytes "
                             f"(starting {head!r}); labels, indices and values are "
                             "numbers of a few characters")
        consumed = pos
    yield


def _resolve(parser, n_features, zero_based):
    """``(n_features, zero_based)`` once the whole file went through ``parser``.

    ``zero_based="auto"`` means zero-based iff some index 0 occurs;
    ``n_features=None`` becomes the largest index + 1 (zero-based) or the
    largest index (one-based).
    """
    if zero_based == "auto":
        zero_based = parser.first_zero_line > 0
    if n_features is None:
        top = parser.max_index
        n_features = 0 if top < 0 else top + 1 if zero_based else top
    elif zero_based and parser.soft_line:
        raise ValueError(f"line {parser.soft_line}: "
                         + _range_message(parser.soft_value, n_features, True))
    return n_features, zero_based


def _take_csr(parser, n_features, zero_based, dtype):
    """The rows held by ``parser`` as ``(X, y)``, after checking the CSR structure."""
    n_rows = parser.rows
    wide = choose_index_dtype(parser.nnz, n_features) == np.int64
    labels, indptr, indices, data = parser.take(wide)
    if not zero_based and indices.shape[0]:
        indices -= 1
    problem = _kernel.check_csr(indptr, indices, n_rows, n_features)
    if problem is not None:
        raise RuntimeError(f"internal error: the svmlight parser produced an invalid CSR "
                           f"matrix ({problem}); please report this with the input file")
    if dtype != np.float64:
        data = data.astype(dtype)
    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_features), copy=False)
    X.has_canonical_format = True
    return X, labels


def load_svmlight(f: Source, n_features: int | None = None, zero_based: bool | str = "auto",
                  dtype: DTypeLike = np.float64) -> tuple[sp.csr_matrix, np.ndarray]:
    """Load an svmlight / LIBSVM text file into a CSR matrix and a label vector.

    Each non-empty line reads ``<label> [qid:<n>] <index>:<value> ... [# comment]``.
    Blank lines and lines holding only a comment are skipped, ``qid:`` tokens
    are ignored, CRLF line ends are accepted. Indices are whole numbers
    (digits only) of at most ``2**62 - 1``; within a line they may come in
    any order (they are sorted), a repeated index on one line is an error.

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
        number of the file) and says what is wrong. A truncated or corrupt
        compressed file raises a ValueError naming the file.
    FileNotFoundError
        If a path does not exist.

    See Also
    --------
    iter_svmlight : the same rows in chunks of bounded memory.

    Notes
    -----
    Numbers are converted exactly as ``float(token)`` converts them. The file
    is read and parsed in blocks of about a megabyte, so the memory used is
    that of the returned arrays plus one block, whatever the size of the
    (decompressed) text and of its lines (a line longer than a block is parsed
    token by token; a token of more than a megabyte is a ValueError).

    Examples
    --------
    >>> X, y = load_svmlight(b"+1 1:0.5 3:2\\n-1 2:1 # comment\\n")
    >>> X.toarray()
    array([[0.5, 0. , 2. ],
           [0. , 1. , 0. ]])
    >>> y
    array([ 1., -1.])
    """
    n_features, zero_based, dtype = _check_options(n_features, zero_based, dtype)
    source = _Source(f)
    parser = _new_parser(n_features, zero_based)
    for _ in _feed(source, parser, n_features, zero_based):
        pass
    n_features, zero_based = _resolve(parser, n_features, zero_based)
    return _take_csr(parser, n_features, zero_based, dtype)


def iter_svmlight(f: Source, chunk_size: int = 50_000, n_features: int | None = None,
                  zero_based: bool | str = "auto", dtype: DTypeLike = np.float64,
                  ) -> Iterator[tuple[sp.csr_matrix, np.ndarray]]:
    """Read an svmlight / LIBSVM file in chunks of rows, in memory bounded by the chunk.

    The rows, their format and the errors are those of :func:`load_svmlight`
    (error messages give line numbers of the whole file); the chunks stacked
    vertically equal ``load_svmlight(f, n_features, zero_based, dtype)``.

    Parameters
    ----------
    f : str, os.PathLike, bytes or binary file object
        As for :func:`load_svmlight`. A file object is read from its current
        position.
    chunk_size : int, default=50_000
        Rows per chunk (the last chunk may hold fewer).
    n_features : int or None, default=None
        Number of columns of every chunk; ``None`` infers it from the whole
        file (see below).
    zero_based : bool or "auto", default="auto"
        As for :func:`load_svmlight`; ``"auto"`` is decided on the whole file.
    dtype : numpy dtype, default=numpy.float64
        dtype of ``X_chunk.data``.

    Yields
    ------
    X_chunk : scipy.sparse.csr_matrix of shape (n_rows, n_features)
        Canonical CSR, ``int32`` or ``int64`` indices as in
        :func:`load_svmlight` (decided per chunk).
    y_chunk : numpy.ndarray of shape (n_rows,), float64

    Raises
    ------
    ValueError
        Bad options, or input that can be read only once (a non-seekable
        file object, or a path to a pipe, FIFO or device such as
        ``/dev/stdin``) that would need the extra pass described below:
        raised by the call. Malformed input
        (``line N: ...``) or a truncated or corrupt compressed file: raised
        when iteration reaches it (during the extra pass, or after yielding
        the chunks before it).
    FileNotFoundError
        If a path does not exist (raised when iteration starts).

    Notes
    -----
    With ``n_features=None`` or ``zero_based="auto"`` the answer depends on
    the whole file, so the file is first read and parsed once without
    keeping rows (this costs one more read of the file, and one more
    decompression for compressed files); the rows are then read in a second
    pass. Pass both ``n_features`` and ``zero_based`` to read the file once.
    A file holding no rows yields nothing.

    Memory: the chunk being built, one block of about a megabyte of text,
    and whatever the caller keeps of earlier chunks (in a plain ``for``
    loop, the previous chunk until the next one is ready).

    Examples
    --------
    >>> text = b"+1 1:0.5\\n-1 2:1\\n+1 3:2\\n"
    >>> [X.shape for X, y in iter_svmlight(text, chunk_size=2)]
    [(2, 3), (1, 3)]
    """
    n_features, zero_based, dtype = _check_options(n_features, zero_based, dtype)
    if not isinstance(chunk_size, numbers.Integral) or isinstance(chunk_size, bool) \
            or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    source = _Source(f)
    two_pass = n_features is None or zero_based == "auto"
    if two_pass and not source.rereadable:
        raise source.read_once_error()
    return _iter_chunks(source, int(chunk_size), n_features, zero_based, dtype, two_pass)


def _iter_chunks(source, chunk_size, n_features, zero_based, dtype, two_pass):
    if two_pass:
        scan = _new_parser(n_features, zero_based, store=False)
        for _ in _feed(source, scan, n_features, zero_based):
            pass
        n_features, zero_based = _resolve(scan, n_features, zero_based)
    parser = _new_parser(n_features, zero_based)
    for _ in _feed(source, parser, n_features, zero_based, chunk_size):
        if parser.rows:
            yield _take_csr(parser, n_features, zero_based, dtype)


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


def dump_svmlight(X: ArrayLike | sp.spmatrix, y: ArrayLike, f: Source, zero_based: bool = False,
                  comment: str | None = None) -> None:
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
        Destination path (replaced atomically: a failed write leaves the previous
        file intact; written uncompressed whatever the extension) or a file object
        opened in binary mode.
    zero_based : bool, default=False
        Write indices starting at 0 (``True``) or 1 (``False``, the LIBSVM
        convention).
    comment : str or None, default=None
        Text written at the top of the file, each line prefixed with ``#`` and a space,
        encoded as UTF-8 (readers skip comments byte by byte).

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
    text = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""

    if isinstance(f, (str, os.PathLike)):
        with atomic_write(f) as fh:
            fh.write(text)
    elif hasattr(f, "write"):
        f.write(text)
    else:
        raise TypeError("f must be a path or a binary file object, "
                        f"got {type(f).__name__}")
