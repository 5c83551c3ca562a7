"""The fake world the conversation tasks run in, and the pool of tools over it.

Every task gets a fresh `World`. Lookups (weather, contacts, files, the calendar, the
calculator and the converters) read fixed data and are counted; side effects (a note, an
e-mail in the outbox, a calendar event, a written file) are appended to `World.effects`,
one entry per call that succeeded, so a side effect done twice shows twice.

The tools are lenient in what they take, as a real API a person wrote for people would be
("euros" for EUR, "3 pm" for 15:00, "km" or "kilometers"), and say how to fix a call they
cannot take: those errors go back to the model as the tool's result.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

TODAY = "2025-03-14"  # a Friday; the tasks that need a date say so in their system prompt

WEATHER: dict[str, dict[str, Any]] = {
    "lisbon": {"city": "Lisbon", "temperature_c": 19, "condition": "sunny", "wind_kmh": 12, "humidity_pct": 55},
    "oslo": {"city": "Oslo", "temperature_c": 4, "condition": "cloudy", "wind_kmh": 20, "humidity_pct": 70},
    "tokyo": {"city": "Tokyo", "temperature_c": 23, "condition": "light rain", "wind_kmh": 9, "humidity_pct": 80},
    "nairobi": {"city": "Nairobi", "temperature_c": 26, "condition": "partly cloudy", "wind_kmh": 14, "humidity_pct": 48},
    "toronto": {"city": "Toronto", "temperature_c": 11, "condition": "windy", "wind_kmh": 38, "humidity_pct": 60},
    "berlin": {"city": "Berlin", "temperature_c": 9, "condition": "overcast", "wind_kmh": 17, "humidity_pct": 75},
    "sydney": {"city": "Sydney", "temperature_c": 27, "condition": "sunny", "wind_kmh": 15, "humidity_pct": 50},
    "mexico city": {"city": "Mexico City", "temperature_c": 21, "condition": "thunderstorms", "wind_kmh": 11, "humidity_pct": 65},
    "reykjavik": {"city": "Reykjavik", "temperature_c": 2, "condition": "sleet", "wind_kmh": 31, "humidity_pct": 85},
    "cairo": {"city": "Cairo", "temperature_c": 31, "condition": "clear", "wind_kmh": 8, "humidity_pct": 25},
}

CONTACTS: list[dict[str, str]] = [
    {"name": "Maria Lopez", "email": "maria.lopez@example.com", "phone": "+1 555 0134"},
    {"name": "Tom Becker", "email": "tom.becker@example.org", "phone": "+49 30 5550 2211"},
    {"name": "Aisha Khan", "email": "aisha.khan@example.net", "phone": "+44 20 5550 7788"},
    {"name": "Kenji Sato", "email": "kenji.sato@example.jp", "phone": "+81 3 5550 4422"},
    {"name": "Priya Nair", "email": "priya.nair@example.com", "phone": "+91 22 5550 9031"},
    {"name": "Lucas Moreau", "email": "lucas.moreau@example.fr", "phone": "+33 1 5550 6610"},
]

# US dollars for one unit of each currency.
USD_PER: dict[str, float] = {
    "USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "CHF": 1.12, "CAD": 0.74,
    "MXN": 0.058, "INR": 0.012,
}
CURRENCY_NAMES: dict[str, str] = {
    "dollar": "USD", "dollars": "USD", "us dollar": "USD", "us dollars": "USD", "$": "USD",
    "euro": "EUR", "euros": "EUR", "€": "EUR",
    "pound": "GBP", "pounds": "GBP", "pound sterling": "GBP", "pounds sterling": "GBP",
    "british pound": "GBP", "british pounds": "GBP", "£": "GBP",
    "yen": "JPY", "japanese yen": "JPY", "¥": "JPY",
    "franc": "CHF", "francs": "CHF", "swiss franc": "CHF", "swiss francs": "CHF",
    "canadian dollar": "CAD", "canadian dollars": "CAD",
    "peso": "MXN", "pesos": "MXN", "mexican peso": "MXN", "mexican pesos": "MXN",
    "rupee": "INR", "rupees": "INR", "indian rupee": "INR", "indian rupees": "INR",
}

# Each unit: (dimension, factor to the dimension's base unit). Temperatures are special.
UNITS: dict[str, tuple[str, float]] = {
    "m": ("length", 1.0), "km": ("length", 1000.0), "cm": ("length", 0.01), "mm": ("length", 0.001),
    "mi": ("length", 1609.344), "ft": ("length", 0.3048), "in": ("length", 0.0254), "yd": ("length", 0.9144),
    "kg": ("mass", 1.0), "g": ("mass", 0.001), "lb": ("mass", 0.45359237), "oz": ("mass", 0.028349523125),
    "l": ("volume", 1.0), "ml": ("volume", 0.001), "gal": ("volume", 3.785411784), "cup": ("volume", 0.2365882365),
    "c": ("temperature", 0.0), "f": ("temperature", 0.0), "k": ("temperature", 0.0),
}
UNIT_NAMES: dict[str, str] = {
    "meter": "m", "meters": "m", "metre": "m", "metres": "m",
    "kilometer": "km", "kilometers": "km", "kilometre": "km", "kilometres": "km", "kms": "km",
    "centimeter": "cm", "centimeters": "cm", "centimetre": "cm", "centimetres": "cm",
    "millimeter": "mm", "millimeters": "mm", "millimetre": "mm", "millimetres": "mm",
    "mile": "mi", "miles": "mi", "foot": "ft", "feet": "ft", "inch": "in", "inches": "in",
    "yard": "yd", "yards": "yd",
    "kilogram": "kg", "kilograms": "kg", "kgs": "kg", "kilo": "kg", "kilos": "kg",
    "gram": "g", "grams": "g", "pound": "lb", "pounds": "lb", "lbs": "lb",
    "ounce": "oz", "ounces": "oz",
    "liter": "l", "liters": "l", "litre": "l", "litres": "l",
    "milliliter": "ml", "milliliters": "ml", "millilitre": "ml", "millilitres": "ml",
    "gallon": "gal", "gallons": "gal", "cups": "cup",
    "celsius": "c", "°c": "c", "degrees celsius": "c", "centigrade": "c",
    "fahrenheit": "f", "°f": "f", "degrees fahrenheit": "f",
    "kelvin": "k",
}

CALENDAR: list[dict[str, Any]] = [
    {"title": "Team stand-up", "date": "2025-03-17", "time": "09:30", "duration_minutes": 15},
    {"title": "Dentist", "date": "2025-03-18", "time": "14:00", "duration_minutes": 45},
    {"title": "Dinner with Aisha", "date": "2025-03-21", "time": "19:30", "duration_minutes": 120},
]

FILES: dict[str, str] = {
    "shopping.txt": "eggs\nmilk\n2 kg flour\nolive oil\n",
    "todo.txt": "- renew passport\n- call the plumber\n- book flights to Lisbon\n",
    "recipe.txt": "Pancakes for 4: 250 g flour, 2 eggs, 500 ml milk, 1 pinch of salt\n",
    "trip.txt": "Flight to Tokyo: 9350 km.\nHotel: 3 nights at 18000 yen a night.\n",
    "budget.txt": "Rent 1200\nGroceries 340\nTransport 85\nPhone 25\n",
}

MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august",
     "september", "october", "november", "december"])}


def _round(x: float, places: int = 2) -> float:
    """Rounds for a result a person reads; whole numbers stay whole."""
    r = round(x, places)
    return int(r) if r == int(r) else r


def parse_number(value: Any) -> float | None:
    """A number from a number or a text such as "1,250", "20 euros" or "twenty"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if text in WORD_NUMBERS:
        return float(WORD_NUMBERS[text])
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+", text)
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", ""))
    except ValueError:
        return None


WORD_NUMBERS = {w: i for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
     "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
     "eighteen", "nineteen", "twenty"])}
WORD_NUMBERS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "hundred": 100})


def normalize_date(value: Any) -> str | None:
    """"2025-03-20", "March 20", "20 March 2025", "3/20" → "2025-03-20"; None if unreadable."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower().replace(",", " ")
    m = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", text)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        return _valid_date(y, mo, d)
    text = re.sub(r"(\d+)(st|nd|rd|th)\b", r"\1", text)
    words = text.split()
    month = next((MONTHS[w] for w in words if w in MONTHS), None)
    if month is None:
        month = next((MONTHS[k] for w in words for k in MONTHS if len(w) >= 3 and k.startswith(w)), None)
    nums = [int(w) for w in words if w.isdigit()]
    if month is not None and nums:
        day = next((n for n in nums if n <= 31), None)
        year = next((n for n in nums if n > 31), 2025)
        if day is not None:
            return _valid_date(year, month, day)
    m = re.fullmatch(r"(\d{1,2})/(\d{1,2})(?:/(\d{2,4}))?", text)
    if m:
        mo, d = int(m.group(1)), int(m.group(2))
        y = int(m.group(3)) if m.group(3) else 2025
        return _valid_date(y + 2000 if y < 100 else y, mo, d)
    return None


def _valid_date(y: int, mo: int, d: int) -> str | None:
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return None
    return f"{y:04d}-{mo:02d}-{d:02d}"


def normalize_time(value: Any) -> str | None:
    """"15:00", "3pm", "3:30 PM", "15" → "15:00", "15:30"; None if unreadable."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(int(value))
    if not isinstance(value, str):
        return None
    text = value.strip().lower().replace(".", "")
    if text in ("noon", "midday"):
        return "12:00"
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(?::\d{2})?\s*(am|pm|a|p)?", text)
    if not m:
        return None
    h, mi = int(m.group(1)), int(m.group(2) or 0)
    ampm = m.group(3)
    if ampm and ampm.startswith("p") and h < 12:
        h += 12
    if ampm and ampm.startswith("a") and h == 12:
        h = 0
    if h > 23 or mi > 59:
        return None
    return f"{h:02d}:{mi:02d}"


_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow, ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv, ast.USub: operator.neg, ast.UAdd: operator.pos,
}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 100:
            raise ValueError("exponent too large")
        return _OPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.operand))
    raise ValueError("only numbers, + - * / ** % and parentheses are allowed")


class ToolError(Exception):
    """A call the tool cannot take; its message tells the model how to fix the call."""


@dataclass
class World:
    """One task's world: fixed data to look up, and the side effects done so far."""

    effects: list[dict[str, Any]] = field(default_factory=list)
    lookups: Counter = field(default_factory=Counter)
    errors: int = 0
    files: dict[str, str] = field(default_factory=lambda: dict(FILES))
    events: list[dict[str, Any]] = field(default_factory=lambda: [dict(e) for e in CALENDAR])

    # -- lookups -------------------------------------------------------------------

    def calculate(self, expression: Any) -> dict[str, Any]:
        if isinstance(expression, (int, float)) and not isinstance(expression, bool):
            return {"expression": str(expression), "result": _round(expression, 4)}
        if not isinstance(expression, str) or not expression.strip():
            raise ToolError("expression must be an arithmetic expression as text, e.g. \"64.5 * 0.18\"")
        text = expression.replace("×", "*").replace("÷", "/").replace("^", "**").replace(",", "")
        text = re.sub(r"(?<=\d)\s*x\s*(?=\d)", "*", text)
        text = re.sub(r"(\d+(?:\.\d+)?)\s*%\s*of\s*", r"\1/100*", text)
        text = re.sub(r"(\d+(?:\.\d+)?)\s*%", r"(\1/100)", text)
        try:
            value = _eval(ast.parse(text.strip(), mode="eval"))
        except ZeroDivisionError:
            raise ToolError("division by zero") from None
        except (SyntaxError, ValueError, TypeError, OverflowError) as e:
            raise ToolError(f"cannot evaluate {expression!r}: {e}; write plain arithmetic such as \"(457 + 1389) / 2\"") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise ToolError("the result is not a finite number")
        return {"expression": expression, "result": _round(value, 4)}

    def convert_units(self, value: Any, from_unit: Any, to_unit: Any) -> dict[str, Any]:
        number = parse_number(value)
        if number is None:
            raise ToolError(f"value must be a number, got {value!r}")
        src, dst = _unit(from_unit), _unit(to_unit)
        if UNITS[src][0] != UNITS[dst][0]:
            raise ToolError(f"cannot convert {UNITS[src][0]} ({from_unit}) to {UNITS[dst][0]} ({to_unit})")
        if UNITS[src][0] == "temperature":
            kelvin = {"c": number + 273.15, "f": (number - 32) * 5 / 9 + 273.15, "k": number}[src]
            out = {"c": kelvin - 273.15, "f": (kelvin - 273.15) * 9 / 5 + 32, "k": kelvin}[dst]
        else:
            out = number * UNITS[src][1] / UNITS[dst][1]
        return {"value": _round(number, 4), "from_unit": src, "to_unit": dst, "result": _round(out, 2)}

    def get_weather(self, city: Any) -> dict[str, Any]:
        if not isinstance(city, str) or not city.strip():
            raise ToolError("city must be a city name, e.g. \"Lisbon\"")
        key = city.strip().lower().split(",")[0].strip()
        if key not in WEATHER:
            known = ", ".join(w["city"] for w in WEATHER.values())
            raise ToolError(f"no weather data for {city!r}; cities with data: {known}")
        return dict(WEATHER[key])

    def find_contact(self, name: Any) -> dict[str, Any]:
        if not isinstance(name, str) or not name.strip():
            raise ToolError("name must be a person's name, e.g. \"Maria\"")
        words = name.strip().lower().split()
        found = [c for c in CONTACTS if all(w in c["name"].lower().split() or w == c["name"].lower() for w in words)]
        if not found:
            found = [c for c in CONTACTS if any(w in c["name"].lower() for w in words)]
        if not found:
            raise ToolError(f"no contact matches {name!r}")
        if len(found) == 1:
            return dict(found[0])
        return {"matches": [dict(c) for c in found]}

    def convert_currency(self, amount: Any, from_currency: Any, to_currency: Any) -> dict[str, Any]:
        number = parse_number(amount)
        if number is None:
            raise ToolError(f"amount must be a number, got {amount!r}")
        src, dst = _currency(from_currency), _currency(to_currency)
        rate = USD_PER[src] / USD_PER[dst]
        return {"amount": _round(number, 2), "from": src, "to": dst,
                "rate": _round(rate, 6), "result": _round(number * rate, 2)}

    def list_events(self, date: Any) -> dict[str, Any]:
        day = normalize_date(date)
        if day is None:
            raise ToolError(f"date must be a date such as \"2025-03-18\", got {date!r}")
        return {"date": day, "events": [e for e in self.events if e["date"] == day]}

    def read_file(self, path: Any) -> dict[str, Any]:
        name = _file_name(path)
        if name not in self.files:
            raise ToolError(f"no file {path!r}; files: {', '.join(sorted(self.files))}")
        return {"path": name, "content": self.files[name]}

    def list_files(self) -> dict[str, Any]:
        return {"files": sorted(self.files)}

    # -- side effects --------------------------------------------------------------

    def save_note(self, title: Any, text: Any) -> dict[str, Any]:
        if not isinstance(text, str) or not text.strip():
            raise ToolError("text must be the note's text")
        title = title if isinstance(title, str) else ""
        self.effects.append({"kind": "note", "title": title, "text": text})
        return {"saved": True, "note_id": len(self.effects)}

    def send_email(self, to: Any, subject: Any, body: Any) -> dict[str, Any]:
        address = _address(to)
        if address is None:
            raise ToolError(f"to must be an e-mail address, got {to!r}; look the address up with find_contact")
        if not isinstance(body, str) or not body.strip():
            raise ToolError("body must be the e-mail's text")
        subject = subject if isinstance(subject, str) else ""
        self.effects.append({"kind": "email", "to": address, "subject": subject, "body": body})
        return {"sent": True, "to": address}

    def create_event(self, title: Any, date: Any, time: Any, duration_minutes: Any = 60) -> dict[str, Any]:
        if not isinstance(title, str) or not title.strip():
            raise ToolError("title must be the event's name")
        day = normalize_date(date)
        if day is None:
            raise ToolError(f"date must be a date such as \"2025-03-20\", got {date!r}")
        clock = normalize_time(time)
        if clock is None:
            raise ToolError(f"time must be a time of day such as \"15:00\", got {time!r}")
        minutes = parse_number(duration_minutes) if duration_minutes is not None else 60.0
        if minutes is None or minutes <= 0:
            raise ToolError(f"duration_minutes must be a positive number, got {duration_minutes!r}")
        event = {"title": title, "date": day, "time": clock, "duration_minutes": int(minutes)}
        self.events.append(dict(event))
        self.effects.append({"kind": "event", **event})
        return {"created": True, **event}

    def write_file(self, path: Any, content: Any) -> dict[str, Any]:
        name = _file_name(path)
        if not name:
            raise ToolError("path must be a file name such as \"packing.txt\"")
        if not isinstance(content, str):
            raise ToolError("content must be the file's text")
        self.files[name] = content
        self.effects.append({"kind": "file", "path": name, "content": content})
        return {"written": True, "path": name, "bytes": len(content.encode())}

    # -- calling -------------------------------------------------------------------

    def call(self, name: str, arguments: Any) -> tuple[str, bool]:
        """Runs one call; returns the result as the JSON text a tool message carries, and
        whether it succeeded. A call that cannot run returns {"error": ...} instead."""
        tool = TOOLS.get(name)
        if tool is None:
            self.errors += 1
            return _json({"error": f"no tool named {name!r}; tools: {', '.join(sorted(TOOLS))}"}), False
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as e:
                self.errors += 1
                return _json({"error": f"the arguments are not valid JSON ({e.msg}); send a JSON object"}), False
        if not isinstance(arguments, dict):
            self.errors += 1
            return _json({"error": "the arguments must be a JSON object"}), False
        params = tool.parameters["properties"]
        missing = [p for p in tool.parameters.get("required", []) if p not in arguments]
        if missing:
            self.errors += 1
            return _json({"error": f"missing argument(s): {', '.join(missing)}"}), False
        # Unknown argument names are dropped, as lenient APIs do.
        kwargs = {k: v for k, v in arguments.items() if k in params}
        if tool.side_effect is False:
            self.lookups[name] += 1
        try:
            result = getattr(self, name)(**kwargs)
        except ToolError as e:
            self.errors += 1
            return _json({"error": str(e)}), False
        return _json(result), True


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _unit(value: Any) -> str:
    if not isinstance(value, str):
        raise ToolError(f"a unit must be text such as \"km\", got {value!r}")
    key = value.strip().lower().rstrip(".")
    key = UNIT_NAMES.get(key, key)
    if key not in UNITS:
        raise ToolError(f"unknown unit {value!r}; units: {', '.join(UNITS)}")
    return key


def _currency(value: Any) -> str:
    if not isinstance(value, str):
        raise ToolError(f"a currency must be a code such as \"EUR\", got {value!r}")
    key = value.strip()
    code = key.upper()
    if code in USD_PER:
        return code
    code = CURRENCY_NAMES.get(key.lower())
    if code is None:
        raise ToolError(f"unknown currency {value!r}; currencies: {', '.join(USD_PER)}")
    return code


_ADDRESS = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"


def _address(value: Any) -> str | None:
    """An address alone or as "Name <address>"; None for anything else, such as
    "maria Lopez@example.com", which a mail server would refuse too."""
    if not isinstance(value, str):
        return None
    m = re.fullmatch(rf"\s*({_ADDRESS})\s*|[^<>@]*<\s*({_ADDRESS})\s*>\s*", value)
    if not m:
        return None
    return (m.group(1) or m.group(2)).lower()


def _file_name(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    return value.strip().strip("/").removeprefix("./").lower()


@dataclass(frozen=True)
class Tool:
    """One tool of the pool: its OpenAI function definition and whether it changes the world."""

    name: str
    description: str
    parameters: dict[str, Any]
    side_effect: bool

    def openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}


def _params(required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


_S = {"type": "string"}
_N = {"type": "number"}

TOOLS: dict[str, Tool] = {t.name: t for t in [
    Tool("calculate", "Work out an arithmetic expression, e.g. \"(12.5 + 3) * 4\".",
         _params(["expression"], expression={**_S, "description": "the arithmetic to work out"}), False),
    Tool("convert_units", "Convert a length, weight, volume or temperature between units (km, mi, m, ft, cm, in, kg, lb, g, oz, l, ml, gal, cup, celsius, fahrenheit).",
         _params(["value", "from_unit", "to_unit"], value={**_N, "description": "the amount to convert"},
                 from_unit={**_S, "description": "the unit it is in, e.g. \"km\""},
                 to_unit={**_S, "description": "the unit wanted, e.g. \"mi\""}), False),
    Tool("get_weather", "Current weather in a city: temperature in Celsius, conditions, wind, humidity.",
         _params(["city"], city={**_S, "description": "the city, e.g. \"Lisbon\""}), False),
    Tool("find_contact", "Look up a person in the address book: their e-mail address and phone number.",
         _params(["name"], name={**_S, "description": "the person's name, or part of it"}), False),
    Tool("convert_currency", "Convert an amount of money between currencies at today's rate (USD, EUR, GBP, JPY, CHF, CAD, MXN, INR).",
         _params(["amount", "from_currency", "to_currency"], amount={**_N, "description": "the amount of money"},
                 from_currency={**_S, "description": "the currency it is in, e.g. \"EUR\""},
                 to_currency={**_S, "description": "the currency wanted, e.g. \"USD\""}), False),
    Tool("list_events", "List the calendar's events on one day.",
         _params(["date"], date={**_S, "description": "the day, as YYYY-MM-DD"}), False),
    Tool("read_file", "Read a text file from the user's documents.",
         _params(["path"], path={**_S, "description": "the file's name, e.g. \"todo.txt\""}), False),
    Tool("list_files", "List the files in the user's documents.", _params([]), False),
    Tool("save_note", "Save a note in the user's notes app.",
         _params(["title", "text"], title={**_S, "description": "a short title"},
                 text={**_S, "description": "the note's text"}), True),
    Tool("send_email", "Send an e-mail from the user's account.",
         _params(["to", "subject", "body"], to={**_S, "description": "the recipient's e-mail address"},
                 subject={**_S, "description": "the subject line"}, body={**_S, "description": "the message"}), True),
    Tool("create_event", "Add an event to the user's calendar.",
         _params(["title", "date", "time"], title={**_S, "description": "what the event is"},
                 date={**_S, "description": "the day, as YYYY-MM-DD"},
                 time={**_S, "description": "the start time, as HH:MM (24-hour)"},
                 duration_minutes={"type": "integer", "description": "how long it lasts, in minutes (default 60)"}), True),
    Tool("write_file", "Write a text file in the user's documents (replaces a file of that name).",
         _params(["path", "content"], path={**_S, "description": "the file's name, e.g. \"notes.txt\""},
                 content={**_S, "description": "the text to write"}), True),
]}

SIDE_EFFECT_TOOLS = frozenset(n for n, t in TOOLS.items() if t.side_effect)
