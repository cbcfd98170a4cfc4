"""Weighted SFT on Tinker: the same loss as :mod:`~discoverygym.agents.irft.sft` through Tinker's
``cross_entropy``.

Tinker's ``cross_entropy`` loss of a datum is ``−Σ_t weights[t] · log p(target_tokens[t] | model_input[:t+1])``
(summed, per the Tinker SDK's loss-function documentation). One example (prompt ids P, completion
ids C, example weight w) becomes one :class:`tinker.Datum`:

* ``model_input`` = (P + C)[:-1], ``target_tokens`` = (P + C)[1:] (next-token targets);
* ``weights[t]`` = w / Z on targets that are sampled completion tokens, 0 on prompt (and forced)
  tokens, where Z = the number of examples with w ≠ 0 in the batch (``normalize="sequence"``) or
  their number of trainable tokens (``"token"``).

So Σ over the batch's datums of Tinker's loss equals the local trainer's weighted loss. An
optimiser step is ``forward_backward(data, "cross_entropy")`` then
``optim_step(AdamParams(learning_rate=lr_t))`` with a cosine schedule lr_t computed here (Tinker's
Adam takes the learning rate per step). Nothing in this module opens a connection: it takes a
``training_client`` (``tinker.ServiceClient().create_lora_training_client(...)`` or anything with
the same two methods).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from discoverygym.agents.irft.sft import SFTSettings, features

__all__ = ["cosine_lr", "tinker_weighted_sft", "to_datum"]


def cosine_lr(step: int, total: int, peak: float, warmup: int = 0) -> float:
    """Learning rate of 0-based ``step`` of ``total``: linear warm-up over ``warmup`` steps, then
    cosine decay from ``peak`` to 0 (the ``transformers`` ``"cosine"`` schedule, same values)."""
    if step < warmup:
        return peak * step / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * 0.5 * (1.0 + math.cos(math.pi * progress))


def to_datum(input_ids: Sequence[int], labels: Sequence[int], scale: float) -> Any:
    """One ``tinker.Datum`` for weighted cross-entropy.

    Args:
        input_ids: the full token sequence (prompt + completion), length T ≥ 2.
        labels: per position of ``input_ids``, the token to learn there or -100 (as :func:`features`).
        scale: the per-token weight of trainable targets (w / Z, see the module docstring).

    Returns:
        ``tinker.Datum`` with ``model_input`` of T-1 tokens and ``loss_fn_inputs`` ``target_tokens``
        (int64, [T-1]) and ``weights`` (float32, [T-1]).

    Raises:
        ValueError: fewer than 2 tokens, or ``labels`` of another length.
        ImportError: the ``tinker`` extra is missing.
    """
    import tinker

    if len(input_ids) < 2 or len(labels) != len(input_ids):
        raise ValueError(f"need >= 2 tokens and one label per token, got {len(input_ids)} / {len(labels)}")
    ids = [int(t) for t in input_ids]
    target = ids[1:]
    weights = [float(scale) if lab != -100 else 0.0 for lab in labels[1:]]
    return tinker.Datum(
        model_input=tinker.ModelInput.from_ints(ids[:-1]),
        loss_fn_inputs={
            "target_tokens": tinker.TensorData(data=target, dtype="int64", shape=[len(target)]),
            "weights": tinker.TensorData(data=weights, dtype="float32", shape=[len(weights)]),
        },
    )


def batch_datums(feats: Sequence[dict], weights: Sequence[float], normalize: str = "sequence") -> list:
    """Datums of one batch (``feats`` from :func:`features`), scaled so their summed loss is the weighted loss.

    Raises:
        ValueError: unknown ``normalize``.
    """
    active = [i for i, w in enumerate(weights) if w != 0]
    if normalize == "sequence":
        z = len(active)
    elif normalize == "token":
        z = sum(sum(lab != -100 for lab in feats[i]["labels"][1:]) for i in active)
    else:
        raise ValueError(f"normalize must be 'sequence' or 'token', got {normalize!r}")
    z = max(1, z)
    return [to_datum(feats[i]["input_ids"], feats[i]["labels"], weights[i] / z) for i in active]


def tinker_weighted_sft(
    training_client: Any,
    tokenizer: Any,
    examples: Sequence[dict],
    settings: SFTSettings,
    *,
    on_log: Callable[[int, dict], None] | None = None,
) -> dict:
    """Run ``settings.steps`` weighted-SFT steps on Tinker (one ``forward_backward`` + ``optim_step`` each).

    Args:
        training_client: a Tinker LoRA training client (``forward_backward``, ``optim_step``).
        tokenizer: the model's tokenizer (only for examples without recorded token ids).
        examples: as :func:`~discoverygym.agents.irft.sft.run_weighted_sft` (w = 0 rows dropped).
        settings: steps, batch size, peak lr, warm-up, normalisation, seed (batches are drawn
            without replacement, reshuffled each pass, from ``numpy.random.default_rng(seed)``).
        on_log: called with ``(step, {"loss", "learning_rate"})`` after each step (step 1-based).

    Returns:
        ``{"examples", "dropped", "steps", "loss"}`` like the local trainer (loss: the last step's
        summed Tinker loss when the service reports ``loss:sum``, else ``None``).
    """
    import tinker

    feats, weights = [], []
    for e in examples:
        if float(e["weight"]) != 0.0:
            f = features(tokenizer, e)
            if any(t != -100 for t in f["labels"][1:]):
                feats.append(f)
                weights.append(float(e["weight"]))
    summary: dict = {"examples": len(feats), "dropped": len(examples) - len(feats), "steps": 0, "loss": None}
    if not feats:
        return summary
    rng = np.random.default_rng(settings.seed)
    order: list[int] = []
    warmup = round(settings.warmup_ratio * settings.steps)
    for step in range(settings.steps):
        batch = []
        while len(batch) < min(settings.batch_size, len(feats)):
            if not order:
                order = rng.permutation(len(feats)).tolist()
            batch.append(order.pop())
        data = batch_datums([feats[i] for i in batch], [weights[i] for i in batch], settings.normalize)
        lr = cosine_lr(step, settings.steps, settings.lr, warmup)
        fb = training_client.forward_backward(data, "cross_entropy")
        opt = training_client.optim_step(tinker.AdamParams(learning_rate=lr))
        out = fb.result()
        opt.result()
        metrics = getattr(out, "metrics", None) or {}
        loss = metrics.get("loss:sum")
        summary.update(steps=step + 1, loss=loss)
        if on_log is not None:
            on_log(step + 1, {"loss": loss, "learning_rate": lr})
    return summary
