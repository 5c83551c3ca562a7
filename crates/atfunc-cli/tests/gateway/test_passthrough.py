"""What the gateway passes through untouched: requests without tools, and /v1/models."""

import httpx
from scripted_upstream import MODELS_BODY, Raw

# Odd spacing and key order on purpose: a re-serialised body would not match.
REQUEST = b'{ "model":"tiny-model",  "messages": [{"content": "hi \\u00e9", "role": "user"}], "temperature": 0.25 ,"tools": null}'
ANSWER = b'{"id":"x","object":"chat.completion","created":1,"model":"tiny-model","choices":[{"index":0,"message":{"role":"assistant","content":"hello @get_weather(city=1)"},"finish_reason":"stop"}],  "extra": [1, 2.50]}'
STREAM = (
    b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"he"},"finish_reason":null}]}\n\n'
    b": a comment the gateway must not drop\n\n"
    b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def test_a_request_without_tools_passes_through_byte_for_byte(gateway, upstream):
    upstream.script(Raw(ANSWER))
    response = httpx.post(gateway.url + "/v1/chat/completions", content=REQUEST,
                          headers={"Content-Type": "application/json"}, timeout=10)
    assert response.status_code == 200
    assert response.content == ANSWER
    assert response.headers["content-type"] == "application/json"
    [sent] = upstream.chat_requests()
    assert sent["body"] == REQUEST


def test_a_stream_without_tools_passes_through_byte_for_byte(gateway, upstream):
    upstream.script(Raw(STREAM, content_type="text/event-stream"))
    request = REQUEST.replace(b'"temperature"', b'"stream": true, "temperature"')
    with httpx.stream("POST", gateway.url + "/v1/chat/completions", content=request,
                      headers={"Content-Type": "application/json"}, timeout=10) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        body = b"".join(response.iter_raw())
    assert body == STREAM
    assert upstream.chat_requests()[0]["body"] == request


def test_the_openai_client_works_through_it(client, upstream):
    upstream.script(Raw(ANSWER))
    completion = client.chat.completions.create(
        model="tiny-model", messages=[{"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "hello @get_weather(city=1)"
    assert completion.choices[0].message.tool_calls is None


def test_models_pass_through(gateway, upstream):
    response = httpx.get(gateway.url + "/v1/models", timeout=10)
    assert response.status_code == 200
    assert response.content == MODELS_BODY
    models = gateway.client().models.list()
    assert [m.id for m in models.data] == ["tiny-model"]
