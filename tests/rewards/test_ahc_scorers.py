"""AHC039 / AHC058 scorers: official scores of published outputs, official verdicts, every rule.

Reference data (../shared/data/ahc) is optional: those tests skip without it. The other tests
check each rule on hand-made outputs and compare the vectorised AHC039 geometry with a direct,
loop-by-loop reading of the statement's rules written here.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

import numpy as np
import pytest

from discoverygym.rewards.ahc import ahc039, ahc058
from discoverygym.rewards.ahc.textio import AHCInvalid, decode_output, read_int, split_lines, split_tokens

AHC = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "ahc"

# Official tester messages -> our rule ids (the verdict categories must agree).
OFFICIAL_RULES = [
    ("Parse error", "parse"), ("Out of range", "range"), ("Unexpected EOF", "eof"),
    ("is not parallel to the axes", "axis"), ("self-intersecting", "self_intersection"),
    ("length is too long", "perimeter"), ("consecutive vertices share", "duplicate"),
    ("Not enough apples", "insufficient_apples"), ("Not enough actions", "not_enough_actions"),
    ("Too many tokens", "too_many_tokens"),
]


def _need(problem: str) -> Path:
    root = AHC / problem
    if not (root / "outputs_published" / "scores.csv").is_file():
        pytest.skip(f"../shared/data/ahc/{problem} is not present")
    return root


def _official_rule(message: str) -> str:
    return next(rule for key, rule in OFFICIAL_RULES if key in message)


# ------------------------------------------------------------------ reference data
@pytest.mark.parametrize("problem,rules", [("ahc039", ahc039), ("ahc058", ahc058)])
def test_published_outputs_score_as_official_tester(problem, rules):
    root = _need(problem)
    rows = list(csv.DictReader((root / "outputs_published" / "scores.csv").read_text().splitlines()))
    assert len(rows) >= 100
    for row in rows:
        inp = rules.parse_input((root / "inputs" / f"{row['case']}.txt").read_text())
        text = decode_output((root / "outputs_published" / f"{row['case']}.txt").read_bytes())
        assert rules.score_output(inp, text) == int(row["score"]), row["case"]


@pytest.mark.parametrize("problem,rules", [("ahc039", ahc039), ("ahc058", ahc058)])
def test_hand_made_outputs_get_official_verdicts(problem, rules):
    root = _need(problem)
    for row in csv.DictReader((root / "invalid" / "verdicts.csv").read_text().splitlines()):
        inp = rules.parse_input((root / "inputs" / f"{row['input_case']}.txt").read_text())
        text = (root / "invalid" / row["output_file"]).read_text()
        if row["official_verdict"] == "accepted":
            assert rules.score_output(inp, text) == int(row["official_score"]), row["output_file"]
        else:
            with pytest.raises(AHCInvalid) as err:
                rules.score_output(inp, text)
            assert err.value.rule == _official_rule(row["official_message"]), row["output_file"]


# ------------------------------------------------------------------ AHC039 rules
def _small_input(points, n=None) -> ahc039.Input:
    pts = np.asarray(points, dtype=np.int64)
    return ahc039.Input(n if n is not None else len(pts) // 2, pts)


def _poly_text(vertices) -> str:
    return f"{len(vertices)}\n" + "".join(f"{x} {y}\n" for x, y in vertices)


INP39 = _small_input([(5, 5), (50, 50), (150, 150), (15, 5)], n=2)  # mackerels (5,5),(50,50); sardines


@pytest.mark.parametrize("vertices,rule", [
    ([(100, 110), (130, 110), (130, 120), (110, 120), (110, 100), (120, 100), (120, 130), (100, 130)],
     "self_intersection"),                                                       # crossing edges
    ([(0, 0), (10, 0), (10, 10), (20, 10), (20, 20), (10, 20), (10, 10), (0, 10)], "self_intersection"),
    ([(0, 0), (10, 0), (10, 0), (10, 10), (0, 10)], "duplicate"),                # repeated vertex
    ([(0, 0), (10, 0), (5, 0), (5, 10), (0, 10)], "self_intersection"),          # edge folds back
    ([(0, 0), (10, 0), (12, 10), (0, 10)], "axis"),                              # slanted edge
    ([(0, 0), (100000, 0), (100000, 100000), (90000, 100000), (90000, 10000), (80000, 10000),
      (80000, 100000), (0, 100000)], "perimeter"),                               # 580,000 > 400,000
    ([(i % 2, i) for i in range(1001)], "range"),                                # 1001 vertices
    ([(0, 0), (10, 0), (10, 100001), (0, 100001)], "range"),                     # outside the square
    ([(0, 0), (10, 0), (10, 10)], "range"),                                      # 3 vertices
])
def test_ahc039_invalid_polygons_score_zero_with_rule(vertices, rule):
    with pytest.raises(AHCInvalid) as err:
        ahc039.score_output(INP39, _poly_text(vertices))
    assert err.value.rule == rule
    assert rule in str(err.value)


@pytest.mark.parametrize("text,rule", [
    ("hello world\n", "parse"), ("4\n0 0\n10 0\n10 10\n", "eof"), ("4\n0 0\n10 0\n10 10\n0 1_0\n", "parse"),
    ("4\n0 0\n10 0\n10 10\n0 ١٠\n", "parse"), ("4.0\n0 0\n10 0\n10 10\n0 10\n", "parse"),
    ("4\n0 0\n10 0\n10 10\n0 10\n4\n0 0\n", "eof"),  # an earlier valid polygon does not save a broken last one
])
def test_ahc039_parse_rules(text, rule):
    with pytest.raises(AHCInvalid) as err:
        ahc039.score_output(INP39, text)
    assert err.value.rule == rule


def test_ahc039_tester_conventions():
    square = [(0, 0), (10, 0), (10, 10), (0, 10)]
    assert ahc039.score_output(INP39, _poly_text(square)) == 2              # (5,5) inside: 1 + 1
    assert ahc039.score_output(INP39, _poly_text(square[::-1])) == 2        # clockwise accepted
    boundary = [(5, 5), (60, 5), (60, 60), (5, 60)]                          # (5,5) vertex, (15,5) on edge
    assert ahc039.score_output(INP39, _poly_text(boundary)) == 2            # 1 + 2 - 1
    collinear = [(0, 0), (5, 0), (10, 0), (10, 10), (0, 10)]
    assert ahc039.score_output(INP39, _poly_text(collinear)) == 2
    assert ahc039.score_output(INP39, "") == 1                               # empty output: tester gives 1
    last = _poly_text([(100, 100), (200, 100), (200, 200), (100, 200)])     # last polygon counts
    assert ahc039.score_output(INP39, _poly_text(square) + last) == 0       # 1 - 1 sardine
    assert ahc039.score_output(INP39, "+4\n0 0 +10 0\t10 10\u3000 0 10") == 2  # Rust accepts '+', Unicode spaces


def _reference_inside(poly, point) -> bool:
    """The statement's rule read literally: on an edge, or odd crossings of edges above."""
    inside = False
    for j in range(len(poly)):
        (px, py), (qx, qy) = poly[j], poly[(j + 1) % len(poly)]
        if min(px, qx) <= point[0] <= max(px, qx) and min(py, qy) <= point[1] <= max(py, qy):
            return True
        if py == qy and py > point[1] and min(px, qx) <= point[0] < max(px, qx):
            inside = not inside
    return inside


def _reference_check(poly) -> str | None:
    m = len(poly)
    for i in range(m):
        p, q, r = poly[i], poly[(i + 1) % m], poly[(i + 2) % m]
        if p == q:
            return "duplicate"
        if p[0] == q[0]:
            if q[0] == r[0] and (p[1] - q[1]) * (r[1] - q[1]) > 0:
                return "self_intersection"
        elif p[1] == q[1]:
            if q[1] == r[1] and (p[0] - q[0]) * (r[0] - q[0]) > 0:
                return "self_intersection"
        else:
            return "axis"
    for i in range(m):
        for k in range(2, m - 1):
            j = (i + k) % m
            a, b, c, d = poly[i], poly[(i + 1) % m], poly[j], poly[(j + 1) % m]
            if (max(min(a[0], b[0]), min(c[0], d[0])) <= min(max(a[0], b[0]), max(c[0], d[0]))
                    and max(min(a[1], b[1]), min(c[1], d[1])) <= min(max(a[1], b[1]), max(c[1], d[1]))):
                return "self_intersection"
    if sum(abs(poly[i][0] - poly[(i + 1) % m][0]) + abs(poly[i][1] - poly[(i + 1) % m][1]) for i in range(m)) > 400000:
        return "perimeter"
    return None


def _random_rectilinear(rng, cells=8, size=1000) -> list[tuple[int, int]]:
    """Boundary of a random histogram of ``cells`` columns (a simple rectilinear polygon)."""
    heights = rng.integers(1, cells, size=cells)
    for k in range(1, cells):  # neighbouring columns differ, so no vertex repeats
        if heights[k] == heights[k - 1]:
            heights[k] = heights[k - 1] % (cells - 1) + 1
    heights = heights * size
    width = max(60, 2 * cells)
    xs = np.sort(rng.choice(np.arange(1, width), size=cells - 1, replace=False)) * size
    edges = [0, *xs.tolist(), width * size]
    verts = [(edges[0], 0), (edges[-1], 0)]
    for k in range(cells - 1, -1, -1):
        verts += [(edges[k + 1], int(heights[k])), (edges[k], int(heights[k]))]
    return verts


def test_ahc039_geometry_matches_direct_rules():
    rng = np.random.default_rng(1)
    for trial in range(40):
        poly = _random_rectilinear(rng)
        if trial % 2:  # break it at random: move one coordinate of one vertex
            i = int(rng.integers(len(poly)))
            x, y = poly[i]
            poly[i] = (x + int(rng.integers(-3, 4)) * 1000, y) if rng.random() < 0.5 else (x, max(0, y + 1000))
        ref = _reference_check(poly)
        arr = np.array(poly, dtype=np.int64)
        if ref is None:
            ahc039.validate_polygon(arr)
            grid = np.stack(np.meshgrid(np.arange(-500, 61_000, 500), np.arange(0, 9_000, 250)), -1).reshape(-1, 2)
            expected = np.array([_reference_inside(poly, tuple(p)) for p in grid.tolist()])
            assert np.array_equal(ahc039.inside_mask(arr, grid), expected)
        else:
            with pytest.raises(AHCInvalid) as err:
                ahc039.validate_polygon(arr)
            assert err.value.rule == ref


def test_ahc039_scoring_10000_points_is_fast():
    inp = ahc039.parse_input(ahc039.generate(0))
    cols = 499  # a comb: 499 columns of alternating heights across the clusters -> 1000 vertices
    edges = np.linspace(10_000, 90_000, cols + 1).astype(int).tolist()
    heights = [50_000 + 20 * (k % 2) for k in range(cols)]
    verts = [(edges[0], 30_000), (edges[-1], 30_000)]
    for k in range(cols - 1, -1, -1):
        verts += [(edges[k + 1], heights[k]), (edges[k], heights[k])]
    poly = np.array(verts, dtype=np.int64)
    assert len(poly) == 1000
    expected_inside = (inp.points[:, 0] >= 10_000) & (inp.points[:, 0] <= 90_000) & (inp.points[:, 1] >= 30_000) & (
        inp.points[:, 1] <= 50_000)  # the comb's teeth (heights above 50,000) hold few points; checked below
    score = ahc039.score_polygon(inp, poly)
    inside = ahc039.inside_mask(poly, inp.points)
    assert np.all(inside[expected_inside])
    start = time.perf_counter()
    for _ in range(5):
        ahc039.score_polygon(inp, poly)
    per_call = (time.perf_counter() - start) / 5
    print(f"score_polygon, 1000 vertices, 10,000 points: {per_call * 1e3:.1f} ms (score {score})")


# ------------------------------------------------------------------ AHC058 rules
INP58 = ahc058.Input(2, 2, 3, 1, (1, 5), ((1, 10), (100, 1000)))


@pytest.mark.parametrize("text,rule", [
    ("0 0\n0 0\n", "not_enough_actions"),            # wrong line count
    ("0 1\n-1\n-1\n", "insufficient_apples"),        # 10 apples needed, 1 held: negative apples
    ("zero\n-1\n-1\n", "parse"), ("2 0\n-1\n-1\n", "range"), ("0 2\n-1\n-1\n", "range"),
    ("-2\n-1\n-1\n", "range"), ("0\n-1\n-1\n", "eof"), ("-1 5\n-1\n-1\n", "too_many_tokens"),
    ("0 -0\n-1\n-1\n", "parse"), ("0 0 0\n-1\n-1\n", "too_many_tokens"),
])
def test_ahc058_invalid_outputs_score_zero_with_rule(text, rule):
    with pytest.raises(AHCInvalid) as err:
        ahc058.score_output(INP58, text)
    assert err.value.rule == rule


def test_ahc058_simulation_and_conventions():
    # buy (0,0) for 1 apple (1 -> 0), then each turn level 0 adds A_0 * B * P = 1: 1, 2, 3 apples
    assert ahc058.score_output(INP58, "0 0\n-1\n-1\n") == round(1e5 * np.log2(3))
    with pytest.raises(AHCInvalid) as err:  # the second purchase of (0,0) costs 2 while 1 is held
        ahc058.score_output(INP58, "0 0\n0 0\n0 1\n")
    assert err.value.rule == "insufficient_apples"
    # comments, blank lines, CRLF, '+' signs; lines after the T-th action are ignored.
    # turns: buy (1 -> 0, +1 = 1); nothing (2); buy for 2 (0, +2 = 2)
    noisy = "# plan\r\n\r\n 0 0 \r\n#x\n-1\n+0 +0\nthis line is ignored\n"
    assert ahc058.score_output(INP58, noisy) == 100000
    assert ahc058.score_output(INP58, "-1\n-1\n-1\n") == 0   # 1 apple: log2(1) = 0


def test_ahc058_simulation_matches_direct_rules():
    rng = np.random.default_rng(3)
    for seed in range(5):
        inp = ahc058.parse_input(ahc058.generate(seed))
        a, c = np.array(inp.a), np.array(inp.c)
        # a random affordable plan computed by the statement's procedure, in exact integers
        b = [[1] * inp.n for _ in range(inp.l)]
        p = [[0] * inp.n for _ in range(inp.l)]
        apples, lines = inp.k, []
        for _ in range(inp.t):
            i, j = int(rng.integers(inp.l)), int(rng.integers(inp.n))
            cost = int(c[i, j]) * (p[i][j] + 1)
            if cost <= apples and rng.random() < 0.7:
                apples -= cost
                p[i][j] += 1
                lines.append(f"{i} {j}")
            else:
                lines.append("-1")
            for lv in range(inp.l):
                for jd in range(inp.n):
                    if lv == 0:
                        apples += int(a[jd]) * b[0][jd] * p[0][jd]
                    else:
                        b[lv - 1][jd] += b[lv][jd] * p[lv][jd]
        assert apples < 2**63
        assert ahc058.score_output(inp, "\n".join(lines)) == int(np.floor(1e5 * np.log2(float(apples)) + 0.5))


# ------------------------------------------------------------------ text rules
def test_rust_like_text_rules():
    assert split_tokens(" 1\x0b2\u20003 ") == ["1", "2", "3"]
    assert split_tokens("1\x1c2") == ["1\x1c2"]          # not whitespace for Rust
    assert split_lines("a\r\n b \n\n") == ["a", "b", ""]
    assert read_int("+7", 0, 10) == 7
    for bad, kind in (("1_0", "i64"), ("-1", "usize"), ("99999999999", "i32"), ("", "i64"), ("+", "i64")):
        with pytest.raises(AHCInvalid):
            read_int(bad, -100, 100, kind)
    with pytest.raises(AHCInvalid) as err:
        decode_output(b"4\n\xff\n")
    assert err.value.rule == "not_utf8"


def test_ahc039_fast_and_exact_parsers_agree():
    plain = "04\n0 0\n10 0\n010 10\n0 10\n4 1 1 5 1 5 5 1 5\n"
    signed = plain.replace("04", "+4")   # '+' takes the token-by-token path
    fast, exact = ahc039.parse_output(plain), ahc039.parse_output(signed)
    assert ahc039._parse_plain(split_tokens(signed)) is None and ahc039._parse_plain(split_tokens(plain)) is not None
    assert len(fast) == len(exact) == 2 and all(np.array_equal(a, b) for a, b in zip(fast, exact))
    for broken in ("1001 " + "0 " * 2002, "4 0 0 1 0 1 1 0 100001", "4 0 0 1 0 1 1 0"):
        with pytest.raises(AHCInvalid):
            ahc039.parse_output(broken)


# --------------------------------------------------------------------------- input checks, output cap
@pytest.mark.parametrize("text, problem", [
    ("3", "truncated"), ("hello", "not a non-negative integer"), ("1\n0 0 1 1 5", "extra"),
    ("1\n0 0 1 100001", "outside"), ("1\n0 0 1 -1", "not a non-negative integer"), ("0", "outside"),
    ("1\n0 0 1 99999999999999999999", "12 digits"),
])
def test_ahc039_input_errors_are_one_line(text, problem):
    with pytest.raises(ValueError, match=problem) as err:
        ahc039.parse_input(text)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("text, problem", [
    ("10 4 500", "truncated"), ("10 4 500 1\n1 2", "truncated"), ("x", "not a non-negative integer"),
    ("0 4 500 1", "outside"), ("1 1 1 1\n1\n1\n7", "extra"),
])
def test_ahc058_input_errors_are_one_line(text, problem):
    with pytest.raises(ValueError, match=problem):
        ahc058.parse_input(text)


def test_outputs_over_the_cap_are_refused_before_parsing():
    square = "4\n0 0\n0 1\n1 1\n1 0\n"
    big039 = square * (ahc039.MAX_OUTPUT_BYTES // len(square) + 1)
    with pytest.raises(AHCInvalid) as err:
        ahc039.score_output(ahc039.parse_input(ahc039.generate(0)), big039)
    assert err.value.rule == "output_size"
    with pytest.raises(AHCInvalid) as err:
        ahc058.score_output(ahc058.parse_input(ahc058.generate(0)), "-1\n" * (ahc058.MAX_OUTPUT_BYTES // 3 + 1))
    assert err.value.rule == "output_size"
    assert ahc039.MAX_OUTPUT_BYTES >= 1001 * 14 and ahc058.MAX_OUTPUT_BYTES >= 500 * 8
