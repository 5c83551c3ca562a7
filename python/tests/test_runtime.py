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
    # With the GIL held through the call no tick could fall in its middle half (the
    # ends may see a tick or two while the worker thread waits to take the GIL back).
    length = span["end"] - span["start"]
    middle = (span["start"] + length / 4, span["end"] - length / 4)
    inside = [t for t in ticks if middle[0] < t < middle[1]]
    assert length > 0.05
    assert inside, (len(ticks), span)


def test_a_panic_is_an_exception_and_the_interpreter_goes_on():
    with pytest.raises(atfunc.PanicException, match="deliberate"):
        atfunc._atfunc._panic_for_test("deliberate")
    assert not issubclass(atfunc.PanicException, Exception)
    # rayon's pool and the module still work.
    assert atfunc.parse_jsonl(['{"id": 1, "completion": "@a.b()"}'])[0].as_py().startswith(
        '{"id":1,"calls":[{"name":"a.b"'
    )
