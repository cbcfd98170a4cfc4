"""AHC058 apple machines (AtCoder, ALE-Bench packaging): input generator and scorer.

Problem (our summary): machines come in N = 10 ids and L = 4 levels. Level-0 machine ``j``
produces ``A_j`` apples per unit of power per copy; a level-``i`` machine (i >= 1) adds copies of
the level ``i−1`` machine with the same id. Every machine starts with 1 copy (``B``) and power 0
(``P``); the plan starts with K = 1 apple and lasts T = 500 turns. Each turn, first either raise
the power of machine ``(i, j)`` by one, paying ``C_{i,j} · (P_{i,j} + 1)`` apples (never going
below zero), or do nothing; then levels are processed in order 0..L−1: level 0 adds
``A_j · B_{0,j} · P_{0,j}`` apples, level i >= 1 adds ``B_{i,j} · P_{i,j}`` to ``B_{i−1,j}``.
Score per case ``round(10^5 · log2(apples at the end))``.

Output: T action lines, ``i j`` (raise level i, id j) or ``-1``; empty lines and lines starting
with ``#`` are ignored; lines after the T-th action are ignored (as by the official tester).

Rules applied by :func:`score_output`, in the tester's order: each line parses (``parse``,
``range``: level in [−1, L−1], id in [0, N−1]; ``eof``: a level without an id;
``too_many_tokens``), at least T actions (``not_enough_actions``), every purchase affordable
(``insufficient_apples``), a positive final count (``nonpositive_apples``). Arithmetic is the
tester's signed 64-bit arithmetic, wrapping on overflow (its release build).

Input generation (statement): ``A_0 = 1``, other ``A_j = round(10^U(0,2))``, then sorted;
``C_{0,0} = 1``, other ``C_{i,j} = round(A_j · 500^i · 10^U(0,2))``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from discoverygym.rewards.ahc.textio import AHCInvalid, read_int, split_lines, split_tokens

__all__ = ["MAX_OUTPUT_BYTES", "Input", "generate", "parse_input", "parse_output", "score_output", "simulate"]

#: Output cap (bytes): a legal answer is T = 500 short lines (comments allowed); more than this is
#: judged "output too large" (rule ``output_size``).
MAX_OUTPUT_BYTES = 1 << 20

_MASK = (1 << 64) - 1
_HALF = 1 << 63


def _wrap(v: int) -> int:
    """Reduce to a signed 64-bit value (two's complement wrap-around)."""
    return ((v + _HALF) & _MASK) - _HALF


@dataclass(frozen=True)
class Input:
    """One case: sizes ``n, l, t, k``, ``a`` (n ints), ``c`` (l × n ints)."""

    n: int
    l: int
    t: int
    k: int
    a: tuple[int, ...]
    c: tuple[tuple[int, ...], ...]


def _round_half_away(x: float) -> int:
    """Round to nearest, halves away from zero (Rust ``f64::round``)."""
    whole = math.floor(abs(x))
    return (int(whole) + (1 if abs(x) - whole >= 0.5 else 0)) * (1 if x >= 0 else -1)


def generate(seed: int, n: int = 10, levels: int = 4, turns: int = 500, k: int = 1) -> str:
    """Input text of one case following the statement's generation procedure.

    Our own implementation (numpy PCG64 seeded by ``seed``); same distribution as the official
    generator, not the same files.

    Returns:
        ``"N L T K"``, the A line and L lines of C.
    """
    rng = np.random.default_rng(seed)
    a = [1] + [_round_half_away(10.0 ** rng.uniform(0.0, 2.0)) for _ in range(n - 1)]
    a.sort()
    c = [[1 if (i == 0 and j == 0) else _round_half_away(a[j] * 500.0 ** i * 10.0 ** rng.uniform(0.0, 2.0))
          for j in range(n)] for i in range(levels)]
    lines = [f"{n} {levels} {turns} {k}", " ".join(map(str, a))] + [" ".join(map(str, row)) for row in c]
    return "\n".join(lines) + "\n"


def parse_input(text: str) -> Input:
    """Parse an input file (generated or official), checking its shape.

    Raises:
        ValueError: one line saying what is wrong (not integers, truncated, extra numbers,
            sizes or values out of range).
    """
    tokens = text.split()
    if not tokens:
        raise ValueError("AHC058 input is empty")
    bad = next((t for t in tokens if not (t.isascii() and t.isdigit() and len(t) <= 18)), None)
    if bad is not None:
        raise ValueError(f"AHC058 input: {bad[:40]!r} is not a non-negative integer of at most 18 digits")
    v = [int(x) for x in tokens]
    if len(v) < 4:
        raise ValueError(f"AHC058 input is truncated: the first line needs N L T K, got {len(v)} numbers")
    n, levels, turns, k = v[:4]
    for name, value, hi in (("N", n, 1000), ("L", levels, 100), ("T", turns, 100_000)):
        if not 1 <= value <= hi:
            raise ValueError(f"AHC058 input: {name} = {value} is outside [1, {hi}]")
    expected = 4 + n + levels * n
    if len(v) < expected:
        raise ValueError(f"AHC058 input is truncated: N = {n}, L = {levels} need {expected} numbers, got {len(v)}")
    if len(v) > expected:
        raise ValueError(f"AHC058 input has {len(v) - expected} extra numbers after the L x N costs")
    a = tuple(v[4:4 + n])
    flat = v[4 + n:expected]
    c = tuple(tuple(flat[i * n:(i + 1) * n]) for i in range(levels))
    return Input(n, levels, turns, k, a, c)


def parse_output(inp: Input, text: str) -> list[tuple[int, int] | None]:
    """The first T actions: ``(level, id)`` or ``None`` for "do nothing".

    Raises:
        AHCInvalid: ``parse``, ``range``, ``eof``, ``too_many_tokens``, ``not_enough_actions``.
    """
    actions: list[tuple[int, int] | None] = []
    for line in split_lines(text):
        if not line or line.startswith("#"):
            continue
        tokens = split_tokens(line)
        level = read_int(tokens[0], -1, inp.l - 1, "i32")
        if level == -1:
            actions.append(None)
            used = 1
        else:
            actions.append((level, read_int(tokens[1] if len(tokens) > 1 else None, 0, inp.n - 1, "usize")))
            used = 2
        if len(tokens) > used:
            raise AHCInvalid("too_many_tokens", f"extra tokens on line {line[:60]!r}")
        if len(actions) == inp.t:
            break
    if len(actions) < inp.t:
        raise AHCInvalid("not_enough_actions", f"expected {inp.t} actions, got {len(actions)}")
    return actions


def simulate(inp: Input, actions: list[tuple[int, int] | None]) -> int:
    """Apples at the end of the plan (signed 64-bit wrapping arithmetic, as the tester).

    Raises:
        AHCInvalid: ``insufficient_apples`` (a purchase costs more than the apples held).
    """
    n, levels = inp.n, inp.l
    b = [[1] * n for _ in range(levels)]
    p = [[0] * n for _ in range(levels)]
    a, c = inp.a, inp.c
    apples = _wrap(inp.k)
    for turn in range(inp.t):
        act = actions[turn]
        if act is not None:
            i, j = act
            cost = _wrap(c[i][j] * (p[i][j] + 1))
            if apples < cost:
                raise AHCInvalid("insufficient_apples", f"turn {turn}: have {apples} apples, need {cost}")
            apples = _wrap(apples - cost)
            p[i][j] += 1
        b0, p0 = b[0], p[0]
        apples = _wrap(apples + sum(a[j] * b0[j] * p0[j] for j in range(n)))
        for i in range(1, levels):
            lower, upper, pu = b[i - 1], b[i], p[i]
            for j in range(n):
                if pu[j]:
                    lower[j] = _wrap(lower[j] + upper[j] * pu[j])
    return apples


def score_output(inp: Input, text: str) -> int:
    """Score one program output on one case: ``round(10^5 · log2(final apples))``.

    Returns:
        The case score (int >= 0).

    Raises:
        AHCInvalid: the first rule broken (see the module docstring); ``output_size`` for text
            longer than :data:`MAX_OUTPUT_BYTES` (checked first).
    """
    if len(text) > MAX_OUTPUT_BYTES:
        raise AHCInvalid("output_size", f"output too large: {len(text)} characters, the cap is {MAX_OUTPUT_BYTES} bytes")
    apples = simulate(inp, parse_output(inp, text))
    if apples <= 0:
        raise AHCInvalid("nonpositive_apples", f"{apples} apples at the end")
    x = 1e5 * math.log2(float(apples))
    whole = math.floor(x)
    return int(whole) + (1 if x - whole >= 0.5 else 0)  # half away from zero (Rust f64::round)
