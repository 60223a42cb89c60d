"""Model selection for AUC: stratified folds, cross-validated AUC, grid search.

The research documents tune every learner by k-fold cross-validation on the
training part over a stated grid (e.g. Khalid, "Scalable Large Margin Pairwise
Learning Algorithms", 2019: 3-fold CV; Gao et al., "One-Pass AUC Optimization",
ICML 2013: 5-fold CV). This module does that without scikit-learn:

* :func:`stratified_folds` -- each class shuffled and dealt round-robin over the
  folds, so every fold holds both classes in (nearly) the training proportions;
  ``n_repeats`` independent shufflings for the papers' "5 runs x 5 folds";
* :func:`cross_val_auc` -- test AUC of a learner on each fold (clones, never
  modifies the given learner); folds run in threads (``n_jobs``): the kernels
  release the GIL;
* :class:`GridSearch` -- the grid point with the best mean CV AUC, refit on all
  the data. ``param_grid=None`` uses the learner's own search space (the grid its
  paper tuned over, ``search_space()`` of each built-in learner). It is itself a
  scikit-learn compatible estimator.
"""
import copy
import ctypes
import itertools
import numbers
import threading
import time

import numpy as np

from aucopt._estimator import Estimator
from aucopt.exceptions import not_fitted_error
from aucopt.metrics import roc_auc
from aucopt.validation import (check_count, check_n_jobs, check_random_state,
                               check_sample_weight, check_X, check_y, n_threads)

__all__ = ["stratified_folds", "cross_val_auc", "GridSearch", "clone"]


def clone(learner):
    """A new unfitted learner with deep-copied parameters (as ``sklearn.base.clone``)."""
    params = {k: copy.deepcopy(v) for k, v in learner.get_params(deep=False).items()}
    return type(learner)(**params)


def stratified_folds(y, n_folds=3, n_repeats=1, random_state=None):
    """Train/test index pairs of stratified k-fold splits.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Binary labels (any two values).
    n_folds : int, default=3
    n_repeats : int, default=1
        Independent shufflings; ``n_repeats * n_folds`` splits in all.
    random_state : int, Generator or None

    Returns
    -------
    list of (train_idx, test_idx)
        Each class is shuffled and dealt round-robin over the folds (the deal of
        the second class starts where the first one stopped), so fold sizes differ
        by at most one and every fold has both classes when each class has at least
        ``n_folds`` members.
    """
    y = np.asarray(y)
    check_count("n_folds", n_folds, minimum=2)
    check_count("n_repeats", n_repeats)
    rng = check_random_state(random_state)
    values, counts = np.unique(y, return_counts=True)
    if values.size != 2:
        raise ValueError(f"stratified_folds needs two classes, y has {values.size}")
    if counts.min() < n_folds:
        raise ValueError(f"the smaller class has {counts.min()} rows, fewer than "
                         f"n_folds={n_folds}; lower n_folds")
    splits = []
    for _ in range(n_repeats):
        fold_of = np.empty(y.shape[0], dtype=np.intp)
        offset = 0
        for value in values:
            members = rng.permutation(np.flatnonzero(y == value))
            fold_of[members] = (np.arange(members.size) + offset) % n_folds
            offset += members.size
        for fold in range(n_folds):
            splits.append((np.flatnonzero(fold_of != fold), np.flatnonzero(fold_of == fold)))
    return splits


def _splits(cv, y, random_state):
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        return stratified_folds(y, cv, random_state=random_state)
    splits = [(np.asarray(tr), np.asarray(te)) for tr, te in cv]
    if not splits:
        raise ValueError("cv gave no splits")
    return splits


def _fold_auc(learner, X, y, train, test, diverged="raise", sample_weight=None):
    """Test AUC and fit time of a clone of ``learner`` trained on ``train`` (with
    those rows' ``sample_weight``, if given); a fit that diverges scores
    ``diverged`` (unless "raise")."""
    model = clone(learner)
    start = time.perf_counter()
    weighted = {} if sample_weight is None else {"sample_weight": sample_weight[train]}
    try:
        model.fit(X[train], y[train], **weighted)
    except FloatingPointError:
        if diverged == "raise":
            raise
        return float(diverged), time.perf_counter() - start
    seconds = time.perf_counter() - start
    return roc_auc(y[test], model.decision_function(X[test]),
                   pos_label=model.classes_[1]), seconds


def _run(jobs, n_jobs):
    """The results of ``jobs`` (callables), in order, run in ``n_jobs`` threads (-1: one
    per core this process may run on, never more than the jobs).

    Each thread takes the next job when it is done with one. An exception in a job,
    or Ctrl-C in the calling thread, is raised at once: no queued job starts, and
    the jobs still running are interrupted (``KeyboardInterrupt`` raised in their
    thread when it next runs Python code, i.e. after the kernel call in progress);
    they train clones, which are dropped.
    """
    workers = min(n_threads(n_jobs), len(jobs))
    if workers <= 1:
        return [job() for job in jobs]
    queue = iter(enumerate(jobs))
    results, failed = [None] * len(jobs), []
    lock, stop = threading.Lock(), threading.Event()
    busy = {}  # thread ident -> running a job

    def worker():
        ident = threading.get_ident()
        try:
            while not stop.is_set():
                with lock:
                    item = next(queue, None)
                    busy[ident] = item is not None
                if item is None:
                    return
                results[item[0]] = item[1]()
                with lock:
                    busy[ident] = False
        except BaseException as exc:  # noqa: BLE001 -- re-raised by the caller
            with lock:
                busy[ident] = False
            failed.append(exc)
            _stop_workers(stop, lock, busy)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except BaseException:
        _stop_workers(stop, lock, busy)
        raise
    if failed and not isinstance(failed[0], KeyboardInterrupt):
        raise failed[0]
    return results


def _stop_workers(stop, lock, busy):
    """No job starts any more; the running ones get ``KeyboardInterrupt``."""
    stop.set()
    with lock:  # a worker marks itself idle under the lock: none is hit outside a job
        for ident, running in busy.items():
            if running:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                                           ctypes.py_object(KeyboardInterrupt))


def cross_val_auc(learner, X, y, cv=3, random_state=None, n_jobs=None, sample_weight=None):
    """Test AUC of ``learner`` on each fold of a stratified split.

    Parameters
    ----------
    learner : aucopt learner (or any estimator with fit / decision_function)
        Cloned for every fold; never modified.
    X : array-like or sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    cv : int or iterable of (train, test) index arrays, default=3
    random_state : int, Generator or None
        Seed of the fold shuffling (for an int ``cv``).
    n_jobs : int or None
        Folds trained in parallel threads (-1: one per core, at most one per fold).
    sample_weight : array-like of shape (n_samples,), optional
        Each fold's model is fitted with its training rows' weights (the test AUC
        is not weighted, as scikit-learn's scorers by default).

    Returns
    -------
    ndarray of shape (n_splits,)
    """
    X = check_X(X)
    y = np.asarray(y)
    check_y(y, X.shape[0])
    sample_weight = check_sample_weight(sample_weight, X.shape[0])
    check_n_jobs(n_jobs)
    jobs = [lambda tr=tr, te=te: _fold_auc(learner, X, y, tr, te,
                                           sample_weight=sample_weight)
            for tr, te in _splits(cv, y, random_state)]
    return np.array([auc for auc, _ in _run(jobs, n_jobs)])


class GridSearch(Estimator):
    """Exhaustive search over a parameter grid by stratified k-fold CV AUC.

    Parameters
    ----------
    estimator : aucopt learner
        The template; every grid point is a clone with the point's parameters.
    param_grid : dict or list of dicts or None, default=None
        ``{name: [values]}`` (or a list of such dicts, searched in turn); None uses
        the learner's own search space (``estimator.search_space(X)``: the grid its
        paper tuned over, centred on its data-derived defaults).
    cv : int or iterable of (train, test) index arrays, default=3
        Folds (3, as the dissertation of Khalid (2019) tunes).
    n_jobs : int or None, default=None
        Folds and grid points run in this many threads (-1: one per core this
        process may run on). Ctrl-C stops them promptly: no further fit starts and
        the running ones are interrupted.
    random_state : int, Generator or None, default=None
        Seed of the fold shuffling.
    refit : bool, default=True
        Refit the best grid point on all the data as ``best_estimator_``.
    error_score : float or "raise", default=nan
        AUC recorded for a fold whose fit diverges (``FloatingPointError``: a step
        size too large for the data is part of most papers' grids); grid points with
        such a fold are never chosen (their mean is NaN). ``"raise"`` propagates.
    verbose : int, default=0
        One line per grid point (its mean AUC and time).

    Attributes
    ----------
    best_params_ : dict
    best_score_ : float
        Mean CV AUC of the best grid point (ties go to the first point).
    best_estimator_ : learner
    cv_results_ : dict of arrays
        ``params``, ``mean_test_auc``, ``std_test_auc``, ``split<k>_test_auc``,
        ``rank_test_auc``, ``mean_fit_time``, as scikit-learn's ``GridSearchCV``.
    classes_, n_features_in_
        Those of ``best_estimator_``.
    """

    _estimator_type = "classifier"

    def __init__(self, estimator, param_grid=None, cv=3, n_jobs=None, random_state=None,
                 refit=True, error_score=np.nan, verbose=0):
        self.estimator = estimator
        self.param_grid = param_grid
        self.cv = cv
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.refit = refit
        self.error_score = error_score
        self.verbose = verbose

    def get_params(self, deep=True):
        """Parameters; with ``deep``, the estimator's as ``estimator__<name>``."""
        params = super().get_params(deep)
        if deep and hasattr(self.estimator, "get_params"):
            for key, value in self.estimator.get_params().items():
                params[f"estimator__{key}"] = value
        return params

    def set_params(self, **params):
        """Set parameters; ``estimator__<name>`` sets the estimator's."""
        inner = {k.split("__", 1)[1]: v for k, v in params.items() if k.startswith("estimator__")}
        own = {k: v for k, v in params.items() if not k.startswith("estimator__")}
        super().set_params(**own)
        if inner:
            self.estimator.set_params(**inner)
        return self

    def _grid(self, X):
        grid = self.param_grid
        if grid is None:
            if not hasattr(self.estimator, "search_space"):
                raise ValueError(f"{type(self.estimator).__name__} declares no search space; "
                                 "pass param_grid={'name': [values], ...}")
            grid = self.estimator.search_space(X)
        grids = [grid] if isinstance(grid, dict) else list(grid)
        if not grids:
            raise ValueError("param_grid is an empty list: give a dict {'name': [values]} "
                             "or a non-empty list of them (None: the learner's own search "
                             "space)")
        points = []
        valid = set(self.estimator.get_params())
        for g in grids:
            if not isinstance(g, dict) or not g:
                raise ValueError(f"param_grid must be a non-empty dict or a list of them, "
                                 f"got {g!r}")
            unknown = sorted(set(g) - valid)
            if unknown:
                raise ValueError(f"param_grid names {unknown}, which are not parameters of "
                                 f"{type(self.estimator).__name__}")
            names = list(g)
            values = [list(g[k]) for k in names]
            empty = [k for k, v in zip(names, values) if not v]
            if empty:
                raise ValueError(f"param_grid gives no values for {empty}: every "
                                 "parameter needs at least one value to try")
            for point in itertools.product(*values):
                points.append(dict(zip(names, point)))
        return points

    def fit(self, X, y, sample_weight=None):
        """Evaluate every grid point by CV AUC; refit the best on all of ``X``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Passed to the learner's ``fit``: each fold's slice to its fits, all of
            it to the refit. The test AUC is not weighted (as scikit-learn's
            ``GridSearchCV`` scores by default).

        Returns
        -------
        self
        """
        X = check_X(X)
        y = np.asarray(y)
        check_y(y, X.shape[0])
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
        check_n_jobs(self.n_jobs)
        points = self._grid(X)
        splits = _splits(self.cv, y, self.random_state)
        templates = [clone(self.estimator).set_params(**p) for p in points]
        if not (self.error_score == "raise" or isinstance(self.error_score, numbers.Real)):
            raise ValueError(f"error_score must be a number or 'raise', got "
                             f"{self.error_score!r}")
        jobs = [lambda t=t, tr=tr, te=te: _fold_auc(t, X, y, tr, te, self.error_score,
                                                    sample_weight)
                for t in templates for tr, te in splits]
        start = time.perf_counter()
        results = np.array(_run(jobs, self.n_jobs)).reshape(len(points), len(splits), 2)
        aucs, times = results[..., 0], results[..., 1]
        mean = aucs.mean(axis=1)
        if np.isnan(mean).all():
            raise FloatingPointError("every grid point diverged on some fold; lower the "
                                     "step sizes of the grid or scale the features")
        order = np.argsort(np.where(np.isnan(mean), np.inf, -mean), kind="stable")
        rank = np.empty(len(points), dtype=np.int64)
        rank[order] = np.arange(1, len(points) + 1)
        self.cv_results_ = {"params": points, "mean_test_auc": mean,
                            "std_test_auc": aucs.std(axis=1), "rank_test_auc": rank,
                            "mean_fit_time": times.mean(axis=1)}
        for k in range(len(splits)):
            self.cv_results_[f"split{k}_test_auc"] = aucs[:, k]
        best = int(order[0])
        self.best_index_ = best
        self.best_params_ = points[best]
        self.best_score_ = float(mean[best])
        if self.verbose:
            for p, m, t in zip(points, mean, times.sum(axis=1)):
                print(f"-- GridSearch {p}: CV AUC {m:.4f}, {t:.3f} s", flush=True)
            print(f"-- GridSearch best {self.best_params_}: CV AUC {self.best_score_:.4f}, "
                  f"{time.perf_counter() - start:.3f} s", flush=True)
        if self.refit:
            self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_)
            self.best_estimator_.fit(X, y, **({} if sample_weight is None
                                              else {"sample_weight": sample_weight}))
            self.classes_ = self.best_estimator_.classes_
            self.n_features_in_ = self.best_estimator_.n_features_in_
        return self

    def _best(self):
        if "best_estimator_" not in self.__dict__:
            raise not_fitted_error("This GridSearch is not fitted (or refit=False); call "
                                   "fit first")
        return self.best_estimator_

    def decision_function(self, X):
        """Ranking scores of the best estimator."""
        return self._best().decision_function(X)

    def predict(self, X):
        """Labels predicted by the best estimator."""
        return self._best().predict(X)

    def score(self, X, y):
        """AUC of the best estimator on ``(X, y)``."""
        return self._best().score(X, y)

    def __sklearn_is_fitted__(self):
        return "best_estimator_" in self.__dict__
