# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Sweeps behind ``aucopt.metrics`` (AUC with ties counted 1/2, ROC curve, OPTROC accuracy).

Design: one pass over ``(y, s)`` splits the scores into the two classes (and
validates labels and scores on the way); the two halves are then sorted
separately with ``ndarray.sort`` (numpy's vectorised quicksort, several times
faster than ``argsort``); finally a linear merge of the two sorted runs visits
the tied groups of the pooled sample.  Ties never need a stable order because
every sweep works group by group.

The AUC numerator is a 64-bit integer, so the unweighted AUC is exact for n
up to ~2**31 positives and negatives (``2*#greater + #equal`` fits in int64 for
n up to 1e9 and is exactly representable in float64 for n+ n- up to 2**52).
The curve sweeps sum counts (or sample weights) in float64: whole counts stay
exact below 2**53 rows.
"""
from libc.math cimport nextafter, INFINITY

ctypedef fused label_t:
    double
    float
    signed char
    short
    int
    long long
    unsigned char
    unsigned short
    unsigned int
    unsigned long long


# Return codes of split_by_label.
SPLIT_OK = 0
SPLIT_THIRD_LABEL = 1
SPLIT_NAN_LABEL = 2
SPLIT_BAD_SCORE = 3


cdef inline bint _is_nan(label_t v) noexcept nogil:
    if label_t is double or label_t is float:
        return v != v
    else:
        return False


def split_by_label(const label_t[::1] y, const double[::1] s, double[::1] buf):
    """Split ``s`` by the two values of ``y`` into ``buf`` (len(buf) == len(s) >= 1).

    The value of ``y[0]`` ("class A") fills ``buf`` from the front, the other
    value ("class B") fills it from the back, so on return class A scores are
    ``buf[:n_a]`` and class B scores are ``buf[n_a:]``.  ``-0.0`` is stored as
    ``+0.0``.  Labels and scores are validated in the same pass.

    Returns ``(code, n_a, idx_b, bad_index)``: ``code`` is one of the
    ``SPLIT_*`` constants, ``idx_b`` the index of the first class B label (-1
    if y holds a single value) and ``bad_index`` the offending position when
    ``code != SPLIT_OK`` (-1 otherwise).
    """
    cdef Py_ssize_t n = y.shape[0]
    cdef Py_ssize_t i, front = 0, back = n
    cdef Py_ssize_t idx_b = -1, bad = -1
    cdef int code = 0
    cdef label_t a, b, v
    cdef double x
    cdef bint have_b = False
    a = y[0]
    b = a
    if _is_nan(a):
        return SPLIT_NAN_LABEL, 0, -1, 0
    with nogil:
        for i in range(n):
            v = y[i]
            x = s[i]
            if not (x - x == 0.0):          # NaN or +-inf
                code = 3
                bad = i
                break
            x = x + 0.0                     # -0.0 -> +0.0
            if v == a:
                buf[front] = x
                front += 1
            elif have_b and v == b:
                back -= 1
                buf[back] = x
            elif _is_nan(v):
                code = 2
                bad = i
                break
            elif not have_b:
                have_b = True
                b = v
                idx_b = i
                back -= 1
                buf[back] = x
            else:
                code = 1
                bad = i
                break
    return code, front, idx_b, bad


def auc_sorted(const double[::1] pos, const double[::1] neg):
    """Mann-Whitney AUC from ascending-sorted positive and negative scores.

    Sweeps the tied groups of the pooled sample in ascending order; a group
    holding ``p`` positives and ``q`` negatives above ``j`` lower negatives
    contributes ``p * (2 j + q)`` to ``2 * (#{s_i > s_j} + 0.5 #{s_i = s_j})``.
    Exact integer arithmetic; one rounding in the final division.
    """
    cdef Py_ssize_t n_pos = pos.shape[0], n_neg = neg.shape[0]
    cdef Py_ssize_t i = 0, j = 0, i0, j0
    cdef long long num = 0
    cdef double v
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    with nogil:
        while i < n_pos:
            v = pos[i]
            i0 = i
            i += 1
            while i < n_pos and pos[i] == v:
                i += 1
            while j < n_neg and neg[j] < v:
                j += 1
            j0 = j
            while j < n_neg and neg[j] == v:
                j += 1
            num += <long long>(i - i0) * <long long>(j0 + j)
    return <double>num / (2.0 * <double>n_pos * <double>n_neg)


cdef inline double _top(const double* pos, Py_ssize_t i,
                        const double* neg, Py_ssize_t j) noexcept nogil:
    """Largest score not yet swept: ``pos[0..i]`` and ``neg[0..j]`` remain (i or j >= 0)."""
    if i < 0:
        return neg[j]
    if j < 0 or pos[i] >= neg[j]:
        return pos[i]
    return neg[j]


cdef inline Py_ssize_t _take_group(const double* a, const double* w, Py_ssize_t i,
                                   double v, double* total) noexcept nogil:
    """Sweep the entries equal to ``v`` at the top of ``a[0..i]``, adding their
    weights ``w`` (1 each when ``w`` is NULL) to ``total``; returns the new top.
    Unit weights keep the sums whole numbers, exact in float64 below 2**53."""
    while i >= 0 and a[i] == v:
        total[0] += w[i] if w != NULL else 1.0
        i -= 1
    return i


def roc_sorted(const double[::1] pos, const double[::1] neg,
               double[::1] fp_sum, double[::1] tp_sum, double[::1] thr,
               const double[::1] pos_weight=None, const double[::1] neg_weight=None):
    """Fill the unnormalised ROC curve from ascending-sorted class scores.

    Point 0 is (0, 0) with threshold +inf; then one point per distinct score,
    in decreasing order, after including every score >= that threshold:
    ``fp_sum`` / ``tp_sum`` receive the negatives' / positives' count (or their
    weight, given ``pos_weight`` / ``neg_weight`` aligned with ``pos`` / ``neg``)
    at or above it, so the last point holds the class totals.  The output
    arrays need room for ``len(pos) + len(neg) + 1`` points; returns the number
    of points written.
    """
    cdef Py_ssize_t n_pos = pos.shape[0], n_neg = neg.shape[0]
    cdef Py_ssize_t i = n_pos - 1, j = n_neg - 1, k = 1
    cdef double tp = 0.0, fp = 0.0
    cdef double v
    cdef const double* p_pos = &pos[0] if n_pos else NULL
    cdef const double* p_neg = &neg[0] if n_neg else NULL
    cdef const double* w_pos = NULL
    cdef const double* w_neg = NULL
    if pos_weight is not None and n_pos:
        w_pos = &pos_weight[0]
    if neg_weight is not None and n_neg:
        w_neg = &neg_weight[0]
    fp_sum[0] = 0.0
    tp_sum[0] = 0.0
    thr[0] = INFINITY
    with nogil:
        while i >= 0 or j >= 0:
            v = _top(p_pos, i, p_neg, j)
            i = _take_group(p_pos, w_pos, i, v, &tp)
            j = _take_group(p_neg, w_neg, j, v, &fp)
            fp_sum[k] = fp
            tp_sum[k] = tp
            thr[k] = v
            k += 1
    return k


cdef inline double _midpoint(double hi, double lo) noexcept nogil:
    """A value m with lo <= m < hi (lo < hi), halfway when representable."""
    cdef double m = 0.5 * hi + 0.5 * lo
    if not (m < hi) or m < lo:
        m = lo
    return m


def optroc_sorted(const double[::1] pos, const double[::1] neg, double c, double tol):
    """Best ROC operating point from ascending-sorted class scores.

    Maximises ``TP - c * FP`` (that is ``n+ (TPR - S FPR)`` with
    ``c = S n+ / n-``) over the point (0, 0) and the point after each tied
    group in decreasing score order; the first maximiser in that sweep wins.
    A later point replaces the best one only if its objective is larger by
    more than ``tol`` (absorbs the rounding of ``c``; pass 0 when ``c`` is an
    integer, making the comparison exact).

    Returns ``(tp, fp, threshold)`` of the chosen point, where predicting
    positive iff ``score > threshold`` reproduces it on these scores.
    """
    cdef Py_ssize_t n_pos = pos.shape[0], n_neg = neg.shape[0]
    cdef Py_ssize_t i = n_pos - 1, j = n_neg - 1
    cdef double tp = 0.0, fp = 0.0, best_tp = 0.0, best_fp = 0.0
    cdef double v, obj, best = 0.0, best_v = 0.0, nxt, thr, s_max, s_min
    cdef bint best_is_start = True, best_has_next = False
    cdef double best_next = 0.0
    cdef const double* p_pos = &pos[0] if n_pos else NULL
    cdef const double* p_neg = &neg[0] if n_neg else NULL
    with nogil:
        while i >= 0 or j >= 0:
            v = _top(p_pos, i, p_neg, j)
            i = _take_group(p_pos, NULL, i, v, &tp)
            j = _take_group(p_neg, NULL, j, v, &fp)
            obj = tp - c * fp
            if obj > best + tol:
                best = obj
                best_tp = tp
                best_fp = fp
                best_v = v
                best_is_start = False
                best_has_next = i >= 0 or j >= 0
                if best_has_next:
                    best_next = _top(p_pos, i, p_neg, j)
    # extremes of the pooled sample
    s_max = _top(p_pos, n_pos - 1, p_neg, n_neg - 1)
    if n_pos and n_neg:
        s_min = pos[0] if pos[0] <= neg[0] else neg[0]
    else:
        s_min = pos[0] if n_pos else neg[0]
    if best_is_start:
        thr = s_max                         # nothing is > max score
    elif not best_has_next:
        thr = s_min - 1.0                   # everything is > min - 1
        if not (thr < s_min):               # |s_min| too large for -1.0 to register
            thr = nextafter(s_min, -INFINITY)
    else:
        thr = _midpoint(best_v, best_next)
    return <long long>best_tp, <long long>best_fp, thr
