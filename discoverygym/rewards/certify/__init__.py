"""Certificates: a construction's value proved in exact arithmetic, never trusting float64.

``certify(env_id, data)`` runs the problem's certifier (one module per family beside this one:
:mod:`.erdos`, :mod:`.autocorrelation`, :mod:`.circle_packing`, :mod:`.sum_difference`,
:mod:`.hadamard`) on the numbers exactly as written in the file (decimals parsed as ``Decimal``),
compares the result with the best known value (:mod:`discoverygym.records`) and with any value the
file claims for itself, and returns the certificate as a JSON-safe dict. ``discoverygym certify``
is its command line.

Claims: a file's own figure (key ``claimed``, ``claim``, ``value`` or ``score``; a JSON number or a
numeric string) is read as the bound it states in the problem's direction (for a minimised
quantity, "the value is at most the claim"). It is *overstated* unless the certified value implies
that bound (claim >= the true value for a min problem, claim <= it for a max problem): a claim of
0.38 for a true 0.380872… is overstated, rounding is no excuse. A claim the certified value implies
is *consistent* when it lies less than one unit of its own last printed digit from the true value
(or 1e-12 relative, for float64 claims), else *conservative* (harmless: the construction is better than
claimed). A claim that is not a finite number is *unreadable*; every claim key present is judged.
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from functools import partial, wraps
from pathlib import Path
from typing import Any

from discoverygym.errors import InvalidSolution
from discoverygym.judgment import judge_certificate
from discoverygym.records import RECORDS
from discoverygym.rewards.certify.autocorrelation import certify_ac1, certify_ac2, certify_ac3
from discoverygym.rewards.certify.circle_packing import certify_circle_packing
from discoverygym.rewards.certify.erdos import certify_erdos
from discoverygym.rewards.certify.exact import fraction_text, unlimited_int_digits
from discoverygym.rewards.certify.hadamard import certify_hadamard
from discoverygym.rewards.certify.result import Certified
from discoverygym.rewards.certify.sum_difference import certify_sum_difference

__all__ = ["CERTIFIERS", "CLAIM_KEYS", "Certified", "certify", "construction_of", "read_exact_json"]

#: env id -> certifier (construction as parsed JSON -> :class:`Certified`)
CERTIFIERS: dict[str, Callable[[Any], Certified]] = {
    "ErdosMinOverlap-v0": certify_erdos,
    "FirstAutocorrelation-v0": certify_ac1,
    "SecondAutocorrelation-v0": certify_ac2,
    "ThirdAutocorrelation-v0": certify_ac3,
    "CirclePacking-26-v0": partial(certify_circle_packing, n=26),
    "CirclePacking-32-v0": partial(certify_circle_packing, n=32),
    "SumDifference-v0": certify_sum_difference,
    "SumDifference-Large-v0": partial(certify_sum_difference, max_size=None),
    "Hadamard-29-v0": certify_hadamard,
}
#: keys a construction file may use for its own claimed value, in the order they are read
CLAIM_KEYS = ("claimed", "claim", "value", "score")
#: largest construction file read (bytes): 100,000 pieces of 25-character numbers fit in 3 MB
MAX_FILE_BYTES = 64 * 2**20
#: most digits of one integer in a construction file (Python's own int-conversion limit, 4300, which
#: the env's JSON reader applies too); decimals are bounded by cost instead (:func:`.exact.affordable`)
MAX_NUMBER_DIGITS = 4300
#: a claim is judged only within these bounds (else it is "unreadable", never worked on): its
#: decimal exponent within ±MAX_CLAIM_EXPONENT, a string claim of at most MAX_CLAIM_CHARS characters
MAX_CLAIM_EXPONENT = 1000
MAX_CLAIM_CHARS = 200


def _integer(text: str) -> int:
    """``text`` (a JSON integer) as an int, refused beyond :data:`MAX_NUMBER_DIGITS` digits.

    Raises:
        ValueError: more digits than the limit (one line; certify exits 2, as the env's reader refuses it).
    """
    digits = len(text) - (text[:1] == "-")
    if digits > MAX_NUMBER_DIGITS:
        raise ValueError(f"an integer of {digits} digits (starting {text[:20]}…); JSON integers are read up to "
                         f"{MAX_NUMBER_DIGITS} digits (Python's limit, which the env's reader applies too)")
    return int(text)


def read_exact_json(path: str | Path) -> Any:
    """A JSON file with every non-integer number as an exact ``Decimal``.

    The file is opened once and checked on the open descriptor
    (:func:`~discoverygym.io.read_input_bytes`: a regular file of at most :data:`MAX_FILE_BYTES`).
    Decimals are read whatever their exponent (``Decimal("1e-999999999")`` is a coefficient and an
    exponent, nothing is expanded); what they cost is bounded where they are used.

    Raises:
        ValueError: not a regular file, larger than :data:`MAX_FILE_BYTES`, unreadable, or not JSON
            (the message names the file); an integer of more than :data:`MAX_NUMBER_DIGITS` digits.
    """
    from discoverygym.io import read_input_text

    text = read_input_text(path, MAX_FILE_BYTES)
    try:
        return json.loads(text, parse_float=Decimal, parse_int=_integer)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{path} is not readable JSON: {exc}") from None
    except ValueError as exc:  # an integer beyond MAX_NUMBER_DIGITS
        raise ValueError(f"{path}: {exc}") from None


def _bounded_digits(fn: Callable[..., dict]) -> Callable[..., dict]:
    """Run ``fn`` with Python's 4,300-digit int/str limit lifted (:func:`.exact.unlimited_int_digits`):
    certify bounds its inputs by cost itself, and a valid construction whose exact integers have
    5,000 digits (a height of 1e-5000 beside 1) must be certified, not refused (issue 52, #4)."""
    @wraps(fn)
    def bounded(*args: Any, **kwargs: Any) -> dict:
        with unlimited_int_digits():
            return fn(*args, **kwargs)

    return bounded


def _claims(data: Any) -> list[tuple[str, Any, Decimal | None]]:
    """Every claim key of ``data`` present (:data:`CLAIM_KEYS` order) as ``(key, as written, value)``;
    value ``None`` when it is not a finite number or numeric string, or is one beyond the bounds
    (:data:`MAX_CLAIM_CHARS` characters, exponent within ±:data:`MAX_CLAIM_EXPONENT`, at most
    :data:`MAX_NUMBER_DIGITS` digits): such a claim is reported as unreadable, never computed with."""
    if not isinstance(data, dict):
        return []
    out = []
    for key in CLAIM_KEYS:
        if key not in data:
            continue
        raw, value = data[key], None
        if isinstance(raw, (Decimal, int, float, str)) and not isinstance(raw, bool) and not (
                isinstance(raw, str) and len(raw) > MAX_CLAIM_CHARS):
            try:
                value = Decimal(raw.strip() if isinstance(raw, str) else raw)
            except ArithmeticError:
                value = None
            # bounded before any exact arithmetic (issue 52, #1, #2): 1e-999999999 is unreadable
            if value is not None and (not value.is_finite() or (value and abs(value.adjusted()) > MAX_CLAIM_EXPONENT)
                                      or len(value.as_tuple().digits) > MAX_NUMBER_DIGITS):
                value = None
        out.append((key, raw, value))
    return out


def _float64_reading(value: Any) -> Any:
    """``value`` with every decimal replaced by its float64 value (exactly, as a ``Decimal``): the
    construction as the env's JSON reader gives it; ``None`` when no number changes."""
    changed = False

    def read(v: Any) -> Any:
        nonlocal changed
        if isinstance(v, list):
            return [read(x) for x in v]
        if isinstance(v, Decimal) and v.is_finite():
            f = float(v)
            if math.isfinite(f) and Decimal(f) != v:
                changed = True
                return Decimal(f)
        return v

    out = read(value)
    return out if changed else None


def _as_the_env_reads(certifier: Callable[[Any], Certified], construction: Any) -> Certified:
    """``certifier(construction)``; when the exact decimals break a rule that their float64 values
    (what the env reads) keep, the certificate of the float64 values, saying so.

    A construction is valid for certify exactly when it is valid for the env (issue 52): a height of
    ``-1e-400`` is negative as written but ``-0.0`` for the env, a rescaled height of
    ``1 + 1e-30`` is above 1 as written but 1.0 for the env. The value is then exact for the
    construction the env judges, and ``convention`` names the reading.

    Raises:
        InvalidSolution: invalid as written and as float64 (the message of the exact reading).
    """
    try:
        return certifier(construction)
    except InvalidSolution as exact_error:
        floats = _float64_reading(construction)
        if floats is None:
            raise
        try:
            cert = certifier(floats)
        except InvalidSolution:
            raise exact_error from None
        note = (f"read as float64, as the env reads it: as written the construction breaks a rule ({exact_error}) "
                "that its float64 values keep; the value is exact for those float64 values")
        return dataclasses.replace(cert, convention=f"{cert.convention}; {note}" if cert.convention else note)


def _written(raw: Any) -> str:
    """A claim as the file wrote it, cut to 40 characters."""
    text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def judge_claim(claim: Decimal, value: Certified, direction: str) -> dict:
    """Compare a file's claimed value with the certified one (see the module docstring).

    The claim is read as a bound in ``direction`` ("value <= claim" for ``"min"``, ">=" for ``"max"``):
    *overstated* unless the certified value implies it (for an inexact certificate, the whole
    interval must), else *consistent* when less than one unit of the claim's last digit (or 1e-12
    relative) above the truth (below it for ``"max"``), else *conservative*.

    Args:
        claim: the claimed value, exactly as written.
        value: the certified value.
        direction: ``"min"`` or ``"max"`` (the problem's).

    Returns:
        ``{"claimed", "verdict" ("consistent" | "conservative" | "overstated"), "difference"}``,
        difference = claimed − certified (leading digits).
    """
    if value.exact is not None:
        lo = hi = value.exact
    else:
        lo, hi = Fraction(value.interval[0]), Fraction(value.interval[1])
    q = Fraction(claim)
    implied = q >= hi if direction == "min" else q <= lo
    diff = q - (hi if direction == "min" else lo)
    unit = Fraction(1, 10 ** max(0, -claim.as_tuple().exponent))  # of the claim's last printed digit
    close = abs(diff) < unit or abs(diff) <= abs(hi) * Fraction(1, 10**12)
    verdict = "overstated" if not implied else "consistent" if close else "conservative"
    return {"claimed": str(claim), "verdict": verdict, "difference": f"{float(diff):.3g}"}


def construction_of(data: Any) -> Any:
    """The construction in a parsed file: a bare construction, an object with ``construction`` (a
    construction file, ``train``'s ``best.json``), or a run's ``best.json`` of ``search`` (``state``
    with ``solution``).

    Raises:
        ValueError: an object with none of these (the message names the keys looked for).
    """
    if not isinstance(data, dict):
        return data
    if "construction" in data:
        return data["construction"]
    state = data.get("state")
    if isinstance(state, dict) and state.get("solution") is not None:
        return state["solution"]
    if data.get("solution") is not None:
        return data["solution"]
    raise ValueError("a JSON object without a construction: looked for 'construction' (a construction file, "
                     "train's best.json), 'state'.'solution' (search's best.json) and 'solution'")


@_bounded_digits
def certify(env_id: str, data: Any, source: str = "") -> dict:
    """Certify a construction for ``env_id`` and return the certificate (JSON-safe dict).

    Args:
        env_id: a math env with a certifier (:data:`CERTIFIERS`).
        data: the parsed file: a bare construction or an object with ``construction`` (and maybe a claim).
        source: where the construction came from (the file name), recorded in the certificate.

    Returns:
        ``{"env_id", "source", "valid", "error", "value", "value_exact", "interval", "formula",
        "method", "convention", "facts", "claim", "claims", "record", "verdict", "beats_record", "inputs",
        "certified_by"}`` (``claims``: every claim key judged, ``claim`` the first or ``None``;
        ``verdict``: :func:`discoverygym.judgment.judge_certificate`'s outcome, text and ``is_record``;
        ``beats_record``: its ``is_record``, a new record under the env's own rules);
        for an invalid construction ``valid`` is False, ``error`` names the broken rule and the
        value fields are None.

    Raises:
        KeyError: no certifier for ``env_id``.
        ValueError: no construction in ``data`` (:func:`construction_of`).
    """
    certifier = CERTIFIERS[env_id]
    construction = construction_of(data)
    entry = RECORDS[env_id]
    record = {"value": entry.record.exact or repr(entry.record.value), "printed": entry.record.value,
              "source": f"{entry.record.source} {entry.record.date}", "kind": entry.record.kind,
              "exact": bool(entry.record.exact), "convention": entry.record.convention}
    out: dict = {"env_id": env_id, "source": source, "valid": False, "error": None, "value": None,
                 "value_exact": None, "interval": None, "record": record, "beats_record": None,
                 "claim": None, "claims": [], "certified_by": _version()}
    # a run's best.json (train or search) holds the verifier's float64 score, not a claim of its authors
    run_file = isinstance(data, dict) and isinstance(data.get("state"), dict)
    claims = [] if run_file else _claims(data)
    try:
        cert = _as_the_env_reads(certifier, construction)
    except InvalidSolution as exc:
        out["error"] = str(exc)
        judged = [{"key": key, "claimed": _written(raw), "verdict": "invalid construction"} for key, raw, _ in claims]
        out.update(claim=judged[0] if judged else None, claims=judged)
        return out
    out.update({
        "valid": True, "value": cert.text(20),
        "value_exact": None if cert.exact is None else f"{cert.exact.numerator}/{cert.exact.denominator}",
        "interval": [str(cert.interval[0]), str(cert.interval[1])],
        "formula": cert.formula, "method": cert.method, "convention": cert.convention, "facts": cert.facts,
    })
    verdict = judge_certificate(out)  # the one judgment (discoverygym.judgment), as train and search use it
    out["verdict"] = {"outcome": verdict.outcome, "text": verdict.text(), "is_record": verdict.is_record}
    out["beats_record"] = verdict.is_record
    judged = [{"key": key, **judge_claim(value, cert, entry.direction)} if value is not None else
              {"key": key, "claimed": _written(raw), "verdict": "unreadable", "difference": None}
              for key, raw, value in claims]
    out.update(claim=judged[0] if judged else None, claims=judged)
    out["inputs"] = cert.inputs
    return out


def _version() -> str:
    """``discoverygym <version> (commit <sha>)`` when run from a git checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:  # the installed distribution's version (importing the package root would import every env)
        __version__ = version("discoverygym")
    except PackageNotFoundError:
        __version__ = "unknown"
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).parent, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"discoverygym {__version__}" + (f" (commit {sha})" if sha else "")


def value_text(q: Fraction, digits: int = 20) -> str:
    """``q`` to ``digits`` significant digits (truncated; ``…`` when inexact)."""
    return fraction_text(q, digits)
