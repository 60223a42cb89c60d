"""The learner contract, as checks anyone can run on a learner (plugins included).

Every built-in learner passes these (``tests/test_contract.py`` runs them over the
registry); a plugin author checks theirs with::

    from aucopt.testing import check_learner
    check_learner(MyLearner(random_state=0))        # raises AssertionError on a breach

or runs a single check (``check_dense_equals_csr(MyLearner())``, ...). Each check
takes an unfitted learner as a template (it is cloned with its parameters, never
modified) and uses small generated data, so the whole contract runs in seconds.
What is checked:

* dense and CSR input (and CSC, COO, int64 indices) give the same model, bit for bit;
* the same ``random_state`` gives the same model;
* streaming: ``partial_fit`` over chunks equals ``fit`` (learners declaring
  ``traits.stream = "chunks"``), or ``n_epochs`` calls of ``partial_fit`` on the
  whole data equal ``fit`` (``traits.stream = "epochs"``);
* ``save`` / :func:`aucopt.load` round trip gives identical scores, and training
  resumes identically after loading;
* failed calls (bad parameters, NaN, wrong feature count, one class) and interrupted
  calls (``KeyboardInterrupt`` after a pass did its work) leave a fitted model
  exactly as it was (every fitted attribute, bit for bit, and the random stream);
* a failure injected at every stage of every call (each chunk of a ``partial_fit``
  stream, each pass of ``fit``, ``merge``) leaves the model as it was, and the stream
  continued after the failures ends in the model of a stream without them;
* ``sample_weight`` has scikit-learn's semantics: weights of 1 give the unweighted
  model, integer weights the model of the repeated rows (copies one after the
  other), zero weights the model without those rows, all bit for bit (``fit`` and
  ``partial_fit``; to 1e-10 for integer weights of a learner that weighs its rows
  in its own sums, ``traits.weighs_rows``, as BAM); dense and CSR weighted fits agree bit
  for bit; bad weights raise ``ValueError`` and leave the model as it was (a
  plugin whose own ``_fit`` takes no ``sample_weight`` must refuse them with
  ``TypeError``);
* a dataframe's column names are kept (``feature_names_in_``), saved, checked by
  later calls (other names: ``ValueError``; none: a warning) and refused in a
  ``merge`` of models fitted on other names;
* ``verbose`` prints one line per pass; prediction before fitting raises.
"""
import copy
import inspect
import io
import numbers

import numpy as np
import scipy.sparse as sp

from aucopt._estimator import Estimator
from aucopt.exceptions import NotFittedError
from aucopt.driver import resolved_params
from aucopt.traits import traits_of

__all__ = ["check_learner", "check_dense_equals_csr", "check_same_seed_same_model",
           "check_streaming", "check_save_load", "check_failed_calls_leave_model",
           "check_interrupt_rolls_back", "check_failed_call_leaves_model_unchanged",
           "check_verbose_lines", "check_not_fitted", "check_sample_weight",
           "check_feature_names",
           "contract_data", "fitted_state", "untimed", "assert_same_state"]


def contract_data(seed=0, n=80, d=8):
    """Small sparse-ish data with a learnable ranking signal: ``(X, y)``, y in {0, 1}."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) > 0.6] = 0.0
    X[5] = 0.0  # an empty row
    y = (X[:, 0] - X[:, 1] + 0.5 * rng.standard_normal(n) > 0).astype(int)
    y[:2] = [0, 1]
    return X, y


def _clone(learner, **params):
    return type(learner)(**{**learner.get_params(), **params})


def _seeded(learner):
    return "random_state" in learner.get_params()


def _with_seed(learner, seed=0, **params):
    if _seeded(learner):
        params["random_state"] = seed
    return _clone(learner, **params)


def fitted_state(learner):
    """Every fitted attribute, deep-copied, with generators as their states and a
    fitted part (a feature map) as its own fitted attributes, ``part.name`` (compare
    two with :func:`assert_same_state`)."""
    out = {}
    for key, value in vars(learner).items():
        if not key.endswith("_") or key.startswith("__"):
            continue
        if isinstance(value, Estimator):
            out.update({f"{key}.{k}": v for k, v in fitted_state(value).items()})
        elif isinstance(value, np.random.Generator):
            out[key] = ("generator", value.bit_generator.state)
        elif isinstance(value, np.ndarray):
            out[key] = value.copy()
        else:
            out[key] = value
    return out


def untimed(state):
    """A :func:`fitted_state` without the wall-clock column of ``history_``: two runs
    of one call differ only there."""
    if "history_" in state:
        state["history_"] = state["history_"][:, 1:]
    return state


def assert_same_state(before, after, what):
    """Raise ``AssertionError`` unless two :func:`fitted_state` snapshots are equal."""
    assert before.keys() == after.keys(), (what, sorted(before.keys() ^ after.keys()))
    for key, value in before.items():
        other = after[key]
        if isinstance(value, np.ndarray):
            assert isinstance(other, np.ndarray) and value.dtype == other.dtype \
                and np.array_equal(value, other, equal_nan=value.dtype.kind == "f"), \
                f"{what}: {key} changed"
        else:
            assert _equal(value, other), f"{what}: {key} changed ({value!r} -> {other!r})"


def _equal(a, b):
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


def _same_model(a, b, X, what):
    np.testing.assert_array_equal(a.coef_, b.coef_, err_msg=f"{what}: coef_ differs")
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X),
                                  err_msg=f"{what}: scores differ")


def check_not_fitted(learner):
    """Prediction before fitting raises ``NotFittedError``."""
    X, _ = contract_data()
    try:
        _clone(learner).decision_function(X)
    except NotFittedError:
        return
    raise AssertionError("decision_function before fit did not raise NotFittedError")


def check_dense_equals_csr(learner):
    """Dense, CSR, CSC, COO and int64-index CSR input give the same model, bit for bit."""
    X, y = contract_data(1)
    ref = _with_seed(learner).fit(X, y)
    Xs = sp.csr_matrix(X)
    wide = sp.csr_matrix(X)
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    for name, form in (("csr", Xs), ("csc", sp.csc_matrix(X)), ("coo", sp.coo_matrix(X)),
                       ("int64 csr", wide)):
        model = _with_seed(learner).fit(form, y)
        np.testing.assert_array_equal(model.coef_, ref.coef_,
                                      err_msg=f"{name} input gives another coef_")
        assert model.intercept_ == ref.intercept_, f"{name} input gives another intercept_"
        np.testing.assert_array_equal(model.decision_function(Xs), ref.decision_function(X),
                                      err_msg=f"{name} scores differ from dense scores")


def check_same_seed_same_model(learner):
    """The same seed gives the same model (learners with ``random_state``)."""
    X, y = contract_data(2)
    if not _seeded(learner):
        a, b = _clone(learner).fit(X, y), _clone(learner).fit(X, y)
    else:
        a, b = _with_seed(learner, 7).fit(X, y), _with_seed(learner, 7).fit(X, y)
    _same_model(a, b, X, "two fits with the same seed")


def check_streaming(learner):
    """``partial_fit`` continues one stream (see the module docstring)."""
    mode = traits_of(learner).stream
    if mode is None or not hasattr(learner, "partial_fit"):
        return
    X, y = contract_data(3)
    # a stream is taken in its order: compare with a fit that does not shuffle
    keep = {"shuffle": False} if "shuffle" in learner.get_params() else {}
    if mode == "chunks":
        if "n_epochs" in learner.get_params():  # the stream is one pass
            keep["n_epochs"] = 1
        fitted = _with_seed(learner, **keep).fit(X, y)
        # data-derived ("auto") parameters are fixed by the first data a model sees:
        # the first chunk for a stream, all rows for fit; give the stream fit's values
        stream = _with_seed(learner, **keep, **resolved_params(fitted))
        for start in range(0, X.shape[0], 23):
            stop = start + 23
            stream.partial_fit(sp.csr_matrix(X[start:stop]), y[start:stop], classes=[0, 1])
    else:
        n_epochs = 3
        fitted = _with_seed(learner, 0, **keep)
        fitted.set_params(n_epochs=n_epochs)
        fitted.fit(X, y)
        stream = _with_seed(learner, 0, **keep)
        for _ in range(n_epochs):
            stream.partial_fit(sp.csr_matrix(X), y, classes=[0, 1])
    np.testing.assert_array_equal(stream.coef_, fitted.coef_,
                                  err_msg=f"partial_fit ({mode}) differs from fit")


def check_save_load(learner):
    """Save / load round trip: same scores; training resumes identically."""
    import aucopt

    X, y = contract_data(4)
    model = _with_seed(learner).fit(X, y)
    buf = io.BytesIO()
    model.save(buf)
    buf.seek(0)
    again = aucopt.load(buf)
    assert type(again) is type(model)
    assert again.get_params().keys() == model.get_params().keys()
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))
    assert list(again.classes_) == list(model.classes_)
    if hasattr(model, "partial_fit"):
        X2, y2 = contract_data(5)
        model.partial_fit(X2, y2)
        again.partial_fit(X2, y2)
        _same_model(model, again, X, "partial_fit after load")


def check_failed_calls_leave_model(learner, bad_params=()):
    """Bad input or parameters raise and leave a fitted model exactly as it was.

    ``bad_params``: ``(params, exception type)`` pairs the learner must refuse.
    """
    X, y = contract_data(6)
    model = _with_seed(learner).fit(X, y)
    before = fitted_state(model)
    nan = X.copy()
    nan[3, 2] = np.nan
    calls = [
        (lambda: model.fit(nan, y), ValueError),
        (lambda: model.fit(X, y[:-1]), ValueError),
        (lambda: model.fit(X, np.ones_like(y)), ValueError),
        (lambda: model.fit(X, np.arange(len(y))), ValueError),
    ]
    if hasattr(model, "partial_fit"):
        calls += [
            (lambda: model.partial_fit(X[:, :-1], y), ValueError),
            (lambda: model.partial_fit(nan, y), ValueError),
            (lambda: model.partial_fit(X, np.full(len(y), 5)), ValueError),
            (lambda: model.partial_fit(X, y, classes=[0, 7]), ValueError),
        ]
    for call, exc in calls:
        try:
            call()
        except exc:
            pass
        else:
            raise AssertionError(f"a bad call did not raise {exc.__name__}")
        assert_same_state(before, fitted_state(model), "after a failed call")
    for params, exc in bad_params:
        saved = model.get_params()
        model.set_params(**params)
        for method in ("fit", "partial_fit"):
            if not hasattr(model, method):
                continue
            try:
                getattr(model, method)(X, y)
            except exc:
                pass
            else:
                raise AssertionError(f"{method} with {params} did not raise {exc.__name__}")
            assert_same_state(before, fitted_state(model), f"after {method} with {params}")
        model.set_params(**saved)


def check_interrupt_rolls_back(learner):
    """``KeyboardInterrupt`` after a pass did its work leaves the model as it was."""
    cls = type(learner)
    if not hasattr(cls, "_pass"):
        return
    X, y = contract_data(7)
    model = _with_seed(learner).fit(X, y)
    before = fitted_state(model)
    work = cls._pass

    def interrupted(self, *args):
        work(self, *args)
        raise KeyboardInterrupt

    calls = [lambda: model.fit(X[::-1].copy(), y[::-1].copy())]
    if hasattr(model, "partial_fit"):
        calls.append(lambda: model.partial_fit(sp.csr_matrix(X), y))
    cls._pass = interrupted
    try:
        for call in calls:
            try:
                call()
            except KeyboardInterrupt:
                pass
            else:
                raise AssertionError("the interrupt did not propagate")
            assert_same_state(before, fitted_state(model), "after an interrupted call")
    finally:
        cls._pass = work
    np.testing.assert_array_equal(model.decision_function(X),
                                  _with_seed(learner).fit(X, y).decision_function(X))


class InjectedFailure(Exception):
    """The failure :func:`check_failed_call_leaves_model_unchanged` injects."""


# Where a failure is injected: (method, "before" / "after" it runs; a name
# "driver.<function>" is a function of aucopt.driver). Each one that a call reaches
# is tried at every time the call reaches it (a pass of a multi-pass fit counts), so
# the failure strikes with the call's work partly or wholly applied: after the
# per-call preparation, between a kernel's in-place writes and the scalars
# that go with them, after each pass, after the threshold, after a merge's values
# are stored and after its derived state (a solve) is computed.
FAILURE_SEAMS = (("_prepare", "after"), ("_store_weights", "before"), ("_pass", "after"),
                 ("driver.run_pass", "after"), ("_fit", "after"), ("_finish", "after"),
                 ("_merge_store", "after"), ("_merge_finish", "after"))
# At most this many reaches of one seam are tried per call (the first ones and the
# last): a fit of many passes would otherwise cost O(passes^2).
SEAM_REACHES = 4


class _Seams:
    """Count the reaches of each seam of ``cls`` during a call, or fail at one."""

    def __init__(self, cls):
        from aucopt import driver

        # the skeleton's _fit is a plugin's hook only when overridden (fit tests that)
        self.seams = [(name, when) for name, when in FAILURE_SEAMS
                      if name.startswith("driver.") or hasattr(cls, name)
                      and getattr(cls, name) is not driver.skeleton_fit]
        self.owners = {name: driver if name.startswith("driver.") else cls
                       for name, _ in self.seams}
        self.counts = {}
        self.strike = None

    def __enter__(self):
        self.saved = {name: vars(owner).get(name.rpartition(".")[2])
                      for name, owner in self.owners.items()}
        for name, when in self.seams:
            owner, attr = self.owners[name], name.rpartition(".")[2]
            self._wrap(owner, name, when, getattr(owner, attr))
        return self

    def _wrap(self, owner, name, when, method):
        seams = self

        def wrapped(*args, **kwargs):
            if when == "before":
                seams._reach(name)
            out = method(*args, **kwargs)
            if when == "after":
                seams._reach(name)
            return out

        setattr(owner, name.rpartition(".")[2], wrapped)

    def _reach(self, name):
        self.counts[name] = self.counts.get(name, 0) + 1
        if self.strike == (name, self.counts[name]):
            raise InjectedFailure(f"injected at {name}, reach {self.counts[name]}")

    def __exit__(self, *exc):
        for name, method in self.saved.items():
            owner, attr = self.owners[name], name.rpartition(".")[2]
            if method is None:
                delattr(owner, attr)
            else:
                setattr(owner, attr, method)

    def strikes(self, call):
        """Run ``call`` once to count the reaches; the (seam, reach) pairs to try."""
        self.counts, self.strike = {}, None
        call()
        out = []
        for name, count in self.counts.items():
            reaches = sorted({*range(1, min(count, SEAM_REACHES - 1) + 1), count})
            out += [(name, k) for k in reaches]
        return out

    def fail_at(self, strike, call, before, model, what):
        self.counts, self.strike = {}, strike
        try:
            call()
        except InjectedFailure:
            pass
        else:
            raise AssertionError(f"{what}: the failure injected at {strike} did not "
                                 "propagate")
        finally:
            self.strike = None
        assert_same_state(before, fitted_state(model), f"{what}, failure at {strike}")


def check_failed_call_leaves_model_unchanged(learner):
    """A failure injected at every stage (:data:`FAILURE_SEAMS`) of every call leaves
    the model exactly as it was: every fitted attribute (declared state, ``coef_``,
    ``intercept_``, counters, the random stream), bit for bit.

    For a ``partial_fit`` stream of several chunks, the failure strikes at each chunk
    (after the earlier chunks succeeded), then the chunk is learned for real; the
    stream must end in the model of the same stream without failures. Also ``fit``
    of a fitted model (each pass) and ``merge``. Run on data of 4 and of 40 features
    (small and large states take different undo paths: pending updates, journals
    that switch to a copy).
    """
    cls = type(learner)
    for d in (4, 40):
        X, y = contract_data(9, n=96, d=d)
        _inject_in_stream(learner, cls, X, y)
        _inject_in_fit_and_merge(learner, cls, X, y)


def _snapshot(model, X):
    state = fitted_state(model)
    state["coef_"] = np.array(model.coef_, copy=True)
    state["decision_function"] = model.decision_function(X)
    return state


def _inject_in_stream(learner, cls, X, y):
    if not hasattr(cls, "partial_fit"):
        return
    chunks = [(sp.csr_matrix(X[i:i + 24]), y[i:i + 24]) for i in range(0, len(y), 24)]
    # "auto" parameters as fit resolves them on all rows (a first chunk may give a
    # step that diverges later in the stream)
    resolved = resolved_params(_with_seed(learner).fit(X, y))
    clean = _with_seed(learner, **resolved)
    for Xc, yc in chunks:
        clean.partial_fit(Xc, yc, classes=[0, 1])
    model = _with_seed(learner, **resolved)
    with _Seams(cls) as seams:
        for i, (Xc, yc) in enumerate(chunks):
            call = lambda: model.partial_fit(Xc, yc, classes=[0, 1])  # noqa: E731
            if i == 0:  # a failed first call leaves the model unfitted
                probe = _with_seed(learner, **resolved)
                for strike in seams.strikes(
                        lambda: probe.partial_fit(Xc, yc, classes=[0, 1])):
                    seams.fail_at(strike, call, {}, model, "first partial_fit")
                call()
                continue
            probe = copy.deepcopy(model)
            strikes = seams.strikes(lambda: probe.partial_fit(Xc, yc, classes=[0, 1]))
            before = fitted_state(model)
            for strike in strikes:
                seams.fail_at(strike, call, before, model, f"partial_fit chunk {i}")
            call()
    assert_same_state(_snapshot(clean, X), _snapshot(model, X),
                      "a stream continued after failed calls differs from the stream "
                      "without them")


def _inject_in_fit_and_merge(learner, cls, X, y):
    half = len(y) // 2
    model = _with_seed(learner).fit(X[:half], y[:half])
    before = fitted_state(model)
    with _Seams(cls) as seams:
        refit = lambda: model.fit(X[half:], y[half:])  # noqa: E731
        probe = copy.deepcopy(model)
        for strike in seams.strikes(lambda: probe.fit(X[half:], y[half:])):
            seams.fail_at(strike, refit, before, model, "fit of a fitted model")
        if traits_of(cls).merge is None:
            return
        model = _with_seed(learner, **resolved_params(model)).fit(X[:half], y[:half])
        before = fitted_state(model)
        # a part of another seed (OPAUCr needs independent draws), or of the same
        # seed (a learner on a feature map needs the same map)
        for seed in (1, 0):
            other = _with_seed(learner, seed, **resolved_params(model)).fit(X[:half], y[:half])
            probe = copy.deepcopy(model)
            try:
                strikes = seams.strikes(lambda: probe.merge(other))
            except ValueError:
                continue
            for strike in strikes:
                seams.fail_at(strike, lambda: model.merge(other), before, model, "merge")
            return
        raise AssertionError("no part merges with the model, whatever its seed")


def check_verbose_lines(learner):
    """``verbose=1`` prints one progress line per pass (``n_passes_`` of them)."""
    if "verbose" not in learner.get_params():
        return
    import contextlib

    X, y = contract_data(8)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        model = _with_seed(learner)
        model.set_params(verbose=1)
        model.fit(X, y)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("-- ")]
    passes = getattr(model, "n_passes_", None)
    if isinstance(passes, numbers.Integral):
        assert len(lines) == passes, (len(lines), passes)
    assert lines and all("train AUC" in line for line in lines), out.getvalue()


def check_sample_weight(learner):
    """``sample_weight`` in ``fit`` and ``partial_fit`` (see the module docstring)."""
    X, y = contract_data(9, n=48)  # 72 repeated rows: the check fits 6 models
    weights = np.random.default_rng(9).integers(0, 4, X.shape[0])
    weights[:2] = 1  # both classes keep weight
    model = _with_seed(learner).fit(X, y)
    before = fitted_state(model)
    own_fit = getattr(type(learner), "_fit", None)
    from aucopt.base import BaseLearner

    if own_fit is not None and own_fit is not BaseLearner._fit \
            and "sample_weight" not in inspect.signature(own_fit).parameters:
        try:
            model.fit(X, y, sample_weight=weights)
        except TypeError:
            assert_same_state(before, fitted_state(model), "after refusing sample_weight")
            return
        raise AssertionError("a learner whose _fit takes no sample_weight ignored it")
    keep = {"shuffle": False} if "shuffle" in learner.get_params() else {}
    online = hasattr(learner, "partial_fit")
    _same_model(_with_seed(learner).fit(X, y, sample_weight=np.ones(X.shape[0])), model, X,
                "fit with weights 1")
    # a learner that weighs its rows in its own sums equals the repeated rows to rounding
    weighs = traits_of(learner).weighs_rows and not traits_of(learner).row_map
    for what, w, X_ref, y_ref in (
            ("integer weights", weights, X.repeat(weights, axis=0), y.repeat(weights)),
            ("zero weights", (weights > 0).astype(float), X[weights > 0], y[weights > 0])):
        a = _with_seed(learner).fit(X, y, sample_weight=w)
        b = _with_seed(learner).fit(X_ref, y_ref)
        if weighs and what == "integer weights":
            np.testing.assert_allclose(a.decision_function(X), b.decision_function(X),
                                       rtol=1e-10, atol=1e-12,
                                       err_msg="fit with integer weights")
        else:
            _same_model(a, b, X, f"fit with {what}")
        if what == "integer weights":
            _same_model(a, _with_seed(learner).fit(sp.csr_matrix(X), y, sample_weight=w),
                        X, "CSR input with integer weights")
        if online:
            chunked = _with_seed(learner, **keep)
            chunked.partial_fit(X, y, classes=[0, 1], sample_weight=w)
            repeated = _with_seed(learner, **keep)
            repeated.partial_fit(X_ref, y_ref, classes=[0, 1])
            _same_model(chunked, repeated, X, f"partial_fit with {what}")
    nan = weights.astype(float)
    nan[3] = np.nan
    negative = weights.astype(float)
    negative[4] = -1.0
    bad = [weights[:-1], nan, negative, np.zeros(X.shape[0]), np.ones((X.shape[0], 2)),
           np.where(y == 1, 0.0, 1.0)]  # the last: no weight on a class (refused by fit)
    for k, w in enumerate(bad):
        for method in ("fit", "partial_fit") if online and k < len(bad) - 1 else ("fit",):
            try:
                getattr(model, method)(X, y, sample_weight=w)
            except ValueError:
                pass
            else:
                raise AssertionError(f"{method} with bad sample_weight {w!r} did not raise "
                                     "ValueError")
            assert_same_state(before, fitted_state(model), f"after {method} with bad "
                              "sample_weight")


class _Frame:
    """A dataframe as the learners read one (``columns`` and the array of its values),
    so that the contract needs no pandas."""

    def __init__(self, values, columns):
        self.values = np.asarray(values)
        self.columns = list(columns)
        self.shape = self.values.shape

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


def check_feature_names(learner):
    """A dataframe's column names: kept in ``feature_names_in_`` (an object array),
    saved and loaded; a later call with other names raises ``ValueError`` (new,
    missing or reordered), one without names warns; a refit without names drops
    them; ``merge`` refuses models fitted on other names."""
    import warnings

    import aucopt

    X, y = contract_data(9)
    names = [f"f{i}" for i in range(X.shape[1])]
    model = _with_seed(learner).fit(_Frame(X, names), y)
    fitted = model.feature_names_in_
    assert isinstance(fitted, np.ndarray) and fitted.dtype == object, fitted
    assert fitted.tolist() == names
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = model.decision_function(_Frame(X, names))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plain = model.decision_function(X)
    assert any("does not have valid feature names" in str(w.message) for w in caught)
    np.testing.assert_array_equal(plain, scores)
    for other in (names[::-1], names[:-1] + ["other"]):
        try:
            model.decision_function(_Frame(X, other))
        except ValueError as exc:
            assert "feature names should match" in str(exc), exc
        else:
            raise AssertionError(f"decision_function on columns {other} did not raise")
    buf = io.BytesIO()
    model.save(buf)
    buf.seek(0)
    assert aucopt.load(buf).feature_names_in_.tolist() == names
    if hasattr(model, "partial_fit"):
        before = fitted_state(model)
        try:
            model.partial_fit(_Frame(X, names[::-1]), y)
        except ValueError:
            assert_same_state(before, fitted_state(model), "after partial_fit on other "
                              "columns")
        else:
            raise AssertionError("partial_fit on reordered columns did not raise")
    if traits_of(type(model)).merge is not None:
        unnamed = _with_seed(learner).fit(X, y)
        try:
            model.merge(unnamed)
        except ValueError as exc:
            assert "feature names" in str(exc), exc
        else:
            raise AssertionError("merge of models with and without names did not raise")
    assert "feature_names_in_" not in model.fit(X, y).__dict__  # a refit on an array


def check_learner(learner, bad_params=()):
    """Run every check of the contract on ``learner`` (an unfitted template)."""
    for check in (check_not_fitted, check_dense_equals_csr, check_same_seed_same_model,
                  check_streaming, check_save_load, check_interrupt_rolls_back,
                  check_failed_call_leaves_model_unchanged, check_verbose_lines,
                  check_sample_weight, check_feature_names):
        check(learner)
    check_failed_calls_leave_model(learner, bad_params)
