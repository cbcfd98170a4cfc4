"""What every LLM policy backend shares: the sample record, errors, prompt rendering, spec parsing.

Backends (each an optional extra, imported lazily):

============  ================================================  ==========================
spec          class                                             trains
============  ================================================  ==========================
``hf:M``      :class:`~.hf.HFPolicy` (transformers + peft)      LoRA, locally (CPU/CUDA)
``openai:U``  :class:`~.openai_server.OpenAIServerPolicy`       via a local HFPolicy
``vllm:M``    :class:`~.vllm_engine.VLLMPolicy` (in-process)    via a local HFPolicy
``tinker:M``  :class:`~.tinker_policy.TinkerPolicy`             remotely (Tinker service)
``litellm:M`` :class:`~.chat.LiteLLMPolicy` (hosted chat)          no (search only)
============  ================================================  ==========================

``M`` is a local directory or a Hugging Face hub id, ``U`` the base URL of an OpenAI-compatible
server (e.g. ``http://127.0.0.1:8000``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from discoverygym import errors
from discoverygym.agents.prompts import ResponseError, build_messages, failed_program, parse_response
from discoverygym.policy import LLM_SPECS, is_llm_spec, split_spec

__all__ = [
    "LLM_SPECS",
    "BackendUnavailable",
    "LLMSample",
    "ModelUnavailable",
    "context_messages",
    "is_llm_spec",
    "make_sample",
    "split_spec",
]

class BackendUnavailable(errors.BackendUnavailable, ImportError):
    """The backend cannot be used here: its library is not installed (the message names the extra),
    its credentials are not set, or its service cannot be reached. The CLI exits with code 3."""


class ModelUnavailable(OSError):
    """A model could not be loaded: not a local directory and not obtainable from the hub."""


@dataclass
class LLMSample:
    """One sampled response and everything training needs about it.

    Attributes:
        action: the program to evaluate: the last fenced block of the response, or (parse failure)
            a stub from :func:`~discoverygym.agents.prompts.failed_program` that fails the contract.
        text: the decoded completion (reasoning included).
        prompt_ids: token ids of the prompt (list of int, length P).
        completion_ids: token ids of the completion (list of int, length T), forced text included.
        logprobs: behaviour log-probabilities of ``completion_ids`` under the sampler (natural log,
            temperature-scaled distribution; 0.0 where ``mask`` is False), length T.
        mask: which completion tokens were sampled (True) rather than forced (False), length T.
        parse_error: why no program could be read, else ``None``.
        finish_reason: ``"stop"`` (end-of-sequence) or ``"length"`` (hit ``max_new_tokens``).
        context: index of the sampling context this sample answers.
        prompt: the prompt text.
    """

    action: str
    text: str
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    mask: list[bool]
    parse_error: str | None = None
    finish_reason: str = "stop"
    context: int = 0
    prompt: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def logprob(self) -> Any:
        """``[T]`` float32 torch tensor of :attr:`logprobs` (the TrainablePolicy contract name)."""
        import torch

        return torch.tensor(self.logprobs, dtype=torch.float32)


def context_messages(ctx: Any, system: str | None = None) -> list[dict[str, str]]:
    """Chat messages for a :class:`~discoverygym.agents.policies.SamplingContext` (code mode)."""
    return build_messages(ctx.problem, ctx.parent, tuple(ctx.inspirations), system=system)


def make_sample(text: str, language: str, **fields: Any) -> LLMSample:
    """Parse ``text`` into an :class:`LLMSample` (a parse failure becomes a failing stub program)."""
    try:
        action, error = parse_response(text, language), None
    except ResponseError as exc:
        action, error = failed_program(str(exc), language), str(exc)
    return LLMSample(action=action, text=text, parse_error=error, **fields)


def encode_chat(tokenizer: Any, messages: Sequence[dict[str, str]]) -> list[int]:
    """Token ids of ``messages`` + the assistant header (the tokenizer's chat template).

    Tokenizers without a chat template get ``"{content}\\n"`` per message (a documented plain format).
    """
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    else:
        text = "".join(m["content"] + "\n" for m in messages)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
