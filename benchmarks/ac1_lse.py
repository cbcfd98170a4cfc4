"""Record attempt for the first autocorrelation inequality (AC1): smoothed-max polish with L-BFGS.

    nice -n 15 python benchmarks/ac1_lse.py START.json --budget-s 600 --out RUN_DIR

A human-written operator (not learned). C1 = 2n · max_k (f * f)_k / (Σf)² (AlphaEvolve B.1,
``discoverygym.rewards.autocorrelation.first_autocorrelation``) has thousands of near-active
indices at a good construction (TTT-Discover's 30,000 pieces: 14,028 within 1e-6 of the max), too
many for the sequential LP of ``envs/operators/lp.py`` on a CPU. This script runs the ``lbfgs``
operator (:func:`discoverygym.envs.operators.lbfgs.ac1_lbfgs`: L-BFGS-B on the log-sum-exp smoothed
bound at temperature τ = 1/β, which bounds C1 from above within τ · log(2n − 1), over f = g²) at
each τ of ``--taus`` in turn, cycled until the budget is spent (a continuation, as in Nesterov's
smoothing, *Smooth minimization of non-smooth functions*, Math. Program. 2005). After every τ the
verifier's C1 of the result is computed and f is kept only when it went down.

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
from store_record import write_best  # benchmarks/ (this script's folder)

from discoverygym.envs.operators.lbfgs import ac1_lbfgs
from discoverygym.rewards.autocorrelation import first_autocorrelation


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
    f = f / f.mean()  # C1 is scale invariant; ac1_lbfgs works at mean 1
    taus = [float(t) for t in args.taus.split(",")]
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
        cand = ac1_lbfgs(f, np.random.default_rng(0), args.iters, 1.0 / tau)  # its start when not better
        value = first_autocorrelation(cand).value
        if value < best:
            f, best = cand, value
        log.write(json.dumps({"round": rounds, "tau": tau, "value": value, "best": best,
                              "wall_s": round(time.monotonic() - t0, 2)}) + "\n")
        log.flush()
        print(f"τ {tau:g}: C1 {value!r}, best {best!r}", flush=True)
    print(f"AC1 LSE: {initial!r} -> {best!r} in {rounds} rounds, {time.monotonic() - t0:.0f} s")
    write_best(args.out, "FirstAutocorrelation-v0", f, best, initial, "ac1-lse")
    return 0


if __name__ == "__main__":
    sys.exit(main())
