#!/usr/bin/env python
"""PSAM's ``n_jobs=2`` speed-up on text: epoch time with 1 and 2 threads, and the test
AUC after the same number of epochs (issue 23, "Cores that help on text").

Usage::

    python tools/lane_speedup.py [--sets news20,rcv1] [--epochs 4] [--repeats 3]
                                 [--learner psam] [--rcv1 tools/out/rcv1] [--rcv1-rows 0]

Fits alternate between ``n_jobs=1`` and ``n_jobs=2`` (interleaved repeats, so that a
burst of load from elsewhere hits both); each fit runs ``--epochs`` passes with a fixed
seed, each pass timed by :func:`pairtiming.timed_passes`. Reported per set and thread
count: the best over repeats of the mean pass time, the test AUC of the last fit, and
the load average (``os.getloadavg``) before and after: a 2-thread time is meaningful
only while the load leaves a second core free. The rcv1-shaped set is the one of
``tools/synth_rcv1.py`` with ``tools/rcv1_workload.py``'s split (last 80,414 rows for
test), optionally cut to its first ``--rcv1-rows`` training rows.
"""
import argparse
import os

import numpy as np

import aucopt
from pairtiming import timed_passes  # this script's folder is first on sys.path
from synth_rcv1 import DEFAULT_PATH


def load(name, rcv1_path, rcv1_rows):
    if name == "rcv1":
        from synth_rcv1 import split

        return split(rcv1_path, rcv1_rows or None)
    from tasks import load_task

    return load_task(name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="news20,rcv1")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--learner", default="psam")
    ap.add_argument("--rcv1", default=DEFAULT_PATH)
    ap.add_argument("--rcv1-rows", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"{'set':8} {'jobs':>4} {'epoch s':>9} {'speed-up':>8} {'test AUC':>9} "
          f"{'dAUC':>8}  load before/after")
    for name in args.sets.split(","):
        X, y, X_te, y_te = load(name, args.rcv1, args.rcv1_rows)
        best, auc, load_avg = {}, {}, {}
        for _ in range(args.repeats):
            for jobs in (1, 2):
                before = os.getloadavg()[0]
                model = aucopt.get(args.learner, n_epochs=args.epochs, n_jobs=jobs,
                                   random_state=args.seed)
                seconds = timed_passes(model, X, y)
                after = os.getloadavg()[0]
                mean = float(np.mean(seconds))
                if mean < best.get(jobs, np.inf):
                    best[jobs], load_avg[jobs] = mean, (before, after)
                auc[jobs] = model.score(X_te, y_te)
        for jobs in (1, 2):
            print(f"{name:8} {jobs:4d} {best[jobs]:9.4f} {best[1] / best[jobs]:8.2f} "
                  f"{auc[jobs]:9.4f} {auc[jobs] - auc[1]:+8.4f}  "
                  f"{load_avg[jobs][0]:.2f}/{load_avg[jobs][1]:.2f}", flush=True)


if __name__ == "__main__":
    main()
