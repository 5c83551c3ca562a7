"""Requests with tools: prompts, history, answers, streaming, repair rounds, tool_choice."""

import json
import time

import pytest
from common import PREAMBLE_START, TOOLS, USER, accumulate, summary
from scripted_upstream import Completion, Gated, Raw, Slow


def ask(client, upstream, answer, stream=False, **kwargs):
    upstream.script(*(answer if isinstance(answer, list) else [answer]))
    params = {"model": "tiny-model", "messages": kwargs.pop("messages", USER), "tools": TOOLS}
    params.update(kwargs)
    if stream:
        result, _ = accumulate(client.chat.completions.create(stream=True, **params))
        return result
    return summary(client.chat.completions.create(**params))


def test_a_call_comes_back_as_tool_calls(client, upstream):
    result = ask(client, upstream, Completion('Let me check. @get_weather(city="Paris", days="2")'))
    assert result == {
        "content": "Let me check.",
        "calls": [("get-weather", {"city": "Paris", "days": 2})],
        "finish_reason": "tool_calls",
    }
    [sent] = upstream.chat_requests()
    body = sent["json"]
    assert "tools" not in body and "tool_choice" not in body
    # Asked for a stream though the client wants the answer whole: the gateway can drop
    # it at a repeated call. The usage is asked for, for the whole answer to carry it.
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    system = body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith(PREAMBLE_START)
    assert "@get_weather( <*city>, <days{integer}> )\nDescription: Current weather of a city" in system["content"]
    assert "@get_time( <*zone> )" in system["content"]
    assert body["messages"][1:] == USER


def test_the_prompt_goes_in_front_of_the_system_message(client, upstream):
    messages = [{"role": "system", "content": "Answer in French."}, *USER]
    ask(client, upstream, Completion("Il fait beau."), messages=messages)
    body = upstream.chat_requests()[0]["json"]
    assert len(body["messages"]) == 2
    assert body["messages"][0]["content"].startswith(PREAMBLE_START)
    assert body["messages"][0]["content"].endswith("\nAnswer in French.")


def test_a_system_message_later_in_the_conversation_stays_where_it_was(client, upstream):
    # The functions are the conversation's ground rules: they come before it, not in the
    # middle where a system message changes course.
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "system", "content": "From now on, answer in French."},
        *USER,
    ]
    ask(client, upstream, Completion("Il fait beau."), messages=messages)
    sent = upstream.chat_requests()[0]["json"]["messages"]
    assert sent[0]["role"] == "system" and sent[0]["content"].startswith(PREAMBLE_START)
    assert sent[1:] == messages


def test_text_without_calls_is_content(client, upstream):
    result = ask(client, upstream, Completion("It is sunny, write to bob@example.com for more."))
    assert result == {
        "content": "It is sunny, write to bob@example.com for more.",
        "calls": [],
        "finish_reason": "stop",
    }


def test_several_calls_with_text_around_them(client, upstream):
    answer = (
        "I'll look both up.\n@get_weather(\"Paris\")\n@GET_TIME(zone='Europe/Paris')\n"
        "One moment."
    )
    result = ask(client, upstream, Completion(answer))
    assert result == {
        "content": "I'll look both up.\nOne moment.",
        "calls": [("get-weather", {"city": "Paris"}), ("get_time", {"zone": "Europe/Paris"})],
        "finish_reason": "tool_calls",
    }


ANSWERS = [
    "Plain text, with no call at all, long enough to come in several deltas.",
    '@get_weather(city="Oslo")',
    'Checking Paris and Oslo: @get_weather("Paris", days=3) and @get_weather(city="Oslo") -- one moment.',
    "Times: @get_time(zone=\"UTC\")\n\n@get_time(zone='Asia/Tokyo')\nDone, é ü 天气.",
    "Mail bob@example.com about @team (soon).",
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_streamed_deltas_add_up_to_the_whole_answer(client, upstream, answer):
    whole = ask(client, upstream, Completion(answer))
    upstream.script(Completion(answer))
    streamed, _ = accumulate(client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True))
    assert streamed == whole
    requests = upstream.chat_requests()
    assert requests[1]["json"]["stream"] is True
    assert requests[1]["json"]["messages"] == requests[0]["json"]["messages"]


@pytest.mark.parametrize("line_end", ["\r", "\r\n"])
def test_an_upstream_stream_with_other_line_ends_reads_the_same(client, upstream, line_end):
    # Server-sent events may end their lines with CR LF, LF or a lone CR.
    answer = 'Checking Paris: @get_weather("Paris", days=3) and the time @get_time(zone="CET").'
    whole = ask(client, upstream, Completion(answer))
    upstream.script(Completion(answer, line_end=line_end))
    streamed, deltas = accumulate(client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True))
    assert streamed == whole
    assert len(whole["calls"]) == 2
    assert deltas > 1


def test_text_is_passed_on_as_soon_as_it_cannot_be_a_call(client, upstream):
    # The upstream sends its next piece only once the client has seen the text of the one
    # before: a gateway that held text back would stall it (and the test would fail).
    reply = Gated([("It is ", True), ("sunny ", True), ("in Paris. ", True),
                   ("@get_time(zone=", False), ('"UTC")', False), (" Bye.", False)])
    upstream.script(reply)
    content = []
    calls = []
    stream = client.chat.completions.create(model="tiny-model", messages=USER, tools=TOOLS, stream=True)
    for chunk in stream:
        delta = chunk.choices[0].delta if chunk.choices else None
        if delta and delta.content:
            content.append(delta.content)
            reply.proceed.release()
        if delta and delta.tool_calls:
            calls.extend(delta.tool_calls)
    assert not reply.stalled
    assert content == ["It is", " sunny", " in Paris.", " Bye."]
    assert [(c.function.name, c.function.arguments) for c in calls] == [("get_time", '{"zone":"UTC"}')]


def test_a_stream_reports_usage_when_asked(client, upstream):
    upstream.script(Completion('@get_time(zone="UTC")'))
    chunks = list(client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True,
        stream_options={"include_usage": True}))
    assert chunks[-1].usage.total_tokens == 15
    assert chunks[-2].choices[0].finish_reason == "tool_calls"


def upstream_chunk(delta, finish_reason=None, usage=None):
    payload = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
    if usage:
        payload["usage"] = usage
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def test_a_stream_has_no_chunk_without_choices_unless_usage_was_asked_for(client, upstream):
    # llama.cpp's server puts usage on its last chunk unasked. OpenAI sends a chunk with no
    # choices only to a client that asked for usage; clients that read `choices[0]` of
    # every chunk rely on that.
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    body = b"".join([
        upstream_chunk({"content": 'Sure. @get_time(zone="UTC")'}),
        upstream_chunk({}, "stop", usage),
        b"data: [DONE]\n\n",
    ])
    upstream.script(Raw(body, content_type="text/event-stream"))
    chunks = list(client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True))
    assert all(chunk.choices for chunk in chunks), chunks
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert chunks[-1].usage.total_tokens == 15


def test_usage_sent_with_every_chunk_counts_once(client, upstream):
    # vLLM's `continuous_usage_stats` puts the usage so far on every chunk.
    def usage(n):
        return {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n}
    body = b"".join([
        upstream_chunk({"content": "It is "}, usage=usage(1)),
        upstream_chunk({"content": "sunny."}, usage=usage(2)),
        upstream_chunk({}, "stop", usage(2)),
        b"data: [DONE]\n\n",
    ])
    upstream.script(Raw(body, content_type="text/event-stream"))
    chunks = list(client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True,
        stream_options={"include_usage": True}))
    assert chunks[-1].usage.model_dump(exclude_none=True) == usage(2)


def test_a_history_with_tool_results_is_rewritten(client, upstream):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and the time in Oslo?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "get-weather", "arguments": '{"city": "Paris"}'}},
            {"id": "call_b", "type": "function",
             "function": {"name": "get_time", "arguments": '{"zone": "Europe/Oslo"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": '{"temp": 21}'},
        {"role": "tool", "tool_call_id": "call_b", "content": "14:05"},
    ]
    result = ask(client, upstream, Completion("21 degrees in Paris; 14:05 in Oslo."), messages=messages)
    assert result["content"] == "21 degrees in Paris; 14:05 in Oslo."
    sent = upstream.chat_requests()[0]["json"]["messages"]
    assert sent[0]["role"] == "system" and sent[0]["content"].endswith("\nBe brief.")
    assert sent[1:] == [
        {"role": "user", "content": "Weather in Paris and the time in Oslo?"},
        {"role": "assistant",
         "content": 'Checking.\n@get_weather(city="Paris")\n@get_time(zone="Europe/Oslo")'},
        {"role": "user", "content": (
            'Function call: get_weather(city="Paris")\nReturned: {"temp": 21}\n\n'
            'Function call: get_time(zone="Europe/Oslo")\nReturned: 14:05\n')},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_that_does_not_bind_is_repaired(client, upstream, stream):
    result = ask(client, upstream, [
        Completion("Let me look. @get_weather(days=2)"),
        Completion('@get_weather(city="Paris", days=2)'),
    ], stream=stream)
    assert result == {
        "content": "Let me look.",
        "calls": [("get-weather", {"city": "Paris", "days": 2})],
        "finish_reason": "tool_calls",
    }
    first, second = upstream.chat_requests()
    repair = second["json"]["messages"]
    assert repair[:-2] == first["json"]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Let me look. @get_weather(days=2)"}
    assert repair[-1]["role"] == "user"
    assert repair[-1]["content"].startswith(
        "Function call: get_weather(days=2)\n"
        "Returned: Error: Missing required parameter for function 'get_weather': city\n")


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_that_stays_wrong_comes_back_as_text(client, upstream, stream):
    result = ask(client, upstream, [
        Completion("Let me look. @get_wether(city=\"Paris\")"),
        Completion("@get_wether(city=\"Paris\")"),
    ], stream=stream)
    assert result == {
        "content": 'Let me look.\n@get_wether(city="Paris")',
        "calls": [],
        "finish_reason": "stop",
    }
    repair = upstream.chat_requests()[1]["json"]["messages"][-1]["content"]
    assert "Unknown function 'get_wether': did you mean 'get_weather'?" in repair


def test_tool_choice_none_sends_no_tools_and_passes_the_answer_through(client, upstream):
    result = ask(client, upstream, Completion('@get_weather(city="Paris")'), tool_choice="none")
    assert result == {"content": '@get_weather(city="Paris")', "calls": [], "finish_reason": "stop"}
    body = upstream.chat_requests()[0]["json"]
    assert "tools" not in body and "tool_choice" not in body
    assert body["messages"] == USER


@pytest.mark.parametrize("stream", [False, True])
def test_tool_choice_required_asks_again_for_a_call(client, upstream, stream):
    result = ask(client, upstream, [
        Completion("It is probably sunny."),
        Completion('@get_weather(city="Paris")'),
    ], stream=stream, tool_choice="required")
    assert result == {
        "content": "It is probably sunny.",
        "calls": [("get-weather", {"city": "Paris"})],
        "finish_reason": "tool_calls",
    }
    first, second = upstream.chat_requests()
    assert "you must call at least one of these functions" in first["json"]["messages"][0]["content"]
    assert "must call at least one of the functions" in second["json"]["messages"][-1]["content"]


def test_a_named_tool_choice_refuses_other_calls(client, upstream):
    result = ask(client, upstream, [
        Completion('@get_weather(city="Paris")'),
        Completion('@get_time(zone="Europe/Paris")'),
    ], tool_choice={"type": "function", "function": {"name": "get_time"}})
    assert result == {
        "content": None,
        "calls": [("get_time", {"zone": "Europe/Paris"})],
        "finish_reason": "tool_calls",
    }
    first, second = upstream.chat_requests()
    assert "In this answer you must call @get_time." in first["json"]["messages"][0]["content"]
    assert "This answer must call @get_time, and no other function" in second["json"]["messages"][-1]["content"]


def test_one_call_when_parallel_calls_are_off(client, upstream):
    result = ask(client, upstream, Completion('@get_time(zone="UTC") @get_time(zone="CET")'),
                 parallel_tool_calls=False)
    assert result["calls"] == [("get_time", {"zone": "UTC"})]
    assert "Call at most one function per answer." in upstream.chat_requests()[0]["json"]["messages"][0]["content"]


def test_invalid_tools_are_a_bad_request(client, upstream):
    import openai
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="tiny-model", messages=USER, tools=[{"type": "function"}])
    assert "function" in str(caught.value)
    assert upstream.chat_requests() == []


HOTEL_TOOLS = [{"type": "function", "function": {
    "name": "Hotels_2_SearchHouse", "description": "Search for a house to stay in",
    "parameters": {"type": "object", "required": ["where_to"], "properties": {
        "where_to": {"type": "string"},
        "has_laundry_service": {"type": "boolean", "enum": ["True", "False", "dontcare"],
                                "default": "dontcare"}}}}}]


def test_real_tools_a_server_accepts_are_read_and_warned_about_once(start_gateway, upstream):
    # A boolean whose choices are strings, as BFCL's live tool sets have it: OpenAI takes
    # it, so the gateway does too, reading the choices and saying so once on stderr. The
    # choices that spell booleans are booleans: the client declared one.
    gateway = start_gateway()
    client = gateway.client()
    for laundry, sent in [('"dontcare"', "dontcare"), ("false", False), ('"False"', False)]:
        upstream.script(Completion(f'@Hotels_2_SearchHouse("Paris", has_laundry_service={laundry})'))
        result = summary(client.chat.completions.create(
            model="tiny-model", messages=USER, tools=HOTEL_TOOLS))
        assert result["calls"] == [
            ("Hotels_2_SearchHouse", {"where_to": "Paris", "has_laundry_service": sent})]
    system = upstream.chat_requests()[0]["json"]["messages"][0]["content"]
    assert '<has_laundry_service{true|false|"dontcare"}>' in system
    warnings = [line for line in gateway.log if "has_laundry_service" in line]
    assert len(warnings) == 1, gateway.log
    assert 'it is read as any with the choices true, false, "dontcare"' in warnings[0]


BACKUP_TOOLS = [{"type": "function", "function": {
    "name": "disk-wipe", "description": "Wipe a disk",
    "parameters": {"type": "object", "required": ["device"], "properties": {
        "device": {"type": "string"},
        "force": {"type": "boolean", "enum": ["True", "False"],
                  "description": "Skip the backup"}}}}}]


def test_a_boolean_whose_choices_spell_booleans_reaches_the_client_as_a_boolean(client, upstream):
    # "False" is truthy: a client that got it would skip the backup the model kept.
    for force in ["false", '"False"', "False"]:
        upstream.script(Completion(f'@disk_wipe("sda", force={force})'))
        result = summary(client.chat.completions.create(
            model="tiny-model", messages=USER, tools=BACKUP_TOOLS))
        assert result["calls"] == [("disk-wipe", {"device": "sda", "force": False})], force
    system = upstream.chat_requests()[0]["json"]["messages"][0]["content"]
    assert "@disk_wipe( <*device>, <force{boolean: true|false}> )" in system


SEARCH_TOOLS = [{"type": "function", "function": {
    "name": "search", "description": "Search the web",
    "parameters": {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string"}, "max-results": {"type": "string"}}}}}]


def test_a_placeholder_in_the_clients_spelling_is_not_passed_on(client, upstream):
    # The prompt shows `<max_results>`; a repair answer that writes the client's spelling
    # of it copied a placeholder all the same, and no call of it reaches the client.
    upstream.script(
        Completion('@search("cats", max_results="<max_results>")'),
        Completion('@search("cats", max_results="<max-results>")'),
    )
    result = summary(client.chat.completions.create(
        model="tiny-model", messages=USER, tools=SEARCH_TOOLS))
    assert result["calls"] == [], result
    repair = upstream.chat_requests()[1]["json"]["messages"][-1]["content"]
    assert '"<max_results>" is a placeholder' in repair, repair


def test_an_upstream_that_answers_a_stream_whole_still_streams_to_the_client(client, upstream):
    whole = json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": 'Sure. @get_time(zone="UTC")'},
         "finish_reason": "stop"}]}).encode()
    upstream.script(Raw(whole))
    result, _ = accumulate(client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True))
    assert result == {"content": "Sure.", "calls": [("get_time", {"zone": "UTC"})],
                      "finish_reason": "tool_calls"}


@pytest.mark.parametrize("stream", [False, True])
def test_only_the_calls_that_failed_are_asked_for_again(client, upstream, stream):
    result = ask(client, upstream, [
        Completion('Both: @get_time(zone="UTC") @get_weather(days=2)'),
        Completion('@get_weather(city="Oslo", days=2)'),
    ], stream=stream)
    assert result == {
        "content": "Both:",
        "calls": [("get_time", {"zone": "UTC"}), ("get-weather", {"city": "Oslo", "days": 2})],
        "finish_reason": "tool_calls",
    }
    note = upstream.chat_requests()[1]["json"]["messages"][-1]["content"]
    assert note.startswith("Function call: get_weather(days=2)\n")
    assert "get_time" not in note
    assert note.endswith("Your other calls were made: do not repeat them.")


@pytest.mark.parametrize("stream", [False, True])
def test_a_repeated_call_ends_the_answer(client, upstream, stream):
    # A small model that cannot stop: its calls, then the same calls again (spelled
    # otherwise) until the token limit cuts one short.
    loop = 'Sure. @get_time(zone="UTC") @get_weather(city="Oslo")\n@get_time(UTC)\n@get_weather(city="Oslo")\n@get_ti'
    result = ask(client, upstream, Completion(loop, finish_reason="length"), stream=stream)
    assert result == {
        "content": "Sure.",
        "calls": [("get_time", {"zone": "UTC"}), ("get-weather", {"city": "Oslo"})],
        "finish_reason": "tool_calls",
    }
    # The call cut short after the repeat asks for no repair round.
    assert len(upstream.chat_requests()) == 1


@pytest.mark.parametrize("stream", [True, False])
def test_an_answer_ended_by_a_repeated_call_stops_the_upstream(gateway, client, upstream, stream):
    # 200 more copies, 50 ms apart: ten seconds of tokens the gateway does not wait for,
    # whether the client reads a stream or waits for the answer whole.
    upstream.script(Slow(['@get_time(zone="UTC")\n'] * 201, delay=0.05))
    started = time.monotonic()
    answer = client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=stream)
    result = accumulate(answer)[0] if stream else summary(answer)
    assert result["calls"] == [("get_time", {"zone": "UTC"})]
    assert result["finish_reason"] == "tool_calls"
    assert time.monotonic() - started < 5
    # The gateway dropped the upstream's stream: its next writes fail.
    assert upstream.cancelled.wait(5)
    assert gateway.alive()


def test_with_keep_repeated_calls_an_answer_wanted_whole_is_asked_whole(start_gateway, upstream):
    # Nothing ends the answer early, so nothing is gained by a stream: the upstream is asked
    # as the client asked, and every copy is passed on.
    client = start_gateway("--keep-repeated-calls").client()
    upstream.script(Completion('@get_time(zone="UTC")\n@get_time(zone="UTC")'))
    result = summary(client.chat.completions.create(model="tiny-model", messages=USER, tools=TOOLS))
    assert result["calls"] == [("get_time", {"zone": "UTC"})] * 2
    [sent] = upstream.chat_requests()
    assert sent["json"]["stream"] is False
    assert "stream_options" not in sent["json"]
