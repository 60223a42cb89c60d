"""Every built-in learner passes scikit-learn's estimator checks (when installed)."""
import pytest

pytest.importorskip("sklearn")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import aucopt  # noqa: E402
from aucopt.registry import BUILTIN  # noqa: E402

# aucopt does not import scikit-learn, so its learners cannot inherit BaseEstimator
# (the "does not inherit" warning is filtered in pyproject.toml); the checks below
# are what that base class would guarantee.
def _learner(name):
    cls = aucopt.registry.get_class(name)
    seeded = "random_state" in cls._get_param_names()
    return cls(random_state=0) if seeded else cls()


LEARNERS = [_learner(name) for name, origin in aucopt.available().items()
            if origin == BUILTIN]


@parametrize_with_checks(LEARNERS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
