"""Shared-prompt scoring (:mod:`discoverygym.agents.policies.prefix`): the prompt run once gives the same
log-probs, gradients and TTT-Discover update as one full pass per sequence (issue 49, time on a CPU)."""

from __future__ import annotations

import pytest

from tests.llm_fixtures import tiny_model_path  # noqa: F401 (pytest fixture)

PROMPT = [1, 5, 9, 13, 17, 21, 30, 31]
COMPLETIONS = [[40, 41, 42], [50], [60, 61, 62, 63, 64], [70, 71]]


def _policy(path, **kw):
    import torch

    from discoverygym.agents.policies.hf import HFPolicy

    pol = HFPolicy(path, device="cpu", lora_rank=4, seed=0, gradient_checkpointing=False, micro_batch=8, **kw)
    with torch.no_grad():  # a non-zero adapter, so that the adapter's effect on the prompt matters
        for p in pol.parameters():
            p.add_(0.02)
    return pol


def test_shared_prompt_logprobs_and_gradients_equal_full_passes(tiny_model_path):  # noqa: F811
    import torch

    from discoverygym.agents.policies.prefix import shared_prompt_logprobs

    pol = _policy(tiny_model_path)
    lp, mask = shared_prompt_logprobs(pol.model, PROMPT, COMPLETIONS, temperature=0.7)
    assert lp.shape == (4, 5) and mask.sum() == sum(map(len, COMPLETIONS))
    lp.sum().backward()
    shared = [p.grad.clone() for p in pol.parameters()]
    pol.model.zero_grad()
    total = 0
    for i, c in enumerate(COMPLETIONS):
        logits = pol.model(input_ids=torch.tensor([PROMPT + c])).logits[0, len(PROMPT) - 1:len(PROMPT) - 1 + len(c)]
        ref = torch.log_softmax(logits.float() / 0.7, -1).gather(1, torch.tensor(c)[:, None]).squeeze(1)
        assert torch.allclose(lp[i, :len(c)], ref.detach(), atol=1e-5)
        assert not lp[i, len(c):].any()
        total = total + ref.sum()
    total.backward()
    for a, b in zip(shared, (p.grad for p in pol.parameters())):
        assert torch.allclose(a, b, atol=1e-5)
    with pytest.raises(ValueError):
        shared_prompt_logprobs(pol.model, [], COMPLETIONS)


def test_shared_prompt_train_step_equals_the_per_sequence_step(tiny_model_path):  # noqa: F811
    import torch

    from discoverygym.agents.policies.llm import LLMSample

    samples = []
    for c in COMPLETIONS:
        samples.append(LLMSample(action="x", text="x", prompt_ids=list(PROMPT), completion_ids=list(c),
                                 logprobs=[-1.0] * len(c), mask=[True] * len(c)))
    adv = torch.tensor([1.0, -0.5, 0.25, -0.75])
    out = {}
    for shared in (False, True):
        pol = _policy(tiny_model_path, shared_prompt=shared)
        stats = pol.train_step(samples, adv, kl_coef=0.1)
        out[shared] = (pol.state_dict(), stats)
    for k, v in out[False][0].items():
        assert torch.allclose(v, out[True][0][k], atol=1e-6), k
    assert out[True][1]["tokens"] == out[False][1]["tokens"]
    assert out[True][1]["kl"] == pytest.approx(out[False][1]["kl"], abs=1e-6)
