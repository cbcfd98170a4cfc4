"""Completion log-probs of several completions that share one prompt, with one pass over the prompt.

A TTT-Discover group (8 answers to one prompt) and a warm start's examples of one env (programs
answering the start prompt) share their prompt. Scoring them one sequence at a time runs the
prompt (800–1,200 tokens here) once per completion (100–350 tokens): most of the work, and of the
activations kept for the backward pass. :func:`shared_prompt_logprobs` runs the prompt once
(batch 1, its KV cache kept, with gradient when one is recorded), repeats the cache over the
completions and runs only the completions on top of it. The numbers are those of full forward
passes of prompt + completion (the attention sees the same keys and values; tested to float
rounding), and so is the gradient: it flows back through the shared cache into the prompt's
positions once, summed over the completions, exactly as the per-sequence passes would sum it.

Requires torch and transformers (a causal LM whose forward takes ``past_key_values`` / ``cache``).

Source: ours (prefix sharing as in vLLM's prefix caching, applied to training).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["cache_of", "checkpointing_off", "shared_prompt_logprobs"]


@contextlib.contextmanager
def checkpointing_off(model: Any) -> Iterator[None]:
    """Turn the model's activation (gradient) checkpointing off inside the block and back on after
    (non-reentrant), if it was on: in training, transformers drops the KV cache under checkpointing,
    and :func:`shared_prompt_logprobs` needs it. Works on a ``peft`` model or a plain one."""
    causal = model.get_base_model() if hasattr(model, "get_base_model") else model
    if hasattr(type(causal), "is_activation_checkpointing"):  # transformers >= 5.x names
        on = bool(causal.is_activation_checkpointing)
        disable, enable = causal.activation_checkpointing_disable, causal.activation_checkpointing_enable
        kwargs = {"activation_checkpointing_kwargs": {"use_reentrant": False}}
    else:
        on = bool(getattr(causal, "is_gradient_checkpointing", False))
        disable, enable = causal.gradient_checkpointing_disable, causal.gradient_checkpointing_enable
        kwargs = {"gradient_checkpointing_kwargs": {"use_reentrant": False}}
    if on:
        disable()
    try:
        yield
    finally:
        if on:
            enable(**kwargs)


def cache_of(result: Any) -> tuple[str, Any]:
    """``(keyword, cache)`` of a forward result's KV cache (``cache`` in transformers >= 5.x, else
    ``past_key_values``): the keyword to pass the cache back to the next forward call."""
    cache = getattr(result, "cache", None)
    if cache is not None:
        return "cache", cache
    return "past_key_values", result.past_key_values


def shared_prompt_logprobs(model: Any, prompt_ids: Sequence[int], completions: Sequence[Sequence[int]], *,
                           temperature: float = 1.0, pad_id: int = 0, prompt_grad: bool = True) -> tuple[Any, Any]:
    """Per-token log-probs of ``completions`` after one shared ``prompt_ids``.

    Args:
        model: a causal LM (``transformers`` / ``peft``); train or eval mode as the caller wants.
            Gradient checkpointing must be off for the call (it disables the KV cache in training).
        prompt_ids: the prompt's token ids (length P >= 1).
        completions: B token-id lists (lengths may differ; empty ones give all-zero rows).
        temperature: log-probs of ``softmax(logits / temperature)`` (> 0; the sampler's).
        pad_id: id used to pad completions on the right (masked out).
        prompt_grad: record the gradient through the prompt's positions (exact); ``False`` runs the
            prompt under ``no_grad`` (its keys and values are context: the gradient reaches the
            parameters through the completion positions only; about a third of the prompt's cost).

    Returns:
        ``(logp, mask)``: float32 ``[B, W]`` log-probs (0 where ``mask`` is false) and bool ``[B, W]``,
        ``W = max completion length`` (at least 1). ``logp`` carries a gradient when autograd records.

    Raises:
        ValueError: an empty prompt, no completions, or a non-positive temperature.
    """
    import torch

    if len(prompt_ids) < 1 or len(completions) < 1:
        raise ValueError("need a prompt of >= 1 token and >= 1 completion")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    device = next(model.parameters()).device
    B, P = len(completions), len(prompt_ids)
    W = max([len(c) for c in completions] + [1])
    comp = torch.full((B, W), int(pad_id), dtype=torch.long, device=device)
    mask = torch.zeros((B, W), dtype=torch.bool, device=device)
    for i, c in enumerate(completions):
        if len(c):
            comp[i, : len(c)] = torch.tensor([int(t) for t in c], device=device)
            mask[i, : len(c)] = True
    with torch.set_grad_enabled(torch.is_grad_enabled() and prompt_grad):
        first = model(input_ids=torch.tensor([list(prompt_ids)], device=device), use_cache=True, logits_to_keep=1)
    key, cache = cache_of(first)
    if B > 1:
        cache.batch_repeat_interleave(B)
    head = first.logits[:, -1:, :].expand(B, 1, -1)  # predicts completion token 0
    if W > 1:
        attn = torch.cat([torch.ones((B, P), dtype=torch.long, device=device), mask[:, : W - 1].long()], dim=1)
        rest = model(input_ids=comp[:, : W - 1], attention_mask=attn, use_cache=True, **{key: cache}).logits
        logits = torch.cat([head, rest], dim=1)
    else:
        logits = head
    logp = torch.log_softmax(logits.float() / temperature, dim=-1).gather(2, comp[:, :, None]).squeeze(2)
    return torch.where(mask, logp, torch.zeros_like(logp)), mask
