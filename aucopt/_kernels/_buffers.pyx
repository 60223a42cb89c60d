# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Positive and negative row buffers for online buffered pairwise learners.

Khalid, Scalable Large Margin Pairwise Learning Algorithms, 2019,
Sec. 4.3 "Update Buffer" and Alg. 5; Natole's PhD thesis on stochastic AUC maximization,
Alg. 5): one buffer per class, ``capacity`` (M) slots each, filled by

* **reservoir sampling, exactly as Alg. 5** (Vitter's Algorithm R): the counter of
  the row's class is incremented first (``M_count`` counts the new row); while the
  buffer is not full the row is appended, else with ``u < M / M_count`` (``u`` drawn
  first) it replaces slot ``k = floor(r M)`` (``r`` drawn second). Replacing slot
  ``k`` in place equals "randomly delete an instance, then add x_t", since the order
  of a reservoir is irrelevant; the consumers iterate in slot order ``0 .. |B|-1``.
* **FIFO**: append while not full, else overwrite the oldest slot; iteration runs
  from the oldest row to the newest.

Both orders are given by :meth:`Buffers.slot` (``head`` stays 0 for a reservoir).
The random numbers are drawn by the caller (two per arrival, whether used or not),
so the buffer contents do not depend on how a stream is cut into chunks.

Storage (no per-row Python objects), in arrays the learner owns:

* dense layout: a ``(2M, d)`` float64 block, slot ``g = cls * M + s``; a row of
  either input form is scattered into its zeroed slot, O(d). With a journal
  (:class:`aucopt._kernels._journal.Journal` over the block, rows = slots) each
  slot is saved before its first write, so a failed call can be undone;
* sparse layout: a pooled CSR ring, one values/indices pool shared by the ``2M``
  slots with per-slot ``start``/``nnz``; rows are appended at ``top``. Everything
  beyond ``top`` is zero. When a row does not fit, :meth:`push` changes nothing,
  sets ``pending`` and returns ``PUSH_NO_ROOM``: the caller calls :meth:`repack`,
  which copies the live rows, in pool order, into *new* arrays (the old ones are
  never moved in place, so a failed call only has to zero what it appended beyond
  the old ``top``): of the same size when the live rows leave room for the pending
  row plus half their size again, else of ``2 (live + pending) + 64`` values. The
  pool therefore stays within about 4x the nonzeros of the buffered rows, and the
  copying costs amortised O(1) per stored value.
"""
import numpy as np

from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy, memset

from aucopt._kernels._journal cimport Journal, touch


cdef class Buffers:
    """View of one negative (class 0) and one positive (class 1) buffer for kernels.

    Parameters
    ----------
    capacity : int
        Slots per class (M+ = M- = M, ``buffer_size``).
    n_features : int
    reservoir : bool
        Reservoir sampling (Alg. 5) if true, FIFO otherwise.
    state : mapping
        The buffers' state by name:

        * ``count``, ``seen``, ``head``: int64 arrays of shape (2,): rows held, rows
          received (M^t of Alg. 4) and the FIFO head, per class;
        * ``arrival``: int64 array of shape (2 capacity,): the arrival index of the
          row in each slot (-1: empty);
        * ``sqnorm``: float64 array of shape (2 capacity,): each slot's squared norm;
        * ``rows``: float64 array of shape (2 capacity, n_features): the dense block
          (dense layout), or
        * ``start``, ``nnz``: int64 arrays of shape (2 capacity,): where each slot's
          row lies in the pool, ``values``, ``indices``: float64 / int32 arrays, the
          pool (replaced by :meth:`repack`), and ``top``: the first free position of
          the pool (sparse layout).
    journal : Journal or None
        Undo journal of ``rows`` (dense layout, journaled calls).

    Every array is updated in place.
    """

    def __cinit__(self, Py_ssize_t capacity, Py_ssize_t n_features, bint reservoir, state,
                  Journal journal=None):
        count, seen, head = state["count"], state["seen"], state["head"]
        arrival, sqnorm = state["arrival"], state["sqnorm"]
        rows, start, nnz = state.get("rows"), state.get("start"), state.get("nnz")
        values, indices = state.get("values"), state.get("indices")
        cdef int64_t top = state.get("top", 0)
        if any(a is None for a in (count, seen, head, arrival, sqnorm)):
            raise ValueError("count, seen, head, arrival and sqnorm must be arrays")
        cdef int64_t[::1] count_v = count
        cdef int64_t[::1] seen_v = seen
        cdef int64_t[::1] head_v = head
        cdef int64_t[::1] arrival_v = arrival
        cdef double[::1] sqnorm_v = sqnorm
        cdef double[:, ::1] rows_v
        cdef int64_t[::1] start_v
        cdef int64_t[::1] nnz_v
        cdef const int32_t[::1] features_v
        if capacity < 1 or n_features < 1:
            raise ValueError(f"capacity and n_features must be >= 1, got {capacity}, "
                             f"{n_features}")
        if count_v.shape[0] != 2 or seen_v.shape[0] != 2 or head_v.shape[0] != 2:
            raise ValueError("count, seen and head must hold one entry per class")
        if arrival_v.shape[0] != 2 * capacity or sqnorm_v.shape[0] != 2 * capacity:
            raise ValueError("arrival and sqnorm must hold one entry per slot")
        for cls in range(2):
            if not (0 <= count_v[cls] <= capacity and 0 <= head_v[cls] < capacity):
                raise ValueError(f"buffer {cls} holds {count_v[cls]} rows with head "
                                 f"{head_v[cls]}: outside a capacity of {capacity}")
        self.capacity = capacity
        self.n_features = n_features
        self.reservoir = reservoir
        self.dense = rows is not None
        self.count = &count_v[0]
        self.seen = &seen_v[0]
        self.head = &head_v[0]
        self.arrival = &arrival_v[0]
        self.sqnorms = &sqnorm_v[0]
        self.top = 0
        self.pending = 0
        self._refs = [count, seen, head, arrival, sqnorm, rows, start, nnz]
        if self.dense:
            if start is not None or nnz is not None or values is not None \
                    or indices is not None:
                raise ValueError("a dense buffer block takes no pool arrays")
            rows_v = rows
            if rows_v.shape[0] != 2 * capacity or rows_v.shape[1] != n_features:
                raise ValueError(f"dense buffer block has shape {rows.shape}, expected "
                                 f"({2 * capacity}, {n_features})")
            if journal is not None and (journal.n_rows != 2 * capacity
                                        or journal.width != n_features):
                raise ValueError("the journal does not cover the dense buffer block")
            features = np.arange(n_features, dtype=np.int32)
            features_v = features
            self.block = &rows_v[0, 0]
            self.all_features = &features_v[0]
            self.journal = journal
            self._refs.append(features)
            return
        if journal is not None:
            raise ValueError("only a dense buffer block is journaled")
        if start is None or nnz is None or values is None or indices is None:
            raise ValueError("a sparse buffer needs start, nnz, values and indices")
        start_v = start
        nnz_v = nnz
        if start_v.shape[0] != 2 * capacity or nnz_v.shape[0] != 2 * capacity:
            raise ValueError("start and nnz must hold one entry per slot")
        self.start = &start_v[0]
        self.nnz = &nnz_v[0]
        self._bind_pool(values, indices, top)

    def _bind_pool(self, values, indices, int64_t top):
        cdef double[::1] val_v = values
        cdef int32_t[::1] ind_v = indices
        cdef Py_ssize_t cls, s, g
        if val_v.shape[0] != ind_v.shape[0]:
            raise ValueError("buffer pool values and indices differ in length")
        if not 0 <= top <= val_v.shape[0]:
            raise ValueError(f"pool top {top} outside a pool of {val_v.shape[0]} values")
        for cls in range(2):
            for s in range(<Py_ssize_t>self.count[cls]):
                g = cls * self.capacity + s
                if self.start[g] < 0 or self.nnz[g] < 0 or self.start[g] + self.nnz[g] > top:
                    raise ValueError(f"buffer slot {g} points outside the pool's "
                                     f"{top} stored values")
        self.pool_cap = val_v.shape[0]
        self.pool_val = &val_v[0] if self.pool_cap > 0 else NULL
        self.pool_ind = &ind_v[0] if self.pool_cap > 0 else NULL
        self.top = top
        self._pool = (values, indices)

    cdef Py_ssize_t size(self, int cls) noexcept nogil:
        """Rows currently held by buffer ``cls`` (0 = negative, 1 = positive)."""
        return <Py_ssize_t>self.count[cls]

    cdef int64_t received(self, int cls) noexcept nogil:
        """Rows of class ``cls`` received so far (M^t of Alg. 4)."""
        return self.seen[cls]

    cdef Py_ssize_t slot(self, int cls, Py_ssize_t k) noexcept nogil:
        """Global slot of the ``k``-th row of buffer ``cls`` in iteration order
        (slot order for a reservoir, oldest to newest for FIFO)."""
        return cls * self.capacity + (self.head[cls] + k) % self.capacity

    cdef double sqnorm(self, Py_ssize_t slot) noexcept nogil:
        """Squared norm of the row in global slot ``slot`` (computed when stored)."""
        return self.sqnorms[slot]

    cdef Py_ssize_t row(self, Py_ssize_t slot, const double** vals,
                        const int32_t** ind) noexcept nogil:
        """Point ``vals``/``ind`` at the row in global slot ``slot``; return its nnz."""
        if self.dense:
            vals[0] = self.block + slot * self.n_features
            ind[0] = self.all_features
            return self.n_features
        vals[0] = self.pool_val + self.start[slot]
        ind[0] = self.pool_ind + self.start[slot]
        return <Py_ssize_t>self.nnz[slot]

    cdef int push(self, int cls, const double* vals, const int32_t* ind, Py_ssize_t nnz,
                  double sq, double u, double r, int64_t t) except -1 nogil:
        """UpdateBuffer (Alg. 5 or FIFO) for a row of class ``cls`` arriving at ``t``
        with squared norm ``sq``; ``u``, ``r`` in [0, 1) are the reservoir's
        Bernoulli and slot draws. Returns ``PUSH_STORED``, ``PUSH_REJECTED`` (by the
        reservoir) or ``PUSH_NO_ROOM`` (nothing changed; :meth:`repack` first)."""
        cdef Py_ssize_t M = self.capacity
        cdef int64_t m_count = self.seen[cls] + 1
        cdef Py_ssize_t s, g, k
        cdef double* dst
        if self.count[cls] < M:
            s = <Py_ssize_t>self.count[cls]
        elif self.reservoir:
            if not (u < <double>M / <double>m_count):
                self.seen[cls] = m_count
                return PUSH_REJECTED
            s = <Py_ssize_t>(r * M)
            if s >= M:
                s = M - 1
        else:
            s = <Py_ssize_t>self.head[cls]
        g = cls * M + s
        if self.dense:
            touch(self.journal, g)
            dst = self.block + g * self.n_features
            memset(dst, 0, self.n_features * sizeof(double))
            for k in range(nnz):
                dst[ind[k]] = vals[k]
        else:
            if self.top + nnz > self.pool_cap:
                self.pending = nnz
                return PUSH_NO_ROOM
            self.start[g] = self.top
            self.nnz[g] = nnz
            if nnz > 0:
                memcpy(self.pool_val + self.top, vals, nnz * sizeof(double))
                memcpy(self.pool_ind + self.top, ind, nnz * sizeof(int32_t))
            self.top += nnz
        self.seen[cls] = m_count
        self.arrival[g] = t
        self.sqnorms[g] = sq
        if self.count[cls] < M:
            self.count[cls] += 1
        elif not self.reservoir:
            self.head[cls] = (self.head[cls] + 1) % M
        return PUSH_STORED

    def repack(self):
        """Make room for the ``pending`` row: copy the live rows, in pool order, to
        the front of new pool arrays (see the module docstring for their size).

        Returns
        -------
        (values, indices) : the new pool arrays (``top`` is updated).
        """
        cdef Py_ssize_t M = self.capacity, n_live = 0, k, g, cls, s
        cdef int64_t live = 0, pos = 0
        if self.dense:
            raise RuntimeError("a dense buffer block is never repacked")
        order = np.empty(2 * M, dtype=np.int64)
        starts = np.empty(2 * M, dtype=np.int64)
        cdef int64_t[::1] order_v = order
        cdef int64_t[::1] starts_v = starts
        for cls in range(2):
            for s in range(<Py_ssize_t>self.count[cls]):
                g = cls * M + s
                order_v[n_live] = g
                starts_v[n_live] = self.start[g]
                live += self.nnz[g]
                n_live += 1
        by_start = order[:n_live][np.argsort(starts[:n_live], kind="stable")]
        cdef const int64_t[::1] by_start_v = by_start
        if self.pool_cap - live - self.pending >= live // 2:
            size = self.pool_cap
        else:
            size = 2 * (live + self.pending) + 64
        values = np.zeros(size)
        indices = np.zeros(size, dtype=np.int32)
        cdef double[::1] val_v = values
        cdef int32_t[::1] ind_v = indices
        for k in range(n_live):
            g = by_start_v[k]
            if self.nnz[g] > 0:
                memcpy(&val_v[pos], self.pool_val + self.start[g], self.nnz[g] * sizeof(double))
                memcpy(&ind_v[pos], self.pool_ind + self.start[g],
                       self.nnz[g] * sizeof(int32_t))
            self.start[g] = pos
            pos += self.nnz[g]
        self._bind_pool(values, indices, pos)
        self.pending = 0
        return values, indices

    # -- Python-level access: learners and tests

    def pool(self):
        """The current ``(values, indices)`` pool arrays (sparse layout)."""
        return self._pool

    def py_push(self, int cls, indices, values, double u=0.0, double r=0.0, int64_t t=0):
        """:meth:`push` for a row given as (indices, values) arrays, repacking the
        pool when needed. Returns 1 (stored) or 0 (rejected)."""
        cdef int32_t[::1] ind = np.ascontiguousarray(indices, dtype=np.int32)
        cdef double[::1] val = np.ascontiguousarray(values, dtype=np.float64)
        cdef Py_ssize_t k
        cdef double sq = 0.0
        cdef int code
        if ind.shape[0] != val.shape[0]:
            raise ValueError("indices and values differ in length")
        if cls not in (0, 1):
            raise ValueError("cls must be 0 (negative) or 1 (positive)")
        for k in range(ind.shape[0]):
            if not 0 <= ind[k] < self.n_features or (k > 0 and ind[k] <= ind[k - 1]):
                raise ValueError("indices must increase strictly within [0, n_features)")
            sq += val[k] * val[k]
        while True:
            code = self.push(cls, &val[0] if val.shape[0] else NULL,
                             &ind[0] if ind.shape[0] else NULL, val.shape[0], sq, u, r, t)
            if code != PUSH_NO_ROOM:
                return code
            self.repack()

    def contents(self, int cls):
        """``[(arrival, indices, values), ...]`` of buffer ``cls`` in iteration order."""
        cdef const double* vals
        cdef const int32_t* ind
        cdef Py_ssize_t k, g, n, j
        out = []
        for k in range(self.size(cls)):
            g = self.slot(cls, k)
            n = self.row(g, &vals, &ind)
            idx = np.empty(n, dtype=np.int32)
            val = np.empty(n)
            for j in range(n):
                idx[j] = ind[j]
                val[j] = vals[j]
            out.append((int(self.arrival[g]), idx, val))
        return out
