"""What the learner families share: the weight-vector state and its bookkeeping.

:class:`WeightsModel` gives a learner whose ranking vector lives in the weight
primitive (:class:`aucopt._kernels._weights.Weights`) everything around it: the
declared state (``weights_`` plus its scalars), a per-call view journaled by the
call's transaction, the O(nnz) scores used for thresholds and ``verbose``, the
maintained norm for the divergence check, and ``coef_`` as a read-only array
computed on first access (so a streaming ``partial_fit`` never reads out the
whole model).
"""
import math

import numpy as np

from aucopt._docs import docstring, entries, fill
from aucopt._kernels._ranksvm import dot
from aucopt._kernels._weights import ElasticNetWeights, Weights, dense_scores
from aucopt._state import Array, Scalar
from aucopt.driver import MAX_RETRIES, MONITOR_ROWS, MONITOR_SHARE, RETRY_FACTOR
from aucopt.validation import (auto_or_positive, check_count, check_positive, check_seed,
                               check_state_bytes, row_scale, row_source)

__all__ = ["WeightsModel", "ElasticNetModel", "weights_state", "settle", "settles", "writable",
           "EPOCH_PARAMS", "epoch_params", "check_epochs", "RepeatedPasses", "repeated_passes",
           "SHUFFLE_PARAMS", "check_shuffle",
           "auto_or_positive", "merge_doc", "AVERAGED_WEIGHTS", "WEIGHTED_AVERAGES",
           "search_scale", "auto_value", "check_state_size", "document_weights",
           "document_retries", "NORM_CAP_QUANTILE", "auto_norm_cap", "sqnorm_quantile"]

# A pass of at least d / SETTLE_RATIO steps folds the weight vector's scale at its
# end: the O(d) fold is then amortised over the pass's O(nnz) steps.
SETTLE_RATIO = 16


def weights_state(columns, averaging=False):
    """Declared state of a :class:`Weights` with ``columns`` state columns."""
    state = {
        "weights_": Array("f8", ("d", columns)),
        "weights_scale_": Scalar(float),
        "weights_vsq_": Scalar(float, low=0.0),
    }
    if averaging:
        state.update({"weights_avg_c_": Scalar(float), "weights_avg_q_": Scalar(float, low=0.0)})
    return state


# the stopping rule's parameters after n_epochs ({tol}, {patience} to fill)
_EPOCH_TAIL = """
    tol : float, default={tol}
        Smallest improvement of the objective that counts as progress.
    n_iter_no_change : int, default={patience}
        Passes in a row without progress that stop training.
    max_epochs : int, default=50
        Most passes with ``n_epochs="auto"``."""

_EPOCH_TEMPLATE = """
    n_epochs : int or "auto", default="auto"
        Passes over the data in ``fit``. "auto" runs passes until the training
        objective stalls: after each pass it is evaluated on the training rows (a
        fixed random subsample of at most {monitor}), and training stops once
        ``n_iter_no_change`` passes in a row improved it by less than ``tol``, or
        after ``max_epochs`` passes; ``stop_reason_`` says which. An int runs
        exactly that many passes.""" + _EPOCH_TAIL


def epoch_tail(tol, patience):
    """The docs of ``tol``, ``n_iter_no_change`` and ``max_epochs`` with these
    defaults, for a learner that documents its ``n_epochs`` rule itself."""
    return _EPOCH_TAIL.replace("{tol}", tol).replace("{patience}", str(patience))


def monitored_rows_doc(monitor_rows=MONITOR_ROWS):
    """How many training rows a stopping rule that declares ``monitor_rows``
    evaluates, in words (:func:`aucopt.driver.monitor_size`)."""
    monitor = f"{monitor_rows:,}"
    if monitor_rows < MONITOR_ROWS:
        monitor += f" or 1/{MONITOR_SHARE} of them if more, up to {MONITOR_ROWS:,}"
    return monitor


def epoch_params(monitor_rows=MONITOR_ROWS):
    """The epoch parameters' docs as most learners default them, for a learner
    whose stopping rule monitors at most ``monitor_rows`` rows (``{tol}`` left to
    fill)."""
    return _EPOCH_TEMPLATE.replace("{patience}", "2").replace(
        "{monitor}", monitored_rows_doc(monitor_rows))


EPOCH_PARAMS = epoch_params()


SHUFFLE_PARAMS = """
    shuffle : bool, default=True
        ``fit`` presents the rows in a random order (seeded by ``random_state``);
        ``partial_fit`` keeps the caller's order (a stream is a stream). Without it
        a learner that consumes rows in order and is fed a file stored sorted by
        label learns one class at a time and returns a near-chance model.
    random_state : int, numpy Generator or None, default=None
        Seed of the shuffle{extra}; the same seed gives the same model, bit for
        bit, for dense and CSR input."""


def check_flag(name, value):
    """A parameter that must be a bool (TypeError otherwise)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def check_shuffle(learner):
    """``shuffle`` (a bool) and ``random_state``."""
    check_flag("shuffle", learner.shuffle)
    check_seed(learner.random_state)


def search_scale(learner, X):
    """``s``, the mean squared norm of the rows ``learner`` learns on from ``X``.

    Search spaces are measured in it, as the "auto" defaults are (``row_scale_``).
    A learner on a Gaussian-kernel feature map (``traits.unit_rows``) learns on
    mapped rows of squared norm about ``k(x, x) = 1``: 1, without fitting the map.
    """
    if learner.traits.unit_rows:
        return 1.0
    return row_scale(row_source(X))


def auto_value(learner, name, X):
    """The value the "auto" rule of parameter ``name`` gives on ``X`` (search spaces
    centred on the default)."""
    return learner._auto_params[name](learner, search_scale(learner, X), row_source(X))


def nonzero_entries(rows):
    """The non-zero entries of a row source, counted in the values, so that the dense
    and the CSR form of one matrix (with or without stored zeros) agree."""
    try:
        X = rows.matrix
    except ValueError:  # a take() view: its rows one by one
        return sum(np.count_nonzero(rows.get_row(i)[1]) for i in range(rows.n_rows))
    return int(np.count_nonzero(X.data if hasattr(X, "tocsr") else X))


def check_epochs(learner):
    """``n_epochs`` ("auto" or >= 1), ``tol``, ``n_iter_no_change``, ``max_epochs``."""
    if not (isinstance(learner.n_epochs, str) and learner.n_epochs == "auto"):
        check_count("n_epochs", learner.n_epochs)
    check_positive("tol", learner.tol, allow_zero=True)
    check_count("n_iter_no_change", learner.n_iter_no_change)
    check_count("max_epochs", learner.max_epochs)


# norm_cap="auto" (Uni-Exp, adaDSGD): this quantile of the first data's squared row norms
NORM_CAP_QUANTILE = 0.75


def sqnorm_quantile(rows, s, q):
    """The ``q`` quantile of the squared row norms of a row source; ``s`` (their mean)
    for statistics without the rows' norms (a distributed fit resolves its
    parameters from sums) or when the quantile is 0."""
    if not getattr(rows, "has_norms", False) or rows.n_rows == 0:
        return s
    return float(np.quantile(rows.norms(), q)) or s


def auto_norm_cap(rows, s):
    """``norm_cap="auto"`` of Uni-Exp and adaDSGD on a row source: the
    ``NORM_CAP_QUANTILE`` quantile of its squared row norms (see
    :func:`sqnorm_quantile`)."""
    return sqnorm_quantile(rows, s, NORM_CAP_QUANTILE)


class RepeatedPasses:
    """A learner whose paper makes one pass over the data, which ``fit`` repeats
    (shuffled each time) until the objective stalls with ``n_epochs="auto"``: the
    class adds ``n_epochs``, ``tol``, ``n_iter_no_change`` and ``max_epochs`` to its
    parameters and has an ``_objective``; ``n_epochs=1`` is the paper's single
    pass."""

    def _check_params(self):
        super()._check_params()
        check_epochs(self)


def repeated_passes(tol, one_pass=None, repeated=None, below=None,
                    tasks="the 56 tasks", patience=2, stall="", parameters=True):
    """Class decorator of a :class:`RepeatedPasses` learner: its docstring gets the
    ``n_epochs`` family of parameters (``tol``, ``patience``: the defaults of ``tol``
    and ``n_iter_no_change``) and the paragraph
    saying why the default departs from the paper's single pass, with the
    learner's measured mean AUC gaps to logistic regression (``one_pass``,
    ``repeated``: strings) and the tasks more than 0.05 below it by default
    (``below``), when measured (on ``tasks``); ``stall``: sentences on the
    learner's stall rule, appended; ``parameters=False`` adds the paragraph only (a
    composition whose learner documents the parameters)."""

    def deco(cls):
        measured = "" if one_pass is None else (
            f" On {tasks} of ``tools/tabular.py`` (imbalanced tabular sets of "
            "100-5,000 rows, half of them with heavy-tailed rows; stratified 5-fold "
            "CV) its mean test AUC minus that of scikit-learn's "
            f"``LogisticRegression()`` went from {one_pass} with one pass to "
            f"{repeated}, with {below} task{'' if below == 1 else 's'} more than 0.05 "
            "below it.")
        cls.__doc__ = docstring(cls.__doc__, paragraphs=[
            "Passes: the paper makes one pass over the data (``n_epochs=1`` reproduces "
            "it). The default departs from it: one pass over a few hundred rows with "
            "tens of positives is too little training, so ``fit`` repeats passes, "
            "shuffled each time, until the training objective stalls (as the SGD "
            "learners do). Each pass's rows count in the model's statistics and "
            "``t_`` (its merge weight): for :meth:`merge` fit the parts with "
            "``n_epochs=1`` (a distributed fit makes one pass)." + measured
            + (" " + stall if stall else "")],
            parameters=[docstring(_EPOCH_TEMPLATE, fields={
                "tol": tol, "patience": patience, "monitor": f"{MONITOR_ROWS:,}"}).strip("\n")]
            if parameters else ())
        return cls

    return deco


def writable(array):
    """``array``, or a copy when it is read-only (e.g. unpickled from a memmap)."""
    return array if array.flags.writeable else np.array(array, copy=True)


def settles(w, n_steps):
    """Whether a pass of ``n_steps`` ends with :func:`settle`'s fold (which also
    recomputes ``||v||^2``: the pass may set ``w.defer_norm``)."""
    return n_steps * SETTLE_RATIO >= w.n_features


def settle(w, n_steps):
    """Fold the view's scale after a long enough pass (see ``SETTLE_RATIO``)."""
    if settles(w, n_steps):
        w.py_fold()


# Merge rules of the weight vector's parts (names of WeightsModel._merge_values): the
# iterate is averaged by the models' weights; the running average is pooled: the sums
# of the snapshots and their weights add (the average of all the parts' snapshots).
AVERAGED_WEIGHTS = {"w": "mean", "w_sum": "sum", "w_q": "sum"}
# Averages whose snapshot weights grow with the step count (ASAM / PSAM's avg_power):
# pooling the snapshots would let the longest part dominate, so the merged average is
# the models' averages averaged with the merge weights; the snapshot weights still add
# (the average continues in the same units)
WEIGHTED_AVERAGES = {"w": "mean", "w_avg": "mean", "w_q": "sum"}

# The Attributes entries of a fitted learner's input that every family documents (its
# docstring templates' {input_attributes} field)
INPUT_ATTRIBUTES = """\
    classes_ : ndarray of shape (2,)
        ``[negative label, positive label]``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,), dtype object
        The column names of a dataframe ``X`` given to ``fit`` (all strings);
        absent otherwise. Later calls check their columns against them."""


def merge_doc(kind, what):
    """The paragraph of a learner docstring saying how its models merge (``kind``
    as the learner's ``_merge``; ``what`` the rest of the sentence)."""
    head = {"exact": "exact", "average": "by weighted averaging (an approximation)"}[kind]
    return "\n" + fill(f"Merging: {head}. :meth:`merge` (and :func:`aucopt.dask.fit`) {what}")


def check_state_size(learner, n_features, work_vectors=None):
    """Refuse, before anything is allocated, a model on ``n_features`` features
    (the learner's own space) whose declared state of ``d`` rows plus
    ``work_vectors`` float64 work vectors of length ``d`` (solver vectors, scratch
    rows; default: the learner's ``_work_vectors()``) would exceed
    ``max_state_bytes`` (the default cap where the learner has no such parameter).
    A CSR matrix of 2^31 columns and a handful of nonzeros would otherwise
    allocate (or abort on) tens of GiB."""
    if work_vectors is None:
        work_vectors = learner._work_vectors()
    total = 8 * n_features * work_vectors
    # fields of no fixed dtype (labels, column names) come with the data, not allocated
    for field in type(learner)._state_spec().values():
        shape = getattr(field, "shape", ())
        if field.kind == "array" and hasattr(field, "dtype") and "d" in shape and all(
                s == "d" or isinstance(s, int) for s in shape):
            total += field.dtype.itemsize * math.prod(
                n_features if s == "d" else s for s in shape)
    own = "max_state_bytes" in learner.get_params()
    check_state_bytes(total, f"{type(learner).__name__}'s state ({n_features} features)",
                      learner.max_state_bytes if own else None,
                      "its arrays are dense in the columns of X whatever their nonzeros: "
                      "drop the columns no row uses (re-index the features)"
                      + (", or raise max_state_bytes" if own else ""))


def document_weights(cls, what, copies=True):
    """Put the paragraph saying what ``sample_weight`` does to learner ``cls`` (``what``:
    the rest of it; ``copies``: the learner trains on copies of the rows) before the
    Parameters section of its docstring."""
    if not cls.__doc__:
        return
    head = """Sample weights (``fit``, ``partial_fit``): a row of integer weight ``k``
        is ``k`` copies of the row, one after the other, so the model is that of the
        repeated rows, bit for bit (a fractional part adds one more copy with that
        probability; see :meth:`~aucopt.base.BaseLearner.fit`).""" if copies else \
        "Sample weights (``fit``):"
    cls.__doc__ = docstring(cls.__doc__, paragraphs=[f"{head} {what}"])


def document_retries(cls):
    """Add ``n_retries_`` to the Attributes of learner ``cls`` when a diverged default
    fit of it is retried (its ``_retry_param``, see :func:`aucopt.driver.fit`)."""
    name = cls._retry_param
    if name is None or not cls.__doc__ or any(
            "n_retries_" in names for names, _ in entries(cls.__doc__, "Attributes")):
        return
    cls.__doc__ = docstring(cls.__doc__, attributes=["    n_retries_ : int\n" + fill(
        f"How many times this ``fit`` diverged with the default ``{name}`` and was run "
        f"again from scratch with a more cautious one (the default rule's value times "
        f"{RETRY_FACTOR} per retry, unless the entry of ``{name}`` says otherwise; at "
        f"most {MAX_RETRIES}; 0 when the first attempt converged). Set by ``fit`` only.", 8)])


class _CoefFromState:
    """``coef_`` computed from the state on first access (read-only, cached)."""

    def _coef_finite(self):
        # ||coef_||_1 is finite exactly when every weight is (short of an overflow of
        # the sum, beyond 1e308): checked without reading coef_ out
        return math.isfinite(self._coef_norms()[1])

    @property
    def coef_(self):
        cached = self.__dict__.get("_coef_cache")
        if cached is None:
            if "weights_" not in self.__dict__:
                raise AttributeError(f"{type(self).__name__} has no coef_ before fit")
            cached = self._coef()
            cached.setflags(write=False)
            self.__dict__["_coef_cache"] = cached
        return cached


class WeightsModel(_CoefFromState):
    """Mixin: the ranking vector is a :class:`Weights` over ``weights_``.

    ``_columns`` state columns (1 = ``v``; with ``_averaged`` column 1 is the lazy
    average's accumulator and ``coef_`` is the average).
    """

    _columns = 1
    _averaged = False

    def _init_weights(self, n_features, columns=None):
        check_state_size(self, n_features)
        self.weights_ = np.zeros((n_features, columns or self._columns))
        self.weights_scale_ = 1.0
        self.weights_vsq_ = 0.0
        if self._averaged:
            self.weights_avg_c_ = 0.0
            self.weights_avg_q_ = 0.0

    def _weights(self):
        """A view of the weight state (not journaled: for reading)."""
        state = writable(self.weights_)
        if self._averaged:
            return Weights(state, scale=self.weights_scale_, vsq=self.weights_vsq_,
                           averaging=True, avg_c=self.weights_avg_c_,
                           avg_q=self.weights_avg_q_)
        return Weights(state, scale=self.weights_scale_, vsq=self.weights_vsq_)

    def _open_weights(self):
        """The view a training call updates, journaled by its transaction."""
        self.weights_ = writable(self.weights_)
        return self._tx.track(self._weights())

    def _store_weights(self, w):
        s = w.scalars()
        self.weights_scale_ = s["scale"]
        self.weights_vsq_ = s["vsq"]
        if self._averaged:
            self.weights_avg_c_ = s["avg_c"]
            self.weights_avg_q_ = s["avg_q"]

    def _coef(self):
        w = self._weights()
        return w.average() if self._averaged else w.coef()

    def _coef_norms(self):
        """``(||coef_||^2, ||coef_||_1)`` without reading ``coef_`` out (O(d), no copy)."""
        return self._weights().norms(self._averaged)

    def _raw_scores(self, rows):
        # the average's scores read two state columns per entry: X @ coef_ (read out
        # once, O(d), and cached) is 2-4 times faster once the rows' entries are d
        if self._averaged and ("_coef_cache" in self.__dict__
                               or rows.nnz >= self.weights_.shape[0]):
            return dense_scores(rows, self.coef_)
        return self._weights().scores(rows, self._averaged)

    def _weight_norm(self):
        return abs(self.weights_scale_) * math.sqrt(self.weights_vsq_)  # no overflow of scale**2

    def _check_state(self):
        super()._check_state()
        if self.weights_scale_ == 0.0:
            raise ValueError("weights_scale_ is 0")

    # merge: "w" the iterate, "w_sum" / "w_q" the running average's sum of snapshots
    # and their total weight (average = w_sum / w_q), "w_avg" the average itself,
    # "w_col<k>" a rule's state column k

    def _merge_values(self):
        values = super()._merge_values()
        rules = self._merge_spec()
        w = self._weights()
        first = 2 if self._averaged else 1
        parts = {"w": w.coef}
        if self._averaged:
            parts.update(w_sum=lambda: self.weights_avg_q_ * w.average(),
                         w_avg=w.average, w_q=lambda: self.weights_avg_q_)
        for k in range(first, self.weights_.shape[1]):
            parts[f"w_col{k}"] = lambda k=k: self.weights_[:, k].copy()
        values.update({name: get() for name, get in parts.items() if name in rules})
        return values

    def _merge_store(self, values):
        parts = {k: values.pop(k) for k in list(values)
                 if k in ("w", "w_sum", "w_avg", "w_q") or k.startswith("w_col")}
        super()._merge_store(values)
        if parts:
            q = parts.pop("w_q", 0.0)
            average = parts.pop("w_avg", None)
            total = parts.pop("w_sum", None) if average is None else q * average
            self._set_weights(parts.pop("w", None), total, q,
                              {int(k[len("w_col"):]): v for k, v in parts.items()})

    def _set_weights(self, w=None, total=None, q=0.0, columns=None):
        """A new weight state holding ``w`` (None: the current iterate), a running
        average of sum ``total`` over snapshots of total weight ``q``, and state
        columns ``{k: column}`` (the others are kept); scale 1, ``||w||^2`` kept.
        Learners that compute ``w`` whole (a solver, a merge) write it through this."""
        old = self.weights_
        state = np.array(old, dtype=np.float64, order="C")
        w = self._weights().coef() if w is None else np.ascontiguousarray(w, np.float64)
        state[:, 0] = w
        if self._averaged:
            state[:, 1] = -total if q > 0 else 0.0  # the sum avg_c v - u at avg_c = 0
            self.weights_avg_c_ = 0.0
            self.weights_avg_q_ = float(q)
        for k, column in (columns or {}).items():
            state[:, k] = column
        self.weights_ = state
        self.weights_scale_ = 1.0
        self.weights_vsq_ = float(dot(w, w))  # fixed order: the same on every CPU


class ElasticNetModel(_CoefFromState):
    """Mixin: the ranking vector is an :class:`ElasticNetWeights` over ``weights_``."""

    _state = {
        "weights_": Array("f8", ("d", 3)),
        "weights_P_": Scalar(float, low=1.0, high=1e100),
        "weights_R_": Scalar(float, low=0.0),
    }

    def _init_weights(self, n_features):
        check_state_size(self, n_features)
        self.weights_ = ElasticNetWeights.fresh(n_features)
        self.weights_P_ = 1.0
        self.weights_R_ = 0.0

    def _weights(self):
        return ElasticNetWeights(writable(self.weights_), P=self.weights_P_, R=self.weights_R_)

    def _open_weights(self):
        self.weights_ = writable(self.weights_)
        return self._tx.track(self._weights())

    def _store_weights(self, w):
        s = w.scalars()
        self.weights_P_, self.weights_R_ = s["P"], s["R"]

    def _coef(self):
        return self._weights().coef()

    def _coef_norms(self):
        """``(||coef_||^2, ||coef_||_1)`` without reading ``coef_`` out (O(d), no copy)."""
        return self._weights().norms()

    def _raw_scores(self, rows):
        return self._weights().scores(rows)

    def _merge_values(self):
        values = super()._merge_values()
        if "w" in self._merge_spec():
            values["w"] = self._coef()
        return values

    def _merge_store(self, values):
        w = values.pop("w", None)
        super()._merge_store(values)
        if w is not None:
            state = ElasticNetWeights.fresh(w.shape[0])
            state[:, 0] = w
            self.weights_, self.weights_P_, self.weights_R_ = state, 1.0, 0.0

    def _check_state(self):
        super()._check_state()
        stamps = self.weights_[:, 1]
        if stamps.size and (stamps.min() < 1.0 or stamps.max() > self.weights_P_
                            or self.weights_[:, 2].min() < 0.0
                            or self.weights_[:, 2].max() > self.weights_R_):
            raise ValueError("weights_ stamps are outside [1, P] x [0, R]")
