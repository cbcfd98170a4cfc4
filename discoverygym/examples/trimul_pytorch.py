"""TriMul baseline candidate in plain PyTorch (the initial program of TriMul-*-v0).

``custom_kernel(data)`` with ``data = (x, mask, weights, config)``: x (B, N, N, C) float32,
mask (B, N, N), weights as named in the task prompt, config {"dim": C, "hidden_dim": H}.
Returns (B, N, N, C) float32. Straightforward unfused operations: the point to start from.
"""

import torch
import torch.nn.functional as F


def custom_kernel(data):
    x, mask, w, config = data
    c, h = config["dim"], config["hidden_dim"]
    xn = F.layer_norm(x, (c,), w["norm.weight"], w["norm.bias"])
    keep = mask.unsqueeze(-1).to(x.dtype)
    a = (
        torch.matmul(xn, w["left_proj.weight"].t())
        * keep
        * torch.sigmoid(torch.matmul(xn, w["left_gate.weight"].t()))
    )
    b = (
        torch.matmul(xn, w["right_proj.weight"].t())
        * keep
        * torch.sigmoid(torch.matmul(xn, w["right_gate.weight"].t()))
    )
    # contract over k for every channel: (B, H, N, K) @ (B, H, K, N) -> (B, H, N, N)
    t = torch.matmul(a.permute(0, 3, 1, 2), b.permute(0, 3, 2, 1)).permute(0, 2, 3, 1)
    t = F.layer_norm(t, (h,), w["to_out_norm.weight"], w["to_out_norm.bias"])
    t = t * torch.sigmoid(torch.matmul(xn, w["out_gate.weight"].t()))
    return torch.matmul(t, w["to_out.weight"].t())
