"""Weighted SFT for local (transformers/peft) models: TRL's ``SFTTrainer`` with per-example weights.

Loss of a batch B (TES Algorithm 2: L = −E_D w · Σ_i log π_θ(ŷ_i | x, ŷ_<i))::

    sequence (default):  L = Σ_j w_j · NLL_j / |{j : w_j ≠ 0}|,   NLL_j = −Σ_i log π_θ(ŷ_ji | x_j, ŷ_j,<i)
    token:               L = Σ_j w_j · NLL_j / Σ_{j : w_j ≠ 0} T_j

where the sum over i runs over the completion's sampled tokens only (the prompt, and text the
sampler forced in, are context) and T_j is their number. Examples with w = 0 contribute nothing to the
numerator and are not counted in the denominator, so adding them to a batch leaves the gradient
unchanged; :func:`run_weighted_sft` drops them from the data set before training anyway (no wasted
forward passes). Negative weights (the ``grpo`` credit rule) push probability away from a
completion. TRL has no per-example weights, so :func:`weighted_sft_trainer` overrides
``compute_loss``; TRL still tokenises (prompt/completion masks, EOS) and the ``transformers``
Trainer still runs the optimiser (AdamW), the cosine schedule and gradient accumulation
(``batch_size = micro_batch_size × accumulation``; each micro-batch loss is divided by the number
of accumulation steps).

Requires the ``llm`` extra (torch, transformers, trl, datasets).
"""

from __future__ import annotations

import functools
import math
import numbers
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SFTSettings",
    "WeightedCollator",
    "features",
    "run_weighted_sft",
    "sequence_nll",
    "weighted_loss",
    "weighted_sft_trainer",
]


@dataclass
class SFTSettings:
    """Hyper-parameters of one round's weighted SFT (defaults: TES Algorithm 2 / docs/algorithms.md).

    Attributes:
        steps: optimiser steps per round (TES: 100).
        batch_size: examples per optimiser step (TES: 256).
        micro_batch_size: examples per forward pass (memory; accumulation = batch_size / this).
        lr: peak learning rate (TES: 2e-5), cosine decay to 0 over ``steps``.
        warmup_ratio: fraction of steps with linear warm-up (ours: 0).
        normalize: ``"sequence"`` or ``"token"`` (module docstring).
        max_length: tokens per example (TRL truncation, keep start), ``None`` for no limit.
        max_grad_norm: gradient clipping (transformers default 1.0).
        seed: data order and dropout seed.
        bf16: bfloat16 mixed precision; ``None``: on when CUDA is available.
        gradient_checkpointing: recompute activations in the backward pass (memory for time; TRL's
            default is on).
    """

    steps: int = 100  # TES Alg. 2
    batch_size: int = 256  # TES Alg. 2
    micro_batch_size: int = 8
    lr: float = 2e-5  # TES Alg. 2
    warmup_ratio: float = 0.0
    normalize: str = "sequence"
    max_length: int | None = 8192
    max_grad_norm: float = 1.0
    seed: int = 0
    bf16: bool | None = None
    gradient_checkpointing: bool = True

    def validate(self) -> None:
        """Raise ``ValueError`` for settings no run can use (checked before a run starts).

        ``steps``, ``batch_size``, ``micro_batch_size``: integers >= 1, with ``batch_size`` a
        multiple of ``micro_batch_size`` (so a step sees exactly ``batch_size`` examples); ``lr``
        and ``max_grad_norm``: finite and > 0; ``warmup_ratio`` in [0, 1); ``normalize``:
        ``"sequence"`` or ``"token"``; ``max_length``: ``None`` or an integer >= 1.
        """

        def integer(name: str, minimum: int) -> None:
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
                raise ValueError(f"sft {name} must be an integer >= {minimum}, got {value!r}")

        for name in ("steps", "batch_size", "micro_batch_size"):
            integer(name, 1)
        if self.batch_size % self.micro_batch_size:
            raise ValueError(
                f"sft batch_size ({self.batch_size}) must be a multiple of micro_batch_size "
                f"({self.micro_batch_size})"
            )
        for name in ("lr", "max_grad_norm"):
            value = getattr(self, name)
            if not _real(value) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"sft {name} must be a finite number > 0, got {value!r}")
        if not _real(self.warmup_ratio) or not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"sft warmup_ratio must be in [0, 1), got {self.warmup_ratio!r}")
        if self.normalize not in ("sequence", "token"):
            raise ValueError(f"sft normalize must be 'sequence' or 'token', got {self.normalize!r}")
        if self.max_length is not None:
            integer("max_length", 1)
        integer("seed", 0)
        if self.bf16 not in (None, True, False):
            raise ValueError(f"sft bf16 must be true, false or null, got {self.bf16!r}")
        if self.gradient_checkpointing not in (True, False):
            raise ValueError(
                f"sft gradient_checkpointing must be true or false, got {self.gradient_checkpointing!r}"
            )

    def accumulation(self) -> int:
        """Gradient-accumulation steps: ``ceil(batch_size / micro_batch_size)``."""
        return max(1, -(-self.batch_size // max(1, self.micro_batch_size)))


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def features(tokenizer: Any, example: dict) -> dict:
    """``{"input_ids": [int], "labels": [int]}`` of one prompt → completion example.

    With ``prompt_ids`` and ``completion_ids`` (recorded at sampling) they are concatenated and the
    labels are the completion ids where ``completion_mask`` is true (all when it is absent), -100
    elsewhere. Otherwise ``prompt`` and ``completion`` are tokenised separately (no special tokens
    added) and the tokenizer's EOS is appended to the completion.
    """
    p_ids, c_ids = example.get("prompt_ids"), example.get("completion_ids")
    if p_ids is not None and c_ids is not None:
        mask = example.get("completion_mask") or [True] * len(c_ids)
        p_ids, c_ids = [int(t) for t in p_ids], [int(t) for t in c_ids]
        labels = [-100] * len(p_ids) + [t if m else -100 for t, m in zip(c_ids, mask)]
        return {"input_ids": p_ids + c_ids, "labels": labels}
    p_ids = list(tokenizer(example["prompt"], add_special_tokens=False)["input_ids"])
    c_ids = list(tokenizer(example["completion"], add_special_tokens=False)["input_ids"])
    if tokenizer.eos_token_id is not None:
        c_ids.append(int(tokenizer.eos_token_id))
    return {"input_ids": p_ids + c_ids, "labels": [-100] * len(p_ids) + c_ids}


def sequence_nll(model: Any, input_ids: Any, attention_mask: Any, labels: Any) -> tuple[Any, Any]:
    """Per-example summed next-token NLL over positions whose label is not -100, from the logits.

    Args:
        model: a causal LM returning ``.logits`` of shape [B, T, V].
        input_ids, attention_mask, labels: int64 tensors [B, T]; ``labels[j, t]`` is the target of
            position t (-100 = no loss), unshifted (HF convention: logits at t-1 predict labels at t).

    Returns:
        ``(nll, tokens)``: float32 [B] summed NLL (nats) with gradient, int64 [B] counted tokens.
    """
    import torch

    logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits[:, :-1]
    target = labels[:, 1:]
    mask = target != -100
    logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    nll = -(logp * mask).sum(-1)
    return nll, mask.sum(-1)


def weighted_loss(nll: Any, tokens: Any, weights: Any, normalize: str = "sequence") -> Any:
    """The weighted loss of the module docstring from per-example ``nll`` [B], ``tokens`` [B], ``weights`` [B].

    Raises:
        ValueError: unknown ``normalize``.
    """
    weights = weights.to(nll.dtype)
    active = weights != 0
    if normalize == "sequence":
        denom = active.sum()
    elif normalize == "token":
        denom = (tokens * active).sum()
    else:
        raise ValueError(f"normalize must be 'sequence' or 'token', got {normalize!r}")
    return (weights * nll).sum() / denom.clamp(min=1).to(nll.dtype)


class WeightedCollator:
    """Wraps a collator: pops each example's ``weight`` and returns it as float32 tensor [B] under ``"weight"``."""

    def __init__(self, base: Callable[[list[dict]], dict]) -> None:
        self.base = base

    def __call__(self, examples: list[dict]) -> dict:
        import torch

        weights = [float(e.pop("weight")) for e in examples]
        batch = self.base(examples)
        batch["weight"] = torch.tensor(weights, dtype=torch.float32)
        return batch


def _has_fused_head() -> bool:
    """Whether this TRL patches models with a fused LM head (per-token log-probs without full logits)."""
    try:
        from trl.trainer import utils
    except ImportError:
        return False
    return hasattr(utils, "add_fused_lm_head")


@functools.lru_cache(maxsize=1)
def weighted_sft_trainer() -> type:
    """The ``WeightedSFTTrainer`` class: a ``trl.SFTTrainer`` subclass, built on first use (TRL is optional).

    Its loss is the per-example weighted NLL of the module docstring; see the class docstring.

    Raises:
        ImportError: TRL is not installed (``pip install 'discoverygym[llm]'``).
    """
    from trl import SFTTrainer

    class _WeightedSFTTrainer(SFTTrainer):
        """``trl.SFTTrainer`` whose loss is the per-example weighted NLL (module docstring).

        The training data set needs ``input_ids``, ``labels`` (:func:`features`) and ``weight``
        columns; extra keyword ``normalize`` (``"sequence"``/``"token"``). Logs ``weighted_nll`` and ``mean_weight``.
        """

        loss_is_scaled_for_ga = False  # the Trainer divides each micro-batch loss by the accumulation steps

        def __init__(self, *args: Any, normalize: str = "sequence", **kwargs: Any) -> None:
            if normalize not in ("sequence", "token"):
                raise ValueError(f"normalize must be 'sequence' or 'token', got {normalize!r}")
            self.normalize = normalize
            self._fused = _has_fused_head()
            super().__init__(*args, **kwargs)
            self.data_collator = WeightedCollator(self.data_collator)

        def _set_signature_columns_if_needed(self) -> None:
            super()._set_signature_columns_if_needed()
            if "weight" not in self._signature_columns:
                self._signature_columns = [*self._signature_columns, "weight"]

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            weights = inputs.pop("weight")
            if self._fused:  # TRL's chunked LM head: per-token log-probs, never the [B, T, V] logits
                out = model(**inputs, use_cache=False, fused_lm_head=True)
                nll, tokens = -out.log_probs.float().sum(-1), out.label_mask.sum(-1)
            else:
                nll, tokens = sequence_nll(
                    model, inputs["input_ids"], inputs.get("attention_mask"), inputs["labels"]
                )
            loss = weighted_loss(nll, tokens, weights.to(nll.device), self.normalize)
            mode = "train" if model.training else "eval"
            self._metrics[mode]["weighted_nll"].append(float(loss.detach()))
            self._metrics[mode]["mean_weight"].append(float(weights.float().mean()))
            return (loss, None) if return_outputs else loss

    _WeightedSFTTrainer.__name__ = _WeightedSFTTrainer.__qualname__ = "WeightedSFTTrainer"
    return _WeightedSFTTrainer


def sft_config(settings: SFTSettings, output_dir: str | os.PathLike) -> Any:
    """The ``trl.SFTConfig`` of :class:`SFTSettings` (cosine schedule, no checkpoints, no reporters)."""
    import torch
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(output_dir),
        max_steps=settings.steps,
        per_device_train_batch_size=settings.micro_batch_size,
        gradient_accumulation_steps=settings.accumulation(),
        learning_rate=settings.lr,
        lr_scheduler_type="cosine",
        warmup_steps=round(settings.warmup_ratio * settings.steps),
        max_grad_norm=settings.max_grad_norm,
        max_length=settings.max_length,
        completion_only_loss=True,
        packing=False,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=settings.seed,
        data_seed=settings.seed,
        bf16=torch.cuda.is_available() if settings.bf16 is None else settings.bf16,
        gradient_checkpointing=settings.gradient_checkpointing,
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        disable_tqdm=True,
    )


def run_weighted_sft(
    model: Any,
    tokenizer: Any,
    examples: Sequence[dict],
    settings: SFTSettings,
    output_dir: str | os.PathLike,
    *,
    on_log: Callable[[int, dict], None] | None = None,
) -> dict:
    """Train ``model`` in place on weighted prompt → completion examples.

    Args:
        model: a causal LM (``PreTrainedModel`` or ``PeftModel``; with LoRA only the adapter trains).
        tokenizer: its tokenizer (pad token required).
        examples: dicts with ``prompt`` (str), ``completion`` (str), ``weight`` (float) and optionally
            ``prompt_ids``/``completion_ids``/``completion_mask`` (see :func:`features`); rows with
            w = 0 or without a trainable token are dropped first.
        settings: :class:`SFTSettings`.
        output_dir: scratch directory for the Trainer (nothing is checkpointed there).
        on_log: called with ``(step, logs)`` on every Trainer log (``loss``, ``learning_rate``...).

    Returns:
        ``{"examples": n used, "dropped": n with zero weight, "steps": steps run, "loss": last loss}``;
        ``steps == 0`` and nothing trains when no example has a nonzero weight.
    """
    import datasets
    from transformers import PrinterCallback, TrainerCallback

    data = []
    for e in examples:
        if float(e["weight"]) != 0.0:
            f = features(tokenizer, e)
            if any(t != -100 for t in f["labels"]):
                data.append({**f, "weight": float(e["weight"])})
    summary = {"examples": len(data), "dropped": len(examples) - len(data), "steps": 0, "loss": None}
    if not data:
        return summary
    history: list[dict] = []

    class _Log(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs:
                history.append(dict(logs))
                if on_log is not None:
                    on_log(state.global_step, dict(logs))

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        trainer = weighted_sft_trainer()(
            model=model,
            args=sft_config(settings, output_dir),
            train_dataset=datasets.Dataset.from_list(data),
            processing_class=tokenizer,
            normalize=settings.normalize,
            callbacks=[_Log()],
        )
        trainer.remove_callback(PrinterCallback)
        result = trainer.train()
    finally:
        if bars:
            datasets.enable_progress_bars()
    model.eval()
    losses = [h["loss"] for h in history if "loss" in h]
    summary.update(steps=int(result.global_step), loss=losses[-1] if losses else None)
    return summary
