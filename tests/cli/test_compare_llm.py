"""``discoverygym compare`` with an LLM policy: every config is an ordinary LLM train run (issue 39).

Runs on the tiny random model (no download); every response is kept and categorised per run.
"""

from __future__ import annotations

import csv
import json

import pytest

from discoverygym.cli import main
from tests.llm_fixtures import tiny_model_path  # noqa: F401  (pytest fixture)


def test_compare_runs_llm_configs_and_keeps_every_response(tiny_model_path, tmp_path, capsys):  # noqa: F811
    study = tmp_path / "study"
    code = main(["compare", "ErdosMinOverlap-v0", "--policy", f"hf:{tiny_model_path}", "--configs",
                 "full,no-training", "--seeds", "1", "--steps", "1", "--groups", "1", "--group-size", "2",
                 "--max-new-tokens", "8", "--run-dir", str(study)])
    assert code == 0
    out = capsys.readouterr().out
    assert "| full |" in out and "| no-training |" in out
    rows = list(csv.DictReader(open(study / "results.csv")))
    assert sorted(r["config"] for r in rows) == ["full", "no-training"]
    for name in ("full", "no-training"):
        run = study / f"{name}-seed0"
        config = json.loads((run / "config.json").read_text())
        assert config["policy"] == f"hf:{tiny_model_path}" and config["llm"]["max_new_tokens"] == 8
        samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
        assert len(samples) == 2 and all(isinstance(s["text"], str) for s in samples)
        outcomes = json.loads((run / "outcomes.json").read_text())
        assert outcomes["total"] == 2
    assert json.loads((study / "full-seed0" / "config.json").read_text())["train"] is True
    assert json.loads((study / "no-training-seed0" / "config.json").read_text())["train"] is False


def test_compare_on_a_program_env_asks_for_an_llm_policy(capsys):
    assert main(["compare", "QubitRouting-v0", "--configs", "full", "--seeds", "1", "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "hf:" in err and "Traceback" not in err


def test_references_refuse_a_program_env():
    from discoverygym.agents.bench import run_one

    with pytest.raises(ValueError, match="takes programs"):
        run_one("QubitRouting-v0", "reference", 0, 10.0)
