"""R² of each ScalingLaw-*-v0 task's human law (its initial program) on the fit, validation, train and test splits.

Runs every initial program through the env exactly as a candidate is judged (three sandboxed calls:
fit on the fit split, fit on train, predict) and prints one row per task: the parameter count
against the cap, R² on the points each parameter set was fitted on (fit, train), on the validation
split (parameters from the fit split: the default reward) and on SLDBench's test split
(parameters from train: SLDBench's number), and the sandbox time.

    python benchmarks/scaling_laws.py
    python benchmarks/scaling_laws.py --ids ScalingLaw-Vocab-v0 ScalingLaw-MoE-v0
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
from rich.console import Console
from rich.table import Table

import discoverygym  # noqa: F401 - registers the ids
from discoverygym.envs.scaling_laws import ENV_IDS


def main(argv: list[str] | None = None) -> int:
    """Print the human-law table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", nargs="*", default=list(ENV_IDS), help="env ids (default: all six)")
    parser.add_argument("--allow-unconfined", action="store_true", help="score without bubblewrap")
    args = parser.parse_args(argv)
    table = Table(title="Human scaling laws (initial programs): R² per split")
    for col in ("env id", "params / cap", "groups", "R² fit", "R² validation", "R² train", "R² test", "sandbox s"):
        table.add_column(col, justify="left" if col == "env id" else "right")
    for env_id in args.ids:
        start = time.perf_counter()
        env = gym.make(env_id, allow_unconfined=args.allow_unconfined)
        _, info = env.reset(seed=0)
        m, meta = info["metrics"], info["state"].metadata
        table.add_row(env_id, f"{m['n_params']} / {m['cap']}", str(m["groups"]),
                      *(f"{m[f'r2_{s}']:.4f}" for s in ("fit", "validation", "train", "test")),
                      f"{meta.get('sandbox_s', time.perf_counter() - start):.1f}")
    Console(width=150).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
