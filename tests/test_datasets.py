"""Tests for aucopt.datasets: svmlight I/O, preprocessing, bundled data."""
import bz2
import gzip
import hashlib
import io
import lzma
import os
import pathlib
import re
import struct

import numpy as np
import pytest
import scipy.sparse as sp

from aucopt import datasets
from aucopt._kernels import _svmlight as kernel
from aucopt.datasets import (
    Scaler,
    binarize,
    choose_index_dtype,
    dump_svmlight,
    list_datasets,
    load,
    load_svmlight,
    scale,
    split,
)
from aucopt.exceptions import NotFittedError


def bits(a):
    return np.asarray(a, dtype=np.float64).view(np.int64)


def assert_same_csr(A, B):
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    assert A.shape == B.shape
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(bits(A.data), bits(B.data))


def assert_canonical(X):
    assert sp.isspmatrix_csr(X)
    assert X.data.dtype == np.float64
    for i in range(X.shape[0]):
        row = X.indices[X.indptr[i]:X.indptr[i + 1]]
        assert np.all(np.diff(row) > 0)


# ---------------------------------------------------------------- parsing


def test_basic_one_based():
    X, y = load_svmlight(b"+1 1:0.5 3:2\n-1 2:1\n")
    assert X.shape == (2, 3)
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 2], [0, 1, 0]])
    np.testing.assert_array_equal(y, [1.0, -1.0])
    assert y.dtype == np.float64
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32
    assert X.has_canonical_format
    assert_canonical(X)


def test_zero_based_auto_and_explicit():
    X, _ = load_svmlight(b"1 0:1 2:3\n")  # auto: index 0 present -> zero-based
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 3]])
    X, _ = load_svmlight(b"1 1:1 2:3\n", zero_based=True)
    np.testing.assert_array_equal(X.toarray(), [[0, 1, 3]])
    X, _ = load_svmlight(b"1 1:1 2:3\n", zero_based=False)
    np.testing.assert_array_equal(X.toarray(), [[1, 3]])
    X, _ = load_svmlight(b"1 1:1 2:3\n", zero_based="auto")
    assert X.shape == (1, 2)
    with pytest.raises(ValueError, match="zero_based"):
        load_svmlight(b"1 1:1\n", zero_based="yes")


def test_comments_qid_blank_lines_crlf_tabs():
    text = (b"# header comment\r\n"
            b"\r\n"
            b"1 qid:3 2:1.5 # trailing comment 9:9\r\n"
            b"   \t \r\n"
            b"   # indented comment-only line\n"
            b"-1\tqid:3\t1:2e1#glued comment\n"
            b"2\n"                       # label only: empty row
            b"3 3:-0.25")                # no final newline
    X, y = load_svmlight(text)
    np.testing.assert_array_equal(y, [1, -1, 2, 3])
    np.testing.assert_array_equal(
        X.toarray(), [[0, 1.5, 0], [20, 0, 0], [0, 0, 0], [0, 0, -0.25]])


def test_empty_and_comment_only_input():
    for text in (b"", b"\n\n", b"# only a comment\n", b"   "):
        X, y = load_svmlight(text)
        assert X.shape == (0, 0) and y.shape == (0,)
    X, y = load_svmlight(b"", n_features=5)
    assert X.shape == (0, 5)


def test_unsorted_indices_are_sorted():
    X, _ = load_svmlight(b"1 5:5 2:2 9:9 1:1\n")
    np.testing.assert_array_equal(X.indices, [0, 1, 4, 8])
    np.testing.assert_array_equal(X.data, [1, 2, 5, 9])
    # a long row goes through the heapsort branch
    rng = np.random.default_rng(1)
    idx = rng.permutation(np.arange(1, 301))
    line = "1 " + " ".join(f"{i}:{i * 0.5}" for i in idx) + "\n"
    X, _ = load_svmlight(("-1 3:1\n" + line).encode())
    np.testing.assert_array_equal(X.indices[1:], np.arange(300))
    np.testing.assert_array_equal(X.data[1:], np.arange(1, 301) * 0.5)
    assert_canonical(X)


@pytest.mark.parametrize("row", [b"1 2:1 3:1 2:5", b"1 3:1 2:1 3:5", b"1 4:1 4:1"])
def test_duplicate_index_is_an_error(row):
    text = b"# c\n1 1:1\n" + row + b"\n"
    with pytest.raises(ValueError, match=r"^line 3: feature index \d appears more than once"):
        load_svmlight(text)


def test_explicit_zeros_are_kept():
    X, _ = load_svmlight(b"1 1:0 2:1\n")
    assert X.nnz == 2


@pytest.mark.parametrize("tok", [
    "+1", "-1", "1.5", "1e-3", "1E+5", ".5", "5.", "-0", "-0.0", "0", "inf", "-inf",
    "Infinity", "nan", "1e308", "1e309", "4.9e-324", "2e-400", "0.1", "0.0386673",
    "123456789012345678901234567890", "9007199254740993", "1.7976931348623157e308",
    "0.30000000000000004", "3.141592653589793238462643383279", "-1.5e-10",
    "00012.500", "1e22", "1e23", "123e-22", "123e-23",
])
def test_float_forms_bit_identical(tok):
    X, y = load_svmlight(f"{tok} 1:{tok}\n".encode(), zero_based=False)
    assert bits(y)[0] == bits([float(tok)])[0]
    assert bits(X.data)[0] == bits([float(tok)])[0]


def test_float_parser_random_bit_identical():
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 2 ** 63, size=3000, dtype=np.int64).view(np.float64)
    raw = raw[np.isfinite(raw)]
    toks = []
    for v in raw.tolist():
        toks += [repr(v), "%.17g" % v, "%.6g" % v, "%.20e" % v]
    for v in (rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000)).tolist():
        toks += [repr(v), "%.7f" % v, "%.6g" % v]
    for t in toks:
        got = kernel.parse_float(t.encode())
        assert struct.pack("<d", got) == struct.pack("<d", float(t)), t
    for bad in ["", "abc", "1.2.3", "1e", "--1", "1e+", "0x10", "e5", "."]:
        assert kernel.parse_float(bad.encode()) is None, bad


def test_fast_path_is_used_for_typical_tokens():
    for t in ["0.0386673", "1", "-1", "+1", "3.5e2", "0.000125"]:
        assert kernel.fast_path_taken(t.encode())
    for t in ["1e30", "12345678901234567890", "inf", "nan", "9007199254740993"]:
        assert not kernel.fast_path_taken(t.encode())


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("bad_line, pattern", [
    (b"1 1:2 abc", r"line 3: expected 'index:value', got 'abc'"),
    (b"1 -2:1", r"line 3: negative feature index '-2'"),
    (b"1 1.5:1", r"line 3: feature index '1.5' .*not a non-negative integer"),
    (b"1 x:1", r"line 3: feature index 'x' .*not a non-negative integer"),
    (b"1 :1", r"line 3: feature index '' .*not a non-negative integer"),
    (b"1 2:abc", r"line 3: value 'abc' of feature 2 is not a number"),
    (b"1 2:", r"line 3: value '' of feature 2 is not a number"),
    (b"1 2:1:3", r"line 3: value '1:3' of feature 2 is not a number"),
    (b"1:0.5 2:1", r"line 3: missing label"),
    (b"qid:1 2:1", r"line 3: missing label"),
    (b"1,2 2:1", r"line 3: multilabel label '1,2' is not supported"),
    (b"pos 2:1", r"line 3: label 'pos' is not a number"),
    (b"1 99999999999999999999999:1", r"line 3: feature index .* too large"),
])
def test_error_messages_name_the_line(bad_line, pattern):
    text = b"1 1:1\n# comment line\n" + bad_line + b"\n-1 2:2\n"
    with pytest.raises(ValueError, match=pattern):
        load_svmlight(text)
    # CRLF and blank lines count as lines too
    text = b"1 1:1\r\n\r\n" + bad_line + b"\r\n"
    with pytest.raises(ValueError, match="line 3:"):
        load_svmlight(text)


def test_index_zero_with_one_based_is_an_error():
    with pytest.raises(ValueError, match=r"line 2: feature index 0 found but zero_based=False"):
        load_svmlight(b"1 1:1\n1 0:1\n", zero_based=False)


def test_n_features_checks():
    text = b"1 1:1\n\n-1 3:1\n1 5:1 6:1\n"
    X, _ = load_svmlight(text, n_features=10, zero_based=False)
    assert X.shape == (3, 10)
    X, _ = load_svmlight(text, n_features=6, zero_based=False)
    assert X.shape == (3, 6)
    with pytest.raises(ValueError, match=r"line 4: feature index 6 is out of range for n_features=5"):
        load_svmlight(text, n_features=5, zero_based=False)
    with pytest.raises(ValueError, match=r"line 3: feature index 3 is out of range for n_features=3"):
        load_svmlight(text, n_features=3, zero_based=True)
    # auto resolved to zero-based (index 0 on line 4): index 6 needs n_features=7
    text = b"1 1:1\n-1 6:1\n1 2:1\n1 0:1\n"
    with pytest.raises(ValueError, match=r"line 2: feature index 6 is out of range for n_features=6"):
        load_svmlight(text, n_features=6)
    assert load_svmlight(text, n_features=7)[0].shape == (4, 7)
    with pytest.raises(ValueError, match="n_features"):
        load_svmlight(text, n_features=-1)


def test_choose_index_dtype():
    big = 2 ** 31 - 1
    assert choose_index_dtype(0, 0) == np.int32
    assert choose_index_dtype(big, big) == np.int32
    assert choose_index_dtype(big + 1, 10) == np.int64
    assert choose_index_dtype(10, big + 1) == np.int64
    with pytest.raises(ValueError):
        choose_index_dtype(-1, 3)


def test_int64_indices_when_needed():
    # an index beyond int32: the parser switches to 64-bit buffers
    X, y = load_svmlight(b"1 3000000000:2.5\n-1 1:1\n", zero_based=False)
    assert X.shape == (2, 3000000000)
    assert X.indices.dtype == np.int64 and X.indptr.dtype == np.int64
    assert X.indices[0] == 2999999999 and X.data[0] == 2.5
    # n_features beyond int32 alone also asks for int64
    X, _ = load_svmlight(b"1 1:1\n", n_features=2 ** 31 + 5)
    assert X.indices.dtype == np.int64


# ---------------------------------------------------------------- inputs


def test_input_kinds(tmp_path):
    text = b"# c\n1 1:0.5 3:2\n-1 2:1\n"
    ref_X, ref_y = load_svmlight(text)
    paths = {"plain.svm": text, "a.gz": gzip.compress(text),
             "a.bz2": bz2.compress(text), "a.xz": lzma.compress(text),
             "bz2_without_extension.dat": bz2.compress(text)}
    for name, content in paths.items():
        p = tmp_path / name
        p.write_bytes(content)
        for f in (p, str(p)):
            X, y = load_svmlight(f)
            assert_same_csr(X, ref_X)
            np.testing.assert_array_equal(y, ref_y)
    for f in (io.BytesIO(text), bytearray(text), memoryview(text)):
        X, y = load_svmlight(f)
        assert_same_csr(X, ref_X)
    with open(tmp_path / "plain.svm") as fh, pytest.raises(TypeError, match="'rb'"):
        load_svmlight(fh)
    with pytest.raises(FileNotFoundError):
        load_svmlight(tmp_path / "missing.svm")
    with pytest.raises(TypeError):
        load_svmlight(12345)
    X32, _ = load_svmlight(text, dtype=np.float32)
    assert X32.dtype == np.float32


# ---------------------------------------------------------------- dump


def _random_matrix(rng, n=40, d=15, density=0.3):
    X = rng.standard_normal((n, d)) * 10.0 ** rng.integers(-8, 8, (n, d))
    X[rng.random((n, d)) > density] = 0.0
    specials = [1e-300, 0.1, -3.5e12, 5e-324, 1.7976931348623157e308, 1.0, -2.0,
                1 / 3, 2.0 ** 60, -0.0]
    X[: len(specials), 0] = specials
    X[5] = 0.0  # an empty row
    return X


@pytest.mark.parametrize("zero_based", [False, True])
def test_dump_load_round_trip(tmp_path, zero_based):
    rng = np.random.default_rng(42)
    X = _random_matrix(rng)
    y = rng.choice([-1.0, 1.0, 2.0, 0.5, 1e-7, -0.0], size=X.shape[0])
    for Xin in (X, sp.csr_matrix(X), sp.csc_matrix(X), sp.coo_matrix(X)):
        buf = io.BytesIO()
        dump_svmlight(Xin, y, buf, zero_based=zero_based, comment="two\nlines")
        X2, y2 = load_svmlight(buf.getvalue(), n_features=X.shape[1], zero_based=zero_based)
        ref = sp.csr_matrix(X)  # nonzeros only (-0.0 == 0 is not stored)
        assert_same_csr(X2, ref)
        np.testing.assert_array_equal(bits(y2), bits(y))
    p = tmp_path / "out.svm"
    dump_svmlight(X, y, p, zero_based=zero_based)
    X3, y3 = load_svmlight(str(p), n_features=X.shape[1], zero_based=zero_based)
    assert_same_csr(X3, sp.csr_matrix(X))
    np.testing.assert_array_equal(bits(y3), bits(y))


def test_dump_format_and_comment():
    buf = io.BytesIO()
    dump_svmlight(np.array([[0.0, 0.5, 0], [1.0, 0, -2.25e-10]]), [1, -1], buf,
                  comment="made by a test")
    assert buf.getvalue() == b"# made by a test\n1 2:0.5\n-1 1:1 3:-2.25e-10\n"
    buf = io.BytesIO()
    dump_svmlight(np.eye(2), [0.5, 3], buf, zero_based=True)
    assert buf.getvalue() == b"0.5 0:1\n3 1:1\n"
    # duplicates in the sparse input are summed, explicit zeros kept
    Xc = sp.coo_matrix(([1.0, 2.0, 0.0], ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    buf = io.BytesIO()
    dump_svmlight(Xc, [1, 1], buf)
    assert buf.getvalue() == b"1 2:3\n1 1:0\n"
    with pytest.raises(ValueError, match="rows"):
        dump_svmlight(np.eye(2), [1, 2, 3], io.BytesIO())
    with pytest.raises(ValueError, match="multilabel"):
        dump_svmlight(np.eye(2), np.ones((2, 2)), io.BytesIO())


# ---------------------------------------------------------------- sklearn


def test_matches_sklearn_on_generated_file(tmp_path):
    skd = pytest.importorskip("sklearn.datasets")
    rng = np.random.default_rng(7)
    lines = []
    fmts = ["%.6g", "%.17g", "%r", "%.3e", "%d"]
    for i in range(300):
        k = rng.integers(0, 30)
        idx = np.sort(rng.choice(np.arange(1, 500), size=k, replace=False))
        vals = (rng.standard_normal(k) * 10.0 ** rng.integers(-20, 20, k)).tolist()
        toks = []
        for j, v in zip(idx, vals):
            f = fmts[rng.integers(len(fmts))]
            toks.append(f"{j}:" + (f % (int(v) if f == "%d" else v)))
        label = rng.choice(["1", "-1", "+1", "2.5"])
        lines.append(label + (" " if toks else "") + " ".join(toks))
    p = tmp_path / "gen.svm"
    p.write_text("# generated\n" + "\n".join(lines) + "\n")
    X, y = load_svmlight(p, n_features=500, zero_based=False)
    Xs, ys = skd.load_svmlight_file(str(p), n_features=500, zero_based=False)
    Xs = sp.csr_matrix(Xs)
    Xs.sort_indices()
    assert_same_csr(X, Xs)
    np.testing.assert_array_equal(bits(y), bits(ys))


def test_matches_sklearn_on_bundled_file():
    skd = pytest.importorskip("sklearn.datasets")
    path = os.path.join(datasets._bundled.DATA_DIR, "ionosphere.svm.bz2")
    X, y = load_svmlight(path, n_features=34, zero_based=False)
    Xs, ys = skd.load_svmlight_file(path, n_features=34, zero_based=False)
    assert_same_csr(X, Xs)
    np.testing.assert_array_equal(bits(y), bits(ys))


# ---------------------------------------------------------------- binarize


def test_binarize():
    y = np.array([1, 3, 7, 2, 5, 6, 20])
    np.testing.assert_array_equal(binarize(y, range(1, 6)), [1, 1, -1, 1, 1, -1, -1])
    np.testing.assert_array_equal(binarize(y, {7, 20}), [-1, -1, 1, -1, -1, -1, 1])
    np.testing.assert_array_equal(binarize(y, lambda c: c <= 5), binarize(y, range(1, 6)))
    np.testing.assert_array_equal(binarize(y, lambda c: c in {3, 6}),
                                  [-1, 1, -1, -1, -1, 1, -1])
    np.testing.assert_array_equal(binarize(y.astype(float), 7), [-1, -1, 1, -1, -1, -1, -1])
    np.testing.assert_array_equal(binarize(["a", "b", "a"], ["a"]), [1, -1, 1])
    assert binarize(y, [1]).dtype == np.float64
    # one class: a chunk of a label-sorted stream
    np.testing.assert_array_equal(binarize(y, range(0, 100)), np.ones(7))
    np.testing.assert_array_equal(binarize(y, [42]), -np.ones(7))
    np.testing.assert_array_equal(binarize(y, lambda c: c > 100), -np.ones(7))
    with pytest.raises(ValueError):
        binarize([], [1])
    with pytest.raises(ValueError, match="positive is empty"):
        binarize(y, [])


# ---------------------------------------------------------------- scaler


def test_scaler_standard_dense():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 4)) * [1, 10, 0.1, 0] + [5, -2, 0, 3]
    X_orig = X.copy()
    Z = Scaler("standard").fit_transform(X)
    np.testing.assert_array_equal(X, X_orig)  # input untouched
    std = X.std(axis=0)
    expected = (X - X.mean(axis=0)) / np.where(std > 0, std, 1)
    np.testing.assert_allclose(Z, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Z[:, :3].mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Z[:, :3].std(axis=0), 1, rtol=1e-12)
    np.testing.assert_array_equal(Z[:, 3], 0)  # constant column: centred only
    s = Scaler("standard").fit(X[:25])
    np.testing.assert_allclose(s.transform(X[25:]), (X[25:] - s.mean_) / s.scale_)
    with pytest.raises(TypeError, match="maxabs"):
        Scaler("standard").fit(sp.csr_matrix(X))
    with pytest.raises(TypeError, match="sparse"):
        scale(sp.csr_matrix(X))


def test_scaler_maxabs_and_l2_dense_and_sparse():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((30, 6))
    X[rng.random(X.shape) < 0.6] = 0
    X[:, 2] = 0   # all-zero column
    X[7] = 0      # zero row
    m = np.abs(X).max(axis=0)
    exp_maxabs = X / np.where(m > 0, m, 1)
    n = np.linalg.norm(X, axis=1)
    exp_l2 = X / np.where(n > 0, n, 1)[:, None]
    for method, expected in (("maxabs", exp_maxabs), ("l2", exp_l2)):
        Zd = scale(X, method)
        np.testing.assert_allclose(Zd, expected, rtol=1e-14)
        for fmt in (sp.csr_matrix, sp.csc_matrix):
            Xs = fmt(X)
            Zs = Scaler(method).fit_transform(Xs)
            assert sp.isspmatrix_csr(Zs)
            assert Zs.nnz == sp.csr_matrix(X).nnz  # sparsity kept
            np.testing.assert_allclose(Zs.toarray(), expected, rtol=1e-14)
            np.testing.assert_array_equal(Xs.toarray(), X)  # input untouched
    np.testing.assert_allclose(np.abs(scale(X, "maxabs")).max(axis=0)[[0, 1, 3, 4, 5]], 1)
    np.testing.assert_allclose(np.linalg.norm(scale(X, "l2"), axis=1)[np.arange(30) != 7], 1)


def test_scaler_errors():
    with pytest.raises(NotFittedError):
        Scaler("maxabs").transform(np.eye(2))
    with pytest.raises(ValueError, match="unknown scaling method"):
        Scaler("robust").fit(np.eye(2))
    s = Scaler("maxabs").fit(np.eye(3))
    with pytest.raises(ValueError, match="3"):
        s.transform(np.eye(2))


# ---------------------------------------------------------------- split


@pytest.mark.parametrize("sparse", [False, True])
def test_split_stratified(sparse):
    rng = np.random.default_rng(0)
    y = np.where(rng.random(1000) < 0.1, 1.0, -1.0)
    X = np.arange(2000.0).reshape(1000, 2)
    Xin = sp.csr_matrix(X) if sparse else X
    Xtr, Xte, ytr, yte = split(Xin, y)
    assert Xtr.shape == (800, 2) and Xte.shape == (200, 2)
    assert sp.issparse(Xtr) == sparse
    rows_tr = (Xtr.toarray() if sparse else Xtr)[:, 0] / 2
    rows_te = (Xte.toarray() if sparse else Xte)[:, 0] / 2
    assert set(rows_tr).isdisjoint(rows_te)
    assert len(set(rows_tr) | set(rows_te)) == 1000
    np.testing.assert_array_equal(y[rows_te.astype(int)], yte)
    assert abs((yte == 1).mean() - (y == 1).mean()) < 0.005
    assert abs((ytr == 1).mean() - (y == 1).mean()) < 0.005
    # deterministic for a seed, different for another
    again = split(Xin, y)
    np.testing.assert_array_equal(again[3], yte)
    other = split(X, y, random_state=1)[1]
    assert not np.array_equal(other[:, 0], rows_te * 2)
    assert split(X, y, test_size=100)[1].shape == (100, 2)
    with pytest.raises(ValueError):
        split(X, y, test_size=1.5)


# ---------------------------------------------------------------- bundled


EXPECTED = {  # name: (n, d, nnz, n_pos) as documented in data/SOURCES.md
    "spambase": (4601, 57, 59231, 1813),
    "ionosphere": (351, 34, 10513, 225),
    "dna_ei": (3186, 180, 144902, 767),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_datasets(name):
    n, d, nnz, n_pos = EXPECTED[name]
    X, y = load(name)
    assert X.shape == (n, d) and X.nnz == nnz
    assert_canonical(X)
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert int((y == 1).sum()) == n_pos
    assert name in list_datasets() and f"n={n}" in list_datasets()[name]
    Xtr, Xte, ytr, yte = split(X, y)
    assert Xte.shape[0] == round(0.2 * n)
    assert abs((yte == 1).mean() - n_pos / n) < 0.01


def test_bundled_files_match_sources_md():
    data_dir = pathlib.Path(datasets._bundled.DATA_DIR)
    text = (data_dir / "SOURCES.md").read_text()
    sums = dict((f, h) for h, f in re.findall(r"([0-9a-f]{64})\s+(\S+\.bz2)", text))
    files = sorted(p.name for p in data_dir.glob("*.bz2"))
    assert sorted(sums) == files and len(files) == len(EXPECTED)
    for f in files:
        assert hashlib.sha256((data_dir / f).read_bytes()).hexdigest() == sums[f]


def test_unknown_dataset():
    with pytest.raises(ValueError, match="dna_ei, ionosphere, spambase"):
        load("iris")


def test_public_api():
    for name in ["load_svmlight", "iter_svmlight", "dump_svmlight", "binarize", "Scaler",
                 "scale", "load", "list_datasets", "split"]:
        obj = getattr(datasets, name)
        assert name in datasets.__all__
        assert obj.__doc__ and "Parameters" in obj.__doc__ or name == "list_datasets"
