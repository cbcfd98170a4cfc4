"""Store a run's best construction as a record file, after verifying it again with the env.

    python benchmarks/store_record.py RUN_DIR --command "discoverygym train ..." \
        --out benchmarks/results/records/NAME.json

Reads ``RUN_DIR/best.json`` (written by ``discoverygym train`` and ``search``), re-scores the
construction with the env's verifier (``env.unwrapped.evaluate``; the run's own score is not
trusted), and writes ``{"env_id", "value", "construction", "command", "commit", "run": {...},
"record": {...}}``. The file is an ``--init`` file (it has a ``construction`` key) and
``discoverygym evaluate ENV FILE`` scores it. Exits 1 when the construction is invalid or its
verified score differs from the run's by more than 1e-12.

It then certifies the stored file in exact arithmetic (``discoverygym certify``) and writes the
certificate to ``certificates/NAME.cert.json`` beside it, with the one verdict of
:mod:`discoverygym.judgment` against the best known value of ``discoverygym.records``; ``record`` in the file is that table's entry, not the run's copy.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

import discoverygym  # noqa: F401  (registers the envs)
from discoverygym.io import atomic_write_json, json_lines
from discoverygym.records import RECORDS, sota
from discoverygym.rewards.certify import certify, read_exact_json


def write_best(run_dir: Path, env_id: str, construction, score: float, initial: float, operator: str) -> Path:
    """Write ``RUN_DIR/best.json`` in the shape :func:`main` reads (a record attempt's result).

    Args:
        run_dir: the attempt's run directory (exists).
        env_id: the env whose verifier scored ``construction``.
        construction: the best construction (a numpy array or a list; its dtype is kept: ints stay ints).
        score, initial: the verifier's value of the best and of the start construction.
        operator: the move that found it (``state.metadata.operator``).

    Returns:
        the file's path.
    """
    path = Path(run_dir) / "best.json"
    atomic_write_json(path, {"env_id": env_id, "construction": np.asarray(construction).tolist(), "score": score,
                             "initial_score": initial, "sota": sota(env_id),
                             "state": {"metadata": {"operator": operator}}})
    return path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--command", required=True, help="the command that produced the run")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--commit", help="the commit that produced the run (default: this checkout's HEAD)")
    args = p.parse_args()
    best = json.loads((args.run_dir / "best.json").read_text())
    env = gym.make(best["env_id"])
    state = env.unwrapped.evaluate(best["construction"])
    if not state.valid or abs(state.score - best["score"]) > 1e-12:
        print(f"not stored: verified {state.score!r} ({state.error}) against the run's {best['score']!r}")
        return 1
    config = json.loads((args.run_dir / "config.json").read_text())
    metrics = json_lines((args.run_dir / "metrics.jsonl").read_text())
    commit = args.commit or subprocess.run(["git", "rev-parse", "HEAD"], check=False, capture_output=True, text=True,
                                           cwd=Path(__file__).parent).stdout.strip()
    atomic_write_json(args.out, {
        "env_id": best["env_id"], "value": state.score, "construction": best["construction"],
        "command": args.command, "commit": commit,
        "run": {"start_value": best.get("initial_score"), "steps": len(metrics),
                "wall_s": round(sum(m.get("perf/step_time_s", 0.0) for m in metrics)
                                or max((m.get("wall_s", 0.0) for m in metrics), default=0.0), 1),
                "operator": (best.get("state") or {}).get("metadata", {}).get("operator"),
                "config": config},
        "record": {"value": RECORDS[best["env_id"]].record.value, "source": RECORDS[best["env_id"]].record.source,
                   "date": RECORDS[best["env_id"]].record.date},
    })
    cert = certify(best["env_id"], read_exact_json(args.out), source=str(args.out))
    cert_path = args.out.parent / "certificates" / f"{args.out.stem}.cert.json"
    atomic_write_json(cert_path, cert)
    print(f"stored {args.out}: {best['env_id']} {state.score!r}; certified {cert['value']}: "
          f"{cert['verdict']['text']} (a new record: {'yes' if cert['beats_record'] else 'no'}); "
          f"certificate {cert_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
