"""What every LLM policy backend shares: the sample record, errors, prompt rendering, spec parsing.

The backends (each an optional extra, imported lazily) are the entries of the one backend table,
:mod:`discoverygym.agents.policies.backends`. :class:`BackendUnavailable` is
:class:`discoverygym.errors.BackendUnavailable` (an :class:`ImportError` too), re-exported here.

``M`` is a local directory or a Hugging Face hub id, ``U`` the base URL of an OpenAI-compatible
server (e.g. ``http://127.0.0.1:8000``).

Every backend takes ``edit_format="full"|"diff"`` (``--edit-format``) and passes it to
:func:`context_messages` (the prompt's answer rules) and :func:`make_sample` (the one place where a
response becomes a program): ``diff`` reads SEARCH/REPLACE blocks against the parent program
(:mod:`~discoverygym.agents.policies.edits`, the Aider/OpenEvolve format).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from discoverygym.agents.policies.edits import EDIT_FORMATS, apply_edit, check_edit_format
from discoverygym.agents.prompts import build_messages
from discoverygym.agents.responses import ResponseError, failed_program, parse_response
from discoverygym.errors import BackendUnavailable
from discoverygym.policy import Outcome, Sample, is_llm_spec, split_spec

__all__ = [
    "EDIT_FORMATS",
    "BackendUnavailable",
    "LLMSample",
    "ModelUnavailable",
    "check_edit_format",
    "context_messages",
    "is_llm_spec",
    "make_sample",
    "split_spec",
]

class ModelUnavailable(OSError):
    """A model could not be loaded: not a local directory and not obtainable from the hub."""


@dataclass(frozen=True, kw_only=True)
class LLMSample(Sample):
    """One sampled response and everything training needs about it (a :class:`~discoverygym.policy.Sample`).

    Attributes (besides those of :class:`~discoverygym.policy.Sample`):
        action: the program to evaluate: the last fenced block of the response, or (parse failure)
            a stub from :func:`~discoverygym.agents.responses.failed_program` that fails the contract.
        text: the decoded completion (reasoning included).
        prompt_ids: token ids of the prompt (list of int, length P).
        completion_ids: token ids of the completion (list of int, length T), forced text included.
        logprobs: behaviour log-probabilities of ``completion_ids`` under the sampler (natural log,
            temperature-scaled distribution; 0.0 where ``mask`` is False), length T.
        mask: which completion tokens were sampled (True) rather than forced (False), length T.
        parse_error: why no program could be read, else ``None``.
        apply_error: (``diff``) why the response's SEARCH/REPLACE blocks did not apply to the parent
            (no full program in the response either), else ``None``.
        edit: how the program was obtained: ``"full"`` (a whole program, ``full`` format),
            ``"diff"`` (blocks applied), ``"fallback"`` (``diff`` format, but the response held a
            full program) or ``"failed"``.
        finish_reason: ``"stop"`` (end-of-sequence) or ``"length"`` (hit ``max_new_tokens``).
        outcome: ``None`` when a program was read (the judge decides), else
            :attr:`~discoverygym.policy.Outcome.TRUNCATED` (the response stopped inside its reasoning or
            an unclosed code block, or hit the token budget) or :attr:`~discoverygym.policy.Outcome.NO_CODE`.
        context: index of the sampling context this sample answers.
        prompt: the prompt text.
    """

    action: str = ""
    text: str = ""
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    mask: list[bool] = field(default_factory=list)
    finish_reason: str = "stop"
    prompt: str = ""
    edit: str = "full"

    @property
    def logprob(self) -> Any:
        """``[T]`` float32 torch tensor of :attr:`logprobs` (the TrainablePolicy contract name)."""
        import torch

        return torch.tensor(self.logprobs, dtype=torch.float32)


def context_messages(ctx: Any, system: str | None = None, edit_format: str = "full") -> list[dict[str, str]]:
    """Chat messages for a :class:`~discoverygym.agents.policies.SamplingContext` (code mode).

    ``edit_format="diff"`` asks for SEARCH/REPLACE blocks (when the parent has a program).
    """
    return build_messages(ctx.problem, ctx.parent, tuple(ctx.inspirations), system=system, edit_format=edit_format)


def make_sample(text: str, language: str, *, ctx: Any = None, edit_format: str = "full", **fields: Any) -> LLMSample:
    """Parse ``text`` into an :class:`LLMSample` (a failure becomes a failing stub program).

    ``full``: the last fenced block (:func:`~discoverygym.agents.responses.parse_response`).
    ``diff`` (with ``ctx`` whose parent has a program): the response's SEARCH/REPLACE blocks
    applied to ``ctx.parent.code``, else a full program in it
    (:func:`~discoverygym.agents.policies.edits.apply_edit`); a parent without a program is read
    as ``full``. When no program could be read, ``outcome`` is
    :attr:`~discoverygym.policy.Outcome.TRUNCATED` if the parser says the response was cut or
    ``finish_reason == "length"``, else :attr:`~discoverygym.policy.Outcome.NO_CODE`.

    Raises:
        ValueError: ``edit_format`` is neither ``"full"`` nor ``"diff"``.
    """
    parent = getattr(getattr(ctx, "parent", None), "code", None)
    cut = fields.get("finish_reason") == "length"
    if check_edit_format(edit_format) == "diff" and parent:
        result = apply_edit(text, parent, language=language, entry=getattr(getattr(ctx, "problem", None), "entry", None))
        action = result.program if result.program is not None else failed_program(result.error, language)
        extra = dict(fields.pop("extra", None) or {})
        if result.note:
            extra["edit_note"] = result.note
        outcome = None if result.outcome is None else (Outcome.TRUNCATED if cut else result.outcome)
        return LLMSample(action=action, text=text, parse_error=result.parse_error, apply_error=result.apply_error,
                         edit=result.mode, outcome=outcome, extra=extra, **fields)
    try:
        entry = getattr(getattr(ctx, "problem", None), "entry", None)
        action, error, outcome = parse_response(text, language, entry=entry, ended=not cut), None, None
    except ResponseError as exc:
        action, error = failed_program(str(exc), language), str(exc)
        outcome = Outcome.TRUNCATED if cut else exc.outcome
    return LLMSample(action=action, text=text, parse_error=error, edit="full" if error is None else "failed",
                     outcome=outcome, **fields)


def encode_chat(tokenizer: Any, messages: Sequence[dict[str, str]]) -> list[int]:
    """Token ids of ``messages`` + the assistant header (the tokenizer's chat template).

    Tokenizers without a chat template get ``"{content}\\n"`` per message (a documented plain format).
    """
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    else:
        text = "".join(m["content"] + "\n" for m in messages)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
