"""``discoverygym records``: the best known value per math env and discoverygym's certified improvements.

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

from discoverygym.records import RECORDS, as_rows

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``records`` sub-command to the ``discoverygym`` parser."""
    p = sub.add_parser(
        "records",
        help="best known value per math env (source, date, size, convention) and our certified improvements",
        description="Print the best known value of every math env with its source, date, construction size, "
        "whether the construction is public and the convention the number depends on (quadrature, "
        "tolerance), the runners-up, and discoverygym's own improvements: each a construction file, "
        "its certificate (`discoverygym certify ENV FILE --out CERT`) and the command that produced it.",
    )
    p.add_argument("--json", action="store_true", help="print the table as a JSON list")


def run(args: argparse.Namespace) -> int:
    """Run ``discoverygym records``; returns the exit code."""
    if args.json:
        print(json.dumps(as_rows(), indent=1))
        return 0
    console = Console()
    table = Table(title="best known values (others) and discoverygym's certified improvements",
                  box=box.SIMPLE_HEAD)
    wide = console.width >= 120  # under 120 columns: no size / public columns (the notes below have them)
    columns = ("env id", "better", "best known", "source, date") + (("size", "public") if wide else ()) + ("ours",)
    for col in columns:
        table.add_column(col, no_wrap=col in ("env id", "best known", "ours"), overflow="fold")
    for e in RECORDS.values():
        r = e.record
        ours = "; ".join(f"[bold]{o.value}[/]" for o in e.ours) or "—"
        table.add_row(e.env_id, "lower" if e.direction == "min" else "higher", str(r.value), f"{r.source} {r.date}",
                      *((r.size, r.public) if wide else ()), ours)
    console.print(table)
    for e in RECORDS.values():
        console.print(f"[bold]{e.env_id}[/] ({e.record.size}; construction public: {e.record.public}): "
                      f"{e.record.convention}")
        if e.record.others:
            console.print("  also: " + "; ".join(f"{v} ({s})" for v, s in e.record.others))
        for o in e.ours:
            console.print(f"  ours {o.value} ({o.date}): {o.file}\n    certificate {o.certificate}\n    command: {o.command}")
    return 0
