"""Stochastic pairwise learners (issues 3, 11, 13) against the classifiers a user would pick instead.

One workload per text set of SOURCES.md (``pairwise_<task>``, training rows in file
order: news20's file is sorted by label), one dense set (``pairwise_dense_<task>``) and
the rcv1-shaped set of ``synth_rcv1.py`` (``pairwise_rcv1``, its :func:`synth_rcv1.split`;
PSAM alone traced, over 1-8 epochs, 4 threaded epochs, against SGDClassifier and
LinearSVC() only: a repeat of the full workload there would take over ten minutes), and
one per held-out text task of ``tasks.HELDOUT_TASKS`` (``heldout_<task>``: other
classes of the same corpora, on which no default was chosen; PSAM alone traced). All
trained on the official train split and scored by test AUC; every time is the best of
the ``--repeat`` repeats (the machine may be shared), every AUC the median.

Contestants:

* ``psam``, ``asam``, ``sam``, ``adadsgd`` (aucopt defaults but ``n_epochs``,
  ``random_state`` = repeat index, one thread), fitted for each epoch count of
  ``TRACE`` from scratch: the trace of (fit time, test AUC) gives the time to reach
  a target AUC;
* ``psam defaults``: PSAM with every default (``n_epochs="auto"``);
* ``psam epochs n_jobs=1`` / ``n_jobs=2``: ``EPOCHS`` epochs, each pass timed (the
  driver's pass hook: no validation or threshold); ``epoch`` is their mean;
* ``psam two fits at once`` (where an epoch is long enough for threads): in one call,
  back to back, a one-thread fit of ``EPOCHS`` epochs alone, two one-thread fits of
  twice as many epochs started together in two threads of this process (the
  kernels release the GIL), one ``n_jobs=2`` fit of ``EPOCHS`` epochs and the
  one-thread fit alone again, each pass timed. Passes 2 to ``EPOCHS`` of each are
  compared: the first pass costs more, and the pair's passes up to ``EPOCHS`` all
  run while the other fit runs too, unless one core is over twice as fast as the
  other (counting a fit's passes after the other's end would overstate the
  ceiling). The two fits' passes per second added, against the fit's alone
  (``epoch_alone (1 / epoch_a + 1 / epoch_b)``, ``epoch_alone`` the mean of the two
  fits alone, which bracket the others), is what the machine's two cores give this
  workload at that moment: the ceiling of the ``n_jobs=2`` speed-up. Beside it: the
  lanes' speed-up in the same call and its share of the ceiling. Medians over the
  repeats, with their range: the machine's state changes from minute to minute, so
  only numbers taken together compare. A ceiling above 2 means the fit alone ran
  slower than each of the two at once, as it did on the 2-vCPU benchmark machine in
  some minutes;
* peers: ``SGDClassifier(loss="hinge", average=True)`` and Vowpal Wabbit (logistic
  loss, its default adaptive normalised updates; if the ``vowpalwabbit`` package is
  installed; fed from its binary cache, written before the timed fits) traced over
  the same epoch counts; ``LinearSVC()`` with its defaults, ``LinearSVC`` and
  ``LogisticRegression`` with ``class_weight="balanced"``: one fit each;
* floors: ``X @ w`` (one pass in storage order), ``pair dots in order`` (the epoch's
  ``2 n`` rows sorted into storage order) and ``random pair dots`` (the ``2 n``
  row dots of an epoch's pairs in draw order, :mod:`pairtiming`);
* ``psam fixed costs``: the input checks and the OPTROC threshold of a fit
  (:func:`pairtiming.fixed_costs`), in ``X @ w`` units.

Columns: test AUC; time per epoch (traced learners: slope of the trace); epoch /
``X @ w``; epoch / random pair dots; epochs (to the target for traced learners, the
fit's for ``psam defaults``); time to the target ``best peer AUC - 0.002``
(first traced fit at or above it; a one-shot peer's fit time if its AUC is) and its
ratio to the fastest peer's time to the same target and to every peer's; the
``n_jobs`` speed-up; ``fixed / X@w``: the fixed costs.

Verdicts of issue 23 (``psam defaults``, ``psam fixed costs``, ``psam epochs
n_jobs=1`` / ``n_jobs=2``): PSAM with its defaults reaches the target in at most
0.6x the fastest peer's time; checks plus threshold at most 3 ``X @ w``; an epoch
after the first at most 3.0 ``X @ w``; two threads at least 1.4x faster per epoch
with the AUC after ``EPOCHS`` epochs within 0.002 (row ``psam two fits at once``:
what the machine's two cores allowed in the same minutes). The first verdict also
gives its floors in the same run: a default fit's fixed costs plus, for each of its
passes, the random pair dots (the row dots a pass reads before any step), as a ratio
to the fastest peer's time, for the fit's passes and for one pass.

Verdicts (column ``verdict``, rows ``psam``, ``psam defaults``, ``psam epochs
n_jobs=2``): issue 13 -- PSAM reaches the target in at most 0.5x the fastest peer's
time; a single-thread PSAM epoch costs at most 1.3x the random pair dots; two threads
give an epoch at least 1.6x faster with the test AUC after ``EPOCHS`` epochs within
0.002; issue 11 -- PSAM with every default reaches ``LinearSVC()``'s test AUC - 0.002
in less time than ``LinearSVC()``.
"""
import os
import threading
import time
import warnings

import numpy as np

from benchlib import Timed, Unavailable, quiesce, workload
from pairtiming import (VowpalWabbit, fixed_costs, pair_dot_floor, timed_passes, vw_text,
                        xw_floor)
from synth_rcv1 import split as split_rcv1
from tasks import HELDOUT_TASKS, TEXT_TASKS, load_task

TRACE = (1, 2, 3, 4, 6, 8, 12)
EPOCHS = 10
OURS = ("psam", "asam", "sam", "adadsgd")
DEFAULTS = "psam defaults"
JOBS = ("psam epochs n_jobs=1", "psam epochs n_jobs=2")
CEILING = "psam two fits at once"
SVC_DEFAULT = "LinearSVC()"
PEERS = ("SGDClassifier(hinge, average)", "VowpalWabbit(logistic)", SVC_DEFAULT,
         "LinearSVC(balanced)", "LogisticRegression(balanced)")
FLOORS = ("X @ w", "random pair dots", "pair dots in order")
FIXED = "psam fixed costs"
MARGIN = 0.002
COLUMNS = ("test AUC", "time / epoch [s]", "epoch / X@w", "epoch / pair dots", "epochs",
           "time to target [s]", "ratio to fastest peer", "ratio to each peer",
           "fixed / X@w", "n_jobs speed-up", "verdict")


def _auc(y, s):
    from aucopt.metrics import roc_auc

    return roc_auc(y, s)


def _trace(fit, X, y, X_te, y_te, score=None, lengths=TRACE):
    """``fit(epochs)`` for each trace length; returns Timed(last fit, trace)."""
    trace = []
    for epochs in lengths:
        seconds, model = fit(epochs)
        s = score() if score is not None else model.decision_function(X_te)
        trace.append((epochs, seconds, _auc(y_te, s)))
    return Timed(trace[-1][1], {"trace": trace})


def _fitted(model, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings at default max_iter
        model.fit(X, y)
    return time.perf_counter() - start, model


def _single(make, X, y, X_te, y_te):
    seconds, model = _fitted(make(), X, y)
    out = {"trace": [(None, seconds, _auc(y_te, model.decision_function(X_te)))]}
    if hasattr(model, "n_passes_"):
        out["epochs"] = model.n_passes_
    return Timed(seconds, out)


def _passes(make, X, y, X_te, y_te):
    model = make()
    seconds = timed_passes(model, X, y)
    return Timed(sum(seconds), {"passes": seconds, "auc": model.score(X_te, y_te)})


def _at_once(make, X, y, epochs):
    """One fit of ``make(1, epochs)`` alone, two of ``make(1, 2 epochs)`` started
    together in two threads, one of ``make(2, epochs)``, one of ``make(1, epochs)``
    alone again: the passes of each (:func:`pairtiming.timed_passes`)."""
    start = time.perf_counter()
    alone = [timed_passes(make(1, epochs), X, y)]
    pair, errors = [None, None], []
    quiesce()  # each fit starts with the other threads idle, as every timed call does

    def run(k, model):
        try:
            pair[k] = timed_passes(model, X, y)
        except BaseException as exc:  # noqa: BLE001 -- raised below, in the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k, make(1, 2 * epochs))) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    quiesce()
    lanes = timed_passes(make(2, epochs), X, y)
    quiesce()  # the lane worker spins a few milliseconds after its last block
    alone.append(timed_passes(make(1, epochs), X, y))
    return Timed(time.perf_counter() - start,
                 {"alone": alone, "pair": pair, "lanes": lanes, "epochs": epochs})


def _floor(seconds):
    return Timed(seconds, {"seconds": seconds})


def _fixed(X, y):
    costs = fixed_costs(X, y)
    return Timed(costs["checks"] + costs["threshold"], costs)


def _time_to(trace, target):
    return min((seconds for _, seconds, auc in trace if auc >= target), default=np.inf)


def _verdict(ok, text):
    return ("PASS " if ok else "FAIL ") + text


def _finalize(outputs, threaded=True):
    """Columns of every contestant (see the module docstring); ``threaded``: whether
    an epoch of the set is long enough for PSAM to use two threads."""
    floors = {n: min(r["seconds"] for r in outputs[n]) for n in FLOORS}
    traced = {n: o for n, o in outputs.items()
              if n not in FLOORS and n not in JOBS and n not in (FIXED, CEILING)}
    med = {n: float(np.median([r["trace"][-1][2] for r in outs]))
           for n, outs in traced.items()}
    peers = [p for p in PEERS if p in med]
    cols = {n: {"epoch / X@w": f"{floors[n] / floors['X @ w']:.2f} (floor)"}
            for n in FLOORS if n in outputs}
    if not peers:
        return cols
    target = max(med[p] for p in peers) - MARGIN
    reach = {n: min(_time_to(r["trace"], target) for r in outs) for n, outs in traced.items()}
    fastest = min(peers, key=lambda p: reach[p])
    for name, outs in traced.items():
        row = {"test AUC": f"{med[name]:.4f}"}
        trace = outs[0]["trace"]
        if trace[0][0] is not None:
            slope = min((r["trace"][-1][1] - r["trace"][0][1]) / (trace[-1][0] - trace[0][0])
                        for r in outs)
            row["time / epoch [s]"] = f"{slope:.4g}"
            row["epoch / X@w"] = f"{slope / floors['X @ w']:.2f}"
            row["epoch / pair dots"] = f"{slope / floors['random pair dots']:.2f}"
        if "epochs" in outs[0]:
            row["epochs"] = "/".join(str(r["epochs"]) for r in outs)
        elif trace[0][0] is not None:
            row["epochs"] = _epochs_to(outs, target)
        if len(trace) > 1:  # the figure's time-to-AUC curve: best time, median AUC
            row["curve"] = [[min(r["trace"][i][1] for r in outs),
                             float(np.median([r["trace"][i][2] for r in outs]))]
                            for i in range(len(trace))]
        row["time to target [s]"] = "never" if np.isinf(reach[name]) else f"{reach[name]:.4g}"
        if np.isfinite(reach[name]) and np.isfinite(reach[fastest]):
            row["ratio to fastest peer"] = f"{reach[name] / reach[fastest]:.3f}"
        if name not in peers and np.isfinite(reach[name]):
            row["ratio to each peer"] = ", ".join(
                f"{p} {reach[name] / reach[p]:.3f}" if np.isfinite(reach[p]) else f"{p} never"
                for p in peers)
        cols[name] = row
    peer_note = f"target {target:.4f} (best peer - {MARGIN}), fastest peer {fastest}"
    if "psam" in reach:
        ratio = reach["psam"] / reach[fastest]
        cols["psam"]["verdict"] = _verdict(ratio <= 0.5, f"issue 13: time to target "
                                           f"{ratio:.3f}x the fastest peer's (<= 0.5); "
                                           + peer_note)
    if DEFAULTS in reach:
        ratio = reach[DEFAULTS] / reach[fastest]
        cols[DEFAULTS]["verdict"] = _verdict(
            ratio <= 0.6, f"issue 23: time to target {ratio:.3f}x the fastest peer's "
                          f"(<= 0.6); " + peer_note + _defaults_floor(
                              outputs, floors, reach[fastest]))
    if DEFAULTS in med and SVC_DEFAULT in med:
        ok = (med[DEFAULTS] >= med[SVC_DEFAULT] - MARGIN
              and _best_time(outputs[DEFAULTS]) < _best_time(outputs[SVC_DEFAULT]))
        cols[DEFAULTS]["verdict"] = cols[DEFAULTS].get("verdict", "") + "; " + _verdict(
            ok, f"issue 11: AUC {med[DEFAULTS]:.4f} vs LinearSVC() {med[SVC_DEFAULT]:.4f} "
                f"- {MARGIN}, time {_best_time(outputs[DEFAULTS]):.4g} s vs "
                f"{_best_time(outputs[SVC_DEFAULT]):.4g} s")
    _epoch_columns(outputs, floors, cols, threaded)
    _fixed_columns(outputs, floors, cols)
    return cols


def _defaults_floor(outputs, floors, peer_time):
    """The least a default fit's passes could cost, in the same run: the fixed costs
    of a default fit plus, per pass, the random pair dots (the ``2 n`` row dots of a
    pass's pairs, before any step), as a ratio to the fastest peer's time; for the
    fit's fewest passes and for one pass. Empty without the fixed costs' row."""
    if FIXED not in outputs or not np.isfinite(peer_time):
        return ""
    fixed = _fixed_seconds(outputs[FIXED])
    passes = min(r["epochs"] for r in outputs[DEFAULTS])
    dots = floors["random pair dots"]
    return "; ".join(
        [""] + [f"floor at {k} pass{'es' if k > 1 else ''}: fixed costs + {k} x random pair "
                f"dots = {(fixed + k * dots) / peer_time:.2f}x"
                for k in sorted({passes, 1}, reverse=True)])


def _fixed_seconds(outs):
    """Seconds of a default fit's fixed costs (best over the repeats): the checks
    and the threshold, or only its sorts when the fit reuses its stopping rule's
    scores."""
    checks = min(r["checks"] for r in outs)
    if all(r["reused"] for r in outs):
        return checks + min(r["sorts"] for r in outs)
    return checks + min(r["threshold"] for r in outs)


def _epochs_to(outs, target):
    """Epochs of the first traced fit whose median AUC over the repeats reaches
    ``target``."""
    for i, (epochs, _, _) in enumerate(outs[0]["trace"]):
        if np.median([r["trace"][i][2] for r in outs]) >= target:
            return f"{epochs} to target"
    return "not reached"


def _fixed_columns(outputs, floors, cols):
    """The fixed costs in X @ w units, and issue 23's verdict on them."""
    if FIXED not in outputs:
        return
    cost = {k: min(r[k] for r in outputs[FIXED]) / floors["X @ w"]
            for k in ("checks", "threshold", "sorts")}
    fresh = cost["checks"] + cost["threshold"]  # a fit with an explicit n_epochs
    # a default fit: the stopping rule's scores, when it scored every training row
    reused = all(r["reused"] for r in outputs[FIXED])
    default = _fixed_seconds(outputs[FIXED]) / floors["X @ w"]
    cols[FIXED] = {
        "fixed / X@w": f"checks {cost['checks']:.2f} + threshold {cost['threshold']:.2f} "
                       f"(sorts {cost['sorts']:.2f})",
        "verdict": "; ".join(_verdict(total <= 3.0, f"issue 23: checks + threshold "
                                                     f"{total:.2f} X@w (<= 3), {what}")
                             for total, what in (
                                 (default, "default fit (scores reused)" if reused else
                                  "default fit (scored afresh)"),
                                 (fresh, "n_epochs given (scored afresh)")))}


def _best_time(outs):
    """Best fit time of a one-shot contestant over the repeats."""
    return min(r["trace"][-1][1] for r in outs)


def _epoch_columns(outputs, floors, cols, threaded):
    """Epoch costs of the timed passes and the n_jobs speed-up."""
    epochs = {}
    for name in JOBS:
        if name not in outputs:
            continue
        outs = outputs[name]
        epoch = min(float(np.mean(r["passes"])) for r in outs)
        auc = float(np.median([r["auc"] for r in outs]))
        epochs[name] = (epoch, auc)
        first = min(r["passes"][0] for r in outs)
        later = min(float(np.mean(r["passes"][1:])) for r in outs)
        ratio = epoch / floors["random pair dots"]
        cols[name] = {"test AUC": f"{auc:.4f}", "time / epoch [s]": f"{epoch:.4g}",
                      "epoch / X@w": f"{epoch / floors['X @ w']:.2f}",
                      "epoch / pair dots": f"{ratio:.2f} (first "
                      f"{first / floors['random pair dots']:.2f}, later "
                      f"{later / floors['random pair dots']:.2f})",
                      "epochs": str(len(outs[0]["passes"]))}
    if JOBS[0] in epochs:
        ratio = epochs[JOBS[0]][0] / floors["random pair dots"]
        later = min(float(np.mean(r["passes"][1:])) for r in outputs[JOBS[0]])
        cols[JOBS[0]]["verdict"] = (
            _verdict(ratio <= 1.3, f"issue 13: epoch {ratio:.2f}x the random pair dots "
                                   "(<= 1.3)") + "; " +
            _verdict(later <= 3.0 * floors["X @ w"], f"issue 23: epoch after the first "
                     f"{later / floors['X @ w']:.2f} X@w (<= 3.0)"))
    if len(epochs) == 2 and not threaded:
        cols[JOBS[1]]["verdict"] = "n/a: an epoch of this set is too short for threads"
    elif len(epochs) == 2:
        (one, auc1), (two, auc2) = epochs[JOBS[0]], epochs[JOBS[1]]
        cols[JOBS[1]]["n_jobs speed-up"] = f"{one / two:.2f}"
        if CEILING in outputs:
            _ceiling_columns(outputs[CEILING], floors, cols)
        same = abs(auc1 - auc2) <= MARGIN
        cols[JOBS[1]]["verdict"] = _verdict(
            one / two >= 1.6 and same,
            f"issue 13: 2 threads {one / two:.2f}x faster (>= 1.6), AUC after "
            f"{len(outputs[JOBS[1]][0]['passes'])} "
            f"epochs {auc2:.4f} vs {auc1:.4f} (within {MARGIN})") + "; " + _verdict(
            one / two >= 1.4 and same, "issue 23: >= 1.4x")


def _ceiling_columns(outs, floors, cols):
    """The two-core ceiling of the ``n_jobs=2`` speed-up and the lanes' share of it,
    each repeat's numbers taken together (the fits of one call), medians over the
    repeats."""
    epochs = outs[0]["epochs"]

    def epoch(passes):  # passes 2 .. epochs (those of the pair overlap)
        return float(np.mean(passes[1:epochs]))

    alone = [float(np.mean([epoch(p) for p in r["alone"]])) for r in outs]
    # the two fits' rates add: one core may give less than the other, and the lanes'
    # claims balance their work the same way
    ceiling = [a * sum(1.0 / epoch(p) for p in r["pair"]) for a, r in zip(alone, outs)]
    lanes = [a / epoch(r["lanes"]) for a, r in zip(alone, outs)]
    share = [a / c for a, c in zip(lanes, ceiling)]
    cols[CEILING] = {
        "time / epoch [s]": f"{np.median(alone):.4g}",
        "epoch / X@w": f"{np.median(alone) / floors['X @ w']:.2f}",
        "epochs": f"2-{epochs}",
        "n_jobs speed-up": f"ceiling {np.median(ceiling):.2f} ({min(ceiling):.2f}-"
                           f"{max(ceiling):.2f}); lanes {np.median(lanes):.2f} "
                           f"({min(lanes):.2f}-{max(lanes):.2f}), "
                           f"{np.median(share):.2f} of the ceiling"}


def _vw(ctx, X, y, X_te, y_te):
    try:
        import vowpalwabbit  # noqa: F401
    except ImportError:
        return Unavailable("vowpalwabbit is not installed (pip install vowpalwabbit)")
    train, test = os.path.join(ctx.tmpdir, "train.vw"), os.path.join(ctx.tmpdir, "test.vw")
    vw_text(train, X, y)
    vw_text(test, X_te, y_te)
    vw = VowpalWabbit(train, test, ctx.tmpdir)
    return lambda: _trace(lambda e: (vw.fit(e), None), X, y, X_te, y_te, score=vw.scores)


def _setup(task, dense=False, load=load_task, ours=OURS, lengths=TRACE, epochs=EPOCHS,
           skip=None):
    """The workload on ``load(task)``: ``ours`` traced over ``lengths`` epochs, the
    threaded passes over ``epochs``; ``skip`` maps peers left out to the reason."""
    def setup(ctx):
        import aucopt
        from aucopt.learners.stochastic import lane_threads
        from sklearn.linear_model import LogisticRegression, SGDClassifier
        from sklearn.svm import LinearSVC

        X, y, X_te, y_te = load(task)
        if dense:
            from aucopt.datasets import Scaler

            scaler = Scaler("standard").fit(X.toarray())
            X, X_te = scaler.transform(X.toarray()), scaler.transform(X_te.toarray())
        repeat = {"i": 0}

        def seed():
            repeat["i"] += 1
            return repeat["i"]

        def traced(make):
            return lambda: _trace(lambda e, s=seed(): _fitted(make(e, s), X, y),
                                  X, y, X_te, y_te, lengths=lengths)

        contestants = {name: traced(lambda e, s, name=name: aucopt.get(
            name, n_epochs=e, random_state=s)) for name in ours}
        contestants[DEFAULTS] = lambda: _single(
            lambda: aucopt.get("psam", random_state=seed()), X, y, X_te, y_te)
        for jobs, name in enumerate(JOBS, start=1):
            contestants[name] = lambda jobs=jobs: _passes(
                lambda: aucopt.get("psam", n_epochs=epochs, n_jobs=jobs, random_state=seed()),
                X, y, X_te, y_te)
        threaded = lane_threads(2, X.shape[0], X.shape[1]) > 1  # psam's epoch, n_jobs=2
        if threaded:
            contestants[CEILING] = lambda: _at_once(
                lambda jobs, n_epochs: aucopt.get("psam", n_epochs=n_epochs, n_jobs=jobs,
                                                  random_state=seed()), X, y, epochs)
        contestants[PEERS[0]] = traced(lambda e, s: SGDClassifier(
            loss="hinge", average=True, max_iter=e, tol=None, random_state=s))
        contestants[PEERS[1]] = (_vw(ctx, X, y, X_te, y_te) if not dense else
                                 Unavailable("dense workload: sparse peers only"))
        contestants[SVC_DEFAULT] = lambda: _single(LinearSVC, X, y, X_te, y_te)
        contestants[PEERS[3]] = lambda: _single(
            lambda: LinearSVC(class_weight="balanced"), X, y, X_te, y_te)
        contestants[PEERS[4]] = lambda: _single(
            lambda: LogisticRegression(class_weight="balanced"), X, y, X_te, y_te)
        contestants.update({peer: Unavailable(why) for peer, why in (skip or {}).items()})
        for name, floor in zip(FLOORS, (lambda: xw_floor(X), lambda: pair_dot_floor(X, y),
                                        lambda: pair_dot_floor(X, y, in_order=True))):
            contestants[name] = lambda floor=floor: _floor(floor())
        contestants[FIXED] = lambda: _fixed(X, y)
        nnz = X.nnz if not dense else X.size
        return dict(
            contestants=contestants,
            peer=SVC_DEFAULT,
            finalize=lambda outputs: _finalize(outputs, threaded),
            params={"task": task, "train": f"{X.shape[0]} x {X.shape[1]}", "nnz": nnz,
                    "test rows": X_te.shape[0], "trace": lengths, "threads epochs": epochs,
                    "two threads": "yes" if threaded else "no (epoch too short)",
                    "input": "dense, standardised" if dense else "CSR, file order"},
        )

    return setup


for _task in TEXT_TASKS:
    workload(f"pairwise_{_task}",
             description=f"PSAM/ASAM/SAM/adaDSGD vs scikit-learn and Vowpal Wabbit on {_task} "
                         "(CSR text): time to the best peer's AUC, epoch costs, threads",
             columns=COLUMNS)(_setup(_task))

# PSAM's defaults on text they were not chosen on (tasks.HELDOUT_TASKS: other classes of
# the same corpora), against the same peers; of ours only PSAM is traced
for _task in HELDOUT_TASKS:
    workload(f"heldout_{_task}",
             description=f"PSAM vs scikit-learn and Vowpal Wabbit on {_task} (held-out CSR "
                         "text task): time to the best peer's AUC, epoch costs, threads",
             columns=COLUMNS)(_setup(_task, ours=("psam",)))

workload("pairwise_dense_magic04",
         description="PSAM/ASAM/SAM/adaDSGD vs scikit-learn on magic04 (dense, standardised)",
         columns=COLUMNS)(_setup("magic04", dense=True))

# The rcv1-shaped set: a repeat of the full workload would take over ten minutes
# (adaDSGD's and Vowpal Wabbit's traces, the text conversion, the balanced peers), so
# PSAM alone is traced, over fewer epochs, against the fastest peers.
_SLOW = "left out on the rcv1-shaped set (minutes per fit); see pairwise_news20"
workload("pairwise_rcv1",
         description="PSAM vs scikit-learn on the rcv1-shaped set (tools/synth_rcv1.py, "
                     "724,000 x 47,236 CSR, the last 80,414 rows for test): time to the "
                     "best peer's AUC, epoch costs, threads",
         columns=COLUMNS)(_setup("rcv1", load=lambda _: split_rcv1(), ours=("psam",),
                                 lengths=(1, 2, 3, 4, 6, 8), epochs=4,
                                 skip={p: _SLOW for p in PEERS[1:] if p != SVC_DEFAULT}))
