"""A throw-away multi-node Ray cluster on this machine for tests (``ray start --head`` + ``--address``).

Every node is a ``ray start --block`` child of the test, started in its own session, with its own
``--temp-dir`` and free ports, and token authentication on with a fresh token (passed through
``RAY_AUTH_TOKEN``; ``HOME`` points into the cluster's temp dir, so nothing under the user's ``~/.ray``
is read or written: issue 52 found ``~/.ray/auth_token`` left at mode 0644 after the suite). :meth:`LocalRayCluster.stop`
ends only what this cluster started: the process group of each ``ray start`` and then any process
left whose command line names this cluster's temp dir, by pid. It never runs ``ray stop``, which
kills every Ray process of the user (other tests' clusters included).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RAY_CLI = Path(sys.executable).with_name("ray")


def free_port() -> int:
    """A TCP port nobody listens on right now (127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pids_naming(text: str) -> list[int]:
    """Pids of this user's processes whose command line contains ``text``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            pids.append(int(entry.name))
    return pids


class LocalRayCluster:
    """``nodes`` Ray nodes on this machine, one CPU each; node ``i`` > 0 carries resource ``node{i+1}``.

    Attributes:
        address: the head's GCS address (``127.0.0.1:PORT``), what ``--ray-address`` takes.
        token: the cluster's authentication token (give it to clients as ``RAY_AUTH_TOKEN``).
        env: the environment the nodes run with (``PYTHONPATH`` = this checkout: discoverygym is
            "installed" on every node).
    """

    def __init__(self, nodes: int = 2, start_timeout_s: float = 90.0) -> None:
        self.temp_dir = tempfile.mkdtemp(prefix="dgray")  # short: Ray's socket paths must fit 107 bytes
        self.token = secrets.token_hex(32)
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": self.token,
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
            "RAY_USAGE_STATS_ENABLED": "0",
            "HOME": self.temp_dir,  # Ray's state and token files stay in the temp dir (issue 52)
        }
        self.env.pop("RAY_AUTH_TOKEN_PATH", None)  # the token is the environment's, never a file's
        self.env.pop("RAY_ADDRESS", None)
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        try:
            for i in range(nodes):
                self._start_node(i, start_timeout_s)
        except BaseException:
            self.stop()
            raise

    def _node_args(self, i: int) -> list[str]:
        ports = {
            "--node-manager-port": free_port(),
            "--object-manager-port": free_port(),
            "--dashboard-agent-listen-port": free_port(),
            "--dashboard-agent-grpc-port": free_port(),
            "--runtime-env-agent-port": free_port(),
            "--metrics-export-port": free_port(),
        }
        args = [str(RAY_CLI), "start", "--block", "--num-cpus=1", "--num-gpus=0",
                "--node-ip-address=127.0.0.1", f"--temp-dir={self.temp_dir}", "--disable-usage-stats"]
        args += [f"{k}={v}" for k, v in ports.items()]
        if i == 0:
            args += ["--head", f"--port={self.port}", "--include-dashboard=false",
                     f"--ray-client-server-port={free_port()}"]
        else:
            args += [f"--address={self.address}", f"--resources={json.dumps({f'node{i + 1}': 1})}"]
        return args

    def _start_node(self, i: int, timeout_s: float) -> None:
        log = Path(self.temp_dir) / f"ray-start-{i}.log"
        self.logs.append(log)
        with open(log, "wb") as fh:
            proc = subprocess.Popen(self._node_args(i), env=self.env, stdout=fh, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(proc)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if "will now block forever" in log.read_text(errors="replace"):
                return
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"ray node {i} did not start (rc={proc.poll()}):\n{tail}")

    def stop(self) -> None:
        """End every process this cluster started (and only those), then remove its temp dir."""
        for proc in self.procs:  # ``ray start --block`` shuts its node down on SIGTERM
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for attempt in range(50):
            left = [p for proc in self.procs for p in _pgroup(proc.pid)] + _pids_naming(self.temp_dir)
            if not left:
                break
            for pid in set(left):
                try:
                    os.kill(pid, signal.SIGTERM if attempt < 10 else signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:  # noqa: PYI034 - a test helper, never subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _pgroup(pgid: int) -> list[int]:
    """Live pids in process group ``pgid`` (zombies excluded)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            pids.append(int(entry.name))
    return pids
