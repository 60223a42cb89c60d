#!/usr/bin/env python
"""The rcv1-scale workload (issue 13): load time, fit time per epoch, peak RSS, growth in n.

Usage::

    python tools/rcv1_workload.py [--data tools/out/rcv1] [--learners psam,asam,...]
                                  [--fractions 0.25,0.5,1] [--test-rows 80414]
                                  [--repeat 1] [--no-svmlight]

The data is the rcv1-shaped matrix of ``tools/synth_rcv1.py`` (804,414 x 47,236, ~61 M
non-zeros; generated into ``--data`` first if missing). The last ``--test-rows`` rows
are the test set; the learners train on the first ``fraction`` of the others (n/4,
n/2, n). Every measurement runs in a child process of its own, so each peak RSS
(``ru_maxrss``) is that of one learner (or one loader):

* load: ``.npz`` (``synth_rcv1.load``) and svmlight (``aucopt.datasets.load_svmlight``)
  time and peak RSS;
* fit: each learner with its defaults but a fixed number of passes (``PASSES``; fit
  shuffles the order-consuming ones), fit time, seconds per pass (the driver's pass
  hook), test AUC, model state bytes, peak RSS; for PSAM also the random-pair-dot
  floor of its training rows (:func:`pairtiming.pair_dot_floor`).

Verdicts (issue 13): at n, peak RSS beyond the interpreter's (RSS after imports,
before loading) is at most 1.5x the loaded CSR's bytes plus the model state; fit time
at n is within 20% of 4x the time at n/4; a PSAM epoch costs at most 1.3x its
random-pair-dot floor. Issue 23: from n/4 to n the fit time grows at most 4.4x for
PSAM and 4.8x for ASAM and CBR-diag (``GROWTH_CAP``; with the default fractions).
The machine may be shared: rerun on a quiet one (``--repeat`` takes the best of
several fits per child).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

from benchlib import save_report  # this script's folder is first on sys.path
from synth_rcv1 import TEST_ROWS

TOOLS = os.path.dirname(os.path.abspath(__file__))

LEARNERS = ("psam", "asam", "cbr_diag", "opaucr", "solam")
# passes per fit: fixed, so that the work is proportional to n
PASSES = {"psam": {"n_epochs": 2}, "asam": {"n_epochs": 2}, "solam": {"n_epochs": 1}}
# issue 23: the most a learner's fit time may grow from n/4 to n training rows
GROWTH_CAP = {"psam": 4.4, "asam": 4.8, "cbr_diag": 4.8}


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _split(path, test_rows, fraction):
    """Training rows (the first ``fraction`` of the non-test rows) and test rows, as
    views of the loaded arrays (no copy of the matrix), and the CSR's bytes."""
    from synth_rcv1 import load, rows_view

    X, y = load(path + ".npz")
    n_all = X.shape[0] - test_rows
    n = int(round(fraction * n_all))
    csr_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return (rows_view(X, 0, n), y[:n], rows_view(X, n_all, X.shape[0]), y[n_all:],
            csr_bytes)


def _child_load(args):
    base = _rss_mb()
    start = time.perf_counter()
    if args.child == "load-npz":
        from synth_rcv1 import load

        X, _ = load(args.data + ".npz")
    else:
        from aucopt.datasets import load_svmlight

        X, _ = load_svmlight(args.data + ".svm")
    return {"seconds": time.perf_counter() - start, "peak_mb": _peak_mb(),
            "base_mb": base, "nnz": int(X.nnz)}


def _child_fit(args):
    import aucopt
    from pairtiming import pair_dot_floor, timed_passes

    base = _rss_mb()
    X, y, X_te, y_te, csr_bytes = _split(args.data, args.test_rows, args.fraction)
    params = dict(PASSES.get(args.child, {}))
    cls = aucopt.registry.get_class(args.child)
    if "random_state" in cls().get_params():
        params["random_state"] = 0
    best, passes = np.inf, None
    for _ in range(args.repeat):
        model = aucopt.get(args.child, **params)
        start = time.perf_counter()
        seconds = timed_passes(model, X, y)
        fit = time.perf_counter() - start
        if fit < best:
            best, passes = fit, seconds
    out = {"n": X.shape[0], "seconds": best, "passes": passes,
           "auc": float(model.score(X_te, y_te)), "peak_mb": _peak_mb(), "base_mb": base,
           "csr_bytes": csr_bytes,
           "state_bytes": int(sum(v.nbytes for k, v in vars(model).items()
                                  if k.endswith("_") and isinstance(v, np.ndarray)))}
    if args.child == "psam":
        out["floor"] = pair_dot_floor(X, y, repeats=3)
    return out


def _run_child(args, what, fraction=1.0):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", what, "--data", args.data,
           "--test-rows", str(args.test_rows), "--fraction", str(fraction),
           "--repeat", str(args.repeat)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _verdict(ok, text):
    return ("PASS " if ok else "FAIL ") + text


def _report(loads, fits, fractions):
    lines = ["| load | time [s] | peak RSS [MB] |", "|---|---|---|"]
    for what, r in loads.items():
        lines.append(f"| {what} | " + (r["error"] if "error" in r else
                                       f"{r['seconds']:.2f} | {r['peak_mb']:.0f}") + " |")
    head = ["learner", "n", "fit [s]", "per pass [s]", "test AUC", "peak RSS [MB]",
            "RSS beyond imports [MB]", "CSR + state [MB]"]
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    verdicts = []
    for name, by_fraction in fits.items():
        for fraction in fractions:
            r = by_fraction[fraction]
            if "error" in r:
                lines.append(f"| {name} | {fraction} | {r['error']} |")
                continue
            lines.append(
                f"| {name} | {r['n']:,} | {r['seconds']:.2f} | "
                f"{' / '.join(f'{p:.2f}' for p in r['passes'])} | {r['auc']:.4f} | "
                f"{r['peak_mb']:.0f} | {r['peak_mb'] - r['base_mb']:.0f} | "
                f"{(r['csr_bytes'] + r['state_bytes']) / 2**20:.0f} |")
        full, quarter = by_fraction[fractions[-1]], by_fraction[fractions[0]]
        if "error" in full or "error" in quarter:
            continue
        beyond = full["peak_mb"] - full["base_mb"]
        allowed = 1.5 * (full["csr_bytes"] + full["state_bytes"]) / 2**20
        verdicts.append(_verdict(beyond <= allowed, f"{name}: RSS beyond imports "
                                 f"{beyond:.0f} MB <= 1.5 (CSR + state) = {allowed:.0f} MB"))
        growth = full["seconds"] / quarter["seconds"]
        scale = fractions[-1] / fractions[0]
        if len(fractions) > 1:
            floor = (f"; its random pair dots grow {full['floor'] / quarter['floor']:.2f}x"
                     if "floor" in full else "")
            verdicts.append(_verdict(abs(growth / scale - 1.0) <= 0.2,
                                     f"{name}: fit time n/{scale:g} -> n grows {growth:.2f}x "
                                     f"(within 20% of {scale:g}x){floor}"))
            if name in GROWTH_CAP and scale == 4:
                verdicts.append(_verdict(growth <= GROWTH_CAP[name],
                                         f"issue 23: {name} fit time n/4 -> n grows "
                                         f"{growth:.2f}x (<= {GROWTH_CAP[name]:g})"))
        if "floor" in full:
            epoch = float(np.mean(full["passes"]))
            verdicts.append(_verdict(epoch <= 1.3 * full["floor"],
                                     f"{name}: epoch {epoch:.3f} s = "
                                     f"{epoch / full['floor']:.2f}x its random pair dots "
                                     f"{full['floor']:.3f} s (<= 1.3)"))
    return "\n".join(lines + [""] + [f"- {v}" for v in verdicts]) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(TOOLS, "out", "rcv1"),
                    help="path without extension of the .npz (and .svm) data")
    ap.add_argument("--learners", default=",".join(LEARNERS))
    ap.add_argument("--fractions", default="0.25,0.5,1")
    ap.add_argument("--test-rows", type=int, default=TEST_ROWS)
    ap.add_argument("--repeat", type=int, default=1, help="fits per child (best time kept)")
    ap.add_argument("--no-svmlight", action="store_true", help="skip the svmlight load")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--fraction", type=float, default=1.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        out = _child_load(args) if args.child.startswith("load-") else _child_fit(args)
        print(json.dumps(out))
        return 0
    if not os.path.exists(args.data + ".npz"):
        subprocess.run([sys.executable, os.path.join(TOOLS, "synth_rcv1.py"), "--out",
                        args.data] + ([] if args.no_svmlight else ["--svmlight"]), check=True)
    fractions = [float(f) for f in args.fractions.split(",")]
    loads = {"npz": _run_child(args, "load-npz")}
    if not args.no_svmlight and os.path.exists(args.data + ".svm"):
        loads["svmlight"] = _run_child(args, "load-svmlight")
    fits = {}
    for name in args.learners.split(","):
        fits[name] = {}
        for fraction in fractions:
            fits[name][fraction] = _run_child(args, name, fraction)
            print(f"  {name} at {fraction}: {json.dumps(fits[name][fraction])}",
                  file=sys.stderr, flush=True)
    report = _report(loads, fits, fractions)
    print(report)
    save_report(os.path.join(TOOLS, "out", time.strftime("rcv1-%Y%m%d-%H%M%S")),
                {"loads": loads, "fits": fits, "passes": PASSES}, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
