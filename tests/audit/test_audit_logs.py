"""Issue 40: the audit's forged-log, report-injection and op-count-DoS families catch the holes they stand for.

Each probe is run against today's code (rejected) and against the hole put back by monkeypatching
(the verdict main would have given: REWARDED / ESCAPED), so the family can fail.
"""

from __future__ import annotations

import json

import pytest

from discoverygym.audit import logs
from discoverygym.audit.runner import FAILING, audit
from discoverygym.envs.registry import make_env

ENV = "CirclePacking-26-v0"


@pytest.fixture(scope="module")
def circle_env():
    env = make_env(ENV)
    _, info = env.reset(seed=0)
    return env, info["state"]


def _probe(name):
    return next(p for p in logs.PROBES if p.name == name)


def test_the_audit_table_lists_both_probes_rejected(monkeypatch):
    from discoverygym.audit import runner

    monkeypatch.setattr(runner, "library", list)  # the other families are tested in test_audit.py
    monkeypatch.setattr(runner, "CERTIFY_PROBES", ())  # and in test_audit_certify_resume.py
    monkeypatch.setattr(runner, "RESUME_PROBES", ())
    rows = audit(ENV)
    assert {(r.env, r.attack, r.observed) for r in rows} == {
        (ENV, "forged-log", "rejected"), (ENV, "report-injection", "rejected"),
        (f"{ENV} (code)", "report-injection", "rejected")}
    assert not any(r.failed for r in rows)


def test_forged_log_is_caught_and_would_have_been_rewarded_on_main(circle_env, monkeypatch):
    env, base = circle_env
    observed, detail = _probe("forged-log").run(env, base)
    assert observed == "rejected" and "archive.jsonl:3" in detail, detail
    from discoverygym.search.runlog import Replay

    monkeypatch.setattr(Replay, "verify", lambda self, *args, **kwargs: 0)  # main: no re-verification
    observed, detail = _probe("forged-log").run(env, base)
    assert observed == "REWARDED" and observed in FAILING, detail


def test_report_injection_is_caught_and_would_have_escaped_on_main(circle_env, monkeypatch):
    env, base = circle_env
    assert _probe("report-injection").run(env, base)[0] == "rejected"
    import discoverygym.io

    def main_encoder(obj):  # main's escaping: "</" only
        return json.dumps(obj, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")

    monkeypatch.setattr(discoverygym.io, "script_json", main_encoder)
    observed, detail = _probe("report-injection").run(env, base)
    assert observed == "ESCAPED" and "<" in detail, detail


def test_the_noop_flood_applies_to_routing_envs_only():
    pytest.importorskip("qiskit")
    flood = logs.EXPLOITS[0]
    assert flood.applies_to(make_env("QubitRouting-v0", cases=["4gt13_92_q20"]).unwrapped)
    assert not flood.applies_to(make_env(ENV))
