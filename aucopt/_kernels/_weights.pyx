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

from libc.math cimport fabs
from libc.stdint cimport int32_t

from aucopt._kernels._rows cimport RowSource

cdef double FOLD_LIMIT = 1e9
cdef double FOLD_LIMIT_AVERAGING = 1e4


cdef class WeightVector:
    """Dense weight vector ``w = scale * v`` for Cython kernels.

    Parameters
    ----------
    v : ndarray of shape (n_features,), float64, C-contiguous, writable
        Storage of ``v``; updated in place.
    scale : float, default=1.0
    track_norm : bool, default=False
        Maintain ``||w||^2`` (``sqnorm``) through every update.
    u : ndarray of shape (n_features,) or None
        Lazy-average accumulator, updated in place; ``None`` disables averaging.
    avg_c, avg_q : float
        Lazy-average scalars (see module docstring), to resume a saved state.
    """

    def __cinit__(self, double[::1] v not None, double scale=1.0, bint track_norm=False,
                  u=None, double avg_c=0.0, double avg_q=0.0):
        cdef double[::1] u_view
        if scale == 0.0:
            raise ValueError("scale must be nonzero")
        self.n_features = v.shape[0]
        self._v_arr = v
        self.v = &v[0] if v.shape[0] > 0 else NULL
        self.scale = scale
        self.track_norm = track_norm
        self.sqnorm = scale * scale * float(np.dot(v, v)) if track_norm else 0.0
        self.averaging = u is not None
        self.u = NULL
        if self.averaging:
            u_view = u
            if u_view.shape[0] != v.shape[0]:
                raise ValueError("u and v must have the same length")
            self._u_arr = u_view
            self.u = &u_view[0] if u_view.shape[0] > 0 else NULL
        self.avg_c = avg_c
        self.avg_q = avg_q
        self.fold_high = FOLD_LIMIT_AVERAGING if self.averaging else FOLD_LIMIT
        self.fold_low = 1.0 / self.fold_high

    cdef double dot(self, const double* vals, const int32_t* ind,
                    Py_ssize_t nnz) noexcept nogil:
        """``w . x`` for a row given as (values, indices, nnz)."""
        cdef Py_ssize_t k
        cdef double s = 0.0
        for k in range(nnz):
            s += self.v[ind[k]] * vals[k]
        return s * self.scale

    cdef void add(self, double c, const double* vals, const int32_t* ind,
                  Py_ssize_t nnz, double wx, double xx) noexcept nogil:
        """``w <- w + c x``; ``wx`` = pre-update ``w.x``, ``xx`` = ``||x||^2``."""
        cdef Py_ssize_t k
        cdef double cv = c / self.scale
        cdef double cu = self.avg_c * cv
        if self.averaging:
            for k in range(nnz):
                self.v[ind[k]] += cv * vals[k]
                self.u[ind[k]] += cu * vals[k]
        else:
            for k in range(nnz):
                self.v[ind[k]] += cv * vals[k]
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
        cdef Py_ssize_t k
        if self.averaging:
            for k in range(self.n_features):
                self.u[k] -= self.avg_c * self.v[k]
            self.avg_c = 0.0
        for k in range(self.n_features):
            self.v[k] *= self.scale
        self.scale = 1.0

    # -- Python-level access: used by learners to read results and by tests --

    def coef(self):
        """Return ``w = scale * v`` as a new array."""
        return self.scale * np.asarray(self._v_arr)

    def average(self):
        """Return the running average ``(avg_c v - u) / avg_q`` (``w`` if empty)."""
        if not self.averaging or self.avg_q == 0.0:
            return self.coef()
        return (self.avg_c * np.asarray(self._v_arr) - np.asarray(self._u_arr)) / self.avg_q

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
