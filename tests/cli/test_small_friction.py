"""Issue 16, item 6: the small frictions of the command line (list width, resume hints...)."""

from __future__ import annotations

import math

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
