"""``discoverygym search --ray-address`` on a real two-node Ray cluster (127.0.0.1, token authentication).

One test (about a minute: most of it is Ray starting its two nodes), skipped where ray is not
installed. Deselect it with ``-k 'not two_node'``. It checks, against a cluster started with
``ray start --head`` plus ``ray start --address`` (one CPU each, token authentication on with a
fresh token that only ``RAY_AUTH_TOKEN`` carries):

* without the token the search fails at once with one line that names the fix (and the token
  never appears in what it prints);
* with ``RAY_AUTH_TOKEN`` it runs, both nodes judged candidates (``metadata["ray_node"]`` of the
  logged evaluations), and the run equals the local process-pool run with the same seed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from discoverygym.search.evolution import load_snapshot
from discoverygym.search.runlog import RunLog

pytest.importorskip("ray", reason="ray is not installed (pip install 'discoverygym[ray]')")

from tests.search.ray_cluster import REPO, LocalRayCluster

ARGS = ["search", "CirclePacking-26-v0", "-C", "2", "-L", "6", "-K", "4", "--seed", "3", "--no-tensorboard"]


def _cli(argv: list[str], env: dict, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "discoverygym.cli", *argv], check=False, env=env,
                          cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def _client_env(**extra: str) -> dict:
    """This process's environment without any Ray token or address, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "RAY_ADDRESS"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def test_search_on_a_two_node_ray_cluster_with_token_auth(tmp_path):
    t0 = time.monotonic()
    local = _cli([*ARGS, "--workers", "2", "--run-dir", str(tmp_path / "local")], _client_env())
    assert local.returncode == 0, local.stderr[-3000:]

    with LocalRayCluster(nodes=2) as cluster:
        started = time.monotonic()
        # No token (HOME without ~/.ray/auth_token): one line naming the fix, fast, no traceback.
        denied = _cli([*ARGS, "--ray-address", cluster.address, "--run-dir", str(tmp_path / "denied")],
                      _client_env(HOME=str(tmp_path)), timeout=120)
        assert denied.returncode == 3, denied.stdout[-2000:] + denied.stderr[-3000:]
        (line,) = [x for x in denied.stderr.splitlines() if x.startswith("discoverygym search: unavailable")]
        assert "InvalidAuthToken" in line and "RAY_AUTH_TOKEN" in line and "every node" in line
        assert "Traceback" not in denied.stderr
        assert cluster.token not in denied.stdout + denied.stderr

        ok = _cli([*ARGS, "--ray-address", cluster.address, "--run-dir", str(tmp_path / "ray")],
                  _client_env(RAY_AUTH_TOKEN=cluster.token, HOME=str(tmp_path)))
        assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-3000:]
        assert cluster.token not in ok.stdout + ok.stderr
        in_cluster = time.monotonic() - started

    evals = [r for r in RunLog(tmp_path / "ray").read_records() if r["kind"] == "eval"]
    assert len(evals) == 2 * 6 * 4
    nodes = {r["state"]["metadata"].get("ray_node") for r in evals}
    assert None not in nodes and len(nodes) == 2, nodes  # both nodes judged candidates

    a, b = load_snapshot(tmp_path / "local"), load_snapshot(tmp_path / "ray")
    for x, y in zip(a["trajectories"], b["trajectories"], strict=True):
        assert x["archive"].states() == y["archive"].states()  # states compare without metadata
        assert x["archive"].to_dict()["lineage"] == y["archive"].to_dict()["lineage"]
        assert x["history"] == y["history"]
    assert a["best"]["id"] == b["best"]["id"] and a["best"]["score"] == b["best"]["score"]
    print(f"two-node Ray test: {time.monotonic() - t0:.1f} s in all, {in_cluster:.1f} s with the cluster up")
