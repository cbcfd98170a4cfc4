"""Exploits on what a run leaves behind and on the parent's own work: forged log, report injection, op-count DoS.

Three attacks of issue 40 that the env-judging families did not cover:

* ``forged-log`` (family ``forged-log``): one ``eval`` record of ``archive.jsonl`` rewritten to claim
  a far better score (twice as good as the honest initial construction's, with a construction of
  identical elements); resume (:meth:`~discoverygym.search.runlog.Replay.read`) must refuse the log.
  On main a forged CirclePacking record (score 2.9, 26 identical circles of radius 0.5) became the
  resumed run's best.
* ``report-injection`` (family ``report-injection``): a candidate whose error, program and output
  hold ``<!--<script>`` and ``</script>``; the report's embedded JSON must hold no raw ``<``, ``>``
  or ``&`` (on main ``<!--<script`` put Chromium's tokenizer into a state that swallowed the
  page's script).
* ``route-noop-flood`` (family ``op-count-dos``, an :class:`~discoverygym.audit.exploits.Exploit`):
  a router returning its honest routing behind 400,000 no-op SWAPs on one edge; it must be
  refused before anything is replayed (on main the parent replayed 4,000,000 for > 300 s at
  1.26 GB, and 100,000 for 45 s: the unitary check's cost grows with every op).

The first two are :class:`Probe` s: they attack a run directory or a report payload built from
the env's honest initial state, not ``env.evaluate``, and report a verdict the audit table shows
like an exploit's (``rejected``, or ``REWARDED`` / ``ESCAPED``). The report probe checks the
encoder the report embeds its data with (:func:`discoverygym.io.script_json`; the audit sits below
``report/`` in the layers); the page itself is tested in Chromium by ``tests/report``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from discoverygym.audit.exploits import AuditContext, Exploit

__all__ = ["EXPLOITS", "PROBES", "Probe"]


@dataclass(frozen=True)
class Probe:
    """An attack on a run's artefacts (its log, its report) built from one env's honest state.

    Attributes:
        name: short identifier shown in the table.
        family: the exploit family (``"forged-log"``, ``"report-injection"``).
        description: what the attack does, one line.
        applies_to: ``env -> bool`` (the unwrapped env; public attributes only).
        run: ``(env, base state) -> (observed, detail)``; ``observed`` is ``"rejected"`` when the
            artefact refused the attack, else a failing verdict of the audit (``"REWARDED"``,
            ``"ESCAPED"``).
        expected: the verdict an honest implementation gives.
    """

    name: str
    family: str
    description: str
    applies_to: Callable[[Any], bool]
    run: Callable[[Any, Any], tuple[str, str]]
    expected: str = "rejected"


def _forged_log(env: Any, base: Any) -> tuple[str, str]:
    """Write a run directory whose one ``eval`` record claims twice the honest score; resume must refuse it."""
    from discoverygym.search.archive import state_record
    from discoverygym.search.runlog import Replay, RunLog

    problem = env.problem
    honest = float(base.score) if base.score else 1.0
    claimed = 0.5 * honest if getattr(problem, "direction", "max") == "min" else 2.0 * honest  # twice as good
    forged = state_record(base)
    forged.update(id="c0-l0-k0", parent_ids=[base.id], score=claimed, reward=problem.reward(claimed))
    if isinstance(forged.get("solution"), list) and forged["solution"]:
        forged["solution"] = [forged["solution"][0]] * len(forged["solution"])  # every element the same
    with tempfile.TemporaryDirectory(prefix="dgaudit-log") as tmp:
        log = RunLog(tmp)
        log.append({"kind": "init", "state": state_record(base)})
        log.append({"kind": "batch", "traj": 0, "step": 0, "parents": [base.id], "actions": [None], "seeds": [0]})
        log.append({"kind": "eval", "traj": 0, "step": 0, "k": 0, "state": forged})
        log.close()
        try:
            replay = Replay.read(log, problem=problem)
        except ValueError as exc:
            return "rejected", str(exc).replace(tmp, "RUN")
    state = replay.batch(0, 0, [base.id], 1)[1][0]
    return "REWARDED", f"resume accepted a forged eval record claiming score {state.score!r} (honest {base.score!r})"


INJECTION = "<!--<script> </script><script>alert(1)</script> & \u2028"


def _report_injection(env: Any, base: Any) -> tuple[str, str]:
    """Encode a report payload whose candidate texts hold ``<!--<script>`` as the report embeds it
    (:func:`discoverygym.io.script_json`); the result must hold no raw ``<``, ``>``, ``&``, U+2028."""
    from discoverygym.io import script_json

    payload = {"ids": ["init", "c0-l0-k0"], "s": [base.score, None], "errs": [INJECTION],
               "tails": {"1": INJECTION}, "diffs": {"1": f"+x = 2  # {INJECTION}"}}
    block = script_json(payload)
    raw = [c for c in "<>&\u2028" if c in block]
    if raw:
        return "ESCAPED", f"the report's data block holds raw {raw} from candidate text"
    if json.loads(block) != payload:
        return "ESCAPED", "the report's data block does not read back as the candidate text"
    return "rejected", "candidate text stays data (<, >, & and U+2028 escaped as \\uXXXX)"


def _has_verifier(env: Any) -> bool:
    return env.action_kind == "construction" and callable(getattr(env.problem, "verifier", None))


#: the run-artefact probes, in table order.
PROBES: tuple[Probe, ...] = (
    Probe("forged-log", "forged-log", "an eval record of archive.jsonl claims twice the honest score for a "
          "construction of identical elements; resume must refuse it", _has_verifier, _forged_log),
    Probe("report-injection", "report-injection", "a candidate's error, program and output hold "
          "'<!--<script>'; the report's embedded JSON must keep it data", lambda env: True, _report_injection),
)

_FLOOD = '''

_honest_route = route


def route(num_logical, gates, num_physical, edges, seed=0, budget_s=None):
    out = _honest_route(num_logical, gates, num_physical, edges, seed, budget_s)
    out["ops"] = [list(edges[0])] * 400_000 + out["ops"]  # an even number of SWAPs on one edge: a no-op
    return out
'''


def _flood_build(ctx: AuditContext) -> str:
    return (ctx.base.code or "") + _FLOOD


def _routes(env: Any) -> bool:
    return env.action_kind == "code" and env.program_language == "python" and env.program_entry == "route"


#: exploits judged by ``env.evaluate`` (op-count DoS).
EXPLOITS: tuple[Exploit, ...] = (
    Exploit("route-noop-flood", "op-count-dos", "the honest routing behind 400,000 no-op SWAPs on one edge "
            "(valid, but the parent replays every op): refused before the replay", _routes, _flood_build),
)
