"""GPU-kernel environments: TriMul (GPU MODE BioML), MLA-Decode (GPU MODE AMD) and two KernelBench
level 1 problems (cumsum, tall skinny matmul), program actions.

Env ids (registered in :mod:`discoverygym.envs.registry`, ``nondeterministic=True``):
``TriMul-{H100,A100,H200,B200,MI300X}-v0``, ``MLADecode-{H200,MI300X}-v0`` and
``KernelBench-L1-{Cumsum,Matmul}-{H100,H200}-v0``. The GPU in the id
is the *target*: the GPU whose published record is shown and compared against. Timing happens on
whatever GPU is present; when it differs from the target, ``metrics["target_mismatch"]`` holds a
warning (TTT-Discover trained on H100 timings and reported the other GPUs separately).

An action is Python source defining ``custom_kernel(data)`` (PyTorch, Triton). :meth:`KernelTask.evaluate`:

1. static checks against known reward hacks (:mod:`discoverygym.rewards.kernels.static_checks`);
2. correctness stage: the candidate runs in its own process inside a bubblewrap sandbox
   (:mod:`discoverygym.sandbox.kernels.box`: read-only files, no network, its own pid namespace,
   the GPU device nodes bound in), which only *produces* outputs (raw tensor bytes); a separate
   judge process that never imports the candidate draws the same inputs, computes the reference
   and judges every test case (elementwise tolerance with NaN/inf positions), then one case again
   on fresh inputs — so a program that patches torch or the harness, even with arbitrary native
   code, can at worst produce a wrong output;
3. timing stage in a second candidate process (GPU only): warm-up, then ≤ 100 rounds driven by
   the judge, each on fresh inputs from a seed the judge draws at that moment, CUDA events around
   the call, stop at stderr/mean < 0.1 % or the per-case budget, optional L2 flush; the judge
   checks random rounds' outputs (random projections against the reference) and its own clock,
   so forged timings and cached or deferred outputs fail (:mod:`discoverygym.sandbox.kernels`,
   :mod:`~discoverygym.rewards.kernels.timing`).

Without bubblewrap kernels are not judged (:class:`~discoverygym.errors.BackendUnavailable`)
unless ``allow_unconfined=True``.

``device="cuda"`` on a machine where torch sees no GPU raises
:class:`~discoverygym.errors.BackendUnavailable` (CLI exit 3) before any case runs.

Score = geometric mean over the timed cases of the mean runtime (μs, lower is better); reward =
3000 / score (TTT-Discover) for TriMul and MLA-Decode, 1000 / score = 1 / (geometric-mean ms) for
KernelBench; failure reward 0.

**CPU behaviour.** ``make``, ``reset`` (the initial program is not scored: ``evaluate_initial``
is False), prompts and rendering never need a GPU. Without a GPU the correctness stage runs the
CPU-scale cases (:mod:`discoverygym.rewards.kernels.specs`, hidden width 32, sequence lengths
16–40) with Triton's interpreter (``TRITON_INTERPRET=1``), so broken kernels fail with the usual
message (failure reward 0). What a correct one gets depends on ``device``:

* ``device=None`` (the default) on a machine where torch sees no GPU: the timing stage raises
  :class:`~discoverygym.errors.BackendUnavailable` naming what is missing (no reward is invented);
  the env (:class:`~discoverygym.envs.program.ProgramEnv`) makes that step *unscored*:
  ``truncated=True``, ``info["unscored"] = True``, ``info["unscored_reason"]``, the failure reward
  (``gym.make(..., raise_unavailable=True)`` raises instead).
* ``device="cpu"`` (chosen explicitly): a **CPU-timing proxy** score: the timing stage runs the
  CPU-scale timed cases with the judge-driven protocol and a wall clock (``perf_counter`` around
  each call instead of CUDA events, no L2 flush, a judge clock check tolerant of a loaded CPU:
  :data:`CPU_PROXY_TIMING`); ``metrics["proxy"] = "cpu"`` and the reports say
  "CPU proxy, not comparable with the GPU record". It exists so that a whole loop (env, search,
  training) can be developed on a laptop; its numbers are never compared with a GPU record.
:meth:`KernelTask.check` runs the correctness stage alone and returns its metrics;
:meth:`KernelTask.measure` runs the timing stage alone (repeated measurements of a known-good
program; each timed case is still checked before and after timing).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, ClassVar

from discoverygym.envs.candidate import problem_header
from discoverygym.envs.program import ProgramTask
from discoverygym.errors import BackendUnavailable, InvalidSolution
from discoverygym.rewards.common import Score
from discoverygym.rewards.kernels import specs
from discoverygym.rewards.kernels.platforms import PLATFORMS, platform_descriptor
from discoverygym.rewards.kernels.static_checks import check_program
from discoverygym.types import State

__all__ = [
    "CPU_PROXY_NOTE",
    "GPU_NAME_KEYS",
    "CumsumTask",
    "KernelBenchTask",
    "KernelTask",
    "MLADecodeTask",
    "MatmulTask",
    "TriMulTask",
    "make_kernelbench",
    "make_mla_decode",
    "make_trimul",
]

_EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: substring of ``torch.cuda.get_device_name()`` identifying each target GPU.
#: what every report of a CPU-proxy score says (``metrics["proxy_note"]``).
CPU_PROXY_NOTE = "CPU proxy, not comparable with the GPU record"
#: timing-stage settings of the CPU proxy: the wall clock, no L2 flush, and a judge clock check
#: tolerant of a loaded CPU (ρ = 1: the judge's own time of a call may exceed the reported one by
#: up to 100 % + δ; on two busy cores candidate and judge compete for the CPU).
CPU_PROXY_TIMING = {"clock": "wall", "flush_l2": False, "rho": 1.0}
GPU_NAME_KEYS = {"H100": "H100", "A100": "A100", "H200": "H200", "B200": "B200", "MI300X": "MI300"}


class KernelTask(ProgramTask):
    """Shared logic of the kernel tasks (see the module docstring for the protocol).

    Args:
        gpu: target GPU (a key of the problem's records), e.g. ``"H100"``.
        device: ``"cuda"``, ``"cuda:1"``, ``"cpu"`` or ``None`` (a GPU when torch sees one, else
            CPU correctness with an unscored timing; resolved at the first evaluation, so
            construction never imports torch). ``"cpu"``: a labelled CPU-timing proxy score
            (module docstring, "CPU behaviour").
        n_cases: use only the first ``n_cases`` correctness cases (quick checks; ``None``: all).
        check_timeout_s: wall-clock limit of the correctness stage (process start, imports,
            compilation and all cases).
        time_timeout_s: wall-clock limit of the timing stage.
        case_budget_s: timing budget per timed case (the stopping rule's wall clock).
        max_repeats: at most this many timed calls per case (GPU MODE: 100).
        rel_se: stop timing a case when stderr/mean falls below this (GPU MODE: 0.001).
        flush_l2: overwrite an L2-sized buffer before each timed call.
        allow_unconfined: judge kernels even where bubblewrap cannot run (the candidate then runs
            as a plain process of this user behind the static checks and an audit hook only; see
            :mod:`discoverygym.sandbox.kernels.box`). Without it, evaluating there raises
            :class:`~discoverygym.errors.BackendUnavailable`.
        cases_dir, dataset: accepted for the CLI's common options; must be ``None`` here.

    Raises:
        ValueError: unknown target GPU, bad device string, ``n_cases < 1``, non-positive limits,
            or a ``cases_dir``/``dataset`` (kernel cases are generated, not read).
    """

    language: ClassVar[str] = "python"
    entry: ClassVar[str] = "custom_kernel"
    direction: ClassVar[str] = "min"
    reward_scale: ClassVar[float] = 3000.0
    failure_reward: ClassVar[float] = 0.0
    evaluate_initial: ClassVar[bool] = False
    nondeterministic: ClassVar[bool] = True
    problem_key: ClassVar[str]
    records: ClassVar[dict[str, dict]]
    example: ClassVar[str]
    tolerance: ClassVar[tuple[float, float]]
    #: correctness and timed cases at full size (GPU) and at CPU scale (:mod:`~discoverygym.rewards.kernels.specs`).
    tests: ClassVar[tuple]
    benchmarks: ClassVar[tuple]
    cpu_tests: ClassVar[tuple]
    cpu_benchmarks: ClassVar[tuple]

    def __init__(
        self,
        gpu: str = "H100",
        device: str | None = None,
        n_cases: int | None = None,
        check_timeout_s: float = 600.0,
        time_timeout_s: float = 600.0,
        case_budget_s: float = 10.0,
        max_repeats: int = 100,
        rel_se: float = 1e-3,
        flush_l2: bool = True,
        allow_unconfined: bool = False,
        cases_dir: Any = None,
        dataset: Any = None,
    ) -> None:
        if gpu not in self.records:
            raise ValueError(f"{self.title}: unknown target GPU {gpu!r}; known: {', '.join(self.records)}")
        if gpu not in PLATFORMS:
            raise ValueError(f"{self.title}: no platform descriptor for {gpu!r} (discoverygym.rewards.kernels.platforms)")
        if device is not None and not (device == "cpu" or str(device).startswith("cuda")):
            raise ValueError(f"device must be 'cuda', 'cuda:N', 'cpu' or None, got {device!r}")
        if n_cases is not None and int(n_cases) < 1:
            raise ValueError(f"n_cases must be >= 1, got {n_cases}")
        for name, value in (("check_timeout_s", check_timeout_s), ("time_timeout_s", time_timeout_s),
                            ("case_budget_s", case_budget_s), ("rel_se", rel_se)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        if int(max_repeats) < 1:
            raise ValueError(f"max_repeats must be >= 1, got {max_repeats!r}")
        if not isinstance(allow_unconfined, bool):
            raise ValueError(f"allow_unconfined must be True or False, got {allow_unconfined!r}")  # noqa: TRY004
        self.allow_unconfined = allow_unconfined
        if cases_dir is not None or dataset is not None:
            raise ValueError(f"{self.title} generates its cases from seeds; cases_dir/dataset are not used")
        self.gpu = gpu
        self._device = device
        #: the CPU-timing proxy is given only when ``device="cpu"`` was chosen (not for ``None``
        #: resolved to the CPU on a machine without a GPU: that stays unscored).
        self.cpu_proxy = device == "cpu"
        if self.cpu_proxy:  # what a CPU proxy measures: its own CPU-scale cases, labelled (issue 50)
            self.quantity = (f"CPU-proxy geometric-mean runtime over {len(self.cpu_benchmarks)} CPU-scale timed "
                             f"case{'s' if len(self.cpu_benchmarks) != 1 else ''} (μs; {CPU_PROXY_NOTE})")
        self.n_cases = None if n_cases is None else int(n_cases)
        self.check_timeout_s, self.time_timeout_s = float(check_timeout_s), float(time_timeout_s)
        self.timing = {
            "budget_s": float(case_budget_s),
            "max_repeats": int(max_repeats),
            "rel_se": float(rel_se),
            "flush_l2": bool(flush_l2),
        }

    # ------------------------------------------------------------------ cases and device
    @property
    def device(self) -> str:
        """The device programs run on (resolves ``None`` on first use: imports torch)."""
        if self._device is None:
            import torch

            self._device = "cuda" if torch.cuda.is_available() else "cpu"
        return self._device

    def test_cases(self, device: str | None = None) -> tuple:
        """Correctness cases for ``device`` (full size on GPU, CPU scale on CPU), cut to ``n_cases``."""
        cases = self._cases(device or self.device, timed=False)
        return cases[: self.n_cases] if self.n_cases else cases

    def timed_cases(self, device: str | None = None) -> tuple:
        """Timed cases for ``device`` (the GPU MODE benchmark cases on GPU)."""
        return self._cases(device or self.device, timed=True)

    def _cases(self, device: str, timed: bool) -> tuple:
        if device == "cpu":
            return self.cpu_benchmarks if timed else self.cpu_tests
        return self.benchmarks if timed else self.tests

    # ------------------------------------------------------------------ records
    @property
    def sota(self) -> dict:
        """Best published geometric-mean runtime (μs) for the target GPU, with each source's figure."""
        rec = self.records[self.gpu]
        named = {
            "TTT-Discover": rec["ttt_us"],
            "best human (GPU MODE)": rec["best_human_us"],
            "SimpleTES": rec["tes_us"],
        }
        known = {k: v for k, v in named.items() if v is not None}
        out = {
            "gpu": self.gpu,
            "ttt_us": rec["ttt_us"],
            "best_human_us": rec["best_human_us"],
            "tes_us": rec["tes_us"],
        }
        if not known:
            return {"value": float("nan"), "source": f"none published for {self.gpu}", **out}
        source = min(known, key=known.get)
        return {"value": known[source], "source": f"{source}, {self.gpu}", **out}

    # ------------------------------------------------------------------ program API
    def initial_program(self) -> str:
        """The PyTorch baseline candidate (``discoverygym/examples/<example>``)."""
        return (_EXAMPLES / self.example).read_text()

    def _stage(self, source: str, stage: str, cases: tuple, seed: int, workdir: str,
               timing: dict | None = None) -> dict:
        from discoverygym.sandbox.kernels.launcher import run_stage

        job = {
            "stage": stage,
            "problem": self.problem_key,
            "cases": [c.to_dict() for c in cases],
            "device": self.device,
            "seed": int(seed),
            "timing": timing or self.timing,
            "tolerance": list(self.tolerance),  # (rtol, atol): the judge applies this one
        }
        timeout = self.check_timeout_s if stage == "check" else self.time_timeout_s
        result = run_stage(source, job, workdir, timeout, allow_unconfined=self.allow_unconfined)
        if result.get("backend_unavailable"):
            raise BackendUnavailable(result["error"].removeprefix("harness error: BackendUnavailable: "))
        if result.get("harness_error"):
            raise RuntimeError(
                f"{self.title} harness failed before the program ran: {result['error']}\n"
                f"{result.get('traceback', '')}"
            )
        return result

    def check(self, source: str, *, seed: int = 0, _workdir: str | None = None) -> dict:
        """Static checks and the correctness stage only (works on CPU).

        Returns:
            Metrics: ``device``, ``gpu_name``, ``platform``, ``correctness`` (per-case
            ``max_abs_err``), ``n_correctness_cases``.

        Raises:
            InvalidSolution: a static check or a correctness case failed (message names which).
            RuntimeError: the harness itself failed before the program ran.
        """
        from discoverygym.sandbox.kernels.launcher import new_workdir, remove_workdir

        check_program(source, self.entry)
        workdir = _workdir or new_workdir()
        try:
            result = self._stage(source, "check", self.test_cases(), seed, workdir)
        finally:
            if _workdir is None:
                remove_workdir(workdir)
        base = {
            "device": self.device,
            "gpu_name": result.get("gpu_name"),
            "platform": result.get("platform"),
            "target_gpu": self.gpu,
        }
        if not result["ok"]:
            raise InvalidSolution(f"correctness: {result['error']}", metrics={**base, "stage": "correctness"})
        return {
            **base,
            "n_correctness_cases": len(result["cases"]),
            "correctness": [{"case": c["case"], "max_abs_err": c["max_abs_err"]} for c in result["cases"]],
        }

    def evaluate(self, source: str, *, seed: int) -> Score:
        """Static checks, correctness stage, timing stage; score = geometric-mean μs.

        Raises:
            InvalidSolution: any check failed (static, correctness, crash, timeout, fresh re-check).
            BackendUnavailable: correctness passed but no GPU is available for timing.
            RuntimeError: the harness itself failed before the program ran.
        """
        from discoverygym.sandbox.kernels.launcher import new_workdir, remove_workdir

        workdir = new_workdir()
        try:
            metrics = self.check(source, seed=seed, _workdir=workdir)
            metrics = self._measure(source, seed, workdir, metrics)
        finally:
            remove_workdir(workdir)
        return Score(metrics["geomean_us"], metrics)

    def measure(self, source: str, *, seed: int = 0) -> dict:
        """Static checks and the timing stage only (each timed case is still checked before and after).

        For repeated measurements of a program already known to be correct (benchmarks).

        Returns:
            The metrics of :meth:`evaluate` without ``correctness``.

        Raises:
            InvalidSolution, BackendUnavailable, RuntimeError: as :meth:`evaluate`.
        """
        from discoverygym.sandbox.kernels.launcher import new_workdir, remove_workdir

        check_program(source, self.entry)
        workdir = new_workdir()
        try:
            return self._measure(source, seed, workdir, {"device": self.device, "target_gpu": self.gpu})
        finally:
            remove_workdir(workdir)

    def _measure(self, source: str, seed: int, workdir: str, metrics: dict) -> dict:
        timing = None
        if self.device == "cpu" and not self.cpu_proxy:
            done = (
                f"the program passed {metrics['n_correctness_cases']} CPU-scale correctness cases, but "
                if "n_correctness_cases" in metrics
                else ""
            )
            raise BackendUnavailable(
                f"{self.title}: {done}timing (the score) needs a CUDA or ROCm GPU and no GPU is visible to "
                "torch; device='cpu' gives a CPU-timing proxy score, task.check(source) correctness only"
            )
        if self.device == "cpu":  # the labelled CPU proxy: wall clock, no L2 flush, a noise-tolerant judge
            timing = {**self.timing, **CPU_PROXY_TIMING}
        result = self._stage(source, "time", self.timed_cases(), seed, workdir, timing=timing)
        gpu_name = result.get("gpu_name") or metrics.get("gpu_name")
        metrics = {
            **metrics,
            "gpu_name": gpu_name,
            "platform": result.get("platform"),
            "torch": result.get("torch"),
            "target_mismatch": self.mismatch_warning(gpu_name),
        }
        if not result["ok"]:
            raise InvalidSolution(f"timing: {result['error']}", metrics={**metrics, "stage": "timing"})
        cases = result["cases"]
        means = [c["mean_us"] for c in cases]
        if timing is not None:
            # CPU proxy: its judge tolerates ρ = 1 of unexplained time, so the candidate's own mean
            # could be forged down to half; score the judge's clock instead (issue 40):
            # judge_us = median reported + the time the judge saw beyond it in its best round.
            means = [max(m, float(c.get("judge_us") or m)) for m, c in zip(means, cases)]
        if not all(m > 0 and math.isfinite(m) for m in means):
            raise InvalidSolution(
                f"timing: non-positive or non-finite runtime measured: {means}", metrics=metrics
            )
        if metrics["target_mismatch"]:
            warnings.warn(metrics["target_mismatch"], stacklevel=3)
        metrics.update(
            geomean_us=math.exp(math.fsum(math.log(m) for m in means) / len(means)),
            case_names=[c["case"] for c in cases],
            case_means_us=means,
            case_stderr_us=[c["stderr_us"] for c in cases],
            case_std_us=[c["std_us"] for c in cases],
            case_repeats=[c["n"] for c in cases],
            case_judge_us=[c.get("judge_us") for c in cases],
            sandbox=result.get("sandbox"),
            case_scores=means,
            record=self.sota,
            timing=dict(timing or self.timing),
        )
        if timing is not None:  # no GPU record beside a CPU proxy score (issue 50): it is not comparable
            metrics.update(record=None, record_note=f"{self.gpu} record {self.sota['value']} μs: {CPU_PROXY_NOTE}")
            metrics.update(proxy="cpu", proxy_note=CPU_PROXY_NOTE, target_mismatch=None,
                           score_clock="judge (max of the reported mean and the judge's own time)")
        return metrics

    def platform(self) -> str:
        """The prompt's "Target platform" section: the target GPU's architecture facts.

        From :data:`~discoverygym.rewards.kernels.platforms.PLATFORMS` (warp/wavefront width,
        shared memory/LDS, L2, matrix-unit data types, memory bandwidth), so one prompt template
        serves NVIDIA and AMD targets.
        """
        return platform_descriptor(self.gpu)

    def prompt(self) -> str:
        """Statement and record, the target platform's descriptor, and the contract."""
        return f"{problem_header(self)}\n\n{self.platform()}\n\n{self.contract}\n"

    def mismatch_warning(self, gpu_name: str | None) -> str | None:
        """A warning when the measured GPU is not the target (None when it is, or when unknown)."""
        if not gpu_name:
            return None
        if GPU_NAME_KEYS[self.gpu].upper() in gpu_name.upper():
            return None
        return (
            f"timed on {gpu_name}, but this env targets {self.gpu}: runtimes are not comparable "
            f"with the {self.gpu} record ({self.sota['value']} μs)"
        )

    def report(self, state: State) -> list[tuple[str, str]]:
        """CLI rows: GPU, target and record, geometric mean, per-case mean ± stderr, warning."""
        md = state.metadata
        rows = [
            ("GPU", f"{md.get('gpu_name') or md.get('device', '?')} ({md.get('platform', '?')})"),
            ("target", f"{self.gpu}; record {self.sota['value']} μs ({self.sota['source']})"),
        ]
        if md.get("proxy"):
            rows.append(("proxy", f"{md['proxy'].upper()} timing of the CPU-scale cases: {CPU_PROXY_NOTE}"))
        if md.get("geomean_us") is not None:
            rows.append(
                (
                    "geometric mean",
                    f"{md['geomean_us']:.2f} μs (reward {self.reward_scale / md['geomean_us']:.4g})",
                )
            )
            for name, m, se, n in zip(
                md["case_names"], md["case_means_us"], md["case_stderr_us"], md["case_repeats"]
            ):
                rows.append((name, f"{m:.2f} ± {se:.2f} μs ({n} runs)"))
        if md.get("target_mismatch"):
            rows.append(("warning", md["target_mismatch"]))
        return rows


_COMMON_CONTRACT = """\
Write a Python module defining `custom_kernel(data)`. It may use torch, triton (and
triton.language), numpy, math and a few pure standard-library helpers (typing, functools,
itertools, dataclasses, collections, operator, enum, abc); no file I/O, no inline C++/CUDA
(torch.utils.cpp_extension), no subprocesses or network. It is run in its own process on the GPU
named above.

Correctness: every test case is compared elementwise with the reference,
|out - ref| <= {atol} + {rtol}*|ref|, with NaN/inf only where the reference has them; outputs must be
plain torch.Tensors of the reference's shape on the input's device.
Timing: after warm-up, up to 100 timed calls per case, each on fresh inputs drawn at that moment,
CUDA events around the call, the L2 cache flushed before it; stopping when the standard error is
below 0.1% of the mean. The judge checks the outputs of randomly chosen timed calls and keeps its
own clock, so results must never be cached or deferred across calls.
Score: geometric mean over the timed cases of the mean runtime in microseconds; reward = {scale:g} / score;
any failure gives reward 0.

Not allowed (checked before running): importing other modules (os, sys, time, subprocess, ...);
try/except; global/nonlocal state or memoising decorators; assigning to any attribute except
`self.<name>` inside a method (patching torch or timers, changing torch.backends flags); CUDA events
or streams; torch.Tensor subclasses or __torch_function__/__torch_dispatch__; eval/exec/open/
getattr/setattr, operator.attrgetter/methodcaller and dunder attributes (__class__, __dict__,
__globals__, ...); file I/O (numpy tofile/load/save..., torch.save/load), torch.library,
torch.ops, cpp_extension, Tensor.set_, 3-argument type(); anything named like the reference
(ref_kernel, generate_input). Writing outside the process's own output directories, other
processes' /proc entries, ctypes, subprocesses and sockets are refused at run time.
Your program runs in a sandbox (no network, read-only files outside its own directories); its
outputs are judged, and its timings checked, by a separate process that never runs your code.
"""


class TriMulTask(KernelTask):
    """TriMul (triangle multiplicative update, outgoing edges) on a target GPU.

    ``data = (x, mask, weights, config)``, output (B, N, N, C) float32; see
    :mod:`discoverygym.rewards.kernels.trimul`. 18 correctness and 7 timed cases (GPU MODE
    leaderboard 496); on CPU 5 + 2 smaller ones (the CPU proxy's quantity says 2).
    """

    name: ClassVar[str] = "trimul"
    title: ClassVar[str] = "TriMul GPU kernel (GPU MODE BioML)"
    quantity: ClassVar[str] = "geometric-mean runtime over 7 timed cases (μs)"
    problem_key: ClassVar[str] = "trimul"
    records: ClassVar[dict] = specs.TRIMUL_RECORDS
    example: ClassVar[str] = "trimul_pytorch.py"
    tolerance: ClassVar[tuple] = specs.TRIMUL_TOLERANCE
    description: ClassVar[str] = """\
Implement the outgoing triangle multiplicative update of AlphaFold-style pair models as fast as
possible on the target GPU. Inputs: x of shape (B, N, N, C) float32, a mask (B, N, N) with values
0/1, weights (float32) "norm.weight", "norm.bias" (C,); "left_proj.weight", "right_proj.weight",
"left_gate.weight", "right_gate.weight", "out_gate.weight" (H, C); "to_out_norm.weight",
"to_out_norm.bias" (H,); "to_out.weight" (C, H); config {"dim": C, "hidden_dim": H} (H = 128).
Compute: xn = LayerNorm over C of x (eps 1e-5, affine norm.*); left = (xn @ Wleftᵀ) * mask *
sigmoid(xn @ Wleft_gateᵀ); right likewise with the right weights; t[b,i,j,d] = sum over k of
left[b,i,k,d] * right[b,j,k,d]; t = LayerNorm over H of t (to_out_norm.*); t = t *
sigmoid(xn @ Wout_gateᵀ); return t @ to_outᵀ, shape (B, N, N, C) float32. No biases in the linear
maps. Sizes: N from 32 to 1024, B 1 or 2, C 128, 256, 384 or 768; x is normal or heavy-tailed
(Cauchy, scale 2); masks are all ones or random 0/1."""

    tests: ClassVar[tuple] = specs.TRIMUL_TESTS
    benchmarks: ClassVar[tuple] = specs.TRIMUL_BENCHMARKS
    cpu_tests: ClassVar[tuple] = specs.TRIMUL_CPU_TESTS
    cpu_benchmarks: ClassVar[tuple] = specs.TRIMUL_CPU_BENCHMARKS

    @property
    def contract(self) -> str:  # type: ignore[override]
        """What the program must define and the rules it runs under."""
        rtol, atol = self.tolerance
        return _COMMON_CONTRACT.format(rtol=rtol, atol=atol, scale=self.reward_scale) + (
            "\nTimed cases (N, B, C, mask): (256,2,128,none) (768,1,128,none,cauchy) (256,2,384,random) "
            "(512,1,128,none) (1024,1,128,none,cauchy) (768,1,384,random) (1024,1,384,none).\n"
        )

    def prompt(self) -> str:
        """Statement, target GPU and record, and contract."""
        return super().prompt().replace(f"# {self.title}", f"# {self.title}, target GPU {self.gpu}", 1)


class MLADecodeTask(KernelTask):
    """MLA decode (DeepSeek-V3 shapes, 128 heads, latent KV cache) on a target GPU.

    ``data = (config, x, kv_cache)``, output ``(out, kv_cache)``; see
    :mod:`discoverygym.rewards.kernels.mla`. 4 correctness cases (prefill 128–2048) and the timed
    prefill-6144 case; on CPU 3 + 1 small ones.
    """

    name: ClassVar[str] = "mla_decode"
    title: ClassVar[str] = "MLA decode GPU kernel (GPU MODE AMD)"
    quantity: ClassVar[str] = (
        "mean runtime of the timed prefill-6144 case (μs; geometric mean over timed cases)"
    )
    problem_key: ClassVar[str] = "mla"
    records: ClassVar[dict] = specs.MLA_RECORDS
    example: ClassVar[str] = "mla_pytorch.py"
    tolerance: ClassVar[tuple] = specs.MLA_TOLERANCE
    description: ClassVar[str] = """\
Implement one decoding step of multi-head latent attention (DeepSeek-V3 sizes, heads split to fit
one GPU) as fast as possible. data = (config, x, kv_cache): x (B, 1, dim) bf16; kv_cache
(B, max_seq_len, kv_lora_rank + qk_rope_head_dim) bf16 whose first L = config["seq_len"] rows are
filled; config also holds the sizes (batch_size 128, dim 7168, n_heads 128, q_lora_rank 1536,
kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, max_seq_len 8192) and
bf16 weights Q_proj_down_weight (q_lora, dim), Q_proj_up_weight (H*(nope+rope), q_lora),
KV_proj_down_weight (kv_lora+rope, dim), KV_proj_up_weight (H*(nope+v), kv_lora), wo_weight (dim, H*v).
Compute: write c_new = x @ KV_proj_downᵀ into cache row L; q = (x @ Q_proj_downᵀ) @ Q_proj_upᵀ split per
head into nope and rope parts; for cache rows 0..L the latent part c (kv_lora) gives per-head key
nope parts and values through KV_proj_up (first nope rows of each head's block: keys, next v rows:
values) and the last rope columns are a rope key shared by all heads. RoPE, rotate-half form,
θ_i = 10000^(-i/(rope/2)), float32 angles: the query at position L, keys at positions 0..L.
scores = (q_nope·k_nope + q_rope·k_rope) / sqrt(nope + rope), softmax over the L+1 keys, weighted
sum of values, concatenate heads, multiply by wo_weightᵀ. Return (out (B, 1, dim) bf16, kv_cache)."""

    tests: ClassVar[tuple] = specs.MLA_TESTS
    benchmarks: ClassVar[tuple] = specs.MLA_BENCHMARKS
    cpu_tests: ClassVar[tuple] = specs.MLA_CPU_TESTS
    cpu_benchmarks: ClassVar[tuple] = specs.MLA_CPU_BENCHMARKS

    @property
    def contract(self) -> str:  # type: ignore[override]
        """What the program must define and the rules it runs under."""
        rtol, atol = self.tolerance
        return _COMMON_CONTRACT.format(rtol=rtol, atol=atol, scale=self.reward_scale) + (
            "\nTest cases: prefill 128, 512, 1024, 2048 (batch 128); timed case: prefill 6144.\n"
        )


def make_trimul(gpu: str = "H100", **options: Any) -> TriMulTask:
    """Factory of ``TriMul-<GPU>-v0`` (cheap: no torch import, no compilation). See :class:`KernelTask`."""
    return TriMulTask(gpu=gpu, **options)


def make_mla_decode(gpu: str = "H200", **options: Any) -> MLADecodeTask:
    """Factory of ``MLADecode-<GPU>-v0`` (cheap: no torch import). See :class:`KernelTask`."""
    return MLADecodeTask(gpu=gpu, **options)


class KernelBenchTask(KernelTask):
    """A KernelBench level 1 problem (Ouyang et al., arXiv 2502.10517) on a target GPU.

    What differs from the GPU MODE tasks is data on the subclass (problem, cases, example, text):
    tolerance atol = rtol = 1e-2 (KernelBench v0/v0.1 float32, as TES runs it; ``tolerance=
    "kernelbench"``: 1e-4, KernelBench's current harness), reward = 1000 / geometric-mean μs
    = 1 / geometric-mean ms, and no published runtime record (KernelBench reports speed-ups over
    the PyTorch reference; the reference program is the initial program). Calling the PyTorch op
    itself (``torch.cumsum``, ``torch.matmul``, ``@``) is allowed, as in KernelBench and as for
    TriMul's matmuls: it is the baseline, so it earns the baseline's score; importing the
    harness's reference (``discoverygym``) is refused by the static checks.
    """

    reward_scale: ClassVar[float] = 1000.0
    quantity: ClassVar[str] = "geometric-mean runtime over 4 timed shapes (μs; reward = 1 / geometric-mean ms)"
    records: ClassVar[dict] = specs.KERNELBENCH_RECORDS
    tolerance: tuple = specs.KERNELBENCH_TOLERANCE

    def __init__(self, gpu: str = "H100", *, tolerance: str = "tes", **options: Any) -> None:
        """Args: ``tolerance``: ``"tes"`` (default: atol = rtol = 1e-2, KernelBench v0/v0.1 as
        TES runs it) or ``"kernelbench"`` (atol = rtol = 1e-4, KernelBench's current float32
        harness); other options: see :class:`KernelTask`.

        Raises:
            ValueError: unknown ``tolerance``, or an option :class:`KernelTask` refuses.
        """
        if tolerance not in specs.KERNELBENCH_TOLERANCES:
            raise ValueError(f"tolerance must be one of {', '.join(map(repr, specs.KERNELBENCH_TOLERANCES))}, "
                             f"got {tolerance!r}")
        super().__init__(gpu=gpu, **options)
        self.tolerance_rule = tolerance
        self.tolerance = specs.KERNELBENCH_TOLERANCES[tolerance]
    #: one line for the contract: what ``data`` is and what to return.
    signature: ClassVar[str]

    @property
    def contract(self) -> str:  # type: ignore[override]
        """What the program must define, the rules it runs under and the timed shapes."""
        rtol, atol = self.tolerance
        shapes = " ".join(f"({c.name.rsplit(' s', 1)[0]})" for c in self.benchmarks)
        return (
            _COMMON_CONTRACT.format(rtol=rtol, atol=atol, scale=self.reward_scale)
            + f"\n{self.signature}\nTimed shapes: {shapes}.\n"
        )


class CumsumTask(KernelBenchTask):
    """KernelBench level 1 problem 89: inclusive prefix sum along dim 1 (SimpleTES task 89).

    ``data = x`` (rows, length) float32, output the same shape; see
    :mod:`discoverygym.rewards.kernels.kernelbench`. 5 correctness and 4 timed shapes
    (:data:`~discoverygym.rewards.kernels.specs.CUMSUM_BENCHMARKS`); on CPU 5 + 2 small ones.
    """

    name: ClassVar[str] = "kernelbench_cumsum"
    title: ClassVar[str] = "KernelBench level 1 #89: cumsum GPU kernel"
    problem_key: ClassVar[str] = "cumsum"
    example: ClassVar[str] = "kernelbench_cumsum.py"
    tests: ClassVar[tuple] = specs.CUMSUM_TESTS
    benchmarks: ClassVar[tuple] = specs.CUMSUM_BENCHMARKS
    cpu_tests: ClassVar[tuple] = specs.CUMSUM_CPU_TESTS
    cpu_benchmarks: ClassVar[tuple] = specs.CUMSUM_CPU_BENCHMARKS
    signature: ClassVar[str] = (
        "data = x, a (rows, length) float32 tensor; return torch.cumsum(x, dim=1) (same shape, float32)."
    )
    description: ClassVar[str] = """Compute the inclusive prefix sum (scan) of every row of a float32 matrix as fast as possible on
the target GPU: out[i, j] = x[i, 0] + x[i, 1] + ... + x[i, j], i.e. torch.cumsum(x, dim=1).
KernelBench level 1 problem 89 uses x of shape (32768, 32768) with entries uniform in [0, 1) (its
first release: (128, 4000), normal entries); the other shapes have many short rows, odd lengths (1, 1023,
65537) and normal entries. The baseline is the PyTorch reference torch.cumsum."""


class MatmulTask(KernelBenchTask):
    """KernelBench level 1 problem 9: tall skinny matrix multiplication (SimpleTES task 9).

    ``data = (A, B)``, A (m, k), B (k, n) float32, output A @ B (m, n); see
    :mod:`discoverygym.rewards.kernels.kernelbench`. 5 correctness and 4 timed shapes
    (:data:`~discoverygym.rewards.kernels.specs.MATMUL_BENCHMARKS`); on CPU 5 + 2 small ones.
    """

    name: ClassVar[str] = "kernelbench_matmul"
    title: ClassVar[str] = "KernelBench level 1 #9: tall skinny matmul GPU kernel"
    problem_key: ClassVar[str] = "matmul"
    example: ClassVar[str] = "kernelbench_matmul.py"
    tests: ClassVar[tuple] = specs.MATMUL_TESTS
    benchmarks: ClassVar[tuple] = specs.MATMUL_BENCHMARKS
    cpu_tests: ClassVar[tuple] = specs.MATMUL_CPU_TESTS
    cpu_benchmarks: ClassVar[tuple] = specs.MATMUL_CPU_BENCHMARKS
    signature: ClassVar[str] = (
        "data = (A, B), A (m, k) and B (k, n) float32 tensors; return A @ B, (m, n) float32."
    )
    description: ClassVar[str] = """Multiply a tall skinny float32 matrix A (m, k) by a short wide one B (k, n), k much smaller than m
and n, as fast as possible on the target GPU: return A @ B of shape (m, n), float32. KernelBench
level 1 problem 9 uses m = n = 32768, k = 32 (its first release: 16384 and 16) with entries
uniform in [0, 1); the other shapes use k = 64 or 24, non-square outputs, odd sizes, normal
entries, and one case with small m, n and a long k = 4096. Lower-precision arithmetic (TF32, bf16)
is allowed only within the tolerance. The baseline is the PyTorch reference torch.matmul."""


_KERNELBENCH = {"cumsum": CumsumTask, "matmul": MatmulTask}


def make_kernelbench(problem: str = "cumsum", gpu: str = "H100", **options: Any) -> KernelBenchTask:
    """Factory of ``KernelBench-L1-{Cumsum,Matmul}-<GPU>-v0`` (cheap: no torch import).

    Args:
        problem: ``"cumsum"`` (level 1 #89) or ``"matmul"`` (level 1 #9).
        gpu: target GPU (``"H100"`` or ``"H200"``).
        options: see :class:`KernelTask`.

    Raises:
        ValueError: unknown problem, or an option :class:`KernelTask` refuses.
    """
    if problem not in _KERNELBENCH:
        raise ValueError(f"unknown KernelBench problem {problem!r}; known: {', '.join(_KERNELBENCH)}")
    return _KERNELBENCH[problem](gpu=gpu, **options)
