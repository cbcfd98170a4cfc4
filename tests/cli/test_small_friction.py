"""Issue 16, item 6: the small frictions of the command line (list width, resume hints...)."""

from __future__ import annotations

import json
import math
import shlex

import pytest

from discoverygym.cli import main
from discoverygym.envs.registry import ENVS


def test_list_fits_80_columns_one_line_per_env(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    for env_id, problem in ENVS.items():
        (line,) = [line for line in lines if line.split() and line.split()[0] == env_id]
        better = {"min": "lower", "max": "higher"}[problem.direction]
        record = problem.sota["value"]
        assert better in line.split()
        if isinstance(record, float) and math.isfinite(record):
            assert f"{record:.7g}" in line.split(), line  # the record readable, not cut to "2.63598…"


def test_train_interrupt_prints_the_exact_resume_command(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch", reason="train needs torch")
    from discoverygym.agents.trainer import Trainer

    def interrupted(self, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "train_step", interrupted)
    run_dir = tmp_path / "my run"  # a space: the command must be shell-quoted
    argv = ["train", "ErdosMinOverlap-v0", "--steps", "2", "--groups", "2", "--group-size", "4",
            "--run-dir", str(run_dir)]
    assert main(argv) == 130
    out = capsys.readouterr()
    assert shlex.join(["discoverygym", *argv, "--resume"]) in out.out + out.err


def test_search_interrupt_prints_the_exact_resume_command(tmp_path, monkeypatch, capsys):
    from discoverygym.search.evolution import EvolutionarySearch

    def interrupted(self, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(EvolutionarySearch, "run", interrupted)
    argv = ["search", "CirclePacking-26-v0", "-C", "2", "-L", "2", "-K", "2",
            "--run-dir", str(tmp_path / "it's")]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert shlex.join(["discoverygym", *argv, "--resume"]) in err


def test_train_interrupted_before_its_first_step_resumes_from_scratch(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch", reason="train needs torch")
    from discoverygym.agents.trainer import Trainer

    argv = ["train", "ErdosMinOverlap-v0", "--steps", "2", "--groups", "2", "--group-size", "4", "--json"]
    assert main([*argv, "--run-dir", str(tmp_path / "ref")]) == 0
    ref = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    real = Trainer.train_step

    def interrupted(self, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "train_step", interrupted)
    run_dir = str(tmp_path / "killed")
    assert main([*argv, "--run-dir", run_dir]) == 130
    capsys.readouterr()
    monkeypatch.setattr(Trainer, "train_step", real)
    assert main([*argv, "--run-dir", run_dir, "--resume"]) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert got["steps"] == 2 and got["best_score"] == ref["best_score"]  # the same run as uninterrupted
    assert len((tmp_path / "killed" / "metrics.jsonl").read_text().splitlines()) == 2


def test_search_summary_shows_the_record_and_the_gap(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    argv = ["search", "CirclePacking-26-v0", "-C", "1", "-L", "2", "-K", "2", "--executor", "inline",
            "--no-tensorboard", "--run-dir", str(tmp_path / "s")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    record = ENVS["CirclePacking-26-v0"].sota["value"]
    (line,) = [line for line in out.splitlines() if line.startswith("published record")]
    assert f"published record {record} ({ENVS['CirclePacking-26-v0'].sota['source']})" in line
    assert "Numaro 2026" in line  # the record's source and date (discoverygym.records)
    verdict = out.split("beats the record? ")[1].split("\n")[0]  # the one judgment (discoverygym.judgment)
    assert verdict.startswith("no: does not beat the best known 2.6359830853")
    best = float(out.split("\nbest score ")[1].split()[0])
    gap = float(line.split("gap to record ")[1].split()[0])
    assert gap == pytest.approx(best - record, rel=1e-3) and gap < 0


def test_evaluate_prints_the_per_case_table_before_the_summary(monkeypatch, capsys):
    from discoverygym import cli
    from discoverygym.types import State

    problem = ENVS["CirclePacking-26-v0"]
    cases = [{"case": f"{i:04d}", "verdict": "accepted", "score": 10 + i} for i in range(3)]
    state = State(solution=None, score=11.0, reward=0.5, valid=True, metadata={"cases": cases})
    monkeypatch.setattr(cli, "_evaluate", lambda *a, **k: (state, problem))
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["evaluate", "CirclePacking-26-v0"]) == 0
    out = capsys.readouterr().out
    assert out.index("3 cases") < out.index("0002") < out.index("published best")  # the summary comes last


def test_post_train_table_does_not_report_the_initial_state_as_held_out(capsys, monkeypatch):
    from rich.console import Console

    from discoverygym.cli.post_train import _table

    monkeypatch.setenv("COLUMNS", "200")
    # the held-out search's best state is the env's initial one (reward 0.875); its candidates reach 0.25
    heldout = {"CirclePacking-32-v0": {"best_reward": 0.875, "best_score": 2.5, "best_candidate_reward": 0.25,
                                       "valid_fraction": 0.5, "evaluations": 4}}
    nothing_valid = {"CirclePacking-32-v0": {"best_reward": 0.875, "best_candidate_reward": None}}
    _table(Console(), [{"round": "base", "heldout": heldout},
                       {"round": 0, "heldout": nothing_valid, "buffer_rows": 3, "train_best_reward": {}}])
    out = capsys.readouterr().out
    assert "0.875" not in out
    assert "0.25" in out


def test_readme_documents_program_state_and_the_cpu_torch_index():
    from pathlib import Path

    from discoverygym import types

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in readme
    assert "3.5 GB" in readme
    assert "`state.solution` is always\n`None`" in readme and "`state.code`" in readme
    assert "program envs" in types.State.__doc__ and "``None`` in program envs" in types.State.__doc__
