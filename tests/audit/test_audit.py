"""``discoverygym audit``: weakened toy tasks fail it, registered envs pass it, usage errors exit 2.

Every audit here is a real run (programs really run in the sandbox); no verdict is mocked.
"""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest

from discoverygym.audit import audit, failed, library
from discoverygym.cli import main
from discoverygym.envs import DiscoveryEnv, Problem
from discoverygym.envs.program import ProgramEnv, ProgramTask
from discoverygym.envs.registry import PROGRAM_TASKS, TaskSpec, make_env, register_task
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score
from discoverygym.sandbox.python import SandboxLimits, run_program


# ----------------------------------------------------------------------------- weakened toy tasks
def _trusting_sum(construction):
    """A verifier that skips the checks: no finiteness, rank or type test, trusts a claimed score."""
    if isinstance(construction, dict) and "score" in construction:
        return Score(float(construction["score"]))
    try:
        return Score(float(np.sum(np.asarray(construction, dtype=float))))
    except (TypeError, ValueError) as exc:
        raise InvalidSolution(str(exc)) from None


WEAK_PROBLEM = Problem(
    name="weak_sum", title="Weak toy: maximise a sum of values in [0, 1]", quantity="sum",
    direction="max", verifier=_trusting_sum, initial=lambda rng: [0.5] * 4, description="toy",
    sota={"value": 4.0, "source": "toy"}, row_len=None, returns="a list of floats",
    render=lambda arr, size: np.zeros((size, size, 3), np.uint8),
)


class WeakProgramTask(ProgramTask):
    """A Python program task that runs the program in the sandbox but re-verifies nothing it returns."""

    name: ClassVar[str] = "weak_program"
    title: ClassVar[str] = "Weak toy program task"
    quantity: ClassVar[str] = "sum"
    entry: ClassVar[str] = "solve"

    def initial_program(self) -> str:
        return "def solve(**kwargs):\n    return [0.25, 0.25]\n"

    def evaluate(self, source: str, *, seed: int) -> Score:
        run = run_program(source, entry="solve", kwargs={"seed": seed}, limits=SandboxLimits(timeout_s=5.0))
        if not run.ok:
            raise InvalidSolution(run.error or "failed")
        value = run.value
        if isinstance(value, dict):  # trusts the program's own claim
            return Score(float(value.get("score", 0.0)))
        return Score(float(np.sum(np.asarray(value, dtype=float))))


def _by_name(rows):
    return {r.attack: r for r in rows}


def test_weak_construction_problem_fails_the_audit():
    rows = _by_name(audit(DiscoveryEnv(WEAK_PROBLEM)))
    assert rows["nan-entry"].observed == "REWARDED"
    assert rows["inf-entry"].observed == "REWARDED"
    assert rows["huge-scale"].observed == "REWARDED"  # 2e300 beats the honest 2.0
    # the verifier takes the dict's claim; the env then cannot store a dict: evaluate raises, a failure too
    assert rows["self-reported-dict"].observed == "error" and rows["self-reported-dict"].failed
    assert rows["bool-entry"].observed == "REWARDED"
    assert rows["strings"].observed == "REWARDED"  # np.asarray(..., float) parses numeric strings
    # what the honest env refuses, the weak one lets through; exploits it does refuse stay rejected
    assert rows["nested-dicts"].observed == "rejected"


def test_weak_program_task_fails_the_audit():
    rows = _by_name(audit(ProgramEnv(WeakProgramTask())))
    assert rows["py-self-reported-dict"].observed == "REWARDED"
    assert rows["py-self-reported-dict"].reward == 1e9
    assert rows["py-return-inf"].observed == "REWARDED"
    assert rows["py-os-exit"].observed == "rejected"
    # the program exploits, plus the report-injection probe every env gets (issue 40 #5)
    assert {r.family for r in rows.values()} == {"python", "report-injection"}
    assert rows["report-injection"].observed == "rejected"


@pytest.fixture
def weak_registered():
    register_task("WeakToyAudit-v0", TaskSpec(WeakProgramTask, "weak toy"))
    yield "WeakToyAudit-v0"
    PROGRAM_TASKS.pop("WeakToyAudit-v0", None)
    gym.registry.pop("WeakToyAudit-v0", None)


def test_cli_exits_1_when_an_exploit_is_rewarded(weak_registered, capsys):
    assert main(["audit", weak_registered]) == 1
    out = capsys.readouterr().out
    assert "REWARDED" in out and "py-self-reported-dict" in out and "got through" in out


# ----------------------------------------------------------------------------- registered envs pass
def test_cli_audit_of_a_construction_env_passes_and_prints_the_table(capsys):
    assert main(["audit", "SumDifference-v0", "--timeout", "3"]) == 0
    out = capsys.readouterr().out
    assert "audit of SumDifference-v0" in out
    for attack in ("nan-entry", "self-reported-dict", "py-return-nan", "py-infinite-loop"):
        assert attack in out
    assert "exploits rejected" in out and "REWARDED" not in out


def test_audit_of_a_python_program_env_passes():
    pytest.importorskip("scanpy")
    pytest.importorskip("sklearn")
    from discoverygym.sandbox.python import bwrap_available

    if not bwrap_available():
        pytest.skip("bubblewrap unavailable: ScRNADenoising-v0 scores programs only under it")
    names = {"py-return-nan", "py-wrong-shape", "py-self-reported-dict", "py-read-hidden", "py-write-outside"}
    rows = audit("ScRNADenoising-v0", exploits=[x for x in library() if x.name in names])
    assert {r.attack for r in rows} == names  # the hidden-file read applies: the task declares hidden paths
    assert failed(rows) == [], [(r.attack, r.observed, r.detail) for r in failed(rows)]
    assert all(r.observed == "rejected" for r in rows)


def test_page_cache_channel_between_scaling_law_processes_gains_nothing():
    # Issue 40: the audit passed ScalingLaw-Vocab-v0 while a page-cache channel from the train-split
    # fit (given the validation labels) into the validation predictions raised validation R² from
    # 0.95753 (the human law) to 0.96344 (this exploit: the train-split parameters) on both backends.
    from discoverygym.sandbox.python import bwrap_available

    if not bwrap_available():
        pytest.skip("bubblewrap unavailable: scaling-law envs score programs only under it")
    rows = audit("ScalingLaw-Vocab-v0", exploits=[x for x in library() if x.name == "page-cache-labels"])
    assert [(r.attack, r.observed) for r in rows] == [("page-cache-labels", "accepted, no gain")], rows


def test_kernel_zeros_is_rejected_on_cpu():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    rows = audit("TriMul-H100-v0", exploits=[x for x in library() if x.name == "kernel-zeros"])
    assert [(r.attack, r.observed) for r in rows] == [("kernel-zeros", "rejected")]


# ----------------------------------------------------------------------------- library and usage
def test_each_family_applies_to_its_kind_of_env():
    def families(env):
        return {x.family for x in library() if x.applies_to(env)}

    assert families(make_env("CirclePacking-26-v0")) == {"construction"}
    assert families(make_env("CirclePacking-26-v0", action_mode="code")) == {"python"}
    assert families(make_env("TriMul-H100-v0", device="cpu")) == {"kernel"}
    assert families(make_env("KernelBench-L1-Matmul-H100-v0", device="cpu")) == {"kernel"}
    assert families(make_env("AHC039-v0")) == {"cpp", "cross-process"}
    assert families(make_env("ScalingLaw-Vocab-v0")) == {"python", "cross-process"}
    assert all(x.__doc__ or x.description for x in library())
    assert len({x.name for x in library()}) == len(library())


@pytest.mark.parametrize("argv", [
    ["audit"], ["audit", "Nope-v0"], ["audit", "CirclePacking-26-v0", "--all"],
    ["audit", "AHC039-v0", "--n-cases", "0"], ["audit", "CirclePacking-26-v0", "--timeout", "nan"],
])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "discoverygym: error:" in capsys.readouterr().err


def test_options_go_with_an_id_not_with_an_env():
    with pytest.raises(ValueError, match="env id"):
        audit(DiscoveryEnv(WEAK_PROBLEM), device="cpu")


def test_help_lists_audit(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "audit" in capsys.readouterr().out


def test_audit_all_reports_an_env_that_cannot_start_here_as_not_judged(monkeypatch, capsys):
    """An env whose initial program cannot be scored on this machine (ScRNADenoising without bubblewrap)
    is one "not judged" setup row of ``audit --all``, not a traceback; alone, it is a one-line exit 2."""
    import json

    import discoverygym.cli.audit as cli_audit

    def fake_audit(env_id, progress=None, **options):
        if env_id == "ScRNADenoising-v0":
            raise RuntimeError("initial program of scrna_denoising fails: unscored without bubblewrap")
        return []

    monkeypatch.setattr(cli_audit, "audit", fake_audit)
    assert main(["audit", "--all", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["env"], r["observed"]) for r in rows] == [("ScRNADenoising-v0", "not judged")]
    assert main(["audit", "ScRNADenoising-v0"]) == 2
    err = capsys.readouterr().err
    assert "cannot be audited here" in err and "Traceback" not in err
