"""Function calling for language models that have none.

atfunc renders tools as prompt text (``render``), constrains an engine to calls that bind
(``grammar``), pulls calls out of completions (``parse``, ``StreamParser``), does the same
in bulk over Arrow arrays (``parse_jsonl``, ``parse_arrow``) and formats the results of
calls for the model's next turn (``format_results``). ``Toolbox`` makes plain and async
Python functions tools: it writes their definitions from signatures and docstrings, runs
the calls of each answer (``Toolbox.run``, ``run_async``, ``stream``) and remembers them,
so the next ``Toolbox.grammar`` does not let the model make a call again. The work is done
by the Rust crate of the same name; the records are exactly those its command line prints.

>>> import atfunc
>>> tools = [{"name": "weather.get", "parameters": {"type": "object",
...           "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
>>> [call["args"] for call in atfunc.parse('Sure: @weather.get("Oslo")', tools)]
[{'city': 'Oslo'}]
"""

from ._atfunc import (
    GrammarError,
    PanicException,
    StreamParser,
    Tools,
    ToolsError,
    __version__,
    call_text,
    fit_json,
    format_results,
    grammar,
    parse,
    parse_arrow,
    parse_jsonl,
    render,
    truncate,
)
from .toolbox import Toolbox, ToolStream, Turn
from ._records import (
    CallResult,
    InvalidUtf8Record,
    ParsedCall,
    ParsedUnboundCall,
    ParseErrorRecord,
    ParseRecord,
    TextRecord,
)

__all__ = [
    "CallResult",
    "GrammarError",
    "InvalidUtf8Record",
    "PanicException",
    "ParseErrorRecord",
    "ParseRecord",
    "ParsedCall",
    "ParsedUnboundCall",
    "StreamParser",
    "TextRecord",
    "ToolStream",
    "Toolbox",
    "Tools",
    "ToolsError",
    "__version__",
    "call_text",
    "fit_json",
    "format_results",
    "grammar",
    "parse",
    "parse_arrow",
    "parse_jsonl",
    "render",
    "truncate",
    "Turn",
]
