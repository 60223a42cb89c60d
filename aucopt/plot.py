"""Figures: ROC curves, fit histories and benchmark time-to-AUC plots.

Needs matplotlib, the optional extra ``[plot]`` (``pip install "aucopt[plot]"``),
imported on first use: ``import aucopt.plot`` works without it, and a function
called without it raises ``ImportError`` naming the extra. Every function draws
into ``ax`` (a new figure when None) and returns what it drew into.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any, Mapping

import numpy as np
from numpy.typing import ArrayLike

from aucopt._atomic import atomic_write
from aucopt.metrics import roc_auc, roc_curve

__all__ = ["roc", "history", "time_to_auc", "save"]

# the columns of a benchmark record that hold a contestant's AUC, first match wins
AUC_COLUMNS = ("test AUC", "AUC")


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "aucopt.plot needs matplotlib, the optional extra [plot]: "
            'pip install "aucopt[plot]" (or pip install matplotlib)') from exc
    return plt


def _axes(ax):
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(5.0, 4.0), layout="constrained")
    return ax


def roc(model_or_scores: Any, X: Any = None, y: ArrayLike | None = None, ax: Any = None, *,
        sample_weight: ArrayLike | None = None, label: str | None = None) -> Any:
    """Draw the ROC curve of a fitted model on ``(X, y)``, or of given scores.

    Parameters
    ----------
    model_or_scores : fitted learner or array-like of shape (n,)
        A model (anything with ``decision_function``; its ``classes_[1]`` is the
        positive label) scored on ``X``, or the scores themselves (then ``X`` is
        not used: pass ``y=`` by name).
    X : array-like or sparse matrix, optional
        Rows to score (with a model).
    y : array-like of shape (n,)
        Labels.
    ax : matplotlib Axes, optional
        Where to draw; a new figure when None.
    sample_weight : array-like of shape (n,), optional
        As in :func:`aucopt.metrics.roc_curve`.
    label : str, optional
        Legend entry; default the model's class name (or "scores"), followed by
        the AUC.

    Returns
    -------
    matplotlib.axes.Axes
    """
    if y is None:
        raise ValueError("roc needs the labels y (pass y=... by name with scores)")
    pos_label = None
    if hasattr(model_or_scores, "decision_function"):
        if X is None:
            raise ValueError("roc needs the rows X to score a model")
        scores = model_or_scores.decision_function(X)
        pos_label = model_or_scores.classes_[1]
        label = label or type(model_or_scores).__name__
    else:
        scores = model_or_scores
        label = label or "scores"
    fpr, tpr, _ = roc_curve(y, scores, pos_label, sample_weight=sample_weight)
    auc = roc_auc(y, scores, pos_label, sample_weight=sample_weight)
    ax = _axes(ax)
    if not any(line.get_label() == "chance" for line in ax.get_lines()):  # once per axes
        ax.plot([0, 1], [0, 1], linestyle="--", linewidth=0.8, color="0.6", label="chance")
    ax.plot(fpr, tpr, linewidth=1.6, label=f"{label} (AUC {auc:.4f})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.005)
    ax.set_aspect("equal")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.legend(loc="lower right")
    return ax


def history(model: Any, ax: Any = None) -> Any:
    """Draw a fitted model's ``history_``: objective and validation AUC per pass.

    The training objective on the left axis, the AUC on ``validation_data`` (when
    the fit had it) on a right-hand axis; the title gives the passes and seconds.

    Parameters
    ----------
    model : learner fitted by ``fit``
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes of the objective (or of the AUC for a learner without one).
    """
    h = getattr(model, "history_", None)
    if h is None:
        raise ValueError(f"{type(model).__name__} has no history_: fit records it "
                         "(partial_fit and merge do not)")
    seconds, objective, val_auc = np.asarray(h, dtype=float).T
    passes = np.arange(1, h.shape[0] + 1)
    ax = _axes(ax)
    has_objective = bool(np.isfinite(objective).any())
    has_auc = bool(np.isfinite(val_auc).any())
    if has_objective:
        ax.plot(passes, objective, marker="o", color="C0", label="training objective")
        ax.set_ylabel("training objective")
    auc_ax = ax.twinx() if has_objective and has_auc else ax
    if has_auc:
        auc_ax.plot(passes, val_auc, marker="s", color="C1", label="validation AUC")
        auc_ax.set_ylabel("validation AUC")
    if not (has_objective or has_auc):
        ax.plot(passes, seconds, marker="o", color="C2", label="seconds")
        ax.set_ylabel("seconds")
    ax.set_xlabel("pass")
    ax.xaxis.get_major_locator().set_params(integer=True)
    handles = ax.get_legend_handles_labels()
    if auc_ax is not ax:
        more = auc_ax.get_legend_handles_labels()
        handles = (handles[0] + more[0], handles[1] + more[1])
    ax.legend(*handles, loc="center right")
    ax.set_title(f"{type(model).__name__}: {h.shape[0]} passes, {seconds[-1]:.3g} s")
    return ax


def _auc_of(row):
    extras = row.get("extras", {})
    for column in AUC_COLUMNS:
        try:
            value = float(extras[column])
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(value):
            return value
    return None


def time_to_auc(results: Mapping[str, Any] | str | os.PathLike, ax: Any = None) -> Any:
    """Draw fit time against AUC for every contestant of a benchmark record.

    One panel per workload of ``tools/bench.py``'s JSON record whose contestants
    report an AUC (column "test AUC" or "AUC"): each contestant at (its median
    time, its AUC), time on a log scale, so the best are top left. A contestant
    with a ``curve`` (a list of ``[seconds, AUC]`` points, e.g. fits of 1, 2, 4,
    ... epochs) is drawn as a line through them.

    Parameters
    ----------
    results : dict or path
        The record (as written by ``tools/bench.py``) or the path of its JSON file.
    ax : matplotlib Axes, optional
        Where to draw when the record has one such workload; by default a new
        figure with a panel per workload.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(results, Mapping):
        with open(os.fspath(results), encoding="utf-8") as fh:
            results = json.load(fh)
    panels = []
    for workload in results.get("workloads", []):
        rows = [r for r in workload.get("contestants", [])
                if r.get("status") == "ok" and r.get("median") and _auc_of(r) is not None]
        if rows:
            panels.append((workload["name"], rows))
    if not panels:
        raise ValueError("the benchmark record has no workload whose contestants report "
                         "an AUC (columns " + ", ".join(AUC_COLUMNS) + ")")
    plt = _pyplot()
    if ax is not None:
        if len(panels) != 1:
            raise ValueError(f"the record has {len(panels)} workloads with an AUC; pass "
                             "ax=None for a panel each")
        axes = [ax]
    else:
        ncols = min(2, len(panels))
        nrows = -(-len(panels) // ncols)
        fig, grid = plt.subplots(nrows, ncols, figsize=(8.0 * ncols, 4.2 * nrows),
                                 layout="constrained", squeeze=False)
        axes = list(grid.ravel())
        for extra in axes[len(panels):]:
            extra.set_visible(False)
    colors = plt.get_cmap("tab20").colors
    for axis, (name, rows) in zip(axes, panels):
        for i, row in enumerate(rows):
            color = colors[(2 * i) % 20 + (2 * i) // 20 % 2]  # the dark shades, then the light
            curve = row.get("curve")
            if curve:
                seconds, aucs = np.asarray(curve, dtype=float).T
                axis.plot(seconds, aucs, color=color, marker=".", linewidth=1.0)
            axis.plot(row["median"], _auc_of(row), "o", color=color, label=row["name"])
        axis.set_xscale("log")
        axis.set_xlabel("fit time [s]")
        axis.set_ylabel("AUC")
        axis.set_title(name)
        axis.grid(True, which="both", linewidth=0.3)
        axis.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return axes[0].figure


def save(figure: Any, path: str | os.PathLike, **savefig_kwargs: Any) -> None:
    """Write ``figure`` (a matplotlib Figure, or Axes of one) to ``path``
    atomically (:func:`aucopt._atomic.atomic_write`: a temporary file beside it,
    fsynced, then renamed over ``path``), so a failed write leaves the old file. The format follows the extension
    (``.png``, ``.svg``, ``.pdf``, ...)."""
    figure = getattr(figure, "figure", figure)
    extension = os.path.splitext(os.fspath(path))[1][1:]
    with atomic_write(path) as fh:
        figure.savefig(fh, format=extension or None, **savefig_kwargs)
