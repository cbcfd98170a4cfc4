"""No signal, no step (issue 49): a step whose groups all have equal rewards leaves the adapter bit-identical."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from discoverygym.agents.trainer import TrainConfig, Trainer
from tests.llm_fixtures import tiny_model_dir

#: log-prob offset of a separate sampler (a server, another dtype) on every other action token: the
#: rounding noise between the sampler's and the learner's log-probs, above losses.DELTA_NOISE
NOISE = 3e-4


@pytest.fixture(scope="module")
def tiny_model_path(tmp_path_factory):
    """The tiny offline model (built once per session, see tests/llm_fixtures.py)."""
    return tiny_model_dir(tmp_path_factory.getbasetemp())


class _NoisySampler:
    """A separate sampler (as an openai:/vllm: server is): the tiny model's own samples, whose
    behaviour log-probs carry rounding noise of ``NOISE`` on every other token."""

    name = "noisy"

    def __init__(self, policy):
        self.policy = policy

    def sample(self, contexts, n, rng):
        groups = self.policy.sample(contexts, n, rng)
        return [[dataclasses.replace(s, logprobs=[lp + NOISE * (t % 2) for t, lp in enumerate(s.logprobs)])
                 for s in g] for g in groups]

    def load_adapter(self, path, name=None):
        pass


def _lora(policy) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in policy.model.named_parameters() if "lora_" in k}


def _run(tiny_model_path, **overrides):
    """One step of 1 group x 4 on CirclePacking-26-v0 code mode; returns (learner, LoRA weights before, metrics)."""
    from discoverygym.agents.policies.hf import HFPolicy

    torch.manual_seed(0)
    learner = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=8, lr=1e-2)
    sampler = _NoisySampler(HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=8))
    cfg = TrainConfig(env_id="CirclePacking-26-v0", policy=f"hf:{tiny_model_path}", steps=1, groups=1,
                      group_size=4, **overrides)
    before = _lora(learner)
    result = Trainer(cfg, None, learners=(sampler, learner)).run()
    return learner, before, result.history[0]


def test_a_constant_group_leaves_a_fresh_adapter_bit_identical(tiny_model_path):
    learner, before, m = _run(tiny_model_path)
    # the random tiny model writes no program: every reward is the failure reward, the group is dropped
    assert m["groups_kept"] == 0 and m["reward/max"] == m["reward/min"]
    after = _lora(learner)
    assert all(torch.equal(before[k], after[k]) for k in before)  # bit-identical, not merely close
    assert all(float(v.abs().max()) == 0.0 for k, v in after.items() if "lora_B" in k)  # still the base model
    assert (m["train_tokens"], m["grad_norm"], m["kl"]) == (0, 0.0, 0.0)


def test_the_opt_in_kl_only_step_is_what_moved_it(tiny_model_path):
    """The old default (update_on_constant, now opt-in): Adam turns the noise into a full-size step."""
    learner, before, m = _run(tiny_model_path, update_on_constant=True)
    assert m["groups_kept"] == 0 and m["train_tokens"] > 0 and 0 < m["grad_norm"] < 1e-2
    moved = max(float((_lora(learner)[k] - before[k]).abs().max()) for k in before)
    assert moved > 1e-3  # about lr = 1e-2: normalised by Adam, whatever the gradient's size
