"""Robustness of the svmlight reader: a plain-Python reference parser, generated
valid and invalid files (hypothesis), index overflow, streaming, compressed input.

The reference parser, the file generators and :func:`check_case` are shared
with ``tools/fuzz.py`` (the ``svmlight`` fuzz target), which runs them for
longer and in forked processes.
"""
import bz2
import functools
import gzip
import io
import lzma
import os
import random
import tempfile
import threading
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st

from aucopt._kernels import _svmlight as kernel
from aucopt.datasets import _svmlight, choose_index_dtype, dump_svmlight, iter_svmlight, \
    load_svmlight
from full import FULL

MAX_INDEX = 2 ** 62 - 1  # the documented largest feature index
INT32_MAX = 2 ** 31 - 1


# ---------------------------------------------------------------- reference


class ReferenceError_(Exception):
    """The reference parser rejects the file; ``line`` is the 1-based line."""

    def __init__(self, line, why):
        super().__init__(f"line {line}: {why}")
        self.line = line


def reference_number(tok):
    """A number token: what ``float()`` accepts, without underscores."""
    if b"_" in tok:
        return None
    try:
        return float(tok)
    except ValueError:
        return None


def reference_parse(text, n_features=None, zero_based="auto"):
    """Parse svmlight ``text`` (bytes) by the documented rules, plainly.

    Lines are split at ``\\n``; from the first ``#`` on a line is a comment;
    tokens are separated by ASCII blanks (space, \\t, \\v, \\f, \\r); lines
    without tokens are skipped. The first token is the label (a number, no
    ``:`` or ``,``); every other token is ``index:value`` where ``qid`` as
    index means "ignore", the index is ASCII digits with value at most
    2**62 - 1, the value a number, and an index occurs once per line. With
    ``n_features``, raw indices must be < n_features (zero-based),
    in 1..n_features (one-based) or <= n_features ("auto", and
    < n_features if the file turns out zero-based); zero_based=False forbids
    index 0; "auto" means zero-based iff an index 0 occurs.

    Returns ``(labels, rows, n_features)`` with ``rows`` a list of sorted
    ``[(zero-based column, value), ...]``; raises :class:`ReferenceError_`
    with the line of the first error.
    """
    parsed = []  # (line, label, {raw index: value})
    for lineno, line in enumerate(text.split(b"\n"), start=1):
        tokens = line.split(b"#", 1)[0].split()  # bytes.split(): the blanks above + \n
        if not tokens:
            continue
        label = tokens[0]
        if b":" in label or b"," in label or reference_number(label) is None:
            raise ReferenceError_(lineno, f"bad label {label!r}")
        feats = {}
        for tok in tokens[1:]:
            if b":" not in tok:
                raise ReferenceError_(lineno, f"not a pair: {tok!r}")
            idx, val = tok.split(b":", 1)
            if idx == b"qid":
                continue
            if not idx.isdigit() or int(idx) > MAX_INDEX:
                raise ReferenceError_(lineno, f"bad index {idx!r}")
            idx = int(idx)
            if n_features is not None and idx > (n_features - 1 if zero_based is True
                                                 else n_features):
                raise ReferenceError_(lineno, f"index {idx} out of range")
            if idx == 0 and zero_based is False:
                raise ReferenceError_(lineno, "index 0 in a one-based file")
            if reference_number(val) is None:
                raise ReferenceError_(lineno, f"bad value {val!r}")
            if idx in feats:
                raise ReferenceError_(lineno, f"duplicate index {idx}")
            feats[idx] = reference_number(val)
        parsed.append((lineno, reference_number(label), feats))
    all_idx = [i for _, _, f in parsed for i in f]
    is_zero = (0 in all_idx) if zero_based == "auto" else zero_based
    if n_features is None:
        n_features = 0 if not all_idx else max(all_idx) + (1 if is_zero else 0)
    elif is_zero:
        for lineno, _, f in parsed:
            if any(i >= n_features for i in f):
                raise ReferenceError_(lineno, "index out of range (zero-based)")
    shift = 0 if is_zero else 1
    rows = [sorted((i - shift, v) for i, v in f.items()) for _, _, f in parsed]
    return [label for _, label, _ in parsed], rows, n_features


# ---------------------------------------------------------------- generators

_SPECIAL_NUMBERS = [
    "inf", "-inf", "+inf", "Infinity", "-infinity", "nan", "-nan", "NaN", "1e308",
    "1e309", "-1e-400", "4.9e-324", "2.2250738585072014e-308", "0", "-0", "+0.0",
    "00012.500", ".5", "5.", "1E+5", "1e-3", "9007199254740993", "1e22", "1e23",
    "123e-22", "123e-23", "0.1", "-1.7976931348623157e308", "0.30000000000000004",
]
# indices around the largest accepted one and the int64 / uint64 wrap-around
_INDEX_EDGES = [MAX_INDEX + k for k in range(-2, 3)] + \
    [2 ** 63 + k for k in range(-2, 3)] + [2 ** 64 + k for k in range(-2, 6)] + \
    [10 ** 19, 10 ** 20 + 7, 18446744073709551621, 46116860184273879040]
_BLANKS = [b" ", b"  ", b"\t", b" \t ", b"\r ", b"\x0b", b"\x0c"]


def random_number(rnd):
    """A number token (bytes) in one of the forms svmlight files use."""
    kind = rnd.randrange(6)
    if kind == 0:
        return b"%+d" % rnd.randrange(-10 ** 6, 10 ** 6) if rnd.random() < 0.3 \
            else b"%d" % rnd.randrange(-5, 6)
    if kind == 1:  # any double, shortest repr
        v = np.uint64(rnd.getrandbits(64)).view(np.float64)
        return repr(float(v)).encode()
    if kind == 2:
        v = rnd.gauss(0, 1) * 10.0 ** rnd.randrange(-30, 30)
        return (b"%." + b"%d" % rnd.randrange(1, 21) + rnd.choice([b"g", b"e", b"f"])) % v
    if kind == 3:  # more than 19 significant digits: the slow path
        return ("%s%d.%0*d" % (rnd.choice(["", "-"]), rnd.randrange(10 ** 6), 22,
                               rnd.randrange(10 ** 22))).encode()
    if kind == 4:  # mantissa and exponent around the exact fast path's limits
        m = rnd.choice([rnd.randrange(10 ** 6), 2 ** 53 + rnd.randrange(-2, 3)])
        return b"%de%d" % (m, rnd.randrange(-25, 26))
    return rnd.choice(_SPECIAL_NUMBERS).encode()


def random_index(rnd):
    """A valid raw feature index."""
    r = rnd.random()
    if r < 0.85:
        return rnd.randrange(0, 40)
    if r < 0.93:
        return INT32_MAX + rnd.randrange(-3, 4)
    return MAX_INDEX - rnd.randrange(0, 5)


def _index_text(rnd, idx):
    zeros = rnd.choice([0, 0, 0, 1, 3, 25])  # leading zeros, up to 25+ digit tokens
    return b"0" * zeros + b"%d" % idx


def random_lines(rnd, max_lines=12, portable=False):
    """Lines (bytes, no newline) of a valid svmlight file; rows and non-rows mixed.

    ``portable`` keeps to what scikit-learn's reader also accepts: sorted
    indices below 2**31, ``qid`` only as the first pair.
    """
    lines = []
    for _ in range(rnd.randrange(0, max_lines + 1)):
        kind = rnd.random()
        if kind < 0.08:
            lines.append(rnd.choice([b"", b"  ", b"\t\r", b"\r"]))
            continue
        if kind < 0.15:
            lines.append(rnd.choice([b"", b"  "]) + b"#" + random_comment(rnd))
            continue
        k = rnd.choice([0, 1, 2, 3, 5, 8, 30])
        idx = sorted({random_index(rnd) % (40 if portable else MAX_INDEX + 1)
                      for _ in range(k)})
        if rnd.random() < 0.3 and not portable:
            rnd.shuffle(idx)
        tokens = [_index_text(rnd, i) + b":" + random_number(rnd) for i in idx]
        for _ in range(rnd.choice([0, 0, 0, 1] if portable else [0, 0, 0, 1, 2])):
            at = 0 if portable else rnd.randrange(len(tokens) + 1)
            tokens.insert(at, b"qid:%d" % rnd.randrange(100))
        line = rnd.choice([b"", b" ", b"\t"]) + random_number(rnd)
        for tok in tokens:
            line += rnd.choice(_BLANKS) + tok
        if rnd.random() < 0.2:
            line += rnd.choice([b"", b" "]) + b"#" + random_comment(rnd)
        elif rnd.random() < 0.2:
            line += rnd.choice(_BLANKS)
        lines.append(line)
    return lines


def random_comment(rnd):
    """Comment text: any bytes but a newline (including ':', '#', NUL, non-ASCII)."""
    alphabet = b"abc 019:#.,-+\t\r\x00\xc3\xa9\xff"
    return bytes(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 12)))


def join_lines(rnd, lines):
    if not lines:
        return b""
    end = rnd.choice([b"\n", b"\n", b"\r\n"])
    return end.join(lines) + rnd.choice([end, end, b""])  # last newline optional


def random_options(rnd, text):
    """``n_features`` / ``zero_based`` to load ``text`` with: mostly fitting, sometimes not."""
    zero_based = rnd.choice([True, False, "auto"])
    n_features = None
    if rnd.random() < 0.5:
        try:
            n_features = reference_parse(text, None, zero_based)[2]
        except ReferenceError_:
            n_features = rnd.randrange(0, 50)
        n_features = max(0, n_features + rnd.choice([0, 0, 0, 1, 5, -1]))
    return {"n_features": n_features, "zero_based": zero_based}


def _bad_index_token(rnd):
    r = rnd.random()
    if r < 0.4:  # overflow: 19-25 digits, or around 2**62, 2**63, 2**64
        v = rnd.choice([rnd.randrange(10 ** 18, 10 ** 25), rnd.choice(_INDEX_EDGES)])
        v = max(v, MAX_INDEX + 1)
        return b"0" * rnd.choice([0, 0, 2]) + b"%d:1" % v
    return rnd.choice([b"-3:1", b"+3:1", b"1.5:1", b"x:1", b":1", b"3e2:1", b"0x1f:1",
                       b"\xd9\xa3:1", b"3\x00:1", b"3_0:1"])


def _bad_value_token(rnd):
    return b"%d:" % rnd.randrange(1, 40) + rnd.choice(
        [b"", b"abc", b"1:2", b"1_0", b"0x10", b"1e", b"--1", b"nan(1)", b"1\x00", b".",
         b"1d5", b"\xc3\xa9"])


def _bad_label_token(rnd):
    return rnd.choice([b"pos", b"1:0.5", b"qid:1", b"1,2", b"1_0", b"+-1", b"e5", b"\x00"])


def random_invalid(rnd):
    """A file (bytes) with one bad token put into one of its lines (or a new line)."""
    lines = random_lines(rnd, max_lines=8)
    at = rnd.randrange(len(lines) + 1)
    line = lines[at] if at < len(lines) else b"1"
    kind = rnd.randrange(4)
    if kind == 0:
        bad = rnd.choice(_BLANKS) + _bad_index_token(rnd)
    elif kind == 1:
        bad = rnd.choice(_BLANKS) + _bad_value_token(rnd)
    elif kind == 2:  # the same index twice, with other pairs around
        idx = b"%d" % rnd.randrange(1, 40)
        bad = b" " + idx + b":1" + rnd.choice([b" ", b" 99:2 0:3 "]) + idx + b":3"
    else:
        line, bad = _bad_label_token(rnd), b" 1:1"
    line = line.split(b"#", 1)[0]
    if line.strip() == b"" or line.lstrip().startswith(b"#"):
        line = b"1"
    lines[at:at + 1] = [line + bad]
    return join_lines(rnd, lines)


# ---------------------------------------------------------------- checking

CONTAINERS = ("bytes", "fileobj", "reader", "path", "gz", "bz2", "xz")


class _ReadOnly:
    """A binary file object with ``read`` only (no ``readinto``, not seekable)."""

    def __init__(self, data):
        self._f = io.BytesIO(data)

    def read(self, n=-1):
        return self._f.read(n)


_SCRATCH = []  # one directory per process for the files of path containers


def scratch_dir():
    """This process's directory for the files of path containers (created once)."""
    if not _SCRATCH:
        _SCRATCH.append(tempfile.TemporaryDirectory(prefix="aucopt-svmlight-"))
    return _SCRATCH[0].name


def _open_input(text, container, tmpdir=None):
    """``text`` as the reader gets it for ``container``; files go to ``tmpdir``."""
    if container == "bytes":
        return text
    if container == "fileobj":
        return io.BytesIO(text)
    if container == "reader":
        return _ReadOnly(text)
    path = os.path.join(tmpdir or scratch_dir(),
                        "case.svm" + ("" if container == "path" else "." + container))
    with open(path, "wb") as fh:
        fh.write(_packed(text, container))
    return path


@functools.lru_cache(maxsize=16)
def _packed(text, container):
    """``text`` compressed for ``container`` ("path": as it is), once per text, at
    the fastest level: the reader decodes every level the same way, and xz's default
    level took 5-35 ms a file here."""
    compress = {"path": bytes, "gz": lambda b: gzip.compress(b, 1),
                "bz2": lambda b: bz2.compress(b, 1), "xz": lambda b: lzma.compress(b, preset=0)}
    return compress[container](text)


class reader_sizes:
    """Context manager: read files in blocks of ``block`` bytes and start the
    parser's buffers at ``capacity`` rows and entries (small: they grow often)."""

    def __init__(self, block=1 << 20, capacity=None):
        self.sizes = {"_BLOCK_SIZE": block}
        if capacity is not None:
            self.sizes["_FIRST_CAPACITY"] = (capacity, capacity)

    def __enter__(self):
        self.old = {k: getattr(_svmlight, k) for k in self.sizes}
        for k, v in self.sizes.items():
            setattr(_svmlight, k, v)

    def __exit__(self, *exc):
        for k, v in self.old.items():
            setattr(_svmlight, k, v)


def bits(a):
    return np.asarray(a, dtype=np.float64).view(np.int64)


def assert_matches_reference(X, y, ref):
    """``(X, y)`` equal the reference result bit for bit, as canonical CSR.

    ``X`` may also be a list of CSR chunks (``y`` then a list of label
    arrays): they must stack to the reference rows.
    """
    labels, rows, n_features = ref
    chunks = X if isinstance(X, list) else [X]
    indptr, indices, data, offset = [0], [], [], 0
    for C in chunks:
        assert sp.isspmatrix_csr(C) and C.has_canonical_format
        assert C.shape[1] == n_features and C.data.dtype == np.float64
        assert C.indices.dtype == C.indptr.dtype == choose_index_dtype(C.nnz, n_features)
        indptr += (C.indptr[1:] + offset).tolist()
        offset += C.nnz
        indices += C.indices.tolist()
        data += bits(C.data).tolist()
    assert indptr == np.cumsum([0] + [len(r) for r in rows]).tolist()
    assert indices == [i for r in rows for i, _ in r]
    assert data == bits([v for r in rows for _, v in r]).tolist()
    y = np.concatenate([np.empty(0)] + y) if isinstance(y, list) else y
    assert y.dtype == np.float64 and bits(y).tolist() == bits(labels).tolist()


def check_case(text, n_features=None, zero_based="auto", container="bytes", block=1 << 20,
               capacity=None, chunk_size=None):
    """Load ``text`` as the reference says: same rows, or ValueError on the same line.

    ``container`` picks how the reader gets the text (:data:`CONTAINERS`),
    ``block`` and ``capacity`` set :class:`reader_sizes`, and ``chunk_size``
    checks :func:`iter_svmlight` too (chunks stacked = the reference rows). Returns
    "accepted" or "rejected"; raises AssertionError on any disagreement.
    """
    try:
        ref, ref_line = reference_parse(text, n_features, zero_based), None
    except ReferenceError_ as exc:
        ref, ref_line = None, exc.line
    kwargs = dict(n_features=n_features, zero_based=zero_based)
    with reader_sizes(block, capacity):
        try:
            X, y = load_svmlight(_open_input(text, container), **kwargs)
        except ValueError as exc:
            assert ref_line is not None, f"rejected a valid file: {exc}"
            assert str(exc).startswith(f"line {ref_line}: "), (ref_line, str(exc))
        else:
            assert ref_line is None, f"accepted a file the reference rejects at line {ref_line}"
            assert_matches_reference(X, y, ref)
        if chunk_size is not None:
            _check_chunks(_open_input(text, container), kwargs, chunk_size, ref,
                          ref_line, seekable=container != "reader")
    return "accepted" if ref_line is None else "rejected"


def _check_chunks(f, kwargs, chunk_size, ref, ref_line, seekable):
    one_pass = kwargs["n_features"] is not None and kwargs["zero_based"] != "auto"
    if not (one_pass or seekable):
        try:
            iter_svmlight(f, chunk_size, **kwargs)
        except ValueError as exc:
            assert "not seekable" in str(exc), str(exc)
            return
        raise AssertionError("iter_svmlight accepted a non-seekable stream for two passes")
    chunks = []
    try:
        chunks.extend(iter_svmlight(f, chunk_size, **kwargs))
    except ValueError as exc:
        assert ref_line is not None, f"iter_svmlight rejected a valid file: {exc}"
        assert str(exc).startswith(f"line {ref_line}: "), (ref_line, str(exc))
        return
    assert ref_line is None, "iter_svmlight accepted an invalid file"
    n_rows = [X.shape[0] for X, _ in chunks]
    assert n_rows == [chunk_size] * (len(ref[1]) // chunk_size) + \
        ([len(ref[1]) % chunk_size] if len(ref[1]) % chunk_size else [])
    assert_matches_reference([X for X, _ in chunks], [y for _, y in chunks], ref)


# ---------------------------------------------------------------- generated files

# Examples per fuzzing test: a third by default, all with AUCOPT_FULL_TESTS=1 (which CI
# runs in its second step): the three tests took 15 s of the suite with all of them
FUZZ = 3 if FULL else 1

_CASE = dict(container=st.sampled_from(CONTAINERS),
             block=st.sampled_from([1, 2, 3, 7, 64, 1 << 20]),
             capacity=st.sampled_from([1, 2, 5, None]),
             chunk_size=st.sampled_from([None, 1, 2, 5, 50_000]))


@settings(max_examples=100 * FUZZ, deadline=None)
@given(rnd=st.randoms(use_true_random=False), **_CASE)
def test_valid_files_match_the_reference(rnd, **case):
    text = join_lines(rnd, random_lines(rnd))
    note(repr(text))
    check_case(text, **random_options(rnd, text), **case)


@settings(max_examples=100 * FUZZ, deadline=None)
@given(rnd=st.randoms(use_true_random=False), **_CASE)
def test_invalid_files_raise_on_the_reference_line(rnd, **case):
    text = random_invalid(rnd)
    note(repr(text))
    options = random_options(rnd, text) if rnd.random() < 0.3 else {}
    assert check_case(text, **options, **case) == "rejected"


@settings(max_examples=50 * FUZZ, deadline=None)
@given(rnd=st.randoms(use_true_random=False))
def test_valid_files_match_sklearn_where_both_accept(rnd):
    skd = pytest.importorskip("sklearn.datasets")
    text = join_lines(rnd, random_lines(rnd, portable=True))
    note(repr(text))
    options = random_options(rnd, text)
    try:
        X, y = load_svmlight(text, **options)
        Xs, ys = skd.load_svmlight_file(io.BytesIO(text), dtype=np.float64, **options)
    except ValueError:
        assume(False)
    Xs = sp.csr_matrix(Xs)
    Xs.sort_indices()
    # without any feature scikit-learn returns one column, aucopt none
    assert X.shape == Xs.shape or (X.nnz == 0 and options["n_features"] is None
                                   and X.shape[0] == Xs.shape[0])
    assert X.indptr.tolist() == Xs.indptr.tolist()
    assert X.indices.tolist() == Xs.indices.tolist()
    assert bits(X.data).tolist() == bits(Xs.data).tolist()
    assert bits(y).tolist() == bits(ys).tolist()


# ---------------------------------------------------------------- index overflow


@pytest.mark.parametrize("index", [
    MAX_INDEX + 1, MAX_INDEX + 9, 2 ** 63 - 1, 2 ** 63, 2 ** 63 + 1, 2 ** 64 - 1, 2 ** 64,
    2 ** 64 + 5, 10 ** 19, 10 ** 20, 10 ** 25 - 1, 18446744073709551621,
    46116860184273879040, 99999999999999999999,
])
@pytest.mark.parametrize("zero_based", [True, False, "auto"])
def test_too_large_index_is_an_error(index, zero_based):
    for text in (b"1 1:1\n\n-1 2:1 %d:1\n" % index, b"1 1:1\n\n-1 %d:1 2:1\n" % index,
                 b"1 1:1\n\n-1 000%d:1\n" % index):
        with pytest.raises(ValueError, match=rf"^line 3: feature index '0*{index}' is too "
                                             r"large: indices may be at most 2\*\*62 - 1"):
            load_svmlight(text, zero_based=zero_based)


def test_largest_index_and_leading_zeros_are_accepted():
    X, _ = load_svmlight(b"1 %d:2.5 1:1\n" % MAX_INDEX, zero_based=True)
    assert X.shape == (1, MAX_INDEX + 1)
    assert X.indices.dtype == np.int64 and X.indices.tolist() == [1, MAX_INDEX]
    X, _ = load_svmlight(b"1 " + b"0" * 40 + b"7:1\n", zero_based=False)
    assert X.shape == (1, 7) and X.indices.tolist() == [6]


def test_bad_value_after_an_index_longer_than_the_message_shows():
    # found by tools/fuzz.py: the message cut the token before its ':' and then
    # raised IndexError looking for the value
    with pytest.raises(ValueError, match=r"^line 2: value 'x1' of feature 0{60}\.\.\. is "
                                         "not a number"):
        load_svmlight(b"1 1:1\n-1 " + b"0" * 70 + b"5:x1\n")


def test_reproducer_index_wrapping_to_4():
    # 18446744073709551621 = 2**64 + 5 used to wrap around to column 4
    with pytest.raises(ValueError, match=r"^line 1: feature index '18446744073709551621' "
                                         "is too large"):
        load_svmlight(b"1 18446744073709551621:1\n")


def test_reproducer_index_wrapping_to_minus_one():
    # used to return column index -1, an invalid CSR matrix
    text = b"1 46116860184273879040:1 2:1\n-1 1:1 2:1\n" * 50
    for read in (load_svmlight, lambda t: list(iter_svmlight(t, 7, 10, False))):
        with pytest.raises(ValueError, match=r"^line 1: feature index '46116860184273879040' "
                                             "is too large"):
            read(text)


# ---------------------------------------------------------------- CSR post-condition


def csr_is_valid(indptr, indices, n_rows, n_cols):
    """Plain-Python statement of what check_csr verifies."""
    if len(indptr) != n_rows + 1 or indptr[0] != 0 or indptr[-1] != len(indices):
        return False
    for i in range(n_rows):
        a, b = indptr[i], indptr[i + 1]
        if b < a:
            return False
        row = list(indices[a:b])
        if any(not 0 <= j < n_cols for j in row) or row != sorted(set(row)):
            return False
    return True


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_check_csr_against_plain_python(dtype):
    rng = random.Random(3)
    seen = set()
    for _ in range(3000):
        n_rows, n_cols = rng.randrange(0, 4), rng.randrange(0, 5)
        indptr = sorted(rng.randrange(0, 6) for _ in range(n_rows + 1))
        if rng.random() < 0.3:
            indptr[0] = 0
        if rng.random() < 0.2 and n_rows:
            indptr[rng.randrange(n_rows + 1)] = rng.randrange(-1, 7)
        nnz = indptr[-1] if rng.random() < 0.8 else rng.randrange(0, 6)
        indices = [rng.randrange(-1, n_cols + 2) for _ in range(max(nnz, 0))]
        if rng.random() < 0.5:  # mostly canonical rows, so both outcomes are common
            indices = [j for a, b in zip(indptr, indptr[1:]) for j in
                       sorted(rng.sample(range(n_cols), min(max(b - a, 0), n_cols)))]
        expected = csr_is_valid(indptr, indices, n_rows, n_cols)
        got = kernel.check_csr(np.array(indptr, dtype), np.array(indices, dtype),
                               n_rows, n_cols)
        assert (got is None) == expected, (indptr, indices, n_cols, got)
        seen.add(expected)
    assert seen == {True, False}


def test_invalid_csr_never_leaves_the_reader():
    parser = kernel.Parser(MAX_INDEX, MAX_INDEX)
    parser.feed(b"1 5:1\n")  # a column beyond the n_features given below
    with pytest.raises(RuntimeError, match=r"invalid CSR matrix \(row 0: .*\[5\]"):
        _svmlight._take_csr(parser, 3, True, np.dtype(np.float64))


# ---------------------------------------------------------------- streaming


def _sample_text(n_rows=400, seed=0):
    """An svmlight file with comments, blank lines, qid, CRLF and an unsorted row."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, 30)) * (rng.random((n_rows, 30)) < 0.3)
    y = rng.choice([-1.0, 1.0], n_rows)
    buf = io.BytesIO()
    dump_svmlight(X, y, buf, comment="header\nsecond line")
    lines = buf.getvalue().split(b"\n")
    lines[5] = b"\r"
    lines[9] = b"  # a comment-only line"
    lines[12] = b"-1 qid:7 30:1.5 2:0.25 # unsorted, with qid\r"
    return b"\n".join(lines)


@pytest.mark.parametrize("container", ["bytes", "fileobj", "reader", "path", "gz", "bz2",
                                       "xz"])
def test_iter_chunks_stack_to_load(tmp_path, container):
    text = _sample_text()
    X, y = load_svmlight(text)
    for block, capacity in ((1, 1), (5, 3), (64, None), (4096, 2), (1 << 20, None)):
        for chunk_size in (1, 7, 100, 398, 399, 50_000):
            with reader_sizes(block, capacity):
                f = _open_input(text, container, tmp_path)
                one_pass = {"n_features": X.shape[1], "zero_based": False}
                chunks = list(iter_svmlight(f, chunk_size, **(
                    one_pass if container == "reader" else {})))
            assert [C.shape[0] for C, _ in chunks] == \
                [min(chunk_size, X.shape[0] - a) for a in range(0, X.shape[0], chunk_size)]
            stacked = sp.vstack([C for C, _ in chunks], format="csr")
            assert stacked.shape == X.shape
            assert stacked.indptr.tolist() == X.indptr.tolist()
            assert stacked.indices.tolist() == X.indices.tolist()
            assert bits(stacked.data).tolist() == bits(X.data).tolist()
            assert bits(np.concatenate([c for _, c in chunks])).tolist() == bits(y).tolist()


@pytest.mark.parametrize("options", [{}, {"n_features": 30, "zero_based": False}])
def test_iter_error_line_is_that_of_the_whole_file(options):
    lines = _sample_text().split(b"\n")
    lines[300] = b"1 3:1 4:x"
    text = b"\n".join(lines)
    with pytest.raises(ValueError, match=r"^line 301: value 'x' of feature 4"):
        load_svmlight(text, **options)
    got = []
    with reader_sizes(64), pytest.raises(ValueError, match=r"^line 301: value 'x'"):
        for X, _ in iter_svmlight(text, 40, **options):
            got.append(X.shape[0])
    rows_before = sum(1 for line in lines[:300] if line.split(b"#")[0].strip())
    # one pass: the chunks before the error were yielded; two passes: the scan failed first
    assert got == ([40] * (rows_before // 40) if options else [])


def test_iter_reads_a_file_object_from_its_position():
    text = _sample_text(50)
    f = io.BytesIO(b"1 1:1\n" * 3 + text)
    f.read(18)
    chunks = list(iter_svmlight(f, 20))  # two passes, both from position 18
    X, _ = load_svmlight(text)
    assert sum(C.shape[0] for C, _ in chunks) == X.shape[0]
    assert all(C.shape[1] == X.shape[1] for C, _ in chunks)


def test_iter_options_are_checked_when_called():
    with pytest.raises(ValueError, match="chunk_size"):
        iter_svmlight(b"1 1:1\n", chunk_size=0)
    with pytest.raises(ValueError, match="zero_based"):
        iter_svmlight(b"1 1:1\n", zero_based="yes")
    with pytest.raises(ValueError, match="not seekable.*n_features"):
        iter_svmlight(_ReadOnly(b"1 1:1\n"), n_features=3)
    with pytest.raises(TypeError, match="'rb'"), open(__file__) as fh:
        iter_svmlight(fh, n_features=3, zero_based=False)


def _written_in_thread(path, data):
    """Write ``data`` to the pipe or FIFO ``path`` from a thread (opening a FIFO
    blocks until a reader opens it too); returns the thread."""
    def write():
        with open(path, "wb") as fh:
            fh.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_iter_read_once_paths(tmp_path):
    """A FIFO or a pipe named by path (as /dev/stdin is) can be read once: a second
    pass (n_features or zero_based inferred) is refused when called, never
    answered with no rows or a hang; with both given the rows are read in one pass."""
    text = _sample_text(30)
    X, y = load_svmlight(text, zero_based=False)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    read_end, write_end = os.pipe()
    try:
        for path in (fifo, f"/dev/fd/{read_end}"):
            with pytest.raises(ValueError, match="not a regular file.*n_features"):
                iter_svmlight(path)
            with pytest.raises(ValueError, match="not a regular file"):
                iter_svmlight(path, n_features=X.shape[1])
        thread = _written_in_thread(fifo, text)
        chunks = list(iter_svmlight(fifo, 7, n_features=X.shape[1], zero_based=False))
        thread.join(timeout=10)
        assert not thread.is_alive()
        assert (sp.vstack([C for C, _ in chunks]) != X).nnz == 0
        assert np.array_equal(np.concatenate([t for _, t in chunks]), y)
        thread = _written_in_thread(f"/dev/fd/{write_end}", text)
        thread.join(timeout=10)
        os.close(write_end)
        write_end = None
        X_pipe, y_pipe = load_svmlight(f"/dev/fd/{read_end}", zero_based=False)
        assert (X_pipe != X).nnz == 0 and np.array_equal(y_pipe, y)
    finally:
        os.close(read_end)
        if write_end is not None:
            os.close(write_end)


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_compressed_data_through_a_pipe_path(compress):
    """Compression recognised by magic bytes on a path that can be read once (a
    pipe as /dev/stdin): the bytes read to recognise it are decompressed with the
    rest of the same file, which is opened once (they used to be lost: no rows)."""
    text = _sample_text(40)
    X, y = load_svmlight(text, zero_based=False)
    for read in (lambda path: [load_svmlight(path, zero_based=False)],
                 lambda path: list(iter_svmlight(path, 9, n_features=X.shape[1],
                                                 zero_based=False))):
        read_end, write_end = os.pipe()
        data = compress(text)

        def write():
            with os.fdopen(write_end, "wb") as fh:  # closing it ends the pipe
                fh.write(data)

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        try:
            chunks = read(f"/dev/fd/{read_end}")
        finally:
            thread.join(timeout=10)
            os.close(read_end)
        assert (sp.vstack([C for C, _ in chunks]) != X).nnz == 0
        assert np.array_equal(np.concatenate([t for _, t in chunks]), y)


def test_a_decompressing_file_object_over_a_pipe_is_read_once():
    """gzip.open of a pipe says seekable() but cannot rewind: the second pass is
    the read-once ValueError, not io.UnsupportedOperation."""
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as fh:
        fh.write(gzip.compress(_sample_text(30)))
    with open(read_end, "rb") as raw, gzip.open(raw, "rb") as f:
        with pytest.raises(ValueError, match="not seekable.*n_features"):
            list(iter_svmlight(f))


def test_iter_corner_cases():
    assert list(iter_svmlight(b"# only a comment\n\n")) == []
    (X, y), = iter_svmlight(b"1 1:2\n", dtype=np.float32)
    assert X.dtype == np.float32 and X.shape == (1, 1)
    (X, _), = iter_svmlight(b"1 1:2\n", n_features=2 ** 31 + 5, zero_based=False)
    assert X.indices.dtype == np.int64 and X.shape == (1, 2 ** 31 + 5)
    # an index beyond int32 in a later chunk: that chunk alone gets int64 indices
    chunks = list(iter_svmlight(b"1 1:1\n-1 3000000000:2\n1 2:1\n", 1))
    assert [C.indices.dtype for C, _ in chunks] == [np.int64] * 3  # n_features > int32
    assert [C.indices.tolist() for C, _ in chunks] == [[0], [2999999999], [1]]


def test_line_longer_than_a_block():
    line = b"1 " + b" ".join(b"%d:%d" % (i, i) for i in range(1, 3000)) + b"\n"
    with reader_sizes(16):
        X, _ = load_svmlight(io.BytesIO(b"-1 5:5\n" + line + b"1 7:7"))
    assert X.shape == (3, 2999) and X.nnz == 3001
    assert X.indices[1:3000].tolist() == list(range(2999))


def _traced_peak(read):
    """``(read(), peak of Python allocations during it)``."""
    tracemalloc.start()
    try:
        out = read()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("container", ["bz2", "stream"])
def test_a_long_line_costs_its_rows_not_its_text(tmp_path, container):
    """A line far longer than a block is parsed token by token as it is read: a
    4 MB comment, a 4 MB run of blanks or 4 MB of repeated pairs hold about one
    block of text (a 256 MiB line of each peaked at 785 MiB before, 6 MiB after)."""
    lines = {"comment": b"1 1:1 # " + b"x" * (4 << 20) + b"\n-1 2:1\n",
             "blanks": b"1 1:1" + b" " * (4 << 20) + b"2:1\n-1 2:1\n",
             "duplicates": b"1 " + b"1:1 " * (1 << 20) + b"\n"}
    for kind, text in lines.items():
        path = tmp_path / f"{kind}.svm.bz2"
        path.write_bytes(bz2.compress(text))
        source = path if container == "bz2" else bz2.open(path, "rb")
        with reader_sizes(64 << 10):
            if kind == "duplicates":
                with pytest.raises(ValueError, match="line 1: feature index 1 appears more"):
                    _traced_peak(lambda: load_svmlight(source))
                continue
            (X, y), peak = _traced_peak(lambda: load_svmlight(source))
        assert y.tolist() == [1.0, -1.0] and X.nnz == 1 + (kind == "blanks") + 1
        assert peak < 1 << 20, (kind, peak)


def test_tokens_are_at_most_max_token_bytes(monkeypatch):
    monkeypatch.setattr(_svmlight, "_MAX_TOKEN", 1 << 12)
    with reader_sizes(1 << 10):
        X, _ = load_svmlight(io.BytesIO(b"1 1:" + b"0" * 4000 + b"1 2:2\n"))
        assert X.toarray().tolist() == [[1.0, 2.0]]
        with pytest.raises(ValueError, match="line 2: a token of more than 4096 bytes"):
            load_svmlight(io.BytesIO(b"1 1:1\n1 1:" + b"0" * 5000 + b"1 2:2\n"))


def test_rows_cut_by_partial_blocks_equal_whole_rows():
    """Rows, label-only lines, comments and int64 indices split anywhere by small
    buffers read as from one block (also in chunks)."""
    text = (b"# head\n1 3:1 1:2 qid:4 2:3 # tail\n-1\n\n2 4:0.5 3000000000:1\n"
            + b"1 " + b" ".join(b"%d:%d" % (i, i) for i in range(900, 0, -1)) + b" \n"
            + b"-1 5:5")
    X, y = load_svmlight(text)
    for block in (1, 2, 3, 7, 64):
        with reader_sizes(block, 2):
            Xb, yb = load_svmlight(io.BytesIO(text))
            chunks = list(iter_svmlight(io.BytesIO(text), 2))
        assert (Xb != X).nnz == 0 and np.array_equal(yb, y)
        assert np.array_equal(np.concatenate([c[1] for c in chunks]), y)
        assert (sp.vstack([c[0] for c in chunks]) != X).nnz == 0


def test_compressed_newlines_are_never_held_whole(tmp_path):
    # a small bz2 file expanding to 32 MB: the reader holds one block, not the text
    path = tmp_path / "newlines.svm.bz2"
    path.write_bytes(bz2.compress(b"\n" * (32 << 20) + b"1 1:1\n"))
    assert path.stat().st_size < 1000
    tracemalloc.start()
    try:
        X, y = load_svmlight(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert X.shape == (1, 1) and y.tolist() == [1.0]
    assert peak < 4 << 20, peak


# ---------------------------------------------------------------- damaged input


@pytest.mark.parametrize("ext, compress", [(".gz", gzip.compress), (".bz2", bz2.compress),
                                           (".xz", lzma.compress), ("", gzip.compress)])
def test_truncated_compressed_file_is_a_clear_error(tmp_path, ext, compress):
    data = compress(_sample_text(30))
    path = tmp_path / ("data.svm" + ext)  # "": recognised by its magic bytes (6 at most)
    n = len(data)
    cuts = set(range(1 if ext else 6, 40)) | set(range(40, n, n // 40)) | set(range(n - 24, n))
    for cut in sorted(cuts):
        path.write_bytes(data[:cut])
        for read in (load_svmlight, lambda p: list(iter_svmlight(p, 10))):
            with pytest.raises(ValueError, match=rf"^{path}: the \w+-compressed file is "
                                                 "truncated or corrupt"):
                read(path)


@pytest.mark.parametrize("ext, compress", [(".gz", gzip.compress), (".bz2", bz2.compress),
                                           (".xz", lzma.compress)])
def test_corrupt_compressed_file_is_a_clear_error(tmp_path, ext, compress):
    data = bytearray(compress(_sample_text(30)))
    data[len(data) // 2] ^= 0x5A  # payload
    data[-6] ^= 0x01  # checksum / index
    path = tmp_path / ("data.svm" + ext)
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_svmlight(path)
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_svmlight(gzip.GzipFile(fileobj=io.BytesIO(bytes(data)))
                      if ext == ".gz" else bz2.BZ2File(io.BytesIO(bytes(data)))
                      if ext == ".bz2" else lzma.LZMAFile(io.BytesIO(bytes(data))))


def test_dump_comment_is_utf8_and_round_trips():
    X = np.array([[0.0, 1.5], [2.0, 0.0]])
    buf = io.BytesIO()
    dump_svmlight(X, [1, -1], buf, comment="café\nnaïve ☃ 1:2 # again")
    text = buf.getvalue()
    assert text.startswith("# café\n# naïve ☃ 1:2 # again\n".encode("utf-8"))
    X2, y2 = load_svmlight(text, n_features=2, zero_based=False)
    assert X2.toarray().tolist() == X.tolist() and y2.tolist() == [1.0, -1.0]


def test_rows_before_a_row_needing_int64_indices_are_kept():
    # the parser switches to 64-bit indices mid-block and re-reads only that row
    text = b"1\n2 1:1\n0 4611686018427387903:0 # needs int64\n-1 1:1 3000000000:2\n"
    for block, capacity in ((1, 1), (1, None), (1 << 20, 1), (1 << 20, None)):
        with reader_sizes(block, capacity):
            X, y = load_svmlight(text, zero_based=False)
        assert y.tolist() == [1, 2, 0, -1]
        assert X.indptr.tolist() == [0, 0, 1, 2, 4]
        assert X.indices.tolist() == [0, MAX_INDEX - 1, 0, 2999999999]
