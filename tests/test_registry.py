"""Registry: names, origins, errors, and real plugins installed through entry points."""
import os
import subprocess
import sys
import textwrap
import warnings
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest

import aucopt
from aucopt import registry
from aucopt.exceptions import PluginLoadError
from aucopt.traits import Traits


def test_builtins_are_listed_with_their_origin():
    names = aucopt.available()
    assert names["sam"] == "built-in"
    assert list(names) == sorted(names)


def test_unknown_name_lists_known_ones():
    with pytest.raises(ValueError, match="unknown learner 'nosuch'.*Known learners: .*sam"):
        aucopt.get("nosuch")
    with pytest.raises(ValueError, match="Did you mean 'sam'"):
        aucopt.get("sma")


@pytest.mark.parametrize("typed, meant", [
    ("pasm", "psam"),  # two letters swapped: one edit from psam, two from spam
    ("PSAM", "psam"),  # case
    ("cbrdiag", "cbr_diag"),
])
def test_unknown_name_suggests_the_closest(typed, meant):
    with pytest.raises(ValueError, match=f"unknown learner '{typed}'. Did you mean '{meant}'\\?"):
        aucopt.get(typed)


def test_get_rejects_unknown_parameters():
    with pytest.raises(ValueError, match="unknown parameter.*'lamda'.*Did you mean 'lam'\\? "
                                         "Valid parameters"):
        aucopt.get("sam", lamda=1.0)
    with pytest.raises(ValueError, match="Did you mean 'lam' for 'lamda', 'n_epochs' for "
                                         "'n_epoch'\\? Valid"):
        aucopt.get("sam", lamda=1.0, n_epoch=2, zzz=3)
    with pytest.raises(ValueError, match=r"\['zzz'\] for learner 'sam'\. Valid parameters"):
        aucopt.get("sam", zzz=3)


def test_register_refuses_non_learners_and_taken_names():
    with pytest.raises(TypeError, match="lacks .*decision_function"):
        @aucopt.register("not-a-learner")
        class Half:
            def fit(self, X, y):
                return self

    with pytest.raises(ValueError, match="already registered"):
        @aucopt.register("sam")
        class Other(aucopt.learners.SAM):
            pass


def test_register_checks_the_declared_traits(monkeypatch):
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    with pytest.raises(ValueError, match="Traits.merge must be None or one of"):
        Traits(merge="sum")
    with pytest.raises(TypeError, match="Traits.shuffles must be True or False"):
        Traits(shuffles=1)
    for bad in (0, -5, 2.5, True, "4096"):
        with pytest.raises(ValueError, match="Traits.monitor_rows must be None or a positive"):
            Traits(monitor_rows=bad)
    assert Traits(monitor_rows=1).monitor_rows == 1
    with pytest.raises(FrozenInstanceError):
        aucopt.learners.SAM.traits.merge = None

    class Loose(aucopt.learners.BAM):
        traits = {"merge": "average"}  # a loose knob, not a declaration

    with pytest.raises(TypeError, match="traits must be an aucopt.traits.Traits, got dict"):
        aucopt.register("loose-bam")(Loose)

    class Streaming(aucopt.learners.BAM):  # no partial_fit
        traits = replace(aucopt.learners.BAM.traits, stream="chunks")

    with pytest.raises(ValueError, match="stream='chunks' but has no partial_fit"):
        aucopt.register("streaming-bam")(Streaming)

    class Shuffling(aucopt.learners.BAM):  # no shuffle parameter
        traits = replace(aucopt.learners.BAM.traits, shuffles=True)

    with pytest.raises(ValueError, match="traits.shuffles but has no shuffle"):
        aucopt.register("shuffling-bam")(Shuffling)

    class OldKnob(aucopt.learners.SAM):  # a knob Traits replaced: it would be ignored
        _stream = "chunks"

    with pytest.raises(TypeError, match=r"sets _stream, .*Traits\(stream=\.\.\.\)"):
        aucopt.register("old-knob-sam")(OldKnob)
    assert "loose-bam" not in aucopt.available()
    for cls in aucopt.learners.BUILTINS.values():
        registry.check_traits(cls)


def test_runtime_registration_and_save_needs_a_name(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))

    class Unnamed(aucopt.learners.SAM):
        pass

    X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    y = np.array([0, 1, 1, 0])
    with pytest.raises(ValueError, match="not registered"):
        Unnamed(random_state=0).fit(X, y).save(tmp_path / "m.npz")
    aucopt.register("my-sam")(Unnamed)
    assert aucopt.available()["my-sam"].startswith("runtime")
    model = aucopt.get("my-sam", random_state=0).fit(X, y)
    model.save(tmp_path / "m.npz")
    assert type(aucopt.load(tmp_path / "m.npz")) is Unnamed


PLUGIN_SRC = '''
import numpy as np
from aucopt.base import BaseLearner


class MeanDifference(BaseLearner):
    """Scores rows by their projection on (mean of positives - mean of negatives)."""

    def __init__(self, shrink=0.0, pos_label=None):
        self.shrink = shrink
        self.pos_label = pos_label

    def _fit(self, X, y):
        X = np.asarray(X.todense()) if hasattr(X, "todense") else X
        self.coef_ = (1 - self.shrink) * (X[y > 0].mean(0) - X[y < 0].mean(0))
        self.intercept_ = 0.0


class NotALearner:
    pass


class Exiting:
    pass
'''

EXIT_SRC = '''
raise SystemExit("a plugin must not end the process")
'''

PYPROJECT = '''
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "aucopt-test-plugin"
version = "1.2.3"

[tool.setuptools]
py-modules = ["aucopt_test_plugin", "aucopt_test_plugin_exit"]

[project.entry-points."aucopt.learners"]
meandiff = "aucopt_test_plugin:MeanDifference"
broken = "aucopt_missing_module_xyz:Learner"
notalearner = "aucopt_test_plugin:NotALearner"
exits = "aucopt_test_plugin_exit:Learner"
sam = "aucopt_test_plugin:MeanDifference"
'''


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory):
    """Build and install a real plugin distribution into a private target dir."""
    root = tmp_path_factory.mktemp("plugin")
    src = root / "src"
    src.mkdir()
    (src / "aucopt_test_plugin.py").write_text(textwrap.dedent(PLUGIN_SRC))
    (src / "aucopt_test_plugin_exit.py").write_text(textwrap.dedent(EXIT_SRC))
    (src / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    target = root / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--target", str(target), str(src)],
        capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return target


@pytest.fixture
def plugin_path(installed_plugin, monkeypatch):
    monkeypatch.syspath_prepend(str(installed_plugin))
    monkeypatch.delenv("AUCOPT_DISABLE_PLUGINS", raising=False)
    with pytest.warns(RuntimeWarning, match="'sam'.*shadowed by the built-in"):
        registry.reload_plugins()
    yield installed_plugin
    monkeypatch.undo()
    registry.reload_plugins()


def test_plugins_are_listed_without_importing_them(plugin_path):
    names = aucopt.available()
    assert names["meandiff"] == "aucopt-test-plugin 1.2.3"
    assert names["broken"] == "aucopt-test-plugin 1.2.3"
    assert names["sam"] == "built-in"  # built-ins win the clash
    assert "aucopt_test_plugin" not in sys.modules


def test_plugin_is_loaded_by_name_and_works(plugin_path, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    y = (X[:, 1] > 0).astype(int)
    model = aucopt.get("meandiff", shrink=0.5).fit(X, y)
    assert type(model).__module__ == "aucopt_test_plugin"
    assert model.score(X, y) > 0.9
    model.save(tmp_path / "plugin.npz")
    again = aucopt.load(tmp_path / "plugin.npz")
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))


def test_broken_plugin_raises_typed_error_and_breaks_nothing_else(plugin_path):
    with pytest.raises(PluginLoadError, match="'broken' from aucopt-test-plugin 1.2.3") as err:
        aucopt.get("broken")
    assert err.value.name == "broken"
    assert err.value.distribution == "aucopt-test-plugin 1.2.3"
    assert aucopt.get("meandiff").shrink == 0.0
    assert aucopt.get("sam").rskip == 16


def test_plugin_that_is_not_a_learner_is_refused(plugin_path):
    with pytest.raises(PluginLoadError, match="not an aucopt Learner.*lacks fit"):
        aucopt.get("notalearner")


def test_same_entry_point_twice_counts_once(plugin_path, monkeypatch, tmp_path):
    import shutil

    second = tmp_path / "site2"
    shutil.copytree(plugin_path, second)  # an editable + an installed copy
    monkeypatch.syspath_prepend(str(second))
    with pytest.warns(RuntimeWarning, match="'sam'.*shadowed") as record:
        names = registry.reload_plugins()
    assert names["meandiff"] == "aucopt-test-plugin 1.2.3"
    assert not any("declared by" in str(w.message) for w in record)


def test_plugin_raising_system_exit_is_a_plugin_load_error(plugin_path):
    with pytest.raises(PluginLoadError, match="'exits'.*SystemExit"):
        aucopt.get("exits")
    assert aucopt.get("meandiff").shrink == 0.0


@pytest.mark.parametrize("value, enabled", [("1", False), ("true", False), ("YES", False),
                                            ("on", False), ("0", True), ("false", True),
                                            ("no", True), ("Off", True), ("", True)])
def test_disable_plugins_env(plugin_path, monkeypatch, value, enabled):
    monkeypatch.setenv("AUCOPT_DISABLE_PLUGINS", value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = registry.reload_plugins()
    assert ("meandiff" in names) is enabled and "sam" in names


def test_disable_plugins_env_not_understood_warns(plugin_path, monkeypatch):
    monkeypatch.setenv("AUCOPT_DISABLE_PLUGINS", "maybe")
    with pytest.warns(RuntimeWarning, match="not understood"):
        names = registry.reload_plugins()
    assert "meandiff" in names


def test_runtime_registration_cannot_shadow_builtins_even_first(tmp_path):
    """Registering a built-in's name before anything else imported the learners is
    refused, and the registry keeps working (a fresh interpreter)."""
    code = textwrap.dedent('''
        import numpy as np, aucopt
        from aucopt.base import BaseLearner

        class Mine(BaseLearner):
            def __init__(self):
                pass

            def _fit(self, X, y):
                self.coef_ = np.zeros(X.shape[1])

        try:
            aucopt.register("sam")(Mine)
        except ValueError as exc:
            print("refused:", exc)
        print(aucopt.get("sam").rskip, len(aucopt.available()) > 3)
    ''')
    # import the very package under test (an installed one or an in-place build),
    # never a source checkout in the working directory that lacks its kernels
    home = os.path.dirname(os.path.dirname(aucopt.__file__))
    env = {**os.environ, "AUCOPT_DISABLE_PLUGINS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [home, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "refused: learner name 'sam' is already registered to the built-in SAM" \
        in proc.stdout
    assert proc.stdout.strip().endswith("16 True")
