"""`atfunc parse --jsonl` on Ray Data: the same output records, from every node of a cluster.

    python examples/pipelines/ray_parse.py INPUT.jsonl OUTPUT_DIR [--tools FILE]
        [--dialect NAME] [--address ADDRESS] [--num-cpus N] [--split-mb MB]
        [--wheel ATFUNC.whl]

INPUT.jsonl holds records `{"id", "completion", "tools"}`, one a line; OUTPUT_DIR gets JSON
Lines files whose lines, taken together, are exactly the lines `atfunc parse --jsonl
[--tools FILE] [--dialect NAME] INPUT.jsonl` prints (in another order, spread over several
files).

The plan:

1. A Ray Data source reads the file in splits (`jsonl_splits.py`): the driver cuts the file
   at line ends, each read task reads one split into an Arrow table of `line` and `text`.
2. `map_batches` runs `atfunc.parse_jsonl` on each split's table (in the same task as the
   read), giving a one-column table of output lines.
3. A file datasink writes each block's lines as they are, one file per write task.

Lines are carried as text from reading to writing, never as rows of typed columns: records'
`tools` differ in shape from record to record, which schema inference cannot hold, and the
output must be byte for byte the CLI's.

Without `--address` the script starts a local Ray with `--num-cpus` CPUs (all by default);
with one it joins that cluster (`auto`, `ray://head:10001`). `jsonl_splits.py` goes to the
workers with the job (`runtime_env` `py_modules`); atfunc must be installed on every node,
or given as a wheel with `--wheel`, which Ray installs for the job (see the README's "At
scale").
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Iterable, Optional

# A Ray this script starts itself (no --address) serves this machine alone, so it listens on
# the loopback address, not on the machine's network address. Ray reads the switch when it
# is imported (its name is historical: it is the single-machine mode of Ray on macOS).
if __name__ == "__main__" and not any(arg.startswith("--address") for arg in sys.argv):
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import pyarrow as pa  # noqa: E402
import ray  # noqa: E402
import ray.data  # noqa: E402
from ray.data.block import BlockAccessor, BlockMetadata  # noqa: E402
from ray.data.datasource import BlockBasedFileDatasink, Datasource, ReadTask  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jsonl_splits  # noqa: E402


class JsonlSplitsDatasource(Datasource):
    """A JSON Lines file as read tasks, one per split, each giving a table of `line` and
    `text`. The splits are planned on the driver when the source is made."""

    def __init__(self, path: str, split_bytes: int):
        super().__init__()
        self._splits = jsonl_splits.plan_splits(path, split_bytes)
        self._path = path

    @property
    def splits(self) -> int:
        return len(self._splits)

    def estimate_inmemory_data_size(self) -> Optional[int]:
        return sum(split.end - split.start for split in self._splits)

    def get_read_tasks(self, parallelism: int, per_task_row_limit=None, data_context=None):
        # One task a split, whatever `parallelism` asks: the splits were sized for the
        # cluster already, and a split's line numbers are fixed.
        return [
            ReadTask(
                lambda split=split: [jsonl_splits.read_split(split)],
                BlockMetadata(
                    num_rows=None,
                    size_bytes=split.end - split.start,
                    exec_stats=None,
                    input_files=[self._path],
                ),
                per_task_row_limit=per_task_row_limit,
            )
            for split in self._splits
        ]


class LinesDatasink(BlockBasedFileDatasink):
    """Writes the `value` column of each block as lines of text, as they are."""

    def __init__(self, path: str):
        super().__init__(path, file_format="jsonl")

    def write_block_to_file(self, block: BlockAccessor, file: pa.NativeFile) -> None:
        values = block.to_arrow().column("value").combine_chunks()
        file.write(jsonl_splits.output_bytes(values))


def parse_step(batch: pa.Table, tools: Optional[str], dialect: str) -> pa.Table:
    return jsonl_splits.parse_batch(batch, tools, dialect)


def run(input_path: str, output_dir: str, tools: Optional[str] = None,
        split_bytes: Optional[int] = None, dialect: str = "atfunc") -> None:
    """Parses `input_path` into JSON Lines files under `output_dir` on the Ray cluster this
    process is connected to. `tools` is the text of a tools file, or None; `dialect` the
    call format of the completions (`atfunc parse --dialect`)."""
    if split_bytes is None:
        size = Path(input_path).stat().st_size if Path(input_path).exists() else 0
        split_bytes = jsonl_splits.split_bytes_for(size, int(ray.cluster_resources().get("CPU", 1)))
    source = JsonlSplitsDatasource(input_path, split_bytes)
    # As many blocks as splits: asked for more, Ray cuts each split's table into pieces after
    # the read, and the parse then runs as a stage of its own behind Ray's object store.
    records = ray.data.read_datasource(source, override_num_blocks=max(1, source.splits))
    parsed = records.map_batches(
        parse_step,
        fn_kwargs={"tools": tools, "dialect": dialect},
        batch_format="pyarrow",
        # A whole split a batch (it is bounded already): with a batch size Ray runs the
        # parse apart from the read and passes every split through its object store; without,
        # reading, parsing and writing a split are one task.
        batch_size=None,
        zero_copy_batch=True,
    )
    parsed.write_datasink(LinesDatasink(output_dir))


def main(argv: Optional[Iterable[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", help="records, one JSON object a line (a path or a URI)")
    parser.add_argument("output", help="the folder that gets the output files")
    parser.add_argument("--tools", type=Path, help="tools for records without their own")
    parser.add_argument("--dialect", default="atfunc",
                        help="the call format of the completions, as for `atfunc parse "
                        "--dialect` (default: atfunc)")
    parser.add_argument("--address", help="a Ray cluster to join (default: start one here)")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local Ray (default: all)")
    parser.add_argument("--split-mb", type=float, help="split size in MB (default: by CPUs)")
    parser.add_argument("--wheel", type=Path,
                        help="an atfunc wheel for Ray to install on every node of the job")
    args = parser.parse_args(argv)
    tools = args.tools.read_text(encoding="utf-8") if args.tools else None
    split_bytes = int(args.split_mb * 1e6) if args.split_mb else None
    # A misspelt name fails here, before a cluster is started or joined.
    import atfunc

    atfunc.parse("", dialect=args.dialect)

    # The helper module and, if given, the atfunc wheel go to every node with the job.
    runtime_env = {
        "py_modules": [jsonl_splits] + ([str(args.wheel)] if args.wheel else []),
        "env_vars": jsonl_splits.WORKER_ENV,
    }
    if args.address:
        ray.init(address=args.address, runtime_env=runtime_env, log_to_driver=False)
    else:
        ray.init(num_cpus=args.num_cpus, runtime_env=runtime_env, include_dashboard=False,
                 log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    started = time.perf_counter()
    run(args.input, args.output, tools, split_bytes, args.dialect)
    seconds = time.perf_counter() - started
    print(f"parsed {args.input} into {args.output} in {seconds:.2f} s", file=sys.stderr)
    ray.shutdown()


if __name__ == "__main__":
    main()
