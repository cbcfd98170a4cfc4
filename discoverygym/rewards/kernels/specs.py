"""Test cases, timed cases and published records of the GPU-kernel problems (no torch needed).

Sources: GPU MODE ``reference-kernels`` task definitions (``problems/bioml/trimul``, leaderboard
496, and ``problems/amd/mla-decode``, problem 463) as summarised in the project's problem notes;
records from TTT-Discover (arXiv 2601.16175, Table "kernel engineering") and SimpleTES (arXiv
2604.19341). KernelBench level 1 (Ouyang et al., arXiv 2502.10517; ScalingIntelligence/KernelBench
``KernelBench/level1/89_cumsum.py`` and ``9_Tall_skinny_matrix_multiplication_.py``, TES tasks 89
and 9): the problems' shapes, in their first (v0) and current sizes, plus our variants.

Full-size cases are what the GPU MODE harness runs. ``device="cpu"`` uses the ``*_CPU_*`` lists:
the same structure at shapes small enough for PyTorch on a CPU and for Triton's interpreter
(``TRITON_INTERPRET=1``) to finish in seconds. CPU cases check correctness only; no timing is
ever taken on a CPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = [
    "CUMSUM_BENCHMARKS",
    "CUMSUM_CPU_BENCHMARKS",
    "CUMSUM_CPU_TESTS",
    "CUMSUM_TESTS",
    "KERNELBENCH_RECORDS",
    "KERNELBENCH_TOLERANCE",
    "KERNELBENCH_TOLERANCES",
    "MATMUL_BENCHMARKS",
    "MATMUL_CPU_BENCHMARKS",
    "MATMUL_CPU_TESTS",
    "MATMUL_TESTS",
    "MLA_BENCHMARKS",
    "MLA_CPU_BENCHMARKS",
    "MLA_CPU_TESTS",
    "MLA_RECORDS",
    "MLA_TESTS",
    "MLA_TOLERANCE",
    "TRIMUL_BENCHMARKS",
    "TRIMUL_CPU_BENCHMARKS",
    "TRIMUL_CPU_TESTS",
    "TRIMUL_RECORDS",
    "TRIMUL_TESTS",
    "TRIMUL_TOLERANCE",
    "CumsumCase",
    "MLACase",
    "MatmulCase",
    "TriMulCase",
    "case_from_dict",
]

#: elementwise tolerance (rtol, atol): |out - ref| <= atol + rtol * |ref| (GPU MODE task files).
TRIMUL_TOLERANCE = (2e-2, 2e-2)
MLA_TOLERANCE = (2e-2, 8e-3)
#: KernelBench v0/v0.1 float32 rule: ``torch.allclose(out, ref, atol=1e-2, rtol=1e-2)``
#: (``src/kernelbench/eval.py``; the same |out − ref| ≤ atol + rtol·|ref| test).
KERNELBENCH_TOLERANCE = (1e-2, 1e-2)
#: the KernelBench envs' ``tolerance`` option: ``"tes"`` (default) is the v0/v0.1 rule above, which
#: TES (SimpleTES) ran; ``"kernelbench"`` is KernelBench's current float32 harness,
#: atol = rtol = 1e-4 (issue 40's outside check).
KERNELBENCH_TOLERANCES = {"tes": KERNELBENCH_TOLERANCE, "kernelbench": (1e-4, 1e-4)}


@dataclass(frozen=True)
class TriMulCase:
    """One TriMul input: x of shape (batch, seqlen, seqlen, dim) float32, hidden width ``hidden``.

    ``nomask=True`` gives an all-ones mask, else a seeded {0, 1} mask. ``distribution`` is
    ``"normal"`` (N(0, 1)) or ``"cauchy"`` (Cauchy(0, 2), heavy tails).
    """

    seqlen: int
    batch: int
    dim: int
    seed: int
    nomask: bool
    distribution: str
    hidden: int = 128
    kind: str = "trimul"

    @property
    def name(self) -> str:
        """Short label, e.g. ``"n256 b2 c128 normal nomask s9371"``."""
        mask = "nomask" if self.nomask else "mask"
        return f"n{self.seqlen} b{self.batch} c{self.dim} {self.distribution} {mask} s{self.seed}"

    def to_dict(self) -> dict:
        """JSON-serialisable fields (``kind`` tells :func:`case_from_dict` the class)."""
        return asdict(self)


@dataclass(frozen=True)
class MLACase:
    """One MLA decode input: a batch of single-token queries against a latent KV cache.

    Shapes: x (batch, 1, dim) bf16; cache (batch, max_seq, kv_lora + rope) bf16 whose first
    ``prefill`` rows are filled; ``heads`` heads with q/k width ``nope + rope`` and v width ``v``.
    """

    batch: int
    prefill: int
    seed: int
    dim: int = 7168
    q_lora: int = 1536
    heads: int = 128
    kv_lora: int = 512
    nope: int = 128
    rope: int = 64
    v: int = 128
    max_seq: int = 8192
    kind: str = "mla"

    @property
    def name(self) -> str:
        """Short label, e.g. ``"bs128 prefill6144 s5291"``."""
        return f"bs{self.batch} prefill{self.prefill} s{self.seed}"

    def to_dict(self) -> dict:
        """JSON-serialisable fields."""
        return asdict(self)


@dataclass(frozen=True)
class CumsumCase:
    """One KernelBench cumsum input: x of shape (rows, length) float32, scanned along dim 1.

    ``distribution``: ``"uniform"`` (U[0, 1), KernelBench's current ``torch.rand``) or ``"normal"``
    (N(0, 1), its first release's ``torch.randn``).
    """

    rows: int
    length: int
    seed: int
    distribution: str = "uniform"
    kind: str = "cumsum"

    @property
    def name(self) -> str:
        """Short label, e.g. ``"x128x4000 uniform s89"``."""
        return f"x{self.rows}x{self.length} {self.distribution} s{self.seed}"

    def to_dict(self) -> dict:
        """JSON-serialisable fields."""
        return asdict(self)


@dataclass(frozen=True)
class MatmulCase:
    """One KernelBench matmul input: A (m, k) and B (k, n) float32; the output is A @ B, (m, n).

    KernelBench problem 9 is tall and skinny: k ≪ m = n (an outer-product-like matmul).
    ``distribution`` as in :class:`CumsumCase`.
    """

    m: int
    k: int
    n: int
    seed: int
    distribution: str = "uniform"
    kind: str = "matmul"

    @property
    def name(self) -> str:
        """Short label, e.g. ``"m16384 k16 n16384 normal s9"``."""
        return f"m{self.m} k{self.k} n{self.n} {self.distribution} s{self.seed}"

    def to_dict(self) -> dict:
        """JSON-serialisable fields."""
        return asdict(self)


def case_from_dict(d: dict) -> TriMulCase | MLACase | CumsumCase | MatmulCase:
    """Rebuild a case from :meth:`to_dict` output.

    Raises:
        ValueError: unknown ``kind``.
    """
    kinds = {"trimul": TriMulCase, "mla": MLACase, "cumsum": CumsumCase, "matmul": MatmulCase}
    if d.get("kind") not in kinds:
        raise ValueError(f"unknown case kind {d.get('kind')!r}")
    return kinds[d["kind"]](**d)


def _t(seqlen: int, batch: int, dim: int, seed: int, nomask: bool, dist: str) -> TriMulCase:
    return TriMulCase(seqlen, batch, dim, seed, nomask, "cauchy" if dist == "c" else "normal")


# (seqlen, batch, dim, seed, nomask, distribution) from the TriMul task definition.
TRIMUL_TESTS: tuple[TriMulCase, ...] = tuple(
    _t(*a)
    for a in [
        (32, 1, 128, 9371, True, "n"),
        (32, 1, 128, 1092, False, "n"),
        (64, 2, 256, 2291, True, "n"),
        (64, 2, 256, 210284, False, "n"),
        (128, 1, 768, 81934, True, "n"),
        (256, 1, 128, 1932, True, "n"),
        (256, 1, 128, 10432, False, "n"),
        (768, 2, 128, 731, True, "n"),
        (1024, 1, 384, 53121, False, "n"),
        (1024, 1, 768, 31, True, "n"),
        (1024, 1, 768, 4921, False, "n"),
        (32, 1, 128, 937321, True, "c"),
        (64, 2, 256, 2291, True, "c"),
        (128, 1, 768, 8134, True, "c"),
        (256, 1, 128, 932, True, "c"),
        (768, 2, 128, 31, True, "c"),
        (1024, 1, 384, 5321, False, "c"),
        (1024, 1, 768, 491, False, "c"),
    ]
)
TRIMUL_BENCHMARKS: tuple[TriMulCase, ...] = tuple(
    _t(*a)
    for a in [
        (256, 2, 128, 9371, True, "n"),
        (768, 1, 128, 381, True, "c"),
        (256, 2, 384, 2301, False, "n"),
        (512, 1, 128, 12819, True, "n"),
        (1024, 1, 128, 381, True, "c"),
        (768, 1, 384, 481, False, "n"),
        (1024, 1, 384, 23291, True, "n"),
    ]
)
# CPU scale (ours): hidden 32, seqlen up to 40 (odd sizes exercise masked tiles), both distributions
# and both mask kinds; two cases share a shape so that a cache keyed on shapes is caught.
TRIMUL_CPU_TESTS: tuple[TriMulCase, ...] = (
    TriMulCase(16, 1, 32, 9371, True, "normal", hidden=32),
    TriMulCase(16, 1, 32, 1092, False, "normal", hidden=32),
    TriMulCase(24, 2, 48, 2291, False, "normal", hidden=32),
    TriMulCase(40, 1, 32, 937321, True, "cauchy", hidden=32),
    TriMulCase(24, 2, 48, 5321, False, "cauchy", hidden=32),
)
TRIMUL_CPU_BENCHMARKS: tuple[TriMulCase, ...] = (
    TriMulCase(32, 2, 32, 9371, True, "normal", hidden=32),
    TriMulCase(32, 1, 48, 381, True, "cauchy", hidden=32),
)

MLA_TESTS: tuple[MLACase, ...] = (
    MLACase(128, 128, 9247),
    MLACase(128, 512, 2197),
    MLACase(128, 1024, 9107),
    MLACase(128, 2048, 5291),
)
MLA_BENCHMARKS: tuple[MLACase, ...] = (MLACase(128, 6144, 5291),)
_MLA_SMALL = {
    "dim": 128,
    "q_lora": 64,
    "heads": 4,
    "kv_lora": 32,
    "nope": 16,
    "rope": 8,
    "v": 16,
    "max_seq": 96,
}
MLA_CPU_TESTS: tuple[MLACase, ...] = (
    MLACase(3, 16, 9247, **_MLA_SMALL),
    MLACase(3, 40, 2197, **_MLA_SMALL),
    MLACase(2, 40, 9107, **_MLA_SMALL),
)
MLA_CPU_BENCHMARKS: tuple[MLACase, ...] = (MLACase(3, 64, 5291, **_MLA_SMALL),)

# KernelBench level 1 problem 89 (cumsum, dim=1): batch 128 x (4000,) in the first release,
# 32768 x (32768,) now; our variants: many short rows, a normal-distributed mid size. Correctness
# cases add odd lengths (1, 1023, 65537) that break power-of-two tiling assumptions.
CUMSUM_TESTS: tuple[CumsumCase, ...] = (
    CumsumCase(128, 4000, 89),
    CumsumCase(128, 4000, 8901, "normal"),
    CumsumCase(1, 1, 8902),
    CumsumCase(3, 65537, 8903),
    CumsumCase(1000, 1023, 8904, "normal"),
)
CUMSUM_BENCHMARKS: tuple[CumsumCase, ...] = (
    CumsumCase(32768, 32768, 89),  # KernelBench (current)
    CumsumCase(128, 4000, 8910, "normal"),  # KernelBench (first release: torch.randn)
    CumsumCase(16384, 1000, 8911),
    CumsumCase(4096, 16384, 8912, "normal"),
)
CUMSUM_CPU_TESTS: tuple[CumsumCase, ...] = (
    CumsumCase(4, 100, 89),
    CumsumCase(4, 100, 8901, "normal"),  # same shape, other inputs: a shape-keyed cache fails
    CumsumCase(1, 1, 8902),
    CumsumCase(2, 4097, 8903),
    CumsumCase(5, 33, 8904, "normal"),
)
CUMSUM_CPU_BENCHMARKS: tuple[CumsumCase, ...] = (
    CumsumCase(64, 2000, 8910),
    CumsumCase(16, 8192, 8911, "normal"),
)
# KernelBench level 1 problem 9 (tall skinny matmul, C = A @ B with A (M, N), B (N, M)): M = 16384,
# N = 16 in the first release (randn), M = 32768, N = 32 now (rand). Variants: k = 64, and an odd,
# non-square output. Correctness cases add odd sizes and the other orientation (small m, n, long k).
MATMUL_TESTS: tuple[MatmulCase, ...] = (
    MatmulCase(1000, 16, 1000, 9),
    MatmulCase(333, 7, 555, 901, "normal"),
    MatmulCase(64, 4096, 64, 902),
    MatmulCase(1, 1, 1, 903),
    MatmulCase(4096, 32, 2048, 904, "normal"),
)
MATMUL_BENCHMARKS: tuple[MatmulCase, ...] = (
    MatmulCase(32768, 32, 32768, 9),  # KernelBench (current)
    MatmulCase(16384, 16, 16384, 910, "normal"),  # KernelBench (first release)
    MatmulCase(8192, 64, 8192, 911),
    MatmulCase(12000, 24, 20000, 912),
)
MATMUL_CPU_TESTS: tuple[MatmulCase, ...] = (
    MatmulCase(256, 16, 256, 9),
    MatmulCase(256, 16, 256, 901, "normal"),  # same shape, other inputs
    MatmulCase(100, 7, 130, 902, "normal"),
    MatmulCase(16, 512, 24, 903),
    MatmulCase(1, 1, 1, 904),
)
MATMUL_CPU_BENCHMARKS: tuple[MatmulCase, ...] = (
    MatmulCase(384, 16, 384, 910),
    MatmulCase(256, 32, 192, 911, "normal"),
)

# Published geometric-mean runtimes (μs, lower is better) per GPU. ``None``: no figure published.
TRIMUL_RECORDS: dict[str, dict] = {
    "A100": {"best_human_us": 4531.5, "ttt_us": 2198.2, "tes_us": None},
    "H100": {"best_human_us": 1371.1, "ttt_us": 1161.2, "tes_us": 1122.0},
    "H200": {"best_human_us": None, "ttt_us": None, "tes_us": 1020.0},
    "B200": {"best_human_us": 1027.6, "ttt_us": 910.8, "tes_us": None},
    "MI300X": {"best_human_us": 2515.8, "ttt_us": 1555.7, "tes_us": None},
}
#: KernelBench reports speed-ups over the PyTorch reference, not runtimes of these shapes: no
#: record in μs is published for our timed cases (the baseline is the PyTorch program itself).
KERNELBENCH_RECORDS: dict[str, dict] = {
    gpu: {"best_human_us": None, "ttt_us": None, "tes_us": None} for gpu in ("H100", "H200")
}
MLA_RECORDS: dict[str, dict] = {
    "MI300X": {"best_human_us": 1653.8, "ttt_us": 1669.1, "tes_us": None},
    "H200": {"best_human_us": None, "ttt_us": None, "tes_us": None},
}
