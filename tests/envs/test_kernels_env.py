"""GPU-kernel envs end to end on CPU: candidates run in their own processes (Triton interpreter).

Every bad kernel must give the failure reward with a message naming what is wrong; a correct one
passes the correctness stage and then, without a GPU, is unscored (or, with
``raise_unavailable=True``, stops at timing with a clear "needs a GPU" error); with
``device="cpu"`` it gets the CPU-timing proxy score (tests/envs/test_unscored_kernels.py).
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import discoverygym  # noqa: F401 - registers the env ids
from discoverygym.envs.kernels import _EXAMPLES, make_mla_decode, make_trimul
from discoverygym.errors import BackendUnavailable

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

BASELINE = (_EXAMPLES / "trimul_pytorch.py").read_text()


def cpu_env(env_id: str = "TriMul-H100-v0", **kw) -> gym.Env:
    env = gym.make(env_id, device="cpu", **kw)
    env.reset(seed=0)
    return env


def with_body(body: str, signature: str = "def custom_kernel(data):") -> str:
    """The baseline renamed to `_baseline`, plus a custom_kernel built on it."""
    return BASELINE.replace("def custom_kernel(data):", "def _baseline(data):") + f"\n\n{signature}\n{body}"


def test_triton_kernel_passes_on_the_interpreter():
    task = make_trimul("H100", device="cpu")
    metrics = task.check((_EXAMPLES / "trimul_triton.py").read_text())
    assert metrics["device"] == "cpu" and metrics["platform"] == "cpu"
    assert metrics["n_correctness_cases"] == len(task.test_cases()) + 1  # + the fresh re-check
    assert all(c["max_abs_err"] < 1e-3 for c in metrics["correctness"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour without a GPU")
def test_correct_kernel_reaches_timing_and_names_the_missing_gpu():
    # the default device on a GPU-less machine, with raise_unavailable=True (else the step is unscored)
    env = gym.make("TriMul-H100-v0", n_cases=2, raise_unavailable=True)
    env.reset(seed=0)
    with pytest.raises(BackendUnavailable, match="needs a CUDA or ROCm GPU"):
        env.step(BASELINE)


@pytest.mark.parametrize(
    "name, body, words",
    [
        ("wrong", "    return _baseline(data) * 1.1 + 0.05", "reference is"),
        (
            "nan",
            "    out = _baseline(data)\n    out[0, 1, 2, 3] = float('nan')\n    return out",
            "same positions",
        ),
        ("shape", "    return _baseline(data)[:, :-1]", "has shape"),
        ("crash", "    return _baseline(data[:2])", "custom_kernel raised ValueError"),
        ("none", "    return None", "must be a plain torch.Tensor, got NoneType"),
        ("int", "    return _baseline(data).to(torch.int32)", "floating dtype"),
    ],
    ids=["wrong", "nan", "shape", "crash", "none", "int"],
)
def test_bad_kernels_fail_with_clear_messages(name, body, words):
    env = cpu_env(n_cases=2)
    _, reward, _, _, info = env.step(with_body(body))
    assert reward == 0.0 and not info["valid"], name
    assert info["error"].startswith("correctness: case n16 b1 c32") and words in info["error"], info["error"]


def test_output_caching_kernel_fails():
    # a cache hidden in a mutable default argument passes the static checks but not the fresh inputs
    source = with_body(
        "    key = tuple(data[0].shape)\n    if key not in memo:\n        memo[key] = _baseline(data)\n"
        "    return memo[key]",
        signature="def custom_kernel(data, memo={}):",
    )
    _, reward, _, _, info = cpu_env(n_cases=2).step(source)
    assert (
        reward == 0.0 and "n16 b1 c32 normal mask s1092" in info["error"] and "reference is" in info["error"]
    )


def test_reference_calling_kernel_fails_before_running():
    source = "from discoverygym.rewards.kernels.trimul import reference\n\ndef custom_kernel(data):\n    return reference(data)\n"
    _, reward, _, _, info = cpu_env().step(source)
    assert (
        reward == 0.0 and info["error"].startswith("static check failed") and "discoverygym" in info["error"]
    )
    assert info["metrics"]["static_violations"]


def test_timeout_kills_the_candidate():
    env = cpu_env(n_cases=1, check_timeout_s=5.0)
    _, reward, _, _, info = env.step("def custom_kernel(data):\n    while True:\n        pass\n")
    assert reward == 0.0 and "timed out after 5 s" in info["error"]


def test_runner_detects_patched_harness_functions(tmp_path):
    # bypass the static checks to exercise the runner's own identity check
    from discoverygym.sandbox.kernels.launcher import run_stage

    source = BASELINE.replace(
        "import torch\n", "import torch\n_mm = torch.matmul\ntorch.matmul = lambda a, b: _mm(a, b)\n", 1
    )
    job = {
        "stage": "check",
        "problem": "trimul",
        "device": "cpu",
        "seed": 0,
        "cases": [specs_case.to_dict() for specs_case in make_trimul(device="cpu", n_cases=1).test_cases()],
    }
    result = run_stage(source, job, str(tmp_path), timeout_s=60)
    assert not result["ok"] and "replaced harness functions: torch.matmul" in result["error"]


def test_mla_baseline_passes_and_a_kernel_ignoring_the_cache_fails():
    task = make_mla_decode("H200", device="cpu", n_cases=2)
    assert task.check(task.initial_program())["n_correctness_cases"] == 3
    # right output, but the new latent row is written into a copy and the untouched cache returned
    broken = task.initial_program().replace(
        "    cache[:, seq] = x2 @", "    cache = cache.clone()\n    cache[:, seq] = x2 @"
    )
    broken = broken.replace(
        'return y @ cfg["wo_weight"].t(), cache', 'return y @ cfg["wo_weight"].t(), data[2]'
    )
    assert broken.count("data[2]") == 1
    env = gym.make("MLADecode-H200-v0", device="cpu", n_cases=2)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(broken)
    assert reward == 0.0 and "kv_cache" in info["error"], info["error"]


def _time_job(n_repeats: int = 5) -> dict:
    cases = make_trimul(device="cpu").timed_cases()
    timing = {"clock": "wall", "max_repeats": n_repeats, "budget_s": 5.0, "warmup": 1}
    return {
        "stage": "time",
        "problem": "trimul",
        "device": "cpu",
        "seed": 3,
        "timing": timing,
        "cases": [c.to_dict() for c in cases],
    }


def test_timing_stage_flow_on_cpu_with_a_wall_clock(tmp_path):
    # the GPU stage's control flow (check, time, fresh re-check) with perf_counter instead of CUDA events
    from discoverygym.sandbox.kernels.launcher import fresh_seed, run_stage

    result = run_stage(BASELINE, _time_job(), str(tmp_path), timeout_s=60)
    assert result["ok"], result["error"]
    cases = make_trimul(device="cpu").timed_cases()
    assert [c["case"] for c in result["cases"]] == [c.name for c in cases]
    for got, case in zip(result["cases"], cases):
        assert got["mean_us"] > 0 and 1 <= got["n"] <= 5 and got["stderr_us"] >= 0
        assert got["fresh_seed"] == fresh_seed(case.seed, 3) != case.seed


def test_timing_stage_catches_outputs_cached_across_calls(tmp_path):
    from discoverygym.sandbox.kernels.launcher import run_stage

    source = with_body(
        "    key = tuple(data[0].shape)\n    if key not in memo:\n        memo[key] = _baseline(data)\n"
        "    return memo[key]",
        signature="def custom_kernel(data, memo={}):",
    )
    result = run_stage(source, _time_job(), str(tmp_path), timeout_s=60)
    # every timed call gets fresh inputs: the judge's sketches catch it before the re-check does
    assert not result["ok"] and "not the reference's" in result["error"], result["error"]


def test_triton_example_compiles_for_hopper_within_shared_memory(tmp_path, monkeypatch):
    # ahead-of-time compilation with Triton's bundled ptxas: no GPU needed; 64 KiB is the smallest
    # shared-memory budget among the target GPUs (MI300X LDS), H100/H200 allow 227 KiB
    import importlib.util

    import triton

    try:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError:
        pytest.skip("this Triton has no ahead-of-time compile API")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    spec = importlib.util.spec_from_file_location("trimul_triton", _EXAMPLES / "trimul_triton.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sig = {
        name: "*fp32"
        for name in ["X", "MASK", "LNW", "LNB", "WL", "WR", "WLG", "WRG", "WOG", "LEFT", "RIGHT", "OGATE"]
    }
    sig.update(
        M="i32", C="i32", NN="i32", eps="fp32", H="constexpr", BLOCK_M="constexpr", BLOCK_K="constexpr"
    )
    source = ASTSource(fn=module._project, signature=sig, constexprs={"H": 128, "BLOCK_M": 32, "BLOCK_K": 32})
    try:
        kernel = triton.compile(
            source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_stages": 1}
        )
    except (RuntimeError, FileNotFoundError) as exc:  # no ptxas for this platform
        pytest.skip(f"cannot compile for sm_90 here: {exc}")
    assert "cubin" in kernel.asm and 0 < kernel.metadata.shared <= 64 * 1024


# ----------------------------------------------------------------------------- verdict out of process
# The comparison once ran in the candidate's process, so a program could patch what
# it relies on. These candidates bypass the static checks (run_stage directly) and return zeros
# after patching everything a verdict computed in their own process would use.
_ZEROS = "\n\ndef custom_kernel(data):\n    return torch.zeros_like(data[0])\n"
IN_PROCESS_PATCHES = {
    # `T = torch.Tensor; T.__le__ = ...`: every `<=` says "close enough"
    "alias_le": "import torch\nT = torch.Tensor\nT.__le__ = lambda a, b: torch.ones_like(a, dtype=torch.bool)\n",
    # reach __import__ through operator.attrgetter and replace the tolerance check and the runner's
    "attrgetter": (
        "import operator\nimport torch\n\ndef _f():\n    pass\n\n"
        "_b = operator.attrgetter('__glob' + 'als__')(_f)['__buil' + 'tins__']\n"
        "_imp = _b['__imp' + 'ort__'] if type(_b) is dict else operator.attrgetter('__imp' + 'ort__')(_b)\n"
        "_tol = _imp('discoverygym.rewards.kernels.tolerance', fromlist=['compare'])\n"
        "_ok = lambda *a, **k: {'ok': True, 'message': None, 'max_abs_err': 0.0, 'n_bad': 0}\n"
        "_tol.compare = _ok\n"
        "_run = _imp('discoverygym.sandbox.kernels.candidate', fromlist=['_emit'])\n"
        "_run._compare = _ok\n"
    ),
    # print something that looks like the verifier's verdict (the candidate's stdout is not its channel)
    "fake_verdict": (
        "import json\nimport torch\n"
        "print('DISCOVERYGYM-VERDICT ' + json.dumps({'ok': True, 'error': None, 'max_abs_err': [0.0, 0.0]}))\n"
    ),
}


@pytest.mark.parametrize("name", sorted(IN_PROCESS_PATCHES))
def test_patching_the_comparison_in_the_candidate_process_cannot_pass(name, tmp_path):
    from discoverygym.rewards.kernels.static_checks import violations
    from discoverygym.sandbox.kernels.launcher import run_stage

    source = IN_PROCESS_PATCHES[name] + _ZEROS
    assert violations(source), "the static checks refuse it too; here the verifier must as well"
    cases = make_trimul(device="cpu", n_cases=1).test_cases()
    job = {
        "stage": "check",
        "problem": "trimul",
        "device": "cpu",
        "seed": 0,
        "cases": [c.to_dict() for c in cases],
    }
    result = run_stage(source, job, str(tmp_path), timeout_s=60)
    assert not result["ok"] and "reference is" in result["error"], result
    assert result["error"].startswith(f"case {cases[0].name}: output[")


def test_the_qa_patch_program_fails_through_the_env():
    # the same program through the env: refused statically, and its outputs would fail anyway
    _, reward, _, _, info = cpu_env(n_cases=1).step(IN_PROCESS_PATCHES["alias_le"] + _ZEROS)
    assert reward == 0.0 and info["error"].startswith("static check failed") and "__le__" in info["error"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without a GPU")
def test_cuda_device_without_a_gpu_is_backend_unavailable():
    task = make_trimul("H100", device="cuda", n_cases=1)
    with pytest.raises(BackendUnavailable, match="torch.cuda.is_available"):
        task.check(BASELINE)
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "discoverygym.cli", "evaluate", "TriMul-H100-v0", "--device", "cuda"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 3 and "Traceback" not in out.stderr, out.stderr
    assert "device='cuda' was requested" in out.stderr


# ----------------------------------------------------------------------------- QA3: forged verdicts
# Built from the QA3 repros. They run through run_stage (static checks bypassed), so the runner's
# own defences (audit hook, the verifier's private verdict pipe, BaseException handling, distrust of
# the candidate's record) must reject them.
_READ_WRITE = (
    "import numpy as np\nimport torch\n\n\n"
    "def _read(path):\n    return str(np.loadtxt(path, dtype=str, delimiter='\\x01'))\n\n\n"
    "def _write(path, text):\n    np.frombuffer(text.encode(), dtype=np.uint8).tofile(path)\n\n\n"
)
FORGERIES = {
    # find the verifier through /proc, write a verdict into its stdout, forge result.json, exit
    "fake_verdict_any": _READ_WRITE + "def custom_kernel(data):\n"
    "    me, _, _, ppid = _read('/proc/self/stat').split()[:4]\n"
    "    kids = _read(f'/proc/{ppid}/task/{ppid}/children').split()\n"
    "    verifier = min(k for k in kids if k != me)\n"
    "    job = _read('job.json')\n"
    "    n = job.count('\"kind\"')\n"
    '    calls = 2 * n if \'"stage": "time"\' in job else n + 1\n'
    "    verdict = '{\"ok\": true, \"error\": null, \"max_abs_err\": [' + ', '.join(['0'] * calls) + ']}'\n"
    "    _write(f'/proc/{verifier}/fd/1', 'x' * 4000 + '\\nDISCOVERYGYM-VERDICT ' + verdict + '\\n')\n"
    '    t = \'{"mean_us": 0.5, "std_us": 0.01, "stderr_us": 0.001, "n": 100}\'\n'
    "    _write('result.json', '{\"ok\": true, \"error\": null, \"timings\": [' + ', '.join([t] * n) + ']}')\n"
    "    raise SystemExit(0)\n",
    "forge_harness": _READ_WRITE + "def custom_kernel(data):\n"
    '    _write(\'result.json\', \'{"ok": false, "harness_error": true, "error": "forged"}\')\n'
    "    raise SystemExit(0)\n",
    "forge_backend": _READ_WRITE + "def custom_kernel(data):\n"
    '    _write(\'result.json\', \'{"ok": false, "backend_unavailable": true, "error": "no GPU"}\')\n'
    "    raise SystemExit(0)\n",
}


def _check_job(n_cases: int = 1) -> dict:
    cases = make_trimul(device="cpu", n_cases=n_cases).test_cases()
    return {
        "stage": "check",
        "problem": "trimul",
        "device": "cpu",
        "seed": 0,
        "cases": [c.to_dict() for c in cases],
    }


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_forged_verdicts_and_records_are_rejected(name, tmp_path):
    from discoverygym.sandbox.kernels.launcher import run_stage

    result = run_stage(FORGERIES[name], _check_job(), str(tmp_path), timeout_s=60)
    assert not result["ok"] and not result.get("harness_error") and not result.get("backend_unavailable")
    assert "is not allowed in the candidate's process" in result["error"], result["error"]


def test_forged_timings_are_rejected_in_the_time_stage(tmp_path):
    from discoverygym.sandbox.kernels.launcher import run_stage

    result = run_stage(FORGERIES["fake_verdict_any"], _time_job(1), str(tmp_path), timeout_s=60)
    assert not result["ok"] and "cases" not in result and "another process's /proc entry" in result["error"]


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_forgeries_never_raise_out_of_step(name):
    _, reward, _, _, info = cpu_env(n_cases=1).step(FORGERIES[name])
    assert reward == 0.0 and info["error"], info


def test_system_exit_from_the_candidate_is_a_failure():
    _, reward, _, _, info = cpu_env(n_cases=1).step("def custom_kernel(data):\n    raise SystemExit(0)\n")
    assert reward == 0.0 and "SystemExit" in info["error"], info["error"]


AUDITED = {
    "write_outside": ("def custom_kernel(data):\n    open('/tmp/kx/forged', 'w')\n", "writing"),
    "np_tofile_workdir": (
        "import numpy as np\n\ndef custom_kernel(data):\n    np.zeros(1).tofile('candidate.py')\n",
        "writing",
    ),
    "proc_of_parent": (
        "import os\n\ndef custom_kernel(data):\n    open(f'/proc/{os.getppid()}/status').read()\n",
        "/proc entry",
    ),
    "subprocess": (
        "import subprocess\n\ndef custom_kernel(data):\n    subprocess.run(['true'])\n",
        "subprocess",
    ),
    "os_system": ("import os\n\ndef custom_kernel(data):\n    os.system('true')\n", "os.system"),
    "ctypes": ("import ctypes\n\ndef custom_kernel(data):\n    ctypes.CDLL(None)\n", "ctypes"),
    "socket": ("import socket\n\ndef custom_kernel(data):\n    socket.socket()\n", "network"),
    "rename": ("import os\n\ndef custom_kernel(data):\n    os.rename('job.json', 'tmp/j')\n", "renaming"),
}


@pytest.mark.parametrize("name", sorted(AUDITED))
def test_audit_hook_confines_the_candidate_process(name, tmp_path):
    from discoverygym.sandbox.kernels.launcher import run_stage

    source, word = AUDITED[name]
    result = run_stage(source, _check_job(), str(tmp_path), timeout_s=60)
    assert not result["ok"] and "not allowed in the candidate's process" in result["error"], result
    assert word in result["error"], result["error"]
    assert (tmp_path / "job.json").exists()


def test_verdict_channel_accepts_exactly_one_message_with_the_nonce():
    from discoverygym.sandbox.kernels.common import VERDICT_PREFIX as _VERDICT_PREFIX
    from discoverygym.sandbox.kernels.launcher import _read_verdict

    good = _VERDICT_PREFIX + '{"ok": true, "max_abs_err": [0], "nonce": "n1"}\n'
    assert _read_verdict(good.encode(), "n1") == {"ok": True, "max_abs_err": [0]}
    forged = _VERDICT_PREFIX + '{"ok": true, "max_abs_err": [0]}\n'
    for data in (forged, "x" * 4000 + "\n" + good, good + good, good.replace("n1", "n2"), "", good[:-1]):
        assert _read_verdict(data.encode(), "n1") is None, data[:80]


def test_the_verifier_process_is_not_dumpable():
    import subprocess
    import sys

    code = (
        "import ctypes\nfrom discoverygym.sandbox.kernels.verifier import make_undumpable\nmake_undumpable()\n"
        "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))\n"  # PR_GET_DUMPABLE
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "0"


def test_untrusted_records_and_bad_counts_are_failures_not_harness_errors():
    from discoverygym.sandbox.kernels.launcher import _merge, plan

    job = _check_job()
    calls = plan(job)
    ok_verdict = {"ok": True, "error": None, "max_abs_err": [0.0] * len(calls)}
    args = ("", None, "", False, 0, 60.0)
    for child in (
        {"ok": False, "harness_error": True, "error": "x"},
        {"ok": False, "backend_unavailable": True},
    ):
        r = _merge(job, calls, ok_verdict, args[0], child, *args[2:])
        assert not r["ok"] and not r.get("harness_error") and not r.get("backend_unavailable")
        assert "the candidate's process reported an internal error" in r["error"]
    r = _merge(job, calls, {**ok_verdict, "max_abs_err": [0.0]}, "", {"ok": True}, *args[2:])
    assert not r["ok"] and not r.get("harness_error") and "does not cover" in r["error"]
    r = _merge(job, calls, None, "", {"ok": True}, *args[2:])
    assert not r["ok"] and "without a valid verdict" in r["error"]
    tjob = _time_job(1)
    tcalls = plan(tjob)
    tverdict = {"ok": True, "max_abs_err": [0.0] * len(tcalls)}
    for timings in ([], [{"mean_us": "fast"}] * (len(tcalls) // 2), None):
        r = _merge(tjob, tcalls, tverdict, "", {"ok": True, "timings": timings}, *args[2:])
        assert not r["ok"] and "malformed timings" in r["error"]
