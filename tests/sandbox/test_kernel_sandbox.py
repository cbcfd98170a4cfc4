"""The kernel candidate's sandbox, end to end on CPU (issue 14's kernel classes).

Each test drives a real candidate process through :func:`run_stage` (static checks bypassed: the
sandbox must hold against code that got past them) or through ``gym.make(..., device="cpu")``.
Classes: arbitrary code reaching a shell through compiler internals (class 1), source smuggled
past the checker by a coding cookie (class 2), stage lifetimes (class 3), forged timings.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

import discoverygym
from discoverygym.envs.kernels import _EXAMPLES, make_trimul
from discoverygym.errors import BackendUnavailable

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from discoverygym.sandbox.kernels.launcher import new_workdir, remove_workdir, run_stage

BASELINE = (_EXAMPLES / "trimul_pytorch.py").read_text()
REPO = Path(discoverygym.__file__).resolve().parents[1]


def bwrap_works() -> bool:
    try:
        from discoverygym.sandbox.kernels import box
    except ImportError:  # before the sandbox existed
        import shutil

        return shutil.which("bwrap") is not None
    return box.available()


bwrap = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot create a sandbox here")


def stage(source: str, job: dict, workdir, timeout_s: float, confined: bool | None = None) -> dict:
    """run_stage in the sandbox when ``confined`` (default: where bubblewrap works), else opted out."""
    confined = bwrap_works() if confined is None else confined
    kw = {} if confined else {"allow_unconfined": True}
    return run_stage(source, job, str(workdir), timeout_s=timeout_s, **kw)


def check_job(n_cases: int = 1) -> dict:
    cases = make_trimul(device="cpu", n_cases=n_cases).test_cases()
    return {"stage": "check", "problem": "trimul", "device": "cpu", "seed": 0, "cases": [c.to_dict() for c in cases]}


def time_job(n_repeats: int = 4, **timing) -> dict:
    cases = make_trimul(device="cpu").timed_cases()[:1]
    return {
        "stage": "time",
        "problem": "trimul",
        "device": "cpu",
        "seed": 3,
        "timing": {"clock": "wall", "max_repeats": n_repeats, "budget_s": 5.0, "warmup": 1, **timing},
        "cases": [c.to_dict() for c in cases],
    }


# ----------------------------------------------------------------------------- class 1: arbitrary code
def _escape_program(marker: Path) -> str:
    """Inductor's code cache loader runs the source it is handed; that source starts a shell that
    writes into the evaluator's own tree (where a `.pth` for later verifier processes would go)."""
    payload = f"import subprocess\nsubprocess.run(['sh', '-c', 'echo pwned > {marker}'], check=False)\n"
    return (
        "import torch\nfrom torch._inductor.codecache import PyCodeCache\n"
        f"_m = PyCodeCache.load({payload!r})\n\n"
        "def custom_kernel(data):\n    return torch.zeros_like(data[0])\n"
    )


@bwrap
def test_code_loaded_by_compiler_internals_cannot_start_a_shell_or_write_outside(tmp_path):
    marker = REPO / f".escape-marker-{uuid.uuid4().hex}"
    try:
        result = stage(_escape_program(marker), check_job(), tmp_path, 120, confined=True)
        assert not result["ok"]
        assert not marker.exists(), "a candidate wrote into the evaluator's package tree"
    finally:
        marker.unlink(missing_ok=True)


def test_static_checks_refuse_compiler_internals():
    from discoverygym.rewards.kernels.static_checks import violations

    assert any("compiler internals" in v for v in violations(_escape_program(Path("/x"))))
    source = "import triton\n\ndef custom_kernel(data):\n    triton.runtime.build._build\n    return data[0]\n"
    assert any("compiler internals" in v for v in violations(source))


@bwrap
def test_arbitrary_code_in_the_box_cannot_touch_the_evaluator(tmp_path):
    # No audit hook here: plain Python inside the sandbox stands for native code past every filter.
    from discoverygym.sandbox.kernels import box

    work = new_workdir()
    try:
        for name in box.WRITABLE:
            os.makedirs(os.path.join(work, name), exist_ok=True)
            if box.sandbox_uid() is not None:
                os.chown(os.path.join(work, name), box.sandbox_uid(), box.sandbox_uid())
        os.chmod(work, 0o755)
        site = next(p for p in sys.path if p.endswith("site-packages"))
        probe = textwrap.dedent(f"""
            import os, socket
            def attempt(f):
                try:
                    f(); return "ok"
                except OSError as e:
                    return type(e).__name__
            print("pth", attempt(lambda: open({site!r} + "/zz-evil.pth", "w")))
            print("repo", attempt(lambda: open({str(REPO)!r} + "/evil", "w")))
            print("inputs", attempt(lambda: open({work!r} + "/job.json", "w")))
            print("parent", attempt(lambda: os.kill({os.getpid()}, 0)))
            print("net", attempt(lambda: socket.create_connection(("1.1.1.1", 53), timeout=1)))
            print("out", attempt(lambda: open({work!r} + "/out/x", "w")))
        """)
        done = subprocess.run(
            box.command(work) + [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False,
            **box.as_sandbox_user(),
        )
        got = dict(line.split() for line in done.stdout.splitlines())
        assert got["out"] == "ok", done.stderr  # its own output directory stays writable
        for what in ("pth", "repo", "inputs", "parent", "net"):
            assert got[what] != "ok", (what, got)
        assert not os.path.exists(os.path.join(site, "zz-evil.pth"))
    finally:
        remove_workdir(work)


# ----------------------------------------------------------------------------- class 2: source smuggling
def _smuggled(marker_name: str) -> str:
    hidden = f"\nopen('out/{marker_name}', 'w').write('ran')\n"
    return (
        "# -*- coding: utf-7 -*-\n"
        f"# harmless comment {hidden.encode('utf-7').decode('ascii')}\n"
        "import torch\n\ndef custom_kernel(data):\n    return torch.zeros_like(data[0])\n"
    )


def test_a_coding_cookie_cannot_hide_code_from_the_checker(tmp_path):
    from discoverygym.rewards.kernels.static_checks import violations

    source = _smuggled("smuggled")
    assert any("encoding" in v for v in violations(source)), violations(source)


@pytest.mark.parametrize("confined", [True, False], ids=["bwrap", "unconfined"])
def test_the_runner_executes_exactly_the_checked_text(confined, tmp_path, monkeypatch):
    if confined and not bwrap_works():
        pytest.skip("bubblewrap cannot create a sandbox here")
    if not confined:
        monkeypatch.setenv("DISCOVERYGYM_SANDBOX_NO_BWRAP", "1")
    result = stage(_smuggled("smuggled"), check_job(), tmp_path, 120, confined=confined)
    assert not result["ok"]
    assert "UTF-8" in result["error"], result["error"]
    assert not (tmp_path / "out" / "smuggled").exists()


# ----------------------------------------------------------------------------- class 3: lifetimes
def test_check_timeout_nan_is_refused():
    for bad in (float("nan"), float("inf"), -1.0, 0.0):
        with pytest.raises(ValueError, match="positive finite"):
            make_trimul(device="cpu", check_timeout_s=bad)
        with pytest.raises(ValueError, match="positive finite"):
            run_stage(BASELINE, check_job(), "/nonexistent", timeout_s=bad)


def test_the_candidate_carries_its_own_cpu_limit(tmp_path):
    source = "def custom_kernel(data):\n    raise ValueError(open('/proc/self/limits').read()[:400])\n"
    result = stage(source, check_job(), tmp_path, 60)
    line = next(x for x in result["error"].splitlines() if x.startswith("Max cpu time"))
    soft, hard = line.split()[3:5]
    assert soft == hard != "unlimited", line


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmd or text in env:
            pids.append(int(pid))
    return pids


def test_kill_9_of_the_evaluator_leaves_no_stage_process_and_the_next_sweeps_its_dir(tmp_path):
    mark = f"DGMARK{uuid.uuid4().hex}"
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        os.environ["DG_TEST_MARK"] = {mark!r}
        from discoverygym.sandbox.kernels.launcher import new_workdir, run_stage
        from discoverygym.envs.kernels import make_trimul
        work = new_workdir()
        print(work, flush=True)
        cases = make_trimul(device="cpu", n_cases=1).test_cases()
        job = {{"stage": "check", "problem": "trimul", "device": "cpu", "seed": 0,
               "cases": [c.to_dict() for c in cases]}}
        run_stage("def custom_kernel(data):\\n    while True:\\n        pass\\n", job, work, 300)
    """)
    evaluator = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    work = evaluator.stdout.readline().strip()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            _processes_mentioning(work + " ") and _processes_mentioning(mark)
        ):
            time.sleep(0.2)
        assert _processes_mentioning(work + " "), "the candidate never started"
        time.sleep(1.0)
        os.kill(evaluator.pid, signal.SIGKILL)
        evaluator.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (_processes_mentioning(work + " ") or _processes_mentioning(mark)):
            time.sleep(0.2)
        assert not _processes_mentioning(work + " "), "the candidate outlived the evaluator"
        assert not _processes_mentioning(mark), "the judge outlived the evaluator"
        assert os.path.isdir(work)
        remove_workdir(new_workdir())  # the next evaluator sweeps the dead one's directory
        assert not os.path.exists(work)
    finally:
        if evaluator.poll() is None:
            evaluator.kill()
        for pid in _processes_mentioning(work + " ") + _processes_mentioning(mark):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        remove_workdir(work)


# ----------------------------------------------------------------------------- forged timings
_SLOW = "import time\n" + BASELINE.replace("def custom_kernel(data):", "def _baseline(data):") + (
    "\n\ndef custom_kernel(data):\n    time.sleep(0.08)\n    return _baseline(data)\n"
)
#: replaces the code of the harness's timing functions so that every call reports 0.001 μs (the
#: exploit found: the function objects were bound before the candidate ran, their code was not).
_FORGE_TIMING = textwrap.dedent("""
    import sys
    _t = sys.modules["discoverygym.rewards.kernels.timing"]
    def _fake_call(fn, data, *, device="cuda", clock="cuda", flusher=None):
        return 0.001, fn(data)
    def _fake_kernel(fn, data, **kw):
        fn(data)
        return {"mean_us": 0.001, "std_us": 0.0, "stderr_us": 0.0, "n": 3, "times_us": [0.001] * 3}
    for _name, _fake in (("time_call", _fake_call), ("time_kernel", _fake_kernel), ("_time_wall", _fake_kernel)):
        if hasattr(_t, _name):
            getattr(_t, _name).__code__ = _fake.__code__
""")


@pytest.mark.parametrize("confined", [True, False], ids=["bwrap", "unconfined"])
def test_a_forged_timing_is_rejected_by_the_judges_clock(confined, tmp_path, monkeypatch):
    if confined and not bwrap_works():
        pytest.skip("bubblewrap cannot create a sandbox here")
    if not confined:
        monkeypatch.setenv("DISCOVERYGYM_SANDBOX_NO_BWRAP", "1")
    result = stage(_FORGE_TIMING + _SLOW, time_job(), tmp_path, 120, confined=confined)
    assert not result["ok"], result.get("cases")
    assert "tampered" in result["error"], result["error"]


def test_an_honest_slow_kernel_passes_with_its_real_time(tmp_path):
    result = stage(_SLOW, time_job(), tmp_path, 120)
    assert result["ok"], result["error"]
    (case,) = result["cases"]
    assert case["mean_us"] >= 80_000 and case["judge_us"] >= 80_000


def test_outputs_deferred_or_cached_across_timed_calls_fail_the_sketches(tmp_path):
    # returns, during timing, the output computed for the first input it saw
    source = BASELINE.replace("def custom_kernel(data):", "def _baseline(data):") + (
        "\n\ndef custom_kernel(data, memo=[]):\n    if len(memo) < 2:\n        memo.append(_baseline(data))\n"
        "    return memo[-1].clone()\n"
    )
    result = stage(source, time_job(), tmp_path, 120)
    assert not result["ok"]
    assert "not the reference's" in result["error"] or "fresh inputs" in result["error"], result["error"]


# ----------------------------------------------------------------------------- without bubblewrap
def test_without_bubblewrap_kernels_are_not_judged_unless_opted_in(monkeypatch):
    import gymnasium as gym

    monkeypatch.setenv("DISCOVERYGYM_SANDBOX_NO_BWRAP", "1")
    monkeypatch.delenv("DISCOVERYGYM_KERNELS_ALLOW_UNCONFINED", raising=False)
    env = gym.make("TriMul-H100-v0", device="cpu", n_cases=1)
    env.reset(seed=0)
    _, reward, _, truncated, info = env.step(BASELINE)  # not judged here: unscored, not a crash
    assert truncated and info["unscored"] and reward == 0.0 and "allow_unconfined" in info["unscored_reason"]
    env = gym.make("TriMul-H100-v0", device="cpu", n_cases=1, raise_unavailable=True)
    env.reset(seed=0)
    with pytest.raises(BackendUnavailable, match="allow_unconfined"):
        env.step(BASELINE)
    metrics = make_trimul(device="cpu", n_cases=1, allow_unconfined=True).check(BASELINE)
    assert metrics["n_correctness_cases"] == 2
