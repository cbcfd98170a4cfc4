"""Weighted SFT with each prompt run once per step: the warm start's trainer on a CPU.

The loss is :func:`~discoverygym.agents.irft.sft.weighted_loss` of TES Algorithm 2 (per-example
weighted NLL of the completion tokens), the optimiser AdamW with a cosine schedule, linear
warm-up and gradient clipping, as :func:`~discoverygym.agents.irft.sft.run_weighted_sft` (TRL) sets
them. What differs is how a step's examples are scored: those sharing one prompt are scored
together by :func:`~discoverygym.agents.policies.prefix.shared_prompt_logprobs` (the prompt once,
the completions on its KV cache; exact log-probs and gradients), one backward pass per prompt.
The warm start's examples answer few distinct prompts (the start prompt of each env, mostly), and
a prompt is 800–1,200 tokens against 100–350 of a completion, so a step costs a fraction of TRL's
per-sequence passes (``benchmarks/results/llm-outcomes.md`` gives the measured wall time).

Source: TES Algorithm 2 (the loss); ours (the shared-prompt scoring).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from discoverygym.agents.irft.sft import SFTSettings, weighted_loss

__all__ = ["run_prefix_sft"]


def _lr_at(step: int, settings: SFTSettings) -> float:
    """Linear warm-up over ``warmup_ratio × steps``, then cosine decay to 0 (transformers' "cosine")."""
    warm = round(settings.warmup_ratio * settings.steps)
    if step < warm:
        return settings.lr * (step + 1) / warm
    progress = (step - warm) / max(1, settings.steps - warm)
    return settings.lr * 0.5 * (1.0 + math.cos(math.pi * progress))


def run_prefix_sft(model: Any, examples: Sequence[dict], settings: SFTSettings, *, pad_id: int = 0,
                   prompt_grad: bool = True, on_log: Callable[[int, dict], None] | None = None) -> dict:
    """Train ``model``'s trainable parameters in place on weighted prompt → completion examples.

    Args:
        model: a causal LM (a ``peft`` model: only the adapter trains).
        examples: dicts with ``prompt_ids`` and ``completion_ids`` (lists of int) and ``weight``
            (float); rows with weight 0 or no completion token are dropped first.
        settings: :class:`~discoverygym.agents.irft.sft.SFTSettings` (``steps``, ``batch_size``, ``lr``,
            ``warmup_ratio``, ``normalize``, ``max_grad_norm``, ``seed``; ``micro_batch_size`` is not
            used: each distinct prompt of a batch is one forward/backward).
        pad_id: padding token id.
        prompt_grad: ``False``: each prompt is context only (no gradient through its positions; see
            :func:`~discoverygym.agents.policies.prefix.shared_prompt_logprobs`), a third of its cost.
        on_log: called with ``(step, {"loss", "learning_rate", "grad_norm"})`` after every step (1-based).

    Returns:
        ``{"examples", "dropped", "steps", "loss"}`` as ``run_weighted_sft``.

    Raises:
        ValueError: settings :meth:`SFTSettings.validate` refuses.
    """
    import torch

    from discoverygym.agents.policies.prefix import checkpointing_off, shared_prompt_logprobs

    settings.validate()
    data = [e for e in examples if float(e["weight"]) != 0.0 and len(e["completion_ids"]) > 0]
    summary: dict[str, Any] = {"examples": len(data), "dropped": len(examples) - len(data), "steps": 0, "loss": None}
    if not data:
        return summary
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=settings.lr, weight_decay=0.0)
    rng = np.random.default_rng(settings.seed)
    order: list[int] = []
    model.train()
    try:
        for step in range(settings.steps):
            if len(order) < settings.batch_size:
                order += list(rng.permutation(len(data)))
            batch, order = [data[i] for i in order[: settings.batch_size]], order[settings.batch_size:]
            groups: dict[tuple[int, ...], list[dict]] = {}
            for e in batch:
                groups.setdefault(tuple(int(t) for t in e["prompt_ids"]), []).append(e)
            weights = torch.tensor([float(e["weight"]) for e in batch])
            active = int((weights != 0).sum())
            denom = active if settings.normalize == "sequence" else sum(len(e["completion_ids"]) for e in batch)
            for g in opt.param_groups:
                g["lr"] = _lr_at(step, settings)
            opt.zero_grad(set_to_none=True)
            total = 0.0
            for prompt, rows in groups.items():
                with checkpointing_off(model):  # the completions attend to the shared prompt's KV cache
                    logp, mask = shared_prompt_logprobs(model, prompt, [r["completion_ids"] for r in rows],
                                                        pad_id=pad_id, prompt_grad=prompt_grad)
                nll = -logp.sum(-1)
                w = torch.tensor([float(r["weight"]) for r in rows], device=nll.device)
                # the batch loss (weighted_loss over the whole batch) is linear in each group's part
                part = weighted_loss(nll, mask.sum(-1), w, settings.normalize) * (
                    (int((w != 0).sum()) if settings.normalize == "sequence" else int(mask.sum())) / max(1, denom))
                part.backward()
                total += float(part.detach())
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, settings.max_grad_norm))
            opt.step()
            summary.update(steps=step + 1, loss=total)
            if on_log is not None:
                on_log(step + 1, {"loss": total, "learning_rate": _lr_at(step, settings), "grad_norm": grad_norm})
    finally:
        model.eval()
    return summary
