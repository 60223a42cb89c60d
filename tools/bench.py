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
next to a JSON record in ``--out`` (default ``tools/out/``).

Adding a workload
-----------------
Decorate a function taking a :class:`Context` and returning a setup dict::

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
            cleanup=lambda: ...,           # optional
        )

``Contestant(run, prepare=f)`` calls ``f()`` untimed before every timed call
and passes its result to ``run`` (e.g. a fresh, unfitted learner).  A
contestant that raises is reported as ``error: ...``; a workload whose setup
raises (missing data, ...) is reported as ``unavailable: ...``: neither stops
the rest of the run.  ``extras`` receives the contestant's output and its
timing stats (``{"median": s, "min": s, "times": [...]}``), so columns such as
time per epoch can be derived from them.
"""
import argparse
import datetime
import gc
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)  # benchmark the checkout, installed or not

import numpy as np  # noqa: E402

WORKLOADS = {}


class Unavailable:
    """Placeholder for a contestant that cannot run here (reason shown)."""

    def __init__(self, reason):
        self.reason = str(reason)


class Contestant:
    """A timed callable ``run(prepare())``; ``prepare`` (optional) is untimed."""

    def __init__(self, run, prepare=None):
        self.run = run
        self.prepare = prepare


class _Workload:
    def __init__(self, name, fn, description, columns):
        self.name = name
        self.fn = fn
        self.description = description
        self.columns = tuple(columns)


def workload(name, description=None, columns=()):
    """Register ``fn(ctx) -> setup dict`` as the workload ``name``.

    ``columns`` fixes the order of the extra-result columns (others follow in
    the order the ``extras`` function returns them).
    """

    def deco(fn):
        if name in WORKLOADS:
            raise ValueError(f"workload {name!r} is defined twice")
        doc = description or (fn.__doc__ or "").strip().split("\n")[0]
        WORKLOADS[name] = _Workload(name, fn, doc, columns)
        return fn

    return deco


class Context:
    """What a workload's setup gets: data directory, scratch space, seed."""

    def __init__(self, data_dir, tmpdir, seed=0):
        self.data_dir = data_dir
        self.tmpdir = tmpdir
        self.seed = seed

    def data(self, relpath):
        """Absolute path of ``relpath`` under the data directory (must exist)."""
        path = os.path.join(self.data_dir, relpath)
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{path} not found (data dir {self.data_dir}; set --data or AUCOPT_DATA)"
            )
        return path

    def rng(self):
        return np.random.default_rng(self.seed)


# ------------------------------------------------------------------ workloads
@workload(
    "roc_auc",
    description="ROC AUC of 10^6 scores (rounded to 1e-4, so tied), ~10% positives",
    columns=("AUC",),
)
def _roc_auc(ctx):
    from sklearn.metrics import roc_auc_score

    from aucopt.metrics import roc_auc

    n = 10**6
    rng = ctx.rng()
    s = np.round(rng.random(n), 4)
    y = np.where(rng.random(n) < 0.1, 1, -1).astype(np.int64)

    def compare(ref, out):
        diff = abs(out - ref)
        return diff <= 1e-12, f"|diff| = {diff:.1e}"

    return dict(
        contestants={
            "aucopt.metrics.roc_auc": lambda: roc_auc(y, s),
            "sklearn roc_auc_score": lambda: roc_auc_score(y, s),
        },
        peer="sklearn roc_auc_score",
        compare=compare,
        extras=lambda out, stats: {"AUC": f"{out:.15f}"},
        params={"n": n, "positives": int((y == 1).sum()), "distinct scores": int(np.unique(s).size)},
    )


SVM_20NEWS = "text/20news_bydate/20news_bydate_tfidf.train.svm.bz2"


@workload(
    "load_svmlight",
    description="parse 20news_bydate tf-idf train (svmlight, d=130108, 1-based), decompressed beforehand",
    columns=("n", "nnz"),
)
def _load_svmlight(ctx):
    import bz2

    from sklearn.datasets import load_svmlight_file

    src = ctx.data(SVM_20NEWS)
    path = os.path.join(ctx.tmpdir, "20news_bydate_tfidf.train.svm")
    with bz2.open(src, "rb") as fin, open(path, "wb") as fout:  # untimed
        shutil.copyfileobj(fin, fout, 1 << 20)
    d = 130108

    try:
        from aucopt.datasets import load_svmlight

        ours = lambda: load_svmlight(path, n_features=d, zero_based=False)  # noqa: E731
    except Exception as exc:  # noqa: BLE001 - being written elsewhere
        ours = Unavailable(f"{type(exc).__name__}: {exc}")

    def compare(ref, out):
        (X0, y0), (X1, y1) = ref, out
        if X0.shape != X1.shape:
            return False, f"shape {X1.shape} != {X0.shape}"
        if not np.array_equal(np.asarray(y0), np.asarray(y1)):
            return False, "y differs"
        X0, X1 = X0.tocsr().copy(), X1.tocsr().copy()
        X0.sort_indices()
        X1.sort_indices()
        for part in ("indptr", "indices", "data"):
            if not np.array_equal(getattr(X0, part), getattr(X1, part)):
                return False, f"X.{part} differs"
        return True, f"nnz {X1.nnz}"

    return dict(
        contestants={
            "aucopt.datasets.load_svmlight": ours,
            "sklearn load_svmlight_file": lambda: load_svmlight_file(path, n_features=d, zero_based=False),
        },
        peer="sklearn load_svmlight_file",
        compare=compare,
        extras=lambda out, stats: {"n": out[0].shape[0], "nnz": out[0].nnz},
        params={"file": SVM_20NEWS, "uncompressed MB": round(os.path.getsize(path) / 2**20, 1), "d": d},
    )


# --------------------------------------------------------------------- engine
def _short(exc):
    msg = f"{type(exc).__name__}: {exc}"
    return msg if len(msg) <= 200 else msg[:197] + "..."


def _call(c):
    """One timed call of a contestant; returns (seconds, output)."""
    arg = c.prepare() if c.prepare is not None else None
    gc.collect()
    if c.prepare is not None:
        t0 = time.perf_counter()
        out = c.run(arg)
        t1 = time.perf_counter()
    else:
        t0 = time.perf_counter()
        out = c.run()
        t1 = time.perf_counter()
    return t1 - t0, out


def run_workload(wl, ctx, repeat, warmup, log=print):
    rec = {"name": wl.name, "description": wl.description, "status": "ok", "contestants": []}
    try:
        setup = wl.fn(ctx)
    except Exception as exc:  # noqa: BLE001
        rec["status"] = f"unavailable: {_short(exc)}"
        rec["traceback"] = traceback.format_exc()
        return rec
    try:
        peer = setup.get("peer")
        compare = setup.get("compare")
        extras = setup.get("extras")
        rec["peer"] = peer
        rec["params"] = setup.get("params", {})
        cons = {}
        for name, c in setup["contestants"].items():
            if callable(c) and not isinstance(c, Contestant):
                c = Contestant(c)
            cons[name] = c
        status = {n: ("ok" if isinstance(c, Contestant) else f"unavailable: {c.reason}") for n, c in cons.items()}
        times = {n: [] for n in cons}
        outputs = {}
        live = [n for n in cons if status[n] == "ok"]

        def attempt(name):
            try:
                dt, out = _call(cons[name])
            except Exception as exc:  # noqa: BLE001
                status[name] = f"error: {_short(exc)}"
                log(f"  {name}: {status[name]}")
                return None
            outputs[name] = out
            return dt

        for _ in range(warmup):
            for name in [n for n in live if status[n] == "ok"]:
                attempt(name)
        for r in range(repeat):
            order = [n for n in live if status[n] == "ok"]
            if order:
                k = r % len(order)
                order = order[k:] + order[:k]
            for name in order:
                dt = attempt(name)
                if dt is not None:
                    times[name].append(dt)
            log(f"  repeat {r + 1}/{repeat}: " + ", ".join(f"{n} {times[n][-1]:.4f}s" for n in order if status[n] == "ok"))

        peer_ok = peer in cons and status[peer] == "ok" and times[peer]
        peer_median = statistics.median(times[peer]) if peer_ok else None
        for name in cons:
            row = {"name": name, "status": status[name], "times": times[name]}
            if status[name] == "ok" and times[name]:
                row["median"] = statistics.median(times[name])
                row["min"] = min(times[name])
                row["ratio"] = row["median"] / peer_median if peer_median else None
                stats = {"median": row["median"], "min": row["min"], "times": times[name]}
                row["extras"] = {}
                if extras is not None:
                    try:
                        row["extras"] = dict(extras(outputs[name], stats))
                    except Exception as exc:  # noqa: BLE001
                        row["extras"] = {"extras error": _short(exc)}
                if name == peer:
                    row["identical"], row["identical_detail"] = None, "(peer)"
                elif compare is None or not peer_ok:
                    row["identical"], row["identical_detail"] = None, "n/a"
                else:
                    try:
                        res = compare(outputs[peer], outputs[name])
                        ok, detail = res if isinstance(res, tuple) else (res, "")
                        row["identical"], row["identical_detail"] = bool(ok), str(detail)
                    except Exception as exc:  # noqa: BLE001
                        row["identical"], row["identical_detail"] = False, f"compare raised {_short(exc)}"
            rec["contestants"].append(row)
        rec["columns"] = list(wl.columns)
    finally:
        cleanup = setup.get("cleanup") if isinstance(setup, dict) else None
        if cleanup is not None:
            cleanup()
    return rec


# ---------------------------------------------------------------------- report
def environment():
    env = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    if hasattr(os, "sched_getaffinity"):
        env["cpus_available"] = len(os.sched_getaffinity(0))
    for mod in ("numpy", "scipy", "sklearn", "Cython", "aucopt"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            env[mod] = "not installed"
    try:
        rev = subprocess.run(
            ["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        env["git"] = rev.stdout.strip() or "no commit"
    except Exception:  # noqa: BLE001
        env["git"] = "unknown"
    return env


def _fmt(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    return str(v)


def _secs(v):
    return "" if v is None else f"{v:.4g}"


def markdown(report):
    env = report["env"]
    lines = [
        f"# aucopt benchmarks ({report['created']})",
        "",
        "Environment: " + ", ".join(f"{k} {v}" for k, v in env.items()),
        "",
        f"Timing: median and min of {report['repeat']} interleaved repeats after "
        f"{report['warmup']} warm-up call(s); ratio = median / peer median (< 1 is faster).",
    ]
    for wl in report["workloads"]:
        lines += ["", f"## {wl['name']}", "", wl["description"]]
        if wl.get("params"):
            lines += ["", "Parameters: " + ", ".join(f"{k} = {_fmt(v)}" for k, v in wl["params"].items())]
        if wl["status"] != "ok":
            lines += ["", f"**{wl['status']}**"]
            continue
        cols = list(wl.get("columns", []))
        for row in wl["contestants"]:
            for k in row.get("extras", {}):
                if k not in cols:
                    cols.append(k)
        peer = wl.get("peer")
        head = ["contestant", "median [s]", "min [s]", f"ratio vs {peer}", "identical"] + cols
        lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in wl["contestants"]:
            if row["status"] != "ok":
                cells = [row["name"], row["status"]] + [""] * (len(head) - 2)
            else:
                ident = row.get("identical_detail", "")
                if row.get("identical") is not None:
                    ident = ("yes" if row["identical"] else "**NO**") + (f" ({ident})" if ident else "")
                ratio = row.get("ratio")
                cells = [
                    row["name"],
                    _secs(row.get("median")),
                    _secs(row.get("min")),
                    "" if ratio is None else f"{ratio:.3f}",
                    ident,
                ] + [_fmt(row.get("extras", {}).get(c)) for c in cols]
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


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
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.path.join(args.out, f"bench-{stamp}-{'+'.join(names)}"[:200])
    with open(base + ".json", "w") as f:
        json.dump(report, f, indent=2, default=_fmt)
    with open(base + ".md", "w") as f:
        f.write(md)
    print(f"wrote {base}.json and {base}.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
