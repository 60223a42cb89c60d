"""Tests for aucopt.metrics: AUC, ROC curve, OPTROC, weights, partial AUC, top k."""
import numpy as np
import pytest

from aucopt.metrics import (optroc_accuracy, optroc_of_sorted, precision_at_k, roc_auc, roc_curve,
                            sorted_classes)
from reference import (auc_pairs, auc_pairs_weighted, optroc_bruteforce,
                       precision_at_k_bruteforce, roc_points_bruteforce)


def _random_case(rng):
    """A small random binary problem; often heavily tied, both classes present."""
    n = int(rng.integers(2, 60))
    y = (rng.random(n) < rng.uniform(0.05, 0.95)).astype(np.int64)
    y[rng.choice(n, 2, replace=False)] = [0, 1]
    kind = rng.integers(4)
    if kind == 0:
        s = rng.normal(size=n)
    elif kind == 1:
        s = rng.integers(0, int(rng.integers(1, 5)), size=n).astype(float)  # heavy ties
    elif kind == 2:
        s = np.round(rng.normal(size=n), 1)
    else:
        s = rng.integers(-3, 3, size=n) * 0.25 + 1e3
    if rng.random() < 0.5:
        y = 2 * y - 1  # {-1, +1}
    return y, s


CASES = [_random_case(np.random.default_rng(seed)) for seed in range(300)]


# --------------------------------------------------------------------------- AUC
def test_roc_auc_matches_pair_count_exactly():
    for y, s in CASES:
        assert roc_auc(y, s) == auc_pairs(y, s), (y, s)


def test_roc_auc_special_rankings():
    y = np.array([0, 0, 1, 0, 1, 1])
    assert roc_auc(y, np.full(6, 3.7)) == 0.5
    assert roc_auc(y, y * 2.0 - 5) == 1.0
    assert roc_auc(y, -y.astype(float)) == 0.0
    assert roc_auc([0, 1], [1.0, 1.0]) == 0.5
    # -0.0 and +0.0 are the same score (one tie)
    assert roc_auc([0, 1], [-0.0, 0.0]) == 0.5


def test_roc_auc_symmetries():
    for y, s in CASES[:100]:
        a = roc_auc(y, s)
        assert roc_auc(y, -s) == pytest.approx(1 - a, abs=1e-15)
        assert roc_auc(y, s, pos_label=y.min()) == pytest.approx(1 - a, abs=1e-15)
        assert roc_auc(y, np.exp(s / 10)) == a  # strictly monotone transform


def test_label_types_and_pos_label():
    s = np.array([0.1, 0.4, 0.35, 0.8, 0.2])
    y01 = np.array([0, 0, 1, 1, 0])
    expected = auc_pairs(y01, s)
    for y in (
        y01,
        2 * y01 - 1,
        y01.astype(bool),
        y01.astype(np.float32),
        y01.astype(np.uint8),
        y01.astype(np.int16),
        (y01 + 7).astype(np.uint64),
        y01.astype(np.float16),  # not a kernel dtype: goes through np.unique
        y01.astype(">i8"),  # non-native byte order
        np.where(y01 == 1, "yes", "no"),  # "yes" > "no"
        np.where(y01 == 1, "yes", "no").astype(object),
        [bool(v) for v in y01],
    ):
        assert roc_auc(y, s) == expected, y
    # strings: larger label is positive unless pos_label says otherwise
    ys = np.where(y01 == 1, "a", "b")
    assert roc_auc(ys, s) == auc_pairs(1 - y01, s)
    assert roc_auc(ys, s, pos_label="a") == expected
    assert roc_auc(2 * y01 - 1, s, pos_label=-1) == auc_pairs(1 - y01, s)
    assert roc_auc(y01.astype(float), s, pos_label=1) == expected
    assert roc_auc(y01, s, pos_label=True) == expected
    # first label being the positive one
    assert roc_auc(y01[::-1].copy(), s[::-1].copy()) == expected


def test_readonly_lists_and_column_vectors():
    y = np.array([0, 1, 1, 0, 1])
    s = np.array([0.3, 0.2, 0.9, 0.1, 0.5])
    y.setflags(write=False)
    s.setflags(write=False)
    a = auc_pairs(y, s)
    assert roc_auc(y, s) == a
    assert roc_auc(y.tolist(), s.tolist()) == a
    assert roc_auc(y[:, None], s[:, None]) == a
    assert roc_auc(y, s.astype(np.float32)) == a
    assert roc_auc(y, s[::-1][::-1]) == a  # non-contiguous views
    assert roc_auc(y[::2], s[::2]) == auc_pairs(y[::2], s[::2])
    fpr, tpr, _ = roc_curve(y, s)
    assert optroc_accuracy(y, s) == optroc_bruteforce(y, s)[0]


def test_roc_auc_large_exact():
    # 2e6 samples on 7 score levels: the AUC numerator is ~1e12, checked
    # against the closed form over groups computed in Python integers.
    rng = np.random.default_rng(1)
    n = 2_000_000
    s = rng.integers(0, 7, size=n).astype(float)
    y = (rng.random(n) < 0.3).astype(np.int8)
    twice, neg_below = 0, 0
    for v in range(7):
        p = int(np.count_nonzero(y[s == v]))
        q = int(np.count_nonzero(s == v)) - p
        twice += p * (2 * neg_below + q)
        neg_below += q
    n_pos = int(y.sum())
    assert roc_auc(y, s) == twice / (2 * n_pos * (n - n_pos))


# --------------------------------------------------------------------- ROC curve
def test_roc_curve_matches_bruteforce_exactly():
    for y, s in CASES:
        fpr, tpr, thr = roc_curve(y, s)
        rf, rt, rth = roc_points_bruteforce(y, s)
        for got, want in ((fpr, rf), (tpr, rt), (thr, rth)):
            assert got.dtype == np.float64
            np.testing.assert_array_equal(got, want)
        # trapezoidal area under the curve is the AUC (ties as 1/2)
        assert np.trapezoid(tpr, fpr) == pytest.approx(roc_auc(y, s), abs=1e-12)


def test_roc_curve_shape():
    fpr, tpr, thr = roc_curve([0, 1, 1, 0], [0.5, 0.5, 0.5, 0.5])
    assert fpr.tolist() == [0.0, 1.0] and tpr.tolist() == [0.0, 1.0]
    assert thr.tolist() == [np.inf, 0.5]
    fpr, tpr, thr = roc_curve(["n", "p", "p"], [0.2, 0.2, 0.9])
    assert fpr.tolist() == [0.0, 0.0, 1.0]
    assert tpr.tolist() == [0.0, 0.5, 1.0]
    assert thr.tolist() == [np.inf, 0.9, 0.2]


# ------------------------------------------------------------------------ OPTROC
def _check_threshold(y, s, acc, thr):
    pos = y == y.max()
    pred = s > thr
    assert np.mean(pred == pos) == pytest.approx(acc, abs=1e-15)


def test_optroc_matches_bruteforce():
    for y, s in CASES:
        acc, thr = optroc_accuracy(y, s, return_threshold=True)
        racc, rthr = optroc_bruteforce(y, s)
        assert acc == racc
        assert thr == pytest.approx(rthr, rel=1e-14, abs=1e-14)
        assert optroc_accuracy(y, s) == acc
        _check_threshold(y, s, acc, thr)
        # default slope = max accuracy over all thresholds
        cuts = np.concatenate([[s.max()], np.unique(s) - 1e-9])
        best = max(np.mean((s > t) == (y == y.max())) for t in cuts)
        assert acc == pytest.approx(best, abs=1e-15)


@pytest.mark.parametrize("slope", [0.0, 0.3, 1.0, 2.5, 7.0])
def test_optroc_slopes_match_bruteforce(slope):
    for y, s in CASES[:150]:
        acc, thr = optroc_accuracy(y, s, slope=slope, return_threshold=True)
        racc, rthr = optroc_bruteforce(y, s, slope=slope)
        assert acc == racc, (y, s)
        assert thr == pytest.approx(rthr, rel=1e-14, abs=1e-14)
        _check_threshold(y, s, acc, thr)


def test_optroc_tie_rules_and_end_points():
    # perfect ranking: best point separates the classes; midpoint threshold
    assert optroc_accuracy([0, 0, 1, 1], [1.0, 2.0, 4.0, 8.0], return_threshold=True) == (1.0, 3.0)
    # all tied: (0,0) and (1,1) have equal objective -> the first one, (0,0)
    acc, thr = optroc_accuracy([0, 1, 1, 0, 0], [2.0] * 5, return_threshold=True)
    assert (acc, thr) == (0.6, 2.0)
    # a later point with the same objective loses: (after 4.0) beats (1, 1)
    acc, thr = optroc_accuracy([1, 1, 1, 0], [5.0, 4.0, 3.0, 3.0], return_threshold=True)
    assert (acc, thr) == (0.75, 3.5)
    # all-positive point chosen: threshold min - 1.0
    acc, thr = optroc_accuracy([0, 1, 1], [3.0, 1.0, 1.0], return_threshold=True)
    assert (acc, thr) == (2 / 3, 0.0)
    # min score so large that min - 1.0 == min: next float below instead
    acc, thr = optroc_accuracy([0, 1, 1], [3e20, 1e20, 1e20], return_threshold=True)
    assert acc == 2 / 3 and thr == np.nextafter(1e20, -np.inf)
    # slope 0.3, n+ = 40, n- = 12: the points (39, 11) and (40, 12) tie exactly
    # for 3/10; the rounding of 0.3 must not break the tie (first one wins)
    y = np.array([1] * 39 + [0] * 11 + [1, 0])
    s = np.array([2.0] * 50 + [1.0] * 2)
    acc, thr = optroc_accuracy(y, s, slope=0.3, return_threshold=True)
    assert (acc, thr) == (40 / 52, 1.5)
    # adjacent floats: the threshold still splits them
    hi = 1.0
    lo = np.nextafter(1.0, 0.0)
    acc, thr = optroc_accuracy([0, 1], [lo, hi], return_threshold=True)
    assert acc == 1.0 and lo <= thr < hi
    # reversed ranking: the all-negative point (first maximiser) wins
    acc, thr = optroc_accuracy([1, 1, 0, 0, 0], [1.0, 2.0, 3.0, 4.0, 5.0], return_threshold=True)
    assert (acc, thr) == (0.6, 5.0)


# ---------------------------------------------------------------------- sklearn
def test_against_sklearn():
    skm = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(7)
    for y, s in CASES[:100]:
        assert roc_auc(y, s) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
        fpr, tpr, thr = roc_curve(y, s)
        sf, st, sth = skm.roc_curve(y, s, drop_intermediate=False)
        np.testing.assert_allclose(fpr, sf, rtol=0, atol=1e-15)
        np.testing.assert_allclose(tpr, st, rtol=0, atol=1e-15)
        np.testing.assert_array_equal(thr[1:], sth[1:])
        assert thr[0] == np.inf
    n = 200_000
    s = np.round(rng.random(n), 3)
    y = rng.random(n) < 0.1
    assert abs(roc_auc(y, s) - skm.roc_auc_score(y, s)) <= 1e-12


# ------------------------------------------------------------------- hypothesis
try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is a test extra
    given = None

if given is not None:

    @st.composite
    def _problems(draw):
        n = draw(st.integers(2, 40))
        y = draw(st.lists(st.sampled_from([-1, 1]), min_size=n, max_size=n))
        y[0], y[1] = -1, 1
        scores = st.one_of(
            st.integers(-3, 3).map(float),
            st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
        )
        s = draw(st.lists(scores, min_size=n, max_size=n))
        return np.array(y), np.array(s, dtype=float)

    @settings(max_examples=150, deadline=None)
    @given(_problems())
    def test_hypothesis_auc_and_curve(problem):
        y, s = problem
        a = roc_auc(y, s)
        assert a == auc_pairs(y, s)
        fpr, tpr, thr = roc_curve(y, s)
        assert fpr[0] == tpr[0] == 0.0 and fpr[-1] == tpr[-1] == 1.0
        assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
        assert np.all(np.diff(thr) < 0)
        assert np.trapezoid(tpr, fpr) == pytest.approx(a, abs=1e-12)
        acc, t = optroc_accuracy(y, s, return_threshold=True)
        assert acc == optroc_bruteforce(y, s)[0]
        assert np.mean((s > t) == (y == 1)) == pytest.approx(acc, abs=1e-15)


def test_the_learners_sorted_classes_give_optroc_accuracy_exactly():
    """The threshold of a fit sorts each class once (``sorted_classes``) and reads
    the OPTROC point from them: the same accuracy and threshold bit for bit as
    :func:`optroc_accuracy`, signed zeros and ties included."""
    rng = np.random.default_rng(3)
    cases = list(CASES) + [
        (np.array([1, -1, 1, -1, -1]), np.array([-0.0, 0.0, 0.0, -0.0, -1.0])),
        (np.where(rng.random(500) < 0.2, 1, -1), np.round(rng.standard_normal(500), 1)),
        (np.where(rng.random(300) < 0.5, 1, -1), rng.standard_normal(300) * 1e-300)]
    for y, s in cases:
        y_pm = np.where(y == y.max(), 1, -1).astype(np.int8)
        pos, neg = sorted_classes(y_pm, s)
        assert np.array_equal(np.sort(np.concatenate([pos, neg])), np.sort(s + 0.0))
        assert np.all(np.diff(pos) >= 0) and np.all(np.diff(neg) >= 0)
        assert not np.signbit(pos[pos == 0]).any() and not np.signbit(neg[neg == 0]).any()
        got = optroc_of_sorted(pos, neg)
        want = optroc_accuracy(y, s, return_threshold=True)
        assert got == want and np.signbit(got[1]) == np.signbit(want[1])
    pos, neg = sorted_classes(np.array([-1, -1]), np.array([2.0, 1.0]))
    assert pos.size == 0 and list(neg) == [1.0, 2.0]
    with pytest.raises(ValueError, match="finite"):
        sorted_classes(np.array([1, -1]), np.array([np.nan, 1.0]))


# ------------------------------------------------------------------------ errors
@pytest.mark.parametrize("func", [roc_auc, roc_curve, optroc_accuracy])
@pytest.mark.parametrize(
    "y, s, match",
    [
        ([0, 1, 1], [0.1, 0.2], "different lengths"),
        ([], [], "empty input"),
        ([0, 1, 1], [0.1, np.nan, 0.3], "NaN or infinity"),
        ([0, 1, 1], [0.1, 0.2, np.inf], "NaN or infinity"),
        ([0, 1, 1], [0.1, 0.2, -np.inf], "NaN or infinity"),
        ([0, 1, 2], [0.1, 0.2, 0.3], "exactly two label values"),
        (["a", "b", "c"], [0.1, 0.2, 0.3], "exactly two label values"),
        ([0.0, 1.0, np.nan], [0.1, 0.2, 0.3], "y_true contains NaN"),
        (np.array([0.0, np.nan], dtype=np.float16), [0.1, 0.2], "y_true contains NaN"),
        ([np.nan, 1.0], [0.1, 0.2], "y_true contains NaN"),
        ([1, 1, 1], [0.1, 0.2, 0.3], "undefined when y_true contains only one class"),
        (np.zeros((2, 2)), np.zeros((2, 2)), "must be 1-D"),
        ([0, 1], np.zeros((2, 2)), "must be 1-D"),
        (1, 0.5, "must be 1-D"),
        ([0, 1], ["a", "b"], "y_score must be numeric"),
        ([0, 1], np.array([1 + 1j, 2]), "y_score must be numeric"),
        ([0, 1], np.array(["1", "x"], dtype=object), "could not be converted"),
        (np.array([1, "a"], dtype=object), [0.1, 0.2], "cannot be compared"),
    ],
)
def test_errors(func, y, s, match):
    with pytest.raises(ValueError, match=match):
        func(y, s)


def test_error_messages_name_the_function_and_fix():
    with pytest.raises(ValueError, match=r"^roc_auc is undefined when y_true contains only one class"):
        roc_auc([0, 0], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"^roc_curve: .*pass one score per label"):
        roc_curve([0, 1], [0.1])
    with pytest.raises(ValueError, match=r"pos_label=2 is not one of the labels"):
        roc_auc([0, 1], [0.1, 0.2], pos_label=2)
    with pytest.raises(ValueError, match=r"pos_label='1' is not one of the labels"):
        roc_auc([0, 1], [0.1, 0.2], pos_label="1")


@pytest.mark.parametrize("slope", [-1.0, np.nan, np.inf, "2", True])
def test_optroc_bad_slope(slope):
    with pytest.raises(ValueError, match="slope must be a finite real number"):
        optroc_accuracy([0, 1], [0.1, 0.2], slope=slope)


# ----------------------------------------------------- weights, partial AUC, top k
def _weighted_case(seed):
    y, s = CASES[seed]
    rng = np.random.default_rng(1000 + seed)
    w = rng.integers(0, 4, size=y.shape[0]).astype(float)
    w[np.flatnonzero(y == y.max())[0]] = 1.0  # both classes keep a positive weight
    w[np.flatnonzero(y == y.min())[0]] = 2.0
    return y, s, w


def test_weighted_auc_matches_weighted_pair_count():
    for seed in range(150):
        y, s, w = _weighted_case(seed)
        assert roc_auc(y, s, sample_weight=w) == pytest.approx(
            auc_pairs_weighted(y, s, w), abs=1e-13), seed
        frac = w * np.random.default_rng(seed).random(w.shape[0]) + w  # non-integer
        assert roc_auc(y, s, sample_weight=frac) == pytest.approx(
            auc_pairs_weighted(y, s, frac), abs=1e-13), seed


def test_integer_weights_equal_repeated_rows():
    for seed in range(100):
        y, s, w = _weighted_case(seed)
        k = w.astype(int)
        yr, sr = np.repeat(y, k), np.repeat(s, k)
        assert roc_auc(y, s, sample_weight=w) == pytest.approx(roc_auc(yr, sr), abs=1e-13)
        for max_fpr in (0.05, 0.3):
            assert roc_auc(y, s, sample_weight=w, max_fpr=max_fpr) == pytest.approx(
                roc_auc(yr, sr, max_fpr=max_fpr), abs=1e-13)
        # zero-weight rows give no ROC point: the curve of the repeated rows
        fpr, tpr, thr = roc_curve(y, s, sample_weight=w)
        rf, rt, rthr = roc_curve(yr, sr)
        np.testing.assert_allclose(fpr, rf, rtol=0, atol=1e-15)
        np.testing.assert_allclose(tpr, rt, rtol=0, atol=1e-15)
        np.testing.assert_array_equal(thr, rthr)
        top = max(1, int(k.sum()) // 3)
        assert precision_at_k(y, s, top, sample_weight=w) == pytest.approx(
            precision_at_k(yr, sr, top), abs=1e-13)


def test_unit_weights_and_full_max_fpr_give_the_exact_auc():
    for y, s in CASES[:50]:
        a = roc_auc(y, s)
        assert roc_auc(y, s, max_fpr=1.0) == a
        assert roc_auc(y, s, sample_weight=np.ones(len(y))) == pytest.approx(a, abs=1e-14)
        assert roc_auc(y, s, sample_weight=np.full(len(y), 3.5)) == pytest.approx(a, abs=1e-14)


def test_partial_auc_bounds():
    y = np.array([0, 0, 0, 1, 1, 1])
    for max_fpr in (0.01, 0.2, 0.5, 0.99):
        assert roc_auc(y, y.astype(float), max_fpr=max_fpr) == 1.0  # perfect ranking
        assert roc_auc(y, np.zeros(6), max_fpr=max_fpr) == pytest.approx(0.5, abs=1e-15)
        assert roc_auc(y, -y.astype(float), max_fpr=max_fpr) == pytest.approx(
            0.5 * (1 - max_fpr / (2 - max_fpr)), abs=1e-15)  # McClish's minimum


def test_weighted_and_partial_against_sklearn_on_1e5_tied_scores():
    skm = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(11)
    n = 100_000
    y = rng.random(n) < 0.2
    s = rng.integers(0, 40, n) + 3.0 * y * rng.integers(0, 3, n)  # about 50 distinct values
    w = rng.random(n) * 4
    w[rng.random(n) < 0.1] = 0.0
    for max_fpr in (None, 0.001, 0.05, 0.1, 0.37, 1.0):
        for weights in (None, w, np.round(w)):
            ours = roc_auc(y, s, sample_weight=weights, max_fpr=max_fpr)
            theirs = skm.roc_auc_score(y, s, sample_weight=weights, max_fpr=max_fpr)
            assert abs(ours - theirs) <= 1e-12, (max_fpr, ours, theirs)
    fpr, tpr, thr = roc_curve(y, s, sample_weight=w)
    sf, st, sth = skm.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    np.testing.assert_allclose(fpr, sf, rtol=0, atol=1e-12)
    np.testing.assert_allclose(tpr, st, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(thr[1:], sth[1:])


def test_precision_at_k_matches_random_tie_breaking():
    for y, s in CASES[:150]:
        n = len(y)
        for k in {1, max(1, n // 4), max(1, n // 2), n}:
            assert precision_at_k(y, s, k) == pytest.approx(
                precision_at_k_bruteforce(y, s, k), abs=1e-14)
    # the expectation over tie orders, checked by enumerating them
    y, s = np.array([0, 1, 1, 0, 1]), np.array([0.5, 0.5, 0.5, 0.9, 0.1])
    assert precision_at_k(y, s, 3) == pytest.approx((0 + 2 / 3 * 2) / 3, abs=1e-15)
    assert precision_at_k(y, s, 3, pos_label=0) == pytest.approx((1 + 2 / 3) / 3, abs=1e-15)


@pytest.mark.parametrize("w, match", [
    ([1.0, 2.0], "one weight per sample"),
    ([1.0, -1.0, 1.0], "finite and >= 0; entry 1"),
    ([1.0, np.nan, 1.0], "finite and >= 0; entry 1"),
    ([1.0, np.inf, 1.0], "finite and >= 0"),
    ([0.0, 0.0, 0.0], "zero everywhere"),
    ([0.0, 1.0, 1.0], "every negative sample has sample_weight 0"),
    ([1.0, 0.0, 0.0], "every positive sample has sample_weight 0"),
])
@pytest.mark.parametrize("func", [roc_auc, roc_curve,
                                  lambda y, s, **kw: precision_at_k(y, s, 1, **kw)])
def test_bad_sample_weight(func, w, match):
    with pytest.raises(ValueError, match=match):
        func([0, 1, 1], [0.1, 0.2, 0.3], sample_weight=w)
    with pytest.raises(TypeError, match="must hold real numbers"):
        func([0, 1, 1], [0.1, 0.2, 0.3], sample_weight=["a", "b", "c"])


@pytest.mark.parametrize("max_fpr", [0.0, -0.1, 1.5, np.nan, True, "0.1"])
def test_bad_max_fpr(max_fpr):
    with pytest.raises(ValueError, match=r"max_fpr must be a number in \(0, 1\]"):
        roc_auc([0, 1], [0.1, 0.2], max_fpr=max_fpr)


@pytest.mark.parametrize("k", [0, -1, 4, 3.5, np.nan, True, "2"])
def test_bad_k(k):
    with pytest.raises(ValueError, match="k"):
        precision_at_k([0, 1, 1], [0.1, 0.2, 0.3], k)
