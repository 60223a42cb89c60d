"""Kernelized compositions: each is exactly its feature map followed by its learner."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import aucopt
from aucopt.exceptions import ConstantModelWarning, FeatureScaleWarning, InputLimitWarning
from aucopt.features import KMeansNystroem, RandomFourierFeatures
from aucopt.learners.buffered import _BufferOGD

COMPOSITIONS = {
    # name: (map class, map params, fixed map params, learner name, learner params)
    "nbam": (KMeansNystroem, {"n_components": 40}, {}, "bam", {"C": 2.0}),
    "fbam": (RandomFourierFeatures, {"n_components": 60},
             {"variant": "cos_phase", "width_factor": 8.0}, "bam",
             {"C": 0.5}),
    "nasam": (KMeansNystroem, {"n_components": 40}, {}, "asam",
              {"lam": 1e-3, "n_epochs": 2}),
    "fasam": (RandomFourierFeatures, {"n_components": 60},
              {"variant": "cos_phase", "width_factor": 8.0}, "asam", {"lam": 1e-3, "n_epochs": 2}),
    # sampling="replacement": NPSAM's default (PSAM's is "cycles")
    "npsam": (KMeansNystroem, {"n_components": 40}, {"width_factor": 8.0}, "psam",
              {"lam": 1e-3, "n_epochs": 2, "sampling": "replacement"}),
    # three passes averaged: fcbr's defaults (CBR's own are "auto", the last iterate)
    "fcbr": (RandomFourierFeatures, {"n_components": 20},
             {"variant": "sincos", "width_factor": 8.0}, "cbr",
             {"buffer_size": 10, "C": 0.05, "n_epochs": 3, "average_passes": True}),
    "foam": (RandomFourierFeatures, {"n_components": 30},
             {"variant": "sincos", "width_factor": 8.0}, _BufferOGD, {"buffer_size": 20}),
}


def _rings(seed=0, n=300):
    """Two noisy concentric rings: no linear ranking separates them."""
    rng = np.random.default_rng(seed)
    radius = np.where(rng.random(n) < 0.3, 1.0, 2.0)
    angle = rng.uniform(0, 2 * np.pi, n)
    X = np.c_[radius * np.cos(angle), radius * np.sin(angle)] + 0.15 * rng.standard_normal(
        (n, 2))
    return X, (radius == 1.0).astype(int)


@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
@pytest.mark.parametrize("sparse", [False, True])
def test_composition_equals_map_then_learner_by_hand(name, sparse):
    map_cls, map_params, fixed, inner, params = COMPOSITIONS[name]
    X, y = _rings()
    Xin = sp.csr_matrix(X) if sparse else X
    model = aucopt.get(name, random_state=3, **map_params, **params).fit(Xin, y)
    fmap = map_cls(random_state=3, **map_params, **fixed).fit(Xin)
    Z = fmap.transform(Xin)
    np.testing.assert_array_equal(model.feature_map_.transform(Xin), Z)
    cls = aucopt.registry.get_class(inner) if isinstance(inner, str) else inner
    inner_params = {"random_state": 3} if "random_state" in cls._get_param_names() else {}
    with warnings.catch_warnings():  # NPSAM's wide kernel: the first coordinate dominates
        warnings.simplefilter("ignore", FeatureScaleWarning)  # (the composition maps X)
        by_hand = cls(**inner_params, **params).fit(Z, y)
    np.testing.assert_array_equal(model.coef_, by_hand.coef_)
    np.testing.assert_array_equal(model.decision_function(Xin), by_hand.decision_function(Z))
    assert model.n_features_in_ == 2 and model.coef_.shape == (Z.shape[1],)


@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
def test_kernelized_learner_ranks_what_its_linear_learner_cannot(name):
    _, map_params, _, inner, params = COMPOSITIONS[name]
    X, y = _rings(1)
    X_te, y_te = _rings(2)
    cls = aucopt.registry.get_class(inner) if isinstance(inner, str) else inner
    linear = cls(**params).fit(X, y).score(X_te, y_te)
    kernel = aucopt.get(name, random_state=0, **map_params, **params).fit(X, y)
    assert kernel.score(X_te, y_te) > 0.95 > linear + 0.2, (kernel.score(X_te, y_te), linear)


def test_map_is_fixed_after_fit_and_refit_replaces_it():
    X, y = _rings(3)
    model = aucopt.get("fasam", n_components=30, random_state=0).fit(X, y)
    first = model.feature_map_.frequencies_.copy()
    model.partial_fit(X[::-1].copy(), y[::-1].copy())
    np.testing.assert_array_equal(model.feature_map_.frequencies_, first)
    model.set_params(random_state=1).fit(X, y)
    assert not np.array_equal(model.feature_map_.frequencies_, first)
    with pytest.raises(ValueError, match="n_components"):
        aucopt.get("fbam", n_components=0).fit(X, y)


def test_noam_collects_support_vectors_then_learns_on_their_nystroem_map():
    X, y = _rings(4)
    X_te, y_te = _rings(5)
    model = aucopt.get("noam", n_landmarks=30, random_state=0).fit(X, y)
    fmap = model.feature_map_
    assert fmap.landmarks_.shape == (30, 2) and fmap.n_features_out_ == 12  # 0.4 Q
    # the landmarks are training rows (support vectors of the first phase)
    assert all(np.any(np.all(np.isclose(X, u), axis=1)) for u in fmap.landmarks_)
    assert model.score(X_te, y_te) > 0.95
    pair = np.array([np.flatnonzero(y == 0)[0], np.flatnonzero(y == 1)[0]])
    with pytest.warns(ConstantModelWarning):  # two rows: nothing to rank them by yet
        tiny = aucopt.get("noam", shuffle=False).fit(X[pair], y[pair])
    assert tiny.feature_map_.landmarks_.shape[0] == 2  # f = 0 violates the first pair


def test_noam_first_phase_holds_only_its_rows_dense():
    """NOAM's kernel OGD phase densifies the rows it holds (buffers and support
    vectors), not the whole sparse input (it used to: 60 GiB for 400k x 20k)."""
    import tracemalloc

    X = sp.random(600, 50_000, density=0.001, format="csr", random_state=0)
    y = np.arange(600) % 2
    learner = aucopt.get("noam", n_landmarks=20, buffer_size=10, random_state=0)
    tracemalloc.start()
    try:
        with pytest.warns(InputLimitWarning):  # wide rows: memory is the point here
            learner.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.25 * X.shape[0] * X.shape[1] * 8, peak



@pytest.mark.parametrize("name", ["nbam", "fbam", "nasam", "fasam", "npsam"])
def test_auto_components_follow_the_rows_of_fit_and_are_1600_for_a_stream(name):
    X, y = _rings(n=600)
    model = aucopt.get(name, random_state=0)
    assert model.n_components == "auto"
    fmap = model.fit(X, y).feature_map_
    fourier = name.startswith("f")
    assert (fmap.n_features_out_ if fourier else fmap.landmarks_.shape[0]) == 256
    if hasattr(model, "partial_fit"):
        fmap = aucopt.get(name, random_state=0).partial_fit(X[:300], y[:300]).feature_map_
        # Fourier: 1600 frequencies; Nystrom: all 300 rows of the first chunk are
        # landmarks (min(1600, n); "auto" on 300 rows would take 256)
        assert (fmap.n_features_out_ if fourier else fmap.landmarks_.shape[0]) == \
            (1600 if fourier else 300)


@pytest.mark.parametrize("name", ["fbam", "fasam", "fcbr", "foam", "noam", "nbam"])
def test_learners_with_a_width_limit_warn_on_wider_rows(name):
    """The Fourier learners (too coarse a kernel approximation on wide sparse rows)
    and NOAM (too few support vectors) warn, naming the Nystrom learners."""
    y = np.arange(200) % 2
    wide = sp.random(200, 12_000, density=0.003, format="csr", random_state=0)
    narrow = sp.random(200, 500, density=0.05, format="csr", random_state=0)
    size = "n_landmarks" if name == "noam" else "n_components"
    params = {size: 20, "random_state": 0}
    limited = aucopt.get(name).traits.max_features is not None
    assert limited == (name != "nbam")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputLimitWarning)
        aucopt.get(name, **params).fit(narrow, y)  # within the limit: silent
        if not limited:
            aucopt.get(name, **params).fit(wide, y)
            return
    with pytest.warns(InputLimitWarning, match="nbam / npsam"):
        aucopt.get(name, **params).fit(wide, y)


# ------------------------------------------------------------------ the generated classes

KERNELIZED = ["nbam", "fbam", "nasam", "fasam", "npsam", "fcbr", "foam", "noam"]


@pytest.mark.parametrize("name", KERNELIZED)
def test_parameters_are_every_parameter_of_the_learner_and_of_the_map(name):
    cls = aucopt.registry.get_class(name)
    comp = cls._composition
    assert "__init__" not in vars(cls)  # generated by compose, not written by hand
    params = cls().get_params()
    inner = set(comp.learner._get_param_names())
    mapped = {comp.renamed.get(p, p) for p in comp.feature_map._get_param_names()}
    assert inner <= set(params) and mapped <= set(params)
    assert set(params) == inner | mapped
    # a name both take goes to both parts
    model = cls(random_state=7, n_jobs=2)
    fmap = model._new_map()
    assert fmap.random_state == 7 and fmap.n_jobs == 2
    if "n_jobs" in inner:
        assert model.n_jobs == 2
    doc = cls.__doc__
    assert all(f"\n    {p} : " in doc or f"\n    {p}\n" in doc for p in params), name


@pytest.mark.parametrize("name", KERNELIZED)
def test_sklearn_clone_and_set_params(name):
    from sklearn.base import clone

    model = aucopt.get(name, random_state=3, block_size=128)
    copy = clone(model)
    assert type(copy) is type(model) and copy.get_params() == model.get_params()
    copy.set_params(block_size=64)
    assert copy._new_map().block_size == 64 and model.block_size == 128
    with pytest.raises(TypeError):
        type(model)(3)  # keyword only
    with pytest.raises(TypeError):
        type(model)(no_such_parameter=1)


def test_one_fit_validates_its_rows_once(monkeypatch):
    """One nbam.fit runs check_X once: the map takes the validated rows."""
    import sys

    import aucopt.validation as validation

    calls = []
    original = validation.check_X

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    for module in [m for n, m in sys.modules.items() if n.startswith("aucopt")]:
        if getattr(module, "check_X", None) is original:
            monkeypatch.setattr(module, "check_X", counted)
    X, y = _rings(6)
    model = aucopt.get("nbam", n_components=20, random_state=0).fit(X, y)
    assert len(calls) == 1
    model.decision_function(X)
    assert len(calls) == 2


def test_n_jobs_reaches_the_map(monkeypatch):
    import aucopt.features as features

    seen = []
    original = features._for_blocks

    def spy(n_rows, block_size, n_jobs, work):
        seen.append(n_jobs)
        return original(n_rows, block_size, n_jobs, work)

    monkeypatch.setattr(features, "_for_blocks", spy)
    X, y = _rings(7)
    for name in ("nbam", "npsam", "fcbr"):
        seen.clear()
        model = aucopt.get(name, n_components=20, n_jobs=2, random_state=0).fit(X, y)
        assert seen and set(seen) == {2}, (name, seen)
        assert model.feature_map_.n_jobs == 2


@pytest.mark.parametrize("name", KERNELIZED)
def test_the_fitted_map_is_a_saved_part_of_the_model(name, tmp_path):
    import json
    import zipfile

    X, y = _rings(8)
    size = "n_landmarks" if name == "noam" else "n_components"
    model = aucopt.get(name, **{size: 20}, random_state=0).fit(X, y)
    assert "feature_map_" in vars(model)  # an attribute, not rebuilt on access
    assert not [k for k in vars(model) if k.startswith("map_")]
    path = tmp_path / "m.npz"
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        members = zf.namelist()
    assert any(m.startswith("feature_map_.") for m in members)
    loaded = aucopt.load(path)
    assert type(loaded.feature_map_) is type(model.feature_map_)
    assert loaded.feature_map_.get_params() == model.feature_map_.get_params()
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    # a map that does not fit the model, bad map parameters, a map without its
    # parameters, a stray entry under the map: refused
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays["__aucopt_meta__"].tobytes())
    edits = [lambda m: m["attributes"].update({"feature_map_.n_features_in_": 3}),
             lambda m: m["parts"]["feature_map_"].update(n_components=-1),
             lambda m: m["parts"]["feature_map_"].update(no_such_parameter=1),
             lambda m: m["parts"].pop("feature_map_"),
             lambda m: m["parts"].update({"feature_map_.inner": {}}),
             lambda m: m["attributes"].update({"feature_map_.extra_": 1.0}),
             lambda m: m["attributes"].update({"other_.x_": 1.0})]
    for edit in edits:
        bad = json.loads(json.dumps(meta))
        edit(bad)
        arrays["__aucopt_meta__"] = np.frombuffer(json.dumps(bad).encode(), dtype=np.uint8)
        np.savez(path, **arrays)
        with pytest.raises(ValueError, match="malformed model file"):
            aucopt.load(path)


def test_a_file_of_the_old_layout_is_refused_naming_its_version(tmp_path):
    """Format 2 stored the map as map_* copies of its attributes: refused clearly."""
    import json

    X, y = _rings(9)
    path = tmp_path / "m.npz"
    model = aucopt.get("fbam", n_components=20, random_state=0).fit(X, y)
    model.save(path)
    with np.load(path) as npz:
        arrays = {k.replace("feature_map_.", "map_"): npz[k] for k in npz.files}
    meta = json.loads(arrays["__aucopt_meta__"].tobytes())
    meta["format_version"] = 2
    meta["arrays"] = [k.replace("feature_map_.", "map_") for k in meta["arrays"]]
    meta["attributes"] = {k.replace("feature_map_.", "map_"): v
                          for k, v in meta["attributes"].items()}
    del meta["parts"]
    arrays["__aucopt_meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=r"aucopt '0\.\d+\.\d+' in model-file format 2"):
        aucopt.load(path)
    # a format 2 file of a learner without parts still loads
    path = tmp_path / "psam.npz"
    aucopt.get("psam", random_state=0, n_epochs=1).fit(X, y).save(path)
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays["__aucopt_meta__"].tobytes())
    meta["format_version"] = 2
    del meta["parts"]
    arrays["__aucopt_meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **arrays)
    assert aucopt.load(path).n_features_in_ == 2


def test_compose_refuses_ambiguous_parameters():
    from aucopt.learners.kernelized import compose

    class Learner(_BufferOGD):
        def __init__(self, eta="auto", block_size=3):  # the map's block_size is 4096
            self.eta = eta
            self.block_size = block_size

    with pytest.raises(TypeError, match="block_size"):
        compose(Learner, RandomFourierFeatures)
    made = compose(Learner, RandomFourierFeatures, defaults={"block_size": 8})
    assert made().block_size == 8 and made._composition.shared == ("block_size",)
    with pytest.raises(TypeError, match="no_such"):
        compose(Learner, RandomFourierFeatures, defaults={"block_size": 8, "no_such": 1})
    with pytest.raises(TypeError, match="renamed|new name"):
        compose(_BufferOGD, RandomFourierFeatures, renamed={"n_components": "eta"})
