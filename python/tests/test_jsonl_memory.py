"""parse_jsonl holds a record's output text, not its calls: a record of many calls costs
about the bytes it returns, however many calls that is."""

import json
import subprocess
import sys

# Run in a process of its own, so its peak memory is this call's alone. `ru_maxrss` is in
# KB on Linux and in bytes on macOS.
SCRIPT = r"""
import json, resource, sys
import atfunc

calls = int(sys.argv[1])
line = json.dumps({"id": 1, "completion": "@a(1)" * calls})
unit = 1 if sys.platform == "darwin" else 1024
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit
out = atfunc.parse_jsonl([line])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit
text = out[0].as_py()
print(json.dumps({"grown": after - before, "out_bytes": len(text.encode()),
                  "calls": len(json.loads(text)["calls"])}))
"""

# Enough calls that the 1.8 KB each cost when a record's calls were all held (360 MB)
# stands out from the 20 MB of output.
CALLS = 200_000


def test_a_record_of_many_calls_costs_about_its_output():
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(CALLS)],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(run.stdout)
    assert report["calls"] == CALLS
    # The answer holds the output once, and while it is made it is there once more (the
    # line as written, then copied into the Arrow array), with the slack of buffers that
    # grow by doubling: 3.1 times the 20 MB of output was measured, 18 times before.
    assert report["grown"] < 4 * report["out_bytes"] + (16 << 20), report
