"""A scripted OpenAI-compatible server for the gateway tests.

It records every request it is sent and answers each chat completion with the next reply
a test scripted: a completion (as JSON, or as server-sent events cut into pieces of varying
sizes when the request asks for a stream), an error, a stall, a slow stream, raw bytes, or
raw bytes trickled out.
Standard library only; it listens on a free loopback port.
"""

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Sizes, in characters, of the text pieces of a streamed completion, and in bytes of the
# writes that carry the event stream: events are cut across writes on purpose.
TEXT_PIECES = [1, 4, 2, 9, 3, 17, 5, 1, 1, 6]
WRITE_PIECES = [7, 31, 2, 64, 13, 5, 120]

MODELS_BODY = b'{"object": "list", "data": [{"id": "tiny-model", "object": "model", "created": 1700000000, "owned_by": "test"}]}'


class Completion:
    """The model's answer `text`, non-streamed or streamed as the request asks; a stream's
    lines end with `line_end` (the event format allows "\n", "\r\n" and "\r")."""

    def __init__(self, text, finish_reason="stop", line_end="\n"):
        self.text = text
        self.finish_reason = finish_reason
        self.line_end = line_end


class Failure:
    """An HTTP error with a body (bytes, or JSON when a dict)."""

    def __init__(self, status, body):
        self.status = status
        self.body = body


class Stall:
    """Says nothing for `seconds`, then closes."""

    def __init__(self, seconds):
        self.seconds = seconds


class Slow:
    """A stream of `pieces` text deltas, `delay` seconds apart (after the first)."""

    def __init__(self, pieces, delay):
        self.pieces = pieces
        self.delay = delay


class Trickle:
    """These exact bytes, `size` bytes at a time, `delay` seconds apart: an upstream whose
    every piece comes in time but whose whole answer takes long."""

    def __init__(self, body, delay, size=1, content_type="application/json"):
        self.body = body
        self.delay = delay
        self.size = size
        self.content_type = content_type


class Gated:
    """A stream of text pieces, each `(text, wait)`: after a piece with `wait`, the next one
    is sent only once the test calls `proceed.release()` (or after 5 s, noted in `stalled`)."""

    def __init__(self, pieces):
        self.pieces = pieces
        self.proceed = threading.Semaphore(0)
        self.stalled = False


class Raw:
    """These exact bytes, with this status and content type."""

    def __init__(self, body, content_type="application/json", status=200):
        self.body = body
        self.content_type = content_type
        self.status = status


class Upstream:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        self.replies = []
        self.cancelled = threading.Event()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                upstream._record(self, b"")
                if self.path == "/v1/models":
                    self._send(200, "application/json", MODELS_BODY)
                else:
                    self._send(404, "application/json", b'{"error": {"message": "no such path"}}')

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                request = upstream._record(self, body)
                reply = upstream._next_reply()
                try:
                    upstream._answer(self, request, reply)
                except (BrokenPipeError, ConnectionResetError):
                    upstream.cancelled.set()

            def _send(self, status, content_type, body):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def script(self, *replies):
        with self.lock:
            self.replies.extend(replies)

    def reset(self):
        with self.lock:
            self.requests.clear()
            self.replies.clear()
        self.cancelled.clear()

    def chat_requests(self):
        with self.lock:
            return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def _record(self, handler, body):
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = {
            "method": handler.command,
            "path": handler.path,
            "headers": {k.lower(): v for k, v in handler.headers.items()},
            "body": body,
            "json": parsed,
        }
        with self.lock:
            self.requests.append(request)
        return request

    def _next_reply(self):
        with self.lock:
            if self.replies:
                return self.replies.pop(0)
        return Failure(500, {"error": {"message": "no reply was scripted for this request"}})

    def _answer(self, handler, request, reply):
        wants_stream = bool((request["json"] or {}).get("stream"))
        model = (request["json"] or {}).get("model", "tiny-model")
        if isinstance(reply, Raw):
            handler.send_response(reply.status)
            handler.send_header("Content-Type", reply.content_type)
            if reply.content_type.startswith("text/event-stream"):
                handler.end_headers()
                write_in_pieces(handler.wfile, reply.body)
            else:
                handler.send_header("Content-Length", str(len(reply.body)))
                handler.end_headers()
                handler.wfile.write(reply.body)
        elif isinstance(reply, Failure):
            body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            handler._send(reply.status, "application/json", body)
        elif isinstance(reply, Stall):
            time.sleep(reply.seconds)
        elif isinstance(reply, Slow):
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.end_headers()
            for i, piece in enumerate(reply.pieces):
                if i:
                    time.sleep(reply.delay)
                handler.wfile.write(event(chunk(model, {"content": piece})))
                handler.wfile.flush()
            handler.wfile.write(event(chunk(model, {}, "stop")) + b"data: [DONE]\n\n")
        elif isinstance(reply, Trickle):
            handler.send_response(200)
            handler.send_header("Content-Type", reply.content_type)
            handler.send_header("Content-Length", str(len(reply.body)))
            handler.end_headers()
            for at in range(0, len(reply.body), reply.size):
                if at:
                    time.sleep(reply.delay)
                handler.wfile.write(reply.body[at:at + reply.size])
                handler.wfile.flush()
        elif isinstance(reply, Gated):
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.end_headers()
            for piece, wait in reply.pieces:
                handler.wfile.write(event(chunk(model, {"content": piece})))
                handler.wfile.flush()
                if wait and not reply.proceed.acquire(timeout=5):
                    reply.stalled = True
            handler.wfile.write(event(chunk(model, {}, "stop")) + b"data: [DONE]\n\n")
        elif wants_stream:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.end_headers()
            write_in_pieces(handler.wfile, stream_body(model, reply, request["json"]))
        else:
            body = json.dumps({
                "id": "chatcmpl-upstream",
                "object": "chat.completion",
                "created": 1700000000,
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": reply.finish_reason,
                }],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }).encode()
            handler._send(200, "application/json", body)


def chunk(model, delta, finish_reason=None):
    return {
        "id": "chatcmpl-upstream",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def event(payload):
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def stream_body(model, reply, request):
    out = [event(chunk(model, {"role": "assistant", "content": ""}))]
    text = reply.text
    sizes = itertools.cycle(TEXT_PIECES)
    at = 0
    while at < len(text):
        size = next(sizes)
        out.append(event(chunk(model, {"content": text[at:at + size]})))
        at += size
    out.append(event(chunk(model, {}, reply.finish_reason)))
    if (request.get("stream_options") or {}).get("include_usage"):
        usage = chunk(model, {})
        usage["choices"] = []
        usage["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        out.append(event(usage))
    out.append(b"data: [DONE]\n\n")
    body = b"".join(out)
    # The JSON in the events holds no raw line breaks, so every one is a line end.
    return body.replace(b"\n", reply.line_end.encode())


def write_in_pieces(wfile, body):
    sizes = itertools.cycle(WRITE_PIECES)
    at = 0
    while at < len(body):
        size = next(sizes)
        wfile.write(body[at:at + size])
        wfile.flush()
        at += size
