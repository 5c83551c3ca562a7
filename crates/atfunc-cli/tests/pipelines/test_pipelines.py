"""The Ray and Spark pipelines against `atfunc parse --jsonl`, on one generated file.

Each pipeline runs as a user runs it, as a script in its own process: Ray started by the
script with two CPUs on the loopback address, Spark on `local[2]`. Its output files, taken
together, must hold exactly the lines the CLI prints for the same file (order aside).

The CLI is `target/debug/atfunc` (`cargo build --all-features`), or `ATFUNC_BIN`.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
PIPELINES = ROOT / "examples" / "pipelines"
sys.path.insert(0, str(PIPELINES))

import make_records  # noqa: E402

# At least 10,000 processable records, plus about one line in a hundred that is not one.
RECORDS = 12_000
# Records of answers in the hermes dialect, for the `--dialect` runs.
HERMES_RECORDS = 2_000
# One pipeline run, start-up included; a loaded two-core machine takes about a minute.
TIMEOUT = 240


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("records")
    path, tools = folder / "records.jsonl", folder / "tools.json"
    make_records.write_records(path, RECORDS)
    with open(path, "ab") as file:
        # Lines no text writer makes: not UTF-8, a CRLF end, and a last line without one.
        file.write(b'{"id": "\xff", "completion": "@a.b(1)"}\n')
        file.write(b'{"id": "crlf", "completion": "@a.b(2)"}\r\n')
        file.write(b'{"id": "last", "completion": "@a.b(3)"}')
    tools.write_text(json.dumps(make_records.TOOLS_FILE), encoding="utf-8")
    return path, tools


def hermes_completion(rng: random.Random) -> str:
    """An answer with calls written as Hermes models write them, atfunc calls among the
    text (which the hermes dialect reads as text), sometimes a block cut short."""
    text = [rng.choice(make_records.PROSE)]
    for _ in range(rng.randrange(4)):
        if rng.randrange(2):
            call = {"name": "weather.get_current_weather",
                    "arguments": {"location": rng.choice(make_records.CITIES)}}
        else:
            call = {"name": "math.calculate_power",
                    "arguments": {"base": rng.randrange(100), "exponent": rng.randrange(30)}}
        block = f"<tool_call>\n{json.dumps(call, ensure_ascii=rng.randrange(2) == 0)}\n</tool_call>"
        if rng.randrange(10) == 0:
            block = block[: len(block) // 2]
        text.append(block)
        text.append(rng.choice(make_records.PROSE))
    if rng.randrange(5) == 0:
        text.append(make_records.good_call(rng))
    return "".join(text)


@pytest.fixture(scope="module")
def hermes_records(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hermes") / "records.jsonl"
    rng = random.Random(5)
    with open(path, "w", encoding="utf-8") as file:
        for number in range(HERMES_RECORDS):
            file.write(json.dumps({"id": number, "completion": hermes_completion(rng)}) + "\n")
    return path


def assert_dialect_records(got: list[str], expected: list[str]) -> None:
    assert len(expected) == HERMES_RECORDS
    # The calls were read in the dialect, bound or not, and the cut-off blocks are errors.
    assert any('"calls":[{"name":"weather.get_current_weather"' in line for line in expected)
    assert any('"errors":[{' in line for line in expected)
    missing, extra = Counter(expected) - Counter(got), Counter(got) - Counter(expected)
    assert not missing and not extra, (
        f"{sum(missing.values())} lines missing, {sum(extra.values())} extra; "
        f"first missing: {next(iter(missing), None)!r}; first extra: {next(iter(extra), None)!r}"
    )


def cli_lines(*args: str) -> list[str]:
    binary = Path(os.environ.get("ATFUNC_BIN", ROOT / "target" / "debug" / "atfunc"))
    if not binary.exists():
        pytest.fail(f"no atfunc binary at {binary}: build it with `cargo build --all-features`"
                    " or set ATFUNC_BIN")
    out = subprocess.run([binary, "parse", "--jsonl", *args], capture_output=True, check=True,
                         timeout=TIMEOUT)
    return out.stdout.decode("utf-8").splitlines()


def run_pipeline(script: str, *args: str, env: dict[str, str] | None = None) -> None:
    try:
        done = subprocess.run([sys.executable, str(PIPELINES / script), *args],
                              capture_output=True, timeout=TIMEOUT, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired as timeout:
        pytest.fail(f"{script} ran past {TIMEOUT} s:\n{(timeout.stderr or b'')[-4000:].decode()}")
    if done.returncode != 0:
        pytest.fail(f"{script} exited with {done.returncode}:\n{done.stderr[-6000:].decode()}")


def output_lines(folder: Path, pattern: str) -> list[str]:
    files = sorted(folder.glob(pattern))
    assert files, f"no output files {pattern} in {folder}"
    lines = []
    for file in files:
        text = file.read_text(encoding="utf-8")
        assert text == "" or text.endswith("\n"), f"{file} does not end with a newline"
        lines.extend(text.splitlines())
    return lines


def assert_same_records(got: list[str], expected: list[str]) -> None:
    assert len(expected) >= 10_000
    # The file holds every kind of record the comparison is meant to cover.
    assert any('"line":' in line and line.endswith('"}') for line in expected)
    assert any('"args":' in line for line in expected)
    assert any('"errors":[{' in line for line in expected)
    assert any(line.endswith('"calls":[],"errors":[]}') for line in expected)
    missing, extra = Counter(expected) - Counter(got), Counter(got) - Counter(expected)
    assert not missing and not extra, (
        f"{sum(missing.values())} lines missing, {sum(extra.values())} extra; "
        f"first missing: {next(iter(missing), None)!r}; first extra: {next(iter(extra), None)!r}"
    )


def test_ray_pipeline_prints_what_the_cli_prints(records, tmp_path):
    path, _ = records
    out = tmp_path / "out"
    run_pipeline("ray_parse.py", str(path), str(out), "--num-cpus", "2")
    expected = cli_lines(str(path))
    # Without --tools, records without their own tools get their calls back unbound.
    assert any('"positional":' in line for line in expected)
    assert_same_records(output_lines(out, "*.jsonl"), expected)


def test_spark_pipeline_prints_what_the_cli_prints(records, tmp_path):
    path, tools = records
    out = tmp_path / "out"
    # Splits of about 5,000 lines: several parse_jsonl calls a split.
    run_pipeline("spark_parse.py", str(path), str(out), "--tools", str(tools),
                 "--master", "local[2]", "--split-mb", "2.5")
    assert_same_records(output_lines(out, "part-*"), cli_lines("--tools", str(tools), str(path)))


def test_ray_pipeline_reads_another_dialect(hermes_records, tmp_path):
    out = tmp_path / "out"
    run_pipeline("ray_parse.py", str(hermes_records), str(out), "--num-cpus", "2",
                 "--dialect", "hermes")
    expected = cli_lines("--dialect", "hermes", str(hermes_records))
    assert expected != cli_lines(str(hermes_records))
    assert_dialect_records(output_lines(out, "*.jsonl"), expected)


def test_spark_pipeline_reads_another_dialect(records, hermes_records, tmp_path):
    _, tools = records
    out = tmp_path / "out"
    run_pipeline("spark_parse.py", str(hermes_records), str(out), "--tools", str(tools),
                 "--master", "local[2]", "--split-mb", "0.2", "--dialect", "auto")
    expected = cli_lines("--tools", str(tools), "--dialect", "auto", str(hermes_records))
    assert any('"args":{"location":' in line for line in expected)
    assert_dialect_records(output_lines(out, "part-*"), expected)


def test_a_pipeline_refuses_an_unknown_dialect(hermes_records, tmp_path):
    done = subprocess.run([sys.executable, str(PIPELINES / "spark_parse.py"),
                           str(hermes_records), str(tmp_path / "out"), "--dialect", "hermez"],
                          capture_output=True, timeout=TIMEOUT, cwd=ROOT)
    assert done.returncode != 0
    assert b"unknown dialect `hermez`" in done.stderr
    assert not (tmp_path / "out").exists()


def test_spark_local_workers_use_the_drivers_interpreter(records, tmp_path):
    """Run as `venv/bin/python spark_parse.py` with another `python3` first on PATH, the
    local workers must use the script's interpreter, not that `python3`."""
    path, tools = records
    shims = tmp_path / "shims"
    shims.mkdir()
    started = tmp_path / "shim-started"
    # A `python3` that is not the one running the script: it notes that it ran and fails,
    # as an interpreter without atfunc would.
    shim = shims / "python3"
    shim.write_text(f"#!/bin/sh\necho \"$@\" >> '{started}'\nexit 1\n", encoding="utf-8")
    shim.chmod(0o755)
    import pyspark

    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON",
                                                            "PYSPARK_DRIVER_PYTHON")}
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    # Spark's launcher scripts ask `python3` where Spark lives unless SPARK_HOME says it.
    env["SPARK_HOME"] = str(Path(pyspark.__file__).parent)
    out = tmp_path / "out"
    run_pipeline("spark_parse.py", str(path), str(out), "--tools", str(tools),
                 "--master", "local[2]", env=env)
    assert not started.exists(), f"the workers started {shim}: {started.read_text()}"
    assert_same_records(output_lines(out, "part-*"), cli_lines("--tools", str(tools), str(path)))
