"""The GIL is released while Rust works on a batch; a Rust panic is a Python exception."""

import json
import threading
import time

import pyarrow as pa
import pytest

import atfunc
from conftest import COMPLETIONS


def big_batch(n=60_000):
    lines = [json.dumps({"id": i, "completion": COMPLETIONS[i % len(COMPLETIONS)] * 4})
             for i in range(n)]
    return pa.array(lines)


@pytest.mark.parametrize("work", ["parse_jsonl", "parse_arrow", "parse"])
def test_other_threads_run_while_a_batch_is_parsed(work):
    lines = big_batch()
    text = "\n".join(lines.to_pylist())
    calls = {
        "parse_jsonl": lambda: atfunc.parse_jsonl(lines),
        "parse_arrow": lambda: atfunc.parse_arrow(lines),
        "parse": lambda: atfunc.parse(text),
    }
    span = {}

    def worker():
        span["start"] = time.perf_counter()
        calls[work]()
        span["end"] = time.perf_counter()

    ticks = []
    thread = threading.Thread(target=worker)
    thread.start()
    while thread.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    thread.join()
    # With the GIL held through the call no tick could fall inside it.
    inside = [t for t in ticks if span["start"] < t < span["end"]]
    assert span["end"] - span["start"] > 0.02
    assert len(inside) >= 3, (len(inside), span)


def test_a_panic_is_an_exception_and_the_interpreter_goes_on():
    with pytest.raises(atfunc.PanicException, match="deliberate"):
        atfunc._atfunc._panic_for_test("deliberate")
    assert not issubclass(atfunc.PanicException, Exception)
    # rayon's pool and the module still work.
    assert atfunc.parse_jsonl(['{"id": 1, "completion": "@a.b()"}'])[0].as_py().startswith(
        '{"id":1,"calls":[{"name":"a.b"'
    )
