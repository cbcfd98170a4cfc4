"""The warm start (``post-train --warmup``): rule-made variants, judged data, and an SFT that makes a
tiny random model write valid programs of a toy env it could not write before (issue 49)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from discoverygym.agents.irft.variants import compact, literal_variant, literal_variants
from discoverygym.errors import InvalidSolution
from discoverygym.envs.problem import Problem
from discoverygym.rewards.common import Score
from tests.llm_fixtures import tiny_model_path  # noqa: F401 (pytest fixture)

ERDOS = """\"\"\"Docstring.\"\"\"
import numpy as np  # numpy


def construct(seed: int = 0, budget_s: float = 10.0, parent=None):
    \"\"\"Inner docstring.\"\"\"
    n = 200
    x = (np.arange(n) + 0.5) / n * 2.0  # centres
    return x[:3]
"""


def test_compact_drops_comments_and_docstrings_and_keeps_the_code():
    out = compact(ERDOS)
    assert "Docstring" not in out and "#" not in out
    assert "n = 200" in out and out.endswith("return x[:3]\n")
    compile(out, "<variant>", "exec")  # still a program


def test_literal_variants_change_floats_and_large_ints_only():
    rng = np.random.default_rng(0)
    variants = literal_variants(ERDOS, 8, rng, sigma=0.5, p=1.0)
    assert len(variants) == 8 and len(set(variants)) == 8
    for v in variants:
        compile(v, "<variant>", "exec")
        assert "x[:3]" in v  # an index (small int) is never changed
        assert "n = 200\n" not in v or "0.5" not in v  # something changed
    with pytest.raises(ValueError):
        literal_variant(ERDOS, rng, sigma=0.0)


# --------------------------------------------------------------------------- a toy env
def _toy_verifier(x):
    x = np.asarray(x, dtype=float).ravel()
    if x.shape != (1,) or not 1.0 <= x[0] <= 99.0:
        raise InvalidSolution(f"need one number in [1, 99], got {x.tolist()}")
    return Score(float(x[0]))


TOY = Problem(name="toy", title="Toy", quantity="x", direction="max", verifier=_toy_verifier,
              initial=lambda rng: [1.0], description="return one number in [1, 99]",
              sota={"value": 99.0, "source": "test"}, row_len=None, returns="a list of one float",
              render=lambda c, size: np.zeros((size, size, 3), np.uint8), failure_reward=-1.0)
TOY_PROGRAM = "def construct(**kw):\n    return [42.5]\n"


def _toy_env():
    from discoverygym.envs.construction import DiscoveryEnv
    from discoverygym.sandbox.python import SandboxLimits

    return DiscoveryEnv(TOY, action_mode="code", sandbox=SandboxLimits(timeout_s=10.0, memory_mb=1024))


def _valid_rate(policy, env, n: int = 16) -> tuple[float, int]:
    from discoverygym.policy import SamplingContext

    _, info = env.reset(seed=0)
    start = info["state"]
    ctx = SamplingContext(start, (start,), env.unwrapped.problem, "code")
    samples = policy.sample([ctx], n, np.random.default_rng(1))[0]
    states = [env.unwrapped.evaluate(s.action, parent=start, seed=0) for s in samples]
    valid = [s for s in states if s.valid]
    return len(valid) / n, len({s.score for s in valid})


def test_warm_start_raises_a_tiny_models_valid_rate_on_a_toy_env(tiny_model_path, tmp_path):  # noqa: F811
    pytest.importorskip("trl")
    from discoverygym.agents.irft.sft import SFTSettings
    from discoverygym.agents.irft.warmup import WarmupConfig, run_warmup
    from discoverygym.agents.policies.hf import HFPolicy

    try:
        env = _toy_env()
    except Exception as exc:  # noqa: BLE001 - a machine without a usable sandbox
        pytest.skip(f"no sandbox here: {exc}")
    # the random tiny model's features are too poor for attention/MLP adapters alone: the head adapts too
    lora = {"lora_rank": 8, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                               "down_proj", "lm_head"]}
    policy = HFPolicy(tiny_model_path, device="cpu", max_new_tokens=48, batch_size=16, seed=0, **lora)
    before, _ = _valid_rate(policy, env)
    cfg = WarmupConfig(problems=["Toy-v0"], policy=f"hf:{tiny_model_path}", variants=12, sigma=0.3, seed=0,
                       variant_parents=0.0, prompt_grad=True,  # the random tiny model needs the exact gradient
                       sft=SFTSettings(steps=150, batch_size=4, micro_batch_size=4, lr=1e-2, max_length=4096))
    summary = run_warmup(cfg, tmp_path / "warm", policy=policy, envs={"Toy-v0": env},
                         sources={"Toy-v0": TOY_PROGRAM})
    data = summary["data"][0]
    assert data["valid"] == 12 and data["distinct_scores"] >= 8  # judged variants, distinct scores
    rows = [json.loads(x) for x in (tmp_path / "warm" / "data.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and all(r["completion_ids"][-1] == policy.tokenizer.eos_token_id for r in rows)
    after, distinct = _valid_rate(policy, env)
    assert before <= 0.125 and after >= 0.5, (before, after)
    # the saved adapter is what the policy learned: a fresh policy loading it samples the same way
    fresh = HFPolicy(tiny_model_path, device="cpu", max_new_tokens=48, batch_size=16, seed=0,
                     adapter=summary["adapter"], **lora)
    assert _valid_rate(fresh, env)[0] == after
    # resume of a finished run does nothing new and returns the same adapter
    again = run_warmup(cfg, tmp_path / "warm", resume=True, policy=policy, envs={"Toy-v0": env},
                       sources={"Toy-v0": TOY_PROGRAM})
    assert again["adapter"] == summary["adapter"] and again["examples"] == 12
    env.close()


def test_warm_start_merged_into_the_base_is_the_kl_reference(tiny_model_path, tmp_path):  # noqa: F811
    """``warm_start=DIR`` merges the adapter: the fresh adapter is zero, so the policy's log-probs equal
    those of the base with the adapter disabled (π_base = the warm model), and differ from the raw base."""
    import torch

    from discoverygym.agents.policies.hf import HFPolicy

    warm = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, seed=0)
    with torch.no_grad():
        for p in warm.parameters():
            p.add_(0.05)
    warm.save_adapter(tmp_path / "a")
    merged = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, seed=1, warm_start=tmp_path / "a")
    raw = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, seed=1)
    ids = torch.tensor([[1, 5, 9, 13, 17, 21]])
    with torch.no_grad():
        a = warm.model(input_ids=ids).logits
        b = merged.model(input_ids=ids).logits
        with merged.model.disable_adapter():
            c = merged.model(input_ids=ids).logits
        d = raw.model(input_ids=ids).logits
    assert torch.allclose(a, b, atol=1e-4) and torch.allclose(b, c, atol=1e-6)
    assert not torch.allclose(b, d, atol=1e-3)
    with pytest.raises(FileNotFoundError):
        HFPolicy(tiny_model_path, device="cpu", lora_rank=4, warm_start=tmp_path / "missing")


def test_post_train_warmup_refuses_irft_flags_and_a_missing_problem(tmp_path, capsys):
    from discoverygym.cli import main

    assert main(["post-train", "--warmup", "--run-dir", str(tmp_path / "r")]) == 2
    assert "--problems is required" in capsys.readouterr().err
    assert main(["post-train", "--warmup", "--problems", "ErdosMinOverlap-v0", "--rounds", "3",
                 "--run-dir", str(tmp_path / "r")]) == 2
    assert "--rounds" in capsys.readouterr().err
    assert main(["post-train", "--warmup", "--problems", "NoSuchEnv-v0", "--run-dir", str(tmp_path / "r")]) == 2
    assert "NoSuchEnv-v0" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_an_adapter_loads_with_its_own_rank_and_targets(tiny_model_path, tmp_path):  # noqa: F811
    """``--policy-kwargs '{"adapter": DIR}'`` alone loads a warm start of any rank and targets (the
    warm start's rank 16 on q/k/v/o is not the sampler's default rank 32 on all linear layers);
    a rank or target list that contradicts the adapter is refused, not silently mis-loaded."""
    import torch

    from discoverygym.agents.policies.hf import HFPolicy

    trained = HFPolicy(tiny_model_path, device="cpu", lora_rank=4, target_modules=["v_proj", "q_proj"], seed=0)
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(0.05)
    trained.save_adapter(tmp_path / "a")
    loaded = HFPolicy(tiny_model_path, device="cpu", seed=1, adapter=tmp_path / "a")
    ids = torch.tensor([[1, 5, 9, 13, 17, 21]])
    with torch.no_grad():
        assert torch.allclose(trained.model(input_ids=ids).logits, loaded.model(input_ids=ids).logits, atol=1e-5)
    with pytest.raises(ValueError, match="rank 4"):
        HFPolicy(tiny_model_path, device="cpu", lora_rank=8, adapter=tmp_path / "a")
    with pytest.raises(ValueError, match="targets"):
        HFPolicy(tiny_model_path, device="cpu", target_modules=["o_proj"], adapter=tmp_path / "a")
