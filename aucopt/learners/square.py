"""Square-loss and saddle-point learners (ALGORITHMS.md sections 4.1-4.4 and 5.1-5.5).

One-pass learners of the pairwise square loss (OPAUC and its low-rank sketch
OPAUCr, paper "O" = Gao et al. 2013, file ``004_...``; AdaOAM), the saddle-point
reformulation of Ying et al. (SOLAM / regSOLAM, SPAM, SPDAM: thesis "N" =
Natole, file ``001_...``), and online Uni-Exp, the pointwise baseline of O's
tables. The loops are in :mod:`aucopt._kernels._square`.

* one-pass online learners (``opauc``, ``opaucr``, ``adaoam``, ``uni_exp``,
  ``solam``): ``fit`` is one pass over the rows in the given order, and
  ``partial_fit`` continues the same stream, so ``partial_fit`` on consecutive
  chunks equals one ``fit`` on their concatenation. Class means, counts and the
  positive rate are estimated online, as the papers do;
* ``spam`` draws its rows in a random order per epoch, with the class means and
  positive rate computed from the training data (N Sec. 4.1: "assumed known ...
  or estimated", erratum 30); ``partial_fit`` accumulates them over the chunks;
* ``spdam`` is a batch method (N Ch.5: it "cannot process streaming data").

FSAUC (N Alg. 11-12) is not implemented: N does not state its beta/D updates
(ALGORITHMS.md 5.3, erratum 29).
"""
import math
import time

import numpy as np

from aucopt._kernels import _square as K
from aucopt._kernels._rows import RowSource
from aucopt._kernels._weights import WeightVector
from aucopt.base import BaseLearner, OnlineMixin, check_random_state
from aucopt.learners._params import check_count, check_finite_coef, check_positive
from aucopt.registry import register

__all__ = ["OPAUC", "OPAUCr", "AdaOAM", "UniExp", "SOLAM", "SPAM", "SPDAM"]

_DENSE_COV_LIMIT = 2**31  # bytes of the two d x d matrices OPAUC / AdaOAM may allocate


def _check_common(learner):
    check_count("verbose", learner.verbose, minimum=0)
    if hasattr(learner, "random_state"):
        check_random_state(learner.random_state)


def _class_stats(X, y):
    """Per-class row counts and sums (index 0 = negative, 1 = positive)."""
    counts = np.zeros(2)
    sums = np.zeros((2, X.shape[1]))
    K.class_sums(RowSource(X), y, counts, sums)
    return counts, sums


def _means(counts, sums):
    """Class means (zero for a class not seen yet)."""
    return sums / np.maximum(counts, 1.0)[:, None]


class _SquareBase(OnlineMixin, BaseLearner):
    """Shared driver: one-pass ``fit`` = ``_init_state`` + ``_partial_fit``."""

    def _fit(self, X, y):
        self._init_state(X.shape[1])
        self._partial_fit(X, y)

    def _partial_fit(self, X, y):
        start = time.perf_counter()
        self._run(X, y)
        check_finite_coef(self)
        if self.verbose:
            self._report(X, y, "pass", time.perf_counter() - start, f"{X.shape[0]} rows, ")



# --------------------------------------------------------------------------- OPAUC


class _CovarianceLearner(_SquareBase):
    """OPAUC's statistics: per class count, sum and sum of outer products (O(d^2))."""

    def _check_dims(self, n_features):
        need = 2 * n_features * n_features * 8
        if need > _DENSE_COV_LIMIT:
            raise ValueError(
                f"{type(self).__name__} keeps two {n_features} x {n_features} covariance "
                f"matrices ({need / 2**30:.1f} GiB); for high-dimensional data use "
                "'opaucr' (low-rank sketch, O(d tau) memory)")

    def _init_state(self, n_features):
        self._check_dims(n_features)
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0
        self.class_count_ = np.zeros(2)
        self.class_sum_ = np.zeros((2, n_features))
        self.class_sxx_ = np.zeros((2, n_features, n_features))
        self.t_ = 0

    def _steps(self, X, y, **ada):
        K.opauc_steps(RowSource(X), y, self.coef_, self.class_count_, self.class_sum_,
                      self.class_sxx_, float(self.eta), float(self.lam),
                      np.empty(X.shape[1]), **ada)
        self.t_ += X.shape[0]

    def covariance(self, cls):
        """The class covariance ``S`` of O eq. (4) from the stored statistics.

        ``cls`` is 0 (negative) or 1 (positive); ``S = sum x x^T / T - c c^T``.
        """
        T = max(self.class_count_[cls], 1.0)
        c = self.class_sum_[cls] / T
        upper = np.triu(self.class_sxx_[cls])
        full = upper + upper.T - np.diag(np.diag(upper))
        return full / T - np.outer(c, c)


@register("opauc")
class OPAUC(_CovarianceLearner):
    """OPAUC: one-pass AUC optimisation with the pairwise square loss (O Sec. 3, Alg. 1).

    Each arriving ``(x_t, y_t)`` contributes the loss against every earlier row of the
    opposite class (O's ``L_t``)::

        L_t(w) = lam/2 ||w||^2 + sum_{i<t, y_i != y_t} (1 - y_t (x_t - x_i).w)^2 / (2 T_opp)

    whose gradient (O eqs. 3-5) needs only the opposite class's mean ``c`` and
    covariance ``S``: ``g = lam w + S w + (k - y_t)(x_t - c)``, ``k = (x_t - c).w``.
    The step is ``w <- w - eta g``; ``L_t = 0`` (no step) until both classes were
    seen. The statistics are kept as per-class sums and sums of outer products, so
    ``g`` is exact (ALGORITHMS.md 4.1; erratum 20: O's "Gamma = [0]_{d x d} for some
    u > 0" means u = d). Per step: O(nnz^2) for the rank-1 update, O(d^2) for
    ``S w`` (BLAS ``dsymv``); memory two d x d matrices (use ``opaucr`` beyond a few
    thousand features).

    Parameters
    ----------
    eta : float, default=2**-4
        Constant step size (eta_t). O tunes it on 2^[-12:10] and reports good
        results over [2^-12, 2^-4] (Fig. 3) for data scaled to [-1, 1]; the
        default is the top of that range (rows of norm about 1 tolerate it).
    lam : float, default=1e-4
        L2 strength (lambda); O tunes 2^[-10:2], D fixes 1e-4.
    verbose : int, default=0
        Print one progress line per ``fit``/``partial_fit`` call.
    pos_label : label or None, default=None
        Which label is positive; default the larger of the two.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
        ``-threshold`` of the training OPTROC point (ranks do not depend on it).
    class_count_ : ndarray of shape (2,)
        Rows seen per class (index 0 negative, 1 positive).
    class_sum_ : ndarray of shape (2, n_features)
    class_sxx_ : ndarray of shape (2, n_features, n_features)
        Sum of ``x x^T`` per class (upper triangle only).
    t_ : int
        Rows processed.
    """

    def __init__(self, eta=2**-4, lam=1e-4, verbose=0, pos_label=None):
        self.eta = eta
        self.lam = lam
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        check_positive("eta", self.eta)
        check_positive("lam", self.lam, allow_zero=True)
        _check_common(self)

    def _run(self, X, y):
        self._steps(X, y)


@register("adaoam")
class AdaOAM(_CovarianceLearner):
    """AdaOAM: OPAUC's gradient with an AdaGrad diagonal step and a projection.

    Ding, Zhao, Hoi & Ong (2015), reviewed in N Sec. 2.2, Alg. 9, eqs. 2.16-2.18
    (ALGORITHMS.md 4.3). With ``g_t`` OPAUC's exact gradient (:class:`OPAUC`)::

        G <- G + g_t^2 ;  H = delta + sqrt(G)         (elementwise)
        w <- w - eta g_t / H ;  w <- w * min(1, (1/sqrt(lam)) / ||w||)

    Erratum 23: N eq. 2.18 prints ``w - eta H g`` (the inverse is missing) and an
    ``H``-norm projection with no closed form; the Euclidean projection is used.
    Erratum 24: only the running sum of squared gradients is stored, not all of
    them. Per step O(d^2) (covariance product), memory two d x d matrices.

    Parameters
    ----------
    eta : float, default=0.1
        Step size; D tunes it on 2^[-10:10] by 3-fold CV.
    lam : float, default=1e-4
        L2 strength of the loss and radius ``1/sqrt(lam)`` of the ball (D's value).
    delta : float, default=0.5
        Smoothing of the AdaGrad denominator (D Sec. 4.5.2).
    verbose : int, default=0
    pos_label : label or None, default=None

    Attributes
    ----------
    coef_, intercept_, class_count_, class_sum_, class_sxx_, t_
        As :class:`OPAUC`.
    grad_sq_ : ndarray of shape (n_features,)
        Running sum of squared gradients (``G``).
    """

    def __init__(self, eta=0.1, lam=1e-4, delta=0.5, verbose=0,
                 pos_label=None):
        self.eta = eta
        self.lam = lam
        self.delta = delta
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        check_positive("eta", self.eta)
        check_positive("lam", self.lam)
        check_positive("delta", self.delta)
        _check_common(self)

    def _init_state(self, n_features):
        super()._init_state(n_features)
        self.grad_sq_ = np.zeros(n_features)

    def _run(self, X, y):
        self._steps(X, y, ada=self.grad_sq_, delta=float(self.delta),
                    radius=1.0 / math.sqrt(self.lam))


# --------------------------------------------------------------------------- OPAUCr


@register("opaucr")
class OPAUCr(_SquareBase):
    """OPAUCr: OPAUC with randomised low-rank covariance sketches (O Sec. 3, eqs. 6-11).

    The identity in ``S = (1/T)(X - c 1^T) I (X - c 1^T)^T`` is replaced by
    ``R R^T`` with ``tau`` Gaussian columns, giving per class the sketch
    ``Z = sum_i x_i r_i^T`` (``r_i ~ N(0, I/tau)``) and ``q = sum_i r_i``, and the
    covariance estimate ``S_hat w = Zc (Zc^T w) / T`` with ``Zc = Z - c q^T``;
    the step is OPAUC's with ``S_hat`` for ``S`` (ALGORITHMS.md 4.2). Errata:
    21 (O's ``R = (1/tau)(r_i)`` and undefined ``sqrt(m)``: the scale is
    ``1/sqrt(tau)``, so ``E[R R^T] = I``) and 22 (O's centring
    ``c_hat c_hat^T`` is off by a factor T: the centred sketch is used).

    Sparse-efficient form (ours; same iterates up to rounding): the weight vector
    is kept as ``w = sigma v + Z_- a_- + Z_+ a_+ + b_- s_- + b_+ s_+`` (``s`` =
    class sums), which the OPAUC step preserves, together with the tau x tau
    Gram matrices ``Z^T Z`` and the products ``Z^T v``, ``Z^T s``. A step then
    costs O(nnz tau + tau^2): the sketch update is O(nnz tau) and the gradient
    never touches a dense d-vector or the d x tau sketch as a whole. ``coef_``
    is formed once per call (O(d tau), BLAS ``dgemv``). Model state: the two
    d x tau sketches plus four d-vectors.

    Parameters
    ----------
    tau : int, default=50
        Sketch rank (O Sec. 5.2; D Sec. 4.5.2 "as suggested").
    eta : float, default=2**-4
        Constant step size; as OPAUC (O tunes 2^[-12:10]).
    lam : float, default=1e-4
        L2 strength; as OPAUC. ``eta * lam`` must be < 1.
    random_state : int, numpy Generator or None, default=None
        Seed of the Gaussian sketch draws (one tau-vector per row, in row order,
        so the same seed gives the same model for dense and CSR input and for
        any chunking of the stream).
    verbose : int, default=0
    pos_label : label or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    sketch_ : ndarray of shape (2, n_features, tau)
        ``Z`` per class (index 0 negative, 1 positive).
    sketch_q_ : ndarray of shape (2, tau)
    class_count_ : ndarray of shape (2,)
    class_sum_ : ndarray of shape (2, n_features)
    t_ : int
    random_state_ : numpy Generator
    """

    def __init__(self, tau=50, eta=2**-4, lam=1e-4, random_state=None, verbose=0,
                 pos_label=None):
        self.tau = tau
        self.eta = eta
        self.lam = lam
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        check_count("tau", self.tau)
        check_positive("eta", self.eta)
        check_positive("lam", self.lam, allow_zero=True)
        if self.eta * self.lam >= 1.0:
            raise ValueError(f"eta * lam must be < 1 (the step shrinks w by 1 - eta lam), "
                             f"got eta={self.eta!r}, lam={self.lam!r}")
        _check_common(self)

    def _init_state(self, n_features):
        tau = int(self.tau)
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0
        self.sketch_ = np.zeros((2, n_features, tau))
        self.sketch_q_ = np.zeros((2, tau))
        self.class_count_ = np.zeros(2)
        self.class_sum_ = np.zeros((2, n_features))
        # factored weight vector and the products it needs (see the class docstring)
        self.v_ = np.zeros(n_features)
        self.acoef_ = np.zeros((2, tau))
        self.zv_ = np.zeros((2, tau))
        self.zs_ = np.zeros((2, 2, tau))
        self.gram_ = np.zeros((2, 2, tau, tau))
        self.state_ = np.zeros(K.OPAUCR_STATE_LEN)
        self.state_[0] = 1.0  # sigma
        self.t_ = 0
        self.random_state_ = check_random_state(self.random_state)

    def _run(self, X, y, block=4096):
        tau = self.sketch_.shape[2]
        if self.sketch_.shape[2] != int(self.tau):
            raise ValueError(f"tau={self.tau} differs from the fitted sketch rank {tau}; "
                             "refit to change it")
        work = np.empty((4, tau))
        rows = RowSource(X) if X.shape[0] <= block else None
        for start in range(0, X.shape[0], block):
            stop = min(start + block, X.shape[0])
            rho = self.random_state_.standard_normal((stop - start, tau)) / math.sqrt(tau)
            src = rows if rows is not None else RowSource(X[start:stop])
            K.opaucr_steps(src, y[start:stop], rho, self.v_, self.sketch_, self.class_sum_,
                           self.sketch_q_, self.class_count_, self.acoef_, self.zv_,
                           self.zs_, self.gram_, self.state_, float(self.eta),
                           float(self.lam), work)
        self.t_ += X.shape[0]
        K.opaucr_coef(self.v_, self.sketch_, self.class_sum_, self.acoef_, self.state_,
                      self.coef_)

    def covariance_product(self, w, cls):
        """``S_hat w`` of class ``cls`` (0 negative, 1 positive) from the sketch (O eq. 10-11)."""
        T = max(self.class_count_[cls], 1.0)
        c = self.class_sum_[cls] / T
        Z, q = self.sketch_[cls], self.sketch_q_[cls]
        u = Z.T @ w - q * (c @ w)
        return (Z @ u - c * (q @ u)) / T


# --------------------------------------------------------------------------- Uni-Exp


@register("uni_exp")
class UniExp(_SquareBase):
    """Online Uni-Exp: weighted univariate exponential loss by online gradient descent.

    The pointwise baseline of O Tables 2 and 4 (Kotlowski, Dembczynski &
    Huellermeier 2011). None of the seed documents defines it beyond "optimizes the
    (weighted) univariate exponential loss" (ALGORITHMS.md 4.4, erratum 25); this is
    the reconstruction the spec adopts, minimising
    ``(1/n+) sum_pos exp(-w.x) + (1/n-) sum_neg exp(w.x)`` online::

        T_y <- T_y + 1 ;  w <- w + eta (t / T_y) y exp(min(-y w.x, 30)) x

    (``t / T_y`` is the inverse running class prior). O(nnz) per step.

    Parameters
    ----------
    eta : float, default=2**-6
        Step size; O tunes 2^[-12:10], D 2^[-10:10].
    verbose : int, default=0
    pos_label : label or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    class_count_ : ndarray of shape (2,)
    t_ : int
    """

    def __init__(self, eta=2**-6, verbose=0, pos_label=None):
        self.eta = eta
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        check_positive("eta", self.eta)
        _check_common(self)

    def _init_state(self, n_features):
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0
        self.class_count_ = np.zeros(2)
        self.t_ = 0

    def _run(self, X, y):
        w = WeightVector(self.coef_)
        self.t_ = K.uniexp_steps(RowSource(X), y, w, self.class_count_, self.t_,
                                 float(self.eta))


# --------------------------------------------------------------------------- SOLAM


@register("solam")
class SOLAM(_SquareBase):
    """SOLAM / regSOLAM: stochastic online AUC maximisation as a saddle-point problem.

    Ying, Wen & Lyu (2016), reviewed in N Sec. 2.3, Alg. 10; with ``lam > 0`` it is
    N's regSOLAM (Ch.3, Alg. 18, eq. 3.16). ALGORITHMS.md 5.1-5.2. With ``p_hat``
    the running positive rate and ``F`` of N eq. 2.23 (+ ``lam/2 ||w||^2``)::

        gamma_t = eta / sqrt(t)                                    (erratum 27)
        (w, a, b) <- P_Omega1((w, a, b) - gamma_t d_{w,a,b} F)
        alpha     <- P_Omega2(alpha + gamma_t d_alpha F)            (ascent, erratum 26)
        Omega1 = {||w|| <= R, |a|, |b| <= R kappa}, Omega2 = {|alpha| <= 2 R kappa}

    and the output is the gamma-weighted average of the pre-update iterates (as N
    Alg. 10 prints). O(nnz) per step: ``w`` is a scaled vector with a maintained
    norm (O(1) projection) and an exact lazy weighted average (ALGORITHMS.md 0.1).
    Erratum 28: N Alg. 18 names its steps ``eta_t`` and uses ``gamma_t``.

    Parameters
    ----------
    eta : float, default=10.0
        Step scale (zeta); D and N tune it on {1:9:100}.
    lam : float, default=0.0
        L2 strength; 0 is SOLAM, > 0 regSOLAM (N tunes 10^[-5:5]).
    R : float or None, default=None
        Radius of the ``w`` ball. None: ``sqrt(2/lam)`` for regSOLAM (N Sec. 3.3,
        ``||w*|| <= sqrt(2/lam)``), 10 for SOLAM (D tunes 10^[-1:5]).
    kappa : float or None, default=None
        ``sup ||x||`` for the bounds of ``a``, ``b``, ``alpha``. None: the largest
        row norm seen (the whole training set in ``fit``; the chunks so far in
        ``partial_fit``, so chunked streaming equals ``fit`` when ``kappa`` is
        given or the first chunk holds the largest row).
    n_epochs : int, default=1
        Passes over the rows in ``fit`` (N: one pass; D: 15).
    verbose : int, default=0
    pos_label : label or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The averaged ``w``.
    a_, b_, alpha_ : float
        Averaged auxiliary variables.
    kappa_ : float
    t_ : int
    """

    def __init__(self, eta=10.0, lam=0.0, R=None, kappa=None, n_epochs=1,
                 verbose=0, pos_label=None):
        self.eta = eta
        self.lam = lam
        self.R = R
        self.kappa = kappa
        self.n_epochs = n_epochs
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        check_positive("eta", self.eta)
        check_positive("lam", self.lam, allow_zero=True)
        if self.R is not None:
            check_positive("R", self.R)
        if self.kappa is not None:
            check_positive("kappa", self.kappa)
        check_count("n_epochs", self.n_epochs)
        _check_common(self)

    def _radius(self):
        if self.R is not None:
            return float(self.R)
        return math.sqrt(2.0 / self.lam) if self.lam > 0 else 10.0

    def _init_state(self, n_features):
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0
        self.w_ = np.zeros((n_features, 2))   # [v, lazy-average accumulator]
        self.w_scale_ = 1.0
        self.avg_c_ = 0.0
        self.avg_q_ = 0.0
        self.state_ = np.zeros(K.SOLAM_STATE_LEN)
        self.kappa_ = 0.0 if self.kappa is None else float(self.kappa)
        self.a_ = self.b_ = self.alpha_ = 0.0
        self.t_ = 0

    def _fit(self, X, y):
        self._init_state(X.shape[1])
        for _ in range(self.n_epochs):
            self._partial_fit(X, y)

    def _run(self, X, y):
        if self.kappa is None:
            zero = np.zeros(X.shape[1])
            self.kappa_ = max(self.kappa_, K.max_centred_norm(RowSource(X), y, zero, zero,
                                                              1.0, 1.0))
        w = WeightVector(self.w_, scale=self.w_scale_, averaging=True, avg_c=self.avg_c_,
                         avg_q=self.avg_q_)
        K.solam_steps(RowSource(X), y, w, self.state_, float(self.eta), float(self.lam),
                      self._radius(), self.kappa_)
        self.w_scale_, self.avg_c_, self.avg_q_ = w.scale, w.avg_c, w.avg_q
        self.coef_ = w.average()
        self.t_ = int(self.state_[0])
        self.a_, self.b_, self.alpha_ = (float(v) for v in self.state_[5:8])


# --------------------------------------------------------------------------- SPAM


@register("spam")
class SPAM(_SquareBase):
    """SPAM: stochastic proximal AUC maximisation (N Ch.4, Alg. 20; SPAM-L2 / SPAM-NET Sec. 4.3).

    Minimises ``E[F(w, a(w), b(w), alpha(w); z)] + Omega(w)`` with the inner
    variables in closed form (N eqs. 4.5-4.6): ``a = w.m+``, ``b = w.m-``,
    ``alpha = b - a`` (``m+-`` class means, ``p`` positive rate). Per step, on a
    row drawn in random order (ALGORITHMS.md 5.4)::

        w_hat = w - eta_t d_w F(w, a, b, alpha; z_t)            (a sparse axpy)
        penalty="l2":         w = w_hat / (1 + eta_t lam)               O(nnz)
        penalty="elasticnet": w = soft(w_hat, eta_t lam1) / (1 + eta_t lam)   O(d)

    ``w.m+-`` are cached and updated in O(nnz). Erratum 30: the experiments' step
    size is not given; ``eta_t = eta / (lam (t + t0))`` (N Thm 4.2's 1/(C t) with
    C ~ lam) or, with ``schedule="invsqrt"``, ``eta / sqrt(t + t0)``. The class
    statistics come from the training data (N: "assumed known ... or estimated");
    ``partial_fit`` accumulates them over the chunks seen. The elastic-net prox
    (N Sec. 4.3, whose printed argmin equals ``soft(w_hat, eta lam1)/(1 + eta lam)``)
    stays O(d) per step because the caches need all of ``w`` (ALGORITHMS.md 5.4(5)).
    Erratum 31: N does not report SPAM-NET's L2 weight; ``lam`` is used for it.

    Parameters
    ----------
    penalty : {"l2", "elasticnet"}, default="l2"
    lam : float, default=1e-2
        L2 strength (beta); N tunes 10^[-5:5] (Ch.4) / 10^[-5:1] (Ch.6).
    lam1 : float, default=1e-4
        L1 strength (beta1) of the elastic net; ignored for ``penalty="l2"``.
    eta : float, default=1.0
        Step-size scale.
    t0 : float or None, default=None
        Step offset. None: ``max(1, 2 kappa^2 / lam)`` for ``"inv"`` (so the first
        step is about ``1/(2 kappa^2)``, ``kappa`` the largest row norm of the first
        data seen; the square loss diverges under larger steps, SVMSGD2-style
        offset) and 1 for ``"invsqrt"``; ``t0=1`` with ``"inv"`` is N Thm 4.2's
        literal ``1/(lam (t + 1))``.
    schedule : {"inv", "invsqrt"}, default="inv"
    n_epochs : int, default=1
        Passes in ``fit``, each over a fresh random permutation of the rows.
    random_state : int, numpy Generator or None, default=None
        Seed of the row order.
    verbose : int, default=0
    pos_label : label or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    class_count_ : ndarray of shape (2,)
    class_sum_ : ndarray of shape (2, n_features)
        Class statistics behind ``p`` and ``m+-``.
    t0_ : float
        Step offset in use.
    t_ : int
    random_state_ : numpy Generator
    """

    def __init__(self, penalty="l2", lam=1e-2, lam1=1e-4, eta=1.0, t0=None, schedule="inv",
                 n_epochs=1, random_state=None, verbose=0, pos_label=None):
        self.penalty = penalty
        self.lam = lam
        self.lam1 = lam1
        self.eta = eta
        self.t0 = t0
        self.schedule = schedule
        self.n_epochs = n_epochs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        if self.penalty not in ("l2", "elasticnet"):
            raise ValueError(f"penalty must be 'l2' or 'elasticnet', got {self.penalty!r}")
        if self.schedule not in ("inv", "invsqrt"):
            raise ValueError(f"schedule must be 'inv' or 'invsqrt', got {self.schedule!r}")
        check_positive("lam", self.lam, allow_zero=self.schedule == "invsqrt")
        check_positive("lam1", self.lam1, allow_zero=True)
        check_positive("eta", self.eta)
        if self.t0 is not None:
            check_positive("t0", self.t0, allow_zero=True)
        check_count("n_epochs", self.n_epochs)
        _check_common(self)

    def _init_state(self, n_features):
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0
        self.class_count_ = np.zeros(2)
        self.class_sum_ = np.zeros((2, n_features))
        self.t_ = 0
        self.random_state_ = check_random_state(self.random_state)

    def _add_stats(self, X, y):
        if not hasattr(self, "t0_"):
            if self.t0 is not None:
                self.t0_ = float(self.t0)
            elif self.schedule == "invsqrt":
                self.t0_ = 1.0
            else:
                zero = np.zeros(X.shape[1])
                kappa = K.max_centred_norm(RowSource(X), y, zero, zero, 1.0, 1.0)
                self.t0_ = max(1.0, 2.0 * kappa * kappa / float(self.lam))
        counts, sums = _class_stats(X, y)
        self.class_count_ += counts
        self.class_sum_ += sums

    def _fit(self, X, y):
        self._init_state(X.shape[1])
        self._add_stats(X, y)
        for _ in range(self.n_epochs):
            self._epoch(X, y)

    def _run(self, X, y):
        self._add_stats(X, y)
        self._epoch(X, y)

    def _epoch(self, X, y):
        start = time.perf_counter()
        m = _means(self.class_count_, self.class_sum_)
        p = self.class_count_[1] / max(self.class_count_.sum(), 1.0)
        order = self.random_state_.permutation(X.shape[0]).astype(np.int64)
        w = WeightVector(self.coef_)
        st = np.array([float(self.t_), self.coef_ @ m[1], self.coef_ @ m[0]])
        l1 = float(self.lam1) if self.penalty == "elasticnet" else 0.0
        K.spam_steps(RowSource(X), y, order, w, m[1], m[0], float(p), st, float(self.lam),
                     l1, float(self.eta), self.t0_, self.schedule == "invsqrt")
        w.py_fold()
        self.t_ = int(st[0])
        if self.verbose:
            self._report(X, y, "epoch", time.perf_counter() - start, f"{X.shape[0]} rows, ")


# --------------------------------------------------------------------------- SPDAM


@register("spdam")
class SPDAM(BaseLearner):
    """SPDAM: stochastic primal-dual AUC maximisation, mini-batch (N Ch.5, Alg. 21, Thm 5.1).

    Batch objective (N eq. 5.6 with ``p = n+/n``, class means ``m+-``,
    ``bvec = m- - m+``), minimised over ``a, b, alpha`` in closed form and written
    as a saddle problem over the transformed rows ``xt_i = (x_i - m_y)/sqrt(p_y)``
    (``p_+ = p``, ``p_- = 1 - p``)::

        min_w max_beta (1/n) sum_i (beta_i w.xt_i - beta_i^2/2) + g(w),
        g(w) = 1/2 (bvec.w)^2 + bvec.w + lam/2 ||w||^2

    i.e. ``P(w) = (1/2n) sum_i (w.xt_i)^2 + g(w)``. Each iteration draws a
    mini-batch ``I`` without replacement, takes the closed-form dual step
    ``beta_i <- (sigma wbar.xt_i + beta_i)/(sigma + 1)``, the primal step
    ``w = argmin <ubar, w> + g(w) + ||w - w_old||^2/(2 tau)`` (Sherman-Morrison,
    O(d)) and the extrapolation ``wbar = w + theta (w - w_old)``, with Thm 5.1's
    ``sigma``, ``tau``, ``theta`` and ``kappa = max ||xt_i||`` (ALGORITHMS.md 5.5).
    Errata: 32 (``g`` printed with and without ``lam``), 33 (with ``sqrt(2 p_y)``
    the printed ``g`` is not proportional to eq. 5.6: ``scaling="consistent"`` uses
    ``sqrt(p_y)``, P = (5.6)/2 up to the lam scale; ``scaling="printed"`` keeps
    ``sqrt(2 p_y)`` for literal reproduction), 34 (the dual step and ``u`` use the
    transformed rows). Rows stay sparse: the centring is applied implicitly.
    Per iteration O(m_b nnz + d); memory O(n + d).

    Parameters
    ----------
    lam : float, default=1e-3
        Strong-convexity weight (lambda); N tunes 10^[-5:1].
    batch_size : float or int, default=0.1
        Mini-batch size ``m_b``: a fraction of n (float in (0, 1]) or a count (N: 10%;
        Fig. 5.1 shows m_b = 1 fails).
    n_epochs : int, default=20
        ``fit`` runs ``ceil(n_epochs * n / m_b)`` iterations (N does not state T).
    scaling : {"consistent", "printed"}, default="consistent"
    random_state : int, numpy Generator or None, default=None
        Seed of the mini-batch draws.
    verbose : int, default=0
        Print the primal objective every ``n / m_b`` iterations.
    pos_label : label or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_iter_ : int
    sigma_, tau_, theta_, kappa_ : float
        Thm 5.1's parameters as used.
    """

    def __init__(self, lam=1e-3, batch_size=0.1, n_epochs=20, scaling="consistent",
                 random_state=None, verbose=0, pos_label=None):
        self.lam = lam
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.scaling = scaling
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        check_positive("lam", self.lam)
        if isinstance(self.batch_size, float):
            if not 0.0 < self.batch_size <= 1.0:
                raise ValueError(f"batch_size as a fraction must be in (0, 1], got "
                                 f"{self.batch_size!r}")
        else:
            check_count("batch_size", self.batch_size)
        check_count("n_epochs", self.n_epochs)
        if self.scaling not in ("consistent", "printed"):
            raise ValueError(f"scaling must be 'consistent' or 'printed', got {self.scaling!r}")
        _check_common(self)

    def _batch(self, n):
        if isinstance(self.batch_size, float):
            return max(1, int(round(self.batch_size * n)))
        return min(int(self.batch_size), n)

    def problem(self, X, y):
        """The quadratic ``P(w) = 1/2 w^T H w + bvec.w`` SPDAM minimises on (X, y in +-1).

        Returns ``(H, bvec)`` as dense arrays (O(n d^2); for tests and small data).
        """
        X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
        counts, sums = _class_stats(np.ascontiguousarray(X), np.asarray(y, dtype=float))
        m = _means(counts, sums)
        inv = self._inv(counts)
        Xt = np.where((y > 0)[:, None], (X - m[1]) * inv[1], (X - m[0]) * inv[0])
        bvec = m[0] - m[1]
        H = Xt.T @ Xt / X.shape[0] + np.outer(bvec, bvec) + self.lam * np.eye(X.shape[1])
        return H, bvec

    def _inv(self, counts):
        p = counts[1] / counts.sum()
        k = 2.0 if self.scaling == "printed" else 1.0
        return np.array([1.0 / math.sqrt(k * (1.0 - p)), 1.0 / math.sqrt(k * p)])

    def _fit(self, X, y):
        n, d = X.shape
        rng = check_random_state(self.random_state)
        rows = RowSource(X)
        counts = np.zeros(2)
        sums = np.zeros((2, d))
        K.class_sums(rows, y, counts, sums)
        m = _means(counts, sums)
        inv = self._inv(counts)
        bvec = m[0] - m[1]
        lam = float(self.lam)
        mb = self._batch(n)
        kappa = K.max_centred_norm(rows, y, m[1], m[0], inv[1], inv[0])
        kappa2 = max(kappa * kappa, 1e-300)
        sigma = ((n - mb) + math.sqrt((n - mb) ** 2 + 4.0 * n * kappa2 * mb / lam)) / (
            8.0 * mb * kappa2)
        tau = 1.0 / (4.0 * sigma * kappa2)
        theta = 1.0 - lam / (lam + 2.0 * sigma * kappa2)
        k = lam + 1.0 / tau
        bb = float(bvec @ bvec)
        w = np.zeros(d)
        wbar = w.copy()
        u = np.zeros(d)
        beta = np.zeros(n)
        dx = np.zeros(d)
        dsum = np.zeros(2)
        per_epoch = max(1, -(-n // mb))
        n_iter = int(self.n_epochs) * per_epoch
        for it in range(n_iter):
            batch = rng.choice(n, size=mb, replace=False).astype(np.int64)
            dx[:] = 0.0
            dsum[:] = 0.0
            K.spdam_dual(rows, batch, y, wbar, beta, float(wbar @ m[1]), float(wbar @ m[0]),
                         float(inv[1]), float(inv[0]), sigma, dx, dsum)
            du = (dx - m[1] * dsum[1] - m[0] * dsum[0]) / n
            ubar = u + (n / mb) * du
            u += du
            r = w / tau - ubar - bvec
            w_new = (r - bvec * ((bvec @ r) / (k + bb))) / k
            wbar = w_new + theta * (w_new - w)
            w = w_new
            if self.verbose and (it + 1) % per_epoch == 0:
                print(f"-- SPDAM epoch {(it + 1) // per_epoch}: |w| {np.linalg.norm(w):.4g}",
                      flush=True)
        self.coef_ = w
        check_finite_coef(self)
        self.n_iter_ = n_iter
        self.sigma_, self.tau_, self.theta_, self.kappa_ = sigma, tau, theta, kappa
