"""ScRNADenoising-v0: data loaders, baselines, the sandboxed program contract and hostile denoisers.

Real data only: scanpy's bundled pbmc68k_reduced (small subsets for the sandbox runs) and the
celltypist sample file when celltypist is installed. Skips cleanly without scanpy/scikit-learn.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

pytest.importorskip("scanpy")
pytest.importorskip("sklearn")

import gymnasium as gym

import discoverygym
from discoverygym.envs.denoising import baselines as B
from discoverygym.envs.denoising import load_split, make_denoising
from discoverygym.envs.denoising.data import load_counts
from discoverygym.rewards import denoising as D
from discoverygym.sandbox.python import bwrap_available

EXAMPLE = os.path.join(os.path.dirname(discoverygym.__file__), "examples", "denoise_diffusion.py")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("denoising-cache"))


@pytest.fixture(scope="module")
def small(cache):
    """A 100-cell x 150-gene subset of pbmc68k_reduced, short limits (sandbox tests: the env scores
    programs only under bubblewrap, so they skip where it cannot run)."""
    if not bwrap_available():
        pytest.skip("bubblewrap unavailable: ScRNADenoising-v0 scores programs only under it")
    return make_denoising("pbmc68k-reduced", n_cells=100, n_genes=150, cache_dir=cache, timeout_s=60.0)


def _judge(task, source, **env_kw):
    env = discoverygym.envs.program.ProgramEnv(task, **env_kw)
    return env.evaluate(source, seed=0)


def test_factory_is_cheap_and_checks_options(cache):
    before = load_split.cache_info().misses
    task = make_denoising("pbmc68k-reduced", cache_dir=cache + "/never-made")  # cheap: loads and writes nothing
    assert load_split.cache_info().misses == before and not os.path.exists(cache + "/never-made")
    assert "denoise(X_train" in task.prompt() and "numpy" in task.prompt()
    with pytest.raises(ValueError, match="unknown denoising dataset"):
        make_denoising("nope")
    with pytest.raises(ValueError, match="CPU"):
        make_denoising(device="cuda")
    with pytest.raises(TypeError):
        make_denoising(n_cases=3)


def test_offline_openproblems_dataset_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="tabula-lung.h5ad"):
        load_counts("tabula-lung", cache_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"pancreas\.h5ad"):
        load_counts("pancreas", cache_dir=tmp_path, download=False)


def test_pbmc68k_counts_are_integers_consistent_with_scanpy(cache):
    import scanpy as sc

    adata = load_counts("pbmc68k-reduced", cache_dir=cache)
    full = sc.datasets.pbmc68k_reduced()
    x = adata.X.toarray()
    assert np.array_equal(x, np.rint(x)) and (x >= 0).all()
    raw = full.raw.to_adata()[adata.obs_names, adata.var_names].X
    raw = raw.toarray() if hasattr(raw, "toarray") else raw
    # log1p(counts / n_counts * 1e4) gives back scanpy's stored values up to the rounding
    back = np.log1p(x / full.obs.loc[adata.obs_names, "n_counts"].to_numpy()[:, None] * 1e4)
    assert np.abs(back - raw).max() < 0.05
    hidden = make_denoising("pbmc68k-reduced", cache_dir=cache).hidden_paths()
    assert any(p.endswith("10x_pbmc68k_reduced.h5ad") for p in hidden)
    assert any(p.startswith(os.path.realpath(cache)) for p in hidden)


def test_celltypist_sample_read_without_importing_celltypist(cache):
    from importlib.util import find_spec

    wheel = os.environ.get("DISCOVERYGYM_CELLTYPIST_WHEEL")
    if find_spec("celltypist") is None and not (wheel and os.path.isfile(wheel)):
        pytest.skip("celltypist is neither installed nor given as a wheel")
    had = "celltypist" in sys.modules
    adata = load_counts("celltypist-pbmc", cache_dir=cache)
    assert ("celltypist" in sys.modules) == had
    assert adata.n_obs == 559 and adata.n_vars > 5000
    x = adata.X
    assert np.array_equal(x.data, np.rint(x.data)) and x.data.min() >= 1


def test_baselines_on_pbmc68k_magic_passes_the_gate(cache):
    data = load_split("pbmc68k-reduced", cache_dir=cache)
    rows = {r["name"]: r for r in make_denoising("pbmc68k-reduced", cache_dir=cache).baseline_table()}
    assert rows["no-denoising"]["mse_norm"] == 0.0 and rows["no-denoising"]["gate"] == "fail"
    assert rows["magic-reversed"]["poisson_norm"] >= D.POISSON_GATE
    assert rows["magic-reversed"]["mse_norm"] > 0
    out = B.magic_reversed(data.train, seed=0)
    assert out.shape == data.train.shape and (out >= 0).all()


def test_smoothing_baselines_on_identical_cells():
    """Identical cells are their own neighbours' average: kNN smoothing returns them unchanged; MAGIC
    reversed returns square(sqrt(x) / L) * L = x / L with L = sum(sqrt(x)) (OpenProblems v1 multiplies
    back by L, not L**2)."""
    row = np.array([0.0, 1.0, 4.0, 9.0, 2.0, 0.0, 7.0])
    x = np.tile(row, (30, 1))
    assert np.allclose(B.knn_smoothing(x, seed=0), x)
    assert np.allclose(B.magic_reversed(x, seed=0), x / np.sqrt(row).sum())


def test_magic_matches_magic_impute_when_installed(cache):
    magic = pytest.importorskip("magic")
    data = load_split("pbmc68k-reduced", n_cells=300, cache_dir=cache)
    x = np.sqrt(data.train)
    lib = x.sum(axis=1)
    ref = magic.MAGIC(solver="exact", verbose=False, random_state=0).fit_transform(x / lib[:, None],
                                                                                   genes="all_genes")
    ref = np.square(ref) * lib[:, None]
    ours = B.magic_reversed(data.train, seed=0)
    assert np.corrcoef(ref.ravel(), ours.ravel())[0, 1] > 0.999


def test_initial_state_and_example_program_in_the_sandbox(small):
    env = gym.make("ScRNADenoising-v0", dataset="pbmc68k-reduced", n_cells=100, n_genes=150,
                   cache_dir=small._split_args[5], timeout_s=60.0, render_mode="rgb_array")
    _, info = env.reset(seed=0)
    assert info["valid"], info["error"]
    assert info["metrics"]["gate"] == "pass"
    picture = env.render()
    assert picture.shape == (256, 256, 3) and picture.dtype == np.uint8 and (picture != 255).any()
    # held-out values never enter info (only the candidate's own values and indices do)
    assert "test" not in info["metrics"]["render"]
    assert set(info["metrics"]["render"]) == {"genes", "gene_index", "cells", "denoised"}
    with open(EXAMPLE) as fh:
        _, reward, _, _, info = env.step(fh.read())
    assert info["valid"], info["error"]
    assert reward == pytest.approx(min(1.0, max(0.0, info["metrics"]["mse_norm"])))
    rows = dict(env.unwrapped.task.report(info["state"]))
    assert rows["gate (normalised Poisson >= 0.97)"] == "pass"
    assert {"baseline magic-reversed", "baseline no-denoising", "baseline knn-smoothing"} <= set(rows)


def test_sandboxed_score_equals_parent_side_score(small):
    data = small.data()
    state = _judge(small, B.program_source("no-denoising").replace("return no_denoising(X_train, seed=seed)",
                                                                   "return X_train * 0.97 + 0.0"))
    # 0.97 * train: MSE is scale-free per cell, Poisson changes; judged identically in the parent
    expected = D.mse(data.test, data.train)
    assert state.metadata["mse"] == pytest.approx(expected, rel=1e-12)
    assert not state.valid and "below the gate" in state.error


@pytest.mark.parametrize(("body", "reason"), [
    ("return -X_train - 1.0", "negative"),
    ("return X_train * float('nan')", "not finite"),
    ("return X_train[:, :-1]", "shape"),
    ("return X_train.T", "shape"),
    ("return X_train * 1e12", "exceeds the total train count"),
    ("return X_train * 50.0", "below the gate"),
    ("return [['a'] * X_train.shape[1]] * X_train.shape[0]", "dtype"),
    ("raise RuntimeError('boom')", "RuntimeError: boom"),
    ("import time\n    time.sleep(100)", "timed out"),
])
def test_hostile_denoisers_fail_with_clear_reasons(small, body, reason):
    task = make_denoising("pbmc68k-reduced", n_cells=100, n_genes=150, cache_dir=small._split_args[5],
                          timeout_s=3.0)
    state = _judge(task, f"import numpy as np\n\ndef denoise(X_train, **kwargs):\n    {body}\n")
    assert not state.valid and state.reward == task.failure_reward
    assert reason in state.error, state.error


def test_program_without_denoise_or_with_syntax_error(small):
    state = _judge(small, "def construct():\n    return 1\n")
    assert not state.valid and "must define a function denoise" in state.error
    state = _judge(small, "def denoise(X_train:\n")
    assert not state.valid and "syntax error" in state.error


def test_test_split_is_not_reachable_from_memory(small):
    source = (
        "import os\n\n"
        "def denoise(X_train, **kwargs):\n"
        "    with open(f'/proc/{os.getppid()}/mem', 'rb') as fh:\n"
        "        fh.read(16)\n"
        "    return X_train\n"
    )
    state = _judge(small, source)
    assert not state.valid and "denoise failed" in state.error


def test_test_split_leaked_to_disk_is_refused(small, tmp_path):
    """Even if held-out counts sat in a readable file, returning them is refused (or unreadable)."""
    data = small.data()
    leak = tmp_path / "leak.npy"
    np.save(leak, data.test)
    source = f"import numpy as np\n\ndef denoise(X_train, **kwargs):\n    return np.load({str(leak)!r})\n"
    state = _judge(small, source)
    assert not state.valid
    assert "implausibly close to the held-out counts" in state.error or "No such file" in state.error


def test_program_receives_only_train_counts_and_budget(small):
    data = small.data()
    source = (
        "import numpy as np\n\n"
        "def denoise(X_train, seed, budget_s):\n"
        "    assert budget_s == 48.0, budget_s\n"
        f"    assert float(X_train.sum()) == {float(data.train.sum())!r}, X_train.sum()\n"
        "    return np.sqrt(X_train) + 0.0\n"
    )
    state = _judge(small, source)
    assert "AssertionError" not in (state.error or ""), state.error


@pytest.mark.parametrize("use_bwrap", [False, True])
def test_raw_data_files_are_hidden_from_candidates(cache, use_bwrap):
    """The files holding the full counts (full - X_train = test) cannot be read by a candidate."""
    if use_bwrap and not bwrap_available():
        pytest.skip("bubblewrap unavailable")
    task = make_denoising("pbmc68k-reduced", n_cells=100, n_genes=150, cache_dir=cache, timeout_s=60.0,
                          use_bwrap=use_bwrap, allow_unconfined=not use_bwrap)
    task.data()  # writes the cache file, one of the hidden paths
    hidden = task.hidden_paths()
    assert hidden and all(os.path.isfile(p) for p in hidden)
    for path in hidden:
        source = (f"def denoise(X_train, **kwargs):\n    open({path!r}, 'rb').read(64)\n"
                  "    return X_train\n")
        state = _judge(task, source)
        assert not state.valid and "hidden from programs" in state.error, state.error


@pytest.mark.parametrize("how", ["use_bwrap=False", "env"])
def test_refuses_to_score_without_bubblewrap_unless_opted_in(cache, monkeypatch, how):
    """Issue 14, item 4: without bubblewrap a C library could read the held-out counts, so scoring
    is refused (BackendUnavailable naming the opt-in) before anything runs, unless allow_unconfined."""
    from discoverygym.errors import BackendUnavailable

    options = {"use_bwrap": False} if how == "use_bwrap=False" else {}
    if how == "env":
        monkeypatch.setenv("DISCOVERYGYM_SANDBOX_NO_BWRAP", "1")
    before = load_split.cache_info().misses
    task = make_denoising("pbmc68k-reduced", n_cells=100, n_genes=150, cache_dir=cache + "/refused",
                          timeout_s=60.0, **options)
    with pytest.raises(BackendUnavailable, match="allow_unconfined=True") as info:
        _judge(task, B.program_source("no-denoising"), raise_unavailable=True)
    assert "\n" not in str(info.value)
    state = _judge(task, B.program_source("no-denoising"))  # the env's default: unscored, not raised
    assert state.unscored and not state.valid and "allow_unconfined=True" in state.error
    assert load_split.cache_info().misses == before  # refused before loading (or running) anything
    opted = make_denoising("pbmc68k-reduced", n_cells=100, n_genes=150, cache_dir=cache, timeout_s=60.0,
                           allow_unconfined=True, **options)
    state = _judge(opted, B.program_source("magic-reversed"))
    assert state.valid, state.error
    with pytest.raises(TypeError, match="allow_unconfined"):
        make_denoising("pbmc68k-reduced", allow_unconfined="yes")


@pytest.mark.parametrize("use_bwrap", [False, True])
def test_raw_data_files_are_hidden_through_aliases(cache, use_bwrap):
    """Issue 14, item 4: ``/proc/self/root/...`` and a symlinked directory (a venv's ``lib64``) name
    the hidden files under another text; reading through them is refused (or finds an empty file)."""
    import shutil
    import tempfile

    if use_bwrap and not bwrap_available():
        pytest.skip("bubblewrap unavailable")
    task = make_denoising("pbmc68k-reduced", n_cells=100, n_genes=150, cache_dir=cache, timeout_s=60.0,
                          use_bwrap=use_bwrap, allow_unconfined=not use_bwrap)
    task.data()
    path = os.path.realpath(task.hidden_paths()[0])
    alias_dir = tempfile.mkdtemp(dir="/var/tmp", prefix="dg-lib64-")
    try:
        alias = os.path.join(alias_dir, "lib64")
        os.symlink(os.path.dirname(path), alias)
        for route in ("/proc/self/root" + path, os.path.join(alias, os.path.basename(path))):
            source = ("import numpy as np\n\ndef denoise(X_train, **kwargs):\n"
                      f"    data = open({route!r}, 'rb').read()\n"
                      "    assert len(data) == 0, 'read the raw counts'\n"
                      "    return X_train\n")
            state = _judge(task, source)
            assert not state.valid and "read the raw counts" not in state.error, (route, state.error)
            if not use_bwrap:  # the audit hook's refusal (under bwrap the file is empty or absent)
                assert "hidden" in state.error or "/proc" in state.error, (route, state.error)
    finally:
        shutil.rmtree(alias_dir)
