"""A small OpenAI-compatible completions server for tests (stdlib ``http.server``, loopback only).

It serves one local causal LM through :class:`~discoverygym.agents.policies.hf.HFPolicy` and
implements the subset of vLLM's API that :class:`OpenAIServerPolicy` uses:

* ``GET /v1/models`` — the base model and every loaded adapter;
* ``POST /v1/completions`` — ``prompt`` as token ids, ``n``, ``max_tokens``, ``temperature``,
  ``seed``, ``logprobs`` and ``return_tokens_as_token_ids`` (tokens come back as ``token_id:N``
  with their log-probabilities under the temperature-scaled distribution);
* ``POST /v1/load_lora_adapter`` / ``/v1/unload_lora_adapter`` — ``lora_name`` + ``lora_path``.

Requests for an adapter name swap that adapter's weights in before sampling (one request at a
time). Use::

    with serve(model_dir) as url:
        policy = OpenAIServerPolicy(url)
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Model:
    def __init__(self, model_dir: Path, lora_rank: int) -> None:
        from discoverygym.agents.policies.hf import HFPolicy

        self.name = str(model_dir)
        self.policy = HFPolicy(model_dir, device="cpu", lora_rank=lora_rank)
        self.base_state = self.policy.state_dict()  # zero LoRA B: the base model
        self.adapters: dict[str, dict] = {}
        self.lock = threading.Lock()

    def complete(self, body: dict) -> dict:
        import torch

        name = body.get("model")
        if name != self.name and name not in self.adapters:
            raise KeyError(f"model {name!r} not found")
        prompt = body["prompt"]
        if not isinstance(prompt, list) or not all(isinstance(t, int) for t in prompt):
            raise ValueError("this test server takes the prompt as a list of token ids")
        with self.lock:
            self.policy.load_state_dict(self.base_state if name == self.name else self.adapters[name])
            self.policy.temperature = float(body.get("temperature", 1.0)) or 1.0
            gen = torch.Generator().manual_seed(int(body.get("seed", 0)))
            rows = self.policy.generate_ids(prompt, int(body.get("n", 1)), int(body.get("max_tokens", 16)), gen)
        tok = self.policy.tokenizer
        choices = []
        for i, (ids, lps, ended) in enumerate(rows):
            tokens = [f"token_id:{t}" for t in ids] if body.get("return_tokens_as_token_ids") else \
                [tok.decode([t]) for t in ids]
            choices.append({"index": i, "text": tok.decode(ids, skip_special_tokens=True),
                            "finish_reason": "stop" if ended else "length",
                            "logprobs": {"tokens": tokens, "token_logprobs": lps}})
        return {"id": "cmpl-test", "object": "text_completion", "model": name, "choices": choices}

    def load(self, body: dict) -> None:
        path = Path(body["lora_path"])
        if not (path / "adapter_model.safetensors").exists():
            raise FileNotFoundError(f"no adapter at {path}")
        with self.lock:
            self.policy.load_adapter(path)
            self.adapters[body["lora_name"]] = self.policy.state_dict()


class JSONHandler(BaseHTTPRequestHandler):
    """Quiet request handler speaking JSON: :meth:`_body` reads the request, :meth:`_send` answers.

    Shared by the loopback servers of the tests (completions here, chat in ``tests/chat_server.py``
    and the OpenEvolve round trip).
    """

    def log_message(self, *args) -> None:  # quiet
        pass

    def _body(self) -> dict:
        """The request's JSON object (``{}`` for an empty body)."""
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

    def _send(self, code: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _handler(model: _Model) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        def do_GET(self) -> None:
            if self.path == "/v1/models":
                ids = [model.name, *model.adapters]
                self._send(200, {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            body = self._body()
            try:
                if self.path == "/v1/completions":
                    self._send(200, model.complete(body))
                elif self.path == "/v1/load_lora_adapter":
                    model.load(body)
                    self._send(200, {"status": "ok"})
                elif self.path == "/v1/unload_lora_adapter":
                    model.adapters.pop(body.get("lora_name"), None)
                    self._send(200, {"status": "ok"})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
            except KeyError as exc:
                self._send(404, {"error": {"message": str(exc)}})
            except (ValueError, FileNotFoundError) as exc:
                self._send(400, {"error": {"message": str(exc)}})

    return Handler


@contextlib.contextmanager
def serve(model_dir: Path, lora_rank: int = 4) -> Iterator[str]:
    """Serve ``model_dir`` on 127.0.0.1 (free port) in a thread; yields the base URL.

    ``lora_rank`` must match the adapters that will be loaded.
    """
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(_Model(Path(model_dir), lora_rank)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _Canned:
    """A model stand-in that answers with ``responder(prompt_text, index)`` (canned texts, no weights).

    The prompt's token ids are decoded with the tokenizer of ``tokenizer_dir``; the answer comes
    back verbatim as ``text``, with its token ids and log-probabilities 0.0.
    """

    def __init__(self, tokenizer_dir: Path, responder) -> None:
        from transformers import AutoTokenizer

        self.name = str(tokenizer_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        self.responder = responder
        self.adapters: dict[str, dict] = {}
        self.prompts: list[str] = []

    def complete(self, body: dict) -> dict:
        prompt = self.tokenizer.decode(body["prompt"], skip_special_tokens=True)
        self.prompts.append(prompt)
        choices = []
        for i in range(int(body.get("n", 1))):
            text = self.responder(prompt, i)
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) or [0]
            choices.append({"index": i, "text": text, "finish_reason": "stop",
                            "logprobs": {"tokens": [f"token_id:{t}" for t in ids], "token_logprobs": [0.0] * len(ids)}})
        return {"id": "cmpl-canned", "object": "text_completion", "model": self.name, "choices": choices}

    def load(self, body: dict) -> None:
        self.adapters[body["lora_name"]] = {}


@contextlib.contextmanager
def serve_canned(tokenizer_dir: Path, responder) -> Iterator[tuple[str, _Canned]]:
    """Serve canned answers (``responder(prompt_text, choice_index) -> text``) on 127.0.0.1.

    Yields ``(base URL, model)``; ``model.prompts`` collects the decoded prompts.
    """
    model = _Canned(Path(tokenizer_dir), responder)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", model
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
