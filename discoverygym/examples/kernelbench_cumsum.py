"""KernelBench level 1 #89 baseline in plain PyTorch (the initial program of KernelBench-L1-Cumsum-*-v0).

``custom_kernel(data)`` with ``data = x``, a (rows, length) float32 tensor; returns the inclusive
prefix sum along dim 1, same shape and dtype. This is the reference operation itself: the point
to start from (its score is the baseline every faster kernel is compared with).
"""

import torch


def custom_kernel(data):
    return torch.cumsum(data, dim=1)
