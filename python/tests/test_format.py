"""The formatting functions give the library's text for results."""

import json

import atfunc


def test_format_results_writes_one_block_per_call():
    text = atfunc.format_results([
        {"call": 'weather.get("Paris")', "result": {"temp": 21}},
        {"name": "weather.get", "args": {"city": "Oslo"}, "result": "sunny\n"},
        {"call": "weather.get()", "error": "Missing required parameter"},
    ])
    assert text == (
        'Function call: weather.get("Paris")\nReturned: {"temp":21}\n\n'
        'Function call: weather.get(city="Oslo")\nReturned: sunny\n\n'
        "Function call: weather.get()\nReturned: Error: Missing required parameter\n"
    )


def test_a_bound_call_record_of_parse_formats_as_its_call():
    record = atfunc.parse('@a.b(x=1)', [{"name": "a.b", "parameters": {
        "type": "object", "properties": {"x": {"type": "integer"}}}}])[0]
    assert atfunc.call_text(record["name"], record["args"]) == "a.b(x=1)"
    assert atfunc.format_results([{**record, "result": 2}]) == (
        "Function call: a.b(x=1)\nReturned: 2\n"
    )


def test_truncate_and_fit_json():
    assert atfunc.truncate("héllo wörld", 5) == "héllo… [truncated 6 more characters]"
    assert atfunc.truncate("short") == "short"
    fitted = atfunc.fit_json({"items": ["word"] * 1000}, 200)
    assert fitted["truncated"] is True
    assert atfunc.fit_json([1, 2], 200) == [1, 2]


def test_an_error_record_of_parse_formats_as_a_failed_call():
    tools = [{"name": "a.b", "parameters": {"type": "object",
              "properties": {"x": {"type": "integer"}}, "required": ["x"]}}]
    records = atfunc.parse('@a.b() and @a.b(x=', tools)
    assert [sorted(r) for r in records] == [["chars", "error", "raw", "span"]] * 2
    text = atfunc.format_results(records)
    assert text == (
        "Function call: a.b()\n"
        f"Returned: Error: {records[0]['error']}\n\n"
        "Function call: a.b(x=\n"
        f"Returned: Error: {records[1]['error']}\n"
    )
    assert "Missing required parameter for function 'a.b': x" in text


def test_a_record_without_a_result_does_not_read_as_null():
    text = atfunc.format_results([{"name": "a.b", "args": {"x": 1}}])
    assert text == "Function call: a.b(x=1)\nReturned: (no result)\n"
    # A result that is None is one: the function returned nothing.
    assert atfunc.format_results([{"call": "a.b()", "result": None}]) == (
        "Function call: a.b()\nReturned: null\n"
    )


def test_format_results_truncates_results_by_default():
    long = "x" * 6000
    text = atfunc.format_results([{"call": "a.b()", "result": long}])
    assert text == f"Function call: a.b()\nReturned: {atfunc.truncate(long)}\n"
    assert text.endswith("[truncated 1,000 more characters]\n")
    short = atfunc.format_results([{"call": "a.b()", "result": {"k": long}}], limit=20)
    compact = json.dumps({"k": long}, separators=(",", ":"))
    assert short == f"Function call: a.b()\nReturned: {atfunc.truncate(compact, 20)}\n"
    whole = atfunc.format_results([{"call": "a.b()", "result": long}], limit=None)
    assert whole == f"Function call: a.b()\nReturned: {long}\n"
    # An error is kept whole up to 1000 characters, however small the limit.
    error = "e" * 900
    assert atfunc.format_results([{"call": "a.b()", "error": error}], limit=10) == (
        f"Function call: a.b()\nReturned: Error: {error}\n"
    )
