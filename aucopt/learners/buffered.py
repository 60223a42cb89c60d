"""Online buffered pairwise learners: OAM_seq, OAM_gra, CBR, CBR-diag.

ALGORITHMS.md section 3 (dissertation 000 Ch.4, Alg. 4-6, Prop. 1-2; thesis 001
Sec. 2.2, Alg. 4-7). Each arriving row ``(x_t, y_t)`` first enters the buffer of
its class (reservoir sampling exactly as dissertation Alg. 5, or FIFO; section
2.1), then the model is updated against every row of the *opposite* buffer in its
iteration order (slot order for a reservoir, oldest to newest for FIFO).

One pass, truly streaming: ``fit`` = fresh state + one pass, ``partial_fit``
continues the same pass with the buffers, counters and random stream kept, so
``partial_fit`` over the chunks of a stream gives exactly the model of ``fit`` on
the concatenation (same seed). The reservoir draws two uniforms ``(u, r)`` per
arriving row whether it needs them or not, so the draws do not depend on the
chunking. State is bounded: ``O(d)`` for the model (``O(d^2)`` for ``cbr``)
plus the two buffers (a ``(2M, d)`` block for dense input, a pooled CSR ring of
at most about 4x the buffered nonzeros for sparse input; ALGORITHMS.md 2.1).

The inner loop is ``aucopt._kernels._buffered`` over the shared row source and
``aucopt._kernels._buffers``: one loop for dense and CSR input, bit-identical
results for ``oam_seq``, ``oam_gra`` and ``cbr_diag`` (``cbr`` forms a dense
``z`` for BLAS, also identical in practice).
"""
import time
from statistics import NormalDist

import numpy as np
import scipy.sparse as sp

from aucopt._kernels._buffered import RULES, run_arrivals, symmetrize
from aucopt._kernels._buffers import STATE_KEYS, Buffers, new_state
from aucopt._kernels._rows import RowSource
from aucopt.base import BaseLearner, OnlineMixin, check_random_state
from aucopt.learners._params import check_count, check_positive
from aucopt.registry import register

__all__ = ["OAMSeq", "OAMGra", "CBR", "CBRDiag"]

_BUFFER_POLICIES = ("fifo", "reservoir")
_CBR_MAX_BYTES = 4 * 2**30  # refuse a covariance above 4 GiB (d > 23170)


class _Buffered(OnlineMixin, BaseLearner):
    """Arrival loop shared by the buffered learners (ALGORITHMS.md 3, Alg. 4).

    Subclasses set ``_rule_name`` (a key of ``RULES``) and may add model state
    in ``_init_model`` and ``_kernel_args``.
    """

    # ---- parameters

    def _check_params(self):
        check_positive("C", self.C)
        check_count("buffer_size", self.buffer_size)
        if self.buffer not in _BUFFER_POLICIES:
            raise ValueError(f"buffer must be one of {_BUFFER_POLICIES}, got "
                             f"{self.buffer!r}")
        check_count("verbose", self.verbose, minimum=0)
        check_random_state(self.random_state)

    # ---- state

    def _fit(self, X, y):
        self._init_state(X.shape[1])
        self._partial_fit(X, y)

    def _init_state(self, n_features):
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0
        self.t_ = 0
        self.n_updates_ = 0
        self.buffer_size_ = int(self.buffer_size)
        self.buffer_policy_ = str(self.buffer)
        self.random_state_ = check_random_state(self.random_state)
        self.buffer_layout_ = "unset"  # fixed by the first chunk: "dense" or "sparse"
        self._init_model(n_features)

    def _init_model(self, n_features):
        """Model state beyond ``coef_`` (CBR: covariance, CBR-diag: precision)."""

    def _kernel_args(self):
        """``(C, phi, literal, G, S)`` for :func:`run_arrivals`."""
        return float(self.C), 0.0, False, np.zeros(1), np.zeros((1, 1))

    def _buffers(self, X):
        if self.buffer_layout_ == "unset":
            dense = not sp.issparse(X)
            state = new_state(self.buffer_size_, self.n_features_in_, dense)
            self.buffer_layout_ = "dense" if dense else "sparse"
            self._store_buffers(state)
        state = {k: getattr(self, f"buffer_{k}_") for k in STATE_KEYS}
        return Buffers(self.buffer_size_, self.n_features_in_,
                       self.buffer_policy_ == "reservoir", state)

    def _store_buffers(self, state):
        for key, value in state.items():
            setattr(self, f"buffer_{key}_", value)

    def _partial_fit(self, X, y):
        if (self.buffer_size != self.buffer_size_ or self.buffer != self.buffer_policy_):
            raise ValueError(
                f"buffer_size/buffer changed from {self.buffer_size_}/"
                f"{self.buffer_policy_!r} since the first partial_fit; the buffers "
                "cannot be resized mid-stream: call fit to start afresh, or set them back")
        start_time = time.perf_counter()
        n = X.shape[0]
        if self.buffer_policy_ == "reservoir":
            draws = self.random_state_.random((n, 2))  # (u, r) per arrival, Alg. 5
        else:
            draws = np.zeros((0, 2))
        rows = RowSource(X)
        C, phi, literal, G, S = self._kernel_args()
        pos = 0
        while True:
            buffers = self._buffers(X)
            pos, n_upd = run_arrivals(rows, y, buffers, RULES[self._rule_name], C, phi,
                                      literal, self.coef_, G, S, draws, pos, self.t_)
            self.n_updates_ += int(n_upd)
            if pos >= n:
                break
            buffers.grow()  # sparse pool full: reallocate, resume at row `pos`
            self._store_buffers(buffers.arrays())
        self.t_ += n
        self._finish_chunk()
        if self.verbose:
            count = self.buffer_count_
            self._report(X, y, "chunk", time.perf_counter() - start_time,
                         f"arrivals {self.t_}, model updates {self.n_updates_}, buffers "
                         f"+{count[1]}/-{count[0]} of {self.buffer_size_}, ")

    def _finish_chunk(self):
        """Hook run after every chunk (CBR symmetrizes its covariance)."""



_COMMON_PARAMS = """
    buffer_size : int, default={size}
        Capacity of each of the two buffers (M+ = M- = M in dissertation Alg. 4,
        N+ = N- in thesis Alg. 4). {size_note}
    buffer : {{"fifo", "reservoir"}}, default={policy!r}
        Buffer policy: reservoir sampling exactly as dissertation Alg. 5, or
        first-in-first-out (Sec. 4.3 "Update Buffer"); ALGORITHMS.md 2.1.
    random_state : int, numpy Generator or None, default=None
        Seed of the reservoir draws (two uniforms per arrival); unused by FIFO.
        The same seed gives the same model, bit for bit, for dense and CSR input.
    verbose : int, default=0
        Print one progress line per ``fit``/``partial_fit`` call (arrivals, model
        updates, buffer fill, ``||w||``, AUC on the chunk, time).
    pos_label : label or None, default=None
        Which label is positive; default the larger of the two.
"""

_COMMON_ATTRS = """
    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The ranking vector ({vector}).
    intercept_ : float
        ``-threshold`` of the training OPTROC point (of the last chunk for
        ``partial_fit``); ranks do not depend on it.
    classes_ : ndarray of shape (2,)
        ``[negative label, positive label]``.
    n_features_in_ : int
    t_ : int
        Rows received so far (T of Alg. 4).
    n_updates_ : int
        Pair updates applied (pairs with a positive loss; for OAM_gra, pairs with
        margin ``<= 1``).
    buffer_count_, buffer_seen_ : ndarray of shape (2,)
        Rows held in / received by the [negative, positive] buffer (M^t of Alg. 4).
    buffer_arrival_ : ndarray of shape (2 * buffer_size,)
        Arrival index (0-based ``t``) of the row in each slot, -1 when empty.
    buffer_rows_, buffer_start_, buffer_nnz_, buffer_values_, buffer_indices_, \
buffer_head_, buffer_top_ : ndarray
        Buffer storage: a dense block (``buffer_layout_ == "dense"``) or a pooled
        CSR ring (``"sparse"``), chosen by the first chunk's input form.
"""


def _documented(size, policy, size_note, vector, attrs=""):
    """Append the parameters and attributes every buffered learner shares."""

    def deco(cls):
        cls.__doc__ = (cls.__doc__.rstrip() + "\n" +
                       _COMMON_PARAMS.format(size=size, policy=policy, size_note=size_note)
                       + _COMMON_ATTRS.format(vector=vector) + attrs)
        return cls

    return deco


@register("oam_seq")
@_documented(100, "reservoir", "100 per class as recommended by Zhao et al. (thesis, F, "
             "O); the dissertation's Ch.4 tables use 50.", "w")
class OAMSeq(_Buffered):
    """OAM_seq: online AUC maximization with buffers, sequential PA-I updates.

    Zhao, Hoi, Jin & Yang (ICML 2011), as reviewed in thesis 001 Sec. 2.2, Alg. 4
    (framework), Alg. 5 (reservoir) and Alg. 6 (sequential UpdateClassifier); the
    first-order baseline of dissertation 000 Tables 4.3 / 4.5. ALGORITHMS.md 3.1.
    For each row ``x`` of the opposite buffer, in order, with ``u = y_t (x_t - x)``::

        l = max(0, 1 - w.u);  if l > 0:  w <- w + min(C_t, l / ||u||^2) u

    the exact minimiser of ``1/2 ||w - w_i||^2 + C_t max(0, 1 - w.u)`` (erratum 10:
    eq. 2.8 as printed is garbled), with ``C_t = C max(1, M_opp^t / M_opp)``
    (erratum 9: the fraction bar of "max(1, N_t, N)" was lost) -- the opposite
    class's rows received so far over its buffer capacity. Pairs with ``u = 0`` are
    skipped. Cost per arrival O(M (nnz(x_t) + nnz(x))); nothing is dense.

    Parameters
    ----------
    C : float, default=1.0
        Penalty C (aggressiveness of the PA-I step). The papers tune it on
        ``2^[-10:10]`` by 3-fold CV (dissertation Sec. 4.5.2 item 4); 1.0 is the
        middle of that grid.
    """

    _rule_name = "oam_seq"

    def __init__(self, C=1.0, buffer_size=100, buffer="reservoir", random_state=None,
                 verbose=0, pos_label=None):
        self.C = C
        self.buffer_size = buffer_size
        self.buffer = buffer
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


@register("oam_gra")
@_documented(100, "reservoir", "100 per class as recommended by Zhao et al.", "w")
class OAMGra(OAMSeq):
    """OAM_gra: online AUC maximization with buffers, one gradient step per arrival.

    Zhao et al. (ICML 2011), thesis 001 Alg. 4, 5 and Alg. 7 (gradient
    UpdateClassifier); ALGORITHMS.md 3.1. With ``w_t`` frozen at the arrival::

        for x in B_opp:  if y_t w_t.(x_t - x) <= 1:  w <- w + C_t y_t (x_t - x) / 2

    (``<= 1`` and the factor 1/2 as printed), ``C_t = C max(1, M_opp^t / M_opp)``
    (erratum 9). Cost per arrival O(M (nnz(x_t) + nnz(x))).

    Parameters
    ----------
    C : float, default=1.0
        Step weight C; tuned on ``2^[-10:10]`` by 3-fold CV in the papers.
    """

    _rule_name = "oam_gra"


class _ConfidenceWeighted(_Buffered):
    """Shared parameter handling of CBR and CBR-diag (SCW-I on pair differences)."""

    def _check_params(self):
        super()._check_params()
        check_positive("eta", self.eta)
        if not 0.5 < self.eta < 1.0:
            raise ValueError(f"eta must lie in (0.5, 1): it is the confidence "
                             f"probability (phi = Phi^-1(eta) > 0); got {self.eta!r}")

    def _phi(self):
        return NormalDist().inv_cdf(float(self.eta))


@register("cbr")
@_documented(50, "fifo", "50 per class in dissertation Sec. 4.5.2; FIFO (CBR_FIFO) is the "
             "variant the dissertation finds best and reruns in Ch.7, "
             "``buffer='reservoir'`` gives CBR_RS.", "mu",
             "    covariance_ : ndarray of shape (n_features, n_features)\n"
             "        Sigma, symmetric.\n")
class CBR(_ConfidenceWeighted):
    """CBR: confidence-weighted bipartite ranking with a full covariance.

    Dissertation 000 Sec. 4.3, Alg. 4 (framework, ``C_t = C``), Alg. 5
    (reservoir) / FIFO, Alg. 6 (sequential UpdateRanker) and Prop. 1, i.e. SCW-I
    (Wang, Zhao & Hoi 2012) on the pair difference; ALGORITHMS.md 3.2. The ranker
    is ``N(mu, Sigma)``, ``mu = 0``, ``Sigma = I`` at the start; for each row ``x``
    of the opposite buffer, with ``z = x_t - x``, ``v = z' Sigma z`` and
    ``m = y_t mu.z``::

        alpha = min(C, max(0, (-m psi + sqrt(m^2 phi^4/4 + v phi^2 zeta)) / (v zeta)))
        u     = (-alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4 v))^2 / 4
        beta  = alpha phi / (sqrt(u) + v alpha phi)
        mu    <- mu + alpha y_t Sigma z
        Sigma <- Sigma - beta (Sigma z)(Sigma z)'

    with ``phi = Phi^-1(eta)``, ``psi = 1 + phi^2/2``, ``zeta = 1 + phi^2``.
    Errata resolved: 11 (``Sigma z z' Sigma`` is an outer product, not the scalar
    ``z'z``), 12 (``beta`` in the SCW form; the printed ``alpha phi / sqrt(u + v
    alpha phi)`` is ``beta_form="dissertation"``), 15 (``psi``/``delta`` naming).
    ``Sigma z`` is one BLAS ``dsymv``, the update one ``dsyr`` (one triangle kept,
    mirrored after each call): O(M d^2) per arrival, dense d x d state, so CBR is
    for low-dimensional data; use ``cbr_diag`` for text. Pairs with ``v <= 0`` are
    skipped and ``alpha``, ``sqrt(u)`` are computed without cancellation (see
    ``aucopt._kernels._buffered``).

    Parameters
    ----------
    C : float, default=1.0
        Penalty C of the SCW-I loss; tuned on ``2^[-10:10]`` by 3-fold CV
        (dissertation Sec. 4.5.2 item 6).
    eta : float, default=0.7
        Confidence probability eta in (0.5, 1) (Sec. 4.5.2: 0.7, so phi = 0.5244).
    beta_form : {"scw", "dissertation"}, default="scw"
        ``beta`` of SCW (erratum 12) or as printed in Prop. 1 (for reproduction).
    """

    _rule_name = "cbr"

    def __init__(self, C=1.0, eta=0.7, buffer_size=50, buffer="fifo", beta_form="scw",
                 random_state=None, verbose=0, pos_label=None):
        self.C = C
        self.eta = eta
        self.buffer_size = buffer_size
        self.buffer = buffer
        self.beta_form = beta_form
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        super()._check_params()
        if self.beta_form not in ("scw", "dissertation"):
            raise ValueError(f"beta_form must be 'scw' or 'dissertation', got "
                             f"{self.beta_form!r}")

    def _init_model(self, n_features):
        if 8 * n_features**2 > _CBR_MAX_BYTES:
            raise ValueError(
                f"cbr keeps a dense {n_features} x {n_features} covariance "
                f"({8 * n_features**2 / 2**30:.0f} GiB); for high-dimensional data use "
                "cbr_diag (diagonal, O(d) state, sparse updates)")
        self.covariance_ = np.eye(n_features)

    def _kernel_args(self):
        return (float(self.C), self._phi(), self.beta_form == "dissertation",
                np.zeros(1), self.covariance_)

    def _finish_chunk(self):
        symmetrize(self.covariance_)


@register("cbr_diag")
@_documented(50, "fifo", "50 per class; the dissertation evaluates CBR-diag_FIFO only.",
             "mu", "    variance_ : ndarray of shape (n_features,)\n"
                   "        ``1 / G``: the diagonal of Sigma (G = diagonal precision).\n")
class CBRDiag(_ConfidenceWeighted):
    """CBR-diag: diagonal confidence-weighted bipartite ranking.

    Dissertation 000 Sec. 4.4, Prop. 2, Alg. 4-6; ALGORITHMS.md 3.3. As CBR with a
    diagonal Gaussian; ``G`` is the diagonal of ``Sigma^-1``, initialised to 1
    (stored as ``variance_ = 1 / G``, which saves a division per coordinate). For each row ``x`` of the opposite buffer, ``z = x_t - x``::

        v = sum_i z_i^2 / G_i ;  m = y_t mu.z ;  alpha as in CBR (Prop. 1/2)
        u = (-alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4 v))^2 / 4
        mu_i <- mu_i + alpha y_t z_i / G_i
        G_i  <- G_i + (alpha phi / sqrt(u)) z_i^2                for i in supp(z)

    the exact diagonal of the SCW precision update (``diag_update="precision"``,
    the resolution of erratum 13). ``diag_update="dissertation"`` applies Prop. 2
    as printed: ``v = sum_i z_i^2 / (G_i + C)`` and ``G_i += beta z_i^2`` with
    ``beta = alpha phi / sqrt(u + v alpha phi)``. Every operation touches only the
    support of ``z``: O(M (nnz(x_t) + nnz(x))) per arrival on CSR input, O(d)
    state -- the high-dimensional variant. Same numerical guards as CBR.

    Parameters
    ----------
    C : float, default=1.0
        Penalty C; tuned on ``2^[-10:10]`` by 3-fold CV (Sec. 4.5.2 item 7).
    eta : float, default=0.7
        Confidence probability eta in (0.5, 1).
    diag_update : {"precision", "dissertation"}, default="precision"
        Reading of Prop. 2 (erratum 13); see above.
    """

    _rule_name = "cbr_diag"

    def __init__(self, C=1.0, eta=0.7, buffer_size=50, buffer="fifo",
                 diag_update="precision", random_state=None, verbose=0, pos_label=None):
        self.C = C
        self.eta = eta
        self.buffer_size = buffer_size
        self.buffer = buffer
        self.diag_update = diag_update
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label

    def _check_params(self):
        super()._check_params()
        if self.diag_update not in ("precision", "dissertation"):
            raise ValueError(f"diag_update must be 'precision' or 'dissertation', got "
                             f"{self.diag_update!r}")

    def _init_model(self, n_features):
        self.variance_ = np.ones(n_features)

    def _kernel_args(self):
        return (float(self.C), self._phi(), self.diag_update == "dissertation",
                self.variance_, np.zeros((1, 1)))
