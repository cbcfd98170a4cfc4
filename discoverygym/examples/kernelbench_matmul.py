"""KernelBench level 1 #9 baseline in plain PyTorch (the initial program of KernelBench-L1-Matmul-*-v0).

``custom_kernel(data)`` with ``data = (A, B)``, A (m, k) and B (k, n) float32 (k much smaller than
m and n); returns A @ B, (m, n) float32. This is the reference operation itself: the point to
start from (its score is the baseline every faster kernel is compared with).
"""

import torch


def custom_kernel(data):
    a, b = data
    return torch.matmul(a, b)
