"""The lane workers of n_jobs > 1 (aucopt.learners._lanes) and their hand-over cells."""
import multiprocessing
import threading
import time

import numpy as np
import pytest

from aucopt._kernels._pairwise import publish, wait_change
from aucopt.learners import _lanes


def _lane_threads():
    return [t for t in threading.enumerate() if t.name == "aucopt-lane"]


def test_wait_change_spins_until_the_cell_changes_or_gives_up():
    cell = np.zeros(1, dtype=np.int64)
    assert wait_change(cell, 0, 1000) == 0  # unchanged: gives up after its spins
    publish(cell, 7)
    assert cell[0] == 7 and wait_change(cell, 0, 1000) == 7
    assert wait_change(cell, 0, 0) == 7  # no spin: still one read of the cell
    assert wait_change(cell, 7, 0) == 7

    def later():
        time.sleep(0.02)
        publish(cell, 8)

    thread = threading.Thread(target=later)
    thread.start()
    assert wait_change(cell, 7, 1 << 40) == 8  # sees another thread's store
    thread.join()
    with pytest.raises(ValueError, match="one int64"):
        wait_change(np.zeros(0, dtype=np.int64), 0, 1)
    with pytest.raises(ValueError, match="one int64"):
        publish(np.zeros(0, dtype=np.int64), 1)


def _record(threads, calls=20):
    """``calls`` calls of in_lanes: the (call, lane, thread) of every lane."""
    seen = []
    lock = threading.Lock()

    def lane(lanes, p, call):
        with lock:
            seen.append((call, p, threading.get_ident()))

    for call in range(calls):
        _lanes.in_lanes(lambda lanes, p: lane(lanes, p, call), threads)
    return seen


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_every_lane_runs_once_per_call_on_workers_kept_between_calls(threads):
    seen = _record(threads)
    assert sorted((c, p) for c, p, _ in seen) == [(c, p) for c in range(20)
                                                 for p in range(threads)]
    caller = threading.get_ident()
    assert all(ident == caller for _, p, ident in seen if p == 0)
    # lanes 1.. run on the same worker threads call after call, none of them the caller
    others = {ident for _, p, ident in seen if p > 0}
    assert caller not in others and len(others) == threads - 1
    assert len(_lane_threads()) >= threads - 1


def test_more_lanes_than_cores_wait_asleep(monkeypatch):
    """With more lanes than cores nobody spins (spins=0): every hand-over goes
    through the sleeping path, many times in a row."""
    monkeypatch.setattr(_lanes, "n_threads", lambda n_jobs: 1)
    for threads in (2, 3):
        assert len(_record(threads, calls=200)) == 200 * threads


def test_a_sleeping_worker_wakes_for_the_next_block(monkeypatch):
    monkeypatch.setattr(_lanes, "LANE_SPINS", 10)  # gives up spinning at once
    for _ in range(3):
        assert len(_record(2, calls=2)) == 4
        time.sleep(0.02)


def _until_halted(lanes, seconds=10):
    """Wait (at most ``seconds``) for another lane to halt ``lanes``; whether it did."""
    deadline = time.perf_counter() + seconds
    while not lanes.halted() and time.perf_counter() < deadline:
        time.sleep(0.001)
    return lanes.halted()


def test_a_failing_lane_halts_the_others_and_is_raised_and_the_workers_go_on():
    halted = []

    def lane(lanes, p):
        if p == 1:
            raise MemoryError("lane 1")
        halted.append(_until_halted(lanes))

    with pytest.raises(MemoryError, match="lane 1"):
        _lanes.in_lanes(lane, 2)
    assert halted == [True]
    assert len(_record(2, calls=3)) == 6  # the worker serves the next call


def test_the_callers_failure_waits_for_the_other_lanes():
    finished = []

    def lane(lanes, p):
        if p == 0:
            raise KeyError("lane 0")
        finished.append((p, _until_halted(lanes)))

    with pytest.raises(KeyError, match="lane 0"):
        _lanes.in_lanes(lane, 3)
    assert sorted(finished) == [(1, True), (2, True)]  # ended before the error left


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_meanwhile_runs_in_the_caller_while_the_other_lanes_run(threads):
    """``meanwhile`` runs in the calling thread before lane 0, once, while the
    other lanes already run: it sees every other lane started."""
    started = [threading.Event() for _ in range(threads)]
    order = []

    def lane(lanes, p):
        started[p].set()
        if p == 0:
            order.append("lane 0")

    def meanwhile():
        order.append(("meanwhile", threading.get_ident(),
                      all(e.wait(30) for e in started[1:])))

    _lanes.in_lanes(lane, threads, meanwhile=meanwhile)
    assert order == [("meanwhile", threading.get_ident(), True), "lane 0"]


def test_a_failing_meanwhile_halts_the_lanes_and_is_raised():
    halted = []

    def lane(lanes, p):
        if p > 0:
            halted.append(_until_halted(lanes))
        else:
            halted.append("lane 0 ran")

    def meanwhile():
        raise MemoryError("drawing the next block")

    with pytest.raises(MemoryError, match="next block"):
        _lanes.in_lanes(lane, 2, meanwhile=meanwhile)
    assert halted == [True]  # lane 0 never ran; the worker's lane was halted
    assert len(_record(2, calls=3)) == 6  # the worker serves the next call


def test_two_passes_at_once_share_the_workers_one_after_the_other():
    results, errors = [], []

    def run():
        try:
            results.append(_record(2, calls=30))
        except BaseException as exc:  # noqa: BLE001 -- checked below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors and len(results) == 2
    assert all(len(r) == 60 for r in results)


def _child(queue):
    queue.put(len(_record(2, calls=3)))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="no fork on this platform")
def test_a_forked_child_starts_its_own_workers():
    _record(2, calls=2)  # the parent has a worker
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    child.join(30)
    if child.is_alive():  # hung on workers it does not have
        child.kill()
    assert child.exitcode == 0
    assert queue.get(timeout=5) == 6


def test_the_lane_watch_holds_threads_off_after_a_slow_probe():
    now = [100.0]
    watch = _lanes.LaneWatch(clock=lambda: now[0])
    assert watch.allows() and watch.probe_due() and watch.last is None
    assert not watch.record(1e-6, 0.8e-6)  # the threads were faster
    assert watch.last == (1e-6, 0.8e-6)
    assert watch.allows() and not watch.probe_due()
    now[0] += _lanes.PROBE_SECONDS
    assert watch.probe_due()
    assert not watch.record(1e-6, _lanes.SLOWER * 1e-6)  # within the margin: threads
    assert watch.allows()
    assert watch.record(1e-6, 1.2 * _lanes.SLOWER * 1e-6)
    assert not watch.allows() and not watch.probe_due()
    now[0] += _lanes.HOLD_SECONDS - 1e-3
    assert not watch.allows()
    now[0] += 2e-3
    assert watch.allows() and watch.probe_due()


def test_a_lane_watch_that_is_off_never_probes_nor_holds():
    watch = _lanes.LaneWatch(clock=lambda: 0.0, enabled=False)
    assert watch.record(1e-6, 1.0)  # the verdict is still given
    assert watch.allows() and not watch.probe_due()


def test_the_probe_head_leaves_every_thread_its_share():
    watch = _lanes.LaneWatch()
    assert watch.head(8000, 2, 256) == 8000 // _lanes.PROBE_SHARE
    assert watch.head(1000, 2, 256) == 256  # at least lane_steps
    assert watch.head(767, 2, 256) == 0  # 511 pairs left: less than 256 a thread
    assert watch.head(768, 2, 256) == 256
