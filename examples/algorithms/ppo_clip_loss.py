"""Loss seam: PPO's clipped surrogate in place of the unclipped importance-sampling loss.

``loss = −Σ_t min(ρ_t A_t, clip(ρ_t, 1 − ε, 1 + ε) A_t) / Σ_t 1`` over action tokens, with
``ρ_t = exp(log π_θ − log π_behaviour)`` (PPO, arXiv 1707.06347, eq. 7; mean over tokens). The
rest of the step (objective, KL shaping of A_t, Adam) is the trainer's.

    python examples/algorithms/ppo_clip_loss.py --steps 3
"""

from __future__ import annotations

import argparse
from functools import partial

import torch

from discoverygym.agents.losses import LOSSES, register_loss
from discoverygym.agents.trainer import TrainConfig, Trainer


def ppo_clip_loss(new_lp: torch.Tensor, old_lp: torch.Tensor, a_tok: torch.Tensor, mask: torch.Tensor,
                  eps: float = 0.2) -> torch.Tensor:
    """All inputs ``[B, T]`` (``mask`` bool); returns the scalar clipped surrogate to minimise."""
    ratio = torch.exp(torch.where(mask, new_lp - old_lp, torch.zeros_like(new_lp)))
    surrogate = torch.minimum(ratio * a_tok, ratio.clamp(1 - eps, 1 + eps) * a_tok)
    return -(surrogate * mask).sum() / mask.sum().clamp(min=1)


if "ppo-clip" not in LOSSES:
    register_loss("ppo-clip", lambda eps=0.2: partial(ppo_clip_loss, eps=eps))


def main(argv: list[str] | None = None) -> Trainer:
    """Train ``--steps`` steps with the registered ``ppo-clip`` loss; returns the trainer."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="CirclePacking-26-v0")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--eps", type=float, default=0.2)
    p.add_argument("--kl-coef", type=float, default=0.1)
    args = p.parse_args(argv)
    config = TrainConfig(env_id=args.env, policy="gaussian", steps=args.steps, groups=2, group_size=8, loss="ppo-clip",
                         loss_kwargs={"eps": args.eps}, kl_coef=args.kl_coef, name="ppo-clip")
    trainer = Trainer(config)
    result = trainer.run()
    print(f"{args.env}: start {result.initial.score:.6f} -> best {result.best.score:.6f} (ppo-clip)")
    return trainer


if __name__ == "__main__":
    main()
