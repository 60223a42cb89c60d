"""Timing helpers of the pairwise workloads (tools/workloads_stochastic.py, tools/rcv1_workload.py).

* :func:`pair_dot_floor` -- the random-pair-dot floor of an epoch of pairwise SGD: the
  ``2 n`` row dots of ``n`` pairs drawn as the learners draw them (a positive and a
  negative row, uniformly with replacement), in draw order, with a dense ``w``. No
  pairwise learner can read its pairs' rows for less; what an epoch costs beyond it
  is its updates, ``x_i . x_j`` and bookkeeping.
  With ``in_order`` the same ``2 n`` rows sorted into storage order: the dots without
  the random access.
* :func:`xw_floor` -- one ``X @ w`` (rows in storage order): the streaming floor.
* :func:`fixed_costs` -- what a fit pays besides its passes: the input checks (one
  pass, with the row norms) and the OPTROC threshold.
* :func:`timed_passes` -- fit a learner and return the seconds of each of its passes
  (the driver's ``_pass`` hook, so validation, the threshold and the automatic
  stopping rule's objective are not counted).
* :func:`vw_text` / :class:`VowpalWabbit` -- Vowpal Wabbit as a peer, fed from a cache
  file written before the timed fits (its binary cache, as a VW user trains from).
"""
import os
import time

import numpy as np


def _best(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def epoch_pairs(y, rng):
    """Rows of one epoch's pairs (``n`` draws per class), interleaved positive/negative."""
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    order = np.empty(2 * y.size, dtype=np.int64)
    order[0::2] = pos[rng.integers(0, pos.size, y.size)]
    order[1::2] = neg[rng.integers(0, neg.size, y.size)]
    return order


def pair_dot_floor(X, y, repeats=5, seed=0, in_order=False):
    """Seconds (best of ``repeats``) of the ``2 n`` random-order row dots of one epoch
    (``in_order``: the same rows in storage order, each row's two visits in a row:
    what the dots cost without the random access)."""
    from aucopt.base import BaseLearner
    from aucopt.driver import raw_scores
    from aucopt.validation import row_source

    rng = np.random.default_rng(seed)
    rows = epoch_pairs(np.asarray(y), rng)
    view = row_source(X, norms=False).take(np.sort(rows) if in_order else rows)
    linear = BaseLearner()  # the default scoring: the rows times coef_
    linear.coef_ = rng.standard_normal(X.shape[1])
    return _best(lambda: raw_scores(linear, view), repeats)


def xw_floor(X, repeats=5, seed=0):
    """Seconds (best of ``repeats``) of one ``X @ w``."""
    w = np.random.default_rng(seed).standard_normal(X.shape[1])
    return _best(lambda: X @ w, repeats)


def fixed_costs(X, y, repeats=5, seed=0):
    """Seconds (best of ``repeats`` each) of a PSAM fit's fixed costs: ``checks``,
    the validation of ``X`` and its row source (``check_X`` keeping the row norms,
    as ``fit`` does); ``threshold``, the OPTROC threshold of a trained model scored
    afresh (a fit with an explicit ``n_epochs``, a default fit whose stopping rule
    reads its passes, ``monitor="pass"``, and one on more rows than its rule
    monitors); ``sorts``, the threshold given the scores (a default fit with
    ``monitor="rows"`` on at most :func:`aucopt.driver.monitor_size` rows, which
    reuses the stopping rule's scores of its last pass); ``reused``, whether a
    default fit on ``X`` reuses them."""
    import aucopt
    from aucopt.driver import monitor_size, raw_scores, set_threshold
    from aucopt.validation import check_X, row_source

    y = np.asarray(y)
    model = aucopt.get("psam", n_epochs=1, random_state=seed).fit(X, y)
    rows = row_source(check_X(X, norms=True))
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    scores = raw_scores(model, rows)
    return {"checks": _best(lambda: row_source(check_X(X, norms=True)), repeats),
            "threshold": _best(lambda: set_threshold(model, raw_scores(model, rows), y_pm),
                               repeats),
            "sorts": _best(lambda: set_threshold(model, scores, y_pm), repeats),
            "reused": (model.get_params().get("monitor") == "rows"
                       and X.shape[0] <= monitor_size(model, X.shape[0]))}


def timed_passes(model, X, y):
    """Fit ``model`` on ``(X, y)``; returns the seconds of each pass (from
    ``history_``: a pass with its divergence check)."""
    model.fit(X, y)
    return np.diff(model.history_[:, 0], prepend=0.0).tolist()


def vw_text(path, X, y):
    """Write ``(X, y)`` (labels in {-1, +1}) in Vowpal Wabbit's text format."""
    from aucopt.datasets import atomic_write

    X = X.tocsr()
    with atomic_write(path) as f:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            feats = " ".join(f"{j}:{v:.9g}" for j, v in zip(X.indices[lo:hi], X.data[lo:hi]))
            f.write(f"{1 if y[i] > 0 else -1} |f {feats}\n".encode())


class VowpalWabbit:
    """Vowpal Wabbit (``vowpalwabbit`` package) with its defaults for binary
    classification (logistic loss; adaptive, normalised, invariant updates) on
    files written by :func:`vw_text`; ``passes`` epochs from its cache file."""

    def __init__(self, train_path, test_path, workdir, bits=18):
        from vowpalwabbit import pyvw

        self.pyvw = pyvw
        self.train, self.test = train_path, test_path
        self.cache = os.path.join(workdir, "train.vwcache")
        self.model = os.path.join(workdir, "model.vw")
        self.preds = os.path.join(workdir, "preds.txt")
        self.bits = bits
        self.fit(1)  # writes the cache: later fits read it, untimed here

    def fit(self, passes):
        """Train ``passes`` epochs; returns the seconds it took."""
        start = time.perf_counter()
        ws = self.pyvw.Workspace(
            f"-d {self.train} --cache_file {self.cache} --passes {passes} --holdout_off "
            f"--loss_function logistic -b {self.bits} -f {self.model} --quiet")
        ws.run_parser()
        ws.finish()
        return time.perf_counter() - start

    def scores(self):
        """Scores of the test file by the last model."""
        ws = self.pyvw.Workspace(f"-t -i {self.model} -d {self.test} -p {self.preds} --quiet")
        ws.run_parser()
        ws.finish()
        return np.loadtxt(self.preds, ndmin=1)
