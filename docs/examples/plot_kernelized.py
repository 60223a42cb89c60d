"""
Kernelized learners on a nonlinear problem
==========================================

Positives on a ring around the negatives: no linear score ranks them. The
kernelized learners map the rows first (k-means Nystrom or random Fourier
features of a Gaussian kernel) and rank the mapped rows with a linear AUC
learner; their ``n_components="auto"`` and kernel width ``"auto"`` come from the
data. Each panel shows a learner's score over the plane and its test AUC.
"""
import matplotlib.pyplot as plt
import numpy as np

import aucopt
from aucopt.datasets import split

rng = np.random.default_rng(0)
n = 3000
y = np.where(rng.random(n) < 0.2, 1, -1)
radius = np.where(y > 0, rng.normal(2.0, 0.3, n), np.abs(rng.normal(0.0, 0.6, n)))
angle = rng.uniform(0, 2 * np.pi, n)
X = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
X += rng.normal(0, 0.15, X.shape)
X_train, X_test, y_train, y_test = split(X, y, test_size=0.3, random_state=0)

names = {"psam": "PSAM (linear)", "npsam": "NPSAM (Nystrom + PSAM)",
         "nbam": "NBAM (Nystrom + BAM)", "fbam": "FBAM (Fourier + BAM)"}
grid = np.linspace(-3, 3, 150)
gx, gy = np.meshgrid(grid, grid)
plane = np.column_stack([gx.ravel(), gy.ravel()])

fig, axes = plt.subplots(2, 2, figsize=(9, 8.5), layout="constrained")
for ax, (name, title) in zip(axes.ravel(), names.items()):
    model = aucopt.get(name, random_state=0).fit(X_train, y_train)
    auc = model.score(X_test, y_test)
    print(f"{name:6s} test AUC {auc:.4f}")
    scores = model.decision_function(plane).reshape(gx.shape)
    ax.contourf(gx, gy, scores, levels=20, cmap="RdBu_r", alpha=0.8)
    pos, neg = y_test > 0, y_test < 0
    ax.scatter(*X_test[neg].T, s=4, c="navy", label="negative")
    ax.scatter(*X_test[pos].T, s=4, c="darkred", label="positive")
    ax.set_title(f"{title}\ntest AUC {auc:.3f}")
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
axes[0, 0].legend(loc="upper right", markerscale=3)
plt.show()
