"""save / load: exact round trip, no pickle, clear errors on bad files."""
import io
import json
import pathlib
import re
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

def _state_of(name):
    from aucopt._format import to_json

    return to_json(np.random.Generator(getattr(np.random, name)(3)), "g")["__generator__"]


def _mt_short_key(g):
    g["state"]["key"]["__array__"] = g["state"]["key"]["__array__"][:5]


def _set(path, value):
    def edit(g):
        *head, last = path
        for k in head:
            g = g[k]
        g[last] = value
    return edit


@pytest.mark.parametrize("bitgen, edit", [
    ("MT19937", _mt_short_key),
    ("MT19937", _set(("state", "key", "__array__"), [0] * 624)),
    ("MT19937", _set(("state", "key", "__array__"), [2**32] * 624)),
    ("MT19937", _set(("state", "key", "dtype"), "uint64")),
    ("MT19937", _set(("state", "pos"), 625)),
    ("MT19937", _set(("state", "pos"), True)),
    ("MT19937", _set(("state", "pos"), 1.5)),
    ("MT19937", _set(("state",), {"key": [1, 2]})),
    ("MT19937", _set(("extra",), 1)),
    ("PCG64", _set(("state", "state"), 2**128)),
    ("PCG64", _set(("state", "inc"), -1)),
    ("PCG64", _set(("has_uint32",), 2)),
    ("PCG64", _set(("uinteger",), "7")),
    ("PCG64DXSM", _set(("state",), None)),
    ("Philox", _set(("state", "counter", "__array__"), [1, 2, 3])),
    ("Philox", _set(("buffer_pos",), 5)),
    ("Philox", _set(("buffer", "__array__"), [1.0, 2.0, 3.0, 4.0])),
    ("SFC64", _set(("state", "state"), {"__array__": [1] * 4})),
    ("SFC64", _set(("bit_generator",), "SFC64 ")),
])
def test_malformed_generator_states_are_malformed_model_files(tmp_path, bitgen, edit):
    """A stored generator state is checked in full against a fresh one of its kind
    (a short MT19937 key used to raise a raw IndexError from numpy's setter)."""
    state = _state_of(bitgen)
    edit(state)
    path = _tampered(tmp_path, edit_meta=lambda meta: meta["attributes"].update(
        random_state_={"__generator__": state}))
    with pytest.raises(ValueError, match="malformed model file: "):
        aucopt.load(path)


@pytest.mark.parametrize("bitgen", ["MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64"])
def test_every_bit_generator_state_round_trips(tmp_path, bitgen):
    state = _state_of(bitgen)
    path = _tampered(tmp_path, edit_meta=lambda meta: meta["attributes"].update(
        random_state_={"__generator__": state}))
    loaded = aucopt.load(path).random_state_
    expected = np.random.Generator(getattr(np.random, bitgen)(3))
    assert loaded.bit_generator.state["bit_generator"] == bitgen
    np.testing.assert_array_equal(loaded.random(5), expected.random(5))


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


def _recompressed(path, out, method, padding=0):
    """``path``'s members written to ``out`` with zip ``method``; the ``weights_``
    member followed by ``padding`` zero bytes (which decompress from a few bytes)."""
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            member = zipfile.ZipInfo(info.filename)
            member.compress_type = method
            with dst.open(member, "w", force_zip64=True) as fh:
                fh.write(src.read(info))
                if info.filename == "weights_.npy":
                    for _ in range(padding >> 20):
                        fh.write(bytes(1 << 20))
    return out


def _refused_load_peak(path, match):
    """The peak of Python allocations (bytes) of ``aucopt.load(path)``, which must
    raise the malformed-model error matching ``match``."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=f"malformed model file: .*{match}"):
            aucopt.load(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_members_compressed_without_an_output_bound_are_refused(tmp_path, method):
    """zipfile inflates a bzip2 or lzma member in one step: a model file of a few KB
    could take GBs before its header is checked (a 2.6 KB file with 1 GiB of
    bzip2-compressed padding peaked at 2.1 GB). Such members are refused unread."""
    path, _, _ = _saved("psam", tmp_path)
    bomb = _recompressed(path, tmp_path / "bomb.npz", method, padding=32 << 20)
    assert bomb.stat().st_size < 64 << 10
    assert _refused_load_peak(bomb, "compressed with") < 4 << 20


def test_deflated_members_load_and_stay_bounded(tmp_path):
    """np.savez_compressed's deflate is read in bounded steps: a deflated model
    loads, and padding behind an array is refused having read only its size."""
    path, _, _ = _saved("psam", tmp_path)
    model = aucopt.load(path)
    deflated = aucopt.load(_recompressed(path, tmp_path / "d.npz", zipfile.ZIP_DEFLATED))
    np.testing.assert_array_equal(deflated.weights_, model.weights_)
    bomb = _recompressed(path, tmp_path / "bomb.npz", zipfile.ZIP_DEFLATED,
                         padding=32 << 20)
    assert _refused_load_peak(bomb, "member holds") < 4 << 20


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


_KILLED_SAVE = r"""
import resource, signal, sys
import numpy as np
import aucopt
from aucopt.datasets import dump_svmlight
from aucopt.testing import contract_data
X, y = contract_data(0, n=400, d=40)
model = aucopt.get("cbr", random_state=0).fit(X, y)   # 12.8 kB of covariance
# Python ignores SIGXFSZ (the write then fails with EFBIG, an OSError); by default
# the signal kills the process
signal.signal(signal.SIGXFSZ, signal.SIG_IGN if sys.argv[2] == "ignore" else signal.SIG_DFL)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
if sys.argv[3] == "model":
    model.save(sys.argv[1])
else:
    dump_svmlight(X, y, sys.argv[1])
"""


@pytest.mark.parametrize("what", ["model", "svmlight"])
@pytest.mark.parametrize("how", ["ignore", "killed"])
def test_a_save_killed_part_way_leaves_the_previous_file_intact(tmp_path, what, how):
    """A save beyond the file-size limit (RLIMIT_FSIZE) fails part-way, by EFBIG or by
    SIGXFSZ killing the process: the file it was replacing is untouched."""
    import os
    import subprocess
    import sys

    from aucopt.datasets import dump_svmlight, load_svmlight

    X, y = contract_data(1, n=20, d=3)
    path = tmp_path / ("old.npz" if what == "model" else "old.svm")
    if what == "model":
        old = aucopt.get("sam", random_state=0, n_epochs=2).fit(X, y)
        old.save(path)
    else:
        dump_svmlight(X, y, path)
    content = path.read_bytes()
    assert len(content) < 4096
    # cwd outside the checkout ("python -c" puts its directory first on sys.path)
    proc = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(path), how, what],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    if how == "killed":
        assert proc.returncode == -25, proc.stderr  # SIGXFSZ
    else:
        assert proc.returncode == 1 and "File too large" in proc.stderr, proc.stderr
    assert path.read_bytes() == content
    if what == "model":
        np.testing.assert_array_equal(aucopt.load(path).decision_function(X),
                                      old.decision_function(X))
    else:
        np.testing.assert_array_equal(load_svmlight(path)[0].toarray(), X)
    # only a process killed mid-write leaves its (hidden) temporary file behind
    left = [p.name for p in tmp_path.iterdir() if p != path]
    assert len(left) == (1 if how == "killed" else 0), left
    assert all(name.startswith("." + path.name + ".") for name in left)


def test_an_exception_mid_save_leaves_the_previous_file_and_no_temporary(tmp_path,
                                                                        monkeypatch):
    from aucopt import _format

    X, y = contract_data(2, n=30, d=4)
    path = tmp_path / "m.npz"
    aucopt.get("psam", random_state=0).fit(X, y).save(path)
    os_mode = path.stat().st_mode
    content = path.read_bytes()

    def broken(fh, **arrays):
        fh.write(b"PK partial archive")
        raise KeyboardInterrupt

    monkeypatch.setattr(_format.np, "savez", broken)
    with pytest.raises(KeyboardInterrupt):
        aucopt.get("psam", random_state=1).fit(X, y).save(path)
    assert path.read_bytes() == content and path.stat().st_mode == os_mode
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]


# a file opened for writing
_WRITES = r"""\bopen\([^)]*["'][wax]b?\+?["']|\.write_(text|bytes)\(|O_CREAT"""


def _direct_writes(folder, writes, skip=lambda line: False):
    """``file:line`` of every line of ``folder``'s modules that matches ``writes``."""
    return [f"{p.relative_to(folder)}:{i}" for p in folder.rglob("*.py")
            if p.name != "_atomic.py"
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(writes, line) and not skip(line)]


def test_no_module_writes_a_file_but_through_atomic_write():
    """Every file the package writes goes through aucopt._atomic.atomic_write."""
    found = _direct_writes(pathlib.Path(aucopt.__file__).parent, _WRITES)
    assert found == [], found


def test_tools_write_files_only_through_atomic_write():
    """tools/ writes its reports, caches and generated data through the public
    ``aucopt.datasets.atomic_write`` (a killed run leaves no partial file that a later
    run would read); only scratch files inside temporary directories, marked so on
    their line, are written directly."""
    tools = pathlib.Path(__file__).resolve().parents[1] / "tools"
    # also an .npz saved to anything but a file object named f, buf or out (an
    # atomic_write target, a BytesIO)
    writes = _WRITES + r"|np\.savez(_compressed)?\((?!(f|buf|out),)"
    found = _direct_writes(tools, writes, skip=lambda line: "scratch file" in line)
    assert found == [], found


@pytest.mark.parametrize("column, value", [(0, -1.0), (0, np.inf), (1, np.inf), (2, 1.5),
                                           (2, -np.inf)])
def test_history_values_are_checked(column, value, tmp_path):
    path, members, meta = _saved("psam", tmp_path)
    history = members["history_"].copy()
    history[0, column] = value
    _write(path, {**members, "history_": history}, meta)
    with pytest.raises(ValueError, match="malformed model file: history_"):
        aucopt.load(path)


@pytest.mark.parametrize("names, match", [
    (np.array(["a", "b"]), "2 names for 10 features"),
    (np.arange(10), "array of strings"),
    (np.array(["x" * 1100] * 10), "strings only for short labels"),
])
def test_feature_names_in_the_file_are_checked(tmp_path, names, match):
    """Saved column names: one string per feature, each of at most 1024 characters."""
    def add(members):
        members["feature_names_in_"] = names

    def listed(meta):
        meta["arrays"].append("feature_names_in_")

    path = _tampered(tmp_path, add, listed)
    with pytest.raises(ValueError, match=match):
        aucopt.load(path)


def test_feature_names_too_long_to_load_are_not_saved(tmp_path):
    X, y = _data(3)
    model = aucopt.get("sam", random_state=0).fit(X, y)
    model.feature_names_in_ = np.array(["x" * 1025] + ["y"] * 9, dtype=object)
    with pytest.raises(ValueError, match="longer than 1024 characters"):
        model.save(tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()
