"""Merging models trained on different data (BaseLearner.merge, aucopt.merge).

Exact learners: the merged statistics equal those of the concatenated data, computed
here with plain numpy, and the merged weights are the minimiser of the pairwise
square loss computed from every pair (or from the dense sketched covariances).
Averaging learners: the merged parameters are the weighted mean of the parts'.
"""
import copy

import numpy as np
import pytest
import scipy.sparse as sp

import aucopt
from aucopt.datasets import Scaler, load
from aucopt.exceptions import NotFittedError
from aucopt.registry import BUILTIN, get_class
from reference import optroc_bruteforce, pairwise_square_minimiser, sketched_square_minimiser

NAMES = sorted(n for n, origin in aucopt.available().items() if origin == BUILTIN)
MAPPED = {n for n in NAMES if get_class(n).traits.row_map}
EXACT = [n for n in NAMES if get_class(n).traits.merge == "exact"]
AVERAGE = [n for n in NAMES if get_class(n).traits.merge == "average" and n not in MAPPED]
NOT_MERGEABLE = [n for n in NAMES if get_class(n).traits.merge is None]
CUT = 170  # first part: rows [0, CUT), second: the rest


@pytest.fixture(scope="module")
def data():
    X, y = load("ionosphere")
    X = Scaler("standard").fit(X.toarray()).transform(X.toarray())
    perm = np.random.default_rng(0).permutation(X.shape[0])
    return X[perm], np.where(y[perm] > 0, 1.0, -1.0)


def _explicit(name, X, y, **extra):
    """Parameters with the 'auto' ones fixed to the values a fit on (X, y) resolves
    (so that models fitted on parts agree on them), a few epochs at most."""
    cls = get_class(name)
    params = dict(extra)
    if "n_epochs" in cls().get_params() and name != "spdam":
        # the one-pass learners' merges are of their papers' single pass
        params.setdefault("n_epochs", 1 if cls.traits.stream == "chunks" else 2)
    # seeded: uni_exp's "auto" step is searched by passes in the fit's row order
    seed = {"random_state": 0} if "random_state" in cls().get_params() else {}
    probe = cls(**params, **seed).fit(X, y)
    params.update({k: getattr(probe, k + "_") for k in cls._auto_params})
    return params


def _parts(name, X, y, seeds=(1, 2), **extra):
    cls = get_class(name)
    params = _explicit(name, X, y, **extra)
    seeded = "random_state" in cls().get_params()
    return [cls(**params, **({"random_state": s} if seeded else {})).fit(Xp, yp)
            for s, (Xp, yp) in zip(seeds, [(X[:CUT], y[:CUT]), (X[CUT:], y[CUT:])])]


def _state(model):
    """Every declared state value (copies), to compare a model before and after."""
    return {k: copy.deepcopy(v) for k, v in model.__dict__.items()
            if k in model._state_spec() and not isinstance(v, np.random.Generator)}


def _assert_same_state(before, model):
    after = _state(model)
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(np.asarray(before[k]), np.asarray(after[k]), err_msg=k)


# --------------------------------------------------------------------------- exact


@pytest.mark.parametrize("name", ["opauc", "adaoam"])
def test_covariance_statistics_add_up_and_merge_solves(name, data):
    X, y = data
    a, b = _parts(name, X, y, eta=0.01, lam=0.05)
    merged = aucopt.merge([a, b])
    for c, sign in enumerate((-1.0, 1.0)):
        Xc = X[y == sign]
        assert merged.class_count_[c] == Xc.shape[0]
        np.testing.assert_allclose(merged.class_sum_[c], Xc.sum(axis=0), rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(merged.class_sxx_[c], np.triu(Xc.T @ Xc), rtol=1e-11,
                                   atol=1e-11)
    assert merged.t_ == X.shape[0]
    w = pairwise_square_minimiser(X, y, 0.05)
    np.testing.assert_allclose(merged.coef_, w, rtol=1e-9, atol=1e-12 * np.abs(w).max())
    single = get_class(name)(eta=0.01, lam=0.05, n_epochs=1, random_state=3).fit(X, y).solve()
    np.testing.assert_allclose(merged.coef_, single.coef_, rtol=1e-10,
                               atol=1e-10 * np.abs(w).max())
    # the parts' online iterates are not the minimiser: merging did replace them
    assert np.abs(a.coef_ - w).max() > 1e-3 * np.abs(w).max()


def test_adaoam_merge_adds_the_squared_gradients(data):
    X, y = data
    a, b = _parts("adaoam", X, y, eta=0.01, lam=0.05)
    merged = aucopt.merge([a, b])
    np.testing.assert_allclose(merged.weights_[:, 1], a.weights_[:, 1] + b.weights_[:, 1],
                               rtol=1e-14)


def _opaucr_parts(X, y, tau=4, seed=5):
    """Two OPAUCr parts drawing from consecutive segments of seed's stream."""
    a = aucopt.get("opaucr", tau=tau, eta=0.01, lam=0.05, shuffle=False, n_epochs=1,
                   random_state=seed).fit(X[:CUT], y[:CUT])
    rest = np.random.default_rng(seed)
    rest.standard_normal(CUT * tau)  # the draws of the first part's rows
    b = aucopt.get("opaucr", tau=tau, eta=0.01, lam=0.05, shuffle=False, n_epochs=1,
                   random_state=rest).fit(X[CUT:], y[CUT:])
    return a, b


def test_opaucr_sketches_add_up_to_the_sketch_of_one_pass(data):
    X, y = data
    tau = 4
    a, b = _opaucr_parts(X, y, tau)
    merged = aucopt.merge([a, b])
    R = np.random.default_rng(5).standard_normal((X.shape[0], tau)) / np.sqrt(tau)
    Z = np.stack([X[y == s].T @ R[y == s] for s in (-1.0, 1.0)])
    q = np.stack([R[y == s].sum(axis=0) for s in (-1.0, 1.0)])
    np.testing.assert_allclose(merged.sketch_, Z, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(merged.sketch_q_, q, rtol=1e-12, atol=1e-12)
    w = sketched_square_minimiser(Z, q, merged.class_count_, merged.class_sum_, 0.05)
    scale = np.abs(w).max()
    np.testing.assert_allclose(merged.coef_, w, rtol=1e-9, atol=1e-12 * scale)
    single = aucopt.get("opaucr", tau=tau, eta=0.01, lam=0.05, shuffle=False, n_epochs=1,
                        random_state=5).fit(X, y).solve()
    np.testing.assert_allclose(merged.coef_, single.coef_, rtol=1e-10, atol=1e-10 * scale)
    # the merged stream continues where the last part's ended
    assert merged.random_state_.bit_generator.state == b.random_state_.bit_generator.state


def test_opaucr_segment_streams_start_where_the_rows_before_leave_the_stream():
    streams = aucopt.get("opaucr", tau=3, random_state=9)._segment_streams([7, 5, 2])
    reference = np.random.default_rng(9)
    for size, stream in zip([7, 5, 2], streams):
        assert stream.bit_generator.state == reference.bit_generator.state
        reference.standard_normal(size * 3)


def test_opaucr_solve_keeps_the_factored_products_exact(data):
    X, y = data
    model = aucopt.merge(_opaucr_parts(X, y))
    for stage in ("solved", "continued"):
        Z, s = model.sketch_, model.class_sum_
        u = model.weights_scale_ * model.weights_[:, 0]
        for c in range(2):
            np.testing.assert_allclose(model.sketch_w_[c], Z[c].T @ u, atol=1e-9)
            for e in range(2):
                np.testing.assert_allclose(model.sketch_gram_[c, e], Z[c].T @ Z[e], atol=1e-9)
                np.testing.assert_allclose(model.sketch_sum_[c, e], Z[c].T @ s[e], atol=1e-9)
        np.testing.assert_allclose(model.sum_gram_, s @ s.T, rtol=1e-12)
        np.testing.assert_allclose(model.decision_function(X),
                                   X @ model.coef_ + model.intercept_, atol=1e-9)
        model.partial_fit(X[:40], y[:40])


def test_opaucr_refuses_parts_seeded_alike(data):
    X, y = data
    params = dict(tau=4, eta=0.01, lam=0.05, n_epochs=1)
    a = aucopt.get("opaucr", **params, random_state=5).fit(X[:CUT], y[:CUT])
    b = aucopt.get("opaucr", **params, random_state=5).fit(X[CUT:], y[CUT:])
    with pytest.raises(ValueError, match="same random_state"):
        a.merge(b)
    independent = aucopt.get("opaucr", tau=4, eta=0.01, lam=0.05, n_epochs=1,
                             random_state=6).fit(X[CUT:], y[CUT:])
    assert aucopt.merge([a, independent]).t_ == X.shape[0]


def test_solve_with_rows_puts_the_threshold_at_optroc(data):
    X, y = data
    model = aucopt.get("opauc", eta=0.01, lam=0.05, random_state=0).fit(X, y)
    kept = model.intercept_
    assert model.solve().intercept_ == kept
    model.solve(X, y)
    raw = X @ model.coef_
    acc, threshold = optroc_bruteforce(y, raw)
    assert np.mean(model.predict(X) == y) == acc
    assert (raw > -model.intercept_).tolist() == (raw > threshold).tolist()


@pytest.mark.parametrize("name", EXACT)
def test_failed_solve_or_merge_leaves_the_model_unchanged(name, data):
    X, y = data
    kw = {"tau": 4} if name == "opaucr" else {}
    pos = y > 0
    cls = get_class(name)
    one = cls(eta=0.01, lam=0.05, random_state=1, **kw).partial_fit(X[pos], y[pos],
                                                                     classes=[-1.0, 1.0])
    other = cls(eta=0.01, lam=0.05, random_state=2, **kw).partial_fit(X[pos][:20], y[pos][:20],
                                                                      classes=[-1.0, 1.0])
    before = _state(one)
    with pytest.raises(ValueError, match="both classes"):
        one.solve()
    _assert_same_state(before, one)
    with pytest.raises(ValueError, match="both classes"):
        one.merge(other)
    _assert_same_state(before, one)
    if name != "adaoam":  # adaoam refuses lam = 0 as a parameter
        with pytest.raises(ValueError, match="lam > 0"):
            cls(eta=0.01, lam=0.0, **kw).fit(X, y).solve()


def test_exact_merge_takes_no_weights(data):
    X, y = data
    a, b = _parts("opauc", X, y, eta=0.01, lam=0.05)
    with pytest.raises(ValueError, match="weights do not apply"):
        a.merge(b, weights=[1, 1])


# --------------------------------------------------------------------------- averaging


def _iterate(model):
    """The current iterate of a learner whose coef_ is a running average."""
    return model.weights_scale_ * model.weights_[:, 0]


@pytest.mark.parametrize("name", AVERAGE)
@pytest.mark.parametrize("weights", [None, [3.0, 1.0]])
def test_averaging_merge_is_the_weighted_mean(name, weights, data):
    X, y = data
    a, b = _parts(name, X, y)
    merged = aucopt.merge([a, b], weights=weights)
    if weights is None:
        rows = [m.t_ for m in (a, b)] if "t_" in a.__dict__ else [1.0, 1.0]
        p = np.array(rows, dtype=float) / sum(rows)
    else:
        p = np.array(weights) / sum(weights)
    scale = np.abs(a.coef_).max() + np.abs(b.coef_).max()
    if getattr(get_class(name), "_averaged", False):
        # the iterate is averaged; the running averages are pooled over all snapshots,
        # or (snapshot weights growing with t: ASAM, PSAM) averaged like the iterate
        np.testing.assert_allclose(_iterate(merged), p[0] * _iterate(a) + p[1] * _iterate(b),
                                   rtol=1e-12, atol=1e-12 * scale)
        qa, qb = a.weights_avg_q_, b.weights_avg_q_
        assert merged.weights_avg_q_ == qa + qb
        pa = p[0] if "w_avg" in get_class(name)._merge_spec() else qa / (qa + qb)
        np.testing.assert_allclose(merged.coef_, pa * a.coef_ + (1.0 - pa) * b.coef_,
                                   rtol=1e-12, atol=1e-12 * scale)
    else:
        np.testing.assert_allclose(merged.coef_, p[0] * a.coef_ + p[1] * b.coef_,
                                   rtol=1e-12, atol=1e-12 * scale)
    rules = get_class(name)._merge_spec()
    for key in ("t_", "n_updates_", "n_pos_"):
        if key in a.__dict__:
            both = np.array([getattr(a, key), getattr(b, key)])
            expected = both.sum() if rules[key] == "sum" else round(float(p @ both))
            assert getattr(merged, key) == expected, key
    for key in ("class_count_", "class_sum_"):
        if key in a.__dict__:
            np.testing.assert_allclose(getattr(merged, key), getattr(a, key) + getattr(b, key))
    for key in ("covariance_", "a_last_"):
        if key in a.__dict__:
            np.testing.assert_allclose(getattr(merged, key),
                                       p[0] * getattr(a, key) + p[1] * getattr(b, key))
    if name == "solam":  # pooled like the averaged w
        qa, qb = a.weights_avg_q_, b.weights_avg_q_
        assert merged.alpha_ == pytest.approx((qa * a.alpha_ + qb * b.alpha_) / (qa + qb))
    if name == "cbr_diag":
        np.testing.assert_allclose(merged.variance_, p[0] * a.variance_ + p[1] * b.variance_)
    assert merged.intercept_ == pytest.approx(p[0] * a.intercept_ + p[1] * b.intercept_)
    # an ordinary model: checked on load, and it continues
    again = aucopt.load(_saved(merged))
    np.testing.assert_array_equal(again.decision_function(X), merged.decision_function(X))
    if hasattr(merged, "partial_fit"):
        merged.partial_fit(X[:50], y[:50])


def _saved(model, box=[]):
    import tempfile

    if not box:
        box.append(tempfile.mkdtemp())
    path = f"{box[0]}/model.npz"
    model.save(path)
    return path


def test_spam_inner_variables_follow_the_merged_weights_and_means(data):
    X, y = data
    merged = aucopt.merge(_parts("spam", X, y))
    m = merged.class_sum_ / merged.class_count_[:, None]
    assert merged.a_ == pytest.approx(merged.coef_ @ m[1], rel=1e-12)
    assert merged.b_ == pytest.approx(merged.coef_ @ m[0], rel=1e-12)


def test_iterative_parameter_mixing_counts_the_base_once(data):
    X, y = data
    params = _explicit("asam", X, y, n_epochs=1)
    base = aucopt.get("asam", random_state=0, **params).fit(X, y)
    parts = [copy.deepcopy(base).partial_fit(Xp, yp)
             for Xp, yp in [(X[:CUT], y[:CUT]), (X[CUT:], y[CUT:])]]
    merged = aucopt.merge(parts, base=base)
    steps = np.array([m.t_ - base.t_ for m in parts])
    assert steps.tolist() == [CUT, X.shape[0] - CUT]
    p = steps / steps.sum()
    assert merged.t_ == base.t_ + steps.sum()  # the parts' steps add up
    np.testing.assert_allclose(_iterate(merged),
                               p[0] * _iterate(parts[0]) + p[1] * _iterate(parts[1]),
                               rtol=1e-12, atol=1e-14)
    # the snapshot weights: the base's once, then every part's own; the averages
    # (whose snapshot weights grow with t) averaged like the iterates
    q = [m.weights_avg_q_ for m in (base, *parts)]
    assert merged.weights_avg_q_ == pytest.approx(q[1] + q[2] - q[0], rel=1e-14)
    np.testing.assert_allclose(merged.coef_, p[0] * parts[0].coef_ + p[1] * parts[1].coef_,
                               rtol=1e-10, atol=1e-13)
    with pytest.raises(ValueError, match="fewer rows than base"):
        aucopt.merge([base, parts[0]], base=parts[1])


@pytest.mark.parametrize("form", ["dense", "csr"])
def test_fifo_buffers_keep_the_most_recent_rows_of_the_concatenation(form, data):
    X, y = data
    Xf = X if form == "dense" else sp.csr_matrix(X)
    params = _explicit("oam_seq", X, y, buffer="fifo", buffer_size=7, shuffle=False)
    a = aucopt.get("oam_seq", **params).fit(Xf[:CUT], y[:CUT])
    b = aucopt.get("oam_seq", **params).fit(Xf[CUT:CUT + 12], y[CUT:CUT + 12])
    merged = aucopt.merge([a, b])
    rows = np.arange(CUT + 12)  # arrival index = row of the concatenation
    buffers = merged._open_buffers(merged.__dict__)
    for c, sign in enumerate((-1.0, 1.0)):
        expected = rows[y[:CUT + 12] == sign][-7:]
        held = buffers.contents(c)
        assert [t for t, _, _ in held] == expected.tolist()
        for t, idx, val in held:
            dense = np.zeros(X.shape[1])
            dense[idx] = val
            np.testing.assert_array_equal(dense, X[t])
        assert merged.buffer_seen_[c] == np.sum(y[:CUT + 12] == sign)
    aucopt.load(_saved(merged))  # the merged buffers pass the load checks


def test_reservoir_merge_draws_a_uniform_sample_of_all_rows(data):
    X, y = data
    params = _explicit("oam_seq", X, y, buffer_size=10)
    a = aucopt.get("oam_seq", **params, random_state=1).fit(X[:300], y[:300])
    b = aucopt.get("oam_seq", **params, random_state=2).fit(X[300:], y[300:])
    seen = np.array([a.buffer_seen_, b.buffer_seen_])  # per part and class
    from_a, slots = np.zeros(2), 0
    for seed in range(300):
        model = copy.deepcopy(a)
        model.random_state_ = np.random.default_rng(seed)
        merged = model.merge(b)
        buffers = merged._open_buffers(merged.__dict__)
        for c in range(2):
            arrivals = [t for t, _, _ in buffers.contents(c)]
            assert len(arrivals) == min(10, seen[:, c].sum())
            assert len(set(arrivals)) == len(arrivals)
            from_a[c] += sum(t < a.t_ for t in arrivals)
        slots += 10
    # each held row stands for seen / held rows of its part: the share of the
    # first part's rows is its share of the rows seen (binomial-like spread)
    share = seen[0] / seen.sum(axis=0)
    np.testing.assert_allclose(from_a / slots, share, atol=0.03)


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("name", NOT_MERGEABLE)
def test_learners_that_do_not_merge_say_so(name, data):
    X, y = data
    cls = get_class(name)
    kw = {"n_components": 8} if "n_components" in cls().get_params() else {}
    a = cls(**kw).fit(X[:CUT], y[:CUT])
    with pytest.raises(TypeError, match=f"{cls.__name__} cannot be merged"):
        a.merge(cls(**kw).fit(X[CUT:], y[CUT:]))


def test_incompatible_models_are_refused_and_left_unchanged(data):
    X, y = data
    a, b = _parts("psam", X, y)
    before = _state(a)
    params = _explicit("psam", X, y)
    with pytest.raises(TypeError, match="same class"):
        a.merge(aucopt.get("asam", **params).fit(X, y))
    with pytest.raises(ValueError, match="rskip=8 vs 16"):
        a.merge(aucopt.get("psam", **{**params, "rskip": 8}).fit(X, y))
    with pytest.raises(ValueError, match="features"):
        a.merge(aucopt.get("psam", **params).fit(X[:, :5], y))
    with pytest.raises(ValueError, match="classes"):
        a.merge(aucopt.get("psam", **params).fit(X, np.where(y > 0, 2.0, 0.0)))
    auto = {**params, "lam": "auto"}
    with pytest.raises(ValueError, match="resolved on different data"):
        aucopt.get("psam", **auto).fit(X[:100], y[:100]).merge(
            aucopt.get("psam", **auto).fit(X[100:], y[100:]))
    with pytest.raises(NotFittedError):
        a.merge(aucopt.get("psam", **params))
    with pytest.raises(ValueError, match="weights must hold 2"):
        a.merge(b, weights=[1.0])
    with pytest.raises(ValueError, match="weights must hold 2"):
        a.merge(b, weights=[1.0, -1.0])
    _assert_same_state(before, a)


def test_buffers_of_different_forms_do_not_merge(data):
    X, y = data
    params = _explicit("cbr_diag", X, y)
    a = aucopt.get("cbr_diag", **params).fit(X[:CUT], y[:CUT])
    b = aucopt.get("cbr_diag", **params).fit(sp.csr_matrix(X[CUT:]), y[CUT:])
    with pytest.raises(ValueError, match="dense and sparse"):
        a.merge(b)


def test_learners_on_feature_maps_merge_only_with_the_same_map(data):
    X, y = data
    kw = dict(n_components=16, sigma=3.0, lam=1e-3, n_epochs=1)
    a = aucopt.get("fasam", random_state=0, **kw).fit(X[:CUT], y[:CUT])
    same_map = aucopt.get("fasam", random_state=0, **kw).fit(X[CUT:], y[CUT:])
    np.testing.assert_allclose(aucopt.merge([a, same_map]).coef_,
                               (CUT * a.coef_ + (X.shape[0] - CUT) * same_map.coef_)
                               / X.shape[0], rtol=1e-12, atol=1e-14)
    other_map = aucopt.get("fasam", random_state=1, **kw).fit(X[CUT:], y[CUT:])
    with pytest.raises(ValueError, match="different feature maps"):
        a.merge(other_map)


def test_a_failure_inside_the_merge_leaves_the_model_unchanged(data, monkeypatch):
    X, y = data
    a, b = _parts("oam_seq", X, y)
    before = _state(a)
    state = a.random_state_.bit_generator.state

    def fail(self, finish):
        raise KeyboardInterrupt

    monkeypatch.setattr(type(a), "_merge_finish", fail)
    with pytest.raises(KeyboardInterrupt):
        a.merge(b)
    _assert_same_state(before, a)
    assert a.random_state_.bit_generator.state == state


def test_module_merge_leaves_its_inputs_alone(data):
    X, y = data
    a, b = _parts("sam", X, y)
    states = _state(a), _state(b)
    merged = aucopt.merge([a, b])
    assert merged is not a
    _assert_same_state(states[0], a)
    _assert_same_state(states[1], b)


def test_every_learner_declares_and_documents_how_it_merges(capsys):
    from aucopt.cli import main

    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    column = lines[0].split().index("merge")
    for name in NAMES:
        cls = get_class(name)
        assert cls.traits.merge in ("exact", "average", None), name
        assert ("Merging:" in cls.__doc__) == (cls.traits.merge is not None), name
        row = next(line.split() for line in lines[1:] if line.split()[0] == name)
        assert (cls.traits.merge or "-") in row, name
    assert column > 0


@pytest.mark.parametrize("name", AVERAGE)
@pytest.mark.parametrize("weights, ratio", [([1e308, 1e308], [1, 1]),
                                            ([1.7e308, 5e307], [3.4, 1]),
                                            ([5e-324, 5e-324], [1, 1]),
                                            ([1e-310, 0.0], [1, 0]),
                                            ([1e308, 5e-324], [1, 0])])
def test_extreme_merge_weights_are_normalised_stably(name, weights, ratio, data):
    """Weights whose sum overflows, subnormal or zero weights: the merge equals the
    one with the same weights at a normal scale (it used to give w = 0 for
    [1e308, 1e308]: their sum overflowed and w / inf = 0)."""
    X, y = data
    a, b = _parts(name, X, y)
    merged = aucopt.merge([a, b], weights=weights)
    plain = aucopt.merge([a, b], weights=ratio)
    np.testing.assert_allclose(merged.coef_, plain.coef_, rtol=1e-12,
                               atol=1e-12 * np.abs(plain.coef_).max())
    assert np.abs(merged.coef_).max() > 0
