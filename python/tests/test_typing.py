"""What a type checker sees: decorated tools keep their types, a turn's records are typed,
and a `choice` that is none says which are."""

import subprocess
import sys
from pathlib import Path

import pytest

import atfunc

TYPED = '''
from typing import List
import atfunc

toolbox = atfunc.Toolbox()

@toolbox.tool
def add(a: int, b: int = 1) -> int:
    """Adds."""
    return a + b

@toolbox.tool(name="text.shout", timeout=2.0)
async def shout(text: str) -> str:
    """Shouts."""
    return text.upper()

def later(x: float) -> float:
    return x

kept = toolbox.add_tool(later, name="later")

total: int = add(1, b=2)
louder = shout("hi")
again: float = kept(1.5)

turn = toolbox.run("@add(1)")
for record in turn.results:
    name: str = record["name"]
    where: List[int] = record["span"]
history: List[str] = toolbox.history
'''

WRONG = '''
import atfunc

toolbox = atfunc.Toolbox()

@toolbox.tool
def add(a: int) -> int:
    return a

@toolbox.tool(name="two")
def two(a: int) -> int:
    return a

add("one")
two("one")
toolbox.run("@add(1)").results[0]["nmae"]
'''


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy")
    (tmp_path / "snippet.py").write_text(source)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nignore_missing_imports = True\n")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), "--config-file", str(config), "snippet.py"],
        capture_output=True, text=True, cwd=tmp_path,
    )


def test_a_typed_program_passes_mypy_strict(tmp_path: Path):
    done = _mypy(tmp_path, TYPED)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_sees_through_the_decorators(tmp_path: Path):
    done = _mypy(tmp_path, WRONG)
    assert 'Argument 1 to "add" has incompatible type "str"' in done.stdout, done.stdout
    assert 'Argument 1 to "two" has incompatible type "str"' in done.stdout, done.stdout
    assert '"nmae"' in done.stdout, done.stdout


def test_a_choice_that_is_none_names_the_choices():
    tools = atfunc.Tools([{"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}])
    with pytest.raises(atfunc.GrammarError) as error:
        atfunc.grammar(tools, choice="sometimes")
    message = str(error.value)
    for choice in ('"auto"', '"required"', '"none"', "function", "get_weather"):
        assert choice in message, message


def test_the_results_are_the_typed_records():
    assert "CallResult" in atfunc.__all__
    hints = __import__("typing").get_type_hints(atfunc.Turn)
    assert "CallResult" in str(hints["results"])


def test_the_examples_pass_mypy_strict(tmp_path: Path):
    """The programs the README and docs show (examples/python) type-check as written."""
    pytest.importorskip("mypy")
    examples = sorted((Path(__file__).resolve().parents[2] / "examples" / "python").glob("*.py"))
    assert examples, "examples/python has no programs"
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nignore_missing_imports = True\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), "--config-file", str(config),
         *map(str, examples)],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
