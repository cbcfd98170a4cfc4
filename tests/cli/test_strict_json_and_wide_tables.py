"""Tester report (fix, items 8 and 9): strict JSON (no bare NaN, no "nan" strings) and wide tables off a terminal."""

from __future__ import annotations

import json

from discoverygym.cli import _json_safe, main


def _strict(text: str):
    """``json.loads`` that refuses NaN / Infinity (RFC 8259 has none)."""

    def refuse(token: str):
        raise ValueError(f"bare {token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_list_json_is_strict_json_with_null_for_no_record(capsys):
    assert main(["list", "--json"]) == 0
    rows = {r["env_id"]: r for r in _strict(capsys.readouterr().out)}
    assert rows["ZonedNeutralAtom-v0"]["record"] is None  # none on this suite (was a bare NaN)


def test_list_table_shows_a_dash_not_nan(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["list"]) == 0
    (line,) = [row for row in capsys.readouterr().out.splitlines() if "ZonedNeutralAtom-v0" in row]
    assert "nan" not in line.split() and "—" in line


def test_evaluate_json_writes_null_not_the_string_nan():
    out = json.dumps(_json_safe({"sota": {"value": float("nan")}, "score": float("inf"), "ok": 1.5}),
                     allow_nan=False)
    assert _strict(out) == {"sota": {"value": None}, "score": None, "ok": 1.5}


def test_audit_off_a_terminal_cuts_no_cell(monkeypatch, capsys):
    """``discoverygym audit ENV | cat`` cut cells at 80 columns ("group-cou…")."""
    from discoverygym.audit import AuditRow
    from discoverygym.cli import audit as audit_cli

    detail = "group-count: the program must return one snapshot list per stage, got 3 for 5 stages"
    rows = [AuditRow("ZonedNeutralAtom-v0", "forged-extra-keys-score-and-time", "forgery", "a placer adds keys",
                     "rejected", "rejected", -100.0, detail, 0.1)]
    monkeypatch.setattr(audit_cli, "audit", lambda env_id, progress=None, **kw: rows)
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["audit", "ZonedNeutralAtom-v0"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and detail in out and "forged-extra-keys-score-and-time" in out


def test_compare_evals_per_run_gives_the_range_over_seeds():
    """compare's "evals/run" showed the maximum (32) where the seeds ran 16 and 32."""
    from discoverygym.cli.compare import _rows, evals_cell

    runs = [{"config": "full", "seed": s, "best_score": 1.0 + s, "start_score": 0.5, "evaluations": n, "wall_s": 1.0,
             "elapsed_s": 1.0, "late": False} for s, n in ((0, 16), (1, 32))]
    (row,) = _rows(["full"], runs, "max")
    assert evals_cell(row) == "16–32"
    assert evals_cell({**row, "evaluations_min": 32}) == "32"
