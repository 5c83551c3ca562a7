"""Under CI a skipped test fails (tests/pytest_ci.py)."""

import os
import sys

# The workspace's shared test helpers are in tests/ at its root.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "tests"))
from pytest_ci import pytest_runtest_makereport  # noqa: E402,F401
