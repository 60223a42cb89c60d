# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Scaled weight vector with maintained norm and exact lazy averaging.

ALGORITHMS.md section 0.1 ("Sparse-efficient primitives"):

* ``w = scale * v``: ``w <- a w`` is O(1) (only ``scale`` changes), ``w <- w + c x``
  is O(nnz(x)) (``v <- v + (c / scale) x``), ``w.x = scale * (v.x)``.
* ``||w||^2`` is kept incrementally: after ``w <- w + c x`` it grows by
  ``2 c (w.x) + c^2 ||x||^2`` (pre-update ``w.x``, cached ``||x||^2``), and a
  scaling multiplies it by ``a^2``. Kernels that never read it switch it off.
* When ``|scale|`` leaves [1e-9, 1e9] it is folded into ``v`` (O(d), rare).
  With averaging the band is [1e-4, 1e4]: while ``scale`` is small, ``v`` and
  ``u`` grow like ``1/scale`` and ``avg_c v - u`` cancels that many digits, so
  folding early (and re-basing ``u`` at the fold) bounds the loss to ~1e-12.
* Lazy averaging (exact, O(nnz) per update, O(1) per averaging event): the running
  sum of snapshots is ``S = avg_c * v - u``. ``v <- v + delta`` adds
  ``avg_c * delta`` to ``u`` (same support); a snapshot of weight ``g`` adds
  ``g * scale`` to ``avg_c`` and ``g`` to ``avg_q``; folding ``scale`` into ``v``
  re-bases the sum: ``u <- u - avg_c v``, ``avg_c <- 0``
  (then ``S = -u``, exactly the same sum). The average is ``(avg_c v - u) / avg_q`` (O(d),
  once, on output). Weighted averages (SOLAM's gamma-weighted mean) pass the
  weight to :meth:`snapshot`.

The arrays ``v`` and ``u`` are owned by the caller and updated in place, so a
learner keeps its state in ordinary numpy arrays between calls.
"""
import numpy as np

from libc.math cimport copysign, fabs
from libc.stdint cimport int32_t

from aucopt._kernels._rows cimport RowSource

cdef double FOLD_LIMIT = 1e9
cdef double FOLD_LIMIT_AVERAGING = 1e4


cdef class WeightVector:
    """Dense weight vector ``w = scale * v`` for Cython kernels.

    Parameters
    ----------
    state : ndarray, float64, C-contiguous, writable; updated in place
        Without averaging, ``v`` itself, shape (n_features,). With averaging,
        shape (n_features, 2): column 0 is ``v``, column 1 the accumulator ``u``.
        Interleaving puts ``u[k]`` in the cache line of ``v[k]``, so the
        accumulator update of a sparse step costs almost nothing extra.
    scale : float, default=1.0
    track_norm : bool, default=False
        Maintain ``||w||^2`` (``sqnorm``) through every update.
    averaging : bool, default=False
        Keep the lazy running average (``state`` must then have two columns).
    avg_c, avg_q : float
        Lazy-average scalars (see module docstring), to resume a saved state.
    """

    def __cinit__(self, state not None, double scale=1.0, bint track_norm=False,
                  bint averaging=False, double avg_c=0.0, double avg_q=0.0):
        cdef double[::1] flat
        if scale == 0.0:
            raise ValueError("scale must be nonzero")
        expected = 2 if averaging else 1
        if state.dtype != np.float64 or not state.flags.c_contiguous:
            raise ValueError("state must be a C-contiguous float64 array")
        if state.ndim != expected or (averaging and state.shape[1] != 2):
            raise ValueError("state must have shape (n_features, 2) with averaging, "
                             "(n_features,) without")
        flat = state.reshape(-1)  # a view: state is C-contiguous
        self.averaging = averaging
        self.stride = expected
        self.n_features = state.shape[0]
        self._state = state
        self.v = &flat[0] if flat.shape[0] > 0 else NULL
        self.u = self.v + 1 if averaging and flat.shape[0] > 0 else NULL
        self.scale = scale
        self.track_norm = track_norm
        v = self._column(0)
        self.sqnorm = scale * scale * float(np.dot(v, v)) if track_norm else 0.0
        self.avg_c = avg_c
        self.avg_q = avg_q
        self.fold_high = FOLD_LIMIT_AVERAGING if self.averaging else FOLD_LIMIT
        self.fold_low = 1.0 / self.fold_high

    def _column(self, j):
        return np.asarray(self._state)[:, j] if self.averaging else np.asarray(self._state)

    cdef double dot(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil:
        """``w . x`` for a row given as (values, indices, nnz)."""
        cdef Py_ssize_t k
        cdef double s = 0.0
        cdef double* v = self.v
        cdef Py_ssize_t stride = self.stride
        for k in range(nnz):
            s += v[ind[k] * stride] * vals[k]
        return s * self.scale

    cdef void add(self, double c, const double* vals, const int32_t* ind,
                  Py_ssize_t nnz, double wx, double xx) noexcept nogil:
        """``w <- w + c x``; ``wx`` = pre-update ``w.x``, ``xx`` = ``||x||^2``."""
        cdef Py_ssize_t k, pos
        cdef double cv = c / self.scale
        cdef double cu = self.avg_c * cv
        cdef double* v = self.v
        cdef double* u = self.u
        if self.averaging:
            for k in range(nnz):
                pos = 2 * ind[k]
                v[pos] += cv * vals[k]
                u[pos] += cu * vals[k]
        else:
            for k in range(nnz):
                v[ind[k]] += cv * vals[k]
        if self.track_norm:
            self.sqnorm += 2.0 * c * wx + c * c * xx

    cdef void add_pair(self, double c,
                       const double* vi, const int32_t* ii, Py_ssize_t ni,
                       const double* vj, const int32_t* ij, Py_ssize_t nj,
                       double wz, double zz) noexcept nogil:
        """``w <- w + c (x_i - x_j)`` without forming the difference.

        ``wz`` = pre-update ``w.(x_i - x_j)``, ``zz`` = ``||x_i - x_j||^2`` (only
        read when the norm is tracked).
        """
        self.add(c, vi, ii, ni, 0.0, 0.0)
        self.add(-c, vj, ij, nj, 0.0, 0.0)
        if self.track_norm:
            # the two add() calls added 0; put in the exact pair increment
            self.sqnorm += 2.0 * c * wz + c * c * zz

    cdef void scale_by(self, double a) noexcept nogil:
        """``w <- a w`` in O(1) (O(d) when the scale has to be folded)."""
        self.scale *= a
        self.sqnorm *= a * a
        if fabs(self.scale) < self.fold_low or fabs(self.scale) > self.fold_high:
            self.fold()

    cdef void snapshot(self, double weight) noexcept nogil:
        """Add ``weight * w`` to the running average (O(1))."""
        self.avg_c += weight * self.scale
        self.avg_q += weight

    cdef void fold(self) noexcept nogil:
        """Fold ``scale`` into ``v`` (``v <- scale v``, ``scale <- 1``), O(d).

        The running sum ``S = avg_c v - u`` is re-based to ``S = -u`` on the way.
        """
        cdef Py_ssize_t k, pos
        for k in range(self.n_features):
            pos = k * self.stride
            if self.averaging:
                self.u[pos] -= self.avg_c * self.v[pos]
            self.v[pos] *= self.scale
        self.avg_c = 0.0
        self.scale = 1.0

    # -- Python-level access: used by learners to read results and by tests --

    def coef(self):
        """Return ``w = scale * v`` as a new array."""
        return self.scale * self._column(0)

    def average(self):
        """Return the running average ``(avg_c v - u) / avg_q`` (``w`` if empty)."""
        if not self.averaging or self.avg_q == 0.0:
            return self.coef()
        return (self.avg_c * self._column(0) - self._column(1)) / self.avg_q

    def py_dot(self, RowSource rows, Py_ssize_t i):
        """``w . x_i`` for row ``i`` of ``rows``."""
        cdef const double* vals
        cdef const int32_t* ind
        cdef Py_ssize_t nnz = rows.row(i, &vals, &ind)
        return self.dot(vals, ind, nnz)

    def py_add(self, RowSource rows, Py_ssize_t i, double c):
        """``w <- w + c x_i`` (norm maintained when tracked)."""
        cdef const double* vals
        cdef const int32_t* ind
        cdef Py_ssize_t nnz = rows.row(i, &vals, &ind)
        self.add(c, vals, ind, nnz, self.dot(vals, ind, nnz), rows.sqnorm(i))

    def py_scale(self, double a):
        """``w <- a w``."""
        self.scale_by(a)

    def py_snapshot(self, double weight=1.0):
        """Add ``weight * w`` to the running average."""
        self.snapshot(weight)

    def py_fold(self):
        """Fold the scale into ``v``."""
        self.fold()


cdef double RENORMALIZE_P = 1e100


cdef class ElasticNetWeights:
    """Weights under a just-in-time elastic-net proximal step (ALGORITHMS.md 0.1).

    Every step ``j`` applies ``w <- soft(w, theta_j) / c_j`` to ALL coordinates
    (``theta_j = eta_j * l1``, ``c_j = 1 + eta_j * l2``). Coordinates untouched by
    gradients are not visited: with ``P_j = prod_{i<j} c_i`` and
    ``R_j = sum_{i<j} theta_i P_i``, ``|w| P`` drops by ``theta_j P_j`` per step
    until it reaches 0, so a coordinate stored as ``a0`` at step ``k0`` is, at
    step ``k``::

        |w_k| = max(0, a0 * P_k0 - (R_k - R_k0)) / P_k      (sign kept; 0 stays 0)

    Each coordinate keeps its stamp ``(P_k0, R_k0)``; :meth:`touch` brings the
    coordinates of a row up to date before it is read or updated, so a step costs
    O(nnz). When ``P`` exceeds 1e100 everything is materialised (O(d)) and the
    scalars restart at ``P = 1, R = 0``. With ``l1 = 0`` this is the scaled
    vector trick.

    Parameters
    ----------
    w : ndarray of shape (n_features,), float64, writable
        The weights, materialised on entry and on :meth:`materialize_all`.
    """

    def __cinit__(self, double[::1] w not None):
        self.n_features = w.shape[0]
        stamp_p = np.ones(self.n_features)
        stamp_r = np.zeros(self.n_features)
        cdef double[::1] sp = stamp_p
        cdef double[::1] sr = stamp_r
        self._arrays = (w, stamp_p, stamp_r)
        self.w = &w[0] if self.n_features > 0 else NULL
        self.stamp_p = &sp[0] if self.n_features > 0 else NULL
        self.stamp_r = &sr[0] if self.n_features > 0 else NULL
        self.P = 1.0
        self.R = 0.0

    cdef void _update(self, Py_ssize_t k) noexcept nogil:
        cdef double a = fabs(self.w[k]) * self.stamp_p[k] - (self.R - self.stamp_r[k])
        if a <= 0.0:
            self.w[k] = 0.0
        else:
            self.w[k] = copysign(a / self.P, self.w[k])
        self.stamp_p[k] = self.P
        self.stamp_r[k] = self.R

    cdef void touch(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil:
        """Bring the coordinates where the row is nonzero up to the current step.

        Zero entries are skipped: they neither read nor change ``w`` (the stale
        value times 0 is 0), so a dense row updates exactly the coordinates its
        CSR form would, and dense and CSR input give identical weights.
        """
        cdef Py_ssize_t k
        for k in range(nnz):
            if vals[k] != 0.0 and (self.stamp_p[ind[k]] != self.P
                                   or self.stamp_r[ind[k]] != self.R):
                self._update(ind[k])

    cdef double dot(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil:
        """``w . x`` (the row's coordinates must have been touched this step)."""
        cdef Py_ssize_t k
        cdef double s = 0.0
        for k in range(nnz):
            s += self.w[ind[k]] * vals[k]
        return s

    cdef void add(self, double c, const double* vals, const int32_t* ind,
                  Py_ssize_t nnz) noexcept nogil:
        """``w <- w + c x`` on touched coordinates (the gradient step)."""
        cdef Py_ssize_t k
        for k in range(nnz):
            self.w[ind[k]] += c * vals[k]

    cdef void prox_step(self, double theta, double c) noexcept nogil:
        """Apply ``soft(., theta) / c`` to every coordinate, lazily (O(1))."""
        self.R += theta * self.P
        self.P *= c
        if self.P > RENORMALIZE_P:
            self.materialize_all()

    cdef void materialize_all(self) noexcept nogil:
        """Bring every coordinate up to date and restart at ``P = 1, R = 0`` (O(d))."""
        cdef Py_ssize_t k
        for k in range(self.n_features):
            self._update(k)
            self.stamp_p[k] = 1.0
            self.stamp_r[k] = 0.0
        self.P = 1.0
        self.R = 0.0

    # -- Python-level access for tests --

    def py_touch_dot(self, RowSource rows, Py_ssize_t i):
        """Touch row ``i``'s coordinates and return ``w . x_i``."""
        cdef const double* vals
        cdef const int32_t* ind
        cdef Py_ssize_t nnz = rows.row(i, &vals, &ind)
        self.touch(vals, ind, nnz)
        return self.dot(vals, ind, nnz)

    def py_add(self, RowSource rows, Py_ssize_t i, double c):
        """Touch row ``i``'s coordinates, then ``w <- w + c x_i``."""
        cdef const double* vals
        cdef const int32_t* ind
        cdef Py_ssize_t nnz = rows.row(i, &vals, &ind)
        self.touch(vals, ind, nnz)
        self.add(c, vals, ind, nnz)

    def py_prox(self, double theta, double c):
        """One lazy proximal step on every coordinate."""
        self.prox_step(theta, c)

    def py_materialize(self):
        """Materialise all coordinates; returns the weights as a new array."""
        self.materialize_all()
        return np.array(self._arrays[0], copy=True)
