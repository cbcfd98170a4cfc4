"""compare's smaller truths (issue 50, item 5): evaluation counts in the verdicts under a budget, the
zoomed end panel of compare.png, and the record verdict of the study's best run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from discoverygym.cli.compare import _record_verdict, _verdicts, _zoom_end
from discoverygym.envs.registry import ENVS

ROOT = Path(__file__).resolve().parents[2]


def _row(config, evals, lo, mean=0.5):
    return {"config": config, "n": 4, "runs": 4, "mean": mean, "p_two_sided": 0.5, "p_first_better": 0.25,
            "p_first_worse": 0.75, "evaluations": evals, "evaluations_min": lo, "doc": ""}


def test_a_budgeted_verdict_says_how_many_evaluations_each_config_got():
    rows = [_row("full", 96, 16), _row("naive-rl", 40, 40, 0.6)]
    (line,) = _verdicts(rows, "min", budget=60.0)
    assert "within the 60 s budget full ran 16–96 and naive-rl 40 evaluations per run" in line
    (unbudgeted,) = _verdicts(rows, "min")
    assert "evaluations per run" not in unbudgeted


def test_the_end_panel_is_fitted_to_the_final_values():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = np.array([0.0, 50.0, 100.0])
    a = np.array([0.5, 0.38087, 0.380870001])  # the configs end 1e-9 apart, 0.12 below the start
    b = np.array([0.5, 0.38087, 0.380870002])
    fig, ax = plt.subplots()
    _zoom_end(ax, [(xs, a, a, a, "C0", "-", "o", 2), (xs, b, b, b, "C1", "--", "s", 2)], None, "lower")
    low, high = ax.get_ylim()
    plt.close(fig)
    assert low < 0.380870001 and high > 0.380870002 and high - low < 1e-8  # the 1e-9 difference fills the panel


def test_the_study_verdict_is_the_judgment_of_its_best_run(tmp_path):
    ours = ROOT / "benchmarks/results/records/erdos_min_overlap_moonshot2.json"
    data = json.loads(ours.read_text())
    run = tmp_path / "full-seed0"
    run.mkdir()
    state = {"solution": data["construction"], "score": data["value"], "reward": 1.0, "valid": True}
    (run / "best.json").write_text(json.dumps({"env_id": "ErdosMinOverlap-v0", "state": state}))
    runs = [{"config": "full", "seed": 0, "best_score": data["value"], "result_best": data["value"],
             "run_dir": str(run)}]
    line = _record_verdict("ErdosMinOverlap-v0", ENVS["ErdosMinOverlap-v0"], runs)
    assert line.startswith("record: no — best run full seed 0") and "Together AI 2026-03" in line
