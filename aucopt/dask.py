"""Training and scoring on a Dask cluster (the optional extra ``aucopt[dask]``).

:func:`fit` trains any mergeable learner (``aucopt list``, column "merge") on data
that lives on the workers of a ``distributed`` cluster; :func:`decision_function`
scores such data blockwise. ``dask`` and ``distributed`` are imported when these
are called (``pip install "aucopt[dask]"``); aucopt itself needs only numpy and
scipy.

How :func:`fit` trains:

* the data are row blocks: a dask array ``X`` (dense blocks, or blocks of scipy CSR
  matrices) with labels ``y`` chunked alike, or a dask bag of svmlight / LIBSVM
  file paths (labels in the files; each file is read in chunks of ``chunk_size``
  rows by :func:`aucopt.datasets.iter_svmlight`, so a worker never holds a whole
  file). Unless the learner is exact, a dask array's rows are first repartitioned
  (``shuffle=True``, the default): each block deals its rows in a seeded random
  order to all the blocks, so that every part sees both classes in their overall
  proportions, whatever the stored order (data sorted by label would otherwise
  train parts of one class). The blocks are split into ``n_parts`` runs of
  consecutive blocks (by default one per worker thread) holding about equal
  shares of the rows. A dask
  array's blocks are validated once (as ``partial_fit`` validates a chunk: the
  checks, the labels in {-1, +1}, the squared row norms) and each part's are kept
  on one worker, where every round trains on them; files are validated as they
  are read;
* the data-derived parameters (``eta="auto"``, ``lam="auto"``, ...) are resolved
  once, on all of the data (one pass computing the mean and the largest squared
  row norm), so every part trains with the same values, as one process would;
* each part is one model trained, in one task, by the pass of ``partial_fit`` on
  its blocks in order (without ``partial_fit``'s threshold, which is set once at
  the end; a learner without ``partial_fit``, such as ``spdam``, runs ``fit`` on
  its part), and the models are merged pairwise in a tree
  (:meth:`~aucopt.base.BaseLearner.merge`) on the workers; a fixed number of
  rounds is submitted as one graph;
* exact learners (``opauc``, ``adaoam``, ``opaucr``) need one round: their merged
  statistics are those of the whole data and the merge ends with
  :meth:`~aucopt.learners.OPAUC.solve`; ``opaucr``'s parts draw their Gaussian
  vectors from consecutive segments of the stream of ``random_state``, so the
  result equals ``solve()`` of ``OPAUCr(shuffle=False)`` fitted on the rows in
  block order, to rounding. Their rows are not shuffled (the statistics do not
  depend on the order);
* averaging learners with epochs (``sam``, ``asam``, ``psam``, ``adadsgd``,
  ``solam``, ``spam``) run ``n_rounds`` rounds of iterative parameter mixing
  (McDonald, Hall & Mann, Distributed Training Strategies for the Structured
  Perceptron, NAACL 2010): in each round every part continues from the merged
  model of the round before, over its blocks (one epoch of the data in all), and
  the parts are averaged, weighted by their rows. ``n_rounds=None`` takes the
  learner's ``n_epochs``; with ``n_epochs="auto"`` rounds run until the training
  objective, evaluated on a fixed sample of at most 20,000 rows, stalls (the rule
  of ``fit``; PSAM's ``fit`` reads its passes instead, ``monitor="pass"``, and its
  rounds are judged on the rows with the tolerance of ``monitor="rows"``,
  :func:`aucopt.driver.rows_tol`). Learners that consume rows in order
  (``shuffle=True``) see each block's rows in a fresh random order per round. A
  ``partial_fit`` of the pairwise learners draws its pairs within its block: use
  blocks of thousands of rows. The one-pass averaging learners (the buffered
  learners, ``uni_exp``) and ``spdam`` run one round (a buffered learner's
  repeated passes of ``n_epochs="auto"`` are ``fit``'s only);
* the intercept is the OPTROC threshold of the final model's scores on all the
  training rows (gathered on the client: 16 bytes per row), as for ``fit``;
* ``sample_weight`` (a dask array or array aligned with ``y``) weighs the rows as
  ``fit`` does (a row of integer weight ``k`` is ``k`` copies of it, one after the
  other; weight 0 drops it): the data-derived parameters are resolved on the
  weighted rows, parts are merged with their total weights, the threshold is that of
  the weighted rows, and an exact learner equals the single-process weighted fit
  followed by ``solve``, to rounding.

Every random choice is seeded from ``random_state``, the part and the round, so
the result does not depend on where tasks run. Dask retries the tasks of a
worker that dies (up to ``distributed.scheduler.allowed-failures`` times, then it
raises ``KilledWorker``), recomputing lost inputs from their lineage; since every
task here is a deterministic function of its inputs (tasks copy the model they
continue instead of changing it), a retried fit returns the same model.

The result is an ordinary fitted learner: it predicts, saves and loads like one
fitted by ``fit``.
"""
import copy
import math
import numbers
import operator
import warnings

import numpy as np
import scipy.sparse as sp

from aucopt import driver
from aucopt.base import BaseLearner, OnlineMixin
from aucopt.driver import Stall
from aucopt.merging import check_mergeable, merge_models
from aucopt.validation import (check_random_state, check_sample_weight, check_X, check_y,
                               finite_rows, weight_counts)

__all__ = ["fit", "decision_function"]

_INSTALL = ('aucopt.dask needs the optional dependencies dask and distributed: '
            'pip install "aucopt[dask]"')
# Reading a bag, indices are first taken as they are written (zero-based reading
# with the largest int32 column count), to decide the base and n_features on all files.
_RAW_FEATURES = np.iinfo(np.int32).max
_POLL_SECONDS = 1.0  # a wait checks that the cluster still has workers this often


def _modules():
    """``(dask, distributed)``, imported on first use."""
    try:
        import dask
        import dask.array  # noqa: F401 (registers the array collection)
        import dask.bag  # noqa: F401
        import distributed
    except ImportError as exc:
        raise ImportError(f"{_INSTALL} ({exc})") from exc
    return dask, distributed


# --------------------------------------------------------------------------- data


class _Blocks:
    """The row blocks of the training data, as delayed values, and how to read one.

    ``sources[i]`` is what a task receives for block ``i`` (a :class:`_Ready` block
    of a dask array, or a list of file paths); ``rows[i]`` its number of rows,
    ``weights[i]`` their total sample weight (the rows, unweighted).
    """

    def __init__(self, sources, rows, reader, weights=None):
        self.sources = sources
        self.rows = rows
        self.reader = reader
        self.weights = rows if weights is None else weights


def _checked(X, y, classes, n_features=None):
    """``(X, y_pm, rows)`` of a chunk, as ``partial_fit`` validates it: ``X`` checked,
    labels in {-1, +1} for the learner's ``classes``, the kernels' view of the rows."""
    X = check_X(X, n_features=n_features, norms=True)
    y_pm, _ = check_y(y, X.shape[0], classes=classes)
    return X, y_pm, finite_rows(X)


class _Ready:
    """A block of a dask array, validated once where it is kept (every round trains
    on it again): the matrix as ``check_X`` returns it, the labels (as given and in
    {-1, +1}), the kernels' view of the rows with their squared norms and the rows'
    sample weights (None: unweighted). Should Dask move it to another worker, it
    travels as the matrix, the labels and the weights and is validated again on
    arrival (the view holds raw pointers)."""

    def __init__(self, X, y, classes, weights=None):
        self.y = np.asarray(y)
        self.classes = classes
        self.X, self.y_pm, self.rows = _checked(X, self.y, classes)
        self.weights = None if weights is None else check_sample_weight(
            weights, self.y.shape[0], part=True)

    def __reduce__(self):
        return _Ready, (self.X, self.y, self.classes, self.weights)

    def summary(self):
        """:func:`_summary` of the block, from the norms computed once (``weight``
        and ``sqnorm`` are the weighted count and sum, ``labels`` those of rows of
        positive weight)."""
        sq = self.rows.norms()
        dense = self.rows.dense
        if self.weights is None:
            return {"rows": sq.size, "weight": sq.size, "sqnorm": float(sq.sum()),
                    "max_sqnorm": float(sq.max(initial=0.0)), "dense": dense,
                    "labels": set(np.unique(self.y).tolist()), "low": None, "high": -1}
        w = self.weights
        return {"rows": sq.size, "weight": float(w.sum()), "sqnorm": float(w @ sq),
                "max_sqnorm": float(sq[w > 0].max(initial=0.0)), "dense": dense,
                "labels": set(np.unique(self.y[w > 0]).tolist()), "low": None, "high": -1}


class _ReadyReader:
    """Reads a :class:`_Ready` block: one chunk, already checked for training."""

    def chunks(self, ready):
        yield ready.X, ready.y

    def weights(self, ready):
        return ready.weights

    def training_chunks(self, ready, classes):
        yield ready.X, ready.y_pm, ready.rows, ready.weights


class _FileReader:
    """Reads a partition of a bag of svmlight paths, chunk by chunk."""

    def __init__(self, n_features, zero_based, chunk_size):
        self.n_features = n_features
        self.zero_based = zero_based
        self.chunk_size = chunk_size

    def chunks(self, source):
        from aucopt.datasets import iter_svmlight

        for path in source:
            yield from iter_svmlight(path, chunk_size=self.chunk_size,
                                     n_features=self.n_features,
                                     zero_based=self.zero_based)

    def weights(self, source):
        return None

    def training_chunks(self, source, classes):
        for X, y in self.chunks(source):
            yield *_checked(X, y, classes, self.n_features), None


def _summary(source, reader):
    """Per block: rows, sum and largest squared row norm, labels (and, read raw,
    the smallest and largest column index)."""
    n, total, top, labels, low, high, dense = 0, 0.0, 0.0, set(), None, -1, True
    for X, y in reader.chunks(source):
        dense = dense and not sp.issparse(X)
        sq = _sqnorms(X)
        n += sq.size
        total += float(sq.sum())
        top = max(top, float(sq.max(initial=0.0)))
        labels.update(np.unique(y).tolist())
        cols = X.indices if sp.issparse(X) else None  # CSR chunks
        if cols is not None and cols.size:
            low = int(cols.min()) if low is None else min(low, int(cols.min()))
            high = max(high, int(cols.max()))
    return {"rows": n, "weight": n, "sqnorm": total, "max_sqnorm": top, "dense": dense,
            "labels": labels, "low": low, "high": high}


def _sqnorms(X):
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    X = np.asarray(X, dtype=float)
    return np.einsum("ij,ij->i", X, X)


def _array_blocks(dask, X, y, weights=None):
    """``(X, y, weights)`` as dask arrays of the same row blocks (weights None)."""
    da = dask.array
    if not isinstance(y, da.Array):
        y = da.from_array(np.asarray(y), chunks=(X.chunks[0],))
    if weights is not None and not isinstance(weights, da.Array):
        weights = np.asarray(weights)
        if weights.ndim == 0:
            weights = np.full(y.shape[0], float(weights))
        weights = da.from_array(weights, chunks=(weights.shape[0] or 1,) * weights.ndim)
    if X.ndim != 2 or y.ndim != 1:
        raise ValueError(f"X must be a 2-d dask array and y a 1-d one, got {X.ndim}-d "
                         f"and {y.ndim}-d")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows and y {y.shape[0]} labels")
    if y.chunks[0] != X.chunks[0]:
        y = y.rechunk((X.chunks[0],))
    if weights is not None:
        if weights.ndim != 1 or weights.shape[0] != y.shape[0]:
            raise ValueError(f"sample_weight must be 1-D with one weight per row, shape "
                             f"({y.shape[0]},), got shape {weights.shape}")
        if weights.chunks[0] != X.chunks[0]:
            weights = weights.rechunk((X.chunks[0],))
    return X, y, weights


def _data(dask, client, estimator, X, y, n_features, zero_based, chunk_size, n_parts,
          shuffle_seed, weights=None):
    """``(blocks, summary, n_features, classes)``: the training blocks split into
    parts (``blocks.runs``; a dask array's blocks, with ``shuffle_seed`` not None
    first repartitioned by :func:`_deal`, validated once and persisted on one worker
    per part), the combined summary of all rows, the number of features and the
    learner's ``[negative, positive]`` classes."""
    threads = _workers(client)
    n_threads = sum(threads.values())
    if isinstance(X, dask.bag.Bag):
        if y is not None:
            raise ValueError("with a bag of svmlight paths the labels come from the "
                             "files: pass y=None")
        if weights is not None:
            raise ValueError("sample_weight goes with a dask array X (aligned with y); "
                             "the rows of a bag of files cannot be weighted")
        parts = X.to_delayed()
        raw = _FileReader(_RAW_FEATURES, True, chunk_size)
        infos = client.compute([dask.delayed(_summary)(p, raw) for p in parts], sync=True)
        total = _combine_summaries(infos)
        if zero_based == "auto":
            zero_based = total["low"] == 0
        if n_features is None:
            n_features = total["high"] + 1 if zero_based else max(total["high"], 0)
        elif total["high"] >= n_features + (0 if zero_based else 1):
            raise ValueError(f"the files hold feature index {total['high']}, beyond "
                             f"n_features={n_features}")
        blocks = _Blocks(parts, [i["rows"] for i in infos],
                         _FileReader(n_features, zero_based, chunk_size))
        blocks.runs = _runs(n_parts, n_threads, blocks.rows)
        classes = _classes(total["labels"], estimator)
        _warn_one_class([set().union(*(infos[i]["labels"] for i in run))
                         for run in blocks.runs])
        return blocks, total, n_features, classes
    if not isinstance(X, dask.array.Array):
        raise TypeError(f"X must be a dask array or a dask bag of svmlight file paths, "
                        f"got {type(X).__name__}")
    if y is None:
        raise ValueError("y (a dask array of labels) is required with a dask array X")
    X, y, weights = _array_blocks(dask, X, y, weights)
    ys = y.to_delayed().ravel()
    ws = weights.to_delayed().ravel() if weights is not None else [None] * len(ys)
    found = client.compute([dask.delayed(np.unique)(b) for b in ys], sync=True)
    classes = _classes(set().union(*(f.tolist() for f in found)), estimator)
    # blocks without rows are left out; each part's blocks are validated once and
    # kept on one worker, where every round reads them
    keep = [i for i, size in enumerate(X.chunks[0]) if size]
    xs, ys = [X.to_delayed().ravel()[i] for i in keep], [ys[i] for i in keep]
    ws, sizes = [ws[i] for i in keep], [X.chunks[0][i] for i in keep]
    if shuffle_seed is not None and len(keep) > 1:
        xs, ys, ws, sizes = _deal(dask, xs, ys, ws, sizes, shuffle_seed)
    runs = _runs(n_parts, n_threads, sizes)
    workers = sorted(threads)
    sources = []
    for k, run in enumerate(runs):
        sources += client.persist([dask.delayed(_Ready, pure=True)(xs[i], ys[i], classes, ws[i])
                                   for i in run],
                                  workers=[workers[k % len(workers)]],
                                  allow_other_workers=True)
    infos = client.compute([dask.delayed(_Ready.summary)(s) for s in sources], sync=True)
    blocks = _Blocks(sources, [i["rows"] for i in infos], _ReadyReader(),
                     [i["weight"] for i in infos])
    blocks.runs = runs
    total = _combine_summaries(infos)
    if weights is not None:
        if not total["weight"] > 0:
            raise ValueError("sample_weight is zero for every row: nothing to learn from")
        if len(total["labels"]) < 2:
            raise ValueError("sample_weight is 0 on every row of one class; AUC training "
                             "needs weight on at least one positive and one negative row")
    return blocks, total, X.shape[1], classes


def _classes(labels, estimator):
    """The learner's ``[negative, positive]`` classes of the set of all labels."""
    labels = sorted(labels)
    if not labels:
        raise ValueError("the data hold no rows")
    if len(labels) != 2:
        raise ValueError(f"the labels must take exactly two values, got {labels[:10]}")
    _, classes = check_y(np.array(labels), 2,
                         pos_label=estimator.get_params().get("pos_label"))
    return classes


def _check_shuffle(shuffle):
    if not isinstance(shuffle, (bool, np.bool_)):
        raise ValueError(f"shuffle must be True or False, got {shuffle!r}")
    return bool(shuffle)


def _warn_one_class(part_labels):
    """Warn when a part's rows hold one class (files sorted by label)."""
    lone = [k for k, labels in enumerate(part_labels) if len(labels) < 2]
    if lone:
        warnings.warn(f"parts {lone} of {len(part_labels)} hold rows of one class (files "
                      "sorted by label?): each part trains on its own rows, so the merged "
                      "model ranks poorly; spread the classes over the files (shuffle "
                      "their lines) or pass a dask array (shuffle=True repartitions it)",
                      UserWarning, stacklevel=3)


def _deal(dask, xs, ys, ws, sizes, seed):
    """Repartition row blocks (delayed ``xs``, ``ys`` and weights ``ws``, or Nones, of
    ``sizes`` rows): block ``i`` permutes its rows (seeded by ``seed`` and ``i``) and
    deals them round-robin to ``len(sizes)`` new blocks, starting where block ``i - 1``
    stopped; each new block joins its pieces and permutes them. Returns the new
    ``(xs, ys, ws, sizes)`` (equal sizes up to one row)."""
    n = len(sizes)
    starts = np.cumsum([0] + list(sizes[:-1])) % n
    pieces = [dask.delayed(_deal_block, nout=n, pure=True)(x, y, w, n, int(start), [seed, i])
              for i, (x, y, w, start) in enumerate(zip(xs, ys, ws, starts))]
    joined = [dask.delayed(_join_pieces, nout=3, pure=True)([p[k] for p in pieces],
                                                            [seed, n, k])
              for k in range(n)]
    total = sum(sizes)
    new_sizes = [total // n + (k < total % n) for k in range(n)]
    return ([j[0] for j in joined], [j[1] for j in joined],
            [j[2] if ws[0] is not None else None for j in joined], new_sizes)


def _deal_block(X, y, w, n, start, seed):
    """The ``n`` pieces ``(X, y, w)`` a block deals (see :func:`_deal`; ``w`` None
    stays None)."""
    y = np.asarray(y)
    order = np.random.default_rng(seed).permutation(y.shape[0])
    dest = (np.arange(order.size) + start) % n
    w = None if w is None else np.asarray(w)
    return tuple((X[order[dest == k]], y[order[dest == k]],
                  None if w is None else w[order[dest == k]]) for k in range(n))


def _join_pieces(pieces, seed):
    """One new block ``(X, y, w)`` of the pieces dealt to it, its rows permuted."""
    pieces = [p for p in pieces if p[1].shape[0]]
    X, y = _stack([p[:2] for p in pieces])
    order = np.random.default_rng(seed).permutation(y.shape[0])
    w = None if pieces[0][2] is None else np.concatenate([p[2] for p in pieces])[order]
    return X[order], y[order], w


def _runs(n_parts, n_threads, sizes):
    """The parts: runs of consecutive block indices (``sizes``: the blocks' rows), one
    per worker thread by default, cut at the block boundaries nearest to equal
    shares of the rows (a round waits for its largest part)."""
    if n_parts is None:
        n_parts = n_threads
    elif isinstance(n_parts, bool) or not isinstance(n_parts, numbers.Integral) \
            or n_parts < 1:
        raise ValueError(f"n_parts must be a positive integer or None, got {n_parts!r}")
    n_parts = max(1, min(int(n_parts), len(sizes)))
    ends = np.cumsum(sizes)
    cuts, last = [], 0
    for k in range(1, n_parts):
        cut = int(np.argmin(np.abs(ends - ends[-1] * k / n_parts))) + 1
        cut = min(max(cut, last + 1), len(sizes) - (n_parts - k))  # no part left empty
        cuts.append(cut)
        last = cut
    return np.split(np.arange(len(sizes)), cuts)


def _combine_summaries(infos):
    lows = [i["low"] for i in infos if i["low"] is not None]
    return {"rows": sum(i["rows"] for i in infos),
            "weight": sum(i["weight"] for i in infos),
            "sqnorm": sum(i["sqnorm"] for i in infos),
            "max_sqnorm": max([i["max_sqnorm"] for i in infos], default=0.0),
            "dense": all(i["dense"] for i in infos),
            "labels": set().union(*(i["labels"] for i in infos)),
            "low": min(lows) if lows else None,
            "high": max([i["high"] for i in infos], default=-1)}


class _RowStats:
    """What the data-derived parameter rules read of the rows, for all of the data."""

    def __init__(self, n_rows, n_features, max_sqnorm, dense):
        self.n_rows = n_rows
        self.n_features = n_features
        self.top = max_sqnorm
        self.dense = dense  # every block dense (the rules for dense rows apply)

    def max_sqnorm(self):
        return self.top


# --------------------------------------------------------------------------- tasks


def _train(model, sources, reader, classes, stream, shuffle_seed, online):
    """Continue (a copy of) ``model`` on the rows of ``sources`` by the pass of
    ``partial_fit`` without its threshold (``stream``: the generator its random
    draws start from; ``shuffle_seed``: present each chunk's rows in a random
    order), or ``fit`` it on all of them."""
    model = copy.deepcopy(model)  # tasks must not change their inputs
    if stream is not None:
        driver.set_stream(model, stream)
    if not online:
        weights = [reader.weights(s) for s in sources]
        return model.fit(*_stack([c for s in sources for c in reader.chunks(s)]),
                         sample_weight=None if weights[0] is None else np.concatenate(weights))
    order = None if shuffle_seed is None else np.random.default_rng(shuffle_seed)
    for source in sources:
        for X, y, rows, weights in reader.training_chunks(source, classes):
            if weights is not None and not weights.any():
                continue  # no row of the chunk counts
            if order is not None:
                pick = order.permutation(y.shape[0])
                rows, y = rows.take(pick), y[pick]
                weights = None if weights is None else weights[pick]
            driver.learn_chunk(model, X, y, classes, rows=rows, threshold=False,
                               sample_weight=weights)
    return model


def _stack(chunks):
    """One ``(X, y)`` of a list of chunks."""
    Xs = [X for X, _ in chunks]
    X = sp.vstack(Xs, format="csr") if sp.issparse(Xs[0]) else np.vstack(Xs)
    return X, np.concatenate([y for _, y in chunks])


def _merge_pair(a, b, base, finish):
    """Merge two ``(model, rows)`` nodes of the tree (b may be None: finish a)."""
    model, rows = a
    model = copy.deepcopy(model)
    if b is None:
        return merge_models(model, [], None, base, finish), rows
    other, more = b
    weights = None if model.traits.merge == "exact" else [rows, more]
    return merge_models(model, [other], weights, base, finish), rows + more


def _scores(model, source, reader):
    """Ranking scores (no intercept) and labels in {-1, +1} of a block's rows."""
    out, labels = [], []
    for _, y, rows, weights in reader.training_chunks(source, model.classes_):
        scores = driver.raw_scores(model, rows)
        if weights is not None:  # the threshold of the weighted rows: their copies
            counts = weight_counts(weights, lambda: np.random.default_rng(0))
            scores, y = np.repeat(scores, counts), np.repeat(y, counts)
        out.append(scores)
        labels.append(y)
    return np.concatenate(out) if out else np.zeros(0), \
        np.concatenate(labels) if labels else np.zeros(0)


def _sample(source, reader, picks):
    """The rows of a block at the sorted positions ``picks``."""
    rows, start = [], 0
    for X, y in reader.chunks(source):
        n = y.shape[0]
        local = picks[(picks >= start) & (picks < start + n)] - start
        if local.size:
            rows.append((X[local], np.asarray(y)[local]))
        start += n
    return _stack(rows) if rows else None


# --------------------------------------------------------------------------- fit


def fit(estimator, X, y=None, client=None, n_rounds=None, *, n_parts=None,
        shuffle=True, n_features=None, zero_based="auto", chunk_size=50_000,
        sample_weight=None):
    """Train ``estimator`` on data held by a Dask cluster (see the module docstring).

    Parameters
    ----------
    estimator : aucopt learner
        A mergeable learner (``aucopt list``, column "merge"); it is fitted in
        place from scratch, as by ``fit``. Learners on a feature map (``fasam``,
        ``foam``, ...) are refused: each part would fit its own map.
    X : dask.array.Array or dask.bag.Bag
        Row blocks: dense or scipy CSR blocks of shape (rows, n_features), or a bag
        of svmlight / LIBSVM file paths (plain or compressed).
    y : dask.array.Array or array-like, optional
        Labels of the rows of a dask array ``X`` (rechunked to its row blocks);
        None for a bag (the labels are in the files). Two distinct labels in all.
    client : distributed.Client, optional
        Default: the current client (``distributed.default_client()``).
    n_rounds : int or None, default=None
        Rounds of iterative parameter mixing (each is one epoch over all rows) for
        the averaging learners with epochs; None: their ``n_epochs`` (with "auto",
        rounds until the objective stalls). Other learners run one round.
    n_parts : int or None, default=None
        Models trained in parallel, each on a run of consecutive blocks; None: one
        per worker thread (at most one per block). The averaging learners' result
        depends on it (the exact ones' does not, beyond rounding).
    shuffle : bool, default=True
        For a dask array and a learner that is not exact: repartition the rows
        before training, so that every part sees the classes in their overall
        proportions whatever the stored order (a file sorted by label would give
        parts of one class, whose merged model ranks near chance: psam 0.567 test
        AUC on news20 as stored, 0.967 shuffled). Each block deals its rows, in a
        random order seeded by ``random_state``, round-robin to the new blocks (as
        many as before, of equal sizes up to one row), an all-to-all exchange of
        the data once before the rounds. ``False`` keeps the blocks as given (when
        their rows are already in random order). A bag of files is read as stored;
        a part whose files hold one class is warned about.
    n_features, zero_based, chunk_size
        For a bag of files: as for :func:`aucopt.datasets.iter_svmlight`, decided on
        all files together (a first pass over them counts the rows and finds the
        labels and the column range).
    sample_weight : dask.array.Array or array-like, optional
        One weight per row of a dask array ``X`` (rechunked to its row blocks), as
        ``fit``'s ``sample_weight``: finite, >= 0, not all 0; each block is checked
        where it is kept.

    Returns
    -------
    estimator
        Fitted.

    Raises
    ------
    ImportError
        Without dask and distributed (``pip install "aucopt[dask]"``).
    TypeError
        For a learner that cannot be merged, or data of another type.
    ValueError
        For data that are not a binary task, or bad options.
    """
    dask, distributed = _modules()
    cls = type(estimator)
    if not isinstance(estimator, BaseLearner):
        raise TypeError(f"estimator must be an aucopt learner, got {cls.__name__}")
    check_mergeable(cls)
    if cls.traits.row_map:
        raise TypeError(f"{cls.__name__} learns on a feature map fitted on its first "
                        "data; on a cluster each part would fit its own and the models "
                        "could not be merged: map the data first and train the linear "
                        "learner")
    driver.check_params(estimator)
    client = _Watched(client if client is not None else _default_client(distributed),
                      distributed)
    online = isinstance(estimator, OnlineMixin)
    # a learner whose partial_fit over a stream's chunks equals its fit's pass
    # (traits.stream "chunks") trains in one pass over the data, whatever n_epochs
    epochs = (online and "n_epochs" in estimator.get_params()
              and cls.traits.stream != "chunks")
    rounds, stall = _rounds(estimator, n_rounds, epochs)

    entropy = int(check_random_state(estimator.random_state).integers(2**63)) \
        if "random_state" in estimator.get_params() else 0
    shuffle = _check_shuffle(shuffle) and cls.traits.merge != "exact"
    blocks, total, d, classes = _data(dask, client, estimator, X, y, n_features,
                                      zero_based, chunk_size, n_parts,
                                      entropy if shuffle else None, sample_weight)

    template = cls(**estimator.get_params())
    resolved = driver.fix_auto(template, total["sqnorm"] / total["weight"] or 1.0,
                               _RowStats(total["weight"], d, total["max_sqnorm"],
                                         total["dense"]))
    if not online:  # fit starts afresh: give it the values as parameters
        template.set_params(**resolved)
    plan = _Plan(estimator, template, blocks, classes, online, entropy)
    monitor = (_monitor(dask, client, blocks, total["rows"], classes,
                        driver.monitor_size(template, total["rows"])) if stall else None)
    previous, index = None, 0
    while True:
        node = plan.round(dask, previous, index)
        index += 1
        if stall is None and index < rounds:
            previous = node  # a fixed number of rounds is one graph: no wait between them
            continue
        future = client.compute(node)
        model = client.gather(future)
        previous = future
        if stall is not None:
            model.objective_ = driver.objective(model, *monitor(model))
            if stall.update(model.objective_):
                model.stop_reason_ = "tol"
                break
            model.stop_reason_ = "max_epochs"
        if index >= rounds:
            break
    scores = client.compute([dask.delayed(_scores)(future, source, blocks.reader)
                             for source in blocks.sources], sync=True)
    driver.set_threshold(model, np.concatenate([s for s, _ in scores]),
                         np.concatenate([t for _, t in scores]))
    if online:  # passes over all of the data
        model.n_passes_ = index
    if epochs and stall is None:
        model.stop_reason_ = "n_epochs"
    return driver.adopt(estimator, model)


class _Plan:
    """How the rounds train: the parts (runs of consecutive blocks), their random
    streams and the graph of one round."""

    def __init__(self, estimator, template, blocks, classes, online, entropy):
        cls = type(estimator)
        self.template, self.blocks, self.classes, self.online = (template, blocks, classes,
                                                                 online)
        self.runs = blocks.runs
        # each part's total sample weight (its rows, unweighted): the draws of an
        # exact learner's stream and the weight of the part in a merge
        self.rows = [sum(blocks.weights[i] for i in run) for run in self.runs]
        self.exact = cls.traits.merge == "exact"
        # an exact learner's draws: consecutive segments of one stream (opaucr)
        self.streams = (driver.part_streams(template, self.rows) if self.exact
                        else [None] * len(self.runs))
        self.entropy = entropy
        self.shuffles = not self.exact and online and cls.traits.shuffles \
            and estimator.get_params().get("shuffle", False)

    def round(self, dask, previous, index):
        """The delayed model of round ``index``: every part continues ``previous``
        (the last round's merged model, or the template) over its blocks, then the
        parts are merged pairwise, the last merge finishing."""
        start = previous if previous is not None else self.template
        nodes = []
        for k, run in enumerate(self.runs):  # a task per part, on its blocks in order
            stream = self.streams[k] if self.exact else \
                np.random.SeedSequence([self.entropy, index, k])
            seed = [self.entropy, index, k] if self.shuffles else None
            node = dask.delayed(_train, pure=True)(
                start, [self.blocks.sources[b] for b in run], self.blocks.reader,
                self.classes, stream, seed, self.online)
            nodes.append(dask.delayed(tuple)([node, self.rows[k]]))
        while len(nodes) > 1:
            nodes = [dask.delayed(_merge_pair, pure=True)(
                nodes[i], nodes[i + 1] if i + 1 < len(nodes) else None, previous,
                len(nodes) <= 2) for i in range(0, len(nodes), 2)]
        if self.exact and len(self.runs) == 1:
            nodes = [dask.delayed(_merge_pair, pure=True)(nodes[0], None, previous, True)]
        return dask.delayed(operator.getitem)(nodes[0], 0)


def _workers(client):
    """``{worker address: threads}`` of the cluster, asked of the scheduler;
    ``RuntimeError`` if it has none. (Not ``scheduler_info()["workers"]``: when its
    query fails, distributed's client returns, without a word, its periodic copy,
    which lists no worker; placing the parts then failed on ``k % 0``.)"""
    threads = client.nthreads()
    if not threads:
        raise RuntimeError("aucopt.dask.fit: the cluster has no worker (yet); wait for "
                           "them first (client.wait_for_workers(n))")
    return threads


class _Watched:
    """The client, whose waits fail when every worker of the cluster was gone at once.

    Blocks are kept with worker restrictions (one worker per part); when the last
    worker leaves, Dask moves the blocks to be recomputed to 'no-worker', and
    workers that join later (a nanny's restart) do not take them: the fit would
    wait forever. The scheduler's worker events tell when the cluster had no
    worker; every wait polls them (each second) and then cancels its tasks and
    raises ``RuntimeError``.
    """

    def __init__(self, client, distributed):
        self.client = client
        self.distributed = distributed
        events = client.get_events("all")
        self.seen_until = events[-1][0] if events else float("-inf")
        self.known_workers = set(_workers(client))

    def __getattr__(self, name):  # persist, nthreads: the client's
        return getattr(self.client, name)

    def compute(self, tasks, sync=False):
        futures = self.client.compute(tasks)
        return self.gather(futures) if sync else futures

    def gather(self, futures):
        """The results of ``futures`` (one or a list), once every one is done."""
        pending = futures if isinstance(futures, list) else [futures]
        while True:
            try:
                self.distributed.wait(pending, timeout=_POLL_SECONDS)
                break
            except TimeoutError:
                try:
                    self.check_workers()
                except RuntimeError:
                    self.client.cancel(pending)
                    raise
        return self.client.gather(futures)

    def check_workers(self):
        """Replay the worker events since the last check; raise if none was left."""
        for stamp, event in self.client.get_events("all"):
            if stamp <= self.seen_until or not isinstance(event, dict):
                continue
            self.seen_until = stamp
            if event.get("action") == "add-worker":
                self.known_workers.add(event.get("worker"))
            elif event.get("action") == "remove-worker":
                self.known_workers.discard(event.get("worker"))
                if not self.known_workers:
                    raise RuntimeError(
                        "aucopt.dask.fit: every worker of the cluster was gone at once; the "
                        "training blocks kept on them cannot be placed again (Dask leaves "
                        "them in 'no-worker'): start the fit again once workers are back")


def _default_client(distributed):
    try:
        return distributed.default_client()
    except ValueError:
        raise ValueError("aucopt.dask.fit needs a Dask cluster: start a client "
                         "(distributed.Client(...)) or pass client=") from None


def _rounds(estimator, n_rounds, epochs):
    """``(rounds, stall)``: the number of rounds (the most, with a stall rule)."""
    name = type(estimator).__name__
    if n_rounds is not None:
        if isinstance(n_rounds, bool) or not isinstance(n_rounds, numbers.Integral) \
                or n_rounds < 1:
            raise ValueError(f"n_rounds must be a positive integer or None, got {n_rounds!r}")
        if n_rounds > 1 and not epochs:
            raise ValueError(f"{name} trains in one pass (or fits each part in full): "
                             "n_rounds must be 1 or None")
        return int(n_rounds), None
    if not epochs:
        return 1, None
    if isinstance(estimator.n_epochs, str):
        return int(estimator.max_epochs), Stall(driver.rows_tol(estimator),
                                                estimator.n_iter_no_change)
    return int(estimator.n_epochs), None


def _monitor(dask, client, blocks, n_rows, classes, size):
    """``model -> (rows, labels)``: a fixed sample of at most ``size`` rows
    (:func:`aucopt.driver.monitor_size`), gathered once, on which the stopping rule
    evaluates the objective."""
    m = min(n_rows, size)
    picks = np.sort(np.random.default_rng(0).choice(n_rows, m, replace=False))
    bounds = np.cumsum([0] + list(blocks.rows))
    tasks = [dask.delayed(_sample)(s, blocks.reader,
                                   picks[(picks >= lo) & (picks < hi)] - lo)
             for s, lo, hi in zip(blocks.sources, bounds[:-1], bounds[1:])]
    X, y = _stack([p for p in client.compute(tasks, sync=True) if p is not None])
    y_pm, _ = check_y(y, y.shape[0], classes=classes)
    X = check_X(X)
    return lambda model: (driver.rows_of(model, X), y_pm)


# --------------------------------------------------------------------------- scoring


def decision_function(estimator, X, zero_based="auto"):
    """Scores of a fitted learner, block by block on the cluster (lazy).

    Parameters
    ----------
    estimator : fitted aucopt learner
    X : dask.array.Array or dask.bag.Bag
        Row blocks (dense or scipy CSR), or a bag of svmlight file paths (read
        with the learner's ``n_features``).
    zero_based : bool or "auto", default="auto"
        For a bag: as for :func:`aucopt.datasets.iter_svmlight` ("auto" decides per
        file: zero-based if it holds index 0).

    Returns
    -------
    dask.array.Array of shape (n_rows,), or dask.bag.Bag
        ``estimator.decision_function`` of the rows: a dask array for a dask
        array, a bag with one array of scores per file for a bag.
    """
    dask, _ = _modules()
    driver.check_fitted(estimator)
    model = dask.delayed(estimator, pure=True)
    if isinstance(X, dask.bag.Bag):
        return X.map(_file_scores, model, zero_based)
    if not isinstance(X, dask.array.Array):
        raise TypeError(f"X must be a dask array or a dask bag of svmlight file paths, "
                        f"got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-d dask array, got {X.ndim}-d")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    return X.map_blocks(_block_scores, model, drop_axis=1, dtype=np.float64,
                        meta=np.zeros(0))


def _block_scores(X, model):
    return model.decision_function(X)


def _file_scores(path, model, zero_based):
    from aucopt.datasets import iter_svmlight

    scores = [model.decision_function(X) for X, _ in
              iter_svmlight(path, n_features=model.n_features_in_, zero_based=zero_based)]
    return np.concatenate(scores) if scores else np.zeros(0)

