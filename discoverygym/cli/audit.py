"""``discoverygym audit ENV_ID`` / ``discoverygym audit --all``: run the bundled exploits, print a table.

Exit codes: 0 when every exploit was rejected (or could not be judged here), 1 when any was rewarded,
escaped its directory, read a hidden file or crashed the evaluator, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from discoverygym.audit import AuditRow, audit, failed
from discoverygym.cli.common import UsageError, check_env
from discoverygym.envs.registry import ENVS, env_ids
from discoverygym.sandbox.python import SandboxLimits

#: columns of the tables off a terminal (``discoverygym audit ENV | cat``): wide enough that no cell is cut
WIDTH_OFF_TERMINAL = 1000

__all__ = ["add_parser", "run"]

_STYLE = {"rejected": "green", "accepted, no gain": "green", "not judged": "yellow"}


def add_parser(sub: Any) -> None:
    """Add the ``audit`` sub-command to the ``discoverygym`` parser."""
    p = sub.add_parser(
        "audit",
        help="run a bundled library of known exploits against an env; exit 1 if any is rewarded",
        description="Run known exploits (NaN/inf and wrong-shape candidates, lazy or self-reported "
        "results, verifier/numpy/timer/tolerance patching, forged verdicts, coding-cookie smuggling, "
        "output floods, timeouts, alias-path reads, writes outside the sandbox, page-cache and IPC channels; "
        "forged run logs and results, certify's inputs and --out) against one env and "
        "print attack, expected verdict, observed verdict and reward. A construction env is audited "
        "with constructions and with Python programs. Exit codes: 0 every exploit rejected (or not "
        "judged here, e.g. a kernel on CPU); 1 any exploit rewarded, escaped, leaked or crashed the "
        "evaluator; 2 usage error.",
    )
    p.add_argument("env_id", nargs="?", help="environment id (see `discoverygym list`)")
    p.add_argument("--all", action="store_true", help="audit every registered env; print one summary table")
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list instead of tables")
    p.add_argument("--timeout", type=float, default=None,
                   help="sandbox wall-clock limit of the Python programs of construction envs, seconds (default 5)")
    p.add_argument("--device", metavar="D", help="kernels: device of the correctness stage (default cpu)")
    p.add_argument("--n-cases", type=int, metavar="N", help="AtCoder/kernels: number of cases (default 2)")
    p.add_argument("--dataset", metavar="NAME", help="denoising: data set (default pbmc68k-reduced, a small subset)")


def run(args: argparse.Namespace) -> int:
    """Run ``discoverygym audit``; returns the exit code.

    Raises:
        UsageError: neither or both of ENV_ID and ``--all``, an unknown env, bad options.
    """
    if bool(args.env_id) == bool(args.all):
        raise UsageError("give one ENV_ID or --all")
    if args.timeout is not None and not 0 < args.timeout <= 3600:
        raise UsageError(f"--timeout must be a number of seconds in (0, 3600], got {args.timeout}")
    if args.n_cases is not None and args.n_cases < 1:
        raise UsageError(f"--n-cases must be >= 1, got {args.n_cases}")
    ids = env_ids() if args.all else [args.env_id]
    if args.env_id:
        check_env(args.env_id)
    console = Console(stderr=args.json)
    rows: list[AuditRow] = []
    seconds: dict[str, float] = {}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        bar = progress.add_task("audit", total=None)
        for env_id in ids:
            def step(attack: str, done: int, total: int) -> None:
                progress.update(bar, description=attack[:60], completed=done, total=total)

            start = time.perf_counter()
            try:
                rows += audit(env_id, progress=step, **_options(env_id, args))
            except (TypeError, ValueError) as exc:
                if not args.all:
                    raise UsageError(f"{env_id}: {exc}") from None
                rows.append(AuditRow(env_id, "(setup)", "", "", "", "error", None, str(exc), 0.0))
            except RuntimeError as exc:  # the env cannot start here (its initial program unscored without bubblewrap)
                if not args.all:
                    raise UsageError(f"{env_id}: cannot be audited here: {exc}") from None
                rows.append(AuditRow(env_id, "(setup)", "", "", "", "not judged", None, str(exc), 0.0))
            seconds[env_id] = time.perf_counter() - start
    if not console.is_terminal and "COLUMNS" not in os.environ:  # a pipe or a file: no cell is cut (as `list`)
        console = Console(stderr=args.json, width=WIDTH_OFF_TERMINAL)
    if args.json:
        print(json.dumps([{**r.__dict__, "failed": r.failed} for r in rows], default=str))
    elif args.all:
        console.print(_summary(rows, ids, seconds))
        if failed(rows):
            console.print(_rows_table(failed(rows), "failing exploits", with_env=True))
    else:
        console.print(_rows_table(rows, f"audit of {args.env_id}", with_env=any(r.env != args.env_id for r in rows)))
    bad = failed(rows)
    if not args.json:
        verdict = f"[red]{len(bad)} of {len(rows)} exploits got through[/]" if bad else \
            f"[green]all {len(rows)} exploits rejected or not judged[/]"
        console.print(verdict)
    return 1 if bad else 0


def _options(env_id: str, args: argparse.Namespace) -> dict:
    """The env options given on the command line that apply to ``env_id``."""
    options: dict[str, Any] = {}
    if env_id in ENVS:
        if args.timeout is not None:
            options["sandbox"] = SandboxLimits(timeout_s=args.timeout, memory_mb=2048)
        return options
    for key, value in (("device", args.device), ("n_cases", args.n_cases), ("dataset", args.dataset)):
        if value is not None:
            options[key] = value
    if args.all:  # --device/--n-cases/--dataset are meant for the envs that take them
        from discoverygym.envs.registry import make_env

        kept = {}
        for key, value in options.items():
            try:
                make_env(env_id, **kept, **{key: value})
            except (TypeError, ValueError):
                continue
            kept[key] = value
        options = kept
    return options


def _fmt(reward: float | None) -> str:
    return "" if reward is None else f"{reward:.6g}"


def _rows_table(rows: list[AuditRow], title: str, with_env: bool) -> Table:
    table = Table(title=title)
    if with_env:
        table.add_column("env", no_wrap=True)
    for col in ("attack", "expected", "observed", "reward", "s", "detail"):
        table.add_column(col, no_wrap=col in ("attack", "observed"))
    for r in rows:
        style = _STYLE.get(r.observed, "red")
        cells = [r.attack, r.expected, f"[{style}]{r.observed}[/]", _fmt(r.reward), f"{r.seconds:.1f}", r.detail[:90]]
        table.add_row(*([r.env] if with_env else []), *cells)
    return table


def _summary(rows: list[AuditRow], ids: list[str], seconds: dict[str, float]) -> Table:
    table = Table(title="discoverygym audit --all")
    for col in ("env id", "exploits", "rejected or no gain", "not judged", "failed", "s", "failing exploits"):
        table.add_column(col, no_wrap=col == "env id")
    for env_id in ids:
        mine = [r for r in rows if r.env == env_id or r.env.startswith(env_id + " ")]
        bad = failed(mine)
        table.add_row(
            env_id, str(len(mine)),
            str(sum(r.observed in ("rejected", "accepted, no gain") for r in mine)),
            str(sum(r.observed == "not judged" for r in mine)),
            f"[red]{len(bad)}[/]" if bad else "[green]0[/]",
            f"{seconds.get(env_id, 0.0):.0f}",
            ", ".join(f"{r.attack} ({r.observed})" for r in bad),
        )
    return table
