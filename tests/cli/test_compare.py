"""``discoverygym compare`` as a study: table, verdict, results.csv, plot, new dirs, --resume."""

from __future__ import annotations

import csv
import json

import pytest

pytest.importorskip("torch", reason="the agents need torch (pip install 'discoverygym[rl]')")
pytest.importorskip("scipy", reason="the rank test needs scipy")

from discoverygym.agents.bench import best_within
from discoverygym.cli import main
from discoverygym.cli.compare import default_study_dir, rank_test

TINY = ["CirclePacking-26-v0", "--configs", "full,naive-rl", "--seeds", "2", "--steps", "2", "--groups", "2",
        "--group-size", "4", "--policy", "gaussian"]  # the fast policy (operators run SLSQP)


def test_study_prints_budget_start_spread_test_and_verdict(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.chdir(tmp_path)
    assert main(["compare", *TINY]) == 0
    out = capsys.readouterr().out
    for word in ("evals/run", "wall s (max)", "late", "start", "best: mean ± sd", "best of seeds",
                 "p two-sided vs full", "verdict:", "Mann–Whitney"):
        assert word in out, word
    assert "2 vs 2 seeds cannot reach p < 0.05" in out  # the verdict says why 2 seeds prove nothing
    assert "significance needs at least 4 seeds per config" in out  # 2 / C(8, 4) = 0.029 < 0.05 <= 2 / C(6, 3)
    assert "naive-rl: TWO things" in out  # the verdict says that naive-rl changes two settings
    (root,) = (tmp_path / "runs").iterdir()
    assert root.name.startswith("compare-CirclePacking-26-v0-")
    rows = list(csv.DictReader((root / "results.csv").read_text().splitlines()))
    assert [(r["config"], r["seed"]) for r in rows] == [("full", "0"), ("full", "1"), ("naive-rl", "0"),
                                                        ("naive-rl", "1")]
    assert all(int(r["evaluations"]) == 2 * 2 * 4 and float(r["best_score"]) >= float(r["start_score"]) for r in rows)
    assert (root / "compare.png").stat().st_size > 10_000  # a real matplotlib figure, not a blank canvas
    # a second identical command gets its own study directory instead of failing
    assert main(["compare", *TINY]) == 0
    assert len(list((tmp_path / "runs").iterdir())) == 2


def test_killed_study_resumes_to_the_uninterrupted_result(tmp_path, capsys, monkeypatch):
    from discoverygym.agents.trainer import Trainer

    assert main(["compare", *TINY, "--run-dir", str(tmp_path / "ref"), "--json"]) == 0
    ref = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    real, calls = Trainer.train_step, []

    def dies_at_step_four(self):
        calls.append(1)
        if len(calls) == 4:  # the second run's second step: its first step is checkpointed
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(Trainer, "train_step", dies_at_step_four)
    study = tmp_path / "killed"
    assert main(["compare", *TINY, "--run-dir", str(study)]) == 130
    assert "--resume" in capsys.readouterr().out
    monkeypatch.setattr(Trainer, "train_step", real)
    # without --resume the study directory is refused, with it the study finishes
    assert main(["compare", *TINY, "--run-dir", str(study)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["compare", *TINY, "--run-dir", str(study), "--resume", "--json"]) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [r["bests"] for r in got["rows"]] == [r["bests"] for r in ref["rows"]]  # resume is exact
    rows = list(csv.DictReader((study / "results.csv").read_text().splitlines()))
    assert [int(r["steps"]) for r in rows] == [2, 2, 2, 2]
    # a changed hyper-parameter is refused on resume
    assert main(["compare", *TINY, "--run-dir", str(study), "--resume", "--group-size", "8"]) == 2
    assert "group_size" in capsys.readouterr().err


def test_rank_test_is_one_sided_in_the_problem_direction():
    hi, lo = [3.0, 4.0, 5.0, 6.0], [0.0, 1.0, 2.0, 2.5]
    assert rank_test(hi, lo, "max") < 0.05 < rank_test(lo, hi, "max")
    assert rank_test(lo, hi, "min") < 0.05 < rank_test(hi, lo, "min")
    assert rank_test([], lo, "max") is None
    # the exact two-sided p of complete separation of 4 vs 4 is 2 / C(8, 4); each one-sided p is half of it
    assert rank_test(hi, lo, "max", "two-sided") == pytest.approx(2 / 70)
    assert rank_test(hi, lo, "max", "better") == pytest.approx(1 / 70)
    assert rank_test(hi, lo, "max", "worse") == pytest.approx(1.0)


def test_verdict_words_follow_the_two_sided_test():
    """Issue 41 (2): a config that is behind with the one-sided 'first better' p large was called
    'behind ... not significantly' from that one-sided p; the words now follow the two-sided test."""
    from discoverygym.cli.compare import _rows, _verdicts, seeds_for_significance

    def runs(name, scores):
        return [{"config": name, "best_score": b, "start_score": 1.0, "evaluations": 1, "wall_s": 1.0} for b in scores]

    # minimised: full is clearly worse than expected-reward over 4 vs 4 seeds
    rows = _rows(["full", "expected-reward"], runs("full", [5, 6, 7, 8]) + runs("expected-reward", [1, 2, 3, 4]), "min")
    (line,) = _verdicts(rows, "min")
    assert "full is beaten by expected-reward, significantly" in line and "two-sided p = 0.0286" in line
    assert "expected-reward: objective only" in line  # what the config changes
    # 3 vs 3 seeds can never be significant two-sided (2 / C(6, 3) = 0.1): say how many are needed
    rows = _rows(["full", "no-reuse"], runs("full", [1, 2, 3]) + runs("no-reuse", [4, 5, 6]), "min")
    (line,) = _verdicts(rows, "min")
    assert line.startswith("verdict: no significant difference between full and no-reuse")
    assert "full is ahead of no-reuse on the mean" in line and "at least 4 seeds per config" in line
    assert seeds_for_significance(0.05) == 4 and seeds_for_significance(0.01) == 5  # 2/252 < 0.01 <= 2/70


def test_off_a_terminal_the_study_table_is_plain_markdown_without_wrapped_numbers(tmp_path, capsys, monkeypatch):
    """Issue 41 (5): piped, the rich table wrapped numbers at 80 columns ("0.506257 / 55 ±")."""
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["compare", *TINY, "--seeds", "1", "--steps", "1", "--run-dir", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| config | changes vs full |") and len(table) == 3  # header + 2 configs
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    for row, line in zip(summary["rows"], table[1:]):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == row["config"] and cells[6] == f"{row['mean']:.8g} ± {row['sd']:.2g}"


def test_configs_take_one_setting_overrides_and_help_defines_each(tmp_path, capsys):
    """Issue 41 (3): ``--configs`` takes ``objective=expected-reward``; ``compare --help`` says what each changes."""
    from discoverygym.agents.config import ABLATION_HELP, ABLATIONS, ablation_config, config_overrides

    assert config_overrides("objective=expected-reward") == ABLATIONS["expected-reward"]
    assert config_overrides("naive-rl+reuse=puct") == {"objective": "mean-baseline", "reuse": "puct"}
    assert ablation_config("train=false+reuse=none").train is False
    with pytest.raises(ValueError, match="unknown objective 'nope'"):
        config_overrides("objective=nope")
    assert set(ABLATION_HELP) == set(ABLATIONS)  # the help names every built-in config
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for phrase in ("expected-reward: objective only", "no-reuse: reuse only", "no-training: training only",
                   "naive-rl: TWO things", "objective=NAME", "--plugin FILE"):
        assert phrase in text, phrase
    argv = ["compare", *TINY[:2], "objective=expected-reward", *TINY[3:], "--seeds", "1", "--run-dir",
            str(tmp_path / "s"), "--json"]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert got["rows"][0]["config"] == "objective=expected-reward" and got["rows"][0]["changes"] == "objective"
    stored = json.loads((tmp_path / "s" / "objective=expected-reward-seed0" / "config.json").read_text())
    assert stored["objective"] == "mean-baseline" and stored["reuse"] == "puct"


def test_default_study_dir_never_reuses_a_directory(tmp_path):
    first = default_study_dir("X-v0", tmp_path, now=0)
    first.mkdir()
    second = default_study_dir("X-v0", tmp_path, now=0)
    assert second != first and second.name == first.name + "-2"


def test_study_runs_the_benchmark_references_through_the_benchmark_runner(tmp_path, capsys):
    study = tmp_path / "study"
    argv = ["compare", "CirclePacking-26-v0", "--configs", "full,reference", "--seeds", "1", "--steps", "1",
            "--groups", "1", "--group-size", "2", "--policy", "gaussian", "--budget-s", "3", "--run-dir", str(study),
            "--json"]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [r["config"] for r in got["rows"]] == ["full", "reference"]
    ref_run = json.loads((study / "reference-seed0" / "result.json").read_text())  # bench.run_one's record
    assert ref_run["config"] == "reference" and ref_run["evaluations"] >= 2 and ref_run["best"] >= ref_run["initial"]
    rows = {r["config"]: r for r in csv.DictReader((study / "results.csv").read_text().splitlines())}
    assert float(rows["reference"]["best_score"]) == best_within(ref_run)  # the score at the budget
    assert int(rows["full"]["evaluations"]) == 2
    stamp = (study / "reference-seed0" / "result.json").stat().st_mtime_ns
    assert main([*argv, "--resume"]) == 0  # finished runs are read back, not rerun
    assert (study / "reference-seed0" / "result.json").stat().st_mtime_ns == stamp
    # the finished runs were scored at 3 s: another budget on resume is refused, not printed over them
    capsys.readouterr()
    assert main([*argv, "--resume", "--budget-s", "1"]) == 2
    assert 'differ from it: budget_s (stored: {"budget_s": 3.0})' in capsys.readouterr().err
    # a reference has no step count to stop it: without a wall budget it is refused
    assert main(["compare", "CirclePacking-26-v0", "--configs", "full,cma-es", "--run-dir", str(tmp_path / "x")]) == 2
    assert "--budget-s" in capsys.readouterr().err


def test_config_override_errors_name_the_aliases_and_refuse_a_key_given_twice(tmp_path, capsys):
    """Tester report (fix, item 6): expected-reward was missing from the known list; reuse=puct+reuse=none ran."""
    assert main(["compare", "CirclePacking-26-v0", "--configs", "objective=nope", "--run-dir", str(tmp_path / "a")]) == 2
    assert "expected-reward = mean-baseline" in capsys.readouterr().err
    assert main(["compare", "CirclePacking-26-v0", "--configs", "full,reuse=puct+reuse=none",
                 "--run-dir", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "sets reuse more than once" in err
    assert not (tmp_path / "b").exists()  # refused before a study directory is made
