# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The weight primitive shared by every kernel: the scaled sparse-update weight vector.

:class:`Weights` -- a dense weight vector ``w = scale * v``:

* ``w <- a w`` is O(1) (only ``scale`` changes); ``w <- w + c x`` is O(nnz(x))
  (``v <- v + (c / scale) x``); ``w.x = scale * (v.x)``;
* ``||w||^2 = scale^2 * vsq`` with ``vsq = sum v^2`` maintained through every
  update (each touched coordinate adds ``new^2 - old^2``) and recomputed exactly at
  every fold, so projections and divergence checks are O(1). With ``defer_norm``
  set, updates leave ``vsq`` alone until a fold or :meth:`dense_end` recomputes
  it: threads writing one vector at once (:func:`~aucopt._kernels._pairwise.open_lanes`),
  and a pass that ends with a fold anyway, which then does not pay for a dependent
  chain of additions on every update (2-5% of a PSAM epoch on news20, sector and
  webkb_course, none measurable on reuters_acq; bit for bit the same model);
* when ``|scale|`` leaves [1e-9, 1e9] it is folded into ``v`` (O(d), rare). With
  averaging the band is [1e-4, 1e4]: while ``scale`` is small, ``v`` and ``u`` grow
  like ``1/scale`` and ``avg_c v - u`` cancels that many digits, so folding early
  (and re-basing ``u``) bounds the loss to ~1e-12;
* exact lazy averaging (O(nnz) per update, O(1) per averaging event): the running
  sum of snapshots is ``S = avg_c v - u``; ``v <- v + delta`` adds ``avg_c delta``
  to ``u``; a snapshot of weight ``g`` adds ``g scale`` to ``avg_c`` and ``g`` to
  ``avg_q``; a fold re-bases ``u <- u - avg_c v``, ``avg_c <- 0``. The average is
  ``(avg_c v - u) / avg_q``; :meth:`avg_dot` scores a row with it in O(nnz).
  Weighted averages (SOLAM's gamma-weighted mean) pass the weight to ``snapshot``.

The state is one C-contiguous float64 array of shape ``(d, stride)``: column 0 is
``v``, column 1 the accumulator ``u`` when averaging, further columns hold a rule's
per-coordinate state (CBR-diag's variance, AdaGrad accumulators), interleaved so that
a coordinate's values share a cache line, as Vowpal Wabbit interleaves per-weight
state. The learner owns the array (updated in place); a ``Weights`` object is a view
made once per call, and its scalars are handed back with :meth:`scalars`.

:meth:`begin` starts an undo journal (:class:`aucopt._kernels._journal.Journal`):
every write saves the coordinate's row first, so a failed call is undone by
:meth:`rollback` in time and memory proportional to what it touched.

:class:`ElasticNetWeights` -- the lazy elastic-net variant, same method names:
every step ``j`` applies ``w <- soft(w, theta_j) / c_j`` to all coordinates
(``theta_j = eta_j l1``, ``c_j = 1 + eta_j l2``) just in time. With ``P_j =
prod_{i<j} c_i`` and ``R_j = sum_{i<j} theta_i P_i``, a coordinate stored as ``a0``
at step ``k0`` is, at step ``k``, ``sign(a0) max(0, |a0| P_k0 - (R_k - R_k0)) / P_k``.
Each coordinate keeps its stamp ``(P_k0, R_k0)`` in columns 1-2 of a ``(d, 3)``
state; :meth:`dot` and :meth:`add` bring the row's coordinates up to date first, so
a step costs O(nnz). ``fold`` materialises everything (O(d)) and restarts at
``P = 1, R = 0``; it happens by itself when ``P`` exceeds 1e100.
"""
import numpy as np

from libc.math cimport copysign, fabs
from libc.stdint cimport int32_t
from libc.string cimport memcpy

from aucopt._kernels._interrupt cimport poll
from aucopt._kernels._journal cimport Journal, touch, touch_rows
from aucopt._kernels._rows cimport RowSource, prefetch_rows_ahead

cdef inline double lazy_value(double a, double P0, double R0, double P,
                              double R) noexcept nogil:
    """An elastic-net coordinate stored as ``a`` at the stamp ``(P0, R0)``, at the
    step whose products are ``(P, R)``: ``sign(a) max(0, |a| P0 - (R - R0)) / P``."""
    cdef double mag = fabs(a) * P0 - (R - R0)
    return 0.0 if mag <= 0.0 else copysign(mag / P, a)


cdef inline double add_run(double* v, Py_ssize_t stride, double cv, double cu,
                           const double* vals, const int32_t* ind, Py_ssize_t nnz,
                           bint averaging, bint norm) noexcept nogil:
    """``v <- v + cv x`` (and ``u <- u + cu x`` when ``averaging``); returns the change
    of ``sum v^2`` when ``norm`` (else 0)."""
    cdef Py_ssize_t k, pos
    cdef double old, new, dv = 0.0
    for k in range(nnz):
        pos = ind[k] * stride
        old = v[pos]
        new = old + cv * vals[k]
        v[pos] = new
        if averaging:
            v[pos + 1] += cu * vals[k]
        if norm:
            dv += (new - old) * (new + old)
    return dv


cdef double FOLD_LIMIT = 1e9
cdef double FOLD_LIMIT_AVERAGING = 1e4
cdef double RENORMALIZE_P = renormalize_limit()


def _check_state(state, Py_ssize_t min_stride, what):
    if not isinstance(state, np.ndarray) or state.dtype != np.float64 \
            or not state.flags.c_contiguous or not state.flags.writeable:
        raise ValueError(f"{what} state must be a writable C-contiguous float64 array")
    if state.ndim == 1 and min_stride <= 1:
        return state.reshape(-1, 1)
    if state.ndim != 2 or state.shape[1] < min_stride:
        raise ValueError(f"{what} state must have shape (n_features, >= {min_stride}), "
                         f"got {state.shape}")
    return state


cdef inline double _entry(Weights w, Py_ssize_t k, bint average) noexcept nogil:
    """Coordinate ``k`` of the running average ``(avg_c v - u) / avg_q`` (``average``,
    which needs a snapshot) or of ``w = scale v``."""
    cdef Py_ssize_t pos = k * w.stride
    if average:
        return (w.avg_c * w.v[pos] - w.v[pos + 1]) / w.avg_q
    return w.scale * w.v[pos]


cdef class Weights:
    """Weight vector ``w = scale * v`` over a learner-owned state array.

    Parameters
    ----------
    state : ndarray of shape (n_features,) or (n_features, stride), float64
        Column 0 is ``v``; with ``averaging`` column 1 is the accumulator ``u``.
        Updated in place.
    scale : float, default=1.0
    vsq : float or None
        ``sum v^2``; None computes it (O(d); pass the stored value to resume).
    averaging : bool, default=False
    avg_c, avg_q : float
        Lazy-average scalars, to resume a stored state.
    """

    def __cinit__(self, state not None, double scale=1.0, vsq=None, bint averaging=False,
                  double avg_c=0.0, double avg_q=0.0):
        cdef double[:, ::1] view
        if not (scale != 0.0 and fabs(scale) < float("inf")):
            raise ValueError(f"scale must be finite and nonzero, got {scale!r}")
        state = _check_state(state, 2 if averaging else 1, "weight")
        view = state
        self._state = state
        self.n_features = state.shape[0]
        self.stride = state.shape[1]
        self.v = &view[0, 0] if self.n_features > 0 else NULL
        self.averaging = averaging
        self.scale = scale
        col = state[:, 0]
        self.vsq = float(np.dot(col, col)) if vsq is None else float(vsq)
        self.avg_c = avg_c
        self.avg_q = avg_q
        self.fold_high = FOLD_LIMIT_AVERAGING if averaging else FOLD_LIMIT
        self.fold_low = 1.0 / self.fold_high
        self.journal = None

    # -- transactions

    def begin(self, double budget=0.25):
        """Journal every write until :meth:`commit` or :meth:`rollback`."""
        self.journal = Journal(self._state, budget=budget)
        self.saved[0] = self.scale
        self.saved[1] = self.vsq
        self.saved[2] = self.avg_c
        self.saved[3] = self.avg_q

    def rollback(self):
        """Undo every change since :meth:`begin`."""
        if self.journal is not None:
            self.journal.rollback()
            self.journal = None
            self.scale, self.vsq, self.avg_c, self.avg_q = (
                self.saved[0], self.saved[1], self.saved[2], self.saved[3])

    def commit(self):
        """Keep the changes since :meth:`begin`."""
        if self.journal is not None:
            self.journal.commit()
            self.journal = None

    def scalars(self):
        """``{"scale", "vsq", "avg_c", "avg_q"}`` to store beside the state array."""
        return {"scale": self.scale, "vsq": self.vsq, "avg_c": self.avg_c,
                "avg_q": self.avg_q}

    # -- kernel interface

    cdef double dot(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil:
        """``w . x`` for a row given as (values, indices, nnz)."""
        return weights_dot(self, vals, ind, nnz)

    cdef double avg_dot(self, const double* vals, const int32_t* ind,
                        Py_ssize_t nnz) noexcept nogil:
        """``wbar . x`` with the running average (``w . x`` before any snapshot)."""
        cdef Py_ssize_t k, pos
        cdef double sv = 0.0, su = 0.0
        if not self.averaging or self.avg_q == 0.0:
            return self.dot(vals, ind, nnz)
        for k in range(nnz):
            pos = ind[k] * self.stride
            sv += self.v[pos] * vals[k]
            su += self.v[pos + 1] * vals[k]
        return (self.avg_c * sv - su) / self.avg_q

    cdef int add(self, double c, const double* vals, const int32_t* ind,
                 Py_ssize_t nnz) except -1 nogil:
        """``w <- w + c x`` (``||w||^2`` follows unless ``defer_norm``)."""
        cdef double cv = c / self.scale
        if self.journal is not None:
            touch_rows(self.journal, ind, nnz, 0)
        # one loop per case (the flags are constants in each inlined copy): the
        # deferred norm drops the chain of additions, not just its result
        if self.averaging:
            if self.defer_norm:
                add_run(self.v, self.stride, cv, self.avg_c * cv, vals, ind, nnz, True, False)
            else:
                self.vsq += add_run(self.v, self.stride, cv, self.avg_c * cv, vals, ind, nnz,
                                    True, True)
        elif self.defer_norm:
            add_run(self.v, self.stride, cv, 0.0, vals, ind, nnz, False, False)
        else:
            self.vsq += add_run(self.v, self.stride, cv, 0.0, vals, ind, nnz, False, True)
        return 0

    cdef int add_pair(self, double c,
                      const double* vi, const int32_t* ii, Py_ssize_t ni,
                      const double* vj, const int32_t* ij, Py_ssize_t nj) except -1 nogil:
        """``w <- w + c (x_i - x_j)`` without forming the difference."""
        self.add(c, vi, ii, ni)
        self.add(-c, vj, ij, nj)
        return 0

    cdef int scale_by(self, double a) except -1 nogil:
        """``w <- a w`` in O(1) (O(d) when the scale has to be folded; with
        ``hold_folds`` the fold is left to the caller, who sees ``fold_due``)."""
        self.scale *= a
        if fabs(self.scale) < self.fold_low or fabs(self.scale) > self.fold_high:
            if self.hold_folds:
                self.fold_due = True
            else:
                self.fold()
        return 0

    cdef void snapshot(self, double weight) noexcept nogil:
        """Add ``weight * w`` to the running average (O(1))."""
        self.avg_c += weight * self.scale
        self.avg_q += weight

    cdef int fold(self) except -1 nogil:
        """``v <- scale v``, ``scale <- 1`` (O(d)); re-bases the average's sum."""
        cdef Py_ssize_t k, pos
        cdef double s = 0.0, x
        if self.journal is not None:
            self.journal.save_all()
        for k in range(self.n_features):
            pos = k * self.stride
            if self.averaging:
                self.v[pos + 1] -= self.avg_c * self.v[pos]
            x = self.v[pos] * self.scale
            self.v[pos] = x
            s += x * x
        self.vsq = s
        self.avg_c = 0.0
        self.scale = 1.0
        self.fold_due = False
        return 0

    cdef double sqnorm(self) noexcept nogil:
        """``||w||^2`` (maintained)."""
        return self.scale * self.scale * self.vsq

    cdef int touch(self, const int32_t* ind, Py_ssize_t nnz) except -1 nogil:
        """Journal the rows a rule is about to write through its own columns."""
        if self.journal is not None:
            touch_rows(self.journal, ind, nnz, 0)
        return 0

    cdef double* dense_begin(self) except NULL nogil:
        """Column 0 as a plain dense ``w`` (scale folded) for BLAS updates, which
        must end with :meth:`dense_end`. Needs ``stride == 1``."""
        if self.scale != 1.0:
            self.fold()
        if self.journal is not None:
            self.journal.save_all()
        return self.v if self.v != NULL else <double*>&self.saved[0]

    cdef void dense_end(self) noexcept nogil:
        """Recompute ``||w||^2`` after dense writes (O(d))."""
        cdef Py_ssize_t k
        cdef double s = 0.0
        for k in range(self.n_features):
            s += self.v[k * self.stride] * self.v[k * self.stride]
        self.vsq = s

    # -- Python-level access: learners read results, tests drive steps

    def scores(self, RowSource rows, bint average=False):
        """``w . x`` (``wbar . x`` with ``average``) of every row, O(nnz)."""
        cdef Py_ssize_t i, nnz, work = 0
        cdef const double* vals
        cdef const int32_t* ind
        if rows.n_features != self.n_features:
            raise ValueError(f"rows have {rows.n_features} features, the weights "
                             f"{self.n_features}")
        out = np.empty(rows.n_rows)
        cdef double[::1] o = out
        with nogil:
            for i in range(rows.n_rows):
                prefetch_rows_ahead(rows, NULL, i, rows.n_rows)
                nnz = rows.row(i, &vals, &ind)
                o[i] = self.avg_dot(vals, ind, nnz) if average else self.dot(vals, ind, nnz)
                poll(&work, nnz + 1)
        return out

    def coef(self):
        """``w = scale * v`` as a new array."""
        return self._read_out(False)

    def average(self):
        """The running average ``(avg_c v - u) / avg_q`` (``w`` before any snapshot)."""
        return self._read_out(self.averaging and self.avg_q != 0.0)

    def _read_out(self, bint average):
        """:meth:`average` (``average``) or :meth:`coef` into one new array, in one
        loop over the state: numpy's expression made a temporary per operation
        (0.87 ms for the 130,108 features of 20 Newsgroups, 0.09 ms now). The same
        operations in the same order, so the same numbers bit for bit."""
        cdef Py_ssize_t k
        out = np.empty(self.n_features)
        cdef double[::1] o = out
        with nogil:
            for k in range(self.n_features):
                o[k] = _entry(self, k, average)
        return out

    def py_sqnorm(self):
        """``||w||^2`` (maintained)."""
        return self.sqnorm()

    def norms(self, bint average=False):
        """``(||w||^2, ||w||_1)``, of the running average with ``average`` (as
        :meth:`average` returns it), in O(d) time without a new array: the stopping
        rule's penalty after every pass reads no copy of the model out."""
        cdef Py_ssize_t k
        cdef double sq = 0.0, l1 = 0.0, t
        cdef bint avg = average and self.averaging and self.avg_q != 0.0
        with nogil:
            for k in range(self.n_features):
                t = _entry(self, k, avg)
                sq += t * t
                l1 += fabs(t)
        return sq, l1

    # -- copies for threads that step weights of their own (_pairwise's "Threads")

    def assign(self, Weights other not None):
        """Make these weights a copy of ``other`` (a state of the same shape): its
        state array and scalars, ``fold_due`` included. Releases the GIL for the
        O(d) copy, so that a lane copies on its own thread."""
        if other is self:
            return
        self._check_same(other)
        if self.journal is not None:
            self.journal.save_all()
        with nogil:
            if self.n_features > 0:
                memcpy(self.v, other.v, self.n_features * self.stride * sizeof(double))
        self.scale, self.vsq = other.scale, other.vsq
        self.avg_c, self.avg_q = other.avg_c, other.avg_q
        self.fold_due = other.fold_due

    def add_changes(self, Weights copy not None, Weights start not None):
        """``state <- state + (copy's state - start's state)``, every column: add what
        a thread did to its ``copy`` since it was ``start`` (all three of one shape;
        the copy at the same scale as these weights, as the lanes keep them, and no
        fold since the start; the scalars are left as they are). O(d), releases the
        GIL."""
        cdef Py_ssize_t k, n = self.n_features * self.stride
        cdef double* v = self.v
        cdef const double* c = copy.v
        cdef const double* s = start.v
        self._check_same(copy)
        self._check_same(start)
        if copy.scale != self.scale:
            raise ValueError(f"the copy's scale {copy.scale!r} must be these weights' "
                             f"{self.scale!r}")
        if self.journal is not None:
            self.journal.save_all()
        with nogil:
            for k in range(n):
                v[k] += c[k] - s[k]

    def _check_same(self, Weights other):
        if other.n_features != self.n_features or other.stride != self.stride \
                or other.averaging != self.averaging:
            raise ValueError(f"weights of shape ({other.n_features}, {other.stride}) "
                             f"(averaging={other.averaging}) do not match these "
                             f"({self.n_features}, {self.stride}) "
                             f"(averaging={self.averaging})")

    def py_scale(self, double a):
        """``w <- a w``."""
        self.scale_by(a)

    def py_snapshot(self, double weight=1.0):
        """Add ``weight * w`` to the running average."""
        self.snapshot(weight)

    def py_fold(self):
        """Fold the scale into ``v``."""
        self.fold()


def row_dot(w, RowSource rows, Py_ssize_t i):
    """``w.x_i`` for a :class:`Weights` or :class:`ElasticNetWeights` ``w`` (at its
    current step), ``i`` checked against the rows (for tests and tools)."""
    cdef const double* vals
    cdef const int32_t* ind
    cdef Py_ssize_t nnz = rows.row(rows.checked(i), &vals, &ind)
    if isinstance(w, Weights):
        return (<Weights>w).dot(vals, ind, nnz)
    return (<ElasticNetWeights?>w).dot(vals, ind, nnz)


def row_add(w, RowSource rows, Py_ssize_t i, double c):
    """``w <- w + c x_i`` for a :class:`Weights` or :class:`ElasticNetWeights` ``w``,
    ``i`` checked against the rows (for tests and tools)."""
    cdef const double* vals
    cdef const int32_t* ind
    cdef Py_ssize_t nnz = rows.row(rows.checked(i), &vals, &ind)
    if isinstance(w, Weights):
        (<Weights>w).add(c, vals, ind, nnz)
    else:
        (<ElasticNetWeights?>w).add(c, vals, ind, nnz)


def dense_scores(RowSource rows, const double[::1] w):
    """``X @ w`` for the rows of ``rows`` (index order: dense and CSR agree bit for bit)."""
    cdef Py_ssize_t i, k, nnz, work = 0
    cdef const double* vals
    cdef const int32_t* ind
    cdef double s
    if w.shape[0] != rows.n_features:
        raise ValueError(f"w has {w.shape[0]} entries for {rows.n_features} features")
    out = np.empty(rows.n_rows)
    cdef double[::1] o = out
    with nogil:
        for i in range(rows.n_rows):
            prefetch_rows_ahead(rows, NULL, i, rows.n_rows)
            nnz = rows.row(i, &vals, &ind)
            s = 0.0
            for k in range(nnz):
                s += w[ind[k]] * vals[k]
            o[i] = s
            poll(&work, nnz + 1)
    return out


cdef class ElasticNetWeights:
    """Weights under a just-in-time elastic-net proximal step (module docstring).

    Parameters
    ----------
    state : ndarray of shape (n_features, 3), float64, C-contiguous, writable
        Per coordinate: the value at its stamp and the stamp ``(P_k0, R_k0)``;
        a fresh state is ``[0, 1, 0]`` per row. Updated in place.
    P, R : float
        Current products (``P = 1, R = 0`` for a fresh or folded state).
    """

    def __cinit__(self, state not None, double P=1.0, double R=0.0):
        cdef double[:, ::1] view
        state = _check_state(state, 3, "elastic-net weight")
        if state.shape[1] != 3:
            raise ValueError(f"elastic-net weight state must have 3 columns, got {state.shape}")
        if not (P >= 1.0 and P <= RENORMALIZE_P and R >= 0.0):
            raise ValueError(f"P must be in [1, 1e100] and R >= 0, got P={P!r}, R={R!r}")
        view = state
        self._state = state
        self.n_features = state.shape[0]
        self.a = &view[0, 0] if self.n_features > 0 else NULL
        self.P = P
        self.R = R
        self.journal = None

    @staticmethod
    def fresh(Py_ssize_t n_features):
        """A zero state: ``[0, 1, 0]`` per coordinate."""
        state = np.zeros((n_features, 3))
        state[:, 1] = 1.0
        return state

    def begin(self, double budget=0.25):
        """Journal every write until :meth:`commit` or :meth:`rollback`."""
        self.journal = Journal(self._state, budget=budget)
        self.saved[0] = self.P
        self.saved[1] = self.R

    def rollback(self):
        """Undo every change since :meth:`begin`."""
        if self.journal is not None:
            self.journal.rollback()
            self.journal = None
            self.P, self.R = self.saved[0], self.saved[1]

    def commit(self):
        """Keep the changes since :meth:`begin`."""
        if self.journal is not None:
            self.journal.commit()
            self.journal = None

    def scalars(self):
        """``{"P", "R"}`` to store beside the state array."""
        return {"P": self.P, "R": self.R}

    cdef int _bring(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) except -1 nogil:
        """Bring the coordinates where the row is nonzero up to the current step.

        Zero entries are skipped: they neither read nor change ``w``, so a dense
        row updates exactly the coordinates its CSR form would.
        """
        cdef Py_ssize_t k, pos
        for k in range(nnz):
            pos = 3 * ind[k]
            if vals[k] != 0.0 and (self.a[pos + 1] != self.P or self.a[pos + 2] != self.R):
                touch(self.journal, ind[k])
                self.a[pos] = lazy_value(self.a[pos], self.a[pos + 1], self.a[pos + 2],
                                         self.P, self.R)
                self.a[pos + 1] = self.P
                self.a[pos + 2] = self.R
        return 0

    cdef double dot(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) except? -1 nogil:
        """``w . x`` at the current step."""
        cdef Py_ssize_t k
        cdef double s = 0.0
        self._bring(vals, ind, nnz)
        for k in range(nnz):
            s += self.a[3 * ind[k]] * vals[k]
        return s

    cdef int add(self, double c, const double* vals, const int32_t* ind,
                 Py_ssize_t nnz) except -1 nogil:
        """``w <- w + c x`` (the gradient step) at the current step."""
        cdef Py_ssize_t k
        self._bring(vals, ind, nnz)
        if self.journal is not None:
            touch_rows(self.journal, ind, nnz, 0)
        for k in range(nnz):
            self.a[3 * ind[k]] += c * vals[k]
        return 0

    cdef int add_pair(self, double c,
                      const double* vi, const int32_t* ii, Py_ssize_t ni,
                      const double* vj, const int32_t* ij, Py_ssize_t nj) except -1 nogil:
        """``w <- w + c (x_i - x_j)``."""
        self.add(c, vi, ii, ni)
        self.add(-c, vj, ij, nj)
        return 0

    cdef int prox_step(self, double theta, double c) except -1 nogil:
        """Apply ``soft(., theta) / c`` to every coordinate, lazily (O(1))."""
        self.R += theta * self.P
        self.P *= c
        if self.P > RENORMALIZE_P:
            if self.hold_folds:
                self.fold_due = True
            else:
                self.fold()
        return 0

    cdef int fold(self) except -1 nogil:
        """Materialise every coordinate and restart at ``P = 1, R = 0`` (O(d))."""
        cdef Py_ssize_t k, pos
        if self.journal is not None:
            self.journal.save_all()
        for k in range(self.n_features):
            pos = 3 * k
            self.a[pos] = lazy_value(self.a[pos], self.a[pos + 1], self.a[pos + 2], self.P,
                                     self.R)
            self.a[pos + 1] = 1.0
            self.a[pos + 2] = 0.0
        self.P = 1.0
        self.R = 0.0
        self.fold_due = False
        return 0

    def scores(self, RowSource rows):
        """``w . x`` of every row at the current step, O(nnz); the state is not changed."""
        cdef Py_ssize_t i, k, nnz, pos, work = 0
        cdef const double* vals
        cdef const int32_t* ind
        cdef double s, value
        if rows.n_features != self.n_features:
            raise ValueError(f"rows have {rows.n_features} features, the weights "
                             f"{self.n_features}")
        out = np.empty(rows.n_rows)
        cdef double[::1] o = out
        with nogil:
            for i in range(rows.n_rows):
                prefetch_rows_ahead(rows, NULL, i, rows.n_rows)
                nnz = rows.row(i, &vals, &ind)
                s = 0.0
                for k in range(nnz):
                    pos = 3 * ind[k]
                    value = self.a[pos]
                    if self.a[pos + 1] != self.P or self.a[pos + 2] != self.R:
                        value = lazy_value(value, self.a[pos + 1], self.a[pos + 2], self.P,
                                           self.R)
                    s += value * vals[k]
                o[i] = s
                poll(&work, nnz + 1)
        return out

    def norms(self):
        """``(||w||^2, ||w||_1)`` of :meth:`coef`, in O(d) time without a new array."""
        cdef Py_ssize_t k
        cdef double mag, t, sq = 0.0, l1 = 0.0
        with nogil:
            for k in range(self.n_features):
                mag = fabs(self.a[3 * k]) * self.a[3 * k + 1] - (self.R - self.a[3 * k + 2])
                if mag > 0.0:
                    t = mag / self.P
                    sq += t * t
                    l1 += t
        return sq, l1

    def coef(self):
        """The current weights as a new array, as :meth:`fold` would materialise
        them (the state is not changed)."""
        state = np.asarray(self._state)
        a = state[:, 0]
        mag = np.abs(a) * state[:, 1] - (self.R - state[:, 2])
        return np.where(mag <= 0.0, 0.0, np.copysign(mag / self.P, a))

    def py_prox(self, double theta, double c):
        """One lazy proximal step on every coordinate."""
        self.prox_step(theta, c)

    def py_fold(self):
        """Materialise every coordinate."""
        self.fold()
