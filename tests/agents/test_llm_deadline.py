"""A budget run's wall deadline ends LLM sampling, the LLM update and sandboxed programs (issue 49).

The trainer sets the deadline with :func:`~discoverygym.envs.operators.deadline.deadline_at`
around each step; here it is set to a moment already past, so that what stops is behaviour
(tokens per row, an update not taken, a program reported as stopped), never a timing.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from discoverygym.agents.policies import SamplingContext
from discoverygym.envs.operators.deadline import deadline_at
from discoverygym.envs.registry import ENVS
from discoverygym.sandbox.python import SandboxLimits, run_program
from discoverygym.types import State
from tests.llm_fixtures import tiny_model_dir


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    from discoverygym.agents.policies.hf import HFPolicy

    torch.set_num_threads(1)
    return HFPolicy(tiny_model_dir(tmp_path_factory.getbasetemp()), device="cpu", lora_rank=4, max_new_tokens=12,
                    lr=1e-2, stop_at_answer=False)


def _ctx() -> SamplingContext:
    problem = ENVS["CirclePacking-26-v0"]
    parent = State(solution=[[0.5, 0.5, 0.1]], score=0.1, reward=0.1, valid=True, code="def construct():\n  pass\n")
    return SamplingContext(parent=parent, inspirations=(parent,), problem=problem, action_mode="code")


def test_sampling_stops_at_a_passed_deadline(policy):
    class NoEOS(type(policy)):
        @property
        def eos_ids(self) -> set[int]:
            return set()

    gen = torch.Generator().manual_seed(0)
    policy.__class__ = NoEOS
    try:
        free = policy.generate_ids([1, 2, 3], 3, 12, gen)
        with deadline_at(time.time() - 1.0):
            cut = policy.generate_ids([1, 2, 3], 3, 12, gen)
    finally:
        policy.__class__ = NoEOS.__mro__[1]
    assert [len(ids) for ids, _, _ in free] == [12, 12, 12]
    assert [(len(ids), ended) for ids, _, ended in cut] == [(1, False)] * 3  # one token each, unended
    with deadline_at(time.time() + 3600.0):  # a deadline far away changes nothing
        far = policy.sample([_ctx()], 2, np.random.default_rng(1))[0]
    assert all(len(s.completion_ids) >= 1 for s in far)


def test_the_update_is_not_taken_past_the_deadline(policy):
    samples = policy.sample([_ctx()], 2, np.random.default_rng(2))[0]
    before = [p.detach().clone() for p in policy.parameters()]
    with deadline_at(time.time() - 1.0):
        out = policy.train_step(samples, torch.tensor([1.0, -1.0]), kl_coef=0.1)
    assert out["tokens"] == 0 and policy.stats().get("deadline_skipped") == 1.0
    assert all(torch.equal(a, b) for a, b in zip(before, policy.parameters()))
    assert not policy.model.training
    out = policy.train_step(samples, torch.tensor([1.0, -1.0]), kl_coef=0.1)  # no deadline: it is taken
    assert out["tokens"] > 0 and any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))


def test_a_sandboxed_program_stops_at_the_deadline():
    with deadline_at(time.time() - 1.0):
        result = run_program("def construct():\n    while True:\n        pass\n",
                             limits=SandboxLimits(timeout_s=30.0))
    assert not result.ok and result.timed_out
    assert "timed out at the run's wall deadline" in result.error and "30.0 s" in result.error
    no_deadline = run_program("def construct():\n    return 1\n", limits=SandboxLimits(timeout_s=30.0))
    assert no_deadline.ok and no_deadline.value == 1


def test_a_budget_run_sets_the_sampling_and_update_deadlines(tmp_path):
    from discoverygym.agents.trainer import TrainConfig, Trainer
    from tests.agents.test_llm_train import _packing, _Scripted

    class Spy(_Scripted):
        """Records the seconds left to the process's deadline when sampling and when updating."""

        def __init__(self, programs):
            super().__init__(programs)
            self.left: dict[str, list[float]] = {"sample": [], "update": []}

        def sample(self, contexts, n, rng):
            self.left["sample"].append(remaining())
            return super().sample(contexts, n, rng)

        def train_step(self, samples, advantages, *, kl_coef):
            self.left["update"].append(remaining())
            return super().train_step(samples, advantages, kl_coef=kl_coef)

    from discoverygym.envs.operators.deadline import remaining

    def run(**budget):
        spy = Spy([_packing(0.1), _packing(0.05)])
        cfg = TrainConfig(env_id="CirclePacking-26-v0", policy="hf:unused", steps=1, groups=1, group_size=2,
                          eval_workers=1, **budget)
        Trainer(cfg, None, learners=(spy, spy)).run()
        return spy.left

    left = run(budget_s=600.0)
    assert len(left["sample"]) == len(left["update"]) == 1
    # sampling stops at the operators' point (the budget less its reserve, 5-25 %), the update at the deadline
    assert 600.0 * 0.75 - 60 <= left["sample"][0] <= 600.0 * 0.95
    assert left["sample"][0] < left["update"][0] <= 600.0
    assert run() == {"sample": [math.inf], "update": [math.inf]}  # no budget: no deadline
