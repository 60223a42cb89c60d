"""The pair objectives the stopping rules and the divergence check evaluate from
scores, against the mean over every (positive, negative) pair."""
import numpy as np
import pytest

from aucopt.learners._objectives import mean_pair_hinge, mean_pair_square


def _pairs(s_pos, s_neg):
    return np.subtract.outer(np.asarray(s_pos, float), np.asarray(s_neg, float))


@pytest.mark.parametrize("seed", range(4))
def test_mean_pair_hinge_is_the_mean_over_all_pairs(seed):
    rng = np.random.default_rng(seed)
    # rounded scores: ties within and across the classes, margins exactly 1
    s_pos = np.round(rng.normal(0.5, 1.0, 37), 1)
    s_neg = np.round(rng.normal(0.0, 1.0, 53), 1)
    s_neg[:3] = -0.0
    want = np.maximum(0.0, 1.0 - _pairs(s_pos, s_neg)).mean()
    got = mean_pair_hinge(s_pos, s_neg)
    assert got == pytest.approx(want, rel=1e-12)
    # negatives already sorted (as the learners' threshold passes them; no second
    # sort is made): the same number bit for bit
    assert mean_pair_hinge(s_pos, np.sort(s_neg)) == got


def test_mean_pair_hinge_of_an_empty_class_is_zero():
    assert mean_pair_hinge([], [1.0, 2.0]) == 0.0
    assert mean_pair_hinge([1.0], []) == 0.0


def test_mean_pair_square_is_the_mean_over_all_pairs():
    rng = np.random.default_rng(0)
    s_pos, s_neg = rng.normal(0.5, 1.0, 41), rng.normal(0.0, 1.0, 29)
    want = ((1.0 - _pairs(s_pos, s_neg)) ** 2).mean()
    assert mean_pair_square(s_pos, s_neg) == pytest.approx(want, rel=1e-12)
