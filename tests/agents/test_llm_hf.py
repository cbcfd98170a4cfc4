"""HFPolicy on a tiny offline model: log-probs, LoRA-only updates, KL, adapters, learning a toy task."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from discoverygym.agents.losses import pad_behaviour, token_advantages
from discoverygym.agents.objectives import entropic_adaptive
from discoverygym.agents.policies import SamplingContext
from discoverygym.agents.policies.llm import LLMSample, ModelUnavailable
from discoverygym.agents.responses import FORCE_ANSWER
from discoverygym.envs.registry import ENVS
from discoverygym.types import State
from tests.llm_fixtures import tiny_model_dir


@pytest.fixture(scope="module")
def tiny_model_path(tmp_path_factory):
    """The tiny offline model (built once per session, see tests/llm_fixtures.py)."""
    return tiny_model_dir(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def policy(tiny_model_path):
    from discoverygym.agents.policies.hf import HFPolicy

    torch.set_num_threads(1)
    return HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=12)


def _ctx() -> SamplingContext:
    problem = ENVS["CirclePacking-26-v0"]
    parent = State(solution=[[0.5, 0.5, 0.1]], score=0.1, reward=0.1, valid=True, code="def construct():\n  pass\n")
    return SamplingContext(parent=parent, inspirations=(parent,), problem=problem, action_mode="code")


def test_sampling_logprobs_match_a_forward_pass(policy):
    groups = policy.sample([_ctx(), _ctx()], 3, np.random.default_rng(1))
    flat = [s for g in groups for s in g]
    assert len(groups) == 2 and all(len(g) == 3 for g in groups)
    for s in flat:
        assert len(s.completion_ids) == len(s.logprobs) == len(s.mask) >= 1
        assert all(isinstance(t, int) for t in s.completion_ids) and s.prompt_ids
        assert isinstance(s.action, str) and s.action  # parsed program or a failing stub
    old, mask = pad_behaviour(flat)
    with torch.no_grad():
        fresh = policy.token_logprobs(flat)
    assert float((fresh - old)[mask].abs().max()) <= 1e-4
    assert bool((old[mask] < 0).all())


def test_same_rng_same_samples(policy):
    a = policy.sample([_ctx()], 2, np.random.default_rng(7))
    b = policy.sample([_ctx()], 2, np.random.default_rng(7))
    assert [s.completion_ids for s in a[0]] == [s.completion_ids for s in b[0]]


def test_thinking_budget_forces_an_answer(tiny_model_path):
    from discoverygym.agents.policies.hf import HFPolicy

    pol = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=60, thinking_budget=3)
    forced_ids = pol.tokenizer(FORCE_ANSWER, add_special_tokens=False)["input_ids"]
    samples = pol.sample([_ctx()], 4, np.random.default_rng(0))[0]
    forced = [s for s in samples if not all(s.mask)]
    assert forced, "a random model should not close its reasoning within 3 tokens"
    for s in forced:
        k = s.mask.index(False)
        assert k == 3 and s.completion_ids[k:k + len(forced_ids)] == forced_ids
        assert all(lp == 0.0 for lp, m in zip(s.logprobs, s.mask) if not m)
    old, mask = pad_behaviour(samples)
    with torch.no_grad():
        fresh = pol.token_logprobs(samples)
    assert float((fresh - old)[mask].abs().max()) <= 1e-4  # phase 2 is conditioned on the forced text


def test_kl_is_zero_before_the_first_update(policy, tiny_model_path):
    from discoverygym.agents.policies.hf import HFPolicy

    fresh = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=8)
    flat = fresh.sample([_ctx()], 3, np.random.default_rng(3))[0]
    old, mask = pad_behaviour(flat)
    base = fresh.token_logprobs(flat, base=True)
    _, delta = token_advantages(torch.zeros(3), old, base, mask, 0.1)
    assert float(delta.abs().max()) == 0.0
    assert float((base - old)[mask].abs().max()) <= 1e-4


def test_one_step_changes_only_lora_weights(tiny_model_path):
    from discoverygym.agents.policies.hf import HFPolicy

    pol = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=8, lr=1e-2)
    before = {k: v.detach().clone() for k, v in pol.model.named_parameters()}
    flat = pol.sample([_ctx()], 4, np.random.default_rng(5))[0]
    out = pol.train_step(flat, torch.tensor([1.0, -1.0, 0.5, -0.5]), kl_coef=0.1)
    changed = [k for k, v in pol.model.named_parameters() if not torch.equal(v, before[k])]
    assert changed and all("lora_" in k for k in changed)
    assert out["tokens"] == sum(len(s.completion_ids) for s in flat) and np.isfinite(out["loss"])
    # after the update the adapter differs from the base, so Δ is no longer zero
    with torch.no_grad():
        assert float((pol.token_logprobs(flat) - pol.token_logprobs(flat, base=True)).abs().max()) > 1e-6


def test_adapter_round_trip(tiny_model_path, tmp_path):
    from discoverygym.agents.policies.hf import HFPolicy

    pol = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=8, lr=1e-2)
    flat = pol.sample([_ctx()], 2, np.random.default_rng(2))[0]
    for _ in range(2):
        pol.train_step(flat, torch.tensor([1.0, -1.0]), kl_coef=0.0)
    pol.save_adapter(tmp_path / "a")
    assert (tmp_path / "a" / "adapter_config.json").exists()
    other = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=8, adapter=tmp_path / "a")
    with torch.no_grad():
        assert torch.allclose(pol.token_logprobs(flat), other.token_logprobs(flat), atol=1e-6)
    fresh = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=8)
    fresh.load_adapter(tmp_path / "a")
    with torch.no_grad():
        assert torch.allclose(pol.token_logprobs(flat), fresh.token_logprobs(flat), atol=1e-6)


def test_offline_hub_id_names_the_missing_model(monkeypatch):
    from discoverygym.agents.policies.hf import HFPolicy

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailable, match="no-such-org/no-such-model-3141"):
        HFPolicy("no-such-org/no-such-model-3141", device="cpu")


def test_toy_text_task_training_raises_the_rewarded_rate(tiny_model_path):
    """Reward 1 when the first sampled token is in a fixed quarter of the vocabulary."""
    from discoverygym.agents.policies.hf import HFPolicy

    torch.set_num_threads(1)
    # LoRA on the unembedding too (as Tinker's train_unembed): a random tiny model's hidden states
    # alone can barely move the probability of an arbitrary token set
    pol = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, max_new_tokens=1, lr=1e-2, micro_batch=64,
                   target_modules=["q_proj", "v_proj", "lm_head"])
    vocab = pol.model.config.vocab_size
    rewarded = torch.zeros(vocab, dtype=torch.bool)
    rewarded[torch.randperm(vocab, generator=torch.Generator().manual_seed(0))[: vocab // 4]] = True
    prompt = pol.tokenizer("<|user|>\nsay something\n<|assistant|>\n", add_special_tokens=False)["input_ids"]

    def rate() -> float:
        with torch.no_grad():
            logits = pol.model(input_ids=torch.tensor([prompt])).logits[0, -1]
        return float(torch.softmax(logits / pol.temperature, -1)[rewarded].sum())

    start = rate()
    gen = torch.Generator().manual_seed(0)
    for _ in range(15):
        rows = pol.generate_ids(prompt, 32, 1, gen)
        samples = [LLMSample(action="", text="", prompt_ids=prompt, completion_ids=ids, logprobs=lps,
                             mask=[True] * len(ids)) for ids, lps, _ in rows]
        rewards = torch.tensor([[float(rewarded[s.completion_ids[0]]) for s in samples]], dtype=torch.float64)
        adv = entropic_adaptive(rewards)
        if bool(adv.keep.any()):
            pol.train_step(samples, adv.adv.reshape(-1), kl_coef=0.0)
    end = rate()
    assert end > start + 0.3, (start, end)
