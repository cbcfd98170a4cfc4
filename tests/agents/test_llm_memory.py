"""HFPolicy's memory savers change no number: chunked log-probs, micro-batches, gradient checkpointing (issue 49).

The laptop defaults (micro-batch 1, gradient checkpointing, log-probs made a chunk of completion
tokens at a time) must give the same log-probs, loss and gradients as one full-batch pass that keeps
every logit, to float rounding. Memory itself is measured in ``benchmarks/llm_speed.py``, not here.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from discoverygym.agents.policies import SamplingContext
from discoverygym.envs.registry import ENVS
from discoverygym.types import State
from tests.llm_fixtures import tiny_model_dir


@pytest.fixture(scope="module")
def tiny_model_path(tmp_path_factory):
    """The tiny offline model (built once per session, see tests/llm_fixtures.py)."""
    return tiny_model_dir(tmp_path_factory.getbasetemp())


def _ctx(code: str) -> SamplingContext:
    problem = ENVS["CirclePacking-26-v0"]
    parent = State(solution=[[0.5, 0.5, 0.1]], score=0.1, reward=0.1, valid=True, code=code)
    return SamplingContext(parent=parent, inspirations=(parent,), problem=problem, action_mode="code")


def _policy(path, **kwargs):
    from discoverygym.agents.policies.hf import HFPolicy

    torch.set_num_threads(1)
    return HFPolicy(path, device="cpu", lora_rank=4, max_new_tokens=10, seed=3, temperature=0.7, **kwargs)


def _samples(pol):
    """Two prompts of different lengths, three samples each (completions of different lengths)."""
    contexts = [_ctx("def construct():\n  pass\n"), _ctx("def construct():\n  x = [1, 2, 3]\n  return x\n")]
    flat = [s for g in pol.sample(contexts, 3, np.random.default_rng(4)) for s in g]
    assert len({len(s.prompt_ids) for s in flat}) == 2
    return flat


def _perturb(pol, seed: int = 9) -> None:
    """Give every LoRA weight a random value (a fresh adapter's B is 0: its A would get no gradient)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in pol.parameters():
            p.copy_(0.05 * torch.randn(p.shape, generator=gen))


def test_chunked_logprobs_equal_the_full_logits_pass(tiny_model_path):
    pol = _policy(tiny_model_path)
    _perturb(pol)
    flat = _samples(pol)
    lengths = [len(s.completion_ids) for s in flat]
    with torch.no_grad():
        pol.logprob_chunk = 0  # one forward pass over the kept logits
        full, full_base = pol.token_logprobs(flat), pol.token_logprobs(flat, base=True)
        for chunk in (3, 256):  # several chunks (a chunk spans samples), and one
            pol.logprob_chunk = chunk
            part, part_base = pol.token_logprobs(flat), pol.token_logprobs(flat, base=True)
            assert part.shape == full.shape == (len(flat), max(lengths))
            assert torch.allclose(part, full, atol=1e-5, rtol=0)
            assert torch.allclose(part_base, full_base, atol=1e-5, rtol=0)
    for i, n in enumerate(lengths):  # real log-probs where tokens are, exactly 0 past each end
        assert bool((full[i, :n] < 0).all()) and bool((full[i, n:] == 0).all())
    assert float((full - full_base).abs().max()) > 1e-4  # the adapter matters, so base=True is tested too
    # with a gradient (each chunk under torch.utils.checkpoint): the same values and the same gradient
    grads = []
    for chunk in (0, 3):
        pol.logprob_chunk = chunk
        pol.model.zero_grad(set_to_none=True)
        lp = pol.token_logprobs(flat)
        (lp * torch.linspace(-1.0, 1.0, lp.numel()).reshape(lp.shape)).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in pol.parameters()]))
    assert float(grads[0].abs().max()) > 0
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-7)


def _step_gradients(pol, flat, adv):
    """Loss and flat LoRA gradient of one ``train_step`` (the Adam step itself is skipped)."""
    pol.optimizer.step = lambda *a, **k: None
    out = pol.train_step(flat, adv, kl_coef=0.1)
    return out, torch.cat([p.grad.flatten() for p in pol.parameters()])


def test_micro_batches_and_checkpointing_give_the_full_batch_loss_and_gradient(tiny_model_path):
    adv = torch.tensor([1.0, -0.5, 0.25, 0.4, 0.75, -0.2])  # not summing to 0: a loss far from 0
    ref = _policy(tiny_model_path, micro_batch=6, gradient_checkpointing=False, logprob_chunk=0)
    _perturb(ref)
    flat = _samples(ref)
    out_ref, grad_ref = _step_gradients(ref, flat, adv)
    assert float(grad_ref.abs().max()) > 0 and out_ref["tokens"] == sum(len(s.completion_ids) for s in flat)
    defaults = _policy(tiny_model_path)  # micro-batch 1, gradient checkpointing, chunked log-probs
    assert (defaults.micro_batch, defaults.gradient_checkpointing) == (1, True) and defaults.logprob_chunk > 0
    for pol in (defaults, _policy(tiny_model_path, micro_batch=4, logprob_chunk=5)):
        _perturb(pol)
        out, grad = _step_gradients(pol, flat, adv)
        assert out["loss"] == pytest.approx(out_ref["loss"], rel=1e-5, abs=1e-6)
        assert out["kl"] == pytest.approx(out_ref["kl"], abs=1e-5)  # a mean of ± terms: absolute rounding
        assert out["tokens"] == out_ref["tokens"]
        assert torch.allclose(grad, grad_ref, rtol=1e-4, atol=1e-7)
        assert not pol.model.training  # the update leaves the model in eval mode for sampling


def test_bad_memory_settings_are_refused(tiny_model_path):
    with pytest.raises(ValueError, match="micro_batch"):
        _policy(tiny_model_path, micro_batch=0)
    with pytest.raises(ValueError, match="logprob_chunk"):
        _policy(tiny_model_path, logprob_chunk=-1)
