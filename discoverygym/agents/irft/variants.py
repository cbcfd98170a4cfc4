"""Rule-made program variants: the env's example program with its numeric literals perturbed.

The warm start (:mod:`discoverygym.agents.irft.warmup`) needs prompt → valid-program pairs made
without an LLM. The cheapest rule that works for every Python program env is to keep the program's
text and change its numbers: every float literal and every integer literal >= 4 is multiplied by
``exp(σ · z)``, ``z ~ N(0, 1)``, with probability ``p`` each (small integers are left alone: they
are indices, axis numbers and unpack counts, whose change breaks a program rather than varying it).
Integers stay integers (>= 1). Comments and docstrings are dropped (:func:`compact`), so a variant is
shorter than the example and a small model's answer fits a small token budget.

Nothing here judges a variant; the caller keeps only those its env's verifier accepts.

Source: issue 49 (a warm start from rule-made variants: the example program's shape with random
parameters, each kept only if the verifier accepts it).
"""

from __future__ import annotations

import io
import math
import tokenize

import numpy as np

__all__ = ["compact", "literal_variant", "literal_variants"]


def compact(source: str) -> str:
    """``source`` without comments, docstrings and blank-line runs (same tokens otherwise).

    Args:
        source: a Python program (str).

    Returns:
        the program text, ending with one newline.

    Raises:
        SyntaxError: ``source`` does not tokenize (``tokenize.TokenError`` is re-raised as SyntaxError).
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except tokenize.TokenError as exc:
        raise SyntaxError(f"cannot tokenize the program: {exc}") from None
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()  # 1-based line numbers that hold only a docstring or a comment
    cut: dict[int, int] = {}  # line -> column where a trailing comment starts
    prev = tokenize.NEWLINE
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            if lines[row - 1][:col].strip():
                cut[row] = col
            else:
                drop.add(row)
        elif tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
                                                       tokenize.ENCODING):
            # a statement that is only a string literal: a docstring (or a no-op); drop its lines
            end_tok = tokens[tokens.index(tok) + 1]
            if end_tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                drop.update(range(tok.start[0], tok.end[0] + 1))
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            prev = tok.type
    out: list[str] = []
    for i, line in enumerate(lines, start=1):
        if i in drop:
            continue
        if i in cut:
            line = line[: cut[i]].rstrip() + "\n"
        if not line.strip() and (not out or not out[-1].strip()):
            continue
        out.append(line if line.endswith("\n") else line + "\n")
    while out and not out[-1].strip():
        out.pop()
    return "".join(out)


def _perturb(text: str, rng: np.random.Generator, sigma: float) -> str:
    """One numeric literal's text, scaled by ``exp(σ z)`` (ints stay ints >= 1; floats keep 4 significant digits)."""
    factor = math.exp(sigma * float(rng.standard_normal()))
    try:
        value = int(text, 0)
    except ValueError:
        value = None
    if value is not None:
        return str(max(1, round(value * factor)))
    number = float(text.rstrip("jJ"))
    return f"{number * factor:.4g}" if not text.endswith(("j", "J")) else text


def literal_variant(source: str, rng: np.random.Generator, *, sigma: float = 0.3, p: float = 0.5) -> str:
    """One variant of ``source`` (module docstring): literals scaled by ``exp(σ z)`` with probability ``p``.

    Args:
        source: a Python program (str).
        rng: the random generator (``numpy.random.Generator``).
        sigma: log-scale of the perturbation (> 0; 0.3 ≈ ±35 % at one standard deviation).
        p: probability that one eligible literal is changed, in [0, 1].

    Returns:
        the compacted program with some literals changed (may equal :func:`compact` ``(source)``).

    Raises:
        SyntaxError: ``source`` does not tokenize.
        ValueError: ``sigma <= 0`` or ``p`` outside [0, 1].
    """
    if not sigma > 0 or not 0.0 <= p <= 1.0:
        raise ValueError(f"need sigma > 0 and 0 <= p <= 1, got sigma={sigma!r}, p={p!r}")
    text = compact(source)
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []
    for tok in tokens:
        if tok.type != tokenize.NUMBER or tok.start[0] != tok.end[0]:
            continue
        literal = tok.string.replace("_", "")
        try:
            is_int, value = True, int(literal, 0)
        except ValueError:
            is_int, value = False, None
        if is_int and value is not None and value < 4:
            continue
        if rng.random() < p:
            edits.append((tok.start[0], tok.start[1], tok.end[1], _perturb(literal, rng, sigma)))
    for row, start, end, new in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + new + line[end:]
    return "".join(lines)


def literal_variants(source: str, n: int, rng: np.random.Generator, *, sigma: float = 0.3,
                     p: float = 0.5) -> list[str]:
    """Up to ``n`` distinct variants of ``source`` (:func:`literal_variant`), tried at most ``4 n`` times.

    Raises:
        SyntaxError, ValueError: as :func:`literal_variant`; ``n < 0``.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    seen: set[str] = set()
    out: list[str] = []
    for _ in range(4 * n):
        if len(out) >= n:
            break
        v = literal_variant(source, rng, sigma=sigma, p=p)
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out
