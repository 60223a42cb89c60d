# Ctrl-C from long nogil kernels: a kernel counts its work in "units" (about one
# multiply-add on memory each) and calls `poll(&counter, units)`; every POLL_UNITS
# units (a few milliseconds of work) it takes the GIL and runs Python's signal
# handlers, so KeyboardInterrupt is raised from inside the loop (the caller's
# transaction then restores the model). Declared `except -1`: Cython propagates the
# exception out of the `with nogil` block.
cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1

cdef enum:
    POLL_UNITS = 2000000


cdef inline int poll(Py_ssize_t* counter, Py_ssize_t units) except -1 nogil:
    counter[0] += units
    if counter[0] >= POLL_UNITS:
        counter[0] = 0
        with gil:
            PyErr_CheckSignals()
    return 0
