"""``ScRNADenoising-v0``: denoise single-cell RNA-seq counts, judged by the OpenProblems v1 protocol.

The candidate program defines ``denoise(X_train, **kwargs)`` returning a matrix of the same shape.
It runs in the sandbox (400 s, 3 GB by default) and sees only the train molecules; the parent
process keeps the held-out molecules, recomputes the metrics with
:mod:`discoverygym.rewards.denoising` and applies TTT-Discover's gate. Nothing the program prints
or returns apart from the matrix is used.

Example:
    >>> import gymnasium as gym, discoverygym
    >>> env = gym.make("ScRNADenoising-v0", dataset="pbmc68k-reduced")   # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)          # scores MAGIC (reversed normalisation)  # doctest: +SKIP
    >>> info["metrics"]["poisson_norm"] >= 0.97                                        # doctest: +SKIP
    True
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from discoverygym.envs.program import ProgramTask
from discoverygym.errors import BackendUnavailable, InvalidSolution
from discoverygym.rewards import denoising as verifier
from discoverygym.rewards.common import Score
from discoverygym.types import State

__all__ = ["DenoisingTask", "SplitData", "load_split", "make_denoising"]

#: TTT-Discover's published mean normalised scores (OpenProblems v1 data; MAGIC -> TTT-Discover).
_RECORDS = {
    "pbmc": (0.71, "TTT-Discover, mean normalised score on OpenProblems pbmc (MAGIC 0.64)"),
    "tabula-lung": (0.73, "TTT-Discover, mean normalised score on OpenProblems Tabula Muris lung (MAGIC 0.64)"),
}
#: genes drawn in the rgb_array picture and cells per gene kept for it.
_RENDER_GENES, _RENDER_CELLS = 3, 120


@dataclass(frozen=True)
class SplitData:
    """The judged data of one task configuration (kept in the parent process only).

    Attributes:
        train: float64 ``(cells, genes)`` train counts (sent to the program).
        test: float64 ``(cells, genes)`` held-out counts (never sent).
        baselines: raw metrics of no/perfect denoising on this split.
        gene_names: names of the columns.
    """

    train: np.ndarray
    test: np.ndarray
    baselines: verifier.Baselines
    gene_names: tuple[str, ...]


@lru_cache(maxsize=4)
def load_split(dataset: str = "celltypist-pbmc", seed: int = 0, train_frac: float = 0.9,
               n_cells: int | None = None, n_genes: int | None = None, cache_dir: str | None = None,
               celltypist_wheel: str | None = None) -> SplitData:
    """Load a dataset, optionally subset it, split its molecules and compute the baselines (cached).

    Args:
        dataset: a name of :data:`discoverygym.envs.denoising.data.DATASETS`.
        seed: RandomState seed of the split (0 as OpenProblems v1; TTT-Discover used 42).
        train_frac: molecule probability of going to train.
        n_cells: keep the first ``n_cells`` cells (tests; ``None`` = all).
        n_genes: then keep the ``n_genes`` genes with most counts (tests; ``None`` = all).
        cache_dir, celltypist_wheel: see :func:`~discoverygym.envs.denoising.data.load_counts`.

    Raises:
        FileNotFoundError: the dataset is not available offline (message says what to do).
    """
    from discoverygym.envs.denoising.data import load_counts
    from discoverygym.envs.denoising.split import mcv_split

    adata = load_counts(dataset, cache_dir=cache_dir, celltypist_wheel=celltypist_wheel)
    counts, names = adata.X, np.asarray(adata.var_names)
    if n_cells is not None:
        counts = counts[:n_cells]
    if n_genes is not None:
        top = np.sort(np.argsort(-np.asarray(counts.sum(axis=0)).ravel(), kind="stable")[:n_genes])
        counts, names = counts[:, top], names[top]
    split = mcv_split(counts, train_frac=train_frac, seed=seed)
    base = verifier.baselines(split.train, split.test)
    return SplitData(split.train, split.test, base, tuple(str(n) for n in names[split.genes]))


class DenoisingTask(ProgramTask):
    """Single-cell RNA-seq denoising (OpenProblems v1 protocol, TTT-Discover's gate and reward).

    Score: normalised MSE clipped to [0, 1] (TTT-Discover's reward) of a candidate whose normalised
    Poisson is >= 0.97; ``metrics["mean_score"]`` is OpenProblems' ranking score (mean of the
    normalised MSE and Poisson), the quantity of the published records. Failure reward -1.0 (a
    valid score can be 0).

    Args: see :func:`make_denoising`.
    """

    name = "scrna_denoising"
    title = "Single-cell RNA-seq denoising (OpenProblems v1)"
    quantity = "normalised MSE (0 = no denoising, 1 = held-out counts), Poisson-gated"
    direction = "max"
    language = "python"
    example = "denoise_diffusion.py"
    entry = "denoise"
    failure_reward = -1.0
    description = (
        "Single-cell RNA sequencing counts molecules (UMIs) of each gene in each cell; the counts are "
        "sparse and noisy. The molecules were split at random: 90% form X_train, which your program "
        "gets, and 10% are held out. Return a denoised matrix of X_train (cells x genes, non-negative, "
        "on the scale of counts) that predicts the held-out molecules. It is judged as in OpenProblems "
        "v1: MSE between log1p(counts per 10,000) of the held-out counts and of your output, and a "
        "Poisson loss of the held-out counts against your output rescaled to their total. Both are "
        "normalised so that 0 = returning X_train unchanged and 1 = returning the held-out counts. "
        "Your normalised Poisson must be at least 0.97, or the candidate fails; the score is the "
        "normalised MSE."
    )

    def __init__(self, dataset: str = "celltypist-pbmc", seed: int = 0, timeout_s: float = 400.0,
                 memory_mb: int = 3072, cpus: int = 1, n_cells: int | None = None,
                 n_genes: int | None = None, cache_dir: str | os.PathLike | None = None,
                 celltypist_wheel: str | os.PathLike | None = None, use_bwrap: bool | None = None,
                 train_frac: float = 0.9, allow_unconfined: bool = False) -> None:
        from discoverygym.envs.denoising.data import DATASETS
        from discoverygym.sandbox.python import SandboxLimits

        if dataset not in DATASETS:
            raise ValueError(f"unknown denoising dataset {dataset!r}; known: {', '.join(DATASETS)}")
        for label, value in (("n_cells", n_cells), ("n_genes", n_genes)):
            if value is not None and (not isinstance(value, int) or value < 2):
                raise ValueError(f"{label} must be an int >= 2 or None, got {value!r}")
        if not isinstance(allow_unconfined, bool):
            raise TypeError(f"allow_unconfined must be a bool, got {allow_unconfined!r}")
        SandboxLimits(timeout_s=timeout_s, memory_mb=memory_mb, cpus=cpus)  # validates early
        self.allow_unconfined = allow_unconfined
        self.dataset, self.seed, self.train_frac = dataset, int(seed), float(train_frac)
        self.timeout_s, self.memory_mb, self.cpus, self.use_bwrap = float(timeout_s), memory_mb, cpus, use_bwrap
        self._split_args = (dataset, int(seed), float(train_frac), n_cells, n_genes,
                            None if cache_dir is None else str(cache_dir),
                            None if celltypist_wheel is None else str(celltypist_wheel))
        self._baseline_rows: list[tuple[str, str]] | None = None

    # ------------------------------------------------------------------ problem text
    @property
    def contract(self) -> str:  # type: ignore[override]
        """What the program must define, what it may import and the limits it runs under."""
        return (
            "Define `denoise(X_train, seed=0, budget_s=None)` (any subset of the keyword arguments; "
            "`**kwargs` receives both). X_train is a float64 numpy array (cells x genes) of whole-number "
            "counts; return an array of the same shape, finite and >= 0. `seed` seeds your randomness; "
            f"`budget_s` is the wall-clock time you may use (80% of the {self.timeout_s:g} s limit). "
            "Available libraries: numpy, scipy, scikit-learn (sklearn); for nearest neighbours use "
            "scipy.spatial.cKDTree (sklearn's neighbour search inspects thread pools through "
            "/proc/self/maps, which the sandbox refuses), and libraries loaded through ctypes (numba, "
            "hence scanpy) cannot be imported. The program runs in a "
            f"sandbox without network, with {self.memory_mb} MB of address space and {self.cpus} CPU(s); "
            "the held-out counts are not reachable, and only the returned matrix is used."
        )

    @property
    def sota(self) -> dict:
        """Published records are mean normalised scores (``metrics['mean_score']``), not this score."""
        record = _RECORDS.get(self.dataset)
        out = {"value": float("nan"), "source": f"none for the normalised MSE on {self.dataset}"}
        if record is not None:
            out.update(mean_score_record=record[0], mean_score_source=record[1])
        return out

    def initial_program(self) -> str:
        """MAGIC with reversed normalisation (OpenProblems v1), the TTT-Discover starting point."""
        from discoverygym.envs.denoising.baselines import program_source

        return program_source("magic-reversed")

    # ------------------------------------------------------------------ judging
    def data(self) -> SplitData:
        """The split of this configuration (loaded on first use, then cached in this process)."""
        return load_split(*self._split_args)

    def hidden_paths(self) -> list[str]:
        """Files a candidate must not read: they hold the full counts, so ``full - X_train`` is the test split.

        They are passed to the sandbox as ``hidden_paths``: under bubblewrap (with ``minimal_fs``:
        only the interpreter and its libraries are shown, so no other copy of a data set, cache or
        checkout is readable) they are replaced by empty files for every library; without it only Python-level opens are refused, under any name
        (real paths, ``/proc/*/root`` routes refused), but a C library such as HDF5 could still read
        them, so scoring without bubblewrap needs ``allow_unconfined=True``.
        """
        from discoverygym.envs.denoising.data import source_paths

        return source_paths(self.dataset, self._split_args[5], self._split_args[6])

    def limits(self, shape: tuple[int, int]) -> Any:
        """:class:`SandboxLimits` of one run: the task's time/memory/CPUs, results sized for ``shape``."""
        from discoverygym.envs.denoising.transport import result_bytes
        from discoverygym.sandbox.python import SandboxLimits

        return SandboxLimits(timeout_s=self.timeout_s, memory_mb=self.memory_mb, cpus=self.cpus,
                             result_bytes=result_bytes(shape), use_bwrap=self.use_bwrap,
                             hidden_paths=tuple(os.path.realpath(p) for p in self.hidden_paths()), minimal_fs=True)

    def check_confinement(self) -> None:
        """Refuse to score where the held-out counts could be read: without bubblewrap, unless opted in.

        Without bubblewrap the raw data files are hidden from Python-level opens only (the audit
        hook); a C library (HDF5, a ctypes trick) could still read them and score near 1.

        Raises:
            BackendUnavailable: bubblewrap is disabled (``use_bwrap=False``) or not working here (or
                ``DISCOVERYGYM_SANDBOX_NO_BWRAP`` is set), and ``allow_unconfined`` is False.
        """
        from discoverygym.sandbox.python import NO_BWRAP_ENV, bwrap_available

        if self.allow_unconfined or (self.use_bwrap is not False and bwrap_available()):
            return
        why = "use_bwrap=False" if self.use_bwrap is False else f"bubblewrap (bwrap) is missing, not working or {NO_BWRAP_ENV} is set"
        raise BackendUnavailable(
            f"ScRNADenoising-v0 scores programs only under bubblewrap ({why}): without it a program could "
            "read the held-out counts; install bubblewrap, or pass allow_unconfined=True to score anyway")

    def evaluate(self, source: str, *, seed: int) -> Score:
        """Run ``denoise`` on X_train in the sandbox and judge its output against the held-out counts.

        Args:
            source: program text defining ``denoise``.
            seed: passed to ``denoise`` as ``seed`` (the split itself uses the task's fixed seed).

        Raises:
            InvalidSolution: syntax error, crash, timeout, memory, wrong shape/dtype, non-finite or
                negative output, or the gate (see :func:`discoverygym.rewards.denoising.score_denoised`).
            BackendUnavailable: no bubblewrap and no ``allow_unconfined=True`` (see
                :meth:`check_confinement`); raised before the data are loaded or anything runs.
        """
        from discoverygym.envs.denoising.transport import ENTRY, WRAPPER, decode_matrix, encode_counts
        from discoverygym.sandbox.python import run_program

        self.check_confinement()
        data = self.data()
        shape = data.train.shape
        kwargs = {"X_csr": encode_counts(data.train), "seed": int(seed), "budget_s": 0.8 * self.timeout_s}
        result = run_program(source + "\n" + WRAPPER, ENTRY, kwargs, self.limits(shape))
        timing = {"sandbox_s": result.elapsed_s, "stdout": result.stdout[-2000:], "stderr": result.stderr[-2000:]}
        if not result.ok:
            raise InvalidSolution(f"denoise failed: {result.error}", metrics=timing)
        try:
            denoised = decode_matrix(result.value, shape)
            score = verifier.score_denoised(data.train, data.test, denoised, data.baselines)
        except InvalidSolution as exc:
            raise InvalidSolution(str(exc), metrics={**timing, **exc.metrics}) from None
        metrics = {**score.metrics, **timing, "dataset": self.dataset, "cells": shape[0], "genes": shape[1],
                   "render": self._render_points(data, denoised)}
        return Score(score.value, metrics)

    # ------------------------------------------------------------------ reporting
    def baseline_table(self) -> list[dict]:
        """Metrics of the three baselines on this split, run in-process (trusted code), cached.

        Returns:
            One dict per baseline: ``name``, ``mse``, ``poisson``, ``mse_norm``, ``poisson_norm``,
            ``mean_score``, ``gate`` ("pass"/"fail"), ``wall_s``.
        """
        import time

        from discoverygym.envs.denoising.baselines import BASELINES

        data, rows = self.data(), []
        for name, fn in BASELINES.items():
            start = time.perf_counter()
            out = fn(data.train, seed=0)
            wall = time.perf_counter() - start
            m = verifier.mse(data.test, out)
            p = verifier.poisson(data.train, data.test, out)
            mn, pn = data.baselines.normalise(m, p)
            rows.append({"name": name, "mse": m, "poisson": p, "mse_norm": mn, "poisson_norm": pn,
                         "mean_score": (mn + pn) / 2, "gate": "pass" if pn >= verifier.POISSON_GATE else "fail",
                         "wall_s": wall})
        return rows

    def report(self, state: State) -> list[tuple[str, str]]:
        """CLI rows: raw and normalised MSE/Poisson, gate verdict, then the baselines side by side."""
        md = state.metadata
        where = f"{self.dataset} ({md.get('cells', '?')} cells x {md.get('genes', '?')} genes, split seed {self.seed})"
        rows: list[tuple[str, str]] = [("dataset", where)]
        if "mse" in md:
            rows += [("MSE (raw / normalised)", f"{md['mse']:.6g} / {md.get('mse_norm', float('nan')):.4f}"),
                     ("Poisson (raw / normalised)",
                      f"{md['poisson']:.6g} / {md.get('poisson_norm', float('nan')):.4f}"),
                     ("mean normalised score", f"{md.get('mean_score', float('nan')):.4f}"),
                     ("gate (normalised Poisson >= 0.97)", str(md.get("gate", "fail")))]
        if self._baseline_rows is None:
            self._baseline_rows = [
                (f"baseline {r['name']}", (f"MSE {r['mse_norm']:.4f}  Poisson {r['poisson_norm']:.4f}  "
                                           f"mean {r['mean_score']:.4f}  gate {r['gate']}  {r['wall_s']:.1f} s"))
                for r in self.baseline_table()]
        return rows + self._baseline_rows

    @staticmethod
    def _render_points(data: SplitData, denoised: np.ndarray) -> dict:
        """log-normalised denoised values of the most-expressed held-out genes, for the picture."""
        totals = data.test.sum(axis=0)
        genes = np.argsort(-totals, kind="stable")[:_RENDER_GENES]
        cells = np.linspace(0, data.test.shape[0] - 1, min(_RENDER_CELLS, data.test.shape[0])).astype(int)
        ld = verifier.log_normalize(denoised[cells])
        # only the candidate's own values: held-out values are looked up at render time, so they
        # never enter ``info``, saved runs or prompts
        return {"genes": [data.gene_names[g] for g in genes], "gene_index": genes.tolist(),
                "cells": cells.tolist(), "denoised": [np.round(ld[:, g], 4).tolist() for g in genes]}

    def render(self, state: State, size: int) -> np.ndarray:
        """Scatter panels (one per gene): held-out vs denoised log-normalised expression per cell."""
        from discoverygym.envs.denoising.render import scatter_panels

        points = state.metadata.get("render") if state.valid else None
        if not points:
            return scatter_panels({}, size)
        data = self.data()
        test = verifier.log_normalize(data.test[np.asarray(points["cells"], dtype=int)])
        full = {**points, "test": [np.round(test[:, g], 4).tolist() for g in points["gene_index"]]}
        return scatter_panels(full, size)


def make_denoising(dataset: str = "celltypist-pbmc", seed: int = 0, *, device: str | None = None,
                   **options: Any) -> DenoisingTask:
    """Factory of ``ScRNADenoising-v0`` (cheap: data are loaded on the first evaluation).

    Args:
        dataset: ``celltypist-pbmc`` (default), ``pbmc68k-reduced``, ``pbmc``, ``pancreas``, ``tabula-lung``.
        seed: split seed (OpenProblems v1: 0).
        device: accepted for the CLI's ``--device``; only ``None``/``"cpu"`` (the task is CPU-only).
        **options: ``timeout_s`` (400), ``memory_mb`` (3072), ``cpus`` (1), ``n_cells``, ``n_genes``
            (subset for quick tests), ``cache_dir``, ``celltypist_wheel``, ``use_bwrap``, ``train_frac``,
            ``allow_unconfined`` (False: refuse to score without bubblewrap, see
            :meth:`DenoisingTask.check_confinement`).

    Raises:
        ValueError: unknown dataset, a device other than cpu, bad limits.
        TypeError: an unknown option.
    """
    if device not in (None, "cpu"):
        raise ValueError(f"ScRNADenoising-v0 runs on the CPU; got device={device!r}")
    return DenoisingTask(dataset=dataset, seed=seed, **options)
