"""A new RL algorithm in a few lines: GRPO-style group-normalised advantages on the shared trainer.

The trainer (rollouts, reuse, KL shaping, importance-sampling loss, Adam, TensorBoard, checkpoints)
stays as is; the algorithm is only the objective hook, ``rewards [groups, rollouts] -> Advantages``.

    python examples/custom_algorithm.py --steps 10 --groups 4 --group-size 16
"""

from __future__ import annotations

import argparse

import torch

from discoverygym.agents.objectives import Advantages
from discoverygym.agents.trainer import TrainConfig, Trainer


def grpo_advantages(rewards: torch.Tensor) -> Advantages:
    """A_n = (r_n − mean r) / (std r + 1e-6) per group (GRPO, DeepSeekMath §4.1); constant groups dropped."""
    mean = rewards.mean(dim=1, keepdim=True)
    std = rewards.std(dim=1, keepdim=True)
    keep = (rewards.max(dim=1).values > rewards.min(dim=1).values) & (rewards.shape[1] > 1)
    adv = (rewards - mean) / (std + 1e-6) * keep[:, None]
    return Advantages(adv, keep, torch.full((rewards.shape[0],), float("nan"), dtype=rewards.dtype))


def main(argv: list[str] | None = None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="CirclePacking-26-v0")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--groups", type=int, default=4)
    p.add_argument("--group-size", type=int, default=16)
    p.add_argument("--run-dir", default=None, help="optional run directory (TensorBoard, checkpoints)")
    args = p.parse_args(argv)
    config = TrainConfig(env_id=args.env, policy="gaussian", steps=args.steps, groups=args.groups,
                         group_size=args.group_size, objective="grpo (custom)", name="grpo")
    result = Trainer(config, args.run_dir, objective=grpo_advantages).run()
    print(f"{args.env}: start {result.initial.score:.6f} -> best {result.best.score:.6f} in {result.steps} steps")
    return result.best.score


if __name__ == "__main__":
    main()
