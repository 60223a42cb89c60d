"""The driver that trains every built-in learner, and its public entry points.

:class:`aucopt.base.BaseLearner` validates a call and hands it here:

* :func:`fit` builds the row source once and runs :func:`train`: the learner's
  ``_init_state``, its data-derived parameters resolved, ``_prepare`` once, then
  passes (:func:`run_pass`: ``_pass``, the divergence check, the ``verbose`` line
  and progress lines), a fixed number or, with ``n_epochs="auto"``, until the
  objective stalls (:class:`Stall`); then the OPTROC threshold
  (:func:`set_threshold`);
* :func:`learn_chunk` is the one pass of ``partial_fit`` over a validated chunk;
* every training call runs in a :func:`transaction`: a call that raises (bad
  data, divergence, Ctrl-C) leaves the model exactly as it was. Attributes are
  restored from a shallow snapshot (fresh arrays cost nothing); arrays a kernel
  updates in place are journaled (only the rows the call touches are saved, see
  :mod:`aucopt._kernels._journal`), so a ``partial_fit`` does not copy the model.

The functions without a leading underscore are what other layers
(:mod:`aucopt.dask`, the command line, tools) use to drive a learner; they read
the learner's hooks and declared :class:`~aucopt.traits.Traits`, never the
reverse.
"""
from __future__ import annotations

import contextlib
import copy
import inspect
import math
import signal
import threading
import time
import warnings

import numpy as np

from aucopt._kernels._journal import Journal
from aucopt.exceptions import (ConstantModelWarning, FeatureScaleWarning, ReversedModelWarning,
                               not_fitted_error)
from aucopt.metrics import auc_of_sorted, optroc_of_sorted, roc_auc, sorted_classes
from aucopt.traits import traits_of
from aucopt.validation import (check_feature_names, check_random_state, check_sample_weight,
                               check_X, check_y, dominant_feature, feature_names,
                               order_stream, row_scale, row_source, weight_counts,
                               weight_stream)

__all__ = ["fit", "partial_fit", "learn_chunk", "train", "run_pass", "transaction",
           "skeleton_fit", "weighted_rows", "set_threshold", "training_scores", "diverged",
           "check_fitted", "fitted_input",
           "check_params", "ranking_scores", "raw_scores", "rows_of", "objective",
           "resolve_auto", "fix_auto", "resolved_params", "set_stream", "part_streams",
           "adopt", "retry_scale", "Stall", "DIVERGED", "MAX_RETRIES", "RETRY_FACTOR",
           "LOSS_LIMIT", "REVERSED_AUC", "REVERSED_ROWS", "MONITOR_ROWS", "MONITOR_SHARE",
           "PROGRESS_SECONDS",
           "HISTORY_COLUMNS", "monitor_size", "PASS", "rows_tol"]

# A model whose scores on the training rows can exceed this is refused as diverged
# (margin and square losses work at scores of order 1; nothing sensible is 1e10).
DIVERGED = 1e10
# A model whose mean pair loss on its training rows (``traits.pair_loss``) exceeds
# this multiple of the loss of w = 0 (1 for every pair loss the learners use) is
# refused as diverged: a step too large can leave the iterate oscillating far beyond
# the optimum with scores that overflow nothing, a model that ranks at chance or worse.
LOSS_LIMIT = 100.0
# A model that ranks its training rows below this AUC, with at least REVERSED_ROWS rows
# of each class, is warned about (ReversedModelWarning): it points away from the
# positives (fewer rows rank below chance by chance alone).
REVERSED_AUC = 0.4
REVERSED_ROWS = 5
# A default fit that diverges (FloatingPointError) is run again from scratch, at most
# MAX_RETRIES times, with the "auto" step (``_retry_param``) multiplied by RETRY_FACTOR
# each time: the "auto" steps are set from the mean squared row norm, and a few rows
# 10-100 times longer than the rest (outliers left after standardising) can make them
# diverge. The model records ``n_retries_`` and the step in use.
MAX_RETRIES = 6
RETRY_FACTOR = 0.25
# The automatic stopping rule evaluates the objective, and the verbose line the
# training AUC, on at most this many rows (a learner's traits.monitor_rows: fewer).
MONITOR_ROWS = 20_000
# A learner that declares fewer (traits.monitor_rows) monitors at least this share
# of its training rows (up to MONITOR_ROWS): on the rcv1-shaped set PSAM's training-AUC
# signal stopped a pass earlier, 0.0005 lower, on 4,096 of its 724,000 rows.
MONITOR_SHARE = 32
# The ``monitor`` of a stopping rule that reads what the pass's own steps saw (the
# learner's ``_pass_stats``) instead of scoring monitored rows.
PASS = "pass"
# With verbose, a pass that runs longer prints a progress line every this many seconds.
PROGRESS_SECONDS = 5.0
# The columns of ``history_`` (one row per pass of ``fit``): the wall time of the
# passes so far, the training objective after the pass (NaN for a learner without
# one) and the AUC on ``validation_data`` (NaN without it).
HISTORY_COLUMNS = ("seconds", "objective", "val_auc")


# --------------------------------------------------------------------------- calls


def fit(learner, X, y, sample_weight=None, validation_data=None):
    """:meth:`BaseLearner.fit <aucopt.base.BaseLearner.fit>`: validate, then train
    ``learner`` from scratch in a transaction (``_fit`` of a plugin that has its
    own, else :meth:`~aucopt.base.BaseLearner._train`) and set the threshold."""
    names = feature_names(X)
    X = check_X(X, norms=True)
    y_pm, classes = check_y(y, X.shape[0], pos_label=_pos_label(learner))
    weights = _check_sample_weight(learner, sample_weight, X.shape[0])
    validation = (None if validation_data is None
                  else _check_validation(learner, validation_data, X.shape[1], classes,
                                         names))
    learner._check_params()
    X, y_pm, weights = _drop_unweighted(X, y_pm, weights, fit=True)
    _warn_scale(learner, X)
    retries = 0
    while True:
        try:
            with transaction(learner, fresh=True):
                learner._clear_fitted()
                learner.classes_ = classes
                learner.n_features_in_ = X.shape[1]
                if names is not None:
                    learner.feature_names_in_ = names
                if _retries(learner):
                    learner._retry_scale = RETRY_FACTOR ** retries
                rows, y_rows = weighted_rows(learner, X, y_pm, weights, fit_map=True,
                                             fit=True)
                learner._history = _History(learner, rows, y_rows, validation)
                if _own_fit(learner) is None:
                    learner._train(rows, y_rows)
                else:
                    learner._fit(X, y_pm, **({} if weights is None
                                             else {"sample_weight": weights}))
                    learner._invalidate()
                if not learner._coef_finite():
                    diverged(learner, "non-finite weights")
                learner._finish(rows, y_rows)
                if _retries(learner):
                    learner.n_retries_ = retries
                for name in ("_row_weights", "_monitor_scores", "_retry_scale"):
                    learner.__dict__.pop(name, None)
                learner.__dict__.pop("_history").store()
            return learner
        except FloatingPointError:
            if not _retries(learner) or retries >= MAX_RETRIES:
                raise
            retries += 1


def _warn_scale(learner, X):
    """:class:`~aucopt.exceptions.FeatureScaleWarning` when one feature dominates the
    training rows (:func:`~aucopt.validation.dominant_feature`)."""
    found = dominant_feature(X)
    if found is not None:
        feature, share, ratio = found
        warnings.warn(
            f"{type(learner).__name__}: feature {feature} holds {share:.0%} of the training "
            f"rows' squared norms (its mean square is {ratio:.3g} times the other "
            "features' median), and the step sizes and regularisation follow its scale, "
            "so the other features barely train. Standardise the features first "
            "(aucopt.datasets.Scaler('standard'), or scikit-learn's StandardScaler).",
            FeatureScaleWarning, stacklevel=4)


def _retries(learner):
    """Whether a diverged ``fit`` of ``learner`` is retried with a smaller step: its
    ``_retry_param`` holds its default, a rule such as "auto" (a value the user
    chose is the user's: SPDAM's explicit ``kappa="max"`` is not retried)."""
    name = learner._retry_param
    if name is None:
        return False
    default = inspect.signature(type(learner).__init__).parameters[name].default
    value = getattr(learner, name)
    return isinstance(value, str) and value == default


def retry_scale(learner):
    """The factor this ``fit`` attempt puts on the "auto" value of the learner's
    ``_retry_param``: ``RETRY_FACTOR`` to the number of diverged attempts before it
    (1 outside ``fit``, e.g. for ``partial_fit`` or a distributed fit)."""
    return learner.__dict__.get("_retry_scale", 1.0)


def partial_fit(learner, X, y, classes=None, sample_weight=None):
    """:meth:`OnlineMixin.partial_fit <aucopt.base.OnlineMixin.partial_fit>`:
    validate the chunk against what the first call fixed, then :func:`learn_chunk`."""
    first = not learner.__sklearn_is_fitted__()
    names = feature_names(X)
    if not first:
        check_feature_names(learner, names)
    X = check_X(X, n_features=None if first else learner.n_features_in_,
                estimator=type(learner).__name__, norms=True)
    if first:
        if classes is not None:
            values = np.unique(np.asarray(classes))
            if values.size != 2:
                raise ValueError(f"classes must hold exactly two labels, got "
                                 f"{values.tolist()}; only binary classification "
                                 "is supported")
            _, known = check_y(values, 2, pos_label=_pos_label(learner))
            y_pm, _ = check_y(y, X.shape[0], classes=known)
        else:
            y_pm, known = check_y(y, X.shape[0], pos_label=_pos_label(learner))
    else:
        if classes is not None and set(np.asarray(classes).tolist()) != set(
                learner.classes_.tolist()):
            raise ValueError(f"classes={list(classes)} differs from the classes "
                             f"{learner.classes_.tolist()} of the first partial_fit call")
        y_pm, known = check_y(y, X.shape[0], classes=learner.classes_)
    weights = _check_sample_weight(learner, sample_weight, X.shape[0])
    learner._check_params()
    if not first:
        learner._check_resumable()
    X, y_pm, weights = _drop_unweighted(X, y_pm, weights)
    if first:
        _warn_scale(learner, X)
    learn_chunk(learner, X, y_pm, known, sample_weight=weights)
    if first and names is not None:
        learner.feature_names_in_ = names
    return learner


def learn_chunk(learner, X, y, classes, rows=None, threshold=True, sample_weight=None):
    """The pass of ``partial_fit`` on a validated chunk.

    Parameters
    ----------
    learner : an online learner (with ``partial_fit``)
    X : validated matrix (``check_X``)
    y : labels in {-1, +1}
    classes : the learner's ``[negative, positive]`` labels (fixed by a first call)
    rows : row source, optional
        The kernels' view of ``X``, made once by a caller that passes the same
        chunk again.
    threshold : bool, default=True
        False leaves ``intercept_`` as it was (0 after a first call):
        :func:`aucopt.dask.fit` sets it once, on the final model's scores of all
        rows, instead of scoring every block of every round.
    sample_weight : validated weights, optional
        Each row repeated by its weight; a chunk whose fractional weights draw no
        row leaves a fitted model as it was.

    Returns
    -------
    learner
    """
    first = not learner.__sklearn_is_fitted__()
    with transaction(learner, fresh=first):
        if first:
            learner.classes_ = classes
            learner.n_features_in_ = X.shape[1]
        X, y, order = _repeat_input(learner, X, y, sample_weight, rows_given=rows is not None)
        if not y.shape[0] or (order is not None and not order.size):
            if first:
                raise ValueError("the fractional sample weights drew no row of this "
                                 "first chunk (a weight is a number of copies of its "
                                 "row, the fraction drawn at random); scale them up")
            return learner
        if rows is None:
            rows = learner._input_rows(X, fit_map=first, y=y, stream=True)
        rows, y = _take(rows, y, order)
        if first:
            learner._init_state(rows.n_features)
            learner._resolve_auto(rows)
        learner._prepare(rows, y)
        run_pass(learner, rows, y)
        if threshold:
            learner._finish(rows, y)
        else:
            learner.__dict__.setdefault("intercept_", 0.0)
    return learner


def _param(learner, name, default=None):
    """Parameter ``name`` of ``learner``, ``default`` for a learner without that
    parameter (read on every pass: ``get_params`` costs about 40 us)."""
    return getattr(learner, name, default)


def _pos_label(learner):
    return _param(learner, "pos_label")


def skeleton_fit(learner, X, y):
    """The default of the ``_fit(X, y)`` hook: :meth:`~aucopt.base.BaseLearner._train`
    on validated ``X``. :func:`fit` never calls it: a learner that keeps it gets the
    skeleton on the rows it built (weighted, mapped); a plugin that overrides
    ``_fit`` trains by its own code."""
    learner._train(row_source(X), y)


def _own_fit(learner):
    """A plugin's own ``_fit`` (None for the default, :func:`skeleton_fit`)."""
    hook = type(learner)._fit
    return None if hook is skeleton_fit else hook


def _check_validation(learner, validation_data, n_features, classes, names):
    """``validation_data`` of ``fit`` validated: ``(X_val, y_val in {-1, +1})``; its
    column names against ``names``, those of the training ``X``."""
    if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
        raise ValueError("validation_data must be a pair (X_val, y_val), got "
                         f"{type(validation_data).__name__}")
    if names is not None:
        check_feature_names(learner, feature_names(validation_data[0]), fitted=names)
    X_val = check_X(validation_data[0], name="validation_data X", n_features=n_features,
                    estimator=type(learner).__name__)
    y_val, _ = check_y(validation_data[1], X_val.shape[0], classes=classes)
    if not ((y_val > 0).any() and (y_val < 0).any()):
        raise ValueError("validation_data labels hold one class only: the validation "
                         "AUC needs both classes")
    return X_val, y_val


def _check_sample_weight(learner, sample_weight, n_samples):
    """:func:`~aucopt.validation.check_sample_weight`, and a TypeError for a plugin
    whose own ``_fit`` takes no ``sample_weight`` (never ignored)."""
    weights = check_sample_weight(sample_weight, n_samples)
    own = _own_fit(learner)
    if weights is not None and own is not None \
            and "sample_weight" not in inspect.signature(own).parameters:
        raise TypeError(f"{type(learner).__name__} does not support sample_weight: its "
                        "_fit(X, y) takes none; fit it without weights, or give its "
                        "_fit a sample_weight parameter")
    return weights


# --------------------------------------------------------------------------- weights


def weighted_rows(learner, X, y, weights, fit_map=False, fit=False):
    """The rows the learner works on for validated ``X`` (its ``_input_rows``) and
    labels ``y``, each row repeated by its weight. A learner that weighs its rows
    itself (``traits.weighs_rows``) gets each row once and the weights as
    ``_row_weights`` (for the call)."""
    traits = learner.traits
    if traits.weighs_rows and not traits.row_map and weights is not None \
            and not (weights == 1).all():
        learner._row_weights = weights
        return learner._input_rows(X, fit_map=fit_map, y=y), y
    X, y, order = _repeat_input(learner, X, y, weights, fit=fit)
    return _take(learner._input_rows(X, fit_map=fit_map, y=y), y, order)


def _repeat_input(learner, X, y, weights, fit=False, rows_given=False):
    """``(X, y, order)``: each row repeated, consecutively, as many times as its
    weight says (:func:`~aucopt.validation.weight_counts`; a fractional part is
    drawn from a stream of ``random_state`` of its own, or of seed 0 for a
    learner without one), as ``order``, the rows to take from the row source of
    ``X``, or None (unweighted input, all weights 1). A learner on a feature map
    fitted on its first data (``traits.row_map``) gets ``X`` and ``y`` repeated
    instead (a copy), so that the map sees the copies too."""
    if weights is None:
        return X, y, None
    counts = weight_counts(weights, lambda: weight_stream(
        _param(learner, "random_state", 0), learner.__dict__.get("n_passes_", 0)),
        _param(learner, "max_state_bytes"))
    if (counts == 1).all():
        return X, y, None
    order = np.repeat(np.arange(X.shape[0], dtype=np.int64), counts)
    if fit and not ((y[order] > 0).any() and (y[order] < 0).any()):
        raise ValueError("the fractional sample weights drew no row of one class (a "
                         "weight is a number of copies of its row, the fraction drawn "
                         "at random); scale sample_weight up")
    if learner.traits.row_map and not rows_given:
        return X[order], y[order], None
    return X, y, order


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


# --------------------------------------------------------------------------- passes


def train(learner, rows, y):
    """The skeleton: state, preparation once, then the passes (a fixed number, or
    with ``n_epochs="auto"`` until the objective stalls). Learners that consume
    rows in order (``traits.shuffles``) see them in a fresh random order each pass
    when ``shuffle`` is set (``fit`` only: ``partial_fit`` keeps the caller's
    order, a stream is a stream)."""
    learner._init_state(rows.n_features)
    learner._resolve_auto(rows)
    if learner.traits.shuffles and learner.shuffle:  # before _prepare, which may look ahead
        learner._order_rng = order_stream(learner.random_state)
    try:
        learner._prepare(rows, y)
        n_epochs = _param(learner, "n_epochs")
        if n_epochs == "auto":
            _train_until_stalled(learner, rows, y)
            return
        for index in range(int(1 if n_epochs is None else n_epochs)):
            run_pass(learner, rows, y, index)
        if n_epochs is not None:
            learner.stop_reason_ = "n_epochs"
    finally:
        learner.__dict__.pop("_order_rng", None)


def _train_until_stalled(learner, rows, y):
    """Passes until the training objective stalls (``n_epochs="auto"``).

    After each pass the learner's objective is evaluated on the training rows (a
    fixed random subsample of at most :func:`monitor_size` of them, drawn once);
    a pass that improves on the best value so far by less than ``tol`` counts as
    stalled (objectives are means of pair losses, so an absolute tolerance means
    the same on every data set, as scikit-learn's SGD uses one), and training
    stops after ``n_iter_no_change`` stalled passes in a row (``stop_reason_ =
    "tol"``) or after ``max_epochs`` passes (``"max_epochs"``). The rule (the
    learner's ``_stall_rule()``, else :class:`Stall`) gets the objective and, for a
    learner whose objective is a function of its scores, those scores of the
    monitored rows and their labels.

    The evaluation costs one scoring pass over the monitored rows and a sort (4,096
    of 20 Newsgroups' 11,314 rows: 1.1-1.3 ms against 8-10 ms for a pass); when the
    monitored rows are all the training rows the scores of the last evaluation are
    those of the returned model, and the threshold reuses them
    (:func:`training_scores`), so the rule's last evaluation costs the fit only its
    sort.

    A rule whose ``monitor`` is :data:`PASS` reads no rows: the learner's ``_pass``
    leaves what its steps saw in ``_pass_stats``, a tuple whose first entry is the
    pass's objective (``objective_``), and the rule's ``update`` gets its entries
    (PSAM: the iterate's mean hinge over the pass's pairs and their share ranked
    right, summed by the kernel as it steps).
    """
    own = getattr(learner, "_stall_rule", None)  # a learner with a convergence certificate
    stall = own() if own is not None else Stall(learner.tol, learner.n_iter_no_change)
    reads_pass = getattr(stall, "monitor", "rows") == PASS
    monitor = PASS if reads_pass else _monitor_rows(learner, rows, y)
    learner.stop_reason_ = "max_epochs"
    for index in range(int(learner.max_epochs)):
        seen = run_pass(learner, rows, y, index, monitor)
        if reads_pass:
            stalled = seen is not None and stall.update(*seen)
        else:
            kept = learner.__dict__.get("_monitor_scores")
            stalled = stall.update(learner.objective_,
                                   *((kept[1], monitor[1]) if kept else ()))
        if stalled:
            learner.stop_reason_ = getattr(stall, "reason", "tol")  # a learner's own rule's
            break


def rows_tol(learner):
    """The tolerance of a rule that reads the objective of monitored rows, as the
    rounds of :func:`aucopt.dask.fit` do: the learner's ``tol``, or, for a learner
    whose own rule reads its passes (``monitor="pass"``), the one it declares for
    the monitored rows (``_rows_tol``)."""
    if _reads_passes(learner):
        return getattr(type(learner), "_rows_tol", learner.tol)
    return learner.tol


def _reads_passes(learner):
    """Whether ``learner``'s stopping rule reads its passes (``monitor="pass"``)."""
    return getattr(learner, "monitor", None) == PASS


class Stall:
    """The automatic stopping rule of ``n_epochs="auto"``: :meth:`update` with the
    objective after each pass returns True once ``n_iter_no_change`` passes in a
    row improved the best value so far by less than ``tol``."""

    def __init__(self, tol, n_iter_no_change):
        self.tol = tol
        self.patience = n_iter_no_change
        self.best = math.inf
        self.stalled = 0

    def update(self, value, scores=None, y=None):
        """After a pass: its objective ``value`` (and, when the objective came from
        them, the scores of the monitored rows and their labels in {-1, +1}, which
        a derived rule may watch too); True to stop."""
        if math.isfinite(self.best) and self.best - value < self.tol:
            self.stalled += 1
        else:
            self.stalled = 0
        self.best = min(self.best, value)
        return self.stalled >= self.patience


def run_pass(learner, rows, y, index=0, monitor=None):
    """Pass ``index`` of this call (the learner's ``_pass``), the divergence check,
    the objective on ``monitor`` (rows, labels) when given (:data:`PASS`: the
    pass's own, the first of its ``_pass_stats``), the ``verbose`` line (and,
    during a pass longer than :data:`PROGRESS_SECONDS`, progress lines). Returns
    the pass's ``_pass_stats`` (None for a learner that leaves none)."""
    start = time.perf_counter()
    learner.__dict__.pop("_monitor_scores", None)  # of the model before this pass
    shuffle = learner.__dict__.get("_order_rng")
    verbose = _param(learner, "verbose", 0)
    with _progress_lines(learner) if verbose else contextlib.nullcontext():
        if shuffle is not None:
            order = shuffle.permutation(rows.n_rows)
            learner._pass(rows.take(order), y[order], index)
        else:
            learner._pass(rows, y, index)
    seen = learner.__dict__.pop("_pass_stats", None)
    learner._invalidate()
    _check_diverged(learner, rows)
    learner.n_passes_ = learner.__dict__.get("n_passes_", 0) + 1
    if monitor is PASS:
        if seen is not None:
            learner.objective_ = float(seen[0])
    elif monitor is not None:
        learner.objective_ = _monitored_objective(learner, *monitor)
    if monitor is not None and not math.isfinite(learner.__dict__.get("objective_", 0.0)):
        diverged(learner, f"objective {learner.objective_}")
    seconds = time.perf_counter() - start
    history = learner.__dict__.get("_history")
    if history is not None:
        history.record(seconds, seen)
    if verbose:
        _report(learner, rows, y, seconds)
    return seen


def _monitored_objective(learner, rows, y):
    """The stopping rule's objective on ``rows``. A learner whose objective is a
    function of its scores (``_scores_objective(scores, y)``) keeps those scores
    until its next pass: when ``rows`` are all the training rows, the threshold
    reuses them (:func:`training_scores`), so the last objective costs the fit no
    scoring pass of its own."""
    of_scores = getattr(learner, "_scores_objective", None)
    if of_scores is None:
        return float(learner._objective(rows, y))
    scores = learner._raw_scores(rows)
    learner._monitor_scores = (rows, scores)
    return float(of_scores(scores, y))


def training_scores(learner, rows):
    """Ranking scores of the trained model on ``rows``: those the stopping rule
    computed after the last pass when it scored these very rows, else a new
    scoring pass."""
    kept = learner.__dict__.pop("_monitor_scores", None)
    if kept is not None and kept[0] is rows:
        return kept[1]
    return learner._raw_scores(rows)


def replaced_model(learner, rows, y):
    """After ``learner`` replaced its model at the end of ``fit``'s passes over
    ``rows`` (a closed-form solve, a mean of iterates): ``objective_`` and the last
    row of ``history_`` become those of the model it returns."""
    learner._invalidate()
    learner.__dict__.pop("_monitor_scores", None)
    if "objective_" in learner.__dict__:
        learner.objective_ = _monitored_objective(learner, *_monitor_rows(learner, rows, y))
    history = learner.__dict__.get("_history")
    if history is not None and history.records:
        history.records.pop()
        history.record(0.0)


def monitor_size(learner, n_rows):
    """How many of ``n_rows`` training rows at most ``learner``'s stopping rule
    evaluates its objective on: :data:`MONITOR_ROWS`, or for a learner that
    declares ``traits.monitor_rows`` the larger of that and ``n_rows /``
    :data:`MONITOR_SHARE` (up to :data:`MONITOR_ROWS`): a bounded share of a pass
    on every size of data."""
    declared = traits_of(learner).monitor_rows
    if declared is None:
        return MONITOR_ROWS
    return min(MONITOR_ROWS, max(declared, -(-int(n_rows) // MONITOR_SHARE)))


def _monitor_rows(learner, rows, y):
    """``(rows, y)``, or a fixed random subsample of :func:`monitor_size` of them."""
    n = rows.n_rows
    size = monitor_size(learner, n)
    if n <= size:
        return rows, y
    pick = np.sort(np.random.default_rng(0).choice(n, size, replace=False))
    return rows.take(pick), y[pick]


class _History:
    """Collects ``history_`` during one ``fit`` (see :meth:`BaseLearner.fit
    <aucopt.base.BaseLearner.fit>`)."""

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

    def record(self, seconds, seen=None):
        """After a pass that took ``seconds``: its row of ``history_`` (``seen``: the
        pass's ``_pass_stats``, whose objective a learner with ``monitor="pass"``
        reports in every pass, free)."""
        learner = self.learner
        self.seconds += seconds
        objective = learner.__dict__.get("objective_")
        if objective is None and seen is not None and _reads_passes(learner):
            objective = float(seen[0])
        elif objective is None and self.validation is not None and hasattr(learner,
                                                                           "_objective"):
            # not computed by the pass or the stopping rule: only for a monitored fit
            # (it costs a fifth of a PSAM epoch on 20,000 sparse rows)
            if self.monitor is None:
                self.monitor = _monitor_rows(learner, *self.train)
            objective = _monitored_objective(learner, *self.monitor)
        auc = math.nan
        if self.validation is not None:
            rows, y = self.validation
            auc = roc_auc(y, learner._raw_scores(rows))
        self.records.append((self.seconds, math.nan if objective is None else objective, auc))

    def store(self):
        """Set ``history_`` (a fit that ran no pass of the driver has none)."""
        if self.records:
            self.learner.history_ = np.array(self.records, dtype=np.float64)


# --------------------------------------------------------------------------- checks


def set_threshold(learner, scores, y, warn=True):
    """Refuse overflowing training ``scores`` (ranking scores, no intercept) and put
    ``intercept_`` at the OPTROC point of labels ``y`` (in {-1, +1}) (of the copies
    of the rows, when the learner weighs its rows itself). ``warn``: the warnings
    about a model that ranks nothing or ranks backwards (off for a trial model of a
    step search, which no caller sees)."""
    weights = learner.__dict__.get("_row_weights")
    if weights is not None:
        scores, y = _weighted_copies(scores, y, weights)
    top = float(np.max(np.abs(scores))) if scores.size else 0.0
    if not math.isfinite(top) or top > DIVERGED:
        diverged(learner, f"training scores up to {top:.3g}")
    # one split and one sort per class serve the loss check and the OPTROC point;
    # a pair loss is a mean over all pairs, the same for the classes' scores in
    # any order (up to the rounding of its sum), and in ascending order its binary
    # searches go through memory in order
    pos, neg = sorted_classes(y, scores)
    pair_loss = learner.traits.pair_loss
    if pair_loss is not None:
        loss = pair_loss(pos, neg)
        if not loss <= LOSS_LIMIT:
            diverged(learner, f"mean pair loss of the training scores {loss:.3g}, over "
                     f"{LOSS_LIMIT:g} times that of w = 0")
    if not (pos.size and neg.size):
        if "intercept_" not in learner.__dict__:
            learner.intercept_ = 0.0
        return
    if warn:
        _warn_quality(learner, pos, neg)
    learner.intercept_ = -optroc_of_sorted(pos, neg)[1]


def _warn_quality(learner, pos, neg):
    """Warn about a model that ranks nothing (every training score the same) or
    ranks its training rows backwards, from the classes' sorted training scores."""
    if pos[0] == pos[-1] == neg[0] == neg[-1]:
        warnings.warn(
            f"{type(learner).__name__} scores every training row the same "
            f"({pos[0]:.3g}): the model ranks nothing (AUC 0.5). Its step size is too "
            "small or its regularisation too strong for the scale of these features; "
            "scale them (aucopt.datasets.Scaler) or change the step / regularisation "
            "parameters.", ConstantModelWarning, stacklevel=6)
    elif min(pos.size, neg.size) >= REVERSED_ROWS:
        auc = auc_of_sorted(pos, neg)
        if auc < REVERSED_AUC:
            warnings.warn(
                f"{type(learner).__name__} ranks its own training rows below chance "
                f"(training AUC {auc:.3f}): the model points away from the positives. "
                "Its steps did not suit the scale or the offset of these features; "
                "standardise them (aucopt.datasets.Scaler('standard'), or scikit-learn's "
                "StandardScaler) or change the step parameters.", ReversedModelWarning,
                stacklevel=6)


def _check_diverged(learner, rows):
    """Refuse a diverged model after a pass: O(1) with a maintained norm."""
    norm = learner._weight_norm()
    if norm is None:
        return
    bound = norm * math.sqrt(rows.max_sqnorm()) if rows.has_norms else norm
    if not math.isfinite(bound) or bound > DIVERGED:
        diverged(learner, f"||w|| = {norm:.3g}")


def diverged(learner, what):
    """Raise the ``FloatingPointError`` of a diverged fit (``what`` diverged)."""
    raise FloatingPointError(
        f"{type(learner).__name__} diverged ({what}); {learner.traits.divergence_hint}, "
        "or scale the features (aucopt.datasets.Scaler). The model was left unchanged.")


def check_fitted(learner):
    """Raise :class:`~aucopt.exceptions.NotFittedError` unless ``learner`` is fitted."""
    if not learner.__sklearn_is_fitted__():
        raise not_fitted_error(f"This {type(learner).__name__} instance is not fitted yet; "
                               "call fit (or partial_fit) with training data first")


def check_params(learner):
    """Validate the learner's parameter values (ValueError / TypeError)."""
    learner._check_params()


# --------------------------------------------------------------------------- scores


def fitted_input(learner, X):
    """``X`` for a fitted ``learner`` to score, validated: its column names against
    ``feature_names_in_``, its width against ``n_features_in_`` (:func:`check_X`)."""
    check_fitted(learner)
    check_feature_names(learner, feature_names(X))
    return check_X(X, n_features=learner.n_features_in_, estimator=type(learner).__name__)


def ranking_scores(learner, X):
    """``decision_function`` of array-like ``X`` without the intercept."""
    X = fitted_input(learner, X)
    scores = learner._raw_scores(learner._input_rows(X, fit_map=False, norms=False))
    if not np.isfinite(scores).all():
        norm = learner._weight_norm()
        raise FloatingPointError(
            f"{type(learner).__name__} gives non-finite scores on these rows: the weights"
            + ("" if norm is None else f" (||w|| = {norm:.3g})") + " times the features "
            "overflow; scale the features as the training data were scaled")
    return scores


def raw_scores(learner, rows):
    """Ranking scores (no intercept) of a row source the learner works on."""
    return learner._raw_scores(rows)


def rows_of(learner, X):
    """The row source the fitted learner works on for validated ``X`` (through its
    fitted feature map, if any)."""
    return learner._input_rows(X, fit_map=False)


def objective(learner, rows, y):
    """The learner's training objective on a row source and labels in {-1, +1}
    (what the stopping rule of ``n_epochs="auto"`` watches)."""
    return float(learner._objective(rows, y))


# --------------------------------------------------------------------------- progress


def _report(learner, rows, y, seconds, what=None):
    """The one ``verbose`` line of a pass: what was done, ``||w||``, the training
    AUC (on at most :func:`monitor_size` rows), time."""
    rows, y = _monitor_rows(learner, rows, y)
    scores = learner._raw_scores(rows)
    auc = roc_auc(y, scores) if (y > 0).any() and (y < 0).any() else float("nan")
    norm = learner._weight_norm()
    shown = f"|w| {norm:.4g}, " if norm is not None else ""
    if "objective_" in learner.__dict__:
        shown += f"objective {learner.objective_:.6g}, "
    what = what or f"pass {learner.n_passes_}"
    print(f"-- {type(learner).__name__} {what}: {learner._progress()}{shown}"
          f"train AUC {auc:.4f}, {seconds:.3f} s", flush=True)


@contextlib.contextmanager
def _progress_lines(learner):
    """While the pass inside runs, a line every :data:`PROGRESS_SECONDS` seconds
    (the time so far, and how much of the pass is done when the pass sets
    ``learner._pass_done``, a fraction)."""
    done = threading.Event()
    start = time.perf_counter()
    number = learner.__dict__.get("n_passes_", 0) + 1

    def tick():
        while not done.wait(PROGRESS_SECONDS):
            part = learner.__dict__.get("_pass_done")
            shown = f"{part:.0%} done, " if part is not None else ""
            print(f"   {type(learner).__name__} pass {number}: {shown}"
                  f"{time.perf_counter() - start:.0f} s", flush=True)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        learner.__dict__.pop("_pass_done", None)


# --------------------------------------------------------------------------- state


def resolve_auto(learner, rows):
    """Fix the data-derived parameters (``_auto_params``) on the first data."""
    if not learner._auto_params or "row_scale_" in learner.__dict__:
        return
    fix_auto(learner, row_scale(rows, learner.__dict__.get("_row_weights")), rows)


def fix_auto(learner, s, rows):
    """Set ``row_scale_ = s`` and the data-derived parameters (``eta_``, ``lam_``,
    ...) from it and ``rows`` (a row source, or anything with ``n_rows``,
    ``n_features``, ``max_sqnorm()`` and ``dense``); a model given them before its
    first data keeps them (a distributed fit resolves them once, on all of the
    data). Returns ``{parameter: value in use}`` (empty for a learner without
    data-derived parameters, which is left as it was)."""
    if not learner._auto_params:
        return {}
    learner.row_scale_ = s
    resolved = {}
    for name, rule in learner._auto_params.items():
        value = getattr(learner, name)
        auto = isinstance(value, str) and value == "auto"
        resolved[name] = float(rule(learner, s, rows) * (
            retry_scale(learner) if name == learner._retry_param else 1.0)
            if auto else value)
        setattr(learner, name + "_", resolved[name])
    return resolved


def resolved_params(learner):
    """``{parameter: value in use}`` of a fitted learner's data-derived parameters
    (what "auto" resolved to: ``eta_``, ``lam_``, ...), to give another model
    explicitly (models merge only with equal ones). A bare
    :class:`~aucopt.base.Learner` has none."""
    return {name: learner.__dict__[name + "_"]
            for name in getattr(type(learner), "_auto_params", {})}


def set_stream(learner, stream):
    """Draw the learner's random numbers from generator ``stream`` from now on (its
    ``random_state`` before a first fit, the declared generator state after)."""
    if not learner.__sklearn_is_fitted__():
        learner.set_params(random_state=stream)
        return
    for name, field in learner._state_spec().items():
        if type(field).__name__ == "Generator" and name in learner.__dict__:
            setattr(learner, name, check_random_state(copy.deepcopy(stream)))


def part_streams(learner, sizes):
    """The random streams of the parts of one distributed pass of ``sizes`` rows
    each: consecutive segments of the learner's stream when it declares
    ``traits.stream_segments`` (the merged model then holds the draws of one pass
    over all the rows), else None for each part."""
    if learner.traits.stream_segments:
        return learner._segment_streams(sizes)
    return [None] * len(sizes)


def adopt(learner, model):
    """Fit ``learner`` in place with the fitted state of ``model`` (a learner of the
    same class; ``learner``'s parameters kept). Returns ``learner``."""
    params = set(learner.get_params())
    learner._clear_fitted()
    learner.__dict__.update({k: v for k, v in model.__dict__.items()
                             if k not in params and not k.startswith("_")})
    learner._invalidate()
    return learner


# --------------------------------------------------------------------------- transactions


@contextlib.contextmanager
def transaction(learner, fresh):
    """Run a training call of ``learner``: on any exception (also KeyboardInterrupt)
    the model is restored exactly; ``fresh`` = the call builds new state (nothing in
    place). The learner's hooks reach the call's undo record as ``learner._tx``."""
    tx = _Transaction(learner, fresh)
    learner._tx = tx
    try:
        yield tx
    except BaseException:
        _settle(tx, tx.rollback)
        raise
    else:
        _settle(tx, tx.commit)
        del learner._tx


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


class _Copy:
    def __init__(self, array):
        self.array = array
        self.copy = array.copy()

    def rollback(self):
        self.array[...] = self.copy

    def commit(self):
        self.copy = None


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
