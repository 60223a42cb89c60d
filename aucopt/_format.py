"""The model-file format: one ``.npz`` (zip) archive, JSON metadata + plain arrays.

Members: ``__aucopt_meta__.npy`` (a uint8 array holding UTF-8 JSON: format name and
version, learner name, parameters, scalar state, the names of the array members,
and the parameters of each fitted part, such as a feature map, whose state is
stored under ``<attribute>.<its field>``) and one ``<name>.npy`` per state array.
Nothing is ever unpickled: the JSON carries numbers, strings, lists and tagged
bit-generator states only, and arrays are read by parsing their ``.npy`` header
ourselves, refusing object dtypes, and checking dtype and shape against what the
caller expects *before* reading the data (so a forged header cannot make the reader
allocate what it announces).

Every way a file can be malformed surfaces as ``ValueError("malformed model file:
...")`` (:class:`MalformedModel`).
"""
import json
import numbers
import os
import zipfile
from tokenize import TokenError
from zlib import error as zlib_error

import numpy as np

from aucopt._atomic import atomic_write
from aucopt._state import shape_matches
from aucopt._version import __version__

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "PARTS_FORMAT", "MalformedModel", "write_model",
           "encode_model", "ModelReader", "to_json", "from_json"]

FORMAT_NAME = "aucopt-model"
FORMAT_VERSION = 3
# Format 3 added sub-estimators ("parts"); format 2 files are the same otherwise and
# are read (a learner with a sub-estimator refuses them: it was stored differently)
PARTS_FORMAT = 3
_OLDEST_FORMAT = 2
META = "__aucopt_meta__"
_MAX_META_BYTES = 16 * 2**20
# member compressions read: zipfile inflates these in bounded steps, so reading an
# array decompresses no more than its declared size
_COMPRESSIONS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")


class MalformedModel(ValueError):
    """A model file that does not follow the format or its learner's declared state."""

    def __init__(self, what):
        super().__init__(f"malformed model file: {what}")


# --------------------------------------------------------------------------- JSON values


def to_json(value, what):
    """Encode a parameter or scalar attribute as JSON-safe data (tagged where needed)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [to_json(v, what) for v in value]
    if isinstance(value, np.random.Generator):
        return {"__generator__": _jsonable_state(value.bit_generator.state)}
    raise TypeError(f"cannot save {what} of type {type(value).__name__}; aucopt stores "
                    "only numbers, strings, lists, numpy arrays and Generators")


def _jsonable_state(obj):
    if isinstance(obj, dict):
        return {k: _jsonable_state(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return {"__array__": obj.tolist(), "dtype": str(obj.dtype)}
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def from_json(value, what):
    """Decode :func:`to_json` output; anything else is malformed."""
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, list):
        return [from_json(v, what) for v in value]
    if isinstance(value, dict) and set(value) == {"__generator__"}:
        return _restore_generator(value["__generator__"], what)
    raise MalformedModel(f"{what} is not a number, string, list or generator state")


# Inclusive upper bounds of the integers of bit-generator states (lower bound 0):
# buffered-output flags and words, Philox's buffer position, MT19937's key position,
# PCG64's 128-bit state and increment.
_STATE_INT_HIGH = {"has_uint32": 1, "uinteger": 2**32 - 1, "buffer_pos": 4, "pos": 624,
                   "state": 2**128 - 1, "inc": 2**128 - 1}


def _restore_generator(state, what):
    """A Generator from a stored bit-generator state, checked in full first: the
    same keys as the state of a fresh generator of that kind, integers in range,
    arrays of its dtype and length (numpy's own setters index into what they are
    given, and raise IndexError on a short MT19937 key)."""
    if not isinstance(state, dict):
        raise MalformedModel(f"{what}: generator state is not an object")
    name = state.get("bit_generator")
    if name not in _BIT_GENERATORS:
        raise MalformedModel(f"{what}: unknown bit generator {name!r}")
    bitgen = getattr(np.random, name)()
    value = _checked_state(state, bitgen.state, f"{what}: {name} state", "")
    if name == "MT19937" and not value["state"]["key"].any():
        raise MalformedModel(f"{what}: MT19937 key is all zero")
    try:
        bitgen.state = value
    except (ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        raise MalformedModel(f"{what}: invalid {name} state ({exc})") from None
    return np.random.Generator(bitgen)


def _checked_state(obj, template, what, key):
    """``obj`` (JSON) shaped as ``template`` (a fresh bit generator's state), with
    arrays decoded; anything else is malformed."""
    where = f"{what}{' ' + key if key else ''}"
    if isinstance(template, dict):
        if not isinstance(obj, dict) or set(obj) != set(template):
            got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
            raise MalformedModel(f"{where} has {got}, expected the keys {sorted(template)}")
        return {k: _checked_state(obj[k], t, what, k) for k, t in template.items()}
    if isinstance(template, np.ndarray):
        dtype = template.dtype
        if not isinstance(obj, dict) or set(obj) != {"__array__", "dtype"} \
                or obj["dtype"] != str(dtype) or not isinstance(obj["__array__"], list) \
                or len(obj["__array__"]) != template.size:
            raise MalformedModel(f"{where} is not an array of {template.size} {dtype}")
        high = int(np.iinfo(dtype).max)
        if not all(type(v) is int and 0 <= v <= high for v in obj["__array__"]):
            raise MalformedModel(f"{where} holds values that are not {dtype}")
        return np.array(obj["__array__"], dtype=dtype).reshape(template.shape)
    if isinstance(template, str):
        if obj != template:
            raise MalformedModel(f"{where} is {obj!r}, expected {template!r}")
        return obj
    high = _STATE_INT_HIGH.get(key, 2**128 - 1)
    if type(obj) is not int or not 0 <= obj <= high:
        raise MalformedModel(f"{where} = {obj!r} is not an integer in [0, {high}]")
    return obj


# --------------------------------------------------------------------------- writing


def encode_model(learner, name):
    """``(meta, arrays)`` of ``learner`` saved as registry name ``name``: its
    parameters, its declared state (:mod:`aucopt._state`) present, and each fitted
    sub-estimator's parameters and state under ``<attribute>.``."""
    meta = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "learner": name,
            "aucopt_version": __version__, "params": _params(learner, ""), "attributes": {},
            "arrays": [], "parts": {}}
    arrays = {}
    _encode_state(learner, "", meta, arrays)
    return meta, arrays


def _params(obj, prefix):
    return {key: to_json(value, f"parameter {prefix + key!r}")
            for key, value in obj.get_params().items()}


def _encode_state(obj, prefix, meta, arrays):
    for key, field in type(obj)._state_spec().items():
        if key not in obj.__dict__:
            continue
        value, name = obj.__dict__[key], prefix + key
        if field.kind == "part":
            meta["parts"][name] = _params(value, name + ".")
            _encode_state(value, name + ".", meta, arrays)
        elif field.kind == "array":
            arrays[name] = field.stored(value)
            meta["arrays"].append(name)
        else:
            meta["attributes"][name] = to_json(value, f"attribute {name!r}")


def write_model(path, meta, arrays):
    """Write ``meta`` (JSON-safe dict) and ``arrays`` (name -> ndarray) to ``path``.

    ``path`` is a file name (written atomically: :mod:`aucopt._atomic`) or a binary
    file object.
    """
    for key, value in arrays.items():
        if value.dtype.hasobject:
            raise TypeError(f"cannot save {key!r}: object arrays would need pickle")
    blob = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    if hasattr(path, "write"):
        np.savez(path, **{META: blob}, **arrays)
        return
    with atomic_write(path) as fh:  # a failed save leaves the previous file intact
        np.savez(fh, **{META: blob}, **arrays)


# --------------------------------------------------------------------------- reading


class ModelReader:
    """Read a model file member by member, checking everything before trusting it.

    Use as a context manager: ``meta`` is read and structurally checked on entry;
    :meth:`array` reads one declared array after checking its header.
    """

    def __init__(self, path):
        self.path = path
        self._zip = None
        self.meta = None

    def __enter__(self):
        src = self.path if hasattr(self.path, "read") else os.fspath(self.path)
        try:
            self._zip = zipfile.ZipFile(src)
        except (zipfile.BadZipFile, NotImplementedError, EOFError):
            raise ValueError(f"{self._label()} is not an aucopt model file (not a zip/npz "
                             "archive, or truncated)") from None
        try:
            self._members = {}
            for info in self._zip.infolist():
                if not info.filename.endswith(".npy"):
                    raise MalformedModel(f"unexpected member {info.filename!r}")
                self._members[info.filename[:-4]] = info
            if META not in self._members:
                raise ValueError(f"{self._label()} is not an aucopt model file (no metadata)")
            self.meta = self._read_meta()
        except BaseException:
            self._zip.close()
            raise
        return self

    def __exit__(self, *exc):
        self._zip.close()
        return False

    def _label(self):
        return repr(self.path) if not hasattr(self.path, "read") else "the file object"

    def _read_meta(self):
        blob = self._read(META, np.dtype(np.uint8), None, _MAX_META_BYTES)
        try:
            meta = json.loads(blob.tobytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise MalformedModel(f"metadata is not UTF-8 JSON ({type(exc).__name__})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
            raise ValueError(f"{self._label()} is not an aucopt model file")
        version = meta.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise MalformedModel("format_version is not an integer")
        if version > FORMAT_VERSION:
            raise ValueError(f"{self._label()} was written by a newer aucopt "
                             f"({meta.get('aucopt_version')!r}); upgrade aucopt to load it")
        if version < _OLDEST_FORMAT:
            raise ValueError(f"{self._label()} was written by aucopt "
                             f"{meta.get('aucopt_version')!r} in an older format "
                             f"({version}); refit the model with this version")
        if version < PARTS_FORMAT:
            meta.setdefault("parts", {})
        for key, kind in (("learner", str), ("params", dict), ("attributes", dict),
                          ("arrays", list), ("parts", dict)):
            if not isinstance(meta.get(key), kind):
                raise MalformedModel(f"{key!r} is missing or not a {kind.__name__}")
        if not all(isinstance(p, dict) for p in meta["parts"].values()):
            raise MalformedModel("the parameters of a part are not an object")
        if not all(isinstance(a, str) for a in meta["arrays"]):
            raise MalformedModel("array names are not strings")
        listed = set(meta["arrays"])
        present = set(self._members) - {META}
        if listed != present or len(listed) != len(meta["arrays"]):
            raise MalformedModel(f"array members {sorted(present)} do not match the "
                                 f"metadata's list {sorted(meta['arrays'])}")
        return meta

    def array(self, name, dtype, shape, labels=False):
        """Read array ``name``; its dtype and shape must be ``dtype`` / ``shape``
        (``labels=True``: any number, bool or string dtype, the given shape)."""
        return self._read(name, None if labels else np.dtype(dtype), tuple(shape), None)

    def _read(self, name, dtype, shape, max_bytes):
        info = self._members.get(name)
        if info is None:
            raise MalformedModel(f"array {name!r} is missing")
        try:
            return self._read_member(info, name, dtype, shape, max_bytes)
        except (zipfile.BadZipFile, EOFError, OSError, zlib_error, NotImplementedError) as exc:
            # NotImplementedError: a member stored with a compression zipfile lacks
            raise MalformedModel(f"array {name!r} cannot be read ({exc})") from None

    def _read_member(self, info, name, dtype, shape, max_bytes):
        if info.flag_bits & 0x1:  # zipfile would ask for a password (RuntimeError)
            raise MalformedModel(f"array {name!r} is stored encrypted")
        if info.compress_type not in _COMPRESSIONS:
            # zipfile inflates bzip2 / lzma members without an output bound: a few
            # KB could expand to GBs before the header is checked
            raise MalformedModel(f"array {name!r} is compressed with method "
                                 f"{info.compress_type}; only stored or deflated members "
                                 "(np.savez, np.savez_compressed) are read")
        with self._zip.open(info) as fh:
            try:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    hshape, fortran, hdtype = np.lib.format.read_array_header_1_0(fh)
                elif version in ((2, 0), (3, 0)):
                    hshape, fortran, hdtype = np.lib.format.read_array_header_2_0(fh)
                else:
                    raise ValueError(f"unsupported .npy version {version}")
            except (ValueError, SyntaxError, TypeError, EOFError, TokenError,
                    RecursionError) as exc:  # numpy tokenizes the header's dict literal
                raise MalformedModel(f"array {name!r}: bad .npy header ({exc})") from None
            if hdtype.hasobject or hdtype.kind not in "biufU" or hdtype.byteorder == ">":
                raise MalformedModel(f"array {name!r} has dtype {hdtype} (object or "
                                     "non-native data are refused; no pickle)")
            if dtype is not None and hdtype != dtype:
                raise MalformedModel(f"array {name!r} has dtype {hdtype}, expected {dtype}")
            if hdtype.kind == "U" and (dtype is not None or hdtype.itemsize > 4096):
                raise MalformedModel(f"array {name!r}: strings only for short labels")
            if shape is not None and not shape_matches(tuple(hshape), shape):
                raise MalformedModel(f"array {name!r} has shape {tuple(hshape)}, expected "
                                     f"{shape}")
            if fortran and len(hshape) > 1:
                raise MalformedModel(f"array {name!r} is stored in Fortran order")
            count = int(np.prod(hshape, dtype=np.int64)) if hshape else 1
            nbytes = count * hdtype.itemsize
            if max_bytes is not None and nbytes > max_bytes:
                raise MalformedModel(f"array {name!r} is larger than {max_bytes} bytes")
            if info.file_size - fh.tell() != nbytes:
                raise MalformedModel(f"array {name!r}: header announces {nbytes} bytes, "
                                     f"the member holds {info.file_size - fh.tell()}")
            data = fh.read(nbytes)
        if len(data) != nbytes:
            raise MalformedModel(f"array {name!r} is truncated")
        return np.frombuffer(data, dtype=hdtype).reshape(hshape).copy()
