"""Everything that runs untrusted code: programs, executables and GPU kernels under limits.

This layer sits above :mod:`discoverygym.rewards` (it may call verifiers and scorers; rewards never
imports it) and below :mod:`discoverygym.envs`.

* :mod:`.python`: :func:`~.python.run_program` runs a Python program in a sandboxed child process
  (bubblewrap, a supervisor, seccomp, Landlock, an audit hook) and brings back the data it returns;
  :mod:`._runner` is that child process (started as a script, standard library only).
* :mod:`.native`: compile and run C++ programs through a small C launcher (``launcher.c``,
  package data) under rlimits, Landlock, seccomp and bubblewrap.
* :mod:`.ahc_judge`: compile a contest program once, run its cases in parallel in the native
  sandbox, score each with :mod:`discoverygym.rewards.ahc`.
* :mod:`.kernels`: the per-candidate GPU-kernel stages, split by trust boundary (launcher,
  candidate process, verifier process).
* Shared helpers: :mod:`.probes` (switches, bubblewrap and Landlock probes, ``prctl``),
  :mod:`.audit` (audit-hook building blocks), :mod:`._process` (process-group kill, tree removal,
  backend choice).

Submodules are imported on use (``from discoverygym.sandbox.python import run_program``), so
importing this package costs nothing.
"""
