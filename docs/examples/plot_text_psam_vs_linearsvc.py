"""
PSAM against LinearSVC on text
==============================

Text classification with a rare positive topic: sparse TF-IDF rows, tens of
thousands of words, 8% positives. The documents are generated: word frequencies
follow Zipf's law, and positive documents use the words of their topic more
often. PSAM (proximal pairwise steps on the AUC's pairwise hinge loss, stopping
by itself) is compared with scikit-learn's ``LinearSVC`` (the hinge loss of single
rows, solved to convergence) on test AUC and fit time: on a set this small the
batch solver is quick, and the two rank about equally well; PSAM's epochs cost
O(nnz) however many rows there are (the benchmarks in ``tools/`` time both on the
real text sets).
"""
import time

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp

import aucopt
import aucopt.plot
from aucopt.datasets import split

rng = np.random.default_rng(0)
n_docs, n_words, length = 8000, 30_000, 60
zipf = 1.0 / np.arange(1, n_words + 1) ** 1.1
zipf /= zipf.sum()
topic = rng.choice(np.arange(200, n_words), size=300, replace=False)  # the topic's words
y = np.where(rng.random(n_docs) < 0.08, 1, -1)

sizes = rng.poisson(length, n_docs) + 1
words = rng.choice(n_words, size=sizes.sum(), p=zipf)  # every document's words at once
doc = np.repeat(np.arange(n_docs), sizes)
swap = (y[doc] > 0) & (rng.random(words.size) < 0.04)  # positives use their topic's words
words[swap] = rng.choice(topic, size=swap.sum())
counts = sp.csr_matrix((np.ones(words.size), (doc, words)), shape=(n_docs, n_words))
counts.sum_duplicates()
idf = np.log(n_docs / (1.0 + np.bincount(counts.indices, minlength=n_words)))
X = counts.multiply(idf).tocsr()
X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(X.multiply(X).sum(axis=1))))  # unit rows
print(f"{X.shape[0]} documents x {X.shape[1]} words, {X.nnz / n_docs:.0f} words per "
      f"document, {np.mean(y > 0):.1%} positive")

X_train, X_test, y_train, y_test = split(X, y, test_size=0.3, random_state=0)

# %%
# Fit both and time them.
start = time.perf_counter()
psam = aucopt.get("psam", random_state=0).fit(X_train, y_train)
psam_time = time.perf_counter() - start
print(f"PSAM       {psam.n_passes_} epochs ({psam.stop_reason_}), "
      f"{psam_time:.2f} s, test AUC {psam.score(X_test, y_test):.4f}")

models = {"PSAM": (psam, psam_time)}
try:
    from sklearn.svm import LinearSVC
except ImportError:  # scikit-learn is part of the [docs] extra
    print("scikit-learn is not installed: LinearSVC is left out")
else:
    start = time.perf_counter()
    svc = LinearSVC().fit(X_train, y_train)
    svc_time = time.perf_counter() - start
    svc_auc = aucopt.metrics.roc_auc(y_test, svc.decision_function(X_test))
    print(f"LinearSVC  {svc_time:.2f} s, test AUC {svc_auc:.4f}")
    models["LinearSVC"] = (svc, svc_time)

# %%
# ROC curves on the test documents, and the fit times.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
for name, (model, _) in models.items():
    aucopt.plot.roc(model.decision_function(X_test), y=y_test, ax=left, label=name)
left.set_title("test ROC")
names = list(models)
right.barh(names, [models[n][1] for n in names], color=["C0", "C1"][:len(names)])
right.set_xlabel("fit time [s]")
right.set_title("fit time")
plt.show()
