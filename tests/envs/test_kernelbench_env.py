"""KernelBench level 1 (#89 cumsum, #9 tall skinny matmul) on the kernel harness, on CPU.

References are checked against NumPy in float64 and the shapes against the KernelBench problem
files; broken candidates (wrong answer, crash, timeout) must get the failure reward with a message;
the baseline gets a labelled CPU-proxy score with ``device="cpu"`` and is unscored by default
without a GPU. Candidates really run in their sandboxed processes (a few seconds each).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import discoverygym  # noqa: F401 - registers the env ids
from discoverygym.envs import kernels
from discoverygym.envs.kernels import CPU_PROXY_NOTE, CumsumTask, MatmulTask, make_kernelbench
from discoverygym.rewards.kernels import specs
from discoverygym.rewards.kernels.static_checks import violations

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from discoverygym.rewards.kernels import kernelbench  # needs torch (after the skip)

IDS = [f"KernelBench-L1-{p}-{g}-v0" for p in ("Cumsum", "Matmul") for g in ("H100", "H200")]


# ----------------------------------------------------------------------------- references and cases
@pytest.mark.parametrize("case", specs.CUMSUM_CPU_TESTS, ids=lambda c: c.name)
def test_cumsum_reference_matches_numpy(case):
    x = kernelbench.cumsum_input(case, "cpu")
    assert x.shape == (case.rows, case.length) and x.dtype == torch.float32
    want = np.cumsum(x.numpy().astype(np.float64), axis=1)
    np.testing.assert_allclose(kernelbench.cumsum_reference(x).numpy(), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("case", specs.MATMUL_CPU_TESTS, ids=lambda c: c.name)
def test_matmul_reference_matches_numpy(case):
    a, b = kernelbench.matmul_input(case, "cpu")
    assert a.shape == (case.m, case.k) and b.shape == (case.k, case.n)
    want = a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)
    np.testing.assert_allclose(kernelbench.matmul_reference((a, b)).numpy(), want, rtol=1e-5, atol=1e-4)


def test_inputs_are_seeded_and_follow_the_distribution():
    case = specs.CumsumCase(64, 500, 7)
    x = kernelbench.cumsum_input(case, "cpu")
    assert torch.equal(x, kernelbench.cumsum_input(case, "cpu"))
    assert not torch.equal(x, kernelbench.cumsum_input(case, "cpu", seed=8))
    assert 0.0 <= float(x.min()) and float(x.max()) < 1.0  # uniform U[0, 1), as KernelBench's torch.rand
    y = kernelbench.cumsum_input(specs.CumsumCase(64, 500, 7, "normal"), "cpu")
    assert float(y.min()) < 0.0 and abs(float(y.mean())) < 0.05 and abs(float(y.std()) - 1.0) < 0.05


def test_full_size_cases_include_the_kernelbench_shapes():
    # KernelBench/level1/89_cumsum.py: batch 32768 x (32768,) now, 128 x (4000,) in the first release
    cumsum = {(c.rows, c.length) for c in specs.CUMSUM_BENCHMARKS}
    assert {(32768, 32768), (128, 4000)} <= cumsum and len(cumsum) == 4
    # 9_Tall_skinny_matrix_multiplication_.py: A (M, N) @ B (N, M), M = 32768, N = 32 (first: 16384, 16)
    matmul = {(c.m, c.k, c.n) for c in specs.MATMUL_BENCHMARKS}
    assert {(32768, 32, 32768), (16384, 16, 16384)} <= matmul and len(matmul) == 4
    assert specs.KERNELBENCH_TOLERANCE == (1e-2, 1e-2)  # KernelBench v0/v0.1 float32 atol = rtol
    for case in (*specs.CUMSUM_TESTS, *specs.MATMUL_TESTS, *specs.CUMSUM_CPU_TESTS):
        assert specs.case_from_dict(case.to_dict()) == case


# ----------------------------------------------------------------------------- env surface
@pytest.mark.filterwarnings("ignore:.*Box observation space:UserWarning")
@pytest.mark.parametrize("env_id", IDS)
def test_make_check_env_reset_render_without_gpu(env_id):
    assert gym.spec(env_id).nondeterministic
    env = gym.make(env_id, render_mode="rgb_array", device="cpu")
    check_env(env.unwrapped)
    obs, info = env.reset(seed=0)
    assert info["score"] is None and "custom_kernel" in info["state"].code
    gpu = env_id.split("-")[-2]
    assert f"Target platform: NVIDIA {gpu}" in obs["prompt"] and "reward = 1000 / score" in obs["prompt"]
    assert env.render().shape == (256, 256, 3)


def test_factory_reward_and_records():
    cumsum, matmul = make_kernelbench("cumsum", "H200"), make_kernelbench("matmul")
    assert isinstance(cumsum, CumsumTask) and isinstance(matmul, MatmulTask) and matmul.gpu == "H100"
    assert matmul.reward(2000.0) == pytest.approx(0.5)  # 1 / geometric-mean ms
    assert math.isnan(cumsum.sota["value"]) and "none published" in cumsum.sota["source"]
    with pytest.raises(ValueError, match="unknown KernelBench problem"):
        make_kernelbench("conv")
    with pytest.raises(ValueError, match="unknown target GPU"):
        make_kernelbench("cumsum", "MI300X")


def test_calling_the_torch_op_is_allowed_but_the_harness_reference_is_not():
    for env_id in IDS[::2]:
        assert violations(gym.make(env_id).unwrapped.task.initial_program()) == []
    refused = violations("from discoverygym.rewards.kernels.kernelbench import cumsum_reference\n\n"
                         "def custom_kernel(data):\n    return cumsum_reference(data)\n")
    assert refused and any("discoverygym" in v for v in refused)


# ----------------------------------------------------------------------------- candidates run on CPU
def _step(env_id: str, source: str, **kw) -> tuple[float, dict]:
    env = gym.make(env_id, device="cpu", **kw)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(source)
    return reward, info


def test_baseline_gets_a_labelled_cpu_proxy_score(monkeypatch):
    """The labels and the score's arithmetic, whatever the machine's load.

    The judge's clock check (unexplained time per call beyond ρ·median + δ is tampering) compares
    two processes' clocks, so on a loaded CPU an honest baseline could be refused (issue 40: the
    suite failed under load). That check is tested on its own with a forged report
    (tests/sandbox/test_kernel_sandbox.py, "tampered"); here it is widened beyond any load (ρ = 10⁶,
    δ = 10¹² μs), so the verdict depends only on the behaviour tested.
    """
    monkeypatch.setattr(kernels, "CPU_PROXY_TIMING", {**kernels.CPU_PROXY_TIMING, "rho": 1e6, "delta_us": 1e12})
    env_id = "KernelBench-L1-Cumsum-H100-v0"
    source = gym.make(env_id).unwrapped.task.initial_program()
    reward, info = _step(env_id, source, n_cases=1, case_budget_s=1.0, max_repeats=3)
    assert info["valid"], info["error"]
    metrics = info["metrics"]
    assert metrics["timing"]["rho"] == 1e6  # the judge ran with the widened check
    assert metrics["proxy"] == "cpu" and metrics["proxy_note"] == CPU_PROXY_NOTE
    means, judged = metrics["case_means_us"], metrics["case_judge_us"]
    assert len(means) == len(specs.CUMSUM_CPU_BENCHMARKS)
    assert all(m >= j > 0 for m, j in zip(means, judged))  # each case scores at least the judge's own clock
    geomean = math.exp(sum(math.log(m) for m in means) / len(means))
    assert info["score"] == metrics["geomean_us"] == pytest.approx(geomean, rel=1e-12)
    assert math.isclose(reward, 1000.0 / info["score"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour without a GPU")
def test_baseline_is_unscored_without_a_gpu_by_default():
    env = gym.make("KernelBench-L1-Matmul-H200-v0", n_cases=1)
    env.reset(seed=0)
    _, reward, _, truncated, info = env.step(env.unwrapped.task.initial_program())
    assert info["unscored"] and truncated and reward == 0.0
    assert "needs a CUDA or ROCm GPU" in info["unscored_reason"]


BAD = {
    # exclusive instead of inclusive scan: every element off by one position
    "cumsum-off-by-one": ("Cumsum", "    return torch.cumsum(data, dim=1) - data", "reference is"),
    # the transposed product: right shape on the square case, wrong values
    "matmul-transposed": ("Matmul", "    a, b = data\n    return (a @ b).t().contiguous()", "reference is"),
    "cumsum-crash": ("Cumsum", "    return torch.cumsum(data, dim=2)", "custom_kernel raised IndexError"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_wrong_and_crashing_kernels_fail_with_a_message(name):
    problem, body, words = BAD[name]
    reward, info = _step(f"KernelBench-L1-{problem}-H100-v0", f"import torch\n\n\ndef custom_kernel(data):\n{body}\n",
                         n_cases=1)
    assert reward == 0.0 and not info["valid"] and not info.get("unscored")
    first = (specs.CUMSUM_CPU_TESTS if problem == "Cumsum" else specs.MATMUL_CPU_TESTS)[0]
    assert info["error"].startswith(f"correctness: case {first.name}") and words in info["error"], info["error"]


def test_first_release_cumsum_case_draws_normal_inputs_as_that_release_did():
    # KernelBench's first release of level1/89_cumsum.py used torch.randn (issue 40's outside check)
    first = [c for c in specs.CUMSUM_BENCHMARKS if (c.rows, c.length) == (128, 4000)]
    assert [c.distribution for c in first] == ["normal"]


def test_tolerance_option_tes_default_and_current_kernelbench():
    assert specs.KERNELBENCH_TOLERANCES == {"tes": (1e-2, 1e-2), "kernelbench": (1e-4, 1e-4)}
    assert make_kernelbench("cumsum").tolerance == (1e-2, 1e-2)
    assert "<= 0.0001 + 0.0001*|ref|" in make_kernelbench("cumsum", tolerance="kernelbench").contract
    with pytest.raises(ValueError, match="tolerance must be one of"):
        make_kernelbench("cumsum", tolerance="loose")
    off = "import torch\n\n\ndef custom_kernel(data):\n    return torch.cumsum(data, dim=1) * (1 + 1e-3)\n"

    def judged(**kw):  # correctness only: without the CPU proxy a correct kernel stops before timing
        env = gym.make("KernelBench-L1-Cumsum-H100-v0", device="cpu", n_cases=1, **kw).unwrapped
        env.task.cpu_proxy = False
        return env.evaluate(off, seed=0)

    loose = judged()
    assert loose.unscored and "passed" in loose.metadata["unscored_reason"]  # 1e-3 is within TES's 1e-2
    strict = judged(tolerance="kernelbench")
    assert not strict.valid and "> 0.0001 + 0.0001·|ref|" in strict.error, strict.error


def test_cpu_proxy_scores_the_judges_clock_not_the_reported_mean(monkeypatch):
    # issue 40: the proxy scored the candidate-reported mean while its judge tolerated 100 % + δ of
    # unexplained time per call, so a forged report could halve the score
    task = make_kernelbench("cumsum", device="cpu")
    forged = {"mean_us": 10.0, "std_us": 0.0, "stderr_us": 0.0, "n": 5, "judge_us": 19.0}
    monkeypatch.setattr(task, "_stage", lambda *a, **k: {"ok": True, "cases": [
        {**forged, "case": c.name} for c in task.timed_cases()]})
    metrics = task._measure("", 0, "", {})
    assert metrics["case_scores"] == [19.0] * len(task.timed_cases()) and metrics["geomean_us"] == pytest.approx(19.0)


def test_timeout_kills_the_candidate():
    reward, info = _step("KernelBench-L1-Cumsum-H200-v0", "def custom_kernel(data):\n    while True:\n        pass\n",
                         n_cases=1, check_timeout_s=4.0)
    assert reward == 0.0 and "timed out after 4 s" in info["error"], info["error"]
