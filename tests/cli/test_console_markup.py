"""Text from a user's file or program reaches the console as text, never as rich markup.

A construction element, a claim, an error message raised by a program, or a file name holding
``[/]`` used to crash ``evaluate`` and ``certify`` with a MarkupError traceback, and ``[bold red]0.1[/]``
was rendered as a styled ``0.1`` (a spoofed claim).
"""

from __future__ import annotations

import json

from discoverygym.cli import main

NASTY = "[/] [bold red]spoof[/]"


def test_evaluate_shows_an_invalid_constructions_error_verbatim(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside the strings looked for
    path = tmp_path / "h.json"
    path.write_text(json.dumps([1, 1, NASTY, 0]))
    assert main(["evaluate", "ErdosMinOverlap-v0", str(path)]) == 0
    out = capsys.readouterr().out
    assert "[/]" in out and "[bold red]spoof[/]" in out


def test_evaluate_shows_a_programs_error_and_file_name_verbatim(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside the strings looked for
    path = tmp_path / "[bold]prog.py"
    path.write_text(f"def construct(seed, budget_s, parent=None):\n    raise ValueError({NASTY!r})\n")
    assert main(["evaluate", "ErdosMinOverlap-v0", str(path), "--timeout", "30"]) == 0
    out = capsys.readouterr().out
    assert "[bold]prog.py" in out
    assert "[bold red]spoof[/]" in out


def test_certify_shows_claims_errors_and_file_names_verbatim(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside the strings looked for
    claim = tmp_path / "[bold]claim.json"
    claim.write_text(json.dumps({"construction": [1, 1, 0.5, 0], "claimed": NASTY}))
    assert main(["certify", "ErdosMinOverlap-v0", str(claim)]) == 0
    out = capsys.readouterr().out
    assert "[bold]claim.json" in out
    assert "[bold red]spoof[/]" in out

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([1, 1, NASTY, 0]))
    assert main(["certify", "ErdosMinOverlap-v0", str(bad)]) == 1
    assert "[bold red]spoof[/]" in capsys.readouterr().out


ESC = "\x1b[2J\x1b[1A\x1b[2Kvalid yes"  # clear the screen, go up a line, erase it, print a fake verdict


def test_certify_and_evaluate_show_control_characters_escaped(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    claim = tmp_path / "claim.json"
    claim.write_text(json.dumps({"construction": [1, 1, 0.5, 0], "claimed": ESC}))
    assert main(["certify", "ErdosMinOverlap-v0", str(claim)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J" in out

    program = tmp_path / "prog.py"
    program.write_text(f"def construct(seed, budget_s, parent=None):\n    raise ValueError({ESC!r})\n")
    assert main(["evaluate", "ErdosMinOverlap-v0", str(program), "--timeout", "30"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J" in out
