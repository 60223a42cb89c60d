"""Workloads of the buffered online learners (issue 4): time per arriving instance.

* ``buffered_text``: one pass over the largest text set we hold (news20 bydate
  TF-IDF, d = 130,108, CSR), rows randomly permuted once (the dissertation permutes
  every run; the file is sorted by class). ``cbr_diag`` against ``oam_seq`` and
  ``oam_gra`` with the same buffers (50 per class, FIFO), with scikit-learn's
  ``SGDClassifier`` (one epoch, hinge) as the pointwise floor. ``cbr`` cannot hold
  a 130,108^2 covariance (126 GiB); it runs on the 400 most frequent features of
  the same rows (``cbr[d=400]``) so that its time per instance, which grows as
  d^2, is a lower bound of its cost at full d.
* ``buffered_dense``: spambase (d = 57), standardised, dense: all four rules.
"""
import numpy as np

from benchlib import Contestant, workload

PERM_SEED = 0


def _per_instance(n):
    return lambda out, stats: {"us/instance": round(1e6 * stats["median"] / n, 2),
                               "test AUC": out}


def _contestant(name, X, y, X_te, y_te, **params):
    import aucopt

    def run(model):
        model.fit(X, y)
        return round(float(model.score(X_te, y_te)), 4)

    return Contestant(run, prepare=lambda: aucopt.get(name, random_state=0, **params))


@workload("buffered_text",
          description="one pass, news20 tf-idf CSR (d=130108), buffers 50+50 FIFO, C=1: "
                      "time per instance",
          columns=("us/instance", "test AUC"))
def _text(ctx):
    import scipy.sparse as sp
    from sklearn.linear_model import SGDClassifier

    from aucopt.metrics import roc_auc
    from tasks import load_task

    X, y, X_te, y_te = load_task("news20")
    perm = np.random.default_rng(PERM_SEED).permutation(X.shape[0])
    X, y = X[perm], y[perm]
    top = np.argsort(-np.asarray((X != 0).sum(axis=0)).ravel(), kind="stable")[:400]
    X_small, X_te_small = X[:, top].tocsr(), X_te[:, top].tocsr()
    X_small.sort_indices()
    X_te_small.sort_indices()
    kw = dict(buffer_size=50, buffer="fifo", C=1.0)

    def sgd():
        m = SGDClassifier(max_iter=1, tol=None, random_state=0).fit(X, y)
        return round(float(roc_auc(y_te, m.decision_function(X_te))), 4)

    n = X.shape[0]
    return dict(
        contestants={
            "cbr_diag": _contestant("cbr_diag", X, y, X_te, y_te, **kw),
            "oam_seq": _contestant("oam_seq", X, y, X_te, y_te, **kw),
            "oam_gra": _contestant("oam_gra", X, y, X_te, y_te, **kw),
            "cbr[d=400]": _contestant("cbr", X_small, y, X_te_small, y_te, **kw),
            "sklearn SGDClassifier (1 epoch)": sgd,
        },
        peer="oam_seq",
        extras=_per_instance(n),
        params={"n": n, "d": X.shape[1], "nnz/row": round(X.nnz / n, 1),
                "positives": int((y > 0).sum()), "sparse": sp.issparse(X)},
    )


@workload("buffered_dense",
          description="one pass, spambase standardised dense (d=57), buffers 50+50 FIFO, "
                      "C=0.1: time per instance",
          columns=("us/instance", "test AUC"))
def _dense(ctx):
    from aucopt.datasets import Scaler
    from tasks import load_task

    X, y, X_te, y_te = load_task("spambase")
    scaler = Scaler("standard").fit(X.toarray())
    X, X_te = scaler.transform(X.toarray()), scaler.transform(X_te.toarray())
    perm = np.random.default_rng(PERM_SEED).permutation(X.shape[0])
    X, y = np.ascontiguousarray(X[perm]), y[perm]
    kw = dict(buffer_size=50, buffer="fifo", C=0.1)
    return dict(
        contestants={name: _contestant(name, X, y, X_te, y_te, **kw)
                     for name in ("cbr_diag", "oam_seq", "oam_gra", "cbr")},
        peer="oam_seq",
        extras=_per_instance(X.shape[0]),
        params={"n": X.shape[0], "d": X.shape[1]},
    )
