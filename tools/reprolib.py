"""Shared by the reproductions (tools/repro_*.py): the experiment registry and the table.

The protocol pieces themselves (stratified folds, CV-tuned parameters) are the
package's own :mod:`aucopt.model_selection`; this module only names experiments
and prints our numbers beside the papers'.
"""
import numpy as np

EXPERIMENTS = {}


def experiment(name, description):
    """Register ``fn(args) -> rows`` as the experiment ``name``."""

    def deco(fn):
        if name in EXPERIMENTS:
            raise ValueError(f"experiment {name!r} is defined twice")
        EXPERIMENTS[name] = (fn, description)
        return fn

    return deco


def mean_std(values):
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0


def tuned(make, grid, X, y, n_folds=3, seed=0):
    """Parameters from ``grid`` with the best CV AUC (``make(**params)`` builds the
    learner; diverging grid points are never chosen)."""
    from aucopt.model_selection import GridSearch

    names = list(grid)
    template = make(**{k: grid[k][0] for k in names})
    return GridSearch(template, grid, cv=n_folds, random_state=seed, refit=False) \
        .fit(X, y).best_params_


def print_table(title, rows):
    """Print rows as a Markdown table: ours (mean ± std) beside the paper's."""
    print(f"\n### {title}\n")
    extra = [k for r in rows for k in r if k not in ("dataset", "learner", "ours", "paper")]
    extra = list(dict.fromkeys(extra))
    head = ["dataset", "learner", "ours", "paper", "diff"] + extra
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        ours, paper = r["ours"], r.get("paper")
        diff = "" if paper is None else f"{ours[0] - paper[0]:+.3f}"
        cells = [r["dataset"], r["learner"], f"{ours[0]:.3f} ± {ours[1]:.3f}",
                 "n/a" if paper is None else f"{paper[0]:.3f} ± {paper[1]:.3f}", diff]
        cells += [str(r.get(k, "")) for k in extra]
        print("| " + " | ".join(cells) + " |")
