"""Run directories: the one check "is this directory free for a new run, or resumable", and ``config.json``.

Every run engine (``train``: :class:`~discoverygym.agents.trainer.Trainer`; ``search``:
:class:`~discoverygym.search.runlog.RunLog`; ``post-train``: :func:`~discoverygym.agents.irft.loop.check_run_dir`)
asks :func:`check_run_dir` before it writes anything. A directory's kind is what
:func:`~discoverygym.io.run_kind` reads from its :data:`CONFIG_FILE`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from discoverygym.io import CONFIG_FILE, file_in_the_way, read_input_text, run_kind

__all__ = ["CONFIG_FILE", "RunDirOccupied", "RunDirRefused", "check_run_dir"]

#: how a refusal names the run a directory already holds.
_HOLDS = {
    "search": "a search run (discoverygym search)",
    "train": "a train run (discoverygym train)",
    "post-train": "a post-train run (discoverygym post-train)",
}


class RunDirRefused(ValueError):
    """A run directory cannot be used for what was asked (the message says why, in one line)."""


class RunDirOccupied(RunDirRefused):
    """A new run was asked for in a directory that already holds a run of the same kind."""


def check_run_dir(run_dir: str | os.PathLike, kind: str, resume: bool,
                  occupied: Callable[[Path], bool] | None = None) -> dict | None:
    """Check that ``run_dir`` is free for a new ``kind`` run, or holds one to resume; nothing is written.

    Args:
        run_dir: the directory (it need not exist for a new run).
        kind: ``"train"``, ``"search"`` or ``"post-train"``.
        resume: continue the run in ``run_dir`` (``True``) or start a new one.
        occupied: (new runs) whether the directory holds a run of ``kind`` that a new one would
            overwrite; default: its kind is ``kind``. A caller that passes it also accepts a
            directory whose ``config.json`` is of no known kind (train overwrites one that never
            reached its first checkpoint).

    Returns:
        With ``resume``, the stored ``config.json`` (a dict as written); else ``None``.

    Raises:
        RunDirRefused (a ValueError): the path or a parent is a file; ``resume`` of a directory
            that does not exist, holds no run, holds a log but no ``config.json``, holds another
            kind of run, or whose ``config.json`` cannot be read; a new run in a directory that
            holds another kind of run.
        RunDirOccupied (a RunDirRefused): a new run in a directory that holds a ``kind`` run.
    """
    d = Path(run_dir)
    blocker = file_in_the_way(d)
    if blocker == d:
        raise RunDirRefused(f"{d} exists and is not a directory")
    if blocker is not None:
        raise RunDirRefused(f"{blocker} exists and is not a directory (it cannot hold the run directory {d})")
    found = run_kind(d)
    holds = _HOLDS.get(found or "", f"a {CONFIG_FILE} that is not a {kind} configuration")
    if resume:
        if not d.is_dir():
            raise RunDirRefused(f"cannot resume {d}: no such run directory (it holds no {kind} run); "
                                "start a new run without --resume")
        if found is None:
            raise RunDirRefused(f"cannot resume {d}: it holds no run (no {CONFIG_FILE}); start a new run without --resume")
        if found != kind:
            raise RunDirRefused(f"cannot resume {d}: it holds {holds}, not a {kind} run")
        path = d / CONFIG_FILE
        if not os.path.lexists(path):
            raise RunDirRefused(f"cannot resume {d}: it has a log but no {CONFIG_FILE}; start a new run without --resume")
        try:
            return json.loads(read_input_text(path))
        except (OSError, ValueError, RecursionError) as exc:
            raise RunDirRefused(f"cannot resume {d}: unreadable {CONFIG_FILE} ({exc})") from None
    if found not in (None, kind) and not (found == "other" and occupied is not None):
        raise RunDirRefused(f"{d} holds {holds}; choose another run directory for a {kind} run")
    if occupied(d) if occupied is not None else found == kind:
        raise RunDirOccupied(f"{d} already holds a run ({kind}): pass --resume (resume=True) or choose another "
                             "run directory")
    return None
