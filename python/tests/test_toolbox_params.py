"""`Toolbox`: dataclasses and TypedDicts as parameters. Each is an object parameter with
its fields; the function gets an instance of the dataclass, or a dict for a TypedDict."""

import dataclasses
import datetime
import json
import sys
from typing import List, Optional, TypedDict

import pytest

import atfunc


def parameters(toolbox, name):
    [tool] = [t["function"] for t in json.loads(atfunc.render(toolbox.tools, format="openai"))
              if t["function"]["name"] == name]
    return tool["parameters"]


@dataclasses.dataclass
class Address:
    """Where a letter goes."""

    street: str
    number: int
    floor: Optional[int] = None


@dataclasses.dataclass
class Letter:
    to: Address
    sent: datetime.date
    text: str = "hello"
    cc: List[Address] = dataclasses.field(default_factory=list)
    note: Optional[str] = dataclasses.field(default=None, metadata={"description": "For the postman"})


def test_a_dataclass_is_an_object_parameter_and_arrives_as_an_instance():
    toolbox = atfunc.Toolbox()
    got = []

    @toolbox.tool(name="post.send")
    def send(letter: Letter) -> Letter:
        """Sends a letter."""
        got.append(letter)
        return letter

    schema = parameters(toolbox, "post_send")["properties"]["letter"]
    assert schema["type"] == "object"
    assert schema["required"] == ["to", "sent"]
    assert schema["properties"]["text"] == {"type": "string", "default": "hello"}
    assert schema["properties"]["note"]["description"] == "For the postman"
    address = schema["properties"]["to"]
    assert address["description"] == "Where a letter goes."
    assert address["required"] == ["street", "number"]
    assert schema["properties"]["cc"]["items"]["properties"]["number"]["type"] == "integer"

    turn = toolbox.run('@post.send(letter={"to": {"street": "Main", "number": 7}, '
                       '"sent": "2024-05-01", "cc": [{"street": "Side", "number": 2}]})')
    [record] = turn.results
    assert "result" in record, record
    [letter] = got
    assert letter == Letter(
        to=Address("Main", 7), sent=datetime.date(2024, 5, 1), cc=[Address("Side", 2)]
    )
    # Its result is written as JSON as any dataclass is.
    assert record["result"]["to"] == {"street": "Main", "number": 7, "floor": None}


def test_a_dataclass_field_the_model_gets_wrong_is_an_error_it_reads():
    toolbox = atfunc.Toolbox()

    @toolbox.tool
    def deliver(address: Address) -> str:
        """Delivers to an address."""
        return address.street

    [record] = toolbox.run('@deliver(address={"street": "Main", "number": 7, "flat": 2})').results
    assert "flat" in record["error"] and "street, number, floor" in record["error"], record
    [record] = toolbox.run('@deliver(address={"street": "Main", "number": 7})').results
    assert record["result"] == "Main"


class Query(TypedDict):
    city: str
    days: int


if sys.version_info >= (3, 11):
    from typing import NotRequired

    class Search(TypedDict):
        query: Query
        limit: NotRequired[int]
else:
    class Search(TypedDict, total=False):
        query: Query
        limit: int


def test_a_typeddict_is_an_object_parameter_and_arrives_as_a_dict():
    toolbox = atfunc.Toolbox()
    got = []

    @toolbox.tool
    def search(search: Search) -> int:
        """Searches."""
        got.append(search)
        return len(search)

    schema = parameters(toolbox, "search")["properties"]["search"]
    assert schema["type"] == "object"
    assert schema["properties"]["query"]["required"] == ["city", "days"]
    assert schema["properties"]["limit"] == {"type": "integer"}
    assert "limit" not in schema.get("required", [])
    [record] = toolbox.run('@search(search={"query": {"city": "Oslo", "days": 2}})').results
    assert record["result"] == 1, record
    assert got == [{"query": {"city": "Oslo", "days": 2}}]
    assert type(got[0]) is dict


@dataclasses.dataclass
class Node:
    name: str
    children: "List[Node]" = dataclasses.field(default_factory=list)


def test_a_dataclass_inside_itself_is_an_object_there():
    toolbox = atfunc.Toolbox()
    got = []

    @toolbox.tool
    def tree(root: Node) -> str:
        """Walks a tree."""
        got.append(root)
        return root.name

    schema = parameters(toolbox, "tree")["properties"]["root"]
    assert schema["required"] == ["name"]
    inner = schema["properties"]["children"]["items"]
    assert inner["type"] == "object" and not inner.get("properties"), inner
    [record] = toolbox.run('@tree(root={"name": "a", "children": [{"name": "b"}]})').results
    assert record["result"] == "a", record
    assert got == [Node("a", [Node("b")])]


@pytest.mark.parametrize("wrapped", ["optional", "list"])
def test_a_dataclass_in_an_optional_or_a_list_arrives_as_instances(wrapped):
    toolbox = atfunc.Toolbox()
    got = []
    if wrapped == "optional":
        def visit(address: Optional[Address] = None) -> str:
            """Visits."""
            got.append(address)
            return "ok"
        call = '@visit(address={"street": "A", "number": 1})'
        expected = Address("A", 1)
    else:
        def visit(address: List[Address]) -> str:  # type: ignore[misc]
            """Visits."""
            got.append(address)
            return "ok"
        call = '@visit(address=[{"street": "A", "number": 1}])'
        expected = [Address("A", 1)]
    toolbox.add_tool(visit)
    [record] = toolbox.run(call).results
    assert record["result"] == "ok", record
    assert got == [expected]
