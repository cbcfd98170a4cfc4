"""One source of defaults: ``TrainConfig(env_id=E)`` is what ``discoverygym train E`` runs, for one env
of every family; and the nested LLM knobs (``TrainConfig.llm``) still take the flat keys of older
``config.json`` files (resume of an old run directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the agents need torch (pip install 'discoverygym[rl]')")

from discoverygym.agents.config import LLMConfig, TrainConfig, policy_mismatch
from discoverygym.cli import build_parser
from discoverygym.cli.train import train_config
from discoverygym.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]

#: one env per family that `discoverygym train` runs with its default (numeric) policy
NUMERIC = ["ErdosMinOverlap-v0", "CirclePacking-26-v0"]  # math (step functions), circle packing
#: one env per program family: trained by an LLM policy only
PROGRAMS = ["ScalingLaw-Vocab-v0", "AHC039-v0", "TriMul-H100-v0", "ScRNADenoising-v0", "LassoPath-v0",
            "QubitRouting-v0"]
#: construction envs whose default policy (Gaussian) `train` refuses: integer constructions
INTEGER = ["SumDifference-v0", "Hadamard-29-v0"]


def _cli_config(*argv: str) -> TrainConfig:
    args = build_parser().parse_args(["train", *argv])
    config, _ = train_config(args)
    return config


@pytest.mark.parametrize("env_id", NUMERIC)
def test_train_writes_the_python_default_config(tmp_path, env_id):
    """The real command, one step: its config.json is TrainConfig(env_id=E, steps=1)'s."""
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "discoverygym.cli", "train", env_id, "--steps", "1",
                           "--run-dir", str(run_dir), "--json"], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    written = json.loads((run_dir / "config.json").read_text())
    assert written == TrainConfig(env_id=env_id, steps=1).to_dict()
    assert TrainConfig(**written) == TrainConfig(env_id=env_id, steps=1)
    # and without --steps, the command's config is the Python default itself
    assert _cli_config(env_id, "--run-dir", str(tmp_path / "new")) == TrainConfig(env_id=env_id)


def test_the_defaults_are_the_env_s_not_the_gaussian_policy_s(tmp_path):
    cfg = TrainConfig(env_id="CirclePacking-26-v0")
    assert (cfg.policy, cfg.groups, cfg.group_size, cfg.lr, cfg.steps) == ("operators", 2, 8, 0.3, 50)
    gauss = TrainConfig(env_id="CirclePacking-26-v0", policy_kwargs={"sigma": 0.01})  # a Gaussian option chooses it
    assert (gauss.policy, gauss.groups, gauss.group_size, gauss.lr) == ("gaussian", 8, 64, 0.05)
    assert _cli_config("CirclePacking-26-v0", "--sigma", "0.01", "--run-dir", str(tmp_path)) == gauss


@pytest.mark.parametrize("env_id", PROGRAMS)
def test_program_envs_resolve_alike(tmp_path, env_id):
    """Without an LLM both refuse (the command before anything runs, the trainer at construction);
    with one, the command's config is TrainConfig's for the same policy."""
    assert policy_mismatch(TrainConfig(env_id=env_id)) is not None
    with pytest.raises(UsageError, match="takes programs"):
        _cli_config(env_id, "--run-dir", str(tmp_path / "a"))
    policy = "hf:/nonexistent/model"  # not loaded: the config is built before the learner
    assert _cli_config(env_id, "--policy", policy, "--run-dir", str(tmp_path / "b")) == TrainConfig(env_id=env_id,
                                                                                                   policy=policy)
    cfg = TrainConfig(env_id=env_id, policy=policy)
    assert (cfg.groups, cfg.group_size, cfg.lr, cfg.update_on_constant) == (8, 64, 4e-5, False)  # issue 49


@pytest.mark.parametrize("env_id", INTEGER)
def test_integer_envs_default_to_the_gaussian_policy_which_train_refuses(tmp_path, env_id):
    assert TrainConfig(env_id=env_id).policy == "gaussian"
    with pytest.raises(UsageError, match="integer constructions"):
        _cli_config(env_id, "--run-dir", str(tmp_path / "a"))


def test_flat_llm_flags_become_the_nested_llm_config(tmp_path):
    argv = ["ScalingLaw-Vocab-v0", "--policy", "hf:/x", "--max-new-tokens", "64", "--lora-rank", "2",
            "--llm-device", "cpu", "--edit-format", "diff", "--temperature", "0.7", "--run-dir", str(tmp_path)]
    cfg = _cli_config(*argv)
    assert cfg.llm == LLMConfig(max_new_tokens=64, lora_rank=2, device="cpu", edit_format="diff", temperature=0.7)
    assert cfg == TrainConfig(env_id="ScalingLaw-Vocab-v0", policy="hf:/x", max_new_tokens=64, lora_rank=2,
                              device="cpu", edit_format="diff", temperature=0.7)
    assert cfg.to_dict()["llm"]["max_new_tokens"] == 64 and "max_new_tokens" not in cfg.to_dict()


def test_an_old_flat_config_json_still_resumes(tmp_path):
    new = TrainConfig(env_id="ErdosMinOverlap-v0", steps=2, groups=2, group_size=4, max_new_tokens=16)
    old = new.flat()  # the format of config.json before the LLM knobs were nested
    assert "llm" not in old and old["max_new_tokens"] == 16
    assert TrainConfig(**old) == new
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps(old))
    resumed = _cli_config("ErdosMinOverlap-v0", "--run-dir", str(run_dir), "--resume", "--steps", "3")
    assert resumed == TrainConfig(**{**old, "steps": 3})
    with pytest.raises(UsageError, match="differ from it: max_new_tokens"):
        _cli_config("ErdosMinOverlap-v0", "--run-dir", str(run_dir), "--resume", "--max-new-tokens", "8")
    # a flag equal to the stored (flat) value is no conflict
    _cli_config("ErdosMinOverlap-v0", "--run-dir", str(run_dir), "--resume", "--max-new-tokens", "16")
