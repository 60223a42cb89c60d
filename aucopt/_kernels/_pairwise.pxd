from libc.stdint cimport int64_t

cdef class PairRule:
    cdef readonly bint needs_sqdist
    cdef double step(self, double m, double eta, double zz) noexcept nogil

cdef class Schedule:
    cdef public double lam
    cdef public double t0
    cdef public int64_t rskip
    cdef public int64_t askip
    cdef public int64_t t
    cdef public int64_t rcount
    cdef public int64_t acount
    cdef public double avg_power
