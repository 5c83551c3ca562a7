"""The stubs say what the native module has: mypy's stubtest compares them."""

import subprocess
import sys
from pathlib import Path

import pytest

import atfunc


def test_the_stubs_match_the_module(tmp_path: Path):
    pytest.importorskip("mypy")
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


def _stub_docstrings():
    """Each documented item of the stubs, by dotted name: its docstring, cleaned."""
    import ast

    stub = Path(atfunc.__file__).with_name("_atfunc.pyi")
    docs = {}
    for node in ast.parse(stub.read_text()).body:
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            continue
        # An overloaded function is documented on its first overload.
        if ast.get_docstring(node) and node.name not in docs:
            docs[node.name] = ast.get_docstring(node)
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and ast.get_docstring(item):
                    docs[f"{node.name}.{item.name}"] = ast.get_docstring(item)
    # PyO3's own class, whose documentation is PyO3's.
    docs.pop("PanicException")
    return docs


@pytest.mark.parametrize("name", sorted(_stub_docstrings()))
def test_help_shows_the_whole_docstring_of_the_stubs(name):
    import inspect

    item = atfunc._atfunc
    for part in name.split("."):
        item = inspect.getattr_static(item, part)
    assert inspect.cleandoc(item.__doc__ or "") == _stub_docstrings()[name]
