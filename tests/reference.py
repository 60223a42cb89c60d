"""Slow, plainly written reference implementations used by the test-suite.

Every function here favours obviousness over speed: it follows the formula of
ALGORITHMS.md literally so the fast code in ``aucopt`` can be checked against
it. Labels are in {-1, +1} or {0, 1} (positive = the value 1); scores are
finite floats. Keep this a flat module of documented functions; append new
references at the end.
"""
from fractions import Fraction

import numpy as np


def _pos_mask(y):
    """Boolean mask of the positives for labels in {-1, +1} or {0, 1}."""
    y = np.asarray(y)
    values = set(np.unique(y).tolist())
    assert values <= {-1, 1} or values <= {0, 1}, values
    return y == 1


def auc_pairs(y, s):
    """Exact AUC by counting every (positive, negative) pair: O(n+ n-) time.

    ALGORITHMS.md 1.1: ``AUC = 1/(n+ n-) sum_{i pos} sum_{j neg}
    (I[s_i > s_j] + 0.5 I[s_i = s_j])``. The pair count is accumulated in
    Python integers (wins count 2, ties count 1) so the only rounding is the
    final division.
    """
    pos = _pos_mask(y)
    s = np.asarray(s, dtype=float)
    sp = s[pos].tolist()
    sn = s[~pos].tolist()
    twice = 0
    for a in sp:
        for b in sn:
            if a > b:
                twice += 2
            elif a == b:
                twice += 1
    return twice / (2 * len(sp) * len(sn))


def roc_points_bruteforce(y, s):
    """ROC points ``(fpr, tpr, thresholds)`` by trying every threshold.

    ALGORITHMS.md 1.2: the first point is (0, 0) with threshold +inf, then for
    each distinct score ``t`` in decreasing order the point obtained by
    predicting positive iff ``score >= t``. Each point is recomputed from
    scratch over all samples (O(n * distinct) time).
    """
    pos = _pos_mask(y)
    s = np.asarray(s, dtype=float)
    n_pos = int(pos.sum())
    n_neg = len(s) - n_pos
    fpr, tpr, thr = [0.0], [0.0], [np.inf]
    for t in sorted(set(s.tolist()), reverse=True):
        pred = s >= t
        tp = int(np.sum(pred & pos))
        fp = int(np.sum(pred & ~pos))
        fpr.append(fp / n_neg)
        tpr.append(tp / n_pos)
        thr.append(t)
    return np.array(fpr), np.array(tpr), np.array(thr)


def optroc_bruteforce(y, s, slope=None):
    """OPTROC accuracy and threshold by trying every operating point.

    Candidates (ALGORITHMS.md 1.2): predict positive iff ``score > t`` with
    ``t`` = the max score (all negative), every midpoint between consecutive
    distinct scores, and ``min score - 1`` (all positive), visited from the
    all-negative end. The first candidate maximising ``TPR - slope * FPR``
    (default slope n-/n+; exact rational arithmetic) wins; returns ``(accuracy, t)`` with accuracy
    ``(TP + TN) / n`` recounted from scratch at that threshold.
    """
    pos = _pos_mask(y)
    s = np.asarray(s, dtype=float)
    n = len(s)
    n_pos = int(pos.sum())
    n_neg = n - n_pos
    # exact rationals: the default slope n-/n+, a float slope at its shortest
    # decimal repr (slope=0.3 means 3/10, so TPR - 0.3 FPR ties stay ties)
    slope = Fraction(n_neg, n_pos) if slope is None else Fraction(repr(float(slope)))
    distinct = sorted(set(s.tolist()), reverse=True)
    cands = [distinct[0]]
    for hi, lo in zip(distinct[:-1], distinct[1:]):
        t = (hi + lo) / 2
        if not lo <= t < hi:  # adjacent floats: the midpoint rounds onto hi
            t = lo
        cands.append(t)
    cands.append(distinct[-1] - 1.0)
    best, best_t = None, None
    for t in cands:
        pred = s > t
        tp = int(np.sum(pred & pos))
        fp = int(np.sum(pred & ~pos))
        obj = Fraction(tp, n_pos) - slope * Fraction(fp, n_neg)  # exact
        if best is None or obj > best:
            best, best_t = obj, t
    pred = s > best_t
    acc = (int(np.sum(pred & pos)) + int(np.sum(~pred & ~pos))) / n
    return acc, best_t


def sam_steps(X, pos_rows, neg_rows, lam, t0, rskip, w=None, t=0, rcount=None):
    """SAM / SVMSGD2 on pairs, one plainly written step at a time (dissertation 000,
    Sec. 6.3, Alg. 10 without averaging). ``X`` dense; the difference z is formed.

    Returns ``(w, t, rcount)``.
    """
    X = np.asarray(X, dtype=np.float64)
    w = np.zeros(X.shape[1]) if w is None else np.array(w, dtype=np.float64)
    rcount = rskip if rcount is None else rcount
    for i, j in zip(pos_rows, neg_rows):
        t += 1
        eta = 1.0 / (lam * (t + t0))
        z = X[i] - X[j]
        if w @ z < 1.0:
            w = w + eta * z
        rcount -= 1
        if rcount <= 0:
            r = 1.0 - rskip / (t + t0)
            if r < 0.8:
                r = (1.0 - 1.0 / (t + t0)) ** rskip
            w = r * w
            rcount = rskip
    return w, t, rcount
