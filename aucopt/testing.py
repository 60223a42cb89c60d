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
  ``_stream = "chunks"``), or ``n_epochs`` calls of ``partial_fit`` on the whole
  data equal ``fit`` (``_stream = "epochs"``);
* ``save`` / :func:`aucopt.load` round trip gives identical scores, and training
  resumes identically after loading;
* failed calls (bad parameters, NaN, wrong feature count, one class) and interrupted
  calls (``KeyboardInterrupt`` after a pass did its work) leave a fitted model
  exactly as it was (every fitted attribute, bit for bit, and the random stream);
* ``sample_weight`` has scikit-learn's semantics: weights of 1 give the unweighted
  model, integer weights the model of the repeated rows (copies one after the
  other), zero weights the model without those rows, all bit for bit (``fit`` and
  ``partial_fit``; to 1e-10 for integer weights of a learner that weighs its rows
  in its own sums, ``_weighs_rows``, as BAM); dense and CSR weighted fits agree bit
  for bit; bad weights raise ``ValueError`` and leave the model as it was (a
  plugin whose own ``_fit`` takes no ``sample_weight`` must refuse them with
  ``TypeError``);
* ``verbose`` prints one line per pass; prediction before fitting raises.
"""
import inspect
import io
import numbers

import numpy as np
import scipy.sparse as sp

from aucopt.exceptions import NotFittedError

__all__ = ["check_learner", "check_dense_equals_csr", "check_same_seed_same_model",
           "check_streaming", "check_save_load", "check_failed_calls_leave_model",
           "check_interrupt_rolls_back", "check_verbose_lines", "check_not_fitted",
           "check_sample_weight",
           "contract_data", "fitted_state", "assert_same_state"]


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
    """Every fitted attribute, deep-copied, with generators as their states (compare
    two with :func:`assert_same_state`)."""
    out = {}
    for key, value in vars(learner).items():
        if not key.endswith("_") or key.startswith("__"):
            continue
        if isinstance(value, np.random.Generator):
            out[key] = ("generator", value.bit_generator.state)
        elif isinstance(value, np.ndarray):
            out[key] = value.copy()
        else:
            out[key] = value
    return out


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
    mode = getattr(type(learner), "_stream", None)
    if mode is None or not hasattr(learner, "partial_fit"):
        return
    X, y = contract_data(3)
    # a stream is taken in its order: compare with a fit that does not shuffle
    keep = {"shuffle": False} if "shuffle" in learner.get_params() else {}
    if mode == "chunks":
        fitted = _with_seed(learner, **keep).fit(X, y)
        # data-derived ("auto") parameters are fixed by the first data a model sees:
        # the first chunk for a stream, all rows for fit; give the stream fit's values
        resolved = {name: fitted.__dict__[name + "_"]
                    for name in getattr(type(learner), "_auto_params", {})}
        stream = _with_seed(learner, **keep, **resolved)
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
    weighs = getattr(type(learner), "_weighs_rows", False) \
        and not getattr(type(learner), "_repeats_input", False)
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


def check_learner(learner, bad_params=()):
    """Run every check of the contract on ``learner`` (an unfitted template)."""
    for check in (check_not_fitted, check_dense_equals_csr, check_same_seed_same_model,
                  check_streaming, check_save_load, check_interrupt_rolls_back,
                  check_verbose_lines, check_sample_weight):
        check(learner)
    check_failed_calls_leave_model(learner, bad_params)
