"""Scores one conversation: the end state, the ending, and the answer in words.

A conversation is right when all three hold:

- effects: the side effects done (notes, e-mails, events, files) are exactly the expected
  ones, each once: none missing, none done twice, none unasked for. Lookups do not count.
- ended: every user message got an answer without tool calls within the round cap.
- answer: the answer that ended each user message is in words (not call syntax, not a
  raw result) and holds that message's facts.

Facts are matched tolerantly: a number matches any number in the text that is it rounded
to that number's decimals, or within 0.5 % of it ("26.1" and "26" both match 26.0976,
"14,925" matches 14925.37); text matches case-insensitively as a substring; `Any(...)`
matches when one of its alternatives does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from world import WORD_NUMBERS, TOOLS


@dataclass(frozen=True)
class Any_:
    """A fact with alternatives: matched when one of them is."""

    options: tuple[Any, ...]

    def __repr__(self) -> str:
        return "Any" + repr(self.options)


def Any(*options: Any) -> Any_:  # noqa: N802 - reads as a constructor in the task lists
    return Any_(tuple(options))


Fact = "float | int | str | Any_"

_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?")
_WORD_NUMBER = re.compile(r"\b(" + "|".join(sorted(WORD_NUMBERS, key=len, reverse=True)) + r")\b", re.I)


def numbers_in(text: str) -> list[tuple[float, int]]:
    """Every number written in the text, with its count of decimals ("1,250.50" → (1250.5, 2))."""
    found = []
    for m in _NUMBER.finditer(text):
        raw = m.group(0).replace(",", "")
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        found.append((float(raw), decimals))
    for m in _WORD_NUMBER.finditer(text):
        found.append((float(WORD_NUMBERS[m.group(1).lower()]), 0))
    return found


def number_matches(expected: float, written: float, decimals: int) -> bool:
    if abs(written - expected) <= 0.5 * 10 ** (-decimals) + 1e-9:
        return True
    return expected != 0 and abs(written - expected) <= 0.005 * abs(expected)


def fact_in(fact: Any, text: str) -> bool:
    if isinstance(fact, Any_):
        return any(fact_in(option, text) for option in fact.options)
    if isinstance(fact, bool):
        raise TypeError("a fact is a number, a text or Any(...)")
    if isinstance(fact, (int, float)):
        return any(number_matches(float(fact), n, d) for n, d in numbers_in(text))
    return fact.lower() in text.lower()


def missing_facts(facts: Iterable[Any], text: str) -> list[Any]:
    return [f for f in facts if not fact_in(f, text)]


_TOOL_NAMES = "|".join(sorted(TOOLS, key=len, reverse=True))
RAW_MARKERS: list[tuple[str, re.Pattern[str]]] = [
    ("a JSON call object", re.compile(r"\{\s*\"(name|function|tool|tool_name)\"\s*:")),
    ("JSON call arguments", re.compile(r"\"(arguments|parameters)\"\s*:")),
    ("a `Function call:` block", re.compile(r"Function call\s*:", re.I)),
    ("a `Returned:` block", re.compile(r"(^|\n)\s*Returned\s*:")),
    ("a <tool_call> tag", re.compile(r"</?tool_call>|<\|?tool_call|<\|python_tag\|>|<functioncall>", re.I)),
    ("an @name( call", re.compile(r"@[A-Za-z_][\w.]*\s*\(")),
    ("a call to a tool", re.compile(r"\b(" + _TOOL_NAMES + r")\s*\(")),
    ("a JSON object", re.compile(r"\{\s*\"[^\"\n]{1,40}\"\s*:")),
]


def raw_markers(text: str) -> list[str]:
    """What in an answer shows call syntax or a raw result rather than words."""
    found = [label for label, pattern in RAW_MARKERS if pattern.search(text)]
    if len(found) > 1 and "a JSON object" in found:
        found.remove("a JSON object")  # a more telling marker names it already
    stripped = text.strip()
    if stripped[:1] in "[{" and not found:
        try:
            json.loads(stripped)
            found.append("the whole answer is JSON")
        except json.JSONDecodeError:
            pass
    return found


def judge_answer(text: str | None, facts: Sequence[Any]) -> dict[str, Any]:
    """Whether an answer that ended a user message is in words and holds its facts."""
    if text is None:
        return {"ok": False, "why": "no answer ended this message", "missing": list(map(repr, facts)), "raw": []}
    raw = raw_markers(text)
    missing = missing_facts(facts, text)
    why = []
    if not text.strip():
        why.append("the answer is empty")
    if raw:
        why.append("not in words: " + ", ".join(raw))
    if missing:
        why.append("missing facts: " + ", ".join(map(repr, missing)))
    return {"ok": not why, "why": "; ".join(why), "missing": list(map(repr, missing)), "raw": raw}


# -- side effects ----------------------------------------------------------------------

# Which fields of an effect each expectation key is checked against: facts about a note's
# text may be written in its title too, an e-mail's in its subject.
_FIELDS = {
    ("note", "title"): ("title",), ("note", "text"): ("title", "text"),
    ("email", "subject"): ("subject",), ("email", "body"): ("subject", "body"),
    ("event", "title"): ("title",), ("file", "content"): ("content",),
}


def effect_matches(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Whether a side effect done is the expected one: exact for addresses, dates, times,
    paths and durations, facts for free text."""
    if expected["kind"] != actual["kind"]:
        return False
    for key, want in expected.items():
        if key == "kind":
            continue
        fields = _FIELDS.get((expected["kind"], key))
        if fields is not None:
            text = "\n".join(str(actual.get(f, "")) for f in fields)
            if missing_facts(want, text):
                return False
        elif key in ("to", "path"):
            if str(actual.get(key, "")).lower() != str(want).lower():
                return False
        elif actual.get(key) != want:
            return False
    return True


def judge_effects(expected: Sequence[dict[str, Any]], actual: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Pairs the side effects done with the expected ones (each used once) and names what
    is missing, what was done again and what was not asked for."""
    pair_of_expected: dict[int, int] = {}

    def assign(a: int, seen: set[int]) -> bool:
        # Augmenting path: the matching is maximal whatever order the effects came in.
        for e, want in enumerate(expected):
            if e in seen or not effect_matches(want, actual[a]):
                continue
            seen.add(e)
            if e not in pair_of_expected or assign(pair_of_expected[e], seen):
                pair_of_expected[e] = a
                return True
        return False

    for a in range(len(actual)):
        assign(a, set())
    paired = set(pair_of_expected.values())
    missing = [dict(expected[e]) for e in range(len(expected)) if e not in pair_of_expected]
    duplicate, unexpected = [], []
    for a, effect in enumerate(actual):
        if a in paired:
            continue
        if any(effect_matches(want, effect) for want in expected):
            duplicate.append(effect)
        else:
            unexpected.append(effect)
    why = []
    if missing:
        why.append(f"{len(missing)} expected side effect(s) not done")
    if duplicate:
        why.append(f"{len(duplicate)} done more than once")
    if unexpected:
        why.append(f"{len(unexpected)} not asked for (or with the wrong content)")
    return {"ok": not why, "why": "; ".join(why), "missing": _jsonable(missing),
            "duplicate": duplicate, "unexpected": unexpected, "done": len(actual), "expected": len(expected)}


def _jsonable(effects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: (repr(v) if not isinstance(v, (str, int, float)) else v) for k, v in e.items()} for e in effects]


# -- a whole conversation --------------------------------------------------------------


def score(task: Any, turns: Sequence[dict[str, Any]], effects: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Scores a conversation.

    `turns` has one entry per user message sent: `{"ended": bool, "answer": str | None,
    "rounds": int}` (`answer` is the text of the message without tool calls that ended the
    user message, `None` when none did). A user message never sent (the conversation broke
    off) counts as not ended.
    """
    per_turn = []
    ended = len(turns) == len(task.turns)
    answer_ok = ended
    for i, turn in enumerate(task.turns):
        got = turns[i] if i < len(turns) else {"ended": False, "answer": None, "rounds": 0}
        verdict = judge_answer(got.get("answer") if got.get("ended") else None, turn.facts)
        per_turn.append({"ended": bool(got.get("ended")), "rounds": got.get("rounds", 0), "answer": verdict})
        ended = ended and bool(got.get("ended"))
        answer_ok = answer_ok and verdict["ok"]
    eff = judge_effects(task.effects, effects)
    return {
        "right": eff["ok"] and ended and answer_ok,
        "effects_ok": eff["ok"],
        "ended": ended,
        "answer_ok": answer_ok,
        "effects": eff,
        "turns": per_turn,
    }
