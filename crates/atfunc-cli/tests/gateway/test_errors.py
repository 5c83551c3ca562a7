"""Upstream failures, stalls, clients that go away, and the bearer key."""

import json
import time

import httpx
import openai
import pytest
from common import TOOLS, USER, accumulate, summary
from scripted_upstream import Completion, Failure, Raw, Slow, Stall, Trickle


@pytest.mark.parametrize("tools", [TOOLS, None])
def test_an_upstream_500_comes_back_as_an_openai_error(client, upstream, tools):
    upstream.script(Failure(500, {"error": {"message": "the model fell over", "type": "server_error", "code": "oops"}}))
    extra = {"tools": tools} if tools else {}
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="tiny-model", messages=USER, **extra)
    assert caught.value.status_code == 500
    assert caught.value.body == {"message": "the model fell over", "type": "server_error", "code": "oops"}


@pytest.mark.parametrize("stream", [False, True])
def test_an_openai_shaped_upstream_error_comes_back_as_it_was(client, upstream, stream):
    # llama.cpp and vLLM give `code` as a number, and OpenAI names the field at fault in
    # `param`: neither may be lost on the way.
    error = {"code": 400, "message": "bad messages", "type": "invalid_request_error",
             "param": "messages"}
    upstream.script(Failure(400, {"error": error}))
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="tiny-model", messages=USER, tools=TOOLS, stream=stream)
    assert caught.value.body == error
    assert caught.value.param == "messages"


def test_an_upstream_error_that_is_not_json_is_quoted(client, upstream):
    upstream.script(Failure(503, b"<html>busy</html>"))
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="tiny-model", messages=USER, tools=TOOLS, stream=True)
    assert caught.value.status_code == 503
    assert "<html>busy</html>" in caught.value.message


def test_a_stalled_upstream_gets_a_504_not_a_hang(client, upstream):
    # The session gateway waits 2 s for the upstream.
    upstream.script(Stall(6))
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="tiny-model", messages=USER, tools=TOOLS, timeout=15)
    assert caught.value.status_code == 504
    assert time.monotonic() - started < 5
    assert "did not answer within 2s" in caught.value.message


def test_a_stream_that_stalls_midway_ends_with_an_error(client, upstream):
    upstream.script(Slow(["It is ", "sunny"], delay=6))
    stream = client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True, timeout=15)
    started = time.monotonic()
    with pytest.raises(openai.APIError) as caught:
        accumulate(stream)
    assert "did not answer within 2s" in str(caught.value)
    assert time.monotonic() - started < 5


def test_a_client_that_leaves_midway_cancels_the_upstream_request(gateway, client, upstream):
    upstream.script(Slow(["word "] * 200, delay=0.05))
    with httpx.stream("POST", gateway.url + "/v1/chat/completions", timeout=10, json={
            "model": "tiny-model", "messages": USER, "tools": TOOLS, "stream": True}) as response:
        first = next(response.iter_lines())
        assert first.startswith("data: ")
    # The gateway stops reading; the upstream's next writes fail.
    assert upstream.cancelled.wait(5)
    assert gateway.alive()
    upstream.script(Completion('@get_time(zone="UTC")'))
    result = summary(client.chat.completions.create(model="tiny-model", messages=USER, tools=TOOLS))
    assert result["calls"] == [("get_time", {"zone": "UTC"})]


def test_the_bearer_key_is_required_and_not_forwarded(start_gateway, upstream):
    gateway = start_gateway("--api-key-env", "ATFUNC_TEST_KEY", env={"ATFUNC_TEST_KEY": "s3cret"})
    with pytest.raises(openai.AuthenticationError):
        gateway.client(api_key="wrong").chat.completions.create(model="tiny-model", messages=USER)
    response = httpx.get(gateway.url + "/v1/models", timeout=10)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert upstream.requests == []

    upstream.script(Completion('@get_time(zone="UTC")'))
    result = summary(gateway.client(api_key="s3cret").chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS))
    assert result["calls"] == [("get_time", {"zone": "UTC"})]
    assert "authorization" not in upstream.chat_requests()[0]["headers"]


def test_an_upstream_key_is_sent_upstream(start_gateway, upstream):
    gateway = start_gateway("--upstream-key-env", "ATFUNC_TEST_UPSTREAM_KEY",
                            env={"ATFUNC_TEST_UPSTREAM_KEY": "up-key"})
    upstream.script(Completion("hi"))
    gateway.client(api_key="client-key").chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS)
    assert upstream.chat_requests()[0]["headers"]["authorization"] == "Bearer up-key"


def test_without_keys_the_clients_authorization_is_forwarded(client, upstream):
    upstream.script(Completion("hi"))
    client.chat.completions.create(model="tiny-model", messages=USER)
    assert upstream.chat_requests()[0]["headers"]["authorization"] == "Bearer unused"


def test_a_request_over_the_size_limit_is_refused(start_gateway, upstream):
    gateway = start_gateway("--max-request-bytes", "1000")
    with pytest.raises(openai.APIStatusError) as caught:
        gateway.client().chat.completions.create(
            model="tiny-model", messages=[{"role": "user", "content": "x" * 2000}])
    assert caught.value.status_code == 413
    assert upstream.requests == []


def chunk_event(fields):
    """One upstream chunk event carrying `fields` beside an ordinary chunk's."""
    payload = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": {}, "finish_reason": None}]}
    payload.update(fields)
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def test_a_chunk_with_a_null_error_field_is_not_an_error(client, upstream):
    # Some servers write `"error": null` into every chunk; OpenAI's client reads an error
    # only from a field that holds one.
    body = b"".join([
        chunk_event({"error": None, "choices": [
            {"index": 0, "delta": {"content": "Hello there"}, "finish_reason": None}]}),
        chunk_event({"error": None, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        b"data: [DONE]\n\n",
    ])
    upstream.script(Raw(body, content_type="text/event-stream"))
    result, _ = accumulate(client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True))
    assert result == {"content": "Hello there", "calls": [], "finish_reason": "stop"}


LLAMA_ERROR = {"code": 400, "message": "the request exceeds the available context size",
               "type": "exceed_context_size_error"}


@pytest.mark.parametrize("error_event", [
    # llama.cpp's server writes a streamed error as an `error:` field, then `[DONE]`.
    b"error: " + json.dumps(LLAMA_ERROR).encode() + b"\n\n",
    # An event of type `error`, its data the error object itself.
    b"event: error\ndata: " + json.dumps(LLAMA_ERROR).encode() + b"\n\n",
])
def test_an_error_event_in_the_upstream_stream_ends_the_stream_with_an_error(
        client, upstream, error_event):
    body = b"".join([
        chunk_event({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]}),
        error_event,
        b"data: [DONE]\n\n",
    ])
    upstream.script(Raw(body, content_type="text/event-stream"))
    stream = client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True)
    with pytest.raises(openai.APIError) as caught:
        accumulate(stream)
    assert "exceeds the available context size" in caught.value.message


def test_a_stream_cut_off_before_its_end_is_an_error_not_a_whole_answer(client, upstream):
    # No finish reason and no [DONE]: the upstream died mid-answer. Ending the client's
    # stream with "stop" would pass a truncated answer off as complete.
    body = chunk_event({"choices": [{"index": 0, "delta": {"content": "The answer is"},
                                     "finish_reason": None}]})
    upstream.script(Raw(body, content_type="text/event-stream"))
    stream = client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True)
    with pytest.raises(openai.APIError) as caught:
        accumulate(stream)
    assert "closed the stream before the answer was complete" in caught.value.message


def test_a_stream_with_a_finish_reason_but_no_done_is_whole(client, upstream):
    # Some servers end with a finish reason and close without [DONE]; that answer is whole.
    body = b"".join([
        chunk_event({"choices": [{"index": 0, "delta": {"content": "All done."},
                                  "finish_reason": None}]}),
        chunk_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ])
    upstream.script(Raw(body, content_type="text/event-stream"))
    stream = client.chat.completions.create(
        model="tiny-model", messages=USER, tools=TOOLS, stream=True)
    answer, _ = accumulate(stream)
    assert answer == {"content": "All done.", "calls": [], "finish_reason": "stop"}


@pytest.mark.parametrize("tools", [TOOLS, None])
@pytest.mark.parametrize("stream", [True, False])
def test_a_slow_upstream_is_cut_off_at_the_request_deadline(start_gateway, upstream, tools, stream):
    # Each piece comes well within the upstream timeout, but the whole answer would take
    # 10 s: the request's own deadline (2 s) ends it, and the upstream request with it.
    gateway = start_gateway("--request-timeout", "2", "--upstream-timeout", "5")
    if stream:
        upstream.script(Slow(["word "] * 40, delay=0.25))
    else:
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "m",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "Hi"}}]})
        upstream.script(Trickle(body.encode(), delay=0.1, size=2))
    extra = {"tools": tools} if tools else {}
    started = time.monotonic()
    with pytest.raises(openai.APIError) as caught:
        answer = gateway.client().chat.completions.create(
            model="tiny-model", messages=USER, stream=stream, timeout=15, **extra)
        if stream:
            accumulate(answer)
    assert "did not finish within 2s" in str(caught.value)
    if not stream:
        assert caught.value.status_code == 504
    assert time.monotonic() - started < 5
    assert upstream.cancelled.wait(5)
