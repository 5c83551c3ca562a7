"""The formatting functions give the library's text for results."""

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
