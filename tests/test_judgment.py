"""One answer to "did it beat the record?" (issue 50): the console, train's summary and certify agree.

The case of the issue: a 26-circle packing valid only within the 1e-12 tolerance whose Σr is above
the record while its strictly valid lower bound (every radius shrunk by 1e-12) is below it. The
search console once printed "gap to record +1.758e-11" (beaten) where certify said "no".
"""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from types import SimpleNamespace

import pytest

from discoverygym import records
from discoverygym.cli import main
from discoverygym.envs.registry import ENVS
from discoverygym.judgment import judge, judge_certificate
from discoverygym.rewards.certify import certify
from discoverygym.rewards.certify.state import judge_state
from discoverygym.types import State

CP = "CirclePacking-26-v0"
SLACK = 4e-13  # every radius grown by 4e-13: touching neighbours overlap by 8e-13, inside the 1e-12 tolerance


def _packing() -> list[list[float]]:
    """26 circles of radius 0.05 + 4e-13 on a 0.1 grid: valid only within the 1e-12 tolerance."""
    return [[0.05 + 0.1 * (k % 10), 0.05 + 0.1 * (k // 10), 0.05 + SLACK] for k in range(26)]


@pytest.fixture
def record_at_1_3(monkeypatch):
    """CP26's record set to exactly 1.3: Σr = 1.3 + 1.04e-11 is above it, the strict bound 1.3 − 1.56e-11 below."""
    entry = records.RECORDS[CP]
    record = dataclasses.replace(entry.record, value=1.3, exact="1.3", public_best=None)
    monkeypatch.setitem(records.RECORDS, CP, dataclasses.replace(entry, record=record))
    monkeypatch.setitem(ENVS[CP].sota, "value", 1.3)


def test_the_tolerance_cannot_buy_a_record_in_certify_or_in_the_console(record_at_1_3, tmp_path, capsys):
    problem = ENVS[CP]
    score = problem.verifier(_packing())
    assert score.value > 1.3 + 1e-11  # the float64 score alone would "beat" the record by 1.04e-11
    state = State(solution=_packing(), score=score.value, reward=score.value, valid=True)
    console = judge_state(CP, problem, state)
    cert = certify(CP, {"construction": _packing()})
    assert cert["facts"]["tolerance"] == "1e-12"
    assert console.outcome == judge_certificate(cert).outcome == "short" and not cert["beats_record"]
    assert "strictly valid lower bound" in console.text()

    from discoverygym.cli.search import _record_line

    line = _record_line(problem, state, CP)
    assert "beats the record? no: does not beat the best known 1.3" in line

    run = tmp_path / "run"  # certify reads a search run's best.json and its run directory
    run.mkdir()
    (run / "best.json").write_text(json.dumps({"env_id": CP, "score": score.value, "state": state.to_dict()}))
    for target in (run, run / "best.json"):
        assert main(["certify", CP, str(target), "--json"]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert printed["verdict"]["outcome"] == "short" and printed["verdict"]["text"] == console.text()
        assert printed["claims"] == []  # a run's float64 score is not a claim of its authors


def test_certify_refuses_a_run_of_another_env_and_a_directory_without_best_json(tmp_path, capsys):
    (tmp_path / "best.json").write_text(json.dumps({"env_id": "ErdosMinOverlap-v0", "construction": [0.5, 0.5]}))
    assert main(["certify", CP, str(tmp_path)]) == 2
    assert "result of ErdosMinOverlap-v0" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["certify", CP, str(empty)]) == 2
    assert "without best.json" in capsys.readouterr().err


def test_a_train_best_json_certifies_too(tmp_path, capsys):
    path = tmp_path / "best.json"  # train's shape: construction at the top, a state beside it
    state = State(solution=[0.5, 0.5], score=1.0, reward=1.0, valid=True)
    path.write_text(json.dumps({"env_id": "ErdosMinOverlap-v0", "construction": [0.5, 0.5], "state": state.to_dict()}))
    assert main(["certify", "ErdosMinOverlap-v0", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == "0.5"  # (2/n) max_k (h ⋆ (1 − h))_k = 1 · (1/4 + 1/4)


@pytest.mark.parametrize("value, outcome", [
    (Fraction(1) - Fraction(2, 10**12), "beats"),   # 2e-12 below a minimised record: beaten
    (Fraction(1) - Fraction(1, 10**13), "ties"),    # within the 1e-12 relative tolerance
    (Fraction(1) + Fraction(1, 10**13), "ties"),
    (Fraction(1) + Fraction(2, 10**12), "short"),
])
def test_ties_within_the_tolerance(value, outcome):
    verdict = judge("NoSuchEnv-v0", "min", value, sota={"value": 1.0, "source": "someone 2026"})
    assert verdict.outcome == outcome and "ties within the 1e-12 relative tolerance" in verdict.text()


def test_a_record_known_to_its_printed_digits_is_its_rounding_interval():
    # 1.5028609 printed: anything in [1.50286085, 1.50286095] may be the true value
    verdict = judge("FirstAutocorrelation-v0", "min", Fraction("1.50286089"))
    assert verdict.outcome == "ties" and "printed digits" in verdict.text()
    assert judge("FirstAutocorrelation-v0", "min", Fraction("1.50286084")).outcome == "beats"


def test_the_exact_record_is_not_its_rounding():
    # Erdős: Together AI's construction certifies to 0.38087031058621990…; the printed 0.3808703106 is above it
    just_below_print = Fraction("0.38087031059")
    assert judge("ErdosMinOverlap-v0", "min", just_below_print).outcome == "short"


def test_a_value_above_a_reference_is_not_a_record():
    verdict = judge("SumDifference-Large-v0", "max", Fraction("1.16"))
    assert verdict.beats and not verdict.is_record and "not a record" in verdict.text()


def test_train_summary_uses_the_judgment():
    from discoverygym.agents.summary import train_summary

    problem = ENVS["ErdosMinOverlap-v0"]
    ours = json.loads((records_file := _root() / records.RECORDS["ErdosMinOverlap-v0"].ours[0].file).read_text())
    best = State(solution=ours["construction"], score=ours["value"], reward=1 / ours["value"], valid=True)
    start = State(solution=None, score=0.39, reward=1 / 0.39, valid=True)
    config = SimpleNamespace(env_id="ErdosMinOverlap-v0", name="full", policy="operators")
    result = SimpleNamespace(best=best, initial=start, steps=1, elapsed_s=1.0)
    summary = train_summary(config, result, problem, records_file.parent)
    assert not summary["beats_record"] and summary["verdict"].startswith("does not beat the best known 0.3808703105")


def _root():
    from pathlib import Path

    return Path(__file__).resolve().parents[1]


def test_report_gives_certify_s_verdict_for_a_search_run(tmp_path, capsys):
    from discoverygym.report.collect import collect

    run = tmp_path / "s"
    assert main(["search", CP, "-C", "1", "-L", "1", "-K", "2", "--executor", "inline", "--no-tensorboard",
                 "--run-dir", str(run)]) == 0
    capsys.readouterr()
    assert main(["certify", CP, str(run), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert collect(run).summary["beats the record?"] == "no: " + printed["verdict"]["text"]
