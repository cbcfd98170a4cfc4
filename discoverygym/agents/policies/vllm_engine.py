"""VLLMPolicy: sampling with the in-process ``vllm.LLM`` engine (LoRA adapters swapped per step).

Prompts are passed as token ids (chat template applied with the engine's tokenizer) and each
request asks for ``n`` samples with ``logprobs=0`` (the sampled token's log-probability, processed
by temperature when the engine runs with ``logprobs_mode="processed_logprobs"``). After a training
step the trainer saves the adapter and calls :meth:`VLLMPolicy.load_adapter`; later requests carry a
``LoRARequest`` for it. Training itself happens in a local
:class:`~discoverygym.agents.policies.hf.HFPolicy`.

vllm is an optional extra (``pip install 'discoverygym[vllm]'``, Linux + CUDA). Without it the
constructor raises :class:`~discoverygym.agents.policies.llm.BackendUnavailable`; the conversion of
engine outputs into samples (:func:`samples_from_outputs`) needs no vllm and is tested on its own.
"""

from __future__ import annotations

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

__all__ = ["VLLMPolicy", "samples_from_outputs"]


def _chosen_logprob(entry: Any, token: int) -> float:
    """Log-prob of ``token`` in one vLLM per-position logprobs entry (``{id: Logprob}`` or a float)."""
    if isinstance(entry, dict):
        value = entry[token]
        return float(getattr(value, "logprob", value))
    return float(entry)


def samples_from_outputs(outputs: Sequence[Any], prompts: Sequence[tuple[list[dict], list[int], str]],
                         tokenizer: Any, contexts: Sequence[Any] | None = None,
                         edit_format: str = "full") -> list[list[LLMSample]]:
    """Convert ``vllm.LLM.generate`` results into :class:`LLMSample` groups.

    Args:
        outputs: one ``RequestOutput`` per prompt (``.outputs``: completions with ``token_ids``,
            ``logprobs`` — per position a dict token id -> ``Logprob`` — ``text``, ``finish_reason``).
        prompts: per prompt ``(messages, prompt token ids, language)``.
        tokenizer: decodes completions when a completion has no ``text``.
        contexts: the sampling contexts (their parents are what ``diff`` responses edit).
        edit_format: ``"full"`` or ``"diff"`` (:func:`~discoverygym.agents.policies.llm.make_sample`).

    Raises:
        ValueError: a completion without log-probs (the request must set ``logprobs=0``).
    """
    groups = []
    for c, (request, (messages, ids, language)) in enumerate(zip(outputs, prompts)):
        group = []
        for comp in request.outputs:
            toks = [int(t) for t in comp.token_ids]
            if comp.logprobs is None or len(comp.logprobs) != len(toks):
                raise ValueError("vLLM completion without per-token logprobs (set SamplingParams(logprobs=0))")
            lps = [_chosen_logprob(e, t) for e, t in zip(comp.logprobs, toks)]
            text = comp.text if comp.text is not None else tokenizer.decode(toks, skip_special_tokens=True)
            group.append(make_sample(text, language, prompt_ids=list(ids), completion_ids=toks, logprobs=lps,
                                     mask=[True] * len(toks),
                                     finish_reason="length" if comp.finish_reason == "length" else "stop",
                                     context=c, prompt=messages[-1]["content"],
                                     ctx=contexts[c] if contexts is not None else None, edit_format=edit_format))
        groups.append(group)
    return groups


class VLLMPolicy:
    """Policy on the in-process vLLM engine (see the module docstring).

    Args:
        model: local directory or hub id.
        max_new_tokens, temperature: sampling settings.
        max_lora_rank: largest adapter rank the engine accepts (the training rank).
        gpu_memory_utilization: fraction of GPU memory for vLLM (leave room for the HF learner).
        system: optional system message.
        edit_format: ``"full"`` or ``"diff"`` (SEARCH/REPLACE blocks; :mod:`~discoverygym.agents.policies.edits`).
        **engine_kwargs: more ``vllm.LLM`` arguments.

    Raises:
        BackendUnavailable: vllm is not installed.
    """

    action_modes = ("code",)

    def __init__(self, model: str, *, max_new_tokens: int = 1024, temperature: float = 1.0, max_lora_rank: int = 32,
                 gpu_memory_utilization: float = 0.5, system: str | None = None, edit_format: str = "full",
                 **engine_kwargs: Any) -> None:
        try:
            import vllm
            from vllm.lora.request import LoRARequest
        except ImportError:
            raise BackendUnavailable("VLLMPolicy needs vllm (Linux + CUDA): pip install 'discoverygym[vllm]'; "
                                     "use --policy hf:MODEL or openai:URL instead") from None
        self._vllm, self._LoRARequest = vllm, LoRARequest
        self.edit_format = check_edit_format(edit_format)
        self.name = f"vllm:{model}"
        self.max_new_tokens, self.temperature, self.system = int(max_new_tokens), float(temperature), system
        self.engine = vllm.LLM(model=str(model), enable_lora=True, max_lora_rank=max_lora_rank,
                               gpu_memory_utilization=gpu_memory_utilization,
                               logprobs_mode="processed_logprobs", **engine_kwargs)
        self.tokenizer = self.engine.get_tokenizer()
        self.lora: Any = None
        self._next_id = 1

    def sample(self, contexts: Sequence[Any], n: int, rng: np.random.Generator) -> list[list[LLMSample]]:
        """``n`` samples per context in one ``generate`` call."""
        prompts, requests = [], []
        for ctx in contexts:
            messages = context_messages(ctx, self.system, self.edit_format)
            ids = encode_chat(self.tokenizer, messages)
            prompts.append((messages, ids, getattr(ctx.problem, "language", "python") or "python"))
            requests.append({"prompt_token_ids": ids})
        params = self._vllm.SamplingParams(n=n, temperature=self.temperature, max_tokens=self.max_new_tokens,
                                           logprobs=0, seed=int(rng.integers(2**31 - 1)))
        outputs = self.engine.generate(requests, params, lora_request=self.lora, use_tqdm=False)
        return samples_from_outputs(outputs, prompts, self.tokenizer, list(contexts), self.edit_format)

    def load_adapter(self, path: str | os.PathLike, name: str) -> None:
        """Use the adapter saved in ``path`` (peft format) for later requests, under ``name``."""
        self.lora = self._LoRARequest(name, self._next_id, str(Path(path).resolve()))
        self._next_id += 1
