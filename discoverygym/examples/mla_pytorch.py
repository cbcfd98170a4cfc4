"""MLA-Decode baseline candidate in plain PyTorch (the initial program of MLADecode-*-v0).

``custom_kernel(data)`` with ``data = (config, x, kv_cache)`` (see the task prompt) returns
``(out, kv_cache)``: out (B, 1, dim) bf16, and the cache with the new latent row written at
position ``config["seq_len"]``. Uses the weight-absorbed form (scores against the latent cache
directly, never expanding per-head keys and values) in bf16 matmuls with a float32 softmax.
"""

import math

import torch


def _rope(v, pos, dim):
    inv = 10000.0 ** (-torch.arange(dim // 2, device=v.device, dtype=torch.float32) / (dim // 2))
    ang = pos.to(torch.float32)[:, None] * inv[None, :]
    cos, sin = torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)
    v = v.float()
    half = v.shape[-1] // 2
    rot = torch.cat([-v[..., half:], v[..., :half]], -1)
    return (v * cos + rot * sin).to(torch.bfloat16)


def custom_kernel(data):
    cfg, x, cache = data
    bsz, seq = x.shape[0], int(cfg["seq_len"])
    h, dkv, r = cfg["n_heads"], cfg["kv_lora_rank"], cfg["qk_rope_head_dim"]
    nope, dv = cfg["qk_nope_head_dim"], cfg["v_head_dim"]
    x2 = x[:, 0]
    cache[:, seq] = x2 @ cfg["KV_proj_down_weight"].t()
    lat = cache[:, : seq + 1]  # (B, L+1, dkv + r)
    q = ((x2 @ cfg["Q_proj_down_weight"].t()) @ cfg["Q_proj_up_weight"].t()).view(bsz, h, nope + r)
    w_up = cfg["KV_proj_up_weight"].view(h, nope + dv, dkv)
    q_lat = torch.einsum("bhn,hnk->bhk", q[..., :nope], w_up[:, :nope])  # (B, H, dkv)
    pos = torch.arange(seq + 1, device=x.device)
    k_rope = _rope(lat[..., dkv:], pos, r)  # (B, L+1, r)
    q_rope = _rope(q[..., nope:], pos[seq:], r)  # (B, H, r)
    scores = (q_lat @ lat[..., :dkv].transpose(1, 2)).float() + (q_rope @ k_rope.transpose(1, 2)).float()
    attn = torch.softmax(scores / math.sqrt(nope + r), dim=-1).to(torch.bfloat16)
    o_lat = attn @ lat[..., :dkv]  # (B, H, dkv)
    y = torch.einsum("bhk,hvk->bhv", o_lat, w_up[:, nope:]).reshape(bsz, 1, h * dv)
    return y @ cfg["wo_weight"].t(), cache
