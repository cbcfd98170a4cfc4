"""The IRFT round loop: search → replay buffer → credit → weighted SFT → held-out evaluation.

TES Algorithm 2 (docs/algorithms.md, "IRFT"): for ``rounds`` rounds, run the (C, L, K, Φ)
evolutionary search with the current generator on every training problem (C = ``trajectories``),
add every sampled node to the replay buffer D, give each node a weight from its trajectory's
final best reward (``irft``: top R% → 1, else 0; or ``grpo``: group-normalised advantages), and
fine-tune the generator on D's prompt → completion pairs with those weights (cosine schedule).
D keeps every round's nodes; each round's credit is recomputed over all of D with that round's R.
After each round the generator is evaluated on held-out problems: the best reward and score a
search with a fixed budget (``eval_*``) reaches, from the same seed every round (and once before
any training, the ``base`` row).

Run directory (``--run-dir``)::

    config.json               IRFTConfig (a resumed run must match it)
    state.json                {"round": r, "done": [stages of round r finished]} (atomic)
    buffer.jsonl              the replay buffer (format: discoverygym.agents.irft.buffer)
    rounds.jsonl              one summary line per finished round (and "base")
    rounds/r000/search/<env>/ search run of round 0 on a training problem (+ prompts.jsonl)
    rounds/r000/eval/<env>/   held-out search of round 0 (rounds/base/eval/<env>/ before training)
    rounds/r000/sft.json      SFT summary of round 0
    checkpoints/round-000/    the generator after round 0 (a LoRA adapter for hf:, a Tinker path)
    events.out.tfevents.*     TensorBoard: sft/loss, sft/learning_rate (step: global SFT step);
                              buffer/* (size, valid fraction, histograms of node rewards,
                              trajectory final bests and per-problem scores), credit/*,
                              the schema of discoverygym.tensorboard for the training searches:
                              score/best, score/record, reward/best, valid_fraction,
                              cost/evaluations (``/<env>`` appended with several problems) and
                              eval/<env>/{score_best,reward_best,valid_fraction} for the held-out
                              ones (step: round + 1; 0 = before training)

Resume: every stage is recorded in ``state.json`` when it ends; a killed run restarts the stage
it was in (a search stage resumes its own run directory without re-sampling or re-evaluating
what is logged; SFT restarts from the previous round's checkpoint, which is reloaded).
"""

from __future__ import annotations

import json
import numbers
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from discoverygym import rundir
from discoverygym import tensorboard as tbs
from discoverygym.agents.irft.backends import Backend, make_backend
from discoverygym.agents.irft.buffer import ReplayBuffer, rows_from_search
from discoverygym.agents.irft.credit import CREDIT_RULES, assign_credit
from discoverygym.agents.irft.recording import RecordingPolicy, read_prompts
from discoverygym.agents.irft.sft import SFTSettings
from discoverygym.io import atomic_write_json, run_kind
from discoverygym.search.evolution import EvolutionarySearch, SearchConfig
from discoverygym.search.runlog import RunLog

__all__ = ["IRFT", "IRFTConfig", "check_run_dir", "run_kind"]


@dataclass
class IRFTConfig:
    """Everything that defines an IRFT run (defaults: TES Algorithm 2 where it says, else ours).

    Attributes:
        problems: training env ids.
        policy: the generator, ``"hf:PATH_OR_ID"`` or ``"tinker:MODEL"``.
        heldout: env ids evaluated after each round (not trained on).
        rounds: IRFT rounds (TES: 6).
        trajectories: search trajectories per problem per round, Ĉ (TES: 32).
        steps, candidates: L and K of each search (ours: 8, 4).
        selector: Φ (``rpucg`` as TES).
        top_percent: R per round (TES: 10, 10, 10, 10, 5, 5); rounds past the list use its last value
            (the command line takes one value for every round or exactly one per round).
        credit: ``"irft"`` (0/1 top R%) or ``"grpo"`` (group-normalised trajectory advantages).
        credit_scope: ``irft`` ranking per ``"problem"`` or over the whole ``"buffer"``.
        sft: :class:`~discoverygym.agents.irft.sft.SFTSettings` fields (steps 100, batch 256, lr 2e-5).
        eval_trajectories, eval_steps, eval_candidates: the held-out search budget (C, L, K).
        seed: run seed (round r's searches use ``seed + 1000 r``; held-out searches always ``seed``).
        action_mode: ``"code"`` (the generator writes programs).
        policy_kwargs: backend constructor arguments (JSON).
        env_kwargs: env arguments for every search (JSON).
    """

    problems: list[str]
    policy: str
    heldout: list[str] = field(default_factory=list)
    rounds: int = 6  # TES Alg. 2
    trajectories: int = 32  # TES Alg. 2: Ĉ
    steps: int = 8
    candidates: int = 4
    selector: str = "rpucg"  # TES
    top_percent: list[float] = field(default_factory=lambda: [10.0, 10.0, 10.0, 10.0, 5.0, 5.0])  # TES Alg. 2
    credit: str = "irft"
    credit_scope: str = "problem"
    sft: dict = field(default_factory=dict)
    eval_trajectories: int = 4
    eval_steps: int = 8
    eval_candidates: int = 4
    seed: int = 0
    action_mode: str = "code"
    policy_kwargs: dict = field(default_factory=dict)
    env_kwargs: dict = field(default_factory=dict)

    def validate(self) -> None:
        """Raise ``ValueError`` for an impossible configuration (before anything runs or is created).

        Checks: at least one training problem; no problem listed twice and none both trained on and
        held out; each problem's search configuration (env id, task options in ``env_kwargs``,
        selector, C/L/K) as :meth:`~discoverygym.search.evolution.SearchConfig.validate` does; a
        trainable ``policy`` spec (``hf:`` or ``tinker:``); the integer sizes; ``top_percent``
        values in (0, 100]; the credit rule and scope; the SFT settings
        (:meth:`~discoverygym.agents.irft.sft.SFTSettings.validate`).
        """
        for name in ("problems", "heldout"):
            value = getattr(self, name)
            if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
                raise ValueError(f"{name} must be a list of env ids, got {value!r}")
        if not self.problems:
            raise ValueError("at least one training problem is needed")
        for name in ("problems", "heldout"):
            ids = getattr(self, name)
            twice = sorted({x for x in ids if ids.count(x) > 1})
            if twice:
                raise ValueError(f"{name} lists {', '.join(twice)} more than once")
        both = [x for x in self.problems if x in self.heldout]
        if both:
            raise ValueError(
                f"{', '.join(both)} is both a training and a held-out problem; held-out problems "
                "must not be trained on"
            )
        for name in (
            "rounds",
            "trajectories",
            "steps",
            "candidates",
            "eval_trajectories",
            "eval_steps",
            "eval_candidates",
        ):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not isinstance(self.seed, numbers.Integral) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if self.action_mode != "code":
            raise ValueError(
                f"action_mode must be 'code' (the generator writes programs), got {self.action_mode!r}"
            )
        for name in ("policy_kwargs", "env_kwargs", "sft"):
            if not isinstance(getattr(self, name), dict):
                raise ValueError(f"{name} must be a JSON object, got {getattr(self, name)!r}")  # noqa: TRY004
        self._validate_policy()
        for env_id in [*self.problems, *self.heldout]:
            train = env_id in self.problems
            SearchConfig(  # also checks env_kwargs against what the env takes (without building it)
                env_id=env_id,
                selector=self.selector,
                C=self.trajectories if train else self.eval_trajectories,
                L=self.steps if train else self.eval_steps,
                K=self.candidates if train else self.eval_candidates,
                action_mode=self.action_mode,
                env_kwargs=dict(self.env_kwargs),
            ).validate(check_policy=False)
        tp = self.top_percent
        if (
            not isinstance(tp, list)
            or not tp
            or not all(isinstance(r, numbers.Real) and not isinstance(r, bool) for r in tp)
            or any(not 0 < float(r) <= 100 for r in tp)
        ):
            raise ValueError(f"top_percent values must be numbers in (0, 100], got {tp!r}")
        if self.credit not in CREDIT_RULES:
            raise ValueError(f"credit must be one of {', '.join(CREDIT_RULES)}, got {self.credit!r}")
        if self.credit_scope not in ("problem", "buffer"):
            raise ValueError(f"credit_scope must be 'problem' or 'buffer', got {self.credit_scope!r}")
        try:
            settings = SFTSettings(**self.sft)
        except TypeError as exc:
            raise ValueError(f"sft settings: {exc}") from None
        settings.validate()

    def _validate_policy(self) -> None:
        from discoverygym.agents.policies.llm import split_spec
        from discoverygym.policy import LLM_BACKENDS, chat_refusal

        if not isinstance(self.policy, str):
            raise ValueError(f"policy must be a string such as hf:PATH or tinker:MODEL, got {self.policy!r}")  # noqa: TRY004
        try:
            backend, _ = split_spec(self.policy)
        except ValueError:
            backend = None
        if backend is not None and LLM_BACKENDS[backend].chat:
            raise ValueError(chat_refusal("post-train"))
        if backend is None or not LLM_BACKENDS[backend].post_train:
            raise ValueError(
                f"post-training needs a trainable generator: hf:PATH or tinker:MODEL, got {self.policy!r}"
            )

    def top_percent_at(self, round_index: int) -> float:
        """R of round ``round_index`` (the last listed value for later rounds)."""
        return float(self.top_percent[min(round_index, len(self.top_percent) - 1)])


def check_run_dir(run_dir: str | os.PathLike, *, resume: bool) -> dict | None:
    """Check that ``run_dir`` can be used for a post-train run (nothing is created); returns the
    stored configuration with ``resume``, else ``None``: :func:`discoverygym.rundir.check_run_dir`.

    Raises:
        ValueError: the path (or a parent) is not a directory; ``resume`` of a directory without a
            post-train run (a search or train run is named as such); a new run in a directory
            that already holds a run.
    """
    return rundir.check_run_dir(run_dir, "post-train", resume)


def _record(env_id: str) -> float | None:
    """The published record of ``env_id``'s problem (the ``score/record`` line), or ``None``."""
    from discoverygym.envs.registry import get_problem

    try:
        return get_problem(env_id).sota.get("value")
    except (ValueError, AttributeError):
        return None


def _tag(env_id: str) -> str:
    return env_id.replace("/", "_")


class IRFT:
    """Runs (or resumes) an IRFT post-training run in ``run_dir`` (see the module docstring).

    Args:
        config: :class:`IRFTConfig`.
        run_dir: the run directory (new, or an IRFT run of the same config with ``resume``).
        resume: continue the run found in ``run_dir`` (only ``rounds`` may differ from the stored
            configuration: more rounds extend a finished run).
        executor, workers: candidate evaluation for every search (``"local"`` process pool,
            ``"inline"``, ``"ray"``; see :mod:`discoverygym.search.executors`).
        backend: a ready :class:`~discoverygym.agents.irft.backends.Backend` (tests); default builds
            one from ``config.policy``.
        progress: called with ``(message)`` at each stage start.
        tensorboard: write TensorBoard events into ``run_dir``.

    Raises:
        ValueError: bad configuration; ``run_dir`` holds a run and ``resume`` is false; ``resume``
            of a directory without a run or with another configuration.
    """

    def __init__(
        self,
        config: IRFTConfig,
        run_dir: str | os.PathLike,
        *,
        resume: bool = False,
        executor: str = "local",
        workers: int | None = None,
        backend: Backend | None = None,
        progress: Callable[[str], None] | None = None,
        tensorboard: bool = True,
    ) -> None:
        config.validate()
        self.config = config
        self.dir = Path(run_dir)
        stored = check_run_dir(self.dir, resume=resume)
        if resume:
            given = self._config_dict()
            diff = {k: (stored.get(k), v) for k, v in given.items() if stored.get(k) != v and k != "rounds"}
            if diff:
                raise ValueError(f"cannot resume {self.dir}: configuration differs (stored, given): {diff}")
        self.executor = executor
        self.workers = workers
        self.progress = progress or (lambda message: None)
        self._tb_enabled = tensorboard
        self.backend = backend if backend is not None else make_backend(config.policy, config.policy_kwargs)
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.dir / rundir.CONFIG_FILE, {"kind": "post-train", **self._config_dict()})
        self.buffer = ReplayBuffer(self.dir / ReplayBuffer.FILE)
        self.settings = SFTSettings(**config.sft)

    # ------------------------------------------------------------------ small helpers
    def _config_dict(self) -> dict:
        return json.loads(json.dumps(asdict(self.config)))

    def _read_json(self, name: str) -> Any:
        path = self.dir / name
        return json.loads(path.read_text()) if path.exists() else None

    def _stages(self, r: int) -> list[str]:
        cfg = self.config
        base = [f"base:{p}" for p in cfg.heldout] if r == 0 else []
        return [
            *base,
            *(f"search:{p}" for p in cfg.problems),
            "buffer",
            "credit",
            "sft",
            *(f"eval:{p}" for p in cfg.heldout),
        ]

    def _round_dir(self, r: int | str) -> Path:
        return self.dir / "rounds" / (r if isinstance(r, str) else f"r{r:03d}")

    def _checkpoint(self, r: int) -> Path:
        return self.dir / "checkpoints" / f"round-{r:03d}"

    def _save_state(self, state: dict) -> None:
        atomic_write_json(self.dir / "state.json", state)

    def _write_round_summary(self, summary: dict) -> None:
        path = self.dir / "rounds.jsonl"
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
        lines = [x for x in lines if x["round"] != summary["round"]] + [summary]
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(x) + "\n" for x in lines))
        os.replace(tmp, path)

    def summaries(self) -> list[dict]:
        """The lines of ``rounds.jsonl`` (one per finished round, ``base`` first when held out)."""
        path = self.dir / "rounds.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []

    # ------------------------------------------------------------------ search
    def _search(self, env_id: str, run_dir: Path, *, C: int, L: int, K: int, seed: int, record: bool) -> dict:
        """Run or resume one search with the current generator; returns its best reward/score."""
        cfg = self.config
        search_cfg = SearchConfig(
            env_id=env_id,
            policy=self.backend.policy.name,
            selector=cfg.selector,
            C=C,
            L=L,
            K=K,
            seed=seed,
            action_mode=cfg.action_mode,
            env_kwargs=dict(cfg.env_kwargs),
        )
        policy = RecordingPolicy(self.backend.policy, run_dir) if record else self.backend.policy
        resume = RunLog(run_dir, create=False).read_config() is not None if run_dir.exists() else False
        if run_dir.exists() and not resume:
            shutil.rmtree(run_dir)  # killed before the search wrote its config: nothing to keep
        search = EvolutionarySearch(
            search_cfg,
            run_dir,
            resume=resume,
            executor=self.executor,
            workers=self.workers,
            policy=policy,
            tensorboard=False,
        )
        result = search.run()
        best = result.best
        evals = [x["state"] for x in RunLog(run_dir, create=False).read_records() if x.get("kind") == "eval"]
        valid = [x for x in evals if x["valid"]]
        return {
            "best_reward": best.reward if best else None,  # over the initial state and every candidate
            "best_score": best.score if best else None,
            "best_candidate_reward": max((x["reward"] for x in valid), default=None),
            "valid_fraction": len(valid) / len(evals) if evals else 0.0,
            "evaluations": result.evaluations,
        }

    # ------------------------------------------------------------------ stages
    def _stage(self, r: int, stage: str, tb: Any) -> None:
        cfg = self.config
        kind, _, env_id = stage.partition(":")
        step = r + 1
        if kind == "base" or kind == "eval":
            where = self._round_dir("base" if kind == "base" else r) / "eval" / _tag(env_id)
            res = self._search(
                env_id,
                where,
                C=cfg.eval_trajectories,
                L=cfg.eval_steps,
                K=cfg.eval_candidates,
                seed=cfg.seed,
                record=False,
            )
            atomic_write_json(where.parent / f"{_tag(env_id)}.json", res)
            self._scalars(
                tb,
                0 if kind == "base" else step,
                {  # held-out results: eval/* of the schema in discoverygym.tensorboard
                    f"{tbs.EVAL}{env_id}/score_best": res["best_score"],
                    f"{tbs.EVAL}{env_id}/reward_best": res["best_reward"],
                    f"{tbs.EVAL}{env_id}/valid_fraction": res["valid_fraction"],
                },
            )
        elif kind == "search":
            where = self._round_dir(r) / "search" / _tag(env_id)
            res = self._search(
                env_id,
                where,
                C=cfg.trajectories,
                L=cfg.steps,
                K=cfg.candidates,
                seed=cfg.seed + 1000 * r,
                record=True,
            )
            suffix = "" if len(cfg.problems) == 1 else f"/{env_id}"
            self._scalars(
                tb,
                step,
                {  # the tags of train and search (discoverygym.tensorboard); /<env_id> with several problems
                    tbs.SCORE_BEST + suffix: res["best_score"],
                    tbs.SCORE_RECORD + suffix: _record(env_id),
                    tbs.REWARD_BEST + suffix: res["best_reward"],
                    tbs.VALID_FRACTION + suffix: res["valid_fraction"],
                    tbs.COST_EVALUATIONS + suffix: res["evaluations"],
                },
            )
        elif kind == "buffer":
            rows = []
            for env_id in cfg.problems:
                where = self._round_dir(r) / "search" / _tag(env_id)
                rows += rows_from_search(
                    where,
                    read_prompts(where),
                    problem=env_id,
                    round_index=r,
                    run=str(where.relative_to(self.dir)),
                )
            self.buffer.add_round(r, rows)
        elif kind == "credit":
            rows = self.buffer.rows()
            weights = assign_credit(
                rows, cfg.credit, top_percent=cfg.top_percent_at(r), scope=cfg.credit_scope
            )
            self.buffer.set_weights(weights.tolist(), r)
            self._buffer_stats(tb, step, rows, weights)
        elif kind == "sft":
            if r > 0:
                # a restarted SFT starts again from the previous round's model
                self.backend.load(self._checkpoint(r - 1))
            offset = r * self.settings.steps

            def log(s: int, logs: dict) -> None:
                values = {"sft/loss": logs.get("loss"), "sft/learning_rate": logs.get("learning_rate")}
                self._scalars(tb, offset + s, values)

            settings = SFTSettings(**{**asdict(self.settings), "seed": self.settings.seed + r})
            summary = self.backend.train(
                self.buffer.rows(), settings, self._round_dir(r) / "sft-scratch", log
            )
            shutil.rmtree(self._round_dir(r) / "sft-scratch", ignore_errors=True)
            summary["checkpoint"] = str(self.backend.save(self._checkpoint(r)))
            atomic_write_json(self._round_dir(r) / "sft.json", summary)
        else:  # pragma: no cover - stages are generated above
            raise RuntimeError(f"unknown stage {stage!r}")

    def _buffer_stats(self, tb: Any, step: int, rows: list[dict], weights: np.ndarray) -> None:
        if not rows:
            return
        rewards = np.array([r["reward"] for r in rows])
        finals = np.array([r["traj_best_reward"] for r in rows])
        valid = np.array([r["valid"] for r in rows])
        self._scalars(
            tb,
            step,
            {
                "buffer/size": len(rows),
                "buffer/valid_fraction": float(valid.mean()),
                "buffer/traj_best_reward_mean": float(finals.mean()),
                "buffer/traj_best_reward_max": float(finals.max()),
                "credit/nonzero": int((weights != 0).sum()),
                "credit/mean_weight": float(weights.mean()),
            },
        )
        if tb is not None:
            tb.histogram("buffer/node_reward", rewards, step)
            tb.histogram("buffer/traj_best_reward", finals, step)
            for env_id in self.config.problems:  # the problem's own numbers (C5, Σr...), valid nodes only
                scores = [r["score"] for r in rows if r["problem"] == env_id and r["score"] is not None]
                if scores:
                    tb.histogram(f"buffer/{env_id}/score", scores, step)

    @staticmethod
    def _scalars(tb: Any, step: int, values: dict) -> None:
        """Finite ``values`` as float64 scalars (:class:`discoverygym.tensorboard.RunWriter`)."""
        if tb is None:
            return
        tb.scalars(values, step)

    # ------------------------------------------------------------------ run
    def run(self) -> list[dict]:
        """Run the remaining stages of every round; returns :meth:`summaries`.

        Raises:
            KeyboardInterrupt, Exception: from a search or the trainer; the run directory stays
                resumable (``IRFT(config, run_dir, resume=True).run()``).
        """
        tb = None
        if self._tb_enabled:
            tb = tbs.RunWriter(self.dir, flush_secs=10)
        try:
            state = self._read_json("state.json") or {"round": 0, "done": []}
            r = state["round"]
            if r > 0 or "sft" in state["done"]:
                last = r if "sft" in state["done"] else r - 1
                self.backend.load(self._checkpoint(last))
            while r < self.config.rounds:
                t0 = time.perf_counter()
                for stage in self._stages(r):
                    if stage in state["done"]:
                        continue
                    self.progress(f"round {r}: {stage}")
                    self._stage(r, stage, tb)
                    state["done"].append(stage)
                    self._save_state(state)
                if r == 0 and self.config.heldout:
                    self._write_round_summary(self._summary("base"))
                self._write_round_summary({**self._summary(r), "wall_s": time.perf_counter() - t0})
                r += 1
                state = {"round": r, "done": []}
                self._save_state(state)
        finally:
            if tb is not None:
                tb.close()
        return self.summaries()

    def _summary(self, r: int | str) -> dict:
        """One line of ``rounds.jsonl``: held-out bests, buffer size, SFT loss of round ``r``."""
        out: dict = {"round": r}
        eval_dir = self._round_dir(r) / "eval"
        out["heldout"] = {
            p: json.loads((eval_dir / f"{_tag(p)}.json").read_text())
            for p in self.config.heldout
            if (eval_dir / f"{_tag(p)}.json").exists()
        }
        if r != "base":
            rows = [x for x in self.buffer.rows() if x["round"] == r]
            out["buffer_rows"] = len(rows)
            out["train_best_reward"] = {
                p: max((x["traj_best_reward"] for x in rows if x["problem"] == p), default=None)
                for p in self.config.problems
            }
            sft = self._round_dir(r) / "sft.json"
            out["sft"] = json.loads(sft.read_text()) if sft.exists() else None
        return out
