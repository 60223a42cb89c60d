"""
Fitting on a Dask cluster
=========================

:func:`aucopt.dask.fit` trains on row blocks held by a Dask cluster: each worker
trains a part by ``partial_fit``, and the parts are merged on the workers,
exactly for learners whose statistics add up (``opauc``) and by iterative
parameter mixing for the SGD learners (``psam``, one round per epoch). Here a
``LocalCluster`` of two workers in this process fits both on the bundled
``spambase`` set, compared with a fit in one process.
"""
import dask.array as da
import matplotlib.pyplot as plt
from distributed import Client, LocalCluster

import aucopt
import aucopt.dask
from aucopt.datasets import Scaler, load, split

X, y = load("spambase")
X_train, X_test, y_train, y_test = split(X, y, test_size=0.3, random_state=0)
scaler = Scaler("standard").fit(X_train.toarray())
X_train, X_test = scaler.transform(X_train.toarray()), scaler.transform(X_test.toarray())

results = {}
with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                  dashboard_address=":0") as cluster, Client(cluster):
    X_blocks = da.from_array(X_train, chunks=(500, X_train.shape[1]))
    y_blocks = da.from_array(y_train, chunks=500)
    for name, params in (("opauc", {}), ("psam", {"n_epochs": 5})):
        on_cluster = aucopt.dask.fit(aucopt.get(name, random_state=0, **params),
                                     X_blocks, y_blocks)
        scores = aucopt.dask.decision_function(on_cluster, da.from_array(X_test,
                                                                         chunks=500))
        cluster_auc = aucopt.metrics.roc_auc(y_test, scores.compute())
        local_auc = aucopt.get(name, random_state=0, **params).fit(
            X_train, y_train).score(X_test, y_test)
        results[name] = (local_auc, cluster_auc)
        print(f"{name:6s} one process {local_auc:.4f}   Dask, 2 workers {cluster_auc:.4f}")

# %%
fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
names = list(results)
x = range(len(names))
ax.bar([i - 0.2 for i in x], [results[n][0] for n in names], width=0.4,
       label="one process")
ax.bar([i + 0.2 for i in x], [results[n][1] for n in names], width=0.4,
       label="Dask LocalCluster, 2 workers")
ax.set_xticks(list(x), names)
ax.set_ylim(0.9, 1.0)
ax.set_ylabel("test AUC")
ax.legend(loc="lower right")
plt.show()
