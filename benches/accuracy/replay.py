#!/usr/bin/env python3
# usage: replay.py PORT QUESTIONS.json REPORT.json...
"""Answers each chat request with the answer an earlier run stored for the same question,
so that a report can be read again under another reading (a variant that changes only how
answers are read, such as +once) without asking the model again."""
import json, sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
port, questions, reports = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
by_id = {}
for r in reports:
    for o in json.load(open(r))["outcomes"]:
        by_id[o["id"]] = o
by_question = {}
for line in open(questions):
    if line.strip():
        case = json.loads(line)
        key = json.dumps(case["question"][0], sort_keys=True)
        if case["id"] in by_id:
            by_question[key] = by_id[case["id"]]
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        asked = [m for m in body["messages"] if m["role"] != "system"]
        o = by_question.get(json.dumps(asked, sort_keys=True))
        if o is None:
            data, code = json.dumps({"error": {"message": "no stored answer"}}).encode(), 404
        else:
            data, code = json.dumps({"choices": [{"message": {"role": "assistant", "content": o["answer"]}, "finish_reason": "length"}],
                                     "usage": {"prompt_tokens": o["prompt_tokens"], "completion_tokens": o["completion_tokens"]}}).encode(), 200
        self.send_response(code); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def log_message(self, *a): pass
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
