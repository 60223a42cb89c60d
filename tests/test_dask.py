"""aucopt.dask on a real distributed.LocalCluster (2 worker processes, 1 thread each).

One cluster serves the module (starting one costs seconds). Exact learners trained
on the cluster equal the single-process ``fit`` followed by ``solve`` to 1e-10;
PSAM's iterative parameter mixing stays within 0.002 test AUC of ``fit`` at the
same number of epochs; a bag of svmlight files trains like the arrays; a worker
killed mid-fit is retried by Dask and the result is bit for bit the same.
"""
import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import aucopt
import aucopt.dask as ad
from aucopt.datasets import Scaler, dump_svmlight, load, split
from aucopt.learners import PSAM

import dask.array as da  # noqa: E402 (a test dependency: the [test] extra installs it)
import dask.bag as db  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

pytestmark = pytest.mark.dask


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def task():
    """Spambase, standardised on the training part, rows shuffled (a file sorted by
    label would give each part one class)."""
    X, y = load("spambase")
    X_tr, X_te, y_tr, y_te = split(X, y, test_size=0.3, random_state=0)
    scaler = Scaler("standard").fit(X_tr.toarray())
    X_tr, X_te = scaler.transform(X_tr.toarray()), scaler.transform(X_te.toarray())
    perm = np.random.default_rng(0).permutation(y_tr.size)
    return X_tr[perm], y_tr[perm], X_te, y_te


def _arrays(X, y, rows):
    return (da.from_array(X, chunks=(rows, X.shape[1]), asarray=not sp.issparse(X)),
            da.from_array(y, chunks=rows))


@pytest.mark.parametrize("name,params", [("opauc", {}), ("opaucr", {"tau": 20}),
                                         ("adaoam", {})])
@pytest.mark.parametrize("form", ["dense", "csr"])
def test_exact_learners_equal_the_single_process_solve(client, task, name, params, form):
    X, y, X_te, y_te = task
    X = sp.csr_matrix(X) if form == "csr" else X
    model = ad.fit(aucopt.get(name, random_state=7, **params), *_arrays(X, y, 700),
                   client=client)
    # one pass (a distributed fit of a one-pass learner makes one)
    single = aucopt.get(name, random_state=7, shuffle=False, n_epochs=1,
                        **params).fit(X, y).solve(X, y)
    scale = np.abs(single.coef_).max()
    np.testing.assert_allclose(model.coef_, single.coef_, rtol=1e-10, atol=1e-10 * scale)
    assert model.lam_ == pytest.approx(single.lam_, rel=1e-13)  # resolved on all rows
    np.testing.assert_array_equal(model.class_count_, single.class_count_)
    assert model.t_ == y.size and model.n_passes_ == 1
    np.testing.assert_array_equal(model.predict(X), single.predict(X))
    assert model.score(X_te, y_te) == pytest.approx(single.score(X_te, y_te), abs=1e-12)


def _linear_task(n, d, seed):
    """Gaussian rows, labels from a noisy logistic link on a planted direction
    (about a third positive, test AUC about 0.92)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    X = rng.standard_normal((n, d))
    margin = X @ w / np.linalg.norm(w)
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(1.5 - 3.0 * margin)), 1.0, -1.0)
    return X, y


def test_psam_parameter_mixing_is_within_0002_auc_of_one_process(client):
    # 20,000 training and test rows: on a few thousand (spambase) the test AUC of
    # fit moves by 0.002 with the last bits of lam_ alone
    X, y = _linear_task(40_000, 30, 0)
    X_tr, y_tr, X_te, y_te = X[:20_000], y[:20_000], X[20_000:], y[20_000:]
    model = ad.fit(aucopt.get("psam", n_epochs=5, random_state=0),
                   *_arrays(X_tr, y_tr, 2500), client=client)
    single = aucopt.get("psam", n_epochs=5, random_state=0).fit(X_tr, y_tr)
    assert model.n_passes_ == 5 and model.stop_reason_ == "n_epochs"
    assert model.t_ == 5 * y_tr.size == single.t_  # the parts' steps add up
    assert abs(model.score(X_te, y_te) - single.score(X_te, y_te)) <= 0.002


def test_automatic_rounds_stop_like_fit(client, task):
    X, y, _, _ = task
    model = ad.fit(aucopt.get("sam", random_state=0, max_epochs=6), *_arrays(X, y, 1000),
                   client=client)
    assert model.stop_reason_ in ("tol", "max_epochs") and 2 <= model.n_passes_ <= 6
    assert np.isfinite(model.objective_)


def test_a_bag_of_svmlight_files_trains_like_the_arrays(client, task, tmp_path):
    X, y, _, _ = task
    paths = []
    for k, rows in enumerate(np.array_split(np.arange(y.size), 5)):
        paths.append(str(tmp_path / f"part{k}.svm"))
        dump_svmlight(X[rows], y[rows], paths[-1])
    bag = db.from_sequence(paths, npartitions=3)
    model = ad.fit(aucopt.get("opaucr", tau=10, random_state=3), bag, client=client,
                   chunk_size=400)
    single = aucopt.get("opaucr", tau=10, random_state=3, shuffle=False,
                        n_epochs=1).fit(X, y).solve(X, y)
    np.testing.assert_allclose(model.coef_, single.coef_, rtol=1e-10,
                               atol=1e-10 * np.abs(single.coef_).max())
    scores = np.concatenate(ad.decision_function(model, bag, zero_based=False).compute())
    np.testing.assert_allclose(scores, model.decision_function(X), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="y=None"):
        ad.fit(aucopt.get("opauc"), bag, y, client=client)


def test_the_result_is_an_ordinary_learner(client, task, tmp_path):
    X, y, X_te, _ = task
    Xd, yd = _arrays(X, y, 1000)
    estimator = aucopt.get("cbr_diag", random_state=0)
    assert ad.fit(estimator, Xd, yd, client=client) is estimator
    path = str(tmp_path / "model.npz")
    estimator.save(path)
    np.testing.assert_array_equal(aucopt.load(path).decision_function(X_te),
                                  estimator.decision_function(X_te))
    np.testing.assert_allclose(ad.decision_function(estimator, Xd).compute(),
                               estimator.decision_function(X), rtol=1e-13, atol=1e-13)
    estimator.partial_fit(X_te[:100], np.full(100, -1.0))  # it continues


class DiesOnce(PSAM):
    """PSAM whose first pass over a block on a cluster kills its worker process (the
    one that creates the file ``flag``)."""

    def __init__(self, flag=None, n_epochs=2, random_state=None):
        super().__init__(n_epochs=n_epochs, random_state=random_state)
        self.flag = flag

    def _pass(self, *args, **kwargs):
        if self.flag:
            try:  # atomic: exactly one worker dies (two checking at once both died,
                # and with every worker gone the blocks kept for them waited forever)
                os.close(os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os._exit(1)  # the worker dies mid-task; its nanny starts a new one
        return super()._pass(*args, **kwargs)


def test_a_worker_killed_mid_fit_is_retried_with_the_same_result(client, task, tmp_path):
    X, y, _, _ = task
    import cloudpickle

    flag = str(tmp_path / "died")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import it
    try:
        data = _arrays(X, y, 800)
        calm = ad.fit(DiesOnce(random_state=4), *data, client=client)
        killed = ad.fit(DiesOnce(flag, random_state=4), *data, client=client)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert os.path.exists(flag)  # a worker did die
    client.wait_for_workers(2)
    np.testing.assert_array_equal(killed.coef_, calm.coef_)
    assert killed.intercept_ == calm.intercept_ and killed.t_ == calm.t_


def test_a_cluster_without_workers_is_refused_clearly():
    class NoWorkers:
        def nthreads(self):
            return {}

    with pytest.raises(RuntimeError, match="no worker"):
        ad._workers(NoWorkers())


def test_refusals(client, task, monkeypatch):
    X, y, _, _ = task
    data = _arrays(X, y, 1000)
    with pytest.raises(TypeError, match="BAM cannot be merged"):
        ad.fit(aucopt.get("bam"), *data, client=client)
    with pytest.raises(TypeError, match="feature map"):
        ad.fit(aucopt.get("fasam", n_components=8), *data, client=client)
    with pytest.raises(ValueError, match="n_rounds must be 1"):
        ad.fit(aucopt.get("opauc"), *data, client=client, n_rounds=2)
    with pytest.raises(ValueError, match="exactly two values"):
        ad.fit(aucopt.get("psam"), data[0], da.from_array(np.arange(y.size) % 3,
                                                          chunks=1000), client=client)
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r'pip install "aucopt\[dask\]"'):
        ad.fit(aucopt.get("psam"), *data)


def test_parts_hold_about_equal_shares_of_the_rows():
    # 16 full blocks and a short last one: cut by rows, not by block count
    runs = ad._runs(2, 2, [50_000] * 16 + [4_414])
    assert [len(r) for r in runs] == [8, 9]
    assert np.concatenate(runs).tolist() == list(range(17))
    # no part is left empty, however uneven the blocks
    assert [r.tolist() for r in ad._runs(3, 2, [100, 1, 1, 1])] == [[0], [1], [2, 3]]
    assert [r.tolist() for r in ad._runs(None, 4, [5, 5])] == [[0], [1]]
    with pytest.raises(ValueError, match="n_parts must be a positive integer"):
        ad._runs(0, 2, [5])


def test_a_kept_block_is_validated_once_and_again_when_it_travels(task):
    import pickle

    X, y, _, _ = task
    classes = np.array([-1.0, 1.0])
    ready = ad._Ready(sp.csr_matrix(X[:50]), y[:50], classes)
    moved = pickle.loads(pickle.dumps(ready))
    np.testing.assert_array_equal(moved.rows.norms(), ready.rows.norms())
    np.testing.assert_array_equal(moved.y_pm, np.where(y[:50] == 1, 1.0, -1.0))
    bad = sp.csr_matrix(X[:5])
    bad.indices[0] = X.shape[1] + 3  # a column index past the matrix
    with pytest.raises(ValueError, match="index"):
        ad._Ready(bad, y[:5], classes)
    with pytest.raises(ValueError):
        ad._Ready(X[:5], np.full(5, 7.0), classes)  # labels of neither class


def test_blocks_without_rows_are_left_out(client, task):
    X, y, X_te, y_te = task
    chunks = (0, 1500, 0, y.size - 1500)
    Xd = da.from_array(X, chunks=(chunks, X.shape[1]))
    yd = da.from_array(y, chunks=(chunks,))
    model = ad.fit(aucopt.get("opauc"), Xd, yd, client=client)
    single = aucopt.get("opauc", shuffle=False).fit(X, y).solve(X, y)
    np.testing.assert_allclose(model.coef_, single.coef_, rtol=1e-10,
                               atol=1e-10 * np.abs(single.coef_).max())


def test_label_sorted_blocks_are_repartitioned(client):
    """Rows sorted by label (blocks of one class) train like shuffled rows: the
    rows are dealt to all blocks first (shuffle=True); without it each part sees
    one class and the merged model ranks far worse."""
    X, y = _linear_task(16_000, 20, 1)
    X_te, y_te = X[12_000:], y[12_000:]
    # 6,000 negatives then 2,000 positives: blocks of 2,000 rows hold one class each
    train = np.concatenate([np.flatnonzero(y[:12_000] < 0)[:6_000],
                            np.flatnonzero(y[:12_000] > 0)[:2_000]])
    X_tr, y_tr = X[train], y[train]
    sorted_data = _arrays(X_tr, y_tr, 2_000)
    single = {}
    for name in ("psam", "cbr_diag"):
        single[name] = aucopt.get(name, random_state=0).fit(X_tr, y_tr).score(X_te, y_te)
        model = ad.fit(aucopt.get(name, random_state=0), *sorted_data, client=client)
        assert abs(model.score(X_te, y_te) - single[name]) <= 0.01, name
    # as stored, PSAM's parts draw no pair (pairs are drawn within a block)
    kept = ad.fit(aucopt.get("psam", random_state=0), *sorted_data, client=client,
                  shuffle=False)
    assert kept.score(X_te, y_te) < single["psam"] - 0.1
    with pytest.raises(ValueError, match="shuffle must be"):
        ad.fit(aucopt.get("psam"), *sorted_data, client=client, shuffle="yes")


def test_dealing_keeps_every_row_once_in_blocks_of_both_classes():
    import dask

    y = np.repeat([0.0, 1.0], [70, 30])
    X = sp.csr_matrix(np.arange(100.0)[:, None] + 1.0)
    sizes = [40, 25, 35]
    cuts = np.cumsum([0] + sizes)
    xs = [dask.delayed(X[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    ys = [dask.delayed(y[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    ws = [dask.delayed(y[a:b] + 1.0) for a, b in zip(cuts[:-1], cuts[1:])]
    new_x, new_y, new_w, new_sizes = ad._deal(dask, xs, ys, ws, sizes, 5)
    blocks = dask.compute(list(zip(new_x, new_y, new_w)), scheduler="synchronous")[0]
    assert [b[1].size for b in blocks] == new_sizes and sorted(new_sizes) == [33, 33, 34]
    rows = np.concatenate([b[0].toarray().ravel() for b in blocks]) - 1.0
    assert sorted(rows.tolist()) == list(range(100))
    for Xb, yb, wb in blocks:
        np.testing.assert_array_equal(yb, y[(Xb.toarray().ravel() - 1).astype(int)])
        np.testing.assert_array_equal(wb, yb + 1.0)  # the weights travel with their rows
        assert 5 <= yb.sum() <= 15  # about 30% positive in each


def test_a_bag_of_files_of_one_class_each_is_warned_about(client, tmp_path):
    X, y = _linear_task(600, 5, 2)
    paths = []
    for label in (-1.0, 1.0):
        paths.append(str(tmp_path / f"class{label:+.0f}.svm"))
        dump_svmlight(X[y == label], y[y == label], paths[-1])
    with pytest.warns(UserWarning, match="one class"):
        ad.fit(aucopt.get("cbr_diag", random_state=0), db.from_sequence(paths, npartitions=2),
               client=client, n_parts=2)


class Slow(PSAM):
    """PSAM that sleeps on every chunk (a fit long enough to kill its workers)."""

    def _pass(self, *args, **kwargs):
        import time

        time.sleep(0.2)
        return super()._pass(*args, **kwargs)


@pytest.mark.slow  # a cluster of its own, whose workers restart: about 17 s
def test_a_fit_fails_clearly_when_every_worker_dies_at_once(task):
    """Blocks kept on workers that all die at once would sit in 'no-worker' for ever
    (the restarted workers do not take them); the fit raises instead."""
    import threading

    import cloudpickle

    X, y, _, _ = task
    outcome = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as own:
        def run():
            try:
                ad.fit(Slow(n_epochs=50, random_state=0), *_arrays(X, y, 200), client=own)
                outcome.append(None)
            except Exception as exc:  # noqa: BLE001 -- inspected below
                outcome.append(exc)

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
        try:
            fitting = threading.Thread(target=run, daemon=True)
            fitting.start()
            while fitting.is_alive() and not any(own.processing().values()):
                fitting.join(timeout=0.1)  # until the parts train
            try:
                own.run(os._exit, 1)  # every worker process dies at once
            except Exception:  # noqa: BLE001 -- the workers die before they answer
                pass
            fitting.join(timeout=120)
        finally:
            cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert not fitting.is_alive()
    assert isinstance(outcome[0], RuntimeError), outcome
    assert "every worker of the cluster was gone" in str(outcome[0])


@pytest.mark.parametrize("name", ["opauc", "spdam"])
def test_sample_weight_equals_the_single_process_weighted_fit(client, task, name):
    """Weights 0-3 as a dask array: an exact learner equals the weighted single-process
    fit and solve to 1e-10 (class counts the weighted ones); spdam (one round, ``fit``
    on its part) ranks like the weighted single-process fit (test AUC within 0.005)."""
    X, y, X_te, y_te = task
    w = np.random.default_rng(5).integers(0, 4, y.size).astype(float)
    data = _arrays(X, y, 700)
    model = ad.fit(aucopt.get(name, random_state=7), *data, client=client, n_parts=1,
                   sample_weight=da.from_array(w, chunks=500))
    single = aucopt.get(name, random_state=7, shuffle=False, n_epochs=1) if name == "opauc" else \
        aucopt.get(name, random_state=7)
    single.fit(X, y, sample_weight=w)
    if name == "opauc":
        single.solve(X, y, sample_weight=w)
        np.testing.assert_allclose(model.coef_, single.coef_, rtol=1e-10,
                                   atol=1e-10 * np.abs(single.coef_).max())
        np.testing.assert_array_equal(model.class_count_, single.class_count_)
        assert model.t_ == w.sum()
        assert model.intercept_ == pytest.approx(single.intercept_, abs=1e-8)
    else:  # its part draws its mini-batches from a stream of the part and round
        assert abs(model.score(X_te, y_te) - single.score(X_te, y_te)) < 0.005
    assert model.lam_ == pytest.approx(single.lam_, rel=1e-12)  # weighted row scale
    with pytest.raises(ValueError, match="one weight per row"):
        ad.fit(aucopt.get(name), *data, client=client, sample_weight=w[:-1])
    with pytest.raises(ValueError, match="zero for every row"):
        ad.fit(aucopt.get(name), *data, client=client, sample_weight=np.zeros(y.size))
