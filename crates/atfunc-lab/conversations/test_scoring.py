"""The scorer on scripted conversations, the tasks' reference solutions, and the runner's
loop against a scripted endpoint on loopback. No model needed.

    python3 -m pytest -q crates/atfunc-lab/conversations/test_scoring.py
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run  # noqa: E402
from scoring import fact_in, judge_answer, raw_markers, score  # noqa: E402
from tasks import BY_ID, SETS, TASKS  # noqa: E402
from world import TOOLS, World  # noqa: E402


def play(task_id: str, rounds_per_turn: list[list[list[tuple[str, dict[str, Any]]]]],
         answers: list[str | None]) -> dict[str, Any]:
    """Runs scripted calls against a fresh world and scores the conversation: for each user
    message its rounds of calls, then its answer (None: the message never ended)."""
    task = BY_ID[task_id]
    world = World()
    turns = []
    for rounds, answer in zip(rounds_per_turn, answers):
        for rnd in rounds:
            for name, args in rnd:
                world.call(name, json.dumps(args))
        turns.append({"ended": answer is not None, "answer": answer, "rounds": len(rounds) + 1})
    return score(task, turns, world.effects)


SYDNEY = [[("get_weather", {"city": "Sydney"}), ("find_contact", {"name": "Tom"})],
          [("convert_units", {"value": 27, "from_unit": "celsius", "to_unit": "fahrenheit"})],
          [("send_email", {"to": "tom.becker@example.org", "subject": "Sydney", "body": "Sydney: 80.6°F, sunny."})]]


def test_right_conversation() -> None:
    v = play("dev-sydney-to-tom", [SYDNEY], ["Done: I emailed Tom that it's 80.6°F and sunny in Sydney."])
    assert v["right"] and v["effects_ok"] and v["ended"] and v["answer_ok"], v


def test_side_effect_twice_is_wrong() -> None:
    twice = SYDNEY + [SYDNEY[-1]]
    v = play("dev-sydney-to-tom", [twice], ["Sent."])
    assert not v["right"] and not v["effects_ok"]
    assert v["ended"] and v["answer_ok"]
    assert len(v["effects"]["duplicate"]) == 1 and not v["effects"]["missing"]


def test_side_effect_with_wrong_content_is_missing_and_unexpected() -> None:
    wrong = SYDNEY[:-1] + [[("send_email", {"to": "tom.becker@example.org", "subject": "x", "body": "27°C"})]]
    v = play("dev-sydney-to-tom", [wrong], ["Sent."])
    assert not v["effects_ok"]
    assert len(v["effects"]["missing"]) == 1 and len(v["effects"]["unexpected"]) == 1


def test_never_ends_is_wrong() -> None:
    v = play("dev-weather-lisbon", [[[("get_weather", {"city": "Lisbon"})]] * 6], [None])
    assert not v["right"] and not v["ended"] and not v["answer_ok"]
    assert v["effects_ok"]  # lookups repeated are no side effect


def test_raw_result_as_answer_is_wrong() -> None:
    raw = json.dumps({"city": "Lisbon", "temperature_c": 19, "condition": "sunny"})
    v = play("dev-weather-lisbon", [[[("get_weather", {"city": "Lisbon"})]]], [raw])
    assert not v["right"] and v["ended"] and not v["answer_ok"]
    assert v["turns"][0]["answer"]["raw"], v
    # the facts are there: it fails for being a dump, not for missing them
    assert not v["turns"][0]["answer"]["missing"]


@pytest.mark.parametrize("answer", [
    '{"name": "get_weather", "arguments": {"city": "Lisbon"}} 19 sunny',
    "Function call: get_weather(city='Lisbon')\nReturned: 19 sunny",
    '<tool_call>\n{"name": "get_weather"}\n</tool_call> 19 sunny',
    "@get_weather(city='Lisbon') 19 sunny",
    "get_weather(city=\"Lisbon\") gives 19, sunny",
])
def test_call_syntax_as_answer_is_wrong(answer: str) -> None:
    v = play("dev-weather-lisbon", [[[("get_weather", {"city": "Lisbon"})]]], [answer])
    assert not v["right"] and not v["answer_ok"], answer
    assert v["turns"][0]["answer"]["raw"], answer


def test_no_tool_task_with_a_side_effect_is_wrong() -> None:
    v = play("dev-none-hello", [[[("save_note", {"title": "hi", "text": "hello"})]]], ["I'm well, thanks!"])
    assert not v["right"] and not v["effects_ok"] and v["ended"] and v["answer_ok"]
    assert len(v["effects"]["unexpected"]) == 1


def test_no_tool_task_right_with_words_and_harmless_lookup() -> None:
    assert play("dev-none-hello", [[]], ["I'm doing well, thank you! How can I help?"])["right"]
    assert play("dev-none-capital", [[[("get_weather", {"city": "Tokyo"})]]], ["Tokyo is the capital."])["right"]
    assert not play("dev-none-capital", [[]], ["Kyoto."])["right"]


def test_second_message_not_sent_counts_as_not_ended() -> None:
    task = BY_ID["dev-nairobi-then-note"]
    world = World()
    world.call("get_weather", '{"city": "Nairobi"}')
    v = score(task, [{"ended": True, "answer": "26°C, partly cloudy.", "rounds": 2}], world.effects)
    assert not v["ended"] and not v["right"]


def test_failed_side_effect_call_is_no_side_effect() -> None:
    world = World()
    result, ok = world.call("send_email", '{"to": "Maria Lopez", "subject": "x", "body": "late"}')
    assert not ok and "find_contact" in result and world.effects == []


def test_an_address_must_be_one() -> None:
    world = World()
    for to in ["maria Lopez@example.com", "Maria Lopez", "maria.lopez@example.com, tom.becker@example.org"]:
        result, ok = world.call("send_email", json.dumps({"to": to, "subject": "x", "body": "late"}))
        assert not ok and "e-mail address" in result, to
    for to in ["Maria.Lopez@example.com", "Maria Lopez <maria.lopez@example.com>"]:
        assert world.call("send_email", json.dumps({"to": to, "subject": "x", "body": "late"}))[1], to
    assert [e["to"] for e in world.effects] == ["maria.lopez@example.com"] * 2


def test_number_matching_is_tolerant_of_rounding_only() -> None:
    assert fact_in(26.0976, "about 26.1 miles")
    assert fact_in(26.0976, "26 miles")
    assert fact_in(14925.37, "14,925 yen")
    assert fact_in(10, "ten minutes late")
    assert not fact_in(26.0976, "27 miles")
    assert not fact_in(2721.43, "2,700 francs")
    assert not fact_in(4, "40 degrees")
    assert fact_in("Tokyo", "the capital is tokyo.")


def test_words_are_not_raw() -> None:
    assert raw_markers("It's 19°C and sunny in Lisbon (wind 12 km/h).") == []
    assert raw_markers('{"temperature_c": 19}')
    assert raw_markers("[1, 2]") == ["the whole answer is JSON"]
    assert not judge_answer("", [])["ok"]


# -- the tasks themselves ---------------------------------------------------------------


def test_sets_have_the_promised_sizes_and_mix() -> None:
    assert len(SETS["dev"]) == 20 and len(SETS["test"]) >= 40
    assert len({t.id for t in TASKS}) == len(TASKS)
    for name in ("dev", "test"):
        tasks = SETS[name]
        share = sum(t.kind == "none" for t in tasks) / len(tasks)
        assert 0.2 <= share <= 0.3, (name, share)
    for t in TASKS:
        assert 4 <= len(t.tools) <= 6 and len(set(t.tools)) == len(t.tools), t.id
        assert all(n in TOOLS for n in t.tools), t.id
        assert (t.kind == "none") == (not t.ref), t.id
        if t.kind == "none":
            assert not t.effects, t.id


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    if isinstance(value, str):  # numbers in a file's text
        return [float(x) for x in re.findall(r"\d+(?:\.\d+)?", value.replace(",", ""))]
    return []


@pytest.mark.parametrize("task", [t for t in TASKS if t.ref], ids=lambda t: t.id)
def test_reference_solution_is_right(task) -> None:
    """Each task can be solved with its own tools: the reference calls all succeed, use only
    offered tools, leave the expected end state, and an answer stating the facts is right.
    Every number fact of the answer comes out of a tool result (or the user's words)."""
    world = World()
    results: list[Any] = []
    turns = []
    for ti, rounds in enumerate(task.ref):
        for rnd in rounds:
            for name, args in rnd:
                assert name in task.tools, (task.id, name)
                text, ok = world.call(name, json.dumps(args))
                assert ok, (task.id, name, text)
                results.append(json.loads(text))
        facts = task.turns[ti].facts
        answer = "Here you go: " + ", ".join(str(getattr(f, "options", [f])[0]) for f in facts) + "."
        turns.append({"ended": True, "answer": answer, "rounds": len(rounds) + 1})
    v = score(task, turns, world.effects)
    assert v["right"], (task.id, v)
    said = [re.findall(r"\d+(?:\.\d+)?", turn.user.replace(",", "")) for turn in task.turns]
    seen = _numbers(results) + [float(x) for xs in said for x in xs]
    for turn in task.turns:
        for f in turn.facts:
            if isinstance(f, (int, float)):
                assert any(abs(f - n) <= 0.01 * max(1.0, abs(f)) for n in seen), (task.id, f)


# -- the runner's loop against a scripted endpoint --------------------------------------


def _call(id_: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _reply(content: str | None, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class Scripted:
    """A loopback endpoint that answers each request with the next scripted reply, and
    keeps the requests it got."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                reply = outer.replies.pop(0) if outer.replies else 500
                status, payload = (reply, {"error": {"message": "scripted failure"}}) if isinstance(reply, int) else (200, reply)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "Scripted":
        self.thread.start()
        return self

    def __exit__(self, *a: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def _args(url: str, client: str, out: Path, *more: str) -> list[str]:
    return ["--base-url", url, "--model", "scripted", "--client", client, "--set", "dev",
            "--limit", "1", "--out", str(out), "--timeout", "10", *more]


def _clients() -> list[Any]:
    """Both clients; the Agents SDK's cases fail under CI when it is missing (a test never
    passes by leaving a client out), and are skipped with a reason elsewhere."""
    if importlib.util.find_spec("agents"):
        return ["openai", "agents"]
    why = "the Agents SDK is missing: pip install -r crates/atfunc-lab/conversations/requirements.txt"
    if os.environ.get("CI"):
        raise RuntimeError(why)
    return ["openai", pytest.param("agents", marks=pytest.mark.skip(reason=why))]


CLIENTS = _clients()


@pytest.mark.parametrize("client", CLIENTS)
def test_loop_runs_calls_and_sends_results_back(tmp_path: Path, client: str) -> None:
    replies = [_reply(None, [_call("c1", "get_weather", {"city": "Lisbon"})]),
               _reply("It's 19°C and sunny in Lisbon.")]
    with Scripted(replies) as server:
        assert run.main(_args(server.url, client, tmp_path / "r.json")) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    rec = report["tasks"][0]
    assert rec["id"] == "dev-weather-lisbon" and rec["right"], rec["verdict"]
    assert rec["model_calls"] == 2 and rec["lookups"] == {"get_weather": 1}
    tool_msgs = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and tool_msgs[0]["tool_call_id"] == "c1" and "sunny" in tool_msgs[0]["content"]
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == list(BY_ID["dev-weather-lisbon"].tools)
    assert rec["exchanges"][1]["request"]["messages"] == server.requests[1]["messages"]
    assert report["summary"]["right"] == 1
    assert (tmp_path / "r.md").read_text().count("dev-weather-lisbon") == 1


@pytest.mark.parametrize("client", CLIENTS)
def test_loop_stops_at_the_cap(tmp_path: Path, client: str) -> None:
    replies = [_reply(None, [_call(f"c{i}", "get_weather", {"city": "Lisbon"})]) for i in range(4)]
    with Scripted(replies) as server:
        run.main(_args(server.url, client, tmp_path / "r.json", "--max-rounds", "3"))
    rec = json.loads((tmp_path / "r.json").read_text())["tasks"][0]
    assert len(server.requests) == 3
    assert not rec["ended"] and not rec["right"] and rec["model_calls"] == 3
    assert rec["effects_ok"] and rec["lookups"]["get_weather"] >= 2


@pytest.mark.parametrize("client", CLIENTS)
def test_endpoint_error_fails_the_task_and_a_rerun_asks_again(tmp_path: Path, client: str) -> None:
    out = tmp_path / "r.json"
    with Scripted([500]) as server:
        assert run.main(_args(server.url, client, out)) == 0
        rec = json.loads(out.read_text())["tasks"][0]
        assert not rec["right"] and rec["error"]["kind"] == "endpoint", rec["error"]
        server.replies += [_reply(None, [_call("c1", "get_weather", {"city": "Lisbon"})]), _reply("19°C, sunny.")]
        assert run.main(_args(server.url, client, out)) == 0
    rec = json.loads(out.read_text())["tasks"][0]
    assert rec["right"] and rec["error"] is None
    assert len(out.with_suffix(".jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("client", CLIENTS)
def test_rerun_skips_done_tasks_and_refuses_other_settings(tmp_path: Path, client: str) -> None:
    out = tmp_path / "r.json"
    replies = [_reply(None, [_call("c1", "get_weather", {"city": "Lisbon"})]), _reply("19°C, sunny.")]
    with Scripted(replies) as server:
        run.main(_args(server.url, client, out))
        run.main(_args(server.url, client, out))  # nothing is asked: another request would get a 500
        assert len(server.requests) == 2
        with pytest.raises(SystemExit):
            run.main(_args(server.url, client, out, "--max-rounds", "2"))
    assert len(out.with_suffix(".jsonl").read_text().splitlines()) == 1
    assert json.loads(out.read_text())["tasks"][0]["right"]


def test_report_names_what_went_wrong(tmp_path: Path) -> None:
    call = _call("c1", "get_weather", {"city": "Lisbon"})
    echo = 'Function call: get_weather(city="Lisbon")\nReturned: {"city": "Lisbon", "temperature_c": 19}'
    with Scripted([_reply(None, [call]), _reply(None, [call]), _reply(echo)]) as server:
        run.main(_args(server.url, "openai", tmp_path / "r.json"))
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["tasks"][0]["signs"] == ["echoed a Function call/Returned block", "repeated a call in a later round"]
    assert report["summary"]["signs"] == {"echoed a Function call/Returned block": 1, "repeated a call in a later round": 1}
    assert "| echoed a Function call/Returned block | 1 |" in (tmp_path / "r.md").read_text()
