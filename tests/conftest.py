"""Shared pytest setup: make ``tests/`` importable so test files can do
``from reference import ...`` (slow numpy reference implementations)."""
import os
import signal
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def sigint():
    """Python's own SIGINT handler (KeyboardInterrupt) for the test: a shell that
    starts the suite in the background (``nohup ... &``) ignores SIGINT, and the
    tests of Ctrl-C would then wait for an interrupt that never comes."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def _lane_watch_off():
    """The lane watch (``aucopt.learners._lanes.WATCH``) off for every test: it times
    passes, so with it on a test's threads and blocks would depend on the machine's
    minute. Its own tests turn it on with a clock of their own; its state is restored
    after every test."""
    from aucopt.learners._lanes import WATCH
    saved = dict(vars(WATCH))
    WATCH.enabled = False
    yield
    vars(WATCH).clear()
    vars(WATCH).update(saved)
