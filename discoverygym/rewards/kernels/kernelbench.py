"""KernelBench level 1 problems 89 (cumsum) and 9 (tall skinny matmul): seeded inputs and references.

Source: KernelBench (Ouyang et al., arXiv 2502.10517), ``KernelBench/level1/89_cumsum.py``
(``torch.cumsum(x, dim=1)`` of a (batch, length) float32 tensor) and
``KernelBench/level1/9_Tall_skinny_matrix_multiplication_.py`` (``torch.matmul(A, B)`` with
A (M, N), B (N, M), M ≫ N); SimpleTES (arXiv 2604.19341) runs them as tasks 89 and 9. Written from
the problem statements, not copied.

* cumsum: ``data = x``, (rows, length) float32; output (rows, length) float32, the inclusive
  prefix sum along dim 1.
* matmul: ``data = (A, B)``, A (m, k) and B (k, n) float32; output (m, n) float32 = A @ B.

KernelBench draws its inputs with the global RNG (``torch.rand`` now, ``torch.randn`` in its first
release); here every case is drawn from its own seeded generator on the device, uniform U[0, 1)
or normal N(0, 1) (:class:`~discoverygym.rewards.kernels.specs.CumsumCase`), so each case is
reproducible from its seed. The references are KernelBench's own float32 operations (the matmul
with TF32 off, i.e. full float32 products, as PyTorch's default for matmuls).
"""

from __future__ import annotations

import torch

from discoverygym.rewards.kernels.specs import CumsumCase, MatmulCase
from discoverygym.rewards.kernels.trimul import no_tf32

__all__ = ["cumsum_input", "cumsum_reference", "matmul_input", "matmul_reference"]


def _draw(shape: tuple[int, ...], distribution: str, gen: torch.Generator, device: str | torch.device) -> torch.Tensor:
    kw = {"device": device, "dtype": torch.float32, "generator": gen}
    if distribution == "uniform":
        return torch.rand(shape, **kw)
    if distribution == "normal":
        return torch.randn(shape, **kw)
    raise ValueError(f"unknown distribution {distribution!r}")


def _generator(seed: int, device: str | torch.device) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    return gen


def cumsum_input(case: CumsumCase, device: str | torch.device, seed: int | None = None) -> torch.Tensor:
    """Seeded cumsum input x, (rows, length) float32 contiguous on ``device``.

    Args:
        case: shape, distribution and seed.
        device: ``"cuda"``, ``"cpu"``...; the generator lives on this device.
        seed: overrides ``case.seed`` (fresh inputs for re-checks and timed rounds).
    """
    gen = _generator(case.seed if seed is None else seed, device)
    return _draw((case.rows, case.length), case.distribution, gen, device)


def cumsum_reference(x: torch.Tensor) -> torch.Tensor:
    """Inclusive prefix sum along dim 1 (``torch.cumsum(x, dim=1)``, float32), same shape as x."""
    return torch.cumsum(x, dim=1)


def matmul_input(case: MatmulCase, device: str | torch.device, seed: int | None = None) -> tuple:
    """Seeded matmul input ``(A, B)``: A (m, k), B (k, n), float32 on ``device``; A is drawn first.

    Args:
        case: sizes, distribution and seed.
        device: torch device string.
        seed: overrides ``case.seed``.
    """
    gen = _generator(case.seed if seed is None else seed, device)
    a = _draw((case.m, case.k), case.distribution, gen, device)
    b = _draw((case.k, case.n), case.distribution, gen, device)
    return a, b


def matmul_reference(data: tuple) -> torch.Tensor:
    """``A @ B`` in full float32 (TF32 off), shape (m, n).

    Args:
        data: ``(A, B)`` from :func:`matmul_input`.
    """
    a, b = data
    with no_tf32():
        return torch.matmul(a, b)
