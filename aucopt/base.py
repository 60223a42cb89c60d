"""The Learner protocol and the learner skeleton every aucopt learner is built on.

Every aucopt learner is a scikit-learn compatible binary estimator written
without importing scikit-learn:

* ``__init__`` only stores its parameters (:class:`aucopt._estimator.Estimator`
  reads the signature for ``get_params`` / ``set_params``);
* inputs go through one validation path (:mod:`aucopt.validation`), labels are
  any two values (``classes_ = [negative, positive]``, the positive class is
  ``pos_label`` or the larger value);
* **one driver** (:mod:`aucopt.driver`) trains every built-in learner: ``fit`` =
  validate, build the row source once, ``_init_state``, ``_prepare`` once, then
  passes (``_pass``) each followed by the divergence check and the ``verbose``
  line; ``partial_fit`` is the same with one pass over the chunk
  (:class:`OnlineMixin`). A family supplies the hooks, nothing else; every
  training call is a transaction (a call that raises leaves the model exactly as
  it was);
* what a class is (its family, how it merges, what its stream promises, ...) is
  declared once, in its frozen ``traits`` (:class:`aucopt.traits.Traits`);
* ``decision_function`` is the ranking score. Pairwise objectives are blind to an
  intercept (it cancels in every pair), so ``intercept_ = -threshold`` where the
  threshold is the training ROC curve's best-accuracy point (OPTROC, the operating
  point the dissertation of Khalid (2019) reports); ``predict`` is
  ``decision_function > 0`` and the AUC never depends on it;
* ``merge`` combines models trained on different data (:mod:`aucopt.merging`);
* ``save(path)`` writes the declared state (:mod:`aucopt._state`) in the model-file
  format of :mod:`aucopt._format`; :func:`aucopt.load` reads it back, checking
  every value against the declaration, never unpickling.

A plugin learner only needs ``__init__`` and ``_fit(X, y)`` (labels in {-1, +1};
set ``coef_``): the default scoring is ``X @ coef_``.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

import aucopt.driver as driver
from aucopt._estimator import Estimator
from aucopt._format import encode_model, write_model
from aucopt._kernels._weights import dense_scores
from aucopt._state import Array, FeatureNames, Labels, Scalar, state_spec
from aucopt.driver import HISTORY_COLUMNS
from aucopt.merging import MergeMixin, merge
from aucopt.metrics import roc_auc
from aucopt.traits import Traits
from aucopt.validation import finite_rows

__all__ = ["Learner", "BaseLearner", "OnlineMixin", "merge", "HISTORY_COLUMNS"]


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


def _no_probabilities(learner, name):
    """The error of ``learner.<name>`` for ``predict_proba`` and its log."""
    cls = type(learner).__name__
    return AttributeError(
        f"{cls} has no {name}: its scores rank the rows, they are not probabilities. "
        f"decision_function gives the scores (AUC needs only their order); for "
        f"probabilities, calibrate them, e.g. with scikit-learn's "
        f"CalibratedClassifierCV({cls}(...))")


class BaseLearner(MergeMixin, Estimator):
    """Common machinery of every aucopt learner (see the module docstring).

    Hooks a family supplies: ``_init_state(n_features)`` (allocate the declared
    state), ``_prepare(rows, y)`` (per-call statistics, optional), ``_pass(rows, y,
    index)`` (pass ``index`` of the call; arrays it updates in place are journaled
    through the call's transaction ``self._tx``), ``_raw_scores(rows)``
    (ranking scores of a row source) and ``_weight_norm()`` (``||w||`` for the
    divergence check, or None). ``_state`` declares the fitted state, ``traits``
    the kind of the class. A plugin that trains by its own code overrides
    ``_fit(X, y)`` instead (its default, :func:`aucopt.driver.skeleton_fit`, runs
    the skeleton).
    """

    _estimator_type = "classifier"
    _state = {
        "classes_": Labels(),
        "n_features_in_": Scalar(int, low=1, high=2**31 - 1),
        # the column names of a dataframe X in fit (all strings), as scikit-learn's
        "feature_names_in_": FeatureNames(optional=True),
        "intercept_": Scalar(float),
        "n_passes_": Scalar(int, low=0, optional=True),
        "objective_": Scalar(float, optional=True),
        "n_retries_": Scalar(int, low=0, optional=True),
        "stop_reason_": Scalar(str, choices=("n_epochs", "tol", "max_epochs", "max_newton",
                                             "no_progress", "closed_form"), optional=True),
        # a plugin's ranking vector (built-in learners derive coef_ from their state)
        "coef_": Array("f8", ("d",), optional=True),
        "history_": Array("f8", ("*", len(HISTORY_COLUMNS)), finite=False, optional=True),
    }
    # the declared kind of the class (aucopt.traits): subclasses declare their own
    traits = Traits()
    # parameters that may be "auto": name -> rule(learner, s, rows) giving the value
    # from the data (s = the mean squared row norm, ``row_scale_``); the value in use
    # is the fitted attribute ``<name>_``, fixed by the first data a model sees
    _auto_params = {}
    # the "auto" step parameter that a diverged fit retries smaller (None: no retry;
    # see aucopt.driver.fit)
    _retry_param = None

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

    # what a scikit-learn user may ask for that ranking scores are not: properties that
    # raise AttributeError, so hasattr is False (as scikit-learn's checks need) and
    # the message says what gives probabilities
    @property
    def predict_proba(self):
        raise _no_probabilities(self, "predict_proba")

    @property
    def predict_log_proba(self):
        raise _no_probabilities(self, "predict_log_proba")

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
        objective after the pass on the rows the stopping rule monitors (at most
        :func:`aucopt.driver.monitor_size` training rows; NaN for a
        learner without one, and with an integer ``n_epochs`` unless
        ``validation_data`` is given: a plain fit computes no more than it needs)
        and the validation AUC (NaN without ``validation_data``). It describes the
        last ``fit``: ``partial_fit`` leaves it as it is, ``merge`` drops it;
        ``save`` keeps it.
        """
        return driver.fit(self, X, y, sample_weight, validation_data)

    # the skeleton's default of the ``_fit`` hook (plugins override it)
    _fit = driver.skeleton_fit

    def _train(self, rows, y):
        """Train on a row source and labels in {-1, +1}: :func:`aucopt.driver.train`
        (learners with a loop of their own, such as BAM's Newton steps, override it)."""
        driver.train(self, rows, y)

    def _finish(self, rows, y):
        """After training on ``rows``: refuse overflowing scores, set the threshold
        (:func:`aucopt.driver.set_threshold`)."""
        driver.set_threshold(self, driver.training_scores(self, rows), y)

    def _resolve_auto(self, rows):
        """Fix the data-derived parameters (``_auto_params``) on the first data."""
        driver.resolve_auto(self, rows)

    def _input_rows(self, X, fit_map, norms=True, y=None, stream=False):
        """The rows the learner works on for a validated ``X``: ``X`` itself, or (a
        learner on a feature map) its image, the map fitted first if ``fit_map``
        (on ``X`` with labels ``y``, a ``stream`` chunk or all of ``fit``'s data)."""
        return finite_rows(X, norms)

    def _prepare(self, rows, y):
        """Per-call preparation (class statistics, data-derived constants)."""

    def _check_params(self):
        """Validate parameter values (subclasses extend); raise ValueError/TypeError."""

    def _weight_norm(self):
        """``||w||`` of the current iterate if the learner maintains it, else None."""
        return None

    def _progress(self):
        """Learner-specific part of the verbose line (e.g. ``"steps 1200, "``)."""
        return ""

    def _work_vectors(self):
        """Float64 vectors of length ``d`` a call works in besides the declared state
        (solver vectors, scratch rows), counted against ``max_state_bytes``."""
        return 1

    def _coef_finite(self):
        """Whether every weight of ``coef_`` is finite (learners with a packed state
        check it without reading ``coef_`` out)."""
        return bool(np.isfinite(self.coef_).all())

    def _raw_scores(self, rows):
        """Ranking scores of every row (default: the rows times ``coef_``)."""
        return dense_scores(rows, np.ascontiguousarray(self.coef_, dtype=np.float64))

    # ---- prediction

    def decision_function(self, X):
        """Ranking scores ``w . x + intercept_`` (larger = more likely positive).

        The ranking, hence the AUC, does not depend on ``intercept_``; it only puts
        the OPTROC operating point of the training data at score 0. Dense and CSR
        input give bit-identical scores.
        """
        return driver.ranking_scores(self, X) + self.intercept_

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
        rising seconds, no infinite objective and AUCs in [0, 1] (or NaN);
        ``feature_names_in_`` one name per input feature."""
        names = self.__dict__.get("feature_names_in_")
        if names is not None and names.shape != (self.n_features_in_,):
            raise ValueError(f"feature_names_in_ holds {names.size} names for "
                             f"{self.n_features_in_} features")
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
        return driver.partial_fit(self, X, y, classes, sample_weight)

    def _check_resumable(self):
        """Refuse parameters that changed in a way the fitted state cannot follow."""
