"""Streams in any row order: chunks of one class (a file sorted by label) through
``binarize``, ``partial_fit`` of every online learner and ``aucopt train --stream``."""
import io
import warnings

import numpy as np
import scipy.sparse as sp
import pytest

import aucopt
from aucopt.cli import main
from aucopt.datasets import binarize, dump_svmlight, iter_svmlight
from aucopt.metrics import roc_auc
from aucopt.registry import get_class
from aucopt.testing import contract_data

ONLINE = sorted(name for name in aucopt.available()
                if hasattr(get_class(name), "partial_fit"))
# Uni-Exp's eta="auto" is the largest step stable on the first data; on a stream of
# one class first, the step of the first row of the other class is multiplied by
# the inverse running prior t / T_y (hundreds): a sorted stream needs a smaller eta
PARAMS = {"uni_exp": {"eta": 0.01}, "fcbr": {"n_components": 20}}


def _sorted_data():
    X, y = contract_data(0)
    order = np.argsort(y, kind="stable")
    return X[order], y[order]


def _params(name, **extra):
    cls = get_class(name)
    seed = {"random_state": 0} if "random_state" in cls._get_param_names() else {}
    return {**seed, **PARAMS.get(name, {}), **extra}


@pytest.mark.parametrize("name", ONLINE)
def test_partial_fit_takes_chunks_of_one_class(name):
    """Label-sorted chunks (the first ones all negative, the last all positive) are
    valid partial_fit input with classes given; the model ranks the rows."""
    X, y = _sorted_data()
    model = aucopt.get(name, **_params(name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence / input-limit notes
        for start in range(0, y.size, 20):
            chunk = slice(start, start + 20)
            assert np.unique(y[chunk]).size == 1 or start == 20
            model.partial_fit(X[chunk], y[chunk], classes=[0, 1])
    scores = model.decision_function(X)
    assert np.all(np.isfinite(scores))
    assert list(model.classes_) == [0, 1] and model.n_features_in_ == X.shape[1]
    assert roc_auc(y, scores) > 0.5


def test_noam_maps_a_first_chunk_of_one_class():
    """NOAM's first phase finds no support vector in rows of one class: the map
    takes their buffered rows as landmarks and phase 2 starts from w = 0."""
    X, y = _sorted_data()
    negatives = np.flatnonzero(y == 0)
    model = aucopt.get("noam", random_state=0, buffer_size=10)
    model.partial_fit(X[negatives], y[negatives], classes=[0, 1])
    landmarks = model.feature_map_.landmarks_
    assert landmarks.shape == (10, X.shape[1])
    assert all((np.abs(X[negatives] - row).sum(axis=1) == 0).any() for row in landmarks)
    np.testing.assert_array_equal(model.coef_, 0.0)
    model.partial_fit(X, y)
    assert roc_auc(y, model.decision_function(X)) > 0.6


def _sorted_multiclass_file(path, seed):
    """An svmlight file of labels 1, 2, 3 sorted by label; 3 is the positive class
    and its rows carry the signal."""
    rng = np.random.default_rng(seed)
    labels = np.repeat([1.0, 2.0, 3.0], 60)
    X = rng.standard_normal((labels.size, 6))
    X[labels == 3, 0] += 2.0
    dump_svmlight(X, labels, path)
    return X, labels


def test_readme_stream_loop_on_a_label_sorted_file(tmp_path):
    """iter_svmlight + binarize + partial_fit, as the README writes it, on a file
    sorted by label (chunks of one class)."""
    X, labels = _sorted_multiclass_file(tmp_path / "sorted.svm", 0)
    clf = aucopt.get("opaucr", random_state=0)
    for Xc, yc in iter_svmlight(tmp_path / "sorted.svm", chunk_size=25):
        clf.partial_fit(Xc, binarize(yc, [3]), classes=[-1, 1])
    assert roc_auc(binarize(labels, [3]), clf.decision_function(X)) > 0.8


def test_cli_stream_on_label_sorted_files_saves_the_model(tmp_path):
    train, test, model = tmp_path / "train.svm", tmp_path / "test.svm", tmp_path / "m.npz"
    _sorted_multiclass_file(train, 1)
    X_test, labels = _sorted_multiclass_file(test, 2)
    out, err = io.StringIO(), io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        code = main(["train", "cbr_diag", str(train), "--stream", "--chunk-size", "40",
                     "--positive", "3", "--test", str(test), "--save", str(model)], out=out)
    assert code == 0, err.getvalue()
    assert "holds one class" in err.getvalue()
    text = out.getvalue()
    assert "held-out AUC n/a (one class)" in text and "saved" in text
    auc = float(text.split("test AUC")[1].split()[0])
    loaded = aucopt.load(model)
    assert auc == pytest.approx(roc_auc(binarize(labels, [3]),
                                        loaded.decision_function(X_test)), abs=1e-4)
    assert auc > 0.8
    # without --positive the classes are unknown while the first chunk shows one
    assert main(["train", "cbr_diag", str(train), "--stream", "--chunk-size", "40"],
                out=io.StringIO()) == 2


@pytest.mark.parametrize("name", ["cbr", "oam_seq"])
def test_buffers_holding_empty_sparse_rows_save_and_load(name):
    """A buffered learner's sparse pool may hold rows without entries; their slots
    hold nothing and overlap no other (load refused such a model: found by
    tools/fuzz.py chunks)."""
    rng = np.random.default_rng(991727001)
    X = rng.standard_normal((29, 2))
    X[rng.random((29, 2)) < 0.4] = 0.0
    y = (X[:, 0] + 0.5 * rng.standard_normal(29) > 0).astype(int)
    order = np.argsort(-y, kind="stable")
    X, y = sp.csr_matrix(X[order]), y[order]
    model = aucopt.get(name, random_state=0)
    model.partial_fit(X[:17], y[:17], classes=[0, 1])
    model.partial_fit(X[17:], y[17:])
    held = model.buffer_nnz_[model.buffer_arrival_ >= 0]
    assert (held == 0).any()  # the case: an empty row in the pool
    buf = io.BytesIO()
    model.save(buf)
    loaded = aucopt.load(io.BytesIO(buf.getvalue()))
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
