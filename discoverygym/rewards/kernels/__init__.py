"""Verifier and harness for GPU-kernel problems (GPU MODE TriMul and MLA-Decode).

Modules (each one job; only :mod:`.specs` and :mod:`.static_checks` are importable without torch):

* :mod:`.specs`         case lists (correctness and timed), CPU-scale cases, published records.
* :mod:`.static_checks` AST checks against known reward hacks, run in the parent before any process.
* :mod:`.trimul`        TriMul seeded input generator and PyTorch reference (torch).
* :mod:`.mla`           MLA-Decode seeded input generator and PyTorch reference (torch).
* :mod:`.tolerance`     elementwise tolerance check with NaN/inf positions (torch).
* :mod:`.timing`        CUDA-event timing harness with the GPU MODE stopping rule (torch).
The per-candidate processes that run these (the candidate's process, the verifier process and
the parent-side launcher) are in :mod:`discoverygym.sandbox.kernels`; the environments using them
in :mod:`discoverygym.envs.kernels`.
"""
