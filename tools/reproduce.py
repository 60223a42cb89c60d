#!/usr/bin/env python
"""Re-run the papers' experimental protocols on the data we have; print ours beside theirs.

Usage::

    python tools/reproduce.py [EXPERIMENT ...] [--runs N] [--quick] [--list]

Experiments live in ``tools/repro_*.py`` modules (imported automatically), each a
function decorated with :func:`experiment` that returns a list of result rows
``{"dataset": ..., "learner": ..., "ours": (mean, std), "paper": (mean, std) or
None, ...}``. The helpers here implement the protocol pieces the documents share
(ALGORITHMS.md section 9): repeated k-fold runs with a random permutation per
run, hyper-parameters chosen by k-fold CV on the training part, and a table
printer. Data come from ``tools/tasks.py`` (SOURCES.md's binary tasks).
"""
import argparse
import glob
import importlib
import itertools
import os
import sys
import time

import numpy as np

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)

import tasks  # noqa: E402,F401  (puts the repository on sys.path)

from aucopt.metrics import roc_auc  # noqa: E402

EXPERIMENTS = {}


def experiment(name, description):
    """Register ``fn(args) -> rows`` as the experiment ``name``."""

    def deco(fn):
        if name in EXPERIMENTS:
            raise ValueError(f"experiment {name!r} is defined twice")
        EXPERIMENTS[name] = (fn, description)
        return fn

    return deco


def kfold_runs(n, n_folds=5, n_runs=1, seed=0, y=None):
    """Yield ``(run, fold, train_idx, test_idx)``: ``n_runs`` random permutations,
    each cut into ``n_folds`` folds (one fold tests, the rest train). With ``y``
    the folds are stratified (each class dealt round-robin over the folds)."""
    rng = np.random.default_rng(seed)
    for run in range(n_runs):
        fold_of = np.empty(n, dtype=np.intp)
        groups = [np.arange(n)] if y is None else [np.flatnonzero(y > 0),
                                                  np.flatnonzero(y <= 0)]
        offset = 0
        for g in groups:
            perm = rng.permutation(g)
            fold_of[perm] = (np.arange(perm.size) + offset) % n_folds
            offset += perm.size
        for fold in range(n_folds):
            yield run, fold, np.flatnonzero(fold_of != fold), np.flatnonzero(fold_of == fold)


def cv_auc(make, X, y, n_folds=3, seed=0):
    """Mean test AUC of ``make()`` over stratified ``n_folds``-fold CV on (X, y)."""
    aucs = []
    for _, _, tr, te in kfold_runs(X.shape[0], n_folds, 1, seed, y):
        model = make().fit(X[tr], y[tr])
        aucs.append(roc_auc(y[te], model.decision_function(X[te])))
    return float(np.mean(aucs))


def select(make, grid, X, y, n_folds=3, seed=0):
    """Parameters from ``grid`` ({name: values}) with the best ``cv_auc``.

    ``make(**params)`` builds a learner. Ties go to the first grid point.
    """
    names = list(grid)
    best, best_auc = None, -np.inf
    for values in itertools.product(*(grid[k] for k in names)):
        params = dict(zip(names, values))
        auc = cv_auc(lambda: make(**params), X, y, n_folds, seed)
        if auc > best_auc:
            best, best_auc = params, auc
    return best


def mean_std(values):
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0


def print_table(title, rows):
    """Print rows as a Markdown table: ours (mean ± std) beside the paper's."""
    print(f"\n### {title}\n")
    extra = [k for r in rows for k in r if k not in ("dataset", "learner", "ours", "paper")]
    extra = list(dict.fromkeys(extra))
    head = ["dataset", "learner", "ours", "paper", "diff"] + extra
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        ours, paper = r["ours"], r.get("paper")
        diff = "" if paper is None else f"{ours[0] - paper[0]:+.3f}"
        cells = [r["dataset"], r["learner"], f"{ours[0]:.3f} ± {ours[1]:.3f}",
                 "n/a" if paper is None else f"{paper[0]:.3f} ± {paper[1]:.3f}", diff]
        cells += [str(r.get(k, "")) for k in extra]
        print("| " + " | ".join(cells) + " |")


# run as a script this module is __main__: let ``from reproduce import ...`` in the
# experiment modules find this copy (and its EXPERIMENTS), not a second one
sys.modules.setdefault("reproduce", sys.modules[__name__])
for _path in sorted(glob.glob(os.path.join(TOOLS, "repro_*.py"))):
    importlib.import_module(os.path.splitext(os.path.basename(_path))[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("experiments", nargs="*", metavar="EXPERIMENT")
    ap.add_argument("--runs", type=int, default=None,
                    help="repetitions (default: the paper's number)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer runs and a smaller grid, to check the pipeline")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--list", action="store_true", help="list the experiments and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name, (_, desc) in EXPERIMENTS.items():
            print(f"{name:<20} {desc}")
        return 0
    unknown = [e for e in args.experiments if e not in EXPERIMENTS]
    if unknown:
        ap.error(f"unknown experiment(s) {unknown}; known: {', '.join(EXPERIMENTS)}")
    for name in args.experiments or list(EXPERIMENTS):
        fn, desc = EXPERIMENTS[name]
        start = time.perf_counter()
        rows = fn(args)
        print_table(f"{name}: {desc} ({time.perf_counter() - start:.0f} s)", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
