"""Workloads of the square-loss family (issue 5): OPAUCr on the sparse text tasks.

``square_text_<task>``: OPAUCr (tau = 50) against CBR-diag and PSAM, each with its
defaults, trained once on the task's training split (rows shuffled once, seed 0,
untimed: the text files are sorted by class, which one-pass learners must not
see) and scored on the test split. Columns: test AUC, the model state in bytes
(every fitted array) and, for OPAUCr, the bound ``3 d tau 8`` of the issue.
"""
import numpy as np

from benchlib import Contestant, Unavailable, workload
from tasks import TEXT_TASKS, load_task

CONTESTANTS = (("opaucr", {"tau": 50, "random_state": 0}),
               ("cbr_diag", {"random_state": 0}),
               ("psam", {"random_state": 0}))


def _state_bytes(model):
    return int(sum(v.nbytes for k, v in vars(model).items()
                   if k.endswith("_") and isinstance(v, np.ndarray)))


def _text_workload(task):
    def setup(ctx):
        import aucopt

        X_tr, y_tr, X_te, y_te = load_task(task)
        perm = np.random.default_rng(ctx.seed).permutation(X_tr.shape[0])
        X_tr, y_tr = X_tr[perm], y_tr[perm]
        d = X_tr.shape[1]
        contestants = {}
        for name, params in CONTESTANTS:
            try:
                aucopt.get(name, **params)
            except ValueError as exc:  # not registered (yet) in this checkout
                contestants[name] = Unavailable(exc)
                continue
            contestants[name] = Contestant(
                lambda model: model.fit(X_tr, y_tr),
                prepare=lambda name=name, params=params: aucopt.get(name, **params))

        def extras(model, stats):
            out = {"AUC": round(model.score(X_te, y_te), 4),
                   "state MB": round(_state_bytes(model) / 2**20, 2)}
            if hasattr(model, "sketch_"):
                tau = model.sketch_.shape[2]
                out["3 d tau 8 MB"] = round(3 * d * tau * 8 / 2**20, 2)
            return out

        return dict(contestants=contestants, peer="cbr_diag", extras=extras,
                    params={"task": task, "n_train": X_tr.shape[0], "n_test": X_te.shape[0],
                            "d": d, "nnz_train": X_tr.nnz})

    return setup


for _task in TEXT_TASKS:
    workload(f"square_text_{_task}",
             description=f"OPAUCr (tau=50) vs CBR-diag vs PSAM on {_task}: fit time, test AUC, "
                         "model state",
             columns=("AUC", "state MB", "3 d tau 8 MB"))(_text_workload(_task))
