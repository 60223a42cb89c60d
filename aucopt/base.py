"""The Learner protocol, the shared base class, and model persistence.

Every aucopt learner is a scikit-learn compatible binary estimator written
without importing scikit-learn:

* ``__init__`` only stores its parameters; ``get_params``/``set_params`` read the
  ``__init__`` signature, so ``sklearn.base.clone``, ``Pipeline`` and
  ``GridSearchCV(scoring="roc_auc")`` work;
* one validation path (:func:`check_X`, :func:`check_y`) for every learner: dense
  array-likes become C-contiguous float64 arrays, any scipy.sparse input becomes
  canonical CSR float64, once per call, never per step;
* labels are any two distinct values: ``classes_ = [negative, positive]`` where the
  positive class is ``pos_label`` or the larger value;
* fitted attributes end in ``_``; a call that raises leaves every fitted attribute
  exactly as it was (:meth:`BaseLearner._transaction`);
* ``decision_function`` is the ranking score ``X @ coef_ + intercept_``. Pairwise
  objectives are blind to an intercept (it cancels in every pair), so
  ``intercept_ = -threshold_`` where ``threshold_`` is the operating point of the
  training ROC curve with the best accuracy (OPTROC, ALGORITHMS.md 1.2). Then
  ``predict`` is ``decision_function > 0`` and AUC never depends on it;
* ``save(path)`` / :func:`load` store parameters and scalar state as JSON and arrays
  as ``.npz`` in one file, never pickle: loading a file cannot execute code.
"""
import contextlib
import copy
import json
import numbers
import os
import warnings
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from aucopt._estimator import Estimator
from aucopt.exceptions import DataConversionWarning, not_fitted_error

__all__ = ["Learner", "BaseLearner", "OnlineMixin", "check_X", "check_y", "load",
           "check_random_state"]

FORMAT_NAME = "aucopt-model"
FORMAT_VERSION = 1
_META_KEY = "__aucopt_meta__"


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


# --------------------------------------------------------------------------- input


def check_X(X, *, name="X", n_features=None, estimator=None):
    """Validate a feature matrix once, for any learner.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or scipy.sparse matrix/array
    name : str
        Argument name used in error messages.
    n_features : int or None
        Expected number of features (``n_features_in_`` of a fitted learner).
    estimator : str or None
        Learner name used in the feature-count error message.

    Returns
    -------
    X : C-contiguous float64 ndarray, or CSR matrix with float64 values and
        canonical (sorted, duplicate-free) indices. The caller's object is never
        modified; a copy is made only when a conversion is needed.

    Raises
    ------
    TypeError
        For input that is not numeric.
    ValueError
        For complex values, NaN/inf, a shape that is not 2-D, an empty matrix or a
        feature count that differs from ``n_features``.
    """
    if X is None:
        raise ValueError(f"{name} is None; pass a 2-D array or a scipy.sparse matrix")
    if sp.issparse(X):
        X = _check_sparse(X, name)
    else:
        X = _check_dense(X, name)
    n_samples, n_cols = X.shape
    if n_samples == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a "
                         f"minimum of 1 is required: {name} is empty")
    if n_cols == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a "
                         f"minimum of 1 is required: {name} has no columns")
    if n_features is not None and n_cols != n_features:
        who = estimator or "the learner"
        raise ValueError(
            f"X has {n_cols} features, but {who} is expecting {n_features} features "
            f"as input; pass data with the {n_features} columns used in fit "
            "(for svmlight files, load them with n_features=...)")
    return X


def _check_sparse(X, name):
    if np.iscomplexobj(X.data if hasattr(X, "data") else X):
        raise ValueError(f"Complex data not supported in {name}; pass real values")
    if not sp.isspmatrix_csr(X):
        X = sp.csr_matrix(X)  # any format, sparse arrays too -> csr_matrix
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
    if not np.all(np.isfinite(X.data)):
        raise ValueError(f"Input {name} contains NaN or infinity; remove or impute "
                         "these values before training")
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # sorts indices and merges duplicates
    return X


def _check_dense(X, name):
    arr = np.asarray(X)
    if np.iscomplexobj(arr):
        raise ValueError(f"Complex data not supported in {name}; pass real values")
    if arr.dtype.kind in "USO":
        try:
            arr = arr.astype(np.float64)
        except ValueError as exc:
            raise ValueError(f"{name} must be numeric: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(
            f"Expected 2D array for {name}, got {arr.ndim}D array instead (shape "
            f"{arr.shape}). Reshape your data either using array.reshape(-1, 1) if "
            "your data has a single feature or array.reshape(1, -1) if it contains a "
            "single sample")
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} has dtype {arr.dtype}; pass numeric values")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"Input {name} contains NaN or infinity; remove or impute "
                         "these values before training")
    return arr


def check_y(y, n_samples, classes=None, pos_label=None):
    """Validate binary labels and map them to -1.0 / +1.0.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Any two distinct values (numbers, bools, strings).
    n_samples : int
        Number of rows of X.
    classes : array of shape (2,) or None
        Known ``[negative, positive]`` classes (from an earlier ``partial_fit``);
        then a chunk may contain only one of them.
    pos_label : label or None
        Which value is positive when ``classes`` is None; default the larger.

    Returns
    -------
    y_pm : float64 ndarray of -1.0 / +1.0
    classes : ndarray ``[negative, positive]``
    """
    if y is None:
        raise ValueError("This learner requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected. "
                      "Please change the shape of y to (n_samples, ), for example "
                      "using ravel().", DataConversionWarning, stacklevel=3)
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array, got an array of shape {y.shape}; "
                         "aucopt learners take one binary label per row")
    if y.shape[0] != n_samples:
        raise ValueError(f"X has {n_samples} rows but y has {y.shape[0]} labels; "
                         "pass one label per row")
    if y.dtype.kind == "c":
        raise ValueError("Complex labels are not supported")
    if y.dtype.kind == "f":
        if np.isnan(y).any():
            raise ValueError("Input y contains NaN; drop the unlabelled rows")
        if np.isinf(y).any():
            raise ValueError("Input y contains infinity; labels must be two finite values")
    if y.dtype.kind == "O":
        y = _object_labels(y)
    if classes is not None:
        unknown = np.setdiff1d(np.unique(y), classes)
        if unknown.size:
            raise ValueError(f"y contains labels {unknown.tolist()} not among the "
                             f"classes {list(classes)} this learner was fitted with")
        return np.where(y == classes[1], 1.0, -1.0), classes
    values = np.unique(y)
    if values.size > 2:
        if y.dtype.kind == "f" and not np.all(values == np.round(values)):
            raise ValueError(
                "Unknown label type: continuous (y has non-integer values); aucopt "
                "learners rank two classes: binarize y first, e.g. with "
                "aucopt.datasets.binarize(y, positive=...)")
        raise ValueError(
            f"Only binary classification is supported. y has {values.size} classes "
            f"{values[:10].tolist()}; binarize it first, e.g. with "
            "aucopt.datasets.binarize(y, positive=...)")
    if values.size < 2:
        raise ValueError(
            f"y contains only one class ({values.tolist()}); AUC training needs at "
            "least one positive and one negative example")
    if pos_label is None:
        classes = values
    elif pos_label in values.tolist():
        classes = np.array([v for v in values if v != pos_label] + [pos_label],
                           dtype=values.dtype)
    else:
        raise ValueError(f"pos_label={pos_label!r} is not one of the labels "
                         f"{values.tolist()}")
    return np.where(y == classes[1], 1.0, -1.0), classes


def _object_labels(y):
    """Object-dtype labels: numbers or strings, turned into a plain dtype."""
    try:
        return y.astype(np.float64)
    except (TypeError, ValueError):
        return y.astype(str)


def check_random_state(random_state):
    """Turn ``random_state`` (None, int, SeedSequence, Generator, RandomState) into a Generator.

    An int or SeedSequence gives a fresh generator, so the same seed gives the
    same model; a Generator is used as is (and advanced).
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    if random_state is None or isinstance(random_state, (numbers.Integral,
                                                         np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    raise TypeError(f"random_state must be None, an int, a numpy Generator or "
                    f"RandomState, got {type(random_state).__name__}")


# --------------------------------------------------------------------------- learner


class BaseLearner(Estimator):
    """Common machinery of every aucopt learner (see the module docstring).

    Subclasses define ``__init__`` (storing parameters only) and ``_fit(X, y)``,
    which trains from scratch on validated ``X`` and labels ``y`` in {-1, +1} and
    sets ``coef_`` (and any other fitted attribute ending in ``_``). Linear
    learners score with ``X @ coef_ + intercept_``.
    """

    _estimator_type = "classifier"

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
        return hasattr(self, "n_features_in_")

    # ---- fitting

    def fit(self, X, y):
        """Train from scratch on ``X`` (dense or sparse) and binary labels ``y``.

        Returns
        -------
        self
        """
        X = check_X(X)
        y_pm, classes = check_y(y, X.shape[0], pos_label=self._pos_label())
        self._check_params()
        with self._transaction():
            self._clear_fitted()
            self.classes_ = classes
            self.n_features_in_ = X.shape[1]
            self._fit(X, y_pm)
            self._set_threshold(X, y_pm)
        return self

    def _pos_label(self):
        return getattr(self, "pos_label", None)

    def _check_params(self):
        """Validate parameter values (subclasses extend); raise ValueError/TypeError."""

    def _set_threshold(self, X, y):
        """Choose ``intercept_`` at the training OPTROC point (ALGORITHMS.md 1.2)."""
        from aucopt.metrics import optroc_accuracy

        if np.all(y == y[0]):
            if not hasattr(self, "intercept_"):
                self.intercept_ = 0.0
            return
        scores = self._raw_scores(X)
        _, threshold = optroc_accuracy(y, scores, return_threshold=True)
        self.intercept_ = -float(threshold)

    def _report(self, X, y, what, seconds, detail=""):
        """One ``verbose`` progress line: what was done, ``||w||``, AUC on ``(X, y)``."""
        from aucopt.metrics import roc_auc

        auc = roc_auc(y, self._raw_scores(X)) if np.unique(y).size == 2 else float("nan")
        print(f"-- {type(self).__name__} {what}: {detail}|w| "
              f"{np.linalg.norm(self.coef_):.4g}, train AUC {auc:.4f}, {seconds:.3f} s",
              flush=True)

    # ---- prediction

    def _check_fitted(self):
        if not self.__sklearn_is_fitted__():
            raise not_fitted_error(f"This {type(self).__name__} instance is not fitted yet; "
                                 "call fit (or partial_fit) with training data first")

    def _raw_scores(self, X):
        return np.asarray(X @ self.coef_, dtype=np.float64).ravel()

    def decision_function(self, X):
        """Ranking scores ``X @ coef_ + intercept_`` (larger = more likely positive).

        The ranking, hence the AUC, does not depend on ``intercept_``; it only puts
        the OPTROC operating point of the training data at score 0.
        """
        self._check_fitted()
        X = check_X(X, n_features=self.n_features_in_, estimator=type(self).__name__)
        return self._raw_scores(X) + self.intercept_

    def predict(self, X):
        """Class labels: ``classes_[1]`` where ``decision_function(X) > 0``."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.intp)]

    def score(self, X, y):
        """Area under the ROC curve of ``decision_function(X)`` on labels ``y``."""
        from aucopt.metrics import roc_auc

        scores = self.decision_function(X)
        return roc_auc(y, scores, pos_label=self.classes_[1])

    # ---- state handling

    def _fitted_names(self):
        return [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]

    def _clear_fitted(self):
        for name in self._fitted_names():
            delattr(self, name)

    @contextlib.contextmanager
    def _transaction(self):
        """Restore every fitted attribute if the body raises (also on KeyboardInterrupt)."""
        saved = {k: copy.deepcopy(getattr(self, k)) for k in self._fitted_names()}
        try:
            yield
        except BaseException:
            self._clear_fitted()
            self.__dict__.update(saved)
            raise

    # ---- persistence

    def save(self, path):
        """Write the learner (parameters and fitted state) to ``path`` (``.npz``).

        Parameters and scalar state are stored as JSON, arrays as ``.npz`` members;
        :func:`aucopt.load` reads them back without pickle.
        """
        from aucopt.registry import name_of

        meta = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "learner": name_of(type(self)),
            "params": {},
            "attributes": {},
            "arrays": [],
        }
        for key, value in self.get_params().items():
            meta["params"][key] = _to_json(value, f"parameter {key!r}")
        arrays = {}
        for key in self._fitted_names():
            value = getattr(self, key)
            if isinstance(value, np.ndarray):
                if value.dtype.hasobject:
                    raise TypeError(f"cannot save attribute {key!r}: object arrays "
                                    "would need pickle")
                arrays[key] = value
                meta["arrays"].append(key)
            else:
                meta["attributes"][key] = _to_json(value, f"attribute {key!r}")
        from aucopt import __version__

        meta["aucopt_version"] = __version__
        blob = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
        with _open_for_write(path) as fh:
            np.savez(fh, **{_META_KEY: blob}, **arrays)
        return self


@contextlib.contextmanager
def _open_for_write(path):
    if hasattr(path, "write"):
        yield path
        return
    with open(os.fspath(path), "wb") as fh:
        yield fh


_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")


def _to_json(value, what):
    """Encode a parameter or scalar attribute as JSON-safe data (tagged where needed)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_to_json(v, what) for v in value]
    if isinstance(value, np.random.Generator):
        state = value.bit_generator.state
        return {"__generator__": _jsonable_state(state)}
    raise TypeError(f"cannot save {what} of type {type(value).__name__}; aucopt stores "
                    "only numbers, strings, lists, numpy arrays and Generators")


def _jsonable_state(obj):
    if isinstance(obj, dict):
        return {k: _jsonable_state(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return {"__array__": obj.tolist(), "dtype": str(obj.dtype)}
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def _from_json(value):
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    if isinstance(value, dict):
        if "__generator__" in value:
            return _restore_generator(value["__generator__"])
        raise ValueError("malformed model file: unexpected object in JSON")
    return value


def _restore_generator(state):
    name = state.get("bit_generator")
    if name not in _BIT_GENERATORS:
        raise ValueError(f"malformed model file: unknown bit generator {name!r}")

    def arrays(obj):
        if isinstance(obj, dict):
            if "__array__" in obj:
                return np.asarray(obj["__array__"], dtype=np.dtype(obj["dtype"]))
            return {k: arrays(v) for k, v in obj.items()}
        return obj

    bitgen = getattr(np.random, name)()
    bitgen.state = arrays(state)
    return np.random.Generator(bitgen)


def load(path):
    """Load a learner written by ``save``; never unpickles (safe on untrusted files).

    The learner class is looked up by its registered name, so plugin learners load
    once their distribution is installed.
    """
    from aucopt.registry import get_class

    src = path if hasattr(path, "read") else os.fspath(path)
    with np.load(src, allow_pickle=False) as npz:
        if _META_KEY not in npz.files:
            raise ValueError(f"{path!r} is not an aucopt model file (no metadata)")
        meta = json.loads(npz[_META_KEY].tobytes().decode("utf-8"))
        if meta.get("format") != FORMAT_NAME:
            raise ValueError(f"{path!r} is not an aucopt model file")
        if meta.get("format_version", 0) > FORMAT_VERSION:
            raise ValueError(f"{path!r} was written by a newer aucopt "
                             f"({meta.get('aucopt_version')}); upgrade aucopt to load it")
        arrays = {k: npz[k] for k in meta["arrays"]}
    names = list(meta["attributes"]) + list(meta["arrays"])
    bad = [k for k in names if not (k.isidentifier() and k.endswith("_")
                                     and not k.startswith("_"))]
    if bad:
        raise ValueError(f"malformed model file: {bad} are not fitted-attribute names")
    cls = get_class(meta["learner"])
    params = {k: _from_json(v) for k, v in meta["params"].items()}
    learner = cls(**params)
    for key, value in meta["attributes"].items():
        setattr(learner, key, _from_json(value))
    for key, value in arrays.items():
        setattr(learner, key, value)
    return learner


# --------------------------------------------------------------------------- online


class OnlineMixin:
    """``partial_fit`` with scikit-learn's semantics, for learners that stream.

    The first call needs ``classes`` (or a chunk showing both classes); later
    chunks may hold a single class. Subclasses implement ``_init_state(n_features)``
    and ``_partial_fit(X, y)`` (one pass over the chunk, labels in {-1, +1}).
    """

    def partial_fit(self, X, y, classes=None):
        """Continue training on one chunk; the first call fixes classes and features.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of the two labels, optional
            Required on the first call unless ``y`` already holds both classes.

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
        self._check_params()
        with self._transaction():
            if first:
                self.classes_ = known
                self.n_features_in_ = X.shape[1]
                self._init_state(X.shape[1])
            self._partial_fit(X, y_pm)
            self._set_threshold(X, y_pm)
        return self
