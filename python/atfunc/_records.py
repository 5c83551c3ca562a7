"""The shapes of the records `parse` and `StreamParser` give, for type checkers.

At run time a record is a plain dict; these `TypedDict`s name its keys and their types.
`span` is `[start, end]` in bytes of the UTF-8 text, `chars` the same in characters.
"""

from typing import Any, Dict, List, Optional, TypedDict, Union


class ParsedCall(TypedDict):
    """A call bound to the tools: its function's qualified name and its arguments by
    parameter name, converted to the parameters' types."""

    name: str
    args: Dict[str, Any]
    body: Optional[str]
    span: List[int]
    chars: List[int]


class ParsedUnboundCall(TypedDict):
    """A call as written, parsed without tools: its positional and named arguments."""

    name: str
    positional: List[Any]
    named: Dict[str, Any]
    body: Optional[str]
    span: List[int]
    chars: List[int]


class ParseErrorRecord(TypedDict):
    """A span that looked like a call but did not parse, or a call that does not bind:
    the message for the model, and `raw`, the span's first 200 bytes."""

    error: str
    span: List[int]
    chars: List[int]
    raw: str


class TextRecord(TypedDict):
    """Text around the calls (`with_text=True`)."""

    text: str


class InvalidUtf8Record(TypedDict):
    """Bytes that are not UTF-8, in hex (`with_text=True`, bytes input)."""

    invalid_utf8: str
    span: List[int]
    chars: List[int]


ParseRecord = Union[ParsedCall, ParsedUnboundCall, ParseErrorRecord, TextRecord, InvalidUtf8Record]
"""Any record of `parse` and `StreamParser`."""

__all__ = [
    "InvalidUtf8Record",
    "ParseErrorRecord",
    "ParseRecord",
    "ParsedCall",
    "ParsedUnboundCall",
    "TextRecord",
]
