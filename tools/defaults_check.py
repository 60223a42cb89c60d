"""Issue 11's "Done when" criteria for out-of-the-box models, in one command.

    PYTHONPATH=. python tools/defaults_check.py                 # everything (hours)
    PYTHONPATH=. python tools/defaults_check.py --criteria 1,4 --learners psam,spam
    PYTHONPATH=. python tools/defaults_check.py --report tools/out/defaults_check*.json

Criteria (numbers as in the issue; ``--criteria`` picks some):

1. ``text``: on every text task (``tasks.TEXT_TASKS``: news20 labels 1..5 vs rest,
   reuters_acq, sector, webkb_course) **loaded in file order** (news20's train file
   is stored sorted by label), every learner that accepts the data gives with its
   defaults a test AUC within 0.02 of its own best over its search space (the best
   grid point, rows shuffled once, chosen on the test set: an optimistic target),
   and none is below 0.85.
2. ``forms``: the same comparison on the dense tasks standardised (``DENSE_TASKS``),
   and on the text tasks max-abs-scaled (``Scaler("maxabs")``) and as
   bag-of-words-like rows (every stored TF-IDF value set to 1): every learner
   returns a model within 0.03 of its own best on that form or raises a clear
   error (``FloatingPointError`` / ``ValueError`` naming the fix); none returns a
   model below 0.6.
3. ``grid``: ``GridSearch(aucopt.get(name))`` with its default grid (3 folds)
   picks a model within 0.005 test AUC of the best grid point, for psam,
   cbr_diag, opaucr and spam on every text task. The grid points are fitted on the
   same (file-order) training rows as GridSearch's refit, with the same seed, so
   the pick is one of them.
4. ``demo``: ``aucopt demo --learner X`` exits 0 with test AUC >= 0.9 for every
   built-in X (a subprocess per learner listed by ``aucopt list``).
5. ``psam``: PSAM with all defaults reaches LinearSVC()'s test AUC - 0.002 on every
   text task, in less time than ``LinearSVC()`` with its defaults, same run
   (measured side by side; timings on a shared machine are noisy).

Learners are seeded (``random_state=0`` where they have one) so that a rerun gives
the same models; nothing else departs from the defaults. On training sets of fewer
than 2,000 rows (sonar, ionosphere, german, pima_diabetes, wdbc, breast cancer,
vehicle) a seeded learner's AUC in criteria 1-2 is the mean over 5 seeds: one fit's
AUC there moves by a few hundredths with the seed alone. A learner whose declared
input limit (``traits.max_features``, shown by ``aucopt list``) is below a task's
dimension is skipped for that task, and the reason printed. A fit that runs longer
than ``--timeout`` seconds is stopped and reported as a timeout (a failure).

Every run writes its records to ``tools/out/defaults_check[_TAG].json`` (after each
learner, so a long run can be inspected while it goes); ``--report`` prints the
tables and verdicts of one or more such files (pieces run separately, e.g. in
the background, merge: later files win on the same learner/task/form).
"""
import argparse
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np

import aucopt
from aucopt.datasets import Scaler, atomic_write
from aucopt.metrics import roc_auc
from aucopt.model_selection import GridSearch
from aucopt.registry import get_class
from tasks import TEXT_TASKS, load_task  # this script's folder is first on sys.path

TOOLS = os.path.dirname(os.path.abspath(__file__))

OUT = os.path.join(TOOLS, "out")

# The dense tasks of tasks.py, standardised (a8a is a subsample of a9a's source).
DENSE_TASKS = ["spambase", "magic04", "ionosphere", "german", "pima_diabetes", "a9a",
               "ijcnn1_val", "letter_z", "w8a", "dna_ei", "sonar", "wdbc", "vehicle_van",
               "breast_cancer_wisconsin", "satimage", "shuttle"]
GRID_LEARNERS = ["psam", "cbr_diag", "opaucr", "spam"]
# On training sets smaller than this, criteria 1-2 average a model's AUC over seeds
SMALL_ROWS, SMALL_SEEDS = 2000, 5
CRITERIA = {"1": "text", "2": "forms", "3": "grid", "4": "demo", "5": "psam"}

TEXT_GAP, TEXT_FLOOR = 0.02, 0.85
FORM_GAP, FORM_FLOOR = 0.03, 0.6
GRID_GAP = 0.005
DEMO_FLOOR = 0.9
SVC_MARGIN = 0.002

# The errors a learner may raise on a form instead of returning a model ("a clear
# error"): divergence, refused parameters or sizes, too little memory.
CLEAR_ERRORS = (FloatingPointError, ValueError, MemoryError)


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


# --------------------------------------------------------------------------- data

_FORMS = {}


def form(task, kind):
    """``(X_train, y_train, X_test, y_test)`` of a task in one form, training rows
    in file order: "tfidf" (text as stored), "maxabs", "bow" (stored values set to
    1), "standard" (dense tasks, zero mean and unit variance, dense arrays)."""
    key = (task, kind)
    if key not in _FORMS:
        X, y, X_te, y_te = load_task(task)
        if kind == "maxabs":
            scaler = Scaler("maxabs").fit(X)
            X, X_te = scaler.transform(X), scaler.transform(X_te)
        elif kind == "bow":
            X, X_te = X.copy(), X_te.copy()
            X.data[:] = 1.0
            X_te.data[:] = 1.0
        elif kind == "standard":
            scaler = Scaler("standard").fit(X.toarray())
            X, X_te = scaler.transform(X.toarray()), scaler.transform(X_te.toarray())
        elif kind != "tfidf":
            raise ValueError(kind)
        _FORMS[key] = (X, y, X_te, y_te)
    return _FORMS[key]


def shuffled(X, y):
    order = np.random.default_rng(0).permutation(X.shape[0])
    return X[order], y[order]


def cases(criterion, sets):
    if criterion == "text":
        pairs = [(t, "tfidf") for t in TEXT_TASKS]
    else:
        pairs = [(t, k) for t in TEXT_TASKS for k in ("maxabs", "bow")]
        pairs += [(t, "standard") for t in DENSE_TASKS]
    return [(t, k) for t, k in pairs if sets is None or t in sets]


# --------------------------------------------------------------------------- fits


def seeded(name, seed=0, **params):
    if has_seed(name):
        params.setdefault("random_state", seed)
    return aucopt.get(name, **params)


def has_seed(name):
    return "random_state" in get_class(name)().get_params()


def fitted_info(model):
    """The data-derived values a fit settled on (``eta_``, ``lam_``, epochs, ...)."""
    info = {}
    names = [n + "_" for n in model.get_params() if n + "_" in vars(model)]  # resolved
    names += ["row_scale_", "t0_", "n_passes_", "stop_reason_", "C_"]
    for n in names:
        value = model.__dict__.get(n)
        if isinstance(value, (int, float, str, np.floating, np.integer)):
            info[n] = value.item() if hasattr(value, "item") else value
    return info


def run_fit(make, data, timeout):
    """Fit ``make()`` on ``data``; a dict with the test AUC, seconds, fitted values,
    or the error."""
    X, y, X_te, y_te = data
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(int(timeout))
    start = time.perf_counter()
    try:
        model = make().fit(X, y)
        seconds = time.perf_counter() - start
        auc = float(roc_auc(y_te, model.decision_function(X_te)))
        return {"auc": auc, "seconds": seconds, "info": fitted_info(model), "model": model}
    except Timeout:
        return {"error": "timeout", "message": f"stopped after {timeout} s",
                "seconds": time.perf_counter() - start}
    except Exception as exc:  # recorded, judged by the criterion
        return {"error": type(exc).__name__, "message": str(exc).splitlines()[0][:300],
                "seconds": time.perf_counter() - start}
    finally:
        signal.alarm(0)


def public(result):
    return {k: v for k, v in result.items() if k != "model"}


def mean_fit(name, params, data, timeout):
    """``run_fit`` of the learner with ``params``, seeded; on a small training set
    (fewer than SMALL_ROWS rows) the mean over SMALL_SEEDS seeds, as one fit's AUC
    there moves by a few hundredths with the seed alone. The first error wins."""
    seeds = range(SMALL_SEEDS) if data[0].shape[0] < SMALL_ROWS and has_seed(name) else [0]
    runs = []
    for seed in seeds:
        res = public(run_fit(lambda: seeded(name, seed, **params), data, timeout))
        if "auc" not in res:
            return res
        runs.append(res)
    out = dict(runs[0])
    if len(runs) > 1:
        out["aucs"] = [r["auc"] for r in runs]
        out["auc"] = float(np.mean(out["aucs"]))
        out["seconds"] = float(np.mean([r["seconds"] for r in runs]))
    return out


def grid_points(space):
    grids = [space] if isinstance(space, dict) else list(space)
    points = []
    for g in grids:
        names = list(g)
        for values in itertools.product(*(list(g[k]) for k in names)):
            points.append(dict(zip(names, values)))
    return points


def plain(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


def skip_reason(name, X):
    """Why a learner does not accept ``X`` by its declared limits ('' if it does)."""
    limit = get_class(name).traits.max_features
    if limit is not None and X.shape[1] > limit:
        return f"d = {X.shape[1]} above its declared limit {limit}"
    return ""


def compare(name, task, kind, timeout):
    """Defaults (file order) against the learner's own best over its search space
    (rows shuffled), on one task and form."""
    data = form(task, kind)
    rec = {"learner": name, "task": task, "form": kind}
    reason = skip_reason(name, data[0])
    if reason:
        rec["skipped"] = reason
        return rec
    rec["default"] = mean_fit(name, {}, data, timeout)
    X_sh, y_sh = shuffled(data[0], data[1])
    learner = seeded(name)
    if not hasattr(learner, "search_space"):
        rec["grid"] = []
        rec["no_space"] = True
        return rec
    space = learner.search_space(X_sh)
    grid = []
    for point in grid_points(space):
        res = mean_fit(name, point, (X_sh, y_sh) + data[2:], timeout)
        res["params"] = {k: plain(v) for k, v in point.items()}
        grid.append(res)
    rec["grid"] = grid
    return rec


def grid_search(name, task, timeout):
    """GridSearch's pick against the best grid point (criterion 3)."""
    data = form(task, "tfidf")
    rec = {"learner": name, "task": task, "form": "tfidf"}
    X, y, X_te, y_te = data
    space = seeded(name).search_space(X)
    grid = []
    for point in grid_points(space):
        res = public(run_fit(lambda p=point: seeded(name, **p), data, timeout))
        res["params"] = {k: plain(v) for k, v in point.items()}
        grid.append(res)
    rec["grid"] = grid
    res = run_fit(lambda: GridSearch(seeded(name), cv=3, random_state=0), data,
                  timeout * (3 * len(grid) + 1))
    if "model" in res:
        res["params"] = {k: plain(v) for k, v in res["model"].best_params_.items()}
        res["cv_auc"] = float(res["model"].best_score_)
    rec["search"] = public(res)
    return rec


def demo(name, timeout):
    env = dict(os.environ)
    try:
        proc = subprocess.run([sys.executable, "-m", "aucopt.cli", "demo", "--learner", name],
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"learner": name, "exit": None, "error": f"timeout after {timeout} s"}
    match = re.search(r"^test AUC\s+([0-9.]+)", proc.stdout, re.M)
    pre = re.search(r"features scaled with (\S+)", proc.stdout)
    rec = {"learner": name, "exit": proc.returncode,
           "auc": float(match.group(1)) if match else None,
           "preprocessing": pre.group(1) if pre else None}
    if proc.returncode:
        rec["error"] = proc.stderr.strip().splitlines()[-1][:300] if proc.stderr else ""
    return rec


def builtin_names():
    proc = subprocess.run([sys.executable, "-m", "aucopt.cli", "list"], capture_output=True,
                          text=True, check=True)
    names = []
    for line in proc.stdout.splitlines()[1:]:
        parts = line.split()
        if parts and parts[-1] == "built-in":
            names.append(parts[0])
    return names


def psam_vs_svc(task, repeat):
    from sklearn.svm import LinearSVC

    X, y, X_te, y_te = form(task, "tfidf")
    rec = {"task": task}
    for label, make in (("psam", lambda: aucopt.get("psam", random_state=0)),
                        ("linearsvc", lambda: LinearSVC())):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            model = make().fit(X, y)
            times.append(time.perf_counter() - start)
        rec[label] = {"auc": float(roc_auc(y_te, model.decision_function(X_te))),
                      "seconds": float(np.median(times)), "times": times}
    return rec


# --------------------------------------------------------------------------- judging


def best_of(grid):
    ok = [g for g in grid if "auc" in g]
    return max(ok, key=lambda g: g["auc"]) if ok else None


def judge_compare(rec, criterion):
    """(verdict, note) of a compare record: "pass", "FAIL" or "skip"."""
    if "skipped" in rec:
        return "skip", rec["skipped"]
    gap_max, floor = (TEXT_GAP, TEXT_FLOOR) if criterion == "text" else (FORM_GAP, FORM_FLOOR)
    default = rec["default"]
    best = best_of(rec["grid"])
    if "auc" not in default:
        if criterion == "forms" and default["error"] in {e.__name__ for e in CLEAR_ERRORS}:
            return "pass", f"raised {default['error']}: {default['message']}"
        return "FAIL", f"{default['error']}: {default['message']}"
    if best is None:
        return "FAIL", ("declares no search space" if rec.get("no_space")
                        else "every grid point failed")
    gap = best["auc"] - default["auc"]
    bad = []
    if gap > gap_max:
        bad.append(f"gap {gap:.4f} > {gap_max}")
    if default["auc"] < floor:
        bad.append(f"AUC {default['auc']:.4f} < {floor}")
    return ("FAIL" if bad else "pass"), "; ".join(bad)


def fmt_auc(res):
    if res is None:
        return "-"
    if "auc" in res:
        return f"{res['auc']:.4f}"
    return res["error"][:12]


def fmt_params(params):
    return ",".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in params.items())


def table(title, header, records, judge, row):
    """Print one criterion's table; return ``[(record, verdict, note)]``."""
    print(f"\n== {title}")
    print(header)
    verdicts = []
    for rec in records:
        verdict, note = judge(rec)
        verdicts.append((rec, verdict, note))
        print(row(rec, f"{verdict:7s}", note))
    return verdicts


def compare_row(rec, verdict, note):
    head = f"{rec['learner']:9s} {rec['task']:23s} {rec['form']:8s}"
    if "skipped" in rec:
        return f"{head} {'':42s}  skip     {note}"
    best, d = best_of(rec["grid"]), rec["default"]
    gap = f"{best['auc'] - d['auc']:+.4f}" if best and "auc" in d else ""
    extra = fmt_params(best["params"]) if best else ""
    if note:
        extra = f"{note}  [{extra}]"
    return (f"{head} {fmt_auc(d):>8s} {fmt_auc(best):>8s} {gap:>7s} "
            f"{d.get('seconds', 0):7.1f}  {verdict}  {extra}")


def print_compare(records, criterion):
    title = ("criterion 1 (text, file order)" if criterion == "text" else
             "criterion 2 (forms)") + ": default vs own best (rows shuffled, chosen on test)"
    header = (f"{'learner':9s} {'task':23s} {'form':8s} {'default':>8s} {'best':>8s} "
              f"{'gap':>7s} {'fit s':>7s}  verdict  best params / note")
    return table(title, header, records, lambda r: judge_compare(r, criterion), compare_row)


def judge_grid(rec):
    best = best_of(rec["grid"])
    pick = rec["search"]
    if "auc" not in pick or best is None:
        return "FAIL", pick.get("error", "no grid point fitted")
    gap = best["auc"] - pick["auc"]
    return ("pass" if gap <= GRID_GAP else "FAIL"), f"gap {gap:.4f}"


def grid_row(rec, verdict, note):
    best, pick = best_of(rec["grid"]), rec["search"]
    gap = f"{best['auc'] - pick['auc']:+.4f}" if best and "auc" in pick else ""
    cv = f"{pick['cv_auc']:.4f}" if "cv_auc" in pick else ""
    return (f"{rec['learner']:9s} {rec['task']:14s} {fmt_auc(pick):>8s} {fmt_auc(best):>8s} "
            f"{gap:>7s} {cv:>7s}  {verdict}  {fmt_params(pick.get('params', {}))} / "
            f"{fmt_params(best['params']) if best else ''}")


def judge_demo(rec):
    if rec["exit"] != 0:
        return "FAIL", f"exit {rec['exit']}: {rec.get('error', '')}"
    if rec["auc"] is None or rec["auc"] < DEMO_FLOOR:
        return "FAIL", f"test AUC {rec['auc']} < {DEMO_FLOOR}"
    return "pass", ""


def demo_row(rec, verdict, note):
    auc = f"{rec['auc']:.4f}" if rec.get("auc") is not None else "-"
    return (f"{rec['learner']:9s} {str(rec['exit']):>4s} {auc:>8s}  {verdict}  "
            f"{rec.get('preprocessing') or ''} {note}")


def judge_psam(rec):
    p, s = rec["psam"], rec["linearsvc"]
    bad = []
    if p["auc"] < s["auc"] - SVC_MARGIN:
        bad.append(f"AUC {p['auc']:.4f} < {s['auc']:.4f} - {SVC_MARGIN}")
    if p["seconds"] >= s["seconds"]:
        bad.append(f"time {p['seconds']:.3f} s >= {s['seconds']:.3f} s")
    return ("FAIL" if bad else "pass"), "; ".join(bad)


def psam_row(rec, verdict, note):
    p, s = rec["psam"], rec["linearsvc"]
    return (f"{rec['task']:14s} {p['auc']:8.4f} {s['auc']:8.4f} {p['seconds']:7.3f} "
            f"{s['seconds']:7.3f} {p['seconds'] / s['seconds']:6.2f}  {verdict}  {note}")


PRINTERS = {
    "text": lambda r: print_compare(r, "text"),
    "forms": lambda r: print_compare(r, "forms"),
    "grid": lambda r: table(
        "criterion 3: GridSearch(aucopt.get(name)) default grid, 3 folds, vs best grid "
        "point (test AUC)",
        f"{'learner':9s} {'task':14s} {'picked':>8s} {'best':>8s} {'gap':>7s} "
        f"{'CV AUC':>7s}  verdict  picked / best params", r, judge_grid, grid_row),
    "demo": lambda r: table(
        "criterion 4: aucopt demo --learner X",
        f"{'learner':9s} {'exit':>4s} {'test AUC':>8s}  verdict  preprocessing / note",
        r, judge_demo, demo_row),
    "psam": lambda r: table(
        "criterion 5: PSAM() vs LinearSVC(), defaults, same run (median time; shared "
        "machine)",
        f"{'task':14s} {'psam AUC':>8s} {'svc AUC':>8s} {'psam s':>7s} {'svc s':>7s} "
        f"{'ratio':>6s}  verdict  note", r, judge_psam, psam_row),
}


def report(data):
    """Print every criterion present in ``data`` with its verdict; return the
    verdicts ``{criterion: "PASS" | "FAIL"}``."""
    out = {}
    for number, crit in CRITERIA.items():
        records = data.get(crit)
        if not records:
            continue
        verdicts = PRINTERS[crit](records)
        fails = [v for v in verdicts if v[1] == "FAIL"]
        skips = [v for v in verdicts if v[1] == "skip"]
        out[number] = "FAIL" if fails else "PASS"
        print(f"-- criterion {number} ({crit}): {out[number]} "
              f"({len(verdicts) - len(fails) - len(skips)} pass, {len(fails)} fail, "
              f"{len(skips)} skipped)")
    print("\nverdicts: " + ", ".join(f"{k}: {v}" for k, v in out.items()))
    return out


def _key(crit, rec):
    return (rec.get("learner"), rec.get("task"), rec.get("form"))


def merge(files):
    data = {}
    for path in files:
        with open(path) as f:
            part = json.load(f)
        for crit, records in part.items():
            if crit not in CRITERIA.values():
                continue
            have = {_key(crit, r): i for i, r in enumerate(data.setdefault(crit, []))}
            for rec in records:
                k = _key(crit, rec)
                if k in have:
                    data[crit][have[k]] = rec
                else:
                    have[k] = len(data[crit])
                    data[crit].append(rec)
    return data


# --------------------------------------------------------------------------- main


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--criteria", default="1,2,3,4,5",
                   help="which criteria to run, e.g. 1,3 (default all)")
    p.add_argument("--learners", help="comma-separated learner names (default all built-in)")
    p.add_argument("--skip-learners", help="comma-separated learner names to leave out")
    p.add_argument("--sets", help="comma-separated task names (default all of a criterion's)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per fit")
    p.add_argument("--repeat", type=int, default=3, help="timed fits per contestant (5.)")
    p.add_argument("--tag", default="", help="output file suffix")
    p.add_argument("--report", nargs="+", metavar="JSON",
                   help="print the tables and verdicts of earlier runs; run nothing")
    args = p.parse_args(argv)
    if args.report:
        verdicts = report(merge(args.report))
        return 0 if all(v == "PASS" for v in verdicts.values()) else 1

    criteria = [CRITERIA[c.strip()] for c in args.criteria.split(",")]
    names = args.learners.split(",") if args.learners else builtin_names()
    if args.skip_learners:
        names = [n for n in names if n not in args.skip_learners.split(",")]
    sets = set(args.sets.split(",")) if args.sets else None
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, f"defaults_check{'_' + args.tag if args.tag else ''}.json")
    data = {"argv": sys.argv[1:], "started": time.strftime("%Y-%m-%d %H:%M:%S")}

    def save():  # atomically: a run killed while saving keeps the criteria saved before
        with atomic_write(path) as f:
            f.write(json.dumps(data, indent=1).encode())

    for crit in criteria:
        data[crit] = records = []
        if crit in ("text", "forms"):
            for name in names:
                for task, kind in cases(crit, sets):
                    rec = compare(name, task, kind, args.timeout)
                    records.append(rec)
                    verdict, note = judge_compare(rec, crit)
                    d = rec.get("default", {})
                    print(f"[{crit}] {name} {task} {kind}: default {fmt_auc(d or None)} best "
                          f"{fmt_auc(best_of(rec.get('grid', [])))} {verdict} {note}",
                          flush=True)
                    save()
        elif crit == "grid":
            for name in [n for n in GRID_LEARNERS if n in names]:
                for task in [t for t in TEXT_TASKS if sets is None or t in sets]:
                    records.append(grid_search(name, task, args.timeout))
                    print(f"[grid] {name} {task}: {judge_grid(records[-1])}", flush=True)
                    save()
        elif crit == "demo":
            for name in names:
                records.append(demo(name, args.timeout))
                print(f"[demo] {name}: {judge_demo(records[-1])}", flush=True)
                save()
        elif crit == "psam":
            for task in [t for t in TEXT_TASKS if sets is None or t in sets]:
                records.append(psam_vs_svc(task, args.repeat))
                print(f"[psam] {task}: {judge_psam(records[-1])}", flush=True)
                save()
    save()
    print(f"\nrecords: {path}")
    verdicts = report(data)
    return 0 if all(v == "PASS" for v in verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
