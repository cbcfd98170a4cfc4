"""A TriMul loop never crashes on a machine without a GPU: a correct kernel is *unscored*
(``truncated``, ``info["unscored"]``, failure reward); ``device="cpu"`` gives a labelled CPU proxy."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import discoverygym  # noqa: F401 - registers the env ids
from discoverygym.envs.kernels import _EXAMPLES, CPU_PROXY_NOTE
from discoverygym.errors import BackendUnavailable
from discoverygym.search.archive import Archive
from discoverygym.types import State

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

BASELINE = (_EXAMPLES / "trimul_pytorch.py").read_text()  # the bundled correct kernel
NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour without a GPU")


@NO_GPU
def test_a_ten_step_gym_loop_with_a_correct_kernel_completes_without_a_gpu():
    env = gym.make("TriMul-H100-v0", n_cases=2)  # default device=None: no GPU here
    _, info = env.reset(seed=0)
    assert info["unscored"] and not info["valid"]  # the initial program is not scored at reset
    actions = [f"syntax error {i} (" for i in range(10)]
    actions[3] = BASELINE
    actions[6] = "def custom_kernel(data):\n    return None\n"  # runs, and fails correctness
    results = []
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        results.append((reward, terminated, truncated, info))
        env.reset()
    assert len(results) == 10
    reward, _, truncated, info = results[3]
    assert truncated and info["unscored"] and reward == info["failure_reward"] == 0.0
    reason = info["unscored_reason"]
    assert "\n" not in reason and "needs a CUDA or ROCm GPU" in reason and "device='cpu'" in reason
    assert info["error"] == f"unscored: {reason}" and info["score"] is None
    for i, (reward, terminated, truncated, info) in enumerate(results):
        if i != 3:
            assert reward == 0.0 and terminated and not truncated and not info["unscored"] and info["error"]
    assert "plain torch.Tensor" in results[6][3]["error"]


@NO_GPU
def test_raise_unavailable_keeps_raising():
    env = gym.make("TriMul-H100-v0", n_cases=1, raise_unavailable=True)
    env.reset(seed=0)
    with pytest.raises(BackendUnavailable, match="needs a CUDA or ROCm GPU"):
        env.step(BASELINE)


def test_device_cpu_gives_a_labelled_cpu_proxy_score():
    env = gym.make("TriMul-H100-v0", device="cpu", n_cases=1, case_budget_s=1.0, max_repeats=5,
                   render_mode="ansi")
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(BASELINE)
    assert info["valid"], info["error"]
    assert not truncated and terminated and not info["unscored"]
    metrics = info["metrics"]
    assert metrics["proxy"] == "cpu" and metrics["proxy_note"] == CPU_PROXY_NOTE
    assert metrics["timing"]["clock"] == "wall" and metrics["target_mismatch"] is None
    assert info["score"] == metrics["geomean_us"] > 0 and math.isclose(reward, 3000.0 / info["score"])
    assert len(metrics["case_means_us"]) == 2 and all(1 <= n <= 5 for n in metrics["case_repeats"])
    text = env.render()
    assert "CPU proxy, not comparable with the GPU record" in text


def test_archives_never_keep_unscored_states():
    unscored = State(None, None, 0.0, False, code="x", id="u", parent_ids=("root",),
                     metadata={"unscored": True, "unscored_reason": "no GPU"})
    failed = State(None, None, 0.0, False, code="y", id="f", parent_ids=("root",), error="wrong")
    for keep_invalid in (False, True):
        archive = Archive(keep_invalid=keep_invalid)
        archive.add(State(None, None, 0.0, False, code="r", id="root",
                          metadata={"unscored": True}), initial=True)  # an unscored initial state stays
        assert archive.add_batch([unscored, failed]) == [None, "f" if keep_invalid else None]
        assert [s.id for s in archive] == ["root", *(["f"] if keep_invalid else [])]
