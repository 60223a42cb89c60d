"""The project's binary tasks on ../shared/data (SOURCES.md, "Binary tasks the project uses").

Every benchmark and reproduction loads its data here, so they all agree on the
positive class, the split and the feature count::

    from tasks import load_task, load_pooled
    X_tr, y_tr, X_te, y_te = load_task("news20")     # official train / test split
    X, y = load_pooled("spambase")                     # train + test merged (CV protocols)

Labels are float64 in {-1, +1}; matrices are CSR float64 with the dataset's full
dimension. Parsed files are cached as ``.npz`` under ``tools/out/cache`` (the
bz2 decompression dominates loading). The data directory is ``$AUCOPT_DATA`` or
``../shared/data`` next to the repository.
"""
import os

import numpy as np
import scipy.sparse as sp

from aucopt.datasets import atomic_write, binarize, load_svmlight, split

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)

CACHE = os.path.join(TOOLS, "out", "cache")


def data_dir():
    """Where the benchmark data lives."""
    return os.environ.get("AUCOPT_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")


def _labels_in(values):
    values = frozenset(values)
    return lambda label: label in values


# name -> (train file, test file or None, n_features, positive rule or None (label 1), text?)
TASKS = {
    "news20": ("text/20news_bydate/20news_bydate_tfidf.train.svm.bz2",
               "text/20news_bydate/20news_bydate_tfidf.test.svm.bz2", 130108,
               _labels_in(range(1, 6)), True),
    "reuters_acq": ("text/reuters21578/reuters21578_modapte_acq.train.svm.bz2",
                    "text/reuters21578/reuters21578_modapte_acq.test.svm.bz2", 29046, None,
                    True),
    "sector": ("libsvm/sector.scale.bz2", "libsvm/sector.t.scale.bz2", 55197,
               _labels_in(range(1, 11)), True),
    "webkb_course": ("text/webkb4/webkb4_tfidf.train.svm.bz2",
                     "text/webkb4/webkb4_tfidf.test.svm.bz2", 7288, _labels_in([1]), True),
    "a9a": ("libsvm/a9a.bz2", "libsvm/a9a.t.bz2", 123, None, False),
    "a8a": ("libsvm/a8a.bz2", "libsvm/a8a.t.bz2", 123, None, False),
    "w8a": ("libsvm/w8a.bz2", None, 300, None, False),
    "ijcnn1_val": ("libsvm/ijcnn1.val.bz2", None, 22, None, False),
    "german": ("libsvm/german.numer_scale.bz2", None, 24, None, False),
}
for _name, _d in [("spambase", 57), ("sonar", 60), ("ionosphere", 34), ("pima_diabetes", 8),
                  ("breast_cancer_wisconsin", 9), ("dna_ei", 180), ("vehicle_van", 18),
                  ("magic04", 10), ("wdbc", 30)]:
    TASKS[_name] = (f"uci/{_name}.svm.bz2", None, _d, None, False)
TASKS["letter_z"] = ("uci/letter_z.svm.bz2", None, 16, None, False)
TASKS["satimage"] = ("uci/satimage_dampgrey.svm.bz2", None, 36, None, False)
TASKS["shuttle"] = ("uci/shuttle_notradflow.svm.bz2", None, 9, None, False)
# Multi-class LIBSVM sets (tools/tabular.py makes one-vs-rest tasks from load_raw)
TASKS["letter"] = ("libsvm/letter.scale.bz2", "libsvm/letter.scale.t.bz2", 16, _labels_in([1]),
                   False)
TASKS["pendigits"] = ("libsvm/pendigits.bz2", "libsvm/pendigits.t.bz2", 16, _labels_in([0]),
                      False)

TEXT_TASKS = [name for name, spec in TASKS.items() if spec[4]]

# Held-out text tasks: other classes of the same corpora, one against the rest. No
# default was chosen on them (the defaults were chosen on TEXT_TASKS), so they show what
# the defaults do on text they were not tuned on. name -> (task whose files and split it
# uses, the positive labels of its files, or a Reuters-21578 topic of the row)
HELDOUT_TASKS = {
    "news20_rec": ("news20", _labels_in(range(8, 12))),  # rec.*, 21%
    "news20_sci": ("news20", _labels_in(range(12, 16))),  # sci.*, 21%
    "news20_talk": ("news20", _labels_in(range(17, 21))),  # talk.*, 17%
    "news20_med": ("news20", _labels_in([14])),  # sci.med, 5%
    "reuters_earn": ("reuters_acq", "earn"),  # 30%
    "reuters_crude": ("reuters_acq", "crude"),  # 4%
    "reuters_moneyfx": ("reuters_acq", "money-fx"),  # 6%
    "sector_half": ("sector", _labels_in(range(1, 51))),  # classes 1-50, 48%
    "webkb_student": ("webkb_course", _labels_in([4])),  # 39%
    "webkb_faculty": ("webkb_course", _labels_in([2])),  # 27%
}
REUTERS_TOPICS = "text/reuters21578/reuters21578_modapte_topics.tsv"


def _load_file(relpath, n_features):
    os.makedirs(CACHE, exist_ok=True)
    key = os.path.join(CACHE, relpath.replace("/", "__") + ".npz")
    src = os.path.join(data_dir(), relpath)
    if os.path.exists(key) and os.path.getmtime(key) >= os.path.getmtime(src):
        with np.load(key) as z:
            X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
            return X, z["y"]
    X, y = load_svmlight(src, n_features=n_features)
    with atomic_write(key) as f:  # a killed run leaves no partial cache behind
        np.savez(f, data=X.data, indices=X.indices, indptr=X.indptr, shape=X.shape, y=y)
    return X, y


def _binary(y, rule):
    if rule is None:  # binary file: +1 (or 1 of 0/1) is positive
        if not set(np.unique(y).tolist()) <= {-1.0, 0.0, 1.0}:
            raise ValueError(f"labels {np.unique(y)[:5]} are not binary and the task has no rule")
        rule = _labels_in([1.0])
    return binarize(y, rule)


def load_raw(name):
    """``(X_train, y_train, X_test, y_test)`` of a task's files with their original
    (multi-class) labels; the test part is None for single-file tasks."""
    train, test, d, _, _ = _spec(name)
    X, y = _load_file(train, d)
    if test is None:
        return X, y, None, None
    return (X, y) + _load_file(test, d)


def _spec(name):
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name]


def _topic_labels(topic):
    """Labels in {-1, +1} of the Reuters-21578 ModApte rows (train, test): whether
    ``topic`` is among the row's topics (the topics file lists the rows in the order
    of the svmlight files)."""
    with open(os.path.join(data_dir(), REUTERS_TOPICS), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    labels = {"train": [], "test": []}
    for split_name, _, topics in rows:
        labels[split_name].append(1.0 if topic in topics.split(",") else -1.0)
    return np.array(labels["train"]), np.array(labels["test"])


def _heldout(name):
    base, rule = HELDOUT_TASKS[name]
    X, y, X_te, y_te = load_raw(base)
    if isinstance(rule, str):
        y, y_te = _topic_labels(rule)
        if y.size != X.shape[0] or y_te.size != X_te.shape[0]:
            raise ValueError(f"{REUTERS_TOPICS} does not list the rows of {base}'s files")
        return X, y, X_te, y_te
    return X, _binary(y, rule), X_te, _binary(y_te, rule)


def load_task(name):
    """``(X_train, y_train, X_test, y_test)`` of a task, split as SOURCES.md fixes.

    Sets without an official test file get the stratified 80/20 split, seed 0.
    A held-out task (``HELDOUT_TASKS``) uses its corpus' files and split.
    """
    if name in HELDOUT_TASKS:
        return _heldout(name)
    rule = _spec(name)[3]
    X, y, X_te, y_te = load_raw(name)
    y = _binary(y, rule)
    if X_te is None:
        X_tr, X_te, y_tr, y_te = split(X, y, test_size=0.2, random_state=0)
        return X_tr, y_tr, X_te, y_te
    return X, y, X_te, _binary(y_te, rule)


def load_pooled(name):
    """``(X, y)``: a task's train and test parts merged (for k-fold CV protocols)."""
    X_tr, y_tr, X_te, y_te = load_task(name)
    return sp.vstack([X_tr, X_te], format="csr"), np.concatenate([y_tr, y_te])
