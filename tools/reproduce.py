#!/usr/bin/env python
"""Re-run the papers' experimental protocols on the data we have; print ours beside theirs.

Usage::

    python tools/reproduce.py [EXPERIMENT ...] [--runs N] [--quick] [--list]

Experiments live in ``tools/repro_*.py`` modules (imported automatically), each a
function decorated with ``reprolib.experiment`` that returns a list of result rows
``{"dataset": ..., "learner": ..., "ours": (mean, std), "paper": (mean, std) or
None, ...}``. The protocol pieces the papers share (their experiment sections:
repeated stratified k-fold runs, hyper-parameters chosen by k-fold CV on the
training part) are the package's ``aucopt.model_selection``; data come from
``tools/tasks.py`` (SOURCES.md's binary tasks). Runs against the installed aucopt.
"""
import argparse
import glob
import importlib
import os
import sys
import time

from reprolib import EXPERIMENTS, print_table

TOOLS = os.path.dirname(os.path.abspath(__file__))
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
