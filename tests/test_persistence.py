"""save / load: exact round trip, no pickle, clear errors on bad files."""
import io
import json
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

import aucopt


def _data(seed=0, n=80, d=10):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) > 0.5] = 0.0
    y = np.where(X[:, 0] - X[:, 1] > 0, "pos", "neg")
    return X, y


def test_round_trip_gives_identical_scores_and_resumes_identically(tmp_path):
    X, y = _data()
    model = aucopt.get("sam", lam=0.01, random_state=4, n_epochs=2).fit(X, y)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = aucopt.load(path)
    assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert list(loaded.classes_) == ["neg", "pos"]
    # the random stream and schedule are restored: training continues bit for bit
    model.partial_fit(sp.csr_matrix(X), y)
    loaded.partial_fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    assert loaded.t_ == model.t_


def test_file_objects_work():
    X, y = _data(1)
    model = aucopt.get("sam", random_state=0).fit(X, y)
    buf = io.BytesIO()
    model.save(buf)
    buf.seek(0)
    np.testing.assert_array_equal(aucopt.load(buf).coef_, model.coef_)


def test_saved_file_is_json_plus_plain_arrays(tmp_path):
    X, y = _data(2)
    path = tmp_path / "m.npz"
    aucopt.get("sam", random_state=0).fit(X, y).save(path)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
    assert {"weights_.npy", "classes_.npy", "__aucopt_meta__.npy"} <= names
    with np.load(path, allow_pickle=False) as npz:  # loads without pickle
        meta = json.loads(npz["__aucopt_meta__"].tobytes())
    assert meta["learner"] == "sam" and meta["params"]["random_state"] == 0
    assert meta["attributes"]["random_state_"]["__generator__"]["bit_generator"] == "PCG64"


def _tampered(tmp_path, edit_members=None, edit_meta=None):
    """Save a fitted SAM, rewrite its file through the edit callbacks, return the path."""
    X, y = _data(3)
    path = tmp_path / "m.npz"
    aucopt.get("sam", random_state=0).fit(X, y).save(path)
    with np.load(path) as npz:
        members = {k: npz[k] for k in npz.files}
    if edit_meta is not None:
        meta = json.loads(members["__aucopt_meta__"].tobytes())
        edit_meta(meta)
        members["__aucopt_meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    if edit_members is not None:
        edit_members(members)
    np.savez(path, **members)
    return path


def test_object_arrays_are_refused_at_load(tmp_path):
    """A file carrying a pickled object array must not be unpickled."""
    path = _tampered(tmp_path, edit_members=lambda m: m.update(
        weights_=np.array([object()], dtype=object)))
    with pytest.raises(ValueError, match="malformed model file: .*no pickle"):
        aucopt.load(path)


def test_not_a_model_file(tmp_path):
    path = tmp_path / "x.npz"
    np.savez(path, a=np.zeros(3))
    with pytest.raises(ValueError, match="not an aucopt model"):
        aucopt.load(path)


def test_unknown_bit_generator_is_refused(tmp_path):
    def edit(meta):
        meta["attributes"]["random_state_"]["__generator__"]["bit_generator"] = "os.system"

    with pytest.raises(ValueError, match="unknown bit generator"):
        aucopt.load(_tampered(tmp_path, edit_meta=edit))

def test_unsaveable_parameter_is_reported(tmp_path):
    X, y = _data(5)
    model = aucopt.get("sam", random_state=np.random.default_rng(0)).fit(X, y)
    model.save(tmp_path / "ok.npz")  # a Generator parameter is stored as its state
    model.set_params(pos_label=object())
    with pytest.raises(TypeError, match="cannot save parameter 'pos_label'"):
        model.save(tmp_path / "bad.npz")


def test_attribute_names_in_the_file_are_checked(tmp_path):
    """Metadata cannot set anything but fitted attributes (e.g. ``__class__``)."""
    def edit(meta):
        meta["attributes"]["__class__"] = "x"

    with pytest.raises(ValueError, match="malformed model file: .*not state of SAM"):
        aucopt.load(_tampered(tmp_path, edit_meta=edit))


# ---------------------------------------------------------------- tampered files, every learner

from aucopt.registry import BUILTIN  # noqa: E402
from aucopt.testing import contract_data  # noqa: E402

NAMES = sorted(n for n, origin in aucopt.available().items() if origin == BUILTIN)


def _saved(name, tmp_path):
    X, y = contract_data(0)
    cls = aucopt.registry.get_class(name)
    params = {"random_state": 0} if "random_state" in cls._get_param_names() else {}
    path = tmp_path / f"{name}.npz"
    aucopt.get(name, **params).fit(X, y).save(path)
    with np.load(path) as npz:
        members = {k: npz[k] for k in npz.files}
    meta = json.loads(members["__aucopt_meta__"].tobytes())
    return path, members, meta


def _write(path, members, meta):
    members = dict(members)
    members["__aucopt_meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **members)


@pytest.mark.parametrize("name", NAMES)
def test_every_array_is_checked_against_the_declared_state(name, tmp_path):
    """Shrunk, grown, retyped or missing arrays and forged dimensions never load."""
    path, members, meta = _saved(name, tmp_path)
    assert aucopt.load(path) is not None
    arrays = [k for k in members if k != "__aucopt_meta__"]
    for key in arrays:
        value = members[key]
        variants = {"shrunk": value.reshape(-1)[:-1] if value.size else np.zeros(1),
                    "grown": np.concatenate([value.reshape(-1), value.reshape(-1)[:1]])
                    if value.size else np.zeros(1),
                    "retyped": value.astype(np.float32) if value.dtype.kind == "f"
                    else value.astype(np.int32) if value.dtype.kind in "iu" else value}
        for what, bad in variants.items():
            if bad.dtype == value.dtype and bad.shape == value.shape:
                continue
            if key == "classes_" and what == "retyped":
                continue  # labels may be of any number type
            _write(path, {**members, key: bad}, meta)
            with pytest.raises(ValueError, match="malformed model file"):
                aucopt.load(path)
        missing = {k: v for k, v in members.items() if k != key}
        meta_missing = {**meta, "arrays": [a for a in meta["arrays"] if a != key]}
        _write(path, missing, meta_missing)
        if key == "history_":  # a model without a fit history (partial_fit) is a model
            assert not hasattr(aucopt.load(path), "history_")
            continue
        with pytest.raises(ValueError, match="malformed model file"):
            aucopt.load(path)
    forged = dict(meta)  # n_features_in_ no longer matching the arrays
    forged["attributes"] = {**meta["attributes"],
                            "n_features_in_": meta["attributes"]["n_features_in_"] + 32}
    _write(path, members, forged)
    with pytest.raises(ValueError, match="malformed model file"):
        aucopt.load(path)


@pytest.mark.parametrize("name", NAMES)
def test_scalars_and_names_are_checked(name, tmp_path):
    path, members, meta = _saved(name, tmp_path)
    edits = [
        lambda m: m["attributes"].update(intercept_="x"),
        lambda m: m["attributes"].update(n_features_in_=-3),
        lambda m: m["attributes"].update(__class__="os.system"),
        lambda m: m["params"].update(no_such_parameter=1),
        lambda m: m.update(attributes=[1, 2]),
        lambda m: m.update(arrays="weights_"),
        lambda m: m["attributes"].update({k: [1] * 3 for k in list(m["attributes"])[:1]}),
    ]
    for edit in edits:
        bad = json.loads(json.dumps(meta))
        edit(bad)
        _write(path, members, bad)
        with pytest.raises(ValueError, match="malformed model file"):
            aucopt.load(path)


def test_a_forged_header_is_refused_before_anything_is_allocated(tmp_path):
    """A member whose .npy header announces 8 TiB: refused from its size, not read."""
    path, members, meta = _saved("psam", tmp_path)
    import zipfile

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False,
                                              "shape": (2**40, 2)})
    with zipfile.ZipFile(path, "a") as zf:
        names = zf.namelist()
    rebuilt = tmp_path / "forged.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(rebuilt, "w") as dst:
        for n in names:
            data = src.read(n)
            if n == "weights_.npy":
                data = buf.getvalue() + b"\0" * 64
            dst.writestr(n, data)
    with pytest.raises(ValueError, match="malformed model file: array 'weights_'"):
        aucopt.load(rebuilt)


@pytest.mark.parametrize("blob", [b"[" * 100000, b"\xff\xfe", b'{"format": 3}'])
def test_metadata_that_is_not_valid_json_is_malformed(tmp_path, blob):
    path, members, meta = _saved("sam", tmp_path)
    members = dict(members)
    members["__aucopt_meta__"] = np.frombuffer(blob, dtype=np.uint8)
    np.savez(path, **members)
    with pytest.raises(ValueError, match="malformed model file|not an aucopt model"):
        aucopt.load(path)


def test_truncated_and_non_zip_files(tmp_path):
    path, _, _ = _saved("sam", tmp_path)
    data = path.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 5):
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError, match="not an aucopt model|malformed model file"):
            aucopt.load(path)


# ---- cases found by tools/fuzz.py's model target


@pytest.mark.parametrize("name, section, key, value", [
    ("psam", "params", "askip", 2**64),          # a count beyond a C long
    ("sam", "params", "rskip", 10**30),
    ("oam_gra", "attributes", "n_updates_", 2**63),
    ("adaoam", "attributes", "lam_", 0.0),        # a resolved parameter lam= would refuse
    ("opauc", "attributes", "eta_", -1.0),
])
def test_out_of_range_numbers_are_malformed(name, section, key, value, tmp_path):
    path, members, meta = _saved(name, tmp_path)
    assert key in meta[section]
    meta[section][key] = value
    _write(path, members, meta)
    with pytest.raises(ValueError, match="malformed model file"):
        aucopt.load(path)


def test_a_huge_weight_scale_gives_a_clear_error_not_infinite_scores(tmp_path):
    path, members, meta = _saved("bam", tmp_path)
    meta["attributes"]["weights_scale_"] = 1e308
    members["weights_"] = np.ones_like(members["weights_"])  # scores: 1e308 * sum(x)
    _write(path, members, meta)
    model = aucopt.load(path)  # finite and in range: a legal (if absurd) model
    X = np.abs(_data(d=model.n_features_in_)[0]) + 1.0
    with pytest.raises(FloatingPointError, match="non-finite scores"):
        model.decision_function(X)


def _edit_central_directory(path, edit):
    """Apply ``edit(data, at)`` to every central directory entry of a zip file."""
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x01\x02")
    while at >= 0:
        edit(data, at)
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))


def test_a_member_with_an_unknown_compression_is_malformed(tmp_path):
    path, _, _ = _saved("sam", tmp_path)

    def method_99(data, at):  # the compression method is at offset 10
        data[at + 10:at + 12] = (99).to_bytes(2, "little")

    _edit_central_directory(path, method_99)
    with pytest.raises(ValueError, match="malformed model file|not an aucopt model"):
        aucopt.load(path)


def test_a_member_flagged_encrypted_is_malformed(tmp_path):
    # found by tools/fuzz.py model: zipfile raised RuntimeError ("password required")
    path, _, _ = _saved("asam", tmp_path)

    def encrypted(data, at):  # the general purpose flags are at offset 8
        data[at + 8] |= 0x1

    _edit_central_directory(path, encrypted)
    with pytest.raises(ValueError, match="malformed model file: .*encrypted"):
        aucopt.load(path)


def test_a_huge_but_finite_parameter_loads_and_trains(tmp_path):
    """adaDSGD with growth = 1e308 (legal: > 1): the next stage is all rows, no overflow."""
    path, members, meta = _saved("adadsgd", tmp_path)
    meta["params"]["growth"] = 1e308
    _write(path, members, meta)
    model = aucopt.load(path)
    X, y = _data(d=model.n_features_in_)
    model.partial_fit(X, np.where(y == "pos", model.classes_[1], model.classes_[0]))
    assert np.isfinite(model.decision_function(X)).all()


def test_an_npy_header_that_does_not_tokenize_is_malformed(tmp_path):
    """numpy parses the header dict with ``tokenize``: an unclosed bracket raises
    ``tokenize.TokenError``, which must surface as a malformed file too."""
    path, _, _ = _saved("sam", tmp_path)
    rebuilt = tmp_path / "bad_header.npz"
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (8, 1), \n"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(rebuilt, "w") as dst:
        for n in src.namelist():
            data = src.read(n)
            if n == "weights_.npy":
                data = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header
            dst.writestr(n, data)
    with pytest.raises(ValueError, match="malformed model file: array 'weights_'"):
        aucopt.load(rebuilt)


@pytest.mark.parametrize("column, value", [(0, -1.0), (0, np.inf), (1, np.inf), (2, 1.5),
                                           (2, -np.inf)])
def test_history_values_are_checked(column, value, tmp_path):
    path, members, meta = _saved("psam", tmp_path)
    history = members["history_"].copy()
    history[0, column] = value
    _write(path, {**members, "history_": history}, meta)
    with pytest.raises(ValueError, match="malformed model file: history_"):
        aucopt.load(path)
