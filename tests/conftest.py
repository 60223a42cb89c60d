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
