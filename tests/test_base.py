"""The one validation path, label handling, parameters and transactional fits."""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import aucopt
from aucopt.base import Learner
from aucopt.validation import check_random_state, check_X, check_y
from aucopt.exceptions import (ConstantModelWarning, DataConversionWarning, NotFittedError,
                               ReversedModelWarning)


def _data(seed=0, n=40, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] > 0, 1, 0)
    return X, y


def test_check_X_converts_once_and_never_touches_the_input():
    X = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(4, 3))
    out = check_X(X)
    assert out.dtype == np.float64 and out.flags.c_contiguous
    dup = sp.coo_matrix((np.array([1.0, 2.0, 3.0]), (np.array([0, 0, 1]),
                                                     np.array([2, 2, 0]))), shape=(2, 3))
    csr = check_X(dup)
    assert sp.isspmatrix_csr(csr) and csr.has_canonical_format
    np.testing.assert_array_equal(csr.toarray(), [[0, 0, 3], [3, 0, 0]])
    unsorted = sp.csr_matrix((np.array([1.0, 2.0]), np.array([2, 0]), np.array([0, 2])),
                             shape=(1, 3))
    assert not unsorted.has_sorted_indices
    check_X(unsorted)
    np.testing.assert_array_equal(unsorted.indices, [2, 0])  # caller's matrix untouched
    same = sp.csr_matrix(np.eye(3))
    assert check_X(same) is same  # no copy when nothing needs converting


@pytest.mark.parametrize("bad, match", [
    (np.array([[1.0, np.nan]]), "NaN"),
    (np.array([[1.0, np.inf]]), "infinity"),
    (sp.csr_matrix(np.array([[0.0, np.inf]])), "infinity"),
    (np.zeros(5), "Reshape your data"),
    (np.zeros((0, 3)), "0 sample"),
    (np.zeros((3, 0)), "0 feature"),
    (np.array([[1 + 2j]]), "Complex"),
    (None, "is None"),
])
def test_check_X_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        check_X(bad)


def test_check_X_feature_count_message_names_both_counts():
    with pytest.raises(ValueError, match="X has 3 features, but SAM is expecting 4"):
        check_X(np.zeros((2, 3)), n_features=4, estimator="SAM")


def test_check_y_labels_and_errors():
    y_pm, classes = check_y(["b", "a", "b"], 3)
    np.testing.assert_array_equal(y_pm, [1, -1, 1])
    assert list(classes) == ["a", "b"]
    y_pm, classes = check_y([3, 7, 7], 3, pos_label=3)
    np.testing.assert_array_equal(y_pm, [1, -1, -1])
    assert list(classes) == [7, 3]
    with pytest.raises(ValueError, match="one class"):
        check_y([1, 1, 1], 3)
    with pytest.raises(ValueError, match="Only binary classification"):
        check_y([0, 1, 2], 3)
    with pytest.raises(ValueError, match="Unknown label type"):
        check_y([0.5, 1.5, 2.25], 3)
    with pytest.raises(ValueError, match="rows but y has"):
        check_y([0, 1], 3)
    with pytest.raises(ValueError, match="NaN"):
        check_y([0.0, np.nan, 1.0], 3)
    with pytest.raises(ValueError, match="target y is None"):
        check_y(None, 3)
    with pytest.raises(ValueError, match="pos_label"):
        check_y([0, 1], 2, pos_label=5)
    with pytest.warns(DataConversionWarning, match="column-vector"):
        y_pm, _ = check_y(np.array([[0], [1]]), 2)
    assert y_pm.shape == (2,)


def test_check_random_state():
    assert isinstance(check_random_state(None), np.random.Generator)
    g = np.random.default_rng(0)
    assert check_random_state(g) is g
    a = check_random_state(3).integers(1 << 30)
    assert a == check_random_state(3).integers(1 << 30)
    assert isinstance(check_random_state(np.random.RandomState(0)), np.random.Generator)
    with pytest.raises(TypeError):
        check_random_state(1.5)


def test_learner_protocol_and_sklearn_conventions():
    clf = aucopt.get("sam", lam=0.1)
    assert isinstance(clf, Learner)
    params = clf.get_params()
    assert params["lam"] == 0.1 and "random_state" in params
    assert clf.set_params(lam=0.2) is clf and clf.lam == 0.2
    with pytest.raises(ValueError, match="Invalid parameter 'nope'"):
        clf.set_params(nope=1)
    with pytest.raises(ValueError, match="Invalid parameter 'lamb' for SAM. Did you mean 'lam'"):
        clf.set_params(lamb=1)
    assert repr(clf) == "SAM(lam=0.2)"
    assert not any(k.endswith("_") for k in vars(clf))  # __init__ only stores params


def test_no_predict_proba_says_what_gives_probabilities():
    clf = aucopt.get("psam")
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "predict_log_proba")
    with pytest.raises(AttributeError, match="PSAM has no predict_proba: its scores rank "
                                             ".*CalibratedClassifierCV\\(PSAM"):
        clf.predict_proba(np.zeros((1, 1)))
    with pytest.raises(AttributeError, match="'PSAM' object has no attribute 'nope'$"):
        clf.nope
    with pytest.raises(AttributeError, match="PSAM has no coef_ before fit"):
        clf.coef_  # a property's own error comes through


def test_a_mistyped_choice_names_the_closest():
    X, y = np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="sampling must be one of .*got 'cycle'. Did you mean "
                                         "'cycles'"):
        aucopt.get("psam", sampling="cycle").fit(X, y)
    with pytest.raises(ValueError, match="got 'xyz'.$"):  # nothing close: no guess
        aucopt.get("psam", sampling="xyz").fit(X, y)


def test_unfitted_use_raises_not_fitted():
    clf = aucopt.get("sam")
    with pytest.raises(NotFittedError, match="not fitted"):
        clf.decision_function(np.zeros((2, 2)))
    with pytest.raises(ValueError):  # NotFittedError is also a ValueError
        clf.predict(np.zeros((2, 2)))


def test_predict_agrees_with_decision_function_and_labels_are_kept():
    X, y = _data()
    labels = np.where(y > 0, "spam", "ham")
    clf = aucopt.get("sam", random_state=0).fit(X, labels)
    assert list(clf.classes_) == ["ham", "spam"]
    dec = clf.decision_function(X)
    np.testing.assert_array_equal(clf.predict(X), np.where(dec > 0, "spam", "ham"))
    assert clf.score(X, labels) > 0.9
    # the threshold sits at the best-accuracy ROC point of the training scores
    from aucopt.metrics import optroc_accuracy
    acc = optroc_accuracy(labels, dec, pos_label="spam")
    assert np.mean(clf.predict(X) == labels) == pytest.approx(acc)


def test_pos_label_flips_the_ranking_direction():
    X, y = _data(1, n=200)
    default = aucopt.get("sam", random_state=0, n_epochs=5).fit(X, y)
    flipped = aucopt.get("sam", random_state=0, n_epochs=5, pos_label=0).fit(X, y)
    assert list(flipped.classes_) == [1, 0]
    assert default.score(X, y) > 0.9 and flipped.score(X, y) > 0.9
    assert np.corrcoef(default.decision_function(X), flipped.decision_function(X))[0, 1] < 0


def test_failed_calls_leave_the_model_as_it_was():
    X, y = _data(2)
    clf = aucopt.get("sam", random_state=0).fit(X, y)
    state = {k: np.copy(v) if isinstance(v, np.ndarray) else v
             for k, v in vars(clf).items() if k.endswith("_") and k != "random_state_"}
    rng_state = clf.random_state_.bit_generator.state
    bad_calls = [
        lambda: clf.fit(X[:, :3].copy() * np.nan, y[:40]),
        lambda: clf.fit(X, y[:-1]),
        lambda: clf.fit(X, np.ones(40)),
        lambda: clf.partial_fit(X[:, :4], y),
        lambda: clf.partial_fit(X, np.full(40, 5)),
        lambda: clf.partial_fit(X, y, classes=[0, 7]),
    ]
    for call in bad_calls:
        with pytest.raises(ValueError):
            call()
        for k, v in state.items():
            np.testing.assert_array_equal(getattr(clf, k), v)
        assert clf.random_state_.bit_generator.state == rng_state


def test_interrupted_training_is_rolled_back(monkeypatch):
    X, y = _data(3)
    clf = aucopt.get("sam", random_state=0).fit(X, y)
    coef, t = clf.coef_.copy(), clf.t_
    rng_state = clf.random_state_.bit_generator.state
    work = type(clf)._pass

    def boom(self, *args):
        work(self, *args)  # a whole pass of journaled work in place, then an interrupt
        raise KeyboardInterrupt

    monkeypatch.setattr(type(clf), "_pass", boom)
    with pytest.raises(KeyboardInterrupt):
        clf.partial_fit(X, y)
    np.testing.assert_array_equal(clf.coef_, coef)
    assert clf.t_ == t
    assert clf.random_state_.bit_generator.state == rng_state


@pytest.mark.parametrize("during", ["rollback", "commit"])
def test_a_second_ctrl_c_during_rollback_or_commit_waits_for_it(monkeypatch, during):
    """Ctrl-C arriving while a call restores (or commits) the model is delivered
    once that is done: the model is whole, as before (rollback) or as after the
    call (commit), never half of each."""
    import os
    import signal

    from aucopt import driver
    from aucopt.testing import assert_same_state, fitted_state, untimed

    X, y = _data(3)
    oam = aucopt.get("oam_seq", random_state=0).fit(X, y)  # several undo records
    done = aucopt.get("oam_seq", random_state=0).fit(X, y).partial_fit(X, y)
    before = fitted_state(oam)
    undo = driver._Transaction.rollback if during == "rollback" else driver._Transaction.commit
    calls = []

    def interrupted(tx):
        os.kill(os.getpid(), signal.SIGINT)  # handled at the next bytecode, unless held
        calls.append(1)
        undo(tx)

    monkeypatch.setattr(driver._Transaction, during, interrupted)
    work = type(oam)._pass

    def failing(self, *args):
        work(self, *args)
        raise FloatingPointError("diverged")

    if during == "rollback":
        monkeypatch.setattr(type(oam), "_pass", failing)
    with pytest.raises(KeyboardInterrupt):
        oam.partial_fit(X, y)
    assert calls == [1]
    assert_same_state(untimed(before if during == "rollback" else fitted_state(done)),
                      untimed(fitted_state(oam)), f"after Ctrl-C during {during}")


@pytest.mark.parametrize("fails", [False, True])
def test_a_ctrl_c_just_before_the_hold_still_settles_the_call(monkeypatch, fails):
    """Ctrl-C arriving after the call's work but before its rollback / commit began
    (before SIGINT is held): the step still runs, then the interrupt is raised."""
    from aucopt import driver
    from aucopt.testing import assert_same_state, fitted_state, untimed

    X, y = _data(3)
    model = aucopt.get("oam_seq", random_state=0).fit(X, y)
    done = aucopt.get("oam_seq", random_state=0).fit(X, y).partial_fit(X, y)
    before = fitted_state(model)
    hold, calls = driver._holding_sigint, []

    def late(fn):
        calls.append(fn.__name__)
        if len(calls) == 1:
            raise KeyboardInterrupt  # arrived before the step started
        return hold(fn)

    monkeypatch.setattr(driver, "_holding_sigint", late)
    if fails:
        work = type(model)._pass

        def failing(self, *args):
            work(self, *args)
            raise FloatingPointError("diverged")

        monkeypatch.setattr(type(model), "_pass", failing)
    with pytest.raises(KeyboardInterrupt):
        model.partial_fit(X, y)
    step = "rollback" if fails else "commit"
    assert calls == [step, step]
    assert_same_state(untimed(before if fails else fitted_state(done)),
                      untimed(fitted_state(model)), step)


def test_pickle_and_clone_roundtrip():
    sklearn_base = pytest.importorskip("sklearn.base")
    X, y = _data(4)
    clf = aucopt.get("sam", random_state=0, lam=0.01).fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))
    cloned = sklearn_base.clone(clf)
    assert cloned.get_params() == clf.get_params()
    assert not hasattr(cloned, "coef_")


def test_works_in_sklearn_grid_search():
    pytest.importorskip("sklearn")
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = _data(5, n=120)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search = GridSearchCV(make_pipeline(StandardScaler(), aucopt.get("sam", random_state=0)),
                              {"sam__lam": [1e-3, 1e-1]}, scoring="roc_auc", cv=3)
        search.fit(X, y)
    assert search.best_score_ > 0.9


@pytest.mark.parametrize("name", ["psam", "solam", "opauc", "spam"])
def test_a_model_that_ranks_nothing_is_reported(name):
    """Identical rows in both classes leave w = 0: fit warns instead of returning
    a constant scorer silently; a model that ranks does not warn."""
    X = np.array([[1.0, 2.0]] * 4)
    learner = aucopt.get(name, random_state=0)
    with pytest.warns(ConstantModelWarning, match="scores every training row the same"):
        learner.fit(X, [0, 1, 0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantModelWarning)
        learner.fit(np.array([[1.0, 0.0], [0.0, 1.0]] * 2), [0, 1, 0, 1])


def test_a_model_that_ranks_its_training_rows_backwards_is_reported():
    """The threshold's sort also gives the training AUC: below 0.4 (with 5 rows of
    each class or more) the model points away from the positives, and fit warns."""
    from aucopt.driver import set_threshold

    learner = aucopt.get("psam")
    y = np.array([1.0] * 6 + [-1.0] * 6)
    with pytest.warns(ReversedModelWarning, match=r"PSAM ranks its own training rows "
                                                  r"below chance \(training AUC 0\.000\)"):
        set_threshold(learner, -y, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReversedModelWarning)
        set_threshold(learner, y, y)  # ranks right
        set_threshold(learner, np.r_[-y[:4], y[4:]], y)  # AUC 2/3
        set_threshold(learner, -y[2:10], y[2:10])  # 4 rows of each class: too few to tell


def test_long_passes_print_progress_lines_between_the_pass_lines(monkeypatch, capsys):
    """verbose: a pass running longer than PROGRESS_SECONDS prints progress lines
    (indented, so the one "-- " line per pass stays the pass's summary)."""
    import time

    from aucopt import driver
    from aucopt.learners.stochastic import PSAM

    monkeypatch.setattr(driver, "PROGRESS_SECONDS", 0.02)
    work = PSAM._pass

    def slow(self, *args):
        work(self, *args)
        time.sleep(0.15)

    monkeypatch.setattr(PSAM, "_pass", slow)
    X, y = _data()
    model = aucopt.get("psam", n_epochs=2, verbose=1, random_state=0).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("-- ") for line in lines) == model.n_passes_ == 2
    progress = [line for line in lines if line.startswith("   PSAM pass ")]
    assert len(progress) >= 4
    assert all("100% done" in line for line in progress)  # the pairs drawn, then the sleep
    assert {line.split(":")[0] for line in progress} == {"   PSAM pass 1", "   PSAM pass 2"}


# --------------------------------------------------------------------------- feature names

def test_feature_names_are_read_from_string_columns_only():
    from aucopt.validation import feature_names
    pd = pytest.importorskip("pandas")
    X, _ = _data()
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    names = feature_names(frame)
    assert names.dtype == object and names.tolist() == list(frame.columns)
    assert feature_names(pd.DataFrame(X)) is None  # positions, not names
    assert feature_names(X) is None
    with pytest.raises(TypeError, match="mix int, str"):
        feature_names(pd.DataFrame(X, columns=["a", 1, "b", 2, "c", 3]))


def test_other_columns_get_scikit_learn_s_messages():
    pd = pytest.importorskip("pandas")
    X, y = _data()
    columns = [f"c{i}" for i in range(X.shape[1])]
    model = aucopt.get("psam", random_state=0).fit(pd.DataFrame(X, columns=columns), y)
    for other, detail in [(columns[::-1], "must be in the same order"),
                          (columns[:-1] + ["new"], "unseen at fit time:\n- new\n"),
                          (columns[:-1] + ["new"], "yet now missing:\n- c5\n")]:
        with pytest.raises(ValueError, match="should match those that were passed during "
                           "fit") as info:
            model.predict(pd.DataFrame(X, columns=other))
        assert detail in str(info.value)
    with pytest.warns(UserWarning, match="was fitted without feature names"):
        aucopt.get("psam", random_state=0).fit(X, y).decision_function(
            pd.DataFrame(X, columns=columns))
    # a refit on an array forgets the names
    assert not hasattr(model.fit(X, y), "feature_names_in_")


@pytest.mark.parametrize("name", ["psam", "bam", "cbr_diag", "opauc", "spam", "npsam"])
def test_scikit_learn_s_column_name_check(name):
    """scikit-learn's own check (not among those parametrize_with_checks yields)."""
    pytest.importorskip("pandas")
    checks = pytest.importorskip("sklearn.utils.estimator_checks")
    cls = aucopt.registry.get_class(name)
    seeded = {"random_state": 0} if "random_state" in cls._get_param_names() else {}
    checks.check_dataframe_column_names_consistency(name, cls(**seeded))


def test_validation_data_and_bam_objective_check_the_column_names():
    pd = pytest.importorskip("pandas")
    X, y = _data()
    columns = [f"c{i}" for i in range(X.shape[1])]
    frame, reordered = pd.DataFrame(X, columns=columns), pd.DataFrame(X, columns=columns[::-1])
    model = aucopt.get("psam", random_state=0)
    with pytest.raises(ValueError, match="must be in the same order"):
        model.fit(frame, y, validation_data=(reordered, y))
    assert not hasattr(model, "feature_names_in_")  # refused before training
    model.fit(frame, y, validation_data=(frame, y))
    assert model.history_.shape[0] == model.n_passes_
    bam = aucopt.get("bam").fit(frame, y)
    assert bam.objective(frame, y) == pytest.approx(bam.objective_)
    with pytest.raises(ValueError, match="should match those that were passed during fit"):
        bam.objective(reordered, y)
