#!/usr/bin/env python3
"""Runs the conversation tasks against an OpenAI-compatible endpoint and scores them.

    python3 crates/atfunc-lab/conversations/run.py --base-url http://127.0.0.1:8089/v1 \\
        --model qwen --set dev --out report.json [--client openai|agents] [--limit N] \\
        [--max-rounds 6] [--note "how it was served"]

Each task runs in a fresh fake world (world.py): the model's tool calls are executed
in-process and their results go back as `tool` messages, until an answer has no tool call
or the round cap (model calls per user message) is reached. `--client openai` runs that
loop with the official `openai` client; `--client agents` runs the same tasks through the
OpenAI Agents SDK's `Runner.run` (requirements.txt pins it).

Results are appended to a JSONL file beside the report (report.jsonl for report.json), one
line per task; a rerun with the same settings skips the tasks done and asks again those
that ended in an endpoint error. The report (JSON, and a Markdown summary beside it) holds
every request and answer exchanged, the tool calls made, the end state, each criterion's
verdict, latencies and the settings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import httpx  # noqa: E402  (a dependency of openai)

from scoring import score  # noqa: E402
from tasks import BY_ID, SETS, Task  # noqa: E402
from world import TOOLS, World  # noqa: E402


# -- recording what goes over the wire ----------------------------------------------------


class Wire:
    """Every model request of a task with its answer and latency, as sent and received."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []
        self.turn = 0

    def record(self, request: httpx.Request, status: int | None, body: bytes | None,
               seconds: float, error: str | None = None) -> None:
        try:
            sent = json.loads(request.content or b"null")
        except (json.JSONDecodeError, httpx.RequestNotRead):
            sent = None
        if isinstance(sent, dict):
            # The tools are the task's, the same in every request: kept once per task.
            sent = {k: v for k, v in sent.items() if k != "tools"}
        got: Any = None
        if body is not None:
            try:
                got = json.loads(body)
            except json.JSONDecodeError:
                got = body.decode("utf-8", "replace")[:4000]
        if isinstance(got, dict) and isinstance(got.get("model"), str):
            # llama.cpp's servers answer with the model file's path: keep its name only,
            # so that a report says nothing about the machine it ran on.
            got["model"] = got["model"].replace("\\", "/").rsplit("/", 1)[-1]
        self.exchanges.append({"turn": self.turn, "url": str(request.url), "request": sent, "status": status,
                               "response": got, "seconds": round(seconds, 3), "error": error})


def _rebuilt(response: httpx.Response, body: bytes, request: httpx.Request) -> httpx.Response:
    # The body was read (and decoded) here; the client gets it as plain bytes.
    headers = [(k, v) for k, v in response.headers.items() if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
    return httpx.Response(response.status_code, headers=headers, content=body, request=request)


class RecordingTransport(httpx.BaseTransport):
    def __init__(self, wire: Wire) -> None:
        self.inner = httpx.HTTPTransport()
        self.wire = wire

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        start = time.monotonic()
        try:
            response = self.inner.handle_request(request)
            body = response.read()
        except Exception as e:
            self.wire.record(request, None, None, time.monotonic() - start, f"{type(e).__name__}: {e}")
            raise
        self.wire.record(request, response.status_code, body, time.monotonic() - start)
        return _rebuilt(response, body, request)

    def close(self) -> None:
        self.inner.close()


class AsyncRecordingTransport(httpx.AsyncBaseTransport):
    def __init__(self, wire: Wire) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.wire = wire

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        start = time.monotonic()
        try:
            response = await self.inner.handle_async_request(request)
            body = await response.aread()
        except Exception as e:
            self.wire.record(request, None, None, time.monotonic() - start, f"{type(e).__name__}: {e}")
            raise
        self.wire.record(request, response.status_code, body, time.monotonic() - start)
        return _rebuilt(response, body, request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _error(e: BaseException, kind: str) -> dict[str, Any]:
    return {"kind": kind, "type": type(e).__name__, "message": str(e)[:2000]}


def _endpoint_error(e: BaseException) -> bool:
    """Errors of the endpoint (unreachable, timed out, an HTTP error status), as opposed to
    a client library refusing what the model answered."""
    import openai

    return isinstance(e, (openai.APIConnectionError, openai.APIStatusError, openai.APITimeoutError,
                          httpx.TransportError))


# -- the two clients ---------------------------------------------------------------------


def run_openai(task: Task, args: argparse.Namespace) -> dict[str, Any]:
    """The standard loop with the official client: ask, run the tool calls, send the
    results back with their ids, until an answer without tool calls or the cap."""
    import openai

    world, wire = World(), Wire()
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=args.timeout,
                           http_client=httpx.Client(transport=RecordingTransport(wire), timeout=args.timeout))
    tools = [TOOLS[n].openai() for n in task.tools]
    messages: list[dict[str, Any]] = []
    if task.system:
        messages.append({"role": "system", "content": task.system})
    turns: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    error = None
    extra: dict[str, Any] = {}
    if args.temperature is not None:
        extra["temperature"] = args.temperature
    try:
        for ti, turn in enumerate(task.turns):
            wire.turn = ti
            messages.append({"role": "user", "content": turn.user})
            rounds, ended, answer = 0, False, None
            while rounds < args.max_rounds:
                rounds += 1
                try:
                    reply = client.chat.completions.create(model=args.model, messages=messages, tools=tools,
                                                           max_tokens=args.max_tokens, **extra)
                except Exception as e:  # an endpoint error fails the task, never the run
                    error = _error(e, "endpoint" if _endpoint_error(e) else "client")
                    break
                if not reply.choices:
                    error = {"kind": "endpoint", "type": "NoChoices", "message": "the answer has no choices"}
                    break
                message = reply.choices[0].message
                tool_calls = list(message.tool_calls or [])
                sent: dict[str, Any] = {"role": "assistant", "content": message.content}
                if tool_calls:
                    sent["tool_calls"] = [
                        {"id": tc.id or f"call_{len(calls) + i}", "type": "function",
                         "function": {"name": tc.function.name, "arguments": tc.function.arguments}}
                        for i, tc in enumerate(tool_calls)]
                messages.append(sent)
                if not tool_calls:
                    ended, answer = True, message.content or ""
                    break
                for tc in sent["tool_calls"]:
                    result, ok = world.call(tc["function"]["name"], tc["function"]["arguments"])
                    calls.append({"turn": ti, "round": rounds, "id": tc["id"], "name": tc["function"]["name"],
                                  "arguments": tc["function"]["arguments"], "result": result, "ok": ok})
                    messages.append({"role": "tool", "tool_call_id": tc["id"], "content": result})
            turns.append({"ended": ended, "answer": answer, "rounds": rounds})
            if not ended:
                break  # the user never got an answer: the conversation stops here
    finally:
        client.close()
    return {"world": world, "turns": turns, "calls": calls, "messages": messages, "wire": wire, "error": error}


def run_agents(task: Task, args: argparse.Namespace) -> dict[str, Any]:
    """The same task through the OpenAI Agents SDK's runner: the tools are `FunctionTool`s
    over the same world (with the pool's own JSON schemas), the model an
    `OpenAIChatCompletionsModel` over an `AsyncOpenAI` client, one `Runner.run` per user
    message with `max_turns` the round cap."""
    return asyncio.run(_run_agents(task, args))


async def _run_agents(task: Task, args: argparse.Namespace) -> dict[str, Any]:
    from agents import (Agent, FunctionTool, ModelSettings, OpenAIChatCompletionsModel, Runner,
                        set_tracing_disabled)
    from agents.exceptions import MaxTurnsExceeded
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    world, wire = World(), Wire()
    calls: list[dict[str, Any]] = []
    state = {"turn": 0}

    def invoker(name: str):
        async def invoke(ctx: Any, arguments: str) -> str:
            result, ok = world.call(name, arguments)
            calls.append({"turn": state["turn"], "round": _rounds_in_turn(wire, state["turn"]),
                          "id": getattr(ctx, "tool_call_id", None), "name": name,
                          "arguments": arguments, "result": result, "ok": ok})
            return result
        return invoke

    tools = [FunctionTool(name=t.name, description=t.description, params_json_schema=t.parameters,
                          on_invoke_tool=invoker(t.name), strict_json_schema=False)
             for t in (TOOLS[n] for n in task.tools)]
    http = httpx.AsyncClient(transport=AsyncRecordingTransport(wire), timeout=args.timeout)
    client = AsyncOpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=args.timeout,
                         http_client=http)
    settings = ModelSettings(max_tokens=args.max_tokens, temperature=args.temperature)
    agent = Agent(name="Assistant", instructions=task.system, tools=tools,
                  model=OpenAIChatCompletionsModel(model=args.model, openai_client=client),
                  model_settings=settings)
    items: list[Any] = []
    turns: list[dict[str, Any]] = []
    error = None
    try:
        for ti, turn in enumerate(task.turns):
            state["turn"] = wire.turn = ti
            items = items + [{"role": "user", "content": turn.user}]
            ended, answer = False, None
            try:
                result = await Runner.run(agent, items, max_turns=args.max_rounds)
                items = result.to_input_list()
                ended, answer = True, result.final_output if isinstance(result.final_output, str) else str(result.final_output)
            except MaxTurnsExceeded:
                pass
            except Exception as e:  # an endpoint error or the SDK refusing an answer fails the task
                error = _error(e, "endpoint" if _endpoint_error(e) else "client")
            turns.append({"ended": ended, "answer": answer, "rounds": _rounds_in_turn(wire, ti)})
            if not ended:
                break
    finally:
        await client.close()
    return {"world": world, "turns": turns, "calls": calls, "messages": _messages_from_wire(wire),
            "wire": wire, "error": error}


def _rounds_in_turn(wire: Wire, turn: int) -> int:
    return sum(1 for x in wire.exchanges if x["turn"] == turn)


def _messages_from_wire(wire: Wire) -> list[dict[str, Any]]:
    """The conversation as the endpoint last saw it, plus its last answer."""
    for x in reversed(wire.exchanges):
        req = x.get("request")
        if isinstance(req, dict) and isinstance(req.get("messages"), list):
            messages = list(req["messages"])
            resp = x.get("response")
            if isinstance(resp, dict) and resp.get("choices"):
                messages.append(resp["choices"][0].get("message"))
            return messages
    return []


CLIENTS = {"openai": run_openai, "agents": run_agents}


# -- one task, scored -------------------------------------------------------------------


def run_task(task: Task, args: argparse.Namespace) -> dict[str, Any]:
    start = time.monotonic()
    try:
        out = CLIENTS[args.client](task, args)
    except Exception as e:  # a bug or an unforeseen failure: recorded, the run goes on
        out = {"world": World(), "turns": [], "calls": [], "messages": [], "wire": Wire(),
               "error": {"kind": "endpoint" if _endpoint_error(e) else "client", "type": type(e).__name__,
                         "message": str(e)[:2000], "traceback": traceback.format_exc()[-4000:]}}
    seconds = time.monotonic() - start
    world: World = out["world"]
    verdict = score(task, out["turns"], world.effects)
    latencies = [x["seconds"] for x in out["wire"].exchanges]
    return {
        "id": task.id,
        "split": task.split,
        "kind": task.kind,
        "settings_key": settings_key(args),
        "right": verdict["right"],
        "effects_ok": verdict["effects_ok"],
        "ended": verdict["ended"],
        "answer_ok": verdict["answer_ok"],
        "verdict": verdict,
        "error": out["error"],
        "turns": out["turns"],
        "model_calls": len(out["wire"].exchanges),
        "tool_calls": out["calls"],
        "lookups": dict(world.lookups),
        "tool_errors": world.errors,
        "effects": world.effects,
        "seconds": round(seconds, 3),
        "latency": {"mean": round(sum(latencies) / len(latencies), 3) if latencies else None,
                    "max": round(max(latencies), 3) if latencies else None},
        "messages": out["messages"],
        "exchanges": out["wire"].exchanges,
        "tools": list(task.tools),
    }


def failure_signs(task: Task, record: dict[str, Any]) -> list[str]:
    """What went wrong in the loop, named from the transcript: a heuristic tally for the
    report (the verdict itself is the scorer's)."""
    signs = []
    calls = record["tool_calls"]
    answers = [t.get("answer") or "" for t in record["turns"] if t.get("ended")]
    if task.needs_tool and not calls:
        signs.append("answered without calling")
    if not task.needs_tool and calls:
        signs.append("called on a task that needs no tool")
    if any(re.search(r"Function call\s*:|(^|\n)\s*Returned\s*:", a) for a in answers):
        signs.append("echoed a Function call/Returned block")
    if any(re.search(r"\{\s*\"(name|function)\"\s*:\s*\"(" + "|".join(TOOLS) + r")\"", a) for a in answers):
        signs.append("wrote a JSON call as text")
    seen: dict[tuple[int, str, str], set[int]] = {}
    for c in calls:
        seen.setdefault((c["turn"], c["name"], _canonical(c["arguments"])), set()).add(c["round"])
    if any(len(rounds) > 1 for rounds in seen.values()):
        signs.append("repeated a call in a later round")
    if any(not c["ok"] for c in calls):
        signs.append("a call failed")
    if any(c["name"] not in task.tools for c in calls):
        signs.append("called a tool not offered")
    if record["verdict"]["effects"]["duplicate"] or any(
            len([e for e in record["effects"] if e == x]) > 1 for x in record["effects"]):
        signs.append("did a side effect more than once")
    if not record["ended"] and not record["error"]:
        signs.append("did not end within the cap")
    return signs


def _canonical(arguments: Any) -> str:
    try:
        return json.dumps(json.loads(arguments) if isinstance(arguments, str) else arguments, sort_keys=True)
    except (json.JSONDecodeError, TypeError):
        return str(arguments)


def rescore(record: dict[str, Any]) -> dict[str, Any]:
    """A stored record scored again by the current scorer, from its answers and side
    effects: a change to the scoring applies to earlier runs without asking the model again."""
    task = BY_ID.get(record["id"])
    if task is None:
        return record
    verdict = score(task, record["turns"], record["effects"])
    out = {**record, "right": verdict["right"], "effects_ok": verdict["effects_ok"], "ended": verdict["ended"],
           "answer_ok": verdict["answer_ok"], "verdict": verdict}
    out["signs"] = failure_signs(task, out)
    return out


def settings_key(args: argparse.Namespace) -> dict[str, Any]:
    """The settings a record was made with: a rerun must use the same to continue it."""
    return {"base_url": args.base_url, "model": args.model, "client": args.client,
            "max_rounds": args.max_rounds, "temperature": args.temperature, "max_tokens": args.max_tokens}


# -- the report --------------------------------------------------------------------------


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    def count(pred) -> int:
        return sum(1 for r in records if pred(r))

    tool = [r for r in records if r["kind"] == "tool"]
    none = [r for r in records if r["kind"] == "none"]
    turn_rounds = [t["rounds"] for r in records for t in r["turns"]]
    lookups: Counter = Counter()
    for r in records:
        lookups.update(r["lookups"])
    return {
        "tasks": len(records),
        "right": count(lambda r: r["right"]),
        "effects_exactly_once": count(lambda r: r["effects_ok"]),
        "ended_within_cap": count(lambda r: r["ended"]),
        "answer_has_facts": count(lambda r: r["answer_ok"]),
        "tool_tasks": len(tool),
        "tool_tasks_right": sum(1 for r in tool if r["right"]),
        "no_tool_tasks": len(none),
        "no_tool_tasks_right": sum(1 for r in none if r["right"]),
        "mean_rounds": round(sum(turn_rounds) / len(turn_rounds), 2) if turn_rounds else None,
        "model_calls": sum(r["model_calls"] for r in records),
        "tool_calls": sum(len(r["tool_calls"]) for r in records),
        "tool_errors": sum(r["tool_errors"] for r in records),
        "lookups": dict(sorted(lookups.items())),
        "endpoint_errors": count(lambda r: (r["error"] or {}).get("kind") == "endpoint"),
        "client_errors": count(lambda r: (r["error"] or {}).get("kind") == "client"),
        "signs": dict(Counter(sign for r in records for sign in r.get("signs", [])).most_common()),
        "seconds_total": round(sum(r["seconds"] for r in records), 1),
        "seconds_per_task": round(sum(r["seconds"] for r in records) / len(records), 1) if records else None,
    }


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f} %)" if d else "0/0"


def markdown(report: dict[str, Any]) -> str:
    s, st = report["summary"], report["settings"]
    n = s["tasks"]
    lines = [
        f"# Conversations: {st['model']}, `{st['client']}` client, set `{st['set']}`",
        "",
        f"Served: {st['note'] or '(no note)'}  ",
        f"Endpoint: `{st['base_url']}`; round cap {st['max_rounds']} model calls per user message; "
        f"temperature {st['temperature']}; max_tokens {st['max_tokens']}.  ",
        f"Command: `{st['command']}`",
        "",
        "| measure | value |",
        "|---|---|",
        f"| tasks right (all three criteria) | {_pct(s['right'], n)} |",
        f"| side effects exactly once | {_pct(s['effects_exactly_once'], n)} |",
        f"| ended within the cap | {_pct(s['ended_within_cap'], n)} |",
        f"| answer in words with the facts | {_pct(s['answer_has_facts'], n)} |",
        f"| tool tasks right | {_pct(s['tool_tasks_right'], s['tool_tasks'])} |",
        f"| no-tool tasks right | {_pct(s['no_tool_tasks_right'], s['no_tool_tasks'])} |",
        f"| mean rounds (model calls per user message) | {s['mean_rounds']} |",
        f"| tool calls (of them failed) | {s['tool_calls']} ({s['tool_errors']}) |",
        f"| endpoint errors / client errors | {s['endpoint_errors']} / {s['client_errors']} |",
        f"| seconds per task (total) | {s['seconds_per_task']} ({s['seconds_total']}) |",
        "",
        "What went wrong in the loop (tasks showing each sign; a task may show several):",
        "",
        "| sign | tasks |",
        "|---|---|",
        *[f"| {sign} | {n} |" for sign, n in s["signs"].items()],
        "",
        "| task | right | effects | ended | answer | rounds | why not |",
        "|---|---|---|---|---|---|---|",
    ]
    mark = {True: "yes", False: "no"}
    for r in report["tasks"]:
        why = []
        if r["error"]:
            why.append(f"{r['error']['type']}: {r['error']['message'][:80]}")
        if not r["effects_ok"]:
            why.append(r["verdict"]["effects"]["why"])
        for i, t in enumerate(r["verdict"]["turns"]):
            if not t["ended"]:
                why.append(f"message {i + 1} not ended")
            elif not t["answer"]["ok"]:
                why.append(t["answer"]["why"])
        rounds = "+".join(str(t["rounds"]) for t in r["turns"]) or "0"
        cell = "; ".join(why).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r['id']} | {mark[r['right']]} | {mark[r['effects_ok']]} | {mark[r['ended']]} | "
                     f"{mark[r['answer_ok']]} | {rounds} | {cell} |")
    return "\n".join(lines) + "\n"


def load_done(path: Path, key: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The records of an earlier run, the last line of each task winning. Refuses records
    made with other settings: they would mix two runs in one report."""
    done: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return done
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            print(f"warning: {path}:{n} is not JSON (a run cut short?); that task runs again", file=sys.stderr)
            continue
        if record.get("settings_key") != key:
            sys.exit(f"{path} holds results made with other settings ({record.get('settings_key')}); "
                     f"use another --out, or the same settings ({key}) to continue it")
        done[record["id"]] = record
    return done


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base-url", required=True, help="the endpoint's OpenAI base URL, e.g. http://127.0.0.1:8089/v1")
    p.add_argument("--model", required=True, help="the model name sent in each request")
    p.add_argument("--set", default="dev", choices=sorted(SETS), help="dev (20 tasks), test (44) or all")
    p.add_argument("--out", required=True, type=Path, help="the report's JSON file; .jsonl and .md go beside it")
    p.add_argument("--client", default="openai", choices=sorted(CLIENTS))
    p.add_argument("--limit", type=int, default=None, help="run only the first N tasks of the set")
    p.add_argument("--task", action="append", default=[], metavar="ID",
                   help="run only this task of the set (repeatable)")
    p.add_argument("--max-rounds", type=int, default=6, help="model calls allowed per user message (default 6)")
    p.add_argument("--note", default="", help="how the model was served, kept in the report")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per request (default 600)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="sent with every request (default 0, greedy); a negative value sends none")
    p.add_argument("--max-tokens", type=int, default=512, help="max_tokens of every request (default 512)")
    p.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "unused"))
    args = p.parse_args(argv)
    if args.max_rounds < 1:
        p.error("--max-rounds must be at least 1")
    if args.temperature is not None and args.temperature < 0:
        args.temperature = None
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    tasks = SETS[args.set][: args.limit] if args.limit else SETS[args.set]
    if args.task:
        unknown = sorted(set(args.task) - {t.id for t in tasks})
        if unknown:
            raise SystemExit(f"--task: no task {', '.join(unknown)} in the set {args.set!r}")
        tasks = [t for t in tasks if t.id in args.task]
    out: Path = args.out
    jsonl = out.with_suffix(".jsonl")
    key = settings_key(args)
    done = load_done(jsonl, key)
    out.parent.mkdir(parents=True, exist_ok=True)
    with jsonl.open("a") as log:
        for i, task in enumerate(tasks, 1):
            old = done.get(task.id)
            if old is not None and (old.get("error") or {}).get("kind") != "endpoint":
                continue
            record = run_task(task, args)
            log.write(json.dumps(record, ensure_ascii=False) + "\n")
            log.flush()
            done[task.id] = record
            err = f" error {record['error']['type']}" if record["error"] else ""
            print(f"[{i}/{len(tasks)}] {task.id}: {'right' if record['right'] else 'wrong'} "
                  f"(effects {record['effects_ok']}, ended {record['ended']}, answer {record['answer_ok']}, "
                  f"{record['model_calls']} calls, {record['seconds']:.0f} s){err}", file=sys.stderr, flush=True)
    records = [rescore(done[t.id]) for t in tasks if t.id in done]
    report = {
        "settings": {**key, "set": args.set, "limit": args.limit, "note": args.note, "timeout": args.timeout,
                     "command": "python3 crates/atfunc-lab/conversations/run.py " + shlex.join(argv)},
        "summary": summarize(records),
        "tasks": records,
    }
    out.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    s = report["summary"]
    print(f"{s['right']}/{s['tasks']} right; effects {s['effects_exactly_once']}, ended {s['ended_within_cap']}, "
          f"answers {s['answer_has_facts']}; no-tool {s['no_tool_tasks_right']}/{s['no_tool_tasks']}; "
          f"mean rounds {s['mean_rounds']}; report {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
