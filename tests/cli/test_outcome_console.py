"""What a user sees (issue 49): the train and search consoles print outcome counts per step and at the end."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from discoverygym.cli import main
from discoverygym.outcomes import format_counts
from tests.llm_fixtures import tiny_model_path  # noqa: F401  (pytest fixture)


def test_format_counts_lists_the_nonzero_categories_in_table_order():
    assert format_counts({"truncated": 6, "valid": 1, "no_code": 1, "invalid": 0}) == "valid 1, no_code 1, truncated 6 (8)"
    assert format_counts({}) == "none (0)"


def test_train_prints_outcome_counts_per_step_and_at_the_end(tiny_model_path, tmp_path, capsys):  # noqa: F811
    run = tmp_path / "run"
    assert main(["train", "CirclePacking-26-v0", "--policy", f"hf:{tiny_model_path}", "--steps", "2", "--groups", "1",
                 "--group-size", "3", "--max-new-tokens", "8", "--lora-rank", "4", "--llm-device", "cpu",
                 "--run-dir", str(run)]) == 0
    out = capsys.readouterr().out
    steps = re.findall(r"^step (\d)/2 outcomes: (.+) \((\d+)\)$", out, re.MULTILINE)
    assert [(s, n) for s, _, n in steps] == [("1", "3"), ("2", "3")]  # every answer of the step counted
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [sum(m["outcomes"].values()) for m in metrics] == [3, 3]
    total = json.loads((run / "outcomes.json").read_text())["counts"]
    assert sum(total.values()) == 6
    end = re.search(r"outcomes\s*│?\s*(.+ \(6\))", out)
    assert end and end.group(1).strip() == format_counts(total)


def test_search_prints_outcome_counts(tiny_model_path, tmp_path, capsys):  # noqa: F811
    run = tmp_path / "run"
    assert main(["search", "CirclePacking-26-v0", "--action-mode", "code", "--policy", f"hf:{tiny_model_path}",
                 "--policy-kwargs", json.dumps({"max_new_tokens": 8, "lora_rank": 4}), "-C", "1", "-L", "2", "-K", "2",
                 "--executor", "inline", "--run-dir", str(run)]) == 0
    out = capsys.readouterr().out
    total = json.loads((run / "outcomes.json").read_text())["counts"]
    assert sum(total.values()) == 4
    assert f"outcomes: {format_counts(total)}" in out  # the end-of-run line
    assert re.search(r"^\[search\] 4/4 evaluations .* outcomes: .+ \(4\)$", out, re.MULTILINE)  # progress lines
