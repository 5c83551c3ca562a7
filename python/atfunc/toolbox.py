"""Python functions as tools: `Toolbox`, the turn it gives, and its streaming form.

A function's interface comes from its signature, type hints and docstring (or from an
explicit ``args`` dict) and is written as a tool definition that the crate's loader reads
and validates. Calls run in the crate's own registry, exactly as Rust tools do; only the
function itself is Python.
"""

from __future__ import annotations

import asyncio
import collections.abc
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import datetime
import enum
import functools
import inspect
import json
import logging
import pathlib
import re
import sys
import threading
import traceback
import types
import typing
import warnings
from typing import (
    Annotated,
    Any,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
    overload,
)

from ._atfunc import Tools, ToolsError, _Cancel, _Registry, format_results, grammar, render
from ._records import CallResult, TextRecord

# A function given as a tool: the decorator gives it back as it was, types and all.
_Fn = TypeVar("_Fn", bound=Callable[..., Any])

__all__ = ["Toolbox", "Turn", "ToolStream"]

# A tool that raises: its traceback is logged here (level ERROR), and kept in its record
# (``record["traceback"]``); the model reads only ``TypeName: message``.
_log = logging.getLogger("atfunc")

# The event loop that async tools run on while `run_async` runs the answer in a worker
# thread: the caller's own loop, so a tool may use what lives there.
_state = threading.local()

# Set inside a tool's call: a toolbox cannot run an answer from there (the run that
# called the tool waits on it).
_in_tool: "contextvars.ContextVar[bool]" = contextvars.ContextVar("atfunc_in_tool", default=False)

_NESTED = (
    "a Toolbox cannot run an answer from inside one of its tools: return the result and "
    "run the next answer after this one"
)


@dataclasses.dataclass
class Turn:
    """The calls of one answer and what to send back.

    ``results``: one record per call, in the order written: ``{"call_id", "name",
    "args", "result" | "error", "span", "chars", "call"}`` (``call``: the call as its result
    block shows it; a call held for confirmation has ``"state": "held"`` and
    ``confirmation_id`` instead of ``result`` or ``error``; ``traceback`` for a call whose
    tool raised); ``text``: the result blocks the model reads on its next turn, each
    result truncated at the toolbox's ``truncate_length``; ``role``: the role of the
    message ``text`` goes in (``"user"``: a model without native tool calls reads
    results there); ``repeated_at``: when a call repeated an earlier one of the same answer
    and so ended it, where that call began, in characters (``answer[:repeated_at]`` is
    what the model's turn should keep in the history), else None; ``records``: the
    answer in order, its text as ``{"text": ...}`` records between the records of its
    calls (up to a repeated call); ``stopped_at``: when `Toolbox.run` ended an answer of
    more than ``max_calls`` calls, where the first call past the bound began, in
    characters (it and what follows did not run), else None."""

    results: List[CallResult]
    text: str
    role: str = "user"
    repeated_at: Optional[int] = None
    records: List[Union[CallResult, TextRecord]] = dataclasses.field(default_factory=list)
    stopped_at: Optional[int] = None

    @property
    def prose(self) -> str:
        """The answer without its calls: the text of ``records``, joined."""
        return "".join(r["text"] for r in self.records if "text" in r)  # type: ignore[typeddict-item]

    @property
    def message(self) -> Dict[str, str]:
        """``{"role": role, "content": text}``, the message for the next turn."""
        return {"role": self.role, "content": self.text}

    def __bool__(self) -> bool:
        """Whether the answer had any call."""
        return bool(self.results)


class ToolStream:
    """An answer fed as it streams: each call runs as soon as it is complete.

    ``feed(chunk)`` returns the records of the calls the chunk completed (with
    ``with_text=True``, the text around them too, as ``{"text": ...}`` records, in the
    answer's order); ``finish()`` returns the `Turn` of the whole answer, whose
    ``records`` are every record the stream gave, those of the end last. ``feed_async``
    and ``finish_async`` do the same from a coroutine, async tools on the caller's event
    loop; cancelling them cancels the calls under way and ends the stream."""

    def __init__(self, native: Any, cancel: Any, done: Callable[[Turn], Turn]) -> None:
        self._native = native
        self._cancel = cancel
        self._done = done  # the toolbox's: remembers the turn's calls

    def feed(self, chunk: str) -> List[Dict[str, Any]]:
        """The next piece of the answer; the records of the calls it completed."""
        _not_in_a_tool()
        return self._native.feed(chunk)

    def finish(self) -> Turn:
        """The end of the answer: the turn with every call of it."""
        _not_in_a_tool()
        return self._done(Turn(**self._native.finish()))

    async def feed_async(self, chunk: str) -> List[Dict[str, Any]]:
        """`feed` from a coroutine: calls run in a worker thread."""
        _not_in_a_tool()
        return await _in_worker(self._cancel, self._native.feed, chunk)

    async def finish_async(self) -> Turn:
        """`finish` from a coroutine."""
        _not_in_a_tool()
        return self._done(Turn(**await _in_worker(self._cancel, self._native.finish)))


def _refused_call(entry: Any, message: str) -> CallResult:
    """The record of an OpenAI ``tool_calls`` entry that could not be read."""
    function = entry.get("function") if isinstance(entry, Mapping) else None
    function = function if isinstance(function, Mapping) else {}
    name = str(function.get("name") or "")
    arguments = function.get("arguments")
    arguments = arguments if isinstance(arguments, str) else json.dumps(arguments, default=_jsonable)
    return {"call_id": _entry_id(entry), "name": name, "args": None, "error": message,
            "call": f"{name}({arguments})"}


def _entry_id(entry: Any) -> str:
    call_id = entry.get("id") if isinstance(entry, Mapping) else None
    return str(call_id or "")


def _with_id(record: CallResult, entry: Any) -> CallResult:
    """``record`` under the id of the OpenAI ``tool_calls`` entry it answers (its own
    when the entry has none)."""
    call_id = _entry_id(entry)
    return {**record, "call_id": call_id} if call_id else dict(record)  # type: ignore[return-value]


def _call_key(entry: Any, line: str) -> str:
    """What makes two OpenAI ``tool_calls`` entries the same call: the function's name and
    the arguments, their keys in any order (``line``, the call's text, when they cannot be
    read)."""
    function = entry.get("function") if isinstance(entry, Mapping) else None
    function = function if isinstance(function, Mapping) else {}
    arguments = function.get("arguments")
    try:
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        return f"{function.get('name')}\0{json.dumps(arguments, sort_keys=True, default=_jsonable)}"
    except (TypeError, ValueError):
        return line


def _not_in_a_tool() -> None:
    if _in_tool.get():
        raise RuntimeError(_NESTED)


async def _in_worker(cancel: Any, work: Callable[..., Any], *args: Any) -> Any:
    """Runs ``work`` in a worker thread; async tools it calls run on this loop. When the
    caller is cancelled, so is the run (``cancel``): its calls under way are cancelled
    before the cancellation goes on."""
    loop = asyncio.get_running_loop()

    def run() -> Any:
        _state.loop = loop
        try:
            return work(*args)
        finally:
            _state.loop = None

    running = loop.run_in_executor(None, run)
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        cancel.cancel()
        # The run ends at once; waiting for it lets the cancellation of its async calls
        # reach this loop before the caller goes on.
        await asyncio.wait([running])
        if not running.cancelled():
            running.exception()  # "the run was cancelled": expected, not to be logged
        raise


# The loop async tools run on when no caller's loop is at hand (`run`, `stream`): one
# for the package, in a daemon thread, made at the first call that needs it.
_loop_lock = threading.Lock()
_own_loop: Optional[asyncio.AbstractEventLoop] = None


def _tool_loop() -> asyncio.AbstractEventLoop:
    """The loop an async tool's coroutine runs on."""
    loop: Optional[asyncio.AbstractEventLoop] = getattr(_state, "loop", None)
    if loop is not None:
        return loop
    global _own_loop
    with _loop_lock:
        if _own_loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="atfunc async tools", daemon=True
            ).start()
            # Kept once a thread runs it: Ctrl-C landing before leaves no loop that every
            # later async call would wait on for ever.
            _own_loop = loop
        return _own_loop


def _answer(value: Any) -> "tuple[Optional[bool], Any]":
    """A tool's return value as the registry reads it: ``(True, json_text)``."""
    return True, json.dumps(value, default=_jsonable)


def _failure(error: BaseException) -> "tuple[Optional[bool], Any]":
    """An exception as the model reads it: ``(False, "TypeName: message")``; one whose
    ``str`` raises is named by its type all the same."""
    kind = type(error).__name__
    try:
        message = str(error)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as unreadable:
        message = f"(its message could not be read: str() raised {type(unreadable).__name__})"
    return False, f"{kind}: {message}" if message else kind


def _outcome(call: Callable[[], Any], name: str) -> "tuple[Any, ...]":
    """What a call of the tool ``name`` gives the registry, whatever happens in it: its
    answer, ``(False, "TypeName: message", traceback)`` for any exception, or ``(None,
    exception)`` for `KeyboardInterrupt` and `SystemExit`, which stop the run and are
    raised to its caller. Any exception means a `BaseException` outside `Exception` too (a
    library's own cancellation, `GeneratorExit`) and one raised writing the answer: a call
    always gets an answer, or the run would wait on it for ever."""
    try:
        return _answer(call())
    except BaseException as error:
        return _raised(error, name)


def _raised(error: BaseException, name: str) -> "tuple[Any, ...]":
    """The answer of a call of the tool ``name`` that raised ``error`` (see `_outcome`).
    The model reads the message; the traceback goes to the record and the log."""
    if isinstance(error, (KeyboardInterrupt, SystemExit)):
        return None, error
    try:
        ok, message = _failure(error)  # the model reads it and may correct its call
        return ok, message, _logged(error, name, message)
    except (KeyboardInterrupt, SystemExit) as stop:  # raised by its `str`, or in a handler
        return None, stop


def _logged(error: BaseException, name: str, message: str) -> str:
    """Logs the failure of a call of ``name`` on the logger ``atfunc`` (ERROR, with the
    exception), and gives its traceback as text. The frames of this module, which only
    started the call, are left out: the traceback begins in the tool."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    tb = tb or error.__traceback__
    _log.error("tool %r failed: %s", name, message, exc_info=(type(error), error, tb))
    return "".join(traceback.format_exception(type(error), error, tb))


# What starts a call whose future the registry holds already (None: it is done), so that
# Ctrl-C landing while the call starts on the caller's thread never leaves a call under
# way that nothing can cancel: the registry cancels the future, and a call not yet begun
# does not begin.
_Start = Optional[Callable[[], Any]]


async def _guarded(make: Callable[[], Any], name: str) -> "tuple[Any, ...]":
    """An async tool's call (``make()`` gives its coroutine), as `_outcome` says; raised
    here, `KeyboardInterrupt` and `SystemExit` would stop the event loop instead. A
    `CancelledError` goes on: the run gave the call up, and its task ends cancelled."""
    _in_tool.set(True)
    try:
        value = await make()
    except asyncio.CancelledError:
        raise
    except BaseException as error:
        return _raised(error, name)
    return _outcome(lambda: value, name)


def _on_loop(
    make: Callable[[], Any], loop: asyncio.AbstractEventLoop, name: str
) -> "tuple[concurrent.futures.Future[Any], _Start]":
    """An async tool's call on ``loop``: its future, and what starts it. Cancelling the
    future before the call begins keeps it from beginning, and after, cancels its task
    (the tool gets `CancelledError` at its next ``await``)."""
    future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()

    def settle(task: "asyncio.Task[Any]") -> None:
        if task.cancelled():
            future.cancel()
            return
        error = task.exception()
        try:
            if error is None:
                future.set_result(task.result())
            else:
                future.set_exception(error)
        except concurrent.futures.InvalidStateError:  # given up meanwhile
            pass

    def begin() -> None:  # on the loop
        if future.cancelled():
            return
        try:
            task = loop.create_task(_guarded(make, name))
        except BaseException as error:  # the loop is shutting down: an answer all the same
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                future.set_exception(error)
            return
        task.add_done_callback(settle)
        future.add_done_callback(
            lambda given: given.cancelled() and loop.call_soon_threadsafe(task.cancel)
        )

    return future, lambda: loop.call_soon_threadsafe(begin)


def _in_thread(
    call: Callable[[], Any], name: str
) -> "tuple[concurrent.futures.Future[Any], _Start]":
    """A plain tool's call, in a thread of its own so that the run can stop waiting for
    it: its future, and what starts the thread. A thread cannot be stopped from outside,
    so one past its time limit runs on (as a daemon: it does not keep the program alive)
    and what it returns is dropped; cancelled before it begins, it does not begin."""
    future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
    loop = _tool_loop() if getattr(_state, "loop", None) is not None else None

    def resolved() -> Any:
        value = call()
        if not inspect.isawaitable(value):
            return value
        if loop is not None:
            return asyncio.run_coroutine_threadsafe(_awaited(value), loop).result()
        return asyncio.run(_awaited(value))

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        _in_tool.set(True)
        future.set_result(_outcome(resolved, name))

    return future, threading.Thread(target=work, name=f"atfunc tool {name}", daemon=True).start


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine to await (an ``async def`` function, or
    an object whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)
    )


def _jsonable(value: Any) -> Any:
    """A result value ``json.dumps`` cannot write, as a value it can."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # pydantic
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


# ---------------------------------------------------------------- interfaces


def _description_and_params(doc: Optional[str]) -> "tuple[str, Dict[str, str]]":
    """The first paragraph of a docstring, and the parameter lines it documents in the
    Google (``Args:``), numpy (``Parameters``) or reST (``:param x:``) style."""
    if not doc:
        return "", {}
    doc = inspect.cleandoc(doc)
    first = doc.split("\n\n", 1)[0]
    if re.match(r"^\s*(Args|Arguments|Parameters|Returns|Raises|:param)\b", first):
        first = ""
    description = " ".join(line.strip() for line in first.splitlines()).strip()
    params: Dict[str, str] = {}
    for line_match in re.finditer(r"^\s*:param\s+(?:[^:]*\s)?(\w+):\s*(.+)$", doc, re.M):
        params[line_match.group(1)] = line_match.group(2).strip()
    lines = doc.splitlines()
    section = None
    current = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if re.match(r"^(Args|Arguments|Parameters):?$", stripped):
            section = "google" if stripped.endswith(":") else "numpy"
            current = None
            continue
        if section is None:
            continue
        if section == "numpy" and re.match(r"^-+$", stripped):
            continue
        if not stripped:
            current = None
            if section == "google":
                continue
        if re.match(r"^(Returns|Raises|Yields|Examples?|Notes?)\b", stripped):
            section = None
            continue
        indent = len(line) - len(line.lstrip())
        if section == "google":
            match = re.match(r"^(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", stripped)
            if match and (current is None or indent <= current[1]):
                current = (match.group(1), indent)
                params[current[0]] = match.group(3).strip()
            elif current and stripped:
                params[current[0]] = (params[current[0]] + " " + stripped).strip()
        else:
            name = re.match(r"^(\w+)\s*(:.*)?$", stripped)
            if name and indent == 0:
                current = (name.group(1), indent)
                params[current[0]] = ""
            elif current and stripped:
                params[current[0]] = (params[current[0]] + " " + stripped).strip()
    return description, params


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _is_model(hint: Any) -> bool:
    """Whether ``hint`` is a pydantic model class (pydantic is never required)."""
    return isinstance(hint, type) and callable(getattr(hint, "model_json_schema", None)) \
        and callable(getattr(hint, "model_validate", None))


def _model_of(hint: Any) -> Any:
    """The pydantic model a parameter's value is made into: the hint itself, or the one
    inside ``Annotated[...]`` or ``Optional[...]``; None for any other hint."""
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    origin = typing.get_origin(hint)
    if origin is typing.Union or type(hint).__name__ == "UnionType":
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = members[0] if len(members) == 1 else None
    return hint if _is_model(hint) else None


def _is_dataclass_type(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def _is_typeddict(hint: Any) -> bool:
    """Whether ``hint`` is a `TypedDict` class (typing's or typing_extensions')."""
    return isinstance(hint, type) and issubclass(hint, dict) \
        and hasattr(hint, "__required_keys__") and hasattr(hint, "__optional_keys__")


def _field_hints(cls: type) -> Dict[str, Any]:
    """The type hints of a dataclass's or TypedDict's fields, resolved where they can be
    (see `_type_hints`), without the ``Required[...]``, ``NotRequired[...]`` or
    ``ReadOnly[...]`` around a TypedDict's: which keys are required, the class says."""
    markers = [
        getattr(module, name)
        for module in (typing, sys.modules.get("typing_extensions"))
        for name in ("Required", "NotRequired", "ReadOnly")
        if module is not None and hasattr(module, name)
    ]
    hints = _type_hints(cls)
    for name, hint in list(hints.items()):
        while any(getattr(hint, "__origin__", None) is marker for marker in markers):
            hint = hint.__args__[0]
        hints[name] = hint
    return hints


def _init_fields(cls: type) -> List["dataclasses.Field[Any]"]:
    """The fields a dataclass's ``__init__`` takes."""
    return [f for f in dataclasses.fields(cls) if f.init]


def _class_description(cls: type) -> str:
    """The first paragraph of a class's own docstring (not the signature a dataclass
    writes when it has none)."""
    doc = cls.__dict__.get("__doc__") or ""
    if doc.startswith(f"{cls.__name__}("):
        return ""
    return _description_and_params(doc)[0]


def _fields_schema(
    cls: type, defs: Dict[str, Any], seen: "tuple[type, ...]", unresolved: Optional[List[Any]]
) -> Dict[str, Any]:
    """The JSON Schema of a dataclass or TypedDict: an object with its fields. A class met
    again inside itself is an object of any keys there (a schema has no end otherwise)."""
    if cls in seen:
        return {"type": "object"}
    seen = seen + (cls,)
    hints = _field_hints(cls)
    properties: Dict[str, Any] = {}
    required: List[str] = []
    if _is_typeddict(cls):
        for name, hint in hints.items():
            properties[name] = _schema(hint, defs, seen, unresolved)[0]
            if name in cls.__required_keys__:  # type: ignore[attr-defined]
                required.append(name)
    else:
        for field in _init_fields(cls):
            schema, optional = _schema(hints.get(field.name, field.type), defs, seen, unresolved)
            schema = dict(schema)
            described = field.metadata.get("description")
            if isinstance(described, str) and "description" not in schema:
                schema["description"] = described
            if field.default is not dataclasses.MISSING:
                if _json_default(field.default):
                    schema["default"] = field.default
            elif field.default_factory is dataclasses.MISSING and not optional:  # type: ignore[misc]
                required.append(field.name)
            properties[field.name] = schema
    schema = {"type": "object", "properties": properties, "required": required}
    description = _class_description(cls)
    if description:
        schema["description"] = description
    return schema


def _json_default(value: Any) -> bool:
    """Whether a default is shown to the model: a JSON value other than None."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return value is not None


def _schema(
    hint: Any,
    defs: Dict[str, Any],
    seen: "tuple[type, ...]" = (),
    unresolved: Optional[List[Any]] = None,
) -> "tuple[Dict[str, Any], bool]":
    """The JSON Schema of a type hint, and whether the hint allows None. A pydantic
    model's definitions are gathered into ``defs``; ``seen``: the dataclasses and
    TypedDicts this hint is inside of; hints that name no type (a string that did not
    resolve) are added to ``unresolved``."""
    if hint is inspect.Parameter.empty or hint is Any:
        return {}, False
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    schema: Dict[str, Any]
    if origin is Annotated:
        schema, optional = _schema(args[0], defs, seen, unresolved)
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            schema = {**schema, "description": " ".join(notes)}
        return schema, optional
    if origin is typing.Union or type(hint).__name__ == "UnionType":
        members = [a for a in args if a is not type(None)]
        optional = len(members) < len(args)
        if len(members) == 1:
            return _schema(members[0], defs, seen, unresolved)[0], optional
        return {"anyOf": [_schema(m, defs, seen, unresolved)[0] for m in members]}, optional
    if origin is Literal:
        values = list(args)
        kinds = {_SCALARS.get(type(v)) for v in values}
        choices: Dict[str, Any] = {"enum": values}
        if len(kinds) == 1 and None not in kinds:
            choices["type"] = kinds.pop()
        return choices, False
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}, False
    if hint is type(None):
        return {"type": "null"}, True
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [member.value for member in hint]}, False
    # A datetime is a date too: it is asked first.
    if hint is datetime.datetime:
        return {"type": "string", "format": "date-time"}, False
    if hint is datetime.date:
        return {"type": "string", "format": "date"}, False
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": _schema(args[0], defs, seen, unresolved)[0]}, False
    if origin is tuple and args and args != ((),):
        # A fixed length: the length is checked at the call (`_converter`), each item's
        # type is shown when they all have one.
        schema = {"type": "array"}
        items = [_schema(a, defs, seen, unresolved)[0] for a in args]
        if all(item == items[0] for item in items):
            schema["items"] = items[0]
        return schema, False
    if origin in (list, set, frozenset, tuple, collections.abc.Sequence, collections.abc.Set) \
            or hint in (list, set, frozenset, tuple):
        schema = {"type": "array"}
        if args:
            schema["items"] = _schema(args[0], defs, seen, unresolved)[0]
        return schema, False
    if origin in (dict, collections.abc.Mapping) or hint is dict:
        return {"type": "object"}, False
    if _is_model(hint):
        schema = hint.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        return schema, False
    if _is_dataclass_type(hint) or _is_typeddict(hint):
        return _fields_schema(hint, defs, seen, unresolved), False
    if hint is object:
        return {}, False
    if isinstance(hint, type) and issubclass(hint, pathlib.PurePath):
        return {"type": "string"}, False
    for scalar in (bool, int, float, str):  # a subclass of a scalar: its value made one
        if isinstance(hint, type) and issubclass(hint, scalar):
            return {"type": _SCALARS[scalar]}, False
    if isinstance(hint, (type, typing.TypeVar)) or origin is not None:
        raise _Unwritable(hint)
    # A hint that did not resolve (a string: a misspelt or unimported name) is read as
    # any value; the caller says so.
    if unresolved is not None:
        unresolved.append(hint)
    return {}, False


class _Unwritable(Exception):
    """A type hint no JSON value stands for: the function could not get what it asks."""

    def __init__(self, hint: Any) -> None:
        super().__init__(hint)
        self.hint = hint


def _converter(hint: Any) -> Optional[Callable[[Any], Any]]:
    """What turns the JSON value of a parameter into the type its hint names (a date, a
    set, a tuple of the right length, a dataclass), or None when the JSON value is
    already it. The items of a list, set, tuple or dict are made so too."""
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or type(hint).__name__ == "UnionType":
        members = [a for a in args if a is not type(None)]
        return _converter(members[0]) if len(members) == 1 else None
    if hint is datetime.datetime:
        # Python before 3.11 does not read a "Z" for UTC.
        return lambda value: datetime.datetime.fromisoformat(
            value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
        )
    if hint is datetime.date:
        return datetime.date.fromisoformat
    if isinstance(hint, type) and issubclass(hint, pathlib.PurePath):
        return hint
    if isinstance(hint, type) and hint not in _SCALARS and not issubclass(hint, enum.Enum) \
            and issubclass(hint, (bool, int, float, str)):
        return hint
    if _is_dataclass_type(hint) or _is_typeddict(hint):
        return functools.partial(_made, hint)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis) and args != ((),):
        length = len(args)
        items = [_converter(a) for a in args]

        def fixed(value: Any) -> Any:
            if len(value) != length:
                raise ValueError(f"expected a list of {length} items, got {len(value)}")
            return tuple(_each(item, v) for item, v in zip(items, value))

        return fixed
    if origin in (dict, collections.abc.Mapping) and len(args) == 2:
        values = _converter(args[1])
        if values is None:
            return None
        return lambda value: {k: _each(values, v) for k, v in value.items()}
    kind: Optional[Callable[[Any], Any]] = None
    if origin in (set, collections.abc.Set) or hint is set:
        kind = set
    elif origin is frozenset or hint is frozenset:
        kind = frozenset
    elif origin is tuple or hint is tuple:
        kind = tuple
    elif origin in (list, collections.abc.Sequence):
        kind = list
    item = _converter(args[0]) if kind is not None and args and args[0] != () else None
    if item is None:
        return None if kind is list else kind
    made = kind
    return lambda value: made(_each(item, v) for v in value)  # type: ignore[misc]


def _each(convert: Optional[Callable[[Any], Any]], value: Any) -> Any:
    """``value`` made by ``convert``; None stays None."""
    return value if convert is None or value is None else convert(value)


def _allows_none(hint: Any) -> bool:
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) is typing.Union or type(hint).__name__ == "UnionType":
        return type(None) in typing.get_args(hint)
    return hint is Any or hint is type(None) or hint is inspect.Parameter.empty


def _made(cls: type, value: Any) -> Any:
    """An instance of the dataclass ``cls`` (a dict, for a TypedDict) from its JSON
    object, each field made into the type its hint names. A field that allows None and has
    no default is None when the object leaves it out, as a parameter would be."""
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object for {cls.__name__}, got {type(value).__name__}")
    hints = _field_hints(cls)
    typed = _is_typeddict(cls)
    known = list(hints) if typed else [f.name for f in _init_fields(cls)]
    unknown = [key for key in value if key not in known]
    if unknown:
        raise ValueError(
            f"{cls.__name__} has no field {', '.join(repr(k) for k in unknown)} "
            f"(its fields: {', '.join(known) or 'none'})"
        )
    fields = {key: _each(_converter(hints.get(key, Any)), item) for key, item in value.items()}
    if typed:
        return fields
    for field in _init_fields(cls):
        if field.name not in fields and field.default is dataclasses.MISSING \
                and field.default_factory is dataclasses.MISSING \
                and _allows_none(hints.get(field.name, field.type)):  # type: ignore[misc]
            fields[field.name] = None
    return cls(**fields)


def _hint_name(hint: Any) -> str:
    """A type hint as its author wrote it: ``time``, ``list[Decimal]``."""
    if isinstance(hint, type) and typing.get_origin(hint) is None:
        return hint.__qualname__
    return repr(hint).replace("typing.", "")


@dataclasses.dataclass
class _Tool:
    """A function made a tool: its definition for the loader, the callable the registry
    calls (it starts a call and gives its future), and the parsers of its parameters.
    ``unresolved``: a problem for each type hint that names no type (read as any value);
    ``missing``: what the model is not told, for want of a docstring or type hints."""

    definition: Dict[str, Any]
    handler: Callable[[Dict[str, Any]], "tuple[concurrent.futures.Future[Any], _Start]"]
    parsers: Dict[str, Callable[[Any], Any]]
    unresolved: List[str] = dataclasses.field(default_factory=list)
    missing: Optional[str] = None


def _unwrapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The function a `functools.partial` (or a partial of one) calls: its name,
    docstring and type hints are the tool's; the partial's signature says what is left
    to give (what it fixed by keyword is a default the model may change)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def _tool_name(fn: Callable[..., Any], name: Optional[str]) -> str:
    if name:
        return name
    own = getattr(_unwrapped(fn), "__name__", None)
    if not isinstance(own, str):
        raise ToolsError(
            f"{fn!r} has no name of its own to be called by: give it one, "
            "add_tool(fn, name=...) or @toolbox.tool(name=...)"
        )
    return own


def _type_hints(fn: Any) -> Dict[str, Any]:
    """The type hints of ``fn``'s parameters (a class's: its fields), resolved; those of a
    callable object are its ``__call__``'s. One that does not resolve (a misspelt or
    unimported name) stays as written, a string, and the others resolve all the same."""
    sources = [fn] if isinstance(fn, type) else [fn, getattr(type(fn), "__call__", None)]
    for source in sources:
        try:
            return typing.get_type_hints(source, include_extras=True)
        except Exception:
            continue
    for source in sources:
        written = _annotations(source)
        if not written:
            continue
        module = sys.modules.get(getattr(source, "__module__", None) or "")
        names = getattr(source, "__globals__", None) or getattr(module, "__dict__", {})
        hints = {}
        for name, hint in written.items():
            try:
                one = types.SimpleNamespace(__annotations__={name: hint})
                hints[name] = typing.get_type_hints(one, globalns=dict(names), include_extras=True)[name]
            except Exception:
                hints[name] = hint
        return hints
    return {}


def _annotations(source: Any) -> Dict[str, Any]:
    """The annotations written on a function, or on a class and its bases (first wins)."""
    if not isinstance(source, type):
        return dict(getattr(source, "__annotations__", None) or {})
    written: Dict[str, Any] = {}
    for cls in reversed(source.__mro__):
        written.update(cls.__dict__.get("__annotations__", {}))
    return written


def _make_tool(
    fn: Callable[..., Any],
    name: Optional[str],
    description: Optional[str],
    args: Optional[Mapping[str, Mapping[str, Any]]],
) -> _Tool:
    tool_name = _tool_name(fn, name)
    signature = inspect.signature(fn)
    hints = _type_hints(_unwrapped(fn))
    doc_description, doc_params = _description_and_params(inspect.getdoc(_unwrapped(fn)))
    properties: Dict[str, Any] = {}
    required: List[str] = []
    defs: Dict[str, Any] = {}
    models: Dict[str, Any] = {}
    nullable: List[str] = []
    parsers: Dict[str, Callable[[Any], Any]] = {}
    params = [
        p for p in signature.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    converters: Dict[str, Callable[[Any], Any]] = {}
    unresolved: List[str] = []
    untyped: List[str] = []
    if args is None:
        for p in signature.parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                raise ToolsError(
                    f"function '{tool_name}': *{p.name} cannot be given by a call, whose "
                    "arguments are named: name the parameters, or give them with args={...}"
                )
            if p.kind is p.VAR_KEYWORD:
                raise ToolsError(
                    f"function '{tool_name}': **{p.name} shows the model no parameter: "
                    "name the parameters, or give them with args={...}"
                )
    else:
        known = {p.name for p in params}
        unknown = [key for key in args if key not in known]
        if unknown and not takes_kwargs:
            raise ToolsError(
                f"function '{tool_name}': args names {', '.join(repr(k) for k in unknown)}, "
                f"which the function does not take (its parameters: "
                f"{', '.join(repr(k) for k in known) or 'none'})"
            )
        missing = [p.name for p in params if p.default is p.empty and p.name not in args]
        if missing:
            raise ToolsError(
                f"function '{tool_name}': its parameters {', '.join(repr(k) for k in missing)} "
                "have no default and are not in args, so no call could give them"
            )
    if args is not None:
        # The seed's shape: {name: {type, description, choices, min, max, parser,
        # required}}; the loader checks what it says.
        defaults = {p.name: p.default for p in params}
        for key, spec in args.items():
            if not isinstance(spec, Mapping):
                properties[key] = spec  # the loader says what a parameter must be
                continue
            spec = dict(spec)
            parser = spec.pop("parser", None)
            if parser is not None:
                parsers[key] = parser
            is_required = spec.pop("required", defaults.get(key, None) is inspect.Parameter.empty)
            if "description" not in spec and key in doc_params:
                spec["description"] = doc_params[key]
            properties[key] = spec
            if is_required:
                required.append(key)
    else:
        for p in params:
            hint = hints.get(p.name, p.annotation)
            if hint is inspect.Parameter.empty:
                untyped.append(p.name)
            unnamed: List[Any] = []
            try:
                schema, optional = _schema(hint, defs, (), unnamed)
            except _Unwritable as unwritable:
                raise ToolsError(
                    f"function '{tool_name}': parameter '{p.name}' has the type "
                    f"{_hint_name(unwritable.hint)}, which no JSON value stands for: use str, "
                    "int, float, bool, a list, dict, set or tuple of them, Literal, an Enum, "
                    "datetime.date or datetime.datetime, a dataclass, a TypedDict, a pydantic "
                    "model, or Any"
                ) from None
            unresolved.extend(
                f"function '{tool_name}': parameter '{p.name}' has the type "
                f"{_written(written)}, which names no type where the function is defined "
                "(misspelt, or not imported): it is read as any value"
                for written in unnamed
            )
            convert = _converter(hint)
            if convert is not None:
                converters[p.name] = convert
            model = _model_of(hint)
            if model is not None:
                models[p.name] = model
            schema = dict(schema)
            if p.name in doc_params and "description" not in schema and doc_params[p.name]:
                schema["description"] = doc_params[p.name]
            if p.default is not inspect.Parameter.empty:
                try:
                    json.dumps(p.default)
                    if p.default is not None:
                        schema["default"] = p.default
                except (TypeError, ValueError):
                    pass
            elif optional:
                nullable.append(p.name)
            else:
                required.append(p.name)
            properties[p.name] = schema
    parameters: Dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if defs:
        parameters["$defs"] = defs
    definition = {
        "name": tool_name,
        "description": description if description is not None else doc_description,
        "parameters": parameters,
    }
    missing = []
    if description is None and not doc_description:
        missing.append("no docstring (or description=), so the model reads only its name")
    if untyped:
        missing.append(
            f"no type hints on {', '.join(repr(n) for n in untyped)}, so the model is not "
            "told what to give and the function gets any value (annotate them, with Any "
            "where any value is right, or give args=)"
        )
    positional_only = {p.name for p in params if p.kind is p.POSITIONAL_ONLY}
    is_async = _is_async(fn)

    def handler(values: Dict[str, Any]) -> "tuple[concurrent.futures.Future[Any], _Start]":
        try:
            for key in nullable:
                values.setdefault(key, None)
            for key, model in models.items():
                if key in values and values[key] is not None:
                    values[key] = model.model_validate(values[key])
            for key, convert in converters.items():
                if key in values and values[key] is not None:
                    try:
                        values[key] = convert(values[key])
                    except (TypeError, ValueError) as error:
                        raise ValueError(f"parameter '{key}': {error}") from None
            first = [values.pop(p.name) for p in params if p.name in positional_only and p.name in values]
        except Exception as error:  # the model reads it and may correct its call
            done: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
            done.set_result(_failure(error))
            return done, None
        if is_async:
            return _on_loop(lambda: fn(*first, **values), _tool_loop(), tool_name)
        return _in_thread(lambda: fn(*first, **values), tool_name)

    return _Tool(
        definition,
        handler,
        parsers,
        unresolved,
        f"tool '{tool_name}' has {'; and '.join(missing)}" if missing else None,
    )


def _written(hint: Any) -> str:
    """A type hint that did not resolve, as written: ``'strng'``."""
    if isinstance(hint, typing.ForwardRef):
        hint = hint.__forward_arg__
    return repr(hint) if isinstance(hint, str) else _hint_name(hint)


def _warn(message: str) -> None:
    """A `UserWarning` shown where the user's code called into this module (the
    ``add_tool`` call, the decorated function)."""
    frame = inspect.currentframe()
    level = 1
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
        level += 1
    warnings.warn(message, UserWarning, stacklevel=level)


# ---------------------------------------------------------------- the toolbox


class Toolbox:
    """Python functions as tools a model calls, run by atfunc's registry.

    Register plain or async functions with `add_tool` or the `tool` decorator; give the
    model `prompt()` (or constrain it with `grammar()`); run each answer with `run`,
    `run_async` or `stream`, and send `Turn.text` back as the next message.

    ``truncate_length``: results longer than this many characters are cut in the text the
    model reads (default 5000, the library's). ``confirm``: what happens to calls of tools
    added with ``confirm=True``: None (held until `confirm` or `reject`), ``"run"``,
    ``"decline"``, ``"hold"``, or a function given the call as a dict that answers one
    of those (or a bool). ``keep_repeated_calls``: by default a call that repeats an
    earlier one of the same answer (the same tool, the same arguments) ends the answer,
    as in ``atfunc serve``: a small model that cannot stop writes its calls again and
    again, and each would run; True runs every call as written. ``max_calls``: the most
    calls `run` and `run_async` run of one answer (default 1000, as ``atfunc serve``); the
    answer ends where the next call begins, and `Turn.stopped_at` says where.

    ``timeout``: the time limit of a call, in seconds, for tools without one of their own
    (``add_tool(..., timeout=...)``); None (the default): no limit. A call past its limit
    ends with an error the model reads (``Function 'f' did not finish within 2s ...``) and the answer goes
    on; an async tool is cancelled, a plain function runs on in its thread and what it
    returns is dropped. ``max_concurrency``: how many calls of one answer run at once
    (default 4; 1 runs them one after another). Plain functions run in threads of their
    own, async ones on the event loop; results are always in the order of the calls.

    ``strict``: a tool definition with something the loader works around (a type it does
    not know, a type hint that names no type, bounds the wrong way round, ...) raises
    `ToolsError` at `add_tool` instead of a `UserWarning`, as ``Tools(strict=True)``.

    A tool that raises gives the model ``TypeName: message``; the traceback is in the
    call's record (``"traceback"``) and logged on the logger ``"atfunc"`` at level ERROR.
    ``KeyboardInterrupt`` and ``SystemExit``, from Ctrl-C or raised by a tool, are not
    tool errors: they stop the run (its async calls are cancelled) and are raised to the
    caller. Cancelling ``run_async`` (``asyncio.wait_for``, ``task.cancel()``) cancels the
    async calls under way too."""

    def __init__(
        self,
        *,
        truncate_length: int = 5000,
        confirm: Any = None,
        keep_repeated_calls: bool = False,
        timeout: Optional[float] = None,
        max_concurrency: int = 4,
        max_calls: int = 1000,
        strict: bool = False,
    ) -> None:
        # The native registry checks the counts: one out of range is a ValueError naming it.
        self._native = _Registry(truncate_length, keep_repeated_calls, max_calls)
        self._native.timeout = timeout
        self._native.set_concurrency(max_concurrency)
        self._max_concurrency = max_concurrency
        self._definitions: List[Dict[str, Any]] = []
        self._handlers: Dict[str, "tuple[Callable[[Dict[str, Any]], Any], Optional[float]]"] = {}
        self._tools: Optional[Tools] = None
        self._history: List[str] = []
        self._strict = strict
        if confirm is not None:
            self._native.set_confirmer(confirm)

    # -- registering

    def add_tool(
        self,
        fn: _Fn,
        name: Optional[str] = None,
        description: Optional[str] = None,
        args: Optional[Mapping[str, Mapping[str, Any]]] = None,
        *,
        confirm: bool = False,
        timeout: Optional[float] = None,
    ) -> _Fn:
        """Offers ``fn`` (a plain or async function, or a `functools.partial` of one) as
        a tool and returns it.

        ``name``: the tool's name (default ``fn.__name__``, a partial's function's;
        ``"weather.get"`` puts it in the toolbox ``weather``; a callable without a
        ``__name__`` must be given one). ``description``: default the docstring's first
        paragraph. ``args``: the parameters as ``{name: {"type", "description",
        "choices", "min", "max", "parser", "required"}}`` instead of reading them from the
        signature, type hints and docstring. ``confirm``: calls wait for confirmation.
        ``timeout``: this tool's time limit in seconds, instead of the toolbox's.

        Raises `ToolsError` (the loader's problems) for a definition that cannot be read,
        for a name already in the toolbox, and for a signature no call could fill:
        ``*args`` or ``**kwargs`` without ``args``, a type no JSON value stands for,
        ``args`` naming a parameter ``fn`` does not take or leaving out one without a
        default. What can be read is read as `Tools` reads it: a type the loader does not
        know (``{"type": "strng"}`` in ``args``) or a type hint that names no type
        (``city: "strng"``) is read as any value with a `UserWarning`, and raises
        `ToolsError` under ``Toolbox(strict=True)``. A tool with no description (no
        docstring) or parameters without type hints gets a `UserWarning` saying what the
        model is not told."""
        if timeout is not None and not timeout > 0:
            raise ValueError(f"a timeout is a positive number of seconds (or None), got {timeout}")
        tool = _make_tool(fn, name, description, args)
        if tool.unresolved and self._strict:
            problems = tool.unresolved
            error = ToolsError(
                f"invalid tools ({len(problems)} problem(s)):"
                + "".join(f"\n  {problem}" for problem in problems)
            )
            error.problems = problems  # type: ignore[attr-defined]
            raise error
        definitions = self._definitions + [tool.definition]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # The tool alone, for its own problems and what was worked around (said once,
            # here, rather than at every tool added after it) ...
            Tools([tool.definition], strict=self._strict)
            said = [str(warning.message) for warning in caught]
            # ... and with the others, for what concerns them together.
            tools = Tools(definitions, strict=self._strict)
        if len(tools) < len(definitions):  # read leniently, a name given twice keeps the first
            raise ToolsError(
                f"a tool named '{Tools([tool.definition]).names[0]}' is in the toolbox "
                "already: give this one another name (name=...)"
            )
        for message in [*tool.unresolved, *said] + ([tool.missing] if tool.missing else []):
            _warn(message)
        qualified = tools.names[-1]
        handlers = {**self._handlers, qualified: (tool.handler, timeout)}
        self._native.set_tools(tools, handlers)
        self._definitions, self._handlers, self._tools = definitions, handlers, tools
        for param, parser in tool.parsers.items():
            self._native.set_parser(qualified, param, parser)
        if confirm:
            self._native.require_confirmation(qualified)
        return fn

    @overload
    def tool(self, fn: _Fn, /) -> _Fn: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        args: Optional[Mapping[str, Mapping[str, Any]]] = None,
        confirm: bool = False,
        timeout: Optional[float] = None,
    ) -> Callable[[_Fn], _Fn]: ...

    def tool(
        self, fn: Optional[_Fn] = None, /, **options: Any
    ) -> Union[_Fn, Callable[[_Fn], _Fn]]:
        """`add_tool` as a decorator: ``@toolbox.tool`` or ``@toolbox.tool(name=...,
        description=..., args=..., confirm=..., timeout=...)``. The function is given
        back as it is, so a type checker keeps its signature."""
        if fn is None:

            def decorate(fn: _Fn) -> _Fn:
                return self.add_tool(fn, **options)

            return decorate
        return self.add_tool(fn, **options)

    # -- what the model is given

    @property
    def tools(self) -> Tools:
        """The tools as an `atfunc.Tools`, for `render`, `grammar` and `parse`."""
        if self._tools is None:
            self._tools = Tools([])
        return self._tools

    def openai_tools(self) -> List[Dict[str, Any]]:
        """The tools as an OpenAI ``tools`` array, a list of dicts (``[{"type":
        "function", "function": {"name", "description", "parameters"}}]``), for a client
        that passes ``tools=`` to a server with native tool calls. A name with a dot is
        written with ``_`` (``weather.get`` is ``weather_get``), as OpenAI allows no dot;
        `run_tool_calls` reads those names back. ``render(toolbox.tools,
        format="openai")`` is the same as JSON text."""
        tools: List[Dict[str, Any]] = json.loads(render(self.tools, format="openai"))
        return tools

    def prompt(self, **options: Any) -> str:
        """The tools as prompt text (`atfunc.render`), with the parameters' descriptions
        (from the docstrings or ``args``) unless ``param_descriptions=False``."""
        # The descriptions were written for the model to read; the plain `render` leaves
        # them out only to keep a prompt of many hand-written tools short.
        options.setdefault("param_descriptions", True)
        return render(self.tools, **options)

    def grammar(self, **options: Any) -> str:
        """The GBNF grammar of answers whose calls bind to these tools (`atfunc.grammar`),
        leaving out the calls of `history` (and those of ``not_again``): the model cannot
        make a call again that already returned in this conversation."""
        options["not_again"] = self._history + list(options.get("not_again") or [])
        return grammar(self.tools, **options)

    # -- the conversation

    @property
    def history(self) -> List[str]:
        """The calls that returned a result in this conversation, in order, as call text
        (``@get_weather("Paris")``): `grammar` leaves them out. Those of `run`,
        `run_async` and `run_tool_calls`, and a stream's when it is finished. A copy."""
        return list(self._history)

    def clear_history(self) -> None:
        """Forgets the calls made: a new conversation."""
        self._history.clear()

    def _remember(self, turn: Turn) -> Turn:
        # Only calls that returned: one that failed or did not bind may rightly be
        # written again, corrected or not.
        self._history.extend(f"@{r['call']}" for r in turn.results if "result" in r)
        return turn

    # -- running

    def run(self, answer: str) -> Turn:
        """Runs the calls of a model's whole answer, up to the first that repeats an
        earlier one (unless ``keep_repeated_calls``) and at most ``max_calls`` of them; the
        `Turn`, results in the order of the calls."""
        _not_in_a_tool()
        return self._remember(Turn(**self._native.run(answer)))

    async def run_async(self, answer: str) -> Turn:
        """`run` from a coroutine: the answer runs in a worker thread and async tools on
        this event loop. Cancelled, it cancels the async calls under way."""
        _not_in_a_tool()
        cancel = _Cancel()
        return self._remember(Turn(**await _in_worker(cancel, self._native.run, answer, cancel)))

    def stream(self, *, with_text: bool = False) -> ToolStream:
        """A `ToolStream` to feed an answer as it streams; calls run as they complete.
        ``with_text``: `ToolStream.feed` gives the text around the calls too."""
        cancel = _Cancel()
        return ToolStream(self._native.stream(with_text, cancel), cancel, self._remember)

    # -- limits

    @property
    def timeout(self) -> Optional[float]:
        """The time limit of a call in seconds, for tools without their own; None: none."""
        limit: Optional[float] = self._native.timeout
        return limit

    @timeout.setter
    def timeout(self, limit: Optional[float]) -> None:
        self._native.timeout = limit

    @property
    def max_concurrency(self) -> int:
        """How many calls of one answer run at once."""
        return self._max_concurrency

    @max_concurrency.setter
    def max_concurrency(self, n: int) -> None:
        self._native.set_concurrency(n)
        self._max_concurrency = n

    # -- settings of the registry

    @property
    def truncate_length(self) -> int:
        """Results longer than this many characters are cut in `Turn.text`."""
        return self._native.truncate_length

    @truncate_length.setter
    def truncate_length(self, length: int) -> None:
        self._native.truncate_length = length

    def on_event(self, callback: Optional[Callable[[Dict[str, Any]], None]]) -> None:
        """``callback(event)`` at each call's start and end: ``{"event": "start" |
        "success" | "error" | "held" | "cancelled", "call_id", "name", "function", "duration_ms",
        "error", "confirmation_id"}`` (absent fields left out). None removes it."""
        self._native.on_event(callback)

    def add_output_filter(self, fn: Callable[[str, Dict[str, Any], str], Optional[str]]) -> None:
        """``fn(name, args, text)`` may replace a call's result text (return a str) or
        keep it (None), before truncation."""
        self._native.add_output_filter(fn)

    def require_confirmation(self, name: str) -> None:
        """Calls of the tool ``name`` (or of every tool of a toolbox) wait for
        confirmation."""
        self._native.require_confirmation(name)

    def set_confirmer(self, confirm: Any) -> None:
        """Who decides on calls that need confirmation (see the class)."""
        self._native.set_confirmer(confirm)

    def held(self) -> List[Dict[str, Any]]:
        """The calls waiting for confirmation."""
        return self._native.held()

    def confirm(self, confirmation_id: str) -> Dict[str, Any]:
        """Runs a held call; its record, with ``text``, its result block for the model."""
        return self._native.confirm(confirmation_id)

    def reject(self, confirmation_id: str) -> None:
        """Drops a held call without running it."""
        self._native.reject(confirmation_id)

    # -- OpenAI messages

    def openai_messages(self, turn: "Turn | Sequence[Mapping[str, Any]]") -> List[Dict[str, Any]]:
        """A turn as OpenAI messages: an assistant message with the answer's text around
        its calls as ``content`` (None when there is none) and the calls as
        ``tool_calls``, then a ``tool`` message with each result. A call that did not
        bind is there too, under the name it was written with, with its error, so the
        model reads why it failed. Given records instead of a `Turn`, the text is that of
        their ``{"text": ...}`` records (`Turn.records`)."""
        records: List[Any]
        if isinstance(turn, Turn):
            records, content = turn.results, turn.prose
        else:
            given = list(turn)
            records = [r for r in given if "text" not in r]
            content = "".join(r["text"] for r in given if "text" in r)
        return self._native.openai_messages(json.dumps(records, default=_jsonable), content)

    def tool_calls_text(self, tool_calls: Sequence[Any]) -> str:
        """OpenAI ``tool_calls`` (dicts, or the openai client's objects) as atfunc call
        text, one call a line: `run` it to run them."""
        entries = [
            call.model_dump() if callable(getattr(call, "model_dump", None)) else call
            for call in tool_calls
        ]
        return self._native.tool_calls_text(json.dumps(entries))

    def run_tool_calls(self, tool_calls: Sequence[Any]) -> Turn:
        """Runs OpenAI ``tool_calls``; the `Turn`: one record per entry, in order, each
        under the entry's own ``id`` as ``call_id``, so that `openai_messages` answers
        every call of the model's message with a ``tool`` message of the same id.

        An entry that cannot be read (its ``arguments`` not JSON, a tool that does not
        exist) does not stop the others: it gets an error record (``{"call_id": its id,
        "name", "args": None, "error", "call"}``) and an error block in ``text``, in its
        place. An entry that repeats an earlier one (the same function, the same
        arguments in any order) does not run again: its record is the earlier one's,
        result or error, under its own id. The others all run, in order."""
        _not_in_a_tool()
        entries = [
            call.model_dump() if callable(getattr(call, "model_dump", None)) else call
            for call in tool_calls
        ]
        records: List[Optional[CallResult]] = [None] * len(entries)
        lines: List[str] = []
        ran: List[int] = []  # the entries that run, in the order of `lines`
        repeats: Dict[int, int] = {}  # an entry that repeats: the entry it repeats
        first_with: Dict[str, int] = {}
        for index, entry in enumerate(entries):
            try:
                line = self._native.tool_calls_text(json.dumps([entry], default=_jsonable))
            except ValueError as error:
                records[index] = _refused_call(entry, str(error))
                continue
            key = _call_key(entry, line)
            if key in first_with:
                repeats[index] = first_with[key]
                continue
            first_with[key] = index
            lines.append(line)
            ran.append(index)
        # Repeats are found above, by the model's own entries: every line left runs.
        turn = self._remember(Turn(**self._native.run("\n".join(lines), None, True)))
        outcomes = iter(turn.results)
        for index in ran:
            record = next(outcomes, None)
            if record is None:  # past `max_calls`
                record = _refused_call(entries[index], "not run: one answer runs at most "
                                       f"{len(turn.results)} calls (max_calls)")
            records[index] = _with_id(record, entries[index])
        for index, earlier in repeats.items():
            records[index] = _with_id(records[earlier], entries[index])  # type: ignore[arg-type]
        results = [record for record in records if record is not None]
        if repeats or len(ran) < len(entries) or turn.stopped_at is not None:
            text = format_results(results, limit=self.truncate_length)
        else:
            text = turn.text
        return Turn(results=results, text=text, role=turn.role, records=list(results))

    def __repr__(self) -> str:
        return f"<atfunc.Toolbox {self.tools.names}>"
