"""Checkpoints of a training run: ``run_dir/checkpoints/step_NNNNNN/`` and ``latest.json``.

A checkpoint holds the learner (``learner/``), the reuse wrapper's archive and rule statistics, and
``trainer.json`` (step, the trainer's generator state, best and initial states, the metric history),
so that a resumed run continues exactly where the killed one stopped. A step directory is written
under a temporary name and moved into place complete (:func:`publish_checkpoint`); ``latest.json``
names the newest one, and :func:`latest_checkpoint` falls back to the highest complete step
directory when that file is missing or torn. What a killed run logged after its last checkpoint
(``metrics.jsonl``, ``samples.jsonl``) is dropped on resume (:func:`truncate_jsonl`).

A checkpoint is not trusted (issue 40): before the loop continues, every state that can become the
best or be picked from the archive (the best and initial states of ``trainer.json``, every state
of ``archive.json``, the open batch and start of ``reuse.json``) is judged again
(:func:`verify_checkpoint`, with :func:`~discoverygym.search.runlog.verify_states`, the search
resume's check): constructions by the problem's verifier, the best program of a program task by
running it once more through the env. A mismatch is an error naming the file and key.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from discoverygym.io import MAX_RUN_FILE_BYTES, atomic_write_json, read_input_bytes
from discoverygym.search.runlog import LogRejected, Verified, verify_states
from discoverygym.types import State

__all__ = ["Restored", "checked_best", "has_checkpoint", "latest_checkpoint", "load_checkpoint", "publish_checkpoint",
           "read_json", "save_checkpoint", "truncate_jsonl", "verify_checkpoint"]


def read_json(path: Path) -> Any:
    """``path`` parsed as JSON; ``ValueError`` naming the file when unreadable (not a regular file within
    :data:`~discoverygym.io.MAX_RUN_FILE_BYTES` included), not UTF-8 or too deep."""
    data = read_input_bytes(path, MAX_RUN_FILE_BYTES)  # opened once, checked on the descriptor
    try:
        return json.loads(data.decode("utf-8"))
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


def load_checkpoint(where: Path, learner: Any, sampler: Any, reuse: Any, rng: np.random.Generator, *,
                    fresh_initial: State | None = None) -> Restored:
    """Restore the checkpoint directory ``where`` into the learner (and a separate sampler's adapter),
    the reuse wrapper and ``rng`` (in place), after judging its states again (:func:`verify_checkpoint`);
    returns the rest of the loop's state.

    Args:
        where: a ``checkpoints/step_NNNNNN`` directory.
        learner, sampler: the trainer's learner and sampler (the same object for numeric policies).
        reuse: the trainer's reuse wrapper (:class:`~discoverygym.search.reuse.ReuseWrapper`); its
            env judges the restored states.
        rng: the trainer's generator, restored in place.
        fresh_initial: the initial state this process has just judged (the seeded reset), used
            instead of running the initial program again.

    Raises:
        ValueError: ``trainer.json`` is unreadable or not a trainer checkpoint, or a restored state
            its problem judges otherwise (the message names the file and key).
    """
    path = where / "trainer.json"
    data = read_json(path)
    try:
        restored = Restored(int(data["step"]), State.from_dict(data["best"]), State.from_dict(data["initial"]),
                            list(data["history"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{path} is not a trainer checkpoint ({type(exc).__name__}: {exc}); "
                         "the run cannot be resumed from it") from None
    reuse.load(where)  # archive.json, reuse.json: each opened once and checked on the descriptor
    verify_checkpoint(where, restored, reuse, fresh_initial=fresh_initial)
    restored = restored._replace(best=checked_best(path, restored, fresh_initial))
    try:
        rng.bit_generator.state = data["rng"]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{path} is not a trainer checkpoint ({type(exc).__name__}: {exc}); "
                         "the run cannot be resumed from it") from None
    learner.load_checkpoint(where / "learner")
    if sampler is not learner:
        sampler.load_adapter(where / "learner" / "adapter", name=f"resume-{where.name}")
    return restored


def checked_best(path: Path, restored: Restored, fresh_initial: State | None = None) -> State:
    """The best state a resumed run may report: ``restored.best`` when it is valid and scored (it has
    passed :func:`verify_checkpoint`), else the run's initial state.

    A run's best is a valid state or, while nothing valid was found, its start state
    (:class:`~discoverygym.agents.trainer.Trainer`): an invalid or unscored ``best`` is accepted only
    as that start state (same id), and is then replaced by the freshly judged initial state
    (``fresh_initial``, else ``restored.initial``), so that its logged reward is never trusted.

    Args:
        path: the checkpoint's ``trainer.json`` (named in the message).
        restored: what it holds (:class:`Restored`).
        fresh_initial: the initial state this process judged, or ``None``.

    Raises:
        LogRejected: (a ``ValueError``) an invalid or unscored ``best`` that is not the initial state.
    """
    best = restored.best
    if best.valid and not best.metadata.get("unscored"):
        return best
    initial = fresh_initial if fresh_initial is not None else restored.initial
    if best.id == initial.id:
        return initial
    marked = "unscored" if best.valid else "invalid"
    raise LogRejected(f"{path}: best: logged state {best.id!r} is marked {marked} (score {best.score!r}, reward "
                      f"{best.reward!r}), but a run's best is a valid state or its initial state; the log was "
                      "altered and cannot be resumed")


def verify_checkpoint(where: Path, restored: Restored, reuse: Any, *, fresh_initial: State | None = None) -> Verified:
    """Judge a checkpoint's states again before a train run resumes from them.

    The states judged, each named by file and key in messages: ``trainer.json`` ``best`` and
    ``initial``; ``archive.json`` ``states[i]``; ``reuse.json`` ``inspirations[i]``,
    ``batch_starts[i]``, ``batch_children[i]`` and ``start`` (as :meth:`ReuseWrapper.load` read
    them into ``reuse``). Constructions are scored by the problem's verifier; the best program
    state(s) of a program task run once more through ``reuse``'s env with the program seed the
    rollout logged (``metadata["program_seed"]``; seed 0 for a checkpoint written before it was
    logged), the initial one compared with ``fresh_initial`` when given
    (:func:`~discoverygym.search.runlog.verify_states` says what must match and what is skipped).

    Args:
        where: the checkpoint directory.
        restored: what ``trainer.json`` holds (:class:`Restored`).
        reuse: the reuse wrapper, already loaded from ``where``; ``reuse.unwrapped`` is the env.
        fresh_initial: the initial state this process judged, or ``None``.

    Returns:
        :class:`~discoverygym.search.runlog.Verified` (what it skipped is also said in a warning).

    Raises:
        ValueError: ``"<file>: <key>: logged state ..."`` with the logged and recomputed values.
    """
    env = getattr(reuse, "unwrapped", None)
    problem = getattr(env, "problem", None)
    if problem is None:
        return Verified(skipped="the reuse wrapper has no env with a problem to judge with")
    trainer, archive, rule = where / "trainer.json", where / "archive.json", where / "reuse.json"
    located: list[tuple[str, State]] = [(f"{trainer}: best", restored.best), (f"{trainer}: initial", restored.initial)]
    located += [(f"{archive}: states[{i}]", s) for i, s in enumerate(getattr(reuse, "archive", ()))]
    for key in ("inspirations", "_batch_starts", "_batch_children"):
        located += [(f"{rule}: {key.lstrip('_')}[{i}]", s) for i, s in enumerate(getattr(reuse, key, ()) or ())]
    if getattr(reuse, "_start", None) is not None:
        located.append((f"{rule}: start", reuse._start))

    def rerun(state: State) -> State | None:
        if (fresh_initial is not None and state.id == fresh_initial.id and state.code == fresh_initial.code
                and "program_seed" not in state.metadata):
            return fresh_initial
        seed = state.metadata.get("program_seed", 0)
        return env.evaluate(state.code, seed=int(seed) if isinstance(seed, int) else 0, id=state.id,
                            parent_ids=tuple(state.parent_ids))

    checked = verify_states(problem, located, rerun=rerun if hasattr(env, "evaluate") else None)
    if checked.skipped:
        warnings.warn(f"{where}: {checked.skipped}", stacklevel=2)
    return checked
