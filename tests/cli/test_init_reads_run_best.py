"""``--init`` and ``evaluate`` read a search run's ``best.json`` as ``certify`` does (one loader).

``certify`` read both ``train``'s ``best.json`` (``construction`` at the top) and ``search``'s
(``state.solution``); ``search``/``train``/``compare --init`` and ``evaluate`` refused the latter with
"holds a JSON object without a 'construction' key", so a search result could not seed the next run.
"""

from __future__ import annotations

import json

import pytest

from discoverygym.cli import main
from discoverygym.cli.common import load_construction
from discoverygym.errors import UsageError

CP = "CirclePacking-26-v0"
PACKING = [[0.05 + 0.1 * (k % 10), 0.05 + 0.1 * (k // 10), 0.05] for k in range(26)]


def _search_best(tmp_path):
    path = tmp_path / "best.json"  # search's shape: the construction is the state's solution
    path.write_text(json.dumps({"env_id": CP, "id": "c0-l0-k0", "score": 1.3, "reward": 1.3,
                                "state": {"solution": PACKING, "score": 1.3, "reward": 1.3, "valid": True}}))
    return path


def test_load_construction_reads_a_search_best_json(tmp_path):
    assert load_construction(_search_best(tmp_path)) == PACKING


def test_evaluate_reads_a_search_best_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["evaluate", CP, str(_search_best(tmp_path)), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] and out["score"] == pytest.approx(1.3)


def test_an_object_without_a_construction_is_still_refused(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"state": {"solution": None}, "score": 1}))
    with pytest.raises(UsageError, match="construction"):
        load_construction(path)


def test_a_run_of_another_env_is_refused_as_certify_refuses_it(tmp_path, capsys):
    path = tmp_path / "best.json"  # an Erdős run's best.json: a list of numbers AC1 would also take
    path.write_text(json.dumps({"env_id": "ErdosMinOverlap-v0", "construction": [0.5] * 10}))
    argv = ["search", "FirstAutocorrelation-v0", "--init", str(path), "-C", "1", "-L", "1", "-K", "1",
            "--run-dir", str(tmp_path / "run")]
    assert main(argv) == 2
    assert "result of ErdosMinOverlap-v0" in capsys.readouterr().err
    assert main(["evaluate", "FirstAutocorrelation-v0", str(path)]) == 2
    assert "result of ErdosMinOverlap-v0" in capsys.readouterr().err
    assert main(["evaluate", "ErdosMinOverlap-v0", str(path), "--json"]) == 0  # its own env reads it
