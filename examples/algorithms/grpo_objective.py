"""Objective seam: GRPO-style group normalisation, A_n = (r_n − mean r) / (std r + eps) per group.

Registered as objective ``grpo`` (``Trainer(objective=grpo)`` works too), in verl's estimator signature
as ``grpo-verl``, and as config ``grpo`` (``full`` with this objective, the one thing it changes): a
``compare`` plugin. Source: DeepSeekMath (arXiv 2402.03300) §4.1 (rewards normalised per group).

    discoverygym compare CirclePacking-26-v0 --configs full,grpo --plugin examples/algorithms/grpo_objective.py --seeds 2 --steps 2
    python examples/algorithms/grpo_objective.py --steps 3
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np
import torch

from discoverygym.agents.config import register_config
from discoverygym.agents.objectives import OBJECTIVES, Advantages, register_adv_est, register_objective
from discoverygym.agents.trainer import TrainConfig, Trainer


def grpo(rewards: torch.Tensor, eps: float = 1e-6) -> Advantages:
    """``[groups, rollouts]`` rewards -> group-normalised advantages (std with Bessel's correction);
    groups whose rewards are all equal are dropped (keep False, advantages 0), β is NaN."""
    keep = (rewards.max(dim=1).values > rewards.min(dim=1).values) & (rewards.shape[1] > 1)
    adv = (rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + eps) * keep[:, None]
    return Advantages(adv, keep, torch.full((rewards.shape[0],), float("nan"), dtype=rewards.dtype))


def grpo_outcome_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: np.ndarray,
                           epsilon: float = 1e-6, **_: object) -> tuple[torch.Tensor, torch.Tensor]:
    """The same in verl's signature: ``[B, T]`` token rewards and mask, ``[B]`` group index ->
    ``([B, T] advantages, [B, T] returns)`` (each sequence's normalised score on its tokens)."""
    scores = token_level_rewards.sum(dim=-1).clone()
    for g in np.unique(index):
        sel = torch.as_tensor(index == g)
        scores[sel] = (scores[sel] - scores[sel].mean()) / (scores[sel].std() + epsilon)
    adv = scores[:, None] * response_mask
    return adv, adv


if "grpo" not in OBJECTIVES:
    register_objective("grpo", lambda eps=1e-6: partial(grpo, eps=eps))
register_adv_est("grpo-verl")(grpo_outcome_advantage)
register_config("grpo", {"objective": "grpo"}, "objective only: GRPO group normalisation (plugin)")


def main(argv: list[str] | None = None) -> Trainer:
    """Train ``--steps`` steps with the registered ``grpo`` objective; returns the trainer."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default in (("--env", "CirclePacking-26-v0"), ("--steps", 10), ("--groups", 2), ("--group-size", 8)):
        p.add_argument(flag, default=default, type=type(default))
    args = p.parse_args(argv)
    config = TrainConfig(env_id=args.env, policy="gaussian", steps=args.steps, groups=args.groups,
                         group_size=args.group_size, objective="grpo", reuse="none", name="grpo")
    trainer = Trainer(config)
    result = trainer.run()
    print(f"{args.env}: start {result.initial.score:.6f} -> best {result.best.score:.6f} (grpo)")
    return trainer


if __name__ == "__main__":
    main()
