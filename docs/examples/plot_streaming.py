"""
Streaming: held-out AUC as the chunks arrive
============================================

Online learners continue with ``partial_fit`` chunk by chunk, in memory bounded
by the chunk, as when reading a large file with
:func:`aucopt.datasets.iter_svmlight`. Here a generated stream of 100,000 rows
(50 features, 5% positives) arrives in chunks of 2,000; after each chunk the
learners are scored on 5,000 held-out rows.
"""
import time

import matplotlib.pyplot as plt
import numpy as np

import aucopt

rng = np.random.default_rng(0)
d, chunk, n_chunks = 50, 2000, 50
w_true = rng.normal(size=d) * (rng.random(d) < 0.3)


def rows(n):
    """``n`` rows of the stream: labels from a noisy linear score, 5% positive."""
    X = rng.normal(size=(n, d))
    score = X @ w_true + rng.normal(scale=2.0, size=n)
    return X, np.where(score > np.quantile(score, 0.95), 1, -1)


X_test, y_test = rows(5000)
learners = {name: aucopt.get(name, random_state=0)
            for name in ("opaucr", "cbr_diag", "oam_seq", "solam")}
seen, curves, seconds = [], {name: [] for name in learners}, dict.fromkeys(learners, 0.0)
for i in range(n_chunks):
    X, y = rows(chunk)
    for name, model in learners.items():
        start = time.perf_counter()
        model.partial_fit(X, y, classes=[-1, 1])
        seconds[name] += time.perf_counter() - start
        curves[name].append(model.score(X_test, y_test))
    seen.append((i + 1) * chunk)

for name in learners:
    print(f"{name:9s} held-out AUC {curves[name][-1]:.4f} after {seen[-1]} rows, "
          f"{seconds[name]:.2f} s of partial_fit")

# %%
fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
for name, curve in curves.items():
    ax.plot(seen, curve, label=name)
ax.set_xscale("log")
ax.set_xlabel("rows seen")
ax.set_ylabel("held-out AUC")
ax.grid(True, which="both", linewidth=0.3)
ax.legend()
plt.show()
