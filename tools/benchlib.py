"""Engine of tools/bench.py: workload registry, interleaved timing, reports.

See tools/bench.py for how to add a workload (modules in tools/workloads/).
"""
import gc
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

import numpy as np

# the checkout (for locating ../shared/data); aucopt itself is the installed package
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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


# --------------------------------------------------------------------- engine
def _short(exc):
    msg = f"{type(exc).__name__}: {exc}"
    return msg if len(msg) <= 200 else msg[:197] + "..."


class Timed:
    """What a contestant returns when it times itself (e.g. training time without
    the evaluation between epochs): ``seconds`` replaces the wall-clock time."""

    def __init__(self, seconds, value):
        self.seconds = float(seconds)
        self.value = value


def quiesce(window=0.02, busy=0.1, limit=1.0):
    """Wait, at most ``limit`` seconds, until this process's other threads are idle: a
    ``window`` in which the whole process used less than ``busy`` of one core.

    After a BLAS call, OpenBLAS's worker threads keep spinning for about 0.1 s
    (numpy's and scipy's pools each: 0.1 s of CPU during a 2 s sleep on the
    benchmark machine, 0.2 s after a ``LogisticRegression`` fit on news20). A
    contestant timed then shares the cores with them (a 0.035 s PSAM fit on news20
    would run entirely beside them). So every timed call starts only once they
    sleep; no contestant's own threads are changed."""
    end = time.perf_counter() + limit
    while time.perf_counter() < end:
        used = time.process_time()
        time.sleep(window)
        if time.process_time() - used < busy * window:
            return


def _call(c):
    """One timed call of a contestant (once the process is quiet, :func:`quiesce`);
    returns (seconds, output)."""
    arg = c.prepare() if c.prepare is not None else None
    gc.collect()
    quiesce()
    if c.prepare is not None:
        t0 = time.perf_counter()
        out = c.run(arg)
        t1 = time.perf_counter()
    else:
        t0 = time.perf_counter()
        out = c.run()
        t1 = time.perf_counter()
    if isinstance(out, Timed):
        return out.seconds, out.value
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
        history = {n: [] for n in cons}  # every timed output, for finalize
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
                    history[name].append(outputs[name])
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
        finalize = setup.get("finalize")
        if finalize is not None:  # columns that compare contestants with each other
            ok_names = [n for n in cons if status[n] == "ok" and history[n]]
            try:
                more = finalize({n: history[n] for n in ok_names})
            except Exception as exc:  # noqa: BLE001
                more = {n: {"finalize error": _short(exc)} for n in ok_names}
            for row in rec["contestants"]:
                extra = dict(more.get(row["name"], {}))
                if "curve" in extra:  # [[seconds, AUC], ...] for the figure, not a column
                    row["curve"] = extra.pop("curve")
                row.setdefault("extras", {}).update(extra)
        rec["columns"] = list(wl.columns)
    finally:
        cleanup = setup.get("cleanup") if isinstance(setup, dict) else None
        if cleanup is not None:
            cleanup()
    return rec


# ---------------------------------------------------------------------- report
def _cpu_model():
    """The CPU's model name (Linux's /proc/cpuinfo, else ``platform.processor()``):
    timings and their ratios differ between CPUs, so a report says which it ran on."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def environment():
    env = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    cpu = _cpu_model()
    if cpu:
        env["cpu"] = cpu
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


def save_report(base, record, md):
    """Write ``record`` to ``base.json`` and the Markdown ``md`` to ``base.md``, each
    atomically (a killed run leaves no half-written report)."""
    import json

    from aucopt.datasets import atomic_write

    os.makedirs(os.path.dirname(base), exist_ok=True)
    with atomic_write(base + ".json") as f:
        f.write(json.dumps(record, indent=2, default=fmt).encode())
    with atomic_write(base + ".md") as f:
        f.write(md.encode())
    print(f"wrote {base}.json and {base}.md", file=sys.stderr)


def fmt(v):
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
        f"{report['warmup']} warm-up call(s), each started once the process's other "
        "threads were idle (OpenBLAS's workers spin ~0.1 s after a BLAS call); ratio = "
        "median / peer median (< 1 is faster).",
    ]
    for wl in report["workloads"]:
        lines += ["", f"## {wl['name']}", "", wl["description"]]
        if wl.get("params"):
            lines += ["", "Parameters: " + ", ".join(f"{k} = {fmt(v)}" for k, v in wl["params"].items())]
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
                ] + [fmt(row.get("extras", {}).get(c)) for c in cols]
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


