"""One Trainer for every learner: the Gaussian policy and a tiny HF model through the same train_step,
every ablation config for both, and exact resume after a kill -9 for both."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from discoverygym.agents.config import ABLATIONS
from discoverygym.agents.learner import Learner, NumericLearner
from discoverygym.agents.trainer import Trainer, ablation_config
from tests.llm_fixtures import tiny_model_dir

ROOT = Path(__file__).resolve().parents[2]
ENV = "CirclePacking-26-v0"


@pytest.fixture(scope="module")
def tiny_model_path(tmp_path_factory):
    """The tiny offline model (built once per session, see tests/llm_fixtures.py)."""
    return tiny_model_dir(tmp_path_factory.getbasetemp())


def _settings(policy: str, tiny: Path | None) -> dict:
    if policy == "gaussian":
        return {"policy": "gaussian", "groups": 2, "group_size": 4}
    return {"policy": f"hf:{tiny}", "groups": 1, "group_size": 2, "max_new_tokens": 12, "lora_rank": 2,
            "device": "cpu", "eval_workers": 1}


def _weights(trainer: Trainer) -> list[torch.Tensor]:
    learner = trainer.learner
    if isinstance(learner, NumericLearner):
        return [p.detach().clone() for p in learner.parameters()]
    return [v.clone() for v in learner.state_dict().values()]


@pytest.mark.parametrize("policy", ["gaussian", "hf"])
def test_every_ablation_trains_both_learners_through_one_train_step(policy, tiny_model_path, monkeypatch):
    calls = []
    real = Trainer.train_step
    monkeypatch.setattr(Trainer, "train_step", lambda self: calls.append(type(self.learner).__name__) or real(self))
    for name in ABLATIONS:
        tr = Trainer(ablation_config(name, env_id=ENV, steps=1, **_settings(policy, tiny_model_path)))
        assert isinstance(tr.learner, Learner)
        before = _weights(tr)
        res = tr.run()
        assert res.steps == 1
        assert res.best.reward >= res.initial.reward
        moved = any(not torch.equal(a, b) for a, b in zip(before, _weights(tr)))
        # frozen configs never touch the weights; training configs update them (for the LLM a
        # KL-only step on all-failing groups has zero gradient, so only "may move" is checkable)
        if not tr.config.train:
            assert not moved, name
        elif policy == "gaussian":
            assert moved, name
        m = res.history[0]
        assert {"reward/mean", "kl", "loss", "grad_norm", "valid_fraction", "parsed_fraction",
                "perf/evals_per_s"} <= m.keys()
    expected = "NumericLearner" if policy == "gaussian" else "HFPolicy"
    assert calls == [expected] * len(ABLATIONS)


_KILLED_RUN = """
import os, signal, sys
from discoverygym.agents.trainer import TrainConfig, Trainer
cfg = TrainConfig(**__import__("json").loads(sys.argv[1]))
def die(m):
    if m["step"] == 2:  # after step 2 was logged, before its checkpoint
        os.kill(os.getpid(), signal.SIGKILL)
Trainer(cfg, sys.argv[2], callback=die).run()
"""


@pytest.mark.parametrize("policy", ["gaussian", "hf"])
def test_kill_minus_nine_then_resume_is_exact(policy, tiny_model_path, tmp_path):
    from discoverygym.agents.trainer import TrainConfig

    cfg = TrainConfig(env_id=ENV, steps=3, seed=5, image_every=1, **_settings(policy, tiny_model_path))
    ref = Trainer(cfg, tmp_path / "ref")
    ref_result = ref.run()
    run = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", _KILLED_RUN, json.dumps(cfg.to_dict()), str(run)],
                          check=False, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert json.loads((run / "checkpoints" / "latest.json").read_text())["step"] == 1
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 2  # step 2 logged, not checkpointed
    resumed = Trainer(TrainConfig(**json.loads((run / "config.json").read_text())), run, resume=True)
    assert resumed.step_index == 1
    result = resumed.run()
    keys = ["reward/max", "reward/mean", "reward/min", "score/best", "kl", "loss", "valid_fraction"]
    assert [{k: m[k] for k in keys} for m in result.history] == [{k: m[k] for k in keys} for m in ref_result.history]
    assert result.best == ref_result.best
    assert all(torch.equal(a, b) for a, b in zip(_weights(ref), _weights(resumed)))
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]
    # TensorBoard: the killed process's step-2 events are purged, so each step has one value per tag
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run))
    acc.Reload()
    assert [e.step for e in acc.Scalars("reward/mean")] == [1, 2, 3]
    assert [e.value for e in acc.Scalars("reward/mean")] == pytest.approx([m["reward/mean"] for m in ref_result.history])
