"""Checkpoints of a training run: ``run_dir/checkpoints/step_NNNNNN/`` and ``latest.json``.

A checkpoint holds the learner (``learner/``), the reuse wrapper's archive and rule statistics, and
``trainer.json`` (step, the trainer's generator state, best and initial states, the metric history),
so that a resumed run continues exactly where the killed one stopped. A step directory is written
under a temporary name and moved into place complete (:func:`publish_checkpoint`); ``latest.json``
names the newest one, and :func:`latest_checkpoint` falls back to the highest complete step
directory when that file is missing or torn. What a killed run logged after its last checkpoint
(``metrics.jsonl``, ``samples.jsonl``) is dropped on resume (:func:`truncate_jsonl`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from discoverygym.io import atomic_write_json
from discoverygym.types import State

__all__ = ["Restored", "has_checkpoint", "latest_checkpoint", "load_checkpoint", "publish_checkpoint",
           "read_json", "save_checkpoint", "truncate_jsonl"]


def read_json(path: Path) -> Any:
    """``path`` parsed as JSON; ``ValueError`` naming the file when unreadable, not UTF-8 or too deep."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ValueError(f"{path} is not valid JSON ({type(exc).__name__}: {exc})") from None


def _step_dirs(root: Path) -> list[tuple[int, Path]]:
    """Published ``step_NNNNNN`` directories under ``root`` holding ``trainer.json``, by step."""
    found = []
    for path in root.glob("step_*"):
        digits = path.name[len("step_"):]
        if digits.isdigit() and path.is_dir() and (path / "trainer.json").is_file():
            found.append((int(digits), path))
    return sorted(found)


def latest_checkpoint(root: Path) -> Path | None:
    """The checkpoint directory a resume continues from, or ``None`` when there is none.

    ``root/latest.json`` names it. Where that file is missing or unusable (the disk filled after
    :func:`publish_checkpoint` moved the step directory into place, before ``latest.json`` was
    written), the published ``step_*`` directory of the highest step is used: a step directory
    is only ever moved into place complete.

    Args:
        root: the run's ``checkpoints`` directory.

    Raises:
        ValueError: ``latest.json`` exists but is unusable (not UTF-8, not JSON, wrong shape, or
            naming a missing directory) and no complete step directory exists; the message names
            the file.
    """
    latest = root / "latest.json"
    problem = None
    if latest.exists():
        try:
            data = read_json(latest)
            name = data["dir"] if isinstance(data, dict) else None
            if not isinstance(name, str) or "/" in name or not (root / name / "trainer.json").is_file():
                raise ValueError(f"{latest} does not name a checkpoint directory of {root} (got {data!r:.200})")
            return root / name
        except ValueError as exc:
            problem = str(exc)
    steps = _step_dirs(root)
    if steps:
        return steps[-1][1]
    if problem is not None:
        raise ValueError(f"{problem}; no complete step directory to resume from either")
    return None


def has_checkpoint(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a train checkpoint (``latest.json`` or a published step directory)."""
    root = Path(run_dir) / "checkpoints"
    return (root / "latest.json").exists() or bool(_step_dirs(root))


def truncate_jsonl(path: Path, step: int) -> None:
    """Drop records of ``path`` (JSON lines with a ``step`` field) after ``step``, and a torn last line.

    Records carry the 1-based step of their metrics, so a checkpoint after ``step`` steps keeps
    records with ``record["step"] <= step``. The file is replaced atomically; a missing file is
    left missing.
    """
    if not path.exists():
        return
    kept, changed = [], False
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                keep = line.endswith("\n") and int(json.loads(line)["step"]) <= step
            except (ValueError, TypeError, KeyError, IndexError, RecursionError):
                keep = False
            if keep:
                kept.append(line)
            else:
                changed = True
    if changed:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(kept), encoding="utf-8")
        os.replace(tmp, path)


def publish_checkpoint(root: Path, tmp: Path, name: str, step: int) -> None:
    """Make the finished checkpoint directory ``tmp`` the latest one, atomically.

    Moves ``tmp`` to ``root/name``, points ``root/latest.json`` at it, then removes older
    ``step_*`` directories, so a kill at any moment leaves ``latest.json`` naming a complete one.
    """
    shutil.rmtree(root / name, ignore_errors=True)
    os.replace(tmp, root / name)
    atomic_write_json(root / "latest.json", {"step": step, "dir": name})
    for old in root.glob("step_*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)



class Restored(NamedTuple):
    """The loop's state read back from ``trainer.json`` (:func:`load_checkpoint`)."""

    step: int
    best: State
    initial: State
    history: list[dict]


def save_checkpoint(run_dir: Path, learner: Any, reuse: Any, *, step: int, rng: np.random.Generator, best: State,
                    initial: State, history: list[dict]) -> None:
    """``run_dir/checkpoints/step_NNNNNN/`` (the learner, the reuse wrapper's archive and rule statistics,
    ``trainer.json``: step, generator state, best and initial states, metric history), then
    ``checkpoints/latest.json`` atomically; older step directories are removed."""
    root = run_dir / "checkpoints"
    name = f"step_{step:06d}"
    tmp = root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    learner.save_checkpoint(tmp / "learner")
    reuse.save(tmp)
    atomic_write_json(tmp / "trainer.json", {
        "step": step, "rng": rng.bit_generator.state, "best": best.to_dict(), "initial": initial.to_dict(),
        "history": history,
    })
    publish_checkpoint(root, tmp, name, step)


def load_checkpoint(where: Path, learner: Any, sampler: Any, reuse: Any, rng: np.random.Generator) -> Restored:
    """Restore the checkpoint directory ``where`` into the learner (and a separate sampler's adapter),
    the reuse wrapper and ``rng`` (in place); returns the rest of the loop's state.

    Raises:
        ValueError: ``trainer.json`` is unreadable or not a trainer checkpoint (the message names it).
    """
    learner.load_checkpoint(where / "learner")
    if sampler is not learner:
        sampler.load_adapter(where / "learner" / "adapter", name=f"resume-{where.name}")
    reuse.load(where)
    path = where / "trainer.json"
    data = read_json(path)
    try:
        restored = Restored(int(data["step"]), State.from_dict(data["best"]), State.from_dict(data["initial"]),
                            list(data["history"]))
        rng.bit_generator.state = data["rng"]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{path} is not a trainer checkpoint ({type(exc).__name__}: {exc}); "
                         "the run cannot be resumed from it") from None
    return restored
