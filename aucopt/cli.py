"""The ``aucopt`` command.

    aucopt list
    aucopt train NAME TRAIN.svm [--test TEST.svm] [--param k=v ...] [--positive L,..] [--save M.npz]
    aucopt eval MODEL.npz TEST.svm [--positive L,..]
    aucopt demo [--learner NAME]

Bad arguments exit with status 2 and a one-line reason on stderr.
"""
import argparse
import ast
import sys
import time

import numpy as np
import scipy.sparse as sp

DEMO_DATASET = "spambase"
DEMO_LEARNER = "psam"


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
    except (ValueError, SyntaxError):
        return text


def _parse_params(pairs):
    params = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise _UsageError(f"--param expects key=value, got {pair!r}")
        params[key.strip()] = _parse_value(value)
    return params


def _labels(y, positive):
    """Binarize when ``--positive`` is given, otherwise keep the file's two labels."""
    from aucopt.datasets import binarize

    if positive is None:
        return y
    return binarize(y, [_parse_value(v) for v in positive.split(",")])


def _with_features(X, n_features):
    if X.shape[1] == n_features:
        return X
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))


def _cmd_list(args, out):
    import aucopt

    names = aucopt.available()
    width = max(len(n) for n in names) if names else 4
    for name, origin in names.items():
        print(f"{name:<{width}}  {origin}", file=out)


def _cmd_train(args, out):
    import aucopt
    from aucopt.datasets import load_svmlight

    learner = aucopt.get(args.learner, **_parse_params(args.param))
    X, y = load_svmlight(args.train, n_features=args.n_features)
    y = _labels(y, args.positive)
    X_test = y_test = None
    if args.test:
        X_test, y_test = load_svmlight(args.test, n_features=args.n_features)
        y_test = _labels(y_test, args.positive)
        d = max(X.shape[1], X_test.shape[1])
        X, X_test = _with_features(X, d), _with_features(X_test, d)
    start = time.perf_counter()
    learner.fit(X, y)
    seconds = time.perf_counter() - start
    print(f"learner      {args.learner}  {learner!r}", file=out)
    print(f"train        {X.shape[0]} rows x {X.shape[1]} features, "
          f"{X.nnz} non-zeros; fit {seconds:.3f} s", file=out)
    print(f"train AUC    {learner.score(X, y):.4f}", file=out)
    if X_test is not None:
        print(f"test AUC     {learner.score(X_test, y_test):.4f}", file=out)
    if args.save:
        learner.save(args.save)
        print(f"saved        {args.save}", file=out)


def _cmd_eval(args, out):
    import aucopt
    from aucopt.datasets import load_svmlight
    from aucopt.metrics import optroc_accuracy

    model = aucopt.load(args.model)
    X, y = load_svmlight(args.data, n_features=model.n_features_in_)
    y = _labels(y, args.positive)
    scores = model.decision_function(X)
    print(f"model        {model!r}", file=out)
    print(f"data         {X.shape[0]} rows", file=out)
    print(f"AUC          {model.score(X, y):.4f}", file=out)
    acc = optroc_accuracy(y, scores, pos_label=model.classes_[1])
    print(f"OPTROC acc   {acc:.4f}", file=out)
    print(f"accuracy     {np.mean(model.predict(X) == y):.4f} (threshold from training)",
          file=out)


def _cmd_demo(args, out):
    import aucopt
    from aucopt.datasets import Scaler, load, split

    X, y = load(DEMO_DATASET)
    X_train, X_test, y_train, y_test = split(X, y, test_size=0.2, random_state=0)
    scaler = Scaler("standard").fit(X_train.toarray())
    X_train, X_test = scaler.transform(X_train.toarray()), scaler.transform(X_test.toarray())
    learner = aucopt.get(args.learner, random_state=0)
    start = time.perf_counter()
    learner.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    print(f"aucopt {aucopt.__version__} demo: {args.learner} on the bundled "
          f"{DEMO_DATASET} set ({X.shape[0]} rows x {X.shape[1]} features, "
          f"{np.mean(y > 0):.1%} positive), stratified 80/20 split, seed 0", file=out)
    print(f"learner      {learner!r}", file=out)
    print(f"fit time     {seconds:.4f} s", file=out)
    print(f"train AUC    {learner.score(X_train, y_train):.4f}", file=out)
    print(f"test AUC     {learner.score(X_test, y_test):.4f}", file=out)


def _build_parser():
    parser = _Parser(prog="aucopt", description="AUC maximization learners.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    sub.required = True

    sub.add_parser("list", help="list the available learners and where they come from")

    train = sub.add_parser("train", help="train a learner on an svmlight file")
    train.add_argument("learner", help="learner name (see `aucopt list`)")
    train.add_argument("train", help="training data, svmlight format (.gz/.bz2/.xz ok)")
    train.add_argument("--test", help="test data, svmlight format")
    train.add_argument("--param", action="append", metavar="KEY=VALUE",
                       help="learner parameter, repeatable (e.g. --param lam=1e-4)")
    train.add_argument("--positive", metavar="L1,L2,...",
                       help="labels of the positive class; the others are negative")
    train.add_argument("--n-features", type=int, default=None,
                       help="number of features (default: from the data)")
    train.add_argument("--save", metavar="MODEL.npz", help="save the trained model")

    ev = sub.add_parser("eval", help="evaluate a saved model on an svmlight file")
    ev.add_argument("model", help="model written by `aucopt train --save`")
    ev.add_argument("data", help="svmlight file")
    ev.add_argument("--positive", metavar="L1,L2,...",
                    help="labels of the positive class; the others are negative")

    demo = sub.add_parser("demo", help="train on a small real dataset shipped with aucopt")
    demo.add_argument("--learner", default=DEMO_LEARNER, help="learner name")
    return parser


_COMMANDS = {"list": _cmd_list, "train": _cmd_train, "eval": _cmd_eval, "demo": _cmd_demo}


def main(argv=None, out=None):
    """Run the command line; returns the exit status (0 ok, 2 bad arguments or input)."""
    out = sys.stdout if out is None else out
    try:
        args = _build_parser().parse_args(argv)
        _COMMANDS[args.command](args, out)
    except _UsageError as exc:
        print(str(exc).splitlines()[0], file=sys.stderr)
        return 2
    except (ValueError, TypeError, OSError, ImportError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"aucopt: error: {reason}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
