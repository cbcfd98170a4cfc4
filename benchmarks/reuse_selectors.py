"""Issue 19: RPUCG against its extensions (lookahead, adaptive inspirations, restart bandit,
adaptive budgets) and the PUCT / greedy baselines, at the same total number of evaluations.

Run: ``python benchmarks/reuse_selectors.py`` (default: 800 evaluations per run = C 4 × L 50 × K 4,
seeds 0-4, ``CirclePacking-26-v0`` and ``ErdosMinOverlap-v0``, the search command's default
numeric policy ``mutation``; about 3 minutes on 2 busy cores). Flags: ``--evals N`` (a multiple
of C·K = 16), ``--seeds 0,1,2,3,4``, ``--envs``, ``--restart-every`` (RPUCG's restart period for
every RPUCG variant, default 10, so that restarts happen inside the budget and the restart bandit
has decisions to make; plain RPUCG uses the same period).

Per env and variant: mean ± sd of the best score over the seeds, and a one-sided Mann-Whitney U
test (scipy) that the variant's best reward is higher than RPUCG's (reward = higher is better;
the score column keeps the problem's direction). With 5 seeds the smallest attainable one-sided
p is 1/252 ≈ 0.004; p ≥ 0.05 means no evidence of an improvement (not evidence of none).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from scipy.stats import mannwhitneyu

from discoverygym.search.evolution import EvolutionarySearch, SearchConfig

C, K = 4, 4


def variants(restart_every: int) -> dict[str, dict]:
    rk = {"restart_every": restart_every}
    return {
        "rpucg": {"selector": "rpucg", "selector_kwargs": rk},
        "rpucg-lookahead": {"selector": "rpucg-lookahead", "selector_kwargs": rk},
        "rpucg + adaptive insp": {"selector": "rpucg", "selector_kwargs": rk, "inspirations": "auto"},
        "rpucg + restart bandit": {"selector": "rpucg", "selector_kwargs": rk, "restart_controller": "ucb"},
        "rpucg + SH budgets": {"selector": "rpucg", "selector_kwargs": rk, "budget_controller": "successive-halving"},
        "rpucg + bandit budgets": {"selector": "rpucg", "selector_kwargs": rk, "budget_controller": "bandit"},
        "puct": {"selector": "puct"},
        "greedy": {"selector": "greedy"},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--evals", type=int, default=800, help="evaluations per run, a multiple of 16 (default 800)")
    p.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated seeds (default 0,1,2,3,4)")
    p.add_argument("--envs", default="CirclePacking-26-v0,ErdosMinOverlap-v0")
    p.add_argument("--restart-every", type=int, default=10, help="RPUCG restart period (default 10)")
    args = p.parse_args(argv)
    if args.evals % (C * K) or args.evals < C * K:
        p.error(f"--evals must be a positive multiple of {C * K}")
    L = args.evals // (C * K)
    seeds = [int(s) for s in args.seeds.split(",")]
    console = Console(width=150)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for env in args.envs.split(","):
            table = Table(title=f"{env}: best score after {C * L * K} evaluations (C={C} L={L} K={K}), "
                                f"seeds {args.seeds}, policy mutation")
            for col in ("variant", "best score (mean ± sd)", "best reward (mean)", "MW U vs rpucg", "p (one-sided, >)", "evals/run", "s/run"):
                table.add_column(col)
            rewards: dict[str, list[float]] = {}
            direction = None
            for name, kw in variants(args.restart_every).items():
                scores, rw, evals, secs = [], [], set(), []
                for seed in seeds:
                    cfg = SearchConfig(env, C=C, L=L, K=K, seed=seed, **kw)
                    run_dir = Path(tmp) / f"{env}-{name.replace(' ', '_')}-{seed}"
                    t = time.perf_counter()
                    search = EvolutionarySearch(cfg, run_dir, executor="inline", tensorboard=False)
                    result = search.run()
                    secs.append(time.perf_counter() - t)
                    direction = search.problem.direction
                    scores.append(result.best.score)
                    rw.append(result.best.reward)
                    evals.add(result.evaluations)
                rewards[name] = rw
                if name == "rpucg":
                    u, pval = "-", "-"
                else:
                    res = mannwhitneyu(rw, rewards["rpucg"], alternative="greater")
                    u, pval = f"{res.statistic:.1f}", f"{res.pvalue:.3f}"
                sd = statistics.stdev(scores) if len(scores) > 1 else 0.0
                table.add_row(name, f"{statistics.mean(scores):.6f} ± {sd:.6f}", f"{statistics.mean(rw):.6f}",
                              u, pval, ",".join(map(str, sorted(evals))), f"{statistics.mean(secs):.2f}")
            table.caption = f"score direction: {direction} is better; rank test on rewards (higher is better)"
            console.print(table)
    console.print(f"wall time {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
