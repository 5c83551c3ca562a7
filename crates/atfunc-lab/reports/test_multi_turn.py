"""The multi-turn checker of multi_turn.py on BFCL's real multi_turn_base cases: the ground
truth given as the model's answer is right in every case, and broken answers are wrong.

It needs the PyPI package bfcl-eval (the cases and the API classes). Without it the tests
skip, unless CI is set: then they fail and say what to install.

    python3 -m pytest -q crates/atfunc-lab/reports/test_multi_turn.py
"""

import copy
import os
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import multi_turn  # noqa: E402


@pytest.fixture(scope="module")
def cases():
    try:
        multi_turn.ensure_bfcl(install=False)
    except ImportError as e:
        message = f"bfcl-eval is missing ({e}): {multi_turn.INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return {c["id"]: c for c in multi_turn.load_cases()}


def wrong(case, turns):
    return any(multi_turn.score_calls(case, turns))


def test_all_cases_are_there(cases):
    assert len(cases) == 200


def test_the_ground_truth_is_right_in_every_case(cases):
    failed = {i: f for i, c in cases.items()
              if any(f := multi_turn.score_calls(c, c["ground_truth"]))}
    assert failed == {}


def test_the_ground_truth_as_tool_calls_is_right(cases):
    # The model's calls arrive as a name and keyword arguments: positional arguments of the
    # ground truth become keywords by the function's own parameter names.
    case = cases["multi_turn_base_0"]
    turns = [[("cd", {"folder": "document"}), ("mkdir", {"dir_name": "temp"}),
              ("mv", {"source": "final_report.pdf", "destination": "temp"})],
             [("cd", {"folder": "temp"}),
              ("grep", {"file_name": "final_report.pdf", "pattern": "budget analysis"})],
             [("sort", {"file_name": "final_report.pdf"})],
             [("cd", {"folder": ".."}),
              ("mv", {"source": "previous_report.pdf", "destination": "temp"}),
              ("cd", {"folder": "temp"}),
              ("diff", {"file_name1": "final_report.pdf", "file_name2": "previous_report.pdf"})]]
    assert multi_turn.score_calls(case, turns) == [None, None, None, None]


def test_a_turn_without_calls_is_wrong_in_every_case(cases):
    for case in cases.values():
        gt = case["ground_truth"]
        first = next(i for i, t in enumerate(gt) if t)
        broken = copy.deepcopy(gt)
        broken[first] = []
        failures = multi_turn.score_calls(case, broken)
        assert failures[first] == "no call in a turn that needs one", case["id"]


def test_a_changed_state_is_wrong(cases):
    case = cases["multi_turn_base_0"]
    broken = copy.deepcopy(case["ground_truth"])
    broken[0][1] = "mkdir(dir_name='tmp')"
    failures = multi_turn.score_calls(case, broken)
    assert failures[0].startswith("state of GorillaFileSystem differs")


def test_a_missing_result_is_wrong(cases):
    # grep changes no state: only the result check sees that it was not called.
    case = cases["multi_turn_base_0"]
    broken = copy.deepcopy(case["ground_truth"])
    broken[1] = ["cd(folder='temp')"]
    failures = multi_turn.score_calls(case, broken)
    assert failures[0] is None
    assert "missing" in failures[1]


def test_a_result_from_an_earlier_turn_counts(cases):
    # BFCL looks for a turn's results among all the model's results so far, so a read made
    # one turn early still counts (the state is the same).
    case = cases["multi_turn_base_0"]
    gt = copy.deepcopy(case["ground_truth"])
    early = gt[0] + gt[1]
    assert multi_turn.score_calls(case, [early, ["cd(folder='.')"], gt[2], gt[3]])[1] is None


def test_dropping_a_call_is_wrong_in_every_case_where_it_matters(cases):
    # Drop the last call of the first turn that has calls: every case with a call left in
    # that turn must then fail (each such call changes the state or gives a result the
    # ground truth needs).
    checked = 0
    for case in cases.values():
        gt = case["ground_truth"]
        first = next(i for i, t in enumerate(gt) if t)
        if len(gt[first]) < 2:
            continue
        broken = copy.deepcopy(gt)
        broken[first].pop()
        assert wrong(case, broken), case["id"]
        checked += 1
    assert checked > 90


def test_random_breakage_is_mostly_wrong_and_never_crashes(cases):
    rng = random.Random(7)
    wrong_count = 0
    for case in cases.values():
        broken = copy.deepcopy(case["ground_truth"])
        for turn in broken:
            if turn and rng.random() < 0.5:
                turn.pop(rng.randrange(len(turn)))
        wrong_count += wrong(case, broken)
    assert wrong_count > 100


def test_tools_leave_out_the_excluded_functions(cases):
    excluded = [c for c in cases.values() if c.get("excluded_function")]
    assert excluded
    for case in excluded:
        names = {t["function"]["name"] for t in multi_turn.tools_for(case)}
        assert not names & set(case["excluded_function"])
        assert names, case["id"]


def test_tools_are_json_schema(cases):
    allowed = {"string", "integer", "number", "boolean", "array", "object"}

    def check(schema):
        assert schema["type"] in allowed
        for sub in (schema.get("properties") or {}).values():
            check(sub)
        if "items" in schema:
            check(schema["items"])

    for case in cases.values():
        for tool in multi_turn.tools_for(case):
            params = tool["function"]["parameters"]
            assert params["type"] == "object"
            for prop in params["properties"].values():
                check(prop)


def test_an_error_goes_back_as_the_result(cases):
    world = multi_turn.World(cases["multi_turn_base_0"])
    assert world.call("no_such_tool", (), {}).startswith("Error during execution:")
    assert world.call("cd", (), {"nonsense": 1}).startswith("Error during execution:")


class ScriptedServer:
    """An OpenAI-compatible chat route that answers from a script: per request the next
    answer, a list of (name, arguments) calls (an empty list: text only), or an HTTP status
    to refuse with. It keeps the requests it got."""

    def __init__(self, script):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.script, self.requests = list(script), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                step = outer.script.pop(0)
                if isinstance(step, int):
                    data = json.dumps({"error": {"message": "too long", "code": step}})
                    status = step
                else:
                    calls = [{"id": f"c{i}", "type": "function",
                              "function": {"name": n, "arguments": json.dumps(a)}}
                             for i, (n, a) in enumerate(step)]
                    message = {"role": "assistant", "content": "" if calls else "done"}
                    if calls:
                        message["tool_calls"] = calls
                    data = json.dumps({"id": "x", "object": "chat.completion", "created": 0,
                                       "model": "m", "choices": [{"index": 0, "message": message,
                                       "finish_reason": "tool_calls" if calls else "stop"}],
                                       "usage": {"prompt_tokens": 10, "completion_tokens": 2,
                                                 "total_tokens": 12}})
                    status = 200
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()


@pytest.fixture
def client_for():
    openai = pytest.importorskip("openai") if not os.environ.get("CI") else __import__("openai")
    servers = []

    def make(script):
        server = ScriptedServer(script)
        servers.append(server)
        return server, openai.OpenAI(base_url=server.url, api_key="none", max_retries=0)

    yield make
    for server in servers:
        server.close()


SETTINGS = {"temperature": 0.0, "max_tokens": 64}


def test_the_loop_runs_calls_and_scores_the_turns(cases, client_for):
    case = cases["multi_turn_base_1"]
    script = []
    for turn in case["ground_truth"]:
        # One answer with all of the turn's calls, then an answer without a call.
        calls = []
        for text in turn:
            name, args, kwargs = multi_turn.parse_call(text)
            assert not args, "this case's ground truth has keyword arguments only"
            calls.append((name, kwargs))
        script += [calls, []] if calls else [[]]
    server, client = client_for(script)
    outcome = multi_turn.run_case(client, "m", case, SETTINGS)
    assert outcome["right"], outcome["failure"]
    assert outcome["turns"] == [True] * len(case["question"])
    assert outcome["prompt_tokens"] == 10 * len(server.requests)
    # Each result went back as a `tool` message answering its call.
    second = server.requests[1]["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"].startswith("c")
    assert server.requests[0]["tool_choice"] == "auto"
    assert not server.script


def test_the_loop_ends_a_case_past_the_step_limit(cases, client_for):
    case = cases["multi_turn_base_1"]
    script = [[("pwd", {})]] * (multi_turn.STEP_LIMIT + 1)
    server, client = client_for(script)
    outcome = multi_turn.run_case(client, "m", case, SETTINGS)
    assert not outcome["right"]
    assert outcome["steps"] == [multi_turn.STEP_LIMIT + 1]
    assert "more than" in outcome["failure"]
    assert outcome["turns"] == [False] * len(case["question"])


def test_a_refused_request_makes_the_case_wrong(cases, client_for):
    case = cases["multi_turn_base_1"]
    server, client = client_for([400])
    outcome = multi_turn.run_case(client, "m", case, SETTINGS)
    assert not outcome["right"] and outcome["refused"]
    assert outcome["turns"] == [False] * len(case["question"])


def test_a_report_continues_only_under_the_same_settings(tmp_path):
    settings = {"mode": "native", "server_note": "a", "max_tokens": 64}
    path = str(tmp_path / "report.json")
    done = {"id": "multi_turn_base_0", "right": True, "error": None}
    failed = {"id": "multi_turn_base_1", "right": False, "error": "turn 0: timed out"}
    multi_turn.write_json(path, settings, [done, failed])
    # Done cases are kept, those that ended in an endpoint error are asked again.
    assert multi_turn.resume(path, settings) == [done]
    with pytest.raises(SystemExit, match="max_tokens"):
        multi_turn.resume(path, {**settings, "max_tokens": 128})
    assert multi_turn.resume(str(tmp_path / "none.json"), settings) == []
