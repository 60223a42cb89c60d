"""Defaults on small, imbalanced, heavy-tailed tabular data, against logistic regression.

    AUCOPT_DATA=/work/shared/data PYTHONPATH=. nice -n 10 python tools/tabular.py \\
        [--learners linear|kernel|all|a,b] [--tasks a,b] [--folds 5] [--jobs 2] [--tag T]
    PYTHONPATH=. python tools/tabular.py --report tools/out/tabular*.json

Tasks (``build_tasks``, deterministic): imbalanced binary tasks of 100-5,000 rows
made from the dense sets of ``tasks.py`` (the binary UCI / LIBSVM files, and
one-vs-rest classes of the multi-class ``letter`` and ``pendigits``), with the
positives subsampled to 1-10% (at least 8 positives); each also in a heavy-tailed
version (suffix ``+ht``) where 1% of the rows (at least 2) are multiplied by
factors drawn log-uniformly from 10-100 before standardising, as outlier rows of
shuttle- or page-blocks-like data look after it.

Protocol: stratified 5-fold CV (``aucopt.model_selection.stratified_folds``,
seed 0); each training fold is standardised (``Scaler("standard")`` fitted on it,
applied to both parts); every learner runs on its defaults (``random_state=0``
where it has one) beside scikit-learn's ``LogisticRegression()`` and
``LogisticRegression(class_weight="balanced")``. A task's AUC is the mean over
its folds; a fold whose fit raises counts as AUC 0.5 and the error is counted
(``FloatingPointError`` separately).

The report, per learner: mean test AUC minus ``LogisticRegression()``'s (and the
balanced one's), the tasks more than 0.02 and 0.05 below it, the number of fits
that raised ``FloatingPointError`` / any other error, and the CPU seconds of all
its fits. Markdown + JSON in ``tools/out/tabular[_TAG].{md,json}``; records
merge by (learner, task) with ``--report`` (later files win), so a learner can
be rerun alone after a change.
"""
import argparse
import ast
import json
import os
import signal
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import scipy.sparse as sp

# benchlib, defaults_check, tasks: this script's folder is first on sys.path
from benchlib import environment, save_report
from defaults_check import Timeout, _alarm, builtin_names, seeded
from tasks import load_pooled, load_raw

from aucopt.datasets import Scaler
from aucopt.metrics import roc_auc
from aucopt.model_selection import stratified_folds
from aucopt.registry import get_class

TOOLS = os.path.dirname(os.path.abspath(__file__))

OUT = os.path.join(TOOLS, "out")
BINARY_SOURCES = ["spambase", "sonar", "ionosphere", "pima_diabetes",
                  "breast_cancer_wisconsin", "dna_ei", "vehicle_van", "magic04", "wdbc",
                  "letter_z", "satimage", "shuttle", "german", "a9a", "w8a", "ijcnn1_val"]
# one-vs-rest classes of the multi-class sets (letter: 1 = A; pendigits: digits)
MULTICLASS_SOURCES = {"letter": [1, 5, 9, 13, 17, 21, 25], "pendigits": [0, 2, 4, 6, 8]}
SIZES = [150, 400, 1000, 2500, 5000]
RATES = [0.01, 0.02, 0.03, 0.05, 0.08, 0.10]
MIN_POSITIVES = 8
GAPS = (0.02, 0.05)
BASELINES = ["logreg", "logreg_balanced"]


# --------------------------------------------------------------------------- tasks

def _subsample(X, y, size, rate, rng):
    """Rows of ``(X, y)``: about ``size`` rows of which a share ``rate`` positive
    (at least MIN_POSITIVES), as available."""
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y <= 0)
    n_neg = min(neg.size, int(round(size * (1 - rate))))
    n_pos = min(pos.size, max(MIN_POSITIVES, int(round(n_neg * rate / (1 - rate)))))
    rows = np.concatenate([rng.choice(pos, n_pos, replace=False),
                           rng.choice(neg, n_neg, replace=False)])
    rows = np.sort(rows)
    return X[rows].toarray(), y[rows]


def heavy_tailed(X, rng):
    """``X`` with 1% of its rows (at least 2) scaled by factors in [10, 100]."""
    X = X.copy()
    k = max(2, int(round(0.01 * X.shape[0])))
    rows = rng.choice(X.shape[0], k, replace=False)
    X[rows] *= 10.0 ** rng.uniform(1.0, 2.0, size=k)[:, None]
    return X


def build_tasks():
    """``{name: (X dense, y in {-1, +1})}``: every base task and its ``+ht`` version."""
    sources = [(name, None) for name in BINARY_SOURCES]
    sources += [(name, c) for name, classes in MULTICLASS_SOURCES.items() for c in classes]
    tasks = {}
    for i, (source, cls) in enumerate(sources):
        if cls is None:
            X, y = load_pooled(source)
            name = source
        else:
            X, y, X_te, y_te = load_raw(source)
            X, y = sp.vstack([X, X_te], format="csr"), np.concatenate([y, y_te])
            y = np.where(y == cls, 1.0, -1.0)
            name = f"{source}_{int(cls)}"
        rng = np.random.default_rng(i)
        size, rate = SIZES[i % len(SIZES)], RATES[(5 * i) % len(RATES)]
        Xs, ys = _subsample(X, y, size, rate, rng)
        name = f"{name}-{ys.size}r{100 * np.mean(ys > 0):.0f}%"
        tasks[name] = (Xs, ys)
        tasks[name + "+ht"] = (heavy_tailed(Xs, rng), ys)
    return tasks


# --------------------------------------------------------------------------- fits

def make(learner):
    if learner in BASELINES:
        from sklearn.linear_model import LogisticRegression
        return LogisticRegression(class_weight="balanced" if learner.endswith("balanced")
                                  else None)
    name, *settings = learner.split(":")
    params = {}
    for setting in settings:  # "name:k=v:k=v" sets parameters (values as Python literals)
        key, value = setting.split("=", 1)
        try:
            params[key] = ast.literal_eval(value)
        except ValueError:
            params[key] = value
    return seeded(name, **params)


def run(learner, task, X, y, folds, timeout):
    """One learner on one task: fold AUCs (0.5 where the fit raised), errors, CPU s."""
    aucs, errors, cpu = [], [], 0.0
    info = {}
    for train, test in stratified_folds(y, n_folds=folds, random_state=0):
        scaler = Scaler("standard").fit(X[train])
        X_tr, X_te = scaler.transform(X[train]), scaler.transform(X[test])
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(int(timeout))
        start = time.process_time()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make(learner).fit(X_tr, y[train])
                scores = model.decision_function(X_te)
            aucs.append(float(roc_auc(y[test], scores)))
            for key in ("eta_", "n_passes_", "stop_reason_", "n_retries_"):
                if key in model.__dict__:
                    info.setdefault(key, []).append(plain(model.__dict__[key]))
        except Timeout:
            aucs.append(0.5)
            errors.append("timeout")
        except Exception as exc:  # noqa: BLE001 (counted by type)
            aucs.append(0.5)
            errors.append(type(exc).__name__ + ": " + str(exc).splitlines()[0][:200])
        finally:
            signal.alarm(0)
            cpu += time.process_time() - start
    return {"learner": learner, "task": task, "auc": float(np.mean(aucs)), "folds": aucs,
            "errors": errors, "cpu": cpu, "info": info}


def plain(v):
    return v.item() if hasattr(v, "item") else v


_TASKS = {}


def _job(args):
    learner, task, folds, timeout = args
    X, y = _TASKS[task]
    return run(learner, task, X, y, folds, timeout)


# --------------------------------------------------------------------------- report

def _mean(values):
    values = list(values)
    return float(np.mean(values)) if values else None


def summary(records):
    """Per learner: the table's row (against each baseline)."""
    by = {}
    for r in records:
        by.setdefault(r["learner"], {})[r["task"]] = r
    base = by.get("logreg", {})
    rows = []
    for learner, recs in by.items():
        tasks = [t for t in recs if t in base]
        gaps = np.array([recs[t]["auc"] - base[t]["auc"] for t in tasks])
        bal = by.get("logreg_balanced", {})
        gaps_bal = np.array([recs[t]["auc"] - bal[t]["auc"] for t in tasks if t in bal])
        errors = [e for t in tasks for e in recs[t]["errors"]]
        rows.append({
            "learner": learner, "tasks": len(tasks),
            "mean_auc": float(np.mean([recs[t]["auc"] for t in tasks])) if tasks else None,
            "gap": float(gaps.mean()) if tasks else None,
            "gap_balanced": float(gaps_bal.mean()) if gaps_bal.size else None,
            "gap_plain": _mean(g for g, t in zip(gaps, tasks) if not t.endswith("+ht")),
            "gap_heavy": _mean(g for g, t in zip(gaps, tasks) if t.endswith("+ht")),
            "below_002": int(np.sum(gaps < -GAPS[0])), "below_005": int(np.sum(gaps < -GAPS[1])),
            "fpe": sum(e.startswith("FloatingPointError") for e in errors),
            "other_errors": sum(not e.startswith("FloatingPointError") for e in errors),
            "cpu": float(sum(recs[t]["cpu"] for t in tasks)),
            "worst": sorted(((round(float(g), 4), t) for g, t in zip(gaps, tasks)))[:3],
        })
    rows.sort(key=lambda r: -(r["gap"] if r["gap"] is not None else -9))
    return rows


def markdown(records, env, folds):
    n_tasks = len({r["task"] for r in records})
    lines = ["# Defaults on small imbalanced tabular tasks (tools/tabular.py)", "",
             f"{n_tasks} tasks, stratified {folds}-fold CV, each training fold standardised; "
             "AUC gap = learner's mean test AUC - LogisticRegression()'s (0.5 for a fold "
             "whose fit raised); plain / +ht: over the tasks without / with heavy tails.", "",
             "Environment: " + ", ".join(f"{k} {v}" for k, v in env.items()), "",
             "| learner | tasks | mean AUC | - LR | - LR(balanced) | - LR plain | - LR +ht "
             "| > 0.02 below LR | > 0.05 below LR | FloatingPointError | other errors | CPU s "
             "| worst gaps |",
             "|" + "---|" * 13]
    for r in summary(records):
        cells = [r["learner"], r["tasks"],
                 "" if r["mean_auc"] is None else f"{r['mean_auc']:.4f}",
                 *("" if r[k] is None else f"{r[k]:+.4f}"
                   for k in ("gap", "gap_balanced", "gap_plain", "gap_heavy")),
                 r["below_002"], r["below_005"], r["fpe"], r["other_errors"],
                 f"{r['cpu']:.1f}", ", ".join(f"{t} {g:+.3f}" for g, t in r["worst"])]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    errors = sorted({(r["learner"], e) for r in records for e in r["errors"]})
    if errors:
        lines += ["", "Errors:", ""] + [f"- {learner}: {e}" for learner, e in errors[:60]]
    return "\n".join(lines) + "\n"


def merge(files):
    merged, folds = {}, 5
    for path in files:
        with open(path) as f:
            data = json.load(f)
        folds = data.get("folds", folds)
        for r in data["records"]:
            merged[(r["learner"], r["task"])] = r
    return list(merged.values()), folds


def learner_names(spec):
    names = builtin_names()
    kernel = [n for n in names if get_class(n).traits.unit_rows
              or n in ("fcbr", "foam", "noam")]
    if spec in (None, "linear"):
        return [n for n in names if n not in kernel]
    if spec == "kernel":
        return kernel
    if spec == "all":
        return names
    return spec.split(",")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--learners", help="linear (default), kernel, all, or a,b,... where a "
                    "learner may carry parameters: fsauc:n_passes=4:steps='lemma'")
    ap.add_argument("--tasks", help="comma-separated task names or prefixes (default: all)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300, help="seconds per fit")
    ap.add_argument("--no-baselines", action="store_true",
                    help="skip the LogisticRegression fits (merge them from another run)")
    ap.add_argument("--tag")
    ap.add_argument("--list", action="store_true", help="print the tasks and exit")
    ap.add_argument("--report", nargs="+", metavar="JSON", help="merge runs and print")
    args = ap.parse_args(argv)
    env = environment()
    if args.report:
        records, folds = merge(args.report)
        print(markdown(records, env, folds))
        return 0
    _TASKS.update(build_tasks())
    if args.tasks:
        wanted = args.tasks.split(",")
        for name in list(_TASKS):
            if not any(name == w or name.startswith(w) for w in wanted):
                del _TASKS[name]
    if args.list:
        for name, (X, y) in _TASKS.items():
            print(f"{name:40s} {X.shape[0]:5d} x {X.shape[1]:3d}  {int(np.sum(y > 0)):4d} positive")
        return 0
    learners = ([] if args.no_baselines else BASELINES) + learner_names(args.learners)
    jobs = [(lr, t, args.folds, args.timeout) for lr in learners for t in _TASKS]
    records = []
    base = os.path.join(OUT, "tabular" + (f"_{args.tag}" if args.tag else ""))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for i, rec in enumerate(pool.map(_job, jobs, chunksize=1)):
            records.append(rec)
            errs = f" errors {len(rec['errors'])}" if rec["errors"] else ""
            print(f"[{i + 1}/{len(jobs)}] {rec['learner']:16s} {rec['task']:36s} "
                  f"AUC {rec['auc']:.4f} cpu {rec['cpu']:.2f}{errs}", file=sys.stderr, flush=True)
            if (i + 1) % len(_TASKS) == 0 or i + 1 == len(jobs):  # after each learner
                record = {"env": env, "folds": args.folds, "records": records}
                save_report(base, record, markdown(records, env, args.folds))
    print(markdown(records, env, args.folds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
