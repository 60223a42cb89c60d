#!/usr/bin/env python
"""aucopt.dask.fit on a text task in its stored row order against one process.

    PYTHONPATH=. python tools/dask_row_order.py [--task news20] [--learners psam,cbr_diag]
                                                [--blocks 4] [--workers 2] [--seeds 0]

The training rows are taken as the file stores them (news20's train file is sorted by
label, so blocks of consecutive rows hold one class or few), cut into ``--blocks``
CSR blocks of a dask array, and trained on a ``distributed.LocalCluster`` of
``--workers`` processes (1 thread each) with ``shuffle=True`` (the default: rows
repartitioned before training) and ``shuffle=False`` (the blocks as stored); the
single process fits the same learner (``fit`` shuffles its rows). Printed per
learner and seed: the three test AUCs, the gaps to the single process and the
verdict of issue 26 (``shuffle=True`` within 0.005 of the single process).
"""
import argparse
import sys
import time

import numpy as np

import aucopt
import aucopt.dask as ad
from tasks import load_task  # tools/tasks.py: this script's folder is first on sys.path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="news20")
    ap.add_argument("--learners", default="psam,cbr_diag")
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", default="0")
    args = ap.parse_args(argv)

    import dask.array as da
    from distributed import Client, LocalCluster

    X, y, X_te, y_te = load_task(args.task)
    labels = np.flatnonzero(np.diff(y) != 0).size + 1
    print(f"{args.task}: {X.shape[0]} training rows as stored ({labels} runs of one label), "
          f"{X.shape[1]} features; {args.blocks} blocks, {args.workers} workers")
    rows = -(-X.shape[0] // args.blocks)
    Xd = da.from_array(X, chunks=(rows, X.shape[1]), asarray=False)
    yd = da.from_array(y, chunks=rows)
    failed = False
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        print(f"{'learner':10s} {'seed':>4s} {'one process':>12s} {'shuffle=True':>13s} "
              f"{'gap':>8s} {'shuffle=False':>14s} {'gap':>8s} {'s (True)':>9s}  verdict")
        for name in args.learners.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                single = aucopt.get(name, random_state=seed).fit(X, y).score(X_te, y_te)
                start = time.perf_counter()
                dealt = ad.fit(aucopt.get(name, random_state=seed), Xd, yd,
                               client=client).score(X_te, y_te)
                seconds = time.perf_counter() - start
                kept = ad.fit(aucopt.get(name, random_state=seed), Xd, yd, client=client,
                              shuffle=False).score(X_te, y_te)
                ok = abs(dealt - single) <= 0.005
                failed |= not ok
                print(f"{name:10s} {seed:4d} {single:12.4f} {dealt:13.4f} "
                      f"{dealt - single:+8.4f} {kept:14.4f} {kept - single:+8.4f} "
                      f"{seconds:9.1f}  {'PASS' if ok else 'FAIL'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
