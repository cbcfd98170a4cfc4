"""Per-candidate kernel stages, split by trust boundary: launcher, sandboxed candidate, judge.

Modules: :mod:`.launcher` (the parent side: work directories, :func:`.launcher.run_stage` starting
both processes and merging their records), :mod:`.box` (the candidate's bubblewrap sandbox),
:mod:`.candidate` (the process that runs and times the candidate), :mod:`.verifier` (the judge:
never imports the candidate, judges its outputs and its timings), :mod:`.common` (what they share:
the checked calls of a stage, the problems' generators, the channel, the sketches).

**Threat model.** A kernel program is arbitrary code: past the static checks
(:mod:`discoverygym.rewards.kernels.static_checks`, a cheap first filter) it can reach native code
(Triton, inline CUDA, ctypes through a library) and then do anything its process can. So nothing
the candidate's process computes is trusted, and that process is confined by the operating system,
not by a filter:

* **the candidate** runs in bubblewrap (:mod:`.box`): its own user, pid, ipc, uts and network
  namespaces, no capabilities, a separate uid (``nobody``) when the evaluator is root and the
  interpreter is readable by it, a read-only view of ``/usr``, ``/etc``, ``/sys``, the interpreter,
  its packages and ``sys.path`` (so it cannot plant a ``.pth`` or patch the verifier for later
  processes), private ``/tmp`` and ``/proc``, the GPU device nodes bound in, and writable only its
  output, temporary, cache and record directories. Inside, an audit hook (installed before the
  candidate is compiled) refuses the obvious escapes early with a clear message; it trusts Triton's
  and Inductor's installed code to start compilers only when no code from the work directory or a
  string sits between them and the event;
* **the judge** (:mod:`.verifier`) is a separate process outside the sandbox, started first,
  non-dumpable (``PR_SET_DUMPABLE`` 0), in another pid namespace than the candidate, so the
  candidate can neither see, signal, ptrace nor write it; it receives the job from the parent on
  stdin and sends its one verdict line, with the parent's nonce, through a pipe only it holds;
* **source integrity**: the parent writes the checked text as UTF-8, the candidate process
  compiles exactly those bytes as UTF-8 (a coding cookie naming another encoding is refused by the
  static checks and again by the runner), so code hidden by a PEP 263 cookie never runs;
* **lifetimes**: every stage process dies with its parent (``PR_SET_PDEATHSIG`` and bubblewrap's
  ``--die-with-parent``) and carries its own hard ``RLIMIT_CPU``; the parent kills both process
  groups at the stage's wall-clock limit; work directories record their owner and are swept by the
  next evaluator when that process died (:func:`.launcher.sweep_stale_workdirs`).

**Correctness.** The candidate process draws the seeded inputs, calls ``custom_kernel`` and writes
each output tensor's raw bytes plus a small JSON description into ``WORKDIR/out/``, then announces
it on the channel; the judge draws the same inputs, computes the reference, reads the bytes back,
applies :func:`discoverygym.rewards.kernels.tolerance.compare` and answers ``next`` or ``stop``.

**Timing** has to call the kernel in the candidate's process (CUDA events around the call), but the
judge drives it and keeps its own clock (:func:`.verifier._time_case`): every timed call runs on
fresh inputs from a seed the judge draws at that moment; the candidate reports its per-call time
and random projections of the output; the judge recomputes the projections of random calls on the
reference and rejects the run when its clock shows time the report does not explain. So a forged
timing, or a kernel that caches, precomputes or defers outputs, fails; a kernel that is really fast
passes. Each timed case is also checked in full before and after timing (fresh inputs).

**Without bubblewrap** (not installed, no user namespaces, ``DISCOVERYGYM_SANDBOX_NO_BWRAP=1``)
:func:`.launcher.run_stage` raises :class:`~discoverygym.errors.BackendUnavailable` unless the caller
passes ``allow_unconfined=True`` (env option of the kernel tasks): then the candidate is a plain
process of the evaluating user behind the static checks and the audit hook, which are not a
security boundary.

**Residual risks** (documented, not closed): the candidate shares the GPU with the judge (a kernel
can read or write device memory of other contexts only through driver bugs); the timing rule
tolerates an under-report of about ρ·t + δ per call (defaults 10 % and 300 μs, see
:mod:`.verifier`), which must be calibrated on each GPU (``benchmarks/gpu_kernels_check.sh``);
the candidate can read what the read-only view shows (system files, the interpreter and packages).

:func:`.launcher.run_stage` returns ``{"ok": bool, "error": str | None, "cases": [...], "gpu_name",
"platform", "torch", "device", "sandbox"}`` (plus ``harness_error`` / ``backend_unavailable`` /
``timed_out`` when relevant).
"""
