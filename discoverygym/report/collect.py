"""Read a run directory into the report's data: nodes of the lineage DAG, curves, best state, config.

One reader per run kind (:func:`discoverygym.io.run_kind`):

* ``search`` — ``archive.jsonl`` (``init`` and ``eval`` records, in evaluation order; a torn last
  line of a live run is ignored), TensorBoard's ``trajectory/<i>/best_reward`` for wall time;
* ``train`` — ``archive.json`` (the reuse archive's kept states and its lineage; written every
  10 s while the run goes on, so a running run shows its states so far), ``states.jsonl`` (every
  judged child's score: states the archive evicted are drawn with their score, not as invalid),
  ``metrics.jsonl`` (``score/best`` per step), ``best.json``;
* ``post-train`` — every search / held-out evaluation sub-run under ``rounds/<round>/`` (each read
  as a search run, ids prefixed by ``<round>/<part>/<env>:``) and ``rounds.jsonl``.

Every reader returns the same :class:`RunData`; :mod:`discoverygym.report.html` draws it. Texts
(programs, stdout tails, diffs) are capped here so that a 10,000-node report stays a few MB.
"""

from __future__ import annotations

import bisect
import difflib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from discoverygym.io import MAX_RUN_FILE_BYTES, json_lines, read_input_bytes, read_input_text, run_kind
from discoverygym.outcomes import CATEGORIES
from discoverygym.rundir import CONFIG_FILE
from discoverygym.search.runlog import RunLog

__all__ = ["Node", "RunData", "collect", "program_text", "unified_diff"]

#: longest program / construction text diffed (characters; longer ones are cut first).
MAX_TEXT = 20_000
#: longest diff kept per node (characters).
MAX_DIFF = 4_000
#: total characters of diffs kept in one report; nodes past it say the diff was left out.
DIFF_BUDGET = 12_000_000
#: characters of stdout / stderr tail kept per node.
MAX_TAIL = 600
#: characters of the best program shown in full.
MAX_BEST_TEXT = 60_000
#: newest LLM responses (``samples.jsonl`` lines) listed in the samples table.
MAX_SAMPLES = 500
#: characters of one response's text shown in the samples table.
MAX_SAMPLE_TEXT = 4_000


@dataclass
class Node:
    """One state of the lineage DAG.

    Attributes:
        id: the state id (prefixed by the sub-run in post-train reports).
        parents: parent ids, the first being the parent the child was made from.
        score / reward / valid / error: as the verifier judged it (``None`` score: unscored).
        lane: vertical band (trajectory, offset per sub-run), ``None`` when unknown.
        step: committed step that made it (``-1`` for an initial state), ``None`` when unknown.
        k: index of the candidate within its step.
        order: evaluation order (0 = first evaluated) when known.
        tail: stdout / stderr tail (capped).
        text: the program, or the construction as one element per line (capped; for the diff).
        group: the sub-run (post-train) or ``""``.
    """

    id: str
    parents: list[str]
    score: float | None
    reward: float | None
    valid: bool
    error: str | None = None
    lane: int | None = None
    step: int | None = None
    k: int = 0
    order: int | None = None
    tail: str = ""
    text: str | None = None
    group: str = ""


@dataclass
class RunData:
    """Everything a report shows about one run directory.

    Attributes:
        kind: ``search``, ``train`` or ``post-train``.
        run_dir: the directory read.
        env_id: the problem (the first training problem for post-train), or ``None``.
        config: ``config.json`` as read.
        nodes: the lineage DAG's nodes.
        curves: ``{"name", "axis" ("evaluations" / "wall" / "round"), "x", "y", "ylabel"}`` each.
        best: the best valid state's record (``State.to_dict`` form) or ``None``.
        best_text: the best program / construction text (capped) or ``None``.
        usage: ``usage.json`` (token / cost totals) when the run wrote one.
        tables: extra tables: ``{"title", "columns", "rows"}`` each (post-train rounds).
        summary: short key → value facts shown at the top (evaluations, best score, record...).
        notes: what could not be read (shown in the report, never raised).
    """

    kind: str
    run_dir: Path
    env_id: str | None
    config: dict
    nodes: list[Node] = field(default_factory=list)
    curves: list[dict] = field(default_factory=list)
    best: dict | None = None
    best_text: str | None = None
    usage: Any = None
    tables: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- helpers
def _finite(x: Any) -> float | None:
    """``x`` as a float when it is a finite number, else ``None``."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def _read_json(path: Path) -> Any:
    """``path``'s JSON, or ``None`` when absent or unreadable (a live run may be rewriting it).

    Opened once and checked on the descriptor (:func:`~discoverygym.io.read_input_text`): a FIFO,
    a device or a file beyond :data:`~discoverygym.io.MAX_RUN_FILE_BYTES` that replaced the file
    after ``check_run_files`` looked is not read either."""
    try:
        return json.loads(read_input_text(path, MAX_RUN_FILE_BYTES))
    except (ValueError, RecursionError):
        return None


def _read_jsonl(path: Path) -> list[dict]:
    """The complete JSON-object lines of ``path`` (a torn or corrupt line is skipped); opened once and
    checked on the descriptor as :func:`_read_json` does (``[]`` when absent or refused)."""
    try:
        return json_lines(read_input_bytes(path, MAX_RUN_FILE_BYTES).decode("utf-8", errors="replace"))
    except ValueError:
        return []


def program_text(state: dict) -> str | None:
    """The text a state is diffed by: its program, else its construction one element per line (capped)."""
    code = state.get("code")
    if isinstance(code, str) and code:
        return code[:MAX_TEXT]
    sol = state.get("solution")
    if sol is None:
        return None
    if isinstance(sol, list):
        text = "\n".join(json.dumps(x, allow_nan=True) for x in sol)
    else:
        text = json.dumps(sol, indent=1, allow_nan=True, default=str)
    return text[:MAX_TEXT]


def unified_diff(parent: str | None, child: str | None, cap: int = MAX_DIFF) -> str | None:
    """Unified diff (2 lines of context) of ``parent`` → ``child`` texts, cut at ``cap`` characters."""
    if parent is None or child is None:
        return None
    if parent == child:
        return "(identical to the parent)"
    lines = difflib.unified_diff(parent.splitlines(), child.splitlines(), "parent", "child", n=2, lineterm="")
    out, size = [], 0
    for line in lines:
        size += len(line) + 1
        if size > cap:
            out.append(f"... (diff cut at {cap} characters)")
            break
        out.append(line)
    return "\n".join(out)


def _tail(metadata: Any) -> str:
    """The stdout / stderr tail of a state's metadata (capped), or ``""``."""
    if not isinstance(metadata, dict):
        return ""
    parts = []
    for key in ("stdout", "stderr"):
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(f"[{key}] ...{value[-MAX_TAIL:]}" if len(value) > MAX_TAIL else f"[{key}] {value}")
    return "\n".join(parts)


def _node(state: dict, prefix: str = "", **extra: Any) -> Node:
    """A :class:`Node` from a ``State.to_dict`` record."""
    return Node(
        id=prefix + str(state.get("id")),
        parents=[prefix + str(p) for p in state.get("parent_ids") or []],
        score=_finite(state.get("score")),
        reward=_finite(state.get("reward")),
        valid=bool(state.get("valid")),
        error=(str(state["error"])[:2000] if state.get("error") else None),
        tail=_tail(state.get("metadata")),
        text=program_text(state),
        **extra,
    )


def _best_curve(nodes: list[Node], name: str) -> dict:
    """Best score (of the best-reward valid node so far) against evaluations, over ``nodes`` in order."""
    xs, ys, best = [], [], None
    for i, n in enumerate(nodes, 1):
        if n.valid and n.reward is not None and n.score is not None and (best is None or n.reward > best.reward):
            best = n
            xs.append(i)
            ys.append(n.score)
    if xs and xs[-1] != len(nodes):
        xs.append(len(nodes))
        ys.append(ys[-1])
    return {"name": name, "axis": "evaluations", "x": xs, "y": ys, "ylabel": "best score"}


def _read_usage(run_dir: Path) -> Any:
    """``usage.json`` (token and cost totals written by chat backends), or ``None``."""
    path = run_dir / "usage.json"
    return _read_json(path) if path.exists() else None


def _scalars(run_dir: Path, notes: list[str]) -> dict:
    """TensorBoard scalars of ``run_dir`` (``{}`` when none or unreadable; a live file's torn tail is dropped)."""
    if not any(run_dir.glob("events.out.tfevents.*")):
        return {}
    try:
        from discoverygym.tensorboard import read_scalars

        return read_scalars(run_dir)
    except Exception as exc:  # noqa: BLE001 - a torn event of a live run, tensorboardX missing
        notes.append(f"TensorBoard events of {run_dir.name} not read ({type(exc).__name__})")
        return {}


# ----------------------------------------------------------------------------- search
def _search(run_dir: Path, data: RunData, prefix: str = "", lane0: int = 0, group: str = "") -> list[Node]:
    """Add a search run's nodes and curves to ``data``; returns the nodes (evaluation order, init first)."""
    try:
        records = RunLog(run_dir, create=False).read_records()
    except (OSError, ValueError) as exc:
        data.notes.append(f"{run_dir}: {exc}")
        return []
    nodes: list[Node] = []
    by_traj: dict[int, list[Node]] = {}
    busy: dict[int, list[float]] = {}
    order = 0
    for r in records:
        if r.get("kind") == "init" and isinstance(r.get("state"), dict):
            nodes.append(_node(r["state"], prefix, lane=lane0, step=-1, k=len([n for n in nodes if n.step == -1]),
                               order=None, group=group))
        elif r.get("kind") == "eval" and isinstance(r.get("state"), dict):
            traj = int(r.get("traj", 0))
            n = _node(r["state"], prefix, lane=lane0 + traj, step=int(r.get("step", 0)), k=int(r.get("k", 0)),
                      order=order, group=group)
            order += 1
            nodes.append(n)
            by_traj.setdefault(traj, []).append(n)
            busy.setdefault(traj, []).append(float(r.get("busy_s") or 0.0))
    data.nodes.extend(nodes)
    label = f"{group} " if group else ""
    evaluated = [n for n in nodes if n.order is not None]
    data.curves.append(_best_curve(evaluated, f"{label}all trajectories"))
    for traj in sorted(by_traj):
        curve = _best_curve(by_traj[traj], f"{label}trajectory {traj}")
        curve["x"] = [_global_index(by_traj[traj], x) for x in curve["x"]]
        data.curves.append(curve)
    scalars = _scalars(run_dir, data.notes)
    t0 = min((w for pts in scalars.values() for _, _, w in pts), default=None)
    for traj in sorted(by_traj):
        pts = scalars.get(f"trajectory/{traj}/best_reward")
        if pts and t0 is not None:  # best reward at each commit, mapped back to that state's score
            valid = sorted((n.reward, n.score) for n in by_traj[traj] if n.valid and n.reward is not None
                           and n.score is not None)
            rewards = [v[0] for v in valid]
            xs, ys = [], []
            for _, value, wall in pts:
                if rewards:
                    i = min(max(bisect.bisect_left(rewards, value), 0), len(rewards) - 1)
                    if i > 0 and abs(rewards[i - 1] - value) < abs(rewards[i] - value):
                        i -= 1
                    xs.append(round(wall - t0, 3))
                    ys.append(valid[i][1])
            data.curves.append({"name": f"{label}trajectory {traj}", "axis": "wall", "x": xs, "y": ys,
                                "ylabel": "best score", "xlabel": "wall time (s)"})
        else:  # no TensorBoard: the trajectory's cumulative evaluator time
            curve, acc, best = {"name": f"{label}trajectory {traj}", "axis": "wall", "x": [], "y": [],
                                "ylabel": "best score", "xlabel": "evaluator seconds (no TensorBoard events)"}, 0.0, None
            for n, b in zip(by_traj[traj], busy[traj]):
                acc += b
                if n.valid and n.reward is not None and n.score is not None and (best is None or n.reward > best):
                    best = n.reward
                    curve["x"].append(round(acc, 4))
                    curve["y"].append(n.score)
            data.curves.append(curve)
    return nodes


def _global_index(traj_nodes: list[Node], x: int) -> int:
    """Evaluation number (1-based, over the whole run) of a trajectory's ``x``-th node."""
    return (traj_nodes[x - 1].order or 0) + 1


def _best_of(nodes: list[Node]) -> Node | None:
    """The valid node with the highest reward (ties: the first)."""
    best = None
    for n in nodes:
        if n.valid and n.reward is not None and (best is None or n.reward > best.reward):
            best = n
    return best


def _record_verdict(best: dict, config: dict) -> str | None:
    """``"yes: …"`` / ``"no: …"``: whether the run's best state beats the record, by the one judgment
    (:func:`discoverygym.rewards.certify.state.judge_state`, the verdict ``certify`` gives for ``best.json``); ``None``
    for an env outside the construction registry or when there is nothing to judge."""
    from discoverygym.envs.registry import ENVS
    from discoverygym.rewards.certify.state import judge_state

    env_id = best.get("env_id") or config.get("env_id")
    problem = ENVS.get(env_id) if isinstance(env_id, str) else None
    if problem is None:
        return None
    try:
        verdict = judge_state(env_id, problem, best["state"])
    except (ValueError, TypeError, KeyError):  # a hand-edited or foreign best.json: the report still renders
        return None
    if verdict.outcome == "none":
        return None
    return ("yes: " if verdict.is_record else "no: ") + verdict.text()


def _collect_search(run_dir: Path, data: RunData) -> None:
    nodes = _search(run_dir, data)
    best = _read_json(run_dir / "best.json")
    if isinstance(best, dict) and isinstance(best.get("state"), dict):
        data.best = best["state"]
        data.summary["published record"] = (best.get("sota") or {}).get("value")
        verdict = _record_verdict(best, data.config)
        if verdict:
            data.summary["beats the record?"] = verdict
    data.summary["evaluations"] = sum(1 for n in nodes if n.order is not None)
    cfg = data.config
    if {"C", "L", "K"} <= cfg.keys():
        data.summary["budget C·L·K"] = cfg["C"] * cfg["L"] * cfg["K"]


# ----------------------------------------------------------------------------- train
def _collect_train(run_dir: Path, data: RunData) -> None:
    archive = _read_json(run_dir / "archive.json")
    nodes: list[Node] = []
    if isinstance(archive, dict):
        kept = set()
        for s in archive.get("states") or []:
            if isinstance(s, dict):
                meta = s.get("metadata") if isinstance(s.get("metadata"), dict) else {}
                step = meta.get("step")
                n = _node(s, step=int(step) if isinstance(step, int) else (-1 if not s.get("parent_ids") else None))
                nodes.append(n)
                kept.add(n.id)
        lineage = archive.get("lineage") if isinstance(archive.get("lineage"), dict) else {}
        judged = {r["id"]: r for r in _read_jsonl(run_dir / "states.jsonl") if isinstance(r.get("id"), str)}
        for sid, parents in lineage.items():  # states the archive evicted (its cap): their judged score
            if sid not in kept:
                nodes.append(_evicted(sid, list(parents or []), judged.get(sid)))
    data.nodes.extend(nodes)
    metrics = _read_jsonl(run_dir / "metrics.jsonl")
    cfg = data.config
    per_step = int(cfg.get("groups") or 1) * int(cfg.get("group_size") or 1)
    ev, wall = {"name": "best so far", "axis": "evaluations", "x": [], "y": [], "ylabel": "best score"}, \
        {"name": "best so far", "axis": "wall", "x": [], "y": [], "ylabel": "best score",
         "xlabel": "wall time (s, sum of step times)"}
    acc = 0.0
    for m in metrics:
        acc += float(_finite(m.get("perf/step_time_s")) or 0.0)
        y = _finite(m.get("score/best"))
        if y is None or not isinstance(m.get("step"), int):
            continue
        ev["x"].append(m["step"] * per_step)
        ev["y"].append(y)
        wall["x"].append(round(acc, 3))
        wall["y"].append(y)
    data.curves += [ev, wall]
    best = _read_json(run_dir / "best.json")
    if isinstance(best, dict) and isinstance(best.get("state"), dict):
        data.best = best["state"]
        data.summary["published record"] = (best.get("sota") or {}).get("value")
        verdict = _record_verdict(best, data.config)
        if verdict:
            data.summary["beats the record?"] = verdict
        data.summary["initial score"] = best.get("initial_score")
    data.summary["steps"] = len(metrics)
    data.summary["evaluations"] = len(metrics) * per_step


#: the note on a state the archive evicted (shown in the node's panel)
EVICTED = "evicted from the archive (its cap dropped this state later; the construction was not kept)"


def _evicted(sid: str, parents: list[str], judged: dict | None) -> Node:
    """A node for a state the train run's archive evicted: drawn with its judged score and validity
    from ``states.jsonl`` (written by the trainer), so a valid evicted state is not shown as invalid;
    without that record (runs before it existed) its score is unknown (``None``) and it is drawn as
    unscored, with the same note."""
    if judged is None:
        return Node(id=sid, parents=parents, score=None, reward=None, valid=False, error=EVICTED + "; score not recorded")
    step = judged.get("step")
    return Node(id=sid, parents=parents, score=_finite(judged.get("score")), reward=_finite(judged.get("reward")),
                valid=bool(judged.get("valid")), step=step if isinstance(step, int) else None, tail=EVICTED)


# ----------------------------------------------------------------------------- post-train
def _collect_post_train(run_dir: Path, data: RunData) -> None:
    rounds = _read_jsonl(run_dir / "rounds.jsonl")
    lane = 0
    best_nodes: list[Node] = []
    problems = list(data.config.get("problems") or [])
    for sub in sorted(p for p in (run_dir / "rounds").glob("*/*/*") if (p / "archive.jsonl").exists()):
        group = f"{sub.parent.parent.name}/{sub.parent.name}/{sub.name}"
        nodes = _search(sub, data, prefix=f"{group}:", lane0=lane, group=group)
        lanes = [n.lane for n in nodes if n.lane is not None]
        lane = (max(lanes) + 2) if lanes else lane
        if sub.parent.name == "search" and (not problems or sub.name == problems[0]):
            best_nodes += nodes
    best = _best_of(best_nodes)
    if best is not None:
        data.best = {"id": best.id, "score": best.score, "reward": best.reward, "valid": True,
                     **_state_of(run_dir, best)}
    columns = ["round", "problem", "train best reward", "held-out", "held-out best score", "SFT loss", "wall s"]
    rows = []
    for r in rounds:
        train_best = r.get("train_best_reward") or {}
        held = r.get("heldout") or {}
        for env in sorted(set(train_best) | set(held)) or [""]:
            h = held.get(env) or {}
            rows.append([r.get("round"), env if env in train_best else "", train_best.get(env),
                         env if env in held else "", h.get("best_score"), (r.get("sft") or {}).get("loss"),
                         r.get("wall_s")])
    data.tables.append({"title": "rounds (rounds.jsonl)", "columns": columns, "rows": rows})
    for env in problems:
        xs, ys = [], []
        for i, r in enumerate(rounds):
            v = _finite((r.get("train_best_reward") or {}).get(env))
            if v is not None:
                xs.append(i)
                ys.append(v)
        if xs:
            data.curves.append({"name": f"{env} train best reward", "axis": "round", "x": xs, "y": ys,
                                "ylabel": "value", "xlabel": "round (0 = base)"})
    for env in data.config.get("heldout") or []:
        xs, ys = [], []
        for i, r in enumerate(rounds):
            v = _finite(((r.get("heldout") or {}).get(env) or {}).get("best_score"))
            if v is not None:
                xs.append(i)
                ys.append(v)
        if xs:
            data.curves.append({"name": f"{env} held-out best score", "axis": "round", "x": xs, "y": ys,
                                "ylabel": "value", "xlabel": "round (0 = base)"})
    data.summary["rounds done"] = sum(1 for r in rounds if r.get("round") != "base")
    data.summary["evaluations"] = sum(1 for n in data.nodes if n.order is not None)


def _state_of(run_dir: Path, node: Node) -> dict:
    """The full state record (solution, code, metadata) of a post-train sub-run's node, or ``{}``."""
    group, _, sid = node.id.partition(":")
    try:
        records = RunLog(run_dir / "rounds" / group, create=False).read_records()
    except (OSError, ValueError):
        return {}
    for r in records:
        s = r.get("state")
        if isinstance(s, dict) and s.get("id") == sid:
            return {k: s.get(k) for k in ("solution", "code", "parent_ids", "error", "metadata")}
    return {}


def _collect_samples(run_dir: Path, data: RunData) -> None:
    """Add the LLM samples table: every response of ``samples.jsonl`` (an LLM run's, see
    :mod:`discoverygym.outcomes`) with its outcome, error and text, the newest :data:`MAX_SAMPLES`
    of them, each text cut to :data:`MAX_SAMPLE_TEXT` characters; and the ``outcomes.json`` counts
    as a summary line. No table for runs without the file (numeric policies)."""
    rows = _read_jsonl(run_dir / "samples.jsonl")
    if not rows:
        return
    stored = _read_json(run_dir / "outcomes.json")
    counts = stored.get("counts") if isinstance(stored, dict) else None
    listed = ", ".join(f"{k} {counts[k]}" for k in CATEGORIES
                       if isinstance(counts, dict) and type(counts.get(k)) is int and counts[k] > 0)
    if listed:
        data.summary["outcomes"] = listed
    shown = rows[-MAX_SAMPLES:]
    if len(rows) > len(shown):
        data.notes.append(f"the samples table shows the newest {len(shown)} of {len(rows)} responses "
                          f"(all are in {run_dir / 'samples.jsonl'})")

    def text(row: dict) -> str:
        t = row.get("text")
        if t is None:
            return ""
        t = t if isinstance(t, str) else json.dumps(t)
        return t if len(t) <= MAX_SAMPLE_TEXT else t[:MAX_SAMPLE_TEXT] + f"\n… ({len(t) - MAX_SAMPLE_TEXT} more characters)"

    columns = ["step", "group", "i", "outcome", "tokens", "finish", "score", "error", "response text"]
    data.tables.append({"title": "LLM samples (samples.jsonl)", "columns": columns, "rows": [
        [r.get("step"), r.get("group"), r.get("i"), r.get("outcome"), r.get("tokens"), r.get("finish_reason"),
         _finite(r.get("score")), r.get("parse_error") or r.get("error"), text(r)] for r in shown]})


# ----------------------------------------------------------------------------- entry
def collect(run_dir: str | os.PathLike) -> RunData:
    """Read ``run_dir`` (a search, train or post-train run, finished or still running) into :class:`RunData`.

    Raises:
        ValueError: ``run_dir`` holds no run of these kinds (the message says what it holds).
    """
    run_dir = Path(run_dir)
    kind = run_kind(run_dir)
    if kind not in ("search", "train", "post-train"):
        what = "does not exist" if not run_dir.exists() else ("holds no run" if kind is None else
                                                                "holds an unreadable or unknown config.json")
        raise ValueError(f"{run_dir} {what}: give a search, train or post-train run directory")
    config = _read_json(run_dir / CONFIG_FILE)
    config = config if isinstance(config, dict) else {}
    env_id = config.get("env_id") or (list(config.get("problems") or []) or [None])[0]
    data = RunData(kind=kind, run_dir=run_dir, env_id=env_id, config=config, usage=_read_usage(run_dir))
    {"search": _collect_search, "train": _collect_train, "post-train": _collect_post_train}[kind](run_dir, data)
    _collect_samples(run_dir, data)
    if data.best is not None:
        data.summary = {"best score": data.best.get("score"), **data.summary}
        text = data.best.get("code") or program_text(data.best)
        data.best_text = text[:MAX_BEST_TEXT] if text else None
    return data
