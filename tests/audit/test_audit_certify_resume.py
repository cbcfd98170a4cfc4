"""The audit's ``certify`` and ``resume`` families (issue 52) pass on this code and fail on the old behaviour.

Each probe is run for real (certify in a child process); the negative controls put the broken
behaviour back (a result read without judging, a resume that keeps a timed program's logged score,
a certify that says "valid" for whatever it reads) and the probe must then report a failing verdict.
"""

from __future__ import annotations

import json

import pytest

from discoverygym.audit import certify as certify_probes
from discoverygym.audit import resume as resume_probes
from discoverygym.audit.runner import FAILING
from discoverygym.envs.program import ProgramEnv, ProgramTask
from discoverygym.envs.registry import make_env
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score
from discoverygym.search import runlog

PROBES = {p.name: p for p in (*certify_probes.PROBES, *resume_probes.PROBES)}


@pytest.fixture(scope="module")
def erdos():
    env = make_env("ErdosMinOverlap-v0")
    _, info = env.reset(seed=0)
    return env, info["state"]


def test_certify_agrees_with_the_env_and_the_probe_sees_a_disagreement(erdos, monkeypatch):
    env, base = erdos
    observed, detail = PROBES["certify-agrees"].run(env, base)
    assert observed == "rejected", detail
    assert "1e400: both invalid" in detail and "both valid" in detail

    def always_valid(env_id, path, *extra):  # a certify that says "certified" for anything
        return 0, ""

    monkeypatch.setattr(certify_probes, "_certify", always_valid)
    observed, detail = PROBES["certify-agrees"].run(env, base)
    assert observed in FAILING and "evaluate says invalid" in detail


def test_a_forged_result_is_refused_and_the_probe_sees_one_kept(erdos, monkeypatch):
    env, base = erdos
    assert PROBES["forged-result"].run(env, base)[0] == "rejected"
    from discoverygym.search import results

    # the old behaviour: the file read back as it is
    monkeypatch.setattr(results, "verified_result", lambda path, env_id, env_kwargs=None: json.loads(path.read_text()))
    observed, _ = PROBES["forged-result"].run(env, base)
    assert observed in FAILING


class TimedTask(ProgramTask):
    """``return N`` scores N; timed like a kernel (scores are measurements)."""

    name = "timed-probe"
    title = "Timed"
    quantity = "answer"
    entry = "answer"
    nondeterministic = True

    @property
    def sota(self) -> dict:
        return {"value": 100.0, "source": "definition"}

    def initial_program(self) -> str:
        return "def answer():\n    return 3\n"

    def evaluate(self, source: str, *, seed: int) -> Score:
        try:
            return Score(float(int(source.split("return ")[1])), {})
        except (IndexError, ValueError):
            raise InvalidSolution("no answer") from None


def test_a_timed_failing_program_is_refused_and_the_probe_sees_it_kept(monkeypatch):
    env = ProgramEnv(TimedTask())
    _, info = env.reset(seed=0)
    base = info["state"]
    probe = PROBES["forged-timing"]
    assert probe.applies_to(env)
    observed, detail = probe.run(env, base)
    assert observed == "rejected" and "fails when run again" in detail
    monkeypatch.setattr(runlog, "_remeasure", lambda *a, **k: 0)  # the old behaviour: keep the logged score
    observed, _ = probe.run(env, base)
    assert observed in FAILING


def test_the_timing_probe_is_the_page_cache_exploit_without_the_refused_calls():
    from discoverygym.audit.side_channels import _PAGE_CACHE, _PAGE_CACHE_TIMING, EXPLOITS

    assert "page-cache-timing" in {x.name for x in EXPLOITS}
    assert "RWF_NOWAIT" in _PAGE_CACHE and "RWF_NOWAIT" not in _PAGE_CACHE_TIMING
    assert "posix_fadvise" not in _PAGE_CACHE_TIMING and "perf_counter_ns" in _PAGE_CACHE_TIMING
    compile(_PAGE_CACHE_TIMING, "timing", "exec")
