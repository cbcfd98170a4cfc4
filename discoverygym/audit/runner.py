"""Run the bundled exploits against one env and say which ones its judging let through.

:func:`audit` takes an env id (built with quick options, see :func:`quick_options`) or an env
instance (a user's own problem: ``audit(ProgramEnv(MyTask()))``, ``audit(DiscoveryEnv(my_problem))``),
runs every exploit that applies (:attr:`Exploit.applies_to`) through the public
``env.evaluate(action, parent=..., seed=0)`` and returns one :class:`AuditRow` per exploit.

Observed verdicts:

* ``rejected`` — the failure reward (what an honest env gives every exploit);
* ``accepted, no gain`` — valid, but no better than the honest initial state (exploits that carry a
  valid construction, e.g. scaled by 1e300: an honest verifier may score them exactly);
* ``not judged`` — :class:`~discoverygym.errors.BackendUnavailable` (a kernel env on CPU: correct
  kernels cannot be timed); not a failure;
* ``REWARDED`` — a reward above the failure reward (or a valid state, or a non-finite reward); for
  exploits whose output is wrong, also getting past a correctness stage into ``BackendUnavailable``;
* ``ESCAPED`` — a file the exploit aimed outside its directory exists afterwards;
* ``LEAKED`` — the program printed that it read one of the problem's hidden files;
* ``error`` — ``evaluate`` raised (it must turn every bad candidate into an invalid state).

The last four fail the audit (:attr:`AuditRow.failed`).
"""

from __future__ import annotations

import math
import os
import shutil
import site
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from discoverygym.audit.certify import PROBES as CERTIFY_PROBES
from discoverygym.audit.exploits import LEAK_MARK, AuditContext, Exploit, hidden_paths_of
from discoverygym.audit.library import library
from discoverygym.audit.logs import EXPLOITS as LOG_EXPLOITS
from discoverygym.audit.logs import PROBES as LOG_PROBES
from discoverygym.audit.resume import PROBES as RESUME_PROBES
from discoverygym.audit.znaa import EXPLOITS as ZNAA_EXPLOITS
from discoverygym.envs.registry import make_env
from discoverygym.errors import BackendUnavailable
from discoverygym.sandbox.python import SandboxLimits

__all__ = ["FAILING", "QUICK_OPTIONS", "AuditRow", "audit", "audit_env", "failed", "quick_options"]

#: observed verdicts that fail the audit.
FAILING = frozenset({"REWARDED", "ESCAPED", "LEAKED", "error"})

#: options tried on program envs built from an id, each kept when the env accepts it: CPU kernels
#: with short stage limits, few AtCoder cases, a small bundled denoising subset with a short limit,
#: 4 LASSO problems timed once.
QUICK_OPTIONS: dict[str, Any] = {
    "device": "cpu", "n_cases": 2, "check_timeout_s": 60.0, "time_timeout_s": 60.0,
    "dataset": "pbmc68k-reduced", "n_cells": 60, "n_genes": 80, "timeout_s": 15.0, "workers": 2,
    "n_problems": 4, "time_runs": 1,
}

#: sandbox of the code-mode env the audit adds for a construction env id (seconds, MiB).
QUICK_SANDBOX = SandboxLimits(timeout_s=5.0, memory_mb=2048)


@dataclass(frozen=True)
class AuditRow:
    """The result of one exploit against one env.

    Attributes:
        env: the env id (or the problem's name for an env instance); ``" (code)"`` is appended for
            the code-mode env of a construction id.
        attack: the exploit's name.
        family: the exploit's family.
        description: what the exploit does.
        expected: the verdict an honest env gives.
        observed: the verdict seen (module docstring).
        reward: the reward the env gave (``None`` when it gave none).
        detail: the env's error message, or why the verdict was reached (one line, shortened).
        seconds: wall time of the evaluation.
    """

    env: str
    attack: str
    family: str
    description: str
    expected: str
    observed: str
    reward: float | None
    detail: str
    seconds: float

    @property
    def failed(self) -> bool:
        """Whether this row fails the audit (rewarded, escaped, leaked or crashed the evaluator)."""
        return self.observed in FAILING


def failed(rows: Sequence[AuditRow]) -> list[AuditRow]:
    """The rows that fail the audit."""
    return [r for r in rows if r.failed]


def quick_options(env_id: str, given: dict | None = None) -> dict:
    """The options an audit builds ``env_id`` with: ``given``, plus each :data:`QUICK_OPTIONS` entry
    the env accepts (tried one at a time; construction envs take none of them).

    Raises:
        ValueError: unknown env id, or ``given`` options the env refuses.
    """
    chosen = dict(given or {})
    make_env(env_id, **chosen)  # raises for an unknown id or refused options
    for key, value in QUICK_OPTIONS.items():
        if key in chosen:
            continue
        try:
            make_env(env_id, **chosen, **{key: value})
        except (TypeError, ValueError):
            continue
        chosen[key] = value
    return chosen


def audit(
    env: Any,
    *,
    exploits: Sequence[Exploit] | None = None,
    quick: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    **env_kwargs: Any,
) -> list[AuditRow]:
    """Run the bundled exploits against an env id or an env instance.

    Args:
        env: a registered env id, or an env (``gym.make(...)`` or an env object; a user's own
            ``ProgramTask`` / ``Problem`` wrapped in its env class). An id of a construction env is
            audited in both action modes (constructions, and Python programs in a quick sandbox).
        exploits: the exploits to try (default: :func:`~discoverygym.audit.library.library`).
        quick: for an id, add :func:`quick_options` (CPU kernels, few cases, short limits).
        progress: called as ``progress(attack, done, total)`` after each exploit.
        **env_kwargs: options for ``gym.make(env_id, ...)`` (only with an id).

    Returns:
        One :class:`AuditRow` per exploit that applies, in library order.

    Raises:
        ValueError: unknown env id, refused options, or options given with an env instance.
    """
    if isinstance(env, str):
        options = quick_options(env, env_kwargs) if quick else dict(env_kwargs)
        envs = [(env, make_env(env, **options))]
        task = getattr(envs[0][1], "task", None)
        if quick and getattr(task, "cpu_proxy", False):
            task.cpu_proxy = False  # a quick audit stops a correct CPU kernel at timing ("not judged"), no proxy
        if envs[0][1].action_kind == "construction":
            code_opts = {"sandbox": QUICK_SANDBOX, **options} if quick else options
            envs.append((f"{env} (code)", make_env(env, action_mode="code", **code_opts)))
    else:
        if env_kwargs:
            raise ValueError("env options go with an env id, not with a built env")
        unwrapped = getattr(env, "unwrapped", env)
        envs = [(str(getattr(unwrapped.problem, "name", type(unwrapped.problem).__name__)), unwrapped)]
    chosen = list([*library(), *ZNAA_EXPLOITS, *LOG_EXPLOITS] if exploits is None else exploits)
    plan = [(label, e, x) for label, e in envs for x in chosen if x.applies_to(e)]
    rows: list[AuditRow] = []
    bases: dict[int, Any] = {}
    for done, (label, e, exploit) in enumerate(plan, 1):
        if id(e) not in bases:
            bases[id(e)] = _base_state(e)
        rows.append(audit_env(e, exploit, base=bases[id(e)], label=label))
        if progress is not None:
            progress(f"{label}: {exploit.name}", done, len(plan))
    for label, e in envs if exploits is None else ():  # attacks on the run's log and report (audit.logs)
        for probe in (p for p in (*LOG_PROBES, *CERTIFY_PROBES, *RESUME_PROBES) if p.applies_to(e)):
            start, base = time.perf_counter(), bases.get(id(e)) or _base_state(e)
            observed, detail = probe.run(e, base)
            rows.append(AuditRow(label, probe.name, probe.family, probe.description, probe.expected, observed,
                                 None, _short(detail, 160), time.perf_counter() - start))
    return rows


def _base_state(env: Any) -> Any:
    """The honest initial state (``reset(seed=0)``); its reward is the bar of "baseline" exploits."""
    _, info = env.reset(seed=0)
    return info["state"]


def audit_env(env: Any, exploit: Exploit, *, base: Any = None, label: str | None = None) -> AuditRow:
    """Run one exploit against one (unwrapped) env and classify the outcome.

    Args:
        env: the unwrapped env.
        exploit: the exploit (it should apply: :attr:`Exploit.applies_to`).
        base: the env's honest initial state (default: ``env.reset(seed=0)``'s).
        label: the env's name in the row (default: its problem's name).

    Returns:
        The :class:`AuditRow`.
    """
    base = _base_state(env) if base is None else base
    label = label or str(getattr(env.problem, "name", "env"))
    canary_dir = Path(tempfile.mkdtemp(prefix="dgaudit"))
    ctx = AuditContext(env=env, base=base, canary_dir=canary_dir, hidden_paths=hidden_paths_of(env),
                       site_packages=_site_packages())
    failure = float(env.failure_reward)
    start = time.perf_counter()
    observed, reward, detail, state = "error", None, "", None
    try:
        action = exploit.build(ctx)
        try:
            for _ in range(exploit.runs):  # an exploit that keeps state between runs is judged on its last
                state = env.evaluate(action, parent=base, seed=0)
        except BackendUnavailable as exc:
            passed = exploit.wrong_output and "passed" in str(exc)
            observed = "REWARDED" if passed else "not judged"
            detail = ("a wrong output passed the correctness stage: " if passed else "") + _short(exc)
        except Exception as exc:  # noqa: BLE001 - evaluate must never raise for a bad candidate
            detail = f"evaluate raised {type(exc).__name__}: {_short(exc)}"
        else:
            if state.unscored:  # judged as far as this machine can (no GPU): as BackendUnavailable above
                why = str(state.metadata.get("unscored_reason") or "")
                passed = exploit.wrong_output and "passed" in why
                observed = "REWARDED" if passed else "not judged"
                detail = ("a wrong output passed the correctness stage: " if passed else "") + _short(why)
        if state is not None and not state.unscored:
            reward = state.reward
            observed, detail = _classify(exploit, state, failure, base)
            if observed == "accepted, no gain":
                observed, detail = _stored_is_scored(env, state, observed, detail)
        escaped = [p for p in (*_listing(canary_dir), *ctx.extra_paths) if os.path.lexists(p)]
        leaked = _leak_lines(state) if state is not None else []
        if escaped:
            observed, detail = "ESCAPED", f"created {', '.join(escaped)}; " + detail
        elif leaked:
            observed, detail = "LEAKED", "; ".join(leaked) + "; " + detail
    finally:
        for path in ctx.extra_paths:
            if os.path.lexists(path):
                os.remove(path)
        shutil.rmtree(canary_dir, ignore_errors=True)
    return AuditRow(label, exploit.name, exploit.family, exploit.description, exploit.expected, observed,
                    reward, _short(detail, 160), time.perf_counter() - start)


def _classify(exploit: Exploit, state: Any, failure: float, base: Any) -> tuple[str, str]:
    """``(observed, detail)`` of an evaluated state."""
    reward = state.reward
    finite = isinstance(reward, (int, float)) and math.isfinite(reward)
    if not finite:
        return "REWARDED", f"non-finite reward {reward!r} (valid={state.valid})"
    if exploit.bar == "baseline" and base is not None and base.valid and state.valid:
        bar = float(base.reward)
        if reward > bar + max(1e-6 * max(1.0, abs(bar)), exploit.margin * abs(bar)):
            return "REWARDED", f"reward {reward:.6g} beats the honest initial state's {bar:.6g}"
        return "accepted, no gain", f"valid, reward {reward:.6g} <= the honest initial state's {bar:.6g}"
    if state.valid or reward > failure:
        return "REWARDED", f"valid={state.valid}, reward {reward:.6g} > failure reward {failure:g}"
    return "rejected", state.error or ""


def _stored_is_scored(env: Any, state: Any, observed: str, detail: str) -> tuple[str, str]:
    """For a construction env: the stored solution, judged again, must give the score it was given."""
    if env.action_kind != "construction" or state.solution is None:
        return observed, detail
    again = env.evaluate(state.solution, seed=0)
    if not again.valid or again.score != state.score:
        return "REWARDED", (f"the stored construction is not what was scored: judged again it gives "
                            f"{again.score!r} ({again.error or 'valid'}), not {state.score!r}")
    return observed, detail


def _leak_lines(state: Any) -> list[str]:
    text = f"{state.metadata.get('stdout', '')}\n{state.metadata.get('stderr', '')}"
    return [line.strip() for line in text.splitlines() if line.startswith(LEAK_MARK)][:3]


def _listing(directory: Path) -> list[str]:
    try:
        return [str(p) for p in directory.iterdir()]
    except OSError:
        return []


def _site_packages() -> str:
    paths = [p for p in site.getsitepackages() if os.path.isdir(p)]
    return paths[0] if paths else sysconfig.get_paths()["purelib"]


def _short(value: Any, limit: int = 300) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
