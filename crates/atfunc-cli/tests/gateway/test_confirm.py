"""Executed requests with a function that needs the user's confirmation: the gateway does
not run it but hands it to the client as an ordinary `tool_calls` entry, and takes the
client's answer to it back into the conversation. Call events reach the client as they
happen, in an `atfunc` field that OpenAI's client keeps aside."""

import json
import sys
import time

import pytest
from common import USER
from scripted_upstream import Completion

ADD = """
import json, sys, time
args = json.load(sys.stdin)
time.sleep(args.get("wait", 0))
print(json.dumps({"sum": args["a"] + args["b"]}))
"""

DELETE = """
import json, sys
args = json.load(sys.stdin)
open(args["path"], "w").write("ran")
print("deleted")
"""


@pytest.fixture
def config(tmp_path):
    (tmp_path / "add.py").write_text(ADD)
    (tmp_path / "delete.py").write_text(DELETE)
    number = {"type": "number"}
    config = {"toolboxes": [
        {"name": "calc", "kind": "command", "functions": [{
            "name": "add", "description": "Add two numbers",
            "parameters": {"type": "object", "required": ["a", "b"],
                           "properties": {"a": number, "b": number, "wait": number}},
            "command": [sys.executable, "./add.py"]}]},
        {"name": "files", "kind": "command", "functions": [{
            "name": "delete", "description": "Delete a file",
            "parameters": {"type": "object", "required": ["path"],
                           "properties": {"path": {"type": "string"}}},
            "command": [sys.executable, "./delete.py"], "confirm": True}]},
    ]}
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(config))
    return str(path)


def ask(client, stream, messages=USER):
    """Content, tool calls, finish reason, the atfunc field and the events, as a client
    reads them from a whole or a streamed answer (events: with the time each came)."""
    body = {"model": "tiny-model", "messages": messages, "extra_body": {"atfunc_execute": True}}
    if not stream:
        completion = client.chat.completions.create(**body)
        choice = completion.choices[0]
        calls = [(c.id, c.function.name, json.loads(c.function.arguments))
                 for c in choice.message.tool_calls or []]
        atfunc = completion.model_extra["atfunc"]
        events = [(event, None) for event in atfunc["events"]]
        return choice.message.content, calls, choice.finish_reason, atfunc, events
    content, calls, finish, atfunc, events = None, {}, None, None, []
    for chunk in client.chat.completions.create(stream=True, **body):
        extra = chunk.model_extra.get("atfunc") or {}
        events.extend((event, time.monotonic()) for event in extra.get("events", []))
        if "calls" in extra:
            atfunc = extra
        for choice in chunk.choices:
            if choice.delta.content:
                content = (content or "") + choice.delta.content
            for call in choice.delta.tool_calls or []:
                entry = calls.setdefault(call.index, ["", "", ""])
                entry[0] += call.id or ""
                entry[1] += call.function.name or ""
                entry[2] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    calls = [(i, n, json.loads(a)) for i, n, a in (calls[k] for k in sorted(calls))]
    return content, calls, finish, atfunc, events


@pytest.mark.parametrize("stream", [False, True])
def test_a_held_call_comes_back_as_a_tool_call_and_does_not_run(start_gateway, upstream, config, tmp_path, stream):
    gateway = start_gateway("--config", config)
    target = str(tmp_path / "victim.txt")
    upstream.script(Completion(f'Adding first. @calc.add(a=1, b=2) then @files.delete(path="{target}")'))
    content, calls, finish, atfunc, events = ask(gateway.client(), stream)
    assert content == "Adding first. then"
    assert finish == "tool_calls"
    [(call_id, name, arguments)] = calls
    assert name == "files.delete" and arguments == {"path": target}
    # The call did not run, and only one answer was asked for.
    assert not (tmp_path / "victim.txt").exists()
    assert len(upstream.chat_requests()) == 1
    # What ran is in the atfunc field; the held call is the client's now.
    assert atfunc["steps"] == 1
    assert atfunc["calls"] == [{"name": "calc.add", "args": {"a": 1, "b": 2}, "result": {"sum": 3}}]
    kinds = [(e["event"], e.get("function")) for e, _ in events]
    assert kinds == [("start", "calc.add"), ("success", "calc.add"),
                     ("start", "files.delete"), ("held", "files.delete")]
    held = events[3][0]
    assert call_id == "call_" + held["confirmation_id"]
    assert events[0][0]["call_id"] == events[1][0]["call_id"] != held["call_id"]


def test_the_clients_answer_goes_back_to_the_model(start_gateway, upstream, config):
    gateway = start_gateway("--config", config)
    upstream.script(Completion('Sure. @files.delete(path="old.log")'), Completion("It is gone."))
    content, calls, finish, _, _ = ask(gateway.client(), False)
    [(call_id, name, arguments)] = calls
    # The application asked its user, ran the call its own way, and answers it.
    history = USER + [
        {"role": "assistant", "content": content,
         "tool_calls": [{"id": call_id, "type": "function",
                         "function": {"name": name, "arguments": json.dumps(arguments)}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "deleted old.log"},
    ]
    content, calls, finish, atfunc, _ = ask(gateway.client(), False, history)
    assert (content, calls, finish) == ("It is gone.", [], "stop")
    assert atfunc["calls"] == []
    messages = upstream.chat_requests()[1]["json"]["messages"]
    assert messages[-2:] == [
        {"role": "assistant", "content": 'Sure.\n@files.delete(path="old.log")'},
        {"role": "user", "content": 'Function call: files.delete(path="old.log")\nReturned: deleted old.log\n'},
    ]


def test_events_stream_as_the_calls_happen(start_gateway, upstream, config):
    gateway = start_gateway("--config", config)
    upstream.script(
        Completion("@calc.add(a=1, b=1) and slowly @calc.add(a=2, b=2, wait=1.5)"),
        Completion("Two and four."),
    )
    content, calls, finish, atfunc, events = ask(gateway.client(), True)
    assert (content, calls, finish) == ("and slowly\n\nTwo and four.", [], "stop")
    assert [c["result"] for c in atfunc["calls"]] == [{"sum": 2}, {"sum": 4}]
    kinds = [e["event"] for e, _ in events]
    assert kinds == ["start", "success", "start", "success"]
    assert events[3][0]["duration_ms"] >= 1000
    # The first call's end reached the client while the slow call still ran.
    assert events[3][1] - events[1][1] > 0.8, events
    # A refused call's events name the function its name resolved to.
    upstream.script(Completion("@calc.add(a=1)"), Completion("Oops."))
    _, _, _, atfunc, events = ask(gateway.client(), True)
    start, error = (e for e, _ in events)
    assert start["function"] == error["function"] == "calc.add"
    assert error["error"] == "Missing required parameter for function 'calc.add': b"
