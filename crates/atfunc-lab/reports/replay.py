#!/usr/bin/env python3
# usage: replay.py PORT QUESTIONS.json REPORT.json... [--mode MODE] [--sampled-to URL [--ask-invalid]]
"""Answers each chat request (and each llama-server /completion, as `lazy` asks it: the
question found in its prompt) with the answer an earlier run stored for the same question,
so that a report can be read again under another reading (a variant that changes only how
answers are read, such as +once) without asking the model again.

With --sampled-to URL, a request that carries a temperature above 0 (a sample of
--samples or --resamples) is passed on to that server instead, and its answer returned as
it is: the greedy answers are the stored ones, and only the samples are asked. That is
exact when the stored run used the same prompt, grammar and max_tokens, since greedy
decoding gives the stored answer again (up to the batching noise EVAL.md describes).
With --ask-invalid, a greedy request whose stored answer did not bind is passed on too,
so that a grammar changed since the stored run (one that only differs where those answers
went wrong) is measured on its own greedy answers. With --sampled-to, a request for which
no answer is stored is passed on as well, so that a run whose greedy answers are stored for
some cases only is finished on the live server. --mode MODE takes the stored answers of
that mode only (a report may hold several). llama-server's /apply-template, which `lazy`
asks before its /completion, is passed on to the --sampled-to server (only it knows its
chat template)."""
import json, sys, urllib.request
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

args = sys.argv[1:]


def option(name):
    if name not in args:
        return None
    i = args.index(name)
    if i + 1 >= len(args):
        sys.exit(f"replay.py: {name} needs a value")
    value = args[i + 1]
    del args[i:i + 2]
    return value


sampled_to = (option("--sampled-to") or "").rstrip("/") or None
mode = option("--mode")
ask_invalid = "--ask-invalid" in args
if ask_invalid:
    args.remove("--ask-invalid")
if len(args) < 3:
    sys.exit("usage: replay.py PORT QUESTIONS.json REPORT.json... [--mode MODE] [--sampled-to URL [--ask-invalid]]")
port, questions, reports = int(args[0]), args[1], args[2:]
by_id = {}
for r in reports:
    report = json.load(open(r))
    settings = report.get("settings", {})
    # A stored answer must be the greedy one: with samples or resamples the report keeps
    # the answer chosen among several, and the tokens of all of them. Only an answer made
    # under a grammar is resampled, so the stored answers of `text` (the prompt alone)
    # are the greedy ones whatever --resamples said.
    resampled = settings.get("resamples", 0) > 0 and mode != "text"
    if settings.get("samples", 1) > 1 or resampled:
        sys.exit(f"replay.py: {r} was written with --samples or --resamples; its answers "
                 "are not the greedy ones (use a report of --samples 1 --resamples 0)")
    for o in report["outcomes"]:
        if mode is None or o["mode"] == mode:
            by_id[o["id"]] = o
# A question may be asked with other functions in another case (BFCL `multiple` has
# four such pairs): the functions the request's system prompt lists tell them apart.
by_question = {}
for line in open(questions):
    if line.strip():
        case = json.loads(line)
        key = json.dumps(case["question"][0], sort_keys=True)
        if case["id"] in by_id:
            names = [f["name"] for f in case["function"]]
            by_question.setdefault(key, []).append((names, by_id[case["id"]]))


def stored(messages):
    """The stored outcome for a request's messages, or None."""
    asked = [m for m in messages if m["role"] != "system"]
    candidates = by_question.get(json.dumps(asked, sort_keys=True), [])
    if len(candidates) < 2:
        return candidates[0][1] if candidates else None
    prompt = " ".join(m["content"] for m in messages if m["role"] == "system")
    shown = [(sum(("@" + n + "(") in prompt for n in names) / len(names), o) for names, o in candidates]
    best = max(share for share, _ in shown)
    return next(o for share, o in shown if share == best)


def stored_for_prompt(prompt):
    """The stored outcome whose question a templated prompt holds (llama-server's
    /completion, as `lazy` asks it): every message of the question in the prompt; of
    several, the one whose functions the prompt shows most."""
    found = []
    for key, candidates in by_question.items():
        if all(m.get("content", "") in prompt for m in json.loads(key)):
            found.extend(candidates)
    if len(found) < 2:
        return found[0][1] if found else None
    shown = [(sum(("@" + n + "(") in prompt for n in names) / len(names), o) for names, o in found]
    best = max(share for share, _ in shown)
    return next(o for share, o in shown if share == best)


class H(BaseHTTPRequestHandler):
    def do_POST(self):
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        body = json.loads(raw)
        if sampled_to and (body.get("temperature") or 0) > 0:
            return self.forward(raw)
        if self.path.rstrip("/").endswith("/apply-template"):
            # Only the server knows its chat template.
            if sampled_to:
                return self.forward(raw)
            return self.reply(404, json.dumps({"error": {"message": "/apply-template needs --sampled-to"}}).encode())
        if self.path.rstrip("/").endswith("/completion"):
            return self.completion(raw, body)
        o = stored(body["messages"])
        if sampled_to and ask_invalid and o is not None and not o["valid"]:
            return self.forward(raw)
        if sampled_to and o is None:
            return self.forward(raw)
        if o is None:
            data, code = json.dumps({"error": {"message": "no stored answer"}}).encode(), 404
        else:
            data, code = json.dumps({"choices": [{"message": {"role": "assistant", "content": o["answer"]}, "finish_reason": "length"}],
                                     "usage": {"prompt_tokens": o["prompt_tokens"], "completion_tokens": o["completion_tokens"]}}).encode(), 200
        self.reply(code, data)

    def completion(self, raw, body):
        """llama-server's /completion: the stored answer as its `content`, the tokens as
        it counts them."""
        o = stored_for_prompt(body.get("prompt", ""))
        if sampled_to and (o is None or (ask_invalid and not o["valid"])):
            return self.forward(raw)
        if o is None:
            return self.reply(404, json.dumps({"error": {"message": "no stored answer"}}).encode())
        self.reply(200, json.dumps({"content": o["answer"], "tokens_evaluated": o["prompt_tokens"],
                                    "tokens_predicted": o["completion_tokens"]}).encode())

    def forward(self, raw):
        request = urllib.request.Request(sampled_to + self.path, data=raw,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=900) as answer:
                # A streamed answer (atfunc eval --stop-at-repeat) is passed on whole, as
                # the stream it is.
                self.reply(answer.status, answer.read(), answer.headers.get("Content-Type"))
        except urllib.error.HTTPError as error:
            self.reply(error.code, error.read())

    def reply(self, code, data, kind=None):
        self.send_response(code); self.send_header("Content-Type", kind or "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)

    def log_message(self, *a): pass


ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
