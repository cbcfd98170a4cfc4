"""Record attempt for the third autocorrelation inequality (AC3): sequential LP on max |f * f|.

    nice -n 15 python benchmarks/ac3_slp.py START.json --budget-s 600 --out RUN_DIR

A human-written operator (not learned): C3 = 2n · max_k |(f * f)_k| / (Σf)² (AlphaEvolve B.3,
``discoverygym.rewards.autocorrelation.third_autocorrelation``) with Σf held fixed is the max of
|c_k|, c_k bilinear in f. Each step linearises every c_k within ``margin`` of the max and solves

    min t   s.t.   ±(c_k(f) + ∇c_k(f)·d) ≤ t,   Σd = 0,   |d_j| ≤ δ·mean|f|

with HiGHS (scipy ``linprog``), keeping f + d only when the verifier's C3 goes down (trust radius
δ ×1.5 on success, /4 on failure; Fletcher, *Practical Methods of Optimization* §14.4). The
sequential LP for Erdős and AC1 (``envs/operators/lp.py``) is the same idea on nonnegative f; since
this script found the AC3 record, that module covers AC3 too (``lp.AC3``, the ``lp`` operator of
``discoverygym train ThirdAutocorrelation-v0``), on a block of at most 1,000 pieces.

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
from scipy.optimize import linprog
from store_record import write_best  # benchmarks/ (this script's folder)

from discoverygym.rewards.autocorrelation import third_autocorrelation


def _lp_step(f: np.ndarray, delta: float, margin: float) -> np.ndarray | None:
    """One trust-region LP step from ``f`` (float64 (n,)); the new f, or None when the LP failed."""
    n = f.size
    c = np.convolve(f, f)
    a = np.abs(c)
    top = float(a.max())
    ks = np.flatnonzero(a >= top * (1 - margin))
    # ∂c_k/∂f_j = 2 f_{k−j}
    idx = ks[:, None] - np.arange(n)[None, :]
    grad = np.where((idx >= 0) & (idx < n), 2.0 * f[np.clip(idx, 0, n - 1)], 0.0)
    sign = np.sign(c[ks])[:, None]
    step = delta * float(np.mean(np.abs(f)))
    res = linprog(np.r_[np.zeros(n), 1.0],
                  A_ub=np.hstack([sign * grad, -np.ones((ks.size, 1))]), b_ub=-np.abs(c[ks]),
                  A_eq=np.r_[np.ones(n), 0.0][None], b_eq=[0.0],
                  bounds=[(-step, step)] * n + [(None, None)], method="highs")
    if res.status != 0 or res.x is None:
        return None
    return f + res.x[:n]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("start", type=Path, help="construction file (bare list or {'construction': ...})")
    p.add_argument("--budget-s", type=float, default=600.0)
    p.add_argument("--delta", type=float, default=1e-3, help="initial trust radius, share of mean|f|")
    p.add_argument("--margin", type=float, default=2e-3, help="|c_k| within this share of the max are linearised")
    p.add_argument("--out", type=Path, required=True, help="run directory (new)")
    args = p.parse_args()
    data = json.loads(args.start.read_text())
    f = np.asarray(data["construction"] if isinstance(data, dict) else data, dtype=np.float64)
    f = f / f.sum() * f.size  # C3 is scale invariant; Σf = n keeps the LP well scaled
    best = third_autocorrelation(f).value
    initial, delta, t0 = best, args.delta, time.monotonic()
    args.out.mkdir(parents=True)
    (args.out / "config.json").write_text(json.dumps({**{k: str(v) for k, v in vars(args).items()},
                                                      "operator": "ac3-slp (human-written)"}))
    log = (args.out / "metrics.jsonl").open("w")
    steps = 0
    while time.monotonic() - t0 < args.budget_s and delta > 1e-12:
        steps += 1
        cand = _lp_step(f, delta, args.margin)
        value = third_autocorrelation(cand).value if cand is not None else float("inf")
        if value < best:
            f, best, delta = cand, value, delta * 1.5
        else:
            delta /= 4
        log.write(json.dumps({"step": steps, "best": best, "delta": delta,
                              "wall_s": round(time.monotonic() - t0, 2)}) + "\n")
        log.flush()
    print(f"AC3 SLP: {initial!r} -> {best!r} in {steps} LP steps, {time.monotonic() - t0:.0f} s")
    write_best(args.out, "ThirdAutocorrelation-v0", f, best, initial, "ac3-slp")
    return 0


if __name__ == "__main__":
    sys.exit(main())
