#!/usr/bin/env python
"""Fuzzing harness: run a target's generated inputs in forked children for a while.

Usage::

    python tools/fuzz.py TARGET [--seconds N] [--seed S] [--batch B] [--timeout T]
                                [--out DIR]
    python tools/fuzz.py TARGET --replay tools/out/fuzz-crashes/<case>.json

Each input goes through the target's checker in a forked child process
(``--batch`` inputs per child), so a crash -- a segfault, or a report of
AddressSanitizer / UndefinedBehaviorSanitizer when the kernels are built with
``tools/sanitizer_build.sh`` -- only ends that child. The input it died on is
then run again alone in a fresh child and saved, with the child's stderr (the
sanitizer report), to ``fuzz-crashes/`` under ``--out`` (default
``tools/out/``); inputs the checker finds wrong go to ``fuzz-disagreements/``
with the failed assertion. A
child that exceeds ``--timeout`` seconds per input is killed and its input
saved as a hang. The counts are printed at the end; the exit status is 1 when
anything was saved. ``--replay`` runs saved cases in this process.

Adding a target
---------------
A target is a :class:`Target` in :data:`TARGETS`: ``generate(rnd)`` returns
a case ``(data: bytes, options: dict of JSON values)`` from a
``random.Random``; ``check(data, options)`` runs the code under test on it
and returns ``"accepted"`` or ``"rejected"`` (a clean, expected refusal such
as a ValueError), raising (typically AssertionError) when the outcome is
wrong. ``corpus()`` may give valid inputs (bytes) for the byte mutators
(:func:`mutate`) to start from.

Targets
-------
``svmlight``
    ``aucopt.datasets.load_svmlight`` / ``iter_svmlight`` on files from the
    grammar of ``tests/test_svmlight_robust.py`` (valid, and with one bad
    token) and on byte mutations of valid files (generated, and the first
    lines of the bundled data sets); read as bytes, file objects or plain /
    gzip / bzip2 / xz files, in random block, chunk and first buffer sizes. The checker
    compares with the plain-Python reference parser of that test module:
    the same rows bit for bit as canonical CSR, or a ValueError naming the
    line the reference rejects.
``model``
    ``aucopt.load`` on model files of every built-in learner (fitted in the
    parent on :func:`aucopt.testing.contract_data`), edited structurally --
    metadata values set to boundary, huge, negative, NaN, wrong-typed or
    nested values, keys dropped or added, the learner name swapped; arrays
    shrunk, grown, transposed, retyped, stored in Fortran order, given NaN,
    infinite, huge or negative entries (out-of-range indices); members dropped
    or added -- or byte-mutated as zip archives. Documented rule: ``load``
    either raises ``ValueError`` or returns a model on which
    ``decision_function``, ``partial_fit`` (online learners) and a save/load
    round trip either work (finite scores) or raise ``ValueError`` /
    ``FloatingPointError``. Any other exception is a disagreement; a crash is
    a memory error the checks let through.
``transactions``
    A random learner, data (rows, width, dense / CSR, scale) and call (``fit``
    of a fitted model, ``partial_fit`` after a stream of chunks, ``merge``), with
    a failure injected either at a seam of :data:`aucopt.testing.FAILURE_SEAMS`
    (a random one, at its 1st-4th reach) or by a SIGINT sent from a timer at a
    random point of the call's duration (a Ctrl-C anywhere in the driver's Python
    code, or in a kernel's poll). Rule: after the failure the model is bit for bit as
    before -- or, for a timer that fired after the call committed, bit for bit the
    call's result -- and the call then repeated gives the model of a copy that
    never failed.
``merge_weights``
    ``aucopt.merge`` of two or three fitted parts of each averaging learner with
    weights from huge (up to the largest double), tiny, subnormal, zero, negative
    zero, negative, NaN, infinite and random magnitudes. Rule: weights that are
    not finite numbers >= 0 with a positive sum raise ValueError; any others give
    the merge with the weights normalised exactly (rational arithmetic), to
    rounding, a finite model, not all zero when a part with positive weight is not.
``generator``
    Model files whose bit-generator state (attribute ``random_state_`` or the
    ``random_state`` parameter) is one of the five numpy kinds, mutated in its
    JSON: keys dropped, added or renamed, integers set to boundaries / bools /
    floats / strings / containers, arrays shortened, grown, zeroed, retyped or
    replaced, the kind swapped. Rule: ``load`` raises ``ValueError("malformed
    model file: ...")`` or the model's generator holds exactly the stored state,
    draws, and the model trains and round-trips.
``readonce``, ``chunks``
    Read-once inputs (pipes, FIFOs, compressed and truncated streams) and
    one-class or empty ``partial_fit`` chunks of every online learner: see
    ``tools/fuzz_streams.py``.
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # no thread pools to carry across fork()

import argparse  # noqa: E402
import bz2  # noqa: E402
import contextlib  # noqa: E402
import faulthandler  # noqa: E402
import functools  # noqa: E402
import hashlib  # noqa: E402
import importlib.resources  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from typing import Callable, NamedTuple  # noqa: E402

import numpy as np  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tools", "out")
# aucopt is imported as installed (or from PYTHONPATH: a sanitized build's tree);
# only the svmlight target's reference parser comes from the tests (svmlight_rules)


class Target(NamedTuple):
    generate: Callable  # rnd -> (data, options)
    check: Callable  # (data, options) -> "accepted" | "rejected"; raises if wrong
    setup: Callable = lambda: None  # run once in the parent, before any fork


# ---------------------------------------------------------------- byte mutation

_INTERESTING = [b":", b"#", b"\n", b"\r\n", b" ", b"\t", b"-", b"+", b".", b"e", b"E",
                b"\x00", b"\xff", b"qid:", b"0", b"9", b"1:1", b"nan", b"inf", b",",
                b"4611686018427387903", b"4611686018427387904", b"9223372036854775808",
                b"18446744073709551621", b"2147483648", b"0000000000000000000000001"]


def _digit_runs(data):
    runs, start = [], None
    for i, c in enumerate(data + b"x"):
        if 48 <= c <= 57:
            start = i if start is None else start
        elif start is not None:
            runs.append((start, i))
            start = None
    return runs


def mutate(rnd, data, pool):
    """``data`` with 1 to 5 random byte-level edits; ``pool`` gives splice partners."""
    data = bytearray(data)
    for _ in range(rnd.randint(1, 5)):
        op = rnd.randrange(8)
        at = rnd.randrange(len(data) + 1)
        if op == 0 and data:  # flip a bit
            i = rnd.randrange(len(data))
            data[i] ^= 1 << rnd.randrange(8)
        elif op == 1:  # insert an interesting token
            data[at:at] = rnd.choice(_INTERESTING)
        elif op == 2:  # delete a range
            data[at:at + rnd.randint(1, 16)] = b""
        elif op == 3 and data:  # copy a range elsewhere
            i = rnd.randrange(len(data))
            data[at:at] = data[i:i + rnd.randint(1, 32)]
        elif op == 4:  # replace a number by a huge or boundary one
            runs = _digit_runs(bytes(data))
            if runs:
                a, b = rnd.choice(runs)
                big = rnd.choice([b"%d" % rnd.randrange(10 ** 18, 10 ** 26),
                                  b"%d" % (2 ** rnd.choice([31, 32, 62, 63, 64])
                                           + rnd.randrange(-3, 4))])
                data[a:b] = big
        elif op == 5:  # truncate
            del data[at:]
        elif op == 6 and pool:  # splice with another input
            other = rnd.choice(pool)
            data[at:] = other[rnd.randrange(len(other) + 1):]
        else:  # random bytes
            data[at:at] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 4)))
    return bytes(data)


# ---------------------------------------------------------------- svmlight target


@functools.lru_cache(maxsize=None)
def _svmlight_corpus():
    """The first lines of each bundled data set: valid inputs to mutate."""
    data = importlib.resources.files("aucopt.datasets") / "data"
    corpus = []
    for path in sorted(data.iterdir(), key=lambda p: p.name):
        if path.name.endswith(".svm.bz2"):
            with bz2.open(path.open("rb"), "rb") as fh:
                corpus.append(b"".join(fh.readline() for _ in range(20)))
    return tuple(corpus)


def _svmlight_generate(rnd):
    rules = svmlight_rules()
    corpus = _svmlight_corpus()
    r = rnd.random()
    if r < 0.3:
        data = rules.join_lines(rnd, rules.random_lines(rnd))
    elif r < 0.5:
        data = rules.random_invalid(rnd)
    else:
        start = rnd.choice(corpus) if rnd.random() < 0.3 else \
            rules.join_lines(rnd, rules.random_lines(rnd))
        data = mutate(rnd, start, corpus)
    options = rules.random_options(rnd, data)
    options.update(container=rnd.choice(rules.CONTAINERS),
                   block=rnd.choice([1, 2, 3, 7, 64, 4096, 1 << 20]),
                   capacity=rnd.choice([1, 2, 5, None]),
                   chunk_size=rnd.choice([None, 1, 3, 50_000]))
    return data, options


def _svmlight_check(data, options):
    return svmlight_rules().check_case(data, **options)


def _svmlight_setup():
    # created here, so that the children share (and do not leak) it
    svmlight_rules().scratch_dir()


# ---------------------------------------------------------------- model target

_MODELS = {}  # learner name -> bytes of its saved model (filled by _model_setup)
_META = "__aucopt_meta__"


def _model_setup():
    import aucopt
    from aucopt.testing import contract_data
    X, y = contract_data(0)
    for name, origin in sorted(aucopt.available().items()):
        if origin != "built-in":
            continue
        learner = aucopt.get(name)
        if "random_state" in learner.get_params():
            learner.set_params(random_state=0)
        buf = io.BytesIO()
        learner.fit(X, y).save(buf)
        _MODELS[name] = buf.getvalue()


def _odd_value(rnd, value):
    """A replacement for a JSON value: a boundary, huge, wrong-typed or nested one."""
    pool = [0, -1, 1, 2, 2 ** 31, 2 ** 63 - 1, -2 ** 63, 2 ** 64, 10 ** 30, 1e308, -1e308,
            float("nan"), float("inf"), -0.0, 0.5, "x", "", None, True, False, [], {},
            [value], {"__generator__": value}, {"__generator__": {"bit_generator": "PCG64"}},
            [[[[]]]]]
    if isinstance(value, bool) or value is None:
        return rnd.choice(pool)
    if isinstance(value, (int, float)):
        pool += [value + 1, value - 1, value * 2, -value, value * 1e6,
                 value // 2 if isinstance(value, int) else value / 2]
    return rnd.choice(pool)


def _edit_array(rnd, a):
    """``a`` reshaped, retyped or given odd entries (one edit)."""
    op = rnd.randrange(6)
    if op == 0 and a.ndim and a.dtype.kind != "U":  # one index fewer or more on an axis
        axis = rnd.randrange(a.ndim)
        if a.shape[axis] and rnd.random() < 0.5:
            return np.delete(a, -1, axis=axis)
        pad = [(0, 0)] * a.ndim
        pad[axis] = (0, 1)
        return np.pad(a, pad)
    if op == 1:  # another shape with the same number of entries
        return a.T.copy() if rnd.random() < 0.5 else a.reshape(-1) if a.ndim != 1 else a.reshape(1, -1)
    if op == 2:  # another dtype (string labels such as '0.3' have no integer form)
        dtype = rnd.choice([np.float32, np.int32, np.int64, np.uint64, np.bool_, np.float64,
                            np.int8, np.complex128, "<U3", ">f8"])
        try:
            return a.astype(dtype)
        except (TypeError, ValueError):
            return a.astype("<U3")
    if op == 3 and a.ndim == 2:
        return np.asfortranarray(a)
    b = a.copy()
    if b.size:  # odd entries at random places
        flat = b.reshape(-1)
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(flat.size)
            if b.dtype.kind == "f":
                flat[i] = rnd.choice([np.nan, np.inf, -np.inf, 1e300, -1e300, 5e-324, 0.0])
            elif b.dtype.kind in "iu":
                info = np.iinfo(b.dtype)
                odd = rnd.choice([info.min, info.max, -1, 0, 1, flat.size, flat.size + 1,
                                  2 ** 31 - 1])
                flat[i] = min(max(odd, info.min), info.max)
            elif b.dtype.kind == "b":
                flat[i] = not flat[i]
    return b


def _edit_model(rnd, meta, arrays):
    """Apply one structural edit to ``meta`` (dict) / ``arrays`` (name -> array) in place."""
    op = rnd.randrange(7)
    section = rnd.choice(["params", "attributes"])
    where = meta.get(section) if isinstance(meta.get(section), dict) else None
    if op <= 1 and where:  # a parameter or a scalar attribute
        key = rnd.choice(sorted(where))
        where[key] = _odd_value(rnd, where[key])
        return f"set {section} {key}"
    if op == 2 and arrays:
        key = rnd.choice(sorted(arrays))
        with warnings.catch_warnings():  # casts of NaN or huge values are the point
            warnings.simplefilter("ignore", RuntimeWarning)
            arrays[key] = _edit_array(rnd, arrays[key])
        return f"edit array {key}"
    if op == 3 and where is not None:  # drop or add a key
        if where and rnd.random() < 0.5:
            key = rnd.choice(sorted(where))
            del where[key]
            return f"drop {section} {key}"
        key = rnd.choice(["n_features_in_", "coef_", "x_", "__class__", "weights_"])
        where[key] = _odd_value(rnd, 1)
        return f"add {section} {key}"
    if op == 4:  # another learner's name, or a top-level field
        key = rnd.choice(["learner", "learner", "format_version", "arrays", "params"])
        meta[key] = rnd.choice(sorted(_MODELS)) if key == "learner" else \
            _odd_value(rnd, meta.get(key))
        return f"top-level {key}"
    listed = meta.get("arrays") if isinstance(meta.get("arrays"), list) else []
    if op == 5 and arrays:  # drop an array member, listed or not
        key = rnd.choice(sorted(arrays))
        del arrays[key]
        if rnd.random() < 0.5 and key in listed:
            listed.remove(key)
        return f"drop array {key}"
    key = rnd.choice(["extra_", "coef_", "weights_", "n_features_in_"])  # add a member
    arrays[key] = _edit_array(rnd, np.zeros(rnd.choice([(3,), (2, 2), (0,)])))
    if rnd.random() < 0.5:
        listed.append(key)
    return f"add array {key}"


def _model_generate(rnd):
    name = rnd.choice(sorted(_MODELS))
    blob = _MODELS[name]
    if rnd.random() < 0.2:  # byte-level: mostly broken archives
        return mutate(rnd, blob, list(_MODELS.values())[:3]), {"learner": name, "ops": ["bytes"]}
    with np.load(io.BytesIO(blob)) as npz:  # our own trusted file
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays.pop(_META).tobytes())
    ops = [_edit_model(rnd, meta, arrays) for _ in range(rnd.choice([1, 1, 1, 2, 3]))]
    arrays[_META] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue(), {"learner": name, "ops": ops}


def _model_check(data, options):
    import aucopt
    try:
        model = aucopt.load(io.BytesIO(data))
    except ValueError:
        return "rejected"
    import scipy.sparse as sp
    d = model.n_features_in_
    rng = np.random.default_rng(0)
    cols = np.unique(np.r_[np.arange(min(d, 8)), d - 1])
    X = sp.csr_matrix((rng.standard_normal((6, cols.size)).ravel(),
                       np.tile(cols, 6), np.arange(7) * cols.size), shape=(6, d))
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # a mutated ``verbose`` prints
            _use_model(model, X)
    except (ValueError, FloatingPointError):
        pass  # a clear refusal of this model's use is allowed
    return "accepted"


def _use_model(model, X):
    import aucopt
    y = np.array([0, 1, 0, 1, 1, 0])
    model.decision_function(X)  # finite scores, or FloatingPointError
    if hasattr(model, "partial_fit"):
        model.partial_fit(X, y)
        model.decision_function(X)
    buf = io.BytesIO()
    model.save(buf)
    aucopt.load(io.BytesIO(buf.getvalue()))


# ---------------------------------------------------------------- transactions target

_CALLS = ("fit", "partial_fit", "partial_fit", "merge")


def _learner_names():
    import aucopt
    return sorted(n for n, origin in aucopt.available().items() if origin == "built-in")


def _transactions_generate(rnd):
    name = rnd.choice(_learner_names())
    return b"", {
        "learner": name, "call": rnd.choice(_CALLS), "seed": rnd.randrange(2 ** 31),
        "n": rnd.choice([12, 40, 120, 400]), "d": rnd.choice([1, 3, 5, 8, 40, 200]),
        "sparse": rnd.random() < 0.5, "scale": rnd.choice([1.0, 1.0, 1.0, 1e3, 1e-3]),
        "chunks": rnd.choice([1, 2, 3]),
        # a seam (method, before/after, reach) or a timer firing at a random point
        "mode": rnd.choice(["seam", "seam", "timer"]), "at": rnd.random(),
    }


class _Injected(KeyboardInterrupt):
    """The injected failure: a KeyboardInterrupt, as a Ctrl-C raises (code that
    catches Exception, e.g. numpy's array_equal, swallows an Exception raised
    asynchronously inside it and returns a wrong answer instead)."""


def _transactions_check(data, options):
    """Build a model, then run one call with a failure injected; the model must be
    bit for bit as before, and the same call run afterwards must give the model of
    a copy that never failed. Returns "rejected" when the model cannot be built or
    the call fails on its own (both then must leave the model unchanged too)."""
    import copy

    import scipy.sparse as sp

    import aucopt
    from aucopt.driver import resolved_params
    from aucopt.testing import FAILURE_SEAMS, assert_same_state, fitted_state, untimed
    rnd = random.Random(options["seed"])
    rng = np.random.default_rng(options["seed"])
    n, d = options["n"], options["d"]
    X = rng.standard_normal((n, d)) * options["scale"]
    X[rng.random((n, d)) > 0.6] = 0.0
    y = (X[:, 0] + 0.5 * rng.standard_normal(n) > 0).astype(int)
    y[:2] = [0, 1]
    X = sp.csr_matrix(X) if options["sparse"] else X
    name, call = options["learner"], options["call"]
    cls = type(aucopt.get(name))
    params = {"random_state": 0} if "random_state" in cls().get_params() else {}
    if name == "fcbr":
        params["n_components"] = rnd.choice([4, 16])
    if call == "partial_fit" and not hasattr(cls, "partial_fit"):
        call = "fit"
    if call == "merge" and cls.traits.merge is None:
        call = "fit"
    half = max(2, n // 2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = cls(**params)
            if call == "partial_fit":
                for part in np.array_split(np.arange(half), options["chunks"]):
                    model.partial_fit(X[part], y[part], classes=[0, 1])
            else:
                model.fit(X[:half], y[:half])
            other = None
            if call == "merge":
                resolved = resolved_params(model)
                model = cls(**params, **resolved).fit(X[:half], y[:half])
                other = cls(**{**params, **resolved, **(
                    {"random_state": 1} if name == "opaucr" else {})}).fit(X[:half], y[:half])
    except (ValueError, FloatingPointError):
        return "rejected"
    rest = (X[half:], y[half:])

    def run(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if call == "fit":
                m.fit(*rest)
            elif call == "partial_fit":
                m.partial_fit(*rest)
            else:
                m.merge(other)

    reference = copy.deepcopy(model)
    start = time.perf_counter()
    try:
        run(reference)
    except (ValueError, FloatingPointError):
        reference = None  # the call fails on its own: the model must stay as it was
    duration = time.perf_counter() - start
    before = fitted_state(model)
    seams = [(m, w) for m, w in FAILURE_SEAMS if hasattr(cls, m) and m != "_fit"]
    method, when = seams[int(options["at"] * len(seams))]
    reach = 1 + int(options["at"] * 997) % 4
    saved = cls.__dict__.get(method)
    original = getattr(cls, method)
    count = [0]

    def wrapped(*args, **kwargs):
        if when == "before":
            count[0] += 1
            if count[0] == reach:
                raise _Injected
        out = original(*args, **kwargs)
        if when == "after":
            count[0] += 1
            if count[0] == reach:
                raise _Injected
        return out

    def alarm(signum, frame):
        signal.raise_signal(signal.SIGINT)

    def fire(signum, frame):  # Ctrl-C: held by the library while it must not be cut
        while frame.f_code is alarm.__code__:
            frame = frame.f_back
        if frame.f_code is not _transactions_check.__code__:  # not in this harness
            raise _Injected(traceback.format_stack(frame))

    failed = False
    if options["mode"] == "seam":
        setattr(cls, method, wrapped)
    else:  # the timer sends SIGINT, as a Ctrl-C at a random point of the call
        signal.signal(signal.SIGINT, fire)
        signal.signal(signal.SIGALRM, alarm)
    try:
        if options["mode"] != "seam":
            signal.setitimer(signal.ITIMER_REAL, max(1e-6, options["at"] * duration * 1.2))
        run(model)
    except _Injected as exc:
        failed = True
        where = "".join(exc.args[0][-3:]) if exc.args else f"{method} {when} {reach}"
    except (ValueError, FloatingPointError):
        failed, where = True, "its own failure"
        assert reference is None, "the call failed only with a failure injected elsewhere"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if saved is None:
            if method in cls.__dict__:
                delattr(cls, method)
        else:
            setattr(cls, method, saved)
    if failed:
        after = fitted_state(model)
        try:
            assert_same_state(before, after, f"after a failure at\n{where}")
        except AssertionError:
            # an asynchronous interrupt can arrive after the call committed (at the
            # end of its ``with`` block): then the model must be the whole result
            if reference is None or options["mode"] == "seam":
                raise
            assert_same_state(untimed(fitted_state(reference)), untimed(after),
                              "neither the model before nor the result of the call, "
                              f"after a failure at\n{where}")
            return "accepted"
        if reference is None:
            return "rejected"
        run(model)  # again, without the failure
    else:  # the timer fired after the call, or the seam was not reached that often
        assert reference is not None, "the call succeeded once and failed once"
    assert_same_state(untimed(fitted_state(reference)), untimed(fitted_state(model)),
                      "a call after a failed one differs from the call alone")
    return "accepted"


# ---------------------------------------------------------------- merge weights target

_PARTS = {}  # learner name -> three fitted models of one merge (filled by _merge_setup)
_WEIGHTS = [1e308, 1.7976931348623157e308, 8.98846567431158e307, 1e300, 1e-300,
            2.2250738585072014e-308, 1e-310, 5e-324, 0.0, -0.0, 1.0, 3.0, 0.1,
            float("nan"), float("inf"), -1.0, -5e-324]


def _merge_setup():
    import aucopt
    from aucopt.driver import resolved_params
    from aucopt.testing import contract_data
    for name in _learner_names():
        cls = type(aucopt.get(name))
        # the learners on a feature map merge only models of one map: not parts
        if cls.traits.merge != "average" or cls.traits.row_map:
            continue
        X, y = contract_data(11, n=120, d=6)
        params = {"random_state": 0} if "random_state" in cls().get_params() else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = cls(**params).fit(X[:40], y[:40])
            params.update(resolved_params(first))
            parts = [cls(**params).fit(X[i:i + 40], y[i:i + 40]) for i in (0, 40, 80)]
        _PARTS[name] = parts


def _merge_generate(rnd):
    k = rnd.choice([2, 3])
    weights = [rnd.choice(_WEIGHTS) if rnd.random() < 0.8 else
               rnd.uniform(0, 10) * 10.0 ** rnd.randint(-320, 308) for _ in range(k)]
    return b"", {"learner": rnd.choice(sorted(_PARTS)),
                 "weights": [repr(w) for w in weights]}


def _merge_check(data, options):
    """Weights that are not finite numbers >= 0 with a positive sum must be refused;
    any others must give the merge with the exactly normalised weights (rational
    arithmetic), to rounding, with a finite model."""
    from fractions import Fraction

    import aucopt
    weights = [float(w) for w in options["weights"]]
    parts = _PARTS[options["learner"]][:len(weights)]
    valid = all(np.isfinite(w) and w >= 0 for w in weights) and any(w > 0 for w in weights)
    try:
        merged = aucopt.merge(parts, weights=weights)
    except ValueError:
        assert not valid, "valid weights refused"
        return "rejected"
    assert valid, "invalid weights accepted"
    exact = [Fraction(w) for w in weights]
    normal = [float(w / sum(exact)) for w in exact]
    expected = aucopt.merge(parts, weights=normal)
    assert np.isfinite(merged.coef_).all(), "non-finite merged model"
    scale = max(np.abs(p.coef_).max() for p in parts)
    np.testing.assert_allclose(merged.coef_, expected.coef_, rtol=1e-12, atol=1e-12 * scale)
    if any(np.abs(p.coef_).max() > 0 for p, w in zip(parts, weights) if w > 0):
        assert np.abs(merged.coef_).max() > 0, "merged model is all zero"
    return "accepted"


# ---------------------------------------------------------------- generator-state target

_GEN_MODELS = {}  # learner name -> (saved model bytes) of learners holding a Generator


def _generator_setup():
    import aucopt
    from aucopt.testing import contract_data
    X, y = contract_data(0)
    for name in ("sam", "oam_seq", "opaucr", "spam"):
        buf = io.BytesIO()
        aucopt.get(name, random_state=0).fit(X, y).save(buf)
        _GEN_MODELS[name] = buf.getvalue()


_GEN_ODD = [0, 1, -1, 4, 5, 623, 624, 625, 2 ** 32 - 1, 2 ** 32, 2 ** 63, 2 ** 64 - 1,
            2 ** 64, 2 ** 128 - 1, 2 ** 128, -2 ** 127, True, False, 1.5, 1e300,
            float("nan"), "1", "", None, [], {}, [1, 2], {"__array__": [1], "dtype": "uint64"}]


def _odd(rnd, first=None):
    """A fresh copy of an odd value (a shared list or dict could become circular)."""
    return json.loads(json.dumps(rnd.choice(_GEN_ODD[:first])))


def _mutate_state(rnd, obj, ops):
    """One random edit somewhere inside a JSON bit-generator state."""
    if isinstance(obj, dict) and isinstance(obj.get("__array__"), list) \
            and rnd.random() < 0.7:
        values = obj["__array__"]
        op = rnd.randrange(6)
        if op == 0:
            obj["__array__"] = values[:rnd.randrange(len(values) + 1)]
        elif op == 1:
            obj["__array__"] = values + [_odd(rnd, 16)] * rnd.randint(1, 3)
        elif op == 2 and values:
            values[rnd.randrange(len(values))] = _odd(rnd)
        elif op == 3:
            obj["dtype"] = rnd.choice(["uint8", "uint32", "uint64", "int64", "float64",
                                       "object", "<U3", "bogus", 7])
        elif op == 4:
            obj["__array__"] = [0] * len(values)
        else:
            obj["__array__"] = _odd(rnd)
        ops.append(f"array op {op}")
        return
    if isinstance(obj, dict) and obj:
        key = rnd.choice(sorted(obj, key=str))
        op = rnd.randrange(5)
        if op == 0:
            del obj[key]
            ops.append(f"drop {key}")
        elif op == 1:
            obj[key + "x" if rnd.random() < 0.5 else "extra"] = _odd(rnd)
            ops.append(f"add beside {key}")
        elif op == 2 and isinstance(obj[key], (dict, list)):
            ops.append(f"into {key}")
            _mutate_state(rnd, obj[key], ops)
        elif op == 3 and key == "bit_generator":
            obj[key] = rnd.choice(["PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937",
                                   "pcg64", "Generator", "", None])
            ops.append(f"bit_generator {obj[key]}")
        else:
            obj[key] = _odd(rnd)
            ops.append(f"set {key}")
    elif isinstance(obj, list) and obj:
        obj[rnd.randrange(len(obj))] = _odd(rnd)
        ops.append("list item")


def _stored_generator(gen):
    """The JSON value a model file stores for Generator ``gen`` (written by a save
    of an unfitted learner whose random_state it is)."""
    import aucopt
    buf = io.BytesIO()
    aucopt.get("sam", random_state=gen).save(buf)
    with np.load(io.BytesIO(buf.getvalue())) as npz:
        return json.loads(npz[_META].tobytes())["params"]["random_state"]


def _generator_generate(rnd):
    name = rnd.choice(sorted(_GEN_MODELS))
    with np.load(io.BytesIO(_GEN_MODELS[name])) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays.pop(_META).tobytes())
    kind = rnd.choice(["PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937"])
    state = _stored_generator(np.random.Generator(
        getattr(np.random, kind)(rnd.randrange(2 ** 32))))["__generator__"]
    ops = [kind]
    for _ in range(rnd.choice([0, 1, 1, 1, 2, 3])):
        _mutate_state(rnd, state, ops)
    where = "random_state" if rnd.random() < 0.15 else "random_state_"
    (meta["params"] if where == "random_state" else meta["attributes"])[where] = {
        "__generator__": state}
    arrays[_META] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue(), {"learner": name, "ops": ops, "where": where}


def _generator_check(data, options):
    """``load`` raises ValueError("malformed model file: ...") or gives a model whose
    generator holds exactly the stored state, draws, trains on and round-trips."""
    import aucopt
    try:
        model = aucopt.load(io.BytesIO(data))
    except ValueError as exc:
        assert str(exc).startswith("malformed model file: "), str(exc)
        return "rejected"
    with np.load(io.BytesIO(data)) as npz:
        meta = json.loads(npz[_META].tobytes())
    section = meta["params"] if options["where"] == "random_state" else meta["attributes"]
    stored = section[options["where"]]
    gen = getattr(model, options["where"])
    if isinstance(gen, np.random.Generator):
        assert _stored_generator(gen) == stored, "the loaded generator's state differs"
        gen.random(3)
    from aucopt.testing import contract_data
    X, y = contract_data(1)
    try:
        if options["where"] == "random_state":
            model.fit(X, y)
        model.partial_fit(X, y)
    except (ValueError, FloatingPointError):
        pass
    buf = io.BytesIO()
    model.save(buf)
    again = aucopt.load(io.BytesIO(buf.getvalue()))
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))
    return "accepted"


TARGETS = {
    "svmlight": Target(_svmlight_generate, _svmlight_check, _svmlight_setup),
    "model": Target(_model_generate, _model_check, _model_setup),
    "transactions": Target(_transactions_generate, _transactions_check),
    "merge_weights": Target(_merge_generate, _merge_check, _merge_setup),
    "generator": Target(_generator_generate, _generator_check, _generator_setup),
}
from fuzz_streams import stream_targets, svmlight_rules  # noqa: E402 (tools/fuzz_streams.py)

TARGETS.update(stream_targets(Target))


# ---------------------------------------------------------------- running


def save_case(out, kind, target_name, data, options, note):
    """Write ``out/<kind>/<target>-<hash>.input`` (the data) and ``.json``; returns the json path."""
    from aucopt.datasets import atomic_write

    folder = os.path.join(out, kind)
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha1(data + json.dumps(options, sort_keys=True).encode()).hexdigest()
    stem = os.path.join(folder, f"{target_name}-{digest[:12]}")
    with atomic_write(stem + ".input") as fh:
        fh.write(data)
    with atomic_write(stem + ".json") as fh:
        fh.write(json.dumps({"target": target_name, "input": os.path.basename(stem) + ".input",
                             "options": options, "note": note}, indent=1).encode())
    return stem + ".json"


def _child(target, cases, fd, log_fd):
    """Run ``cases`` and write one status byte per case to ``fd``: A, R or D."""
    os.dup2(log_fd, 2)
    faulthandler.enable()  # a Python traceback in the log on SIGSEGV / SIGABRT
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    for data, options in cases:
        try:
            status = b"A" if target.check(data, options) == "accepted" else b"R"
        except BaseException:  # noqa: B902 - any other outcome is a disagreement
            status = b"D" + traceback.format_exc().encode("utf-8", "replace") + b"\0"
        os.write(fd, status)
    os._exit(0)


def run_batch(target, cases, timeout, log_path):
    """Run ``cases`` in one forked child.

    Returns ``(statuses, failure)``: one ``(letter, detail)`` per finished
    case, and ``None`` or ``("crash" | "hang", child's stderr)`` when the
    child died or was killed before finishing the next case.
    """
    read_fd, write_fd = os.pipe()
    with open(log_path, "w+b") as log:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(read_fd)
            _child(target, cases, write_fd, log.fileno())
        os.close(write_fd)
        statuses = []
        try:
            killed = _collect(read_fd, statuses, timeout)
        except BaseException:  # Ctrl-C: do not leave the child behind
            killed = True
            raise
        finally:
            os.close(read_fd)
            if killed:
                os.kill(pid, signal.SIGKILL)
            status = os.waitpid(pid, 0)[1]
        if killed or status != 0 or len(statuses) < len(cases):
            log.seek(0)
            return statuses, ("hang" if killed else "crash",
                              log.read().decode("utf-8", "replace"))
    return statuses, None


def _collect(fd, statuses, timeout):
    """Read the child's status records into ``statuses``; True if it had to be killed."""
    buf, deadline = b"", time.monotonic() + timeout
    while True:
        ready = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]
        if not ready:
            return True
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return False
        buf += chunk
        while buf[:1] in (b"A", b"R") or (buf[:1] == b"D" and b"\0" in buf):
            end = buf.index(b"\0") if buf[:1] == b"D" else 0  # D carries a traceback
            statuses.append((buf[:1].decode(), buf[1:end].decode("utf-8", "replace")))
            buf = buf[end + 1:]
            deadline = time.monotonic() + timeout


def fuzz(name, seconds, seed, batch, timeout, out=OUT):
    target = TARGETS[name]
    target.setup()
    rnd = random.Random(seed)
    counts = dict.fromkeys(["inputs", "accepted", "rejected", "disagreements", "crashes",
                            "hangs"], 0)
    saved = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="aucopt-fuzz-") as tmp:
        log_path = os.path.join(tmp, "child-stderr.log")
        try:
            while time.monotonic() - start < seconds:
                cases = [target.generate(rnd) for _ in range(batch)]
                statuses, failure = run_batch(target, cases, timeout, log_path)
                for (data, options), (letter, detail) in zip(cases, statuses):
                    counts["inputs"] += 1
                    if letter == "D":
                        counts["disagreements"] += 1
                        saved.append(save_case(out, "fuzz-disagreements", name, data, options,
                                               detail))
                    else:
                        counts["accepted" if letter == "A" else "rejected"] += 1
                if failure is not None:
                    data, options = cases[len(statuses)]
                    kind, log = failure
                    counts["inputs"] += 1
                    counts["hangs" if kind == "hang" else "crashes"] += 1
                    alone = run_batch(target, [(data, options)], timeout, log_path)[1]
                    note = (f"{kind} (seed {seed}); "
                            + ("reproduced alone in a fresh process" if alone else
                               "NOT reproduced alone: an earlier case of its batch may "
                               "be the cause") + "\n" + (alone or failure)[1])
                    saved.append(save_case(out, "fuzz-crashes", name, data, options, note))
        except KeyboardInterrupt:
            print("interrupted")
    elapsed = time.monotonic() - start
    print(f"{name}: {counts['inputs']} inputs in {elapsed:.0f} s "
          f"({counts['inputs'] / max(elapsed, 1e-9):.0f}/s, seed {seed}): "
          + ", ".join(f"{k} {v}" for k, v in counts.items() if k != "inputs"))
    for path in dict.fromkeys(saved):  # once each, in order
        print("saved", path)
    return 1 if saved else 0


def replay(name, paths):
    target = TARGETS[name]
    target.setup()
    failed = 0
    for path in paths:
        with open(path) as fh:
            meta = json.load(fh)
        with open(os.path.join(os.path.dirname(path), meta["input"]), "rb") as fh:
            data = fh.read()
        try:
            print(path, "->", target.check(data, meta["options"]))
        except Exception:  # noqa: B902 - report and go on with the next case
            failed = 1
            print(path, "-> FAILED")
            traceback.print_exc()
    return failed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", choices=sorted(TARGETS))
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to fuzz (default 60)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    parser.add_argument("--batch", type=int, default=50, help="inputs per forked child (default 50)")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds an input may take before it counts as a hang (default 10)")
    parser.add_argument("--out", default=OUT,
                        help="where fuzz-crashes/ and fuzz-disagreements/ go (default tools/out)")
    parser.add_argument("--replay", nargs="+", metavar="JSON",
                        help="run saved cases (their .json files) in this process instead")
    args = parser.parse_args(argv)
    if args.replay:
        return replay(args.target, args.replay)
    seed = args.seed if args.seed is not None else int(time.time())
    return fuzz(args.target, args.seconds, seed, max(1, args.batch), args.timeout, args.out)


if __name__ == "__main__":
    sys.exit(main())
