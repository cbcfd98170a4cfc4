"""``credit="progress-rate"``: the objective ranks each rollout's gain over its start per second."""

from __future__ import annotations

import argparse

import pytest
import torch

from discoverygym.agents import trainer as trainer_mod
from discoverygym.agents.objectives import MIN_ROLLOUT_S
from discoverygym.agents.trainer import TrainConfig, Trainer, ablation_config, progress_rate
from discoverygym.envs.operators import circles
from discoverygym.types import State


def _s(reward: float, valid: bool = True) -> State:
    return State(solution=[reward] if valid else None, score=reward if valid else None, reward=reward, valid=valid)


def test_progress_rate_by_hand():
    starts = [_s(1.0), _s(-3.0)]
    children = [_s(3.0), _s(0.5), _s(9.0, valid=False),   # group 0: +2 in 4 s, worse, invalid
                _s(-1.0), _s(-3.0), _s(-2.0)]              # group 1: +2 in 1e-6 s (floored), equal, +1 in 0.5 s
    out = progress_rate(starts, children, [4.0, 1.0, 0.1, 1e-6, 2.0, 0.5], (2, 3))
    want = torch.tensor([[0.5, 0.0, 0.0], [2.0 / MIN_ROLLOUT_S, 0.0, 2.0]], dtype=torch.float64)
    assert torch.equal(out, want)
    with pytest.raises(ValueError, match="6 children and timings"):
        progress_rate(starts, children, [1.0] * 5, (2, 3))
    with pytest.raises(ValueError, match="2 starts"):
        progress_rate(starts[:1], children, [1.0] * 6, (2, 3))


def test_config_refuses_an_unknown_credit():
    with pytest.raises(ValueError, match="credit must be one of reward, progress-rate"):
        TrainConfig(credit="reward-per-token")


@pytest.mark.parametrize("credit", ["reward", "progress-rate"])
def test_a_real_step_hands_the_objective_the_credit_it_asked_for(monkeypatch, credit):
    """A real CirclePacking-26-v0 step: the objective receives the rewards (default) or the gains over
    the start per rollout second computed from the step's own children and timings."""
    monkeypatch.setattr(circles, "MAXITER", 3)
    monkeypatch.setattr(circles, "HOP_MAX_MOVES", 4)
    seen = []
    real = trainer_mod.scored_advantages

    def spy(objective, signal, scored):
        seen.append(signal.clone())
        return real(objective, signal, scored)

    children_seen = []
    real_judge = Trainer._judge

    def judge(self, starts, samples, keys):
        children = real_judge(self, starts, samples, keys)
        children_seen.append((starts, children))
        return children

    monkeypatch.setattr(trainer_mod, "scored_advantages", spy)
    monkeypatch.setattr(Trainer, "_judge", judge)
    cfg = ablation_config("full", env_id="CirclePacking-26-v0", policy="operators", steps=1, groups=2, group_size=4,
                          eval_workers=1, image_every=0, seed=0, credit=credit)
    t = Trainer(cfg)
    t.train_step()
    starts, children = children_seen[-1]
    rewards = torch.tensor([c.reward for c in children], dtype=torch.float64).reshape(2, 4)
    if credit == "reward":
        assert torch.equal(seen[-1], rewards)
    else:
        want = progress_rate(starts, children, t.last_rollout_s, (2, 4))
        assert torch.equal(seen[-1], want)
        assert (seen[-1] >= 0).all() and not torch.equal(seen[-1], rewards)


def test_the_cli_flag_reaches_the_run_config(tmp_path, capsys, monkeypatch):
    import json

    from discoverygym.cli import main

    monkeypatch.setattr(circles, "MAXITER", 3)
    monkeypatch.setattr(circles, "HOP_MAX_MOVES", 4)
    run = tmp_path / "r"
    assert main(["train", "CirclePacking-26-v0", "--steps", "1", "--groups", "1", "--group-size", "2",
                 "--credit", "progress-rate", "--run-dir", str(run), "--json"]) == 0
    assert json.loads((run / "config.json").read_text())["credit"] == "progress-rate"
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["train", "CirclePacking-26-v0", "--credit", "per-token", "--run-dir", str(tmp_path / "x")])


def test_the_cli_offers_exactly_the_trainers_credits_and_configs_keep_their_own():
    from discoverygym.agents.config import CREDITS
    from discoverygym.cli.train import add_run_options

    parser = argparse.ArgumentParser()
    add_run_options(parser)
    (credit,) = [a for a in parser._actions if a.dest == "credit"]
    assert credit.choices == CREDITS
    assert ablation_config("progress-rate", credit="progress-rate").credit == "progress-rate"
    with pytest.raises(ValueError, match="config 'progress-rate' sets credit='progress-rate'"):
        ablation_config("progress-rate", credit="reward")
    with pytest.raises(ValueError, match="config 'naive-rl' sets objective='mean-baseline'"):
        ablation_config("naive-rl", objective="entropic-adaptive")


def test_a_run_saved_before_credit_existed_resumes_with_the_default_named(tmp_path, capsys, monkeypatch):
    """An older run's config.json has no ``credit``: ``--resume --credit reward`` names the default it
    ran with and is accepted; ``--credit progress-rate`` would change it and is refused."""
    import json

    from discoverygym.cli import main

    monkeypatch.setattr(circles, "MAXITER", 3)
    monkeypatch.setattr(circles, "HOP_MAX_MOVES", 4)
    run = tmp_path / "old"
    base = ["train", "CirclePacking-26-v0", "--groups", "1", "--group-size", "2", "--run-dir", str(run), "--json"]
    assert main([*base, "--steps", "1"]) == 0
    cfg = json.loads((run / "config.json").read_text())
    del cfg["credit"]
    (run / "config.json").write_text(json.dumps(cfg))
    assert main([*base, "--steps", "2", "--resume", "--credit", "progress-rate"]) == 2
    assert "credit" in capsys.readouterr().err
    assert main([*base, "--steps", "2", "--resume", "--credit", "reward"]) == 0
