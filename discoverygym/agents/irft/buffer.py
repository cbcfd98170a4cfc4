"""The IRFT replay buffer: every (prompt → completion) node generated during search, one JSON line each.

File: ``<run_dir>/buffer.jsonl`` (JSON Lines, UTF-8, one object per line). It is rewritten atomically
(temporary file + ``os.replace``) whenever rows are added or credit is assigned, so a reader never
sees a partial file and a killed run never leaves a torn line.

Columns (every row has every key; ``null`` where stated):

============================  ========  =====================================================
column                        type      meaning
============================  ========  =====================================================
``problem``                   str       training env id, e.g. ``"ErdosMinOverlap-v0"``
``round``                     int       IRFT round that generated the node (0-based)
``trajectory``                int       search trajectory index c (0-based)
``step``                      int       committed step l of that trajectory (0-based)
``k``                         int       candidate index within the step's K samples
``node_id``                   str       the search state id (``"c{c}-l{l}-k{k}"``)
``parent_ids``                list[str] ids of the states shown in the prompt (Φ's choice)
``prompt``                    str       the exact text the generator was conditioned on
``completion``                str       the exact text the generator produced
``prompt_ids``                list[int] the prompt's token ids as sampled; ``null`` if unknown
``completion_ids``            list[int] the completion's token ids; ``null`` if unknown
``completion_mask``           list[bool] per completion token: sampled (true) or forced (false,
                                        e.g. "answer now" text); ``null`` if unknown
``valid``                     bool      the verifier accepted the candidate
``score``                     float     the problem's own number; ``null`` when invalid
``reward``                    float     env reward (higher is better; failure reward if invalid)
``traj_best_reward``          float     best reward over the trajectory's evaluated nodes
``traj_best_score``           float     score of that best node; ``null`` if none was valid
``weight``                    float     credit of the latest credit stage; ``null`` before it
``credit_round``              int       round whose credit stage set ``weight``; ``null`` before
``search_seed``               int       seed of the search run that produced the node
``run``                       str       that search run directory, relative to the IRFT run dir
============================  ========  =====================================================

Intermediate rewards (``score``/``reward`` of the node itself) are kept for analysis only; IRFT
credit follows ``traj_best_reward`` (TES Algorithm 2: credit by the trajectory's final best).

Reading it::

    import pandas as pd
    df = pd.read_json("runs/irft/buffer.jsonl", lines=True)

    import datasets
    ds = datasets.load_dataset("json", data_files="runs/irft/buffer.jsonl", split="train")

:meth:`ReplayBuffer.to_parquet` writes the same table as Parquet (needs ``pyarrow``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from discoverygym.io import atomic_write_text
from discoverygym.search.runlog import RunLog

__all__ = ["COLUMNS", "ReplayBuffer", "rows_from_search"]

#: column name -> Python type(s) a value may have (``None`` allowed where documented).
COLUMNS: dict[str, tuple[type, ...]] = {
    "problem": (str,),
    "round": (int,),
    "trajectory": (int,),
    "step": (int,),
    "k": (int,),
    "node_id": (str,),
    "parent_ids": (list,),
    "prompt": (str,),
    "completion": (str,),
    "prompt_ids": (list, type(None)),
    "completion_ids": (list, type(None)),
    "completion_mask": (list, type(None)),
    "valid": (bool,),
    "score": (float, type(None)),
    "reward": (float,),
    "traj_best_reward": (float,),
    "traj_best_score": (float, type(None)),
    "weight": (float, type(None)),
    "credit_round": (int, type(None)),
    "search_seed": (int,),
    "run": (str,),
}


def _finite_or_none(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def check_row(row: dict) -> dict:
    """Return ``row`` with numbers normalised (int/float) after checking it has exactly :data:`COLUMNS`.

    Raises:
        ValueError: a missing or unknown column, or a value of the wrong type (the message names it).
    """
    missing = [c for c in COLUMNS if c not in row]
    extra = [c for c in row if c not in COLUMNS]
    if missing or extra:
        raise ValueError(f"replay-buffer row: missing columns {missing}, unknown columns {extra}")
    out = dict(row)
    for col in ("score", "traj_best_score", "weight"):
        out[col] = _finite_or_none(out[col])
    for col in ("reward", "traj_best_reward"):
        out[col] = float(out[col])
    for name, types in COLUMNS.items():
        value = out[name]
        if float in types and isinstance(value, int) and not isinstance(value, bool):
            value = out[name] = float(value)
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            raise ValueError(f"replay-buffer row: column {name!r} has {value!r}, expected {types}")
    out["parent_ids"] = [str(p) for p in out["parent_ids"]]
    return out


def _atomic_write_lines(path: Path, rows: Iterable[dict]) -> None:
    """Write JSON lines to ``path`` atomically (:func:`discoverygym.io.atomic_write_text`; NaN refused)."""
    atomic_write_text(path, "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows))

class ReplayBuffer:
    """The replay buffer D of IRFT, persisted as ``buffer.jsonl`` (format in the module docstring).

    Args:
        path: the JSONL file (created on the first write).

    Rows are plain dicts with the :data:`COLUMNS`. Adding a round replaces any rows of that round
    already present (so a resumed stage is idempotent); assigning weights rewrites every row.
    """

    FILE = "buffer.jsonl"

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def rows(self) -> list[dict]:
        """All rows in file order (an empty list before the first write).

        Raises:
            ValueError: a line is not valid JSON (the file was edited or corrupted).
        """
        if not self.path.exists():
            return []
        out = []
        with open(self.path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        out.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"{self.path}:{lineno} is not valid JSON ({exc})") from None
        return out

    def __len__(self) -> int:
        return len(self.rows())

    def add_round(self, round_index: int, rows: Sequence[dict]) -> None:
        """Store ``rows`` as the nodes of round ``round_index`` (replacing rows of that round).

        Raises:
            ValueError: a row that does not match :data:`COLUMNS` or belongs to another round.
        """
        new = [check_row(r) for r in rows]
        bad = [r["node_id"] for r in new if r["round"] != round_index]
        if bad:
            raise ValueError(f"rows {bad[:3]} do not belong to round {round_index}")
        kept = [r for r in self.rows() if r["round"] != round_index]
        _atomic_write_lines(self.path, kept + new)

    def set_weights(self, weights: Sequence[float], credit_round: int) -> None:
        """Write one weight per row (file order) and ``credit_round`` into every row.

        Raises:
            ValueError: ``len(weights)`` differs from the number of rows, or a weight is not finite.
        """
        rows = self.rows()
        if len(weights) != len(rows):
            raise ValueError(f"{len(weights)} weights for {len(rows)} buffer rows")
        for row, w in zip(rows, weights):
            if not math.isfinite(float(w)):
                raise ValueError(f"non-finite weight {w!r} for node {row['node_id']}")
            row["weight"] = float(w)
            row["credit_round"] = int(credit_round)
        _atomic_write_lines(self.path, rows)

    def to_pandas(self) -> Any:
        """The buffer as a ``pandas.DataFrame`` (columns in :data:`COLUMNS` order)."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=list(COLUMNS))

    def to_parquet(self, path: str | os.PathLike) -> Path:
        """Write the buffer as Parquet (needs ``pyarrow``); returns ``Path(path)``."""
        self.to_pandas().to_parquet(path, index=False)
        return Path(path)


def _trajectory_bests(evals: list[dict], failure: dict[int, float]) -> dict[int, tuple[float, float | None]]:
    """Per trajectory: (best reward, its score) over evaluated nodes; the failure reward if none valid."""
    best: dict[int, tuple[float, float | None]] = {}
    for r in evals:
        s = r["state"]
        t = r["traj"]
        if s["valid"] and (t not in best or s["reward"] > best[t][0]):
            best[t] = (float(s["reward"]), _finite_or_none(s["score"]))
    for t, fail in failure.items():
        best.setdefault(t, (float(fail), None))
    return best


def rows_from_search(
    search_dir: str | os.PathLike,
    prompts: dict[tuple[int, int, int], dict],
    *,
    problem: str,
    round_index: int,
    run: str,
) -> list[dict]:
    """Buffer rows of one finished search run: each evaluated candidate joined with its prompt.

    Args:
        search_dir: the search run directory (``archive.jsonl`` of
            :class:`~discoverygym.search.evolution.EvolutionarySearch`).
        prompts: ``(trajectory, step, k) -> {prompt, completion, prompt_ids, completion_ids,
            completion_mask}`` recorded while sampling (:func:`~discoverygym.agents.irft.recording.read_prompts`).
        problem: env id stored in ``problem``.
        round_index: stored in ``round``.
        run: stored in ``run`` (path of ``search_dir`` relative to the IRFT run directory).

    Returns:
        Rows in (trajectory, step, k) order, ``weight``/``credit_round`` ``null``.

    Raises:
        ValueError: the run has no ``init`` record, or an evaluated candidate has no recorded prompt.
    """
    log = RunLog(search_dir, create=False)
    records = log.read_records()
    config = log.read_config() or {}
    init = next((r for r in records if r.get("kind") == "init"), None)
    if init is None:
        raise ValueError(f"{search_dir} holds no search (no init record)")
    evals = sorted(
        (r for r in records if r.get("kind") == "eval"), key=lambda r: (r["traj"], r["step"], r["k"])
    )
    # failure reward: an invalid evaluated state carries it; else the initial state's (when invalid)
    fail = next((float(r["state"]["reward"]) for r in evals if not r["state"]["valid"]), None)
    if fail is None:
        fail = float(init["state"]["reward"]) if not init["state"]["valid"] else -math.inf
    bests = _trajectory_bests(evals, {r["traj"]: fail for r in evals})
    rows = []
    for r in evals:
        key = (r["traj"], r["step"], r["k"])
        if key not in prompts:
            raise ValueError(
                f"{search_dir}: no recorded prompt for trajectory {key[0]} step {key[1]} k {key[2]}"
            )
        texts = prompts[key]
        s = r["state"]
        best_reward, best_score = bests[r["traj"]]
        rows.append(
            {
                "problem": problem,
                "round": int(round_index),
                "trajectory": int(r["traj"]),
                "step": int(r["step"]),
                "k": int(r["k"]),
                "node_id": str(s["id"]),
                "parent_ids": list(s.get("parent_ids", [])),
                "prompt": texts["prompt"],
                "completion": texts["completion"],
                "prompt_ids": texts.get("prompt_ids"),
                "completion_ids": texts.get("completion_ids"),
                "completion_mask": texts.get("completion_mask"),
                "valid": bool(s["valid"]),
                "score": _finite_or_none(s["score"]),
                "reward": float(s["reward"]),
                "traj_best_reward": best_reward,
                "traj_best_score": best_score,
                "weight": None,
                "credit_round": None,
                "search_seed": int(config.get("seed", 0)),
                "run": run,
            }
        )
    return rows
