"""``ScalingLaw-*-v0``: discover a scaling law that extrapolates (SLDBench tasks, as in TES).

The candidate program defines ``scaling_law(X, params)`` (the law) and ``fit(X, y) -> params``
(its fitting procedure, at most the task's cap of parameters per group). It is judged as SLDBench
(Lin et al. 2025, "Can Language Models Discover Scaling Laws?", repository linhaowei1/SLD) judges
it: fitted per group on the train split, scored by R² (1 − mean NMSE per output dimension) on the
held-out extrapolation split; see :mod:`discoverygym.rewards.scaling_laws`. The data are those of
SLD commit 61c9d59; the metric (NMSE against the variance of the held-out labels only) is
SLDBench's since commit 1154771. As in SLDBench only held-out predictions are scored: a law whose
predictions on the fit or train rows are NaN/inf still gets its validation and test R² (``r2_fit``
/ ``r2_train`` are then NaN, the reason in ``metrics["unscored_predictions"]``); validation and test
predictions must be finite.

**What the program sees** (:mod:`.transport`). Four sandboxed processes per evaluation, one after
the other in this order: ``fit`` on the ``fit`` split (train minus validation); ``scaling_law`` on
the unlabelled fit and validation points with those parameters; ``fit`` on the whole ``train``
split; ``scaling_law`` on the unlabelled train and test points with the train-split parameters.
No process ever receives the labels of a split it is scored on, or parameters fitted on them, and
**every validation prediction is final before any process is given the validation labels** (the
train-split fit starts after the fit/validation predictions came back). Sandboxes run one after
the other share what the machine shares (the page cache of the files both can read, the pid
counter, timing), so the order, not the isolation, is what keeps the validation labels out of the
validation predictions (issue 40: a page-cache channel from the train-split fit to an earlier
design's later validation predictions reached R² 0.999). Between *evaluations* the known
page-cache primitives are refused by the sandbox's seccomp filter (``posix_fadvise``, ``mincore``,
``cachestat``, ``RWF_NOWAIT`` reads, ``MADV_COLD``/``MADV_PAGEOUT``; :mod:`discoverygym.sandbox._runner`);
a timing-only channel (whether a page read is fast) remains possible in principle: it can only set
bits once per page and is noisy on a loaded machine (see docs/sandbox.md). Predictions come from
``scaling_law`` on points ``fit`` was not given, never from ``fit``. The sandbox shows the program
only the interpreter and its libraries (``SandboxLimits(minimal_fs=True)``: no checkout, ``.git``,
home or cache directory), and the installed package's data files are hidden (empty); without
bubblewrap scoring is refused unless ``allow_unconfined=True``, as a program could read the test
labels from disk. The data are public: a program that embeds the held-out labels in its own text
is not detected (a limit shared with SLDBench and TES).

**Reward split.** ``reward_split="validation"`` (default) rewards R² on a validation split carved
deterministically from train by the task's extrapolation rule applied once more (e.g. the largest
remaining vocabulary size; :mod:`.data`), with parameters fitted on the rest of train.
``reward_split="test"`` rewards SLDBench's number: R² on the test split with parameters fitted on
the whole train split. TES searched on train and reported test; rewarding test lets a search
overfit the test set, so it is opt-in. ``info["metrics"]`` reports all four: ``r2_fit`` and
``r2_validation`` (fit-split parameters), ``r2_train`` and ``r2_test`` (train-split parameters),
with the fitted parameters per group (``params_fit``, ``params_train``) and the point counts.

Score = R² of the reward split; reward = max(R², −1) (SLDBench's failure value is −1); failure
reward −2, strictly below every valid reward.

Example:
    >>> import gymnasium as gym, discoverygym
    >>> env = gym.make("ScalingLaw-Vocab-v0")                          # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)       # scores the human law      # doctest: +SKIP
    >>> round(info["metrics"]["r2_test"], 3)                           # doctest: +SKIP
    0.934
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from importlib import resources
from typing import Any

from discoverygym.envs.program import ProgramTask
from discoverygym.envs.scaling_laws.data import TASKS, Group, TaskInfo, cache_directory, load_task
from discoverygym.errors import BackendUnavailable, InvalidSolution
from discoverygym.rewards import scaling_laws as verifier
from discoverygym.rewards.common import Score

__all__ = ["ENV_IDS", "LAWS", "ScalingLawTask", "make_scaling_law"]

#: env id -> task key (the registered ids; ``parallel`` / ``u_shape`` are reached by task key).
ENV_IDS = {
    "ScalingLaw-DataConstrained-v0": "data_constrained",
    "ScalingLaw-LrBsz-v0": "lr_bsz",
    "ScalingLaw-DomainMixture-v0": "domain_mixture",
    "ScalingLaw-Rectified-v0": "rectified",
    "ScalingLaw-Vocab-v0": "vocab",
    "ScalingLaw-MoE-v0": "moe",
}

#: task key -> (title, the setting and the human law in our words).
LAWS: dict[str, tuple[str, str]] = {
    "data_constrained": (
        "Scaling law under data constraints (repeated data)",
        ("Language models of N parameters were trained on D tokens drawn from U unique tokens (data repeated for "
        "D/U epochs). Predict the final loss from (D, N, U). Human law (Muennighoff et al. 2023, the "
        "data-constrained Chinchilla law): L = E + A/N'^alpha + B/D'^beta with effective data D' = U + U R_D* "
        "(1 - exp(-(D/U - 1)/R_D*)) and effective parameters N' defined the same way from U_N = min(N, U/20): "
        "repeated tokens are worth less and decay with a learned constant R_D*.")),
    "lr_bsz": (
        "Scaling law of learning rate and batch size",
        ("Dense language models were trained with many learning rates and batch sizes at several data sizes D and "
        "non-embedding parameter counts N. Predict the smoothed final loss from (lr, bsz, D, N); the test points are "
        "at the largest D and N. Human law (after Step Law, Li et al. 2025): a Chinchilla term E + A/N^alpha + "
        "B/D^beta plus penalties quadratic in log lr and log bsz around optima that are power laws of N (learning "
        "rate) and D (batch size).")),
    "domain_mixture": (
        "Data mixing law across five domains",
        ("Models of several sizes were trained on mixtures of five data domains with proportions r_1..r_5 (summing to "
        "1). Predict the loss on each of the five domains from the proportions; one parameter set per model size, "
        "scored on unseen mixtures. Human law (Ye et al. 2024, data mixing laws): L_i(r) = c_i + k_i exp(sum_j t_ij "
        "r_j) for each domain i.")),
    "rectified": (
        "Rectified scaling law of fine-tuning",
        ("Pre-trained models were fine-tuned on 200 to 819,200 examples of three datasets (flan, gigaword, wikiword). "
        "Predict the fine-tuning loss from the data size; one parameter set per (dataset, model) group, scored at "
        "the largest size. Human law (Lin et al. 2024, rectified scaling law): L(D) = B/(D_l + D^beta) + E, with "
        "D_l the data the model has effectively pre-learned.")),
    "vocab": (
        "Scaling law with vocabulary size",
        ("Models with N_nv non-vocabulary parameters and vocabulary size V were trained on H characters. Predict the "
        "unigram-normalised loss Lossu from (N_nv, V, H); the test points have the largest vocabulary. Human law "
        "(Tao et al. 2024): Lossu = -E + A1/N_nv^a1 + A2/N_v^a2 + B/H^b, with N_v the vocabulary parameters (here V "
        "stands for them: the data give no embedding width).")),
    "moe": (
        "Scaling law of mixture-of-experts models",
        ("Routed (mixture-of-experts) language models with E experts and N dense parameters were trained to the same "
        "step. Predict the validation loss from (E, N); the test points have the largest N. Human law (Clark et al. "
        "2022, unified scaling laws for routed language models): log L = a log N + b log E' + c log N log E' + d, "
        "with a saturating expert count 1/E' = 1/(E - 1 + (1/E_start - 1/E_max)^-1) + 1/E_max.")),
    "parallel": (
        "Parallel scaling law (hub data)",
        ("Models of N parameters are run with P parallel streams whose outputs are aggregated. Predict the loss from "
        "(N, P); one parameter set per corpus. Human law (Chen et al. 2025, parallel scaling): L = (A / (N (k log P "
        "+ 1)))^alpha + E.")),
    "u_shape": (
        "U-shaped scaling on easy questions (hub data)",
        ("The Brier score of models on easy questions first worsens, then improves with compute. Predict it from "
        "log10 training FLOPs; one parameter set per group of the hub data. Human baseline: a quadratic in log "
        "FLOPs.")),
}

_CACHE_SIZE = 64
#: splits whose predictions are scored (the reward split and SLDBench's test): they must be finite; a
#: non-finite prediction on fit or train rows leaves that R² NaN instead of failing (SLDBench scores test only).
SCORED_SPLITS = ("validation", "test")
#: (task configuration, sha256 of the program) -> its metrics (every split's R²) or InvalidSolution, shared by every task object
#: of this process (gym.make builds new task objects, e.g. in check_env; evaluations are deterministic).
_RESULTS: OrderedDict[tuple, dict | InvalidSolution] = OrderedDict()
_RESULTS_LOCK = threading.Lock()


def _camel(key: str) -> str:
    return {v: k for k, v in ENV_IDS.items()}.get(key, f"ScalingLaw-{key}")


class ScalingLawTask(ProgramTask):
    """One SLDBench scaling-law task: a program fits and states a law, judged by extrapolation R².

    Score: R² of the reward split (any real ≤ 1); reward ``max(R², −1)``; failure reward −2.
    Evaluations are deterministic (the ``seed`` is unused) and cached per configuration and program
    text in this process (the last 64, shared by every task object), so repeated resets and
    re-proposals cost nothing.

    Args: see :func:`make_scaling_law`.
    """

    quantity = "R² on the held-out extrapolation split (1 = exact)"
    direction = "max"
    language = "python"
    entry = "scaling_law"
    failure_reward = verifier.FAILURE_REWARD
    thread_safe = True

    def __init__(self, task: str = "vocab", reward_split: str = "validation", timeout_s: float = 600.0,
                 memory_mb: int = 2048, cpus: int = 1, use_bwrap: bool | None = None,
                 allow_unconfined: bool = False, cache_dir: str | os.PathLike | None = None) -> None:
        from discoverygym.sandbox.python import SandboxLimits

        if task not in TASKS:
            raise ValueError(f"unknown scaling-law task {task!r}; known: {', '.join(TASKS)}")
        if reward_split not in ("validation", "test"):
            raise ValueError(f"reward_split must be 'validation' or 'test', got {reward_split!r}")
        if not isinstance(allow_unconfined, bool):
            raise TypeError(f"allow_unconfined must be a bool, got {allow_unconfined!r}")
        SandboxLimits(timeout_s=timeout_s, memory_mb=memory_mb, cpus=cpus)  # validates early
        self.info: TaskInfo = TASKS[task]
        self.key, self.reward_split = task, reward_split
        self.timeout_s, self.memory_mb, self.cpus = float(timeout_s), memory_mb, cpus
        self.use_bwrap, self.allow_unconfined = use_bwrap, allow_unconfined
        self.cache_dir = None if cache_dir is None else str(cache_dir)
        self.name = f"scaling_law_{task}"
        self.example = f"scaling_law_{task}.py"
        self.title, self.description = LAWS[task]
        self.description += (f" The law is fitted separately for each {self.info.grouped}." if self.info.grouped
                             else "")

    # ------------------------------------------------------------------ problem text
    @property
    def contract(self) -> str:  # type: ignore[override]
        """What the program defines, what it gets and the limits it runs under."""
        info = self.info
        d = len(info.targets)
        y_shape = "(n,)" if d == 1 else f"(n, {d})"
        per = f" per {info.grouped}" if info.grouped else ""
        return (
            f"Define `scaling_law(X, params)` and `fit(X, y)`. X is a float64 numpy array (n, {len(info.features)}) "
            f"with columns [{', '.join(info.features)}]; y is float64 {y_shape} ({', '.join(info.targets)}). "
            f"`fit` returns params, a flat 1-D array of at most {info.cap} finite floats{per}; `scaling_law(X, params)` "
            f"returns predictions of shape {y_shape}, finite. `fit` sees only training points; the score comes from "
            "calling `scaling_law` with the fitted params on held-out points in a separate process, so the law must "
            "extrapolate (do not use input-dependent statistics such as min/max/median of X inside scaling_law). "
            f"Score: R² = 1 - mean over outputs of MSE / variance on the held-out points ({self.reward_split} split; "
            f"test split: {info.test_rule}). NaN/inf predictions on the held-out points, a wrong shape, too many parameters, a crash or a "
            f"timeout fail. Available: numpy, scipy. Each of the 4 sandboxed calls has {self.timeout_s:g} s, "
            f"{self.memory_mb} MB and {self.cpus} CPU(s), no network."
        )

    @property
    def sota(self) -> dict:
        """No published record is stored here (SLDBench reports R² per task and model in its paper)."""
        return {"value": float("nan"), "source": "none stored (SLDBench reports per-task R² in its paper)"}

    def initial_program(self) -> str:
        """The human law of the task (``discoverygym/examples/scaling_law_<task>.py``)."""
        return (resources.files("discoverygym") / "examples" / self.example).read_text()

    # ------------------------------------------------------------------ judging
    def data(self):
        """The task's splits (:class:`~discoverygym.envs.scaling_laws.data.SLDData`, cached per process).

        Raises:
            FileNotFoundError: a hub-only task that is not cached and cannot be downloaded.
        """
        return load_task(self.key, self.cache_dir)

    def hidden_paths(self) -> tuple[str, ...]:
        """Files the program must not read: the shipped data (and the hub cache), which hold the test labels."""
        paths = [str(resources.files("discoverygym") / "data" / "sld")]
        if self.info.hub:
            paths.append(str(cache_directory(self.cache_dir)))
        return tuple(os.path.realpath(p) for p in paths if os.path.exists(p))

    def check_confinement(self) -> None:
        """Refuse to score where the data files could be read (no bubblewrap), unless ``allow_unconfined``.

        Raises:
            BackendUnavailable: bubblewrap disabled or not working, and ``allow_unconfined`` is False.
        """
        from discoverygym.sandbox.python import NO_BWRAP_ENV, bwrap_available

        if self.allow_unconfined or (self.use_bwrap is not False and bwrap_available()):
            return
        why = "use_bwrap=False" if self.use_bwrap is False else f"bubblewrap is missing, not working or {NO_BWRAP_ENV} is set"
        raise BackendUnavailable(
            f"{_camel(self.key)} scores programs only under bubblewrap ({why}): without it a program could read the "
            "test labels from the shipped data; install bubblewrap, or pass allow_unconfined=True to score anyway")

    def _limits(self, values: int | None = None) -> Any:
        """The sandbox of one process; ``values`` bounds its result before the parent parses it (the
        most a valid answer holds, issue 52 #10: every program env bounds its results), with 32 bytes
        a value."""
        from discoverygym.sandbox.python import SandboxLimits

        size = {} if values is None else {"result_values": values, "result_bytes": 32 * values + 65_536}
        return SandboxLimits(timeout_s=self.timeout_s, memory_mb=self.memory_mb, cpus=self.cpus,
                             use_bwrap=self.use_bwrap, hidden_paths=self.hidden_paths(), minimal_fs=True, **size)

    def _run(self, source: str, entry: str, kwargs: dict, what: str, values: int | None = None) -> tuple[list, float]:
        """One sandboxed process; its result may hold at most ``values`` JSON values (``None``: no cap).

        Each process gets its own private directory holding its own ``kwargs.json`` with only the rows
        it may see (:func:`~discoverygym.sandbox.python.run_program`): no file of the data is shared
        between the four processes, so none holds rows a process may not read (issue 52, #15).
        """
        from discoverygym.envs.scaling_laws.transport import WRAPPER
        from discoverygym.sandbox.python import run_program

        result = run_program(source + "\n" + WRAPPER, entry, kwargs, self._limits(values))
        if not result.ok:
            raise InvalidSolution(f"{what} failed: {result.error}",
                                  metrics={"stdout": result.stdout[-2000:], "stderr": result.stderr[-2000:]})
        if not isinstance(result.value, list) or len(result.value) != len(next(iter(kwargs.values()))):
            raise InvalidSolution(f"{what}: the sandbox wrapper's answer is malformed")
        return result.value, result.elapsed_s

    def _fit(self, source: str, groups: tuple[Group, ...], split: str) -> tuple[dict[str, list[float]], float]:
        payload = [{"X": g.X.tolist(), "y": (g.y[:, 0] if g.y.shape[1] == 1 else g.y).tolist()} for g in groups]
        most = len(payload) * (2 * self.info.cap + 4) + 16  # at most the cap of parameters per group (a column too)
        values, elapsed = self._run(source, "_discoverygym_sld_fit", {"groups": payload}, f"fit on the {split} split",
                                    most)
        return {g.name: verifier.check_params(v, self.info.cap, g.name) for g, v in zip(groups, values)}, elapsed

    def evaluate(self, source: str, *, seed: int) -> Score:
        """Fit and predict in four sandboxed processes (module docstring for their order), score R².

        Args:
            source: program text defining ``scaling_law`` and ``fit``.
            seed: unused (evaluations are deterministic).

        Raises:
            InvalidSolution: syntax error, crash, timeout, memory, missing function, parameters that
                are too many / not flat / not finite, predictions of the wrong shape or not finite.
            BackendUnavailable: no bubblewrap and no ``allow_unconfined=True``.
        """
        del seed
        key = (self.key, self.timeout_s, self.memory_mb, self.cpus, self.use_bwrap,
               self.allow_unconfined, self.cache_dir, hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest())
        with _RESULTS_LOCK:
            cached = _RESULTS.get(key)
            if cached is not None:
                _RESULTS.move_to_end(key)
        if cached is not None:
            if isinstance(cached, InvalidSolution):
                raise InvalidSolution(str(cached), metrics=cached.metrics)
            metrics = dict(cached)
        else:
            try:
                metrics = self._evaluate(source)
            except InvalidSolution as exc:
                self._remember(key, exc)
                raise
            self._remember(key, metrics)
        return Score(metrics[f"r2_{self.reward_split}"], {**metrics, "reward_split": self.reward_split})

    @staticmethod
    def _remember(key: tuple, value: dict | InvalidSolution) -> None:
        with _RESULTS_LOCK:
            _RESULTS[key] = value
            while len(_RESULTS) > _CACHE_SIZE:
                _RESULTS.popitem(last=False)

    def _evaluate(self, source: str) -> dict[str, Any]:
        self.check_confinement()
        data = self.data()
        # The order is the defence (issue 40): every process that predicts validation points ends
        # before the first process that is given the validation labels (the train-split fit)
        # starts, so no state the sandboxes share (the page cache of files both can read, the pid
        # counter, timing, anything we did not think of) can carry those labels into validation
        # predictions: they are final by then. The prediction processes never receive labels.
        params_fit, t_fit = self._fit(source, data.fit, "fit")
        fit_part = [("fit", params_fit, data.fit), ("validation", params_fit, data.validation)]
        values, where, t_pred = self._predict(source, fit_part, "fit/validation")
        params_train, t_train = self._fit(source, data.train, "train")
        train_part = [("train", params_train, data.train), ("test", params_train, data.test)]
        more_values, more_where, more_t = self._predict(source, train_part, "train/test")
        values, where, t_pred = values + more_values, where + more_where, t_pred + more_t
        plan = fit_part + train_part
        d = len(self.info.targets)
        preds: dict[str, tuple[list, list]] = {s: ([], []) for s, _, _ in plan}
        unscored: dict[str, str] = {}
        for (split, g), value in zip(where, values):
            if split in unscored:
                continue
            try:
                pred = verifier.check_predictions(value, len(g.y), d, g.name, split)
            except InvalidSolution as exc:
                if split in SCORED_SPLITS:
                    raise
                unscored[split] = str(exc)  # SLDBench scores held-out points only: reported, not failed
                continue
            preds[split][0].append(g.y)
            preds[split][1].append(pred)
        metrics: dict[str, Any] = {}
        for split, (true, pred) in preds.items():
            if split in unscored:
                metrics[f"r2_{split}"] = float("nan")
                continue
            r2, nmse = verifier.r2_score(true, pred)
            metrics[f"r2_{split}"] = r2
            if d > 1:
                metrics[f"nmse_per_dim_{split}"] = nmse
        if unscored:
            metrics["unscored_predictions"] = unscored
        metrics.update(task=self.key, cap=self.info.cap,
                       groups=len(data.train), n_params=max(len(p) for p in params_train.values()),
                       points={s: sum(len(g.y) for g in gs) for s, _, gs in plan},
                       params_fit=params_fit, params_train=params_train,
                       sandbox_s=t_fit + t_train + t_pred)
        return metrics

    def _predict(self, source: str, part: list, name: str) -> tuple[list, list, float]:
        """One prediction process: ``scaling_law`` on the points of ``part`` (no labels sent)."""
        from discoverygym.envs.scaling_laws.transport import PREDICT_ENTRY

        jobs, where = [], []
        for split, params, groups in part:
            for g in groups:
                jobs.append({"X": g.X.tolist(), "params": params[g.name]})
                where.append((split, g))
        d = len(self.info.targets)  # a prediction per point: a number or a list of d (twice that: a
        most = sum(len(job["X"]) * 2 * (d + 1) + 2 for job in jobs) + 16  # wrong shape is still named)
        values, elapsed = self._run(source, PREDICT_ENTRY, {"jobs": jobs}, f"scaling_law on the {name} points", most)
        return values, where, elapsed

    def reward(self, score: float) -> float:
        """``max(R², −1)`` (:func:`discoverygym.rewards.scaling_laws.reward`)."""
        return verifier.reward(score)

    # ------------------------------------------------------------------ reporting
    def report(self, state) -> list[tuple[str, str]]:
        """R² rows under a result: fit / validation / train / test."""
        m = state.metadata
        return [(f"R² {s}", f"{m[f'r2_{s}']:.6g}") for s in ("fit", "validation", "train", "test") if f"r2_{s}" in m]


def make_scaling_law(task: str = "vocab", reward_split: str = "validation", timeout_s: float = 600.0,
                     memory_mb: int = 2048, cpus: int = 1, use_bwrap: bool | None = None,
                     allow_unconfined: bool = False, cache_dir: str | os.PathLike | None = None) -> ScalingLawTask:
    """Build a scaling-law task (the registered ids fix ``task``).

    Args:
        task: a key of :data:`~discoverygym.envs.scaling_laws.data.TASKS`: the six shipped ones, or
            ``"parallel"`` / ``"u_shape"`` (hub-only: downloaded once when online, a clear
            ``FileNotFoundError`` at the first evaluation offline; not registered as ids, build them
            with ``gym.make("ScalingLaw-Vocab-v0", problem=make_scaling_law("parallel"))``).
        reward_split: ``"validation"`` (default) or ``"test"`` (SLDBench's number; opt-in, see the
            module docstring).
        timeout_s, memory_mb, cpus: limits of each of the four sandboxed calls (default 600 s a call,
            SLDBench's limit: its own domain-mixture program needs more than 60 s here).
        use_bwrap: ``True`` require bubblewrap, ``False`` never (then ``allow_unconfined`` is
            needed), ``None`` when it works.
        allow_unconfined: score without bubblewrap (the data files are then hidden from
            Python-level opens only).
        cache_dir: cache of the hub-only tasks.

    Raises:
        ValueError: unknown task or reward split, a limit out of range.
        TypeError: ``allow_unconfined`` not a bool, a limit of the wrong type.
    """
    return ScalingLawTask(task, reward_split=reward_split, timeout_s=timeout_s, memory_mb=memory_mb, cpus=cpus,
                          use_bwrap=use_bwrap, allow_unconfined=allow_unconfined, cache_dir=cache_dir)
