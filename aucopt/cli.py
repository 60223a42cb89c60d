"""The ``aucopt`` command.

    aucopt list
    aucopt train NAME TRAIN.svm [--test TEST.svm] [--param k=v ...] [--positive L,..] [--save M.npz]
                 [--stream [--chunk-size N] [--holdout N]]
    aucopt tune NAME TRAIN.svm [--test TEST.svm] [--grid k=v1,v2 ...] [--cv 3] [--save M.npz]
    aucopt eval MODEL.npz TEST.svm [--positive L,..] [--roc ROC.png]
    aucopt scale DATA.svm OUT.svm [--method maxabs] [--fit TRAIN.svm]
    aucopt demo [--learner NAME]
    aucopt --version

Every expected failure (bad arguments, unreadable or malformed files, a diverged fit,
too little memory) exits with status 2 and one line on stderr naming the file or the
parameter and the fix; Ctrl-C exits with status 130.
"""
import argparse
import ast
import contextlib
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

DEMO_DATASET = "spambase"
DEMO_LEARNER = "psam"
# where the demo says the documentation is
DOCS_BUILD = 'pip install ".[docs]" && sphinx-build -W --keep-going -b html docs docs/_build/html'
# `aucopt scale`: a method of aucopt.datasets.Scaler that shifts the columns makes every
# entry non-zero, so it scales dense copies of at most this many values (8 bytes each)
DENSE_SCALE_VALUES = 50_000_000
# what the command line adds to a FeatureScaleWarning (the warning names Python's ways)
SCALE_HINT = ("On the command line: aucopt scale TRAIN.svm TRAIN.scaled.svm, and aucopt "
              "scale TEST.svm TEST.scaled.svm --fit TRAIN.svm for other files.")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _parse_value(text):
    """``"1e-4"`` -> 1e-4, ``"3"`` -> 3, ``"true"`` -> True, ``"none"`` -> None, else the string."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _pairs(pairs, option):
    out = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise _UsageError(f"{option} expects key=value, got {pair!r}")
        out[key.strip()] = value
    return out


def _parse_params(pairs):
    return {k: _parse_value(v) for k, v in _pairs(pairs, "--param").items()}


def _parse_grid(pairs):
    return {k: [_parse_value(v) for v in values.split(",")]
            for k, values in _pairs(pairs, "--grid").items()}


def _labels(y, positive):
    """Binarize when ``--positive`` is given, otherwise keep the file's two labels."""
    from aucopt.datasets import binarize

    if positive is None:
        return y
    return binarize(y, [_parse_value(v) for v in positive.split(",")])


def _two_labels(path, y, positive):
    """The labels ``y`` of a file that AUC training or scoring reads: more than two,
    with no ``--positive`` to name the positive ones, are a usage error that says so
    (the library's own error would point a command-line user at a Python function)."""
    labels = np.unique(y) if positive is None else ()
    if len(labels) > 2:
        shown = ", ".join(f"{v:g}" for v in labels[:6]) + (", ..." if labels.size > 6 else "")
        raise _UsageError(
            f"aucopt: error: {path} holds {labels.size} labels ({shown}); AUC needs two "
            f"classes: name the positive labels with --positive (e.g. --positive "
            f"{labels[0]:g} for one against the rest)")


def _read(path, n_features=None, positive=None):
    """An svmlight file as (X, y); a failure names the file."""
    from aucopt.datasets import load_svmlight

    with _naming(path):
        X, y = load_svmlight(path, n_features=n_features)
        return X, _labels(y, positive)


def _chunks(path, chunk_size, n_features=None, positive=None):
    """An svmlight file as (X, y) chunks in bounded memory; a failure names the file."""
    from aucopt.datasets import iter_svmlight

    with _naming(path):
        for X, y in iter_svmlight(path, chunk_size=chunk_size, n_features=n_features):
            yield X, _labels(y, positive)


@contextlib.contextmanager
def _naming(path):
    """Turn a failure to read ``path`` into one line naming the file."""
    try:
        yield
    except FileNotFoundError:
        raise _UsageError(f"aucopt: error: {path}: no such file") from None
    except (ValueError, OSError, EOFError) as exc:
        raise _UsageError(f"aucopt: error: {_about(path, exc)}") from None


def _about(path, exc):
    """``path: message`` (the path once, whether or not the message names it)."""
    message = _first_line(exc)
    return message if str(path) in message else f"{path}: {message}"


def _cannot_write(path, exc):
    """The one line of a failed write to ``path``: the system's reason, without the
    name of the temporary file an atomic write was making beside it."""
    return _UsageError(f"aucopt: error: {path}: cannot write "
                       f"({exc.strerror or _first_line(exc)})")


def _first_line(exc):
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def _with_features(X, n_features):
    if X.shape[1] == n_features:
        return X
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))


def _train_test(args):
    X, y = _read(args.train, args.n_features, args.positive)
    _two_labels(args.train, y, args.positive)
    X_test = y_test = None
    if args.test:
        X_test, y_test = _read(args.test, args.n_features, args.positive)
        _two_labels(args.test, y_test, args.positive)
        d = max(X.shape[1], X_test.shape[1])
        X, X_test = _with_features(X, d), _with_features(X_test, d)
    return X, y, X_test, y_test


def _learner_info(cls):
    """(family, online, merge, input limits) of a learner class, for ``aucopt list``."""
    from aucopt.traits import traits_of

    traits = traits_of(cls)
    online = "online" if hasattr(cls, "partial_fit") else "batch"
    return traits.family, online, traits.merge or "-", traits.limits


def _cmd_list(args, out):
    import aucopt
    from aucopt.registry import BUILTIN, get_class

    names = aucopt.available()
    rows = [("name", "family", "mode", "merge", "input", "origin")]
    for name, origin in names.items():
        info = _learner_info(get_class(name)) if origin == BUILTIN else ("", "", "", "")
        rows.append((name, *info, origin))
    widths = [max(len(r[k]) for r in rows) for k in range(6)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(), file=out)


def _fit_and_report(learner, name, X, y, X_test, y_test, out):
    start = time.perf_counter()
    learner.fit(X, y)
    seconds = time.perf_counter() - start
    print(f"learner      {name}  {learner!r}", file=out)
    print(f"train        {X.shape[0]} rows x {X.shape[1]} features, "
          f"{X.nnz} non-zeros; fit {seconds:.3f} s", file=out)
    print(f"train AUC    {learner.score(X, y):.4f}", file=out)
    if X_test is not None:
        print(f"test AUC     {learner.score(X_test, y_test):.4f}", file=out)


def _save(learner, path, out):
    if path:
        try:
            learner.save(path)
        except OSError as exc:
            raise _cannot_write(path, exc) from None
        print(f"saved        {path}", file=out)


def _cmd_train(args, out):
    import aucopt

    learner = aucopt.get(args.learner, **_parse_params(args.param))
    if args.stream:
        _stream_and_report(learner, args, out)
    else:
        X, y, X_test, y_test = _train_test(args)
        _fit_and_report(learner, args.learner, X, y, X_test, y_test, out)
    _save(learner, args.save, out)


def _stream_and_report(learner, args, out):
    """``train --stream``: partial_fit chunk by chunk, one progress line per chunk.

    The held-out sample is ``--holdout`` rows drawn at random (seed 0) from the
    first chunk (at most half of it); they are never trained on, and the AUC on
    them after each chunk is the running AUC of the progress lines ("n/a" when the
    first chunk holds one class, as in a file sorted by label). With ``--positive``
    any chunk may hold one class.
    """
    from aucopt.metrics import roc_auc

    if not hasattr(learner, "partial_fit"):
        raise _UsageError(f"aucopt: error: {args.learner} is a batch learner; --stream "
                          "needs an online learner (mode 'online' in `aucopt list`)")
    if args.chunk_size < 1 or args.holdout < 0:
        raise _UsageError("aucopt: error: --chunk-size must be >= 1 and --holdout >= 0")
    start = last = time.perf_counter()
    held, n_rows, n_chunks, nnz, one_class = None, 0, 0, 0, False
    # --positive: the classes are known before any row (chunks of one class, as a
    # file sorted by label gives, are then valid); else the first chunk shows them
    classes = None if args.positive is None else np.array([-1.0, 1.0])
    for X, y in _chunks(args.train, args.chunk_size, args.n_features, args.positive):
        if classes is None:
            classes = np.unique(y)
            if classes.size != 2:
                raise _UsageError(
                    f"aucopt: error: {args.train}: the first chunk holds the labels "
                    f"{classes.tolist()[:10]}, not two classes: name the positive "
                    "labels with --positive (e.g. --positive 1 for a -1/+1 file whose "
                    "rows are sorted by label)")
        if held is None:
            pick = np.random.default_rng(0).permutation(y.size)
            out_rows = np.sort(pick[:min(args.holdout, y.size // 2)])
            keep = np.sort(pick[out_rows.size:])
            held = (X[out_rows], y[out_rows])
            X, y = X[keep], y[keep]
        if not one_class and np.unique(y).size < 2:
            one_class = True
            print(f"aucopt: note: chunk {n_chunks + 1} holds one class (rows sorted by "
                  "label?): an online learner follows the stream's order and learns "
                  "little from such a stream (the pairwise sam, asam, psam and adadsgd "
                  "nothing from a chunk of one class); shuffle the file's lines first "
                  "(e.g. shuf) or use a batch learner", file=sys.stderr)
        learner.partial_fit(X, y, classes=classes)
        seconds = time.perf_counter() - last  # reading and training the chunk
        n_rows, n_chunks, nnz = n_rows + y.size, n_chunks + 1, nnz + X.nnz
        auc = _held_out_auc(roc_auc, learner, held)
        print(f"chunk {n_chunks:<5d} rows {n_rows:>11,d}  {y.size / seconds:>11,.0f} rows/s  "
              f"held-out AUC {auc}", file=out, flush=True)
        last = time.perf_counter()
    if held is None:
        raise _UsageError(f"aucopt: error: {args.train}: no rows")
    seconds = time.perf_counter() - start
    print(f"learner      {args.learner}  {learner!r}", file=out)
    print(f"train        {n_rows} rows x {learner.n_features_in_} features, {nnz} non-zeros "
          f"in {n_chunks} chunks of {args.chunk_size}; read and fit {seconds:.3f} s", file=out)
    print(f"held-out AUC {_held_out_auc(roc_auc, learner, held)} on {held[1].size} rows of the "
          "first chunk", file=out)
    if args.test:
        scores, labels = [], []
        for X, y in _chunks(args.test, args.chunk_size, learner.n_features_in_, args.positive):
            scores.append(learner.decision_function(X))
            labels.append(y)
        auc = roc_auc(np.concatenate(labels), np.concatenate(scores),
                      pos_label=learner.classes_[1])
        print(f"test AUC     {auc:.4f}", file=out)


def _held_out_auc(roc_auc, learner, held):
    X, y = held
    if np.unique(y).size < 2:
        return "n/a (one class)"
    return f"{roc_auc(y, learner.decision_function(X)):.4f}"


def _cmd_tune(args, out):
    import aucopt
    from aucopt.model_selection import GridSearch

    learner = aucopt.get(args.learner, **_parse_params(args.param))
    grid = _parse_grid(args.grid) or None
    search = GridSearch(learner, grid, cv=args.cv, n_jobs=args.n_jobs,
                        random_state=args.random_state)
    X, y, X_test, y_test = _train_test(args)
    start = time.perf_counter()
    search.fit(X, y)
    seconds = time.perf_counter() - start
    res = search.cv_results_
    print(f"grid         {len(res['params'])} points x {args.cv} folds; {seconds:.3f} s",
          file=out)
    for params, mean, std in zip(res["params"], res["mean_test_auc"], res["std_test_auc"]):
        mark = "*" if params == search.best_params_ else " "
        print(f"{mark} CV AUC {mean:.4f} +- {std:.4f}  {params}", file=out)
    best = search.best_estimator_
    print(f"best         {best!r}", file=out)
    print(f"train AUC    {best.score(X, y):.4f}", file=out)
    if X_test is not None:
        print(f"test AUC     {best.score(X_test, y_test):.4f}", file=out)
    _save(best, args.save, out)


def _cmd_scale(args, out):
    """``scale``: ``args.data`` scaled by the column statistics of ``args.fit`` (else
    its own), written to ``args.output`` in svmlight format with the file's labels."""
    from aucopt.datasets import Scaler, dump_svmlight

    X, y = _read(args.data, args.n_features)
    X_fit = X
    if args.fit is not None:
        X_fit, _ = _read(args.fit, args.n_features)
        d = max(X.shape[1], X_fit.shape[1])
        X, X_fit = _with_features(X, d), _with_features(X_fit, d)
    scaler = Scaler(args.method)
    if scaler.shifts:
        values = (X.shape[0] + (X_fit.shape[0] if args.fit is not None else 0)) * X.shape[1]
        if values > DENSE_SCALE_VALUES:
            raise _UsageError(
                f"aucopt: error: --method {args.method} shifts every column, so every entry "
                f"of the {X.shape[1]} columns becomes non-zero ({values:,} values, more "
                f"than {DENSE_SCALE_VALUES:,}); --method maxabs (the default) keeps the zeros")
        X = X.toarray()
        X_fit = X if args.fit is None else X_fit.toarray()
    scaled = scaler.fit(X_fit).transform(X)
    try:
        dump_svmlight(scaled, y, args.output)
    except OSError as exc:
        raise _cannot_write(args.output, exc) from None
    source = args.fit if args.fit is not None else args.data
    print(f"scaled       {args.data} -> {args.output}: {X.shape[0]} rows x {X.shape[1]} "
          f"features, method {args.method} (column statistics of {source})", file=out)


def _cmd_eval(args, out):
    import aucopt
    from aucopt.metrics import optroc_accuracy

    try:
        model = aucopt.load(args.model)
    except FileNotFoundError:
        raise _UsageError(f"aucopt: error: {args.model}: no such file") from None
    except (ValueError, OSError) as exc:
        raise _UsageError(f"aucopt: error: {_about(args.model, exc)} (write models "
                          "with `aucopt train ... --save`)") from None
    X, y = _read(args.data, model.n_features_in_, args.positive)
    _two_labels(args.data, y, args.positive)
    scores = model.decision_function(X)
    print(f"model        {model!r}", file=out)
    print(f"data         {X.shape[0]} rows", file=out)
    print(f"AUC          {model.score(X, y):.4f}", file=out)
    acc = optroc_accuracy(y, scores, pos_label=model.classes_[1])
    print(f"OPTROC acc   {acc:.4f}", file=out)
    print(f"accuracy     {np.mean(model.predict(X) == y):.4f} (threshold from training)",
          file=out)
    if args.roc:
        _write_roc(model, X, y, args.roc, out)


def _write_roc(model, X, y, path, out):
    import aucopt.plot

    ax = aucopt.plot.roc(model, X, y)
    ax.set_title(f"{type(model).__name__} on {X.shape[0]} rows")
    try:
        aucopt.plot.save(ax.figure, path, dpi=120)
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    finally:
        import matplotlib.pyplot as plt

        plt.close(ax.figure)
    print(f"ROC curve    {path}", file=out)


def _cmd_demo(args, out):
    import aucopt
    from aucopt.datasets import Scaler, load, split

    learner = aucopt.get(args.learner)
    X, y = load(DEMO_DATASET)
    X_train, X_test, y_train, y_test = split(X, y, test_size=0.2, random_state=0)
    method = "standard"  # zero mean, unit variance: the usual choice for dense data
    scaler = Scaler(method).fit(X_train.toarray())
    X_train, X_test = scaler.transform(X_train.toarray()), scaler.transform(X_test.toarray())
    if "random_state" in learner.get_params():
        learner.set_params(random_state=0)
    start = time.perf_counter()
    learner.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    print(f"aucopt {aucopt.__version__} demo: {args.learner} on the bundled "
          f"{DEMO_DATASET} set ({X.shape[0]} rows x {X.shape[1]} features, "
          f"{np.mean(y > 0):.1%} positive), stratified 80/20 split, seed 0; features "
          f"scaled with Scaler({method!r}) fitted on the training part", file=out)
    print(f"learner      {learner!r}", file=out)
    print(f"fit time     {seconds:.4f} s", file=out)
    print(f"train AUC    {learner.score(X_train, y_train):.4f}", file=out)
    print(f"test AUC     {learner.score(X_test, y_test):.4f}", file=out)
    print(f"docs         docs/ of the source tree: {DOCS_BUILD}, then open "
          "docs/_build/html/index.html", file=out)


def _version():
    """The installed distribution's version, or the package's own when not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("aucopt")
    except PackageNotFoundError:
        import aucopt

        return aucopt.__version__


def _data_options(p, test=True):
    p.add_argument("learner", help="learner name (see `aucopt list`)")
    p.add_argument("train", help="training data, svmlight format (.gz/.bz2/.xz ok)")
    if test:
        p.add_argument("--test", help="test data, svmlight format")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="learner parameter, repeatable (e.g. --param lam=1e-4)")
    p.add_argument("--positive", metavar="L1,L2,...",
                   help="labels of the positive class; the others are negative")
    p.add_argument("--n-features", type=int, default=None,
                   help="number of features (default: from the data)")
    p.add_argument("--save", metavar="MODEL.npz", help="save the trained model")


def _build_parser():
    from aucopt.datasets import Scaler

    parser = _Parser(prog="aucopt", description="AUC maximization learners.")
    parser.add_argument("--version", action="version", version=f"aucopt {_version()}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    sub.required = True

    sub.add_parser("list", help="list the learners: family, online or batch, how models "
                                "merge (exact, average or -), input limits")

    train = sub.add_parser("train", help="train a learner on an svmlight file")
    _data_options(train)
    train.add_argument("--stream", action="store_true",
                       help="read the file in chunks (bounded memory) and train an online "
                            "learner chunk by chunk (partial_fit), one progress line per "
                            "chunk: rows/s and the AUC on held-out rows of the first chunk")
    train.add_argument("--chunk-size", type=int, default=50_000,
                       help="rows per chunk with --stream (default 50000)")
    train.add_argument("--holdout", type=int, default=1000,
                       help="rows of the first chunk held out (never trained on) for the "
                            "running AUC with --stream; at most half the chunk (default 1000)")

    tune = sub.add_parser("tune", help="choose a learner's parameters by cross-validated "
                                       "AUC (its own search space unless --grid)")
    _data_options(tune)
    tune.add_argument("--grid", action="append", metavar="KEY=V1,V2,...",
                      help="values to try for a parameter, repeatable")
    tune.add_argument("--cv", type=int, default=3, help="folds (default 3)")
    tune.add_argument("--n-jobs", type=int, default=None, help="parallel threads")
    tune.add_argument("--random-state", type=int, default=0, help="seed of the folds")

    ev = sub.add_parser("eval", help="evaluate a saved model on an svmlight file")
    ev.add_argument("model", help="model written by `aucopt train --save`")
    ev.add_argument("data", help="svmlight file")
    ev.add_argument("--positive", metavar="L1,L2,...",
                    help="labels of the positive class; the others are negative")
    ev.add_argument("--roc", metavar="ROC.png",
                    help="also draw the ROC curve into this image (.png, .svg, .pdf); "
                         'needs matplotlib (pip install "aucopt[plot]")')

    sc = sub.add_parser(
        "scale", help="scale the columns of an svmlight file (as a FeatureScaleWarning asks)",
        description="Write DATA scaled column by column (aucopt.datasets.Scaler) to OUT, "
                    "with its labels. Scale a test file by the training file's statistics "
                    "with --fit TRAIN.svm, as LIBSVM's svm-scale restores its ranges.")
    sc.add_argument("data", help="svmlight file to scale")
    sc.add_argument("output", help="where to write the scaled rows (svmlight, replaced "
                                   "atomically)")
    sc.add_argument("--method", choices=Scaler.METHODS, default="maxabs",
                    help="maxabs (default): divide each column by its largest absolute "
                         "value, keeping the zeros (text, sparse rows); standard / minmax / "
                         "center shift the columns (dense tabular data); l2: each row to "
                         "unit length")
    sc.add_argument("--fit", metavar="TRAIN.svm",
                    help="take the column statistics from this file (default: DATA's own)")
    sc.add_argument("--n-features", type=int, default=None,
                    help="number of features (default: from the data)")

    demo = sub.add_parser("demo", help="train on a small real dataset shipped with aucopt")
    demo.add_argument("--learner", default=DEMO_LEARNER, help="learner name")
    return parser


_COMMANDS = {"list": _cmd_list, "train": _cmd_train, "tune": _cmd_tune, "eval": _cmd_eval,
             "scale": _cmd_scale, "demo": _cmd_demo}


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A warning as the command's own line (not Python's source location); a
    :class:`~aucopt.exceptions.FeatureScaleWarning` also names ``aucopt scale``."""
    from aucopt.exceptions import FeatureScaleWarning

    if issubclass(category, FeatureScaleWarning):
        message = f"{message} {SCALE_HINT}"
    print(f"aucopt: warning: {message}", file=sys.stderr if file is None else file)


def main(argv=None, out=None):
    """Run the command line; returns the exit status (0 ok, 2 bad input, 130 Ctrl-C)."""
    out = sys.stdout if out is None else out
    try:
        args = _build_parser().parse_args(argv)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            _COMMANDS[args.command](args, out)
    except _UsageError as exc:
        print(_first_line(exc), file=sys.stderr)
        return 2
    except (ValueError, TypeError, OSError, ImportError, FloatingPointError) as exc:
        print(f"aucopt: error: {_first_line(exc)}", file=sys.stderr)
        return 2
    except MemoryError:
        print("aucopt: error: not enough memory; use a smaller model (see the learner's "
              "max_state_bytes) or fewer rows", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("aucopt: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
