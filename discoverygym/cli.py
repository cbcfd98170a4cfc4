"""The ``discoverygym`` command: list environments, evaluate candidates, search, train and compare agents.

Exit codes: 0 when the candidate was evaluated (valid or not), 2 for usage errors (unknown env,
unreadable file, wrong file format).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from discoverygym.envs.base import DiscoveryEnv
from discoverygym.envs.registry import ENVS
from discoverygym.rewards.sandbox import SandboxLimits
from discoverygym.agents import cli as agents_cli
from discoverygym.search import cli as search_cli
from discoverygym.types import State

DEFAULT_ENV = "CirclePacking-26-v0"

#: env id -> bundled example program (``discoverygym/examples/``).
EXAMPLES = {
    "CirclePacking-26-v0": "circle_packing.py",
    "CirclePacking-32-v0": "circle_packing.py",
    "ErdosMinOverlap-v0": "erdos_min_overlap.py",
    "FirstAutocorrelation-v0": "first_autocorrelation.py",
}


class UsageError(Exception):
    """A command-line mistake: printed and turned into exit code 2."""


def example_path(env_id: str) -> Path:
    """Path of the bundled example program for ``env_id``.

    Raises:
        UsageError: no example is bundled for this env.
    """
    if env_id not in EXAMPLES:
        raise UsageError(f"no bundled example for {env_id}; give a FILE (examples exist for {', '.join(EXAMPLES)})")
    return Path(str(resources.files("discoverygym") / "examples" / EXAMPLES[env_id]))


def load_construction(path: Path) -> Any:
    """Read a construction from JSON: a bare construction or an object with a ``construction`` key.

    Raises:
        UsageError: unreadable file, invalid JSON, or an object without ``construction``.
    """
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None
    if isinstance(data, dict):
        if "construction" not in data:
            raise UsageError(f"{path} holds a JSON object without a 'construction' key")
        return data["construction"]
    return data


def evaluate(env_id: str, path: Path, timeout_s: float, seed: int = 0) -> State:
    """Evaluate a JSON construction or a ``.py`` program for ``env_id`` (the CLI's core).

    Args:
        env_id: a registered env id.
        path: ``.py`` program (run in the sandbox) or JSON construction file.
        timeout_s: sandbox wall-clock limit for programs (seconds).
        seed: seed passed to programs.

    Returns:
        The evaluated :class:`State` (valid or not).

    Raises:
        UsageError: unknown env id or unreadable/ill-formed file.
    """
    if env_id not in ENVS:
        raise UsageError(f"unknown env {env_id!r}; run `discoverygym list`")
    if path.suffix == ".py":
        try:
            source = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {path}: {exc}") from None
        env = DiscoveryEnv(ENVS[env_id], action_mode="code", sandbox=SandboxLimits(timeout_s=timeout_s, memory_mb=4096))
        _, info = env.reset(seed=seed)
        return env.evaluate_program(source, parent=info["state"], seed=seed)
    env = DiscoveryEnv(ENVS[env_id])
    return env.evaluate_construction(load_construction(path))


def _cmd_list(args: argparse.Namespace, console: Console) -> int:
    rows = [
        {"env_id": env_id, "quantity": p.quantity, "direction": p.direction,
         "record": p.sota["value"], "source": p.sota["source"], "failure_reward": p.failure_reward}
        for env_id, p in ENVS.items()
    ]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = Table(title="discoverygym environments")
    table.add_column("env id", no_wrap=True, min_width=max(len(r["env_id"]) for r in rows))
    for col in ("quantity", "better", "record", "source"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["env_id"], r["quantity"], "lower" if r["direction"] == "min" else "higher",
                      str(r["record"]), r["source"])
    console.print(table)
    return 0


def _cmd_evaluate(args: argparse.Namespace, console: Console) -> int:
    if not 0 < args.timeout <= 86_400:  # also refuses NaN
        raise UsageError(f"--timeout must be a number of seconds in (0, 86400], got {args.timeout}")
    path = Path(args.file) if args.file else example_path(args.env_id)
    state = evaluate(args.env_id, path, args.timeout, args.seed)
    problem = ENVS[args.env_id]
    metrics = {k: v for k, v in state.metadata.items() if k not in ("stdout", "stderr")}
    result = {
        "env_id": args.env_id, "file": str(path), "valid": state.valid, "score": state.score,
        "reward": state.reward, "error": state.error, "metrics": metrics, "sota": problem.sota,
    }
    if args.json:
        print(json.dumps(_json_safe(result), default=str))
        return 0
    table = Table(title=f"{problem.title} — {path.name}", show_header=False)
    table.add_row("valid", "[green]yes[/]" if state.valid else "[red]no[/]")
    if state.valid:
        table.add_row(problem.quantity, f"{state.score:.16g}")
        table.add_row("reward", f"{state.reward:.16g}")
    else:
        table.add_row("error", state.error or "")
    table.add_row("published best", f"{problem.sota['value']} ({problem.sota['source']})")
    for key in ("n", "method", "strict_valid", "rel_error_bound", "elapsed_s", "sandbox_s"):
        if key in metrics:
            table.add_row(key, str(metrics[key]))
    console.print(table)
    return 0


def _json_safe(obj: Any) -> Any:
    """Replace NaN and infinite floats by their string names so the output is strict JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``discoverygym`` command."""
    parser = argparse.ArgumentParser(
        prog="discoverygym",
        description="Scientific-discovery problems as Gymnasium environments with exact verifiers.",
        epilog="Examples: discoverygym evaluate CirclePacking-26-v0 my_program.py --json | "
        "discoverygym search CirclePacking-26-v0 --policy mutation --selector rpucg -C 4 -L 20 -K 4 --run-dir runs/cp26",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="list environments: quantity, direction, published record, source")
    p_list.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p_eval = sub.add_parser(
        "evaluate",
        help="score a construction (JSON) or a program (.py, run in the sandbox)",
        description="Score a JSON construction (bare, or an object with a 'construction' key) or a "
        "Python program defining construct(seed, budget_s, parent), run in the sandbox. The score is "
        "always recomputed by the verifier. Exit code 0 whenever it evaluated (valid or not).",
    )
    p_eval.add_argument("env_id", nargs="?", default=DEFAULT_ENV, help=f"environment id (default {DEFAULT_ENV})")
    p_eval.add_argument("file", nargs="?", help="construction .json or program .py (default: the bundled example)")
    p_eval.add_argument("--json", action="store_true", help="print one JSON object (valid, score, reward, error...)")
    p_eval.add_argument("--timeout", type=float, default=60.0, help="program wall-clock limit in seconds (default 60)")
    p_eval.add_argument("--seed", type=int, default=0, help="seed passed to the program (default 0)")
    search_cli.add_parser(sub)
    agents_cli.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``discoverygym``; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console()
    try:
        if args.command == "search":
            return search_cli.run(args)
        if args.command in ("train", "compare"):
            return agents_cli.run(args)
        if args.command == "list":
            return _cmd_list(args, console)
        return _cmd_evaluate(args, console)
    except UsageError as exc:
        print(f"discoverygym: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
