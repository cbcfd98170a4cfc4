"""Issue 41 (1): a run under a wall budget keeps it: operator jobs get the run's deadline, no step
starts after it, late work is counted and flagged, and the scored best is the one in the result."""

from __future__ import annotations

import dataclasses
import time

import pytest

pytest.importorskip("torch", reason="the trainer needs torch")

from discoverygym.agents import trainer as trainer_mod
from discoverygym.agents.bench import best_within, run_one
from discoverygym.agents.trainer import TrainConfig, Trainer
from discoverygym.envs.operators.deadline import WithDeadline

SMALL = {"env_id": "ErdosMinOverlap-v0", "groups": 1, "group_size": 2, "eval_workers": 1, "image_every": 0}


def test_operator_jobs_run_under_the_runs_deadline(monkeypatch):
    seen = []
    real = trainer_mod.evaluate_task

    def spy(env, task):  # records the job, judges the parent instead (fast, whichever operator was drawn)
        seen.append(task.pending)
        return real(env, dataclasses.replace(task, pending=None, action=task.parent.solution))

    monkeypatch.setattr(trainer_mod, "evaluate_task", spy)
    Trainer(TrainConfig(**SMALL, steps=1, budget_s=600.0)).run()
    assert seen and all(isinstance(p, WithDeadline) for p in seen)  # before issue 41: the bare operator job
    assert all(p.deadline <= time.time() + 600 for p in seen)
    seen.clear()
    Trainer(TrainConfig(**SMALL, steps=1)).run()  # no budget: the job as it was
    assert seen and not any(isinstance(p, WithDeadline) for p in seen)


def test_no_step_starts_once_the_deadline_has_passed():
    trainer = Trainer(TrainConfig(**SMALL, steps=5, budget_s=600.0))
    result = trainer.run(deadline=time.perf_counter() - 1.0)  # the benchmark's clock already ran out
    assert result.steps == 0 and result.late_s > 0  # before issue 41 the first step always ran


def test_run_one_records_the_score_the_tables_show_and_whether_work_landed_late(tmp_path):
    result = run_one("ErdosMinOverlap-v0", "full", 0, 600.0,
                     train_config=TrainConfig(**SMALL, steps=1, budget_s=600.0), run_dir=tmp_path / "r")
    assert result["best_in_budget"] == best_within(result) == result["best"]
    assert result["late"] is False and result["over_s"] == 0.0


def test_compare_warns_about_overruns_and_late_improvements():
    from discoverygym.cli.compare import _warnings

    runs = [{"config": "full", "seed": 0, "elapsed_s": 26.0, "late": False, "best_score": 0.5, "result_best": 0.5},
            {"config": "naive-rl", "seed": 1, "elapsed_s": 19.0, "late": True, "best_score": 0.51,
             "result_best": 0.381}]
    over, late = _warnings(runs, 20.0)
    assert "1 of 2 runs overran the 20 s budget by more than 25% (full seed 0: 26.0 s)" in over
    assert "1 of 2 runs improved after the budget" in late and "0.381 in the end" in late
    assert _warnings(runs, None) == []


def test_the_benchmark_warns_about_a_run_that_overran_or_improved_late():
    from discoverygym.agents.bench import late_warnings

    run = {"env_id": "ErdosMinOverlap-v0", "config": "full", "seed": 0, "budget_s": 30.0, "elapsed_s": 92.9,
           "best": 0.3813, "trace": [[0.0, 0.506], [92.0, 0.3813]]}  # issue 41's report: one step, 92.9 s
    over, late = late_warnings(run)
    assert "ran 92.9 s against its 30 s budget" in over and "0.506 at the budget, 0.3813 in the end" in late
    assert late_warnings({**run, "elapsed_s": 29.0, "trace": [[0.0, 0.506], [28.0, 0.3813]]}) == []
