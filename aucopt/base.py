"""The Learner protocol and the learner skeleton every aucopt learner is built on.

Every aucopt learner is a scikit-learn compatible binary estimator written
without importing scikit-learn:

* ``__init__`` only stores its parameters (:class:`aucopt._estimator.Estimator`
  reads the signature for ``get_params`` / ``set_params``);
* inputs go through one validation path (:mod:`aucopt.validation`), labels are
  any two values (``classes_ = [negative, positive]``, the positive class is
  ``pos_label`` or the larger value);
* **one driver** trains every built-in learner: ``fit`` = validate, build the row
  source once, ``_init_state``, ``_prepare`` once, then passes (``_pass``) each
  followed by the divergence check and the ``verbose`` line; ``partial_fit`` is the
  same with one pass over the chunk (:class:`OnlineMixin`). A family supplies the
  hooks, nothing else;
* **transactions**: a call that raises (bad data, divergence, Ctrl-C) leaves the
  model exactly as it was. Attributes are restored from a shallow snapshot (fresh
  arrays cost nothing); arrays a kernel updates in place are journaled (only the
  rows the call touches are saved, see :mod:`aucopt._kernels._journal`), so a
  ``partial_fit`` does not copy the model;
* ``decision_function`` is the ranking score. Pairwise objectives are blind to an
  intercept (it cancels in every pair), so ``intercept_ = -threshold`` where the
  threshold is the training ROC curve's best-accuracy point (OPTROC, the operating
  point the dissertation of Khalid (2019) reports); ``predict`` is
  ``decision_function > 0`` and the AUC never depends on it;
* ``merge`` combines models trained on different data (shards, workers) into one,
  for the learners whose state combines (``_merge``: ``"exact"`` when the
  statistics add up to those of the concatenated data, ``"average"`` for a
  weighted average of parameters, an approximation); see :meth:`BaseLearner.merge`;
* ``save(path)`` writes the declared state (:mod:`aucopt._state`) in the model-file
  format of :mod:`aucopt._format`; :func:`aucopt.load` reads it back, checking every
  value against the declaration, never unpickling.

A plugin learner only needs ``__init__`` and ``_fit(X, y)`` (labels in {-1, +1};
set ``coef_``): the default scoring is ``X @ coef_``.
"""
from __future__ import annotations

import contextlib
import copy
import inspect
import math
import numbers
import signal
import threading
import time
import warnings
from typing import Iterable, Protocol, Sequence, runtime_checkable

import numpy as np

from aucopt._estimator import Estimator
from aucopt._format import encode_model, write_model
from aucopt._kernels._journal import Journal
from aucopt._kernels._weights import dense_scores
from aucopt._state import Array, Labels, Scalar, state_spec
from aucopt.exceptions import ConstantModelWarning, not_fitted_error
from aucopt.metrics import optroc_accuracy, roc_auc
from aucopt.validation import (check_sample_weight, check_X, check_y, finite_rows,
                               order_stream, row_scale, row_source, weight_counts,
                               weight_stream)

__all__ = ["Learner", "BaseLearner", "OnlineMixin", "DIVERGED", "merge", "MERGE_KINDS",
           "HISTORY_COLUMNS"]

# A model whose scores on the training rows can exceed this is refused as diverged
# (margin and square losses work at scores of order 1; nothing sensible is 1e10).
DIVERGED = 1e10
# A model whose mean pair loss on its training rows (``_pair_loss``) exceeds this
# multiple of the loss of w = 0 (1 for every pair loss the learners use) is refused
# as diverged: a step too large can leave the iterate oscillating far beyond the
# optimum with scores that overflow nothing, a model that ranks at chance or worse.
LOSS_LIMIT = 100.0
# The automatic stopping rule evaluates the objective, and the verbose line the
# training AUC, on at most this many rows.
MONITOR_ROWS = 20_000
# With verbose, a pass that runs longer prints a progress line every this many seconds.
PROGRESS_SECONDS = 5.0
# The columns of ``history_`` (one row per pass of ``fit``): the wall time of the
# passes so far, the training objective after the pass (NaN for a learner without
# one) and the AUC on ``validation_data`` (NaN without it).
HISTORY_COLUMNS = ("seconds", "objective", "val_auc")
# How a learner's models combine (``BaseLearner._merge``), besides None (they do not).
MERGE_KINDS = ("exact", "average")
# Parameters that do not change what a fitted state means: models may differ in them.
MERGE_FREE_PARAMS = ("verbose", "random_state", "shuffle", "n_epochs", "tol",
                     "n_iter_no_change", "max_epochs", "max_state_bytes", "n_jobs")


@runtime_checkable
class Learner(Protocol):
    """What every aucopt learner provides (online learners add ``partial_fit``).

    ``aucopt.register`` and plugin loading refuse classes that lack any of these.
    """

    def fit(self, X, y): ...

    def decision_function(self, X): ...

    def predict(self, X): ...

    def score(self, X, y): ...

    def get_params(self, deep=True): ...

    def set_params(self, **params): ...


class _Transaction:
    """Undo record of one training call (see the module docstring)."""

    def __init__(self, learner, fresh):
        self.learner = learner
        self.fresh = fresh
        self.saved = dict(learner.__dict__)
        # generators advance in place: keep their states to rewind them
        self.streams = [(g, g.bit_generator.state) for g in self.saved.values()
                        if isinstance(g, np.random.Generator)]
        self.undo = []
        self.deferred = []
        self.settled = False  # rolled back or committed

    def track(self, obj):
        """Journal ``obj`` (a Weights / Journal-like object with begin, rollback and
        commit) unless its state was created in this call. Returns ``obj``."""
        if not self.fresh:
            obj.begin()
            self.undo.append(obj)
        return obj

    def journal(self, array, width=None):
        """An undo :class:`~aucopt._kernels._journal.Journal` of ``array`` for a
        kernel that updates its rows in place (None in a fresh call: nothing to
        undo; kernels accept None)."""
        if self.fresh:
            return None
        journal = Journal(array, width=width)
        self.undo.append(journal)
        return journal

    def backup(self, array):
        """Keep a copy of a small in-place-updated ``array`` to restore on failure."""
        if not self.fresh:
            self.undo.append(_Copy(array))
        return array

    def defer(self, fn):
        """Run ``fn()`` once the call has succeeded (after every check): for updates
        a kernel kept pending instead of writing them into large state in place."""
        self.deferred.append(fn)

    def rollback(self):
        for obj in reversed(self.undo):
            obj.rollback()
        for gen, state in self.streams:
            gen.bit_generator.state = state
        self.learner.__dict__.clear()
        self.learner.__dict__.update(self.saved)
        self.settled = True

    def commit(self):
        for obj in self.undo:
            obj.commit()
        for fn in self.deferred:
            fn()
        self.settled = True


def _monitor_rows(rows, y):
    """``(rows, y)``, or a fixed random subsample of :data:`MONITOR_ROWS` of them."""
    n = rows.n_rows
    if n <= MONITOR_ROWS:
        return rows, y
    pick = np.sort(np.random.default_rng(0).choice(n, MONITOR_ROWS, replace=False))
    return rows.take(pick), y[pick]


class _History:
    """Collects ``history_`` during one ``fit`` (see :meth:`BaseLearner.fit`)."""

    def __init__(self, learner, rows, y, validation):
        self.learner = learner
        self.train = (rows, y)
        self.monitor = None
        self.validation = None
        if validation is not None:
            X_val, y_val = validation
            self.validation = (learner._input_rows(X_val, fit_map=False, norms=False), y_val)
        self.seconds = 0.0
        self.records = []

    def record(self, seconds):
        """After a pass that took ``seconds``: its row of ``history_``."""
        learner = self.learner
        self.seconds += seconds
        objective = learner.__dict__.get("objective_")
        if objective is None and self.validation is not None and hasattr(learner, "_objective"):
            # not computed by the pass or the stopping rule: only for a monitored fit
            # (it costs a fifth of a PSAM epoch on 20,000 sparse rows)
            if self.monitor is None:
                self.monitor = _monitor_rows(*self.train)
            objective = float(learner._objective(*self.monitor))
        auc = math.nan
        if self.validation is not None:
            rows, y = self.validation
            auc = roc_auc(y, learner._raw_scores(rows))
        self.records.append((self.seconds, math.nan if objective is None else objective, auc))

    def store(self):
        """Set ``history_`` (a fit that ran no pass of the driver has none)."""
        if self.records:
            self.learner.history_ = np.array(self.records, dtype=np.float64)


def _settle(tx, step):
    """Run ``step`` (``tx.rollback`` or ``tx.commit``) to its end, with Ctrl-C held
    while it runs and delivered after: a restore or commit cut short would leave
    the model half one, half the other. A Ctrl-C arriving just before the hold
    (the step has not started) is raised once the step has run."""
    interrupt = None
    while not tx.settled:
        try:
            _holding_sigint(step)
        except KeyboardInterrupt as exc:
            interrupt = exc
    if interrupt is not None:
        raise interrupt


def _holding_sigint(fn):
    """Run ``fn`` with SIGINT held until it returns, then delivered. Only the main
    thread receives signals (elsewhere ``fn`` just runs); a handler not installed
    from Python is replaced by Python's own afterwards."""
    held = []
    try:  # first thing: the fewer bytecodes before the hold, the smaller the window
        previous = signal.signal(signal.SIGINT, lambda *args: held.append(args))
    except ValueError:  # not the main thread
        return fn()
    try:
        return fn()
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None
                      else previous)
        if held:
            signal.raise_signal(signal.SIGINT)


class _Copy:
    def __init__(self, array):
        self.array = array
        self.copy = array.copy()

    def rollback(self):
        self.array[...] = self.copy

    def commit(self):
        self.copy = None


class Stall:
    """The automatic stopping rule of ``n_epochs="auto"``: :meth:`update` with the
    objective after each pass returns True once ``n_iter_no_change`` passes in a
    row improved the best value so far by less than ``tol``."""

    def __init__(self, tol, n_iter_no_change):
        self.tol = tol
        self.patience = n_iter_no_change
        self.best = math.inf
        self.stalled = 0

    def update(self, value):
        if math.isfinite(self.best) and self.best - value < self.tol:
            self.stalled += 1
        else:
            self.stalled = 0
        self.best = min(self.best, value)
        return self.stalled >= self.patience


class BaseLearner(Estimator):
    """Common machinery of every aucopt learner (see the module docstring).

    Hooks a family supplies: ``_init_state(n_features)`` (allocate the declared
    state), ``_prepare(rows, y)`` (per-call statistics, optional), ``_pass(rows, y,
    index)`` (pass ``index`` of the call; arrays it updates in place are journaled
    through the call's transaction ``self._tx``), ``_raw_scores(rows)``
    (ranking scores of a row source) and ``_weight_norm()`` (``||w||`` for the
    divergence check, or None). ``_state`` declares the fitted state.
    """

    _estimator_type = "classifier"
    _state = {
        "classes_": Labels(),
        "n_features_in_": Scalar(int, low=1, high=2**31 - 1),
        "intercept_": Scalar(float),
        "n_passes_": Scalar(int, low=0, optional=True),
        "objective_": Scalar(float, optional=True),
        "stop_reason_": Scalar(str, choices=("n_epochs", "tol", "max_epochs", "max_newton",
                                             "no_progress"), optional=True),
        # a plugin's ranking vector (built-in learners derive coef_ from their state)
        "coef_": Array("f8", ("d",), optional=True),
        "history_": Array("f8", ("*", len(HISTORY_COLUMNS)), finite=False, optional=True),
    }
    # the parameter to name when a fit diverges
    _divergence_hint = "lower the step size"
    # ``(positive scores, negative scores) -> mean pair loss`` (1 at w = 0) of the
    # learner's objective, if cheap: fitted models above LOSS_LIMIT are refused
    _pair_loss = None
    # consumes rows in the given order: has `shuffle` and `random_state` parameters
    _shuffles = False
    # parameters that may be "auto": name -> rule(learner, s, rows) giving the value
    # from the data (s = the mean squared row norm, ``row_scale_``); the value in use
    # is the fitted attribute ``<name>_``, fixed by the first data a model sees
    _auto_params = {}
    # fits a feature map on its first data: ``sample_weight`` repeats the input rows
    # (a copy) rather than their view, so that the map is fitted on the copies too
    _repeats_input = False
    # weighs its rows itself (``fit`` only): ``sample_weight`` reaches it as
    # ``_row_weights`` during the call, each row given once; the row scale of the
    # "auto" parameters and the threshold are then computed with the weights
    _weighs_rows = False

    def __sklearn_tags__(self):
        # only scikit-learn calls this, so it is installed when we get here
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            # bipartite ranking: two classes only, declared rather than skipped
            classifier_tags=ClassifierTags(multi_class=False),
            input_tags=InputTags(sparse=True, allow_nan=False),
            non_deterministic=False,
        )

    def __sklearn_is_fitted__(self):
        return "n_features_in_" in self.__dict__

    # ---- fitting

    def fit(self, X, y, sample_weight=None, validation_data=None):
        """Train from scratch on ``X`` (dense or sparse) and binary labels ``y``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or float, optional
            Finite weights >= 0, not all 0, with scikit-learn's semantics: a
            row of integer weight ``k`` trains as ``k`` copies of the row, one after
            the other (a shuffling learner shuffles the copies), so the model equals
            the one trained on the repeated rows, bit for bit for the same
            ``random_state``; a row of weight 0 is ignored. Every statistic the
            learner keeps (class counts, means, covariances, pair counts, the row
            scale of the "auto" parameters, the training OPTROC threshold) is then
            the weighted one, and a pairwise loss weighs a pair by the product of
            its rows' weights. A weight ``k + f`` with a fractional part ``f``
            counts ``k`` copies and one more with probability ``f``, drawn
            independently per row (from a stream of ``random_state``, seed 0 for a
            learner without one): each row's and each pair's expected weight is
            exact, so the expected objective is the weighted one. A weight is a
            number of copies, not a relative importance: weights far below 1 leave
            most rows out.
        validation_data : (X_val, y_val), optional
            Held-out rows (same features) and labels (the classes of ``y``, both
            present): their AUC after each pass is recorded in ``history_``.

        Returns
        -------
        self

        Notes
        -----
        ``history_`` (one row per pass of the driver, columns
        :data:`HISTORY_COLUMNS`): cumulative seconds of the passes (their
        divergence checks and the stopping rule's objective included; the
        history's own objective and validation scoring excluded), the training
        objective on at most 20,000 training rows after the pass (NaN for a
        learner without one, and with an integer ``n_epochs`` unless
        ``validation_data`` is given: a plain fit computes no more than it needs)
        and the validation AUC (NaN without ``validation_data``). It describes the
        last ``fit``: ``partial_fit`` leaves it as it is, ``merge`` drops it;
        ``save`` keeps it.
        """
        X = check_X(X)
        y_pm, classes = check_y(y, X.shape[0], pos_label=self._pos_label())
        weights = self._check_sample_weight(sample_weight, X.shape[0])
        validation = (None if validation_data is None
                      else self._check_validation(validation_data, X.shape[1], classes))
        self._check_params()
        X, y_pm, weights = _drop_unweighted(X, y_pm, weights, fit=True)
        with self._transaction(fresh=True):
            self._clear_fitted()
            self.classes_ = classes
            self.n_features_in_ = X.shape[1]
            rows, y_rows = self._weighted_rows(X, y_pm, weights, fit_map=True, fit=True)
            self._history = _History(self, rows, y_rows, validation)
            if type(self)._fit is BaseLearner._fit:
                self._train(rows, y_rows)
            else:
                self._fit(X, y_pm, **({} if weights is None else {"sample_weight": weights}))
                self._invalidate()
            if not self._coef_finite():
                self._diverged("non-finite weights")
            self._finish(rows, y_rows)
            self.__dict__.pop("_row_weights", None)
            self.__dict__.pop("_history").store()
        return self

    def _check_validation(self, validation_data, n_features, classes):
        """``validation_data`` of ``fit`` validated: ``(X_val, y_val in {-1, +1})``."""
        if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
            raise ValueError("validation_data must be a pair (X_val, y_val), got "
                             f"{type(validation_data).__name__}")
        X_val = check_X(validation_data[0], name="validation_data X", n_features=n_features,
                        estimator=type(self).__name__)
        y_val, _ = check_y(validation_data[1], X_val.shape[0], classes=classes)
        if not ((y_val > 0).any() and (y_val < 0).any()):
            raise ValueError("validation_data labels hold one class only: the validation "
                             "AUC needs both classes")
        return X_val, y_val

    def _check_sample_weight(self, sample_weight, n_samples):
        """:func:`~aucopt.validation.check_sample_weight`, and a TypeError for a
        plugin whose own ``_fit`` takes no ``sample_weight`` (never ignored)."""
        weights = check_sample_weight(sample_weight, n_samples)
        fit = type(self)._fit
        if weights is not None and fit is not BaseLearner._fit \
                and "sample_weight" not in inspect.signature(fit).parameters:
            raise TypeError(f"{type(self).__name__} does not support sample_weight: its "
                            "_fit(X, y) takes none; fit it without weights, or give its "
                            "_fit a sample_weight parameter")
        return weights

    def _weighted_rows(self, X, y, weights, fit_map=False, fit=False):
        """The rows the learner works on for validated ``X`` (:meth:`_input_rows`)
        and labels ``y``, each row repeated by its weight (:meth:`_repeat_input`).
        A learner that weighs its rows itself (``_weighs_rows``) gets each row once
        and the weights as ``_row_weights`` (for the call)."""
        if self._weighs_rows and not self._repeats_input and weights is not None \
                and not (weights == 1).all():
            self._row_weights = weights
            return self._input_rows(X, fit_map=fit_map, y=y), y
        X, y, order = self._repeat_input(X, y, weights, fit=fit)
        return _take(self._input_rows(X, fit_map=fit_map, y=y), y, order)

    def _repeat_input(self, X, y, weights, fit=False, rows_given=False):
        """``(X, y, order)``: each row repeated, consecutively, as many times as its
        weight says (:func:`~aucopt.validation.weight_counts`; a fractional part is
        drawn from a stream of ``random_state`` of its own, or of seed 0 for a
        learner without one), as ``order``, the rows to take from the row source of
        ``X``, or None (unweighted input, all weights 1). A learner on a feature
        map fitted on its first data (``_repeats_input``) gets ``X`` and ``y``
        repeated instead (a copy), so that the map sees the copies too."""
        if weights is None:
            return X, y, None
        counts = weight_counts(weights, lambda: weight_stream(
            getattr(self, "random_state", 0), self.__dict__.get("n_passes_", 0)),
            getattr(self, "max_state_bytes", None))
        if (counts == 1).all():
            return X, y, None
        order = np.repeat(np.arange(X.shape[0], dtype=np.int64), counts)
        if fit and not ((y[order] > 0).any() and (y[order] < 0).any()):
            raise ValueError("the fractional sample weights drew no row of one class (a "
                             "weight is a number of copies of its row, the fraction drawn "
                             "at random); scale sample_weight up")
        if self._repeats_input and not rows_given:
            return X[order], y[order], None
        return X, y, order

    def _input_rows(self, X, fit_map, norms=True, y=None, stream=False):
        """The rows the learner works on for a validated ``X``: ``X`` itself, or (a
        learner on a feature map) its image, the map fitted first if ``fit_map``
        (on ``X`` with labels ``y``, a ``stream`` chunk or all of ``fit``'s data)."""
        return finite_rows(X, norms)

    def _fit(self, X, y):
        """Train on validated ``X`` and labels in {-1, +1}, setting ``coef_``.

        The hook for plugin learners that train by their own code; built-in
        learners leave it alone and get the skeleton (:meth:`_train`).
        """
        self._train(row_source(X), y)

    def _train(self, rows, y):
        """The skeleton: state, preparation once, then the passes (a fixed number,
        or with ``n_epochs="auto"`` until the objective stalls). Learners that
        consume rows in order (``_shuffles``) see them in a fresh random order each
        pass when ``shuffle`` is set (``fit`` only: ``partial_fit`` keeps the
        caller's order, a stream is a stream)."""
        self._init_state(rows.n_features)
        self._resolve_auto(rows)
        if self._shuffles and self.shuffle:  # set before _prepare, which may look ahead
            self._order_rng = order_stream(self.random_state)
        try:
            self._prepare(rows, y)
            if getattr(self, "n_epochs", None) == "auto":
                self._train_until_stalled(rows, y)
                return
            for index in range(self._n_passes()):
                self._run_pass(rows, y, index)
            if "n_epochs" in self.get_params():
                self.stop_reason_ = "n_epochs"
        finally:
            self.__dict__.pop("_order_rng", None)

    def _train_until_stalled(self, rows, y):
        """Passes until the training objective stalls (``n_epochs="auto"``).

        After each pass the learner's objective is evaluated on the training rows (a
        fixed random subsample of at most :data:`MONITOR_ROWS` of them, drawn once);
        a pass that improves on the best value so far by less than ``tol`` counts
        as stalled (objectives are means of pair losses, so an absolute tolerance
        means the same on every data set, as scikit-learn's SGD uses one), and training stops after ``n_iter_no_change``
        stalled passes in a row (``stop_reason_ = "tol"``) or after ``max_epochs``
        passes (``"max_epochs"``).
        """
        monitor = _monitor_rows(rows, y)
        stall = Stall(self.tol, self.n_iter_no_change)
        self.stop_reason_ = "max_epochs"
        for index in range(int(self.max_epochs)):
            self._run_pass(rows, y, index, monitor)
            if stall.update(self.objective_):
                self.stop_reason_ = "tol"
                break

    def _finish(self, rows, y):
        """After training on ``rows``: refuse overflowing scores, set the threshold."""
        self._set_threshold(self._raw_scores(rows), y)

    def _set_threshold(self, scores, y):
        """Refuse overflowing training ``scores`` (ranking scores, no intercept) and
        put ``intercept_`` at the OPTROC point of labels ``y`` (in {-1, +1}) (of
        the copies of the rows, when the learner weighs its rows itself)."""
        weights = self.__dict__.get("_row_weights")
        if weights is not None:
            scores, y = _weighted_copies(scores, y, weights)
        top = float(np.max(np.abs(scores))) if scores.size else 0.0
        if not math.isfinite(top) or top > DIVERGED:
            self._diverged(f"training scores up to {top:.3g}")
        if self._pair_loss is not None:
            loss = self._pair_loss(scores[y > 0], scores[y < 0])
            if not loss <= LOSS_LIMIT:
                self._diverged(f"mean pair loss of the training scores {loss:.3g}, over "
                               f"{LOSS_LIMIT:g} times that of w = 0")
        if np.all(y == y[0]):
            if "intercept_" not in self.__dict__:
                self.intercept_ = 0.0
            return
        if scores.size and np.all(scores == scores[0]):
            warnings.warn(
                f"{type(self).__name__} scores every training row the same ({scores[0]:.3g}): "
                "the model ranks nothing (AUC 0.5). Its step size is too small or its "
                "regularisation too strong for the scale of these features; scale them "
                "(aucopt.datasets.Scaler) or change the step / regularisation parameters.",
                ConstantModelWarning, stacklevel=4)
        _, threshold = optroc_accuracy(y, scores, return_threshold=True)
        self.intercept_ = -float(threshold)

    def _n_passes(self):
        return int(getattr(self, "n_epochs", 1))

    def _prepare(self, rows, y):
        """Per-call preparation (class statistics, data-derived constants)."""

    def _run_pass(self, rows, y, index=0, monitor=None):
        """Pass ``index`` of this call, the divergence check, the objective on
        ``monitor`` (rows, labels) when given, the ``verbose`` line (and, during a
        pass longer than :data:`PROGRESS_SECONDS`, progress lines)."""
        start = time.perf_counter()
        shuffle = self.__dict__.get("_order_rng")
        with self._progress_lines() if getattr(self, "verbose", 0) else contextlib.nullcontext():
            if shuffle is not None:
                order = shuffle.permutation(rows.n_rows)
                self._pass(rows.take(order), y[order], index)
            else:
                self._pass(rows, y, index)
        self._invalidate()
        self._check_diverged(rows)
        self.n_passes_ = getattr(self, "n_passes_", 0) + 1
        if monitor is not None:
            self.objective_ = float(self._objective(*monitor))
            if not math.isfinite(self.objective_):
                self._diverged(f"objective {self.objective_}")
        seconds = time.perf_counter() - start
        history = self.__dict__.get("_history")
        if history is not None:
            history.record(seconds)
        if getattr(self, "verbose", 0):
            self._report(rows, y, seconds)

    def _pos_label(self):
        return getattr(self, "pos_label", None)

    def _check_params(self):
        """Validate parameter values (subclasses extend); raise ValueError/TypeError."""

    # ---- divergence

    def _weight_norm(self):
        """``||w||`` of the current iterate if the learner maintains it, else None."""
        return None

    def _check_diverged(self, rows):
        """Refuse a diverged model after a pass: O(1) with a maintained norm."""
        norm = self._weight_norm()
        if norm is None:
            return
        bound = norm * math.sqrt(rows.max_sqnorm()) if rows.has_norms else norm
        if not math.isfinite(bound) or bound > DIVERGED:
            self._diverged(f"||w|| = {norm:.3g}")

    def _diverged(self, what):
        raise FloatingPointError(
            f"{type(self).__name__} diverged ({what}); {self._divergence_hint}, or "
            "scale the features (aucopt.datasets.Scaler). The model was left unchanged.")

    # ---- progress

    def _report(self, rows, y, seconds, what=None):
        """The one ``verbose`` line of a pass: what was done, ``||w||``, the training
        AUC (on at most :data:`MONITOR_ROWS` rows), time."""
        rows, y = _monitor_rows(rows, y)
        scores = self._raw_scores(rows)
        auc = roc_auc(y, scores) if (y > 0).any() and (y < 0).any() else float("nan")
        norm = self._weight_norm()
        shown = f"|w| {norm:.4g}, " if norm is not None else ""
        if "objective_" in self.__dict__:
            shown += f"objective {self.objective_:.6g}, "
        what = what or f"pass {self.n_passes_}"
        print(f"-- {type(self).__name__} {what}: {self._progress()}{shown}"
              f"train AUC {auc:.4f}, {seconds:.3f} s", flush=True)

    @contextlib.contextmanager
    def _progress_lines(self):
        """While the pass inside runs, a line every :data:`PROGRESS_SECONDS` seconds
        (the time so far, and how much of the pass is done when the pass sets
        ``self._pass_done``, a fraction)."""
        done = threading.Event()
        start = time.perf_counter()
        number = getattr(self, "n_passes_", 0) + 1

        def tick():
            while not done.wait(PROGRESS_SECONDS):
                part = self.__dict__.get("_pass_done")
                shown = f"{part:.0%} done, " if part is not None else ""
                print(f"   {type(self).__name__} pass {number}: {shown}"
                      f"{time.perf_counter() - start:.0f} s", flush=True)

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()
            self.__dict__.pop("_pass_done", None)

    def _progress(self):
        """Learner-specific part of the verbose line (e.g. ``"steps 1200, "``)."""
        return ""

    # ---- prediction

    def _check_fitted(self):
        if not self.__sklearn_is_fitted__():
            raise not_fitted_error(f"This {type(self).__name__} instance is not fitted yet; "
                                   "call fit (or partial_fit) with training data first")

    def _coef_finite(self):
        """Whether every weight of ``coef_`` is finite (learners with a packed state
        check it without reading ``coef_`` out)."""
        return bool(np.isfinite(self.coef_).all())

    def _raw_scores(self, rows):
        """Ranking scores of every row (default: the rows times ``coef_``)."""
        return dense_scores(rows, np.ascontiguousarray(self.coef_, dtype=np.float64))

    def decision_function(self, X):
        """Ranking scores ``w . x + intercept_`` (larger = more likely positive).

        The ranking, hence the AUC, does not depend on ``intercept_``; it only puts
        the OPTROC operating point of the training data at score 0. Dense and CSR
        input give bit-identical scores.
        """
        return self._ranking_scores(X) + self.intercept_

    def _ranking_scores(self, X):
        """``decision_function`` without the intercept."""
        self._check_fitted()
        X = check_X(X, n_features=self.n_features_in_, estimator=type(self).__name__)
        scores = self._raw_scores(self._input_rows(X, fit_map=False, norms=False))
        if not np.isfinite(scores).all():
            norm = self._weight_norm()
            raise FloatingPointError(
                f"{type(self).__name__} gives non-finite scores on these rows: the weights"
                + ("" if norm is None else f" (||w|| = {norm:.3g})") + " times the features "
                "overflow; scale the features as the training data were scaled")
        return scores

    def predict(self, X):
        """Class labels: ``classes_[1]`` where ``decision_function(X) > 0``."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.intp)]

    def score(self, X, y):
        """Area under the ROC curve of ``decision_function(X)`` on labels ``y``."""
        scores = self.decision_function(X)
        return roc_auc(y, scores, pos_label=self.classes_[1])

    # ---- state handling

    @classmethod
    def _state_spec(cls):
        spec = state_spec(cls)
        if cls._auto_params:
            spec["row_scale_"] = Scalar(float, low=0.0)
            for name in cls._auto_params:
                spec[name + "_"] = Scalar(float, low=0.0)
        return spec

    def _resolve_auto(self, rows):
        """Fix the data-derived parameters (``_auto_params``) on the first data."""
        if not self._auto_params or "row_scale_" in self.__dict__:
            return
        self._fix_auto(row_scale(rows, self.__dict__.get("_row_weights")), rows)

    def _fix_auto(self, s, rows):
        """Set ``row_scale_ = s`` and the data-derived parameters from it and
        ``rows`` (a model given them before its first data keeps them: a
        distributed fit resolves them once, on all of the data)."""
        self.row_scale_ = s
        for name, rule in self._auto_params.items():
            value = getattr(self, name)
            auto = isinstance(value, str) and value == "auto"
            setattr(self, name + "_", float(rule(self, self.row_scale_, rows) if auto else value))

    def _model_features(self):
        """Features of the space the learner learns in (its rows'; a learner on a
        feature map learns in the map's output space)."""
        return self.n_features_in_

    def _state_dims(self):
        """Sizes of the named dimensions of the declared state (``"d"``, ...)."""
        return {"d": self._model_features()}

    def _check_state(self):
        """Relations between loaded state values that field checks cannot see.

        Here: each resolved data-derived parameter (``eta_``, ``lam_``, ...) must
        pass the checks of the parameter itself (a file cannot smuggle in a value
        the constructor would refuse, such as ``lam_ = 0``); ``history_`` must hold
        rising seconds, no infinite objective and AUCs in [0, 1] (or NaN)."""
        if "history_" in self.__dict__:
            seconds, objective, auc = self.history_.T
            if not (np.all(seconds >= 0) and np.all(np.diff(seconds) >= 0)
                    and not np.isinf(objective).any() and not (auc < 0).any()
                    and not (auc > 1).any()):
                raise ValueError("history_ holds negative or falling seconds, an infinite "
                                 "objective or an AUC outside [0, 1]")
        for name in self._auto_params:
            explicit = getattr(self, name)
            setattr(self, name, getattr(self, name + "_"))
            try:
                self._check_params()
            finally:
                setattr(self, name, explicit)

    def _clear_fitted(self):
        super()._clear_fitted()
        self._invalidate()

    def _invalidate(self):
        """Drop values derived from the state (the cached ``coef_``)."""
        self.__dict__.pop("_coef_cache", None)

    @contextlib.contextmanager
    def _transaction(self, fresh):
        """Run a training call: on any exception (also KeyboardInterrupt) the model
        is restored exactly; ``fresh`` = the call builds new state (nothing in place)."""
        tx = _Transaction(self, fresh)
        self._tx = tx
        try:
            yield tx
        except BaseException:
            _settle(tx, tx.rollback)
            raise
        else:
            _settle(tx, tx.commit)
            del self._tx

    # ---- merging

    # How models of this learner trained on different data combine: "exact" (the
    # merged state is the state of one pass over the concatenated data), "average"
    # (a weighted average of the parameters: an approximation) or None (no merge).
    _merge = None
    # Merge rules of state values (``_merge_values``): name -> "sum" (statistics
    # and counters), "mean" (weighted average; rounded for a counter), "max" or
    # "last" (the value of the last model); state not listed keeps this model's
    # value. Merged along the MRO.
    _merge_rules = {"intercept_": "mean", "n_passes_": "max", "row_scale_": "mean"}

    def merge(self, *others, weights=None, base=None):
        """Combine models trained on other data into this one, in place.

        Every model must be a fitted learner of this class with the same
        parameters (up to ``verbose``, ``random_state``, ``shuffle`` and the
        stopping and memory settings), the same features, classes and resolved
        data-derived parameters (``eta_``, ``lam_``, ...: give them explicitly,
        or let :func:`aucopt.dask.fit` resolve them on all of the data).

        What merging means is declared by the learner (``aucopt list``, column
        "merge", and the class docstring):

        * ``"exact"``: the statistics the model keeps are sums over its rows, and
          the merged statistics are those of one pass over the concatenated data
          (to rounding); the merged parameters are a function of them;
        * ``"average"``: the parameters are averaged with ``weights`` (by default
          the rows each model trained on): one-shot parameter averaging, or, with
          ``base``, one round of iterative parameter mixing (McDonald, Hall &
          Mann, Distributed Training Strategies for the Structured Perceptron,
          NAACL 2010). An approximation of a fit on all of the data; counts and
          class statistics still add exactly.

        A merge that fails (incompatible models, a failed solve) raises and
        leaves this model unchanged.

        Parameters
        ----------
        *others : learners of the same class
        weights : sequence of float, optional
            One weight per model (this one first) for averaged values; None
            weighs each model by the rows it trained on (since ``base``), each row
            counted by its ``sample_weight`` (its copies). Only
            for ``"average"`` learners.
        base : learner, optional
            The model every one of them continued from (iterative parameter
            mixing): its counts and statistics are counted once, not once per
            model.

        Returns
        -------
        self

        Raises
        ------
        TypeError
            If the learner cannot be merged, or a model is of another class.
        ValueError
            If the models are not compatible (the message says how).
        """
        return self._merge_models(others, weights, base, finish=True)

    def _merge_models(self, others, weights, base, finish):
        """:meth:`merge`; ``finish=False`` leaves the derived state (an exact
        learner's solve) to a later merge: a tree of merges finishes at its root."""
        models = [self, *others]
        self._merge_check(models, base)
        weights = self._merge_weights(models, weights, base)
        with self._transaction(fresh=True):
            self._merge_into(models, weights, base, finish)
        return self

    def _merge_into(self, models, weights, base, finish):
        """Combine ``models`` (``self`` first, already checked) into ``self``."""
        rules = self._merge_spec()
        parts = [m._merge_values() for m in models]
        start = base._merge_values() if base is not None else None
        extra = self._merge_extra(models, weights, base)
        merged = {}
        for name, rule in rules.items():
            if name not in parts[0]:
                continue
            values = [p[name] for p in parts]
            merged[name] = _combine(rule, values, weights,
                                    None if start is None else start[name])
        for name in ("objective_", "stop_reason_", "history_"):  # described one model's fit
            self.__dict__.pop(name, None)
        self._merge_store(merged)
        self.__dict__.update(extra)
        self._merge_finish(finish)
        self._invalidate()

    @classmethod
    def _check_mergeable(cls):
        if cls._merge not in MERGE_KINDS:
            raise TypeError(
                f"{cls.__name__} cannot be merged: its state is neither a sum of per-row "
                "statistics nor parameters that average (see the 'merge' column of "
                "`aucopt list`); train it on all of the data instead")

    @classmethod
    def _merge_spec(cls):
        spec = {}
        for klass in reversed(cls.__mro__):
            spec.update(vars(klass).get("_merge_rules", {}))
        return spec

    def _merge_check(self, models, base):
        """Refuse models that cannot be merged with this one (learners extend)."""
        cls = type(self)
        name = cls.__name__
        self._check_fitted()
        cls._check_mergeable()
        free = set(MERGE_FREE_PARAMS)
        params = {k: v for k, v in self.get_params().items() if k not in free}
        for i, model in enumerate(models[1:] + ([base] if base is not None else [])):
            what = "base" if base is not None and i == len(models) - 1 else f"model {i + 1}"
            if type(model) is not cls:
                raise TypeError(f"cannot merge a {type(model).__name__} ({what}) into a "
                                f"{name}: models must be of the same class")
            model._check_fitted()
            other = {k: v for k, v in model.get_params().items() if k not in free}
            differ = sorted(k for k in params if not _same_value(params[k], other[k]))
            if differ:
                raise ValueError(f"cannot merge {name} models with different parameters "
                                 f"({what}: " + ", ".join(
                                     f"{k}={other[k]!r} vs {params[k]!r}" for k in differ)
                                 + ")")
            if model.n_features_in_ != self.n_features_in_:
                raise ValueError(f"cannot merge {name} models with {model.n_features_in_} "
                                 f"and {self.n_features_in_} features ({what})")
            if not np.array_equal(model.classes_, self.classes_):
                raise ValueError(f"cannot merge {name} models with classes "
                                 f"{model.classes_.tolist()} and {self.classes_.tolist()} "
                                 f"({what})")
            for key in [p + "_" for p in self._auto_params]:
                if model.__dict__.get(key) != self.__dict__.get(key):
                    raise ValueError(
                        f"cannot merge {name} models with {key} = {model.__dict__.get(key)!r}"
                        f" and {self.__dict__.get(key)!r} ({what}): 'auto' was resolved on "
                        f"different data; pass {key[:-1]} explicitly, or fit with "
                        "aucopt.dask.fit, which resolves it once on all of the data")

    def _merge_weights(self, models, weights, base):
        """The normalised weight of each model for averaged values."""
        name = type(self).__name__
        if weights is None:
            start = base._merge_rows() if base is not None else 0.0
            raw = np.array([m._merge_rows() - start for m in models], dtype=float)
            if (raw < 0).any():
                raise ValueError(f"a {name} model trained on fewer rows than base: base "
                                 "must be the model every part continued from")
            if raw.sum() <= 0:
                raw = np.ones(len(models))
        else:
            if type(self)._merge == "exact":
                raise ValueError(f"{name} merges exactly (its statistics add up); "
                                 "weights do not apply")
            raw = np.asarray(weights, dtype=float)
            if raw.shape != (len(models),) or not np.isfinite(raw).all() \
                    or (raw < 0).any() or not raw.max() > 0:
                raise ValueError(f"weights must hold {len(models)} finite numbers >= 0 "
                                 f"with a positive sum (one per model), got {weights!r}")
        raw = raw / raw.max()  # in [0, 1] first: a sum of huge weights would overflow
        return raw / raw.sum()

    def _merge_rows(self):
        """How many rows (steps) the model trained on: its default merge weight."""
        return float(getattr(self, "t_", 1))

    def _merge_values(self):
        """The model's values under the names of the merge rules."""
        return {name: self.__dict__[name] for name in self._merge_spec()
                if name in self.__dict__}

    def _merge_store(self, values):
        """Write merged values back into the state (learners with a packed state
        translate their names)."""
        self.__dict__.update(values)

    def _merge_extra(self, models, weights, base):
        """State merged by the learner itself (e.g. buffers): ``{attribute: value}``."""
        return {}

    def _merge_finish(self, finish):
        """Derived state after the merged values are in place (e.g. a solve)."""

    # ---- persistence

    def save(self, path):
        """Write the learner (parameters and declared state) to ``path`` (``.npz``).

        Parameters and scalar state are stored as JSON, arrays as ``.npy`` members;
        :func:`aucopt.load` reads them back without pickle. The file is replaced
        atomically: a save that fails part-way leaves the previous file intact.
        """
        name = vars(type(self)).get("_aucopt_name")  # a subclass has a name of its own
        if name is None:
            raise ValueError(f"{type(self).__qualname__} is not registered; decorate it "
                             "with @aucopt.register(name) (or declare an entry point) to "
                             "save it")
        write_model(path, *encode_model(self, name))
        return self


def _weighted_copies(scores, y, weights):
    """``(scores, y)`` with each row repeated by its weight, for the OPTROC point of
    the weighted rows: integer weights exactly (up to 8 copies per row on average);
    otherwise the weights relative to their mean, the fractional parts drawn (seed
    0), and each row once should the draw leave a class without rows (the point is
    scale-free)."""
    if (weights != np.floor(weights)).any() or weights.sum() > 8 * weights.shape[0]:
        weights = weights / weights.mean()
    counts = weight_counts(weights, lambda: np.random.default_rng(0))
    if not ((y[counts > 0] > 0).any() and (y[counts > 0] < 0).any()):
        counts = (weights > 0).astype(np.int64)
    return np.repeat(scores, counts), np.repeat(y, counts)


def _take(rows, y, order):
    """Rows ``order`` of a row source and their labels (all of them for None)."""
    return (rows, y) if order is None else (rows.take(order), y[order])


def _drop_unweighted(X, y, weights, fit=False):
    """``(X, y, weights)`` without the rows of weight 0 (as if never given); ``fit``
    refuses weights that leave one class without rows."""
    if weights is None or weights.all():
        return X, y, weights
    keep = np.flatnonzero(weights)
    y = y[keep]
    if fit and not ((y > 0).any() and (y < 0).any()):
        raise ValueError("sample_weight is 0 on every row of one class; AUC training "
                         "needs weight on at least one positive and one negative row")
    return X[keep], y, weights[keep]


def merge(models: Iterable[BaseLearner], weights: Sequence[float] | None = None,
          base: BaseLearner | None = None) -> BaseLearner:
    """A new model combining fitted ``models`` (see :meth:`BaseLearner.merge`).

    The first model is copied and the others are merged into the copy; none of
    ``models`` changes.
    """
    models = list(models)
    if not models:
        raise ValueError("merge needs at least one model")
    return copy.deepcopy(models[0]).merge(*models[1:], weights=weights, base=base)


def _same_value(a, b):
    """Parameter equality (numbers by value, anything else by ``==`` or identity)."""
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _combine(rule, values, weights, start):
    """Merge the values of one state field (``start``: the base's value or None)."""
    if rule == "sum":
        total = values[0]
        for value in values[1:]:
            total = total + value
        if start is not None:
            total = total - (len(values) - 1) * start
        return total
    if rule == "mean":
        total = weights[0] * values[0]
        for w, value in zip(weights[1:], values[1:]):
            total = total + w * value
        if isinstance(values[0], numbers.Integral):  # a counter stays a whole number
            return int(round(total))
        return float(total) if isinstance(values[0], numbers.Real) else total
    if rule == "max":
        return max(values)
    if rule == "last":
        return copy.deepcopy(values[-1])
    raise ValueError(f"unknown merge rule {rule!r}")


class OnlineMixin:
    """``partial_fit`` with scikit-learn's semantics, for learners that stream.

    The first call needs ``classes`` (or a chunk showing both classes); later
    chunks may hold a single class. One call is one pass of the skeleton over the
    chunk, so ``partial_fit`` on consecutive chunks continues one stream.
    """

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Continue training on one chunk; the first call fixes classes and features.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of the two labels, optional
            Required on the first call unless ``y`` already holds both classes.
        sample_weight : array-like of shape (n_samples,) or float, optional
            As for ``fit``: a row of integer weight ``k`` is the row ``k`` times
            in a row in the stream; weight 0 drops it.

        Returns
        -------
        self
        """
        first = not self.__sklearn_is_fitted__()
        X = check_X(X, n_features=None if first else self.n_features_in_,
                    estimator=type(self).__name__)
        if first:
            if classes is not None:
                values = np.unique(np.asarray(classes))
                if values.size != 2:
                    raise ValueError(f"classes must hold exactly two labels, got "
                                     f"{values.tolist()}; only binary classification "
                                     "is supported")
                _, known = check_y(values, 2, pos_label=self._pos_label())
                y_pm, _ = check_y(y, X.shape[0], classes=known)
            else:
                y_pm, known = check_y(y, X.shape[0], pos_label=self._pos_label())
        else:
            if classes is not None and set(np.asarray(classes).tolist()) != set(
                    self.classes_.tolist()):
                raise ValueError(f"classes={list(classes)} differs from the classes "
                                 f"{self.classes_.tolist()} of the first partial_fit call")
            y_pm, known = check_y(y, X.shape[0], classes=self.classes_)
        weights = self._check_sample_weight(sample_weight, X.shape[0])
        self._check_params()
        if not first:
            self._check_resumable()
        X, y_pm, weights = _drop_unweighted(X, y_pm, weights)
        return self._learn_chunk(X, y_pm, known, sample_weight=weights)

    def _learn_chunk(self, X, y, classes, rows=None, threshold=True, sample_weight=None):
        """The pass of :meth:`partial_fit` on a validated chunk: ``X`` (or ``rows``,
        its kernels' view, made once by a caller that passes the same chunk again),
        labels ``y`` in {-1, +1}, the two ``classes`` (used by the first call) and
        the validated ``sample_weight`` (each row repeated by its weight; a chunk
        whose fractional weights draw no row leaves a fitted model as it was).

        ``threshold=False`` leaves ``intercept_`` as it was (0 after a first call):
        :func:`aucopt.dask.fit` sets it once, on the final model's scores of all
        rows, instead of scoring every block of every round.
        """
        first = not self.__sklearn_is_fitted__()
        with self._transaction(fresh=first):
            if first:
                self.classes_ = classes
                self.n_features_in_ = X.shape[1]
            X, y, order = self._repeat_input(X, y, sample_weight,
                                             rows_given=rows is not None)
            if not y.shape[0] or (order is not None and not order.size):
                if first:
                    raise ValueError("the fractional sample weights drew no row of this "
                                     "first chunk (a weight is a number of copies of its "
                                     "row, the fraction drawn at random); scale them up")
                return self
            if rows is None:
                rows = self._input_rows(X, fit_map=first, y=y, stream=True)
            rows, y = _take(rows, y, order)
            if first:
                self._init_state(rows.n_features)
                self._resolve_auto(rows)
            self._prepare(rows, y)
            self._run_pass(rows, y)
            if threshold:
                self._finish(rows, y)
            else:
                self.__dict__.setdefault("intercept_", 0.0)
        return self

    def _check_resumable(self):
        """Refuse parameters that changed in a way the fitted state cannot follow."""

