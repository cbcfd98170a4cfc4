"""Issue 16, item 1: the three seams of an algorithm (objective, loss, update), each run from its
example in ``examples/algorithms/`` for a few steps on CirclePacking-26-v0 with the Gaussian policy."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest
import torch

from discoverygym.agents.batch import TrainBatch, TrajectoryGroup, run_update
from discoverygym.agents.losses import importance_sampling_loss, make_loss
from discoverygym.agents.trainer import TrainConfig, Trainer
from discoverygym.types import State

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "algorithms"


def _example(name: str) -> dict:
    path = EXAMPLES / f"{name}.py"
    assert len(path.read_text().splitlines()) <= 65
    return runpy.run_path(str(path), run_name="example")


def test_grpo_objective_example_normalises_each_group_as_documented():
    ns = _example("grpo_objective")
    trainer = ns["main"](["--steps", "2"])
    assert trainer.step_index == 2
    batch = trainer.last_batch
    for group in batch.groups:  # the batch's advantages are the objective's: (r - mean) / (std + eps)
        # over the scored rollouts (repeats of the start state are left out: Trainer skip_repeats)
        s = torch.ones_like(group.rewards, dtype=torch.bool) if group.scored is None else group.scored
        r, a = group.rewards[s], group.advantages[s]
        if group.keep:
            assert torch.allclose(a, (r - r.mean()) / (r.std() + 1e-6))
            assert torch.all(group.advantages[~s] == 0)
            assert abs(float(a.mean())) < 1e-9
            assert float(a.std()) == pytest.approx(1.0, abs=1e-2)
        else:
            assert torch.all(group.advantages == 0)
    adv = ns["grpo"](torch.tensor([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]], dtype=torch.float64))
    assert adv.keep.tolist() == [True, False] and adv.adv[0].tolist() == pytest.approx([-1, 0, 1], abs=1e-5)


def test_ppo_clip_loss_equals_the_hand_computed_value():
    ns = _example("ppo_clip_loss")
    new = torch.log(torch.tensor([[1.5, 0.5], [1.1, 2.0]], dtype=torch.float64))
    old = torch.zeros(2, 2, dtype=torch.float64)
    a = torch.tensor([[1.0, -1.0], [2.0, 3.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True], [True, False]])
    # ratios 1.5, 0.5, 1.1 (the 4th masked): min(1.5*1, 1.2*1) = 1.2; min(0.5*-1, 0.8*-1) = -0.8; 1.1*2 = 2.2
    assert float(ns["ppo_clip_loss"](new, old, a, mask, eps=0.2)) == pytest.approx(-(1.2 - 0.8 + 2.2) / 3)
    assert float(make_loss("ppo-clip", eps=0.2)(new, old, a, mask)) == pytest.approx(-(1.2 - 0.8 + 2.2) / 3)
    # on the trainer: one update per step, so ρ = 1 and (λ = 0) the loss is minus the mean kept advantage
    trainer = ns["main"](["--steps", "2", "--kl-coef", "0"])
    assert trainer.learner.loss.func is ns["ppo_clip_loss"]
    batch = trainer.last_batch
    expected = -float(batch.advantages[batch.kept].mean())
    assert expected != 0.0
    assert trainer.history[-1]["loss"] == pytest.approx(expected, rel=1e-6)


def test_cem_update_moves_the_mean_toward_the_elite():
    ns = _example("cem_update")
    trainer = ns["main"](["--steps", "2"])
    cem = trainer.learner
    assert trainer.step_index == 2 and trainer.history[-1]["policy/sigma"] == cem.sigma
    # replay the documented update on the last batch from a known mean
    batch = trainer.last_batch
    before = cem.mean.copy()
    actions = np.asarray([s.action for s in batch.samples])
    elite = actions[np.argsort(-batch.rewards.numpy(), kind="stable")[:4]]  # 25% of 16
    run_update(cem, batch)
    assert np.allclose(cem.mean, 0.3 * before + 0.7 * elite.mean(0))
    assert np.linalg.norm(cem.mean - elite.mean(0)) < np.linalg.norm(before - elite.mean(0))
    assert trainer.best.score > trainer.initial.score  # CEM around the start state improves it


def test_a_custom_loss_is_refused_by_a_learner_that_cannot_apply_it():
    ns = _example("cem_update")
    cem = ns["CEMLearner"](np.zeros((26, 3)))
    cfg = TrainConfig(env_id="CirclePacking-26-v0", policy="gaussian", steps=1, groups=1, group_size=2, reuse="none")
    with pytest.raises(ValueError, match="does not compute its loss locally"):
        Trainer(cfg, learners=(cem, cem), loss=importance_sampling_loss)
    with pytest.raises(ValueError, match="unknown loss"):
        Trainer(TrainConfig(env_id="CirclePacking-26-v0", steps=1, groups=1, group_size=2, loss="nope"))


def test_trajectory_group_for_an_outside_loop():
    from types import SimpleNamespace

    samples = [SimpleNamespace(action=[0.1], logprob=torch.tensor([-1.0, -2.0])) for _ in range(3)]
    g = TrajectoryGroup.from_samples(0, State(solution=[0.0], score=1.0, reward=1.0, valid=True), samples, [1.0, 2.0, 3.0])
    assert g.logprobs.shape == (3, 2) and g.mask.all() and g.actions == [[0.1]] * 3
    assert TrainBatch((g, g)).rewards.tolist() == [1.0, 2.0, 3.0] * 2
    with pytest.raises(ValueError, match="needs 3 rewards"):
        TrajectoryGroup.from_samples(0, State(solution=[0.0], score=1.0, reward=1.0, valid=True), samples, [1.0])
    with pytest.raises(AttributeError):
        g.keep = False  # frozen
