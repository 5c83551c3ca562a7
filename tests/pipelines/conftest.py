"""Under CI a skipped test fails (tests/pytest_ci.py)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pytest_ci import pytest_runtest_makereport  # noqa: E402,F401
