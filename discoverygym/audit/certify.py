"""The ``certify`` family: ``discoverygym certify`` is total and agrees with ``evaluate`` (issue 52, #1-#8).

Each probe writes a file built from the env's honest initial construction and runs the real
command line (``python -m discoverygym.cli certify``) in a child process with a wall limit, so a
hang is seen as one (``REWARDED``: the command did not answer), never as a hung audit:

* ``certify-huge-claims``: the claims ``"score": 1e-999999999`` and ``"claimed": "1e999999999"``
  beside a valid construction (on main: no answer in 60 s). It must answer, exit 0 or 1.
* ``certify-agrees``: the construction with one entry overflowing float64 (``1e400``: the env
  reads ``inf``, invalid) and with one entry moved by ``1e-5000`` (the env reads the same float64,
  valid); certify's verdict (exit 0 valid / 1 invalid) must be the env's for both (on main: valid,
  value 1 for the first; a usage error for the second).
* ``certify-out-input``: ``--out`` naming the input file, then a directory (on main the certificate
  silently replaced the construction; a directory gave a traceback): exit 2, the input unchanged.
* ``certify-device``: the input is ``/dev/zero`` (on main a path flipping to it was read until the
  OOM killer came): refused in one line, exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

from discoverygym.audit.logs import Probe

__all__ = ["PROBES"]

#: seconds a certify run may take in a probe (an honest answer takes a few seconds, start-up included)
LIMIT_S = 60.0


def env_id_of(env: Any) -> str | None:
    """The registered id of a construction env with a certifier, else ``None``."""
    from discoverygym.rewards.certify import CERTIFIERS

    spec = getattr(env, "spec", None)
    env_id = getattr(spec, "id", None)
    if env_id in CERTIFIERS and getattr(env, "action_kind", None) == "construction":
        return env_id
    return None


def _float_valued(env: Any) -> bool:
    """A certifiable env whose constructions are real numbers (not the integer Hadamard / sum-difference)."""
    env_id = env_id_of(env)
    return env_id is not None and not env_id.startswith(("Hadamard", "SumDifference"))


def _certify(env_id: str, path: Path, *extra: str) -> tuple[int | None, str]:
    """``(exit code or None on timeout, last stderr line)`` of ``discoverygym certify env_id path``."""
    try:
        done = subprocess.run([sys.executable, "-m", "discoverygym.cli", "certify", env_id, str(path), "--json", *extra],
                              capture_output=True, text=True, timeout=LIMIT_S, check=False,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        return None, f"no answer in {LIMIT_S:g} s"
    lines = done.stderr.strip().splitlines()
    return done.returncode, (lines[-1] if lines else "")[:200]


def _numbers_text(construction: Any, where: tuple[int, ...], text: str) -> str:
    """``construction`` as JSON with the number at index path ``where`` written as ``text``."""
    marker = "__DG_NUMBER__"
    value = json.loads(json.dumps(construction))
    slot = value
    for k in where[:-1]:
        slot = slot[k]
    slot[where[-1]] = marker
    return json.dumps(value).replace(f'"{marker}"', text)


def _largest(construction: Any) -> tuple[tuple[int, ...], float]:
    """Index path and value of the largest entry (a positive one: moving it by 1e-5000 keeps it in range)."""
    best: tuple[tuple[int, ...], float] = ((0,), float("-inf"))
    for i, v in enumerate(construction):
        for j, x in enumerate(v if isinstance(v, list) else [v]):
            path = (i, j) if isinstance(v, list) else (i,)
            if isinstance(x, (int, float)) and x > best[1]:
                best = (path, float(x))
    return best


def _huge_claims(env: Any, base: Any) -> tuple[str, str]:
    env_id = env_id_of(env)
    with tempfile.TemporaryDirectory(prefix="dgaudit-certify") as tmp:
        out = []
        for key, claim in (("score", "1e-999999999"), ("claimed", '"1e999999999"')):
            path = Path(tmp) / f"{key}.json"
            path.write_text(f'{{"construction": {json.dumps(base.solution)}, "{key}": {claim}}}')
            code, line = _certify(env_id, path)
            if code not in (0, 1):
                return "REWARDED", f"claim {key}={claim}: {line or f'exit {code}'}"
            out.append(f"{key}={claim}: exit {code}")
    return "rejected", "; ".join(out) + " (answered, the claim left unjudged)"


def _agrees(env: Any, base: Any) -> tuple[str, str]:
    env_id = env_id_of(env)
    where, top = _largest(base.solution)
    with localcontext() as ctx:
        ctx.prec = 6000
        moved = str(Decimal(repr(top)) - Decimal("1e-5000"))
    cases = {"1e400": "1e400", "x - 1e-5000": moved}
    notes = []
    with tempfile.TemporaryDirectory(prefix="dgaudit-certify") as tmp:
        for name, number in cases.items():
            text = _numbers_text(base.solution, where, number)
            judged = env.evaluate(json.loads(text), parent=base, seed=0)  # the env reads float64
            path = Path(tmp) / "c.json"
            path.write_text(text)
            code, line = _certify(env_id, path)
            if code != (0 if judged.valid else 1):
                return "REWARDED", (f"entry {name}: evaluate says {'valid' if judged.valid else 'invalid'}, certify "
                                    f"{'no answer' if code is None else f'exit {code}'} ({line})")
            notes.append(f"{name}: both {'valid' if judged.valid else 'invalid'}")
    return "rejected", "; ".join(notes)


def _out_input(env: Any, base: Any) -> tuple[str, str]:
    env_id = env_id_of(env)
    with tempfile.TemporaryDirectory(prefix="dgaudit-certify") as tmp:
        path = Path(tmp) / "in.json"
        text = json.dumps(base.solution)
        path.write_text(text)
        for target in (path, Path(tmp)):
            code, line = _certify(env_id, path, "--out", str(target))
            if code != 2 or path.read_text() != text or "Traceback" in line:
                return "ESCAPED", f"--out {'the input' if target == path else 'a directory'}: exit {code}, {line}"
    return "rejected", "--out the input file and --out a directory: one line, exit 2, the input unchanged"


def _device(env: Any, base: Any) -> tuple[str, str]:
    code, line = _certify(env_id_of(env), Path("/dev/zero"))
    if code != 2:
        return "REWARDED", f"/dev/zero: {'no answer' if code is None else f'exit {code}'} {line}"
    return "rejected", line


#: the certify probes, in table order.
PROBES: tuple[Probe, ...] = (
    Probe("certify-huge-claims", "certify", "claims 1e-999999999 and \"1e999999999\" beside a valid construction: "
          "certify must answer (on main: no answer in 60 s)", lambda env: env_id_of(env) is not None, _huge_claims),
    Probe("certify-agrees", "certify", "an entry of 1e400 (the env: inf, invalid) and one moved by 1e-5000 (the env: "
          "the same float64, valid): certify's verdict must be the env's", _float_valued, _agrees),
    Probe("certify-out-input", "certify", "--out the input file, --out a directory: one line, exit 2, the input kept",
          lambda env: env_id_of(env) is not None, _out_input),
    Probe("certify-device", "certify", "the input is /dev/zero: refused on the open descriptor, exit 2",
          lambda env: env_id_of(env) is not None, _device),
)
