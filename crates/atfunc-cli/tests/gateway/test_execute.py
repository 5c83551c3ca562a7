"""Executed requests: the gateway runs the model's calls in its config's tool boxes and
loops with the model until an answer has no calls."""

import json
import os
import shutil
import sys
import time

import openai
import pytest
from common import USER, TOOLS, PREAMBLE_START
from scripted_upstream import Completion, Slow

HERE = os.path.dirname(os.path.abspath(__file__))
# The workspace's shared tests/mcp, where `npm ci --prefix tests/mcp` installs the servers.
MCP_MODULES = os.path.join(HERE, "..", "..", "..", "..", "tests", "mcp", "node_modules",
                           "@modelcontextprotocol")

ADD_PROGRAM = """
import json, sys
args = json.load(sys.stdin)
print(json.dumps({"sum": args["a"] + args["b"]}))
"""


@pytest.fixture
def command_config(tmp_path):
    (tmp_path / "add.py").write_text(ADD_PROGRAM)
    config = {"toolboxes": [{"name": "calc", "kind": "command", "functions": [{
        "name": "add",
        "description": "Add two numbers",
        "parameters": {"type": "object", "required": ["a", "b"],
                       "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
        "command": [sys.executable, "./add.py"],
    }]}]}
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(config))
    return str(path)


def execute(client, stream, **params):
    body = {"model": "tiny-model", "messages": USER, "extra_body": {"atfunc_execute": True}}
    body.update(params)
    if not stream:
        completion = client.chat.completions.create(**body)
        return completion.choices[0].message.content, completion.model_extra["atfunc"], completion.choices[0].finish_reason
    content, atfunc, finish = "", None, None
    for chunk in client.chat.completions.create(stream=True, **body):
        for choice in chunk.choices:
            content += choice.delta.content or ""
            finish = choice.finish_reason or finish
        atfunc = (chunk.model_extra or {}).get("atfunc", atfunc)
    return content, atfunc, finish


@pytest.mark.parametrize("stream", [False, True])
def test_calls_run_in_a_command_tool_until_the_model_answers(start_gateway, upstream, command_config, stream):
    gateway = start_gateway("--config", command_config)
    upstream.script(
        Completion("Let me add. @calc.add(a=2, b=3)"),
        Completion("And once more: @calc.add(5, 10)"),
        Completion("The sum is 15."),
    )
    content, atfunc, finish = execute(gateway.client(), stream)
    assert content == "Let me add.\n\nAnd once more:\n\nThe sum is 15."
    assert finish == "stop"
    # Whole, the call events come in the same field; streamed, in chunks of their own.
    events = atfunc.pop("events", None)
    assert (events is None) == stream
    if events is not None:
        assert [e["event"] for e in events] == ["start", "success", "start", "success"]
    assert atfunc == {"steps": 3, "calls": [
        {"name": "calc.add", "args": {"a": 2, "b": 3}, "result": {"sum": 5}},
        {"name": "calc.add", "args": {"a": 5, "b": 10}, "result": {"sum": 15}},
    ]}
    first, second, third = upstream.chat_requests()
    assert first["json"]["messages"][0]["content"].startswith(PREAMBLE_START)
    assert "@calc.add( <*a{number}>, <*b{number}> )" in first["json"]["messages"][0]["content"]
    assert "atfunc_execute" not in first["json"]
    assert third["json"]["messages"][-4:] == [
        {"role": "assistant", "content": "Let me add. @calc.add(a=2, b=3)"},
        {"role": "user", "content": 'Function call: calc.add(a=2, b=3)\nReturned: {"sum":5}\n'},
        {"role": "assistant", "content": "And once more: @calc.add(5, 10)"},
        {"role": "user", "content": 'Function call: calc.add(5, 10)\nReturned: {"sum":15}\n'},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_a_repeated_call_ends_the_answer_and_runs_once(start_gateway, upstream, command_config, stream):
    gateway = start_gateway("--config", command_config)
    upstream.script(
        Completion("Adding. @calc.add(1, 2)\n@calc.add(a=1, b=2)\n@calc.add(1, 2)\n@calc.add(", finish_reason="length"),
        Completion("It is 3."),
    )
    content, atfunc, finish = execute(gateway.client(), stream)
    assert finish == "stop"
    atfunc.pop("events", None)
    assert atfunc == {"steps": 2, "calls": [
        {"name": "calc.add", "args": {"a": 1, "b": 2}, "result": {"sum": 3}},
    ]}
    # The model reads its answer up to the repeat, and the one result.
    assert upstream.chat_requests()[1]["json"]["messages"][-2:] == [
        {"role": "assistant", "content": "Adding. @calc.add(1, 2)"},
        {"role": "user", "content": 'Function call: calc.add(1, 2)\nReturned: {"sum":3}\n'},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_a_repeated_call_stops_the_upstream(start_gateway, upstream, command_config, stream):
    # 200 more copies, 50 ms apart: ten seconds of tokens the gateway does not wait for,
    # whether the client reads a stream or waits for the answer whole.
    gateway = start_gateway("--config", command_config)
    upstream.script(Slow(["@calc.add(1, 2)\n"] * 201, delay=0.05), Completion("It is 3."))
    started = time.monotonic()
    content, atfunc, finish = execute(gateway.client(), stream)
    assert time.monotonic() - started < 5
    assert content.endswith("It is 3.")
    assert [c["result"] for c in atfunc["calls"]] == [{"sum": 3}]
    assert upstream.cancelled.wait(5)
    # The answer the model reads back ends before the repeat.
    assert upstream.chat_requests()[1]["json"]["messages"][-2]["content"] == "@calc.add(1, 2)"
    # Asked for as a stream either way; an answer sent whole carries the usage.
    first = upstream.chat_requests()[0]["json"]
    assert first["stream"] is True
    if not stream:
        assert first["stream_options"] == {"include_usage": True}


STAMP_PROGRAM = """
import json, sys, time
json.load(sys.stdin)
print(json.dumps({"at": time.time()}))
"""


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_runs_as_soon_as_it_is_complete(start_gateway, upstream, tmp_path, stream):
    # The call is complete in the first piece; the answer's last piece comes 3 s later.
    # The call runs (and its result is taken) while the model is still writing, not once
    # the answer has ended.
    (tmp_path / "stamp.py").write_text(STAMP_PROGRAM)
    config = {"toolboxes": [{"name": "clock", "kind": "command", "functions": [{
        "name": "stamp", "parameters": {"type": "object", "properties": {}},
        "command": [sys.executable, "./stamp.py"],
    }]}]}
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(config))
    gateway = start_gateway("--config", str(path))
    upstream.script(Slow(["Stamping. @clock.stamp()\n", "Still ", "writing."], delay=1.5), Completion("Done."))
    started = time.time()
    content, atfunc, _ = execute(gateway.client(), stream)
    ended = time.time()
    ran_at = atfunc["calls"][0]["result"]["at"]
    assert ran_at - started < 2.5, f"the call ran {ran_at - started:.1f} s in; the answer ended at 3 s"
    assert ended - started >= 3
    assert content == "Stamping.\nStill writing.\n\nDone."


def test_keep_repeated_calls_runs_every_copy(start_gateway, upstream, command_config):
    gateway = start_gateway("--config", command_config, "--keep-repeated-calls")
    upstream.script(Completion("@calc.add(1, 2) @calc.add(1, 2)"), Completion("3."))
    _, atfunc, _ = execute(gateway.client(), False)
    assert [c["result"] for c in atfunc["calls"]] == [{"sum": 3}, {"sum": 3}]


def test_the_loop_stops_after_max_steps(start_gateway, upstream, command_config):
    gateway = start_gateway("--config", command_config, "--execute", "--max-steps", "2")
    upstream.script(Completion("@calc.add(1, 1)"), Completion("@calc.add(2, 2)"))
    # --execute: no flag needed in the request.
    completion = gateway.client().chat.completions.create(model="tiny-model", messages=USER)
    atfunc = completion.model_extra["atfunc"]
    assert atfunc["steps"] == 2 and atfunc["stopped"] == "max_steps"
    assert [c["result"] for c in atfunc["calls"]] == [{"sum": 2}, {"sum": 4}]
    assert len(upstream.chat_requests()) == 2


def test_errors_go_back_to_the_model(start_gateway, upstream, command_config):
    gateway = start_gateway("--config", command_config)
    upstream.script(Completion("@calc.add(a=2)"), Completion("@calc.add(a=2, b=2)"), Completion("4."))
    content, atfunc, _ = execute(gateway.client(), False)
    assert content == "4."
    assert atfunc["calls"][0]["error"] == "Missing required parameter for function 'calc.add': b"
    assert "Returned: Error: Missing required parameter" in upstream.chat_requests()[1]["json"]["messages"][-1]["content"]


def test_execute_needs_a_config_and_no_client_tools(client, start_gateway, upstream, command_config):
    with pytest.raises(openai.BadRequestError) as caught:
        execute(client, False)
    assert "--config" in caught.value.message
    gateway = start_gateway("--config", command_config)
    with pytest.raises(openai.BadRequestError):
        execute(gateway.client(), False, tools=TOOLS)
    assert upstream.requests == []


needs_mcp_servers = pytest.mark.skipif(
    shutil.which("node") is None or not os.path.isdir(MCP_MODULES),
    reason="the reference MCP servers are not installed (npm ci --prefix tests/mcp)")


def everything_config(tmp_path):
    """A config file whose one toolbox, `everything`, is the reference MCP server."""
    package = os.path.join(MCP_MODULES, "server-everything")
    with open(os.path.join(package, "package.json")) as manifest:
        bin_entry = json.load(manifest)["bin"]
    if isinstance(bin_entry, dict):
        bin_entry = next(iter(bin_entry.values()))
    config = {"toolboxes": [{"name": "everything", "kind": "mcp",
                             "command": ["node", os.path.join(package, bin_entry), "stdio"]}]}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    return str(path)


@needs_mcp_servers
def test_calls_run_in_a_real_mcp_server(start_gateway, upstream, tmp_path):
    gateway = start_gateway("--config", everything_config(tmp_path))
    upstream.script(Completion('Echoing. @everything.echo(message="hi there")'), Completion("It said hi there."))
    content, atfunc, _ = execute(gateway.client(), True)
    assert content == "Echoing.\n\nIt said hi there."
    [call] = atfunc["calls"]
    assert call["name"] == "everything.echo" and call["args"] == {"message": "hi there"}
    assert "hi there" in json.dumps(call["result"])
    prompt = upstream.chat_requests()[0]["json"]["messages"][0]["content"]
    assert "@everything.echo(" in prompt
    assert "hi there" in upstream.chat_requests()[1]["json"]["messages"][-1]["content"]


@needs_mcp_servers
@pytest.mark.parametrize("stream", [False, True])
def test_elements_for_the_user_come_in_the_atfunc_field_only(start_gateway, upstream, tmp_path, stream):
    gateway = start_gateway("--config", everything_config(tmp_path))
    upstream.script(
        Completion('Done? @everything.get_annotated_message(messageType="success", includeImage=true)'),
        Completion('@everything.get_annotated_message(messageType="debug")'),
        Completion("All good."),
    )
    content, atfunc, _ = execute(gateway.client(), stream)
    assert content == "Done?\n\nAll good."
    shown, debug = atfunc["calls"]
    text, image = shown["elements"]
    assert text == {"type": "text", "text": "Operation completed successfully"}
    assert image["type"] == "image" and image["mime_type"] == "image/png" and len(image["data"]) > 100
    # A call with nothing for the user has no list.
    assert "elements" not in debug and debug["result"].startswith("Debug: ")
    # The model reads the image's description, never the image or the user's text.
    results = upstream.chat_requests()[1]["json"]["messages"][-1]["content"]
    assert "[image: image/png, " in results
    assert image["data"] not in results and "Operation completed" not in results


def test_a_setting_the_model_changes_stays_in_its_own_request(start_gateway, upstream, tmp_path):
    # One registry serves every request; a model's @tools.set_truncate_length belongs to
    # its own request's conversation, never to the next client's.
    root = tmp_path / "files"
    root.mkdir()
    note = "the whole note, much longer than five characters"
    (root / "notes.txt").write_text(note)
    path = tmp_path / "files.json"
    path.write_text(json.dumps({"toolboxes": [{"name": "file", "kind": "file", "root": str(root)}]}))
    gateway = start_gateway("--config", str(path))
    upstream.script(
        Completion('Shorter. @tools.set_truncate_length(5) @file.readfile("notes.txt")'),
        Completion('Again, still short: @file.readfile("notes.txt")'),
        Completion("Done."),
        Completion('@file.readfile("notes.txt")'),
        Completion("Read it."),
    )
    _, first, _ = execute(gateway.client(), False)
    cut, cut_again = first["calls"][1], first["calls"][2]
    assert note not in json.dumps(cut["result"]), cut
    # Within the request the setting holds from one step to the next.
    assert note not in json.dumps(cut_again["result"]), cut_again
    _, second, _ = execute(gateway.client(), False)
    assert note in json.dumps(second["calls"][0]["result"]), second
    # The prompt does not list the control functions unless chosen.
    prompt = upstream.chat_requests()[0]["json"]["messages"][0]["content"]
    assert "@file.readfile(" in prompt and "@tools." not in prompt


HEX_PROGRAM = """
import os, sys
sys.stdin.read()
token = os.environ["TOKEN"].encode()
print("lower " + token.hex() + " upper " + token.hex().upper())
"""


def test_a_secret_in_hex_is_redacted_in_executed_turns(start_gateway, upstream, tmp_path):
    (tmp_path / "hex.py").write_text(HEX_PROGRAM)
    config = {"toolboxes": [{"name": "leak", "kind": "command",
                             "env": {"TOKEN": {"env": "GATEWAY_TEST_TOKEN"}},
                             "functions": [{"name": "hex", "parameters": {"type": "object"},
                                            "command": [sys.executable, "./hex.py"]}]}]}
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(config))
    secret = "s3cret-gateway-token"
    gateway = start_gateway("--config", str(path), env={"GATEWAY_TEST_TOKEN": secret})
    upstream.script(Completion("@leak.hex()"), Completion("Done."))
    _, atfunc, _ = execute(gateway.client(), False)
    assert atfunc["calls"][0]["result"] == "lower [redacted] upper [redacted]"
    sent = json.dumps(upstream.chat_requests()[1]["json"])
    for spelling in (secret.encode().hex(), secret.encode().hex().upper()):
        assert spelling not in sent
    assert "lower [redacted] upper [redacted]" in sent


def test_param_descriptions_go_under_each_function_unless_left_out(start_gateway, upstream, command_config, tmp_path):
    # Client tools: each described parameter on a line under its function, by default; the
    # last of the two flags wins.
    tools = json.loads(json.dumps(TOOLS))
    tools[0]["function"]["parameters"]["properties"]["city"]["description"] = "The city's name"
    described = start_gateway()
    plain = start_gateway("--no-param-descriptions")
    said_twice = start_gateway("--no-param-descriptions", "--param-descriptions")
    for gateway, expected in [(described, True), (plain, False), (said_twice, True)]:
        upstream.script(Completion("It is sunny."))
        gateway.client().chat.completions.create(model="tiny-model", messages=USER, tools=tools)
        prompt = upstream.chat_requests()[-1]["json"]["messages"][0]["content"]
        line = "Description: Current weather of a city\nParameters:\n- city: The city's name\n"
        assert (line in prompt) == expected, prompt
    # Executed requests: the config's tools, the same way.
    config = json.loads(open(command_config).read())
    config["toolboxes"][0]["functions"][0]["parameters"]["properties"]["a"]["description"] = "The first"
    path = tmp_path / "described.json"
    path.write_text(json.dumps(config))
    gateway = start_gateway("--config", str(path))
    upstream.script(Completion("Nothing to add."))
    execute(gateway.client(), False)
    prompt = upstream.chat_requests()[-1]["json"]["messages"][0]["content"]
    assert "Description: Add two numbers\nParameters:\n- a: The first\n" in prompt, prompt
