"""Verifier speed: our AC1/AC2 verifiers next to a straightforward np.convolve + Python-loop version.

Prints one table; both implementations run side by side in this one process, on the same inputs
(seeded random step functions, plus the published records when ../shared/data is present).
Target: >= 20x faster, identical value to 1e-12 relative.

    python benchmarks/verifiers.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from discoverygym.rewards.autocorrelation import first_autocorrelation, second_autocorrelation

PUBLISHED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "published"


def naive_ac1(f: list[float]) -> float:
    """C1 = 2n max(f*f) / (Σf)² with np.convolve and Python loops for the reductions."""
    c = np.convolve(np.asarray(f, dtype=np.float64), np.asarray(f, dtype=np.float64))
    peak = 0.0
    for v in c.tolist():
        peak = max(peak, v)
    total = 0.0
    for v in f:
        total += v
    return 2 * len(f) * peak / total**2


def naive_ac2(f: list[float]) -> float:
    """C2 = L2² / (L1 L∞) with np.convolve and Python loops (problems.md formula)."""
    c = np.convolve(np.asarray(f, dtype=np.float64), np.asarray(f, dtype=np.float64)).tolist()
    m = len(c)
    h = 1.0 / (m + 1)
    y = [0.0] + c + [0.0]
    l2 = 0.0
    for i in range(m + 1):
        l2 += (h / 3) * (y[i] ** 2 + y[i] * y[i + 1] + y[i + 1] ** 2)
    l1 = sum(abs(v) for v in c) / (m + 1)
    linf = max(abs(v) for v in c)
    return l2 / (l1 * linf)


def _time(fn, arg, repeats: int) -> tuple[float, float]:
    """Median wall time (s) over ``repeats`` calls and the last value."""
    times, value = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn(arg)
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def cases() -> list[tuple[str, str, list[float]]]:
    """(problem, label, construction) triples: seeded random inputs and published records."""
    rng = np.random.default_rng(0)
    out = [
        ("AC1", "random 30000", rng.uniform(0, 1, 30000).tolist()),
        ("AC2", "random 50000", (rng.uniform(0, 1, 50000) ** 3).tolist()),
    ]
    for name, problem in (("ac1_ttt_discover", "AC1"), ("ac2_ttt_discover", "AC2")):
        path = PUBLISHED / f"{name}.json"
        if path.exists():
            out.append((problem, f"{name} ({len(json.loads(path.read_text())['construction'])})",
                        json.loads(path.read_text())["construction"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    ours = {"AC1": first_autocorrelation, "AC2": second_autocorrelation}
    naive = {"AC1": naive_ac1, "AC2": naive_ac2}
    table = Table(title="Verifier speed (median of %d runs, same process)" % args.repeats)
    for col in ("problem", "input", "naive s", "ours s", "speed-up", "rel. diff", "method"):
        table.add_column(col, justify="right")
    for problem, label, f in cases():
        t_naive, v_naive = _time(naive[problem], f, args.repeats)
        t_ours, score = _time(ours[problem], f, args.repeats)
        rel = abs(score.value - v_naive) / abs(v_naive)
        table.add_row(problem, label, f"{t_naive:.4f}", f"{t_ours:.4f}", f"{t_naive / t_ours:.1f}x",
                      f"{rel:.1e}", str(score.metrics["method"]))
    Console().print(table)


if __name__ == "__main__":
    main()
