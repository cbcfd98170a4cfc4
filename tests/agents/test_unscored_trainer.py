"""Unscored rollouts (a candidate the env could not judge here, e.g. a correct kernel without a GPU)
are left out of the advantages and the archive, and an unscored initial state is a start state."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from discoverygym.agents.objectives import mean_baseline
from discoverygym.agents.trainer import TrainConfig, Trainer, policy_mismatch, scored_advantages
from discoverygym.envs.program import ProgramEnv, ProgramTask
from discoverygym.errors import BackendUnavailable, InvalidSolution
from discoverygym.policy import Sample
from discoverygym.rewards.common import Score


class NeedsHardware(ProgramTask):
    """``"good N"`` scores N; ``"unscored"`` needs hardware this machine lacks; anything else fails."""

    name = "needs_hardware"
    title = "Needs hardware"
    quantity = "N"
    evaluate_initial = False  # like the kernel envs: the initial program is not scored at reset

    def initial_program(self) -> str:
        return "good 1"

    def evaluate(self, source: str, *, seed: int) -> Score:
        if source == "unscored":
            raise BackendUnavailable("timing needs a GPU\nsecond line of detail")
        if source.startswith("good "):
            return Score(float(source.split()[1]), {})
        raise InvalidSolution("not a good program")


class ScriptedLearner:
    """Samples a fixed list of actions per group and records what each update received."""

    def __init__(self, actions: list[str]) -> None:
        self.actions = actions
        self.updates: list[tuple[list, torch.Tensor]] = []

    def sample(self, contexts, n, rng):
        return [[Sample(action=self.actions[k % len(self.actions)])
                 for k in range(n)] for _ in contexts]

    def train_step(self, samples, advantages, *, kl_coef):
        self.updates.append((list(samples), advantages.clone()))
        return {"loss": 0.0, "kl": 0.0, "tokens": 0, "grad_norm": 0.0}

    def stats(self):
        return {}


def test_scored_advantages_leave_unscored_rollouts_out():
    rewards = torch.tensor([[3.0, 0.0, 5.0, 0.0], [1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    scored = torch.tensor([[True, False, True, True], [True, False, False, False]])
    adv, use = scored_advantages(mean_baseline, rewards, scored)
    # group 0: the baseline is the mean of the three scored rewards (8/3), not of all four (2)
    assert torch.allclose(adv.adv[0], torch.tensor([3 - 8 / 3, 0.0, 5 - 8 / 3, -8 / 3], dtype=torch.float64))
    # group 1: one scored rollout carries no signal, the group is dropped
    assert adv.keep.tolist() == [True, False] and adv.adv[1].abs().sum() == 0
    assert use.tolist() == [True, False, True, True, False, False, False, False]
    # every rollout scored: exactly the objective
    full, use_all = scored_advantages(mean_baseline, rewards, torch.ones_like(scored))
    assert torch.equal(full.adv, mean_baseline(rewards).adv) and use_all.tolist() == [True] * 8


def test_trainer_starts_from_an_unscored_initial_state_and_drops_unscored_rollouts():
    env = ProgramEnv(NeedsHardware())
    learner = ScriptedLearner(["good 3", "unscored", "good 5", "bad"])
    config = TrainConfig(env_id="NeedsHardware-v0", policy="hf:scripted", steps=2, groups=2, group_size=4,
                         objective="mean-baseline")
    trainer = Trainer(config, env=env, learners=(learner, learner))
    assert trainer.initial.unscored and not trainer.initial.valid
    result = trainer.run()  # used to die with ZeroDivisionError: no valid start state in the archive
    assert result.steps == 2 and result.best.score == 5.0
    first_batch, first_adv = learner.updates[0]
    assert [s.action for s in first_batch] == ["good 3", "good 5", "bad"] * 2  # no unscored rollout
    assert torch.allclose(first_adv, torch.tensor([3 - 8 / 3, 5 - 8 / 3, -8 / 3] * 2, dtype=torch.float64))
    assert trainer.history[0]["unscored_fraction"] == 0.25
    assert trainer.history[0]["errors"].get("unscored") == 2
    kept = list(trainer.reuse.archive)
    assert not any(s.unscored for s in kept if s.id not in trainer.reuse.archive.initial_ids)
    assert {s.score for s in kept if s.valid} == {3.0, 5.0}


def test_unscored_step_is_truncated_with_a_one_line_reason():
    env = ProgramEnv(NeedsHardware())
    _, info = env.reset(seed=0)
    assert info["unscored"] and info["unscored_reason"]
    _, reward, _, truncated, info = env.step("unscored")
    assert truncated and info["unscored"] and reward == env.failure_reward and not info["valid"]
    assert info["unscored_reason"] == "timing needs a GPU" and info["error"] == "unscored: timing needs a GPU"
    _, _, _, truncated, info = env.step("bad")
    assert not truncated and not info["unscored"] and info["unscored_reason"] is None
    with pytest.raises(BackendUnavailable, match="timing needs a GPU"):
        ProgramEnv(NeedsHardware(), raise_unavailable=True).evaluate("unscored")


def test_a_policy_that_cannot_write_programs_is_refused_before_any_work():
    config = TrainConfig(env_id="TriMul-H100-v0", steps=1, groups=1, group_size=2)
    message = policy_mismatch(config)
    assert message and "policy 'gaussian' cannot write" in message and "\n" not in message
    with pytest.raises(ValueError, match="takes programs, which policy 'gaussian' cannot write"):
        Trainer(config)
    assert policy_mismatch(TrainConfig(env_id="TriMul-H100-v0", policy="hf:x")) is None
    assert policy_mismatch(TrainConfig(env_id="CirclePacking-26-v0")) is None
