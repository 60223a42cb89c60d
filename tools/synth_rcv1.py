"""An rcv1-shaped sparse binary task, generated (the real RCV1 is not in the data directory).

Shape and statistics follow RCV1-v2's CCAT task as LIBSVM distributes it (Lewis, Yang,
Rose & Li, "RCV1: A New Benchmark Collection for Text Categorization Research", JMLR
2004): 804,414 documents x 47,236 terms, ~60 M non-zeros (~75 distinct terms per
document), L2-normalised TF-IDF rows, ~47 % positives. Terms are drawn from a Zipf law
(exponent 1.1 over the term ranks), each document's length from a log-normal around 75
distinct terms; a planted linear ranking signal over the terms (a sparse-ish Gaussian
weight vector) decides the label through a threshold at the 53 % quantile, and 5 % of
the labels are flipped (label noise). Everything is drawn from one seed, block by block,
so any prefix of the rows is the same whatever ``--rows`` is.

Usage::

    python tools/synth_rcv1.py --out tools/out/rcv1 [--rows 804414] [--seed 0] [--svmlight]

writes ``<out>.npz`` (CSR ``data/indices/indptr`` + ``y``, loadable by :func:`load`;
:func:`split` gives the benchmarks' train / test rows)
and, with ``--svmlight``, ``<out>.svm`` (1-based, readable by
``aucopt.datasets.load_svmlight`` / ``iter_svmlight``). The generator keeps one block
of rows in memory beyond the CSR it returns.
"""
import argparse
import functools
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

N_ROWS = 804_414
N_FEATURES = 47_236
MEAN_NNZ = 75
POSITIVE_FRACTION = 0.47
LABEL_NOISE = 0.05
ZIPF_EXPONENT = 1.1
BLOCK = 50_000
# The benchmarks test on the last TEST_ROWS rows and train on (a prefix of) the others
TEST_ROWS = 80_414
DEFAULT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "rcv1")


class _Law:
    """The fixed parts of the generator: term law, idf, planted weights, threshold."""

    def __init__(self, seed):
        rng = np.random.default_rng([seed, 0])
        p = 1.0 / np.arange(1, N_FEATURES + 1) ** ZIPF_EXPONENT
        self.cdf = np.cumsum(p / p.sum())
        self.cdf[-1] = 1.0
        # document frequency falls with rank: idf grows like log(rank)
        df = np.minimum(1.0, MEAN_NNZ * p / p.sum() * 3.0)
        self.idf = np.log(1.0 + 1.0 / df)
        w = rng.standard_normal(N_FEATURES)
        w[rng.random(N_FEATURES) < 0.7] = 0.0  # 30 % of the terms carry the signal
        self.w = w
        # threshold: the (1 - positive fraction) quantile of clean scores on a sample
        Xs = self.block(np.random.default_rng([seed, 1]), 20_000)
        self.threshold = np.quantile(Xs @ w, 1.0 - POSITIVE_FRACTION)

    def block(self, rng, n):
        """``n`` L2-normalised TF-IDF rows (CSR), drawn from ``rng``."""
        lengths = np.maximum(1, rng.lognormal(np.log(MEAN_NNZ) - 0.18, 0.6, n)).astype(np.int64)
        # draw ~1.6x tokens per distinct term wanted: repeats become term frequencies
        tokens = (lengths * 1.6).astype(np.int64)
        rows = np.repeat(np.arange(n, dtype=np.int64), tokens)
        terms = np.searchsorted(self.cdf, rng.random(rows.size), side="right")
        np.minimum(terms, N_FEATURES - 1, out=terms)
        keys, tf = np.unique(rows * N_FEATURES + terms, return_counts=True)
        r, c = np.divmod(keys, N_FEATURES)
        val = (1.0 + np.log(tf)) * self.idf[c]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=n), out=indptr[1:])
        X = sp.csr_matrix((val, c.astype(np.int32), indptr), shape=(n, N_FEATURES))
        norms = np.sqrt(np.add.reduceat(val * val, indptr[:-1])) if val.size else val
        X.data /= np.repeat(norms, np.diff(indptr))
        return X


@functools.lru_cache(maxsize=2)
def _law(seed):
    return _Law(seed)


def block(index, n_rows=BLOCK, seed=0):
    """Rows ``[index * BLOCK, index * BLOCK + n_rows)`` of the task as ``(X, y)``
    (``n_rows <= BLOCK``), drawn without the blocks before it: workers of a cluster
    can each make their own."""
    law = _law(seed)
    rng = np.random.default_rng([seed, 2, index])
    X = law.block(rng, n_rows)
    y = np.where(X @ law.w > law.threshold, 1.0, -1.0)
    flip = rng.random(y.size) < LABEL_NOISE
    y[flip] = -y[flip]
    return X, y


def generate(n_rows=N_ROWS, seed=0, verbose=False):
    """Return ``(X, y)``: an rcv1-shaped CSR matrix and labels in {-1, +1}."""
    parts, labels = [], []
    t0 = time.perf_counter()
    for b, start in enumerate(range(0, n_rows, BLOCK)):
        X, y = block(b, min(BLOCK, n_rows - start), seed)
        parts.append(X)
        labels.append(y)
        if verbose:
            print(f"  rows {start + y.size:,} / {n_rows:,} ({time.perf_counter() - t0:.1f} s)",
                  file=sys.stderr)
    X = sp.vstack(parts, format="csr")
    X.indptr = X.indptr.astype(np.int64)
    return X, np.concatenate(labels)


def save(path, X, y):
    """Write ``X`` and ``y`` as an uncompressed ``.npz`` (CSR arrays and labels) at
    ``path`` (as given: no ``.npz`` is added), atomically: a killed run leaves no
    partial file that a later run would take for the data."""
    from aucopt.datasets import atomic_write

    with atomic_write(path) as f:
        np.savez(f, data=X.data, indices=X.indices, indptr=X.indptr,
                 shape=np.array(X.shape), y=y)


def load(path):
    """Read what :func:`save` wrote; returns ``(X, y)``."""
    with np.load(path) as z:
        X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        return X, z["y"]


def rows_view(X, start, stop):
    """Rows ``start:stop`` of a CSR matrix as views of its arrays (scipy's own
    slicing, and its constructor given views of much larger arrays, copy them)."""
    view = sp.csr_matrix((stop - start, X.shape[1]))
    lo, hi = X.indptr[start], X.indptr[stop]
    view.data, view.indices = X.data[lo:hi], X.indices[lo:hi]
    view.indptr = X.indptr[start:stop + 1] - lo if start else X.indptr[:stop + 1]
    return view


def split(path=DEFAULT_PATH, rows=None, test_rows=TEST_ROWS):
    """``(X_train, y_train, X_test, y_test)`` of ``<path>.npz`` as views (no copy of
    the matrix): the last ``test_rows`` rows for test, the first ``rows`` of the others
    (all with None) for training. Raises FileNotFoundError naming the command that
    generates the file when it is missing."""
    if not os.path.exists(path + ".npz"):
        raise FileNotFoundError(f"{path}.npz not found: generate it with "
                                f"python tools/synth_rcv1.py --out {path}")
    X, y = load(path + ".npz")
    n_all = X.shape[0] - test_rows
    n = n_all if rows is None else min(int(rows), n_all)
    return rows_view(X, 0, n), y[:n], rows_view(X, n_all, X.shape[0]), y[n_all:]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "out", "rcv1"),
                    help="output path without extension (default tools/out/rcv1)")
    ap.add_argument("--rows", type=int, default=N_ROWS, help=f"rows (default {N_ROWS:,})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--svmlight", action="store_true", help="also write <out>.svm")
    args = ap.parse_args(argv)
    from aucopt.datasets import atomic_write, dump_svmlight

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    t0 = time.perf_counter()
    X, y = generate(args.rows, args.seed, verbose=True)
    print(f"generated {X.shape[0]:,} x {X.shape[1]:,}, nnz {X.nnz:,} "
          f"({X.nnz / X.shape[0]:.1f}/row), {np.mean(y > 0):.1%} positive, "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    save(args.out + ".npz", X, y)
    if args.svmlight:
        with atomic_write(args.out + ".svm") as f:
            for start in range(0, X.shape[0], BLOCK):
                dump_svmlight(X[start:start + BLOCK], y[start:start + BLOCK], f)
    print(f"wrote {args.out}.npz{' and .svm' if args.svmlight else ''} "
          f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
