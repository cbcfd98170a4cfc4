"""``discoverygym report RUN_DIR``: write one self-contained HTML report of a run directory.

Works for search, train and post-train runs, finished or still running; ``--watch SECONDS``
rewrites it periodically (the page refreshes itself at the same period) until Ctrl-C.

Exit codes: 0 written, 2 usage error (not a run directory, one of its files a FIFO, device or over
the size cap (:func:`discoverygym.io.check_run_files`), bad option), 3 plotly missing.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from discoverygym.cli.common import UsageError
from discoverygym.errors import BackendUnavailable
from discoverygym.io import check_run_files

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``report`` sub-command to the ``discoverygym`` parser."""
    p = sub.add_parser(
        "report",
        help="write a self-contained HTML report of a run directory (curves, lineage DAG, diffs, picture)",
        description="Write one HTML file that opens from disk with no server and no network: best score "
        "against evaluations and wall time per trajectory, the lineage DAG (zoom and pan; click a node for "
        "its score, error, stdout tail and the parent->child diff), the env's picture of the best "
        "construction, the config and token/cost totals (usage.json). For search, train and post-train "
        "run directories; --watch keeps it fresh while a run goes on.",
    )
    p.add_argument("run_dir", help="a search, train or post-train run directory")
    p.add_argument("-o", "--output", metavar="FILE", help="HTML file to write (default RUN_DIR/report.html)")
    p.add_argument("--watch", type=float, metavar="SECONDS",
                   help="rewrite the report every SECONDS (the page refreshes itself) until Ctrl-C")


def run(args: argparse.Namespace) -> int:
    """Run ``discoverygym report``; returns the exit code.

    Raises:
        UsageError: not a run directory, a run file that is not a regular file within the size cap,
            a bad ``--watch``.
        BackendUnavailable: plotly is not installed.
    """
    from discoverygym import report

    if args.watch is not None and not (math.isfinite(args.watch) and 1 <= args.watch <= 86_400):
        raise UsageError(f"--watch must be a number of seconds in [1, 86400], got {args.watch}")
    try:
        check_run_files(args.run_dir)  # a FIFO or device among the run's files: one line, nothing read
        if args.watch is None:
            path = report.build_report(args.run_dir, args.output)
        else:
            print(f"discoverygym report: rewriting every {args.watch:g} s; Ctrl-C stops", flush=True)
            try:
                path = report.watch(args.run_dir, args.watch, args.output,
                                    on_write=lambda p: print(f"wrote {p}", flush=True))
            except KeyboardInterrupt:
                return 0
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except ImportError as exc:
        raise BackendUnavailable(str(exc)) from None
    size = path.stat().st_size
    print(f"wrote {path} ({size / 1e6:.1f} MB); open it in a browser (no server needed)")
    return 0
