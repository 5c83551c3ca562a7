"""`atfunc.Toolbox`: Python functions as tools, run by the crate's registry."""

import asyncio
import functools
import json
from pathlib import Path
from typing import Annotated, Dict, List, Literal, Optional

import pytest

import atfunc

TABLE = Path(__file__).resolve().parents[2] / "tests" / "data" / "toolbox" / "cases.json"


def openai_tools(toolbox):
    return {t["function"]["name"]: t["function"] for t in json.loads(
        atfunc.render(toolbox.tools, format="openai"))}


# ---------------------------------------------------------------- interfaces


def test_the_interface_comes_from_the_signature_hints_and_docstring():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def get_weather(
        city: str,
        unit: Literal["c", "f"] = "c",
        days: Annotated[int, "How many days ahead"] = 1,
        tags: Optional[List[str]] = None,
        exact: bool = False,
        ratio: float = 0.5,
        extra: Optional[Dict[str, int]] = None,
    ) -> dict:
        """Current weather of a city.

        More text that is not the description.

        Args:
            city: The city's name,
                as people write it.
            exact (bool): Whether to round.
        """
        return {}

    assert get_weather.__name__ == "get_weather"  # the decorator hands the function back
    tool = openai_tools(toolbox)["get_weather"]
    assert tool["description"] == "Current weather of a city."
    params = tool["parameters"]
    assert params["required"] == ["city"]
    props = params["properties"]
    assert props["city"]["type"] == "string"
    assert props["city"]["description"] == "The city's name, as people write it."
    assert props["unit"]["enum"] == ["c", "f"]
    assert props["days"]["type"] == "integer"
    assert props["days"]["description"] == "How many days ahead"
    assert props["tags"]["type"] == "array" and props["tags"]["items"]["type"] == "string"
    assert props["exact"]["type"] == "boolean"
    assert props["exact"]["description"] == "Whether to round."
    assert props["ratio"]["type"] == "number"
    assert props["extra"]["type"] == "object"
    # The prompt shows it as any other tool.
    assert "@get_weather(" in toolbox.prompt()


@pytest.mark.parametrize("style", ["google", "numpy", "rest"])
def test_parameter_lines_are_read_in_three_docstring_styles(style):
    docs = {
        "google": """Looks a word up.

            Args:
                word: The word to find.
            """,
        "numpy": """Looks a word up.

            Parameters
            ----------
            word : str
                The word to find.
            """,
        "rest": """Looks a word up.

            :param word: The word to find.
            """,
    }
    toolbox = atfunc.Toolbox()

    def lookup(word: str) -> str:
        return word

    lookup.__doc__ = docs[style]
    toolbox.add_tool(lookup, name="dict.lookup")
    tool = openai_tools(toolbox)["dict_lookup"]
    assert tool["description"] == "Looks a word up."
    assert tool["parameters"]["properties"]["word"]["description"] == "The word to find."


def test_name_description_and_args_may_be_given():
    toolbox = atfunc.Toolbox()

    def order(size, count=1):
        return f"{count} x {size}"

    toolbox.add_tool(order, name="shop.order", description="Orders shirts.", args={
        "size": {"type": "string", "description": "Size.", "choices": ["S", "M", "L"],
                 "parser": str.upper},
        "count": {"type": "integer", "description": "How many.", "min": 1, "max": 5},
    })
    tool = openai_tools(toolbox)["shop_order"]
    assert tool["description"] == "Orders shirts."
    assert tool["parameters"]["required"] == ["size"]
    turn = toolbox.run('@shop.order("m", count=2) @shop.order("s", count=9)')
    assert turn.results[0]["result"] == "2 x M"
    assert "count" in turn.results[1]["error"] and "5" in turn.results[1]["error"]


def test_the_prompts_example_call_never_runs_as_written():
    toolbox = atfunc.Toolbox()
    sent = []

    @toolbox.tool
    def send_email(to: str, body: str = "") -> str:
        """Send an email."""
        sent.append(to)
        return "sent"

    prompt = toolbox.prompt()
    example = prompt.split("for example:\n", 1)[1].splitlines()[0]
    assert example == '@send_email("<to>", body="<body>")'
    turn = toolbox.run(example)
    assert sent == []
    assert "is a placeholder" in turn.results[0]["error"], turn.results
    # With values the same call runs.
    assert toolbox.run('@send_email("ann@example.com")').results[0]["result"] == "sent"
    assert sent == ["ann@example.com"]


def test_openai_tools_are_python_objects():
    toolbox = atfunc.Toolbox()

    @toolbox.tool(name="weather.get")
    def get(city: str) -> str:
        """Current weather."""
        return city

    tools = toolbox.openai_tools()
    assert tools == json.loads(atfunc.render(toolbox.tools, format="openai"))
    assert tools[0]["type"] == "function"
    assert tools[0]["function"]["name"] == "weather_get"
    assert tools[0]["function"]["parameters"]["required"] == ["city"]
    # A call under that name is read back.
    turn = toolbox.run_tool_calls([{"id": "c1", "type": "function", "function": {
        "name": "weather_get", "arguments": '{"city": "Oslo"}'}}])
    assert turn.results[0]["result"] == "Oslo"


def test_an_invalid_definition_raises_the_loaders_error():
    toolbox = atfunc.Toolbox(strict=True)
    with pytest.raises(atfunc.ToolsError) as caught:
        toolbox.add_tool(lambda x: x, name="bad.tool", args={"x": {"type": "nope"}})
    assert "unknown type 'nope'" in str(caught.value)
    assert caught.value.problems
    with pytest.raises(atfunc.ToolsError, match="must be a JSON Schema object"):
        toolbox.add_tool(lambda x: x, name="bad.tool", args={"x": "string"})
    # The toolbox is as it was.
    assert toolbox.tools.names == []


def test_a_tool_that_is_refused_leaves_the_toolbox_as_it_was():
    toolbox = atfunc.Toolbox()
    toolbox.add_tool(lambda a, b: a + b, name="math.add", description="Adds.",
                     args={"a": {"type": "integer"}, "b": {"type": "integer"}})
    # Toolbox names match ignoring case, so `Math` is the toolbox `math` again: the
    # loader refuses it.
    with pytest.raises(atfunc.ToolsError) as caught:
        toolbox.add_tool(lambda a: -a, name="Math.neg", description="Negates.",
                         args={"a": {"type": "integer"}})
    assert "differs only in case" in str(caught.value)
    assert toolbox.tools.names == ["math.add"]
    assert toolbox.run("@math.add(1, 2)").results[0]["result"] == 3


def test_optional_without_a_default_is_not_required_and_gets_none():
    toolbox = atfunc.Toolbox()

    @toolbox.tool(name="notes.add")
    def add(text: str, tag: Optional[str]) -> str:
        return f"{text}:{tag}"

    assert openai_tools(toolbox)["notes_add"]["parameters"]["required"] == ["text"]
    assert toolbox.run('@notes.add("hi")').results[0]["result"] == "hi:None"


def test_a_pydantic_model_is_a_parameter():
    pydantic = pytest.importorskip("pydantic", reason="pydantic is not installed")

    class Address(pydantic.BaseModel):
        street: str
        number: int

    class Letter(pydantic.BaseModel):
        to: Address
        text: str = "hello"

    toolbox = atfunc.Toolbox()

    @toolbox.tool(name="post.send")
    def send(letter: Letter) -> Letter:
        assert isinstance(letter, Letter) and isinstance(letter.to, Address)
        return letter

    turn = toolbox.run('@post.send(letter={"to": {"street": "Main", "number": "7"}})')
    [record] = turn.results
    assert record["result"] == {"to": {"street": "Main", "number": 7}, "text": "hello"}, record

    @toolbox.tool(name="post.forward")
    def forward(to: Annotated[Optional[Address], "Where to"] = None) -> str:
        return f"{type(to).__name__} {to.street if to else ''}"

    turn = toolbox.run('@post.forward(to={"street": "Side", "number": 1}) @post.forward()')
    assert [r["result"] for r in turn.results] == ["Address Side", "NoneType "]


# ---------------------------------------------------------------- running


def test_a_turn_holds_the_records_the_text_and_the_role():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    turn = toolbox.run('Sure: @ADD(2, b="3")')
    assert turn.role == "user"
    assert turn.message == {"role": "user", "content": turn.text}
    [record] = turn.results
    assert record["name"] == "add" and record["args"] == {"a": 2, "b": 3}
    assert record["result"] == 5
    assert record["span"] == [6, 20] and record["chars"] == [6, 20]
    # The call as the model wrote it, the result as the library formats it.
    assert turn.text == 'Function call: ADD(2, b="3")\nReturned: 5\n'
    assert not toolbox.run("No calls.")


def test_a_repeated_call_ends_the_answer_unless_repeats_are_kept():
    ran = []

    def add(a: int, b: int) -> int:
        """Adds."""
        ran.append((a, b))
        return a + b

    # A model that cannot stop: its calls, again (spelled otherwise), and one cut short.
    answer = "Süß: @add(1, 2) @add(2, 2)\n@ADD(a=1, b=2) @add(2, 2) @add(1,"
    toolbox = atfunc.Toolbox()
    toolbox.add_tool(add)
    turn = toolbox.run(answer)
    assert [r["result"] for r in turn.results] == [3, 4] and ran == [(1, 2), (2, 2)]
    assert answer[:turn.repeated_at] == "Süß: @add(1, 2) @add(2, 2)\n"
    # Streamed, in pieces of three characters: the same.
    ran.clear()
    stream = toolbox.stream()
    for i in range(0, len(answer), 3):
        stream.feed(answer[i:i + 3])
    streamed = stream.finish()
    assert (streamed.text, streamed.repeated_at) == (turn.text, turn.repeated_at)
    assert ran == [(1, 2), (2, 2)]
    assert toolbox.run("@add(1, 2) @add(1, 3)").repeated_at is None

    keeping = atfunc.Toolbox(keep_repeated_calls=True)
    keeping.add_tool(add)
    kept = keeping.run(answer)
    assert len(kept.results) == 5 and "error" in kept.results[-1]
    assert kept.repeated_at is None


def test_run_runs_at_most_max_calls_of_one_answer():
    ran = []

    def ping(n: int) -> int:
        """Pings."""
        ran.append(n)
        return n

    # As the gateway: 1000 calls by default; the answer ends where the next one begins.
    answer = "Süß " + "".join(f"@ping({n}) " for n in range(1003))
    toolbox = atfunc.Toolbox()
    toolbox.add_tool(ping)
    turn = toolbox.run(answer)
    # The calls run several at once: which one appends first is theirs to decide.
    assert len(turn.results) == 1000 and sorted(ran) == list(range(1000))
    assert answer[turn.stopped_at:].startswith("@ping(1000) ")
    assert toolbox.run("@ping(1) @ping(2)").stopped_at is None

    ran.clear()
    small = atfunc.Toolbox(max_calls=2)
    small.add_tool(ping)
    turn = small.run("a @ping(1) b @ping(2) c @ping(3) d")
    assert sorted(ran) == [1, 2] and turn.stopped_at == len("a @ping(1) b @ping(2) c ")
    with pytest.raises(ValueError, match="max_calls"):
        atfunc.Toolbox(max_calls=-1)


@pytest.mark.parametrize("option, value", [
    ("max_concurrency", -1), ("max_concurrency", 0), ("max_concurrency", 10**20),
    ("truncate_length", 0), ("truncate_length", -5), ("truncate_length", 10**20),
    ("max_calls", -1), ("max_calls", 10**20),
])
def test_a_count_out_of_range_raises_a_value_error_naming_it(option, value):
    with pytest.raises(ValueError, match=option):
        atfunc.Toolbox(**{option: value})
    if option != "max_calls":  # the others may be set later too
        toolbox = atfunc.Toolbox()
        with pytest.raises(ValueError, match=option):
            setattr(toolbox, option, value)
        assert getattr(toolbox, option) == {"max_concurrency": 4, "truncate_length": 5000}[option]


def test_a_partial_is_a_tool_named_and_described_by_its_function():
    toolbox = atfunc.Toolbox()

    def greet(name: str, greeting: str = "hello", mark: Literal["!", "."] = "!") -> str:
        """Greets someone.

        Args:
            name: Who is greeted.
            mark: How it ends.
        """
        return f"{greeting} {name}{mark}"

    async def shout(words: str, times: int) -> str:
        """Shouts."""
        return (words.upper() + " ") * times

    toolbox.add_tool(functools.partial(greet, greeting="hi"))
    toolbox.add_tool(functools.partial(functools.partial(shout, times=2)), name="shout")
    tools = openai_tools(toolbox)
    assert list(tools) == ["greet", "shout"]
    greet_tool = tools["greet"]
    assert greet_tool["description"] == "Greets someone."
    params = greet_tool["parameters"]
    assert params["properties"]["name"] == {"type": "string", "description": "Who is greeted."}
    assert params["properties"]["mark"]["enum"] == ["!", "."]
    # What the partial fixed is a default the model may change.
    assert params["properties"]["greeting"]["default"] == "hi"
    assert params["required"] == ["name"]
    turn = toolbox.run('@greet("Ann") @greet("Bo", mark=".") @shout("hey")')
    assert [r.get("result") for r in turn.results] == ["hi Ann!", "hi Bo.", "HEY HEY "]

    class Greeter:
        """Greets."""

        def __call__(self, name: str) -> str:
            return f"hello {name}"

    # A callable without a name of its own is named by the caller.
    with pytest.raises(atfunc.ToolsError, match=r"name=\.\.\."):
        toolbox.add_tool(Greeter())
    toolbox.add_tool(Greeter(), name="greeter")
    assert toolbox.run('@greeter("Cy")').results[0]["result"] == "hello Cy"


def test_a_raising_tool_gives_an_error_without_a_traceback():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def lookup(key: str) -> str:
        """Looks up."""
        return {"a": "1"}[key]

    [record] = toolbox.run('@lookup("zz")').results
    assert record["error"] == "KeyError: 'zz'"
    text = toolbox.run('@lookup("zz")').text
    assert "Traceback" not in text and "toolbox.py" not in text and "KeyError: 'zz'" in text


def test_a_tool_that_runs_an_answer_itself_gets_an_error_not_a_crash():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def again() -> str:
        """Runs another answer from inside a call."""
        return toolbox.run("@again()").text

    [record] = toolbox.run("@again()").results
    assert record["error"].startswith("RuntimeError: a Toolbox cannot run an answer from inside")
    # The toolbox still works.
    assert toolbox.run("no calls").results == []


def test_results_are_truncated_by_default():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def big() -> str:
        """Much text."""
        return "x" * 6000

    turn = toolbox.run("@big()")
    assert toolbox.truncate_length == 5000
    assert "x" * 5000 in turn.text and "x" * 5001 not in turn.text
    toolbox.truncate_length = 10
    assert "x" * 11 not in toolbox.run("@big()").text
    with pytest.raises(ValueError, match="truncate_length"):
        atfunc.Toolbox(truncate_length=0)


def test_async_tools_run_in_run_and_on_the_callers_loop_in_run_async():
    toolbox = atfunc.Toolbox()
    loops = []

    @toolbox.tool
    async def wait(seconds: float) -> str:
        """Waits."""
        await asyncio.sleep(seconds)
        loops.append(asyncio.get_running_loop())
        return "waited"

    assert toolbox.run("@wait(0.01)").results[0]["result"] == "waited"

    async def main():
        turn = await toolbox.run_async("@wait(0.01) @wait(0)")
        return turn, asyncio.get_running_loop()

    turn, loop = asyncio.run(main())
    assert [r["result"] for r in turn.results] == ["waited", "waited"]
    assert loops[-2:] == [loop, loop]

    async def inside_a_loop():
        # `run` (not `run_async`) called from a coroutine still runs an async tool.
        return toolbox.run("@wait(0)")

    assert asyncio.run(inside_a_loop()).results[0]["result"] == "waited"


def test_answers_run_async_at_once_and_the_loop_goes_on():
    toolbox = atfunc.Toolbox()
    arrived = {}

    @toolbox.tool
    async def meet(me: str, other: str) -> str:
        """Waits until the other has arrived too."""
        arrived.setdefault(me, asyncio.Event()).set()
        await arrived.setdefault(other, asyncio.Event()).wait()
        return f"{me} met {other}"

    async def main():
        # Each answer waits for the other: run one after the other, neither would end.
        both = asyncio.gather(toolbox.run_async('@meet("a", "b")'),
                              toolbox.run_async('@meet("b", "a")'))
        return await asyncio.wait_for(both, timeout=60)

    first, second = asyncio.run(main())
    assert first.results[0]["result"] == "a met b"
    assert second.results[0]["result"] == "b met a"


def test_calls_run_while_the_answer_still_streams():
    toolbox = atfunc.Toolbox()
    ran = []

    @toolbox.tool
    def note(text: str) -> str:
        """Notes."""
        ran.append(text)
        return "ok"

    stream = toolbox.stream()
    assert stream.feed('First @note("a') == []
    [record] = stream.feed('") and then ')
    assert record["result"] == "ok" and ran == ["a"]
    [record] = stream.feed('@note("b") and the answer goes on')
    assert ran == ["a", "b"] and record["args"] == {"text": "b"}
    turn = stream.finish()
    assert ran == ["a", "b"]
    assert [r["args"] for r in turn.results] == [{"text": "a"}, {"text": "b"}]
    assert turn.text == toolbox.run('First @note("a") and then @note("b") and the answer goes on').text

    async def fed():
        stream = toolbox.stream()
        await stream.feed_async('@note("c")')
        return await stream.finish_async()

    assert asyncio.run(fed()).results[0]["args"] == {"text": "c"}


def test_events_output_filters_and_confirmation():
    toolbox = atfunc.Toolbox()
    events = []
    toolbox.on_event(lambda e: events.append((e["event"], e.get("function"))))

    @toolbox.tool(name="files.delete", confirm=True)
    def delete(path: str) -> str:
        """Deletes."""
        return f"deleted {path}"

    @toolbox.tool(name="files.read")
    def read(path: str) -> str:
        """Reads."""
        return "secret=42"

    toolbox.add_output_filter(lambda name, args, text: text.replace("42", "**"))
    turn = toolbox.run('@files.read("a") @files.delete("b")')
    assert turn.results[0]["result"] == "secret=**"
    held = turn.results[1]
    assert "confirmation_id" in held
    assert events == [("start", "files.read"), ("success", "files.read"),
                      ("start", "files.delete"), ("held", "files.delete")]
    assert [h["name"] for h in toolbox.held()] == ["files.delete"]
    confirmed = toolbox.confirm(held["confirmation_id"])
    assert confirmed["result"] == "deleted b" and "deleted b" in confirmed["text"]
    assert toolbox.held() == []
    with pytest.raises(ValueError):
        toolbox.reject(held["confirmation_id"])

    asked = []
    toolbox.set_confirmer(lambda call: asked.append(call["args"]) or "decline")
    [record] = toolbox.run('@files.delete("c")').results
    assert asked == [{"path": "c"}] and "declined" in record["error"]
    toolbox.set_confirmer("run")
    assert toolbox.run('@files.delete("d")').results[0]["result"] == "deleted d"


def test_records_convert_to_and_from_openai_messages():
    toolbox = atfunc.Toolbox()

    @toolbox.tool(name="weather.get")
    def get(city: str) -> dict:
        """Weather."""
        if city == "Nowhere":
            raise ValueError("no such city")
        return {"city": city, "temp": 21}

    turn = toolbox.run('@weather.get("Oslo") @weather.get("Nowhere") @weather.nope()')
    messages = toolbox.openai_messages(turn)
    assistant, ok, failed, unbound = messages
    assert assistant["role"] == "assistant"
    ids = [c["id"] for c in assistant["tool_calls"]]
    # The call that did not bind is kept under its written name, with its error.
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["weather_get"] * 2 + ["weather_nope"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo"}
    assert ok == {"role": "tool", "tool_call_id": ids[0], "content": '{"city":"Oslo","temp":21}'}
    assert failed["content"] == "Error: ValueError: no such city"
    assert unbound["tool_call_id"] == ids[2] and "Unknown function" in unbound["content"]

    # And back: the model's tool_calls run as atfunc calls.
    text = toolbox.tool_calls_text(assistant["tool_calls"][:2])
    assert text == '@weather.get(city="Oslo")\n@weather.get(city="Nowhere")'
    again = toolbox.run_tool_calls(assistant["tool_calls"][:2])
    assert [r.get("result") for r in again.results] == [{"city": "Oslo", "temp": 21}, None]


# ---------------------------------------------------------------- the shared table


def table_toolbox(table):
    # One call at a time, as the registry runs them by default: the table's events are in
    # the calls' order, which calls running at once keep only by chance.
    toolbox = atfunc.Toolbox(max_concurrency=1)

    def behaviour(kind):
        if kind == "add":
            return lambda a, b: a + b
        if kind == "shout":
            return lambda text: text.upper()
        if kind == "repeat":
            return lambda word, times: word * times
        if kind == "fail":
            def fail(reason):
                raise ValueError(reason)
            return fail
        if kind == "echo":
            return lambda **args: args
        raise AssertionError(kind)

    parsers = {(f, p) for f, p in table["parsers"]}
    for tool in table["tools"]:
        args = {}
        for name, spec in tool["args"].items():
            spec = dict(spec)
            if (tool["name"], name) in parsers:
                spec["parser"] = str.upper
            args[name] = spec
        toolbox.add_tool(behaviour(tool["behaviour"]), name=tool["name"],
                         description=tool["description"], args=args,
                         confirm=tool["name"] in table["confirm"])
    return toolbox


def hide_ids(value, ids):
    text = json.dumps(value)
    for i in ids:
        text = text.replace(i, "<id>")
    return json.loads(text)


@pytest.mark.parametrize("case", json.loads(TABLE.read_text())["cases"], ids=lambda c: c["name"])
def test_python_tools_give_the_outcomes_of_the_table(case):
    table = json.loads(TABLE.read_text())
    toolbox = table_toolbox(table)
    if "truncate_length" in case:
        toolbox.truncate_length = case["truncate_length"]
    events = []
    toolbox.on_event(lambda e: events.append(f"{e['event']} {e.get('function', '')}"))
    turn = toolbox.run(case["answer"])
    ids = [r["confirmation_id"] for r in turn.results if "confirmation_id" in r]
    # `traceback` is Python's own (test_toolbox_failures.py); the table is the registry's.
    records = [{k: v for k, v in r.items()
                if k not in ("call_id", "span", "chars", "call", "traceback")}
               for r in turn.results]
    assert hide_ids(records, ids) == case["records"]
    assert hide_ids(turn.text, ids) == case["text"]
    assert events == case["events"]
