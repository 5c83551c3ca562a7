"""`atfunc parse --jsonl` on PySpark: the same output records, from every executor.

    python examples/pipelines/spark_parse.py INPUT.jsonl OUTPUT_DIR [--tools FILE]
        [--dialect NAME] [--master MASTER] [--split-mb MB]
    spark-submit --master spark://head:7077 --py-files examples/pipelines/jsonl_splits.py \\
        examples/pipelines/spark_parse.py INPUT.jsonl OUTPUT_DIR

INPUT.jsonl holds records `{"id", "completion", "tools"}`, one a line; OUTPUT_DIR gets text
files (`part-*`) whose lines, taken together, are exactly the lines `atfunc parse --jsonl
[--tools FILE] [--dialect NAME] INPUT.jsonl` prints (in another order, spread over several
files).

The plan:

1. The driver cuts the file at line ends into splits (`jsonl_splits.py`), one partition
   each.
2. `mapInArrow` reads each split into Arrow batches of `line` and `text` and runs
   `atfunc.parse_jsonl` on them, yielding a `value` string column: the output lines.
3. Spark's text writer writes the values as they are, one line each.

Lines stay text from reading to writing: records' `tools` differ in shape from record to
record, which no DataFrame schema holds, and the output must be byte for byte the CLI's.

The master is `local[2]` unless `--master` or `spark-submit --master` says otherwise.
`jsonl_splits.py` goes to the executors with the job (`addPyFile`); atfunc itself must be
installed where the executors' Python runs (see the README's "At scale").
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Iterable, Iterator, Optional

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jsonl_splits  # noqa: E402

SPLIT_SCHEMA = StructType(
    [
        StructField("path", StringType(), False),
        StructField("start", LongType(), False),
        StructField("end", LongType(), False),
        StructField("first_line", LongType(), False),
    ]
)


def parse_splits(
    batches: Iterator[pa.RecordBatch], tools: Optional[str], dialect: str = "atfunc"
) -> Iterator[pa.RecordBatch]:
    """For `mapInArrow`: batches of splits in, batches of output lines (`value`) out."""
    for batch in batches:
        for row in batch.to_pylist():
            lines = jsonl_splits.read_split(jsonl_splits.Split(**row))
            yield from jsonl_splits.parse_batch(lines, tools, dialect).to_batches()


def run(spark: SparkSession, input_path: str, output_dir: str, tools: Optional[str] = None,
        split_bytes: Optional[int] = None, dialect: str = "atfunc") -> None:
    """Parses `input_path` into text files under `output_dir` with `spark`. `tools` is the
    text of a tools file, or None; `dialect` the call format of the completions (`atfunc
    parse --dialect`)."""
    context = spark.sparkContext
    if split_bytes is None:
        size = Path(input_path).stat().st_size if Path(input_path).exists() else 0
        split_bytes = jsonl_splits.split_bytes_for(size, context.defaultParallelism)
    splits = jsonl_splits.plan_splits(input_path, split_bytes)
    rows = [(s.path, s.start, s.end, s.first_line) for s in splits]
    # One partition a split: a split is the unit of work, sized for the cluster already.
    frame = spark.createDataFrame(context.parallelize(rows, max(1, len(rows))), SPLIT_SCHEMA)
    parsed = frame.mapInArrow(
        lambda batches: parse_splits(batches, tools, dialect),
        StructType([StructField("value", StringType(), False)]),
    )
    parsed.write.mode("errorifexists").text(output_dir)


def session(master: Optional[str]) -> SparkSession:
    """A Spark session on `master`; by default the one `spark-submit` was given, else
    `local[2]`."""
    builder = SparkSession.builder.appName("atfunc parse --jsonl")
    builder = builder.config("spark.ui.enabled", "false")
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    # spark-submit starts the JVM first and hands this process its gateway; the master is
    # then its to say.
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        master = "local[2]"
    for name, value in jsonl_splits.WORKER_ENV.items():
        builder = builder.config(f"spark.executorEnv.{name}", value)
    if master:
        builder = builder.master(master)
    if master and master.startswith("local"):
        # A local Spark serves this machine alone: its driver listens on loopback only.
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
        # Local workers start `python3` from PATH unless PYSPARK_PYTHON names another
        # (PySpark reads the variable, not the `spark.pyspark.python` setting, when the
        # driver is a plain script). When this script runs in a virtual environment that
        # is not first on PATH, that `python3` lacks atfunc: the workers get this
        # interpreter instead. A user's own choice is kept.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return builder.getOrCreate()


def main(argv: Optional[Iterable[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", help="records, one JSON object a line (a path or a URI)")
    parser.add_argument("output", help="the folder that gets the output files (must not exist)")
    parser.add_argument("--tools", type=Path, help="tools for records without their own")
    parser.add_argument("--dialect", default="atfunc",
                        help="the call format of the completions, as for `atfunc parse "
                        "--dialect` (default: atfunc)")
    parser.add_argument("--master", help="the Spark master (default: local[2])")
    parser.add_argument("--split-mb", type=float, help="split size in MB (default: by cores)")
    args = parser.parse_args(argv)
    tools = args.tools.read_text(encoding="utf-8") if args.tools else None
    split_bytes = int(args.split_mb * 1e6) if args.split_mb else None
    # A misspelt name fails here, before Spark starts.
    import atfunc

    atfunc.parse("", dialect=args.dialect)

    spark = session(args.master)
    spark.sparkContext.setLogLevel("WARN")
    spark.sparkContext.addPyFile(jsonl_splits.__file__)
    started = time.perf_counter()
    run(spark, args.input, args.output, tools, split_bytes, args.dialect)
    seconds = time.perf_counter() - started
    print(f"parsed {args.input} into {args.output} in {seconds:.2f} s", file=sys.stderr)
    spark.stop()


if __name__ == "__main__":
    main()
