"""The learner contract (aucopt.testing) over every registered built-in learner.

Family test files hold only what is family-specific; what every learner must do is
checked here once. A plugin author runs the same checks with
``aucopt.testing.check_learner`` (see the README); the plugin learner of the README
passes them (test at the end).
"""
import numpy as np
import pytest

import aucopt
from aucopt import testing
from aucopt.registry import BUILTIN, get_class


def _template(name):
    cls = get_class(name)
    params = cls().get_params()
    seeded = {"random_state": 0} if "random_state" in params else {}
    # The contract does not depend on the size of a kernel map: 32 components (fcbr:
    # 64 sin/cos features) instead of the 256 that n_components="auto" gives the
    # contract's 80 rows keep fcbr's O(M D^2) confidence-weighted steps, which go
    # through BLAS, from dominating the suite on a loaded machine (measured 25 s for
    # one check with 2 BLAS threads under load, against 0.2 s quiet)
    mapped = {"n_components": 32} if "n_components" in params else {}
    return cls(**seeded, **mapped)


NAMES = sorted(name for name, origin in aucopt.available().items() if origin == BUILTIN)

# parameter values each learner must refuse (at fit and partial_fit, model unchanged)
BAD_PARAMS = {
    "sam": [({"lam": 0.0}, ValueError), ({"lam": "big"}, TypeError), ({"rskip": 0}, ValueError),
            ({"n_epochs": 1.5}, TypeError), ({"t0": -1.0}, ValueError),
            ({"random_state": "x"}, TypeError)],
    "asam": [({"askip": 0}, ValueError)],
    "psam": [({"askip": 2.5}, TypeError)],
    "adadsgd": [({"eta": -1.0}, ValueError), ({"l1_ratio": 1.5}, ValueError),
                ({"penalty": "l3"}, ValueError), ({"growth": 1.0}, ValueError),
                ({"m0": 1}, ValueError), ({"inner": "x"}, ValueError)],
    "opauc": [({"eta": 0.0}, ValueError), ({"lam": -1.0}, ValueError)],
    "adaoam": [({"delta": 0.0}, ValueError)],
    "opaucr": [({"tau": 0}, ValueError), ({"eta": 2.0, "lam": 1.0}, ValueError)],
    "uni_exp": [({"eta": float("nan")}, ValueError), ({"clip": 31.0}, ValueError),
                ({"clip": -1.0}, ValueError), ({"clip": "x"}, TypeError)],
    "solam": [({"R": -1.0}, ValueError), ({"kappa": 0.0}, ValueError)],
    "spam": [({"penalty": "l1"}, ValueError), ({"schedule": "x"}, ValueError)],
    "spdam": [({"batch_size": 1.5}, ValueError), ({"scaling": "x"}, ValueError),
              ({"kappa": "x"}, ValueError)],
    "oam_seq": [({"C": 0.0}, ValueError), ({"buffer": "lifo"}, ValueError),
                ({"buffer_size": 0}, ValueError)],
    "oam_gra": [({"C": -1.0}, ValueError)],
    "cbr": [({"eta": 0.5}, ValueError), ({"beta_form": "x"}, ValueError)],
    "cbr_diag": [({"eta": 1.0}, ValueError), ({"diag_update": "x"}, ValueError)],
}


@pytest.mark.parametrize("name", NAMES)
def test_not_fitted(name):
    testing.check_not_fitted(_template(name))


@pytest.mark.parametrize("name", NAMES)
def test_dense_equals_csr(name):
    testing.check_dense_equals_csr(_template(name))


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_model(name):
    testing.check_same_seed_same_model(_template(name))


@pytest.mark.parametrize("name", NAMES)
def test_streaming(name):
    testing.check_streaming(_template(name))


@pytest.mark.parametrize("name", NAMES)
def test_save_load(name):
    testing.check_save_load(_template(name))


@pytest.mark.parametrize("name", NAMES)
def test_sample_weight(name):
    testing.check_sample_weight(_template(name))


@pytest.mark.parametrize("name", NAMES)
def test_failed_calls_leave_model(name):
    testing.check_failed_calls_leave_model(_template(name), BAD_PARAMS.get(name, ()))


@pytest.mark.parametrize("name", NAMES)
def test_interrupt_rolls_back(name):
    testing.check_interrupt_rolls_back(_template(name))


@pytest.mark.parametrize("name", NAMES)
def test_failed_call_leaves_model_unchanged(name):
    template = _template(name)
    if name == "fcbr":  # its O(M d^2) rows on the default 300 features: 40 s of strikes
        template.set_params(n_components=16)
    testing.check_failed_call_leaves_model_unchanged(template)


@pytest.mark.parametrize("name", NAMES)
def test_feature_names(name):
    testing.check_feature_names(_template(name))


@pytest.mark.parametrize("name", NAMES)
def test_verbose_lines(name):
    testing.check_verbose_lines(_template(name))


@pytest.mark.parametrize("name", NAMES)
def test_declared_pair_loss_is_one_at_zero_and_grows_with_misranking(name):
    """The divergence rule refuses a mean pair loss over LOSS_LIMIT times that of
    w = 0, which it takes to be 1: a learner's ``traits.pair_loss`` must agree."""
    loss = get_class(name).traits.pair_loss
    if loss is None:
        return
    pos, neg = np.zeros(7), np.zeros(5)
    assert loss(pos, neg) == 1.0
    assert loss(pos + 1.0, neg) < 1.0 < loss(pos - 1.0, neg)
    assert loss(pos - 10.0, neg) > loss(pos - 1.0, neg)


def test_every_builtin_declares_its_stream_mode_or_none():
    modes = {name: get_class(name).traits.stream for name in NAMES}
    for name, mode in modes.items():
        assert mode in (None, "chunks", "epochs"), name
        if mode:
            assert hasattr(get_class(name), "partial_fit"), name
    assert {"chunks", "epochs"} <= set(modes.values())  # both stream checks run


def test_the_readme_plugin_learner_passes_the_contract(monkeypatch):
    """A learner written as the README says: __init__ + _fit setting coef_."""
    from aucopt.base import BaseLearner
    from aucopt import registry

    class MeanDifference(BaseLearner):
        def __init__(self, shrink=0.0, pos_label=None):
            self.shrink = shrink
            self.pos_label = pos_label

        def _fit(self, X, y):
            X = X.toarray() if hasattr(X, "toarray") else X
            self.coef_ = (1.0 - self.shrink) * (X[y > 0].mean(0) - X[y < 0].mean(0))

    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    aucopt.register("mean_difference_contract")(MeanDifference)
    testing.check_learner(MeanDifference())
    with pytest.raises(AssertionError, match="coef_ differs|scores differ"):
        class Flaky(MeanDifference):  # breaks the contract: must be caught
            calls = 0

            def _fit(self, X, y):
                super()._fit(X, y)
                Flaky.calls += 1
                self.coef_ = self.coef_ + 1e-3 * Flaky.calls

        testing.check_same_seed_same_model(Flaky())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("factor", [1e155, 1e300])
def test_values_whose_squares_overflow_are_refused_clearly(name, factor):
    X, y = testing.contract_data(0)
    learner = aucopt.get(name)
    with pytest.raises(ValueError, match=r"\|\|x\|\|\^2 overflows float64"):
        learner.fit(X * factor, y)
    assert not hasattr(learner, "coef_")


_HUGE_WIDTH = r"""
import resource, sys, warnings
resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))
import numpy as np, scipy.sparse as sp
import aucopt
from aucopt.registry import BUILTIN
warnings.simplefilter("ignore")
d, n = 2**31 - 1, 12
X = sp.csr_matrix((np.random.default_rng(0).standard_normal(2 * n),
                   (np.repeat(np.arange(n), 2), np.tile([0, d - 1], n))), shape=(n, d))
y = np.array([0, 1] * (n // 2))
for name, origin in sorted(aucopt.available().items()):
    if origin != BUILTIN:
        continue
    for call in ("fit", "partial_fit"):
        model = aucopt.get(name)
        if not hasattr(model, call):
            continue
        try:
            getattr(model, call)(X, y, **({"classes": [0, 1]} if call == "partial_fit" else {}))
            print(name, call, "fitted", model.coef_.nbytes)
        except ValueError as exc:
            print(name, call, "refused", str(exc).replace("\n", " "))
        except BaseException as exc:
            print(name, call, "FAILED", type(exc).__name__, exc)
"""


def test_a_csr_matrix_of_2_31_columns_is_refused_before_any_allocation(tmp_path):
    """A CSR matrix of 2^31 - 1 columns and 24 nonzeros: every learner's state is
    dense in the columns, so each computes its whole state (weights times stride,
    scratch rows, averages, maps) and refuses it beyond the cap with a clear
    ValueError, before allocating (a 6 GiB address-space limit turns any attempt
    into a MemoryError)."""
    import os
    import re
    import subprocess
    import sys

    # cwd outside the checkout: "python -c" puts its directory first on sys.path, and
    # a checkout's aucopt/ holds no compiled kernels when the package is installed
    proc = subprocess.run([sys.executable, "-c", _HUGE_WIDTH], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert {line.split()[0] for line in lines} == set(NAMES)
    clear = re.compile(r"would (take|be a dense .*) \(?[0-9.]+ GiB\)?, above (the [0-9.]+ GiB "
                       r"cap \(max_state_bytes\)|max_bytes=)")
    for line in lines:
        assert " refused " in line and clear.search(line), line


@pytest.mark.parametrize("name", [n for n in NAMES
                                  if "max_state_bytes" in get_class(n)().get_params()])
def test_the_state_cap_counts_the_whole_state(name):
    """With max_state_bytes below what 20,000 features need, learners refuse
    before allocating."""
    import scipy.sparse as sp

    X, y = testing.contract_data(10)
    wide = sp.hstack([sp.csr_matrix(X), sp.csr_matrix((X.shape[0], 20_000))]).tocsr()
    template = _template(name)
    # weights alone take 8 * 20,008 bytes: a cap just above them is still too small
    template.set_params(max_state_bytes=8 * 20_008 + 64)
    with pytest.raises(ValueError, match=r"GiB cap \(max_state_bytes\)|max_bytes="):
        template.fit(wide, y)
