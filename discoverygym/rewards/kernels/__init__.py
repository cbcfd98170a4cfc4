"""Verifier and harness for GPU-kernel problems (GPU MODE TriMul and MLA-Decode).

Modules (each one job; only :mod:`.specs` and :mod:`.static_checks` are importable without torch):

* :mod:`.specs`         case lists (correctness and timed), CPU-scale cases, published records.
* :mod:`.static_checks` AST checks against known reward hacks, run in the parent before any process.
* :mod:`.trimul`        TriMul seeded input generator and PyTorch reference (torch).
* :mod:`.mla`           MLA-Decode seeded input generator and PyTorch reference (torch).
* :mod:`.tolerance`     elementwise tolerance check with NaN/inf positions (torch).
* :mod:`.timing`        CUDA-event timing harness with the GPU MODE stopping rule (torch).
* :mod:`.runner`        per-candidate processes: the candidate's process (runs and times the
                        kernel, writes its outputs as raw bytes), the verifier process (never
                        imports the candidate; references and tolerance verdict), and the
                        parent-side launcher :func:`.runner.run_stage`.

The environments using these are in :mod:`discoverygym.envs.kernels`.
"""
