"""Wall time to judge an AtCoder problem's cases with W workers, against the serial time bound.

Judges one C++ program on N generated cases (default 150) with each worker count and prints a
table: total wall time, the sum of the per-case program times, the contest's serial bound
(N × 2 s, what judging a program using its whole time limit one case at a time costs), and the
per-case overhead of the sandbox (compile excluded).

    python benchmarks/ahc.py                                  # baseline program, W = 1 and all CPUs
    python benchmarks/ahc.py --busy-s 0.5 --workers 2         # each case spins 0.5 s first
    python benchmarks/ahc.py --problem ahc058 --n-cases 50

Parallelism is min(W, CPUs available): on a 2-core machine W = 4 behaves as W = 2.
"""

from __future__ import annotations

import argparse
import time
from importlib import resources

from rich.console import Console
from rich.table import Table

from discoverygym.io import available_cpus
from discoverygym.rewards.ahc import ahc039, ahc058
from discoverygym.rewards.ahc.cases import Case
from discoverygym.sandbox.ahc_judge import judge_program

SPIN = """
#include <chrono>
static struct Spin {{ Spin() {{
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds({ms});
    volatile unsigned long x = 0;
    while (std::chrono::steady_clock::now() < end) x++;
}} }} spin_first;
"""


def main() -> None:
    """Parse arguments, judge, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=["ahc039", "ahc058"], default="ahc039")
    parser.add_argument("--n-cases", type=int, default=150)
    parser.add_argument("--workers", default=None, help="comma-separated worker counts (default: 1,CPUs)")
    parser.add_argument("--busy-s", type=float, default=0.0, help="seconds each case spins before answering")
    args = parser.parse_args()
    rules = ahc039 if args.problem == "ahc039" else ahc058
    source = (resources.files("discoverygym") / "examples" / f"{args.problem}.cpp").read_text()
    if args.busy_s > 0:
        source = SPIN.format(ms=int(args.busy_s * 1000)) + source
    cpus = available_cpus()
    counts = [int(w) for w in args.workers.split(",")] if args.workers else sorted({1, cpus})
    start = time.perf_counter()
    cases = [Case(f"{i:04d}", rules.generate(i)) for i in range(args.n_cases)]
    gen_s = time.perf_counter() - start
    table = Table(title=f"{args.problem}: {args.n_cases} cases, busy {args.busy_s:g} s/case, {cpus} CPUs "
                        f"(case generation {gen_s:.1f} s, not counted)")
    for col in ("W", "parallel", "compile s", "judge wall s", "Σ case wall s", "serial bound s",
                "speed-up vs Σ", "overhead ms/case", "all accepted"):
        table.add_column(col, justify="right")
    for w in counts:
        report = judge_program(source, cases, rules, workers=w)
        case_sum = sum(c.wall_s for c in report.cases)
        overhead = (report.judge_s * report.workers - case_sum) / len(cases) * 1000
        table.add_row(str(w), str(report.workers), f"{report.compile_s:.2f}", f"{report.judge_s:.2f}",
                      f"{case_sum:.2f}", f"{2.0 * len(cases):.0f}", f"{case_sum / report.judge_s:.2f}",
                      f"{overhead:.0f}", str(report.ok))
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
