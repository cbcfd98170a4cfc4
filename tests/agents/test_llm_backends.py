"""Backend plumbing without the remote services: specs, Tinker data conversion, vLLM output conversion."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from discoverygym.agents.policies import make_policy
from discoverygym.agents.policies.llm import (
    BackendUnavailable,
    LLMSample,
    is_llm_spec,
    make_sample,
    split_spec,
)
from discoverygym.policy import policy_factory


def test_spec_parsing():
    assert split_spec("hf:org/model") == ("hf", "org/model")
    assert split_spec("openai:http://127.0.0.1:8000") == ("openai", "http://127.0.0.1:8000")
    assert is_llm_spec("tinker:Qwen/Qwen3-8B") and not is_llm_spec("mutation") and not is_llm_spec("gaussian")
    for bad in ("hf:", "nope:x", "hf"):
        with pytest.raises(ValueError):
            split_spec(bad)


def test_search_resolves_llm_specs_to_backend_classes():
    assert policy_factory("hf:some/model").__name__ == "HFPolicy"
    assert policy_factory("openai:http://x").__name__ == "OpenAIServerPolicy"
    assert policy_factory("vllm:m").__name__ == "VLLMPolicy"
    assert policy_factory("tinker:m").__name__ == "TinkerPolicy"
    for name in ("hf:m", "openai:u", "vllm:m", "tinker:m"):
        assert policy_factory(name).action_modes == ("code",)


def test_vllm_missing_is_a_clear_error():
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(BackendUnavailable, match="vllm"):
            make_policy("vllm:some/model")
    else:  # pragma: no cover - only where vllm is installed
        pytest.skip("vllm is installed here")


def test_vllm_outputs_become_samples():
    from discoverygym.agents.policies.vllm_engine import samples_from_outputs

    lp = lambda v: SimpleNamespace(logprob=v)
    comp = SimpleNamespace(token_ids=[5, 6], logprobs=[{5: lp(-0.5), 9: lp(-2.0)}, {6: lp(-1.5)}],
                           text="```python\nx = 1\n```", finish_reason="stop")
    cut = SimpleNamespace(token_ids=[7], logprobs=[{7: lp(-0.25)}], text="```python\nx", finish_reason="length")
    out = samples_from_outputs([SimpleNamespace(outputs=[comp, cut])], [([{"role": "user", "content": "p"}], [1, 2], "python")],
                               tokenizer=None)
    a, b = out[0]
    assert a.completion_ids == [5, 6] and a.logprobs == [-0.5, -1.5] and a.action == "x = 1\n"
    assert a.prompt_ids == [1, 2] and a.parse_error is None
    assert b.finish_reason == "length" and b.parse_error and "unclosed" in b.parse_error
    bad = SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1], logprobs=None, text="", finish_reason="stop")])
    with pytest.raises(ValueError, match="logprobs"):
        samples_from_outputs([bad], [([{"content": "p"}], [1], "python")], tokenizer=None)


# --------------------------------------------------------------------------- Tinker
def _sample(prompt, completion, logprobs, mask):
    return make_sample("no block", "python", prompt_ids=prompt, completion_ids=completion, logprobs=logprobs, mask=mask)


def test_tinker_rl_datums_use_the_sdk_types():
    types = pytest.importorskip("tinker").types
    from discoverygym.agents.policies.tinker_policy import rl_datums

    s1 = _sample([10, 11, 12], [20, 21], [-0.5, -1.0], [True, True])
    s2 = _sample([10], [30, 31, 32], [-0.1, 0.0, -0.3], [True, False, True])
    adv = np.array([[2.0, 3.0, 0.0], [1.0, 9.0, -1.0]], dtype=np.float32)
    d1, d2 = rl_datums([s1, s2], adv)
    assert isinstance(d1, types.Datum) and isinstance(d1.model_input, types.ModelInput)
    assert d1.model_input.to_ints() == [10, 11, 12, 20]  # sequence without its last token
    assert d1.loss_fn_inputs["target_tokens"].to_numpy().tolist() == [11, 12, 20, 21]
    np.testing.assert_allclose(d1.loss_fn_inputs["logprobs"].to_numpy(), [0, 0, -0.5, -1.0])
    np.testing.assert_allclose(d1.loss_fn_inputs["advantages"].to_numpy(), [0, 0, 2.0, 3.0])
    assert d2.model_input.to_ints() == [10, 30, 31]
    np.testing.assert_allclose(d2.loss_fn_inputs["advantages"].to_numpy(), [1.0, 0.0, -1.0])  # forced token: 0
    np.testing.assert_allclose(d2.loss_fn_inputs["logprobs"].to_numpy(), [-0.1, 0.0, -0.3])
    for d in (d1, d2):
        n = len(d.model_input.to_ints())
        assert all(len(v.to_numpy()) == n for v in d.loss_fn_inputs.values())
        assert d.loss_fn_inputs["target_tokens"].dtype == "int64"
        assert d.loss_fn_inputs["advantages"].dtype == "float32"


def test_tinker_sft_datums_weights():
    pytest.importorskip("tinker")
    from discoverygym.agents.policies.tinker_policy import sft_datums

    s = _sample([1, 2], [3, 4, 5], [-1.0, 0.0, -1.0], [True, False, True])
    (d,) = sft_datums([s], [0.5])
    assert d.loss_fn_inputs["target_tokens"].to_numpy().tolist() == [2, 3, 4, 5]
    np.testing.assert_allclose(d.loss_fn_inputs["weights"].to_numpy(), [0.0, 0.5, 0.0, 0.5])


def test_tinker_needs_the_api_key_from_the_environment(monkeypatch):
    pytest.importorskip("tinker")
    monkeypatch.delenv("TINKER_API_KEY", raising=False)
    # not available here (exit 3 in the CLI), like a missing SDK
    with pytest.raises(BackendUnavailable, match="set TINKER_API_KEY"):
        make_policy("tinker:Qwen/Qwen3-8B")
    monkeypatch.setenv("TINKER_API_KEY", "fake")  # the SDK refuses it: still one clear error
    with pytest.raises(BackendUnavailable, match="Tinker service is not available"):
        make_policy("tinker:Qwen/Qwen3-8B")


def test_backend_unavailable_is_the_project_wide_error():
    from discoverygym import errors
    from discoverygym.agents.policies.openai_server import ServerError, ServerUnavailable

    assert issubclass(BackendUnavailable, errors.BackendUnavailable) and issubclass(BackendUnavailable, ImportError)
    assert issubclass(ServerUnavailable, errors.BackendUnavailable) and issubclass(ServerUnavailable, ServerError)


@pytest.mark.parametrize("url, expected", [
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("https://host.example/v1/", "https://host.example"),
    ("notaurl", None), ("ftp://host", None), ("http://", None), ("http://h:99999", None), ("127.0.0.1:8000", None),
])
def test_openai_url_check(url, expected):
    from discoverygym.agents.policies.openai_server import check_url

    if expected is None:
        with pytest.raises(ValueError, match="openai:URL needs the base URL"):
            check_url(url)
    else:
        assert check_url(url) == expected


def test_unknown_trainable_policy_lists_the_llm_specs():
    from discoverygym.agents.policies import make_trainable_policy

    with pytest.raises(ValueError, match="hf:PATH_OR_ID, openai:URL, vllm:MODEL, tinker:MODEL"):
        make_trainable_policy("foo:bar", (3,))


def test_llm_sample_logprob_tensor():
    torch = pytest.importorskip("torch")
    s = LLMSample(action="", text="", prompt_ids=[1], completion_ids=[2, 3], logprobs=[-0.5, -0.25], mask=[True, True])
    assert torch.equal(s.logprob, torch.tensor([-0.5, -0.25]))
