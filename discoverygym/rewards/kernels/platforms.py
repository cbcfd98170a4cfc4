"""Architecture facts of the target GPUs, for the kernel prompts (one template, NVIDIA and AMD).

One :class:`Platform` row per GPU a kernel env can target (``TriMul-{H100,A100,H200,B200,MI300X}-v0``,
``MLADecode-{H200,MI300X}-v0``): SIMT width (warp / wavefront), on-chip scratchpad per block (shared
memory / LDS), L2 cache, matrix-unit (tensor core / matrix core) data types, device memory and its
bandwidth, and the number of SMs / CUs. :func:`platform_descriptor` renders a row as the prompt's
"Target platform" section; :class:`~discoverygym.envs.kernels.KernelTask` puts it into every kernel
prompt, so a policy writing for MI300X is told wavefront 64 and 64 KiB of LDS, not H100's warp 32
and 228 KiB of shared memory.

Figures are the vendors' public ones for the SXM / OAM board of each GPU (the parts the GPU MODE
leaderboards run); each row's ``source`` names where they come from. Where a vendor publishes no
figure the row says so (``B200``'s L2 size).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PLATFORMS", "Platform", "platform_descriptor"]


@dataclass(frozen=True)
class Platform:
    """Architecture facts of one GPU (vendor figures; see ``source``).

    Attributes:
        name: the env id's GPU key (``"H100"``, ``"MI300X"``...).
        vendor, product, architecture: e.g. ``"NVIDIA"``, ``"H100 SXM5 80 GB"``, ``"Hopper (sm_90)"``.
        simt_width: threads that execute in lockstep (warp 32 on NVIDIA, wavefront 64 on CDNA).
        simt_unit: ``"warp"`` or ``"wavefront"``.
        scratchpad_name: ``"shared memory"`` (NVIDIA) or ``"LDS"`` (AMD).
        scratchpad_per_block_kib: the most a thread block / workgroup can allocate (KiB).
        scratchpad_per_unit_kib: the scratchpad of one SM / CU (KiB).
        l2: L2 (and last-level) cache, as text.
        matrix_unit: ``"tensor cores"`` or ``"matrix cores"``.
        matrix_types: data types the matrix units take.
        memory: device memory (size and kind).
        bandwidth_tb_s: peak device-memory bandwidth (TB/s).
        units: number of SMs / CUs.
        unit_name: ``"SMs"`` or ``"CUs"``.
        toolchain: what compiles kernels for it (CUDA / ROCm, Triton backend).
        source: the public documents the figures come from.
    """

    name: str
    vendor: str
    product: str
    architecture: str
    simt_width: int
    simt_unit: str
    scratchpad_name: str
    scratchpad_per_block_kib: int
    scratchpad_per_unit_kib: int
    l2: str
    matrix_unit: str
    matrix_types: tuple[str, ...]
    memory: str
    bandwidth_tb_s: float
    units: int
    unit_name: str
    toolchain: str
    source: str


_HOPPER_TYPES = ("FP64", "TF32", "BF16", "FP16", "FP8 (E4M3, E5M2)", "INT8")

PLATFORMS: dict[str, Platform] = {
    # Source: NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022) and H100 datasheet (SXM5:
    # 132 SMs, 50 MB L2, 3.35 TB/s HBM3); CUDA C++ Programming Guide, compute capability 9.0
    # (228 KB shared memory per SM, at most 227 KB per thread block, opt-in above 48 KB).
    "H100": Platform(
        "H100", "NVIDIA", "H100 SXM5 80 GB", "Hopper (sm_90)", 32, "warp", "shared memory", 227, 228,
        "50 MB", "tensor cores", _HOPPER_TYPES, "80 GB HBM3", 3.35, 132, "SMs",
        "CUDA 12 / Triton (PTX), wgmma and TMA available",
        "NVIDIA H100 Tensor Core GPU Architecture whitepaper; H100 datasheet; CUDA C++ Programming Guide (cc 9.0)",
    ),
    # Source: NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020) and A100 datasheet (SXM4
    # 80 GB: 108 SMs, 40 MB L2, 2,039 GB/s HBM2e); CUDA C++ Programming Guide, compute capability 8.0
    # (164 KB shared memory per SM, at most 163 KB per thread block).
    "A100": Platform(
        "A100", "NVIDIA", "A100 SXM4 80 GB", "Ampere (sm_80)", 32, "warp", "shared memory", 163, 164,
        "40 MB", "tensor cores", ("FP64", "TF32", "BF16", "FP16", "INT8", "INT4"), "80 GB HBM2e", 2.039,
        108, "SMs", "CUDA 11+ / Triton (PTX), mma.sync and cp.async (no FP8, no TMA)",
        "NVIDIA A100 Tensor Core GPU Architecture whitepaper; A100 datasheet; CUDA C++ Programming Guide (cc 8.0)",
    ),
    # Source: NVIDIA H200 Tensor Core GPU datasheet (SXM: 141 GB HBM3e, 4.8 TB/s); the H200 is a Hopper
    # GH100 like the H100 SXM5 (132 SMs, 50 MB L2; CUDA C++ Programming Guide, compute capability 9.0).
    "H200": Platform(
        "H200", "NVIDIA", "H200 SXM 141 GB", "Hopper (sm_90)", 32, "warp", "shared memory", 227, 228,
        "50 MB", "tensor cores", _HOPPER_TYPES, "141 GB HBM3e", 4.8, 132, "SMs",
        "CUDA 12 / Triton (PTX), wgmma and TMA available",
        "NVIDIA H200 Tensor Core GPU datasheet; H100 architecture whitepaper; CUDA C++ Programming Guide (cc 9.0)",
    ),
    # Source: NVIDIA DGX B200 datasheet and Blackwell architecture technical brief (HBM3e, 8 TB/s per
    # GPU; FP4/FP6 tensor cores); CUDA C++ Programming Guide, compute capability 10.0 (228 KB shared
    # memory per SM, at most 227 KB per block). NVIDIA's datasheets give no L2 size.
    "B200": Platform(
        "B200", "NVIDIA", "B200 SXM 180 GB", "Blackwell (sm_100)", 32, "warp", "shared memory", 227, 228,
        "not published by NVIDIA's datasheets (tens of MB)", "tensor cores",
        ("FP64", "TF32", "BF16", "FP16", "FP8 (E4M3, E5M2)", "FP6", "FP4 (NVFP4, MXFP4)", "INT8"),
        "180 GB HBM3e", 8.0, 148, "SMs", "CUDA 12.8+ / Triton (PTX), tcgen05 tensor memory and TMA",
        "NVIDIA DGX B200 datasheet; NVIDIA Blackwell architecture technical brief; CUDA C++ Programming Guide (cc 10.0)",
    ),
    # Source: AMD Instinct MI300X data sheet (304 CUs, 192 GB HBM3, 5.3 TB/s, 256 MB Infinity Cache);
    # AMD CDNA 3 architecture white paper (4 MB L2 per XCD, 8 XCDs; 64 KB LDS per CU); AMD CDNA 3
    # ISA reference guide (wavefront 64; a workgroup allocates at most 64 KB of LDS).
    "MI300X": Platform(
        "MI300X", "AMD", "Instinct MI300X OAM 192 GB", "CDNA 3 (gfx942)", 64, "wavefront", "LDS", 64, 64,
        "4 MB per XCD (8 XCDs, 32 MB in all) plus 256 MB AMD Infinity Cache", "matrix cores",
        ("FP64", "FP32", "TF32 (XF32)", "BF16", "FP16", "FP8 (E4M3, E5M2; FNUZ encodings)", "INT8"),
        "192 GB HBM3", 5.3, 304, "CUs", "ROCm 6 HIP / Triton (AMDGCN), MFMA instructions",
        "AMD Instinct MI300X data sheet; AMD CDNA 3 architecture white paper; AMD CDNA 3 ISA reference guide",
    ),
}


def platform_descriptor(gpu: str) -> str:
    """The "Target platform" section of a kernel prompt for ``gpu`` (a key of :data:`PLATFORMS`).

    Raises:
        KeyError: a GPU without a row.

    Example:
        >>> print(platform_descriptor("MI300X").splitlines()[2])
        - SIMT width: wavefront of 64 threads
    """
    p = PLATFORMS[gpu]
    return "\n".join(
        [
            f"## Target platform: {p.vendor} {p.product}, {p.architecture}",
            "",
            f"- SIMT width: {p.simt_unit} of {p.simt_width} threads",
            (
                f"- {p.scratchpad_name}: {p.scratchpad_per_unit_kib} KiB per {p.unit_name[:-1]}, at most "
                f"{p.scratchpad_per_block_kib} KiB per {'thread block' if p.vendor == 'NVIDIA' else 'workgroup'}"
            ),
            f"- L2 cache: {p.l2}",
            f"- {p.matrix_unit} data types: {', '.join(p.matrix_types)}",
            f"- memory: {p.memory}, {p.bandwidth_tb_s:g} TB/s peak bandwidth",
            f"- {p.units} {p.unit_name}; toolchain: {p.toolchain}",
            f"(figures: {p.source})",
        ]
    )
