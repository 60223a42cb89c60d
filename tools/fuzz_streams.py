"""Targets of ``tools/fuzz.py`` for streams: read-once inputs and one-class chunks.

``readonce``
    ``load_svmlight`` / ``iter_svmlight`` on input that can be read once: a pipe
    named by path (as ``/dev/stdin``), a named FIFO, or a non-seekable file object
    over a pipe; plain, or gzip / bzip2 / xz compressed (recognised by magic bytes,
    or given as a decompressing file object), sometimes truncated; written by a
    thread in pieces of random sizes; with or without ``n_features`` and
    ``zero_based`` (two passes are refused on such input). The checker compares
    with ``load_svmlight`` of the same bytes in memory (itself checked against the
    reference parser by the ``svmlight`` target): the same rows bit for bit, or a
    ValueError where it gives one; a truncated compressed stream must be a
    ValueError; a refused second pass must be a ValueError when called. A hang
    (the old FIFO behaviour) is caught by the harness's ``--timeout``.
``chunks``
    ``partial_fit(X, y, classes=[0, 1])`` of every built-in online learner on
    chunks of random sizes, empty ones included, of rows in random or label-sorted
    order (many chunks of one class), dense or CSR. Rule: a chunk is learned, or
    refused with ValueError (empty chunks must be) or FloatingPointError (a
    diverged step), and then the model is exactly as before the call; in the end a
    fitted model gives finite scores and saves and loads to the same scores.
"""
import bz2
import functools
import gzip
import importlib.util
import io
import lzma
import os
import sys
import tempfile
import threading

import numpy as np

_COMPRESS = {"plain": None, "gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}
_OPENERS = {"gz": gzip.open, "bz2": bz2.open, "xz": lzma.open}
_WAIT = 20.0  # seconds a writer thread may take (the harness's --timeout is shorter)


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.lru_cache(maxsize=None)
def svmlight_rules():
    """``tests/test_svmlight_robust.py`` (the svmlight grammar, reference parser and
    checks), loaded from its file: the tests are not on sys.path. The tests' helper
    it imports (``tests/full.py``) is loaded from its file first."""
    _test_module("full")
    return _test_module("test_svmlight_robust")


def _test_module(name):
    """``tests/<name>.py`` loaded from its file as module ``name``."""
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(REPO, "tests", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- readonce

def _readonce_generate(rnd):
    rules = svmlight_rules()
    if rnd.random() < 0.8:
        text = rules.join_lines(rnd, rules.random_lines(rnd, max_lines=rnd.choice([3, 12, 60])))
    else:
        text = rules.random_invalid(rnd)
    options = rules.random_options(rnd, text)
    compression = rnd.choice(list(_COMPRESS))
    data = text if _COMPRESS[compression] is None else _COMPRESS[compression](text)
    truncated = compression != "plain" and rnd.random() < 0.2
    if truncated:
        data = data[:rnd.randrange(1, len(data))]  # nothing at all is an empty file
    options.update(kind=rnd.choice(["pipe", "fifo", "fileobj"]), compression=compression,
                   truncated=truncated, api=rnd.choice(["load", "iter"]),
                   chunk_size=rnd.choice([1, 3, 50_000]),
                   block=rnd.choice([1, 7, 64, 4096, 1 << 20]),
                   pieces=rnd.choice([1, 2, 5, 50]), text=text.hex())
    return data, options


def _expected(text, options):
    """``(X, y)`` or the ValueError of ``load_svmlight`` of the bytes in memory."""
    from aucopt.datasets import load_svmlight
    try:
        return load_svmlight(text, n_features=options["n_features"],
                             zero_based=options["zero_based"])
    except ValueError as exc:
        return exc


def _writer(target, data, pieces):
    """A started thread writing ``data`` in ``pieces`` to ``target`` (an fd or a
    FIFO path, opened for writing in the thread), then closing it."""
    def write():
        try:
            fd = os.open(target, os.O_WRONLY) if isinstance(target, str) else target
            with os.fdopen(fd, "wb") as fh:
                step = max(1, -(-len(data) // pieces))
                for start in range(0, len(data), step):
                    fh.write(data[start:start + step])
                    fh.flush()
        except (BrokenPipeError, OSError):
            pass  # the reader refused the input and closed its end
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _readonce_check(data, options):
    rules = svmlight_rules()
    from aucopt.datasets import iter_svmlight, load_svmlight
    expected = _expected(bytes.fromhex(options["text"]), options)
    two_pass = options["n_features"] is None or options["zero_based"] == "auto"
    with tempfile.TemporaryDirectory(prefix="aucopt-readonce-") as tmp:
        read_end = None
        if options["kind"] == "fifo":
            source = os.path.join(tmp, "fifo")
            os.mkfifo(source)
            thread = _writer(source, data, options["pieces"])
        else:
            read_end, write_end = os.pipe()
            thread = _writer(write_end, data, options["pieces"])
            source = f"/dev/fd/{read_end}"
        opened = None
        try:
            if options["kind"] == "fileobj":
                opened = open(source, "rb")
                if options["compression"] != "plain":
                    opened = _OPENERS[options["compression"]](opened, "rb")
                source = opened
            kwargs = {"n_features": options["n_features"], "zero_based": options["zero_based"]}
            with rules.reader_sizes(options["block"]):
                outcome = _read(load_svmlight, iter_svmlight, source, kwargs, options,
                                two_pass)
        finally:
            if opened is not None:
                opened.close()
            if read_end is not None:
                os.close(read_end)  # a writer still writing gets EPIPE
            elif thread.is_alive():  # a refused FIFO: open and drain it for the writer
                _drain(os.path.join(tmp, "fifo"), thread)
            thread.join(timeout=_WAIT)
        assert not thread.is_alive(), "the writer is still blocked"
    if outcome == "refused":
        assert options["api"] == "iter" and two_pass, "a one-pass read was refused"
        return "rejected"
    if options["api"] == "iter" and two_pass:  # only an error of the first pass may come first
        if outcome is None and isinstance(expected, tuple) and not expected[0].shape[0]:
            return "accepted"  # no rows: the stream rewound to where it stood (no-op)
        assert isinstance(outcome, ValueError) and (
            options["truncated"] or isinstance(expected, ValueError)), \
            "a second pass was not refused"
    if isinstance(outcome, ValueError):
        assert options["truncated"] or isinstance(expected, ValueError), \
            f"refused valid input: {outcome}"
        return "rejected"
    assert not options["truncated"] or not isinstance(expected, tuple) or \
        _same(outcome, expected), "a truncated stream gave other rows without an error"
    assert isinstance(expected, tuple), f"accepted what load_svmlight refuses: {expected}"
    assert _same(outcome, expected), "rows differ from load_svmlight of the same bytes"
    return "accepted"


def _drain(fifo, thread):
    """Read the FIFO ``fifo`` until its writer ``thread`` is done."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while thread.is_alive():
            try:
                os.read(fd, 1 << 16)
            except BlockingIOError:
                pass
            thread.join(timeout=0.01)
    finally:
        os.close(fd)


def _read(load, iterate, source, kwargs, options, two_pass):
    """The rows read, a ValueError, or "refused" (iter_svmlight's second pass)."""
    import scipy.sparse as sp
    if options["api"] == "load":
        try:
            return load(source, **kwargs)
        except ValueError as exc:
            return exc
    try:
        chunks = iterate(source, options["chunk_size"], **kwargs)
    except ValueError as exc:
        assert "not a regular file" in str(exc) or "not seekable" in str(exc), str(exc)
        return "refused"
    got = []
    try:
        for X, y in chunks:
            got.append((X, y))
    except ValueError as exc:
        if "not seekable" in str(exc):  # a decompressing file object over a pipe
            return "refused"  # says seekable() until its rewind fails
        return exc
    if not got:
        return None
    return sp.vstack([X for X, _ in got], format="csr"), np.concatenate([y for _, y in got])


def _same(outcome, expected):
    X_ref, y_ref = expected
    if outcome is None:  # no chunk: no rows
        return X_ref.shape[0] == 0
    X, y = outcome
    return (X.shape == X_ref.shape and np.array_equal(X.indptr, X_ref.indptr)
            and np.array_equal(X.indices, X_ref.indices)
            and np.array_equal(X.data.view(np.int64), X_ref.data.view(np.int64))
            and np.array_equal(y.view(np.int64), y_ref.view(np.int64)))


# ---------------------------------------------------------------- chunks

def _online():
    import aucopt
    from aucopt.registry import get_class
    return sorted(name for name, origin in aucopt.available().items()
                  if origin == "built-in" and hasattr(get_class(name), "partial_fit"))


def _chunks_generate(rnd):
    n = rnd.randrange(1, 80)
    sizes, left = [], n
    while left > 0:
        size = rnd.choice([0, 0, 1, 2, 5, 17, 40])
        sizes.append(min(size, left))
        left -= sizes[-1]
    options = {"learner": rnd.choice(_online()), "n": n, "d": rnd.randrange(1, 7),
               "seed": rnd.randrange(2 ** 31), "sparse": rnd.random() < 0.5,
               "order": rnd.choice(["random", "sorted", "sorted_desc", "one_class"]),
               "sizes": sizes, "scale": rnd.choice([1e-3, 1.0, 1.0, 30.0])}
    return b"", options


def _chunks_check(data, options):
    import warnings

    import scipy.sparse as sp

    import aucopt
    from aucopt.testing import assert_same_state, fitted_state

    rng = np.random.default_rng(options["seed"])
    n, d = options["n"], options["d"]
    X = rng.standard_normal((n, d)) * options["scale"]
    X[rng.random((n, d)) < 0.4] = 0.0
    y = (X[:, 0] + 0.5 * rng.standard_normal(n) > 0).astype(int)
    if options["order"] == "one_class":
        y[:] = rng.integers(2)
    elif options["order"] != "random":
        order = np.argsort(y if options["order"] == "sorted" else -y, kind="stable")
        X, y = X[order], y[order]
    if options["sparse"]:
        X = sp.csr_matrix(X)
    params = {"random_state": options["seed"] % 1000}
    model = aucopt.get(options["learner"])
    model.set_params(**{k: v for k, v in params.items() if k in model.get_params()})
    start, outcomes = 0, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for size in options["sizes"]:
            Xc, yc = X[start:start + size], y[start:start + size]
            start += size
            before = fitted_state(model) if model.__sklearn_is_fitted__() else None
            try:
                model.partial_fit(Xc, yc, classes=[0, 1])
                assert size, "an empty chunk was accepted"
                outcomes.append("learned")
            except (ValueError, FloatingPointError) as exc:
                assert size or isinstance(exc, ValueError), f"empty chunk: {exc!r}"
                outcomes.append(type(exc).__name__)
                if before is None:
                    assert not model.__sklearn_is_fitted__(), "a failed first call fitted"
                else:
                    assert_same_state(before, fitted_state(model), "a refused chunk")
        if not model.__sklearn_is_fitted__():
            return "rejected"
        scores = model.decision_function(X)
        assert np.all(np.isfinite(scores)), "non-finite scores"
        buf = io.BytesIO()
        model.save(buf)
        again = aucopt.load(io.BytesIO(buf.getvalue())).decision_function(X)
        assert np.array_equal(again, scores), "save / load changed the scores"
    return "accepted" if "learned" in outcomes else "rejected"


def stream_targets(target):
    """The targets of this module, as ``target(generate, check)`` values by name."""
    return {"readonce": target(_readonce_generate, _readonce_check),
            "chunks": target(_chunks_generate, _chunks_check)}
