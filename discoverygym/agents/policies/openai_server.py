"""OpenAIServerPolicy: sampling from an OpenAI-compatible completions server (vLLM's ``vllm serve``).

Start the server with LoRA enabled and runtime adapter loading allowed, e.g.::

    VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve Qwen/Qwen3-8B --enable-lora --max-lora-rank 32 \\
        --logprobs-mode processed_logprobs

Requests (``POST {url}/v1/completions``) send the prompt as token ids (the chat template is applied
here with the model's tokenizer, so the training side sees exactly the sampled tokens) and ask for
the sampled tokens as ids (``return_tokens_as_token_ids``) with their log-probabilities
(``logprobs: 0``; with ``processed_logprobs`` these are under the temperature-scaled distribution,
as the importance-sampling loss needs). One request per prompt with ``n`` choices; all prompts of
a call are sent concurrently (``asyncio`` + ``httpx``), at most ``concurrency`` at a time.

After each training step the trainer saves the new LoRA adapter and calls :meth:`load_adapter`,
which posts it to ``/v1/load_lora_adapter`` under a new name; later requests use that name as
``model``. Requires ``httpx`` (``pip install 'discoverygym[vllm]'``) and a tokenizer
(``transformers``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from discoverygym.agents.policies.llm import (
    BackendUnavailable,
    LLMSample,
    check_edit_format,
    context_messages,
    encode_chat,
    make_sample,
)

__all__ = ["OpenAIServerPolicy", "ServerError", "ServerUnavailable", "check_url", "parse_choice", "probe_server"]


class ServerError(RuntimeError):
    """The server answered with an error status or an unexpected body (message has the details)."""


class ServerUnavailable(ServerError, BackendUnavailable):
    """The server cannot be reached (connection refused, DNS, timeout) or refuses at start-up.

    A :class:`~discoverygym.errors.BackendUnavailable`: the CLI exits with code 3.
    """


def check_url(url: str) -> str:
    """The base URL of an ``openai:URL`` spec, normalised (no trailing ``/`` or ``/v1``).

    Raises:
        ValueError: not an ``http://`` / ``https://`` URL with a host (and a valid port).
    """
    from urllib.parse import urlsplit

    text = str(url).strip()
    try:
        parts = urlsplit(text)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ValueError(f"openai:URL needs the base URL of an OpenAI-compatible server, such as "
                         f"http://127.0.0.1:8000; got {url!r}")
    return text.rstrip("/").removesuffix("/v1")


def probe_server(url: str, *, timeout_s: float = 30.0, api_key_env: str = "OPENAI_API_KEY") -> list[str]:
    """The model ids served at ``url`` (``GET /v1/models``): a cheap check before loading anything.

    Raises:
        ValueError: ``url`` is not an http(s) URL.
        BackendUnavailable: ``httpx`` is missing; :class:`ServerUnavailable`: the server cannot be
            reached, answers with an error or lists no model.
    """
    base = check_url(url)
    try:
        import httpx
    except ImportError:
        raise BackendUnavailable("OpenAIServerPolicy needs httpx: pip install 'discoverygym[vllm]'") from None
    key = os.environ.get(api_key_env)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        r = httpx.get(base + "/v1/models", headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise ServerUnavailable(f"cannot reach the OpenAI-compatible server at {base}: "
                                f"GET /v1/models failed ({_reason(exc)})") from None
    if r.status_code >= 400:
        raise ServerUnavailable(f"the server at {base} is not usable: GET /v1/models: HTTP {r.status_code}: "
                                f"{_reason(r.text)}")
    try:
        ids = [m["id"] for m in r.json().get("data") or []]
    except (ValueError, TypeError, KeyError, AttributeError):
        raise ServerUnavailable(f"the server at {base} is not an OpenAI-compatible server "
                                "(GET /v1/models did not list models)") from None
    if not ids:
        raise ServerUnavailable(f"the server at {base} lists no model (GET /v1/models)")
    return ids


def _reason(exc: BaseException | str) -> str:
    """One line: the exception's message, or its type when it has none."""
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _token_id(token: str) -> int:
    """``"token_id:123"`` (vLLM ``return_tokens_as_token_ids``) -> 123.

    Raises:
        ServerError: another format (the server did not honour ``return_tokens_as_token_ids``).
    """
    if isinstance(token, str) and token.startswith("token_id:"):
        return int(token.split(":", 1)[1])
    raise ServerError(f"server returned token {token!r}, not 'token_id:N' (needs return_tokens_as_token_ids)")


def parse_choice(choice: dict) -> tuple[list[int], list[float], str, str]:
    """``(token ids, log-probs, text, finish_reason)`` of one completions-API choice.

    Raises:
        ServerError: no ``logprobs`` in the choice, or mismatched lengths.
    """
    lp = choice.get("logprobs") or {}
    tokens, values = lp.get("tokens"), lp.get("token_logprobs")
    if tokens is None or values is None or len(tokens) != len(values):
        raise ServerError(f"choice without matching logprobs.tokens / token_logprobs: {str(choice)[:300]}")
    ids = [_token_id(t) for t in tokens]
    return ids, [float(v) for v in values], choice.get("text", ""), choice.get("finish_reason") or "stop"


class OpenAIServerPolicy:
    """Policy backed by an OpenAI-compatible ``/v1/completions`` server (see the module docstring).

    Args:
        url: base URL, e.g. ``http://127.0.0.1:8000`` (a trailing ``/v1`` is accepted).
        model: served model name (default: the first of ``GET /v1/models``).
        tokenizer: a tokenizer object, or a path / hub id to load (default: ``model``).
        max_new_tokens: ``max_tokens`` of each request.
        temperature: sampling temperature.
        system: optional system message.
        timeout_s: per-request timeout (seconds).
        concurrency: most requests in flight.
        api_key_env: environment variable holding the bearer token (never read from files).
        edit_format: ``"full"`` (whole programs) or ``"diff"`` (SEARCH/REPLACE blocks against the
            parent; :mod:`~discoverygym.agents.policies.edits`).

    Raises:
        ValueError: ``url`` is not an http(s) URL.
        BackendUnavailable: ``httpx`` is not installed; :class:`ServerUnavailable` (a
            BackendUnavailable): the server cannot be reached, answers with an error or lists no model.
    """

    action_modes = ("code",)

    def __init__(self, url: str, *, model: str | None = None, tokenizer: Any = None, max_new_tokens: int = 1024,
                 temperature: float = 1.0, system: str | None = None, timeout_s: float = 600.0,
                 concurrency: int = 64, api_key_env: str = "OPENAI_API_KEY",
                 edit_format: str = "full") -> None:
        try:
            import httpx
        except ImportError:
            raise BackendUnavailable("OpenAIServerPolicy needs httpx: pip install 'discoverygym[vllm]'") from None
        self._httpx = httpx
        self.edit_format = check_edit_format(edit_format)
        self.url = check_url(url)
        self.name = f"openai:{self.url}"
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.system = system
        self.timeout_s = float(timeout_s)
        self.concurrency = int(concurrency)
        key = os.environ.get(api_key_env)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        if model:
            self.base_model = model
        else:
            try:
                self.base_model = self._first_model()
            except ServerUnavailable:
                raise
            except ServerError as exc:
                raise ServerUnavailable(f"the server at {self.url} is not usable: {exc}") from None
        self.model = self.base_model
        if tokenizer is None or isinstance(tokenizer, (str, os.PathLike)):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(tokenizer or self.base_model))
        self.tokenizer = tokenizer
        self.adapters: list[str] = []

    # ------------------------------------------------------------------ HTTP
    def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        try:
            r = self._httpx.request(method, self.url + path, json=body, headers=self._headers, timeout=self.timeout_s)
        except self._httpx.TransportError as exc:
            raise ServerUnavailable(f"cannot reach the OpenAI-compatible server at {self.url}: "
                                    f"{method} {path} failed ({_reason(exc)})") from None
        except self._httpx.HTTPError as exc:
            raise ServerError(f"{method} {self.url}{path} failed: {_reason(exc)}") from None
        if r.status_code >= 400:
            raise ServerError(f"{method} {self.url}{path}: HTTP {r.status_code}: {r.text[:500]}")
        try:
            return r.json()
        except ValueError:
            return {"text": r.text}

    def _first_model(self) -> str:
        data = self._request("GET", "/v1/models").get("data") or []
        if not data:
            raise ServerError(f"{self.url}/v1/models lists no model")
        return data[0]["id"]

    def completion_body(self, prompt_ids: Sequence[int], n: int, seed: int) -> dict:
        """The JSON body of one ``/v1/completions`` request (token-id prompt, n choices, log-probs)."""
        return {"model": self.model, "prompt": list(prompt_ids), "n": int(n), "max_tokens": self.max_new_tokens,
                "temperature": self.temperature, "seed": int(seed), "logprobs": 0,
                "return_tokens_as_token_ids": True, "skip_special_tokens": False}

    async def _post_all(self, bodies: list[dict]) -> list[dict]:
        sem = asyncio.Semaphore(self.concurrency)
        async with self._httpx.AsyncClient(timeout=self.timeout_s, headers=self._headers) as client:
            async def one(body: dict) -> dict:
                async with sem:
                    try:
                        r = await client.post(self.url + "/v1/completions", json=body)
                    except self._httpx.TransportError as exc:
                        raise ServerUnavailable(f"cannot reach the OpenAI-compatible server at {self.url}: "
                                                f"POST /v1/completions failed ({_reason(exc)})") from None
                    except self._httpx.HTTPError as exc:
                        raise ServerError(f"POST {self.url}/v1/completions failed: {_reason(exc)}") from None
                    if r.status_code >= 400:
                        raise ServerError(f"POST {self.url}/v1/completions: HTTP {r.status_code}: {r.text[:500]}")
                    return r.json()

            return list(await asyncio.gather(*(one(b) for b in bodies)))

    # ------------------------------------------------------------------ policy
    def sample(self, contexts: Sequence[Any], n: int, rng: np.random.Generator) -> list[list[LLMSample]]:
        """``n`` :class:`LLMSample` per context; all contexts are requested concurrently.

        Raises:
            ServerError: a request failed or a choice lacks token ids / log-probs.
        """
        prompts, bodies = [], []
        for ctx in contexts:
            messages = context_messages(ctx, self.system, self.edit_format)
            ids = encode_chat(self.tokenizer, messages)
            prompts.append((messages, ids, getattr(ctx.problem, "language", "python") or "python", ctx))
            bodies.append(self.completion_body(ids, n, int(rng.integers(2**31 - 1))))
        replies = asyncio.run(self._post_all(bodies))
        out = []
        for c, ((messages, ids, language, ctx), reply) in enumerate(zip(prompts, replies)):
            choices = sorted(reply.get("choices") or [], key=lambda ch: ch.get("index", 0))
            if len(choices) != n:
                raise ServerError(f"asked for {n} choices, server returned {len(choices)}")
            group = []
            for choice in choices:
                toks, lps, text, finish = parse_choice(choice)
                group.append(make_sample(text, language, prompt_ids=list(ids), completion_ids=toks, logprobs=lps,
                                         mask=[True] * len(toks), finish_reason="length" if finish == "length" else "stop",
                                         context=c, prompt=messages[-1]["content"], ctx=ctx,
                                         edit_format=self.edit_format))
            out.append(group)
        return out

    def load_adapter(self, path: str | os.PathLike, name: str) -> None:
        """Load a LoRA adapter directory into the server as ``name`` and sample from it from now on.

        The previous adapter loaded by this policy is unloaded (best effort).

        Raises:
            ServerError: the server refused (e.g. started without ``--enable-lora``).
        """
        self._request("POST", "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(Path(path).resolve())})
        previous = self.adapters[-1] if self.adapters else None
        self.adapters.append(name)
        self.model = name
        if previous is not None:
            try:
                self._request("POST", "/v1/unload_lora_adapter", {"lora_name": previous})
            except ServerError:
                pass
