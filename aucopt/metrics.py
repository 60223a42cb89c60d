"""Ranking metrics: ROC AUC (full or partial), ROC curve, precision at k and
accuracy at the optimal ROC point.

Reference: Khalid, "Scalable Large Margin Pairwise Learning Algorithms" (PhD
dissertation, Colorado State University, 2019), Sec. 2.1 eq. 2.1 (AUC as the
Wilcoxon-Mann-Whitney statistic) and Sec. 4.5 (OPTROC accuracy). Ties count 1/2,
as in Gao et al., "One-Pass AUC Optimization" (ICML 2013), and ROC points lie
between distinct scores (a tied group is never split).

All functions share one O(n log n) pipeline: a single Cython pass validates the
input and splits the scores by class, each class is sorted on its own
(``ndarray.sort``; with ``sample_weight`` an argsort carries the weights along),
and a linear merge of the two sorted runs sweeps the tied groups of the pooled
sample (``aucopt._kernels._metrics``). ``sample_weight`` has scikit-learn's
meaning: an integer weight k counts a sample k times, weight 0 ignores it.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from aucopt._kernels import _metrics as _k
from aucopt.validation import check_sample_weight

__all__ = ["roc_auc", "roc_curve", "precision_at_k", "optroc_accuracy"]

# Label dtypes the kernel reads directly (native byte order only).
_KERNEL_LABEL_DTYPES = frozenset(
    np.dtype(t)
    for t in (
        np.float64, np.float32,
        np.int8, np.int16, np.int32, np.int64,
        np.uint8, np.uint16, np.uint32, np.uint64,
    )
)


def _as_1d(a, what, func):
    a = np.asarray(a)
    if a.ndim == 2 and a.shape[1] == 1:
        return a.ravel()
    if a.ndim != 1:
        raise ValueError(
            f"{func}: {what} must be 1-D (one entry per sample), got an array "
            f"of shape {a.shape}; pass a 1-D array (a column vector of shape "
            f"(n, 1) is accepted and raveled)."
        )
    return a


def _scores_float64(s, func):
    if s.dtype.kind == "c" or s.dtype.kind not in "biufO":
        raise ValueError(
            f"{func}: y_score must be numeric (real scores or decision values), "
            f"got dtype {s.dtype}; convert the scores to float first."
        )
    try:
        return np.ascontiguousarray(s, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{func}: y_score could not be converted to float64 ({exc}); pass "
            f"real-valued scores."
        ) from None


def _labels_for_kernel(y, func):
    """Return an array the kernel accepts whose order of values matches y's."""
    if y.dtype.kind == "b":
        return np.ascontiguousarray(y).view(np.uint8)
    if y.dtype in _KERNEL_LABEL_DTYPES:
        return np.ascontiguousarray(y)
    # strings, objects, float16, other byte orders: encode through np.unique
    # (sorted, so code 1 is the larger label).
    try:
        uniq, codes = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise ValueError(
            f"{func}: the labels in y_true cannot be compared with each other "
            f"({exc}); use labels of a single type (e.g. all int or all str)."
        ) from None
    if uniq.dtype.kind in "fc" and np.isnan(uniq).any():
        raise ValueError(
            f"{func}: y_true contains NaN; drop the unlabelled samples first."
        )
    if uniq.size > 2:
        raise ValueError(
            f"{func}: y_true must hold exactly two label values (binary task), "
            f"found {uniq.size}: {_show(uniq)}; binarize the labels first "
            f"(e.g. y == positive_class)."
        )
    return np.ascontiguousarray(codes.reshape(-1), dtype=np.int8)


def _show(values, k=5):
    vals = [repr(v.item() if hasattr(v, "item") else v) for v in list(values)[:k]]
    more = ", ..." if len(values) > k else ""
    return "[" + ", ".join(vals) + more + "]"


def _same(a, b):
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - incomparable types are simply unequal
        return False


def _split_sorted(y_true, y_score, pos_label, func, sample_weight=None):
    """Validate inputs; return ``(pos, neg, pos_weight, neg_weight)``: each class's
    scores sorted ascending (float64) and their weights (None without
    ``sample_weight``; samples of weight 0 are dropped)."""
    y = _as_1d(y_true, "y_true", func)
    s = _as_1d(y_score, "y_score", func)
    if y.shape[0] != s.shape[0]:
        raise ValueError(
            f"{func}: y_true and y_score have different lengths "
            f"({y.shape[0]} and {s.shape[0]}); pass one score per label."
        )
    n = y.shape[0]
    if n == 0:
        raise ValueError(
            f"{func}: got empty input (0 samples); pass at least one positive "
            f"and one negative sample."
        )
    w = None if sample_weight is None else check_sample_weight(
        sample_weight, n, what=f"{func}: sample_weight")
    s = _scores_float64(s, func)
    yk = _labels_for_kernel(y, func)
    buf = np.empty(n, dtype=np.float64)
    code, n_a, idx_b, bad = _k.split_by_label(yk, s, buf)
    if code == _k.SPLIT_BAD_SCORE:
        raise ValueError(
            f"{func}: y_score contains NaN or infinity (first at index {bad}: "
            f"{s[bad]!r}); remove or impute those samples before scoring."
        )
    if code == _k.SPLIT_NAN_LABEL:
        raise ValueError(
            f"{func}: y_true contains NaN (first at index {bad}); drop the "
            f"unlabelled samples first."
        )
    if code == _k.SPLIT_THIRD_LABEL:
        found = [y[0], y[idx_b], y[bad]]
        raise ValueError(
            f"{func}: y_true must hold exactly two label values (binary task), "
            f"found more than two, e.g. {_show(found)}; binarize the labels "
            f"first (e.g. y == positive_class)."
        )
    if idx_b < 0:
        raise ValueError(
            f"{func} is undefined when y_true contains only one class (every "
            f"label is {_show([y[0]])[1:-1]}): it needs at least one positive "
            f"and one negative sample; evaluate on data containing both "
            f"classes (e.g. a stratified split)."
        )
    if pos_label is None:
        pos_is_b = bool(yk[idx_b] > yk[0])
    elif _same(pos_label, y[idx_b]):
        pos_is_b = True
    elif _same(pos_label, y[0]):
        pos_is_b = False
    else:
        raise ValueError(
            f"{func}: pos_label={pos_label!r} is not one of the labels in "
            f"y_true {_show(sorted([y[0], y[idx_b]]))}; pass one of them or "
            f"leave pos_label=None (the larger label is positive)."
        )
    first, second = buf[:n_a], buf[n_a:]
    pos, neg = (second, first) if pos_is_b else (first, second)
    if w is None:
        pos.sort()
        neg.sort()
        return pos, neg, None, None
    in_a = yk == yk[0]
    w_first, w_second = w[in_a], w[~in_a][::-1]  # class B fills buf from the back
    w_pos, w_neg = (w_second, w_first) if pos_is_b else (w_first, w_second)
    pos, w_pos = _sorted_weighted(pos, w_pos, "positive", func)
    neg, w_neg = _sorted_weighted(neg, w_neg, "negative", func)
    return pos, neg, w_pos, w_neg


def _sorted_weighted(scores, weights, what, func):
    """The scores of positive weight sorted ascending, with their weights."""
    keep = weights > 0
    if not keep.any():
        raise ValueError(
            f"{func}: every {what} sample has sample_weight 0: the metric needs a "
            f"positive total weight in each class."
        )
    scores, weights = scores[keep], weights[keep]
    order = np.argsort(scores, kind="stable")
    return scores[order], weights[order]


def _curve(pos, neg, w_pos, w_neg):
    """Unnormalised ROC curve: cumulative negative and positive weight (counts
    without weights) at or above each distinct score, decreasing, and the scores
    (``+inf`` first). The last point holds the class totals."""
    m = pos.shape[0] + neg.shape[0] + 1
    fp, tp, thr = np.empty(m), np.empty(m), np.empty(m)
    k = _k.roc_sorted(pos, neg, fp, tp, thr, w_pos, w_neg)
    return fp[:k], tp[:k], thr[:k]


def _area(x, y):
    """Trapezoidal area under the polyline (x, y)."""
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1])) / 2.0)


def _check_max_fpr(max_fpr):
    if max_fpr is None:
        return None
    if (isinstance(max_fpr, (bool, np.bool_)) or not isinstance(max_fpr, numbers.Real)
            or not 0.0 < max_fpr <= 1.0):
        raise ValueError(
            f"roc_auc: max_fpr must be a number in (0, 1], got {max_fpr!r}; pass "
            f"e.g. max_fpr=0.1, or None for the whole curve."
        )
    return float(max_fpr)


def roc_auc(
    y_true: ArrayLike,
    y_score: ArrayLike,
    pos_label: Any = None,
    *,
    sample_weight: ArrayLike | None = None,
    max_fpr: float | None = None,
) -> float:
    """Area under the ROC curve, ties counted 1/2 (Mann-Whitney statistic).

    Khalid (2019), Sec. 2.1 eq. 2.1, with ties counted 1/2::

        AUC = 1/(n+ n-) sum_{i pos} sum_{j neg} (I[s_i > s_j] + 0.5 I[s_i = s_j])

    computed in O(n log n) by sorting each class and sweeping tied groups with
    exact integer counts (one rounding, in the final division). With
    ``sample_weight`` each pair counts ``w_i w_j`` (and the normaliser is the
    product of the class weights): the area under the weighted ROC curve.

    With ``max_fpr`` the partial area up to that false positive rate (the curve
    interpolated linearly at ``max_fpr``) is standardised with the McClish
    correction, ``0.5 (1 + (A - max_fpr**2 / 2) / (max_fpr - max_fpr**2 / 2))``,
    so that a random ranking scores 0.5 and a perfect one 1 (McClish,
    "Analyzing a Portion of the ROC Curve", Medical Decision Making, 1989), as
    scikit-learn's ``roc_auc_score(max_fpr=...)`` does.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Two distinct label values (numbers, bools or strings). A column
        vector of shape (n, 1) is raveled.
    y_score : array-like of shape (n,)
        Real-valued scores, larger meaning "more positive". Must be finite.
    pos_label : scalar, optional
        The positive label. Default: the larger of the two labels (1 for
        {-1, +1} or {0, 1}, True for bools, the later string in sort order).
    sample_weight : array-like of shape (n,), optional
        Non-negative finite weights, not all zero; an integer weight k counts
        the sample k times and weight 0 ignores it. Each class needs a
        positive total weight.
    max_fpr : float in (0, 1], optional
        Standardised partial AUC over false positive rates up to ``max_fpr``
        (``max_fpr=1`` is the full AUC).

    Returns
    -------
    float
        The AUC in [0, 1]; 0.5 if all scores are tied.

    Raises
    ------
    ValueError
        Different lengths, empty input, NaN/inf scores, more than two labels,
        only one class present, 2-D input, unknown ``pos_label``; negative,
        NaN, infinite or all-zero weights, weights of the wrong length, a class
        whose weights are all zero; ``max_fpr`` outside (0, 1].

    Examples
    --------
    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], sample_weight=[1, 1, 0, 1])
    1.0
    """
    max_fpr = _check_max_fpr(max_fpr)
    pos, neg, w_pos, w_neg = _split_sorted(y_true, y_score, pos_label, "roc_auc",
                                           sample_weight)
    if w_pos is None and max_fpr in (None, 1.0):
        return float(_k.auc_sorted(pos, neg))
    fp, tp, _ = _curve(pos, neg, w_pos, w_neg)
    fpr, tpr = fp / fp[-1], tp / tp[-1]
    if max_fpr in (None, 1.0):
        return _area(fpr, tpr)
    stop = int(np.searchsorted(fpr, max_fpr, "right"))  # fpr[0] = 0 <= max_fpr < 1
    at = np.interp(max_fpr, fpr[stop - 1:stop + 1], tpr[stop - 1:stop + 1])
    partial = _area(np.append(fpr[:stop], max_fpr), np.append(tpr[:stop], at))
    chance = 0.5 * max_fpr ** 2
    return 0.5 * (1.0 + (partial - chance) / (max_fpr - chance))


def roc_curve(
    y_true: ArrayLike,
    y_score: ArrayLike,
    pos_label: Any = None,
    *,
    sample_weight: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve with one point per distinct score.

    Ties count 1/2 (a tied group always falls on one side of a threshold, so the
    trapezoidal area under this curve equals :func:`roc_auc`). With
    ``sample_weight`` the rates are fractions of each class's total weight, and
    scores held only by samples of weight 0 give no point.

    Parameters
    ----------
    y_true, y_score, pos_label, sample_weight
        As in :func:`roc_auc`.

    Returns
    -------
    fpr, tpr, thresholds : ndarray of float64, shape (n_distinct_scores + 1,)
        Point 0 is (0, 0) with threshold ``+inf``; point k >= 1 belongs to the
        k-th largest distinct score ``thresholds[k]`` and is obtained by
        predicting positive iff ``score >= thresholds[k]``. The last point is
        (1, 1). No collinear points are dropped.

    Raises
    ------
    ValueError
        As :func:`roc_auc`.

    Examples
    --------
    >>> fpr, tpr, thr = roc_curve([0, 1, 1], [0.2, 0.2, 0.9])
    >>> fpr.tolist(), tpr.tolist(), thr.tolist()
    ([0.0, 0.0, 1.0], [0.0, 0.5, 1.0], [inf, 0.9, 0.2])
    """
    pos, neg, w_pos, w_neg = _split_sorted(y_true, y_score, pos_label, "roc_curve",
                                           sample_weight)
    fp, tp, thr = _curve(pos, neg, w_pos, w_neg)
    # true division (not * 1/n): correctly rounded, exact end points
    return fp / fp[-1], tp / tp[-1], thr.copy()


def precision_at_k(
    y_true: ArrayLike,
    y_score: ArrayLike,
    k: float,
    pos_label: Any = None,
    *,
    sample_weight: ArrayLike | None = None,
) -> float:
    """Precision among the ``k`` highest-scored samples (top-k precision).

    The fraction of positives among the ``k`` samples ranked first. Ties: when
    the k-th place falls inside a group of tied scores, the group contributes
    the places left in proportion to its composition (``r`` places from a tied
    group of ``p`` positives and ``q`` negatives count ``r p / (p + q)``
    positives): the expected precision when tied samples are ordered at random,
    so the result does not depend on the input order.

    With ``sample_weight`` a sample of weight ``w`` counts as ``w`` samples
    (integer weights = repeated rows): the top k is the highest-scored weight
    mass ``k``.

    Parameters
    ----------
    y_true, y_score, pos_label, sample_weight
        As in :func:`roc_auc`.
    k : int or float
        Number of top-ranked samples (weight mass with ``sample_weight``),
        ``0 < k <=`` the number of samples (their total weight).

    Returns
    -------
    float
        The precision in [0, 1].

    Raises
    ------
    ValueError
        As :func:`roc_auc`; also for ``k`` not in ``(0, n]``.

    Examples
    --------
    >>> precision_at_k([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], k=2)
    0.5
    >>> precision_at_k([0, 1, 1, 0], [0.5, 0.5, 0.5, 0.1], k=2)
    0.6666666666666666
    """
    if (isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Real)
            or not np.isfinite(k) or k <= 0):
        raise ValueError(f"precision_at_k: k must be a number > 0, got {k!r}")
    pos, neg, w_pos, w_neg = _split_sorted(y_true, y_score, pos_label, "precision_at_k",
                                           sample_weight)
    fp, tp, _ = _curve(pos, neg, w_pos, w_neg)
    taken = fp + tp
    if k > taken[-1]:
        raise ValueError(
            f"precision_at_k: k={k!r} exceeds the number of samples "
            f"({taken[-1]:g}{', their total weight' if w_pos is not None else ''}); "
            f"pass k <= {taken[-1]:g}."
        )
    g = int(np.searchsorted(taken, k, "left"))  # first point with >= k samples; g >= 1
    share = (k - taken[g - 1]) / (taken[g] - taken[g - 1])
    return float((tp[g - 1] + share * (tp[g] - tp[g - 1])) / k)


def optroc_accuracy(
    y_true: ArrayLike,
    y_score: ArrayLike,
    pos_label: Any = None,
    slope: float | None = None,
    return_threshold: bool = False,
) -> float | tuple[float, float]:
    """Accuracy at the optimal operating point of the ROC curve (OPTROC).

    The accuracy Khalid (2019, Sec. 4.5) reports "at the optimal operating point
    of the ROC curve", read as MATLAB ``perfcurve``'s OPTROCPT with unit costs
    (the dissertation's experiments ran in MATLAB and do not define it further).

    Among the ROC points of :func:`roc_curve` (both end points included) the
    one maximising ``TPR - slope * FPR`` is chosen; the first maximiser in the
    sweep from (0, 0) wins ties (with a user-given ``slope``, objectives
    within a relative 1e-13 of each other count as tied, absorbing rounding). The accuracy ``(TP + TN) / (n+ + n-)`` at that
    point is returned. With the default ``slope = n- / n+`` this is the
    maximum accuracy over all thresholds.

    Parameters
    ----------
    y_true, y_score, pos_label
        As in :func:`roc_auc`.
    slope : float, optional
        Cost slope S >= 0 of the iso-performance lines. Default ``n- / n+``.
    return_threshold : bool, default False
        Also return a threshold ``t`` such that predicting positive iff
        ``score > t`` reproduces the chosen point on these scores: the
        midpoint between the score of the last included tied group and the
        next lower distinct score; the max score for the all-negative point
        (0, 0); ``min score - 1.0`` for the all-positive point (1, 1) (or the
        next float below the min score if ``- 1.0`` is lost to rounding).

    Returns
    -------
    accuracy : float
        Or ``(accuracy, threshold)`` if ``return_threshold``.

    Raises
    ------
    ValueError
        As :func:`roc_auc`; also for a negative or non-finite ``slope``.

    Examples
    --------
    >>> optroc_accuracy([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], return_threshold=True)
    (0.75, 0.6000000000000001)
    """
    if slope is not None:
        if (
            isinstance(slope, (bool, np.bool_))
            or not isinstance(slope, numbers.Real)
            or not np.isfinite(slope)
            or slope < 0
        ):
            raise ValueError(
                f"optroc_accuracy: slope must be a finite real number >= 0, got "
                f"{slope!r}; pass e.g. slope=1.0 or leave slope=None (n-/n+)."
            )
    pos, neg, _, _ = _split_sorted(y_true, y_score, pos_label, "optroc_accuracy")
    acc, thr = optroc_of_sorted(pos, neg, slope)
    if return_threshold:
        return acc, thr
    return acc


def sorted_classes(y, scores):
    """The scores of the positive (``y > 0``) and the negative rows (``y`` in
    {-1, +1}, ``scores`` finite), each sorted ascending, ``-0.0`` as ``+0.0``: one
    pass that splits them, one sort per class, the arrays :func:`optroc_accuracy`
    sorts (for the learners' threshold, which also checks a pair loss on them)."""
    s = np.ascontiguousarray(scores, dtype=np.float64)
    y = np.asarray(y)
    if s.shape[0] == 0:
        return s.copy(), s.copy()
    buf = np.empty(s.shape[0], dtype=np.float64)
    code, n_a, _, bad = _k.split_by_label(_labels_for_kernel(y, "sorted_classes"), s, buf)
    if code != _k.SPLIT_OK:
        raise ValueError(f"sorted_classes: labels must be -1 / +1 and scores finite "
                         f"(row {bad}: label {y[bad]!r}, score {s[bad]!r})")
    first, second = buf[:n_a], buf[n_a:]
    pos, neg = (first, second) if y[0] > 0 else (second, first)
    pos.sort()
    neg.sort()
    return pos, neg


def auc_of_sorted(pos, neg):
    """:func:`roc_auc` (ties count 1/2) from the classes' finite float64 scores, each
    sorted ascending and both non-empty (as :func:`sorted_classes` gives them)."""
    return float(_k.auc_sorted(pos, neg))


def optroc_of_sorted(pos, neg, slope=None):
    """``(accuracy, threshold)`` of :func:`optroc_accuracy` from the classes'
    finite float64 scores, each sorted ascending and both non-empty (for callers
    that sorted them already: the learners' threshold shares the sort with its
    divergence check)."""
    n_pos, n_neg = pos.shape[0], neg.shape[0]
    # maximise TPR - S*FPR  <=>  maximise TP - c*FP with c = S n+ / n-;
    # the default slope gives c = 1 exactly (integer objective, no rounding).
    # With a user slope, c carries rounding error, so objectives that are
    # equal in exact arithmetic may differ by a few ulps: differences below
    # 1e-13 (relative to the objective's range) count as ties.
    if slope is None:
        c, tol = 1.0, 0.0
    else:
        c = float(slope) * n_pos / n_neg
        tol = 1e-13 * (n_pos + c * n_neg)
    tp, fp, thr = _k.optroc_sorted(pos, neg, c, tol)
    return float((tp + n_neg - fp) / (n_pos + n_neg)), float(thr)
