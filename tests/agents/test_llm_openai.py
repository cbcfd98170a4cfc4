"""OpenAIServerPolicy against a real HTTP server on loopback (tests/openai_server.py) serving the tiny model."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("httpx")

from discoverygym.agents.losses import pad_behaviour
from discoverygym.agents.policies import SamplingContext
from discoverygym.envs.registry import ENVS
from discoverygym.types import State
from tests.llm_fixtures import tiny_model_dir
from tests.openai_server import serve


@pytest.fixture(scope="module")
def tiny_model_path(tmp_path_factory):
    """The tiny offline model (built once per session, see tests/llm_fixtures.py)."""
    return tiny_model_dir(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def server(tiny_model_path):
    torch.set_num_threads(1)
    with serve(tiny_model_path, lora_rank=4) as url:
        yield url


@pytest.fixture(scope="module")
def learner(tiny_model_path):
    from discoverygym.agents.policies.hf import HFPolicy

    return HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=10, lr=1e-2)


def _ctx() -> SamplingContext:
    parent = State(solution=[[0.5, 0.5, 0.1]], score=0.1, reward=0.1, valid=True, code="x = 1\n")
    return SamplingContext(parent=parent, inspirations=(parent,), problem=ENVS["CirclePacking-26-v0"],
                           action_mode="code")


def test_server_samples_carry_ids_and_logprobs_that_match_the_learner(server, tiny_model_path, learner):
    from discoverygym.agents.policies.openai_server import OpenAIServerPolicy

    policy = OpenAIServerPolicy(server, max_new_tokens=10)
    assert policy.model == str(tiny_model_path)  # first of GET /v1/models
    groups = policy.sample([_ctx(), _ctx()], 3, np.random.default_rng(0))
    flat = [s for g in groups for s in g]
    assert [len(g) for g in groups] == [3, 3] and all(s.completion_ids for s in flat)
    assert flat[0].prompt_ids == flat[3].prompt_ids  # same context, same tokens
    old, mask = pad_behaviour(flat)
    with torch.no_grad():
        fresh = learner.token_logprobs(flat, base=True)
    assert float((fresh - old)[mask].abs().max()) <= 1e-4


def test_lora_adapter_loaded_into_the_server_after_a_step(server, tiny_model_path, learner, tmp_path):
    from discoverygym.agents.policies.openai_server import OpenAIServerPolicy

    policy = OpenAIServerPolicy(server, max_new_tokens=10, tokenizer=learner.tokenizer)
    batch = policy.sample([_ctx()], 4, np.random.default_rng(1))[0]
    for _ in range(3):
        learner.train_step(batch, torch.tensor([1.0, -1.0, 1.0, -1.0]), kl_coef=0.1)
    policy.load_adapter(learner.save_adapter(tmp_path / "step1"), name="step-1")
    assert policy.model == "step-1"
    after = policy.sample([_ctx()], 4, np.random.default_rng(2))[0]
    old, mask = pad_behaviour(after)
    with torch.no_grad():
        tuned, base = learner.token_logprobs(after), learner.token_logprobs(after, base=True)
    assert float((tuned - old)[mask].abs().max()) <= 1e-4  # served with the new adapter
    assert float((base - old)[mask].abs().max()) > 1e-3  # ... which is not the base model


def test_server_errors_are_clear(server, learner):
    from discoverygym.agents.policies.openai_server import OpenAIServerPolicy, ServerError

    policy = OpenAIServerPolicy(server, model="not-served", tokenizer=learner.tokenizer, max_new_tokens=4)
    with pytest.raises(ServerError, match="404"):
        policy.sample([_ctx()], 1, np.random.default_rng(0))
    with pytest.raises(ServerError, match="400"):
        policy.load_adapter("/nonexistent/adapter", name="x")
    with pytest.raises(ServerError, match="failed"):
        OpenAIServerPolicy("http://127.0.0.1:9", tokenizer=learner.tokenizer, timeout_s=2)


def test_trainer_with_server_sampler_and_local_learner(server, tiny_model_path, tmp_path):
    from discoverygym.agents.policies.hf import HFPolicy
    from discoverygym.agents.policies.openai_server import OpenAIServerPolicy
    from discoverygym.agents.trainer import TrainConfig, Trainer

    cfg = TrainConfig(env_id="CirclePacking-26-v0", policy=f"openai:{server}", train_model=str(tiny_model_path),
                         steps=1, groups=1, group_size=2, max_new_tokens=8, lora_rank=4, device="cpu",
                         update_on_constant=True)  # the tiny model's answers all fail: the opt-in KL step pushes
    learner = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=8)
    sampler = OpenAIServerPolicy(server, tokenizer=learner.tokenizer, max_new_tokens=8)
    result = Trainer(cfg, tmp_path / "run", learners=(sampler, learner)).run()
    assert result.steps == 1 and sampler.model == "step-1"
    assert (tmp_path / "run" / "adapters" / "step_000001" / "adapter_model.safetensors").exists()
