"""Platform descriptors in the GPU kernel prompts: one template, the target GPU's facts (no GPU needed)."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

import discoverygym  # noqa: F401 - registers the envs
from discoverygym.envs.registry import PROGRAM_TASKS
from discoverygym.rewards.kernels.platforms import PLATFORMS, platform_descriptor

KERNEL_IDS = sorted(e for e in PROGRAM_TASKS if e.startswith(("TriMul-", "MLADecode-", "KernelBench-")))


def section(prompt: str) -> str:
    """The prompt's "Target platform" section (up to the next blank-line-separated part after the figures)."""
    start = prompt.index("## Target platform")
    return prompt[start : prompt.index("\n", prompt.index("(figures:", start))]


def kernel_prompt(env_id: str) -> str:
    return gym.make(env_id).unwrapped.task.prompt()


def test_mi300x_and_h100_prompts_carry_their_own_facts():
    amd, nv = section(kernel_prompt("TriMul-MI300X-v0")), section(kernel_prompt("TriMul-H100-v0"))
    assert "wavefront of 64 threads" in amd and "LDS: 64 KiB per CU, at most 64 KiB per workgroup" in amd
    assert "warp" not in amd and "shared memory" not in amd and "MFMA" in amd and "5.3 TB/s" in amd
    assert "warp of 32 threads" in nv and "shared memory: 228 KiB per SM, at most 227 KiB per thread block" in nv
    assert "wavefront" not in nv and "LDS" not in nv and "50 MB" in nv and "3.35 TB/s" in nv
    assert "FP8 (E4M3, E5M2; FNUZ encodings)" in amd and "FP8 (E4M3, E5M2)," in nv


def test_one_template_serves_every_target():
    """The TriMul prompts differ only in the GPU's name and its descriptor section."""
    texts = {}
    for gpu in ("H100", "A100", "H200", "B200", "MI300X"):
        p = kernel_prompt(f"TriMul-{gpu}-v0")
        assert section(p) == platform_descriptor(gpu)
        rest = p.replace(section(p), "<PLATFORM>").replace(gpu, "<GPU>")
        texts[gpu] = re.sub(r"Best published: .*?\n", "", rest)  # records differ per GPU
    assert len(set(texts.values())) == 1


@pytest.mark.parametrize("env_id", KERNEL_IDS)
def test_every_kernel_env_has_a_descriptor_in_its_observation(env_id):
    gpu = env_id.split("-")[-2]
    assert gpu in PLATFORMS
    obs, _ = gym.make(env_id).reset(seed=0)
    assert platform_descriptor(gpu) in obs["prompt"]


def test_rows_are_complete_and_cite_a_source():
    assert set(PLATFORMS) == {"H100", "A100", "H200", "B200", "MI300X"}
    for p in PLATFORMS.values():
        assert p.source and p.bandwidth_tb_s > 0 and p.units > 0 and p.matrix_types
        assert (p.simt_width, p.simt_unit, p.scratchpad_name) == (
            (64, "wavefront", "LDS") if p.vendor == "AMD" else (32, "warp", "shared memory")
        )
    assert PLATFORMS["A100"].scratchpad_per_block_kib == 163 and "FP8" not in " ".join(PLATFORMS["A100"].matrix_types)
    assert "FP4 (NVFP4, MXFP4)" in PLATFORMS["B200"].matrix_types
