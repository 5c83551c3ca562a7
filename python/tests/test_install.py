"""What `pip install atfunc` brings: the library without pyarrow (an extra, `atfunc[arrow]`,
for `parse_jsonl` and `parse_arrow` only) and the `atfunc` command."""

import importlib.metadata
import subprocess
import sys

import pytest

import atfunc

from conftest import TOOLS


def test_pyarrow_is_an_extra_not_a_dependency():
    requires = importlib.metadata.requires("atfunc") or []
    pyarrow = [r for r in requires if r.split(";")[0].strip().startswith("pyarrow")]
    assert pyarrow, requires
    assert all("extra ==" in r and "arrow" in r.split(";", 1)[1] for r in pyarrow), requires
    assert "arrow" in (importlib.metadata.metadata("atfunc").get_all("Provides-Extra") or [])


def test_the_command_is_an_entry_point():
    points = importlib.metadata.entry_points()
    scripts = points.select(group="console_scripts") if hasattr(points, "select") \
        else points.get("console_scripts", [])  # Python 3.9
    [script] = [e for e in scripts if e.name == "atfunc" and e.value.startswith("atfunc.")]
    assert script.value == "atfunc._cli:main"


def test_everything_but_the_batch_functions_works_without_pyarrow():
    # A fresh interpreter in which pyarrow cannot be imported, as without the extra.
    program = """
import sys
sys.modules["pyarrow"] = None
import atfunc
tools = atfunc.Tools(%r)
assert atfunc.parse('@weather.get("Oslo")', tools)[0]["args"] == {"city": "Oslo"}
assert "@weather.get(" in atfunc.render(tools)
toolbox = atfunc.Toolbox()

@toolbox.tool
def double(n: int) -> int:
    "Doubles a number."
    return 2 * n

assert toolbox.run("@double(21)").results[0]["result"] == 42
assert "pyarrow" not in [name for name, module in sys.modules.items() if module is not None]
print("ok")
""" % (TOOLS,)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


@pytest.mark.parametrize("function", ["parse_jsonl", "parse_arrow"])
def test_the_batch_functions_say_how_to_install_pyarrow(monkeypatch, function):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install 'atfunc\[arrow\]'") as raised:
        getattr(atfunc, function)(['{"completion": "@weather.get(1)"}'], TOOLS)
    assert f"atfunc.{function}" in str(raised.value)
