"""Objective seam: GRPO-style group normalisation, A_n = (r_n − mean r) / (std r + eps) per group.

Registered by name (so ``TrainConfig(objective="grpo")`` and config.json name it); passing the
function as ``Trainer(objective=...)`` works as well. Source: DeepSeekMath (arXiv 2402.03300) §4.1.

    python examples/algorithms/grpo_objective.py --steps 3
"""

from __future__ import annotations

import argparse
from functools import partial

import torch

from discoverygym.agents.objectives import OBJECTIVES, Advantages, register_objective
from discoverygym.agents.trainer import TrainConfig, Trainer


def grpo(rewards: torch.Tensor, eps: float = 1e-6) -> Advantages:
    """``[groups, rollouts]`` rewards -> group-normalised advantages (std with Bessel's correction);
    groups whose rewards are all equal are dropped (keep False, advantages 0), β is NaN."""
    keep = (rewards.max(dim=1).values > rewards.min(dim=1).values) & (rewards.shape[1] > 1)
    adv = (rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + eps) * keep[:, None]
    return Advantages(adv, keep, torch.full((rewards.shape[0],), float("nan"), dtype=rewards.dtype))


if "grpo" not in OBJECTIVES:
    register_objective("grpo", lambda eps=1e-6: partial(grpo, eps=eps))


def main(argv: list[str] | None = None) -> Trainer:
    """Train ``--steps`` steps with the registered ``grpo`` objective; returns the trainer."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="CirclePacking-26-v0")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--groups", type=int, default=2)
    p.add_argument("--group-size", type=int, default=8)
    args = p.parse_args(argv)
    config = TrainConfig(env_id=args.env, policy="gaussian", steps=args.steps, groups=args.groups,
                         group_size=args.group_size, objective="grpo", reuse="none", name="grpo")
    trainer = Trainer(config)
    result = trainer.run()
    print(f"{args.env}: start {result.initial.score:.6f} -> best {result.best.score:.6f} (grpo)")
    return trainer


if __name__ == "__main__":
    main()
