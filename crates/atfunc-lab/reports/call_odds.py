#!/usr/bin/env python3
"""Calibrates `atfunc serve --call-threshold` for a model: for BFCL cases that need no call
and cases that need one, the odds that the model's first token opens a call in its own
format (the tools in its chat template), as the gateway weighs them, and for each
threshold the share of each kind the gateway would answer rightly (prose for the first,
calls for the second).

    python3 crates/atfunc-lab/reports/call_odds.py --endpoint http://127.0.0.1:8092 \\
        --no-call live_irrelevance:220:4 --call live_simple:258:1 --json odds.json

A set is NAME:COUNT:STRIDE[:START] (every STRIDE-th case of BFCL_v4_NAME.json from the
START-th, counted from 0, at most COUNT),
read from tests/data/bfcl or, for the live categories, from the PyPI package bfcl-eval's
data folder. The openers are those of `src/turn/odds.rs` for hermes; `--openers` changes
them (`@` for atfunc's syntax needs atfunc's prompt, which this script does not send).
Choose the threshold on cases the accuracy runs do not measure.

In any syntax (atfunc's `@` needs atfunc's prompt), the odds come from `atfunc eval`
itself: a run of mode `auto` (or `dialect-auto`) with a threshold near 0, such as
`--call-threshold 0.000001`, holds every answer to calls and records each case's odds
(`call_odds`) in its report. `--reports` reads such reports and scores every threshold
exactly, as the gateway would answer at it: a case that needs no call is right below the
threshold (prose) and wrong at or above it; a case that needs one is right at or above it
when the call the report holds is right.

    python3 crates/atfunc-lab/reports/call_odds.py --reports odds-calls.json odds-none.json
"""

import argparse
import concurrent.futures
import json
import math
import os
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "..", "tests", "data", "bfcl")
HERMES_OPENERS = ["<tool_call>", "```", "{", "["]
THRESHOLDS = [0.001, 0.002, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04] + [
    step / 20 for step in range(1, 20)]
# BFCL's type names that JSON Schema spells otherwise; `any` has no type.
TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def schema(value):
    """A BFCL parameter schema as JSON Schema, as the evaluator sends it."""
    if not isinstance(value, dict):
        return value
    out = dict(value)
    kind = out.get("type")
    if kind == "any":
        out.pop("type")
    elif kind in TYPES:
        out["type"] = TYPES[kind]
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: schema(v) for k, v in out["properties"].items()}
    if "items" in out:
        out["items"] = schema(out["items"])
    return out


def data_file(name):
    local = os.path.join(DATA, f"BFCL_v4_{name}.json")
    if os.path.exists(local):
        return local
    import bfcl_eval  # the PyPI package bfcl-eval, for the live categories

    return os.path.join(os.path.dirname(bfcl_eval.__file__), "data", f"BFCL_v4_{name}.json")


def cases(spec):
    name, count, stride, *start = spec.split(":")
    count, stride, start = int(count), int(stride), int(start[0]) if start else 0
    out = []
    with open(data_file(name), encoding="utf-8") as lines:
        for index, line in enumerate(lines):
            if index >= start and (index - start) % stride == 0:
                out.append(json.loads(line))
                if len(out) >= count:
                    break
    return name, out


def odds(endpoint, case, openers, timeout):
    tools = [{"type": "function", "function": {
        "name": f["name"], "description": f.get("description", ""),
        "parameters": schema(f["parameters"])}} for f in case["function"]]
    body = {"messages": case["question"][0], "tools": tools, "tool_choice": "none",
            "max_tokens": 1, "temperature": 0, "logprobs": True, "top_logprobs": 20}
    request = urllib.request.Request(f"{endpoint}/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer = json.load(response)
    total = 0.0
    for alternative in answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"]:
        token = alternative["token"].lstrip()
        # As the gateway counts (src/turn/odds.rs): an opener, or its start of two
        # characters or more.
        if any(token.startswith(o) or (len(token) > 1 and o.startswith(token)) for o in openers):
            total += math.exp(alternative["logprob"])
    return min(total, 1.0)


def table(none_name, none, call_name, call, call_label):
    """Prints AUC and, by threshold, the share of each kind answered rightly. `none` is the
    odds of the cases needing no call; `call` the odds of those needing one, each with
    whether its calls are right when made."""
    # The chance that a case needing a call weighs more than one needing none.
    auc = sum((c > n) + 0.5 * (c == n) for c, _ in call for n in none) / (len(call) * len(none))
    print(f"{none_name}: {len(none)} cases, {call_name}: {len(call)} cases, AUC {auc:.3f}")
    print(f"| threshold | no call on {none_name} | {call_label} {call_name} | mean |")
    print("|---:|---:|---:|---:|")
    best = None
    # Fine steps below 0.05: a model that rarely opens with a call in the syntax it is
    # shown (SmolLM2 puts a few percent on atfunc's `@`) is told apart down there.
    for threshold in THRESHOLDS:
        prose = sum(p < threshold for p in none) / len(none)
        calls = sum(p >= threshold and right for p, right in call) / len(call)
        mean = (prose + calls) / 2
        if best is None or mean > best[1]:
            best = (threshold, mean)
        print(f"| {threshold:g} | {100 * prose:.1f} % | {100 * calls:.1f} % | {100 * mean:.1f} % |")
    print(f"best threshold by the mean: {best[0]:g} ({100 * best[1]:.1f} %)")
    return auc


def from_reports(paths, mode):
    """The odds and rightness of every case of `mode` in `atfunc eval` reports."""
    none, call, names = [], [], [set(), set()]
    for path in paths:
        with open(path, encoding="utf-8") as report:
            outcomes = json.load(report)["outcomes"]
        for outcome in outcomes:
            if mode and outcome["mode"] != mode:
                continue
            odds = outcome.get("call_odds")
            if odds is None:
                raise SystemExit(
                    f"{path}: case {outcome['id']} ({outcome['mode']}) has no call_odds: "
                    "run atfunc eval with --call-threshold in mode auto or dialect-auto")
            if "irrelevance" in outcome["category"]:
                none.append(odds)
                names[0].add(outcome["category"])
            else:
                call.append((odds, outcome["correct"]))
                names[1].add(outcome["category"])
    if not none or not call:
        raise SystemExit("the reports need cases that need a call and cases that need none")
    return "+".join(sorted(names[0])), none, "+".join(sorted(names[1])), call


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", default="http://127.0.0.1:8080")
    parser.add_argument("--no-call", help="NAME:COUNT:STRIDE[:START] of cases needing no call")
    parser.add_argument("--call", help="NAME:COUNT:STRIDE[:START] of cases needing a call")
    parser.add_argument("--openers", default=",".join(HERMES_OPENERS))
    parser.add_argument("--reports", nargs="+", help="atfunc eval reports with call_odds, instead of asking")
    parser.add_argument("--mode", help="with --reports: only this mode's cases")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--json", help="write every case's odds here")
    args = parser.parse_args()
    if args.reports:
        none_name, none, call_name, call = from_reports(args.reports, args.mode)
        table(none_name, none, call_name, call, "right on")
        return
    if not (args.no_call and args.call):
        parser.error("give --no-call and --call, or --reports")
    openers = args.openers.split(",")
    measured = {}
    for spec in (args.no_call, args.call):
        name, chosen = cases(spec)
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            found = list(pool.map(lambda c: odds(args.endpoint, c, openers, args.timeout), chosen))
        measured[name] = {case["id"]: p for case, p in zip(chosen, found)}
    (none_name, none), (call_name, call) = measured.items()
    auc = table(none_name, list(none.values()), call_name,
                [(p, True) for p in call.values()], "a call on")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"endpoint": args.endpoint, "openers": openers, "auc": auc,
                       "odds": measured}, out, indent=1)


if __name__ == "__main__":
    main()
