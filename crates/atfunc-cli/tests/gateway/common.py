"""Tools and helpers shared by the gateway tests."""

import json

# `get-weather` is not an atfunc name: the model sees `@get_weather`, the client its own name.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get-weather",
            "description": "Current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Current time in a time zone",
            "parameters": {
                "type": "object",
                "properties": {"zone": {"type": "string"}},
                "required": ["zone"],
            },
        },
    },
]

# How the atfunc prompt starts.
PREAMBLE_START = "You can call the functions listed below."

USER = [{"role": "user", "content": "What is the weather in Paris?"}]


def summary(completion):
    """What a non-streamed answer says: content, calls (name, arguments) and finish reason."""
    choice = completion.choices[0]
    calls = [
        (call.function.name, json.loads(call.function.arguments))
        for call in (choice.message.tool_calls or [])
    ]
    for call in choice.message.tool_calls or []:
        assert call.id.startswith("call_") and call.type == "function", call
    return {"content": choice.message.content, "calls": calls, "finish_reason": choice.finish_reason}


def accumulate(stream):
    """A streamed answer added up as OpenAI's clients do; also how many content deltas came."""
    content = None
    calls = {}
    finish_reason = None
    content_deltas = 0
    for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                content = (content or "") + delta.content
                content_deltas += 1
            for call in delta.tool_calls or []:
                entry = calls.setdefault(call.index, {"id": None, "name": "", "arguments": ""})
                if call.id:
                    entry["id"] = call.id
                if call.function and call.function.name:
                    entry["name"] += call.function.name
                if call.function and call.function.arguments:
                    entry["arguments"] += call.function.arguments
            if choice.finish_reason:
                finish_reason = choice.finish_reason
    ordered = [calls[i] for i in sorted(calls)]
    for entry in ordered:
        assert entry["id"] and entry["id"].startswith("call_"), entry
    return {
        "content": content,
        "calls": [(c["name"], json.loads(c["arguments"])) for c in ordered],
        "finish_reason": finish_reason,
    }, content_deltas
