"""Verifier speed: our AC1/AC2 verifiers next to a straightforward np.convolve + Python-loop version,
and AC1 next to a bare float64 FFT autoconvolution.

Prints two tables; the implementations run side by side in this one process, on the same inputs
(seeded random step functions, plus the published records when ../shared/data is present).
Targets: >= 20x faster than the loops, identical value to 1e-12 relative; AC1 at 30,000 pieces
within 1.5x of a bare ``rfft``/``irfft`` autoconvolution (which has no error bound and no guard),
calls interleaved so that both see the same load. The exact certificate's time is shown beside.

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
from discoverygym.rewards.certify.autocorrelation import certify_ac1

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


def bare_fft_ac1(f: np.ndarray) -> float:
    """C1 from a bare float64 FFT autoconvolution: two FFTs, a max and a sum (no bound, no guard)."""
    n = f.size
    size = 1 << (2 * n - 2).bit_length()
    spectrum = np.fft.rfft(f, size)
    c = np.fft.irfft(spectrum * spectrum, size)[: 2 * n - 1]
    return 2 * n * float(c.max()) / float(f.sum()) ** 2


def fft_side_by_side(f: np.ndarray, repeats: int) -> tuple[list[float], list[float], float, float]:
    """Wall times (s) of our AC1 verifier and of the bare FFT version, calls interleaved, and both values."""
    ours, bare = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        v_ours = first_autocorrelation(f).value
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        v_bare = bare_fft_ac1(f)
        bare.append(time.perf_counter() - start)
    return ours, bare, v_ours, v_bare


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
    table = Table(title=f"Verifier speed (median of {args.repeats} runs, same process)")
    for col in ("problem", "input", "naive s", "ours s", "speed-up", "rel. diff", "method"):
        table.add_column(col, justify="right")
    for problem, label, f in cases():
        t_naive, v_naive = _time(naive[problem], f, args.repeats)
        t_ours, score = _time(ours[problem], f, args.repeats)
        rel = abs(score.value - v_naive) / abs(v_naive)
        table.add_row(problem, label, f"{t_naive:.4f}", f"{t_ours:.4f}", f"{t_naive / t_ours:.1f}x",
                      f"{rel:.1e}", str(score.metrics["method"]))
    Console().print(table)
    calls = max(args.repeats, 21)
    fft = Table(title=f"AC1 verifier vs a bare float64 FFT autoconvolution ({calls} interleaved calls; "
                      "the minimum is the figure least moved by other jobs)")
    for col in ("input", "bare FFT ms (min / median)", "ours ms (min / median)", "ours / bare (min / median)",
                "rel. diff", "exact certificate s"):
        fft.add_column(col, justify="right")
    for problem, label, f in cases():
        if problem != "AC1":
            continue
        arr = np.asarray(f, dtype=np.float64)
        ours_s, bare_s, v_ours, v_bare = fft_side_by_side(arr, calls)
        lo_o, lo_b = min(ours_s), min(bare_s)
        med_o, med_b = statistics.median(ours_s), statistics.median(bare_s)
        start = time.perf_counter()
        certify_ac1(f)
        t_cert = time.perf_counter() - start
        fft.add_row(label, f"{lo_b * 1e3:.2f} / {med_b * 1e3:.2f}", f"{lo_o * 1e3:.2f} / {med_o * 1e3:.2f}",
                    f"{lo_o / lo_b:.2f}x / {med_o / med_b:.2f}x",
                    f"{abs(v_ours - v_bare) / v_bare:.1e}", f"{t_cert:.2f}")
    Console().print(fft)


if __name__ == "__main__":
    main()
