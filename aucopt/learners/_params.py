"""Parameter checks shared by the learners (raised at fit time, not in __init__)."""
import numbers

import numpy as np


def check_positive(name, value, *, allow_zero=False):
    """``value`` must be a real number > 0 (>= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    if not (value >= 0 if allow_zero else value > 0) or value != value or value == float("inf"):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")


def check_count(name, value, minimum=1):
    """``value`` must be an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")


def check_finite_coef(learner):
    """Raise if training diverged; the learner's transaction then restores the model."""
    if not np.isfinite(learner.coef_).all():
        raise FloatingPointError(
            f"{type(learner).__name__} diverged (non-finite weights); lower the step size "
            "or raise lam, or scale the features (aucopt.datasets.Scaler)")
