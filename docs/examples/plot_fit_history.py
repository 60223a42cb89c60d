"""
Watching a fit: ``history_``
============================

``fit`` records one row per pass in ``history_``: the seconds so far, the
training objective and, with ``validation_data=(X_val, y_val)``, the AUC on the
held-out rows. :func:`aucopt.plot.history` draws it. PSAM on the bundled
``dna_ei`` set, run for 15 epochs, against the epochs its stopping rule
(``n_epochs="auto"``) chose.
"""
import matplotlib.pyplot as plt

import aucopt
import aucopt.plot
from aucopt.datasets import load, split

X, y = load("dna_ei")
X_train, X_test, y_train, y_test = split(X, y, test_size=0.3, random_state=0)

fixed = aucopt.get("psam", n_epochs=15, random_state=0).fit(
    X_train, y_train, validation_data=(X_test, y_test))
auto = aucopt.get("psam", random_state=0).fit(X_train, y_train)
print(f"n_epochs='auto' stopped after {auto.n_passes_} epochs ({auto.stop_reason_})")
print("pass  seconds  objective  validation AUC")
for i, (seconds, objective, auc) in enumerate(fixed.history_, 1):
    print(f"{i:4d}  {seconds:7.3f}  {objective:9.5f}  {auc:.4f}")

# %%
ax = aucopt.plot.history(fixed)
ax.axvline(auto.n_passes_, color="0.4", linestyle=":")
ax.annotate(' n_epochs="auto"\n stops here', (auto.n_passes_, 0.98),
            xycoords=("data", "axes fraction"), ha="left", va="top", color="0.3")
plt.show()
