"""Discovery benchmark: TTT-Discover vs its ablations vs scipy / CMA-ES references at one wall budget.

For each env and config, ``--seeds`` runs of ``--budget-s`` seconds (default 300 s, 5 seeds): the
trainer configs ``full`` (TTT-Discover), ``no-training``, ``naive-rl``, ``expected-reward`` (all
with ``discoverygym train``'s defaults: one code path) and the references ``reference``
(``scipy.optimize.basinhopping`` + SLSQP on circles, smoothed-max Adam restarts on step functions)
and ``cma-es`` (the ``cma`` package; ``pip install 'discoverygym[bench]'``). The code is
:mod:`discoverygym.agents.bench` (shared with ``discoverygym compare``).

Writes ``OUT/runs/*.json`` (one per run; an existing one is skipped: resumable), ``OUT/table.md``,
``OUT/summary.json`` and ``OUT/plot.html``, and prints the table. The trainer configs keep the
budget (operators stop at the run's deadline with their best so far); a run that still overran it
by more than 25% or improved after it is warned about as it finishes and counted in the ``late`` column.

    python benchmarks/discovery.py --out runs/discovery                      # the full measurement (~10 h)
    python benchmarks/discovery.py --envs CirclePacking-26-v0 --configs full,reference \\
        --seeds 1 --budget-s 20 --out runs/quick                              # a quick look
"""

from __future__ import annotations

import argparse
from pathlib import Path

from discoverygym.agents.bench import BENCH_ENVS, CONFIGS, run_benchmark


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, run what is missing, print ``table.md``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", default=",".join(BENCH_ENVS), help="comma-separated env ids")
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated configs")
    p.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per config (default 5)")
    p.add_argument("--budget-s", type=float, default=300.0, help="wall budget per run, seconds (default 300)")
    p.add_argument("--out", default="runs/discovery", help="run folder (default runs/discovery)")
    args = p.parse_args(argv)
    out = Path(args.out)
    run_benchmark(args.envs.split(","), args.configs.split(","), range(args.seeds), args.budget_s, out)
    print()
    print((out / "table.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
