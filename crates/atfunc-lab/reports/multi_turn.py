#!/usr/bin/env python3
"""BFCL multi_turn_base on any OpenAI-compatible endpoint, in one command.

    python3 crates/atfunc-lab/reports/multi_turn.py --endpoint http://127.0.0.1:8080 --mode gateway \
        [--atfunc PATH] [--serve-flag=--constrain ...] [--limit N] [--concurrency N] \
        [--json out.json] [--markdown out.md] [--server-note TEXT]

Each of the 200 cases is a conversation of several user turns over live instances of BFCL's
own Python API classes (a file system, a trading bot, a travel agency ...), shipped in the
PyPI package `bfcl-eval`; this script installs it (`pip install --no-deps`, plus `mpmath`,
the one dependency the classes import) when it is missing. For each turn the model is asked
with the case's functions as `tools` (`tool_choice` "auto"); every call it makes runs on the
case's instances and its result (or error) goes back as a `tool` message; it is asked again
until an answer has no call, at most 20 answers with calls per turn as BFCL allows, past
which the case is ended and wrong.

`gateway` starts `atfunc serve` on a free loopback port with the endpoint as its upstream
(the serve flags default to `--constrain`), so the model sees atfunc's prompt and grammar;
`native` asks the endpoint directly, so the server's own tool calling answers.

A case is right when every turn passes BFCL's two checks, run after the turn on the model's
instances beside instances that ran the ground truth's calls from the same start: the state
check (every public attribute of each ground-truth instance equals the model's) and the
result check (each result of the turn's ground-truth calls is among the results of the
model's calls so far, as a multiset, in any order). A turn whose ground truth has calls
fails when the model made none. The checker is this file's own code, written from BFCL's
description of the rules; `test_multi_turn.py` checks it on the real cases.

`--json` is rewritten after every case; run again with the same file and settings and the
cases already done are not asked again (those that ended in an endpoint error are).
"""

import argparse
import ast
import copy
import importlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

BFCL_VERSION = "2026.3.23"
INSTALL_HINT = f"pip install --no-deps bfcl-eval=={BFCL_VERSION} mpmath==1.3.0"
CATEGORY = "multi_turn_base"
# BFCL's MAXIMUM_STEP_LIMIT: answers with calls after the 20th end the case.
STEP_LIMIT = 20
# A result is kept whole for scoring; the report keeps this much of it, enough to read why.
REPORT_RESULT_CHARS = 300
# Set by --progress: a line per answer on stderr. Not a setting of the report.
PROGRESS = [False]

# Each class of the category, the module that defines it and its functions' descriptions.
CLASSES = {
    "GorillaFileSystem": ("gorilla_file_system", "gorilla_file_system.json"),
    "MathAPI": ("math_api", "math_api.json"),
    "MessageAPI": ("message_api", "message_api.json"),
    "TwitterAPI": ("posting_api", "posting_api.json"),
    "TicketAPI": ("ticket_api", "ticket_api.json"),
    "TradingBot": ("trading_bot", "trading_bot.json"),
    "TravelAPI": ("travel_booking", "travel_booking.json"),
    "VehicleControlAPI": ("vehicle_control", "vehicle_control.json"),
}
# Classes with no scenario to load (BFCL's stateless classes).
STATELESS = {"MathAPI"}
SOURCE_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"

# BFCL's parameter types as JSON Schema types; anything else is a string, as BFCL sends it.
JSON_TYPES = {
    "integer": "integer", "int": "integer", "number": "number", "float": "number",
    "double": "number", "string": "string", "boolean": "boolean", "bool": "boolean",
    "array": "array", "list": "array", "tuple": "array", "dict": "object", "object": "object",
}


# ---------------------------------------------------------------- the package and its data

def ensure_bfcl(install=True):
    """Imports bfcl-eval's API classes, installing the package from PyPI first if allowed."""
    try:
        return _check_bfcl()
    except ImportError:
        if not install:
            raise
    print(f"multi_turn: installing bfcl-eval {BFCL_VERSION} ({INSTALL_HINT})", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    f"bfcl-eval=={BFCL_VERSION}", "mpmath==1.3.0"], check=True)
    importlib.invalidate_caches()
    return _check_bfcl()


def _check_bfcl():
    version = importlib.metadata.version("bfcl-eval")
    for module, _ in CLASSES.values():
        importlib.import_module(f"{SOURCE_PACKAGE}.{module}")
    if version != BFCL_VERSION:
        print(f"multi_turn: bfcl-eval {version} is installed, the figures here are of "
              f"{BFCL_VERSION}", file=sys.stderr)
    return version


def _data_file(*parts):
    from importlib.resources import files
    return files("bfcl_eval").joinpath("data", *parts)


def _read_jsonl(resource):
    return [json.loads(line) for line in resource.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def load_cases():
    """The category's cases, each with its ground truth under "ground_truth"."""
    cases = _read_jsonl(_data_file(f"BFCL_v4_{CATEGORY}.json"))
    answers = {a["id"]: a["ground_truth"]
               for a in _read_jsonl(_data_file("possible_answer", f"BFCL_v4_{CATEGORY}.json"))}
    for case in cases:
        case["ground_truth"] = answers[case["id"]]
    return cases


def _docs(class_name):
    return _read_jsonl(_data_file("multi_turn_func_doc", CLASSES[class_name][1]))


def _schema(prop):
    """One BFCL parameter description as JSON Schema, nested items and properties too."""
    out = {k: v for k, v in prop.items() if k not in ("type", "items", "properties")}
    out["type"] = JSON_TYPES.get(prop.get("type", "string"), "string")
    if out["type"] == "array" and isinstance(prop.get("items"), dict):
        out["items"] = _schema(prop["items"])
    if out["type"] == "object" and isinstance(prop.get("properties"), dict):
        out["properties"] = {k: _schema(v) for k, v in prop["properties"].items()}
    return out


def tools_for(case):
    """The case's functions as OpenAI `tools`: every function of its classes but the ones
    the case leaves out."""
    excluded = set(case.get("excluded_function") or [])
    tools = []
    for class_name in case["involved_classes"]:
        for doc in _docs(class_name):
            if doc["name"] in excluded:
                continue
            params = doc.get("parameters") or {}
            parameters = {
                "type": "object",
                "properties": {k: _schema(v) for k, v in (params.get("properties") or {}).items()},
                "required": list(params.get("required") or []),
            }
            tools.append({"type": "function", "function": {
                "name": doc["name"], "description": doc.get("description", ""),
                "parameters": parameters}})
    return tools


# ---------------------------------------------------------------- live instances

class World:
    """A case's instances, loaded from its initial configuration, and their public methods
    by name (the names are unique within a case, as BFCL relies on too)."""

    def __init__(self, case):
        self.instances = {}
        self.methods = {}
        for class_name in case["involved_classes"]:
            module = importlib.import_module(f"{SOURCE_PACKAGE}.{CLASSES[class_name][0]}")
            instance = getattr(module, class_name)()
            if class_name not in STATELESS:
                config = case.get("initial_config", {}).get(class_name, {})
                # A deep copy: the classes keep and change what they are given.
                instance._load_scenario(copy.deepcopy(config), long_context=False)
            self.instances[class_name] = instance
            for name in dir(instance):
                if not name.startswith("_") and callable(getattr(instance, name)):
                    self.methods[name] = getattr(instance, name)

    def call(self, name, args=(), kwargs=None):
        """Runs one call and gives its result as the text the model and the checker see:
        a string as it is, a dict as JSON, anything else as str(); an error as BFCL words
        it, so the model reads it like any result."""
        method = self.methods.get(name)
        if method is None:
            return f"Error during execution: name '{name}' is not defined"
        try:
            result = method(*args, **(kwargs or {}))
        except Exception as e:  # the classes raise anything; the model must read it
            return f"Error during execution: {e}"
        if isinstance(result, str):
            return result
        if isinstance(result, dict):
            try:
                return json.dumps(result)
            except (TypeError, ValueError):
                return str(result)
        return str(result)


def parse_call(text):
    """A ground-truth call such as `mv(source='a', destination='b')` or `sort('f')` as its
    name, positional and keyword arguments (all Python literals)."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain call: {text}")
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    return node.func.id, args, kwargs


# ---------------------------------------------------------------- the checker

def _state_differences(model, truth):
    """The public attributes of the ground truth's instance that the model's differs in."""
    differ = []
    for attr, value in vars(truth).items():
        if attr.startswith("_"):
            continue
        if getattr(model, attr, object()) != value:
            differ.append(attr)
    return differ


def _missing(needed, have):
    """The items of `needed` not found in `have`, each item of `have` used at most once."""
    pool = list(have)
    missing = []
    for item in needed:
        if item in pool:
            pool.remove(item)
        else:
            missing.append(item)
    return missing


class Scorer:
    """Scores one case turn by turn beside the model: it runs the ground truth on its own
    instances and compares after each turn."""

    def __init__(self, case):
        self.case = case
        self.truth = World(case)
        self.model_results = []  # every result of the model's calls, all turns so far

    def end_turn(self, index, model_world, turn_results, made_calls):
        """Checks turn `index` once the model is done with it: `turn_results` are the
        results of the calls it made in the turn. Returns None when the turn passes, or
        why it fails."""
        self.model_results.extend(turn_results)
        expected_calls = self.case["ground_truth"][index]
        truth_results = [self.truth.call(*parse_call(c)) for c in expected_calls]
        # A turn the ground truth answers with no call is not checked here (it belongs to
        # BFCL's irrelevance check, which multi_turn_base does not use); its calls ran on
        # both sides so that the next turn starts from the right states.
        if not expected_calls:
            return None
        if not made_calls:
            return "no call in a turn that needs one"
        for class_name, truth in self.truth.instances.items():
            differ = _state_differences(model_world.instances[class_name], truth)
            if differ:
                return f"state of {class_name} differs in {', '.join(differ)}"
        missing = _missing(truth_results, self.model_results)
        if missing:
            return f"{len(missing)} result(s) of the ground truth missing: {missing[0][:120]!r}"
        return None


def score_calls(case, turns):
    """Scores a finished answer: `turns` holds, per turn, the calls made, each a call text
    like the ground truth's or a (name, kwargs) pair. Returns the per-turn failures (None
    where a turn passed)."""
    world = World(case)
    scorer = Scorer(case)
    failures = []
    for index, calls in enumerate(turns):
        results = []
        for call in calls:
            if isinstance(call, str):
                results.append(world.call(*parse_call(call)))
            else:
                name, kwargs = call
                results.append(world.call(name, (), kwargs))
        failures.append(scorer.end_turn(index, world, results, bool(calls)))
    return failures


# ---------------------------------------------------------------- asking the model

class EndpointError(Exception):
    """The server failed to answer; the case is asked again when the report is continued."""


def run_case(client, model, case, settings):
    """Asks one case turn by turn, running the calls and scoring each turn. Returns its
    outcome for the report."""
    tools = tools_for(case)
    world = World(case)
    scorer = Scorer(case)
    messages = []
    outcome = {"id": case["id"], "right": False, "turns": [], "calls": [], "texts": [],
               "steps": [],
               "prompt_tokens": 0, "completion_tokens": 0, "usage": False, "failure": None,
               "refused": None, "error": None}
    started = time.monotonic()
    for index, turn_messages in enumerate(case["question"]):
        messages.extend(turn_messages)
        turn_calls, turn_results, steps, quit_early, refused = [], [], 0, False, None
        while True:
            try:
                response = client.chat.completions.create(
                    model=model, messages=messages, tools=tools, tool_choice="auto",
                    temperature=settings["temperature"], max_tokens=settings["max_tokens"])
            except Exception as e:  # any client or server failure ends the case's asking
                if getattr(e, "status_code", None) == 400:
                    # The server refused this very request (a prompt beyond its context,
                    # say): asking again would give the same, so the case is wrong, as
                    # BFCL counts an inference error.
                    refused = f"turn {index}: the server refused the request: {e}"
                    break
                raise EndpointError(f"turn {index}: {type(e).__name__}: {e}") from e
            if response.usage is not None:
                outcome["usage"] = True
                outcome["prompt_tokens"] += response.usage.prompt_tokens or 0
                outcome["completion_tokens"] += response.usage.completion_tokens or 0
            if not response.choices:
                raise EndpointError(f"turn {index}: an answer with no choices")
            message = response.choices[0].message
            calls = list(message.tool_calls or [])
            assistant = {"role": "assistant", "content": message.content or ""}
            if calls:
                assistant["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.function.name, "arguments": c.function.arguments}}
                    for c in calls]
            messages.append(assistant)
            if PROGRESS[0]:
                names = ", ".join(c.function.name for c in calls) or "no call"
                print(f"  {case['id']} turn {index} step {steps}: {names}", file=sys.stderr)
            if not calls:
                break
            for c in calls:
                try:
                    kwargs = json.loads(c.function.arguments or "{}")
                    if not isinstance(kwargs, dict):
                        raise ValueError("the arguments are not an object")
                    result = world.call(c.function.name, (), kwargs)
                except ValueError as e:
                    kwargs = c.function.arguments
                    result = f"Error during execution: the arguments are not JSON ({e})"
                turn_calls.append({"name": c.function.name, "arguments": kwargs,
                                   "result": result[:REPORT_RESULT_CHARS]})
                turn_results.append(result)
                messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
            steps += 1
            if steps > STEP_LIMIT:
                quit_early = True
                break
        outcome["calls"].append(turn_calls)
        # The turn's last answer in words, to read why the model stopped.
        outcome["texts"].append((messages[-1].get("content") or "")[:REPORT_RESULT_CHARS]
                                if messages[-1]["role"] == "assistant" else "")
        outcome["steps"].append(steps)
        failure = scorer.end_turn(index, world, turn_results, bool(turn_calls))
        if refused:
            outcome["refused"] = refused
            failure = refused
        elif quit_early:
            failure = f"more than {STEP_LIMIT} answers with calls"
        outcome["turns"].append(failure is None)
        if failure and outcome["failure"] is None:
            outcome["failure"] = failure if refused else f"turn {index}: {failure}"
        if refused or quit_early:
            # BFCL ends the case here: the turns not asked count as failed.
            outcome["turns"].extend([False] * (len(case["question"]) - index - 1))
            break
    outcome["right"] = all(outcome["turns"]) and len(outcome["turns"]) == len(case["question"])
    outcome["seconds"] = round(time.monotonic() - started, 2)
    return outcome


# ---------------------------------------------------------------- the gateway

def start_gateway(atfunc, upstream, flags):
    """Starts `atfunc serve` on a free loopback port; returns the process and its URL."""
    command = [atfunc, "serve", "--upstream", upstream, "--listen", "127.0.0.1:0", *flags]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    found = {}
    ready = threading.Event()

    def drain():
        # Read its output to the end so that a full pipe never stops the server.
        for line in proc.stdout:
            m = re.search(r"listening on (http://\S+)", line)
            if m and "url" not in found:
                found["url"] = m.group(1)
                ready.set()
            elif "url" not in found:
                found.setdefault("early", []).append(line.rstrip())
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(30)
    if "url" not in found:
        proc.kill()
        raise SystemExit("multi_turn: atfunc serve did not start: "
                         + " | ".join(found.get("early", [])[-5:]))
    return proc, found["url"]


# ---------------------------------------------------------------- the report

def summary(outcomes, settings):
    done = [o for o in outcomes if not o.get("error")]
    right = sum(o["right"] for o in done)
    return {"cases": len(done), "right": right,
            "accuracy": round(100.0 * right / len(done), 1) if done else None,
            "endpoint_errors": len(outcomes) - len(done),
            "mode": settings["mode"], "server_note": settings["server_note"]}


def write_json(path, settings, outcomes):
    report = {"benchmark": f"BFCL {CATEGORY}", "settings": settings,
              "summary": summary(outcomes, settings),
              "outcomes": sorted(outcomes, key=lambda o: _case_number(o["id"]))}
    tmp = f"{path}.part"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def markdown(settings, outcomes):
    s = summary(outcomes, settings)
    accuracy = "n/a" if s["accuracy"] is None else f"{s['accuracy']:.1f} %"
    note = settings["server_note"].replace("|", "\\|") or "-"
    mode = settings["mode"]
    if mode == "gateway":
        mode += " (`atfunc serve " + " ".join(settings["serve_flags"]) + "`)"
    return ("| mode | server | cases | right | accuracy |\n|---|---|---|---|---|\n"
            f"| {mode} | {note} | {s['cases']} | {s['right']} | {accuracy} |\n")


def _case_number(case_id):
    return int(case_id.rsplit("_", 1)[1])


def resume(path, settings):
    """The outcomes an earlier run with the same settings stored, endpoint errors dropped
    so those cases are asked again."""
    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    theirs = report.get("settings")
    if theirs != settings:
        differ = sorted(k for k in set(settings) | set(theirs or {})
                        if (theirs or {}).get(k) != settings.get(k))
        raise SystemExit(f"multi_turn: {path} was measured with other settings "
                         f"({', '.join(differ)} differ); use another --json file")
    return [o for o in report.get("outcomes", []) if not o.get("error")]


# ---------------------------------------------------------------- the command

def main(argv=None):
    p = argparse.ArgumentParser(description="BFCL multi_turn_base on an OpenAI-compatible "
                                "endpoint, through atfunc's gateway or natively.")
    p.add_argument("--endpoint", required=True, help="the OpenAI-compatible server")
    p.add_argument("--mode", choices=["gateway", "native"], required=True)
    p.add_argument("--atfunc", default="atfunc", help="the atfunc binary (gateway mode)")
    p.add_argument("--serve-flag", action="append", default=None, dest="serve_flags",
                   help="a flag for atfunc serve, repeated for several (default --constrain)")
    p.add_argument("--model", default=None, help="the model name to ask for (default: the "
                   "endpoint's first model)")
    p.add_argument("--limit", type=int, default=None, help="the first N cases only")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    p.add_argument("--json", default=None, help="the report, rewritten after every case")
    p.add_argument("--markdown", default=None)
    p.add_argument("--server-note", default="")
    p.add_argument("--progress", action="store_true", help="a line per answer on stderr")
    p.add_argument("--no-install", action="store_true",
                   help=f"fail instead of running `{INSTALL_HINT}`")
    args = p.parse_args(argv)
    PROGRESS[0] = args.progress

    try:
        version = ensure_bfcl(install=not args.no_install)
    except ImportError as e:
        raise SystemExit(f"multi_turn: bfcl-eval is missing ({e}); {INSTALL_HINT}")
    from openai import OpenAI

    serve_flags = args.serve_flags if args.serve_flags is not None else ["--constrain"]
    endpoint = args.endpoint.rstrip("/")
    settings = {"category": CATEGORY, "bfcl_eval": version, "mode": args.mode,
                "endpoint": endpoint, "model": args.model,
                "serve_flags": serve_flags if args.mode == "gateway" else [],
                "temperature": args.temperature, "max_tokens": args.max_tokens,
                "step_limit": STEP_LIMIT, "tool_choice": "auto",
                "server_note": args.server_note}
    outcomes = resume(args.json, settings)
    done = {o["id"] for o in outcomes}
    cases = load_cases()[: args.limit]
    todo = [c for c in cases if c["id"] not in done]
    print(f"multi_turn: {len(cases)} cases, {len(cases) - len(todo)} already in the report",
          file=sys.stderr)

    gateway = None
    base = endpoint if endpoint.endswith("/v1") else endpoint + "/v1"
    if args.mode == "gateway":
        gateway, url = start_gateway(args.atfunc, endpoint, serve_flags)
        base = url.rstrip("/") + "/v1"
    lock = threading.Lock()
    try:
        client = OpenAI(base_url=base, api_key=os.environ.get("OPENAI_API_KEY", "none"),
                        timeout=args.timeout, max_retries=0)
        model = args.model
        if model is None:
            listed = [m.id for m in client.models.list()]
            model = listed[0] if listed else "default"

        def one(case):
            try:
                outcome = run_case(client, model, case, settings)
            except EndpointError as e:
                outcome = {"id": case["id"], "right": False, "error": str(e)}
            with lock:
                outcomes.append(outcome)
                if args.json:
                    write_json(args.json, settings, outcomes)
                verdict = "error" if outcome.get("error") else ("right" if outcome["right"] else "wrong")
                print(f"{case['id']}: {verdict} {outcome.get('failure') or outcome.get('error') or ''}",
                      file=sys.stderr)

        with ThreadPoolExecutor(max_workers=max(1, args.concurrency)) as pool:
            list(pool.map(one, todo))
    finally:
        if gateway is not None:
            gateway.terminate()
            try:
                gateway.wait(10)
            except subprocess.TimeoutExpired:
                gateway.kill()

    asked = {c["id"] for c in cases}
    outcomes = [o for o in outcomes if o["id"] in asked]
    table = markdown(settings, outcomes)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(table)
    print(table, end="")


if __name__ == "__main__":
    main()
