"""--constrain: requests with tools go upstream with the grammar of their tools, in the
field the upstream reads, chosen by tool_choice and parallel_tool_calls; and against the
real llama-cpp-python server with SmolLM2-135M, a constrained answer's calls bind."""

import copy
import json
import os
import subprocess
import tempfile

import pytest
from common import TOOLS, USER, accumulate, summary
from llama_server import llama_server  # noqa: F401 (the fixture)
from scripted_upstream import Completion

# These tests check the grammars themselves: under tool_choice "auto" the gateway would
# otherwise weigh the answer first (one more request, of one token), which the scripted
# upstream answers without log probabilities.
UNWEIGHED = ("--call-threshold", "off")


def expected_grammar(*args, bare=True):
    """The grammar `atfunc grammar` prints for TOOLS under the names the model is given, with
    the bare words `atfunc serve --constrain` allows by default (without them if not `bare`)."""
    tools = copy.deepcopy(TOOLS)
    tools[0]["function"]["name"] = "get_weather"
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(tools, f)
    try:
        out = subprocess.run(
            [os.environ["ATFUNC_BIN"], "grammar", "--tools", f.name,
             *(["--bare-strings"] if bare else []), *args],
            check=True, capture_output=True, text=True,
        )
    finally:
        os.unlink(f.name)
    return out.stdout


def ask(gateway, upstream, answers, **params):
    upstream.script(*answers)
    request = {"model": "tiny-model", "messages": USER, "tools": TOOLS, **params}
    stream = request.pop("stream", False)
    client = gateway.client()
    if stream:
        result, _ = accumulate(client.chat.completions.create(stream=True, **request))
        return result
    return summary(client.chat.completions.create(**request))


@pytest.mark.parametrize("stream", [False, True])
def test_the_grammar_goes_upstream_as_tool_choice_asks(start_gateway, upstream, stream):
    gateway = start_gateway(*UNWEIGHED, "--constrain")
    cases = [
        ({}, ["--choice", "auto"]),
        ({"tool_choice": "auto"}, ["--choice", "auto"]),
        ({"tool_choice": "required"}, ["--choice", "required"]),
        ({"tool_choice": {"type": "function", "function": {"name": "get-weather"}}},
         ["--choice", "get_weather"]),
        ({"parallel_tool_calls": False}, ["--choice", "auto", "--single"]),
        ({"tool_choice": "required", "parallel_tool_calls": False}, ["--choice", "required", "--single"]),
    ]
    for params, args in cases:
        upstream.reset()
        result = ask(gateway, upstream, [Completion('@get_weather(city="Oslo")')], stream=stream, **params)
        assert result["calls"] == [("get-weather", {"city": "Oslo"})]
        [sent] = upstream.chat_requests()
        body = sent["json"]
        assert body["grammar"] == expected_grammar(*args), params
        assert "atfunc_constrain" not in body and "tools" not in body


def test_no_bare_strings_keeps_text_quoted(start_gateway, upstream):
    # The bare words are the default's; without them the grammar is `atfunc grammar`'s own.
    for flags, bare in [((), True), (("--no-bare-strings",), False),
                        (("--no-bare-strings", "--bare-strings"), True)]:
        gateway = start_gateway("--constrain", *flags)
        upstream.reset()
        ask(gateway, upstream, [Completion('@get_weather(city="Oslo")')], tool_choice="required")
        sent = upstream.chat_requests()[0]["json"]["grammar"]
        assert sent == expected_grammar("--choice", "required", bare=bare), flags
    assert expected_grammar(bare=True) != expected_grammar(bare=False)


def test_tool_choice_none_sends_no_grammar(start_gateway, upstream):
    gateway = start_gateway("--constrain")
    ask(gateway, upstream, [Completion("Just words.")], tool_choice="none")
    assert "grammar" not in upstream.chat_requests()[0]["json"]


def test_each_request_may_decide_where_the_server_allows_it(start_gateway, gateway, upstream):
    import openai
    ask(gateway, upstream, [Completion("Hi.")])
    assert "grammar" not in upstream.chat_requests()[0]["json"]

    # Building a grammar is the server's work: a request may turn it on only where the
    # server lets it.
    upstream.reset()
    with pytest.raises(openai.BadRequestError) as caught:
        ask(gateway, upstream, [], extra_body={"atfunc_constrain": True})
    assert "--constrain-per-request" in str(caught.value)
    assert upstream.chat_requests() == []

    allowing = start_gateway(*UNWEIGHED, "--constrain-per-request")
    upstream.reset()
    ask(allowing, upstream, [Completion("Hi.")])
    assert "grammar" not in upstream.chat_requests()[0]["json"]
    upstream.reset()
    ask(allowing, upstream, [Completion("Hi.")], extra_body={"atfunc_constrain": True})
    body = upstream.chat_requests()[0]["json"]
    assert body["grammar"] == expected_grammar()
    assert "atfunc_constrain" not in body

    constrained = start_gateway(*UNWEIGHED, "--constrain")
    upstream.reset()
    ask(constrained, upstream, [Completion("Hi.")], extra_body={"atfunc_constrain": False})
    body = upstream.chat_requests()[0]["json"]
    assert "grammar" not in body and "atfunc_constrain" not in body

    # Without tools the flag is the gateway's own: it does not go upstream.
    upstream.reset()
    upstream.script(Completion("Hi."))
    constrained.client().chat.completions.create(
        model="tiny-model", messages=USER, extra_body={"atfunc_constrain": True})
    body = upstream.chat_requests()[0]["json"]
    assert "grammar" not in body and "atfunc_constrain" not in body


def test_a_flag_that_is_not_a_boolean_is_a_bad_request(gateway, upstream):
    import openai
    with pytest.raises(openai.BadRequestError) as caught:
        ask(gateway, upstream, [], extra_body={"atfunc_constrain": "yes"})
    assert "atfunc_constrain" in str(caught.value)
    assert upstream.chat_requests() == []


@pytest.mark.parametrize("kind,where", [
    ("llama-cpp", ["grammar"]),
    ("vllm", ["structured_outputs", "grammar"]),
    ("vllm-guided", ["guided_grammar"]),
    ("sglang", ["ebnf"]),
])
def test_each_kind_of_upstream_gets_its_field(start_gateway, upstream, kind, where):
    gateway = start_gateway("--constrain", "--upstream-kind", kind)
    ask(gateway, upstream, [Completion("Hi.")], tool_choice="required")
    body = upstream.chat_requests()[0]["json"]
    value = body
    for key in where:
        value = value[key]
    assert value == expected_grammar("--choice", "required")
    others = {"grammar", "structured_outputs", "guided_grammar", "ebnf"} - {where[0]}
    assert not others & set(body)


def test_vllm_keeps_the_clients_other_structured_outputs(start_gateway, upstream):
    gateway = start_gateway(*UNWEIGHED, "--constrain", "--upstream-kind", "vllm")
    ask(gateway, upstream, [Completion("Hi.")], extra_body={"structured_outputs": {"disable_fallback": True}})
    outputs = upstream.chat_requests()[0]["json"]["structured_outputs"]
    assert outputs["disable_fallback"] is True and outputs["grammar"] == expected_grammar()


@pytest.mark.parametrize("stream", [False, True])
def test_repair_rounds_ask_for_calls_only(start_gateway, upstream, stream):
    gateway = start_gateway(*UNWEIGHED, "--constrain", "--resamples", "0")
    result = ask(gateway, upstream, [
        Completion("Checking: @get_weather(days=2)"),
        Completion('@get_weather(city="Oslo", days=2)'),
    ], stream=stream)
    assert result["calls"] == [("get-weather", {"city": "Oslo", "days": 2})]
    first, repair = upstream.chat_requests()
    assert first["json"]["grammar"] == expected_grammar()
    assert repair["json"]["grammar"] == expected_grammar("--choice", "required")


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_that_does_not_bind_is_resampled_first(start_gateway, upstream, stream):
    """Under a grammar, a failed answer is asked again as the turn began (the same
    messages and grammar), sampled with a seed each, before the repair round; the
    resamples' text is not the client's, their calls are."""
    gateway = start_gateway(*UNWEIGHED, "--constrain", "--resamples", "2")
    result = ask(gateway, upstream, [
        Completion('Checking: @get_weather(city="Os'),
        Completion("Again: @get_weather(days=2)"),
        Completion('Sure. @get_weather(city="Oslo", days=2)'),
    ], stream=stream, temperature=0)
    assert result["calls"] == [("get-weather", {"city": "Oslo", "days": 2})]
    assert result["content"] == "Checking:"
    first, *resamples = upstream.chat_requests()
    assert [(r["json"]["temperature"], r["json"]["seed"]) for r in resamples] == [(0.7, 1), (0.7, 2)]
    for sent in resamples:
        assert sent["json"]["messages"] == first["json"]["messages"]
        assert sent["json"]["grammar"] == first["json"]["grammar"] == expected_grammar()

    # Both resamples fail: the repair round follows, on the client's own settings.
    upstream.reset()
    result = ask(gateway, upstream, [
        Completion('@get_weather(city="Os'),
        Completion("@get_weather(days=2)"),
        Completion("@get_weather(days=3)"),
        Completion('@get_weather(city="Oslo", days=3)'),
    ], stream=stream, temperature=0, seed=40)
    assert result["calls"] == [("get-weather", {"city": "Oslo", "days": 3})]
    *_, resample, repair = upstream.chat_requests()
    assert (resample["json"]["temperature"], resample["json"]["seed"]) == (0.7, 42)
    assert (repair["json"]["temperature"], repair["json"]["seed"]) == (0, 40)
    assert repair["json"]["messages"][-2] == {"role": "assistant", "content": "@get_weather(days=3)"}
    assert repair["json"]["grammar"] == expected_grammar("--choice", "required")


# ---------------------------------------------------------------- the real server


def test_a_constrained_answer_of_a_real_model_binds(llama_server):
    from conftest import Gateway

    gateway = Gateway(llama_server.url, ["--constrain", "--repair-rounds", "0", "--resamples", "0"])
    try:
        client = gateway.client()
        questions = ["What is the weather in Paris?", "What time is it in Tokyo?",
                     "Weather in Oslo for the next 3 days, please."]
        for question in questions:
            for stream in (False, True):
                request = dict(model="smollm2", messages=[{"role": "user", "content": question}],
                               tools=TOOLS, tool_choice="required", max_tokens=60, temperature=0)
                if stream:
                    result, _ = accumulate(client.chat.completions.create(stream=True, **request))
                else:
                    result = summary(client.chat.completions.create(**request))
                # No resamples, no repair rounds: the calls bound as the model wrote them.
                assert result["finish_reason"] == "tool_calls", (question, result)
                assert result["calls"], (question, result)
                for name, args in result["calls"]:
                    assert name in ("get-weather", "get_time")
                    assert ("city" in args) if name == "get-weather" else ("zone" in args)
    except Exception:
        llama_server.check_alive("during the test")
        raise
    finally:
        gateway.stop()
