"""Merging models trained on different data: the merge mixin of every learner.

:class:`MergeMixin` gives :class:`aucopt.base.BaseLearner` its public
:meth:`~MergeMixin.merge`; :func:`merge` builds a new model from several, and
:func:`merge_models` is the step :mod:`aucopt.dask` runs at each node of its merge
tree. What merging means is declared per class (``traits.merge``: "exact" or
"average", see :class:`aucopt.traits.Traits`); how each state value combines is
declared by ``_merge_rules`` (merged along the MRO):

* ``"sum"``: statistics and counters (a ``base`` counted once);
* ``"mean"``: the weighted average (rounded for a counter);
* ``"max"``; ``"last"``: the value of the last model.

State not listed keeps this model's value. Learners with a packed state translate
names (``_merge_values`` / ``_merge_store``), merge what the rules cannot
(``_merge_extra``), refuse what does not merge (``_merge_check``) and derive state
after the merge (``_merge_finish``, e.g. a solve).
"""
from __future__ import annotations

import copy
import numbers
from typing import Iterable, Sequence

import numpy as np

from aucopt.driver import check_fitted, transaction
from aucopt.traits import MERGE_KINDS

__all__ = ["MergeMixin", "merge", "merge_models", "check_mergeable", "MERGE_FREE_PARAMS"]

# Parameters that do not change what a fitted state means: models may differ in them.
MERGE_FREE_PARAMS = ("verbose", "random_state", "shuffle", "n_epochs", "tol",
                     "n_iter_no_change", "max_epochs", "max_state_bytes", "n_jobs")


class MergeMixin:
    """``merge`` and its hooks (see the module docstring)."""

    # Merge rules of state values (``_merge_values``): name -> "sum" (statistics
    # and counters), "mean" (weighted average; rounded for a counter), "max" or
    # "last" (the value of the last model); state not listed keeps this model's
    # value. Merged along the MRO.
    _merge_rules = {"intercept_": "mean", "n_passes_": "max", "row_scale_": "mean"}

    def merge(self, *others, weights=None, base=None):
        """Combine models trained on other data into this one, in place.

        Every model must be a fitted learner of this class with the same
        parameters (up to ``verbose``, ``random_state``, ``shuffle`` and the
        stopping and memory settings), the same features, classes and resolved
        data-derived parameters (``eta_``, ``lam_``, ...: give them explicitly,
        or let :func:`aucopt.dask.fit` resolve them on all of the data).

        What merging means is declared by the learner (``aucopt list``, column
        "merge", and the class docstring):

        * ``"exact"``: the statistics the model keeps are sums over its rows, and
          the merged statistics are those of one pass over the concatenated data
          (to rounding); the merged parameters are a function of them;
        * ``"average"``: the parameters are averaged with ``weights`` (by default
          the rows each model trained on): one-shot parameter averaging, or, with
          ``base``, one round of iterative parameter mixing (McDonald, Hall &
          Mann, Distributed Training Strategies for the Structured Perceptron,
          NAACL 2010). An approximation of a fit on all of the data; counts and
          class statistics still add exactly.

        A merge that fails (incompatible models, a failed solve) raises and
        leaves this model unchanged.

        Parameters
        ----------
        *others : learners of the same class
        weights : sequence of float, optional
            One weight per model (this one first) for averaged values; None
            weighs each model by the rows it trained on (since ``base``), each row
            counted by its ``sample_weight`` (its copies). Only
            for ``"average"`` learners.
        base : learner, optional
            The model every one of them continued from (iterative parameter
            mixing): its counts and statistics are counted once, not once per
            model.

        Returns
        -------
        self

        Raises
        ------
        TypeError
            If the learner cannot be merged, or a model is of another class.
        ValueError
            If the models are not compatible (the message says how).
        """
        return merge_models(self, others, weights, base, finish=True)

    def _merge_into(self, models, weights, base, finish):
        """Combine ``models`` (``self`` first, already checked) into ``self``."""
        rules = self._merge_spec()
        parts = [m._merge_values() for m in models]
        start = base._merge_values() if base is not None else None
        extra = self._merge_extra(models, weights, base)
        merged = {}
        for name, rule in rules.items():
            if name not in parts[0]:
                continue
            values = [p[name] for p in parts]
            merged[name] = _combine(rule, values, weights,
                                    None if start is None else start[name])
        for name in ("objective_", "stop_reason_", "history_"):  # described one model's fit
            self.__dict__.pop(name, None)
        self._merge_store(merged)
        self.__dict__.update(extra)
        self._merge_finish(finish)
        self._invalidate()

    @classmethod
    def _merge_spec(cls):
        spec = {}
        for klass in reversed(cls.__mro__):
            spec.update(vars(klass).get("_merge_rules", {}))
        return spec

    def _merge_check(self, models, base):
        """Refuse models that cannot be merged with this one (learners extend)."""
        cls = type(self)
        name = cls.__name__
        check_fitted(self)
        check_mergeable(cls)
        free = set(MERGE_FREE_PARAMS)
        params = {k: v for k, v in self.get_params().items() if k not in free}
        for i, model in enumerate(models[1:] + ([base] if base is not None else [])):
            what = "base" if base is not None and i == len(models) - 1 else f"model {i + 1}"
            if type(model) is not cls:
                raise TypeError(f"cannot merge a {type(model).__name__} ({what}) into a "
                                f"{name}: models must be of the same class")
            check_fitted(model)
            other = {k: v for k, v in model.get_params().items() if k not in free}
            differ = sorted(k for k in params if not _same_value(params[k], other[k]))
            if differ:
                raise ValueError(f"cannot merge {name} models with different parameters "
                                 f"({what}: " + ", ".join(
                                     f"{k}={other[k]!r} vs {params[k]!r}" for k in differ)
                                 + ")")
            if model.n_features_in_ != self.n_features_in_:
                raise ValueError(f"cannot merge {name} models with {model.n_features_in_} "
                                 f"and {self.n_features_in_} features ({what})")
            names = [m.__dict__.get("feature_names_in_") for m in (model, self)]
            if (names[0] is None) != (names[1] is None) or (
                    names[0] is not None and not np.array_equal(*names)):
                raise ValueError(f"cannot merge {name} models fitted on different "
                                 f"feature names ({what})")
            if not np.array_equal(model.classes_, self.classes_):
                raise ValueError(f"cannot merge {name} models with classes "
                                 f"{model.classes_.tolist()} and {self.classes_.tolist()} "
                                 f"({what})")
            for key in [p + "_" for p in self._auto_params]:
                if model.__dict__.get(key) != self.__dict__.get(key):
                    raise ValueError(
                        f"cannot merge {name} models with {key} = {model.__dict__.get(key)!r}"
                        f" and {self.__dict__.get(key)!r} ({what}): 'auto' was resolved on "
                        f"different data; pass {key[:-1]} explicitly, or fit with "
                        "aucopt.dask.fit, which resolves it once on all of the data")

    def _merge_weights(self, models, weights, base):
        """The normalised weight of each model for averaged values."""
        name = type(self).__name__
        if weights is None:
            start = base._merge_rows() if base is not None else 0.0
            raw = np.array([m._merge_rows() - start for m in models], dtype=float)
            if (raw < 0).any():
                raise ValueError(f"a {name} model trained on fewer rows than base: base "
                                 "must be the model every part continued from")
            if raw.sum() <= 0:
                raw = np.ones(len(models))
        else:
            if self.traits.merge == "exact":
                raise ValueError(f"{name} merges exactly (its statistics add up); "
                                 "weights do not apply")
            raw = np.asarray(weights, dtype=float)
            if raw.shape != (len(models),) or not np.isfinite(raw).all() \
                    or (raw < 0).any() or not raw.max() > 0:
                raise ValueError(f"weights must hold {len(models)} finite numbers >= 0 "
                                 f"with a positive sum (one per model), got {weights!r}")
        raw = raw / raw.max()  # in [0, 1] first: a sum of huge weights would overflow
        return raw / raw.sum()

    def _merge_rows(self):
        """How many rows (steps) the model trained on: its default merge weight."""
        return float(getattr(self, "t_", 1))

    def _merge_values(self):
        """The model's values under the names of the merge rules."""
        return {name: self.__dict__[name] for name in self._merge_spec()
                if name in self.__dict__}

    def _merge_store(self, values):
        """Write merged values back into the state (learners with a packed state
        translate their names)."""
        self.__dict__.update(values)

    def _merge_extra(self, models, weights, base):
        """State merged by the learner itself (e.g. buffers): ``{attribute: value}``."""
        return {}

    def _merge_finish(self, finish):
        """Derived state after the merged values are in place (e.g. a solve)."""


def merge(models: Iterable[MergeMixin], weights: Sequence[float] | None = None,
          base: MergeMixin | None = None) -> MergeMixin:
    """A new model combining fitted ``models`` (see :meth:`MergeMixin.merge`).

    The first model is copied and the others are merged into the copy; none of
    ``models`` changes.
    """
    models = list(models)
    if not models:
        raise ValueError("merge needs at least one model")
    return copy.deepcopy(models[0]).merge(*models[1:], weights=weights, base=base)


def _same_value(a, b):
    """Parameter equality (numbers by value, anything else by ``==`` or identity)."""
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _combine(rule, values, weights, start):
    """Merge the values of one state field (``start``: the base's value or None)."""
    if rule == "sum":
        total = values[0]
        for value in values[1:]:
            total = total + value
        if start is not None:
            total = total - (len(values) - 1) * start
        return total
    if rule == "mean":
        total = weights[0] * values[0]
        for w, value in zip(weights[1:], values[1:]):
            total = total + w * value
        if isinstance(values[0], numbers.Integral):  # a counter stays a whole number
            return int(round(total))
        return float(total) if isinstance(values[0], numbers.Real) else total
    if rule == "max":
        return max(values)
    if rule == "last":
        return copy.deepcopy(values[-1])
    raise ValueError(f"unknown merge rule {rule!r}")


def merge_models(learner, others, weights=None, base=None, finish=True):
    """Merge ``others`` into fitted ``learner`` in place (:meth:`MergeMixin.merge`);
    ``finish=False`` leaves the derived state (an exact learner's solve) to a later
    merge: a tree of merges finishes at its root. Returns ``learner``."""
    models = [learner, *others]
    learner._merge_check(models, base)
    weights = learner._merge_weights(models, weights, base)
    with transaction(learner, fresh=True):
        learner._merge_into(models, weights, base, finish)
    return learner


def check_mergeable(cls):
    """Raise TypeError unless learner class ``cls`` declares a merge kind."""
    if cls.traits.merge not in MERGE_KINDS:
        raise TypeError(
            f"{cls.__name__} cannot be merged: its state is neither a sum of per-row "
            "statistics nor parameters that average (see the 'merge' column of "
            "`aucopt list`); train it on all of the data instead")
