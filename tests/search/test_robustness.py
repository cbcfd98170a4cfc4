"""Search runner robustness: no process outlives a killed search, and bad command lines are usage
errors (exit 2, a clear message, nothing started) instead of runs that fail late or never stop.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from discoverygym.cli import search as cli
from discoverygym.search.evolution import EvolutionarySearch, SearchConfig
from discoverygym.search.executors import EvalTask, EvaluatorSpec, LocalEvaluator

ENV = "CirclePacking-26-v0"
REPO = Path(__file__).resolve().parents[2]

linux_only = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc (Linux)")


# ----------------------------------------------------------------------------- no orphans
def _marked(marker: str) -> dict[int, str]:
    """pid -> command line of every process whose environment carries ``DG_TEST_MARKER=marker``."""
    needle = f"DG_TEST_MARKER={marker}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
        except OSError:  # gone, or not ours to read
            continue
    return found


def _start(argv: list[str], marker: str, **kw) -> subprocess.Popen:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "DG_TEST_MARKER": marker, "PYTHONPATH": path}  # this checkout's code
    return subprocess.Popen(argv, cwd=REPO, env=env, start_new_session=True, **kw)


def _assert_nothing_survives(proc: subprocess.Popen, marker: str, within_s: float = 60.0) -> None:
    """SIGKILL ``proc`` (only it) and check that every process it started is gone within ``within_s``."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + within_s
    left = _marked(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _marked(marker)
    for pid in left:  # clean up what this test started before failing
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"processes outlived the killed search: {left}"


@linux_only
def test_killed_cli_search_leaves_no_process_behind(tmp_path):
    marker = uuid.uuid4().hex
    run_dir = tmp_path / "run"
    # fmt: off
    argv = [sys.executable, "-m", "discoverygym.cli.search", ENV, "--policy", "mutation", "--selector", "rpucg",
            "-C", "4", "-L", "200", "-K", "4", "--workers", "2", "--no-tensorboard", "--run-dir", str(run_dir)]
    # fmt: on
    proc = _start(argv, marker, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = run_dir / "archive.jsonl"
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if log.exists() and log.read_bytes().count(b'"kind":"eval"') >= 20:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the search ended before it could be killed"
    assert len(_marked(marker)) >= 3  # the search, its 2 workers (and multiprocessing helpers)
    _assert_nothing_survives(proc, marker)


_POOL_SCRIPT = """
import sys, threading, time
from discoverygym.search.executors import EvalTask, EvaluatorSpec, LocalEvaluator

POOLS = []

def start():
    POOLS.append(LocalEvaluator(EvaluatorSpec("{env}"), workers=2, start_method={method!r}))
    POOLS[0].warm_up()
    print("ready", flush=True)

if __name__ == "__main__":
    t = threading.Thread(target=start)  # workers started by a thread that then ends
    t.start()
    t.join()
    time.sleep(600)
"""


@linux_only
@pytest.mark.parametrize("method", [None, "forkserver"])
def test_pool_workers_die_with_their_owner_whatever_thread_started_them(tmp_path, method):
    # PR_SET_PDEATHSIG is tied to the thread that started a worker, so workers started from a
    # thread rely on the watchdog; forkserver workers are not children of the owner at all.
    script = tmp_path / "pool_owner.py"
    script.write_text(textwrap.dedent(_POOL_SCRIPT.format(env=ENV, method=method)))
    marker = uuid.uuid4().hex
    proc = _start([sys.executable, str(script)], marker, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)  # the starting thread has ended: its workers must still be alive
        assert len(_marked(marker)) >= 3
    except BaseException:
        proc.kill()
        raise
    _assert_nothing_survives(proc, marker)


def test_pool_workers_outlive_the_thread_that_started_them():
    _, info = EvaluatorSpec(ENV).make().reset(seed=0)
    ev = LocalEvaluator(EvaluatorSpec(ENV), workers=1)
    try:
        t = threading.Thread(target=ev.warm_up)  # no death signal tied to this thread
        t.start()
        t.join()
        time.sleep(0.3)
        assert ev.submit(EvalTask(info["state"].solution, id="x")).result(timeout=30).state.valid
    finally:
        ev.close()


# ----------------------------------------------------------------------------- usage errors
def _cli(capsys, *argv: str) -> tuple[int, str]:
    try:
        rc = cli.main([ENV, "--no-tensorboard", "--executor", "inline", *argv])
    except SystemExit as exc:  # argparse
        rc = exc.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def test_resume_of_a_missing_or_empty_run_dir_is_a_usage_error(tmp_path, capsys):
    rc, err = _cli(capsys, "-L", "1", "--run-dir", str(tmp_path / "missing"), "--resume")
    assert rc == 2 and "does not exist" in err and "without --resume" in err
    assert not (tmp_path / "missing").exists()
    (tmp_path / "empty").mkdir()
    rc, err = _cli(capsys, "-L", "1", "--run-dir", str(tmp_path / "empty"), "--resume")
    assert rc == 2 and "holds no run" in err
    assert not any((tmp_path / "empty").iterdir())
    (tmp_path / "headless").mkdir()
    (tmp_path / "headless" / "archive.jsonl").write_text('{"kind": "init"}\n')
    rc, err = _cli(capsys, "-L", "1", "--run-dir", str(tmp_path / "headless"), "--resume")
    assert rc == 2 and "has a log but no config.json" in err
    with pytest.raises(ValueError, match="no such run directory"):
        EvolutionarySearch(SearchConfig(ENV, L=1), tmp_path / "missing", resume=True, tensorboard=False)
    with pytest.raises(ValueError, match="holds no run"):
        EvolutionarySearch(SearchConfig(ENV, L=1), tmp_path / "empty", resume=True, tensorboard=False)


@pytest.mark.parametrize("workers", ["0", "-2", "two"])
def test_non_positive_workers_is_a_usage_error(tmp_path, capsys, workers):
    rc, err = _cli(capsys, "-L", "1", "--run-dir", str(tmp_path / "w"), "--workers", workers)
    assert rc == 2 and "--workers" in err
    assert not (tmp_path / "w").exists()


def test_non_positive_workers_is_refused_by_the_library(tmp_path):
    with pytest.raises(ValueError, match="workers"):
        LocalEvaluator(EvaluatorSpec(ENV), workers=0)
    with pytest.raises(ValueError, match="workers"):
        EvolutionarySearch(SearchConfig(ENV, L=1), tmp_path / "w", workers=0, tensorboard=False)


def test_policy_without_the_action_mode_is_refused_up_front(tmp_path, capsys):
    rc, err = _cli(capsys, "--action-mode", "code", "--policy", "mutation", "--run-dir", str(tmp_path / "c"))
    assert rc == 2 and "action_mode='code'" in err and "'mutation'" in err
    assert not (tmp_path / "c").exists()

    class ConstructionOnly:
        name = "construction-only"
        action_modes = ("construction",)

        def sample(self, contexts, n, rng):
            raise AssertionError("never called")

    cfg = SearchConfig(ENV, policy="construction-only", L=1, action_mode="code")
    with pytest.raises(ValueError, match="cannot run with action_mode='code'"):
        EvolutionarySearch(cfg, tmp_path / "c", policy=ConstructionOnly(), tensorboard=False)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--selector-kwargs", '{"gamma": "x"}'], "'gamma' must be a number, got str 'x'"),
        (["--selector-kwargs", '{"gama": 0.5}'], "unknown argument 'gama'"),
        (["--selector", "puct", "--selector-kwargs", '{"counting": "both"}'], "'rollout' or 'parent'"),
        (
            ["--selector", "puct", "--selector-kwargs", '{"max_states": 10.5}'],
            "'max_states' must be an integer",
        ),
        (["--selector", "greedy", "--selector-kwargs", '{"gamma": 0.5}'], "unknown argument 'gamma'"),
        (["--selector-kwargs", "[1, 2]"], "selector_kwargs must be a JSON object"),
        (["--policy-kwargs", '{"sigma": "big"}'], "'sigma' must be a number"),
        (["--policy-kwargs", '{"sigma": true}'], "'sigma' must be a number"),
    ],
)
def test_bad_selector_or_policy_kwargs_are_usage_errors(tmp_path, capsys, flags, message):
    rc, err = _cli(capsys, "-L", "2", "--run-dir", str(tmp_path / "k"), *flags)
    assert rc == 2 and message in err
    assert not (tmp_path / "k").exists()  # refused before anything ran


def test_good_kwargs_pass_validation():
    SearchConfig(
        ENV, selector="rpucg", selector_kwargs={"gamma": 1, "restart_every": None, "form": "paper"}
    ).validate()
    SearchConfig(ENV, selector="puct", selector_kwargs={"c": 2.0, "max_states": None}).validate()
    SearchConfig(ENV, policy_kwargs={"sigma": 0.1, "fraction": 1}).validate()
    with pytest.raises(ValueError, match="'gamma' must be a number"):
        SearchConfig(ENV, selector_kwargs={"gamma": "x"}).validate()


@pytest.mark.parametrize("where", ["/proc/x", "file/x", "file"])
def test_unusable_run_dir_is_a_clean_usage_error(tmp_path, capsys, where):
    (tmp_path / "file").write_text("")
    run_dir = where if where.startswith("/") else str(tmp_path / where)
    rc, err = _cli(capsys, "-L", "1", "--run-dir", run_dir)
    assert rc == 2 and err.startswith("discoverygym search: error: cannot create the run directory")
    assert run_dir in err


@pytest.mark.parametrize("last_line", [b'["not", "a", "record"]\n', b'{"kind": "eval", "traj": 0}\n',
                                       b'{"kind": "eval", "traj": 0, "step": 0, "k": 0, "state": {}}\n',
                                       b'\xff\xfe\xfd\n', b"[" * 100_000 + b"\n"])
def test_resume_with_a_corrupt_last_log_line_names_the_file_and_line(tmp_path, capsys, last_line):
    """Issue 14, item 6: a complete last line of valid JSON of the wrong shape, or non-UTF-8, crashed
    the resume without naming the file; a torn line (no newline) is still truncated silently."""
    run = tmp_path / "run"
    assert _cli(capsys, "-C", "1", "-L", "1", "-K", "2", "--run-dir", str(run))[0] == 0
    log = run / "archive.jsonl"
    lines = len(log.read_bytes().splitlines())
    with open(log, "ab") as fh:
        fh.write(last_line)
    rc, err = _cli(capsys, "--run-dir", str(run), "--resume")
    assert rc in (1, 2) and f"archive.jsonl:{lines + 1} is corrupt" in err, err
    log.write_bytes(log.read_bytes()[: -len(last_line)] + last_line.rstrip(b"\n"))  # torn: no newline
    rc, err = _cli(capsys, "--run-dir", str(run), "--resume")
    assert rc == 0, err
