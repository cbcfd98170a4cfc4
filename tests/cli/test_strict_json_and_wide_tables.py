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
