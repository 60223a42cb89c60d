"""Input and parameter validation: one path for every learner and feature map.

* :func:`check_X` converts a feature matrix once per call: dense array-likes become
  C-contiguous float64 arrays, any scipy.sparse input becomes CSR float64 whose
  structure is checked (``indptr`` monotone, every column index in range; nothing a
  kernel reads without bounds checks is trusted) and made canonical (sorted,
  duplicate-free indices) on a copy when needed.
* :func:`row_source` hands a validated matrix to the kernels
  (:class:`aucopt._kernels._rows.RowSource` checks the structure again as it reads
  it, so no kernel can be reached with an index outside its arrays).
* :func:`check_y` maps any two labels to -1 / +1; :func:`check_random_state`
  turns a seed into a numpy Generator.
* ``check_*`` helpers validate parameter values at fit time with messages that
  name the parameter, and :func:`check_state_bytes` refuses state larger than a
  documented cap before anything is allocated.
"""
import numbers
import os
import threading
import warnings

import numpy as np
import scipy.sparse as sp

from aucopt._estimator import did_you_mean
from aucopt._kernels._rows import NotCanonical, RowSource, check_rows, csr_status
from aucopt.exceptions import DataConversionWarning

__all__ = ["check_X", "check_y", "feature_names", "check_feature_names",
           "check_random_state", "check_seed", "order_stream",
           "row_source", "row_scale", "dominant_feature", "check_sample_weight",
           "weight_counts",
           "weight_stream",
           "check_positive",
           "check_count", "check_choice", "check_fraction", "check_state_bytes",
           "check_n_jobs", "n_threads", "auto_or_positive", "MAX_STATE_BYTES"]

def check_X(X, *, name="X", n_features=None, estimator=None, norms=False):
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
    norms : bool, default=False
        Also keep the squared row norms the checking pass sums (one float per row),
        for the row source built next (:func:`row_source` of the returned matrix,
        in this thread), which then neither scans the matrix nor sums them again:
        for training, whose row sources need the norms.

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
        X = _check_sparse(X, name, norms)
    else:
        X = _check_dense(X, name, norms)
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


def _check_sparse(X, name, norms):
    if np.iscomplexobj(X.data if hasattr(X, "data") else X):
        raise ValueError(f"Complex data not supported in {name}; pass real values")
    _check_structure_before_conversion(X)
    if not sp.isspmatrix_csr(X):
        X = sp.csr_matrix(X)  # any format, sparse arrays too -> csr_matrix
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
    try:  # structure checked before anything else reads it: scipy trusts it
        checked = check_rows(X, norms)
    except NotCanonical:
        X = X.copy()
        X.sum_duplicates()  # sorts indices and merges duplicates
        checked = check_rows(X, norms)
    _finite(checked, name)
    X.has_canonical_format = True
    return X


def _check_structure_before_conversion(X):
    """scipy's conversions trust index arrays; check those a user may have edited."""
    if X.format == "csc":
        csr_status(X.T)  # the transpose of a CSC matrix is a CSR view of its arrays
    elif X.format == "coo":
        for what, idx, bound in (("row", X.row, X.shape[0]), ("col", X.col, X.shape[1])):
            idx = np.asarray(idx)
            if idx.size and (idx.min() < 0 or idx.max() >= bound):
                raise ValueError(f"malformed COO matrix: a {what} index is outside "
                                 f"[0, {bound})")


# The last matrix check_X passed in this thread, and what its one pass found
# (aucopt._kernels._rows.Checked: weak references, the squared row norms), so that
# the row source of the same matrix (row_source, right after check_X in every fit)
# neither scans it nor sums its norms again.
_LAST = threading.local()


def _finite(checked, name):
    """Remember ``checked`` (see ``_LAST``); ``ValueError`` if a value is not finite."""
    if not checked.finite:
        raise ValueError(f"Input {name} contains NaN or infinity; remove or impute "
                         "these values before training")
    _LAST.checked = checked


def _check_dense(X, name, norms):
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
    _finite(check_rows(arr, norms), name)
    return arr


def feature_names(X):
    """The column names of a dataframe-like ``X`` (one with ``columns``), as an
    object array of str; None when ``X`` has none or none of them is a string
    (pandas' default 0, 1, ... names a position, not a feature). ``TypeError`` for
    names that mix strings with other values, which no later call could match
    reliably."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "shape"):
        return None
    names = np.asarray(list(columns), dtype=object)
    strings = sum(isinstance(v, str) for v in names.tolist())
    if strings == 0:
        return None
    if strings < names.size:
        kinds = sorted({type(v).__name__ for v in names.tolist()})
        raise TypeError(f"X's column names mix {', '.join(kinds)}: feature names are "
                        "used only when every one is a string; convert them with "
                        "X.columns = X.columns.astype(str)")
    return names


def check_feature_names(learner, names, fitted=None):
    """Compare the column names of the data of a call (``feature_names(X)``) with
    those the learner was fitted on (``feature_names_in_``; or ``fitted``, the names
    a ``fit`` is about to keep): ``ValueError`` when both exist and differ
    (scikit-learn's message: which names are new, missing or in another order), a
    ``UserWarning`` when only one side has them."""
    if fitted is None:
        fitted = learner.__dict__.get("feature_names_in_")
    who = type(learner).__name__
    if fitted is None and names is None:
        return
    if fitted is None:
        warnings.warn(f"X has feature names, but {who} was fitted without feature names",
                      UserWarning, stacklevel=4)
        return
    if names is None:
        warnings.warn(f"X does not have valid feature names, but {who} was fitted with "
                      "feature names", UserWarning, stacklevel=4)
        return
    if names.size == fitted.size and (names == fitted).all():
        return
    message = "The feature names should match those that were passed during fit.\n"
    unseen = sorted(set(names.tolist()) - set(fitted.tolist()))
    missing = sorted(set(fitted.tolist()) - set(names.tolist()))
    for title, listed in (("Feature names unseen at fit time:", unseen),
                          ("Feature names seen at fit time, yet now missing:", missing)):
        if listed:
            shown = listed[:5] + (["..."] if len(listed) > 5 else [])
            message += title + "\n" + "".join(f"- {v}\n" for v in shown)
    if not (unseen or missing):
        message += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(message)


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
        unknown = np.unique(y[(y != classes[0]) & (y != classes[1])])
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


def order_stream(random_state):
    """A generator for shuffling rows, independent of the learner's own draws.

    An int (or SeedSequence) seeds a child stream of that seed (so the shuffle does
    not reuse the numbers of ``check_random_state(random_state)``); a Generator is
    used as is; None draws fresh entropy.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(np.random.SeedSequence(int(random_state)).spawn(1)[0])
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state.spawn(1)[0])
    return check_random_state(random_state)


def weight_stream(random_state, call=0):
    """The generator that rounds fractional sample weights (:func:`weight_counts`),
    independent of the learner's own draws and of the shuffle.

    An int (or SeedSequence) seeds a stream of its own for each training ``call``
    (the count of earlier passes: each ``partial_fit`` chunk draws afresh); a
    Generator is used as is; None draws fresh entropy.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(np.random.SeedSequence(int(random_state),
                                                            spawn_key=(1, int(call))))
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(np.random.SeedSequence(
            random_state.entropy, spawn_key=tuple(random_state.spawn_key) + (1, int(call))))
    return check_random_state(random_state)


def check_seed(random_state):
    """Validate ``random_state`` without building a generator (parameter checks)."""
    if random_state is None or isinstance(random_state, (np.random.Generator,
                                                         np.random.RandomState,
                                                         np.random.SeedSequence)):
        return
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}")
        return
    raise TypeError(f"random_state must be None, an int, a numpy Generator or "
                    f"RandomState, got {type(random_state).__name__}")


def finite_rows(X, norms=True):
    """:func:`row_source` of ``X``; with ``norms``, rows whose squared norm
    overflows are refused (``ValueError`` naming the row and the fix)."""
    rows = row_source(X, norms)
    if norms:
        rows.check_finite_norms()
    return rows


def row_source(X, norms=True):
    """The kernels' view of a matrix returned by :func:`check_X` (checked again here).

    A CSR matrix whose rows became unsorted since validation is repaired on a copy.
    The matrix :func:`check_X` returned last in this thread is not scanned again: the
    structure and the squared row norms of its one pass are used.
    """
    checked = getattr(_LAST, "checked", None)
    try:
        return RowSource(X, norms, checked)
    except NotCanonical:
        X = X.copy()
        X.sum_duplicates()
        return RowSource(X, norms)


def row_scale(rows, weights=None):
    """Mean squared row norm of a row source (1.0 for all-zero rows), weighted by
    ``weights`` if given: the scale that data-derived step sizes and
    regularisation strengths are measured against."""
    s = float(np.average(rows.norms(), weights=weights)) if rows.n_rows else 0.0
    return s if s > 0.0 else 1.0


# dominant_feature: the rows it reads (evenly spaced: SCALE_ENTRIES values of a dense
# row's width, at least SCALE_ROWS rows), and when one feature dominates
SCALE_ENTRIES = 16384
SCALE_ROWS = 200
SCALE_SHARE = 0.5
SCALE_RATIO = 1e3
SCALE_SPARSE_WIDTH = 4096  # wider CSR matrices are not looked at (text)


def dominant_feature(X):
    """The feature whose scale dominates the rows of a matrix returned by
    :func:`check_X`, or None.

    Over evenly spaced rows, ``SCALE_ENTRIES`` values at the width of a dense row
    (at least ``SCALE_ROWS`` rows, all when fewer; the same rows for a dense or a
    sparse ``X``), each feature's mean square (not centred: an offset lengthens the
    rows as a spread does). A feature dominates
    when it holds at least ``SCALE_SHARE`` of the rows' summed squared norms and its
    mean square is at least ``SCALE_RATIO`` times the median of the other features
    that are not all zero (in those rows): data-derived step sizes and
    regularisation then follow that one feature. On the project's data, standardised
    tabular features give shares up to 0.12 and text (TF-IDF rows of unit norm) at
    most 0.007; of the raw tabular sets, only the two whose test AUC standardising
    raised by 0.04-0.07 pass both bounds (spambase: share 0.98, ratio 1.2e6; wdbc:
    0.62 and 1.2e7), while magic04 (0.82, but 51) trains as well raw as
    standardised. An offset counts: a column of about 1000 added to standardised
    spambase took PSAM's test AUC from 0.972 to 0.945. A Nystroem map's first
    coordinate holds 0.3-0.8 of its features' norm and can pass both bounds (wide
    kernels, many components); standardising did not hurt there (standardised
    spambase through 200 components at ``width_factor=8``: PSAM 0.9694 unscaled,
    0.9720 standardised, ASAM 0.9695 and 0.9749).

    A CSR matrix of more than ``SCALE_SPARSE_WIDTH`` columns is not looked at
    (None): such data is text or hashed features, whose rows no one feature
    dominates, and the look cost 0.4-1.9 ``X @ w`` there (0.65-2.6 ms on the four
    text sets of ``tools/bench.py``, where a PSAM pass costs 5-8 ``X @ w``).

    Returns
    -------
    None, or ``(feature, share, ratio)``: its column index, its share of the
    squared norms and its mean square over the others' median.
    """
    n, d = X.shape
    if sp.issparse(X) and d > SCALE_SPARSE_WIDTH:
        return None
    rows = min(n, max(SCALE_ROWS, -(-SCALE_ENTRIES // max(d, 1))))  # dense or sparse
    if rows < n:
        X = X[np.linspace(0, n - 1, rows).astype(np.intp)]
    if sp.issparse(X):
        squares = np.bincount(X.indices, weights=np.square(X.data), minlength=d)
    else:
        squares = np.einsum("ij,ij->j", X, X)
    present = squares[squares > 0.0]
    if present.size < 2 or not np.isfinite(present).all():
        return None
    top = int(np.argmax(squares))
    share = float(squares[top] / present.sum())
    ratio = float(squares[top] / np.median(np.delete(present, np.argmax(present))))
    if share >= SCALE_SHARE and ratio >= SCALE_RATIO:
        return top, share, ratio
    return None


def check_sample_weight(sample_weight, n_samples, part=False, what="sample_weight"):
    """Validate per-row weights with scikit-learn's semantics: None (every row
    counts once), a number (every row that weight) or one finite weight >= 0 per
    row (a column vector of shape (n, 1) is raveled), not all zero (unless the rows
    are a ``part`` of the data); an integer weight ``k`` stands for the row repeated
    ``k`` times, a weight 0 ignores it. Returns None or a new C-contiguous float64
    array (the caller's is never changed). ``what`` names the weights in messages.
    Raises ``TypeError`` for non-numeric weights and ``ValueError`` for a wrong
    length, negative, NaN or infinite weights, or weights all zero."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        weights = np.full(n_samples, float(sample_weight))
    else:
        weights = np.asarray(sample_weight)
        if weights.ndim == 2 and weights.shape[1] == 1:
            weights = weights.ravel()
        if weights.dtype.kind not in "biuf":
            raise TypeError(f"{what} must hold real numbers, got dtype {weights.dtype}")
        weights = np.array(weights, dtype=np.float64)
    if weights.shape != (n_samples,):
        raise ValueError(f"{what} must hold one weight per sample, shape ({n_samples},), "
                         f"got shape {weights.shape}")
    bad = np.flatnonzero(~np.isfinite(weights) | (weights < 0))
    if bad.size:
        raise ValueError(f"{what} must be finite and >= 0; entry {bad[0]} is "
                         f"{float(weights[bad[0]])!r}")
    if n_samples and not part and not weights.any():
        raise ValueError(f"{what} is zero everywhere: at least one sample must have a "
                         "positive weight")
    return weights


def weight_counts(weights, rng, cap=None):
    """How many times each row enters training for ``weights`` (from
    :func:`check_sample_weight`): an integer weight ``k`` exactly ``k`` times; a
    weight ``k + f`` (``0 < f < 1``) ``k`` times and once more with probability
    ``f``, drawn from ``rng()`` (called only then), so every row's expected count,
    and every pair's (independent draws), is its weight, resp. the product of the
    two weights. Refuses, before allocating, a row order above ``cap`` bytes (see
    :func:`check_state_bytes`)."""
    whole = np.floor(weights)
    check_state_bytes(8 * (float(whole.sum()) + weights.shape[0]),
                      "the row order repeating each row by its sample_weight", cap,
                      fix="rescale sample_weight (a weight is a number of copies of "
                          "its row)")
    counts = whole.astype(np.int64)
    frac = weights - whole
    if frac.any():
        counts += rng().random(weights.shape[0]) < frac
    return counts


# --------------------------------------------------------------------------- parameters


def check_positive(name, value, *, allow_zero=False):
    """``value`` must be a finite real number > 0 (>= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    if not (value >= 0 if allow_zero else value > 0) or value != value or value == float("inf"):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")


# Largest count parameter accepted (kernels keep counts in C longs and doubles).
MAX_COUNT = 2**53


def check_count(name, value, minimum=1, maximum=None):
    """``value`` must be an integer in ``[minimum, maximum]`` (``maximum`` at most 2**53)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    maximum = MAX_COUNT if maximum is None else min(maximum, MAX_COUNT)
    if value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")


def check_n_jobs(n_jobs):
    """``n_jobs`` must be None, -1 or a count >= 1.

    Its one meaning throughout aucopt (learners, feature maps, model selection),
    as in scikit-learn and joblib: None is 1 thread, -1 is one thread per core
    this process may run on (its CPU affinity where the platform reports one,
    else ``os.cpu_count()``), a count is that many threads. :func:`n_threads`
    resolves it.
    """
    if n_jobs is not None and not (isinstance(n_jobs, numbers.Integral) and n_jobs == -1):
        check_count("n_jobs", n_jobs)


def n_threads(n_jobs):
    """The threads ``n_jobs`` asks for (see :func:`check_n_jobs`, which it applies
    first): 1 for None, the cores this process may run on for -1."""
    check_n_jobs(n_jobs)
    if n_jobs is None:
        return 1
    if n_jobs == -1:
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            return os.cpu_count() or 1
    return int(n_jobs)


def auto_or_positive(name, value, allow_zero=False):
    """``value`` is "auto" or a finite number > 0 (>= 0 with ``allow_zero``); any
    other string is a TypeError, as any other non-number is."""
    if isinstance(value, str):
        if value != "auto":
            raise TypeError(f"{name} must be 'auto' or a positive number, got {value!r}")
        return
    check_positive(name, value, allow_zero=allow_zero)


def check_choice(name, value, allowed):
    """``value`` must be one of ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        hint = did_you_mean([value], allowed) if isinstance(value, str) else ""
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {value!r}.{hint}")


def check_fraction(name, value, *, low=0.0, high=1.0, open_low=True):
    """``value`` must be a real number in ``(low, high]`` (``[low, high]`` if not ``open_low``)."""
    check_positive(name, value, allow_zero=True)
    if (value <= low if open_low else value < low) or value > high:
        left = "(" if open_low else "["
        raise ValueError(f"{name} must lie in {left}{low}, {high}], got {value!r}")


# Largest model state a learner allocates unless its ``max_state_bytes`` says otherwise.
MAX_STATE_BYTES = 4 * 2**30


def check_state_bytes(nbytes, what, cap=None, fix=""):
    """Refuse, before allocating, a model state of ``nbytes`` above ``cap``.

    Parameters
    ----------
    nbytes : int
        Bytes the state would take.
    what : str
        What needs them, e.g. ``"OPAUC's two 40000 x 40000 covariance sums"``.
    cap : int or None
        The limit (default :data:`MAX_STATE_BYTES`, 4 GiB).
    fix : str
        How to avoid it (another learner, a smaller parameter).
    """
    cap = MAX_STATE_BYTES if cap is None else cap
    if nbytes > cap:
        raise ValueError(f"{what} would take {nbytes / 2**30:.2f} GiB, above the "
                         f"{cap / 2**30:.2f} GiB cap (max_state_bytes); {fix}".rstrip("; "))
