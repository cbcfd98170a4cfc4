"""Issue 51: a run whose objective is a Python function is recorded as unnamed, and ``--resume`` refuses it.

Before, ``Trainer(objective=fn)`` wrote the configured default (``"entropic-adaptive"``) to
``config.json``, and ``train --resume`` silently continued with that other algorithm.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from discoverygym.agents.objectives import mean_baseline
from discoverygym.agents.trainer import TrainConfig, Trainer
from discoverygym.cli import main


def my_objective(rewards):
    """A user's objective: the expected-reward one, under another name."""
    return mean_baseline(rewards)


def test_a_python_objective_is_recorded_unnamed_and_resume_refuses_in_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    config = TrainConfig(env_id="CirclePacking-26-v0", steps=1, groups=1, group_size=2, seed=0)
    Trainer(config, run, objective=my_objective).run()
    stored = json.loads((run / "config.json").read_text())
    assert stored["objective"] is None
    assert stored["unnamed"] == {"objective": f"{__name__}.my_objective"}

    assert main(["train", "CirclePacking-26-v0", "--run-dir", str(run), "--resume", "--steps", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Python objective" in err and "my_objective" in err and "another algorithm" in err

    with pytest.raises(ValueError, match="Python objective"):
        Trainer(config, run, resume=True)
    # the same object given again resumes
    again = Trainer(TrainConfig(env_id="CirclePacking-26-v0", steps=2, groups=1, group_size=2, seed=0), run,
                    resume=True, objective=my_objective)
    assert again.step_index == 1


def test_a_named_objective_is_recorded_by_its_name(tmp_path):
    run = tmp_path / "run"
    Trainer(TrainConfig(env_id="CirclePacking-26-v0", steps=1, groups=1, group_size=2, objective="mean-baseline"),
            run).run()
    stored = json.loads((run / "config.json").read_text())
    assert stored["objective"] == "mean-baseline" and "unnamed" not in stored
