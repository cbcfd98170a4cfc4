"""Resuming a run whose policy checkpoint no longer fits the policy is a clear error, not a torch traceback."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from discoverygym.agents.trainer import TrainConfig, Trainer


def test_resume_with_a_policy_of_other_shapes_is_a_value_error_and_keeps_the_run(tmp_path):
    cfg = TrainConfig(env_id="CirclePacking-26-v0", policy="gaussian", steps=1, groups=1, group_size=2, image_every=0)
    Trainer(cfg, run_dir=tmp_path).run()
    (model_pt,) = list((tmp_path / "checkpoints").rglob("model.pt"))
    model = torch.load(model_pt, weights_only=True)
    # what a run written when the problem declared one more operator would hold: every tensor longer
    model["policy"] = {k: torch.cat([v, v]) if v.ndim else v for k, v in model["policy"].items()}
    torch.save(model, model_pt)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(ValueError, match="cannot load.*start a new --run-dir"):
        Trainer(TrainConfig(env_id="CirclePacking-26-v0", policy="gaussian", steps=2, groups=1, group_size=2,
                            image_every=0),
                run_dir=tmp_path, resume=True)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing lost or added
