"""What the load scripts share: an upstream started as a child of the script itself, the
loop of such an upstream (a thread per kept-alive connection, each request read whole),
and an `atfunc serve` in front of it on a free port.

A script that uses `Upstream` answers `--serve-upstream PORT_FILE` (and whatever else it
passes) by serving on a free port and writing the port to PORT_FILE.
"""

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time


class Upstream:
    """`script --serve-upstream PORT_FILE *args`, run with this Python; its URL once it
    has written its port."""

    def __init__(self, script, *args):
        folder = tempfile.mkdtemp(prefix="atfunc-load-")
        port_file = os.path.join(folder, "port")
        self.process = subprocess.Popen(
            [sys.executable, script, "--serve-upstream", port_file, *args])
        deadline = time.time() + 10
        while not (os.path.exists(port_file) and open(port_file).read()):
            if time.time() > deadline:
                raise RuntimeError("the upstream did not start")
            time.sleep(0.05)
        self.url = "http://127.0.0.1:%s" % open(port_file).read()

    def stop(self):
        self.process.kill()
        self.process.wait()


class Gateway:
    """`atfunc serve` on a free port in front of `upstream`; its URL from the line it
    writes when it listens."""

    def __init__(self, binary, upstream, args):
        self.process = subprocess.Popen(
            [binary, "serve", "--upstream", upstream, "--listen", "127.0.0.1:0", "--no-detect", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        line = self.process.stderr.readline()
        if "listening on " not in line:
            raise RuntimeError("atfunc serve did not start: " + line)
        self.url = line.split("listening on ", 1)[1].split()[0]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def read_request(conn, buffered):
    """One request's body from `conn`, and what was read past it; None at the end."""
    while b"\r\n\r\n" not in buffered:
        data = conn.recv(65536)
        if not data:
            return None, b""
        buffered += data
    head, rest = buffered.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            return None, b""
        rest += data
    return rest[:length], rest[length:]


def serve_forever(port_file, answer, backlog):
    """Serves on a free port, written to `port_file`: a thread per connection, kept alive,
    which reads each request whole and calls `answer(conn, body)` to write its answer. A
    client that goes away (wrk at its end, a gateway stopped) ends its connection."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=backlog)
    with open(port_file, "w") as f:
        f.write(str(listener.getsockname()[1]))

    def handle(conn):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buffered = b""
        with conn:
            while True:
                body, buffered = read_request(conn, buffered)
                if body is None:
                    return
                answer(conn, body)

    def handle_quietly(conn):
        try:
            handle(conn)
        except OSError:
            pass

    while True:
        conn, _ = listener.accept()
        threading.Thread(target=handle_quietly, args=(conn,), daemon=True).start()
