"""MLA decode (DeepSeek-style multi-head latent attention, one new token): inputs and reference.

Source: GPU MODE AMD problem ``mla-decode`` (problem 463; TTT-Discover also ran an H200 port),
shapes from DeepSeek-V3 with the heads split to fit one GPU. Written from the problem notes.

``data = (config, x, kv_cache)``:

* ``config``: dict with ``batch_size``, ``dim``, ``n_heads``, ``q_lora_rank``, ``kv_lora_rank``,
  ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``, ``seq_len`` (L, rows of the cache
  already filled), ``max_seq_len`` and bf16 weights ``Q_proj_down_weight`` (q_lora, dim),
  ``Q_proj_up_weight`` (H·(nope+rope), q_lora), ``KV_proj_down_weight`` (kv_lora+rope, dim),
  ``KV_proj_up_weight`` (H·(nope+v), kv_lora), ``wo_weight`` (dim, H·v).
* ``x``: (B, 1, dim) bf16, the new token's hidden state.
* ``kv_cache``: (B, max_seq_len, kv_lora+rope) bf16; rows ``[0, L)`` filled, the rest zero.

The kernel must return ``(out, kv_cache)``: ``out`` (B, 1, dim) bf16 and the cache with row L set
to ``x W_kv_downᵀ`` (the new latent; other rows unchanged).

Semantics: q = (x Wq_downᵀ) Wq_upᵀ split per head into nope/rope parts; keys and values come from
the latent rows ``c = cache[:, :L+1]`` as ``c[..., :kv_lora] W_kv_upᵀ`` (nope part of k, and v) and
``c[..., kv_lora:]`` (the shared rope part of k). RoPE (rotate-half form, θ_i = 10000^(−i/(r/2)),
angles in float32) at position L for the query and 0..L for keys; scores / √(nope+rope), softmax
over the L+1 keys, weighted sum of v, then ``wo``. The official reference rounds θ to bf16; ours
keeps float32 angles (the intended RoPE). The reference uses the weight-absorbed form in float32
(the same function as expanding k and v, without materialising (B, L, H, nope+v) tensors, which
would need ~50 GB at prefill 6144) and rounds the result to bf16.
"""

from __future__ import annotations

import math

import torch

from discoverygym.rewards.kernels.specs import MLACase

__all__ = ["generate_input", "reference", "rope_angles"]


def generate_input(case: MLACase, device: str | torch.device, seed: int | None = None) -> tuple:
    """Seeded MLA decode input ``(config, x, kv_cache)`` on ``device`` (see module docstring).

    Weights are N(0, 1)/√(fan-in) in bf16; x and the filled cache rows are N(0, 1) bf16. Draw order:
    Q down, KV down, Q up, KV up, wo, x, cache rows.

    Args:
        case: shapes and seed.
        device: torch device string.
        seed: overrides ``case.seed`` (fresh inputs for re-checks).
    """
    gen = torch.Generator(device=device)
    gen.manual_seed(int(case.seed if seed is None else seed))

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * scale).to(
            torch.bfloat16
        )

    h, dq, dkv, r = case.heads, case.q_lora, case.kv_lora, case.rope
    config = {
        "batch_size": case.batch,
        "dim": case.dim,
        "n_heads": h,
        "q_lora_rank": dq,
        "kv_lora_rank": dkv,
        "qk_nope_head_dim": case.nope,
        "qk_rope_head_dim": r,
        "v_head_dim": case.v,
        "seq_len": case.prefill,
        "max_seq_len": case.max_seq,
        "Q_proj_down_weight": randn(dq, case.dim, scale=1 / math.sqrt(case.dim)),
        "KV_proj_down_weight": randn(dkv + r, case.dim, scale=1 / math.sqrt(case.dim)),
        "Q_proj_up_weight": randn(h * (case.nope + r), dq, scale=1 / math.sqrt(dq)),
        "KV_proj_up_weight": randn(h * (case.nope + case.v), dkv, scale=1 / math.sqrt(dkv)),
        "wo_weight": randn(case.dim, h * case.v, scale=1 / math.sqrt(h * case.v)),
    }
    x = randn(case.batch, 1, case.dim)
    cache = torch.zeros((case.batch, case.max_seq, dkv + r), dtype=torch.bfloat16, device=device)
    cache[:, : case.prefill] = randn(case.batch, case.prefill, dkv + r)
    return config, x, cache


def rope_angles(positions: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of RoPE angles, float32, shape (len(positions), dim) (halves repeated)."""
    theta = 10000.0 ** (-torch.arange(dim // 2, dtype=torch.float32, device=positions.device) / (dim // 2))
    ang = positions.to(torch.float32)[:, None] * theta[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def reference(data: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    """MLA decode, weight-absorbed, float32 arithmetic on bf16 inputs.

    Args:
        data: ``(config, x, kv_cache)`` from :func:`generate_input`; not modified.

    Returns:
        ``(out, cache)``: (B, 1, dim) bf16 and a new (B, max_seq, kv_lora+rope) bf16 cache with row
        L written.
    """
    config, x, kv_cache = data
    b, L = x.shape[0], int(config["seq_len"])
    h, dkv, r = config["n_heads"], config["kv_lora_rank"], config["qk_rope_head_dim"]
    nope, dv = config["qk_nope_head_dim"], config["v_head_dim"]
    f = lambda t: t.to(torch.float32)
    xf = f(x[:, 0])  # (B, dim)
    new = (xf @ f(config["KV_proj_down_weight"]).T).to(torch.bfloat16)  # (B, dkv + r)
    cache = kv_cache.clone()
    cache[:, L] = new
    c = f(cache[:, : L + 1])  # (B, L+1, dkv + r)
    q = (xf @ f(config["Q_proj_down_weight"]).T) @ f(config["Q_proj_up_weight"]).T
    q = q.view(b, h, nope + r)
    q_nope, q_rope = q[..., :nope], q[..., nope:]
    w_up = f(config["KV_proj_up_weight"]).view(h, nope + dv, dkv)
    w_uk, w_uv = w_up[:, :nope], w_up[:, nope:]  # (H, nope, dkv), (H, dv, dkv)
    q_lat = torch.einsum("bhn,hnk->bhk", q_nope, w_uk)  # (B, H, dkv)
    pos = torch.arange(L + 1, device=x.device)
    cos, sin = rope_angles(pos, r)
    k_rope = _rotate(c[..., dkv:], cos, sin)  # (B, L+1, r)
    q_rope = _rotate(q_rope, cos[L], sin[L])  # (B, H, r)
    scores = (q_lat @ c[..., :dkv].transpose(1, 2) + q_rope @ k_rope.transpose(1, 2)) / math.sqrt(nope + r)
    attn = torch.softmax(scores, dim=-1)  # (B, H, L+1)
    o_lat = attn @ c[..., :dkv]  # (B, H, dkv)
    y = torch.einsum("bhk,hvk->bhv", o_lat, w_uv).reshape(b, 1, h * dv)
    out = y @ f(config["wo_weight"]).T
    return out.to(torch.bfloat16), cache
