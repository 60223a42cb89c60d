# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Positive and negative row buffers for online buffered pairwise learners.

ALGORITHMS.md 2.1 (dissertation 000 Sec. 4.3 "Update Buffer" and Alg. 5; thesis 001
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

Storage (no per-row Python objects):

* dense layout: a ``(2M, d)`` float64 block, slot ``g = cls * M + s``; a row of
  either input form is scattered into its zeroed slot, O(d);
* sparse layout: a pooled CSR ring, one values/indices pool shared by the ``2M``
  slots with per-slot ``start``/``nnz``; rows are appended at ``top`` and the pool is
  compacted in place (live slots moved down, O(live nnz)) when full. When even the
  compacted pool would be more than half full, :meth:`push` changes nothing, sets
  ``pending`` and returns -1: the caller then calls :meth:`grow` (new arrays of
  twice the live size, amortised O(1) per stored value) and retries. The pool
  therefore stays within about 4x the nonzeros of the buffered rows.

The state lives in numpy arrays owned by the learner (updated in place); a
:class:`Buffers` object is a view rebuilt on every call, see :func:`new_state`.
"""
import numpy as np

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy, memmove, memset

STATE_KEYS = ("count", "seen", "head", "arrival", "sqnorm", "rows", "start", "nnz",
              "values", "indices", "top")


def new_state(Py_ssize_t capacity, Py_ssize_t n_features, bint dense):
    """Fresh, empty buffer state as a dict of numpy arrays (keys ``STATE_KEYS``).

    ``dense=True`` allocates the ``(2 capacity, n_features)`` block; otherwise the
    pooled CSR ring starts empty and grows on demand.
    """
    m2 = 2 * capacity
    return {
        "count": np.zeros(2, dtype=np.int64),
        "seen": np.zeros(2, dtype=np.int64),
        "head": np.zeros(2, dtype=np.int64),
        "arrival": np.full(m2, -1, dtype=np.int64),
        "sqnorm": np.zeros(m2),
        "rows": np.zeros((m2 if dense else 0, n_features)),
        "start": np.zeros(0 if dense else m2, dtype=np.int64),
        "nnz": np.zeros(0 if dense else m2, dtype=np.int64),
        "values": np.zeros(0),
        "indices": np.zeros(0, dtype=np.int32),
        "top": np.zeros(1, dtype=np.int64),
    }


cdef int _by_start(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef class Buffers:
    """View of one positive and one negative buffer for Cython kernels.

    Parameters
    ----------
    capacity : int
        Slots per class (M+ = M- = M, ``buffer_size``).
    n_features : int
    reservoir : bool
        Reservoir sampling (Alg. 5) if true, FIFO otherwise.
    state : dict of numpy arrays
        As made by :func:`new_state`; updated in place (``grow`` replaces
        ``values`` and ``indices``, read them back with :meth:`arrays`).
    """

    def __cinit__(self, Py_ssize_t capacity, Py_ssize_t n_features, bint reservoir,
                  dict state not None):
        cdef int64_t[::1] count = state["count"]
        cdef int64_t[::1] seen = state["seen"]
        cdef int64_t[::1] head = state["head"]
        cdef int64_t[::1] arrival = state["arrival"]
        cdef double[::1] sqnorm = state["sqnorm"]
        cdef double[:, ::1] rows = state["rows"]
        cdef int64_t[::1] start = state["start"]
        cdef int64_t[::1] nnz = state["nnz"]
        cdef int64_t[::1] top = state["top"]
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        if count.shape[0] != 2 or seen.shape[0] != 2 or head.shape[0] != 2 \
                or top.shape[0] != 1 or arrival.shape[0] != 2 * capacity \
                or sqnorm.shape[0] != 2 * capacity:
            raise ValueError("buffer state does not match the buffer capacity")
        self.capacity = capacity
        self.n_features = n_features
        self.reservoir = reservoir
        self.pending = 0
        self.dense = rows.shape[0] > 0
        if self.dense:
            if rows.shape[0] != 2 * capacity or rows.shape[1] != n_features:
                raise ValueError(f"dense buffer block has shape {tuple(rows.shape)[:2]}, "
                                 f"expected ({2 * capacity}, {n_features})")
        elif start.shape[0] != 2 * capacity or nnz.shape[0] != 2 * capacity:
            raise ValueError("sparse buffer slots do not match the buffer capacity")
        self.count = &count[0]
        self.seen = &seen[0]
        self.head = &head[0]
        self.arrival = &arrival[0]
        self.sqnorms = &sqnorm[0]
        self.top = &top[0]
        self.block = &rows[0, 0] if self.dense and n_features > 0 else NULL
        self.start = NULL if self.dense else &start[0]
        self.nnz = NULL if self.dense else &nnz[0]
        features = np.arange(n_features, dtype=np.int32)
        cdef int32_t[::1] fview = features
        self.all_features = &fview[0] if n_features > 0 else NULL
        self._arrays = dict(state)
        self._arrays["_features"] = features
        self._bind_pool(state["values"], state["indices"])

    def _bind_pool(self, values, indices):
        cdef double[::1] vview = values
        cdef int32_t[::1] iview = indices
        if vview.shape[0] != iview.shape[0]:
            raise ValueError("buffer pool values and indices differ in length")
        self.pool_cap = vview.shape[0]
        self.pool_val = &vview[0] if self.pool_cap > 0 else NULL
        self.pool_ind = &iview[0] if self.pool_cap > 0 else NULL
        self._arrays["values"] = values
        self._arrays["indices"] = indices

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
                  double u, double r, int64_t t) noexcept nogil:
        """UpdateBuffer (Alg. 5 or FIFO) for a row of class ``cls`` arriving at ``t``.

        ``u``, ``r`` in [0, 1): the reservoir's Bernoulli draw and slot draw.
        Returns 1 if the row was stored, 0 if the reservoir rejected it, -1 if the
        sparse pool must grow first (nothing changed; see :meth:`grow`).
        """
        cdef Py_ssize_t M = self.capacity
        cdef int64_t m_count = self.seen[cls] + 1
        cdef Py_ssize_t s, g, k
        cdef double* dst
        cdef double sq = 0.0
        if self.count[cls] < M:
            s = <Py_ssize_t>self.count[cls]
        elif self.reservoir:
            if not (u < <double>M / <double>m_count):
                self.seen[cls] = m_count
                return 0
            s = <Py_ssize_t>(r * M)
            if s >= M:
                s = M - 1
        else:
            s = <Py_ssize_t>self.head[cls]
        g = cls * M + s
        if self.dense:
            dst = self.block + g * self.n_features
            memset(dst, 0, self.n_features * sizeof(double))
            for k in range(nnz):
                dst[ind[k]] = vals[k]
        else:
            if not self._reserve(nnz):
                self.pending = nnz
                return -1
            self.start[g] = self.top[0]
            self.nnz[g] = nnz
            if nnz > 0:
                memcpy(self.pool_val + self.top[0], vals, nnz * sizeof(double))
                memcpy(self.pool_ind + self.top[0], ind, nnz * sizeof(int32_t))
            self.top[0] += nnz
        for k in range(nnz):
            sq += vals[k] * vals[k]
        self.seen[cls] = m_count
        self.arrival[g] = t
        self.sqnorms[g] = sq
        if self.count[cls] < M:
            self.count[cls] += 1
        elif not self.reservoir:
            self.head[cls] = (self.head[cls] + 1) % M
        return 1

    cdef bint _reserve(self, Py_ssize_t nnz) noexcept nogil:
        """Room for ``nnz`` values at ``top``, compacting if needed; False = grow."""
        if self.top[0] + nnz <= self.pool_cap:
            return True
        self._compact(self.pool_val, self.pool_ind)
        return self.pool_cap - self.top[0] - nnz >= self.top[0] // 2

    cdef void _compact(self, double* val_out, int32_t* ind_out) noexcept nogil:
        """Move the live slots' rows to the front of ``val_out``/``ind_out`` (which
        may be the pool itself), in order of their current start; set ``top``."""
        cdef Py_ssize_t M = self.capacity, n_live = 0, k, g, cls, s
        cdef int64_t pos = 0
        cdef int64_t* order = <int64_t*>malloc(2 * 2 * M * sizeof(int64_t))
        if order == NULL:
            return
        for cls in range(2):
            for s in range(<Py_ssize_t>self.count[cls]):
                g = cls * M + s
                order[2 * n_live] = self.start[g]
                order[2 * n_live + 1] = g
                n_live += 1
        qsort(order, n_live, 2 * sizeof(int64_t), _by_start)
        for k in range(n_live):
            g = <Py_ssize_t>order[2 * k + 1]
            if self.nnz[g] > 0:
                memmove(val_out + pos, self.pool_val + self.start[g],
                        self.nnz[g] * sizeof(double))
                memmove(ind_out + pos, self.pool_ind + self.start[g],
                        self.nnz[g] * sizeof(int32_t))
            self.start[g] = pos
            pos += self.nnz[g]
        self.top[0] = pos
        free(order)

    def grow(self):
        """Reallocate the sparse pool for the ``pending`` row: the live rows are
        compacted into new arrays of ``2 (live + pending) + 64`` entries.

        Returns the new ``(values, indices)`` arrays (also in :meth:`arrays`).
        """
        if self.dense:
            raise RuntimeError("a dense buffer block never grows")
        self._compact(self.pool_val, self.pool_ind)
        cap = 2 * (int(self.top[0]) + int(self.pending)) + 64
        values = np.zeros(cap)
        indices = np.zeros(cap, dtype=np.int32)
        n = int(self.top[0])
        values[:n] = self._arrays["values"][:n]
        indices[:n] = self._arrays["indices"][:n]
        self._bind_pool(values, indices)
        self.pending = 0
        return values, indices

    # -- Python-level access: used by learners and tests --

    def arrays(self):
        """The state arrays (``STATE_KEYS``), current after :meth:`grow`."""
        return {k: self._arrays[k] for k in STATE_KEYS}

    def py_push(self, int cls, indices, values, double u=0.0, double r=0.0, int64_t t=0):
        """:meth:`push` for a row given as (indices, values) arrays; grows the pool
        when needed. Returns 1 (stored) or 0 (rejected)."""
        cdef int32_t[::1] ind = np.ascontiguousarray(indices, dtype=np.int32)
        cdef double[::1] val = np.ascontiguousarray(values, dtype=np.float64)
        cdef int code
        if ind.shape[0] != val.shape[0]:
            raise ValueError("indices and values differ in length")
        if cls not in (0, 1):
            raise ValueError("cls must be 0 (negative) or 1 (positive)")
        while True:
            code = self.push(cls, &val[0] if val.shape[0] else NULL,
                             &ind[0] if ind.shape[0] else NULL, val.shape[0], u, r, t)
            if code >= 0:
                return code
            self.grow()

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
