"""What every ``discoverygym`` sub-command shares: the usage error, construction files, one-line messages.

Exit-code convention (every sub-command): 2 for a :class:`~discoverygym.errors.UsageError` (the one
usage error, re-exported here), 3 for a missing backend.
The kind of a run directory is read by one function, :func:`discoverygym.io.run_kind` (re-exported).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from discoverygym.errors import UsageError
from discoverygym.io import read_input_text, run_kind

__all__ = ["UsageError", "check_env", "check_policy_fits", "console_text", "json_value", "load_construction", "load_init", "one_line", "resume_command",
           "run_kind", "seed_value", "standalone_main"]


def console_text(text: object) -> str:
    """``text`` (from a user's file, a program's error, a file name) for a rich table cell: control
    characters other than newline and tab as ``\\xNN`` escapes, so the text cannot move the cursor,
    clear the screen or restyle the terminal (an ESC sequence rewriting a verdict), and ``[...]`` as
    text, never rich markup (``[/]`` raised a MarkupError)."""
    from rich.markup import escape

    s = str(text)
    if not s.isprintable():
        s = "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii") for c in s)
    return escape(s)


def one_line(exc: BaseException) -> str:
    """``exc`` as one terminal line (an ``OSError`` without its ``[Errno n]`` prefix, whitespace folded)."""
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror + (f": {exc.filename}" if exc.filename else "")
    else:
        text = str(exc)
    return " ".join(text.split())


def check_env(env_id: str) -> None:
    """Refuse an env id that is not registered: the one unknown-env error
    (:func:`~discoverygym.envs.registry.find_env`, close ids suggested) as a usage error (exit 2)."""
    from discoverygym.envs.registry import find_env

    try:
        find_env(env_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def standalone_main(add_parser: Callable[[argparse._SubParsersAction], None],
                    run: Callable[[argparse.Namespace], int], argv: list[str] | None = None) -> int:
    """A sub-command run on its own (``python -m discoverygym.cli.train train ENV_ID ...``): a
    ``discoverygym`` parser with that one sub-command (``add_parser``), ``argv`` (default ``sys.argv``)
    parsed and kept as ``args.argv`` for the resume command, then ``run(args)``'s exit code."""
    parser = argparse.ArgumentParser(prog="discoverygym")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = argv
    return run(args)


def resume_command(args: argparse.Namespace, fallback: list[str]) -> str:
    """The exact shell command that resumes the interrupted or failed run of ``args``.

    It is the original command line (``args.argv``, set by :func:`discoverygym.cli.main` and the
    standalone entries) with ``--resume`` added unless already there, quoted with :func:`shlex.join`
    so that it can be pasted back as is. Without ``args.argv`` (a namespace built by hand) it is
    ``fallback`` (the sub-command's arguments without the program name) with ``--resume``.
    """
    argv = getattr(args, "argv", None)
    words = list(argv) if argv is not None else list(fallback)
    if "--resume" not in words:
        words.append("--resume")
    return shlex.join(["discoverygym", *words])


def seed_value(text: str) -> int:
    """argparse type of ``--seed``: an integer >= 0 (numpy and Gymnasium refuse negative seeds).

    Raises:
        argparse.ArgumentTypeError: not an integer, or negative (argparse exits with code 2).
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a seed must be an integer >= 0, got {value}")
    return value


def json_value(text: str) -> Any:
    """argparse type of the JSON options (``--policy-kwargs``, ``--task-options``...): parsed JSON.

    Raises:
        argparse.ArgumentTypeError: invalid JSON, or nested too deeply to parse (argparse exits
            with code 2 instead of a ``RecursionError`` traceback).
    """
    try:
        return json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid JSON ({exc})") from None
    except RecursionError:
        raise argparse.ArgumentTypeError("invalid JSON (nested too deeply)") from None


def load_construction(path: Path, env_id: str | None = None) -> Any:
    """Read a construction from JSON: a bare construction, an object with a ``construction`` key
    (a construction file, ``train``'s ``best.json``) or a ``search`` run's ``best.json`` (``state.solution``,
    as :func:`discoverygym.rewards.certify.construction_of` reads it).

    With ``env_id``, a run's file that names another env (its ``env_id`` key) is refused, as
    ``certify`` refuses it.

    Returns:
        The construction as plain JSON data (lists of numbers).

    Raises:
        UsageError: not a regular file within the input size limit (a FIFO, a device, a directory or
            a larger file: :func:`~discoverygym.io.check_input_file`, checked before anything reads
            it), unreadable file, invalid JSON (or nested too deeply to parse), an object
            without ``construction``, or a result of another env.
    """
    try:  # opened once and checked on the descriptor, then read (issue 52, #8)
        text = read_input_text(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise UsageError(f"{path} is nested too deeply to be a construction") from None
    except ValueError as exc:  # an integer beyond Python's 4,300-digit limit (issue 52, #9)
        raise UsageError(f"{path}: a number too long to read ({str(exc).split(':')[0]}; JSON integers of at most "
                         "4300 digits)") from None
    if isinstance(data, dict):
        named = data.get("env_id")
        if env_id is not None and isinstance(named, str) and named != env_id:
            raise UsageError(f"{path} is a result of {named}, not {env_id}")
        if "construction" in data:  # a construction file, train's best.json
            return data["construction"]
        state = data.get("state")
        if isinstance(state, dict) and state.get("solution") is not None:  # search's best.json, as certify reads it
            return state["solution"]
        raise UsageError(f"{path} holds a JSON object without a 'construction' key (nor a run's best.json "
                         "'state'.'solution')")
    return data


def load_init(path: str | os.PathLike, env_id: str, env_kwargs: dict | None = None) -> Any:
    """The ``--init FILE`` construction of ``train``, ``compare`` and ``search``: one loader, one error.

    Read by :func:`load_construction` and judged by the env (``gym.make(env_id, **env_kwargs)``), so
    an unreadable file, a 4,301-digit integer and an invalid construction are all a one-line usage
    error (exit 2) before any run starts, in every command (issue 52, #9).

    Returns:
        The construction as plain JSON data.

    Raises:
        UsageError: a program env (it takes no construction), anything :func:`load_construction`
            refuses, or a construction the env judges invalid (the env's message).
    """
    import gymnasium as gym

    import discoverygym  # noqa: F401  (registers the envs)
    from discoverygym.envs.registry import PROGRAM_TASKS

    if env_id in PROGRAM_TASKS:
        raise UsageError(f"{env_id} takes programs only; --init starts a construction env from a construction "
                         "(`discoverygym list`)")
    construction = load_construction(Path(path), env_id)
    try:
        env = gym.make(env_id, **(env_kwargs or {}))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--init {path}: cannot build {env_id} to judge it ({one_line(exc)})") from None
    try:
        judged = env.unwrapped.evaluate(construction)
    finally:
        env.close()
    if not judged.valid:
        raise UsageError(f"--init {path}: not a valid construction: {judged.error}")
    return construction


def check_policy_fits(policy: str, env_id: str) -> None:
    """Refuse the Gaussian policy (real-valued moves) on an env whose constructions are integers.

    On Hadamard-29 / SumDifference every child of a real-valued move is invalid, so ``train``,
    ``compare`` and ``search`` refuse it up front instead of running on failures.

    Raises:
        ValueError: ``policy == "gaussian"`` and ``env_id``'s initial construction is integer-valued.
    """
    import numpy as np

    from discoverygym.envs.registry import ENVS

    if policy != "gaussian" or env_id not in ENVS:
        return
    initial = np.asarray(ENVS[env_id].initial(np.random.default_rng(0)))
    if initial.dtype.kind in "iu":
        raise ValueError(
            f"policy 'gaussian' moves constructions by real amounts, but {env_id} has integer "
            "constructions (every child would be invalid); use `discoverygym search --policy mutation` there"
        )
