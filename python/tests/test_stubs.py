"""The stubs say what the native module has: mypy's stubtest compares them."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")


def test_the_stubs_match_the_module(tmp_path: Path):
    # pyarrow ships no types; the stubs name its classes all the same.
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nignore_missing_imports = True\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--mypy-config-file", str(config), "atfunc"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
