"""LiteLLMPolicy: hosted or local chat models through LiteLLM (``--policy litellm:MODEL``).

``MODEL`` is a LiteLLM model string: ``openai/gpt-4o-mini``, ``anthropic/claude-sonnet-4-5``,
``gemini/gemini-2.5-flash``, ``openrouter/qwen/qwen3-coder``, ``ollama_chat/qwen2.5-coder``,
``hosted_vllm/Qwen/Qwen3-8B`` or any OpenAI-compatible chat endpoint as ``openai/NAME`` with
``api_base``. Keys come from the usual environment variables (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``, ``OPENROUTER_API_KEY``...), never from files: LiteLLM's
``.env`` loading is switched off (``LITELLM_MODE=PRODUCTION``) and its price map is the one shipped
with the package (``LITELLM_LOCAL_MODEL_COST_MAP=True``, no network at import). The endpoint is
``api_base`` (``--policy-kwargs '{"api_base": "http://127.0.0.1:8000/v1"}'``) or LiteLLM's own
variables (``OPENAI_API_BASE``, ``OLLAMA_API_BASE``...).

What it can drive: frozen search (``discoverygym search --action-mode code``). A chat API returns
text, not the log-probabilities of a model you hold, so ``discoverygym train`` and
``discoverygym post-train`` refuse it (:func:`~discoverygym.policy.chat_refusal`); train with ``hf:``, ``openai:URL``
(vLLM), ``vllm:`` or ``tinker:``.

Each of the K samples of a prompt is one chat request (providers differ on ``n``); at most
``max_concurrency`` requests are in flight over the whole policy. Rate limits (429), 5xx,
timeouts and connection errors are retried ``num_retries`` times with exponential back-off
(``retry_base_s · 2^attempt``, capped at ``retry_max_s``, with jitter). Every call's usage goes
to the :class:`~discoverygym.agents.policies.usage.UsageTracker` (``usage.jsonl``); the limits
are checked before each prompt's batch.
"""

from __future__ import annotations

import os
import random
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from discoverygym.agents.policies.llm import BackendUnavailable, LLMSample, context_messages, make_sample
from discoverygym.agents.policies.usage import UsageLimitReached, UsageTracker

__all__ = ["ChatError", "LiteLLMPolicy", "UsageLimitReached", "import_litellm"]



class ChatError(RuntimeError):
    """A chat request failed for good (after the retries, or a non-retryable error)."""


def import_litellm() -> Any:
    """Import LiteLLM with ``.env`` loading and the remote price-map fetch switched off.

    Raises:
        BackendUnavailable: LiteLLM is not installed (``pip install 'discoverygym[chat]'``).
    """
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")  # no dotenv: keys only from the environment
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # the price map shipped with LiteLLM
    try:
        with warnings.catch_warnings():  # pydantic warns about LiteLLM's TypedDicts at import
            warnings.simplefilter("ignore")
            import litellm
    except ImportError:
        raise BackendUnavailable("litellm:MODEL needs LiteLLM: pip install 'discoverygym[chat]'") from None
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


def _retryable(litellm: Any) -> tuple[type[BaseException], ...]:
    names = ("RateLimitError", "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
             "APIConnectionError", "Timeout")
    return tuple(getattr(litellm, n) for n in names if isinstance(getattr(litellm, n, None), type))


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


class LiteLLMPolicy:
    """Code-mode policy backed by a chat model through LiteLLM (see the module docstring).

    Args:
        model: the LiteLLM model string (what follows ``litellm:``).
        api_base: endpoint URL (default: LiteLLM's per-provider default / environment variables).
        max_new_tokens: ``max_tokens`` of each request.
        temperature: sampling temperature.
        system: optional system message.
        timeout_s: per-request timeout (seconds).
        num_retries: retries of a rate-limited / 5xx / timed-out request.
        retry_base_s: first back-off delay (seconds); doubles each retry.
        retry_max_s: longest back-off delay (seconds).
        max_concurrency: most requests in flight at once.
        send_seed: pass a per-request seed drawn from the search's random stream (OpenAI honours it).
        completion_kwargs: extra arguments for ``litellm.completion`` (e.g. ``reasoning_effort``).
        usage: the run's :class:`UsageTracker` (default: an in-memory one without limits).
        edit_format: ``"full"`` programs or ``"diff"`` SEARCH/REPLACE blocks against the parent
            (:mod:`discoverygym.agents.policies.edits`).

    Raises:
        BackendUnavailable: LiteLLM is not installed.
        ValueError: a bad setting; a cost cap on a model without prices.
    """

    action_modes = ("code",)

    def __init__(self, model: str, *, api_base: str | None = None, max_new_tokens: int = 4096,
                 temperature: float = 1.0, system: str | None = None, timeout_s: float = 600.0,
                 num_retries: int = 5, retry_base_s: float = 1.0, retry_max_s: float = 60.0,
                 max_concurrency: int = 8, send_seed: bool = True, completion_kwargs: dict | None = None,
                 usage: UsageTracker | None = None, edit_format: str = "full") -> None:
        if not model:
            raise ValueError("litellm:MODEL names no model")
        if int(max_concurrency) < 1 or int(num_retries) < 0 or int(max_new_tokens) < 1:
            raise ValueError("max_concurrency and max_new_tokens must be >= 1, num_retries >= 0")
        self._litellm = import_litellm()
        self.model = model
        self.name = f"litellm:{model}"
        self.api_base = api_base
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.system = system
        if edit_format not in ("full", "diff"):
            raise ValueError(f"edit_format must be 'full' or 'diff', got {edit_format!r}")
        self.edit_format = edit_format
        self.timeout_s = float(timeout_s)
        self.num_retries = int(num_retries)
        self.retry_base_s = float(retry_base_s)
        self.retry_max_s = float(retry_max_s)
        self.max_concurrency = int(max_concurrency)
        self.send_seed = bool(send_seed)
        self.completion_kwargs = dict(completion_kwargs or {})
        self.usage = usage if usage is not None else UsageTracker()
        self.usage.check_priced(model)
        self._slots = threading.BoundedSemaphore(self.max_concurrency)
        self._retryable = _retryable(self._litellm)

    # ------------------------------------------------------------------ one call
    def _request(self, messages: list[dict], seed: int) -> Any:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.max_new_tokens,
                                  "temperature": self.temperature, "timeout": self.timeout_s,
                                  "num_retries": 0, "max_retries": 0, **self.completion_kwargs}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.send_seed:
            kwargs["seed"] = int(seed)
        return self._litellm.completion(**kwargs)

    def complete(self, messages: list[dict], seed: int, tag: dict | None = None) -> tuple[str, str, dict]:
        """One chat call with retries: ``(text, finish_reason, usage record)``; the record is logged.

        Raises:
            BackendUnavailable: authentication failed, or the endpoint stays unreachable.
            ChatError: any other failure (after the retries when retryable).
        """
        lt = self._litellm
        retries = 0
        with self._slots:
            t0 = time.perf_counter()
            while True:
                try:
                    response = self._request(messages, seed)
                    break
                except self._retryable as exc:
                    text = str(exc)
                    if "Missing credentials" in text or "api_key client option must be set" in text:
                        # a missing key surfaces as a server error from LiteLLM: retrying cannot help
                        raise BackendUnavailable(f"{self.model}: no API key (set the provider's API key "
                                                 f"environment variable, e.g. OPENAI_API_KEY): {_short(exc)}") from None
                    if retries >= self.num_retries:
                        if isinstance(exc, getattr(lt, "APIConnectionError", ())):
                            raise BackendUnavailable(f"cannot reach {self.model}: {_short(exc)}") from None
                        raise ChatError(f"{self.model}: {type(exc).__name__} after {retries} retries: "
                                        f"{_short(exc)}") from None
                    delay = min(self.retry_max_s, self.retry_base_s * 2 ** retries) * (1 + 0.25 * random.random())
                    retries += 1
                    time.sleep(delay)
                except getattr(lt, "AuthenticationError", ()) as exc:
                    raise BackendUnavailable(f"{self.model}: authentication failed (set the provider's API key "
                                             f"environment variable): {_short(exc)}") from None
                except Exception as exc:  # noqa: BLE001 - LiteLLM maps provider errors to many types
                    raise ChatError(f"{self.model}: {type(exc).__name__}: {_short(exc)}") from None
            latency = time.perf_counter() - t0
        choice = (_get(response, "choices") or [None])[0]
        message = _get(choice, "message")
        text = _get(message, "content") or ""
        finish = _get(choice, "finish_reason") or "stop"
        u = _get(response, "usage")
        prompt_t = int(_get(u, "prompt_tokens", 0) or 0)
        completion_t = int(_get(u, "completion_tokens", 0) or 0)
        reasoning_t = int(_get(_get(u, "completion_tokens_details"), "reasoning_tokens", 0) or 0)
        record = {"model": self.model, **(tag or {}), "prompt_tokens": prompt_t, "completion_tokens": completion_t,
                  "reasoning_tokens": reasoning_t, "latency_s": round(latency, 6), "retries": retries,
                  "cost_usd": self.usage.cost(self.model, prompt_t, completion_t), "finish_reason": finish,
                  "time": time.time()}
        self.usage.record(record)
        return text, finish, record

    # ------------------------------------------------------------------ policy
    def sample(self, contexts: Sequence[Any], n: int, rng: np.random.Generator) -> list[list[LLMSample]]:
        """``n`` samples per context (one chat request each, concurrently).

        Raises:
            UsageLimitReached: a run-wide limit was reached before this batch (nothing was requested).
            ChatError / BackendUnavailable: a request failed for good.
        """
        self.usage.check()
        jobs = []
        for c, ctx in enumerate(contexts):
            messages = context_messages(ctx, self.system, self.edit_format)
            language = getattr(ctx.problem, "language", "python") or "python"
            tag = {"traj": getattr(ctx, "trajectory", None), "step": getattr(ctx, "step", None)}
            for k in range(n):
                jobs.append((c, k, messages, language, int(rng.integers(2**31 - 1)), {**tag, "k": k}))
        with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), self.max_concurrency))) as pool:
            replies = list(pool.map(lambda j: self.complete(j[2], j[4], j[5]), jobs))
        out: list[list[LLMSample]] = [[] for _ in contexts]
        for (c, _k, messages, language, _seed, _tag), (text, finish, record) in zip(jobs, replies):
            out[c].append(make_sample(text, language, ctx=contexts[c], edit_format=self.edit_format,
                                      prompt_ids=[], completion_ids=[], logprobs=[], mask=[],
                                      finish_reason="length" if finish == "length" else "stop", context=c,
                                      prompt=messages[-1]["content"], extra={"usage": record}))
        return out

    def usage_scalars(self) -> dict[str, float]:
        """TensorBoard scalars of the run's usage (``cost/usd``, ``cost/tokens``)."""
        return self.usage.scalars()


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
