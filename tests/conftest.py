"""Shared pytest setup: make ``tests/`` importable so test files can do
``from reference import ...`` (slow numpy reference implementations)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
