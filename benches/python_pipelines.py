"""atfunc from Python, and on Ray and Spark, against `atfunc parse --jsonl`: one run, one table.

    python benches/python_pipelines.py [--records N] [--pipeline-records N] [--cli PATH]
        [--dir DIR] [--repeat N] [--skip-python] [--skip-pipelines]

Needs `pip install ./python` and `pip install -r examples/pipelines/requirements.txt`, and
the release CLI (`cargo build --release -p atfunc-cli`, or `--cli PATH`). It measures:

1. On `--records` clean records (default 200,000) without tools of their own, every path
   given the same tools file, best of three each:
   - the CLI, `atfunc parse --jsonl --tools tools.json records.jsonl > /dev/null`;
   - `atfunc.parse_jsonl` over the file's lines (the file read into Arrow by
     `jsonl_splits.read_split`, timed with it) and the output lines it returns;
   - `atfunc.parse_arrow` over the completions as an Arrow string array (taken out of the
     records beforehand, not timed);
   - a pure-Python extractor with regular expressions (`RegexExtractor`), one thread, over
     the same completions, and how many of the CLI's calls it finds exactly.
2. On `--pipeline-records` mixed records (default 1,000,000; the test file's kind: a third
   with tools of their own, one line in a hundred not a record), `ray_parse.py` with 1 and
   2 CPUs and `spark_parse.py` on `local[1]` and `local[2]`, each as its own process, 1 and
   2 workers taking turns `--repeat` times: the pipeline's best time (reading, parsing,
   writing; start-up apart) and the whole run's, records/s, and 2 workers over 1. The CLI
   on the same file, for scale.

The load average is printed beside each figure: this is meant for a shared machine, where
another build may take a core halfway through a run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = ROOT / "examples" / "pipelines"
sys.path.insert(0, str(PIPELINES))

import jsonl_splits  # noqa: E402
import make_records  # noqa: E402


class RegexExtractor:
    """What a Python user writes without atfunc: regular expressions for `@name(args)`, the
    arguments split on commas outside quotes, values read as JSON or as bare words, and a
    `with_body [[...]]` block kept as text. No streaming, no binding, no error records: a
    call it cannot read is skipped or read wrong."""

    STRING = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\''
    CALL = re.compile(
        r"@([^\W\d][\w.]*)\(((?:" + STRING + r"|[^()\"'])*)\)(\s*with_body\s*\[\[(.*?)\]\])?",
        re.S,
    )
    ARG = re.compile(r"\s*(?:([^\W\d]\w*)\s*[=:]\s*)?(" + STRING + r"|[^,]+?)\s*(?:,|$)", re.S)

    @staticmethod
    def value(text: str):
        if text.startswith("'"):
            return text[1:-1].replace("\\'", "'")
        try:
            return json.loads(text)
        except ValueError:
            return text

    def calls(self, text: str) -> list[dict]:
        found = []
        for match in self.CALL.finditer(text):
            positional, named = [], {}
            for arg in self.ARG.finditer(match.group(2)):
                if not arg.group(2):
                    continue
                value = self.value(arg.group(2))
                if arg.group(1):
                    named[arg.group(1)] = value
                else:
                    positional.append(value)
            body = None if match.group(4) is None else match.group(4).strip()
            found.append({"name": match.group(1), "positional": positional, "named": named,
                          "body": body})
        return found


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def best_of(runs: int, work) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - started)
    return best, result


def row(what: str, records: int, seconds: float, baseline: float | None, note: str = "") -> None:
    ratio = f"{seconds / baseline:.2f}×" if baseline else ""
    print(f"| {what} | {records / seconds:,.0f} | {seconds:.2f} | {ratio} | {note} |", flush=True)


def python_paths(cli: Path, folder: Path, records: int) -> None:
    import atfunc
    import pyarrow as pa

    path, tools_path = folder / "clean.jsonl", folder / "tools.json"
    size = make_records.write_records(path, records, clean=True, record_tools=False)
    tools = json.dumps(make_records.TOOLS_FILE)
    tools_path.write_text(tools, encoding="utf-8")
    completions = pa.array(
        [json.loads(line)["completion"] for line in path.read_text(encoding="utf-8").splitlines()],
        pa.string(),
    )
    print(f"\n{records:,} records, {size / 1e6:.1f} MB, {os.cpu_count()} cores, {load()}\n")
    print("| what | records/s | seconds | × CLI time | |")
    print("|---|---:|---:|---:|---|")

    def run_cli():
        subprocess.run([cli, "parse", "--jsonl", "--tools", tools_path, path], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    cli_seconds, _ = best_of(3, run_cli)
    row("CLI `parse --jsonl --tools`", records, cli_seconds, None, load())

    whole = jsonl_splits.Split(str(path), 0, size, 1)

    def run_jsonl():
        return atfunc.parse_jsonl(jsonl_splits.read_split(whole).column("text"), tools)

    seconds, out = best_of(3, run_jsonl)
    assert len(out) == records
    row("`atfunc.parse_jsonl`, file read into Arrow included", records, seconds, cli_seconds,
        load())

    seconds, out = best_of(3, lambda: atfunc.parse_arrow(completions, tools))
    assert len(out) == records
    row("`atfunc.parse_arrow` over the completions", records, seconds, cli_seconds, load())

    # The regex baseline against the CLI's unbound calls (no tools: what a regex can see).
    expected = subprocess.run([cli, "parse", "--jsonl", path], check=True, capture_output=True)
    expected_calls = [
        [{key: call[key] for key in ("name", "positional", "named", "body")}
         for call in json.loads(line)["calls"]]
        for line in expected.stdout.decode("utf-8").splitlines()
    ]
    extractor = RegexExtractor()
    texts = completions.to_pylist()
    seconds, found = best_of(1, lambda: [extractor.calls(text) for text in texts])
    def keys(calls):
        return Counter(json.dumps(call, sort_keys=True) for call in calls)

    same = extra = 0
    for calls, wanted in zip(found, expected_calls):
        common = keys(calls) & keys(wanted)
        same += sum(common.values())
        extra += len(calls) - sum(common.values())
    total = sum(len(calls) for calls in expected_calls)
    row("pure Python, regular expressions (one thread)", records, seconds, cli_seconds,
        f"finds {same / total:.1%} of the CLI's {total:,} calls exactly, "
        f"and {extra:,} others (misread, or no call); {load()}")


def pipelines(cli: Path, folder: Path, records: int, repeat: int) -> None:
    # The generator writes the same file for the same count: one kept in --dir is reused.
    path = folder / f"mixed-{records}.jsonl"
    size = path.stat().st_size if path.exists() else make_records.write_records(path, records)
    print(f"\n{records:,} mixed records, {size / 1e6:.1f} MB, {load()}\n")
    print("| engine | workers | pipeline s | records/s | whole run s | 2 over 1 | |")
    print("|---|---:|---:|---:|---:|---:|---|")

    started = time.perf_counter()
    subprocess.run([cli, "parse", "--jsonl", path], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    print(f"| CLI (every core) | {os.cpu_count()} | {seconds:.1f} | {records / seconds:,.0f} | "
          f"{seconds:.1f} | | {load()} |", flush=True)

    for engine, script, option in [("Ray", "ray_parse.py", lambda n: ["--num-cpus", str(n)]),
                                   ("Spark", "spark_parse.py",
                                    lambda n: ["--master", f"local[{n}]"])]:
        # 1 and 2 workers take turns, so a change of load between them weighs on both alike.
        own, whole, loads = {1: [], 2: []}, {1: [], 2: []}, {1: [], 2: []}
        for _ in range(repeat):
            for workers in (1, 2):
                out = folder / f"{engine}-{workers}"
                shutil.rmtree(out, ignore_errors=True)
                started = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, str(PIPELINES / script), str(path), str(out),
                     *option(workers)],
                    capture_output=True, check=False)
                whole[workers].append(time.perf_counter() - started)
                if done.returncode != 0:
                    sys.exit(f"{script} failed:\n{done.stderr.decode()[-4000:]}")
                own[workers].append(float(re.findall(rb"in ([0-9.]+) s", done.stderr)[-1]))
                loads[workers].append(os.getloadavg()[0])
                shutil.rmtree(out, ignore_errors=True)
        for workers in (1, 2):
            best = min(own[workers])
            scale = f"{min(own[1]) / best:.2f}×" if workers == 2 else ""
            runs = ", ".join(f"{s:.1f}" for s in own[workers])
            print(f"| {engine} | {workers} | {best:.1f} | {records / best:,.0f} | "
                  f"{min(whole[workers]):.1f} | {scale} | runs: {runs} s; load after each: "
                  f"{', '.join(f'{x:.1f}' for x in loads[workers])} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--pipeline-records", type=int, default=1_000_000)
    parser.add_argument("--cli", type=Path, default=ROOT / "target" / "release" / "atfunc")
    parser.add_argument("--dir", type=Path, help="keep the generated files here")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each pipeline this many times, keep the best")
    parser.add_argument("--skip-python", action="store_true")
    parser.add_argument("--skip-pipelines", action="store_true")
    args = parser.parse_args()
    if not args.cli.exists():
        sys.exit(f"no CLI at {args.cli}: cargo build --release -p atfunc-cli, or --cli PATH")
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.dir or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        if not args.skip_python:
            python_paths(args.cli, folder, args.records)
        if not args.skip_pipelines:
            pipelines(args.cli, folder, args.pipeline_records, args.repeat)


if __name__ == "__main__":
    main()
