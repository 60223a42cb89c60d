"""Every built-in learner declares the grid GridSearch tries by default, in the units
of its data-derived defaults: the default in use lies inside the grid's range, on
data of any row scale (the grid moves with the rows as the default does)."""
import numpy as np
import pytest

import aucopt
from aucopt.model_selection import GridSearch
from aucopt.registry import BUILTIN, get_class

NAMES = sorted(name for name, origin in aucopt.available().items() if origin == BUILTIN)

# small feature maps keep the kernelized learners fast (their grids do not depend on it)
SMALL = {"nbam": {"n_components": 30}, "fbam": {"n_components": 30},
         "nasam": {"n_components": 30}, "fasam": {"n_components": 30},
         "npsam": {"n_components": 30}, "fcbr": {"n_components": 15},
         "foam": {"n_components": 15}, "noam": {"n_landmarks": 20}}


def _data(scale):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((120, 6))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(120) > 0.3, 1, -1)
    return scale * X, y


def _learner(name):
    params = dict(SMALL.get(name, {}))
    if "random_state" in get_class(name)._get_param_names():
        params["random_state"] = 0
    return aucopt.get(name, **params)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scale", [0.1, 30.0])
def test_the_default_in_use_lies_inside_the_search_space(name, scale):
    X, y = _data(scale)
    learner = _learner(name)
    space = learner.search_space(X)
    assert isinstance(space, dict) and space
    assert set(space) <= set(learner.get_params())
    model = _learner(name).fit(X, y)
    for key, values in space.items():
        values = np.asarray(values, dtype=float)
        assert values.size >= 3 and np.isfinite(values).all() and (values > 0).all()
        given = model.get_params()[key]
        used = model.__dict__[key + "_"] if isinstance(given, str) else given
        assert values.min() <= used <= values.max(), (key, used, values)


def test_grid_search_without_a_grid_uses_the_learner_search_space():
    X, y = _data(1.0)
    learner = _learner("cbr_diag")
    search = GridSearch(learner, cv=3, random_state=0).fit(X, y)
    tried = [p["C"] for p in search.cv_results_["params"]]
    assert tried == learner.search_space(X)["C"]


# The documented "auto" rules, recomputed from the rows with numpy: s is the mean
# squared row norm, n the number of rows (of the first training data).
AUTO_RULES = {
    "spam": ("lam", lambda s, n, X: np.median(np.sum(X * X, axis=1)) / (2 * n)),
    "sam": ("lam", lambda s, n, X: 3 * s / n),
    # ASAM: 0.5 s / n below 5,000 rows (these 120), PSAM's s min(1e-4, 1/n) above
    "asam": ("lam", lambda s, n, X: s * max(0.5 / n, min(1e-4, 1 / n))),
    "psam": ("lam", lambda s, n, X: s * min(1e-4, 1 / n)),
    "adadsgd": ("lam", lambda s, n, X: 1e-6 * s),
    "fsauc": ("R", lambda s, n, X: X.shape[1] ** 0.25 / (
        2 * np.sqrt(np.median(np.sum(X * X, axis=1))))),
}


@pytest.mark.parametrize("name", sorted(AUTO_RULES))
@pytest.mark.parametrize("scale", [0.1, 30.0])
def test_auto_parameters_follow_their_documented_rules(name, scale):
    X, y = _data(scale)
    key, rule = AUTO_RULES[name]
    model = _learner(name).fit(X, y)
    s = float(np.mean(np.sum(X * X, axis=1)))
    assert model.row_scale_ == pytest.approx(s, rel=1e-12)
    assert model.__dict__[key + "_"] == pytest.approx(rule(s, X.shape[0], X), rel=1e-12)
