"""
Tuning with GridSearch
======================

:class:`aucopt.model_selection.GridSearch` searches a learner's own space
(``learner.search_space(X)``: the grid its paper tuned over, in the units of the
data-derived default) by stratified 3-fold cross-validation and refits the best
point. Here PSAM's regularisation on the bundled ``ionosphere`` set; the dashed
line is the data-derived default ``lam="auto"``.
"""
import matplotlib.pyplot as plt
import numpy as np

import aucopt
from aucopt.datasets import Scaler, load, split
from aucopt.model_selection import GridSearch

X, y = load("ionosphere")
X_train, X_test, y_train, y_test = split(X, y, test_size=0.3, random_state=0)
scaler = Scaler("standard").fit(X_train.toarray())
X_train, X_test = scaler.transform(X_train.toarray()), scaler.transform(X_test.toarray())

learner = aucopt.get("psam", random_state=0)
print("search space:", {k: np.round(v, 8).tolist() for k, v in
                        learner.search_space(X_train).items()})
search = GridSearch(learner, cv=3, random_state=0).fit(X_train, y_train)
print(f"best {search.best_params_}, CV AUC {search.best_score_:.4f}, "
      f"test AUC {search.score(X_test, y_test):.4f}")
default = aucopt.get("psam", random_state=0).fit(X_train, y_train)
print(f"default lam_ = {default.lam_:.3g}, test AUC {default.score(X_test, y_test):.4f}")

# %%
results = search.cv_results_
lams = np.array([p["lam"] for p in results["params"]])
fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
ax.errorbar(lams, results["mean_test_auc"], yerr=results["std_test_auc"], marker="o",
            capsize=3, label="mean CV AUC +- std over the folds")
ax.axvline(default.lam_, color="0.4", linestyle="--", label='lam="auto"')
ax.plot(lams[search.best_index_], search.best_score_, "r*", markersize=14, label="best")
ax.set_xscale("log")
ax.set_xlabel("lam")
ax.set_ylabel("AUC")
ax.legend()
plt.show()
