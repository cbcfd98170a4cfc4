"""Record attempt for the first autocorrelation inequality (AC1): smoothed-max polish with L-BFGS.

    nice -n 15 python benchmarks/ac1_lse.py START.json --budget-s 600 --out RUN_DIR

A human-written operator (not learned). C1 = 2n · max_k (f * f)_k / (Σf)² (AlphaEvolve B.1,
``discoverygym.rewards.autocorrelation.first_autocorrelation``) has thousands of near-active
indices at a good construction (TTT-Discover's 30,000 pieces: 14,028 within 1e-6 of the max), too
many for the sequential LP of ``envs/operators/lp.py`` on a CPU. This script replaces the max by
its log-sum-exp smoothing at temperature τ,

    F_τ(f) = s_max + τ · log Σ_k exp((s_k − s_max) / τ),   s_k = 2n (f * f)_k / (Σf)²,

which bounds C1 from above within τ · log(2n − 1), and minimises it over f = g² (f ≥ 0 without
bounds) with scipy's L-BFGS-B, the gradient by FFT correlation (O(n log n) per evaluation),
lowering τ through ``--taus`` in turn (a continuation, as in Nesterov's smoothing, *Smooth
minimization of non-smooth functions*, Math. Program. 2005). After every τ the verifier's C1 of
the new f is computed and f is kept only when it went down.

Writes ``RUN_DIR/best.json`` (``{"env_id", "construction", "score", "initial_score", "sota"}``,
the shape ``benchmarks/store_record.py`` reads), ``config.json`` and ``metrics.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import fft
from scipy.optimize import minimize
from store_record import write_best  # benchmarks/ (this script's folder)

from discoverygym.rewards.autocorrelation import first_autocorrelation


def smoothed_c1(g: np.ndarray, tau: float, size: int) -> tuple[float, np.ndarray]:
    """F_τ at f = g² and its gradient in g.

    Args:
        g: float64 (n,), the square roots of the heights.
        tau: temperature τ > 0 (units of C1).
        size: FFT length, at least 2n − 1.

    Returns:
        (F_τ, ∂F_τ/∂g as float64 (n,)).
    """
    n = g.size
    f = g * g
    total = f.sum()
    spec = fft.rfft(f, size)
    s = 2 * n * fft.irfft(spec * spec, size)[: 2 * n - 1] / total**2
    top = s.max()
    e = np.exp((s - top) / tau)
    z = e.sum()
    w = e / z  # ∂F/∂s_k
    # ∂s_k/∂f_j = 4n f_{k−j} / (Σf)² − 2 s_k / Σf
    corr = fft.irfft(fft.rfft(w, size) * np.conj(spec), size)[:n]
    grad_f = 4 * n * corr / total**2 - 2 * float(w @ s) / total
    return float(top + tau * np.log(z)), 2 * g * grad_f


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("start", type=Path, help="construction file (bare list or {'construction': ...})")
    p.add_argument("--budget-s", type=float, default=600.0)
    p.add_argument("--taus", default="1e-7,3e-8,1e-8,3e-9,1e-9",
                   help="temperatures τ in turn, cycled until the budget is spent")
    p.add_argument("--iters", type=int, default=2000, help="L-BFGS iterations per τ")
    p.add_argument("--upsample", type=int, default=1, help="repeat each piece this many times first")
    p.add_argument("--out", type=Path, required=True, help="run directory (new)")
    args = p.parse_args()
    data = json.loads(args.start.read_text())
    f = np.asarray(data["construction"] if isinstance(data, dict) else data, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(f)) if f.ndim == 1 else []
    if f.ndim != 1 or f.size == 0 or len(bad) or np.any(f < 0) or not f.sum() > 0:
        where = f" (f[{int(bad[0])}] = {float(f[bad[0]])!r})" if len(bad) else ""
        p.error(f"{args.start}: need a non-empty 1-D list of finite heights >= 0 with a positive sum{where}")
    if args.out.exists():
        p.error(f"--out {args.out} exists: give a new run directory")
    f = np.repeat(f, args.upsample)
    f = f / f.sum() * f.size  # C1 is scale invariant
    taus = [float(t) for t in args.taus.split(",")]
    size = fft.next_fast_len(2 * f.size - 1)
    best = first_autocorrelation(f).value
    initial, t0 = best, time.monotonic()
    args.out.mkdir(parents=True)
    (args.out / "config.json").write_text(json.dumps({**{k: str(v) for k, v in vars(args).items()},
                                                      "operator": "ac1-lse (human-written)"}))
    log = (args.out / "metrics.jsonl").open("w")
    rounds = 0
    while time.monotonic() - t0 < args.budget_s:
        tau = taus[rounds % len(taus)]
        rounds += 1
        res = minimize(smoothed_c1, np.sqrt(f), args=(tau, size), jac=True, method="L-BFGS-B",
                       options={"maxiter": args.iters, "maxcor": 30, "ftol": 0.0, "gtol": 0.0,
                                "maxls": 50})
        cand = res.x * res.x
        value = first_autocorrelation(cand).value
        if value < best:
            f, best = cand / cand.sum() * cand.size, value
        log.write(json.dumps({"round": rounds, "tau": tau, "iters": int(res.nit), "value": value,
                              "best": best, "wall_s": round(time.monotonic() - t0, 2)}) + "\n")
        log.flush()
        print(f"τ {tau:g}: {res.nit} iterations, C1 {value!r}, best {best!r}", flush=True)
    print(f"AC1 LSE: {initial!r} -> {best!r} in {rounds} rounds, {time.monotonic() - t0:.0f} s")
    write_best(args.out, "FirstAutocorrelation-v0", f, best, initial, "ac1-lse")
    return 0


if __name__ == "__main__":
    sys.exit(main())
