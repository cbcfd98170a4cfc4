"""What a finished training run achieved, against its start and the published record (``train --json``).

One function, :func:`train_summary`, so that the command line only prints: ``discoverygym train``'s
table and its ``--json`` object are both this dict. Scores are compared through
:class:`~discoverygym.types.Direction` (the problem's ``"min"`` / ``"max"``), never by the raw string.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from discoverygym.types import Direction

__all__ = ["train_summary"]


def train_summary(config: Any, result: Any, problem: Any, run_dir: Path) -> dict[str, Any]:
    """The summary of a finished run of ``config`` (a :class:`~discoverygym.agents.config.TrainConfig`).

    Args:
        config: the run's configuration; result: its :class:`~discoverygym.agents.trainer.TrainResult`;
        problem: the env's problem (``sota``, ``direction``); run_dir: the run directory.

    Returns:
        ``env_id``, ``config``, ``policy``, ``steps``, ``elapsed_s``, ``initial_score``, ``best_score``
        (``None`` when no valid state), ``record`` and ``record_source``, ``gap_to_record``
        (:meth:`Direction.gap <discoverygym.types.Direction.gap>` convention: the judgment's gap, from
        the certified value where there is a certifier, else the float64 score's; ``None`` without a
        record or for a proxy score), ``beats_record`` (a new record: :func:`discoverygym.rewards.certify.state.judge_state`, the
        judgment ``certify`` gives for ``best.json``; a run started from the record itself ties with it,
        and one started from a construction that already beats it says so), ``verdict`` (that judgment in words),
        ``proxy`` (the best state's ``metadata["proxy"]``: a CPU-timing proxy score of a kernel env,
        never compared with a GPU record), ``improved``, ``run_dir``, ``best_file``.
    """
    from discoverygym.rewards.certify.state import judge_state

    record = problem.sota.get("value")
    has_record = isinstance(record, (int, float)) and math.isfinite(record)
    sense = Direction(problem.direction)
    best = result.best.score if result.best.valid else None
    start = result.initial.score
    proxy = result.best.metadata.get("proxy") if result.best.valid else None
    improved = bool(best is not None and (start is None or sense.better(best, start)))
    verdict = judge_state(config.env_id, problem, result.best if result.best.valid else None)
    return {
        "env_id": config.env_id, "config": config.name, "policy": config.policy, "steps": result.steps,
        "elapsed_s": result.elapsed_s, "initial_score": start, "best_score": best, "record": record,
        "record_source": problem.sota.get("source"),
        # the judgment's gap where it has one (the certified value; a tolerance-valid packing's strict
        # lower bound), so the gap never says "beaten" where the verdict says "no"
        "gap_to_record": (verdict.gap if verdict.gap is not None and verdict.outcome != "none" else sense.gap(best, record))
        if best is not None and has_record and not proxy else None,
        "beats_record": verdict.is_record, "verdict": verdict.text(),
        "proxy": proxy,
        "improved": improved, "run_dir": str(run_dir), "best_file": str(Path(run_dir) / "best.json"),
    }
