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


class _CallResultKeys(TypedDict):
    call_id: str
    name: str
    args: Optional[Dict[str, Any]]
    call: str


class CallResult(_CallResultKeys, total=False):
    """A call a `Toolbox` ran (`Turn.results`): its id, the function's qualified name, its
    arguments (None for a call that did not bind), ``call``, the call as its result block
    shows it, and either ``result`` or ``error``; a call held for confirmation has neither
    but ``state`` (``"held"``) and ``confirmation_id``. ``span`` and ``chars`` are where it
    stood in the answer (absent for an OpenAI ``tool_calls`` entry that could not be read).
    ``traceback``: for a call whose tool raised, the exception's traceback as Python prints
    it (the model reads only ``error``)."""

    result: Any
    error: str
    span: List[int]
    chars: List[int]
    confirmation_id: str
    state: str
    traceback: str


ParseRecord = Union[ParsedCall, ParsedUnboundCall, ParseErrorRecord, TextRecord, InvalidUtf8Record]
"""Any record of `parse` and `StreamParser`."""

__all__ = [
    "CallResult",
    "InvalidUtf8Record",
    "ParseErrorRecord",
    "ParseRecord",
    "ParsedCall",
    "ParsedUnboundCall",
    "TextRecord",
]
