"""Per-candidate kernel stages, split by trust boundary: launcher, candidate process, verifier process.

Modules: :mod:`.launcher` (the parent side: work directories, :func:`.launcher.run_stage` starting
both processes and merging their records), :mod:`.candidate` (the process that imports and times
the candidate), :mod:`.verifier` (the process that never imports it and judges its outputs),
:mod:`.common` (what the three share: the checked calls of a stage, the problems' generators).

**Where the verdict is computed.** Correctness is *never* judged inside the process that runs the
candidate: a program can patch anything in its own interpreter (``torch.Tensor.__le__``, the
tolerance function, the harness's own comparison), so a verdict computed there proves nothing.
Each stage therefore runs two processes side by side:

* the **candidate process** (``python -m discoverygym.sandbox.kernels.candidate WORKDIR``) draws the
  seeded inputs, imports the candidate, calls ``custom_kernel`` and writes each output tensor's raw
  bytes plus a small JSON description (shape, dtype, device, whether it is a plain tensor) into
  ``WORKDIR/out/``; then it waits until the verifier has consumed them (one case at a time, so the
  disk holds one case's outputs and the verifier is idle while the candidate is being timed);
* the **verifier process** (``python -m discoverygym.sandbox.kernels.verifier FD``), started by
  the parent before the candidate process and never importing the candidate, receives the job from
  the parent on stdin (not from the candidate's directory), waits for each output, then draws the
  same inputs, computes the reference, reads the bytes back and applies
  :func:`discoverygym.rewards.kernels.tolerance.compare` (elementwise tolerance, NaN/inf positions). It first makes itself
  non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``: processes of the same user cannot open its
  ``/proc/<pid>/fd/*`` or ``mem``) and sends its verdict as exactly one line, carrying a random
  nonce the parent gave it on stdin, through a pipe whose write end only it inherited
  (``pass_fds``); a channel holding anything else (two messages, stray bytes, a wrong nonce) counts
  as no verdict. When it rejects an output it tells the candidate process to stop (``out/stop``).

The parent requires one valid verdict covering every checked call; the candidate process's
``result.json`` is untrusted: it only contributes validated timings and messages, and its
``harness_error`` / ``backend_unavailable`` flags become an ordinary failure of the candidate
("the candidate's process reported an internal error"). Only the verifier can report a harness
error or a missing backend.

**The candidate process's audit hook** (``sys.addaudithook``, installed after torch and the
harness are imported and before the candidate is): it refuses opening other processes' ``/proc``
entries, writing or changing files outside the workdir's ``out``, ``tmp``, ``triton_cache``,
``.triton`` and ``.cache`` directories (so ``result.json``, which the harness opened before the
hook, ``job.json`` and ``candidate.py`` cannot be rewritten), links, sockets, and ctypes / process
creation / signals unless called from Triton's or Inductor's own code (their compilers). Its main
function catches ``BaseException`` (``SystemExit`` from the candidate is a failure record).

A wrong output can thus only pass if the *bytes* the candidate writes are the right answer. The
post-timing re-check on fresh inputs (drawn with a new seed, so a kernel that caches outputs
across calls fails) goes through the verifier the same way.

**Isolation.** Each process runs in a new session with a wall-clock limit after which its whole
process group is killed; GPU memory is released when it exits. The candidate's working directory,
``HOME``, ``TMPDIR`` and ``TRITON_CACHE_DIR`` point into a private temporary directory shared by
the two stages of one candidate (kernels compiled in the correctness stage are cached for the
timing stage) and removed afterwards. This is *not* the project sandbox
(:func:`discoverygym.sandbox.python.run_program`): CUDA needs a huge virtual address space
(``RLIMIT_AS`` makes ``cuInit`` fail), Triton and ``torch.utils.cpp_extension`` execute compilers
(``ptxas``, ``nvcc``, ``hipcc``) which the sandbox's seccomp filter and audit hook refuse, and the
GPU device nodes must stay reachable.

**Timing** has to happen in the candidate's process (CUDA events around the call). There the
runner compares key torch and timer functions by identity before and after the candidate runs,
requires the default stream to be current, and :mod:`discoverygym.rewards.kernels.timing` calls the CUDA event methods
through references taken when it was imported, before the candidate existed.

**Residual risks** (documented, not closed): the candidate process runs with the evaluator's user
id and no kernel sandbox. An audit hook is not a security boundary: a program that gets past
:mod:`discoverygym.rewards.kernels.static_checks` *and* reaches native code (a C compiler through Triton's build helpers, a
Triton/CUDA kernel writing host memory, ctypes reached from a trusted library frame) can do
anything that user can: rewrite the package files the verifier imports later, signal or (as root,
which ``PR_SET_DUMPABLE`` does not stop) ptrace the verifier, leave a daemon behind outside its
process group. Correctness forgeries through the verdict pipe are detected (one message, nonce)
unless the program also reads the verifier's memory. **Timing numbers necessarily come from the
candidate's process** (the kernel is timed there), exactly as in the GPU MODE harness: a program
that gets past the static checks and the audit hook and patches the timing code or the record the
harness writes (or the CUDA driver) can report any runtime. Outputs of the timed
calls themselves are not checked, only the calls before and after timing; a kernel that recognises
the very same input object and returns a stored result during timing is not caught. Do not run
hostile programs on a machine holding secrets.

**Stages.** ``check``: every correctness case once (this is where Triton compiles), then one case
again on fresh inputs. ``time``: every timed case is checked once, timed with
:func:`discoverygym.rewards.kernels.timing.time_kernel`, then re-checked on fresh inputs. Keeping the stages in separate
processes follows SimpleTES (first-call compilation never lands in a timing process).

:func:`.launcher.run_stage` returns ``{"ok": bool, "error": str | None, "cases": [...], "gpu_name",
"platform", "torch", "device"}`` (plus ``harness_error`` / ``backend_unavailable`` /
``timed_out`` when relevant).
"""
