"""TriMul (triangle multiplicative update, outgoing edges): seeded inputs and PyTorch reference.

Source: GPU MODE BioML problem ``trimul`` (leaderboard 496), an AlphaFold-style triangle update
without biases in the linear layers. Written from the problem notes, not copied.

``data = (x, mask, weights, config)``:

* ``x``: (B, N, N, C) float32 on the device.
* ``mask``: (B, N, N) float32 with values in {0, 1} (all ones when ``nomask``).
* ``weights``: dict of float32 tensors: ``norm.weight``/``norm.bias`` (C,), ``left_proj.weight``,
  ``right_proj.weight``, ``left_gate.weight``, ``right_gate.weight``, ``out_gate.weight`` (H, C),
  ``to_out_norm.weight``/``to_out_norm.bias`` (H,), ``to_out.weight`` (C, H).
* ``config``: ``{"dim": C, "hidden_dim": H}``.

Output: (B, N, N, C) float32.

Differences from the official harness, on purpose: (1) the official task reads ``nomask`` as a
string, so its mask is always all ones; here ``nomask=False`` really gives a random {0, 1} mask;
(2) Cauchy inputs are drawn from the seeded generator (inverse CDF), so every case is
reproducible from its seed. Draw order: x, then the mask (only when masked), then the weights in
the order listed above.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from discoverygym.rewards.kernels.specs import TriMulCase

__all__ = ["WEIGHT_NAMES", "generate_input", "no_tf32", "reference"]

WEIGHT_NAMES = (
    "norm.weight",
    "norm.bias",
    "left_proj.weight",
    "right_proj.weight",
    "left_gate.weight",
    "right_gate.weight",
    "out_gate.weight",
    "to_out_norm.weight",
    "to_out_norm.bias",
    "to_out.weight",
)


def generate_input(case: TriMulCase, device: str | torch.device, seed: int | None = None) -> tuple:
    """Seeded TriMul input ``(x, mask, weights, config)`` on ``device``.

    Args:
        case: shapes, distribution, mask kind and seed.
        device: ``"cuda"``, ``"cpu"``...; the generator lives on this device, so the same seed
            gives different (but fixed) numbers on CPU and GPU.
        seed: overrides ``case.seed`` (fresh inputs for re-checks after timing).

    Returns:
        ``(x, mask, weights, config)`` as described in the module docstring.
    """
    b, n, c, h = case.batch, case.seqlen, case.dim, case.hidden
    gen = torch.Generator(device=device)
    gen.manual_seed(int(case.seed if seed is None else seed))
    kw = {"device": device, "dtype": torch.float32, "generator": gen}
    if case.distribution == "cauchy":
        u = torch.rand((b, n, n, c), **kw)
        x = 2.0 * torch.tan(math.pi * (u - 0.5))  # Cauchy(0, 2) by inverse CDF
    elif case.distribution == "normal":
        x = torch.randn((b, n, n, c), **kw)
    else:
        raise ValueError(f"unknown distribution {case.distribution!r}")
    if case.nomask:
        mask = torch.ones((b, n, n), device=device, dtype=torch.float32)
    else:
        mask = torch.randint(0, 2, (b, n, n), device=device, generator=gen).to(torch.float32)
    shapes = {
        "norm.weight": (c,),
        "norm.bias": (c,),
        "to_out_norm.weight": (h,),
        "to_out_norm.bias": (h,),
        "to_out.weight": (c, h),
    }
    weights = {}
    for name in WEIGHT_NAMES:
        shape = shapes.get(name, (h, c))
        w = torch.randn(shape, **kw)
        if name == "to_out.weight":
            w = w / math.sqrt(c)
        elif name.endswith(("proj.weight", "gate.weight")):
            w = w / math.sqrt(h)
        weights[name] = w
    return x.contiguous(), mask, weights, {"dim": c, "hidden_dim": h}


@contextlib.contextmanager
def no_tf32() -> Iterator[None]:
    """Run the block with TF32 off for matmuls and cuDNN (full float32), restoring the settings."""
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def reference(data: tuple) -> torch.Tensor:
    """TriMul forward in float32 PyTorch (TF32 off).

    ``xn = LayerNorm_C(x)``; ``left = (xn Wlᵀ)·mask·σ(xn Wlgᵀ)``; ``right`` likewise;
    ``t[b,i,j,d] = Σ_k left[b,i,k,d]·right[b,j,k,d]``; ``out = (LayerNorm_H(t)·σ(xn Wogᵀ)) Woutᵀ``.
    LayerNorm eps is 1e-5 (PyTorch's default, as in the task).

    Args:
        data: ``(x, mask, weights, config)`` from :func:`generate_input`.

    Returns:
        (B, N, N, C) float32 tensor on x's device.
    """
    x, mask, w, config = data
    c, h = config["dim"], config["hidden_dim"]
    with no_tf32():
        xn = F.layer_norm(x, (c,), w["norm.weight"], w["norm.bias"])
        m = mask.unsqueeze(-1).to(x.dtype)
        left = (xn @ w["left_proj.weight"].T) * m * torch.sigmoid(xn @ w["left_gate.weight"].T)
        right = (xn @ w["right_proj.weight"].T) * m * torch.sigmoid(xn @ w["right_gate.weight"].T)
        # (B, H, N, N) batched matmul: t[b, d, i, j] = Σ_k left[b, d, i, k] right[b, d, j, k]
        t = torch.matmul(left.permute(0, 3, 1, 2), right.permute(0, 3, 2, 1)).permute(0, 2, 3, 1)
        t = F.layer_norm(t, (h,), w["to_out_norm.weight"], w["to_out_norm.bias"])
        gate = torch.sigmoid(xn @ w["out_gate.weight"].T)
        return (t * gate) @ w["to_out.weight"].T
