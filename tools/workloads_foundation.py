"""Workloads of the foundation: metrics and data loading against scikit-learn."""
import os
import shutil

import numpy as np

from benchlib import workload


@workload(
    "roc_auc",
    description="ROC AUC of 10^6 scores (rounded to 1e-4, so tied), ~10% positives",
    columns=("AUC",),
)
def _roc_auc(ctx):
    from sklearn.metrics import roc_auc_score

    from aucopt.metrics import roc_auc

    n = 10**6
    rng = ctx.rng()
    s = np.round(rng.random(n), 4)
    y = np.where(rng.random(n) < 0.1, 1, -1).astype(np.int64)

    def compare(ref, out):
        diff = abs(out - ref)
        return diff <= 1e-12, f"|diff| = {diff:.1e}"

    return dict(
        contestants={
            "aucopt.metrics.roc_auc": lambda: roc_auc(y, s),
            "sklearn roc_auc_score": lambda: roc_auc_score(y, s),
        },
        peer="sklearn roc_auc_score",
        compare=compare,
        extras=lambda out, stats: {"AUC": f"{out:.15f}"},
        params={"n": n, "positives": int((y == 1).sum()), "distinct scores": int(np.unique(s).size)},
    )


SVM_20NEWS = "text/20news_bydate/20news_bydate_tfidf.train.svm.bz2"


@workload(
    "load_svmlight",
    description="parse 20news_bydate tf-idf train (svmlight, d=130108, 1-based), decompressed beforehand",
    columns=("n", "nnz"),
)
def _load_svmlight(ctx):
    import bz2

    from sklearn.datasets import load_svmlight_file

    from aucopt.datasets import load_svmlight

    src = ctx.data(SVM_20NEWS)
    path = os.path.join(ctx.tmpdir, "20news_bydate_tfidf.train.svm")
    with bz2.open(src, "rb") as fin, open(path, "wb") as fout:  # untimed; a scratch file
        shutil.copyfileobj(fin, fout, 1 << 20)
    d = 130108

    ours = lambda: load_svmlight(path, n_features=d, zero_based=False)  # noqa: E731

    def compare(ref, out):
        (X0, y0), (X1, y1) = ref, out
        if X0.shape != X1.shape:
            return False, f"shape {X1.shape} != {X0.shape}"
        if not np.array_equal(np.asarray(y0), np.asarray(y1)):
            return False, "y differs"
        X0, X1 = X0.tocsr().copy(), X1.tocsr().copy()
        X0.sort_indices()
        X1.sort_indices()
        for part in ("indptr", "indices", "data"):
            if not np.array_equal(getattr(X0, part), getattr(X1, part)):
                return False, f"X.{part} differs"
        return True, f"nnz {X1.nnz}"

    return dict(
        contestants={
            "aucopt.datasets.load_svmlight": ours,
            "sklearn load_svmlight_file": lambda: load_svmlight_file(path, n_features=d, zero_based=False),
        },
        peer="sklearn load_svmlight_file",
        compare=compare,
        extras=lambda out, stats: {"n": out[0].shape[0], "nnz": out[0].nnz},
        params={"file": SVM_20NEWS, "uncompressed MB": round(os.path.getsize(path) / 2**20, 1), "d": d},
    )


