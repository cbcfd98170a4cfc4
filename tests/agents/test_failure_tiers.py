"""The opt-in failure ladder (issue 49): failed rollouts graded by outcome, all below every valid reward."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

from discoverygym.agents.config import ABLATIONS, ablation_config, config_overrides
from discoverygym.agents.policies.llm import make_sample
from discoverygym.agents.trainer import TrainConfig, Trainer
from discoverygym.envs.registry import ENVS
from discoverygym.outcomes import FAILURE_TIERS, classify, failure_tier_reward
from discoverygym.policy import Outcome

#: the ladder, lowest first (timeout shares runtime error's rung)
LADDER = (Outcome.TRUNCATED, Outcome.NO_CODE, Outcome.SYNTAX_ERROR, Outcome.WRONG_ENTRY, Outcome.RUNTIME_ERROR,
          Outcome.INVALID)


def _packing(radius: float) -> str:
    """25 circles of ``radius`` on a 5 x 5 grid and one of radius 0 (valid for radius <= 0.1)."""
    return ("import numpy as np\ndef construct():\n"
            f"    g = (np.arange(5) + 0.5) / 5\n    pts = [[x, y, {radius}] for x in g for y in g]\n"
            f"    return pts + [[0.0, 0.0, 0.0]]\n")


def _fence(code: str) -> str:
    return f"```python\n{code}```\n"


#: one response per outcome, and two valid ones: the best and the env's lowest valid reward (Σr = 0)
RESPONSES = {
    Outcome.TRUNCATED: ("```python\ndef construct():\n    return [[0.5, 0.5,", "length"),
    Outcome.NO_CODE: ("I would place the circles on a grid.", "stop"),
    Outcome.SYNTAX_ERROR: (_fence("def construct(:\n    return []\n"), "stop"),
    Outcome.WRONG_ENTRY: (_fence("def build():\n    return []\n"), "stop"),
    Outcome.RUNTIME_ERROR: (_fence("def construct():\n    raise ValueError('no packing')\n"), "stop"),
    Outcome.INVALID: (_fence(_packing(0.2)), "stop"),  # overlapping circles
    "best": (_fence(_packing(0.1)), "stop"),
    "zero": (_fence(_packing(0.0)), "stop"),
}


class _Scripted:
    """Sampler and learner: the responses above as LLM samples (fake token data); records the update."""

    name = "scripted"

    def __init__(self):
        self.calls = []

    def sample(self, contexts, n, rng):
        return [[make_sample(text, "python", finish_reason=finish, prompt_ids=[1], completion_ids=[2, 3],
                             logprobs=[-1.0, -1.0], mask=[True, True]) for text, finish in RESPONSES.values()]
                for _ in contexts]

    def train_step(self, samples, advantages, *, kl_coef):
        self.calls.append(torch.as_tensor(advantages).clone())
        return {"loss": 0.0, "kl": 0.0, "tokens": 2 * len(samples), "grad_norm": 0.0}

    def save_checkpoint(self, path):
        path.mkdir(parents=True, exist_ok=True)

    def stats(self):
        return {}


def test_the_ladder_is_ordered_and_below_the_failure_reward_of_every_env():
    for problem in ENVS.values():
        f = float(problem.failure_reward)
        rungs = [failure_tier_reward(f, o) for o in LADDER]
        assert all(a < b for a, b in itertools.pairwise(rungs)), problem
        assert rungs[-1] == f  # invalid keeps the env's failure reward, below every valid reward by contract
        assert failure_tier_reward(f, Outcome.TIMEOUT) == failure_tier_reward(f, Outcome.RUNTIME_ERROR)
    assert failure_tier_reward(2.5, Outcome.VALID) == 2.5 and failure_tier_reward(-1.0, None) == -1.0
    assert set(FAILURE_TIERS) == set(Outcome) - {Outcome.VALID}


@pytest.mark.parametrize("tiers", [False, True])
def test_trainer_grades_failures_below_the_lowest_valid_reward(tiers):
    policy = _Scripted()
    cfg = TrainConfig(env_id="CirclePacking-26-v0", policy="hf:unused", steps=1, groups=1,
                      group_size=len(RESPONSES), failure_tiers=tiers, reuse="none")
    trainer = Trainer(cfg, None, learners=(policy, policy))
    m = trainer.run().history[0]
    group = trainer.last_batch.groups[0]
    by = dict(zip(RESPONSES, group.rewards.tolist()))
    outcomes = [classify(s, None) if s.error else None for s in group.samples]
    assert outcomes[:2] == [Outcome.TRUNCATED, Outcome.NO_CODE]  # decided by the parser
    assert m["outcomes"] == {"valid": 2, "invalid": 1, "runtime_error": 1, "syntax_error": 1, "no_code": 1,
                             "truncated": 1, "wrong_entry_point": 1}
    lowest_valid = by["zero"]
    assert lowest_valid == 0.0 and by["best"] == pytest.approx(2.5)
    failures = [by[o] for o in LADDER]
    assert max(failures) < lowest_valid
    if tiers:
        assert all(a < b for a, b in itertools.pairwise(failures))  # truncated < no code < ... < invalid
        assert by[Outcome.INVALID] == ENVS["CirclePacking-26-v0"].failure_reward
    else:
        assert set(failures) == {ENVS["CirclePacking-26-v0"].failure_reward}


def test_failure_tiers_is_an_ablation_of_compare():
    assert config_overrides("failure-tiers") == ABLATIONS["failure-tiers"] == {"failure_tiers": True}
    assert config_overrides("naive-rl+failure_tiers=true") == {**ABLATIONS["naive-rl"], "failure_tiers": True}
    assert ablation_config("failure-tiers", env_id="CirclePacking-26-v0").failure_tiers
    assert not TrainConfig(env_id="CirclePacking-26-v0").failure_tiers  # off by default
    with pytest.raises(ValueError, match="failure_tiers takes true or false"):
        config_overrides("full+failure_tiers=maybe")
