"""The `aucopt` command: list, train, eval, scale, demo, and exit status 2 on bad arguments."""
import io

import numpy as np
import pytest

from aucopt.cli import main
from aucopt.datasets import Scaler, dump_svmlight, load, load_svmlight, split


def _run(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


@pytest.fixture
def svm_files(tmp_path):
    X, y = load("ionosphere")
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    dump_svmlight(X[:250], y[:250], train)
    dump_svmlight(X[250:], y[250:], test)
    return train, test


def test_list_shows_builtins():
    code, out = _run(["list"])
    assert code == 0 and "sam" in out and "built-in" in out


def test_demo_prints_auc_and_time():
    code, out = _run(["demo"])
    assert code == 0
    auc = float(out.split("test AUC")[1].split()[0])
    assert auc > 0.9 and "fit time" in out


def test_train_save_eval_round_trip(svm_files, tmp_path):
    train, test = svm_files
    model = tmp_path / "m.npz"
    code, out = _run(["train", "sam", str(train), "--test", str(test), "--param", "lam=1e-2",
                      "--param", "n_epochs=3", "--param", "random_state=0",
                      "--save", str(model)])
    assert code == 0, out
    assert "lam=0.01" in out and "n_epochs=3" in out
    test_auc = float(out.split("test AUC")[1].split()[0])
    code, out = _run(["eval", str(model), str(test)])
    assert code == 0
    assert float(out.split("AUC")[1].split()[0]) == pytest.approx(test_auc, abs=1e-4)


def test_positive_option_binarizes(tmp_path, capsys, svm_files):
    path = tmp_path / "multi.svm"
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 34))
    y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)  # labels 0, 1, 2
    dump_svmlight(X, y, path)
    # three classes without --positive: one line that names the option, not the
    # library's binarize() (train, train's --test, and eval)
    model = tmp_path / "m.npz"
    assert _run(["train", "sam", str(svm_files[0]), "--save", str(model)])[0] == 0
    capsys.readouterr()
    for argv in (["train", "sam", str(path)], ["train", "sam", str(svm_files[0]), "--test",
                                                str(path)], ["eval", str(model), str(path)]):
        code, _ = _run(argv)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert f"{path} holds 3 labels (0, 1, 2)" in err and "--positive" in err
        assert "datasets.binarize" not in err
    code, out = _run(["train", "sam", str(path), "--positive", "2"])
    assert code == 0 and "train AUC" in out


@pytest.mark.parametrize("argv, reason", [
    (["train", "nosuch", "x.svm"], "unknown learner"),
    (["train", "sam", "/no/such/file.svm"], "/no/such/file.svm: no such file"),
    (["eval", "/no/such/model.npz", "x.svm"], "no such file"),
    (["train", "sam", "x.svm", "--param", "lam"], "key=value"),
    (["frobnicate"], "invalid choice"),
    (["scale", "x.svm", "y.svm", "--method", "zscore"], "invalid choice"),
    (["scale", "/no/such/file.svm", "y.svm"], "/no/such/file.svm: no such file"),
    ([], "required"),
])
def test_bad_arguments_exit_2_with_one_line(argv, reason, capsys, svm_files):
    code, _ = _run(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert reason in err and err.count("\n") == 1


def test_bad_parameter_value_exits_2(svm_files, capsys):
    train, _ = svm_files
    code, _ = _run(["train", "sam", str(train), "--param", "lam=-1"])
    assert code == 2 and "lam must be" in capsys.readouterr().err


def test_tune_reports_the_grid_and_the_best_point(svm_files, tmp_path):
    train, test = svm_files
    code, out = _run(["tune", "psam", str(train), "--test", str(test), "--grid",
                      "lam=0.001,0.1", "--param", "random_state=0",
                      "--save", str(tmp_path / "best.npz")])
    assert code == 0, out
    assert out.count("CV AUC") == 2 and out.count("* CV AUC") == 1
    assert float(out.split("test AUC")[1].split()[0]) > 0.8
    assert (tmp_path / "best.npz").exists()


@pytest.mark.parametrize("content, reason", [
    (b"\x1f\x8b\x08\x00garbage", "truncated|corrupt|ended before"),
    (b"1 1:2 3\n", "line 1"),
])
def test_malformed_data_file_is_one_line_naming_the_file(tmp_path, capsys, content, reason):
    path = tmp_path / "bad.svm.gz" if content.startswith(b"\x1f") else tmp_path / "bad.svm"
    path.write_bytes(content)
    code, _ = _run(["train", "sam", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and str(path) in err and err.count("\n") == 1
    import re
    assert re.search(reason, err), err


@pytest.mark.parametrize("content", [b"not a model", b"PK\x03\x04truncated"])
def test_eval_of_a_non_model_file_says_so(tmp_path, capsys, svm_files, content):
    _, test = svm_files
    path = tmp_path / "m.npz"
    path.write_bytes(content)
    code, _ = _run(["eval", str(path), str(test)])
    err = capsys.readouterr().err
    assert code == 2 and "not an aucopt model file" in err and err.count("\n") == 1
    assert "pickle" not in err


def test_diverged_fit_exits_2_with_one_line(svm_files, capsys, monkeypatch):
    train, _ = svm_files
    from aucopt.learners.stochastic import SAM

    def diverge(self, rows, y, index):
        raise FloatingPointError("SAM diverged (||w|| = inf); raise lam")

    monkeypatch.setattr(SAM, "_pass", diverge)
    code, _ = _run(["train", "sam", str(train)])
    err = capsys.readouterr().err
    assert code == 2 and "diverged" in err and err.count("\n") == 1


def test_list_shows_family_mode_merge_and_input_limits():
    code, out = _run(["list"])
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["name", "family", "mode", "merge", "input", "origin"]
    psam = next(r for r in rows if r.startswith("psam "))
    assert "online" in psam and "average" in psam and "built-in" in psam


def test_every_builtin_declares_family_and_input_limits():
    from aucopt.registry import BUILTIN, get_class
    import aucopt

    for name, origin in aucopt.available().items():
        if origin == BUILTIN:
            cls = get_class(name)
            assert cls.traits.family and cls.traits.limits, name


def test_stream_trains_chunk_by_chunk_like_partial_fit(tmp_path):
    import aucopt
    from aucopt.datasets import iter_svmlight

    X, y = load("spambase")
    # scaled: on raw spambase's heavy-tailed rows OPAUCr's third chunk leaves a model
    # of AUC 0.57 that the driver refuses as diverged
    X = Scaler("maxabs").fit_transform(X)
    perm = np.random.default_rng(0).permutation(y.size)[:1500]
    path, model = tmp_path / "train.svm", tmp_path / "m.npz"
    dump_svmlight(X[perm], y[perm], path)
    code, out = _run(["train", "opaucr", str(path), "--stream", "--chunk-size", "400",
                      "--holdout", "0", "--param", "random_state=0", "--save", str(model)])
    assert code == 0, out
    lines = [line for line in out.splitlines() if line.startswith("chunk ")]
    assert len(lines) == 4  # 1500 rows in chunks of 400
    assert all(float(line.split("rows/s")[0].split()[-1].replace(",", "")) > 0
               for line in lines)
    reference = aucopt.get("opaucr", random_state=0)
    for Xc, yc in iter_svmlight(path, chunk_size=400):
        reference.partial_fit(Xc, yc, classes=[-1.0, 1.0])
    np.testing.assert_array_equal(aucopt.load(model).decision_function(X),
                                  reference.decision_function(X))


def test_stream_holds_out_rows_of_the_first_chunk(tmp_path, svm_files):
    train, test = svm_files
    code, out = _run(["train", "psam", str(train), "--stream", "--chunk-size", "100",
                      "--holdout", "30", "--test", str(test), "--param", "random_state=0"])
    assert code == 0, out
    assert "train        220 rows" in out and "on 30 rows of the first chunk" in out
    aucs = [float(line.split("held-out AUC")[1]) for line in out.splitlines()
            if line.startswith("chunk ")]
    assert len(aucs) == 3 and all(0.5 < a <= 1 for a in aucs)
    assert 0.5 < float(out.split("test AUC")[1].split()[0]) <= 1


def test_stream_refuses_batch_learners_and_one_class_chunks(tmp_path, svm_files, capsys):
    train, _ = svm_files
    code, _ = _run(["train", "bam", str(train), "--stream"])
    assert code == 2 and "batch learner" in capsys.readouterr().err
    path = tmp_path / "sorted.svm"
    X, y = load("ionosphere")
    order = np.argsort(y, kind="stable")
    dump_svmlight(X[order], y[order], path)
    code, _ = _run(["train", "psam", str(path), "--stream", "--chunk-size", "50"])
    err = capsys.readouterr().err
    assert code == 2 and "--positive" in err and err.count("\n") == 1


def test_version(capsys):
    from aucopt import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"aucopt {__version__}"


def test_version_without_distribution_metadata(monkeypatch):
    import importlib.metadata

    from aucopt import __version__
    from aucopt.cli import _version

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert _version() == __version__


def test_demo_says_where_the_docs_are():
    code, out = _run(["demo", "--learner", "opauc"])
    assert code == 0
    docs = [line for line in out.splitlines() if line.startswith("docs")]
    assert len(docs) == 1 and "sphinx-build" in docs[0] and "docs/_build/html" in docs[0]


def test_warnings_are_the_command_s_own_lines(tmp_path, capsys):
    """A warning of the fit (here: one feature dominates the raw spambase rows) is
    one 'aucopt: warning:' line, without Python's source location."""
    X, y = load("spambase")
    path = tmp_path / "raw.svm"
    dump_svmlight(X, y, path)
    code, _ = _run(["train", "psam", str(path)])
    err = capsys.readouterr().err
    assert code == 0
    assert err.startswith("aucopt: warning: PSAM: feature 56 holds"), err
    assert "cli.py" not in err and "Standardise the features" in err
    assert "On the command line: aucopt scale TRAIN.svm" in err and err.count("\n") == 1


@pytest.fixture
def raw_spambase(tmp_path):
    """Spambase as stored (one column holds 97% of the rows' squared norms), split."""
    X, y = load("spambase")
    X_train, X_test, y_train, y_test = split(X, y, test_size=0.2, random_state=0)
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    dump_svmlight(X_train, y_train, train)
    dump_svmlight(X_test, y_test, test)
    return (train, X_train, y_train), (test, X_test, y_test)


@pytest.mark.parametrize("method", ["maxabs", "standard"])
def test_scale_writes_the_rows_scaled_by_the_fit_file_s_statistics(raw_spambase, tmp_path,
                                                                    method):
    (train, X_train, y_train), (test, X_test, y_test) = raw_spambase
    out_train, out_test = tmp_path / "train.s.svm", tmp_path / "test.s.svm"
    code, out = _run(["scale", str(train), str(out_train), "--method", method])
    assert code == 0 and f"method {method}" in out
    code, out = _run(["scale", str(test), str(out_test), "--method", method,
                      "--fit", str(train)])
    assert code == 0 and f"column statistics of {train}" in out
    dense = method == "standard"
    scaler = Scaler(method).fit(X_train.toarray() if dense else X_train)
    for path, X, y in ((out_train, X_train, y_train), (out_test, X_test, y_test)):
        X_out, y_out = load_svmlight(path, n_features=X.shape[1])
        expected = scaler.transform(X.toarray() if dense else X)
        np.testing.assert_array_equal(X_out.toarray(),
                                      expected if dense else expected.toarray())
        np.testing.assert_array_equal(y_out, y)


def test_scaled_files_train_without_the_warning_and_rank_better(raw_spambase, tmp_path,
                                                               capsys):
    (train, _, _), (test, _, _) = raw_spambase
    out_train, out_test = tmp_path / "train.s.svm", tmp_path / "test.s.svm"
    _run(["scale", str(train), str(out_train)])
    _run(["scale", str(test), str(out_test), "--fit", str(train)])
    capsys.readouterr()
    code, raw = _run(["train", "psam", str(train), "--test", str(test)])
    assert code == 0 and "FeatureScaleWarning" not in raw
    assert "holds" in capsys.readouterr().err
    code, scaled = _run(["train", "psam", str(out_train), "--test", str(out_test)])
    assert code == 0 and capsys.readouterr().err == ""
    auc = {name: float(text.split("test AUC")[1].split()[0])
           for name, text in (("raw", raw), ("scaled", scaled))}
    assert auc["raw"] < 0.9 and auc["scaled"] > 0.95, auc


def test_scale_refuses_a_dense_copy_too_large_and_a_path_it_cannot_write(raw_spambase,
                                                                          tmp_path, capsys):
    (train, _, _), _ = raw_spambase
    out = tmp_path / "wide.svm"
    code, _ = _run(["scale", str(train), str(out), "--method", "center",
                    "--n-features", "100000"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--method maxabs" in err
    assert not out.exists()
    code, _ = _run(["scale", str(train), str(tmp_path / "no" / "dir.svm")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "dir.svm: cannot write (No such file or directory)" in err and ".tmp" not in err
