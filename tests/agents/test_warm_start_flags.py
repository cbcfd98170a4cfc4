"""``--warm-start`` and ``--shared-prompt`` are refused where they would be ignored (issue 49).

``train ErdosMinOverlap-v0 --warm-start /nonexist`` (the default numeric policy) ran and ignored the
flag; ``--policy hf:M --warm-start DIR`` with no adapter in DIR failed only after the model loaded.
They are refused at configuration time, as ``--edit-format diff`` without an LLM policy is.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch", reason="TrainConfig imports torch")

from discoverygym.agents.config import TrainConfig  # noqa: E402
from discoverygym.cli import main  # noqa: E402


def test_warm_start_needs_an_hf_policy(tmp_path):
    (tmp_path / "adapter_config.json").write_text("{}")
    with pytest.raises(ValueError, match="hf: policy"):
        TrainConfig(env_id="ErdosMinOverlap-v0", warm_start=str(tmp_path))
    with pytest.raises(ValueError, match="hf: policy"):
        TrainConfig(env_id="ErdosMinOverlap-v0", policy="openai:http://127.0.0.1:9/v1", warm_start=str(tmp_path))
    with pytest.raises(ValueError, match="hf: policy"):
        TrainConfig(env_id="ErdosMinOverlap-v0", shared_prompt=True)


def test_warm_start_needs_an_adapter(tmp_path):
    with pytest.raises(ValueError, match="adapter_config.json"):
        TrainConfig(env_id="ErdosMinOverlap-v0", policy="hf:some/model", warm_start=str(tmp_path / "missing"))
    (tmp_path / "adapter_config.json").write_text(json.dumps({}))
    config = TrainConfig(env_id="ErdosMinOverlap-v0", policy="hf:some/model", warm_start=str(tmp_path))
    assert config.llm.warm_start == str(tmp_path)


def test_train_refuses_warm_start_with_a_numeric_policy_in_one_line(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["train", "ErdosMinOverlap-v0", "--steps", "1", "--warm-start", str(tmp_path / "nothing"),
                 "--run-dir", str(run_dir)]) == 2
    assert "hf: policy" in capsys.readouterr().err
    assert not run_dir.exists()
