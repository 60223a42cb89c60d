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
sys.path.insert(0, REPO)
sys.path.insert(1, os.path.join(REPO, "tests"))  # the svmlight reference parser


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
    from aucopt.datasets._bundled import DATA_DIR
    corpus = []
    for name in sorted(os.listdir(DATA_DIR)):
        if name.endswith(".svm.bz2"):
            with bz2.open(os.path.join(DATA_DIR, name), "rb") as fh:
                corpus.append(b"".join(fh.readline() for _ in range(20)))
    return tuple(corpus)


def _svmlight_generate(rnd):
    import test_svmlight_robust as rules
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
    import test_svmlight_robust as rules
    return rules.check_case(data, **options)


def _svmlight_setup():
    import test_svmlight_robust as rules
    rules.scratch_dir()  # created here, so that the children share (and do not leak) it


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


TARGETS = {
    "svmlight": Target(_svmlight_generate, _svmlight_check, _svmlight_setup),
    "model": Target(_model_generate, _model_check, _model_setup),
}
from fuzz_streams import stream_targets  # noqa: E402 (tools/fuzz_streams.py)

TARGETS.update(stream_targets(Target))


# ---------------------------------------------------------------- running


def save_case(out, kind, target_name, data, options, note):
    """Write ``out/<kind>/<target>-<hash>.input`` (the data) and ``.json``; returns the json path."""
    folder = os.path.join(out, kind)
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha1(data + json.dumps(options, sort_keys=True).encode()).hexdigest()
    stem = os.path.join(folder, f"{target_name}-{digest[:12]}")
    with open(stem + ".input", "wb") as fh:
        fh.write(data)
    with open(stem + ".json", "w") as fh:
        json.dump({"target": target_name, "input": os.path.basename(stem) + ".input",
                   "options": options, "note": note}, fh, indent=1)
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
