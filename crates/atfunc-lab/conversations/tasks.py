"""The conversation tasks: everyday requests, each with the tools offered and what "right" means.

`dev` (20 tasks) is for choosing a gateway's defaults; `test` (44) is for reporting, and
should not be looked at while choosing. About a quarter of each set needs no tool.

Each task: an optional system prompt, one user message (a few have a second), 4 to 6
tools from the pool in `world.py`, and for each user message the facts its answer must
hold; plus the side effects expected at the end (a note, an e-mail, an event, a file:
free text is checked by facts, addresses, dates, times and paths exactly). `ref` is a
reference solution (the calls of each round of each user message), run by the tests to
check that the task can be solved with its tools and that its expectations hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scoring import Any as Or

DATED = "You are a helpful assistant. Today is Friday, 14 March 2025."
BRIEF = "You are a helpful assistant. Keep answers short."


@dataclass(frozen=True)
class Turn:
    """One user message and the facts the answer that ends it must hold."""

    user: str
    facts: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Task:
    id: str
    split: str
    turns: tuple[Turn, ...]
    tools: tuple[str, ...]
    effects: tuple[dict[str, Any], ...] = ()
    system: str | None = None
    kind: str = "tool"  # "tool": needs a tool; "none": needs none
    ref: tuple[tuple[tuple[tuple[str, dict[str, Any]], ...], ...], ...] = field(default=(), compare=False)

    @property
    def needs_tool(self) -> bool:
        return self.kind == "tool"


def task(id: str, split: str, user: str | list[Turn], tools: list[str], facts: list[Any] | None = None,
         effects: list[dict[str, Any]] | None = None, system: str | None = None, kind: str = "tool",
         ref: list[Any] | None = None) -> Task:
    turns = (Turn(user, tuple(facts or ())),) if isinstance(user, str) else tuple(user)
    # ref: one list of rounds per user message; a round is a list of (tool, args) calls.
    rounds = ref or []
    if rounds and not isinstance(rounds[0][0], list):
        rounds = [rounds]
    ref_t = tuple(tuple(tuple((n, a) for n, a in rnd) for rnd in msg) for msg in rounds)
    return Task(id, split, turns, tuple(tools), tuple(effects or ()), system, kind, ref_t)


def note(title: list[Any] | None = None, text: list[Any] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"kind": "note"}
    if title is not None:
        e["title"] = title
    e["text"] = text or []
    return e


def email(to: str, body: list[Any] | None = None, subject: list[Any] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"kind": "email", "to": to, "body": body or []}
    if subject is not None:
        e["subject"] = subject
    return e


def event(title: list[Any], date: str, time: str, duration: int | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"kind": "event", "title": title, "date": date, "time": time}
    if duration is not None:
        e["duration_minutes"] = duration
    return e


def file(path: str, content: list[Any]) -> dict[str, Any]:
    return {"kind": "file", "path": path, "content": content}


W = "get_weather"
U = "convert_units"
C = "calculate"
N = "save_note"
E = "send_email"
K = "find_contact"
X = "convert_currency"
EV = "create_event"
LE = "list_events"
R = "read_file"
WF = "write_file"
LF = "list_files"

TASKS: list[Task] = [
    # ---------------------------------------------------------------- dev: needs a tool
    task("dev-weather-lisbon", "dev", "What's the weather like in Lisbon today?",
         [W, U, N, C], facts=[19, "sun"], ref=[[(W, {"city": "Lisbon"})]]),
    task("dev-km-to-miles", "dev", "How many miles is 42 km?",
         [U, C, W, N], facts=[26.1], ref=[[(U, {"value": 42, "from_unit": "km", "to_unit": "mi"})]]),
    task("dev-twenty-euros", "dev", "I have twenty euros. How much is that in US dollars?",
         [X, C, U, E], facts=[21.6], ref=[[(X, {"amount": 20, "from_currency": "EUR", "to_currency": "USD"})]]),
    task("dev-tokyo-fahrenheit", "dev", "Is it warm in Tokyo right now? Give me the temperature in Fahrenheit.",
         [W, U, C, N], facts=[73.4],
         ref=[[(W, {"city": "Tokyo"})], [(U, {"value": 23, "from_unit": "celsius", "to_unit": "fahrenheit"})]]),
    task("dev-note-groceries", "dev", "Save a note called 'Groceries' with: bread, cheese, apples.",
         [N, E, R, C], effects=[note(["grocer"], ["bread", "cheese", "apples"])],
         ref=[[(N, {"title": "Groceries", "text": "bread, cheese, apples"})]]),
    task("dev-email-maria-late", "dev", "Send Maria Lopez an email saying I'll be ten minutes late to our meeting.",
         [K, E, N, EV, W], effects=[email("maria.lopez@example.com", [10, "late"])],
         ref=[[(K, {"name": "Maria Lopez"})],
              [(E, {"to": "maria.lopez@example.com", "subject": "Running late",
                    "body": "I'll be 10 minutes late to our meeting."})]]),
    task("dev-oslo-and-cairo", "dev", "What's the temperature in Oslo and in Cairo?",
         [W, U, C, N], facts=[4, 31], ref=[[(W, {"city": "Oslo"}), (W, {"city": "Cairo"})]]),
    task("dev-dentist-event", "dev", "Put a dentist appointment in my calendar on 20 March at 3 pm.",
         [EV, LE, N, E], system=DATED, effects=[event(["dentist"], "2025-03-20", "15:00")],
         ref=[[(EV, {"title": "Dentist appointment", "date": "2025-03-20", "time": "15:00"})]]),
    task("dev-tip", "dev", "What's 18% of 64.50? I want to leave a tip.",
         [C, X, N, W], facts=[11.61], ref=[[(C, {"expression": "64.50 * 0.18"})]]),
    task("dev-read-todo", "dev", "What's on my to-do list? It's in todo.txt.",
         [R, WF, LF, N], facts=["passport", "plumber", "Lisbon"], ref=[[(R, {"path": "todo.txt"})]]),
    task("dev-berlin-note", "dev", "Check the weather in Berlin and save it as a note titled 'Berlin weather'.",
         [W, N, E, U], effects=[note(["berlin"], [9])],
         ref=[[(W, {"city": "Berlin"})], [(N, {"title": "Berlin weather", "text": "Berlin: 9°C, overcast"})]]),
    task("dev-sydney-to-tom", "dev",
         "Look up the weather in Sydney, convert the temperature to Fahrenheit and email it to Tom Becker.",
         [W, U, K, E, N], effects=[email("tom.becker@example.org", [80.6])],
         ref=[[(W, {"city": "Sydney"}), (K, {"name": "Tom Becker"})],
              [(U, {"value": 27, "from_unit": "c", "to_unit": "f"})],
              [(E, {"to": "tom.becker@example.org", "subject": "Sydney weather",
                    "body": "It is 80.6°F and sunny in Sydney."})]]),
    task("dev-nairobi-then-note", "dev",
         [Turn("What's the weather in Nairobi?", (26,)), Turn("Great, please save that as a note.")],
         [W, N, E, C], effects=[note(None, [26])],
         ref=[[[(W, {"city": "Nairobi"})]], [[(N, {"title": "Nairobi weather", "text": "Nairobi: 26°C, partly cloudy"})]]]),
    task("dev-suitcase-pounds", "dev", "My suitcase weighs 23 kilograms. What's that in pounds?",
         [U, X, C, N], facts=[50.71], ref=[[(U, {"value": 23, "from_unit": "kg", "to_unit": "lb"})]]),
    task("dev-hotel-yen", "dev", "A hotel costs 18,000 yen a night. How much are three nights in euros?",
         [X, C, U, N, E], facts=[335],
         ref=[[(C, {"expression": "18000 * 3"})], [(X, {"amount": 54000, "from_currency": "JPY", "to_currency": "EUR"})]]),
    # ---------------------------------------------------------------- dev: needs none
    task("dev-none-hello", "dev", "Hi! How are you today?", [W, C, N, E], kind="none"),
    task("dev-none-thanks", "dev", "Thanks, that's all for now.", [N, E, EV, W], system=BRIEF, kind="none"),
    task("dev-none-capital", "dev", "What's the capital of Japan?", [W, X, K, C], facts=["Tokyo"], kind="none"),
    task("dev-none-joke", "dev", "Tell me a short joke about cats.", [N, E, W, C], kind="none"),
    task("dev-none-exchange-rate", "dev", "In one sentence, what is a currency exchange rate?",
         [X, C, N, K], kind="none"),
    # ---------------------------------------------------------------- test: needs a tool
    task("test-reykjavik-coat", "test", "Do I need a warm coat in Reykjavik today?",
         [W, U, N, C], facts=[2], ref=[[(W, {"city": "Reykjavik"})]]),
    task("test-mexico-city", "test", "What's the weather right now in Mexico City?",
         [W, U, E, N], facts=[21, "thunder"], ref=[[(W, {"city": "Mexico City"})]]),
    task("test-miles-to-km", "test", "Convert 5 miles to kilometers.",
         [U, C, X, N], facts=[8.05], ref=[[(U, {"value": 5, "from_unit": "mi", "to_unit": "km"})]]),
    task("test-cad-to-gbp", "test", "How much is 150 Canadian dollars in British pounds?",
         [X, U, C, E], facts=[87.4], ref=[[(X, {"amount": 150, "from_currency": "CAD", "to_currency": "GBP"})]]),
    task("test-times-twelve", "test", "What's 1,250 times 12?",
         [C, U, X, N], facts=[15000], ref=[[(C, {"expression": "1250 * 12"})]]),
    task("test-pace", "test", "I ran 10 km in 52 minutes. What was my pace in minutes per kilometer?",
         [C, U, N, W], facts=[5.2], ref=[[(C, {"expression": "52 / 10"})]]),
    task("test-note-plumber", "test", "Save a note: call the plumber on Monday about the kitchen sink.",
         [N, E, EV, C], effects=[note(None, ["plumber", "sink"])],
         ref=[[(N, {"title": "Plumber", "text": "Call the plumber on Monday about the kitchen sink."})]]),
    task("test-email-aisha", "test", "Email Aisha Khan and tell her the dinner on the 21st is confirmed.",
         [K, E, EV, N, LE], system=DATED, effects=[email("aisha.khan@example.net", ["confirm"])],
         ref=[[(K, {"name": "Aisha Khan"})],
              [(E, {"to": "aisha.khan@example.net", "subject": "Dinner", "body": "Dinner on the 21st is confirmed."})]]),
    task("test-team-lunch", "test", "Add 'Team lunch' to my calendar on March 19 at 12:30, for 90 minutes.",
         [EV, LE, N, E], system=DATED, effects=[event(["lunch"], "2025-03-19", "12:30", 90)],
         ref=[[(EV, {"title": "Team lunch", "date": "2025-03-19", "time": "12:30", "duration_minutes": 90})]]),
    task("test-calendar-18th", "test", "What do I have in my calendar on March 18?",
         [LE, EV, N, W], system=DATED, facts=["dentist", Or("14:00", "2 pm", "2pm", "2:00", "2 p.m.")],
         ref=[[(LE, {"date": "2025-03-18"})]]),
    task("test-flour", "test", "Read shopping.txt and tell me how much flour I need.",
         [R, LF, WF, N], facts=[2, "kg"], ref=[[(R, {"path": "shopping.txt"})]]),
    task("test-budget-total", "test", "Add up my monthly budget in budget.txt. What's the total?",
         [R, C, LF, N, WF], facts=[1650],
         ref=[[(R, {"path": "budget.txt"})], [(C, {"expression": "1200 + 340 + 85 + 25"})]]),
    task("test-packing-file", "test", "Write a file called packing.txt with the list: passport, charger, sunscreen.",
         [WF, R, LF, N], effects=[file("packing.txt", ["passport", "charger", "sunscreen"])],
         ref=[[(WF, {"path": "packing.txt", "content": "passport\ncharger\nsunscreen\n"})]]),
    task("test-toronto-berlin-warmer", "test", "What's the weather in Toronto and in Berlin? Which one is warmer?",
         [W, U, C, N], facts=[11, 9, "Toronto"], ref=[[(W, {"city": "Toronto"}), (W, {"city": "Berlin"})]]),
    task("test-usd-to-eur-and-yen", "test", "Convert 100 US dollars to euros and to yen.",
         [X, C, U, E], facts=[92.59, 14925.37],
         ref=[[(X, {"amount": 100, "from_currency": "USD", "to_currency": "EUR"}),
               (X, {"amount": 100, "from_currency": "USD", "to_currency": "JPY"})]]),
    task("test-kenji-phone", "test", "Look up Kenji Sato's phone number.",
         [K, E, N, C], facts=["4422"], ref=[[(K, {"name": "Kenji Sato"})]]),
    task("test-priya-report", "test", "Find Priya Nair's email address and send her a message that the report is ready.",
         [K, E, N, R, WF], effects=[email("priya.nair@example.com", ["report"])],
         ref=[[(K, {"name": "Priya Nair"})],
              [(E, {"to": "priya.nair@example.com", "subject": "Report", "body": "The report is ready."})]]),
    task("test-cairo-water", "test",
         "Check the weather in Cairo and, if it's above 30 degrees, save a note reminding me to bring water.",
         [W, N, E, U], effects=[note(None, ["water"])],
         ref=[[(W, {"city": "Cairo"})], [(N, {"title": "Reminder", "text": "Bring water: it is 31°C in Cairo."})]]),
    task("test-oslo-no-sunscreen", "test",
         "Check the weather in Oslo and, if it's above 30 degrees, save a note reminding me to bring sunscreen.",
         [W, N, E, U], facts=[4], ref=[[(W, {"city": "Oslo"})]]),
    task("test-trip-miles-note", "test",
         "Read trip.txt, convert the flight distance to miles and save it in a note called 'Trip'.",
         [R, U, N, WF, C], effects=[note(["trip"], [5809.87])],
         ref=[[(R, {"path": "trip.txt"})], [(U, {"value": 9350, "from_unit": "km", "to_unit": "mi"})],
              [(N, {"title": "Trip", "text": "Flight to Tokyo: 5809.87 miles."})]]),
    task("test-hotel-total-usd", "test", "How much is the hotel in trip.txt in total, in US dollars?",
         [R, C, X, U], facts=[361.8],
         ref=[[(R, {"path": "trip.txt"})], [(C, {"expression": "3 * 18000"})],
              [(X, {"amount": 54000, "from_currency": "JPY", "to_currency": "USD"})]]),
    task("test-68f", "test", "It's 68 degrees Fahrenheit here. What's that in Celsius?",
         [U, W, C, N], facts=[20], ref=[[(U, {"value": 68, "from_unit": "f", "to_unit": "c"})]]),
    task("test-keys-email", "test",
         "Send an email to tom.becker@example.org with the subject 'Keys' saying the keys are under the mat.",
         [E, K, N, C], effects=[email("tom.becker@example.org", ["mat"], ["key"])],
         ref=[[(E, {"to": "tom.becker@example.org", "subject": "Keys", "body": "The keys are under the mat."})]]),
    task("test-lucas-call", "test", "Schedule a call with Lucas on 25 March at 10am, and email him the time.",
         [EV, K, E, LE, N], system=DATED,
         effects=[event([Or("lucas", "call")], "2025-03-25", "10:00"), email("lucas.moreau@example.fr", [10])],
         ref=[[(EV, {"title": "Call with Lucas", "date": "2025-03-25", "time": "10:00"}), (K, {"name": "Lucas"})],
              [(E, {"to": "lucas.moreau@example.fr", "subject": "Our call",
                    "body": "Our call is on 25 March at 10:00."})]]),
    task("test-percent-two-turns", "test",
         [Turn("What's 15% of 240?", (36,)), Turn("And 20%?", (48,))],
         [C, X, U, N], ref=[[[(C, {"expression": "240 * 0.15"})]], [[(C, {"expression": "240 * 0.20"})]]]),
    task("test-tom-then-email", "test",
         [Turn("Find Tom Becker's email address.", ("tom.becker@example.org",)),
          Turn("Email him: 'Running late, start without me.'")],
         [K, E, N, EV], effects=[email("tom.becker@example.org", ["late"])],
         ref=[[[(K, {"name": "Tom Becker"})]],
              [[(E, {"to": "tom.becker@example.org", "subject": "Running late",
                     "body": "Running late, start without me."})]]]),
    task("test-cups-to-ml", "test", "Convert 3 cups to milliliters.",
         [U, C, X, N], facts=[709.76], ref=[[(U, {"value": 3, "from_unit": "cup", "to_unit": "ml"})]]),
    task("test-tokyo-nairobi-note", "test", "Get the weather in Tokyo and Nairobi and save both in one note.",
         [W, N, E, U], effects=[note(None, [23, 26])],
         ref=[[(W, {"city": "Tokyo"}), (W, {"city": "Nairobi"})],
              [(N, {"title": "Weather", "text": "Tokyo 23°C light rain; Nairobi 26°C partly cloudy"})]]),
    task("test-sum-halved", "test", "What's the sum of 457 and 1,389, divided by 2?",
         [C, U, X, N], facts=[923], ref=[[(C, {"expression": "(457 + 1389) / 2"})]]),
    task("test-marathon-km", "test", "How many kilometers is a marathon of 26.2 miles?",
         [U, C, W, N], facts=[42.16], ref=[[(U, {"value": 26.2, "from_unit": "mi", "to_unit": "km"})]]),
    task("test-salary-chf", "test", "I'm paid 2,400 pounds sterling a month. What's that in Swiss francs?",
         [X, U, C, N], facts=[2721.43], ref=[[(X, {"amount": 2400, "from_currency": "GBP", "to_currency": "CHF"})]]),
    task("test-list-files", "test", "Which files do I have?",
         [LF, R, WF, N], facts=["shopping", "todo", "recipe", "trip", "budget"], ref=[[(LF, {})]]),
    task("test-double-pancakes", "test",
         "I want to double the pancake recipe in recipe.txt. How much flour and milk do I need?",
         [R, C, U, N], facts=[500, Or(1000, "1 l", "1 liter", "1 litre", "one liter", "one litre")],
         ref=[[(R, {"path": "recipe.txt"})]]),
    # ---------------------------------------------------------------- test: needs none
    task("test-none-morning", "test", "Good morning!", [W, N, E, C], kind="none"),
    task("test-none-thanks", "test", "Thanks a lot, that's everything.", [N, E, EV, K], system=BRIEF, kind="none"),
    task("test-none-two-plus-two", "test", "What's 2 plus 2?", [C, U, N, E], facts=[4], kind="none"),
    task("test-none-shakespeare", "test", "Who wrote Romeo and Juliet?", [R, N, K, W], facts=["Shakespeare"], kind="none"),
    task("test-none-puppy", "test", "Can you suggest a name for a golden retriever puppy?", [N, E, K, C], kind="none"),
    task("test-none-week", "test", "How many days are in a week?", [C, EV, LE, N], facts=[7], kind="none"),
    task("test-none-bonjour", "test", "What does 'bonjour' mean in English?", [N, E, W, X],
         facts=[Or("hello", "good day", "good morning")], kind="none"),
    task("test-none-poem", "test", "Write a two-line poem about rain.", [W, N, WF, E], kind="none"),
    task("test-none-hi-two-turns", "test", [Turn("Hi there."), Turn("No thanks, just saying hello.")],
         [W, N, E, C], kind="none"),
    task("test-none-boiling", "test", "At what temperature in Celsius does water boil at sea level?",
         [U, W, C, N], facts=[100], kind="none"),
    task("test-none-thank-you-draft", "test",
         "Don't send anything, I'm just planning: what could I write in an email to thank a colleague for her help?",
         [E, K, N, WF], kind="none"),
]

SETS = {
    "dev": [t for t in TASKS if t.split == "dev"],
    "test": [t for t in TASKS if t.split == "test"],
    "all": list(TASKS),
}
BY_ID = {t.id: t for t in TASKS}
