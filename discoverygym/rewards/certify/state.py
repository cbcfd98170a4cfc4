"""The verdict on a run's best state: certify its construction, then the one judgment (:mod:`discoverygym.judgment`).

``train``, ``search``, ``compare`` and ``report`` call :func:`judge_state` on the best state, so the
console says what ``discoverygym certify`` says for the run's ``best.json``.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

from discoverygym.judgment import Verdict, judge, judge_certificate
from discoverygym.rewards.certify import CERTIFIERS, certify

__all__ = ["MAX_AUTO_CERTIFY", "judge_state"]

#: the largest construction (numbers) the console certifies before judging; larger ones are judged in float64
MAX_AUTO_CERTIFY = 1_000_000


def judge_state(env_id: str, problem: Any, state: Any) -> Verdict:
    """The verdict on a run's best state (a :class:`~discoverygym.types.State` or its dict).

    Certifies the state's construction when ``env_id`` has a certifier (module docstring), so the
    verdict is the one ``discoverygym certify`` gives for the run's ``best.json``; otherwise compares
    the float64 score with the published value.

    Args:
        env_id: the env; problem: its problem (``direction``, ``sota``); state: the best state or ``None``.

    Returns:
        :class:`Verdict` (outcome ``"none"`` for no valid state, no finite record or a CPU-proxy score).
    """
    get = state.get if isinstance(state, dict) else (lambda k, d=None: getattr(state, k, d))
    if state is None or not get("valid") or get("score") is None:
        return Verdict("none", "", "", "", note="no valid state to compare with the record")
    metadata = get("metadata") or {}
    if metadata.get("proxy"):
        return Verdict("none", "", "", "", note=f"the best is a {str(metadata['proxy']).upper()} proxy score, "
                                                "not comparable with the GPU record")
    score = float(get("score"))
    solution = get("solution")
    note = ""
    if env_id in CERTIFIERS and solution is not None and _size(solution) <= MAX_AUTO_CERTIFY:
        try:
            cert = certify(env_id, {"construction": _exact(solution)}, source="best state")
        except ValueError as exc:  # beyond certify's cost limits (CertifyLimit): judged in float64, and said so
            note = f"not certified ({exc}); run `discoverygym certify` on best.json"
        else:
            if cert["valid"]:
                return judge_certificate(cert)
            return Verdict("none", repr(score), "", "", note=f"its construction fails the exact check: {cert['error']}")
    q = Fraction(score)
    return judge(env_id, problem.direction, q, shown=f"{score:.12g}", sota=getattr(problem, "sota", None),
                 basis="float64", note=note)


def _size(x: Any) -> int:
    """How many numbers a nested list (or array) holds."""
    if hasattr(x, "tolist") and hasattr(x, "size"):
        return int(x.size)
    return sum(_size(v) for v in x) if isinstance(x, (list, tuple)) else 1


def _exact(x: Any) -> Any:
    """A construction with every float as the ``Decimal`` of its shortest repr (what ``best.json`` holds)."""
    if isinstance(x, (list, tuple)):
        return [_exact(v) for v in x]
    if isinstance(x, float):
        return Decimal(repr(x))
    if hasattr(x, "tolist"):
        return _exact(x.tolist())
    return x
