"""The ``discoverygym`` command: list environments, evaluate candidates, search, train and compare agents.

The top layer of the package: ``discoverygym/cli/`` holds this entry (``list``, ``evaluate`` and the
parser), :mod:`~discoverygym.cli.audit` (``audit``), :mod:`~discoverygym.cli.search`,
:mod:`~discoverygym.cli.train`, :mod:`~discoverygym.cli.compare`, :mod:`~discoverygym.cli.post_train` (``post-train``),
the other sub-commands (:data:`SUBCOMMANDS`, each a module with ``add_parser`` and ``run``) and the helpers
they share, :mod:`~discoverygym.cli.common`.
Sub-commands call down into agents/search/envs; nothing below imports this package.

Exit codes: 0 when the candidate was evaluated (valid or not), 2 for usage errors (unknown env,
unreadable file, wrong file format, a ``--plugin`` file whose own code fails), 3 when a backend the job needs is missing here (no GPU to time
a kernel that passed its correctness checks, an uninstalled extra, an unreachable server), 141 when
the reader of standard output went away (``discoverygym list --json | head -1``; no traceback).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
from rich import box
from rich.console import Console
from rich.table import Table

from discoverygym.cli import audit, certify, compare, export, post_train, records, report, search, train
from discoverygym.cli.common import UsageError, check_env, console_text, load_construction, seed_value
from discoverygym.envs.problem import example_file
from discoverygym.envs.registry import ENVS, PROGRAM_TASKS, get_problem, make_task, option_names, problem_of
from discoverygym.errors import BackendUnavailable
from discoverygym.sandbox.python import SandboxLimits
from discoverygym.types import Direction, State

DEFAULT_ENV = "CirclePacking-26-v0"

#: sub-command -> its module (``add_parser`` adds it to the parser, ``run`` runs it), in the order of
#: ``discoverygym --help``; ``list`` and ``evaluate`` are this module's own.
SUBCOMMANDS = {"search": search, "train": train, "compare": compare, "post-train": post_train, "audit": audit,
               "export": export, "report": report, "certify": certify, "records": records}

def example_path(env_id: str) -> Path:
    """Path of the bundled example program for ``env_id`` (its problem's ``example``).

    Raises:
        UsageError: unknown env, or no example is bundled for this env.
    """
    check_env(env_id)
    path = example_file(get_problem(env_id))
    if path is None:
        raise UsageError(f"no bundled example for {env_id}; give a FILE")
    return path


def evaluate(env_id: str, path: Path, timeout_s: float | None, seed: int = 0, **task_options: Any) -> State:
    """Evaluate a candidate file for ``env_id`` (the CLI's core).

    Construction problems take a JSON construction or a ``.py`` program (run in the sandbox);
    program problems (kernels, AtCoder, denoising) take the program text in the task's language.

    Args:
        env_id: a registered env id.
        path: the candidate file.
        timeout_s: sandbox wall-clock limit for Python programs of construction problems (seconds;
            ``None`` = 60). Program problems use their own limits (contest rules, protocols).
        seed: seed passed to programs / used for generated cases.
        **task_options: options of a program problem (``cases_dir``, ``dataset``, ``device``,
            ``n_cases``, ``allow_unconfined``); ``None`` values are dropped.

    Returns:
        The evaluated :class:`State` (valid or not).

    Raises:
        UsageError: unknown env id, an option the env does not take, unreadable/ill-formed file.
    """
    return _evaluate(env_id, path, timeout_s, seed, **task_options)[0]


def _evaluate(env_id: str, path: Path, timeout_s: float | None, seed: int = 0,
              **task_options: Any) -> tuple[State, Any]:
    """:func:`evaluate`, also returning the Problem / ProgramTask that judged the candidate."""
    options = {k: v for k, v in task_options.items() if v is not None}
    check_env(env_id)
    accepted = option_names(env_id)
    refused = [k for k in options if accepted is not None and k not in accepted]
    if refused:
        raise UsageError(f"{env_id} takes no {', '.join('--' + k.replace('_', '-') for k in refused)} option")
    if env_id in PROGRAM_TASKS:  # a candidate that cannot be scored here is exit 3, not an unscored state
        options["raise_unavailable"] = True
    try:
        env = gym.make(env_id, **options).unwrapped
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{env_id}: {exc}") from None
    if env.action_kind == "construction":
        if path.suffix == ".py":  # a program that returns a construction
            limits = SandboxLimits(timeout_s=60.0 if timeout_s is None else timeout_s, memory_mb=4096)
            env = gym.make(env_id, action_mode="code", sandbox=limits).unwrapped
            _, info = env.reset(seed=seed)
            return env.evaluate(_read_text(path), parent=info["state"], seed=seed), env.problem
        return env.evaluate(load_construction(path, env_id)), env.problem
    try:
        return env.evaluate(_read_text(path), seed=seed), env.problem
    except (ValueError, OSError) as exc:  # bad case files, a data set missing offline...
        raise UsageError(f"{env_id}: {exc}") from None


def _read_text(path: Path) -> str:
    """A candidate program's text, opened once and checked on the descriptor (a regular UTF-8 file
    within the input limit: :func:`~discoverygym.io.read_input_text`).

    Raises:
        UsageError: anything else (one line naming the path).
    """
    from discoverygym.io import read_input_text

    try:
        return read_input_text(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _cmd_list(args: argparse.Namespace, console: Console) -> int:
    rows = [
        {"env_id": env_id, "quantity": p.quantity, "direction": p.direction, "action": "construction or code",
         "record": p.sota["value"], "source": p.sota["source"] + _ours_text(env_id), "failure_reward": p.failure_reward}
        for env_id, p in ENVS.items()
    ]
    for env_id in PROGRAM_TASKS:
        try:
            task = make_task(env_id)
        except Exception as exc:  # noqa: BLE001 - an optional family that cannot load is listed as such
            rows.append({"env_id": env_id, "quantity": PROGRAM_TASKS[env_id].title, "direction": "",
                         "action": "code", "record": None, "source": f"unavailable: {exc}", "failure_reward": None})
            continue
        rows.append({"env_id": env_id, "quantity": task.quantity, "direction": task.direction,
                     "action": f"code ({task.language})", "record": task.sota["value"],
                     "source": task.sota["source"], "failure_reward": task.failure_reward})
    if args.json:
        print(json.dumps(_json_safe(rows), indent=1, allow_nan=False))  # a record of NaN (none known): null
        return 0
    if not console.is_terminal and "COLUMNS" not in os.environ:  # a pipe or a file: nothing wraps (issue 41)
        console = Console(file=console.file, width=LIST_WIDTH_OFF_TERMINAL)
    console.print(_list_table(rows, console.width))
    return 0


#: columns of ``list`` off a terminal (``discoverygym list | cat``): wide enough for every row on one line
LIST_WIDTH_OFF_TERMINAL = 400


def _ours_text(env_id: str) -> str:
    """``"; ours V (label, certified)"`` where discoverygym stores a construction (:func:`discoverygym.records.ours_text`)."""
    from discoverygym.records import ours_text

    return ours_text(env_id)


def _list_table(rows: list[dict], width: int) -> Table:
    """The ``list`` table; under 120 columns a compact one (no action column, short quantity and source).

    The compact form keeps every env on one or two lines of an 80-column terminal: the quantity is cut
    before its parenthesis, the source at its first comma, the record shown to 7 significant digits
    (``--json`` has the full values).
    """
    compact = width < 120
    from discoverygym.records import AS_OF

    table = Table(title=f"discoverygym environments (math records as of {AS_OF}: discoverygym records)", box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD,
                  pad_edge=not compact)
    table.add_column("env id", no_wrap=True, min_width=max(len(r["env_id"]) for r in rows))
    table.add_column("better", no_wrap=True)
    table.add_column("record", no_wrap=compact)
    table.add_column("quantity", ratio=1 if compact else None)
    if not compact:
        table.add_column("action")
    table.add_column("source", ratio=1 if compact else None)
    for r in rows:
        better = Direction(r["direction"]).comparative if r["direction"] else ""
        record, quantity, source = r["record"], r["quantity"], r["source"]
        if record is None or (isinstance(record, float) and not math.isfinite(record)):
            record = "—"  # none known on this suite (the source says why), or the family is unavailable
        elif compact:
            record = f"{record:.7g}" if isinstance(record, float) else record
            quantity = quantity.split(" (")[0]
            source = source.split(",")[0]
        cells = [r["env_id"], better, str(record), quantity] + ([] if compact else [r["action"]]) + [source]
        table.add_row(*cells)
    return table


def _cmd_evaluate(args: argparse.Namespace, console: Console) -> int:
    """``discoverygym evaluate``: judge one file; exit 0 judged, 2 usage error, 130 interrupted.

    The input must be a regular file of at most :data:`~discoverygym.io.MAX_INPUT_BYTES` (checked
    before it is opened: a device or a FIFO is refused, not read). SIGTERM and Ctrl-C end the
    command with one line, not a traceback.
    """
    try:
        return _evaluate_command(args, console)
    except KeyboardInterrupt:
        print("discoverygym: evaluate interrupted", file=sys.stderr)
        return 130


def _evaluate_command(args: argparse.Namespace, console: Console) -> int:
    from discoverygym.io import check_input_file

    if args.file:
        try:
            check_input_file(args.file)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.timeout is not None and not 0 < args.timeout <= 86_400:  # also refuses NaN
        raise UsageError(f"--timeout must be a number of seconds in (0, 86400], got {args.timeout}")
    if args.n_cases is not None and args.n_cases < 1:
        raise UsageError(f"--n-cases must be >= 1, got {args.n_cases}")
    if not args.file:
        check_env(args.env_id)
    path = Path(args.file) if args.file else example_path(args.env_id)
    options = {"cases_dir": args.cases, "dataset": args.dataset, "device": args.device, "n_cases": args.n_cases,
               "allow_unconfined": True if args.allow_unconfined else None}
    state, problem = _evaluate(args.env_id, path, args.timeout, args.seed, **options)
    metrics = {k: v for k, v in state.metadata.items() if k not in ("stdout", "stderr")}
    result = {
        "env_id": args.env_id, "file": str(path), "valid": state.valid, "score": state.score,
        "reward": state.reward, "error": state.error, "metrics": metrics, "sota": problem.sota,
    }
    if args.json:
        print(json.dumps(_json_safe(result), default=str, allow_nan=False))
        return 0
    # the file name, an error a program raised and its metrics are text, never rich markup
    table = Table(title=f"{problem.title} — {console_text(path.name)}", show_header=False)
    table.add_row("valid", "[green]yes[/]" if state.valid else "[red]no[/]")
    if state.valid:
        table.add_row(problem.quantity, f"{state.score:.16g}")
        table.add_row("reward", f"{state.reward:.16g}")
    else:
        table.add_row("error", console_text(state.error or ""))
    table.add_row("published best", f"{problem.sota['value']} ({problem.sota['source']})"
                  + (f"; {metrics['proxy_note']}" if metrics.get("proxy") and metrics.get("proxy_note") else ""))
    for key in ("n", "method", "strict_valid", "rel_error_bound", "elapsed_s", "sandbox_s"):
        if key in metrics:
            table.add_row(key, console_text(str(metrics[key])))
    if hasattr(problem, "report"):
        for label, value in problem.report(state):
            table.add_row(console_text(str(label)), console_text(str(value)))
    cases = metrics.get("cases")
    if isinstance(cases, list) and cases and all(isinstance(c, dict) for c in cases):
        console.print(_cases_table(cases))  # the per-case table first: the summary ends the output
    console.print(table)
    return 0


def _cases_table(cases: list[dict]) -> Table:
    """Per-case table from ``metrics["cases"]`` (a list of dicts with the same keys)."""
    columns = list(dict.fromkeys(k for c in cases for k in c))
    table = Table(title=f"{len(cases)} cases")
    for col in columns:
        table.add_column(console_text(str(col)))
    for c in cases:
        table.add_row(*(console_text(str(c.get(col, ""))) for col in columns))
    return table


def _json_safe(obj: Any) -> Any:
    """Replace NaN and infinite floats by ``None`` (JSON ``null``: no number, as RFC 8259 has no NaN) so
    the output is strict JSON that every parser reads."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
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
        epilog="Exit codes: 0 evaluated (valid or not), 2 usage error, 3 a backend is missing here (e.g. no GPU "
        "to time a kernel), 141 the output's reader went away (list --json | head -1). Examples: discoverygym evaluate CirclePacking-26-v0 my_program.py --json | "
        "discoverygym evaluate AHC039-v0 solution.cpp --cases inputs/ | "
        "discoverygym search CirclePacking-26-v0 --policy mutation --selector rpucg -C 4 -L 20 -K 4 --run-dir runs/cp26 | "
        "discoverygym audit CirclePacking-26-v0 (known exploits; exit 1 if any is rewarded) | "
        "discoverygym certify ErdosMinOverlap-v0 FILE.json (the value proved in exact arithmetic) | "
        "discoverygym records (best known values, source and date; ours, certified)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="list environments: quantity, direction, published record, source")
    p_list.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p_eval = sub.add_parser(
        "evaluate",
        help="score a construction (JSON) or a program (.py, .cpp), run in the sandbox",
        description="Score a JSON construction (bare, or an object with a 'construction' key) or a "
        "Python program defining construct(seed, budget_s, parent), run in the sandbox; for program "
        "problems (TriMul/MLADecode kernels, AHC039/AHC058 C++, ScRNADenoising, QubitRouting and "
        "ZonedNeutralAtom Python programs) the program in the task's language, judged by its protocol "
        "under its own limits (see --timeout). The score is always recomputed by the verifier. "
        "Exit codes: 0 whenever it evaluated (valid or not); 2 for usage errors (unknown env or "
        "option, unreadable file or case files, a data set missing offline); 3 when a backend is "
        "missing here (no GPU to time a kernel that passed its correctness checks).",
    )
    p_eval.add_argument("env_id", nargs="?", default=DEFAULT_ENV, help=f"environment id (default {DEFAULT_ENV})")
    p_eval.add_argument("file", nargs="?", help="construction .json or program .py (default: the bundled example)")
    p_eval.add_argument("--json", action="store_true", help="print one JSON object (valid, score, reward, error...)")
    p_eval.add_argument("--timeout", type=float, default=None,
                        help="wall-clock limit of a Python program for construction problems, seconds (default 60). "
                        "Program problems keep their own limits: AtCoder 2 s per case, QubitRouting 120 s per "
                        "case, ZonedNeutralAtom 60 s per circuit (a placer using its whole budget_s, 48 s, on "
                        "each of the 16 circuits takes about 13 min; --n-cases 1 judges one)")
    p_eval.add_argument("--seed", type=seed_value, default=0, help="seed passed to the program / of generated cases (default 0)")
    group = p_eval.add_argument_group("program problems (kernels, AtCoder, denoising, qubit routing, ZNAA)")
    group.add_argument("--cases", metavar="DIR", help="AtCoder: judge on the input files in DIR instead of generated cases")
    group.add_argument("--n-cases", type=int, metavar="N", help="AtCoder: number of generated cases (default 150); QubitRouting: the first N suite cases (default all 72); ZonedNeutralAtom: the first N circuits (default all 16)")
    group.add_argument("--dataset", metavar="NAME", help="denoising: data set (default celltypist-pbmc)")
    group.add_argument("--device", metavar="D", help="kernels: 'cuda' (timed) or 'cpu' (small shapes, CPU-timing proxy score)")
    group.add_argument("--allow-unconfined", action="store_true",
                       help="kernels, denoising: judge even where bubblewrap cannot run (static checks and an "
                            "audit hook only; refused with exit 3 otherwise)")
    for command in SUBCOMMANDS.values():
        command.add_parser(sub)
    return parser


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _terminate_as_interrupt() -> None:
    """Handle SIGTERM (what ``kill``, SLURM and a CI timeout send) as Ctrl-C: the commands'
    ``KeyboardInterrupt`` paths then close their worker pools and print the resume command, where
    the default action killed the main process alone and left its worker processes running."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)


#: ``gym.make`` keywords of the env itself (not of its problem or task), which ``train`` / ``compare``
#: also accept in ``--task-options`` (they pass it to ``gym.make`` as ``env_kwargs``).
ENV_KEYWORDS = ("horizon", "render_mode", "raise_unavailable")


def check_task_options(env_id: str, options: Any) -> None:
    """``train`` / ``compare``: ``--task-options`` must be a JSON object of options ``env_id`` takes.

    The same check as ``search``'s (:func:`~discoverygym.envs.registry.problem_of`: a program env's
    task options, a construction env's ``sandbox`` / ``program_budget_s``), plus :data:`ENV_KEYWORDS`.
    An unknown env id is left to the command (it says so itself).

    Raises:
        UsageError: not a JSON object, or an option the env does not take (one line; was a
            ``TypeError`` traceback from ``gym.make``).
    """
    if options is None:
        return
    if not isinstance(options, dict):
        raise UsageError(f"--task-options must be a JSON object, not {type(options).__name__}")
    if env_id not in ENVS and env_id not in PROGRAM_TASKS:
        return
    mode = "code" if env_id in PROGRAM_TASKS else "construction"
    try:
        problem_of(env_id, mode, **{k: v for k, v in options.items() if k not in ENV_KEYWORDS})
    except (ValueError, TypeError) as exc:
        message = " ".join(str(exc).split())
        raise UsageError(message if "--task-options" in message else f"--task-options: {message}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``discoverygym``; returns the exit code.

    A closed standard output (``discoverygym list --json | head -1``) ends the command quietly
    with exit code 141 (128 + SIGPIPE, as the shell shows for a tool the signal ended).
    """
    try:
        code = _main(argv)
        sys.stdout.flush()  # inside the try: a reader gone before the last buffered write
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's own flush at exit writes nowhere
        os.close(devnull)
        return 141


def _main(argv: Sequence[str] | None = None) -> int:
    """:func:`main` without the closed-pipe handling."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = argv  # for the exact resume command printed on Ctrl-C / failure
    console = Console()
    _terminate_as_interrupt()
    try:
        if args.command in ("train", "compare"):
            check_task_options(args.env_id, getattr(args, "task_options", None))
        if args.command in SUBCOMMANDS:
            return SUBCOMMANDS[args.command].run(args)
        if args.command == "list":
            return _cmd_list(args, console)
        return _cmd_evaluate(args, console)
    except UsageError as exc:
        print(f"discoverygym: error: {exc}", file=sys.stderr)
        return 2
    except BackendUnavailable as exc:
        if args.command == "evaluate" and args.json:  # keep the promise of one JSON object
            print(json.dumps({"env_id": args.env_id, "valid": None, "score": None,
                              "error": f"unavailable here: {exc}", "unavailable": True}))
        print(f"discoverygym: unavailable here: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
