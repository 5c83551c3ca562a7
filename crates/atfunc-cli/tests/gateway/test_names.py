"""Parameter names that are not atfunc identifiers: the model sees identifiers, the client
gets its own names back, in answers (whole and streamed) and in the rewritten history.
Fields inside an object argument are JSON keys and keep the client's spelling."""

import json

import pytest
from common import USER, accumulate, summary
from scripted_upstream import Completion

SEARCH = {
    "type": "function",
    "function": {
        "name": "search-docs",
        "description": "Search the documentation",
        "parameters": {
            "type": "object",
            "properties": {
                "query text": {"type": "string"},
                "max-results": {"type": "integer", "description": "Results in all"},
                "$top": {"type": "integer", "description": "Results per page"},
                "user.id": {"type": "string"},
                "2fa_code": {"type": "string"},
                "filter": {
                    "type": "object",
                    "properties": {"created-after": {"type": "string"}, "page size": {"type": "integer"}},
                    "required": ["created-after"],
                },
            },
            "required": ["query text", "user.id"],
        },
    },
}

INTERFACE = (
    "@search_docs( <*query_text>, <max_results{integer}>, <_top{integer}>, "
    "<*user_id>, <_2fa_code>, <filter{object}> )"
)

ANSWER = (
    'Searching. @search_docs(query_text="gateway", max_results="5", _top=2, '
    'user_id=u42, _2fa_code="0042", filter={"created-after": "2024-01-01", "page size": "10"})'
)

# What the client gets: its own names, at the top and inside `filter`, in declared order.
ARGUMENTS = {
    "query text": "gateway",
    "max-results": 5,
    "$top": 2,
    "user.id": "u42",
    "2fa_code": "0042",
    "filter": {"created-after": "2024-01-01", "page size": 10},
}


def create(client, **kwargs):
    params = {"model": "tiny-model", "messages": USER, "tools": [SEARCH]}
    params.update(kwargs)
    return client.chat.completions.create(**params)


def test_the_model_sees_identifiers_and_the_client_its_own_names(client, upstream):
    upstream.script(Completion(ANSWER))
    completion = create(client)
    assert summary(completion) == {
        "content": "Searching.",
        "calls": [("search-docs", ARGUMENTS)],
        "finish_reason": "tool_calls",
    }
    raw = completion.choices[0].message.tool_calls[0].function.arguments
    assert list(json.loads(raw)) == list(ARGUMENTS)
    assert '"max-results":5' in raw and '"$top":2' in raw and '"page size":10' in raw
    system = upstream.chat_requests()[0]["json"]["messages"][0]["content"]
    assert INTERFACE + "\nDescription: Search the documentation" in system
    assert "max-results" not in system and "query text" not in system


def test_streamed_calls_use_the_client_names_too(client, upstream):
    upstream.script(Completion(ANSWER), Completion(ANSWER))
    whole = summary(create(client))
    streamed, _ = accumulate(create(client, stream=True))
    assert streamed == whole
    assert streamed["calls"] == [("search-docs", ARGUMENTS)]


@pytest.mark.parametrize("stream", [False, True])
def test_fields_inside_an_object_may_be_written_as_identifiers_too(client, upstream, stream):
    # The prompt lists the fields of `filter` as the client spells them; a model may still
    # write them as it writes parameters.
    upstream.script(Completion(
        '@search_docs("gateway", user_id=u42, filter={"created_after": "2024-01-01", "PAGE_SIZE": 10})'))
    result = accumulate(create(client, stream=True))[0] if stream else summary(create(client))
    assert result["calls"] == [("search-docs", {
        "query text": "gateway", "user.id": "u42",
        "filter": {"created-after": "2024-01-01", "page size": 10}})]


@pytest.mark.parametrize("stream", [False, True])
def test_a_repair_names_the_parameter_as_the_model_knows_it(client, upstream, stream):
    upstream.script(
        Completion('@search_docs("gateway", filter={"page_size": 3})'),
        Completion('@search_docs("gateway", user_id=u1, filter={"created_after": "2024"})'),
    )
    result = accumulate(create(client, stream=True))[0] if stream else summary(create(client))
    assert result["calls"] == [("search-docs", {
        "query text": "gateway", "user.id": "u1", "filter": {"created-after": "2024"}})]
    note = upstream.chat_requests()[1]["json"]["messages"][-1]["content"]
    assert "Missing required parameter for function 'search_docs': user_id" in note


def test_a_history_with_such_a_call_uses_the_model_names(client, upstream):
    arguments = json.dumps(ARGUMENTS)
    messages = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_s", "type": "function",
             "function": {"name": "search-docs", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "call_s", "content": "3 pages found"},
    ]
    upstream.script(Completion("Three pages."))
    assert summary(create(client, messages=messages))["content"] == "Three pages."
    call = (
        'search_docs(query_text="gateway", max_results=5, _top=2, user_id="u42", '
        '_2fa_code="0042", filter={"created-after":"2024-01-01","page size":10})'
    )
    sent = upstream.chat_requests()[0]["json"]["messages"]
    assert sent[1:] == [
        *USER,
        {"role": "assistant", "content": "@" + call},
        {"role": "user", "content": f"Function call: {call}\nReturned: 3 pages found\n"},
    ]


def test_tools_written_alike_are_refused_naming_both(client, upstream):
    both = {"type": "function", "function": {"name": "search_docs", "parameters": {"type": "object"}}}
    with pytest.raises(Exception) as error:
        create(client, tools=[SEARCH, both])
    assert "'search-docs' and 'search_docs' would both be called as 'search_docs'" in str(error.value)
