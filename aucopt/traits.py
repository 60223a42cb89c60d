"""What a learner class declares about itself: one frozen :class:`Traits` per class.

Every learner class carries ``traits``, a :class:`Traits` (inherited unless the
class declares its own; ``dataclasses.replace(Parent.traits, ...)`` changes a
few fields). The driver, ``merge``, :mod:`aucopt.dask`, ``aucopt list`` and the
contract suite read these fields and nothing else about a class's kind, and
:mod:`aucopt.registry` refuses a class whose declaration is malformed or does
not fit the class when it is registered (:func:`aucopt.register`, plugin
loading, the built-ins).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

__all__ = ["Traits", "traits_of", "MERGE_KINDS", "STREAM_KINDS"]

# How a learner's models combine (``Traits.merge``), besides None (they do not).
MERGE_KINDS = ("exact", "average")
# What a partial_fit stream equals (``Traits.stream``), besides None (nothing promised).
STREAM_KINDS = ("chunks", "epochs")


@dataclasses.dataclass(frozen=True)
class Traits:
    """The declared kind of a learner class (see the module docstring).

    Parameters
    ----------
    family : str
        The family shown by ``aucopt list`` (e.g. ``"pairwise SGD"``).
    limits : str
        Its input limits in words, shown by ``aucopt list``.
    merge : {None, "exact", "average"}
        How models trained on different data combine (:meth:`merge
        <aucopt.base.BaseLearner.merge>`): "exact" when the kept statistics add
        up to those of the concatenated data, "average" for a weighted average of
        parameters (an approximation), None when they do not.
    stream : {None, "chunks", "epochs"}
        What the contract suite checks of ``partial_fit``: "chunks" when
        ``partial_fit`` over the chunks of a stream equals ``fit`` on all of it,
        "epochs" when ``n_epochs`` calls on the whole data equal ``fit``
        (unshuffled); None promises neither.
    shuffles : bool
        Consumes rows in the given order and has ``shuffle`` and ``random_state``
        parameters: ``fit`` presents the rows in a fresh random order each pass
        when ``shuffle`` is set.
    row_map : bool
        Learns on a feature map fitted on its first data (the kernelized
        learners): ``sample_weight`` repeats the input rows (a copy) so that the
        map is fitted on the copies too, and models fitted apart hold different
        maps (:func:`aucopt.dask.fit` refuses it).
    unit_rows : bool
        The rows it learns on have squared norm about 1 (a Gaussian-kernel map):
        its search spaces are in those units.
    weighs_rows : bool
        Weighs its rows itself in ``fit``: ``sample_weight`` reaches it during the
        call, each row given once, instead of repeating the rows.
    max_features : int or None
        The declared largest number of input features (None: any).
    divergence_hint : str
        What to change when a fit diverges (the error message names it).
    pair_loss : callable or None
        ``(positive scores, negative scores) -> mean pair loss`` of its objective
        (1 at w = 0), if cheap: fitted models whose loss exceeds
        :data:`aucopt.driver.LOSS_LIMIT` are refused as diverged.
    stream_segments : bool
        Its random draws come from one stream in row order, so that the parts of
        a distributed exact pass draw from consecutive segments of it (the class
        provides ``_segment_streams(sizes)``; :func:`aucopt.driver.part_streams`).
    monitor_rows : int or None
        ``n_epochs="auto"`` evaluates its objective after each pass on at most this
        many training rows, or ``1 /`` :data:`aucopt.driver.MONITOR_SHARE` of them
        if more, never more than :data:`aucopt.driver.MONITOR_ROWS` (a fixed random
        sample, drawn once; :func:`aucopt.driver.monitor_size`); None:
        :data:`aucopt.driver.MONITOR_ROWS`. For a learner whose pass costs a
        few ``X @ w`` the rule's scoring of every row would cost it a large share
        of the fit.
    """

    family: str = ""
    limits: str = ""
    merge: str | None = None
    stream: str | None = None
    shuffles: bool = False
    row_map: bool = False
    unit_rows: bool = False
    weighs_rows: bool = False
    max_features: int | None = None
    divergence_hint: str = "lower the step size"
    pair_loss: Callable | None = None
    stream_segments: bool = False
    monitor_rows: int | None = None

    def __post_init__(self):
        for name in ("family", "limits", "divergence_hint"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Traits.{name} must be a string, got "
                                f"{getattr(self, name)!r}")
        for name in ("shuffles", "row_map", "unit_rows", "weighs_rows", "stream_segments"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"Traits.{name} must be True or False, got "
                                f"{getattr(self, name)!r}")
        if self.merge is not None and self.merge not in MERGE_KINDS:
            raise ValueError(f"Traits.merge must be None or one of {MERGE_KINDS}, got "
                             f"{self.merge!r}")
        if self.stream is not None and self.stream not in STREAM_KINDS:
            raise ValueError(f"Traits.stream must be None or one of {STREAM_KINDS}, got "
                             f"{self.stream!r}")
        for name in ("max_features", "monitor_rows"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"Traits.{name} must be None or a positive integer, "
                                 f"got {value!r}")
        if self.pair_loss is not None and not callable(self.pair_loss):
            raise TypeError(f"Traits.pair_loss must be None or callable, got "
                            f"{self.pair_loss!r}")



def traits_of(cls):
    """The :class:`Traits` of learner class (or learner) ``cls``: its ``traits``, or
    the defaults for a bare :class:`~aucopt.base.Learner` that declares none."""
    if not isinstance(cls, type):
        cls = type(cls)
    traits = getattr(cls, "traits", None)
    return Traits() if traits is None else traits
