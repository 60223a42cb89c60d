"""
ROC curve, partial AUC and top-k precision
==========================================

PSAM on the bundled ``spambase`` set: the ROC curve of the test scores
(:func:`aucopt.plot.roc`), and the measures reported next to the AUC on
imbalanced data: the partial AUC over false positive rates up to 10%
(standardised with McClish's correction, as scikit-learn's
``roc_auc_score(max_fpr=0.1)``), and the precision among the top-ranked rows.
"""
import matplotlib.pyplot as plt

import aucopt
import aucopt.plot
from aucopt.datasets import Scaler, load, split
from aucopt.metrics import precision_at_k, roc_auc

X, y = load("spambase")
X_train, X_test, y_train, y_test = split(X, y, test_size=0.3, random_state=0)
scaler = Scaler("standard").fit(X_train.toarray())
X_train, X_test = scaler.transform(X_train.toarray()), scaler.transform(X_test.toarray())

clf = aucopt.get("psam", random_state=0).fit(X_train, y_train)
scores = clf.decision_function(X_test)

print(f"AUC                    {roc_auc(y_test, scores):.4f}")
print(f"partial AUC, FPR <= 0.1 {roc_auc(y_test, scores, max_fpr=0.1):.4f}")
for k in (50, 100, 200):
    print(f"precision at {k:<4d}      {precision_at_k(y_test, scores, k):.3f}")

# %%
# The curve; the dotted line marks the partial AUC's range.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.5), layout="constrained")
aucopt.plot.roc(clf, X_test, y_test, ax=left)
left.axvline(0.1, color="0.4", linestyle=":", linewidth=1)
aucopt.plot.roc(clf, X_test, y_test, ax=right)
right.set_xlim(0, 0.1)
right.set_aspect("auto")
right.set_title("false positive rates up to 0.1")
plt.show()
