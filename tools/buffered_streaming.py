#!/usr/bin/env python
"""Streaming costs of the buffered learners (OAM_seq, OAM_gra, CBR-diag, CBR).

Usage::

    python tools/buffered_streaming.py [--calls N] [--skip-cbr]

1. One-row ``partial_fit`` on a fitted model at d = 10^5 (sparse rows of 100
   nonzeros, buffers full): median wall and CPU time per call over ``--calls``
   calls. The update is O(buffer_size nnz), so nothing O(d) may happen per call.
2. ``cbr`` at d = 2000 (dense rows), fitted on 140 rows: the extra memory
   (``tracemalloc`` peak above the start of the call) of four consecutive 10-row
   ``partial_fit`` calls, as a share of the model state; the call's covariance
   updates are kept pending (no copy of the d x d covariance).

Runs the aucopt of this checkout (or the one on ``PYTHONPATH`` first). The machine
is often shared: read the medians, and compare trees by alternating runs.
"""
import argparse
import os
import time
import tracemalloc

import numpy as np
import scipy.sparse as sp

import aucopt


def _sparse_rows(rng, n, d, nnz):
    ind = np.sort(np.stack([rng.choice(d, nnz, replace=False) for _ in range(n)]), axis=1)
    return sp.csr_matrix((rng.random(n * nnz) / 10, ind.ravel(),
                          np.arange(0, n * nnz + 1, nnz)), shape=(n, d))


def one_row_calls(n_calls, d=100_000, nnz=100):
    rng = np.random.default_rng(0)
    X, y = _sparse_rows(rng, 3000, d, nnz), rng.integers(0, 2, 3000)
    chunks = [_sparse_rows(rng, 1, d, nnz) for _ in range(n_calls + 50)]
    labels = rng.integers(0, 2, n_calls + 50)
    for name in ("oam_seq", "oam_gra", "cbr_diag"):
        model = aucopt.get(name, random_state=0).fit(X, y)
        wall, cpu = [], []
        for i, chunk in enumerate(chunks):
            t, c = time.perf_counter(), time.process_time()
            model.partial_fit(chunk, labels[i:i + 1])
            if i >= 50:  # after a warm-up
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
        print(f"{name:9s} d={d} nnz/row={nnz} buffer_size={model.buffer_size}: one-row "
              f"partial_fit median {1e3 * np.median(wall):.3f} ms wall, "
              f"{1e3 * np.median(cpu):.3f} ms CPU (min {1e3 * min(wall):.3f} ms)", flush=True)


def cbr_memory(d=2000, n=140):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n + 40, d)) / np.sqrt(d)
    y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n + 40) > 0, 1, 0)
    model = aucopt.get("cbr", random_state=0).fit(X[:n], y[:n])
    state = sum(v.nbytes for k, v in vars(model).items()
                if k.endswith("_") and isinstance(v, np.ndarray))
    print(f"cbr d={d}: state {state / 2**20:.2f} MiB (covariance "
          f"{model.covariance_.nbytes / 2**20:.2f} MiB)")
    for lo in range(n, n + 40, 10):
        chunk, labels = X[lo:lo + 10].copy(), y[lo:lo + 10].copy()
        before = model.n_updates_
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        t = time.perf_counter()
        model.partial_fit(chunk, labels)
        seconds = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        print(f"  10-row partial_fit: {model.n_updates_ - before} pair updates, extra "
              f"memory peak {peak / 2**20:.2f} MiB = {100 * peak / state:.1f}% of the "
              f"state, {seconds:.2f} s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000, help="timed one-row calls")
    ap.add_argument("--skip-cbr", action="store_true", help="skip the cbr memory part")
    args = ap.parse_args()
    print(f"aucopt from {os.path.dirname(aucopt.__file__)}")
    one_row_calls(args.calls)
    if not args.skip_cbr:
        cbr_memory()


if __name__ == "__main__":
    main()
