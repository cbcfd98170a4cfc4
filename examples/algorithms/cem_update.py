"""Update seam: the cross-entropy method, a learner whose ``update(batch)`` takes no gradient.

Samples constructions ``mean + σ ε``; from each :class:`~discoverygym.agents.batch.TrainBatch` it
moves the mean toward the elite (top ``elite_frac`` rollouts by reward): ``mean ← (1 − α) mean +
α mean(elite)``, ``σ ← max(σ_min, std(elite − mean(elite)))``. The trainer calls ``update(batch)``
instead of ``train_step``. Source: Rubinstein & Kroese, *The Cross-Entropy Method* (2004), ch. 4.

    python examples/algorithms/cem_update.py --steps 3
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

from discoverygym.agents.trainer import TrainConfig, Trainer
from discoverygym.policy import Sample


class CEMLearner:
    """A Gaussian over constructions (float64, shaped like ``mean``); no checkpoints (no run dir)."""

    name, action_modes = "cem", ("construction",)

    def __init__(self, mean, sigma=0.01, elite_frac=0.25, alpha=0.7, sigma_min=1e-4) -> None:
        self.mean, self.sigma = np.asarray(mean, dtype=np.float64), float(sigma)
        self.elite_frac, self.alpha, self.sigma_min = elite_frac, alpha, sigma_min

    def sample(self, contexts, n, rng):
        """``n`` :class:`~discoverygym.policy.Sample` s per context (``.action`` a construction list)."""
        return [[Sample(action=(self.mean + self.sigma * rng.standard_normal(self.mean.shape)).tolist())
                 for _ in range(n)] for _ in contexts]

    def update(self, batch) -> dict:
        """Refit to the elite of the batch's rollouts (all groups, dropped ones included)."""
        actions = np.asarray([s.action for s in batch.samples], dtype=np.float64)
        k = max(1, round(self.elite_frac * len(actions)))
        elite = actions[np.argsort(-batch.rewards.numpy(), kind="stable")[:k]]
        self.mean = (1 - self.alpha) * self.mean + self.alpha * elite.mean(0)
        self.sigma = max(self.sigma_min, float((elite - elite.mean(0)).std()))
        return {"loss": 0.0}

    def stats(self) -> dict:
        """``{"sigma": σ}`` (logged as ``policy/sigma``)."""
        return {"sigma": self.sigma}


def main(argv: list[str] | None = None) -> Trainer:
    """Train ``--steps`` CEM steps from the env's initial construction; returns the trainer."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="CirclePacking-26-v0")
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args(argv)
    config = TrainConfig(env_id=args.env, steps=args.steps, groups=2, group_size=8, reuse="none", name="cem")
    cem = CEMLearner(gym.make(args.env).reset(seed=config.seed)[1]["state"].solution)
    trainer = Trainer(config, learners=(cem, cem))
    result = trainer.run()
    print(f"{args.env}: start {result.initial.score:.6f} -> best {result.best.score:.6f} (cem)")
    return trainer


if __name__ == "__main__":
    main()
