"""Search framework overhead: selection latency, per-evaluation bookkeeping, evaluator utilisation.

Run: ``python benchmarks/search_overhead.py`` (about 30 s on 2 cores). Prints four tables:

0. Building an archive of 100,000 states (the states are made first; only ``Archive.add`` is
   timed), without caps (a TES population) and with TTT-Discover's caps. Target: under 2 s.
1. Selecting start states: PUCT ``select(8)`` (lineage blocking) and RPUCG ``select(5)``
   (anti-inbreeding) on archives of 1,000 and 100,000 states, each call right after a new child
   was added and the statistics updated (the realistic case: the caches are dirty). Targets:
   PUCT ≤ 0.3 ms at 1,000 states, ≤ 10 ms at 100,000. TTT-Discover's sampler takes 1.5 ms for
   the 1,000-state case on a 2-core machine (figure from the issue, not re-measured here).
2. Framework overhead per evaluation inside the runner (selection + archive/rule bookkeeping +
   log writes + task dispatch), with trajectory archives of about 1,000 states, as a fraction of
   a 10 ms evaluation.
3. Evaluator utilisation (worker busy time / (evaluation wall time × W)) with W local workers on
   a problem whose evaluation takes 10 ms (circle packing + a 10 ms busy wait), mutation policy
   (not the bottleneck). Target ≥ 95%.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from discoverygym.envs.registry import get_problem
from discoverygym.rewards.circle_packing import circle_packing
from discoverygym.search.archive import Archive
from discoverygym.search.evolution import EvolutionarySearch, SearchConfig
from discoverygym.search.puct import PUCT
from discoverygym.search.rpucg import RPUCG
from discoverygym.types import State

EVAL_S = 0.010


def slow_circle_packing(circles):
    """The CirclePacking-26 verifier after a 10 ms busy wait (a stand-in for a 10 ms evaluation)."""
    end = time.perf_counter() + EVAL_S
    while time.perf_counter() < end:
        pass
    return circle_packing(circles, n=26)


def _tree_states(n: int, rng: np.random.Generator) -> list[State]:
    """``n`` valid states with distinct solutions forming a random tree under ``root`` (the first)."""
    states = [State([0.0, -1.0], 0.0, 0.0, True, id="root")]
    ids = ["root"]
    while len(states) < n:
        parent = ids[-1] if rng.random() < 0.5 else ids[int(rng.integers(len(ids)))]
        r = float(rng.random())
        sid = f"s{len(ids)}"
        states.append(State([r, float(len(ids))], r, r, True, id=sid, parent_ids=(parent,)))
        ids.append(sid)
    return states


def _tree_archive(n: int, rule, rng: np.random.Generator) -> tuple[Archive, list[str]]:
    archive = Archive(max_states=None, children_per_parent=None, keep_invalid=isinstance(rule, RPUCG))
    states = _tree_states(n, rng)
    archive.add(states[0], initial=True)
    for state in states[1:]:
        archive.add(state)
    return archive, [s.id for s in states]


def build_table(n: int = 100_000) -> list[tuple]:
    rows = []
    states = _tree_states(n, np.random.default_rng(0))
    for name, caps in (
        ("no caps (TES population)", {"max_states": None, "children_per_parent": None, "keep_invalid": True}),
        ("TTT caps (1000 states, 2 per parent)", {"max_states": 1000, "children_per_parent": 2}),
    ):
        archive = Archive(**caps)
        t0 = time.perf_counter()
        archive.add(states[0], initial=True)
        for state in states[1:]:
            archive.add(state)
        archive.sorted_valid()  # the first read brings the reward order's numpy view up to date
        wall = time.perf_counter() - t0
        rows.append((name, n, len(archive), wall, 1e6 * wall / n))
    return rows


def selection_table() -> list[tuple]:
    rows = []
    for n in (1_000, 100_000):
        for name, rule, k in (
            ("PUCT select(8)", PUCT(), 8),
            ("RPUCG select(5)", RPUCG(restart_every=None), 5),
        ):
            rng = np.random.default_rng(0)
            archive, ids = _tree_archive(n, rule, rng)
            if isinstance(rule, RPUCG):
                rule.history = ids[-25:]  # a trajectory's committed history since its last restart
                rule._initialized = True
            rule.select(archive, k, rng)  # first call builds the caches (RPUCG: full V propagation)
            sel, book = [], []
            for rep in range(60):
                parent = archive.get(ids[int(rng.integers(len(ids)))])
                child = State(
                    [float(rng.random()), -2.0 - rep], 0.5, 0.5, True, id=f"x{rep}", parent_ids=(parent.id,)
                )
                t0 = time.perf_counter()
                archive.add(child)
                rule.update(archive, [parent], [child])
                t1 = time.perf_counter()
                rule.select(archive, k, rng)
                t2 = time.perf_counter()
                book.append(t1 - t0)
                sel.append(t2 - t1)
            rows.append((name, n, 1e3 * np.median(sel), 1e3 * np.percentile(sel, 90), 1e3 * np.median(book)))
    return rows


def overhead_table(tmp: Path) -> list[tuple]:
    rows = []
    for selector, kwargs in (("rpucg", {}), ("puct", {})):
        cfg = SearchConfig(
            "CirclePacking-26-v0", selector=selector, C=2, L=500, K=4, seed=0, selector_kwargs=kwargs
        )
        result = EvolutionarySearch(
            cfg, tmp / f"overhead-{selector}", executor="local", workers=2, tensorboard=False
        ).run()
        n = result.evaluated_now
        per = {k: 1e3 * v / n for k, v in result.timings.items()}
        total = sum(per.values())
        sizes = [t["archive_size"] for t in result.trajectories]
        rows.append(
            (
                selector,
                n,
                f"1..{max(sizes)}",
                per["select"],
                per["commit"],
                per["log"],
                per["dispatch"],
                total,
                100 * total / (1e3 * EVAL_S),
            )
        )
    return rows


def utilisation_table(tmp: Path) -> list[tuple]:
    problem = dataclasses.replace(get_problem("CirclePacking-26-v0"), verifier=slow_circle_packing)
    rows = []
    for workers in (1, 2):
        cfg = SearchConfig("CirclePacking-26-v0", selector="rpucg", C=4, L=25, K=4, seed=0)
        result = EvolutionarySearch(
            cfg,
            tmp / f"util-{workers}",
            executor="local",
            workers=workers,
            tensorboard=False,
            problem=problem,
        ).run()
        rate = result.evaluated_now / result.wall_s
        rows.append((workers, result.evaluated_now, result.wall_s, rate, 100 * result.utilisation))
    return rows


def _print(title: str, header: tuple, rows: list[tuple], fmt: tuple) -> None:
    print(f"\n{title}")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in rows:
        print(" | ".join(f.format(v) for f, v in zip(fmt, row)))


def main() -> int:
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    _print(
        "0. Building an archive (Archive.add of every state, then one sorted_valid read)",
        ("archive", "adds", "kept", "build s", "µs per add"),
        build_table(),
        ("{}", "{:,}", "{:,}", "{:.2f}", "{:.1f}"),
    )
    _print(
        "1. Selecting start states (after each new child; ms)",
        ("rule", "states", "median ms", "p90 ms", "add+update ms"),
        selection_table(),
        ("{}", "{:,}", "{:.3f}", "{:.3f}", "{:.3f}"),
    )
    with tempfile.TemporaryDirectory() as tmp:
        _print(
            "2. Runner overhead per evaluation (ms), C=2 L=500 K=4, local pool W=2",
            (
                "selector",
                "evals",
                "archive size",
                "select",
                "commit",
                "log",
                "dispatch",
                "total",
                "% of 10 ms",
            ),
            overhead_table(Path(tmp)),
            ("{}", "{}", "{}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.1f}%"),
        )
        _print(
            "3. Evaluator utilisation, 10 ms evaluations, C=4 L=25 K=4, mutation policy",
            ("workers W", "evals", "wall s", "evals/s", "utilisation"),
            utilisation_table(Path(tmp)),
            ("{}", "{}", "{:.2f}", "{:.1f}", "{:.1f}%"),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
