"""The threads of a pass with ``n_jobs > 1`` (SAM, ASAM, PSAM, adaDSGD): :func:`in_lanes`.

A pass hands its blocks of pairs to ``P`` lanes at once, lane 0 in the calling
thread (so that Ctrl-C reaches its kernel, which then halts the others) and lanes
``1 .. P - 1`` in worker threads kept for the next block and the next pass. Between
blocks a worker spins, with the GIL released, for :data:`LANE_SPINS` spin-wait hints
(3.3 ms on the machine below), yielding its CPU every few microseconds (the system
may have put the thread that posts the next block on the same CPU; see
:func:`~aucopt._kernels._pairwise.wait_change`), then sleeps until the next block. A
thread started per block, or a worker that slept, costs the block the time the system
takes to run it: on a 2-core virtual machine 0.2-2.8 ms from ``start()`` to the
thread's first instruction, against the 4 ms of each of PSAM's two lanes of a 20
Newsgroups pass.
PSAM's epochs with two threads against one (medians of interleaved epochs in one
process, two runs): 20 Newsgroups 1.35x and 1.39x with a thread per block, 1.46x
and 1.52x with the workers; reuters_acq 1.14x -> 1.24x, sector 1.19x -> 1.23x; the
rcv1-shaped set's blocks are long: 1.49x -> 1.48x. (At other times of the same
day the machine's second core was busy with another guest: two threads ran at
0.5x either way, and two threads of a compute-bound hash at 1.3x.)

The workers are shared by the process: one pass at a time uses them (another
waits for it), and a forked child starts with none. With more lanes than the cores
the process may run on, nobody spins: a spinning thread would hold a core another
lane needs (20 Newsgroups, 4 lanes on 2 cores, against one thread: 0.94x with
spinning workers, 0.96-1.00x with a thread per block, 1.16x with sleeping workers).

Whether threads pay at all depends on the minute: :class:`LaneWatch` (one per
process, :data:`WATCH`) keeps the SAM / ASAM / PSAM passes and adaDSGD's stages on
one thread while its last probe found the threads slower than one thread.
"""
import math
import os
import threading
import time

import numpy as np

from aucopt._kernels._pairwise import Lanes, publish, wait_change
from aucopt.validation import n_threads

__all__ = ["in_lanes", "LANE_SPINS", "LaneWatch", "WATCH"]

# Spin-wait hints a worker spends awake waiting for the next block (and the calling
# thread waiting for a worker to finish) before it sleeps: a few milliseconds, more
# than the stopping rule's objective between two passes takes on 20 Newsgroups.
LANE_SPINS = 1 << 17


class _Worker:
    """A thread that runs the jobs :meth:`post` gives it, one at a time."""

    def __init__(self):
        self._posted = np.zeros(1, dtype=np.int64)  # the last job's number
        self._done = np.zeros(1, dtype=np.int64)  # the last finished job's number
        self._wake = threading.Event()
        self._finished = threading.Event()
        self._job = None
        self._spins = 0  # of the last post: how long to spin for the next one
        self.error = None
        threading.Thread(target=self._serve, daemon=True, name="aucopt-lane").start()

    def _serve(self):
        seen = 0
        while True:
            posted = wait_change(self._posted, seen, self._spins)
            if posted == seen:  # nothing yet: sleep until post() wakes it
                self._wake.wait()
                self._wake.clear()  # then look again: a post before the clear shows
                continue
            seen = posted
            try:
                self._job()
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller
                self.error = exc
            self._job = None
            publish(self._done, seen)
            self._finished.set()

    def post(self, job, spins):
        """Run ``job()`` on this worker, which then waits ``spins`` spin-wait hints
        awake for the next; returns the number :meth:`join` waits for."""
        self.error = None
        self._job = job
        self._spins = spins
        number = int(self._posted[0]) + 1
        publish(self._posted, number)
        self._wake.set()
        return number

    def join(self, number, spins):
        """Wait until job ``number`` has finished (its exception is ``error``),
        ``spins`` spin-wait hints awake, then asleep."""
        while wait_change(self._done, number - 1, spins) != number:
            self._finished.wait()
            self._finished.clear()


_workers = []
_lock = threading.Lock()


def _forget_workers():
    """In a forked child: the parent's workers did not come along."""
    global _lock
    _workers.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


# The lane watch (LaneWatch): a probe at most every PROBE_SECONDS; after a probe in
# which the threads were more than SLOWER times one thread's time a pair, passes run
# on one thread for HOLD_SECONDS; a probe's one-thread head is 1/PROBE_SHARE of its
# block.
PROBE_SECONDS = 0.5
HOLD_SECONDS = 2.0
SLOWER = 1.1
PROBE_SHARE = 8


class LaneWatch:
    """Whether threads pay on this machine now, from the process's last probe.

    Two threads stepping one shared model can take twice as long as one, for
    seconds to minutes at a time: on the 2-core virtual machine of the measurements
    in ``n_jobs``, a cache line's round trip between the cores took 117-1,278 ns in
    some minutes against 30-80 ns in others (the cores far apart on the host), and
    the shared weights' lines make every step pay for it. A pass on threads that is
    due a probe (:meth:`probe_due`) runs the first pairs of a block on one thread
    and the rest on the threads, timing both: :meth:`record` compares their times a
    pair, and when the threads were more than :data:`SLOWER` times one thread's,
    the passes that start in the next :data:`HOLD_SECONDS` run on one thread
    (:meth:`allows` is False). A probe keeps the other threads waiting while a
    ``1/PROBE_SHARE`` of a block runs, at most every :data:`PROBE_SECONDS`.

    One watch serves the process (:data:`WATCH`): the machine's state is the same
    for every fit. ``clock`` (seconds, monotonic) times the probes and the hold;
    ``enabled=False`` turns the watch off (threads always, no probes); ``every``
    and ``hold`` are the seconds between probes and of a hold."""

    def __init__(self, clock=time.perf_counter, enabled=True, every=PROBE_SECONDS,
                 hold=HOLD_SECONDS):
        self.clock = clock
        self.enabled = enabled
        self.every = every
        self.hold = hold
        self.last_probe = -math.inf
        self.hold_until = -math.inf
        self.last = None  # the last probe's (one thread, threads) seconds a pair

    def allows(self):
        """Whether a pass may run on threads (no slow probe holds them off)."""
        return not self.enabled or self.clock() >= self.hold_until

    def probe_due(self):
        """Whether the next pass on threads should probe (one per ``every`` s)."""
        return self.enabled and self.clock() - self.last_probe >= self.every

    def head(self, n_pairs, threads, lane_steps):
        """The pairs of a block of ``n_pairs`` that a probe runs on one thread: a
        ``1/PROBE_SHARE`` of them, at least ``lane_steps``, leaving the threads at
        least ``lane_steps`` each (0: the block is too short to probe)."""
        head = max(lane_steps, n_pairs // PROBE_SHARE)
        return head if n_pairs - head >= threads * lane_steps else 0

    def record(self, one, lanes):
        """A probe's seconds a pair on one thread and on the threads: returns
        whether the threads were slower (and holds them off if so)."""
        now = self.clock()
        self.last_probe = now
        self.last = (one, lanes)
        slower = lanes > SLOWER * one
        if slower:
            self.hold_until = now + self.hold
        return slower


WATCH = LaneWatch()


def in_lanes(lane, threads, meanwhile=None):
    """``lane(lanes, p)`` for ``p < threads`` on as many threads at once (lane 0 in
    this one); every lane has ended when this returns, and the first exception of a
    lane is raised (the others are halted by it).

    ``meanwhile()``, if given, runs in this thread after the other lanes have their
    jobs and before lane 0: work of the caller's own (the draws of the next block)
    that overlaps the other lanes' start. Lanes that claim their work (the pair
    lanes) leave lane 0 what the others have not taken by then. An exception it
    raises halts the lanes and is raised when they have ended.

    The lanes are paced (``Lanes(paced=True)``): a lane does not run more than a
    bounded number of pairs ahead of the pairs whose schedule lane 0 has applied."""
    lanes = Lanes(threads, paced=True)
    if threads == 1:
        if meanwhile is not None:
            meanwhile()
        lane(lanes, 0)
        return
    spins = LANE_SPINS if threads <= n_threads(-1) else 0  # n_threads(-1): the cores
    with _lock:
        while len(_workers) < threads - 1:
            _workers.append(_Worker())

        def job(p):
            def run():
                try:
                    lane(lanes, p)
                except BaseException:
                    lanes.set()
                    raise
            return run

        posted = []
        try:
            for p, worker in enumerate(_workers[:threads - 1], start=1):
                posted.append((worker, worker.post(job(p), spins)))
            if meanwhile is not None:
                meanwhile()
            lane(lanes, 0)
        except BaseException:
            lanes.set()
            raise
        finally:
            _join(posted, lanes, spins)
        for worker, _ in posted:
            if worker.error is not None:
                raise worker.error


def _join(posted, halt, spins):
    """Wait for every posted job, also through Ctrl-C (which halts the lanes)."""
    interrupted = None
    for worker, number in posted:
        while True:
            try:
                worker.join(number, spins)
                break
            except BaseException as exc:  # noqa: BLE001 -- re-raised below
                halt.set()
                interrupted = interrupted or exc
    if interrupted is not None:
        raise interrupted
