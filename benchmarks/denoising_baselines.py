"""Baseline table of ScRNADenoising-v0 on the offline datasets (OpenProblems v1 metrics).

For each dataset: no denoising, MAGIC with reversed normalisation, kNN smoothing (our
implementations, run in this process), ``magic-impute`` itself when it is importable (a check of
our MAGIC), and the bundled example program run through the sandbox as the env runs candidates.
Columns: normalised MSE and Poisson (0 = no denoising, 1 = held-out counts), their mean
(OpenProblems' ranking score), TTT-Discover's gate (normalised Poisson >= 0.97) and wall time.

    python benchmarks/denoising_baselines.py [--datasets celltypist-pbmc pbmc68k-reduced] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from rich.console import Console
from rich.table import Table

import discoverygym
from discoverygym.envs.denoising import load_split, make_denoising
from discoverygym.envs.program import ProgramEnv
from discoverygym.rewards import denoising as D

EXAMPLE = os.path.join(os.path.dirname(discoverygym.__file__), "examples", "denoise_diffusion.py")


def _magic_impute(train: np.ndarray, seed: int) -> np.ndarray | None:
    """OpenProblems' ``magic_reverse_norm`` with the real magic-impute package (None when absent)."""
    try:
        import magic
    except ImportError:
        return None
    x = np.sqrt(train)
    lib = x.sum(axis=1)
    y = magic.MAGIC(solver="exact", verbose=False, random_state=seed).fit_transform(x / lib[:, None],
                                                                                   genes="all_genes")
    return np.square(np.asarray(y)) * lib[:, None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["celltypist-pbmc", "pbmc68k-reduced"])
    parser.add_argument("--seed", type=int, default=0, help="split seed (OpenProblems v1: 0)")
    args = parser.parse_args()
    table = Table(title="ScRNADenoising-v0 baselines (OpenProblems v1 protocol)")
    for col in ("dataset", "cells x genes", "method", "MSE norm", "Poisson norm", "mean score", "gate", "wall s"):
        table.add_column(col, justify="left" if col in ("dataset", "method", "gate") else "right")
    loads = []
    for name in args.datasets:
        task = make_denoising(name, seed=args.seed)
        start = time.perf_counter()
        data = load_split(name, args.seed)
        load_s = time.perf_counter() - start
        shape = f"{data.train.shape[0]} x {data.train.shape[1]}"
        rows = task.baseline_table()
        start = time.perf_counter()
        ref = _magic_impute(data.train, 0)
        if ref is not None:
            m, p = D.mse(data.test, ref), D.poisson(data.train, data.test, ref)
            mn, pn = data.baselines.normalise(m, p)
            rows.append({"name": "magic-reversed (magic-impute pkg)", "mse_norm": mn, "poisson_norm": pn,
                         "mean_score": (mn + pn) / 2, "gate": "pass" if pn >= D.POISSON_GATE else "fail",
                         "wall_s": time.perf_counter() - start})
        env = ProgramEnv(task)
        with open(EXAMPLE) as fh:
            state = env.evaluate(fh.read(), seed=0)
        md = state.metadata
        rows.append({"name": "example denoise_diffusion.py (sandbox)", "mse_norm": md.get("mse_norm", np.nan),
                     "poisson_norm": md.get("poisson_norm", np.nan), "mean_score": md.get("mean_score", np.nan),
                     "gate": md.get("gate", "fail") if state.valid else f"fail: {state.error}",
                     "wall_s": md.get("elapsed_s", np.nan)})
        for i, r in enumerate(rows):
            table.add_row(name if i == 0 else "", shape if i == 0 else "", r["name"], f"{r['mse_norm']:.4f}",
                          f"{r['poisson_norm']:.4f}", f"{r['mean_score']:.4f}", r["gate"], f"{r['wall_s']:.2f}")
        loads.append(f"{name}: load + split + baselines {load_s:.1f} s")
    console = Console(width=150)
    console.print(table)
    console.print("; ".join(loads))


if __name__ == "__main__":
    main()
