"""--upstream-dialect: the gateway in front of a model that writes its own call format
(here hermes, as Qwen 2.5 does behind a vLLM without a tool parser); and against the real
llama-cpp-python server, the history of an agent loop's second round."""

import os
import subprocess

import pytest
from common import TOOLS, USER, accumulate, summary
from llama_server import llama_server  # noqa: F401 (the fixture)
from scripted_upstream import Completion

HERMES = (
    "Let me look.\n<tool_call>\n"
    '{"name": "get-weather", "arguments": {"city": "Paris", "days": 2}}\n'
    "</tool_call>"
)


def ask(gateway, upstream, replies, stream=False, **kwargs):
    upstream.script(*replies)
    params = {"model": "tiny-model", "messages": USER, "tools": TOOLS, **kwargs}
    client = gateway.client()
    if stream:
        result, _ = accumulate(client.chat.completions.create(stream=True, **params))
        return result
    return summary(client.chat.completions.create(**params))


@pytest.mark.parametrize("stream", [False, True])
def test_a_hermes_answer_comes_back_as_tool_calls(start_gateway, upstream, stream):
    gateway = start_gateway("--upstream-dialect", "hermes")
    result = ask(gateway, upstream, [Completion(HERMES)], stream=stream)
    assert result == {
        "content": "Let me look.",
        "calls": [("get-weather", {"city": "Paris", "days": 2})],
        "finish_reason": "tool_calls",
    }
    [sent] = upstream.chat_requests()
    body = sent["json"]
    # The model's own chat template shows the tools: they go as they came, no prompt added.
    assert body["tools"] == TOOLS
    assert body["tool_choice"] == "none"
    assert body["messages"] == USER


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_that_does_not_bind_is_repaired_in_the_models_format(start_gateway, upstream, stream):
    gateway = start_gateway("--upstream-dialect", "hermes")
    bad = '<tool_call>{"name": "get-weather", "arguments": {"days": 2}}</tool_call>'
    result = ask(gateway, upstream, [Completion(bad), Completion(HERMES)], stream=stream)
    assert result["calls"] == [("get-weather", {"city": "Paris", "days": 2})]
    note = upstream.chat_requests()[1]["json"]["messages"][-1]
    assert note["role"] == "user"
    assert note["content"].startswith("Function call: " + bad + "\nReturned: Error: Missing required")
    assert "@" not in note["content"]


def run_serve(*args):
    binary = os.environ["ATFUNC_BIN"]
    return subprocess.run(
        [binary, "serve", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0", *args],
        capture_output=True,
        text=True,
        timeout=20,
    )


def test_an_unknown_dialect_or_a_grammar_without_one_is_a_command_line_error():
    unknown = run_serve("--upstream-dialect", "klingon")
    assert unknown.returncode != 0
    assert "hermes" in unknown.stderr and "pythonic" in unknown.stderr, unknown.stderr
    # A grammar is made for atfunc's syntax and hermes only; deciding first asks in
    # atfunc's syntax only.
    constrained = run_serve("--upstream-dialect", "pythonic", "--constrain")
    assert constrained.returncode != 0
    assert "the upstream dialect is pythonic" in constrained.stderr, constrained.stderr
    assert "atfunc or hermes" in constrained.stderr, constrained.stderr
    deciding = run_serve("--upstream-dialect", "hermes", "--constrain", "--decide")
    assert deciding.returncode != 0
    assert "--decide" in deciding.stderr, deciding.stderr


# ---------------------------------------------------------------- the real server


def test_the_second_round_of_an_agent_loop_reaches_a_real_server(llama_server):
    """An assistant message with `tool_calls` and `"content": null`, as OpenAI's clients
    write it: llama-cpp-python answers 500 for it, so the gateway sends `""`."""
    from conftest import Gateway

    gateway = Gateway(llama_server.url, ["--upstream-dialect", "hermes", "--repair-rounds", "0"])
    try:
        client = gateway.client()
        messages = [
            *USER,
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get-weather", "arguments": '{"city": "Paris"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
        ]
        for stream in (False, True):
            request = dict(model="smollm2", messages=messages, tools=TOOLS, max_tokens=8,
                           temperature=0)
            if stream:
                result, _ = accumulate(client.chat.completions.create(stream=True, **request))
            else:
                result = summary(client.chat.completions.create(**request))
            assert result["finish_reason"] in ("stop", "length", "tool_calls"), result
    except Exception:
        llama_server.check_alive("during the test")
        raise
    finally:
        gateway.stop()
