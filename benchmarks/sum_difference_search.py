"""Record attempt for the sum-difference exponent: tabu search over single-element additions and removals.

    nice -n 15 python benchmarks/sum_difference_search.py START.json --budget-s 600 --out RUN_DIR

A human-written operator (not learned). C(A) = log(|A+A|/|A|) / log(|A−A|/|A|) (SimpleTES;
``discoverygym.rewards.sum_difference``). Every step scores *every* neighbour at once from the
representation counts r₊(s) = #{(a, b) ∈ A²: a + b = s} and r₋(d) = #{(a, b): a − b = d}:

* add x ∉ A: new sums are the x + a with r₊(x + a) = 0, and 2x when r₊(2x) = 0; new differences
  are ±(x − a) with r₋(x − a) = 0 (two each);
* remove y ∈ A: the sum y + b (b ≠ y) disappears when r₊(y + b) = 2, the sum 2y when r₊(2y) = 1;
  the differences ±(y − b) when r₋(y − b) = 1 + [2y − b ∈ A].

The best non-tabu move is taken even when it lowers C (tabu search; Glover 1989): a moved element
is frozen for ``--tenure`` steps. Sizes stay within the env's 2..512 and |a| ≤ 10^6; candidates for x
are the integers within ``--margin`` of A's range. The counts are rebuilt from scratch every 200
steps and checked against the incremental ones.

Writes ``RUN_DIR/best.json`` (the shape ``benchmarks/store_record.py`` reads), ``config.json`` and
``metrics.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from store_record import write_best  # benchmarks/ (this script's folder)

from discoverygym.rewards.sum_difference import MAX_SIZE, sum_difference


class Counts:
    """Representation counts of A's sums and differences on a fixed integer window."""

    def __init__(self, a: np.ndarray, lo: int, hi: int):
        self.lo, self.hi = lo, hi  # every element stays in [lo, hi]
        self.member = np.zeros(hi - lo + 1, dtype=bool)
        self.member[a - lo] = True
        self.rebuild()

    @property
    def a(self) -> np.ndarray:
        return np.flatnonzero(self.member) + self.lo

    def rebuild(self) -> None:
        a = self.a
        span = self.hi - self.lo
        self.plus = np.bincount((a[:, None] + a[None, :] - 2 * self.lo).ravel(), minlength=2 * span + 1)
        self.minus = np.bincount((a[:, None] - a[None, :] + span).ravel(), minlength=2 * span + 1)

    def sizes(self) -> tuple[int, int, int]:
        return int(self.member.sum()), int((self.plus > 0).sum()), int((self.minus > 0).sum())

    def moves(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(element, d_sums, d_diffs)`` for every addition (element ∉ A) and removal (element ∈ A)."""
        a = self.a
        span = self.hi - self.lo
        xs = np.flatnonzero(~self.member) + self.lo
        new_s = (self.plus[xs[:, None] + a[None, :] - 2 * self.lo] == 0).sum(1) + (self.plus[2 * xs - 2 * self.lo] == 0)
        new_d = 2 * (self.minus[xs[:, None] - a[None, :] + span] == 0).sum(1)
        ys = a
        off = ~np.eye(a.size, dtype=bool)
        pair_s = self.plus[ys[:, None] + a[None, :] - 2 * self.lo] == 2
        lost_s = (pair_s & off).sum(1) + (self.plus[2 * ys - 2 * self.lo] == 1)
        mirror = 2 * ys[:, None] - a[None, :]
        inside = (mirror >= self.lo) & (mirror <= self.hi)
        in_a = np.zeros_like(inside)
        in_a[inside] = self.member[mirror[inside] - self.lo]
        pair_d = self.minus[ys[:, None] - a[None, :] + span] == 1 + in_a
        lost_d = 2 * (pair_d & off).sum(1)
        return (np.concatenate([xs, ys]), np.concatenate([new_s, -lost_s]), np.concatenate([new_d, -lost_d]))

    def toggle(self, v: int) -> None:
        a = self.a
        span = self.hi - self.lo
        adding = not self.member[v - self.lo]
        sign = 1 if adding else -1
        others = a[a != v]
        np.add.at(self.plus, v + others - 2 * self.lo, 2 * sign)
        self.plus[2 * v - 2 * self.lo] += sign
        np.add.at(self.minus, v - others + span, sign)
        np.add.at(self.minus, others - v + span, sign)
        self.minus[span] += sign
        self.member[v - self.lo] = adding


def exponent(n: int, s: int, d: int) -> float:
    return math.log(s / n) / math.log(d / n)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("start", type=Path)
    p.add_argument("--budget-s", type=float, default=600.0)
    p.add_argument("--tenure", type=int, default=25, help="steps a moved element stays frozen")
    p.add_argument("--margin", type=int, default=300, help="candidates: integers within this of A's range")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    data = json.loads(args.start.read_text())
    a0 = np.unique(np.asarray(data["construction"] if isinstance(data, dict) else data, dtype=np.int64))
    counts = Counts(a0, int(a0.min()) - args.margin, int(a0.max()) + args.margin)
    rng = np.random.default_rng(args.seed)
    initial = best = sum_difference(a0.tolist()).value
    best_a, frozen, step, t0 = a0.copy(), {}, 0, time.monotonic()
    args.out.mkdir(parents=True)
    (args.out / "config.json").write_text(json.dumps({**{k: str(v) for k, v in vars(args).items()},
                                                      "operator": "sum-difference tabu search (human-written)"}))
    log = (args.out / "metrics.jsonl").open("w")
    while time.monotonic() - t0 < args.budget_s:
        step += 1
        n, s, d = counts.sizes()
        elems, ds, dd = counts.moves()
        size = np.where(counts.member[elems - counts.lo], n - 1, n + 1)
        ok = (size >= 2) & (size <= MAX_SIZE) & np.array([frozen.get(int(e), 0) < step for e in elems])
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.log((s + ds) / size) / np.log((d + dd) / size)
        value = np.where(ok & ((s + ds) > size) & ((d + dd) > size), value, -np.inf)
        top = np.flatnonzero(value >= value.max() - 1e-15)
        k = int(rng.choice(top))
        counts.toggle(int(elems[k]))
        frozen[int(elems[k])] = step + args.tenure
        if value[k] > best + 1e-15:
            best, best_a = float(value[k]), counts.a.copy()
        if step % 200 == 0:
            kept = (counts.plus.copy(), counts.minus.copy())
            counts.rebuild()
            assert np.array_equal(kept[0], counts.plus) and np.array_equal(kept[1], counts.minus), "count drift"
            log.write(json.dumps({"step": step, "current": exponent(*counts.sizes()), "best": best,
                                  "wall_s": round(time.monotonic() - t0, 1)}) + "\n")
            log.flush()
    verified = sum_difference(best_a.tolist()).value
    print(f"sum-difference tabu: {initial!r} -> {verified!r} (|A| = {best_a.size}) in {step} steps, "
          f"{time.monotonic() - t0:.0f} s")
    write_best(args.out, "SumDifference-v0", best_a, verified, initial, "sum-difference tabu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
