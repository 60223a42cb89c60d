"""Batch pairwise learners: BAM, linear PRSVM+ by truncated Newton.

Chapelle & Keerthi, "Efficient algorithms for ranking with SVMs" (Information
Retrieval, 2010), the batch AUC maximizer "BAM" / "Linear RankSVM" of Khalid,
"Scalable Large Margin Pairwise Learning Algorithms" (PhD dissertation, 2019),
Sec. 3.3. The solver is :mod:`aucopt.learners._prsvm`; here it runs on the learner
skeleton, one Newton step per pass.
"""
import math

import numpy as np

from aucopt._state import Scalar
from aucopt import driver
from aucopt.base import BaseLearner
from aucopt.traits import Traits
from aucopt.learners._common import (WeightsModel, auto_or_positive, document_weights,
                                     search_scale, weights_state)
from aucopt.learners._prsvm import LINE_SEARCHES, PRSVMObjective, PRSVMSolver
from aucopt.validation import check_choice, check_count, check_positive, check_y

__all__ = ["BAM"]


class BAM(WeightsModel, BaseLearner):
    """BAM: linear PRSVM+ (squared pairwise hinge) by truncated Newton.

    Minimises (Khalid 2019, eq. 3.1; Chapelle & Keerthi 2010)::

        F(w) = 1/2 ||w||^2 + C_ sum_{i pos, j neg} max(0, 1 - w.(x_i - x_j))^2

    without ever forming a pair: with the scores sorted once per Newton step, the
    loss, its gradient and generalised Hessian-vector products cost
    O(nnz(X) + n log n). Each step solves ``H s = -grad F`` by conjugate gradients
    (at most ``max_cg`` iterations or relative residual ``cg_tol``) and moves along
    ``s`` by an exact line search (the objective is a piecewise quadratic along
    ``s``); training stops when ``||grad F|| <= tol ||grad F(0)||`` or after
    ``max_newton`` steps. Per step the dissertation's Alg. 1 takes the full Newton
    step (``line_search=None``); its gradient lacks the squared hinge's factor 2,
    which is used here.

    Parameters
    ----------
    C : float or "auto", default="auto"
        Weight of the pairwise loss. With ``C_scaling="per_class"`` (default) the
        objective's weight is ``C_ = C (1/n+ + 1/n-)``: ``n`` times the *mean* pair
        loss up to the class balance, the way ``C = 1`` weighs the per-example loss
        of scikit-learn's ``LinearSVC``, so one value serves data sets of any size.
        "auto" is ``1 / s`` with ``s`` the mean squared row norm (``row_scale_``):
        scaling the rows by ``c`` scales the optimal ``w`` by ``1/c``, so the
        balance of ``||w||^2`` against the loss moves with ``s``. For unit-length
        rows (TF-IDF) this is ``C = 1``, within 0.002 AUC of the best of the
        dissertation's grid 2^[-15:10] on our text sets; measured over 30 benchmark
        forms (4 text sets as TF-IDF, max-abs scaled and binary, 16 dense sets
        standardised), ``1 / s`` was within 0.013 of the best of 2^[-8:8:2] / s
        on all of them (ionosphere 0.012, all others 0.007), while the fixed ``C =
        1`` lost up to 0.036 (sonar, ionosphere standardised) and 0.01 on binary
        text. ``C_scaling="none"`` uses ``C``
        itself, for reproducing that grid.
    C_scaling : {"per_class", "none"}, default="per_class"
    tol : float, default=1e-3
        Relative gradient norm that ends training.
    max_newton : int, default=50
        Most Newton steps.
    max_cg : int, default=200
        Most CG iterations per Newton step.
    cg_tol : float, default=0.1
        CG stops at a residual below ``cg_tol ||grad F||``. The truncated-Newton
        value of liblinear; 0.01 halves nothing but doubles the CG work (measured:
        the same Newton steps and objective to 1e-5 on news20).
    line_search : {"exact", "armijo", None}, default="exact"
        ``None`` is the dissertation's full step.
    verbose : int, default=0
        One line per Newton step (objective, gradient norm, CG iterations,
        training AUC, time).
    pos_label : label or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
        ``-threshold`` of the training OPTROC point.
    C_ : float
        The loss weight used (``C``, or ``1 / s`` for "auto", times ``1/n+ + 1/n-``
        with ``C_scaling="per_class"``).
    row_scale_ : float
        The mean squared row norm ``s`` of the training rows.
    n_passes_ : int
        Newton steps taken.
    stop_reason_ : {"tol", "max_newton", "no_progress"}
    objective_ : float
        ``F(w)`` at the end.
    """

    _aucopt_name = "bam"
    # sample_weight weighs each pair's loss by w_i w_j in the kernel's sweeps
    traits = Traits(family="batch pairwise (Newton)",
                    limits="dense or sparse, any d; memory O(n + d)",
                    divergence_hint="lower C", weighs_rows=True)
    _state = {**weights_state(1), "C_": Scalar(float, low=0.0)}

    _auto_params = {"C": lambda self, s, rows: 1.0 / s}

    def __init__(self, C="auto", C_scaling="per_class", tol=1e-3, max_newton=50, max_cg=200,
                 cg_tol=0.1, line_search="exact", verbose=0, pos_label=None):
        self.C = C
        self.C_scaling = C_scaling
        self.tol = tol
        self.max_newton = max_newton
        self.max_cg = max_cg
        self.cg_tol = cg_tol
        self.line_search = line_search
        self.verbose = verbose
        self.pos_label = pos_label

    def search_space(self, X):
        """The grid :class:`aucopt.model_selection.GridSearch` tries by default:
        ``C`` from 2^-8 to 2^8 times ``1 / s`` (the per-class normalised ``C`` in
        units of the mean squared row norm; the dissertation's raw grid 2^[-15:10]
        covers the same range on its data)."""
        s = search_scale(self, X)
        return {"C": [2.0 ** k / s for k in range(-8, 9, 2)]}

    def _check_params(self):
        auto_or_positive("C", self.C)
        check_choice("C_scaling", self.C_scaling, ("per_class", "none"))
        check_positive("tol", self.tol)
        check_count("max_newton", self.max_newton)
        check_count("max_cg", self.max_cg)
        check_positive("cg_tol", self.cg_tol)
        if self.line_search not in LINE_SEARCHES:
            raise ValueError(f"line_search must be one of {LINE_SEARCHES}, got "
                             f"{self.line_search!r}")
        check_count("verbose", self.verbose, minimum=0)

    def _init_state(self, n_features):
        self._init_weights(n_features)
        self.intercept_ = 0.0

    def _work_vectors(self):
        # the solver's w, gradients and X^T scratch; CG's s, r, p and H p
        return 8

    def _prepare(self, rows, y):
        weights = self.__dict__.get("_row_weights")
        if weights is None:
            n_pos, n_neg = int((y > 0).sum()), int((y < 0).sum())
        else:
            n_pos, n_neg = float(weights[y > 0].sum()), float(weights[y < 0].sum())
        scale = 1.0 / n_pos + 1.0 / n_neg if self.C_scaling == "per_class" else 1.0
        self.C_ *= scale  # C (or its "auto" value) resolved from the rows
        self._solver = PRSVMSolver(rows, y, self.C_, tol=self.tol, max_newton=self.max_newton,
                                   max_cg=self.max_cg, cg_tol=self.cg_tol,
                                   line_search=self.line_search, sample_weight=weights)
        self.objective_ = float(self._solver.f)

    def _train(self, rows, y):
        self._init_state(rows.n_features)
        self._resolve_auto(rows)
        self._prepare(rows, y)
        self.n_passes_ = 0  # the start may already meet the stopping rule
        while not self._solver.done:
            driver.run_pass(self, rows, y, self.n_passes_)
        self.stop_reason_ = self._solver.stop
        del self._solver
        self.__dict__.pop("_step_info", None)

    def _pass(self, rows, y, index):
        solver = self._solver
        self._step_info = (solver.f, solver.gnorm)
        solver.step()
        self._set_weights(solver.w)
        self.objective_ = float(solver.f)

    def _progress(self):
        f, gnorm = self._step_info
        return (f"newton step {self.n_passes_}, F {f:.6g}, |grad| {gnorm:.3g}, "
                f"cg {self._solver.last_cg}, ")

    def _weight_norm(self):
        return math.sqrt(self.weights_vsq_)

    def objective(self, X, y, gradient=False):
        """The training objective ``F`` at the fitted weights, on ``(X, y)``.

        ``F(w) = 1/2 ||w||^2 + C_ sum_{i pos, j neg} max(0, 1 - w.(x_i - x_j))^2``,
        computed as in training without forming a pair: one product with ``X`` and
        one sort of the scores, O(nnz(X) + n log n). On the training rows it is
        ``objective_``. With ``gradient``, returns ``(F, grad F)``; the gradient
        costs one more product with the rows in a violated pair.
        """
        X = driver.fitted_input(self, X)
        y_pm, _ = check_y(y, X.shape[0], classes=self.classes_)
        objective = PRSVMObjective(self._input_rows(X, fit_map=False, norms=False), y_pm,
                                   self.C_)
        w = np.ascontiguousarray(self.coef_, dtype=np.float64)
        o = objective.scores(w, objective.all_rows, np.empty(X.shape[0]))
        return objective.value_grad(w, o) if gradient else objective.value(w, o)

document_weights(BAM, """Each pair's squared hinge is weighted by ``w_i w_j``, for
    any weights (fractional ones too, exactly: no draw): the sorted sweeps of the loss,
    its gradient and the Newton products keep weighted counts and sums, still
    O(nnz + n log n) in the distinct rows; the per-class scaling of ``C_`` and the
    row scale of ``C="auto"`` use the weighted totals. Integer weights equal the
    repeated rows to rounding (1e-10), not bit for bit; the training OPTROC threshold
    is that of the copies (a fractional part drawn, seed 0).""", copies=False)
