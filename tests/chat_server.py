"""A small OpenAI-compatible *chat* server for tests (stdlib ``http.server``, loopback only).

``POST /v1/chat/completions`` answers with a canned CirclePacking-26-v0 program (code mode) in a
fenced block, and a fixed ``usage`` (prompt / completion / reasoning tokens), so cost is exact.
The first ``fail_first`` requests get HTTP 429 (a rate limit) to exercise the retries. Every
request is recorded in ``server.requests`` (the JSON body) and counted by status. Use::

    with serve_chat(fail_first=1) as server:
        url = server.url  # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.openai_server import JSONHandler

EXAMPLE = (Path(__file__).resolve().parents[1] / "discoverygym" / "examples" / "circle_packing.py").read_text()

#: the fixed usage of every successful answer.
USAGE = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500,
         "completion_tokens_details": {"reasoning_tokens": 100}}


def program(i: int) -> str:
    """The i-th canned program: the example layout with its radii shrunk a little (always valid)."""
    factor = 0.90 + 0.01 * (i % 10)
    return EXAMPLE.replace("return np.column_stack([c, r])", f"return np.column_stack([c, r * {factor}])")


class ChatServer:
    """State of a running loopback chat server (see the module docstring)."""

    def __init__(self, fail_first: int = 0, delay_s: float = 0.0) -> None:
        self.fail_first = fail_first
        self.delay_s = delay_s
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests: list[dict] = []
        self.answered = 0
        self.rejected = 0
        self.lock = threading.Lock()
        self.url = ""

    def answer(self, body: dict) -> tuple[int, dict]:
        """``(status, payload)`` of one chat request."""
        with self.lock:
            self.requests.append(body)
            if self.rejected < self.fail_first:
                self.rejected += 1
                return 429, {"error": {"message": "rate limited (test)", "type": "rate_limit_error"}}
            i = self.answered
            self.answered += 1
        text = f"Shrinking the radii a little.\n\n```python\n{program(i)}\n```\n"
        return 200, {"id": f"chatcmpl-{i}", "object": "chat.completion", "created": 0, "model": body.get("model"),
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": text}}],
                     "usage": USAGE}


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            body = self._body()
            if self.path.rstrip("/").endswith("/chat/completions"):
                with server.lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    time.sleep(server.delay_s)
                    reply = server.answer(body)
                finally:
                    with server.lock:
                        server.in_flight -= 1
                self._send(*reply)
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

    return Handler


@contextlib.contextmanager
def serve_chat(fail_first: int = 0, delay_s: float = 0.0) -> Iterator[ChatServer]:
    """Run a :class:`ChatServer` on 127.0.0.1 (free port) in a thread; yields it (``.url`` ends in ``/v1``).

    ``delay_s`` holds each chat request that long (to observe concurrency: ``max_in_flight``).
    """
    state = ChatServer(fail_first, delay_s)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
