"""Online buffered pairwise learners: OAM_seq, OAM_gra, CBR, CBR-diag.

OAM (Zhao, Hoi, Jin & Yang, Online AUC Maximization, ICML 2011) and CBR
(Khalid, Scalable Large Margin Pairwise Learning Algorithms, PhD dissertation,
2019, Ch.4). Each arriving row ``(x_t, y_t)`` first enters the buffer of its
class (reservoir sampling exactly as the dissertation's Alg. 5, or FIFO), then the
model is updated against every row of the *opposite* buffer in its iteration order
(slot order for a reservoir, oldest to newest for FIFO).

Truly streaming: ``fit`` with ``n_epochs=1`` (the papers' single pass) = fresh
state + one pass, ``partial_fit`` continues the same pass with the buffers,
counters and random stream kept, so ``partial_fit`` over the chunks of a stream
gives the model of that ``fit`` on the concatenation (same seed; bit for bit except
``cbr``, whose covariance updates in a ``partial_fit`` of a fitted model are kept
pending and agree to rounding). By default ``fit`` repeats shuffled passes until
the objective stalls (``n_epochs="auto"``, each learner's docstring says why). The
reservoir draws two uniforms ``(u, r)`` per arriving row whether it needs them or
not, so the draws do not depend on the chunking.

State: the ranking vector in the weight primitive (``weights_``: ``(d, 1)``, for
``cbr_diag`` ``(d, 2)`` with the variance ``1/G`` as column 1), ``covariance_``
(``d x d``) for ``cbr``, and the two buffers: a ``(2M, d)`` block for dense input or
a pooled CSR ring for sparse input, chosen by the first chunk.

Transactions: the dense block is journaled by slot, the pool is only appended to
(a repack writes new arrays), the slot metadata (``O(M)``) is copied per call, and
``cbr``'s covariance is not written during a ``partial_fit`` of a fitted model: the
call's rank-one terms are kept pending and written once it has succeeded (a copy of
the covariance is made instead when they would exceed 20% of it). A one-row
``partial_fit`` of ``oam_seq``, ``oam_gra`` or ``cbr_diag`` therefore costs
O(M nnz), nothing O(d).
"""
# The kernels are
# aucopt._kernels._buffered (rules, arrival loop) and aucopt._kernels._buffers.
from dataclasses import replace
from statistics import NormalDist

import numpy as np

from aucopt._kernels._buffered import (BufferOgd, CbrDiag, CbrFull, OamGra, OamSeq, Scw,
                                       run_arrivals, symmetrize)
from aucopt._kernels._buffers import Buffers
from aucopt._docs import docstring, fill
from aucopt._state import Array, Generator, Scalar
from aucopt.driver import Stall
from aucopt.base import BaseLearner, OnlineMixin
from aucopt.traits import Traits
from aucopt.learners._common import (INPUT_ATTRIBUTES, RepeatedPasses, WeightsModel,
                                     auto_or_positive,
                                     check_flag, check_shuffle, document_weights, merge_doc,
                                     repeated_passes, search_scale, weights_state)
from aucopt.learners._objectives import mean_pair_hinge
from aucopt.validation import (check_choice, check_count, check_positive, check_random_state,
                               check_seed, check_state_bytes, row_source)

__all__ = ["OAMSeq", "OAMGra", "CBR", "CBRDiag", "MAX_BUFFER_SIZE"]

# Largest buffer_size (rows per class): a pair update loops over the whole opposite
# buffer, so an arrival costs O(buffer_size nnz); 10**6 rows is far beyond any
# setting of the papers (50 or 100).
MAX_BUFFER_SIZE = 10**6
# CBR's n_epochs="auto" stops once its passes have presented this many rows in all
# (at most ceil(CBR_AUTO_ARRIVALS / n) passes; see its docstring)
CBR_AUTO_ARRIVALS = 20_000
# A partial_fit of cbr keeps its rank-one covariance terms pending up to this share
# of the covariance's size, then copies the covariance once instead.
PENDING_SHARE = 0.2

_POLICIES = ("fifo", "reservoir")
_SLOT_ARRAYS = ("buffer_count_", "buffer_seen_", "buffer_head_", "buffer_arrival_",
                "buffer_sqnorm_")
_DENSE = ("buffer_rows_",)
_SPARSE = ("buffer_start_", "buffer_nnz_", "buffer_values_", "buffer_indices_",
           "buffer_top_")


class _PoolTail:
    """Undo of the sparse pool: a call only writes beyond ``top`` (zero there) or
    into new arrays, so rolling back zeroes what it appended."""

    def __init__(self, values, indices, top):
        self.values, self.indices, self.top = values, indices, top

    def begin(self):
        pass

    def rollback(self):
        self.values[self.top:] = 0.0
        self.indices[self.top:] = 0

    def commit(self):
        pass


class _Buffered(WeightsModel, OnlineMixin, BaseLearner):
    """Arrival loop shared by the buffered learners (Khalid 2019, Alg. 4).

    Subclasses supply ``_rule(w, scratch)`` (the kernel's update rule) and may add
    model state (``_init_model``, ``_model_bytes``, ``_end_pass``).
    """

    _state = {
        **weights_state(1),
        "t_": Scalar(int, low=0),
        "n_updates_": Scalar(int, low=0),
        "random_state_": Generator(),
        "buffer_size_": Scalar(int, low=1, high=MAX_BUFFER_SIZE),
        "buffer_policy_": Scalar(str, choices=_POLICIES),
        "buffer_layout_": Scalar(str, choices=("dense", "sparse")),
        "buffer_count_": Array("i8", (2,), low=0),
        "buffer_seen_": Array("i8", (2,), low=0),
        "buffer_head_": Array("i8", (2,), low=0),
        "buffer_arrival_": Array("i8", ("slots",), low=-1),
        "buffer_sqnorm_": Array("f8", ("slots",), low=0.0),
        "buffer_rows_": Array("f8", ("slots", "d"), optional=True),
        "buffer_start_": Array("i8", ("slots",), low=0, optional=True),
        "buffer_nnz_": Array("i8", ("slots",), low=0, optional=True),
        "buffer_values_": Array("f8", ("*",), optional=True),
        "buffer_indices_": Array("i4", ("*",), optional=True),
        "buffer_top_": Scalar(int, low=0, optional=True),
    }
    # partial_fit over the chunks of a stream == fit on all of it
    traits = Traits(divergence_hint="lower C", merge="average", stream="chunks",
                    shuffles=True)
    _merge_rules = {"w": "mean", "t_": "sum", "n_updates_": "sum"}
    _features_fix = "raise max_state_bytes"
    # C caps a step measured in units of 1/||x||^2: "auto" is C0 / s (row_scale_)
    _C0 = 1.0
    _auto_params = {"C": lambda self, s, rows: self._C0 / s}
    _retry_param = "C"  # a diverged default fit retries with a smaller C

    # ---- parameters

    def _check_params(self):
        for name in self._auto_params:
            auto_or_positive(name, getattr(self, name))
        check_shuffle(self)
        check_count("buffer_size", self.buffer_size, maximum=MAX_BUFFER_SIZE)
        check_choice("buffer", self.buffer, _POLICIES)
        if self.max_state_bytes is not None:
            check_count("max_state_bytes", self.max_state_bytes)
        check_count("verbose", self.verbose, minimum=0)
        check_seed(self.random_state)

    def _check_resumable(self):
        if self.buffer_size != self.buffer_size_ or self.buffer != self.buffer_policy_:
            raise ValueError(
                f"buffer_size/buffer changed from {self.buffer_size_}/"
                f"{self.buffer_policy_!r} since the first partial_fit; the buffers "
                "cannot be resized mid-stream: call fit to start afresh, or set them back")

    def search_space(self, X):
        """The grid :class:`aucopt.model_selection.GridSearch` tries by default on
        ``X``: ``C`` (``eta`` for the OGD rule) from 2^-8 to 2^8 times its "auto"
        value (every other power of two; the papers tune 2^[-10:10] for unit-length
        rows: Zhao et al. 2011, Khalid 2019, Sec. 4.5.2, Ding et al. 2017)."""
        s, rows = search_scale(self, X), row_source(X)
        return {name: [rule(self, s, rows) * 2.0 ** k for k in range(-8, 9, 2)]
                for name, rule in self._auto_params.items()}

    # ---- state

    def _state_dims(self):
        return {"d": self._model_features(), "slots": 2 * self.buffer_size_}

    def _model_bytes(self, n_features):
        """Bytes of the model state besides ``weights_``."""
        return 0

    def _check_bytes(self, extra, what, fix=None):
        d = self._model_features()
        total = 8 * d * self._columns + self._model_bytes(d) + extra
        check_state_bytes(total, f"{type(self).__name__}'s state ({what})",
                          self.max_state_bytes,
                          fix or "pass the data as a scipy.sparse matrix (the buffers "
                          "then hold only nonzeros), lower buffer_size, or raise "
                          "max_state_bytes")

    def _init_state(self, n_features):
        self._check_bytes(0, f"{n_features} features", self._features_fix)
        self._init_weights(n_features)
        self._init_model(n_features)
        self.intercept_ = 0.0
        self.t_ = 0
        self.n_updates_ = 0
        self.random_state_ = check_random_state(self.random_state)
        self.buffer_size_ = int(self.buffer_size)
        self.buffer_policy_ = str(self.buffer)
        slots = 2 * self.buffer_size_
        self.buffer_count_ = np.zeros(2, dtype=np.int64)
        self.buffer_seen_ = np.zeros(2, dtype=np.int64)
        self.buffer_head_ = np.zeros(2, dtype=np.int64)
        self.buffer_arrival_ = np.full(slots, -1, dtype=np.int64)
        self.buffer_sqnorm_ = np.zeros(slots)

    def _init_model(self, n_features):
        """Model state beyond the ranking vector (CBR: covariance, CBR-diag: variance)."""

    def _init_layout(self, dense):
        """The buffers' storage, fixed by the first chunk's form."""
        slots, d = 2 * self.buffer_size_, self._model_features()
        if dense:
            self._check_bytes(8 * slots * d, f"a {slots} x {d} dense buffer block")
            self.buffer_rows_ = np.zeros((slots, d))
        else:
            self.buffer_start_ = np.zeros(slots, dtype=np.int64)
            self.buffer_nnz_ = np.zeros(slots, dtype=np.int64)
            self._store_pool(np.zeros(0), np.zeros(0, dtype=np.int32), 0)
        self.buffer_layout_ = "dense" if dense else "sparse"

    def _store_pool(self, values, indices, top):
        if values.size:
            self._check_bytes(12 * values.size, f"a pool of {values.size} buffered values")
        self.buffer_values_, self.buffer_indices_ = values, indices
        self.buffer_top_ = int(top)

    def _scratch_shape(self, n_features):
        """Shape of the rule's scratch: a dense row for the arrival, one for a
        buffered row."""
        return (2, n_features)

    def _work_vectors(self):
        return self._scratch_shape(1)[0]

    def _scratch(self, shape):
        """A zeroed work array kept between calls (not state): no O(d) allocation
        per call. The kernel leaves it zero (also when interrupted)."""
        scratch = self.__dict__.get("_scratch_array")
        if scratch is None or scratch.shape != shape:
            scratch = np.zeros(shape)
            self._scratch_array = scratch
        return scratch

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_scratch_array", None)  # a cache, not state
        return state

    # ---- training

    def _prepare(self, rows, y):
        if "buffer_layout_" not in self.__dict__:
            self._init_layout(rows.dense)

    def _open_buffers(self, state=None):
        """The buffers for this call; what the kernel writes in place is journaled
        (dense block, by slot), undone (pool tail) or copied (slot metadata).
        With ``state`` (``{attribute: array}``), a view of those arrays instead,
        outside any call (for reading, or filling new arrays)."""
        tx = self._tx if state is None else None
        a = self.__dict__ if state is None else state
        backup = tx.backup if tx else (lambda array: array)
        common = {key[len("buffer_"):-1]: backup(a[key]) for key in _SLOT_ARRAYS}
        if "buffer_rows_" in a:
            return Buffers(self.buffer_size_, self._model_features(),
                           self.buffer_policy_ == "reservoir",
                           dict(common, rows=a["buffer_rows_"]),
                           journal=tx.journal(a["buffer_rows_"]) if tx else None)
        if tx:
            tx.track(_PoolTail(a["buffer_values_"], a["buffer_indices_"], a["buffer_top_"]))
        return Buffers(self.buffer_size_, self._model_features(),
                       self.buffer_policy_ == "reservoir",
                       dict(common, start=backup(a["buffer_start_"]),
                            nnz=backup(a["buffer_nnz_"]), values=a["buffer_values_"],
                            indices=a["buffer_indices_"], top=a["buffer_top_"]))

    # ---- merging

    def _merge_check(self, models, base):
        super()._merge_check(models, base)
        if base is not None:
            raise ValueError(f"{type(self).__name__} trains in one pass: a base (rounds "
                             "of parameter mixing) does not apply")
        layouts = {m.buffer_layout_ for m in models}
        if len(layouts) > 1:
            raise ValueError(f"cannot merge {type(self).__name__} models whose buffers "
                             "hold dense and sparse rows: train every part on the same "
                             "input form")

    def _merge_extra(self, models, weights, base):
        """The buffers of one stream over the concatenated rows, the models' rows
        in argument order: a reservoir is a uniform sample of all rows seen (a
        multivariate hypergeometric draw of how many come from each model, then
        that many of its buffered rows), FIFO keeps the most recent rows."""
        M, slots = self.buffer_size_, 2 * self.buffer_size_
        state = {"buffer_count_": np.zeros(2, dtype=np.int64),
                 "buffer_seen_": np.zeros(2, dtype=np.int64),
                 "buffer_head_": np.zeros(2, dtype=np.int64),
                 "buffer_arrival_": np.full(slots, -1, dtype=np.int64),
                 "buffer_sqnorm_": np.zeros(slots)}
        if self.buffer_layout_ == "dense":
            state["buffer_rows_"] = np.zeros((slots, self._model_features()))
        else:
            state.update(buffer_start_=np.zeros(slots, dtype=np.int64),
                         buffer_nnz_=np.zeros(slots, dtype=np.int64),
                         buffer_values_=np.zeros(0), buffer_indices_=np.zeros(0, np.int32),
                         buffer_top_=0)
        merged = self._open_buffers(state)
        views = [m._open_buffers(m.__dict__) for m in models]
        offsets = np.cumsum([0] + [m.t_ for m in models[:-1]])
        rng = self.random_state_
        for cls in range(2):
            seen = np.array([m.buffer_seen_[cls] for m in models], dtype=np.int64)
            keep = int(min(M, seen.sum()))
            held = [[(t + off, idx, val) for t, idx, val in view.contents(cls)]
                    for view, off in zip(views, offsets)]
            if self.buffer_policy_ == "reservoir":
                take = rng.multivariate_hypergeometric(seen, keep)
                rows = [rows[i] for rows, k in zip(held, take)
                        for i in np.sort(rng.choice(len(rows), k, replace=False))]
                head = 0
            else:
                rows = [row for rows in held for row in rows]
                rows = rows[len(rows) - keep:]
                head = int((seen.sum() - M) % M) if seen.sum() >= M else 0
            for s in range(keep):  # FIFO: slot (head + j) % M holds the j-th oldest row
                t, idx, val = rows[(s - head) % M]
                merged.py_push(cls, idx, val, t=t)
            state["buffer_seen_"][cls] = seen.sum()
            state["buffer_head_"][cls] = head
        if self.buffer_layout_ == "sparse":
            state["buffer_values_"], state["buffer_indices_"] = merged.pool()
            state["buffer_top_"] = int(merged.top)
        return state

    def _pass(self, rows, y, index):
        w = self._open_weights()
        rule = self._rule(w, self._scratch(self._scratch_shape(rows.n_features)))
        buffers = self._open_buffers()
        draws = (self.random_state_.random((rows.n_rows, 2))
                 if self.buffer_policy_ == "reservoir" else None)
        stop = run_arrivals(rows, y, buffers, rule, draws=draws, t0=self.t_)
        while stop < rows.n_rows:  # the sparse pool is full: repack, then resume
            values, indices = buffers.repack()
            self._store_pool(values, indices, buffers.top)
            stop = run_arrivals(rows, y, buffers, rule, draws=draws, start=stop, t0=self.t_)
        if self.buffer_layout_ == "sparse":
            self.buffer_top_ = int(buffers.top)
        self.t_ += rows.n_rows
        self.n_updates_ = int(rule.n_updates)
        self._end_pass(rule)
        self._store_weights(w)

    def _end_pass(self, rule):
        """After the arrivals (CBR: close the dense view, settle the covariance)."""

    def _objective(self, rows, y):
        """The mean pairwise hinge loss of the ranking vector (O(n log n)): what the
        pair updates lower (``n_epochs="auto"`` stops once it stalls)."""
        scores = self._raw_scores(rows)
        return mean_pair_hinge(scores[y > 0], scores[y < 0])

    def _progress(self):
        count = self.buffer_count_
        return (f"arrivals {self.t_}, model updates {self.n_updates_}, buffers "
                f"+{count[1]}/-{count[0]} of {self.buffer_size_}, ")

    # ---- loaded state

    def _check_state(self):
        super()._check_state()
        if self.weights_scale_ != 1.0:
            raise ValueError("weights_scale_ must be 1 (these rules never rescale)")
        self._check_layout()
        self._check_counts()
        if self.buffer_layout_ == "sparse":
            self._check_pool()

    def _check_layout(self):
        present = {k for k in _DENSE + _SPARSE if k in self.__dict__}
        needed = set(_DENSE if self.buffer_layout_ == "dense" else _SPARSE)
        if present != needed:
            raise ValueError(f"a {self.buffer_layout_} buffer layout needs exactly "
                             f"{sorted(needed)}, got {sorted(present)}")

    def _check_counts(self):
        M = self.buffer_size_
        count, seen, head = self.buffer_count_, self.buffer_seen_, self.buffer_head_
        if int(seen.sum()) != self.t_:
            raise ValueError(f"buffer_seen_ {seen.tolist()} does not add up to t_ = {self.t_}")
        if not np.array_equal(count, np.minimum(seen, M)):
            raise ValueError(f"buffer_count_ {count.tolist()} is not min(buffer_seen_, "
                             f"{M})")
        fifo = self.buffer_policy_ == "fifo"
        expected = np.where(fifo & (seen >= M), (seen - M) % M, 0)
        if not np.array_equal(head, expected):
            raise ValueError(f"buffer_head_ {head.tolist()} does not follow from "
                             f"buffer_seen_ {seen.tolist()}")
        arrival = self.buffer_arrival_.reshape(2, M)
        live = np.arange(M) < count[:, None]
        if (arrival[~live] != -1).any():
            raise ValueError("buffer_arrival_ holds an arrival in an empty slot")
        held = arrival[live]
        if (held < 0).any() or (held >= self.t_).any() or np.unique(held).size != held.size:
            raise ValueError(f"buffer_arrival_ must hold distinct arrivals in [0, {self.t_})")
        if fifo:
            for cls in (0, 1):
                order = arrival[cls][(head[cls] + np.arange(count[cls])) % M]
                if (np.diff(order) <= 0).any():
                    raise ValueError("a FIFO buffer's arrivals must increase from its head")

    def _check_pool(self):
        M, d, top = self.buffer_size_, self._model_features(), self.buffer_top_
        start, nnz = self.buffer_start_.reshape(2, M), self.buffer_nnz_.reshape(2, M)
        live = np.arange(M) < self.buffer_count_[:, None]
        if (start[~live] != 0).any() or (nnz[~live] != 0).any():
            raise ValueError("an empty buffer slot points into the pool")
        values, indices = self.buffer_values_, self.buffer_indices_
        if values.size != indices.size:
            raise ValueError(f"buffer_values_ and buffer_indices_ differ in length "
                             f"({values.size}, {indices.size})")
        if top > values.size:
            raise ValueError(f"buffer_top_ = {top} beyond the pool of {values.size} values")
        first, size = start[live], nnz[live]
        if (first + size > top).any():
            raise ValueError(f"a buffer slot points beyond the pool's {top} stored values")
        order = np.argsort(first, kind="stable")
        held = size[order] > 0  # an empty row's slot holds nothing, wherever it starts
        if (first[order][held][1:] < (first + size)[order][held][:-1]).any():
            raise ValueError("buffer slots overlap in the pool")
        if (values[top:] != 0).any() or (indices[top:] != 0).any():
            raise ValueError("the pool beyond buffer_top_ must be zero")
        # every stored row: column indices in [0, d), strictly increasing
        first, size = first[order], size[order]
        row_start = np.repeat(np.cumsum(size) - size, size)
        positions = np.repeat(first, size) + np.arange(int(size.sum())) - row_start
        stored = indices[positions]
        follows = np.arange(stored.size)[1:] != row_start[1:]
        if stored.size and (stored.min() < 0 or stored.max() >= d
                            or (stored[1:][follows] <= stored[:-1][follows]).any()):
            raise ValueError(f"a buffered row's column indices are not increasing "
                             f"within [0, {d})")


class _ConfidenceWeighted(_Buffered):
    """Parameters shared by CBR and CBR-diag (SCW-I on pair differences)."""

    _C0 = 0.1  # C="auto" is 0.1 / row_scale_ (see CBR's docstring)

    # the parameter choosing between the default reading and the printed one
    _reading = ("beta_form", ("scw", "dissertation"))

    def _check_params(self):
        super()._check_params()
        check_positive("eta", self.eta)
        if not 0.5 < self.eta < 1.0:
            raise ValueError(f"eta must lie in (0.5, 1): it is the confidence "
                             f"probability (phi = Phi^-1(eta) > 0); got {self.eta!r}")
        name, choices = self._reading
        check_choice(name, getattr(self, name), choices)

    def _scw(self):
        """The SCW-I constants: ``C`` and ``phi = Phi^-1(eta)``."""
        return Scw(self.C_, NormalDist().inv_cdf(float(self.eta)))

    def _printed(self):
        """Whether the dissertation's printed formula is asked for."""
        name, choices = self._reading
        return getattr(self, name) == choices[1]


class _ArrivalBudget(Stall):
    """The driver's stall rule, which also stops once ``learner.t_`` (the rows the
    passes have presented) reaches ``budget``."""

    def __init__(self, learner, budget):
        super().__init__(learner.tol, learner.n_iter_no_change)
        self.learner, self.budget = learner, budget
        self.reason = "tol"

    def update(self, value, scores=None, y=None):
        if super().update(value):
            return True
        if self.learner.t_ >= self.budget:
            self.reason = "max_epochs"
            return True
        return False


_COMMON_PARAMS = """\
    buffer_size : int, default={size}
{size_note}
    buffer : {{"fifo", "reservoir"}}, default={policy!r}
        Buffer policy: reservoir sampling (Vitter's Algorithm R, as in Khalid 2019,
        Alg. 5) or first-in-first-out.
    max_state_bytes : int or None, default=None
        Refuse a model whose state (weights{extra_state}, buffers) would exceed this
        many bytes; None means 4 GiB. Dense input is buffered as a ``(2M, d)``
        block; sparse input only stores nonzeros.
    shuffle : bool, default=True
        ``fit`` presents the rows in a random order (seeded by ``random_state``);
        ``partial_fit`` keeps the caller's order (a stream is a stream). Without it
        a file stored sorted by label fills one buffer before the other sees a row,
        and the model learns from one class at a time (measured on 20 Newsgroups as
        stored: AUC 0.59-0.79 instead of 0.95-0.97).
    random_state : int, numpy Generator or None, default=None
        Seed of the shuffle and of the reservoir draws (two uniforms per arrival;
        unused by FIFO). The same seed gives the same model, bit for bit, for dense
        and CSR input.
    verbose : int, default=0
        Print one progress line per ``fit``/``partial_fit`` call (arrivals, model
        updates, buffer fill, ``||w||``, AUC on the chunk, time).
    pos_label : label or None, default=None
        Which label is positive; default the larger of the two.
"""

_COMMON_ATTRIBUTES = """\
    coef_ : ndarray of shape (n_features,)
        The ranking vector ({vector}), read from ``weights_`` on access.
    intercept_ : float
        ``-threshold`` of the training OPTROC point (of the last chunk for
        ``partial_fit``); ranks do not depend on it.
{input_attributes}
    C_, row_scale_ : float
        The ``C`` in use and the mean squared row norm of the first training data.
    t_ : int
        Rows received so far.
    n_updates_ : int
        Pair updates applied ({updates}).
    weights_ : ndarray of shape (n_features, {columns})
{weights_note}
    buffer_count_, buffer_seen_ : ndarray of shape (2,)
        Rows held in / received by the [negative, positive] buffer.
    buffer_arrival_ : ndarray of shape (2 * buffer_size,)
        Arrival index (0-based ``t``) of the row in each slot, -1 when empty.
    buffer_layout_ : {{"dense", "sparse"}}
        Buffer storage, chosen by the first chunk's input form: a dense block
        ``buffer_rows_`` or a pooled CSR ring (``buffer_start_``, ``buffer_nnz_``,
        ``buffer_values_``, ``buffer_indices_``, ``buffer_top_``).
"""


_MERGE_DOC = merge_doc("average", """averages the ranking vector (and the
    covariance of ``cbr``, the variances of ``cbr_diag``) with the models' weights (by
    default the rows each received) and adds the counts. The buffers become those
    of one stream over the models' rows in argument order: a reservoir is a uniform
    sample of all the rows seen, drawn from the models' reservoirs; FIFO keeps the
    most recent rows.""")


# What sample_weight does to a buffered learner (a paragraph of each docstring)
_BUFFER_WEIGHTS = """Each copy is an arrival: it takes its step against the other
    class's buffer (``k`` steps rather than one step ``k`` times as long: a step's
    size is set by its pair) and is a candidate for its own class's buffer; the counts
    are the weighted ones."""


def _documented(size, policy, size_note, vector, updates, columns=1, column_note="",
                extra_state="", attrs=()):
    """Add the parameters and attributes every buffered learner shares (and the
    merge and sample-weight paragraphs, before the parameters)."""

    def deco(cls):
        fields = dict(size=size, policy=policy, vector=vector, updates=updates,
                      input_attributes=INPUT_ATTRIBUTES,
                      columns=columns, extra_state=extra_state, size_note=fill(
                          "Capacity of each of the two buffers (M+ = M- = M), at most "
                          f"10**6. {size_note}", 8), weights_note=fill(
                          "The weight primitive's state: column 0 is the ranking vector"
                          f"{column_note}.", 8))
        cls.__doc__ = docstring(cls.__doc__, paragraphs=[_MERGE_DOC],
                                parameters=[docstring(_COMMON_PARAMS, fields=fields)],
                                attributes=[docstring(_COMMON_ATTRIBUTES, fields=fields),
                                            *attrs])
        document_weights(cls, _BUFFER_WEIGHTS)
        return cls

    return deco


class _AveragedPasses(RepeatedPasses):
    """Repeated passes whose model is the mean of the end-of-pass iterates
    (``average_passes``, a parameter of the learner): the passes go on from the last
    iterate, the model that is scored (by the stall rule too) and returned after
    pass ``k`` is the mean of the iterates at the ends of passes 1..k of this
    ``fit``. One pass (``n_epochs=1``, ``partial_fit``) is the iterate itself."""

    def _check_params(self):
        super()._check_params()
        check_flag("average_passes", self.average_passes)

    def _pass(self, rows, y, index):
        averaged = self.__dict__.get("_pass_iterates") if index else None
        if averaged is not None:  # the pass continues from the iterate, not the mean
            self._set_weights(averaged[1])
        super()._pass(rows, y, index)
        if self.average_passes and self._tx.fresh and self.n_epochs != 1:
            iterate = self._coef()
            total = iterate.copy() if averaged is None else averaged[0] + iterate
            self.__dict__["_pass_iterates"] = (total, iterate)
            if index:
                self._set_weights(total / (index + 1))

    def _finish(self, rows, y):
        # the sum of this fit's end-of-pass iterates and the last one: working state
        self.__dict__.pop("_pass_iterates", None)
        super()._finish(rows, y)


_OAM_UPDATES = "pairs with a positive loss"

# what the OAM learners' repeated passes return (their "Passes" paragraph)
_AVERAGED_STALL = "The model is the mean of the passes' end iterates (``average_passes``)."
# average_passes of the learners with _AveragedPasses (each adds its reasons)
_AVERAGE_PASSES = """With more than one pass (``n_epochs`` not 1), the model
    ``fit`` returns after pass ``k`` (and the one the stall rule scores) is the mean
    of the iterates at the ends of passes 1..k; the passes go on from the last
    iterate. False returns the last iterate. One pass (the paper's) is the same
    either way."""
# why a learner defaults to the mean (average_passes=True)
_AVERAGE_DEFAULT = """The default departs from the paper's last iterate: repeated
    passes keep the pair steps' size, and the last iterate swings from pass to pass."""
# the OAM learners' case (each adds its measured numbers)
_OAM_SWINGS = """On the larger sets: standardised magic04, OAM_seq's test AUC after
    passes 1-4: 0.834, 0.838, 0.824, 0.790, where the stall rule stopped; the mean
    of the four 0.841."""


def _average_documented(numbers, default=True):
    """Add ``average_passes`` (its ``default``, with the learner's reasons and
    measured ``numbers``) to its Parameters."""

    def deco(cls):
        why = _AVERAGE_DEFAULT if default else ""
        cls.__doc__ = docstring(cls.__doc__, parameters=[
            f"    average_passes : bool, default={default}\n"
            + fill(f"{_AVERAGE_PASSES} {why} {numbers}", 8)])
        return cls

    return deco


@_documented(100, "reservoir", "100 per class as recommended by Zhao et al.; Khalid "
             "(2019, Ch.4) uses 50.", "w", _OAM_UPDATES)
@_average_documented(
    _OAM_SWINGS + " On the 16 standardised dense sets of ``tools/defaults_check.py`` the "
    "last iterate of the default passes was more than 0.03 test AUC below the best ``C`` of "
    "``search_space`` on magic04 (0.790 against 0.841); the mean is within 0.013 of "
    "the best ``C`` on all 16 (magic04 0.841 against 0.845, german 0.819 / 0.828, "
    "pima 0.831 / 0.838, a9a 0.889 / 0.895, satimage 0.762 / 0.775; the last "
    "iterate's german 0.799, pima 0.818, a9a 0.865, satimage 0.751). On the 56 "
    "tabular tasks the mean gap to ``LogisticRegression()`` went from +0.0124 "
    "with the last iterate to +0.0108, with no task more than 0.05 below it.")
@repeated_passes("1e-3", "-0.011", "+0.011", 0,
                 stall=_AVERAGED_STALL)
class OAMSeq(_AveragedPasses, _Buffered):
    """OAM_seq: online AUC maximization with buffers, sequential PA-I updates.

    Zhao, Hoi, Jin & Yang, Online AUC Maximization, ICML 2011 (the sequential
    update), the first-order baseline of Khalid, Scalable Large Margin Pairwise
    Learning Algorithms, PhD dissertation, 2019 (Tables 4.3, 4.5). For each row
    ``x`` of the opposite buffer, in order, with ``u = y_t (x_t - x)``::

        l = max(0, 1 - w.u);  if l > 0:  w <- w + min(C_t, l / ||u||^2) u

    the exact minimiser of ``1/2 ||w - w_i||^2 + C_t max(0, 1 - w.u)``, with
    ``C_t = C max(1, M_opp^t / M_opp)``: the opposite class's rows received so far
    over its buffer capacity (a full buffer stands in for all of them). Pairs with
    ``u = 0`` are skipped. Cost per arrival O(M (nnz(x_t) + nnz(x))); nothing is
    dense.

    Parameters
    ----------
    C : float or "auto", default="auto"
        Penalty C (aggressiveness of the PA-I step). Khalid (2019, Sec. 4.5.2) tunes
        it on ``2^[-10:10]`` by 3-fold CV. "auto" is ``2^-9 / s * min(1, 20 M / n)``
        with ``s`` the mean squared row norm (``row_scale_``), ``M`` the buffer size
        and ``n`` the rows of the first training data. The step it caps is ``l /
        ||x_t - x||^2``, measured in units of ``1 / s``, and the cap ``C_t`` grows
        with the stream to ``C n_opp / M``: the factor keeps the cap the stream ends
        with the same for every ``n``. The repeated passes of ``fit`` count each row
        once: ``C_t`` stays where the first pass left it (counting the rows again
        raised the cap 3-5 times over the passes: magic04 standardised, test AUC
        of the last iterate 0.761 against 0.790 without it and 0.834 with one pass;
        pima 0.682 / 0.779 / 0.834). Chosen from a scan over 28 benchmark forms
        (4 text sets as TF-IDF, max-abs scaled and binary rows, 16 dense sets
        standardised): within 0.021 AUC of the best of ``2^[-18:0:3] / s`` on all
        of them; the former ``1 / s`` lost up to 0.31 (magic04: 0.54 against
        0.85), a fixed ``2^-9 / s`` up to 0.08 and ``2^-12 / s`` up to 0.06: large
        dense sets need the smaller caps, small and text sets the larger ones.
    """

    _aucopt_name = "oam_seq"
    traits = replace(_Buffered.traits, family="buffered pairwise (passive-aggressive)",
                     limits="dense or sparse, any d; O(M nnz) per row")
    # C_t = C max(1, n_opp^t / M) grows with the stream: "auto" fixes the cap it ends
    # with (see C in the docstring)
    _C0 = 2.0 ** -9
    _auto_params = {"C": lambda self, s, rows: self._C0 / s * min(
        1.0, 20.0 * self.buffer_size / max(rows.n_rows, 1))}

    def __init__(self, C="auto", buffer_size=100, buffer="reservoir", n_epochs="auto",
                 average_passes=True, tol=1e-3, n_iter_no_change=2, max_epochs=50,
                 shuffle=True, random_state=None, verbose=0, pos_label=None,
                 max_state_bytes=None):
        self.C = C
        self.buffer_size = buffer_size
        self.buffer = buffer
        self.n_epochs = n_epochs
        self.average_passes = average_passes
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label
        self.max_state_bytes = max_state_bytes

    def _rule(self, w, scratch):
        return self._limited(OamSeq(w, scratch, self.C_, n_updates=self.n_updates_))

    def _pass(self, rows, y, index):
        # pass index >= 1 of a call repeats its rows: C_t = C max(1, M_opp^t / M) counts
        # each class's rows up to where the call's first pass left them (the cap "auto"
        # is chosen for), not once more per pass
        counts = np.array([np.sum(y <= 0), np.sum(y > 0)], dtype=np.int64)
        self.__dict__["_seen_limit"] = (self.buffer_seen_ - (index - 1) * counts
                                        if index else None)
        try:
            super()._pass(rows, y, index)
        finally:
            self.__dict__.pop("_seen_limit", None)

    def _limited(self, rule):
        """``rule`` with the received-row limits of a repeated pass (see ``_pass``)."""
        limit = self.__dict__.get("_seen_limit")
        if limit is not None:
            rule.limit_neg, rule.limit_pos = int(limit[0]), int(limit[1])
        return rule


@_documented(100, "reservoir", "100 per class as recommended by Zhao et al.", "w",
             "pairs with margin ``<= 1``")
@_average_documented(
    _OAM_SWINGS + " On the 16 standardised dense sets of ``tools/defaults_check.py`` the "
    "last iterate of the default passes was 0.030 test AUC below the best ``C`` of ``search_space`` "
    "on german (0.798 against 0.828); the mean is within 0.021 of the best ``C`` on "
    "all 16 (german 0.818 / 0.828, satimage 0.754 / 0.775, pima 0.832 / 0.838, a9a "
    "0.889 / 0.895; the last iterate's satimage 0.751, pima 0.815, a9a 0.864). On the "
    "56 tabular tasks the mean gap to ``LogisticRegression()`` went from +0.0094 "
    "with the last iterate to +0.0091, with no task more than 0.05 below it.")
@repeated_passes("1e-3", "-0.023", "+0.009", 0,
                 stall=_AVERAGED_STALL)
class OAMGra(OAMSeq):
    """OAM_gra: online AUC maximization with buffers, one gradient step per arrival.

    Zhao, Hoi, Jin & Yang, Online AUC Maximization, ICML 2011 (the gradient
    update). With ``w_t`` frozen at the arrival::

        for x in B_opp:  if y_t w_t.(x_t - x) <= 1:  w <- w + C_t y_t (x_t - x) / 2

    (``<= 1`` and the factor 1/2 as in the reviewed algorithm), ``C_t = C max(1,
    M_opp^t / M_opp)`` as for OAM_seq. Cost per arrival O(M (nnz(x_t) + nnz(x))).

    Parameters
    ----------
    C : float or "auto", default="auto"
        Step weight C; tuned on ``2^[-10:10]`` by 3-fold CV (Khalid 2019). "auto" is
        ``2^-8 / s * min(1, 20 M / n)``, in the terms of OAM_seq's rule: an arrival
        moves ``w`` by ``C_t / 2`` times the sum of ``y (x_t - x)`` over all
        violated pairs of the buffer, and ``C_t`` grows with the rows received to
        ``C n_opp / M``. On OAM_seq's 28 benchmark forms it was within 0.019 AUC of
        the best of ``2^[-18:-6:3] / s`` and of the same rule with ``2^-11``,
        ``2^-9``, ``2^-7`` (largest gaps: sonar 0.019, german 0.017, a9a 0.015),
        while ``1 / s`` lost up to 0.14 (news20 max-abs scaled: 0.78 against 0.92)
        and the fixed ``2^-10 / s`` up to 0.022. As for OAM_seq, the repeated
        passes of ``fit`` count each row once in ``C_t`` (counting them again took
        the tabular mean gap to LogisticRegression from +0.009 to +0.004, with 3
        tasks more than 0.05 below it instead of none).
    """

    _aucopt_name = "oam_gra"
    traits = replace(OAMSeq.traits, family="buffered pairwise (gradient)")
    _C0 = 2.0 ** -8

    def _rule(self, w, scratch):
        return self._limited(OamGra(w, scratch, self.C_, self.buffer_size_,
                                    n_updates=self.n_updates_))


@_documented(100, "reservoir", "100 per class, reservoir sampling, as in Ding et al. "
             "(2017).", "w", "pairs with margin ``< 1``")
@_average_documented("")
@repeated_passes("1e-2", stall=_AVERAGED_STALL)
class _BufferOGD(_AveragedPasses, _Buffered):
    """Mini-batch OGD over the opposite buffer (the update of FOAM, Ding, Liu, Zhao &
    Hoi, "Large Scale Kernel Methods for Online AUC Maximization", ICDM 2017, Algs.
    3-4); the learner of :class:`aucopt.learners.kernelized.FOAM` and
    :class:`~aucopt.learners.kernelized.NOAM`, unregistered on its own. With ``w_t``
    frozen at the arrival and ``B`` the opposite buffer::

        w <- w + (eta / |B|) sum_{x in B, y_t w_t.(x_t - x) < 1} y_t (x_t - x) / 2

    Parameters
    ----------
    eta : float or "auto", default="auto"
        Step; "auto" is ``1 / s`` (``s`` the mean squared row norm); the paper
        tunes it on 2^[-10:10].
    """

    _C0 = 1.0
    _auto_params = {"eta": lambda self, s, rows: self._C0 / s}
    _retry_param = "eta"

    def __init__(self, eta="auto", buffer_size=100, buffer="reservoir", n_epochs="auto",
                 average_passes=True, tol=1e-2, n_iter_no_change=2, max_epochs=50,
                 shuffle=True, random_state=None, verbose=0, pos_label=None,
                 max_state_bytes=None):
        self.eta = eta
        self.buffer_size = buffer_size
        self.buffer = buffer
        self.n_epochs = n_epochs
        self.average_passes = average_passes
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label
        self.max_state_bytes = max_state_bytes

    def _rule(self, w, scratch):
        return BufferOgd(w, scratch, self.eta_, self.buffer_size_, n_updates=self.n_updates_)


@_documented(50, "fifo", "50 per class as in Khalid (2019, Sec. 4.5.2); FIFO (CBR_FIFO) "
             "is the variant the dissertation finds best and reruns in Ch.7, "
             "``buffer='reservoir'`` gives CBR_RS.", "mu", "pairs with a positive loss",
             extra_state=", covariance",
             attrs=["    covariance_ : ndarray of shape (n_features, n_features)\n"
                    "        Sigma, symmetric."])
@repeated_passes("1e-3", "-0.0008", "+0.008", 1, stall=(
    "Their 5 tasks more than 0.05 below it with one pass were 4 with heavy-tailed rows "
    "(ionosphere -0.113, vehicle -0.067, satimage -0.064, ijcnn1 -0.056) and german "
    "(-0.051), of 100-600 training rows each. "
    "The passes also stop once they have presented ``CBR_AUTO_ARRIVALS`` = 20,000 rows "
    "in all (at most ``ceil(20000 / n)`` passes, ``stop_reason_`` \"max_epochs\"), a "
    "bound on the cost, not tuned for AUC: a pass costs O(n M d^2) (about 5.5 s of "
    "CPU on 2,000 rows of a9a's 123 features), and data of 20,000 rows or "
    "more gets the paper's single pass. Plain tasks went from +0.002 to -0.003, "
    "heavy-tailed ones from -0.003 to +0.019; the one task more than 0.05 below is "
    "sonar with heavy-tailed rows (-0.060; +0.055 with one pass). Measured on 54 "
    "tasks, w8a's two (5,000 rows, 300 features) counted with their one-pass values."))
@_average_documented("The iterate is the ranking vector ``mu``; the passes go on from "
                     "the last ``mu`` and its covariance. CBR's default passes are "
                     "measured with the last ``mu`` (FCBR's with the mean).", default=False)
class CBR(_AveragedPasses, _ConfidenceWeighted):
    """CBR: confidence-weighted bipartite ranking with a full covariance.

    Khalid, Scalable Large Margin Pairwise Learning Algorithms, PhD dissertation,
    2019, Sec. 4.3 (Alg. 4-6, Prop. 1): soft confidence-weighted learning (SCW-I of
    Wang, Zhao & Hoi, Exact Soft Confidence-Weighted Learning, ICML 2012) on the
    pair difference. The ranker is ``N(mu, Sigma)``, ``mu = 0``, ``Sigma = I`` at
    the start; for each row ``x`` of the opposite buffer, with ``z = x_t - x``,
    ``v = z' Sigma z`` and ``m = y_t mu.z``::

        alpha = min(C, max(0, (-m psi + sqrt(m^2 phi^4/4 + v phi^2 zeta)) / (v zeta)))
        u     = (-alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4 v))^2 / 4
        beta  = alpha phi / (sqrt(u) + v alpha phi)
        mu    <- mu + alpha y_t Sigma z
        Sigma <- Sigma - beta (Sigma z)(Sigma z)'

    with ``phi = Phi^-1(eta)``, ``psi = 1 + phi^2/2``, ``zeta = 1 + phi^2``. The
    covariance update is the outer product ``Sigma z z' Sigma`` and ``beta`` takes
    SCW's form (Prop. 1 prints ``z' z`` between the Sigmas and ``alpha phi /
    sqrt(u + v alpha phi)``; ``beta_form="dissertation"`` reproduces the latter).
    ``Sigma z`` is one BLAS ``dsymv``, the update one ``dsyr``: O(M d^2) per
    arrival and a dense d x d state, so CBR is for low-dimensional data; use
    ``cbr_diag`` for text. Pairs with ``v <= 0`` are skipped and ``alpha``,
    ``sqrt(u)`` are computed without cancellation.

    A ``partial_fit`` on a fitted model keeps its rank-one terms pending and writes
    them into ``covariance_`` once the call has succeeded (its extra memory is the
    terms, up to 20% of the covariance, then one copy); its model equals ``fit`` on
    the whole stream to rounding.

    Parameters
    ----------
    C : float or "auto", default="auto"
        Penalty C of the SCW-I loss; tuned on ``2^[-10:10]`` by 3-fold CV
        (Khalid 2019, Sec. 4.5.2). "auto" is ``0.1 / s`` with ``s`` the mean squared
        row norm: the SCW step is capped by ``C`` in units of ``1/||x||^2``, and 0.1
        was within 0.01 of the best of {0.1, 1, 10} / s on our benchmark sets while
        the fixed 1.0 lost up to 0.1 on standardised dense data.
    eta : float, default=0.7
        Confidence probability eta in (0.5, 1) (0.7 in Khalid 2019, so phi = 0.5244).
    beta_form : {"scw", "dissertation"}, default="scw"
        ``beta`` of SCW or as printed in the dissertation (for reproduction).
    """

    _aucopt_name = "cbr"
    # the declared input limit: a row costs O(M d^2), about 50 ms at d = 1000
    traits = replace(
        _Buffered.traits, family="buffered confidence-weighted (full covariance)",
        limits="dense or sparse, d up to ~1k (O(M d^2) per row, d x d covariance)",
        max_features=1_000)
    _state = {"covariance_": Array("f8", ("d", "d"))}
    _merge_rules = {"covariance_": "mean"}
    _features_fix = ("for high-dimensional data use cbr_diag (diagonal covariance, O(d) "
                     "state, sparse updates), or raise max_state_bytes")

    def __init__(self, C="auto", eta=0.7, buffer_size=50, buffer="fifo", beta_form="scw",
                 n_epochs="auto", average_passes=False, tol=1e-3, n_iter_no_change=2,
                 max_epochs=50, shuffle=True, random_state=None, verbose=0, pos_label=None,
                 max_state_bytes=None):
        self.C = C
        self.eta = eta
        self.buffer_size = buffer_size
        self.buffer = buffer
        self.beta_form = beta_form
        self.n_epochs = n_epochs
        self.average_passes = average_passes
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label
        self.max_state_bytes = max_state_bytes

    def _stall_rule(self):
        """``n_epochs="auto"``: the objective's stall rule, or the pass at which the
        passes have presented ``CBR_AUTO_ARRIVALS`` rows (``stop_reason_`` then
        "max_epochs"): a pass costs O(n M d^2)."""
        return _ArrivalBudget(self, CBR_AUTO_ARRIVALS)

    def _model_bytes(self, n_features):
        return 8 * n_features * n_features

    def _init_model(self, n_features):
        self.covariance_ = np.eye(n_features)

    def _scratch_shape(self, n_features):
        return (3, n_features)  # the arrival, z, Sigma z: contiguous for BLAS

    def _rule(self, w, scratch):
        d = self._model_features()
        limit = 0 if self._tx.fresh else int(PENDING_SHARE * d * d / (d + 1))
        if not self._tx.fresh and limit == 0:  # too small for one pending term: copy it
            self._copy_covariance()
        return CbrFull(w, self.covariance_, scratch, self._scw(),
                       printed=self._printed(), n_updates=self.n_updates_,
                       pending_limit=limit, on_limit=self._copy_covariance)

    def _copy_covariance(self):
        """The pending terms outgrew their share: keep one copy of the covariance
        for the transaction and let the rule write it directly."""
        self._tx.backup(self.covariance_)

    def _end_pass(self, rule):
        rule.finish()
        if not rule.pending:
            symmetrize(self.covariance_)
            return
        covariance = self.covariance_

        def commit():
            rule.flush()
            symmetrize(covariance)

        self._tx.defer(commit)

    def _check_state(self):
        super()._check_state()
        if not np.array_equal(self.covariance_, self.covariance_.T):
            raise ValueError("covariance_ is not symmetric")


@_documented(50, "fifo", "50 per class; Khalid (2019) evaluates CBR-diag_FIFO only.", "mu",
             "pairs with a positive loss", columns=2,
             column_note=" ``mu``, column 1 the variance ``1/G`` (``variance_``)")
@repeated_passes("1e-3", "-0.002", "+0.008", 1)
class CBRDiag(RepeatedPasses, _ConfidenceWeighted):
    """CBR-diag: diagonal confidence-weighted bipartite ranking.

    Khalid, Scalable Large Margin Pairwise Learning Algorithms, PhD dissertation,
    2019, Sec. 4.4 (Prop. 2, Alg. 4-6). As CBR with a diagonal Gaussian; ``G`` is
    the diagonal of ``Sigma^-1``, initialised to 1 (stored as the variance ``1 /
    G``, which saves a division per coordinate). For each row ``x`` of the
    opposite buffer, ``z = x_t - x``::

        v = sum_i z_i^2 / G_i ;  m = y_t mu.z ;  alpha as in CBR
        u = (-alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4 v))^2 / 4
        mu_i <- mu_i + alpha y_t z_i / G_i
        G_i  <- G_i + (alpha phi / sqrt(u)) z_i^2                for i in supp(z)

    the exact diagonal of the SCW precision update (``diag_update="precision"``;
    Crammer, Dredze & Pereira's diagonal reading). ``diag_update="dissertation"``
    applies Prop. 2 as printed: ``v = sum_i z_i^2 / (G_i + C)`` and ``G_i += beta
    z_i^2`` with ``beta = alpha phi / sqrt(u + v alpha phi)``. Every operation
    touches only the support of ``z``: O(M (nnz(x_t) + nnz(x))) per arrival on CSR
    input, O(d) state -- the high-dimensional variant. Same numerical guards as CBR.

    Parameters
    ----------
    C : float or "auto", default="auto"
        Penalty C; tuned on ``2^[-10:10]`` by 3-fold CV (Khalid 2019, Sec. 4.5.2);
        "auto" is ``0.1 / s`` as for :class:`CBR`.
    eta : float, default=0.7
        Confidence probability eta in (0.5, 1).
    diag_update : {"precision", "dissertation"}, default="precision"
        Reading of Prop. 2; see above.
    """

    _aucopt_name = "cbr_diag"
    traits = replace(_Buffered.traits, family="buffered confidence-weighted (diagonal)",
                     limits="dense or sparse, any d; O(M nnz) per row")
    _reading = ("diag_update", ("precision", "dissertation"))
    _columns = 2
    _state = weights_state(2)
    _merge_rules = {"w_col1": "mean"}

    def __init__(self, C="auto", eta=0.7, buffer_size=50, buffer="fifo",
                 diag_update="precision", n_epochs="auto", tol=1e-3, n_iter_no_change=2,
                 max_epochs=50, shuffle=True, random_state=None, verbose=0,
                 pos_label=None, max_state_bytes=None):
        self.C = C
        self.eta = eta
        self.buffer_size = buffer_size
        self.buffer = buffer
        self.diag_update = diag_update
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label
        self.max_state_bytes = max_state_bytes

    def _init_model(self, n_features):
        self.weights_[:, 1] = 1.0

    @property
    def variance_(self):
        """``1 / G``: the diagonal of Sigma (read-only view of ``weights_[:, 1]``)."""
        view = self.weights_[:, 1]
        view.flags.writeable = False
        return view

    def _rule(self, w, scratch):
        return CbrDiag(w, scratch, self._scw(),
                       printed=self._printed(), n_updates=self.n_updates_)

    def _check_state(self):
        super()._check_state()
        variance = self.weights_[:, 1]
        if variance.size and not (variance.min() > 0.0 and variance.max() <= 1.0):
            raise ValueError("the variance column of weights_ must lie in (0, 1]")
