"""Stochastic pairwise learners (issue 3) against the classifiers a user would pick instead.

One workload per text set of SOURCES.md (``pairwise_<task>``) and one dense set
(``pairwise_dense_<task>``). Contestants, all trained on the official train split
and scored by test AUC:

* ``psam``, ``asam``, ``sam``, ``adadsgd`` (aucopt defaults, ``random_state`` =
  repeat index), fitted for 1, 2, 3, 5, 8 and ``EPOCHS`` epochs from scratch: the
  trace of (fit time, test AUC) gives the time to reach a target AUC, the last fit
  is the reported model;
* ``SGDClassifier(loss="hinge", average=True)`` traced the same way
  (``max_iter`` = epochs, ``tol=None``);
* ``LinearSVC(class_weight="balanced")`` and ``LogisticRegression(class_weight=
  "balanced")``: one fit each;
* ``X @ w``: one pass over the training matrix, the memory-bound floor.

Times are training times only (evaluation between traced fits is not counted;
``benchlib.Timed``). Columns: test AUC of the final model, time per epoch (slope
of the trace), epoch time / ``X @ w`` time, and the time to reach the best peer's
test AUC (the peer, among the three scikit-learn classifiers, with the highest
median test AUC; median over repeats of the first traced fit at that AUC, "never"
if the median repeat does not get there), with its ratio to the time that peer
needs itself (median over repeats of its first traced fit reaching its own final
AUC; its whole fit for LinearSVC and LogisticRegression).
"""
import time
import warnings

import numpy as np

from benchlib import Timed, workload
from tasks import TEXT_TASKS, load_task

EPOCHS = 12
TRACE = (1, 2, 3, 5, 8, EPOCHS)
OURS = ("psam", "asam", "sam", "adadsgd")
PEERS = ("SGDClassifier(hinge, average)", "LinearSVC(balanced)",
         "LogisticRegression(balanced)")
FLOOR = "X @ w"


def _auc(y, s):
    from aucopt.metrics import roc_auc

    return roc_auc(y, s)


def _traced(make, X, y, X_te, y_te):
    """Fit ``make(epochs)`` for each trace length; returns Timed(last fit, trace)."""
    trace = []
    for epochs in TRACE:
        model = make(epochs)
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
        trace.append((epochs, seconds, _auc(y_te, model.decision_function(X_te))))
    return Timed(trace[-1][1], {"trace": trace})


def _single(make, X, y, X_te, y_te):
    model = make()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings at default max_iter
        model.fit(X, y)
    seconds = time.perf_counter() - start
    return Timed(seconds, {"trace": [(None, seconds, _auc(y_te, model.decision_function(X_te)))]})


def _floor(X):
    w = np.random.default_rng(0).standard_normal(X.shape[1])
    best = min(_timed(lambda: X @ w) for _ in range(20))
    return Timed(best, {"trace": [], "seconds": best})


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _time_to(trace, target):
    for _, seconds, auc in trace:
        if auc >= target:
            return seconds
    return float("inf")


def _finalize(outputs):
    med = {name: float(np.median([o["trace"][-1][2] for o in outs]))
           for name, outs in outputs.items() if name != FLOOR}
    floor = float(np.median([o["seconds"] for o in outputs[FLOOR]])) if FLOOR in outputs \
        else None
    peers = [p for p in PEERS if p in med]
    best = max(peers, key=lambda p: med[p]) if peers else None
    target = med[best] if best else None
    # the time the best peer needs: per repeat, the first point of its trace at its
    # own final AUC (its whole fit for the one-shot solvers)
    best_time = float(np.median([_time_to(o["trace"], o["trace"][-1][2])
                                 for o in outputs[best]])) if best else None
    cols = {}
    for name, outs in outputs.items():
        if name == FLOOR:
            cols[name] = {"epoch / X@w": "1 pass"}
            continue
        row = {"test AUC": f"{med[name]:.4f}"}
        trace = outs[0]["trace"]
        if trace[0][0] is not None and len(trace) > 1:
            slopes = [(o["trace"][-1][1] - o["trace"][0][1]) / (EPOCHS - TRACE[0])
                      for o in outs]
            per_epoch = float(np.median(slopes))
            row["time / epoch [s]"] = f"{per_epoch:.4g}"
            if floor:
                row["epoch / X@w"] = f"{per_epoch / floor:.1f}"
        if best:
            reach = float(np.median([_time_to(o["trace"], target) for o in outs]))
            row["time to best peer AUC [s]"] = "never" if np.isinf(reach) else f"{reach:.4g}"
            row["ratio to best peer"] = "" if np.isinf(reach) else f"{reach / best_time:.3f}"
            row["best peer"] = f"{best} {target:.4f}"
        cols[name] = row
    return cols


def _setup(task, dense=False):
    def setup(ctx):
        import aucopt
        from sklearn.linear_model import LogisticRegression, SGDClassifier
        from sklearn.svm import LinearSVC

        X, y, X_te, y_te = load_task(task)
        if dense:
            from aucopt.datasets import Scaler

            scaler = Scaler("standard").fit(X.toarray())
            X, X_te = scaler.transform(X.toarray()), scaler.transform(X_te.toarray())
        repeat = {"i": 0}

        def seed():
            repeat["i"] += 1
            return repeat["i"]

        def ours(name):
            return lambda: _traced(
                lambda e, s=seed(): aucopt.get(name, n_epochs=e, random_state=s),
                X, y, X_te, y_te)

        contestants = {name: ours(name) for name in OURS}
        contestants[PEERS[0]] = lambda: _traced(
            lambda e, s=seed(): SGDClassifier(loss="hinge", average=True, max_iter=e,
                                              tol=None, random_state=s),
            X, y, X_te, y_te)
        contestants[PEERS[1]] = lambda: _single(
            lambda: LinearSVC(class_weight="balanced"), X, y, X_te, y_te)
        contestants[PEERS[2]] = lambda: _single(
            lambda: LogisticRegression(class_weight="balanced"), X, y, X_te, y_te)
        contestants[FLOOR] = lambda: _floor(X)
        nnz = X.nnz if not dense else X.size
        return dict(
            contestants=contestants,
            peer=PEERS[1],
            finalize=_finalize,
            params={"task": task, "train": f"{X.shape[0]} x {X.shape[1]}", "nnz": nnz,
                    "test rows": X_te.shape[0], "epochs": EPOCHS,
                    "input": "dense, standardised" if dense else "CSR"},
        )

    return setup


for _task in TEXT_TASKS:
    workload(f"pairwise_{_task}",
             description=f"PSAM/ASAM/SAM/adaDSGD vs scikit-learn on {_task} (CSR text)",
             columns=("test AUC", "time / epoch [s]", "epoch / X@w",
                      "time to best peer AUC [s]", "ratio to best peer", "best peer"),
             )(_setup(_task))

workload("pairwise_dense_magic04",
         description="PSAM/ASAM/SAM/adaDSGD vs scikit-learn on magic04 (dense, standardised)",
         columns=("test AUC", "time / epoch [s]", "epoch / X@w",
                  "time to best peer AUC [s]", "ratio to best peer", "best peer"),
         )(_setup("magic04", dense=True))
