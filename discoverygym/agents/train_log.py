"""A train run's log beside its checkpoints: TensorBoard events, ``metrics.jsonl``, ``states.jsonl``,
``best.json`` and ``archive.json`` (step 6 of :mod:`~discoverygym.agents.trainer`, less the checkpoint).

:class:`~discoverygym.agents.trainer.Trainer` writes them through one :class:`TrainLog` (the run
directory is the single source of truth for a run); TensorBoard, :mod:`discoverygym.report.collect`,
``compare`` and a resume read them. ``samples.jsonl`` / ``outcomes.json`` belong to
:class:`~discoverygym.outcomes.OutcomeLog`; a rewind truncates ``samples.jsonl`` too.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from discoverygym.agents.checkpoint import truncate_jsonl
from discoverygym.io import atomic_write_json
from discoverygym.outcomes import rewind_counts
from discoverygym.types import State

__all__ = ["ARCHIVE_EVERY_S", "STATES_FILE", "TrainLog"]

#: least seconds between two ``archive.json`` writes while a run goes on (it is written at the end too)
ARCHIVE_EVERY_S = 10.0

#: every judged child of a run, one JSON line each (:meth:`TrainLog.states`; read by the report)
STATES_FILE = "states.jsonl"


class TrainLog:
    """Writes, appends and rewinds a train run's log in ``run_dir`` (which must exist when written).

    Args:
        run_dir: the run directory.
        record: the problem's published record (TensorBoard's ``score/record`` line), or ``None``.
        direction: ``"max"`` or ``"min"`` (:class:`~discoverygym.types.Direction`), for ``score/gap``.
    """

    def __init__(self, run_dir: Path, record: float | None = None, direction: str = "max", llm: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.record, self.direction = record, direction
        self.llm = llm  # False: the LLM-only TensorBoard tags are left out (discoverygym.tensorboard.for_policy)
        self._writer: Any = None  # the TensorBoard writer, opened at the first step this process logs
        self._archive_saved = -math.inf  # time.monotonic() of the last archive.json written

    def step(self, metrics: dict, evaluations: int, image: tuple[Any, float | None] | None = None) -> None:
        """Log one step's metrics (``metrics["step"]``, 1-based) into TensorBoard (the schema shared
        with search and post-train, :mod:`discoverygym.tensorboard`: ``score/best`` with the
        ``score/record`` line, ``reward/*``, the ``beta`` histogram of ``beta/group_*`` + ``beta/mean``,
        ``perf/*``, ``cost/evaluations`` = ``evaluations``; ``image``: ``(picture HxWx3 uint8, title
        score)`` of the best state) and append them to ``metrics.jsonl``.

        Raises:
            ImportError: tensorboardX is not installed.
        """
        from discoverygym.tensorboard import BETA, COST_EVALUATIONS, RunWriter, for_policy

        step = metrics["step"]
        if self._writer is None:
            # on resume it purges events from `step` on (the first step this process logs), which a killed
            # run may have written after its last checkpoint; tensorboardX names event files by the second:
            # a resume within the second of a kill would truncate the killed process's file, so each
            # writer's file name carries its first step (so that TensorBoard, which reads files in name
            # order, reads them in step order) and its pid
            self._writer = RunWriter(self.run_dir, record=self.record, direction=self.direction,
                                     purge_step=step if step > 1 else None,
                                     filename_suffix=f".step{step:09d}.{os.getpid()}")
        writer = self._writer
        writer.scalars(for_policy({tag: value for tag, value in metrics.items() if tag not in ("step", "errors")
                                   and not tag.startswith("beta/group_") and isinstance(value, (int, float))},
                                  self.llm), step)
        writer.scalar(COST_EVALUATIONS, evaluations, step)
        writer.histogram(BETA, [v for t, v in metrics.items() if t.startswith("beta/group_")], step)
        if image is not None:
            writer.image(image[0], step, image[1])
        writer.flush()
        self.metrics(metrics)

    def close(self) -> None:
        """Close the TensorBoard writer (a later :meth:`step` opens a new one)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def states(self, children: Iterable[State], step: int) -> None:
        """Append one line per judged child to ``states.jsonl``: id, parents, score, reward, valid,
        unscored and ``step`` (1-based; no construction), so the report draws states the archive
        later evicted with their judged scores."""
        with open(self.run_dir / STATES_FILE, "a") as fh:
            fh.writelines(json.dumps({"id": c.id, "parents": list(c.parent_ids), "score": c.score, "reward": c.reward,
                                     "valid": c.valid, "unscored": c.unscored, "step": step}) + "\n" for c in children)

    def metrics(self, metrics: dict) -> None:
        """Append a step's metrics (one JSON object) to ``metrics.jsonl``."""
        with open(self.run_dir / "metrics.jsonl", "a") as fh:
            fh.write(json.dumps(metrics) + "\n")

    def best(self, env_id: str, best: State, initial: State, step: int, sota: dict) -> None:
        """Write ``best.json`` atomically: the best state (as ``state``, ``construction`` and
        ``program``), its score and reward, the step, the published record ``sota`` and the
        initial state's score."""
        data = {"env_id": env_id, "score": best.score, "reward": best.reward, "step": step, "sota": dict(sota),
                "initial_score": initial.score, "state": best.to_dict(), "construction": best.solution,
                "program": best.code}
        atomic_write_json(self.run_dir / "best.json", data, fsync=False)

    def archive(self, archive: Any, every_s: float = ARCHIVE_EVERY_S) -> None:
        """Save the reuse archive (``archive.save(path)``) to ``archive.json`` when at least
        ``every_s`` seconds passed since the last save (always on the first call; ``every_s=0``:
        now), so a report of a running run shows its states so far."""
        if time.monotonic() - self._archive_saved >= every_s:
            archive.save(self.run_dir / "archive.json")
            self._archive_saved = time.monotonic()

    def rewind(self, history: list[dict], step: int) -> None:
        """Drop what a killed run logged after its checkpoint at ``step`` (``0``: none): rewrite
        ``metrics.jsonl`` from the checkpoint's ``history``, cut ``samples.jsonl`` and
        ``states.jsonl`` after ``step`` and set ``outcomes.json`` back to the counts of the
        checkpoint's last metrics row (the resumed run logs those steps again)."""
        (self.run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in history))
        truncate_jsonl(self.run_dir / "samples.jsonl", step)
        rewind_counts(self.run_dir, history[-1] if history else None)  # outcomes.json as at the checkpoint
        truncate_jsonl(self.run_dir / STATES_FILE, step)
