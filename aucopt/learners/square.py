"""Square-loss one-pass learners: OPAUC, OPAUCr, AdaOAM and online Uni-Exp.

OPAUC and its low-rank sketch OPAUCr (Gao, Jin, Zhu & Zhou, One-Pass AUC
Optimization, ICML 2013), AdaOAM (Ding, Zhao, Hoi & Ong, An Adaptive Gradient
Method for Online AUC Maximization, AAAI 2015) and online Uni-Exp, the pointwise
baseline of Gao et al.'s tables.

All four are one-pass online learners in their papers: ``partial_fit`` continues
the stream (class counts, means and covariances are estimated online, as the papers
do), and ``n_epochs=1`` makes ``fit`` the papers' single pass. Their ``fit`` defaults
repeat shuffled passes until the objective stalls (OPAUC returns the objective's
minimiser on tabular rows, OPAUCr the mean of its passes' iterates); each class's
docstring says why and what it measured. The loops are in
:mod:`aucopt._kernels._square`; the ranking vector lives in the shared weight
primitive (:class:`aucopt._kernels._weights.Weights`).
"""
import copy
import math
from dataclasses import replace

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.blas import dsyr

from aucopt._kernels._square import (AdaGradStep, Covariances, GradientStep, Sketch,
                                     opauc_steps, opaucr_steps, sketch_coef, sketch_scores,
                                     stored_entries, uniexp_steps)
from aucopt._kernels._stats import ClassSums
from aucopt._docs import docstring
from aucopt._state import Array, Generator, Scalar
from aucopt import driver
from aucopt.base import BaseLearner, OnlineMixin
from aucopt.traits import Traits
from aucopt.learners._common import (INPUT_ATTRIBUTES, SHUFFLE_PARAMS, RepeatedPasses,
                                     WeightsModel,
                                     auto_norm_cap, auto_or_positive, auto_value,
                                     check_flag, check_shuffle, document_weights, merge_doc,
                                     nonzero_entries, repeated_passes, search_scale,
                                     weights_state, writable)
from aucopt.learners._objectives import mean_pair_square
from aucopt.validation import (check_count, check_positive, check_random_state,
                               check_sample_weight, check_state_bytes, check_X, check_y)

__all__ = ["OPAUC", "OPAUCr", "AdaOAM", "UniExp"]

# A partial_fit on a fitted OPAUC / AdaOAM keeps its rank-1 covariance updates
# pending (no copy of the d x d sums) while its rows hold at most this share of
# the d^2 entries of one covariance sum; beyond, the sums are journaled in place.
PENDING_SHARE = 0.2
# Largest sketch rank of OPAUCr: a step costs O(tau^2), the state 32 tau^2 bytes.
MAX_TAU = 4096
# Rows of OPAUCr per Gaussian draw: bounds the draw's memory (the stream of draws,
# hence the model, does not depend on it).
DRAW_BLOCK = 4096
# OPAUCr's average_passes: fit takes a snapshot of the iterate every this many rows
# of a pass, times d / z on sparser rows (z the mean non-zero entries of a row): a
# snapshot, O(d tau), costs about d / z steps, so the snapshots add at most about
# 1/AVERAGE_EVERY to a pass (text, d / z in the hundreds: the ends of the passes only)
AVERAGE_EVERY = 128


def open_class_sums(learner):
    """The learner's ``class_count_`` / ``class_sum_`` for a call, journaled."""
    learner._tx.backup(learner.class_count_)
    return ClassSums(learner.class_count_, learner.class_sum_,
                     learner._tx.journal(learner.class_sum_, width=1))


def class_sum_state():
    """Declared state of the per-class counts and sums."""
    return {"class_count_": Array("f8", (2,), low=0.0),
            "class_sum_": Array("f8", (2, "d"))}


def check_max_state_bytes(learner):
    """``max_state_bytes``: None or a positive number of bytes."""
    if learner.max_state_bytes is not None:
        check_count("max_state_bytes", learner.max_state_bytes)


class _Streaming(WeightsModel, OnlineMixin, BaseLearner):
    """Streaming learners: each pass runs over the rows in the order given (or drawn),
    and ``partial_fit`` continues the stream with one pass over the chunk."""

    _state = {"t_": Scalar(int, low=0)}
    _merge_rules = {"t_": "sum"}
    traits = Traits(divergence_hint="lower eta")
    _retry_param = "eta"  # a diverged default fit retries with a smaller eta

    def _check_params(self):
        auto_or_positive("eta", self.eta)
        check_count("verbose", self.verbose, minimum=0)

    def _progress(self):
        return f"steps {self.t_}, "


class _OnePass(_Streaming):
    """One pass per call, every row counted in its class (``class_count_``); rows
    are consumed in order, so ``fit`` shuffles them."""

    # partial_fit over the chunks of a stream == fit on all of it
    traits = replace(_Streaming.traits, shuffles=True, stream="chunks")

    def _check_params(self):
        super()._check_params()
        check_shuffle(self)

    def _check_state(self):
        super()._check_state()
        if self.class_count_.sum() != self.t_:
            raise ValueError(f"class_count_ sums to {self.class_count_.sum()}, "
                             f"not to t_ = {self.t_}")


# How each learner's models merge (a paragraph of its docstring)
_OPAUC_MERGE = merge_doc("exact", """adds the class counts, sums and sums of
    outer products, which gives the statistics of the concatenated data (to
    rounding), and then sets ``w`` by :meth:`solve`: the online iterates of the
    parts are not combined, they depend on the order of the rows.""")

_ADAOAM_MERGE = merge_doc("exact", """adds the statistics as :class:`OPAUC` does
    and sets ``w`` by :meth:`solve` (the minimiser lies inside the ball of radius
    ``1/sqrt(lam)``, since ``lam/2 ||w||^2`` cannot exceed the objective's value 1/2
    at ``w = 0``, so the projection does not change it); the sums of squared
    gradients add, as those of the parts' steps (a single stream's steps would
    differ): they only scale later steps.""")

_OPAUCR_MERGE = merge_doc("exact", """adds the class counts, sums and sketches
    ``Z``, ``q``, then sets ``w`` by :meth:`solve`. The sum is the sketch one pass
    over the concatenated data draws when each part drew its Gaussian vectors
    from its own segment of one random stream, as :func:`aucopt.dask.fit`
    arranges (then equal to rounding); parts seeded independently give a sketch
    with independent draws, distributed as a single pass's. Parts seeded with
    the same seed from its start drew the same vectors, and their sum would be a
    biased sketch: that merge is refused. In high dimension the solved ``w`` can rank
    worse than one process's online iterate: outside the 2 tau sketched directions
    the objective's curvature is only ``lam``, so its minimiser is close to the
    difference of the class means, while each online step also uses its row's exact
    rank-one term (measured on a 100,000-row rcv1-shaped task: test AUC 0.766 solved,
    0.810 online).""")

_UNIEXP_MERGE = merge_doc("average", """averages ``w`` with the models' weights
    (by default the rows each trained on) and adds the class counts: the
    exponential loss keeps no statistics that add up.""")


# the traits of the learners with a closed-form minimiser (:class:`_Solvable`)
_SOLVABLE = {"merge": "exact", "pair_loss": mean_pair_square}


class _Solvable:
    """OPAUC's objective solved from the statistics, and exact merges through it.

    The objective of Gao, Jin, Zhu & Zhou (One-Pass AUC Optimization, ICML 2013,
    eq. 2), ``lam/2 ||w||^2 + sum_{i pos, j neg} (1 - w.(x_i - x_j))^2 / (2 n+ n-)``,
    equals ``lam/2 ||w||^2 + (1 - 2 w.delta + w^T (S_+ + S_- + delta delta^T) w) / 2``
    with the class means' difference ``delta = c_+ - c_-`` and the class
    covariances ``S``: its minimiser ``(lam I + S_+ + S_- + delta delta^T)^-1 delta``
    (the closed form the paper mentions) is a function of the statistics the
    learner keeps, which add up exactly over shards of the data.
    """

    def _objective(self, rows, y):
        """Half the mean pairwise square loss plus ``lam/2 ||w||^2`` (O(n)): the
        objective the steps lower (``n_epochs="auto"`` stops once it stalls)."""
        scores = self._raw_scores(rows)
        return (0.5 * mean_pair_square(scores[y > 0], scores[y < 0])
                + 0.5 * self.lam_ * self._coef_norms()[0])


    def solve(self, X=None, y=None, sample_weight=None):
        """Set ``w`` to the minimiser of the objective on the statistics seen so far.

        The pairwise square loss of Gao, Jin, Zhu & Zhou (One-Pass AUC
        Optimization, ICML 2013, eq. 2) with L2 strength ``lam_`` is a quadratic
        in ``w`` whose coefficients are the class counts, means and covariances
        the model keeps; its minimiser is ``w = (lam I + S_+ + S_- + delta
        delta^T)^-1 delta`` (``delta = c_+ - c_-``). The online iterate is
        replaced (it depends on the order of the rows; this does not); the
        statistics and ``t_`` stay. :meth:`merge` of these learners ends with this
        step, so a merged model equals ``solve()`` of a model trained on the
        concatenated data, to rounding.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features), optional
        y : array-like of shape (n_samples,), optional
            Training rows and labels on which to put ``intercept_`` at the OPTROC
            point of the new ``w`` (as ``fit`` does); without them ``intercept_``
            is kept.
        sample_weight : array-like of shape (n_samples,), optional
            Their weights, as ``fit`` takes them.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Without rows of both classes, or with ``lam_ = 0`` (the objective
            then has no unique minimiser).
        """
        driver.check_fitted(self)
        if X is not None:
            X = check_X(X, n_features=self.n_features_in_, estimator=type(self).__name__)
            y, _ = check_y(y, X.shape[0], classes=self.classes_)
            sample_weight = check_sample_weight(sample_weight, X.shape[0])
        with driver.transaction(self, fresh=True):
            self._solve()
            self._invalidate()
            if X is not None:
                self._finish(*driver.weighted_rows(self, X, y, sample_weight))
        return self

    def _merge_finish(self, finish):
        if finish:
            self._solve()

    def _solve_means(self):
        """Class counts and means for the solve (refusing what it cannot solve)."""
        T = self.class_count_
        name = type(self).__name__
        if T.min() == 0:
            raise ValueError(f"{name}.solve needs rows of both classes, got "
                             f"{int(T[1])} positive and {int(T[0])} negative rows")
        if not self.lam_ > 0:
            raise ValueError(f"{name}.solve needs lam > 0 (with lam = 0 the pairwise "
                             "square loss has no unique minimiser)")
        return T, self.class_sum_ / T[:, None]


# --------------------------------------------------------------------------- OPAUC

# the tasks of tools/tabular.py the repeated passes were measured on
_TABULAR_TASKS = ("the 54 tasks other than the two of w8a (left out for time; with the "
                  "former ``lam = 1e-4 s`` and ``tol=1e-3`` over 2 passes)")


def square_stall(measured, final=""):
    """The sentences on the stall rule of the square-loss learners (``measured``:
    the learner's mean gaps; ``final``: those of its defaults on all 56 tasks)."""
    return (
        "Its stall rule is ``tol=1e-4`` over ``n_iter_no_change=5`` passes, where the "
        "other one-pass learners use 1e-3 over 2: the constant-step iterate's "
        "objective moves by up to 1e-3 from pass to pass, and with the tabular ``lam`` "
        "of ``3e-2 s`` 1e-3 over 2 stopped the passes after 3 to 10 on the smallest "
        "sets, far from the optimum. With that ``lam``, on the 54 tasks of "
        "``tools/tabular.py`` other than w8a, the mean gap to LogisticRegression() "
        f"was {measured}. A tol of 1e-5 over 5 passes ran all 50 passes on w8a (90 s "
        f"per OPAUC fit) for no better mean."
        + (f" The defaults, on all 56 tasks: {final}." if final else ""))


def tabular_rows(s, rows):
    """Whether the rows' mean squared entry ``s / d`` is at least 1/4 (standardised or
    raw tabular features, whatever their format; text: ``s / d`` ~ 1e-5)."""
    return 4.0 * s >= rows.n_features


def square_lam(s, rows, sparse):
    """"auto" ``lam`` of the square-loss learners: ``3e-2 s`` on tabular rows
    (:func:`tabular_rows`), ``sparse * s`` on sparser ones."""
    return (3e-2 if tabular_rows(s, rows) else sparse) * s


class _FirstPass:
    """A stall rule that stops after the first pass."""

    @staticmethod
    def update(value, scores=None, y=None):
        return True


# "auto" eta and lam of OPAUC and OPAUCr. Dense rows: the step stays below
# 1 / max ||x||^2 (heavy tails; see OPAUC's docstring)
_OPAUC_STEP = {"eta": lambda self, s, rows: 2.0 ** -3 / (
                   max(s, rows.max_sqnorm() / 8.0) if rows.dense else s),
               "lam": lambda self, s, rows: square_lam(s, rows, 1e-4)}

# OPAUCr's average_passes=True on tools/tabular.py (a sentence of its docstring)
_AVERAGED_MEASURED = """On the 56 tasks of
        ``tools/tabular.py`` the mean test AUC minus LogisticRegression()'s was
        -0.0060 with the last iterate (-0.0035 on the tasks without heavy tails,
        -0.0086 with them; 4 tasks more than 0.05 below it), -0.0044 with the mean
        of the last 5 passes' (+0.0005, -0.0092; 3 tasks), -0.0047 with the mean
        of all passes' (+0.0014, -0.0109; 2 tasks) and -0.0044 with the snapshots
        within the passes as well (+0.0017, -0.0104; the same 2 tasks,
        letter_21-400r5%+ht and pendigits_8-1000r5%+ht, where OPAUC's exact minimiser
        is as far below). The snapshots within the passes narrow the spread over
        seeds: on standardised satimage (a class against the rest; 5,148 training
        rows, 36 features) the test AUC at seeds 0-4 was 0.716, 0.720, 0.721, 0.718
        and 0.721, against 0.701, 0.719, 0.721, 0.713 and 0.728 with the ends of the
        passes alone (after 50 passes 0.716 and 0.721 at seeds 0-1), where
        OPAUC's exact minimiser at the same ``lam`` gives 0.719."""

# OPAUC's closed_form="auto" on tools/tabular.py (a sentence of its docstring)
_CLOSED_FORM_MEASURED = """On the 56 tasks of ``tools/tabular.py`` the
        mean test AUC minus LogisticRegression()'s went from -0.0045 with the
        online iterate (+0.0014 on the tasks without heavy tails, -0.0104 with them;
        3 tasks more than 0.05 below it) to -0.0031 (+0.0023, -0.0085; 2 tasks,
        letter_21-400r5%+ht at -0.089 and pendigits_8-1000r5%+ht at -0.067, as far
        below as the online iterate), CPU 207 s to 62 s; no FloatingPointError."""


class _CovarianceLearner(_Solvable, _OnePass):
    """OPAUC's statistics: per class count, sum and sum of outer products (O(d^2))."""

    _state = {**class_sum_state(), "class_sxx_": Array("f8", (2, "d", "d"))}
    _merge_rules = {"class_count_": "sum", "class_sum_": "sum", "class_sxx_": "sum"}
    # the declared input limit: two d x d sums, O(d^2) per row
    traits = replace(_OnePass.traits, **_SOLVABLE, max_features=11_000)

    def _check_params(self):
        super()._check_params()
        check_max_state_bytes(self)

    def _solve(self):
        T, m = self._solve_means()
        # A = lam I + S_- + S_+ on the upper triangle (class_sxx_ keeps only that);
        # its transpose is the F-ordered lower triangle LAPACK factors in place
        A = self.class_sxx_[0] / T[0]
        A += self.class_sxx_[1] / T[1]
        lower = A.T
        for c in range(2):
            lower = dsyr(-1.0, m[c], lower=1, a=lower, overwrite_a=1)
        lower[np.diag_indices_from(lower)] += self.lam_
        delta = m[1] - m[0]
        z = cho_solve(cho_factor(lower, lower=True, overwrite_a=True), delta)
        self._set_weights(z / (1.0 + delta @ z))

    def _init_state(self, n_features):
        d = n_features
        check_state_bytes(8 * (2 * d * d + (2 + self._columns) * d),
                          f"{type(self).__name__}'s two {d} x {d} covariance sums",
                          self.max_state_bytes,
                          "use 'opaucr' (a low-rank sketch, O(d tau) memory) for "
                          "high-dimensional data, or raise max_state_bytes")
        self._init_weights(d)
        self.intercept_ = 0.0
        self.class_count_ = np.zeros(2)
        self.class_sum_ = np.zeros((2, d))
        self.class_sxx_ = np.zeros((2, d, d))
        self.t_ = 0

    def _covariances(self, rows):
        """The statistics for this call: written in place in a fresh call; pending
        (committed after the call) or journaled when a fitted model continues."""
        stats = open_class_sums(self)
        tx = self._tx
        d = self._model_features()
        if tx.fresh:
            return Covariances(stats, self.class_sxx_)
        if stored_entries(rows) <= PENDING_SHARE * d * d:
            return Covariances(stats, self.class_sxx_, pending=True)
        return Covariances(stats, self.class_sxx_, tx.journal(self.class_sxx_, width=d))

    def _pass(self, rows, y, index):
        w = self._open_weights()
        cov = self._covariances(rows)
        opauc_steps(rows, y, w, cov, self._step(), self.lam_)
        if cov.pending:
            self._tx.defer(cov.commit)
        self._store_weights(w)
        self.t_ += rows.n_rows

    def covariance(self, cls):
        """The class covariance ``S`` of Gao et al. (2013), eq. 4, from the statistics.

        ``cls`` is 0 (negative) or 1 (positive); ``S = sum x x^T / T - c c^T``.
        """
        T = max(self.class_count_[cls], 1.0)
        c = self.class_sum_[cls] / T
        upper = np.triu(self.class_sxx_[cls])
        full = upper + upper.T - np.diag(np.diag(upper))
        return full / T - np.outer(c, c)


# How the square-loss learners refuse a broken model (a sentence of ``eta``)
_REFUSED_DOC = """
        A fit whose model does far worse than ``w = 0`` on its training rows (a
        mean pairwise square loss over 100, where ``w = 0`` has 1) raises
        ``FloatingPointError`` naming ``eta``, the model left unchanged."""

_MAX_STATE_DOC = """
    max_state_bytes : int or None, default=None
        Refuse (``ValueError``, before allocating) a model whose state would exceed
        this many bytes; None means 4 GiB."""


_TAIL_DOC = """
    verbose : int, default=0
        {verbose}
    pos_label : label or None, default=None
        Which label is positive; default the larger of the two.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,){coef}
    intercept_ : float
        ``-threshold`` of the training OPTROC point (ranks do not depend on it).
{input_attributes}"""


def tail_doc(coef="", verbose="Print one progress line per pass."):
    """The ``verbose`` / ``pos_label`` parameters and the common attributes of a
    learner docstring (``coef``: a note on ``coef_``)."""
    return docstring(_TAIL_DOC, fields={"coef": coef, "verbose": verbose,
                                        "input_attributes": INPUT_ATTRIBUTES})


_SHUFFLE = docstring(SHUFFLE_PARAMS, fields={"extra": ""})
_STREAM_TAIL = tail_doc(verbose="Print one progress line per ``fit`` / ``partial_fit`` call.")


@repeated_passes("1e-4", "-0.030", "-0.012", 7, _TABULAR_TASKS, patience=5, stall=square_stall(
    "-0.012 with 1e-3 over 2, -0.008 with 1e-5 over 2, -0.005 with 1e-4 over 5"))
class OPAUC(RepeatedPasses, _CovarianceLearner):
    __doc__ = docstring("""OPAUC: one-pass AUC optimisation with the pairwise square loss.

    Gao, Jin, Zhu & Zhou, One-Pass AUC Optimization, ICML 2013 (Sec. 3, Alg. 1).
    Each arriving ``(x_t, y_t)`` contributes the loss against every earlier row of
    the opposite class::

        L_t(w) = lam/2 ||w||^2 + sum_{{i<t, y_i != y_t}} (1 - y_t (x_t - x_i).w)^2 / (2 T_opp)

    whose gradient (eqs. 3-5) needs only the opposite class's mean ``c`` and
    covariance ``S``: ``g = lam w + S w + (k - y_t)(x_t - c)``, ``k = (x_t - c).w``.
    The step is ``w <- w - eta g``; ``L_t = 0`` (no step) until both classes were
    seen. The statistics are kept as per-class sums and sums of outer products, so
    ``g`` is exact. Per step: O(nnz^2) for the rank-1 update, O(d^2) for ``S w``
    (BLAS ``dsymv``); memory two d x d matrices (use ``opaucr`` beyond a few
    thousand features).

    ``partial_fit`` on a fitted model keeps the chunk's outer products pending
    (its rows join ``S w`` exactly as terms ``(x_k.w) x_k``) and adds them to the
    stored sums once the call has succeeded, so a small chunk never copies the
    d x d state; the iterates then differ from one ``fit`` over the concatenated
    stream by rounding only.
{_OPAUC_MERGE}

    Parameters
    ----------
    eta : float or "auto", default="auto"
        Constant step size. "auto" is ``2^-3 / s`` with ``s`` the mean squared row
        norm of the first training data (``row_scale_``). Gao et al. tune it on
        2^[-12:10] and report good results over [2^-12, 2^-4] for data scaled to
        [-1, 1]; a constant step on the square loss must stay below about
        ``1 / ||x - c||^2``, so a fixed default diverges on standardised data (rows
        of squared norm ``d``) and raw counts: measured on our benchmark sets, the
        paper-range value 2^-4 diverged on 4 of 10 standardised sets, ``2^-3 / s``
        on none. A few rows of much larger norm than the mean (heavy tails:
        outliers standardised with the rest) make even that diverge, so "auto" is
        ``2^-3 / max(s, m / 8)`` with ``m`` the largest squared row norm on dense
        input: the same where no row exceeds 8 times the mean. (Sparse rows keep
        ``2^-3 / s``: long documents are no outliers, and on news20 max-abs scaled
        ``max(s, m / 8)`` lost 0.10 AUC for OPAUCr.) On the 56 tasks of
        ``tools/tabular.py`` (1-10% positives, half with 1% of the rows scaled
        10-100x) ``2^-3 / s`` raised FloatingPointError in 59 of 280 fits and came
        0.117 AUC below LogisticRegression() on average; ``max(s, m / 8)``: no
        error, -0.029 (+0.001 on the tasks without heavy tails, -0.058 with them;
        ``m / 2`` and ``m / 4`` gave -0.032 and -0.029).{_REFUSED_DOC}
    lam : float or "auto", default="auto"
        L2 strength. "auto" is ``3e-2 s`` on rows whose mean squared entry ``s /
        d`` is at least 1/4 (standardised tabular data: 1), and ``1e-4 s`` on
        sparser rows (text: about 1e-5) (Khalid, Scalable Large Margin Pairwise Learning Algorithms, PhD
        dissertation, 2019, fixes 1e-4 for its scaled data; Gao et al. tune
        2^[-10:2]). The dense value departs from both: on small imbalanced sets
        ``1e-4 s`` barely regularises, and the objective's own minimiser
        (:meth:`solve`) over-fits. On the 54 tasks of ``tools/tabular.py`` other
        than w8a, the minimiser's mean test AUC minus LogisticRegression()'s was
        -0.014 at ``1e-4 s`` (12 tasks more than 0.05 below it), -0.005 at
        ``1e-3 s`` (9), -0.004 at ``1e-2 s`` (4), -0.003 at ``3e-2 s`` (2) and
        -0.006 at ``1e-1 s`` (3); rules in ``s / n``, ``s / n+``, ``s / d`` or the
        median squared row norm did no better (at best -0.001 with 3 tasks, or
        -0.002 with 4). Sparse rows (text) keep ``1e-4 s``: the measurements are
        on standardised tabular rows. (The rule reads ``s / d`` rather than the
        input's format, so that dense and CSR input give the same model.)
    closed_form : bool or "auto", default="auto"
        With ``n_epochs="auto"``, ``fit`` makes one pass (the statistics are exact
        after it) and ends with :meth:`solve`: ``w`` becomes the minimiser of the
        objective (the closed form Gao et al. mention and avoid for its O(d^3)
        cost). A fixed ``n_epochs`` makes that many passes and returns the online
        iterate, as ``partial_fit`` does (``n_epochs=1``: the paper's). "auto"
        is True on rows whose mean squared entry ``s / d`` is at least 1/4 (tabular
        rows, as for ``lam``) and False on sparser rows (text keeps the online
        iterate, ``O(d^2)`` per row against ``O(d^3)`` for the solve). The tabular
        default departs from the paper, which returns the last online iterate: with
        a constant step on a few hundred rows that iterate moves around the
        minimiser from pass to pass, by as much as the seed decides (on
        letter_17-150r8% of ``tools/tabular.py`` its gap to LogisticRegression()
        was -0.069, -0.035 and -0.036 with three seeds), while the minimiser does
        not depend on the order of the rows. {CLOSED_FORM}{shuffle}{_MAX_STATE_DOC}{tail}
    eta_, lam_, row_scale_ : float
        The step, L2 strength and mean squared row norm in use.
    weights_ : ndarray of shape (n_features, 1)
        The weight primitive's state (``coef_ = weights_scale_ * weights_[:, 0]``).
    class_count_ : ndarray of shape (2,)
        Rows seen per class (index 0 negative, 1 positive).
    class_sum_ : ndarray of shape (2, n_features)
    class_sxx_ : ndarray of shape (2, n_features, n_features)
        Sum of ``x x^T`` per class (upper triangle only).
    t_ : int
        Rows processed.
    closed_form_ : float
        1.0 where ``fit`` ends with :meth:`solve`, else 0.0.
    """, fields=dict(_OPAUC_MERGE=_OPAUC_MERGE, _REFUSED_DOC=_REFUSED_DOC, shuffle=_SHUFFLE,
                     _MAX_STATE_DOC=_MAX_STATE_DOC, tail=_STREAM_TAIL,
                     CLOSED_FORM=_CLOSED_FORM_MEASURED))

    _aucopt_name = "opauc"
    traits = replace(_CovarianceLearner.traits, family="square loss, one pass (covariances)",
                     limits="dense or sparse, d up to ~11k (two d x d sums)")
    _state = weights_state(1)
    _auto_params = {**_OPAUC_STEP,
                    "closed_form": lambda self, s, rows: float(tabular_rows(s, rows))}

    def __init__(self, eta="auto", lam="auto", closed_form="auto", n_epochs="auto", tol=1e-4,
                 n_iter_no_change=5, max_epochs=50, shuffle=True,
                 random_state=None, max_state_bytes=None, verbose=0, pos_label=None):
        self.eta = eta
        self.lam = lam
        self.closed_form = closed_form
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.max_state_bytes = max_state_bytes
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        super()._check_params()
        auto_or_positive("lam", self.lam, allow_zero=True)
        value = self.closed_form
        if not (value == "auto" if isinstance(value, str) else value in (True, False)):
            raise ValueError(f"closed_form must be True, False or 'auto', got {value!r}")

    def _stall_rule(self):
        # with closed_form, n_epochs="auto" stops after the first pass (the solve
        # needs only its statistics)
        return _FirstPass() if self._closes() else driver.Stall(
            self.tol, self.n_iter_no_change)

    def _closes(self):
        return bool(self.closed_form_) and self.n_epochs == "auto"

    def _train(self, rows, y):
        super()._train(rows, y)
        if self._closes():
            self._solve()
            driver.replaced_model(self, rows, y)
            self.stop_reason_ = "closed_form"

    def search_space(self, X):
        """The grid :class:`aucopt.model_selection.GridSearch` tries by default on
        ``X``: ``eta`` in 2^[-7:1:2] in units of the row scale, and ``lam`` at 0.1,
        1 and 10 times its "auto" value (1e-5 to 1e-3 times the row scale on text,
        3e-3 to 0.3 on tabular rows; Gao et al. tune eta on 2^[-12:10], lam on
        2^[-10:2])."""
        s = search_scale(self, X)
        lam = auto_value(self, "lam", X)
        return {"eta": [2.0 ** k / s for k in range(-7, 2, 2)],
                "lam": [c * lam for c in (0.1, 1.0, 10.0)]}

    def _step(self):
        return GradientStep(self.eta_)


@repeated_passes("1e-4", "-0.024", "-0.011", 7, _TABULAR_TASKS, patience=5, stall=square_stall(
    "-0.007 with 1e-3 over 2, -0.004 with 1e-5 over 2, -0.003 with 1e-4 over 5"))
class AdaOAM(RepeatedPasses, _CovarianceLearner):
    __doc__ = docstring("""AdaOAM: OPAUC's gradient with an AdaGrad diagonal step and a projection.

    Ding, Zhao, Hoi & Ong, An Adaptive Gradient Method for Online AUC Maximization,
    AAAI 2015. With ``g_t`` OPAUC's exact gradient (:class:`OPAUC`)::

        G <- G + g_t^2 ;  H = delta + sqrt(G)         (elementwise)
        w <- w - eta g_t / H ;  w <- w * min(1, (1/sqrt(lam)) / ||w||)

    The projection is Euclidean (a projection in the ``H``-metric has no closed
    form for a ball), and only the running sum of squared
    gradients is stored. Per step O(d^2) (covariance product), memory two d x d
    matrices; a ``partial_fit`` on a fitted model keeps its covariance updates
    pending as :class:`OPAUC` does.
{_ADAOAM_MERGE}

    Parameters
    ----------
    eta : float or "auto", default="auto"
        Step size; Khalid (Scalable Large Margin Pairwise Learning Algorithms, PhD
        dissertation, 2019) tunes it on 2^[-10:10] by 3-fold CV. "auto" is
        ``0.1 / sqrt(s)`` with ``s`` the mean squared row norm: AdaGrad's steps do
        not grow with the gradient, so for rows scaled by ``c`` the step that lets
        ``w`` scale by ``1/c`` is ``eta / c`` (0.1 for unit rows).{_REFUSED_DOC}
    lam : float or "auto", default="auto"
        L2 strength of the loss and radius ``1/sqrt(lam)`` of the ball. "auto" is
        OPAUC's: ``3e-2 s`` where ``s / d >= 1/4`` (tabular rows), ``1e-4 s``
        (Khalid's 1e-4 for scaled data) on sparser rows (see :class:`OPAUC`).
    delta : float, default=0.5
        Smoothing of the AdaGrad denominator (Khalid 2019, Sec. 4.5.2).{shuffle}{_MAX_STATE_DOC}{tail}
    eta_, lam_, row_scale_ : float
        The step, L2 strength and mean squared row norm in use.
    class_count_, class_sum_, class_sxx_, t_
        As :class:`OPAUC`.
    weights_ : ndarray of shape (n_features, 2)
        Column 0 is ``w`` (times ``weights_scale_``), column 1 the running sum of
        squared gradients ``G``.
    """, fields=dict(_ADAOAM_MERGE=_ADAOAM_MERGE, _REFUSED_DOC=_REFUSED_DOC, shuffle=_SHUFFLE,
                     _MAX_STATE_DOC=_MAX_STATE_DOC, tail=_STREAM_TAIL))

    _aucopt_name = "adaoam"
    traits = replace(_CovarianceLearner.traits,
                     family="square loss, one pass (covariances, AdaGrad)",
                     limits="dense or sparse, d up to ~11k (two d x d sums)")
    _columns = 2
    _state = weights_state(2)
    _merge_rules = {"w_col1": "sum"}
    _auto_params = {"eta": lambda self, s, rows: 0.1 / math.sqrt(s),
                    "lam": lambda self, s, rows: square_lam(s, rows, 1e-4)}

    def __init__(self, eta="auto", lam="auto", delta=0.5, n_epochs="auto", tol=1e-4,
                 n_iter_no_change=5, max_epochs=50, shuffle=True,
                 random_state=None, max_state_bytes=None, verbose=0, pos_label=None):
        self.eta = eta
        self.lam = lam
        self.delta = delta
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.max_state_bytes = max_state_bytes
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        super()._check_params()
        auto_or_positive("lam", self.lam)
        check_positive("delta", self.delta)

    def search_space(self, X):
        """The grid :class:`aucopt.model_selection.GridSearch` tries by default on
        ``X``: ``eta`` in 0.1 * 2^[-4:4:2] / sqrt(s) (Khalid tunes 2^[-10:10])."""
        s = search_scale(self, X)
        return {"eta": [0.1 * 2.0 ** k / math.sqrt(s) for k in range(-4, 5, 2)]}

    def _step(self):
        return AdaGradStep(self.eta_, float(self.delta), 1.0 / math.sqrt(self.lam_))

    def _check_state(self):
        super()._check_state()
        if self.weights_[:, 1].min() < 0.0:
            raise ValueError("weights_[:, 1] (sums of squared gradients) holds negative values")


# --------------------------------------------------------------------------- OPAUCr


class _IterateMean:
    """The running sum of OPAUCr's iterates over a fit (``average_passes``): a
    snapshot every ``every`` rows of a pass (:data:`AVERAGE_EVERY` times ``d / z``,
    ``z`` the mean non-zero entries of a row, at least :data:`AVERAGE_EVERY`) and one
    at the end of each pass."""

    def __init__(self, rows):
        entries = rows.n_rows * rows.n_features
        self.every = max(AVERAGE_EVERY, math.ceil(
            AVERAGE_EVERY * entries / max(nonzero_entries(rows), 1)))
        self.total, self.count, self.passes = None, 0, 0

    def add(self, learner):
        """Add the learner's iterate (its weights stored)."""
        learner._invalidate()
        coef = learner._coef()
        self.total = coef if self.total is None else self.total + coef
        self.count += 1


@repeated_passes("1e-4", "-0.031", "-0.015", 7, _TABULAR_TASKS, patience=5, stall=square_stall(
    "-0.016 with 1e-3 over 2 and -0.013 with 1e-5 or 1e-4 over 5, while the rule read "
    "the penalty of the sparse part ``u`` of ``w`` only (it then stopped after 6 passes "
    "on every task; on satimage-154r5% at 3.1 where the first pass gave 0.75)",
    "mean gap -0.0047 (+0.0014 on the tasks without heavy tails, -0.0109 with them; "
    "-0.0131 with the penalty of ``u`` and the last iterate), 2 tasks more than 0.05 "
    "below (5), no FloatingPointError, 68 s of CPU (88)"))
class OPAUCr(RepeatedPasses, _Solvable, _OnePass):
    __doc__ = docstring("""OPAUCr: OPAUC with randomised low-rank covariance sketches.

    Gao, Jin, Zhu & Zhou, One-Pass AUC Optimization, ICML 2013 (Sec. 3, eqs. 6-11).
    The identity in ``S = (1/T)(X - c 1^T) I (X - c 1^T)^T`` is replaced by ``R R^T``
    with ``tau`` Gaussian columns, giving per class the sketch ``Z = sum_i x_i r_i^T``
    (``r_i ~ N(0, I/tau)``, so that ``E[R R^T] = I``) and ``q = sum_i r_i``, and the
    covariance estimate ``S_hat w = Zc (Zc^T w) / T`` with the centred sketch
    ``Zc = Z - c q^T``; the step is OPAUC's with ``S_hat`` for ``S``. (The paper's
    ``1/tau`` scaling and its centring ``c_hat c_hat^T`` are each off by a factor;
    these are the consistent versions.)

    Sparse-efficient form (same iterates up to rounding): the weight vector is kept
    as ``w = u + Z_- a_- + Z_+ a_+ + b_- s_- + b_+ s_+`` (``s`` = class sums, ``u`` a
    scaled sparse vector), which the OPAUC step preserves, together with the
    tau x tau Gram matrices ``Z^T Z`` and the products ``Z^T u``, ``Z^T s``. A step
    costs O(nnz tau + tau^2): the sketch update is O(nnz tau) and the gradient never
    touches a dense d-vector or the d x tau sketch as a whole. ``coef_`` (O(d tau),
    BLAS ``dgemv``) is formed only when read; scores are O(nnz tau) per row.
{_OPAUCR_MERGE}

    Parameters
    ----------
    tau : int, default=50
        Sketch rank, at most {MAX_TAU} (Gao et al., Sec. 5.2; Khalid 2019, Sec. 4.5.2).
    eta : float or "auto", default="auto"
        Constant step size; as OPAUC ("auto": ``2^-3 / max(s, m / 8)`` on dense
        rows, ``m`` the largest squared row norm, ``2^-3 / s`` on sparse rows; on the 56 tasks of ``tools/tabular.py``: no
        FloatingPointError where ``2^-3 / s`` raised it in 57 of 280 fits, mean AUC
        0.030 below LogisticRegression() against 0.117).{_REFUSED_DOC}
    lam : float or "auto", default="auto"
        L2 strength; as OPAUC ("auto": ``3e-2 s`` where ``s / d >= 1/4``,
        ``1e-4 s`` on sparser rows). ``eta * lam`` must be < 1.
    average_passes : bool, default=True
        ``fit`` returns the mean of its iterates: a snapshot every ``{EVERY} d / z``
        rows of a pass (``z`` the mean non-zero entries of a row; {EVERY} rows on
        dense tables), so that the snapshots, O(d tau) each, add at most about
        1/{EVERY} to a pass (on text that leaves the ends of the passes), and one at
        the end of each pass. A single pass is returned as it is. A departure from
        the paper, which returns the last iterate: with a constant step and a sketch
        of few rows that iterate moves around the minimiser from pass to pass. {AVERAGED}
        Where two ``d x d`` sums fit in memory, ``aucopt.get("opauc")`` solves for
        that minimiser and does not depend on the seed. ``partial_fit`` continues
        from the mean. False returns the last iterate.{sketch_shuffle}{_MAX_STATE_DOC}{tail}
    eta_, lam_, row_scale_ : float
        The step, L2 strength and mean squared row norm in use.
    t_ : int
        Rows processed.
    weights_ : ndarray of shape (n_features, 1)
        ``u = weights_scale_ * weights_[:, 0]``, the sparse part of ``w``.
    sketch_ : ndarray of shape (2, n_features, tau)
        ``Z`` per class (index 0 negative, 1 positive).
    sketch_q_ : ndarray of shape (2, tau)
        ``q`` per class.
    class_count_ : ndarray of shape (2,)
    class_sum_ : ndarray of shape (2, n_features)
        ``s`` per class.
    sketch_coef_ : ndarray of shape (2, tau)
        ``a`` per class.
    sum_coef_ : ndarray of shape (2,)
        ``b`` per class.
    sketch_w_ : ndarray of shape (2, tau)
        ``Z_c^T u``.
    sum_w_ : ndarray of shape (2,)
        ``s_c . u``.
    sketch_sum_ : ndarray of shape (2, 2, tau)
        ``Z_c^T s_e`` at ``[c, e]``.
    sketch_gram_ : ndarray of shape (2, 2, tau, tau)
        ``Z_c^T Z_e`` at ``[c, e]``.
    sum_gram_ : ndarray of shape (2, 2)
        ``s_c . s_e``.
    random_state_ : numpy Generator
    """, fields=dict(_OPAUCR_MERGE=_OPAUCR_MERGE, MAX_TAU=MAX_TAU, _REFUSED_DOC=_REFUSED_DOC,
                     AVERAGED=_AVERAGED_MEASURED, EVERY=AVERAGE_EVERY,
                     _MAX_STATE_DOC=_MAX_STATE_DOC, tail=_STREAM_TAIL,
                     sketch_shuffle=docstring(SHUFFLE_PARAMS, fields={"extra": (
                         " and of the Gaussian sketch draws (one tau-vector per row, in "
                         "the order the rows are processed)")})))

    _aucopt_name = "opaucr"
    traits = replace(_OnePass.traits, **_SOLVABLE, stream_segments=True,
                     family="square loss, one pass (low-rank sketch)",
                     limits="dense or sparse, any d; O(nnz tau + tau^2) per row")
    _state = {
        **weights_state(1),
        **class_sum_state(),
        "sketch_": Array("f8", (2, "d", "tau")),
        "sketch_q_": Array("f8", (2, "tau")),
        "sketch_coef_": Array("f8", (2, "tau")),
        "sum_coef_": Array("f8", (2,)),
        "sketch_w_": Array("f8", (2, "tau")),
        "sum_w_": Array("f8", (2,)),
        "sketch_sum_": Array("f8", (2, 2, "tau")),
        "sketch_gram_": Array("f8", (2, 2, "tau", "tau")),
        "sum_gram_": Array("f8", (2, 2)),
        "random_state_": Generator(),
    }
    _merge_rules = {"class_count_": "sum", "class_sum_": "sum", "sketch_": "sum",
                    "sketch_q_": "sum", "random_state_": "last"}
    # the tau-sized state, backed up whole by a call (O(tau^2))
    _small = ("sketch_q_", "sketch_coef_", "sum_coef_", "sketch_w_", "sum_w_",
              "sketch_sum_", "sketch_gram_", "sum_gram_")

    _auto_params = _OPAUC_STEP

    def __init__(self, tau=50, eta="auto", lam="auto", average_passes=True, n_epochs="auto",
                 tol=1e-4, n_iter_no_change=5, max_epochs=50, shuffle=True,
                 random_state=None, max_state_bytes=None, verbose=0, pos_label=None):
        self.tau = tau
        self.eta = eta
        self.lam = lam
        self.average_passes = average_passes
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.max_state_bytes = max_state_bytes
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        super()._check_params()
        check_count("tau", self.tau, maximum=MAX_TAU)
        auto_or_positive("lam", self.lam, allow_zero=True)
        check_flag("average_passes", self.average_passes)
        if not isinstance(self.eta, str) and not isinstance(self.lam, str) \
                and self.eta * self.lam >= 1.0:
            raise ValueError(f"eta * lam must be < 1 (the step shrinks w by 1 - eta lam), "
                             f"got eta={self.eta!r}, lam={self.lam!r}")
        check_max_state_bytes(self)

    search_space = OPAUC.search_space

    def _check_resumable(self):
        tau = self.sketch_.shape[2]
        if tau != self.tau:
            raise ValueError(f"tau={self.tau} differs from the fitted sketch rank {tau}; "
                             "refit to change it")

    def _state_dims(self):
        return {**super()._state_dims(), "tau": int(self.tau)}

    def _init_state(self, n_features):
        d, tau = n_features, int(self.tau)
        # random_state is checked where it is used (not by every partial_fit: building
        # a generator from a seed costs as much as a one-row step)
        self.random_state_ = check_random_state(self.random_state)
        check_state_bytes(8 * (2 * d * tau + 3 * d + 4 * tau * tau + 8 * tau + 8),
                          f"OPAUCr's two {d} x {tau} sketches", self.max_state_bytes,
                          "lower tau, or raise max_state_bytes")
        self._init_weights(d)
        self.intercept_ = 0.0
        self.class_count_ = np.zeros(2)
        self.class_sum_ = np.zeros((2, d))
        self.sketch_ = np.zeros((2, d, tau))
        self.sketch_q_ = np.zeros((2, tau))
        self.sketch_coef_ = np.zeros((2, tau))
        self.sum_coef_ = np.zeros(2)
        self.sketch_w_ = np.zeros((2, tau))
        self.sum_w_ = np.zeros(2)
        self.sketch_sum_ = np.zeros((2, 2, tau))
        self.sketch_gram_ = np.zeros((2, 2, tau, tau))
        self.sum_gram_ = np.zeros((2, 2))
        self.t_ = 0

    def _sketch(self, stats, journal_sketch=None, arrays=None):
        """The :class:`Sketch` over the learner's arrays (or ``arrays``)."""
        a = arrays or self.__dict__
        return Sketch(stats, dict(sketch=a["sketch_"], q=a["sketch_q_"], coef=a["sketch_coef_"],
                                  sum_coef=a["sum_coef_"], sketch_w=a["sketch_w_"],
                                  sum_w=a["sum_w_"], sketch_sum=a["sketch_sum_"],
                                  gram=a["sketch_gram_"], sum_gram=a["sum_gram_"]),
                      journal=journal_sketch)

    def _view(self):
        """The sketch for reading (scores, ``coef_``); read-only arrays (a model
        unpickled from a memmap) are read through copies."""
        spec = self._state_spec()
        a = {k: writable(v) for k, v in self.__dict__.items()
             if k in spec and isinstance(v, np.ndarray)}
        return self._sketch(ClassSums(a["class_count_"], a["class_sum_"]), arrays=a)

    def _draws(self, rng, n_rows):
        """The Gaussian vectors of ``n_rows`` rows from ``rng``: ``(start, rho)``
        (rows ``start .. start + len(rho) - 1``) in blocks of bounded memory (the
        stream does not depend on them)."""
        tau = int(self.tau)
        block = max(1, min(DRAW_BLOCK, (1 << 22) // tau))
        scale = math.sqrt(tau)
        for start in range(0, n_rows, block):
            stop = min(start + block, n_rows)
            yield start, rng.standard_normal((stop - start, tau)) / scale

    def _segment_streams(self, sizes):
        """Generators for consecutive segments of ``sizes`` rows of one pass: the
        one of segment ``k`` starts where the draws of the rows before it leave
        the stream of ``random_state`` (so models trained on the segments hold the
        parts of one pass's sketch)."""
        rng = check_random_state(copy.deepcopy(self.random_state))
        streams = []
        for n_rows in sizes:
            streams.append(copy.deepcopy(rng))
            for _ in self._draws(rng, int(n_rows)):
                pass
        return streams

    def _pass(self, rows, y, index):
        tx = self._tx
        tau = int(self.tau)
        for name in self._small:
            tx.backup(self.__dict__[name])
        w = self._open_weights()
        sk = self._sketch(open_class_sums(self), tx.journal(self.sketch_, width=tau))
        mean = self.__dict__.get("_iterate_mean")  # fit's, with average_passes
        every = rows.n_rows if mean is None else mean.every
        for first, rho in self._draws(self.random_state_, rows.n_rows):
            start, stop = first, first + rho.shape[0]
            while start < stop:  # the block's rows, cut at the snapshots
                cut = min(stop, (start // every + 1) * every)
                opaucr_steps(rows, y, start, rho[start - first:cut - first], w, sk,
                             self.eta_, self.lam_)
                start = cut
                if cut < rows.n_rows and cut % every == 0:
                    self._store_weights(w)
                    mean.add(self)
        self._store_weights(w)
        self.t_ += rows.n_rows
        if mean is not None:
            mean.add(self)
            mean.passes += 1

    def _train(self, rows, y):
        if not self.average_passes:
            return super()._train(rows, y)
        self._iterate_mean = mean = _IterateMean(rows)
        try:
            super()._train(rows, y)
            if mean.passes > 1:
                self._set_coef(mean.total / mean.count)
                driver.replaced_model(self, rows, y)
        finally:
            del self._iterate_mean

    def _set_coef(self, w):
        """Write ``w`` as the sparse part ``u`` (``a = b = 0``), with the products
        the steps read (O(d tau))."""
        self._set_weights(w)
        self.sketch_coef_, self.sum_coef_ = np.zeros_like(self.sketch_coef_), np.zeros(2)
        self.sketch_w_ = np.einsum("cdt,d->ct", self.sketch_, w)
        self.sum_w_ = self.class_sum_ @ w
        self._invalidate()

    def _coef(self):
        return sketch_coef(self._weights(), self._view())

    def _raw_scores(self, rows):
        return sketch_scores(rows, self._weights(), self._view())

    def _weight_norm(self):
        return None  # ||w|| of the factored form is O(d tau): scores are checked instead

    def _coef_norms(self):
        # the objective's penalty and the finiteness check are those of the whole
        # w = u + Z_- a_- + Z_+ a_+ + b_- s_- + b_+ s_+ (weights_ holds only u):
        # O(d tau) through coef_, once per pass
        coef = self.coef_
        return float(coef @ coef), float(np.abs(coef).sum())

    def _merge_check(self, models, base):
        super()._merge_check(models, base)
        seeds = [m.random_state for m in models
                 if isinstance(m.random_state, (int, np.integer))]
        if len(set(seeds)) < len(seeds):
            raise ValueError(
                "cannot merge OPAUCr models seeded with the same random_state: each drew "
                "the same Gaussian vectors for its rows, and their sketches would add up "
                "to a biased one. Give each part its own seed (independent draws), or "
                "train with aucopt.dask.fit (consecutive segments of one stream: the "
                "sketch of one pass over all of the data)")

    def _solve(self):
        """The minimiser with the sketched covariances ``S_hat_c = Zc Zc^T / T_c``
        (Woodbury in the 2 tau columns of ``U = [Zc_- / sqrt(T_-), Zc_+ /
        sqrt(T_+)]``), written in the factored form ``w = Z_- a_- + Z_+ a_+ + b_-
        s_- + b_+ s_+`` (``u = 0``); the products the steps read are recomputed
        from ``Z`` and ``s`` (O(d tau^2))."""
        T, m = self._solve_means()
        lam = self.lam_
        Z, q, s = self.sketch_, self.sketch_q_, self.class_sum_
        tau = Z.shape[2]
        gram = np.empty((2, 2, tau, tau))
        gram[0, 0], gram[1, 1] = Z[0].T @ Z[0], Z[1].T @ Z[1]
        gram[0, 1] = Z[0].T @ Z[1]
        gram[1, 0] = gram[0, 1].T
        zs = np.stack([np.stack([Z[c].T @ s[e] for e in range(2)]) for c in range(2)])
        ss = s @ s.T
        r = 1.0 / np.sqrt(T)
        sign = np.array([-1.0, 1.0])  # delta = s_+ / T_+ - s_- / T_-
        # U_c^T U_e with Zc_c = Z_c - m_c q_c^T: Z_e^T m_c = zs[e, c] / T_c, m_c.m_e = ss/(T T)
        B = np.empty((2 * tau, 2 * tau))
        for c in range(2):
            for e in range(2):
                B[c * tau:(c + 1) * tau, e * tau:(e + 1) * tau] = r[c] * r[e] * (
                    gram[c, e] - np.outer(q[c], zs[e, c] / T[c])
                    - np.outer(zs[c, e] / T[e], q[e])
                    + ss[c, e] / (T[c] * T[e]) * np.outer(q[c], q[e]))
        # U_c^T delta = (Z_c^T delta - q_c (m_c.delta)) / sqrt(T_c)
        g = np.concatenate([r[c] * ((sign / T) @ zs[c] - q[c] * (ss[c] @ (sign / T)) / T[c])
                            for c in range(2)])
        B[np.diag_indices_from(B)] += lam
        beta = cho_solve(cho_factor(B), g).reshape(2, tau)
        # w = A^-1 delta / (1 + delta^T A^-1 delta), A = lam I + U U^T (Woodbury)
        denom = lam + (sign / T) @ ss @ (sign / T) - g @ beta.ravel()
        self.sketch_coef_ = -beta * r[:, None] / denom
        self.sum_coef_ = (sign / T + (q * beta).sum(1) * r / T) / denom
        self._set_weights(np.zeros(s.shape[1]))
        self.sketch_w_, self.sum_w_ = np.zeros((2, tau)), np.zeros(2)
        self.sketch_sum_, self.sketch_gram_, self.sum_gram_ = zs, gram, ss

    def covariance_product(self, w, cls):
        """``S_hat w`` of class ``cls`` (0 negative, 1 positive) from the sketch
        (Gao et al. 2013, eqs. 10-11, with the centred sketch)."""
        T = max(self.class_count_[cls], 1.0)
        c = self.class_sum_[cls] / T
        Z, q = self.sketch_[cls], self.sketch_q_[cls]
        u = Z.T @ w - q * (c @ w)
        return (Z @ u - c * (q @ u)) / T


# --------------------------------------------------------------------------- Uni-Exp


# eta="auto" tries the steps 4^-j / s from j = _UNIEXP_FIRST, at most _UNIEXP_TRIALS of
# them (down to 4^-15 / s, about 1e-9 / s)
_UNIEXP_FIRST = 3
_UNIEXP_TRIALS = 13
# the exponent of the former rule (far from overflow): the largest clip
_UNIEXP_MAX_CLIP = 30.0


def _uniexp_loss(margins, clip):
    """Uni-Exp's loss of the margins ``m = -y w.x``: ``exp(m)`` up to ``m = clip``,
    then its tangent (the steps' clipped exponent is its derivative)."""
    top = np.minimum(margins, clip)
    return np.exp(top) * (1.0 + (margins - top))


@repeated_passes("1e-4", "-0.0143", "+0.0047 (plain / heavy-tailed tasks -0.0068 / -0.0219 "
                  "and -0.0013 / +0.0106; about 25 passes)", "only one of the",
                  stall="(With the default ``clip=0``; ``clip=30`` and ``n_epochs=1`` is the "
                  "reconstruction's single pass.) Its stall rule is ``tol=1e-4`` over "
                  "``n_iter_no_change=2`` passes: 1e-3 over 2 gave +0.0044 (3 tasks), 3e-4 "
                  "and 1e-5 over 2 +0.0046 (1), 1e-4 over 3 +0.0055 (1) in 26 passes, 1e-3 "
                  "over 5 +0.0057 (3).")
class UniExp(RepeatedPasses, _OnePass):
    __doc__ = docstring("""Online Uni-Exp: weighted univariate exponential loss by online gradient descent.

    The pointwise baseline of Gao et al. (2013), Tables 2 and 4, after Kotlowski,
    Dembczynski & Huellermeier, Bipartite Ranking through Minimization of Univariate
    Loss, ICML 2011. None of the papers aucopt follows defines its online form
    beyond "optimizes the (weighted) univariate exponential loss"; this is a
    reconstruction, minimising ``(1/n+) sum_pos L(-w.x) + (1/n-) sum_neg L(w.x)``
    online, ``L(m) = exp(m)`` the exponential loss up to ``m = clip`` and its tangent
    beyond (see ``clip``)::

        T_y <- T_y + 1 ;  w <- w + eta (t / T_y) y exp(min(-y w.x, clip)) x

    (``t / T_y`` is the inverse running class prior). O(nnz) per step.
{_UNIEXP_MERGE}

    Parameters
    ----------
    eta : float or "auto", default="auto"
        Step size; Gao et al. tune 2^[-12:10], Khalid (2019) 2^[-10:10]. "auto" is
        the largest stable step up to ``2^-6.5 / s``, found on the first training
        data: the steps ``4^-j / s`` (``s`` the mean squared row norm; ``j = {first},
        {second}, ...``, at most {_UNIEXP_TRIALS} of them) are tried in turn, each as
        a whole pass in the order the fit itself takes, until one does not diverge
        and neither does that one over ``sqrt(2)``, the step in use (the exponential
        loss does not make stability monotone in the step: the untried smaller step
        diverged in 7 of the 280 fits of ``tools/tabular.py``, on heavy-tailed rows;
        the fit's pass is now one that was tried). With ``clip=30`` the exponential loss multiplies a
        violated row's step by up to ``exp(30)``, so the largest stable step depends
        on how the rows overlap and not only on their norms: measured on 28
        benchmark forms (4 text sets as TF-IDF, max-abs scaled and binary rows, 16
        dense sets standardised), it lies between ``2^-2 / s`` (text) and
        ``2^-15 / s`` (shuttle), and on some small sets the AUC keeps rising up to
        it (vehicle: 0.945 there, 0.862 at a quarter of it). This rule, then
        searched from ``j = 0`` with one pass, was within
        0.021 AUC of the best of ``2^[-16:0:2] / s`` on all of them, while no
        power law in the row norms (mean, largest, 99th percentile), ``n``, ``d``
        and the density passed on all of them (the best lost 0.086 somewhere) and
        the former ``2^-4 / max ||x||^2`` lost 0.13 on vehicle (0.748 against
        0.877) and on sector as binary rows (0.779 against 0.904), 0.06-0.07 on
        news20 max-abs scaled and binary. A distributed fit (:func:`aucopt.dask.fit`), which resolves
        its parameters from statistics before any pass, uses ``2^-4 / max
        ||x||^2``. With ``clip=30``, on a ``partial_fit`` stream sorted by label
        the step is found on rows of one class, and the first row of the other class then steps
        ``t / T_y`` (the rows so far) times further: such a stream may diverge
        (``FloatingPointError``) and needs a smaller ``eta`` (0.01 on the
        contract data, where "auto" diverged). With ``norm_cap`` (the default) the
        trial steps are ``4^-j / c`` with ``c = norm_cap_`` instead of ``s``. The
        search started at ``j = 0`` for the single pass of the exponential loss
        (``clip=30``); with the default ``clip=0`` no step diverges and the first
        trial is the step: ``2^-6.5 / c``. Measured with the default ``clip`` and
        passes on the 56 tasks (see ``n_epochs``), ``2^-k / c`` for k = 5.5 / 6 /
        6.5 / 7 gave a mean test AUC gap to LogisticRegression() of +0.0043 /
        +0.0043 / +0.0044 / +0.0031 with ``tol=1e-3`` (4 / 2 / 3 / 3 tasks more
        than 0.05 below it) and +0.0041 / +0.0047 / +0.0033 for k = 6 / 6.5 / 7
        with ``tol=1e-4`` (2 / 1 / 2 tasks). With ``clip=30`` and one pass,
        starting the search at ``j = 3`` rather than 0 moved the gap from -0.0131
        to -0.0103 (6 tasks both).
    norm_cap : float or "auto", default="auto"
        A row's step is multiplied by ``min(1, c / ||x||^2)``: rows longer than
        ``sqrt(c)`` move ``w`` no further than a row of that length. "auto" is the
        75th percentile of the squared row norms of the first training data (the
        mean ``s`` for a distributed fit, whose statistics have no quantiles); 0
        leaves every step as above (the reconstruction). A departure for heavy
        tails: after standardising, a few outlier rows have squared norms 100
        times the rest, their exponential loss makes every large step diverge,
        and the stable step the search finds is too small for the other rows.
        Measured on the 56 tasks of ``tools/tabular.py``: mean test AUC against
        LogisticRegression() -0.077 without a cap (heavy-tailed tasks -0.143,
        the others -0.011; 22 tasks more than 0.05 below it), -0.013 with "auto"
        (-0.016 / -0.010; 6 tasks), -0.022 with the median as the cap and
        ``s`` as the search's scale, -0.016 / -0.025 with the 90th / 95th
        percentile. Not better everywhere: on subsamples of the bundled spambase
        and dna_ei (400 rows, 5% positives, 4 rows scaled 10-100x) the 3-fold
        test AUC fell from 0.899 / 0.880 to 0.871 / 0.844 (ionosphere rose from
        0.774 to 0.859).
    clip : float in [0, 30], default=0.0
        The exponent of a step is ``min(-y w.x, clip)``: the loss is the
        exponential ``exp(m)`` of the margin ``m = -y w.x`` up to ``m = clip`` and
        its tangent ``exp(clip) (1 + m - clip)`` beyond, so that a misranked row's
        gradient is at most ``exp(clip)`` times that of a row on the boundary. 30
        is the reconstruction (its exponent only kept from overflow), 0 the
        default: a departure for heavy tails and for repeated passes. The
        exponential loss lets a few misranked rows, outliers scaled 10-100x
        before standardising, weigh up to ``exp(30)`` times the rest: over
        repeated passes they take the model over (letter_1 with outliers fell
        0.32 AUC below LogisticRegression()), and with one pass the stable-step
        search settles on a step too small for the other rows. At 0 the loss is
        convex, continuously differentiable and of bounded gradient, as the
        logistic loss. On the 56 tasks of ``tools/tabular.py`` (1-10% positives,
        half with 1% of the rows scaled 10-100x; stratified 5-fold CV, rows
        standardised), mean test AUC minus
        LogisticRegression()'s (plain / heavy-tailed tasks; tasks more than 0.05
        below it), with ``tol=1e-3``: ``clip=30`` one pass -0.0103 (-0.0021 /
        -0.0184; 6), repeated passes -0.0119 (-0.0001 / -0.0237; 6); ``clip=0``
        one pass -0.0143 (-0.0068 / -0.0219; 9), repeated passes +0.0044
        (-0.0014 / +0.0101; 3). With the search from ``j = 0``, which then takes
        ``2^-0.5 / c`` (too large a step), clips of 0 / 1 / 2 / 4 gave -0.025 /
        -0.050 / -0.066 / -0.075 with repeated passes.{shuffle}{tail}
    eta_, norm_cap_, row_scale_ : float
        The step, the cap and the mean squared row norm in use.
    t_ : int
        Rows processed.
    weights_ : ndarray of shape (n_features, 1)
        The weight primitive's state.
    class_count_ : ndarray of shape (2,)
        Rows seen per class.
    """, fields=dict(_UNIEXP_MERGE=_UNIEXP_MERGE, _UNIEXP_TRIALS=_UNIEXP_TRIALS,
                     first=_UNIEXP_FIRST, second=_UNIEXP_FIRST + 1,
                     shuffle=_SHUFFLE, tail=_STREAM_TAIL))

    _aucopt_name = "uni_exp"
    traits = replace(_OnePass.traits, family="pointwise exponential loss, one pass",
                     limits="dense or sparse, any d; O(nnz) per row", merge="average")
    _state = {**weights_state(1), "class_count_": Array("f8", (2,), low=0.0)}
    _merge_rules = {"w": "mean", "class_count_": "sum"}
    # the value of "auto" without a pass (aucopt.dask); fit and the first
    # partial_fit search the largest stable step (_stable_eta)
    _auto_params = {"eta": lambda self, s, rows: 2.0 ** -4 / (rows.max_sqnorm() or 1.0),
                    "norm_cap": lambda self, s, rows: auto_norm_cap(rows, s)}

    def __init__(self, eta="auto", norm_cap="auto", clip=0.0, n_epochs="auto", tol=1e-4,
                 n_iter_no_change=2, max_epochs=50, shuffle=True, random_state=None,
                 verbose=0, pos_label=None):
        self.eta = eta
        self.norm_cap = norm_cap
        self.clip = clip
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        super()._check_params()
        auto_or_positive("norm_cap", self.norm_cap, allow_zero=True)
        check_positive("clip", self.clip, allow_zero=True)
        if self.clip > _UNIEXP_MAX_CLIP:
            raise ValueError(f"clip must be at most {_UNIEXP_MAX_CLIP:g}, got {self.clip!r}")

    def search_space(self, X):
        """The grid :class:`aucopt.model_selection.GridSearch` tries by default on
        ``X``: ``eta`` in 2^[-16:0:2] / s, ``s`` the mean squared row norm (steps
        above the largest stable one raise ``FloatingPointError`` and are passed
        over)."""
        s = search_scale(self, X)
        return {"eta": [2.0 ** k / s for k in range(-16, 1, 2)]}

    def _resolve_auto(self, rows):
        # a model given eta_ before its first data (aucopt.dask) keeps it
        search = "row_scale_" not in self.__dict__ and isinstance(self.eta, str)
        super()._resolve_auto(rows)
        self._search = search

    def _prepare(self, rows, y):
        super()._prepare(rows, y)
        if self.__dict__.pop("_search", False):
            self.eta_ = self._stable_eta(rows, y) * driver.retry_scale(self)

    def _stable_eta(self, rows, y):
        """``4^-j / s / sqrt(2)`` for the first ``j`` whose pass (a fresh model, the
        rows in the order this call's pass takes) does not diverge, nor that of
        ``4^-j / s`` (the call's own pass is then one that was tried)."""
        shuffle = self.__dict__.get("_order_rng")
        if shuffle is not None:  # fit's first permutation, the stream left as it was
            state = shuffle.bit_generator.state
            order = shuffle.permutation(rows.n_rows)
            shuffle.bit_generator.state = state
            rows, y = rows.take(order), y[order]
        base = self.norm_cap_ or self.row_scale_
        for j in range(_UNIEXP_FIRST, _UNIEXP_FIRST + _UNIEXP_TRIALS):
            eta = 4.0 ** -j / base
            if self._stable(eta, rows, y) and self._stable(eta / math.sqrt(2.0), rows, y):
                return eta / math.sqrt(2.0)
        driver.diverged(self, f"at every step of eta='auto' down to {eta:.3g}; pass a "
                        "smaller eta")

    def _stable(self, eta, rows, y):
        """Whether a pass of a fresh model with step ``eta`` over the rows as
        given does not diverge."""
        trial = type(self)(eta=eta, norm_cap=self.norm_cap_, clip=self.clip, n_epochs=1,
                           shuffle=False)
        trial.classes_, trial.n_features_in_ = self.classes_, self.n_features_in_
        try:
            with driver.transaction(trial, fresh=True):
                trial._train(rows, y)
                # the refusal of a diverged model, without the warnings about a
                # model the caller never sees
                driver.set_threshold(trial, driver.training_scores(trial, rows), y, warn=False)
        except FloatingPointError:
            return False
        return True

    def _init_state(self, n_features):
        self._init_weights(n_features)
        self.intercept_ = 0.0
        self.class_count_ = np.zeros(2)
        self.t_ = 0

    def _pass(self, rows, y, index):
        w = self._open_weights()
        counts = self._tx.backup(self.class_count_)
        self.t_ = int(uniexp_steps(rows, y, w, counts, self.t_, self.eta_, self.norm_cap_,
                                   float(self.clip)))
        self._store_weights(w)

    def _objective(self, rows, y):
        """The class-weighted mean loss (``n_epochs="auto"`` stops once it stalls)."""
        return self._scores_objective(self._raw_scores(rows), y)

    def _scores_objective(self, scores, y):
        """``(1/n+) sum_pos L(-w.x) + (1/n-) sum_neg L(w.x)`` given the scores."""
        clip = float(self.clip)
        return float(np.mean(_uniexp_loss(-scores[y > 0], clip))
                     + np.mean(_uniexp_loss(scores[y < 0], clip)))


_COVARIANCE_WEIGHTS = """The class counts, sums and sums of outer products (so
    :meth:`solve` and a merge) are the weighted ones; each copy makes its gradient step."""
document_weights(OPAUC, _COVARIANCE_WEIGHTS)
document_weights(AdaOAM, _COVARIANCE_WEIGHTS)
document_weights(OPAUCr, """The class counts and sums are the weighted ones; each copy
    draws its sketch vector and makes its step.""")
document_weights(UniExp, """Each copy makes its step; the class counts that weigh the
    loss are the weighted ones.""")
