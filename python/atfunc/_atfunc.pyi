"""Type stubs of the native module; the documentation of each item is here."""

import os
from typing import Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Union, final, overload

import pyarrow as pa

from atfunc._records import ParseRecord

__all__ = [
    "GrammarError",
    "PanicException",
    "StreamParser",
    "Tools",
    "ToolsError",
    "_Cancel",
    "_Registry",
    "_Stream",
    "__version__",
    "_panic_for_test",
    "_run_cli",
    "call_text",
    "fit_json",
    "format_results",
    "grammar",
    "parse",
    "parse_arrow",
    "parse_jsonl",
    "render",
    "truncate",
]

__version__: str

_JSON = Any
"""A value `json.dumps` accepts."""

_ToolsLike = Union["Tools", str, os.PathLike, Sequence[Mapping[str, Any]], Mapping[str, Any]]
"""Tools as a `Tools` object, a _JSON string, a list of dicts (or a dict with a `tools` or
`functions` list) or the path of a tools file. Each tool may be in any of the three shapes
of a tools file: atfunc's own, OpenAI's `{"type": "function", "function": {...}}` or a bare
_JSON Schema function."""

_Record = ParseRecord
"""One record, exactly the object a line of `atfunc parse` prints (see `atfunc.ParseRecord`):

- a bound call: `{"name", "args", "body", "span", "chars"}` (with tools);
- a call as written: `{"name", "positional", "named", "body", "span", "chars"}` (without);
- an error: `{"error", "span", "chars", "raw"}`: a span that looked like a call but did not
  parse, or a call that does not bind (`raw`: its first 200 bytes).

`span` is `[start, end]` in bytes of the UTF-8 text, `chars` the same in characters."""

_Dialect = Literal[
    "atfunc", "hermes", "llama3", "mistral", "pythonic", "deepseek", "qwen3_xml", "harmony",
    "auto",
]
"""The call format a completion is written in, as `atfunc parse --dialect` names it:
atfunc's own `@name(args)` (the default); `hermes` (`<tool_call>{"name", "arguments"}
</tool_call>`: Hermes, Qwen 2.5/3), `llama3` (`<|python_tag|>{"name", "parameters"}`),
`mistral` (`[TOOL_CALLS]`), `pythonic` (`[f(a=1), g(b='x')]`: Llama 3.2/4), `deepseek`
(`<｜tool▁calls▁begin｜>`), `qwen3_xml` (`<function=f><parameter=a>`: Qwen3-Coder), `harmony`
(`to=functions.f`: gpt-oss), or `auto`: whichever of those (atfunc's own included) the
completion's first block of calls belongs to. An unknown name raises ValueError listing the names."""

_ArrowTexts = Union[pa.Array, pa.ChunkedArray, Sequence[Optional[str]]]

class ToolsError(ValueError):
    """The tools are not valid. The message lists every problem found; `problems` lists
    them one string each, each naming the function, its toolbox and what to fix."""

    problems: List[str]

class GrammarError(ValueError):
    """No grammar can be made: `choice` names no function, or no call can be required."""

class PanicException(BaseException):
    """A bug in atfunc (a Rust panic). Raised instead of crashing the interpreter."""

@final
class Tools:
    """A tool set loaded and validated once; pass it wherever `tools` is taken so a batch
    does not load the tools again.

    `root` names the toolbox whose functions are called without their prefix
    (`@get(...)` for `weather.get`), regardless of case; a name that is not one of the
    tools' toolboxes is a `ToolsError` naming those there are. A `str` is read as _JSON
    text; give a file's path as a `pathlib.Path`. Raises `ToolsError` listing every
    problem, `OSError` for a file that cannot be read, `TypeError` for a value that is not
    _JSON.

    Definitions are read as servers read them: what one contradicts (a boolean whose
    choices are strings, bounds the wrong way round, an unknown type, ...) is worked around
    and said as a `UserWarning`; `strict=True` raises `ToolsError` for each instead, as
    `atfunc check --strict` does.

    Two `Tools` are equal (`==`, and hash alike) when they load to the same functions with
    the same root, whichever shape each was given in; `definitions()` gives back what was
    given."""

    def __new__(
        cls, tools: _ToolsLike, *, root: Optional[str] = None, strict: bool = False
    ) -> "Tools": ...
    def definitions(self) -> List[Dict[str, Any]]:
        """The definitions as they were given (each in its own shape), as a list of dicts:
        `Tools(tools.definitions())` loads the same tools again."""
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    @property
    def names(self) -> List[str]:
        """The qualified names of the functions, in the order they were defined."""
    @property
    def root(self) -> Optional[str]:
        """The root toolbox, if any."""
    def __len__(self) -> int: ...
    def __getnewargs_ex__(self) -> tuple[tuple[str], dict[str, Optional[str]]]:
        """Pickling carries the definitions themselves (not a path), so a Ray or Spark
        worker that gets a `Tools` loads the same tools."""

def render(
    tools: _ToolsLike,
    *,
    format: Literal["atfunc", "openai", "mcp"] = "atfunc",
    separator: bool = False,
    preamble: bool = True,
    param_descriptions: bool = False,
) -> str:
    """The tools as text for a model, exactly as `atfunc render` prints it.

    `format="atfunc"`: the prompt, the preamble that teaches the call syntax with an
    example call, then every function; `preamble=False` leaves the preamble out
    (`--no-preamble`), `separator` draws a line under each function, `param_descriptions`
    adds a line for each described parameter under its function. `"openai"`: an OpenAI
    `tools` array, `"mcp"`: an MCP `tools/list` result, as JSON text (`json.loads` it); a
    tool whose name clashes with an earlier one's is left out with a `UserWarning`."""

def grammar(
    tools: _ToolsLike,
    *,
    choice: Union[Literal["auto", "required", "none"], str] = "auto",
    single: bool = False,
    lead_in: int = 100,
    any_depth: int = 3,
    max_string_chars: Optional[int] = None,
    max_list_items: Optional[int] = None,
    grounded_text: Optional[str] = None,
    grounded_numbers: Optional[str] = None,
    not_again: Optional[Sequence[str]] = None,
    continued: bool = False,
    bare_strings: bool = False,
    form: Literal["atfunc", "hermes", "hermes-list"] = "atfunc",
) -> str:
    """The GBNF grammar whose language is the answers whose calls bind to `tools`, as
    `atfunc grammar` prints it. `choice`: `auto` (prose with calls anywhere), `required`
    (a short lead-in, then one call or more), `none` (prose without `@`) or the name of the
    one function allowed. `single`: at most one call. `lead_in`: most characters before the
    first call when a call is required. `any_depth`: how deep `any` values nest.
    `max_string_chars`, `max_list_items`: bounds on strings and lists, so that a model
    looping inside one must close it. `grounded_text`: text arguments must be runs of whole
    words of this text, within a sentence (`--grounded-text`). `grounded_numbers`: number
    arguments must be numbers this text writes. `not_again`: call texts (as the model writes
    calls) left out of the grammar (`--not-again`); `continued`: the answer goes on from a
    call, so the grammar is a newline and one more call, or nothing (`--continued`).
    `bare_strings`: a text argument may also be a bare word (`unit=units`), as
    `atfunc serve --constrain` allows by default (`--bare-strings`; atfunc's form only).
    `form`: `atfunc` (`@name(args)`), `hermes` (the `<tool_call>` JSON blocks Hermes and
    Qwen 2.5 models are trained on, under the tools' own names; `--form`) or `hermes-list`
    (the same call objects as one JSON list in a ```json fence, which `parse` reads with
    `dialect="hermes"` and the tools). Raises `GrammarError` (for a `choice` that is no
    function's name, naming the choices and the functions), and `ValueError` for a
    `not_again` call that does not read or bind, or a `form` that is none of them."""

def parse(
    text: Union[str, bytes, bytearray],
    tools: Optional[_ToolsLike] = None,
    *,
    with_text: bool = False,
    dialect: _Dialect = "atfunc",
) -> List[_Record]:
    """The record of every call-shaped span of `text`, in order, exactly as the lines
    `atfunc parse` (with `--tools`, when `tools` is given) prints for it. Bytes may hold
    invalid UTF-8: it is text, never a call.

    `with_text=True` is `--text`: the text around the calls comes too, as `{"text": ...}`
    records (adjacent text in one record, cut every 64 KiB) and `{"invalid_utf8": hex,
    "span", "chars"}` records for bytes that are not UTF-8. `dialect` is `--dialect`: the
    call format to read (see `_Dialect`)."""

@final
class StreamParser:
    """Parses a completion that arrives in pieces. `feed` and `finish` each return the
    records that became complete; all of them together equal `parse` of the whole text,
    however it was split (even inside a character, for bytes). `with_text` and `dialect`
    as for `parse`.

    With `with_text`, `text_release` says when text goes out. `"early"` (the default):
    each `feed` returns the text known by then not to be part of a call, so a chat UI
    shows an answer as it arrives; only what may still start a call (an `@name`, the
    start of a dialect's marker such as `<tool_call>`, a character cut in two) is held
    until the next piece tells. The text records then follow the pieces, and joined are
    the text `parse` gives. `"gap"`: one text record per run of text between calls, given
    out when the call after it or the end is read, exactly `parse`'s records."""

    def __new__(
        cls,
        tools: Optional[_ToolsLike] = None,
        *,
        with_text: bool = False,
        dialect: _Dialect = "atfunc",
        text_release: Literal["early", "gap"] = "early",
    ) -> "StreamParser": ...
    def feed(self, chunk: Union[str, bytes, bytearray]) -> List[_Record]:
        """The next piece; returns the records it completed (and, with `with_text`, the
        text it released)."""
    def finish(self) -> List[_Record]:
        """The end of the completion: returns the last records (a call left open is an
        error record). The parser is then ready for the next completion, offsets from 0."""
    @property
    def tools(self) -> Optional[Tools]: ...

@overload
def parse_jsonl(
    lines: pa.ChunkedArray,
    tools: Optional[_ToolsLike] = None,
    *,
    first_line: int = 1,
    threads: Optional[int] = None,
    dialect: _Dialect = "atfunc",
) -> pa.ChunkedArray:
    """For each input line of `atfunc parse --jsonl` (a record `{"id", "completion",
    "tools"}`), exactly the output line it prints (without the newline): `{"id", "calls",
    "errors"}`, or `{"id", "line", "error"}` for a line that is not a record. `tools` are
    the `--tools`; a record's own `tools` win over them. `dialect` is `--dialect`: the call
    format the completions are written in (see `_Dialect`).

    One element out per element in, in order. A blank line (empty or only whitespace), for
    which the CLI prints nothing, gives None, and so does None. `first_line` is the line
    number of the first element, for the `line` of error lines (each element counts as
    one line, blank or None). An element is one line: one holding a newline is read as
    one record, where the CLI would read two lines.

    `lines`: a pyarrow string, large_string, string_view or binary array (read in place,
    not copied), a ChunkedArray (the answer is one, with the same chunks) or a list of str.
    The answer is a `large_string` array when the input is, or past 2 GiB of output.

    Runs with the GIL released. `threads`: None spreads the work over every core (rayon's
    pool; `RAYON_NUM_THREADS` sets its size), 1 keeps it in the calling thread (for an
    engine such as Ray or Spark that already runs one task per core), N uses a pool of N
    threads kept for later calls."""

@overload
def parse_jsonl(  # type: ignore[overload-cannot-match, unused-ignore]
    lines: Union[pa.Array, Sequence[Optional[str]]],
    tools: Optional[_ToolsLike] = None,
    *,
    first_line: int = 1,
    threads: Optional[int] = None,
    dialect: _Dialect = "atfunc",
) -> pa.StringArray: ...

_RowTools = Union[pa.Array, pa.ChunkedArray, Sequence[Optional[str]]]

@overload
def parse_arrow(
    texts: pa.ChunkedArray,
    tools: Optional[_ToolsLike] = None,
    *,
    row_tools: Optional[_RowTools] = None,
    args: Literal["json", "struct"] = "json",
    threads: Optional[int] = None,
    dialect: _Dialect = "atfunc",
) -> pa.ChunkedArray:
    """The calls and errors of each text, as `atfunc parse --jsonl` finds them in a record
    with that completion, one struct per text (None for None):

    ```text
    struct<
      calls: list<struct<name: string, args: string, positional: string, named: string,
                         body: string, span: struct<start: int64, end: int64>,
                         chars: struct<start: int64, end: int64>>>,
      errors: list<struct<error: string, span: ..., chars: ..., raw: string>>>
    ```

    `args` (bound calls, with tools), `positional` and `named` (without) are _JSON text;
    the other pair is null. `body` is the raw text between `with_body [[` and `]]`.
    Input, `threads` and `dialect` as for `parse_jsonl`; binary input with invalid UTF-8 is
    read with it replaced.

    `row_tools`: each text's own tool set as _JSON text (the `tools` of a `parse --jsonl`
    record), one per text, None for `tools`; a pyarrow string array or a list. The struct
    then has a third field, `tools_error: string`: why the text's own set did not load
    (its `calls` and `errors` are then empty), or null. Each distinct set is loaded once.

    `args="struct"` (tools needed): `args` is a struct with one nullable field per
    parameter of the tools (of every set, in order of first appearance): `string`,
    `int64`, `double` or `bool` as the parameter's type says, _JSON text for objects,
    lists, `any` and a parameter whose types differ between functions or sets."""

@overload
def parse_arrow(  # type: ignore[overload-cannot-match, unused-ignore]
    texts: Union[pa.Array, Sequence[Optional[str]]],
    tools: Optional[_ToolsLike] = None,
    *,
    row_tools: Optional[_RowTools] = None,
    args: Literal["json", "struct"] = "json",
    threads: Optional[int] = None,
    dialect: _Dialect = "atfunc",
) -> pa.StructArray: ...

def format_results(
    records: Iterable[Mapping[str, Any]], *, limit: Optional[int] = 5000
) -> str:
    """The results of calls as the model reads them on its next turn, one `Function call:
    ... / Returned: ...` block per record. A record is `{"call": text, "result": value}` or
    `{"call": text, "error": message}`; `"name"` and `"args"` (a bound call record of
    `parse`) may stand for `"call"`, and an error record of `parse` is the failed call its
    `raw` text shows, returning its `error`. A string result is shown as it is, any other
    value as compact _JSON; a record with neither `result` nor `error` shows `(no result)`.

    Each result is cut to `limit` characters (the library's default, 5000) as `truncate`
    cuts it, an error to no fewer than 1000; `limit=None` cuts nothing."""

def truncate(text: str, limit: int = 5000) -> str:
    """`text` cut to its first `limit` characters, ending with a note of how many more
    there were; unchanged within the limit."""

def fit_json(value: _JSON, limit: int = 5000) -> _JSON:
    """`value` itself when its compact _JSON has at most `limit` characters; otherwise
    `{"truncated": True, "partial": ..., "hint": ...}` whose compact _JSON has."""

def call_text(name: str, args: Optional[Mapping[str, _JSON]] = None) -> str:
    """A call as the results show it: `weather.get(city="Oslo")`."""

def _panic_for_test(message: str) -> None: ...
def _run_cli(argv: Sequence[str]) -> int:
    """Runs the `atfunc` command line with `argv` (`sys.argv`: the program's name first) and
    returns its exit status. What the `atfunc` script installed with the package calls; not
    part of the API."""

@final
class _Registry:
    """The crate's registry holding Python functions, and the runtime that drives its calls:
    the native half of `atfunc.Toolbox` (use that). Each tool's handler gives a call's
    `concurrent.futures.Future` of `(True, json_text)` or `(False, message[, traceback])`,
    and what starts the call (None: the future is done).
    """

    def __new__(
        cls,
        truncate_length: Optional[int] = None,
        keep_repeated_calls: bool = False,
        max_calls: Optional[int] = None,
    ) -> "_Registry": ...
    def set_tools(
        self,
        tools: Tools,
        handlers: Mapping[str, "tuple[Callable[[Dict[str, Any]], Any], Optional[float]]"],
    ) -> None:
        """Offers `tools` from now on, each answered by `handlers[qualified name]`, a pair
        `(handler, timeout)`: the handler gives a call's `concurrent.futures.Future` and
        what starts it, the timeout (seconds, or None: the toolbox's) bounds it. When the
        registry refuses them, the tools offered before stay.
        """
    def run(
        self,
        answer: str,
        cancel: Optional["_Cancel"] = None,
        keep_repeated_calls: Optional[bool] = None,
    ) -> Dict[str, Any]:
        """Runs the calls of a model's whole answer (up to the first repeated call, unless
        repeats are kept, and at most `max_calls` of them); the turn as a dict. `cancel`
        ends it from another thread; `keep_repeated_calls` (None: the toolbox's) whether a
        repeated call runs too."""
    def stream(self, with_text: bool = False, cancel: Optional["_Cancel"] = None) -> "_Stream":
        """A stream fed the answer as it arrives; `with_text`: `feed` gives the text around
        the calls too. `cancel` ends it from another thread.
        """
    @property
    def timeout(self) -> Optional[float]:
        """The time limit of a call, in seconds, for tools without one of their own."""
    @timeout.setter
    def timeout(self, limit: Optional[float]) -> None: ...
    def set_concurrency(self, n: int) -> None:
        """How many calls of one answer run at once."""
    @property
    def truncate_length(self) -> int:
        """Results longer than this many characters are cut."""
    @truncate_length.setter
    def truncate_length(self, length: int) -> None: ...
    def require_confirmation(self, path: str) -> None:
        """Calls of `path` (a function, or a whole domain) wait for confirmation."""
    def set_confirmer(self, confirmer: Any) -> None:
        """Who decides on calls that need confirmation: `None` (they are held), a decision
        (`"run"`, `"decline"`, `"hold"`, a bool) or a callable answering one.
        """
    def confirm(self, id: str) -> Dict[str, Any]:
        """Runs the held call `id`; its record."""
    def reject(self, id: str) -> None:
        """Drops the held call `id` without running it."""
    def held(self) -> List[Dict[str, Any]]:
        """The calls waiting for confirmation."""
    def on_event(self, callback: Optional[Callable[[Dict[str, Any]], Any]]) -> None:
        """`callback(event)` for each call's start and end."""
    def set_parser(self, function: str, param: str, parser: Callable[[Any], Any]) -> None:
        """`parser(value)` turns the argument `param` of `function` into its value before the
        call; it raises to refuse it (the model reads the message).
        """
    def add_output_filter(self, filter: Callable[[str, Dict[str, Any], str], Optional[str]]) -> None:
        """`filter(name, args, text)` may replace a call's result text (a str) or keep it
        (None).
        """
    def tool_calls_text(self, tool_calls: str) -> str:
        """OpenAI `tool_calls` entries (JSON text of a list) as atfunc call text, one call a
        line, for `run`.
        """
    def openai_messages(self, records: str, content: Optional[str] = None) -> List[Dict[str, Any]]:
        """The records of a turn (JSON text of a list) as OpenAI messages: an assistant
        message with `content` (the answer's text around its calls, None when blank) and
        their `tool_calls`, then one `tool` message per call. A call that did not bind is
        there too, under the name it was written with (no arguments: they did not bind),
        with its error: the model reads why it failed, as in atfunc's own result text.
        """

@final
class _Stream:
    """An answer fed as it streams: each call runs as soon as it is complete."""

    def feed(self, chunk: str) -> List[Dict[str, Any]]:
        """The next piece of the answer; the records of the calls it completed (and the text
        around them, `with_text`).
        """
    def finish(self) -> Dict[str, Any]:
        """The end of the answer: the turn, every call of the answer in it, and in `records`
        every record the stream gave (with the text), those of the end last.
        """

@final
class _Cancel:
    """A cancel handle for one run, given to `_Registry.run` and the stream by
    `run_async`: `cancel()` from any thread ends the run and cancels its calls.
    """

    def __new__(cls) -> "_Cancel": ...
    def cancel(self) -> None:
        """Ends the run: calls under way are cancelled, the run raises."""
