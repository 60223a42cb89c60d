"""The extension API (``aucopt.extend``): the README's plugins, run from the README's
own code, pass the contract, and the pairwise logistic learner among them (a pair
rule in Python on the kernel's loop) learns; plugin code imports no private name."""
import ast
import pathlib
import re

import numpy as np
import pytest

import aucopt
import aucopt.extend
from aucopt import registry
from aucopt.datasets import load, split

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _plugin_blocks():
    """The Python blocks of the README's section "Writing a plugin learner"."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Writing a plugin learner"):]
    section = section[:section.index("\n## ")]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _imported_names(code):
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module
            yield from (a.name for a in node.names)


@pytest.fixture
def readme(monkeypatch):
    """The README's plugin classes, defined (and registered, for this test only) by
    running its blocks; the last block, the contract run, is returned unrun."""
    aucopt.available()  # the built-ins registered before the copy
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    *definitions, contract = _plugin_blocks()
    namespace = {}
    for code in definitions:
        exec(compile(code, str(README), "exec"), namespace)
    return namespace, contract


def test_the_readme_plugins_import_only_public_names():
    blocks = _plugin_blocks()
    assert len(blocks) == 3
    names = [name for code in blocks for name in _imported_names(code)]
    assert "aucopt.extend" in names
    private = [n for n in names if any(part.startswith("_") for part in n.split("."))]
    assert not private, private
    assert "check_learner" in blocks[-1]


def test_the_readme_plugins_pass_the_contract(readme):
    namespace, contract = readme
    assert {"PairwiseLogistic", "PairPerceptron"} <= set(namespace)
    exec(compile(contract, str(README), "exec"), namespace)  # raises on a breach
    assert aucopt.available()["pairwise_logistic"].startswith("runtime")


def test_the_pairwise_logistic_plugin_learns_as_well_as_psam(readme):
    namespace, _ = readme
    X, y = load("dna_ei")
    X_tr, X_te, y_tr, y_te = split(X, y, test_size=0.3, random_state=0)
    model = aucopt.get("pairwise_logistic", random_state=0).fit(X_tr, y_tr)
    assert isinstance(model, namespace["PairwiseLogistic"])
    psam = aucopt.get("psam", random_state=0).fit(X_tr, y_tr)
    auc, reference = model.score(X_te, y_te), psam.score(X_te, y_te)
    assert auc > 0.95 and abs(auc - reference) < 0.01, (auc, reference)
    assert model.stop_reason_ == "tol"  # the logistic objective stalled


class _NumpyHinge(aucopt.extend.PairwiseSGD):
    """PSAM's rule through the extension API: the loop must be PSAM's."""

    def pair_rule(self):
        return aucopt.extend.HingeProx()

    def pair_loss(self, pos_scores, neg_scores):
        return float(np.mean(np.maximum(0.0, 1.0 - (pos_scores[:, None]
                                                     - neg_scores[None, :]))))


def test_a_pairwise_sgd_with_psams_rule_is_psam_bit_for_bit():
    X, y = load("ionosphere")
    X = X.toarray()
    ours = _NumpyHinge(n_epochs=3, random_state=4).fit(X, y)
    # PairwiseSGD has ASAM's parameters, "auto" rules and draws: PSAM with ASAM's
    # avg_power and lam, drawing with replacement
    psam = aucopt.get("psam", n_epochs=3, avg_power=ours.avg_power, lam=ours.lam_,
                      sampling="replacement", random_state=4).fit(X, y)
    np.testing.assert_array_equal(ours.coef_, psam.coef_)


def test_a_pairwise_sgd_without_a_rule_or_with_a_bad_one_is_refused():
    X, y = load("ionosphere")

    class NoRule(aucopt.extend.PairwiseSGD):
        pass

    with pytest.raises(NotImplementedError, match="neither pair_step nor pair_rule"):
        NoRule(n_epochs=1).fit(X, y)

    class BadRule(_NumpyHinge):
        def pair_rule(self):
            return "hinge"

    with pytest.raises(TypeError, match="not a PairRule"):
        BadRule(n_epochs=1).fit(X, y)
    assert not hasattr(BadRule(), "coef_")
