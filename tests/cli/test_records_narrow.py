"""``discoverygym records`` in an 80-column terminal keeps every number on one line.

At 80 columns the "ours" column was 6 characters wide: "0.3808 / 726190 / 2" over three lines, and
the source "Togethe / r AI". Now a narrow table gives each row's env id, record, source name and our
value on one line (the labels and dates are in the notes below it).
"""

from __future__ import annotations

from discoverygym.cli import main
from discoverygym.records import RECORDS


def test_records_at_80_columns_breaks_no_number(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["records"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    lines = out.split("Judged by")[0].splitlines()  # the table (the notes below it name each env again)
    for env_id, entry in RECORDS.items():
        (row,) = [line for line in lines if line.split() and line.split()[0] == env_id]
        assert str(entry.record.value) in row.split()
        assert entry.record.source.split()[0] in row.split()
        if entry.ours:
            assert entry.ours[0].value in row.split(), row
