"""The data of the scaling-law discovery tasks (SLDBench) and their train / validation / test splits.

Source: SLDBench, "Can Language Models Discover Scaling Laws?" (Lin et al., 2025), repository
linhaowei1/SLD at commit 61c9d59, ``data/`` (MIT licence; the files are shipped unchanged under
``discoverygym/data/sld/`` with the licence notice). Features, labels, groups and the train/test
split of each task follow that commit's ``data/*_loader.py`` rules (stated per task in
:data:`TASKS`; test = an extrapolation region).

**Validation split.** ``validation`` is carved deterministically from ``train`` by the task's
extrapolation rule applied once more to the train points (the largest remaining value of the
quantity the test split extrapolates in, e.g. the largest remaining vocabulary size); the
remaining train points are ``fit``. The program is fitted on ``fit`` to score ``validation`` and
on the whole ``train`` to score ``test``; it never sees the labels of the split it is scored on.

**Hub-only tasks.** ``parallel`` and ``u_shape`` (SLDBench's ``parallel_scaling_law`` and
``easy_question_scaling_law``) exist only on the Hugging Face hub (dataset ``pkuHaowei/sldbench``).
They are downloaded once, when online, as the hub's parquet export into the cache directory
(``cache_dir=``, else ``$DISCOVERYGYM_CACHE/sld``, else ``~/.cache/discoverygym/sld``); offline a
:class:`FileNotFoundError` names the file to place there by hand (parquet, or CSV with the same
columns). Their splits are the hub's ``train`` / ``test``; their validation rule (largest
remaining value of the first feature per group) is ours: the hub does not state its test rule.
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = ["HUB_REPO", "TASKS", "Group", "SLDData", "TaskInfo", "cache_directory", "load_task"]

#: Hugging Face dataset holding SLDBench's hub-only tasks.
HUB_REPO = "pkuHaowei/sldbench"
_HUB_PARQUET_API = "https://huggingface.co/api/datasets/{repo}/parquet/{config}/{split}"


@dataclass(frozen=True)
class Group:
    """The points of one group (fitted with its own parameters).

    Attributes:
        name: group label (``"all"`` for single-group tasks, ``"70M"``, ``"flan/MBZUAI/LaMini-GPT-124M"``).
        X: float64 ``(n, n_features)``.
        y: float64 ``(n, n_targets)`` (one column for scalar tasks).
    """

    name: str
    X: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class SLDData:
    """The four splits of one task (lists of groups; a group absent from a split is left out).

    Attributes:
        train: SLDBench's train split (what the program is fitted on to score ``test``).
        test: SLDBench's held-out extrapolation split.
        fit: ``train`` minus ``validation`` (what the program is fitted on to score ``validation``).
        validation: carved from ``train`` by the task's validation rule.
    """

    train: tuple[Group, ...]
    test: tuple[Group, ...]
    fit: tuple[Group, ...]
    validation: tuple[Group, ...]


@dataclass(frozen=True)
class TaskInfo:
    """What one scaling-law task is (static facts; the data are loaded by :func:`load_task`).

    Attributes:
        key: short name (``"vocab"``); env id ``ScalingLaw-<Camel>-v0``.
        sld_name: SLDBench's task name (``"vocab_scaling_law"``).
        features: column meaning of X, in order.
        targets: what y holds (one entry per output dimension).
        cap: most fitted parameters allowed per group.
        cap_source: where the cap comes from.
        test_rule: SLDBench's test split, in words.
        validation_rule: how ``validation`` is carved from ``train``, in words.
        grouped: what a group is ("" for single-group tasks).
        hub: the data are downloaded from the hub (not shipped).
    """

    key: str
    sld_name: str
    features: tuple[str, ...]
    targets: tuple[str, ...]
    cap: int
    cap_source: str
    test_rule: str
    validation_rule: str
    grouped: str = ""
    hub: bool = False


_SLD_CAP = "SLDBench's prompt (configs/{}.yaml): 'no more than {} parameters'"
TASKS: dict[str, TaskInfo] = {
    "data_constrained": TaskInfo(
        "data_constrained", "data_constrained_scaling_law", ("tokens", "params", "unique_tokens"), ("loss",), 7,
        _SLD_CAP.format("data_constrained_scaling_law", 7),
        "unique_tokens >= its 2nd-largest value OR params >= its 2nd-largest value",
        "the same rule on the train points: unique_tokens >= the 2nd-largest remaining value OR params >= the "
        "2nd-largest remaining value"),
    "lr_bsz": TaskInfo(
        "lr_bsz", "lr_bsz_scaling_law", ("lr", "bsz", "data_size", "non_embedding_params"), ("smooth loss",), 11,
        "ours: SLDBench lets the program choose the count; 11 is the count of the Step-Law-style human law",
        "data_size == max AND non_embedding_params == max (rows with smooth loss <= 4.0)",
        "the train points with the largest non_embedding_params, at its largest data_size"),
    "domain_mixture": TaskInfo(
        "domain_mixture", "domain_mixture_scaling_law", tuple(f"proportion_domain_{i}" for i in range(1, 6)),
        tuple(f"loss_domain_{i}" for i in range(1, 6)), 35, _SLD_CAP.format("domain_mixture_scaling_law", 35),
        "the file's 'eval' mixtures of each model size (model size 1B skipped)",
        "the last quarter (rounded up) of each model size's 'train' mixtures, in file order", grouped="model size"),
    "rectified": TaskInfo(
        "rectified", "rectified_scaling_law", ("data_size",), ("loss",), 4,
        "SLDBench's prompt (configs/rectified_scaling_law.yaml at bf7e8e3): 'no more than 4 parameters'",
        "the point at data size 819200 of each (dataset, model) group; groups need >= 4 train points",
        "the largest remaining data size (409600) of each group", grouped="(dataset, model)"),
    "vocab": TaskInfo(
        "vocab", "vocab_scaling_law", ("non_vocab_parameters", "vocab_size", "num_characters"), ("Lossu",), 7,
        _SLD_CAP.format("vocab_scaling_law", 7), "vocab_size == max", "vocab_size == the largest remaining value"),
    "moe": TaskInfo(
        "moe", "moe_scaling_law", ("num_experts", "dense_parameter_count"), ("loss_validation",), 6,
        _SLD_CAP.format("moe_scaling_law", 6), "dense_parameter_count == max (rows with step == 249000)",
        "dense_parameter_count == the largest remaining value"),
    "parallel": TaskInfo(
        "parallel", "parallel_scaling_law", ("num_params", "parallel_size"), ("loss",), 4,
        _SLD_CAP.format("parallel_scaling_law", 4), "the hub's test split",
        "num_params == the largest train value of each group (ours)", grouped="corpus (pile, stack)", hub=True),
    "u_shape": TaskInfo(
        "u_shape", "easy_question_scaling_law", ("log_flops",), ("brier_score",), 6,
        _SLD_CAP.format("easy_question_scaling_law", 6), "the hub's test split",
        "log_flops == the largest train value of each group (ours)", grouped="the hub's group column", hub=True),
}


def _data_dir() -> Path:
    return Path(str(resources.files("discoverygym") / "data" / "sld"))


def _col(values) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64)
    return out.reshape(-1, 1) if out.ndim == 1 else out


def _pandas():
    import pandas as pd

    return pd


# ---------------------------------------------------------------------------- shipped tasks
def _data_constrained() -> tuple[list[Group], list[Group]]:
    df = _pandas().read_csv(_data_dir() / "data_constrained_scaling_law" / "data.csv")
    X, y = df[["tokens", "params", "unique_tokens"]].to_numpy(np.float64), _col(df["loss"])
    test = _second_largest_rule(X[:, 2], X[:, 1])
    return [Group("all", X[~test], y[~test])], [Group("all", X[test], y[test])]


def _second_largest_rule(unique_tokens: np.ndarray, params: np.ndarray) -> np.ndarray:
    """SLDBench's data-constrained extrapolation mask: either quantity >= its 2nd-largest distinct value."""
    u2, p2 = np.unique(unique_tokens)[-2], np.unique(params)[-2]
    return (unique_tokens >= u2) | (params >= p2)


def _lr_bsz() -> tuple[list[Group], list[Group]]:
    df = _pandas().read_csv(_data_dir() / "lr_scaling_law" / "dense_lr_bs_loss.csv")
    df = df[df["smooth loss"] <= 4.0]
    X, y = df[["lr", "bs", "D", "N"]].to_numpy(np.float64), _col(df["smooth loss"])
    test = (X[:, 2] == X[:, 2].max()) & (X[:, 3] == X[:, 3].max())
    return [Group("all", X[~test], y[~test])], [Group("all", X[test], y[test])]


def _domain_mixture() -> tuple[list[Group], list[Group]]:
    raw = json.loads((_data_dir() / "domain_mixture_scaling_law" / "all_models_data.json").read_text())
    train, test = [], []
    for size, record in raw.items():
        if size == "1B":  # SLDBench skips it
            continue
        for split, out in (("train", train), ("eval", test)):
            points = record.get(split) or []
            if points:
                out.append(Group(size, _col([p["proportions"] for p in points]), _col([p["loss"] for p in points])))
    return train, test


def _rectified() -> tuple[list[Group], list[Group]]:
    pd, train, test = _pandas(), [], []
    for dataset in ("flan", "gigaword", "wikiword"):
        df = pd.read_csv(_data_dir() / "rectified_scaling_law" / f"{dataset}.csv")
        columns = df.columns[2:]  # column 1 (data size 0) is skipped, as in SLDBench
        sizes = np.array([float(c) for c in columns])
        for _, row in df.iterrows():
            loss = pd.to_numeric(row[columns], errors="coerce").to_numpy(np.float64)
            keep = ~np.isnan(loss) & (loss > 0)
            s, v = sizes[keep], loss[keep]
            is_test = s == 819200
            if np.sum(~is_test) < 4:  # SLDBench: a group needs >= 4 train points (and is then tested)
                continue
            name = f"{dataset}/{row[df.columns[0]]}"
            train.append(Group(name, _col(s[~is_test]), _col(v[~is_test])))
            if is_test.any():
                test.append(Group(name, _col(s[is_test]), _col(v[is_test])))
    return train, test


def _vocab() -> tuple[list[Group], list[Group]]:
    df = _pandas().read_csv(_data_dir() / "vocab_scaling_law" / "data.csv")
    X = df[["Non_vocab_parameters", "vocab_size", "num_characters"]].to_numpy(np.float64)
    y = _col(df["Lossu"])
    test = X[:, 1] == X[:, 1].max()
    return [Group("all", X[~test], y[~test])], [Group("all", X[test], y[test])]


def _moe() -> tuple[list[Group], list[Group]]:
    df = _pandas().read_csv(_data_dir() / "moe_scaling_law" / "data.csv")
    df = df[df["step"] == 249000]
    X, y = df[["num_experts", "dense_parameter_count"]].to_numpy(np.float64), _col(df["loss_validation"])
    test = X[:, 1] == X[:, 1].max()
    return [Group("all", X[~test], y[~test])], [Group("all", X[test], y[test])]


# ---------------------------------------------------------------------------- validation rules
def _max_of(column: int) -> Callable[[Group], np.ndarray]:
    return lambda g: g.X[:, column] == g.X[:, column].max()


def _lr_bsz_validation(g: Group) -> np.ndarray:
    n = g.X[:, 3] == g.X[:, 3].max()
    return n & (g.X[:, 2] == g.X[n, 2].max())


def _last_quarter(g: Group) -> np.ndarray:
    mask = np.zeros(len(g.y), dtype=bool)
    mask[len(g.y) - -(-len(g.y) // 4):] = True
    return mask


_VALIDATION: dict[str, Callable[[Group], np.ndarray]] = {
    "data_constrained": lambda g: _second_largest_rule(g.X[:, 2], g.X[:, 1]),
    "lr_bsz": _lr_bsz_validation,
    "domain_mixture": _last_quarter,
    "rectified": _max_of(0),
    "vocab": _max_of(1),
    "moe": _max_of(1),
    "parallel": _max_of(0),
    "u_shape": _max_of(0),
}
_LOADERS = {"data_constrained": _data_constrained, "lr_bsz": _lr_bsz, "domain_mixture": _domain_mixture,
            "rectified": _rectified, "vocab": _vocab, "moe": _moe}


# ---------------------------------------------------------------------------- hub tasks
def cache_directory(cache_dir: str | os.PathLike | None = None) -> Path:
    """Where hub-only task files are cached (not created here)."""
    if cache_dir is not None:
        return Path(cache_dir)
    root = os.environ.get("DISCOVERYGYM_CACHE")
    return Path(root) / "sld" if root else Path.home() / ".cache" / "discoverygym" / "sld"


def _hub_frame(info: TaskInfo, split: str, cache: Path, download: bool):
    """The hub's ``split`` of a task as a DataFrame (cached file, else downloaded once)."""
    pd = _pandas()
    parquet, csv = cache / f"{info.sld_name}-{split}.parquet", cache / f"{info.sld_name}-{split}.csv"
    if csv.is_file():
        return pd.read_csv(csv)
    if not parquet.is_file():
        api = _HUB_PARQUET_API.format(repo=HUB_REPO, config=info.sld_name, split=split)
        hint = (f"save the {split} split of config {info.sld_name!r} of the Hugging Face dataset {HUB_REPO} as "
                f"{parquet} (or as CSV at {csv}, columns group, {', '.join(info.features)}, {info.targets[0]}); "
                "or pass cache_dir= / set DISCOVERYGYM_CACHE")
        if not download:
            raise FileNotFoundError(f"SLDBench task {info.key!r} is not cached: {hint}")
        try:
            _download_parquet(api, parquet)
        except (OSError, ValueError, KeyError, IndexError) as exc:  # URLError is an OSError
            raise FileNotFoundError(f"SLDBench task {info.key!r} is only on the hub and downloading it from {api} "
                                    f"failed ({exc}); {hint}") from None
    return pd.read_parquet(parquet)


def _download_parquet(api: str, path: Path) -> None:
    """Ask the hub for the parquet export's URL, then write the first file atomically to ``path``."""
    with urllib.request.urlopen(api, timeout=60) as response:
        urls = json.loads(response.read().decode("utf-8"))
    if not isinstance(urls, list) or not urls or not isinstance(urls[0], str):
        raise ValueError(f"unexpected answer from the hub: {str(urls)[:200]}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(urls[0], timeout=60) as response:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
        with os.fdopen(fd, "wb") as fh:
            while chunk := response.read(1 << 20):
                fh.write(chunk)
    os.replace(tmp, path)


def _hub_groups(info: TaskInfo, frame) -> list[Group]:
    missing = [c for c in ("group", *info.features, *info.targets) if c not in frame.columns]
    if missing:
        raise ValueError(f"the {info.key} file lacks column(s) {missing}; it has {list(frame.columns)}")
    return [Group(str(name), part[list(info.features)].to_numpy(np.float64), _col(part[list(info.targets)]))
            for name, part in sorted(frame.groupby("group"), key=lambda kv: str(kv[0]))]


def _hub(info: TaskInfo, cache_dir, download: bool) -> tuple[list[Group], list[Group]]:
    cache = cache_directory(cache_dir)
    return (_hub_groups(info, _hub_frame(info, "train", cache, download)),
            _hub_groups(info, _hub_frame(info, "test", cache, download)))


# ---------------------------------------------------------------------------- public loader
def _carve(train: list[Group], rule: Callable[[Group], np.ndarray]) -> tuple[list[Group], list[Group]]:
    fit, validation = [], []
    for g in train:
        mask = rule(g)
        if mask.any():
            validation.append(Group(g.name, g.X[mask], g.y[mask]))
        if (~mask).any():
            fit.append(Group(g.name, g.X[~mask], g.y[~mask]))
    return fit, validation


@lru_cache(maxsize=16)
def load_task(key: str, cache_dir: str | None = None, download: bool = True) -> SLDData:
    """Load one task's splits (cached per process).

    Args:
        key: a key of :data:`TASKS`.
        cache_dir: cache of the hub-only tasks (see :func:`cache_directory`); unused otherwise.
        download: allow downloading a hub-only task that is not cached.

    Returns:
        :class:`SLDData`; a group of ``validation`` / ``test`` is scored only when ``fit`` /
        ``train`` has the same group (SLDBench skips test groups without parameters).

    Raises:
        ValueError: unknown key, or a hub file without the expected columns.
        FileNotFoundError: a hub-only task is not cached and cannot be downloaded (the message
            says which file to place where).
    """
    if key not in TASKS:
        raise ValueError(f"unknown scaling-law task {key!r}; known: {', '.join(TASKS)}")
    info = TASKS[key]
    train, test = _hub(info, cache_dir, download) if info.hub else _LOADERS[key]()
    fit, validation = _carve(train, _VALIDATION[key])
    names, fit_names = {g.name for g in train}, {g.name for g in fit}
    return SLDData(tuple(train), tuple(g for g in test if g.name in names), tuple(fit),
                   tuple(g for g in validation if g.name in fit_names))

