"""The CPU proxy of the kernel envs names its own case count and never stands beside the GPU record
(issue 50, item 5: "geometric-mean runtime over 7 timed cases" was printed where 2 were timed)."""

from __future__ import annotations

from discoverygym.envs.kernels import CPU_PROXY_NOTE, TriMulTask


def test_the_cpu_proxy_quantity_counts_the_cases_it_times():
    proxy, gpu = TriMulTask(device="cpu"), TriMulTask()
    n = len(proxy.timed_cases("cpu"))
    assert n == len(TriMulTask.cpu_benchmarks) == 2  # 2 CPU-scale timed cases (GPU MODE's 7 on GPU)
    assert f"over {n} CPU-scale timed cases" in proxy.quantity and CPU_PROXY_NOTE in proxy.quantity
    assert gpu.quantity == "geometric-mean runtime over 7 timed cases (μs)" == TriMulTask.quantity
    assert len(TriMulTask.benchmarks) == 7


def test_info_marks_the_record_as_no_peer_of_a_proxy_score():
    import gymnasium as gym

    import discoverygym  # noqa: F401
    from discoverygym.types import State

    env = gym.make("CirclePacking-26-v0").unwrapped  # the info builder every env shares (envs/candidate.py)
    proxy = State(solution=None, score=1065.0, reward=1.0, valid=True, metadata={"proxy": "cpu", "proxy_note": CPU_PROXY_NOTE})
    info = env._info(proxy)
    assert info["sota"]["comparable"] is False and info["sota"]["note"] == CPU_PROXY_NOTE
    assert "comparable" not in env._info(State(solution=None, score=1.0, reward=1.0, valid=True))["sota"]
