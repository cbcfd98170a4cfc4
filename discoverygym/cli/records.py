"""``discoverygym records``: the best known value per math env (as of the survey date) and discoverygym's constructions.

Reads :data:`discoverygym.records.RECORDS` (the table the envs, ``list`` and the README use).
Exit code 0; 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from discoverygym.judgment import TOLERANCE_TEXT, verdict_of
from discoverygym.records import AS_OF, RECORDS, as_rows

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``records`` sub-command to the ``discoverygym`` parser."""
    p = sub.add_parser(
        "records",
        help="best known value per math env (source, date, size, convention, as of a date) and our constructions",
        description="Print the best known value of every math env with its source, date, construction size, "
        "whether the construction is public and the convention the number depends on (quadrature, "
        "tolerance), the best public construction where the record's is not public, the earlier values, "
        "the survey date, and discoverygym's own constructions, each named for what it is (a record only "
        "when certify shows it beating the best known value under the same rules): a construction file, "
        "its certificate (`discoverygym certify ENV FILE --out CERT`) and the command that produced it.",
    )
    p.add_argument("--json", action="store_true", help="print the table as a JSON list")


def run(args: argparse.Namespace) -> int:
    """Run ``discoverygym records``; returns the exit code."""
    if args.json:
        rows = as_rows()
        for row in rows:  # each construction of ours with its verdict (the one judgment)
            for o, data in zip(RECORDS[row["env_id"]].ours, row["ours"]):
                data["verdict"] = verdict_of(row["env_id"], o).text()
        print(json.dumps(rows, indent=1))
        return 0
    console = Console()
    table = Table(title=f"best known values (others; as of {AS_OF}) and discoverygym's constructions",
                  box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    wide = console.width >= 120  # under 120 columns: no size / public columns (the notes below have them)
    columns = (("env id", "better", "best known", "source, date" if wide else "source") + (("size", "public") if wide else ())
               + ("ours",))
    for col in columns:  # numbers are never broken across lines; text wraps at spaces
        table.add_column(col, no_wrap=col in ("env id", "best known") or (col == "ours" and not wide),
                         overflow="fold" if wide else "ellipsis")
    for e in RECORDS.values():
        r = e.record
        # under 120 columns the value alone (what it is: the notes below), so it is not cut into pieces
        ours = "; ".join(f"[bold]{o.value}[/]" + (f" ({o.label.split(' (')[0].split(';')[0]})" if wide else "")
                         for o in e.ours[:1]) or "—"
        best = str(r.value) + ((" (reference)" if wide else " (ref.)") if r.kind == "reference" else "")
        table.add_row(e.env_id, e.direction.comparative, best, f"{r.source} {r.date}" if wide else r.source,
                      *((r.size, r.public.split(",")[0]) if wide else ()), ours)
    console.print(table)
    console.print(f"Judged by discoverygym.judgment: exact values against each record's exact value (certified "
                  f"from its public construction, else its printed digits), ties within the {TOLERANCE_TEXT}.",
                  highlight=False)
    for e in RECORDS.values():
        r = e.record
        console.print(f"[bold]{e.env_id}[/] ({r.size}; construction public: {r.public}): {r.convention}",
                      highlight=False)
        if r.exact:
            console.print(f"  judged against {r.exact} (the public construction, certified)", highlight=False)
        if r.public_best:
            console.print(f"  best public construction: {r.public_best[0]} ({r.public_best[1]})", highlight=False)
        if r.others:
            console.print("  also: " + "; ".join(f"{v} ({s})" for v, s in r.others), highlight=False)
        for o in e.ours:
            console.print(f"  ours {o.value} ({o.date}): {o.label}\n    {verdict_of(e.env_id, o).text()}"
                          f"\n    {o.file}\n    certificate {o.certificate}\n    command: {o.command}", highlight=False)
    return 0
