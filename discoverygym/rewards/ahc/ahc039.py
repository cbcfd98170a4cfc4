"""AHC039 "Purse Seine Fishing" (AtCoder, 2024-11-10): input generator and scorer.

Problem (our summary): 5,000 mackerels and 5,000 sardines lie at distinct integer points of
``[0, 10^5]^2``. Output a simple polygon whose edges are all horizontal or vertical, with at most
1,000 vertices, integer vertices in ``[0, 10^5]^2`` and perimeter at most ``4·10^5``. Points on the
boundary count as inside. Score per case ``max(0, a − b + 1)`` with ``a`` mackerels and ``b``
sardines inside.

Output format: ``m`` then ``m`` lines ``x y`` (4 <= m <= 1000), in either orientation; consecutive
collinear vertices are allowed; the program may print several polygons and the last one counts.

Rules applied by :func:`score_output`, in the official tester's order (the first broken one is
reported): every token parses (``parse``/``range``/``eof``; m must be in [4, 1000], coordinates in
[0, 10^5]); then, edge by edge, two consecutive vertices must differ (``duplicate``), an edge must
be axis-parallel (``axis``) and must not fold back onto the next one (``self_intersection``);
then no two non-adjacent edges may touch (``self_intersection``; this also rejects repeated
non-consecutive vertices); then the perimeter limit (``perimeter``). As with the official tester,
an empty output is accepted and scores 1 (no polygon, nothing caught).

Input generation (statement, "Input Generation"): per kind (mackerels, then sardines) draw
``n = rand(10, 25)`` clusters with weight ``U(0, 1)``, centre ``rand(20000, 80000)^2`` and
``σ = rand(1000, 5000)``; each point picks a cluster by weight, rounds a normal sample around its
centre, and is redrawn if outside the square or equal to an earlier point (of either kind).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from discoverygym.rewards.ahc.textio import AHCInvalid, read_int, split_tokens

__all__ = [
    "MAX_OUTPUT_BYTES",
    "MAX_PERIMETER",
    "MAX_VERTICES",
    "D",
    "Input",
    "N",
    "generate",
    "inside_mask",
    "parse_input",
    "parse_output",
    "score_output",
    "score_polygon",
    "validate_polygon",
]

D = 100_000  #: coordinate bound
N = 5_000  #: mackerels (and sardines) per case
MAX_VERTICES = 1000
MAX_PERIMETER = 4 * D
#: Output cap (bytes): a legal answer is at most 1,001 lines of two numbers (about 14 KB); several
#: polygons may be printed, but more than this is judged "output too large" (rule ``output_size``).
MAX_OUTPUT_BYTES = 1 << 20


@dataclass(frozen=True)
class Input:
    """One case: ``points`` int64 ``(2N, 2)``, mackerels first then sardines; ``n`` = N."""

    n: int
    points: np.ndarray


def _round_half_away(v: np.ndarray) -> np.ndarray:
    """Round to nearest, halves away from zero (Rust ``f64::round``)."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def generate(seed: int, n: int = N, clusters: tuple[int, int] = (10, 25)) -> str:
    """Input text of one case following the statement's generation procedure.

    Our own implementation with numpy's PCG64 seeded by ``seed``: the distribution is the
    statement's; the official files (ChaCha20 streams) are not reproduced bit for bit.

    Args:
        seed: any non-negative int.
        n: points per kind (5,000 in the contest).
        clusters: inclusive range of the number of clusters per kind (10 to 25 in the contest).

    Returns:
        The input text (``N`` then ``2N`` lines ``x y``).
    """
    rng = np.random.default_rng(seed)
    taken = np.empty(0, dtype=np.int64)  # keys x * (D + 1) + y of the points accepted so far
    rows: list[np.ndarray] = []
    for _ in range(2):
        k = int(rng.integers(clusters[0], clusters[1] + 1))
        weights = rng.random(k)
        centres = rng.integers(20_000, 80_001, size=(k, 2))
        sigma = rng.integers(1000, 5001, size=k).astype(np.float64)
        p = weights / weights.sum()
        got: list[np.ndarray] = []
        need = n
        while need > 0:
            batch = max(2 * need, 256)
            which = rng.choice(k, size=batch, p=p)
            xy = _round_half_away(centres[which] + sigma[which, None] * rng.standard_normal((batch, 2)))
            xy = xy[np.all((xy >= 0) & (xy <= D), axis=1)].astype(np.int64)
            keys = xy[:, 0] * (D + 1) + xy[:, 1]
            _, first = np.unique(keys, return_index=True)
            first.sort()
            fresh = first[~np.isin(keys[first], taken)][:need]
            taken = np.concatenate([taken, keys[fresh]])
            got.append(xy[fresh])
            need -= len(fresh)
        rows.append(np.concatenate(got))
    pts = np.concatenate(rows)
    return f"{n}\n" + "".join(f"{x} {y}\n" for x, y in pts.tolist())


def parse_input(text: str) -> Input:
    """Parse an input file (generated or official), checking its shape.

    Raises:
        ValueError: one line saying what is wrong (not integers, truncated, extra numbers,
            a coordinate outside [0, 10^5]).
    """
    tokens = text.split()
    if not tokens:
        raise ValueError("AHC039 input is empty")
    joined = "".join(tokens)
    if not (joined.isascii() and joined.isdigit()) or max(map(len, tokens)) > 12:
        bad = next(t for t in tokens if not (t.isascii() and t.isdigit() and len(t) <= 12))
        raise ValueError(f"AHC039 input: {bad[:40]!r} is not a non-negative integer of at most 12 digits")
    n = int(tokens[0])
    if not 1 <= n <= 10**6:
        raise ValueError(f"AHC039 input: N = {n} is outside [1, 1000000]")
    expected = 1 + 4 * n
    if len(tokens) < expected:
        raise ValueError(f"AHC039 input is truncated: N = {n} needs {expected} numbers, got {len(tokens)}")
    if len(tokens) > expected:
        raise ValueError(f"AHC039 input has {len(tokens) - expected} extra numbers after the 2N = {2 * n} points")
    pts = np.array(tokens[1:], dtype=np.int64).reshape(2 * n, 2)
    if pts.max() > D:
        raise ValueError(f"AHC039 input: coordinate {int(pts.max())} is outside [0, {D}]")
    return Input(n, pts)


def parse_output(text: str) -> list[np.ndarray]:
    """Every polygon printed, as int64 ``(m, 2)`` arrays (the last one is scored).

    Raises:
        AHCInvalid: ``parse``, ``range`` (m outside [4, 1000], a coordinate outside [0, 10^5]),
            ``eof`` (a polygon cut short).
    """
    tokens = split_tokens(text)
    fast = _parse_plain(tokens)
    if fast is not None:
        return fast
    polys, pos = [], 0
    while pos < len(tokens):
        m = read_int(tokens[pos], 4, MAX_VERTICES, "i32")
        pos += 1
        coords = [read_int(tokens[pos + i] if pos + i < len(tokens) else None, 0, D) for i in range(2 * m)]
        pos += 2 * m
        polys.append(np.array(coords, dtype=np.int64).reshape(m, 2))
    return polys


def _parse_plain(tokens: list[str]) -> list[np.ndarray] | None:
    """Fast path of :func:`parse_output` for outputs made only of short unsigned ASCII numbers
    whose every header and coordinate is in range; ``None`` sends anything else to the exact
    token-by-token path (which then finds and names the first broken rule)."""
    joined = "".join(tokens)
    if not tokens or not (joined.isascii() and joined.isdigit()) or max(map(len, tokens)) > 12:
        return None
    values = np.array(tokens, dtype=np.int64)
    polys, pos = [], 0
    while pos < len(values):
        m = int(values[pos])
        block = values[pos + 1:pos + 1 + 2 * m]
        if not 4 <= m <= MAX_VERTICES or len(block) < 2 * m or block.max() > D:
            return None
        polys.append(block.reshape(m, 2))
        pos += 1 + 2 * m
    return polys


def validate_polygon(poly: np.ndarray) -> int:
    """Check the polygon rules in the official order; returns the perimeter.

    Args:
        poly: int64 ``(m, 2)`` vertices, m >= 4, coordinates already range-checked.

    Raises:
        AHCInvalid: ``duplicate``, ``axis``, ``self_intersection`` or ``perimeter``.
    """
    m = len(poly)
    p, q, r = poly, np.roll(poly, -1, axis=0), np.roll(poly, -2, axis=0)
    same = np.all(p == q, axis=1)
    vertical = ~same & (p[:, 0] == q[:, 0])
    horizontal = ~same & ~vertical & (p[:, 1] == q[:, 1])
    diagonal = ~same & ~vertical & ~horizontal
    fold = (vertical & (q[:, 0] == r[:, 0]) & ((p[:, 1] - q[:, 1]) * (r[:, 1] - q[:, 1]) > 0)) | (
        horizontal & (q[:, 1] == r[:, 1]) & ((p[:, 0] - q[:, 0]) * (r[:, 0] - q[:, 0]) > 0))
    bad = np.flatnonzero(same | diagonal | fold)
    if bad.size:
        i = int(bad[0])
        a, b = tuple(p[i].tolist()), tuple(q[i].tolist())
        if same[i]:
            raise AHCInvalid("duplicate", f"vertices {i} and {(i + 1) % m} are both {a}")
        if diagonal[i]:
            raise AHCInvalid("axis", f"edge {i} {a}-{b} is not parallel to an axis")
        raise AHCInvalid("self_intersection", f"edges {i} and {(i + 1) % m} fold back on each other at {b}")
    pair = _touching_pair(np.minimum(p, q), np.maximum(p, q))
    if pair is not None:
        raise AHCInvalid("self_intersection", f"non-adjacent edges {pair[0]} and {pair[1]} touch")
    perimeter = int(np.abs(q - p).sum())
    if perimeter > MAX_PERIMETER:
        raise AHCInvalid("perimeter", f"perimeter {perimeter} exceeds {MAX_PERIMETER}")
    return perimeter


def _touching_pair(lo: np.ndarray, hi: np.ndarray) -> tuple[int, int] | None:
    """A pair of non-adjacent edges whose closed boxes ``[lo, hi]`` intersect, or None.

    Sweep and prune: edges are sorted by their left end; edge ``i`` is paired only with edges
    whose left end lies in ``[lo_i.x, hi_i.x]`` (every x-overlapping pair is found from one
    side), then the y ranges and adjacency are checked. Cost O(m log m + candidate pairs).
    """
    m = len(lo)
    order = np.argsort(lo[:, 0], kind="stable")
    sorted_lo = lo[order, 0]
    start = np.searchsorted(sorted_lo, lo[:, 0], side="left")
    stop = np.searchsorted(sorted_lo, hi[:, 0], side="right")
    counts = stop - start
    total = int(counts.sum())
    first = np.repeat(np.arange(m), counts)
    within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    second = order[np.repeat(start, counts) + within]
    gap = (second - first) % m
    hit = ((gap >= 2) & (gap <= m - 2)
           & (np.maximum(lo[first, 1], lo[second, 1]) <= np.minimum(hi[first, 1], hi[second, 1])))
    if not hit.any():
        return None
    k = int(np.flatnonzero(hit)[0])
    return int(min(first[k], second[k])), int(max(first[k], second[k]))


def inside_mask(poly: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Which points lie inside or on a valid polygon (the official rule, vectorised).

    A point is inside when it lies on an edge, or when an odd number of horizontal edges lie
    strictly above it with ``x0 <= px < x1``. Edges are indexed by sorted keys, so the cost is
    ``O((points + m) log m)`` plus an ``O(m^2)`` table of x-slabs.

    Args:
        poly: int64 ``(m, 2)`` polygon that passed :func:`validate_polygon`.
        points: int64 ``(k, 2)``.

    Returns:
        bool ``(k,)``.
    """
    p, q = poly, np.roll(poly, -1, axis=0)
    px, py = points[:, 0], points[:, 1]
    base = D + 2
    on_edge = np.zeros(len(points), dtype=bool)
    for axis in (0, 1):  # 0: horizontal edges (constant y), 1: vertical edges (constant x)
        const, run = 1 - axis, axis
        sel = (p[:, const] == q[:, const])
        c = p[sel, const]
        lo, hi = np.minimum(p[sel, run], q[sel, run]), np.maximum(p[sel, run], q[sel, run])
        start, end = c * base + lo, c * base + hi
        order = np.argsort(start)
        start, end = start[order], end[order]
        key = points[:, const] * base + points[:, run]
        idx = np.searchsorted(start, key, side="right") - 1
        ok = idx >= 0
        on_edge[ok] |= key[ok] <= end[idx[ok]]
    hsel = p[:, 1] == q[:, 1]
    hy = p[hsel, 1]
    x0, x1 = np.minimum(p[hsel, 0], q[hsel, 0]), np.maximum(p[hsel, 0], q[hsel, 0])
    xs = np.unique(np.concatenate([x0, x1]))
    slab_lo = xs[:-1]
    cover = (x0[None, :] <= slab_lo[:, None]) & (slab_lo[:, None] < x1[None, :])
    ks, es = np.nonzero(cover)
    table = np.sort(ks * base + hy[es])
    slab = np.searchsorted(xs, px, side="right") - 1
    valid = (slab >= 0) & (slab < len(slab_lo))
    slab_c = np.where(valid, slab, 0)
    above = (np.searchsorted(table, slab_c * base + base - 1, side="right")
             - np.searchsorted(table, slab_c * base + py, side="right"))
    odd = valid & (above % 2 == 1)
    return on_edge | odd


def score_polygon(inp: Input, poly: np.ndarray) -> int:
    """``max(0, a − b + 1)`` for a polygon (validated here first).

    Raises:
        AHCInvalid: a polygon rule is broken (see :func:`validate_polygon`).
    """
    validate_polygon(poly)
    inside = inside_mask(poly, inp.points)
    return max(0, int(inside[:inp.n].sum()) - int(inside[inp.n:].sum()) + 1)


def score_output(inp: Input, text: str) -> int:
    """Score one program output on one case as the official tester does.

    Args:
        inp: the case.
        text: the program's stdout (already decoded).

    Returns:
        The case score (int >= 0); 1 for an empty output.

    Raises:
        AHCInvalid: the first rule broken (the whole output is parsed before the last polygon
            is checked, as by the tester); ``output_size`` for text longer than
            :data:`MAX_OUTPUT_BYTES` (checked first: bounded work whatever the program printed).
    """
    if len(text) > MAX_OUTPUT_BYTES:
        raise AHCInvalid("output_size", f"output too large: {len(text)} characters, the cap is {MAX_OUTPUT_BYTES} bytes")
    polys = parse_output(text)
    if not polys:
        return 1
    return score_polygon(inp, polys[-1])
