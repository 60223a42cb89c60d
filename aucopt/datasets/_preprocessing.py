"""Label binarisation, feature scaling and a stratified train/test split."""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from aucopt.exceptions import NotFittedError

__all__ = ["binarize", "Scaler", "scale", "split"]


def binarize(y: ArrayLike, positive: object) -> np.ndarray:
    """Map labels to a binary task: +1 for the positive classes, -1 for the rest.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (numbers, or any values ``numpy.unique`` can sort).
    positive : collection of labels, a single label, or callable
        The labels of the +1 class, e.g. ``range(1, 6)`` for "labels 1..5 vs
        rest", ``{1}`` for one-vs-rest; or a callable ``label -> bool``
        (e.g. ``lambda c: c <= 5``) called once per distinct label.

    Returns
    -------
    numpy.ndarray of shape (n_samples,), float64
        Values in ``{-1.0, +1.0}``.

    Raises
    ------
    ValueError
        If ``y`` is empty or not 1-D, or ``positive`` is an empty collection.

    Notes
    -----
    Labels that all fall on one side give a single value: a chunk of a stream
    (``iter_svmlight`` of a file sorted by label) may hold one class, and
    ``partial_fit(X, y, classes=[-1, 1])`` accepts it; ``fit`` refuses data of
    one class.

    Examples
    --------
    >>> binarize([1, 3, 7, 2], range(1, 3))
    array([ 1., -1., -1.,  1.])
    >>> binarize([1, 3, 7, 2], lambda c: c > 2)
    array([-1.,  1.,  1., -1.])
    """
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if y.shape[0] == 0:
        raise ValueError("y is empty")
    uniq, inverse = np.unique(y, return_inverse=True)
    if callable(positive):
        is_pos = np.array([bool(positive(u.item() if hasattr(u, "item") else u))
                           for u in uniq], dtype=bool)
    else:
        if isinstance(positive, (str, bytes)) or not hasattr(positive, "__iter__"):
            positive = [positive]
        pos = np.asarray(list(positive))
        if pos.size == 0:
            raise ValueError("positive is empty: give at least one positive label")
        is_pos = np.isin(uniq, pos)
    return np.where(is_pos[inverse.ravel()], 1.0, -1.0)


_METHODS = ("standard", "minmax", "center", "maxabs", "l2")
# the methods that shift the columns, which makes every entry non-zero: dense input only
_SHIFTING = ("standard", "minmax", "center")


def _as_float_matrix(X):
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        return X
    X = np.array(X, dtype=np.float64, copy=True)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got an array of shape {X.shape}")
    return X


class Scaler:
    """Feature scaling that keeps sparse input sparse where possible.

    Parameters
    ----------
    method : {"standard", "minmax", "center", "maxabs", "l2"}, default="standard"
        ``"standard"``: subtract each column's mean and divide by its standard
        deviation (``ddof=0``; constant columns are only centred). Dense input
        only, since centring destroys sparsity.
        ``"minmax"``: map each column's training range onto [-1, 1] (the scaling of
        Gao et al., "One-Pass AUC Optimization", 2013; constant columns become -1).
        Dense input only.
        ``"center"``: subtract each column's mean. Dense input only.
        ``"maxabs"``: divide each column by its largest absolute value (dense
        or sparse; all-zero columns are left unchanged).
        ``"l2"``: scale each row to unit Euclidean norm (dense or sparse; zero
        rows are left unchanged). Needs no fitting.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        Column offsets subtracted (``"standard"``, ``"center"``: the means;
        ``"minmax"``: the midpoints of the ranges); ``None`` otherwise.
    scale_ : ndarray of shape (n_features,)
        Column divisors (``"standard"``: std, ``"minmax"``: half the range,
        ``"maxabs"``: ``max |x|``; 1 where the column is constant / all zero).
        ``None`` for ``"center"`` and ``"l2"``.
    n_features_in_ : int
        Number of columns seen in :meth:`fit`.
    METHODS : tuple of str
        The methods (class attribute), as listed above.

    Examples
    --------
    >>> import numpy as np
    >>> Scaler("maxabs").fit_transform(np.array([[1.0, -4.0], [0.5, 2.0]]))
    array([[ 1. , -1. ],
           [ 0.5,  0.5]])
    """

    METHODS = _METHODS

    def __init__(self, method="standard"):
        self.method = method

    @property
    def shifts(self):
        """Whether the method shifts the columns ("standard", "minmax", "center"),
        which makes every entry non-zero: such a scaler takes dense input only."""
        return self.method in _SHIFTING

    def _check_method(self):
        if self.method not in _METHODS:
            raise ValueError(f"unknown scaling method {self.method!r}; "
                             f"choose one of {', '.join(map(repr, _METHODS))}")

    def _check_sparse(self, X):
        if self.shifts and sp.issparse(X):
            raise TypeError(
                f"Scaler(method={self.method!r}) does not accept sparse input: shifting "
                "would make every entry non-zero. Use method='maxabs' or "
                "method='l2', or convert X to a dense array first (X.toarray())")

    def fit(self, X, y=None):
        """Learn the column statistics of ``X``.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : Scaler
        """
        self._check_method()
        self._check_sparse(X)
        X = _as_float_matrix(X)
        n, d = X.shape
        self.n_features_in_ = d
        self.mean_ = None
        self.scale_ = None
        if self.shifts and n == 0:
            raise ValueError(f"cannot fit method={self.method!r} on an empty X")
        if self.method == "standard":
            self.mean_ = X.mean(axis=0)
            std = X.std(axis=0)
            self.scale_ = np.where(std > 0, std, 1.0)
        elif self.method == "center":
            self.mean_ = X.mean(axis=0)
        elif self.method == "minmax":
            lo, hi = X.min(axis=0), X.max(axis=0)
            half = (hi - lo) / 2.0
            self.scale_ = np.where(half > 0, half, 1.0)
            self.mean_ = np.where(half > 0, lo + half, lo + 1.0)
        elif self.method == "maxabs":
            if sp.issparse(X):
                m = abs(X).max(axis=0)
                m = np.asarray(m.toarray() if sp.issparse(m) else m,
                               dtype=np.float64).ravel()
            else:
                m = np.abs(X).max(axis=0) if n else np.zeros(d)
            self.scale_ = np.where(m > 0, m, 1.0)
        return self

    def transform(self, X):
        """Scale ``X`` with the statistics learnt by :meth:`fit`.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray or scipy.sparse.csr_matrix
            A new float64 array (dense input) or CSR matrix (sparse input);
            ``X`` itself is not modified.
        """
        self._check_method()
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError("this Scaler is not fitted yet; call fit(X) first")
        self._check_sparse(X)
        X = _as_float_matrix(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but the Scaler was fitted "
                             f"with {self.n_features_in_}")
        if self.method in ("standard", "minmax"):
            return (X - self.mean_) / self.scale_
        if self.method == "center":
            return X - self.mean_
        if self.method == "maxabs":
            if sp.issparse(X):
                X.data /= self.scale_[X.indices]
                return X
            return X / self.scale_
        # l2
        if sp.issparse(X):
            rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            norms = np.sqrt(np.bincount(rows, weights=X.data ** 2,
                                        minlength=X.shape[0]))
            norms[norms == 0] = 1.0
            X.data /= norms[rows]
            return X
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        norms[norms == 0] = 1.0
        return X / norms[:, None]

    def fit_transform(self, X, y=None):
        """Fit to ``X`` and return it scaled; same as ``fit(X).transform(X)``.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        ndarray or scipy.sparse.csr_matrix
        """
        return self.fit(X).transform(X)

    def __repr__(self):
        return f"Scaler(method={self.method!r})"


def scale(X: ArrayLike | sp.spmatrix, method: str = "standard") -> np.ndarray | sp.csr_matrix:
    """Scale ``X`` in one call: ``Scaler(method).fit_transform(X)``.

    Parameters
    ----------
    X : array-like or scipy sparse matrix of shape (n_samples, n_features)
    method : {"standard", "minmax", "center", "maxabs", "l2"}, default="standard"
        See :class:`Scaler`.

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix
    """
    return Scaler(method).fit_transform(X)


def split(X: ArrayLike | sp.spmatrix, y: ArrayLike, test_size: float = 0.2,
          random_state: int | np.random.Generator | None = 0) -> tuple:
    """Stratified random train/test split.

    Each class is split in (nearly) the same proportion; the number of test
    rows is ``round(test_size * n_samples)``, shared between classes by
    largest remainder. Rows of each part come in random order.

    Parameters
    ----------
    X : array-like or scipy sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    test_size : float in (0, 1) or int, default=0.2
        Share (float) or number (int) of test rows.
    random_state : int, numpy.random.Generator or None, default=0
        Seed for ``numpy.random.default_rng``; the project's fixed protocol
        is "stratified 80/20, seed 0", i.e. the defaults.

    Returns
    -------
    X_train, X_test, y_train, y_test
        Sparse ``X`` gives CSR parts; dense gives arrays.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(20.0).reshape(10, 2); y = np.r_[np.ones(4), -np.ones(6)]
    >>> Xtr, Xte, ytr, yte = split(X, y)
    >>> Xtr.shape, Xte.shape, int((yte == 1).sum())
    ((8, 2), (2, 2), 1)
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    n = y.shape[0]
    if not sp.issparse(X):
        X = np.asarray(X)
    if X.shape[0] != n:
        raise ValueError(f"X has {X.shape[0]} rows but y has {n} labels")
    if isinstance(test_size, numbers.Integral) and not isinstance(test_size, bool):
        n_test = int(test_size)
    elif isinstance(test_size, numbers.Real) and 0.0 < test_size < 1.0:
        n_test = int(round(float(test_size) * n))
    else:
        raise ValueError(f"test_size must be a float in (0, 1) or an int, got {test_size!r}")
    if not 0 < n_test < n:
        raise ValueError(f"test_size={test_size!r} gives {n_test} test rows out of {n}; "
                         "both parts need at least one row")
    rng = np.random.default_rng(random_state)
    classes, y_idx = np.unique(y, return_inverse=True)
    counts = np.bincount(y_idx, minlength=len(classes))
    exact = n_test * counts / n
    per_class = np.floor(exact).astype(np.int64)
    rest = n_test - per_class.sum()
    if rest > 0:
        order = np.argsort(-(exact - per_class), kind="stable")
        per_class[order[:rest]] += 1
    test_parts, train_parts = [], []
    for k in range(len(classes)):
        members = rng.permutation(np.flatnonzero(y_idx == k))
        test_parts.append(members[: per_class[k]])
        train_parts.append(members[per_class[k]:])
    test_idx = rng.permutation(np.concatenate(test_parts))
    train_idx = rng.permutation(np.concatenate(train_parts))
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    X_train, X_test = X[train_idx], X[test_idx]
    return X_train, X_test, y[train_idx], y[test_idx]
