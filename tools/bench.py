#!/usr/bin/env python
"""aucopt benchmark harness: named workloads, contestants timed side by side.

Usage::

    python tools/bench.py [WORKLOAD ...] [--repeat N] [--warmup K] [--out DIR]
                          [--data DIR] [--list]

Every workload runs its contestants in ONE process.  After ``--warmup``
untimed calls each, the contestants are timed ``--repeat`` times, interleaved
within each repeat (the order rotates from repeat to repeat), and the median
and min wall-clock times are reported together with the ratio of each median
to the designated peer's median, per-contestant extra results and a
correctness check against the peer.  A Markdown table is printed and saved
next to a JSON record in ``--out`` (default ``tools/out/``), with a figure of fit
time against AUC (``aucopt.plot.time_to_auc``; when matplotlib is installed).

Adding a workload
-----------------
Put it in a module ``tools/workloads_*.py`` (imported automatically) and
decorate a function taking a :class:`benchlib.Context` returning a setup dict::

    @workload("name", description="what is measured", columns=("AUC",))
    def _(ctx):
        X, y = ...                         # untimed setup (ctx.data(...), ctx.tmpdir)
        return dict(
            contestants={                  # name -> zero-argument callable (timed)
                "aucopt": lambda: ...,     # or Contestant(run, prepare=...)
                "sklearn": lambda: ...,    # or Unavailable("reason")
            },
            peer="sklearn",                # ratio denominator, reference output
            compare=lambda ref, out: ...,  # -> bool or (bool, "detail")
            extras=lambda out, stats: {...},   # -> {column: value}, optional
            params={"n": n},               # shown in the report, optional
            finalize=lambda outputs: ...,  # {name: [output of each repeat]} ->
                                           # {name: {column: value}}, optional
            cleanup=lambda: ...,           # optional
        )

``Contestant(run, prepare=f)`` calls ``f()`` untimed before every timed call
and passes its result to ``run`` (e.g. a fresh, unfitted learner).  A
contestant that raises is reported as ``error: ...``; a workload whose setup
raises (missing data, ...) is reported as ``unavailable: ...``: neither stops
the rest of the run.  ``extras`` receives the contestant's output and its
timing stats (``{"median": s, "min": s, "times": [...]}``), so columns such as
time per epoch can be derived from them; ``finalize`` sees every contestant's
outputs of every repeat, for columns that relate contestants (time to reach the
best peer's AUC; an entry ``"curve": [[seconds, AUC], ...]`` is not a column
but the contestant's line in the figure). A contestant may time itself by returning
``benchlib.Timed(seconds, value)`` (e.g. training time without the evaluation
between epochs); ``seconds`` then replaces the wall-clock time.
"""
import argparse
import datetime
import gc
import glob
import importlib
import os
import sys
import tempfile

from benchlib import (REPO, WORKLOADS, Context, environment, markdown, run_workload,
                      save_report)

TOOLS = os.path.dirname(os.path.abspath(__file__))

for _path in sorted(glob.glob(os.path.join(TOOLS, "workloads_*.py"))):
    importlib.import_module(os.path.splitext(os.path.basename(_path))[0])


def _default_data_dir():
    return os.environ.get("AUCOPT_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workloads", nargs="*", metavar="WORKLOAD", help="names to run (default: all)")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per contestant (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls per contestant first (default 1)")
    ap.add_argument("--out", default=os.path.join(REPO, "tools", "out"), help="output directory (default tools/out/)")
    ap.add_argument("--data", default=None, help="data directory (default $AUCOPT_DATA or ../shared/data from the repo)")
    ap.add_argument("--seed", type=int, default=0, help="random seed passed to workloads")
    ap.add_argument("--list", action="store_true", help="list the workloads and exit")
    args = ap.parse_args(argv)

    if args.list:
        width = max(len(n) for n in WORKLOADS)
        for name, wl in WORKLOADS.items():
            print(f"{name:<{width}}  {wl.description}")
        return 0
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")
    unknown = [n for n in args.workloads if n not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    names = args.workloads or list(WORKLOADS)
    data_dir = os.path.abspath(args.data or _default_data_dir())

    report = {
        "created": datetime.datetime.now().isoformat(timespec="seconds"),
        "env": environment(),
        "repeat": args.repeat,
        "warmup": args.warmup,
        "data_dir": data_dir,
        "workloads": [],
    }
    for name in names:
        print(f"[{name}]", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix=f"aucopt-bench-{name}-") as tmp:
            ctx = Context(data_dir, tmp, seed=args.seed)
            log = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
            report["workloads"].append(run_workload(WORKLOADS[name], ctx, args.repeat, args.warmup, log))
            gc.collect()

    md = markdown(report)
    print(md)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.path.join(args.out, f"bench-{stamp}-{'+'.join(names)}"[:200])
    save_report(base, report, md)
    _figure(base, report)
    return 0


def _figure(base, report):
    """The time-to-AUC figure beside the table (``base.png``), when matplotlib is
    installed and some workload reports an AUC."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from aucopt.plot import save, time_to_auc
    except ImportError as exc:
        print(f"no figure ({exc})", file=sys.stderr)
        return
    try:
        fig = time_to_auc(report)
    except ValueError as exc:
        print(f"no figure: {exc}", file=sys.stderr)
        return
    save(fig, base + ".png", dpi=110)
    plt.close(fig)
    print(f"wrote {base}.png", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
