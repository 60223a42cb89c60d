"""The extension API: everything a plugin learner needs, under public names.

A plugin is a learner class registered with :func:`aucopt.register` (in this
process) or declared as an entry point (see the README, "Writing a plugin
learner"). It imports from here and from the public modules (``aucopt``,
``aucopt.testing``), never from a private module: those may change between
versions, this module's names do not without notice.

Three ways to write one, from the least to the most code:

1. **A pair rule on the kernel's loop.** Derive from :class:`PairwiseSGD` and
   give the step of a pair, ``pair_step(m, eta)`` (``m = w.(x_i - x_j)`` the pair's
   margin, ``eta`` the scheduled rate; it returns how far ``w`` moves along ``x_i -
   x_j``, e.g. ``-eta l'(m)`` for a pair loss ``l``), and the mean pair loss
   ``pair_loss(pos_scores, neg_scores)``. Sampling (a positive and a negative row
   per step, uniformly with replacement), the SVMSGD2 schedule, the L2 shrink,
   averaging, threads, ``partial_fit``, merging and ``save`` are those of SAM /
   ASAM / PSAM. A Python ``pair_step`` takes the GIL on every pair (about a
   microsecond): for prototypes. A compiled rule derives from :class:`PairRule` in
   a ``.pyx`` that cimports it from ``aucopt._kernels._pairwise`` and is returned
   by :meth:`PairwiseSGD.pair_rule`.
2. **Passes of your own.** Derive from :class:`WeightsModel` and
   :class:`BaseLearner` (and :class:`OnlineMixin` for ``partial_fit``) and
   implement the driver's hooks below; the ranking vector is a :class:`Weights`
   (``w = scale v`` with an undo journal), read and written row by row with
   :func:`row_dot` and :func:`row_add` from Python.
3. **A plain fit.** Derive from :class:`BaseLearner` and implement ``_fit(X, y)``
   setting ``coef_`` (a 1-d array).

Check any of them with :func:`check_learner` (the contract every built-in learner
passes).

The driver's hooks
------------------
:class:`BaseLearner` validates the input, maps the labels to {-1, +1}, runs one
transaction per call (a failed or interrupted call leaves the model as it was),
and calls, on the rows of a :class:`RowSource`-like view ``rows``
(``rows.n_rows``, ``rows.n_features``; read them with :func:`row_dot` /
:func:`row_add`):

``__init__(self, ...)``
    Store the parameters under their own names, nothing else (scikit-learn's
    rule: ``get_params`` reads the signature).
``_check_params(self)``
    Validate the parameters (``TypeError`` / ``ValueError``); called by every call.
``_init_state(self, n_features)``
    The fresh fitted state (``fit``, or the first ``partial_fit``): with
    :class:`WeightsModel`, ``self._init_weights(n_features)``, plus
    ``self.intercept_ = 0.0`` and your own counters.
``_prepare(self, rows, y)``
    Per call, before the passes: class index lists, data-derived constants.
``_pass(self, rows, y, index)``
    Pass ``index`` of this call over the rows (labels ``y`` in {-1, +1}): ``fit``
    runs ``n_epochs`` of them (with ``n_epochs="auto"``: until ``_objective``
    stalls, given ``tol``, ``n_iter_no_change`` and ``max_epochs`` parameters),
    ``partial_fit`` one. With :class:`WeightsModel`, ``w = self._open_weights()``
    is the journaled view to update and ``self._store_weights(w)`` keeps its
    scalars at the end.
``_objective(self, rows, y)`` (optional)
    The training objective, for ``n_epochs="auto"`` and ``verbose``.
``_pair_loss`` (optional)
    ``(pos_scores, neg_scores) -> mean pair loss``, 1 at ``w = 0``: a fitted model
    whose loss is over 100 times that is refused as diverged.
``_fit(self, X, y)``
    Replaces the passes altogether (way 3); ``X`` is validated, dense or CSR.
``_state``
    A class attribute: ``{name: field}`` of the fitted attributes to save and
    check on load (:class:`Array`, :class:`Scalar`, :class:`Generator`); with
    :class:`WeightsModel` include :func:`weights_state`. ``coef_`` needs no
    declaration.

``traits`` (a class attribute, :class:`Traits`)
    What the class declares of itself: its ``family`` and ``limits`` for
    ``aucopt list``, ``stream``, ``merge``, ... (registration checks them).

``OnlineMixin`` adds ``partial_fit``; ``traits = Traits(stream="epochs")``
declares that ``n_epochs`` calls of ``partial_fit`` on the data equal ``fit``
(the contract then checks it), ``"chunks"`` that a stream of chunks does.
"""
from dataclasses import replace

from aucopt._kernels._pairwise import CallbackRule, HingeProx, PairRule, Subgradient
from aucopt._kernels._rows import RowSource
from aucopt._kernels._weights import Weights, row_add, row_dot
from aucopt._state import Array, Generator, Scalar
from aucopt.base import BaseLearner, OnlineMixin
from aucopt.learners._common import WeightsModel, weights_state
from aucopt.learners.stochastic import ASAM
from aucopt.registry import register
from aucopt.testing import check_learner
from aucopt.traits import Traits
from aucopt.validation import check_random_state

__all__ = ["BaseLearner", "OnlineMixin", "WeightsModel", "weights_state", "Array",
           "Scalar", "Generator", "Weights", "RowSource", "row_dot", "row_add",
           "PairRule", "CallbackRule", "Subgradient", "HingeProx", "PairwiseSGD",
           "check_learner", "check_random_state", "register", "Traits"]


class PairwiseSGD(ASAM):
    """Pairwise SGD with a pair rule of your own: the loop of SAM / ASAM / PSAM.

    Each step draws a positive row ``x_i`` and a negative row ``x_j`` (uniformly
    with replacement per class; an epoch is ``n`` steps), computes the margin ``m =
    w.(x_i - x_j)`` and moves ``w <- w + pair_step(m, eta) (x_i - x_j)`` with the
    rate ``eta = 1 / (lam (t + t0))``; every ``rskip`` steps the L2 shrink of
    SVMSGD2, every ``askip`` steps a snapshot into the weighted running average,
    which is the model (Khalid, "Scalable Large Margin Pairwise Learning
    Algorithms", PhD dissertation, Colorado State University, 2019, Alg. 10: ASAM
    with its hinge step replaced by the rule). It minimises ``lam/2 ||w||^2 +
    mean_{i pos, j neg} l(w.(x_i - x_j))`` for the pair loss ``l`` whose gradient
    step the rule takes.

    A subclass defines :meth:`pair_step` (or :meth:`pair_rule`, for a compiled
    :class:`PairRule`) and :meth:`pair_loss`, and is registered with
    :func:`aucopt.register` to be saved. The parameters are ASAM's.

    Parameters
    ----------
    lam : float or "auto", default="auto"
        L2 strength. "auto" is ``s min(1e-4, 1/n)``, ``s`` the mean squared row
        norm (``row_scale_``), ``n`` the rows of the first training data.
    t0 : float or None, default=None
        Offset of the rate; None: ``(lam / s) ** -0.75`` (SVMSGD2's heuristic).
    rskip : int, default=16
        L2 shrink every ``rskip`` steps.
    askip : int or None, default=None
        Snapshot into the average every ``askip`` steps (None: ``max(1, n // 100)``).
    avg_power : float in [0, 8], default=2.0
        Snapshot ``t`` enters the average with weight ``t ** avg_power``.
    n_epochs, tol, n_iter_no_change, max_epochs
        Passes in ``fit`` (``"auto"``: until ``lam/2 ||w||^2 +`` :meth:`pair_loss`
        on the training rows stalls), as ASAM's.
    n_jobs : int or None, default=None
        Threads for a pass, as ASAM's (Hogwild, or copies of the weights on blocks
        of many more pairs than features; a Python ``pair_step`` holds the GIL, so
        threads do not speed it up).
    random_state : int, numpy Generator or None, default=None
    verbose : int, default=0
    pos_label : label or None, default=None
    """

    # the pair loss is the subclass's pair_loss method, not the hinge ASAM declares
    traits = replace(ASAM.traits, family="pairwise SGD (a plugin's pair rule)",
                     pair_loss=None)

    def pair_step(self, m, eta):
        """How far ``w`` moves along ``x_i - x_j`` for a pair of margin ``m`` at the
        rate ``eta`` (a float; 0: no move)."""
        raise NotImplementedError(f"{type(self).__name__} defines neither pair_step "
                                  "nor pair_rule")

    def pair_rule(self):
        """The :class:`PairRule` the kernel calls on every pair: by default
        :meth:`pair_step` through a :class:`CallbackRule`."""
        return CallbackRule(self.pair_step)

    def pair_loss(self, pos_scores, neg_scores):
        """The mean pair loss ``l(s_i - s_j)`` over all (positive, negative) pairs of
        the scores, scaled to 1 at ``w = 0``."""
        raise NotImplementedError(f"{type(self).__name__} does not define pair_loss")

    def _pair_rule(self):
        rule = self.pair_rule()
        if not isinstance(rule, PairRule):
            raise TypeError(f"{type(self).__name__}.pair_rule() returned "
                            f"{type(rule).__name__}, not a PairRule")
        return rule

    def _pair_loss(self, pos_scores, neg_scores):
        return self.pair_loss(pos_scores, neg_scores)
