"""The Python sandbox's kernel layers on their own: seccomp, Landlock, C code that writes without audit events.

Each behaviour test runs on both backends (see ``support.py``).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap
import uuid

import pytest

from discoverygym.sandbox import _runner as runner
from discoverygym.sandbox import probes
from discoverygym.sandbox import python as sandbox
from discoverygym.sandbox.python import SandboxLimits, bwrap_available, run_program
from tests.sandbox.support import (
    LANDLOCK,
    REPO,
    assert_failed,
    snapshot,
)


def test_kernel_layers_are_active(run):
    source = """
        def construct():
            status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
            return {key: status[key].strip() for key in ("CapEff", "CapPrm", "NoNewPrivs", "Seccomp")}
    """
    value = run(source).value
    assert value["CapEff"] == value["CapPrm"] == "0000000000000000"
    assert value["NoNewPrivs"] == "1"
    if platform.machine() in runner._ARCHES:
        assert value["Seccomp"] == "2"  # filter mode


def test_pipes_work_and_sqlite_in_private_directory(run, use_bwrap):
    source = """
        import os
        def construct():
            r, w = os.pipe()
            with os.fdopen(w, "w") as fh:
                fh.write("through a pipe")
            import sqlite3
            db = sqlite3.connect("local.db")
            db.execute("create table t (x)")
            db.execute("insert into t values (1.5)")
            return [os.read(r, 100).decode(), db.execute("select x from t").fetchone()[0]]
    """
    if use_bwrap or LANDLOCK:
        assert run(source).value == ["through a pipe", 1.5]
    else:  # sqlite's ATTACH could write anywhere: refused where no kernel layer confines writes
        assert_failed(run(source), "ImportError: sandbox: module _sqlite3 is disabled")


UNAUDITED_WRITES = """
import importlib.util, os, sys
LOADED_BEFORE = set(sys.modules)
import discoverygym  # gymnasium imports multiprocessing.synchronize, so _multiprocessing

def attempt(fn):
    try:
        fn()
        return "succeeded"
    except BaseException as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"

def spoofed(name, alias):  # the extension module loaded from its file under another name
    found = importlib.util.find_spec(name)
    if found is None:
        raise ImportError(f"sandbox: module {name} is disabled (absent from this Python anyway)")
    spec = importlib.util.spec_from_file_location(alias, found.origin)
    return importlib.util.module_from_spec(spec)

def history(module, path):
    module.add_history("x = 1")
    module.write_history_file(path)

def append_history(path):
    import readline
    readline.add_history("appended")
    readline.append_history_file(1, path)

def sql(database, statement):
    import sqlite3
    sqlite3.connect(database).execute(statement)

def tcl(path):
    import _tkinter
    _tkinter.create(None, "x", "Tk", 0, 0, 0, 0, None).eval(f"set f [open {path} w]; puts $f x; close $f")

def sub_interpreter(path):
    import _testcapi
    _testcapi.run_in_subinterp(f"open({path!r}, 'w').write('x')")

def construct(out, victim, shm, blocked, seccomp):
    preloaded = sorted(name for name in blocked if name in LOADED_BEFORE)
    attempts = {
        "readline_write": lambda: history(__import__("readline"), os.path.join(out, "h1")),
        "readline_append": lambda: append_history(victim),
        "readline_spoofed": lambda: history(spoofed("readline", "x.readline"), os.path.join(out, "h2")),
        "sqlite_attach": lambda: sql(":memory:", f"ATTACH DATABASE '{out}/a.db' AS a"),
        "sqlite_vacuum_into": lambda: sql("local.db", f"VACUUM INTO '{out}/v.db'"),
        "shm_open": lambda: __import__("_posixshmem").shm_open(shm, os.O_CREAT | os.O_RDWR, 0o600),
        "sem_unlink": lambda: __import__("_multiprocessing").sem_unlink("/discoverygym-none"),
        "sem_unlink_fresh_copy": lambda: spoofed("_multiprocessing", "x._multiprocessing").sem_unlink(
            "/discoverygym-none"),
        "dbm": lambda: __import__("dbm.ndbm").ndbm.open(os.path.join(out, "db"), "c"),
        "gdbm": lambda: __import__("dbm.gnu").gnu.open(os.path.join(out, "gdb"), "c"),
        "tcl": lambda: tcl(os.path.join(out, "tcl.txt")),
        "curses": lambda: __import__("_curses"),
        "sub_interpreter": lambda: sub_interpreter(os.path.join(out, "sub.txt")),
        "sub_interpreters": lambda: __import__("_xxsubinterpreters").create(),
        "syslog": lambda: __import__("syslog").syslog("discoverygym sandbox test"),
    }
    if seccomp:  # no audit event: only the seccomp filter (x86_64, aarch64) stops these
        attempts["mkfifo"] = lambda: os.mkfifo(os.path.join(out, "fifo"))
        attempts["mknod"] = lambda: os.mknod(os.path.join(out, "node"))
    return {"preloaded": preloaded, **{name: attempt(fn) for name, fn in attempts.items()}}
"""


@pytest.mark.parametrize("backend, landlock", [
    pytest.param(False, False, id="fallback-without-landlock"),
    pytest.param(False, True, id="fallback"),
    pytest.param(True, False, id="bwrap-without-landlock",
                 marks=pytest.mark.skipif(not bwrap_available(), reason="bubblewrap unavailable")),
])
def test_c_code_writing_files_without_audit_events_changes_nothing(monkeypatch, tmp_path, backend,
                                                                   landlock):
    """readline, sqlite's ATTACH, shared memory, Tcl, sub-interpreters... write outside unaudited.

    Without bubblewrap and Landlock (simulated with DISCOVERYGYM_SANDBOX_NO_LANDLOCK) the audit
    hook is all there is, so it must refuse each of them itself; elsewhere the kernel layers may
    answer first. Either way nothing outside the private directory changes.
    """
    if not landlock:
        monkeypatch.setenv(sandbox.NO_LANDLOCK_ENV, "1")
    weakest = not backend and not (landlock and LANDLOCK)
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    shm = f"/discoverygym-test-{uuid.uuid4().hex}"
    blocked = sorted(runner._UNAUDITED_MODULES | runner._UNCONFINED_MODULES)
    before = snapshot(tmp_path)
    try:
        kwargs = {"out": str(out), "victim": str(victim), "shm": shm, "blocked": blocked,
                  "seccomp": platform.machine() in runner._ARCHES}
        result = run_program(UNAUDITED_WRITES, kwargs=kwargs,
                             limits=SandboxLimits(use_bwrap=backend, timeout_s=20))
        assert result.ok, result.error
        outcome = result.value
        # a module loaded before the hook could be had again without an audit event (only
        # _multiprocessing is, disarmed, where nothing else confines file changes)
        assert outcome.pop("preloaded") == (["_multiprocessing"] if weakest else [])
        assert snapshot(tmp_path) == before, outcome
        assert not os.path.exists("/dev/shm" + shm), outcome
    finally:
        if os.path.exists("/dev/shm" + shm):
            os.unlink("/dev/shm" + shm)
    private_shm = backend  # bubblewrap's /dev, /dev/shm included, is private to the run
    assert "succeeded" not in {k: v for k, v in outcome.items()
                               if not (k == "shm_open" and private_shm)}.values(), outcome
    for name in ("readline_write", "readline_append", "readline_spoofed"):
        assert outcome[name].startswith("ImportError: sandbox: module readline is disabled"), outcome
    assert outcome["sub_interpreter"].startswith("ImportError: sandbox: module _testcapi is disabled")
    assert outcome["syslog"] == "PermissionError: sandbox: network access is disabled (syslog.syslog)"
    if weakest:  # no bwrap, no Landlock: the sandbox's own checks refuse everything
        for name, text in outcome.items():
            refused = text.startswith(("ImportError: sandbox: module ", "PermissionError: sandbox: "))
            seccomp = name in ("mkfifo", "mknod") and text.startswith("PermissionError: [Errno 1]")
            assert refused or seccomp, (name, text)
        assert "neither bubblewrap nor Landlock" in outcome["sqlite_attach"]
        assert outcome["sem_unlink"].startswith("PermissionError: sandbox: sem_unlink is disabled")
    else:
        assert "ImportError: sandbox" not in outcome["sqlite_attach"]  # sqlite stays usable


@pytest.mark.skipif(platform.machine() not in runner._ARCHES or not sys.platform.startswith("linux"),
                    reason="seccomp filter only built for Linux x86_64/aarch64")
def test_seccomp_filter_blocks_processes_signals_and_sockets_without_the_audit_hook():
    probe = textwrap.dedent("""
        import json, os, resource, socket, threading
        from discoverygym.sandbox import _runner as r
        active = r.install_seccomp(r._libc(), network=False, subprocess_ok=False)
        def attempt(fn):
            try:
                fn()
                return "ok"
            except OSError as exc:
                return exc.errno
            except ValueError:  # what resource.setrlimit raises for EPERM
                return "ValueError"
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        box = []
        thread = threading.Thread(target=box.append, args=(1,))
        outcome = {
            "active": active,
            "fork": attempt(os.fork),
            "socket": attempt(socket.socket),
            "kill_parent": attempt(lambda: os.kill(os.getppid(), 0)),
            "kill_self": attempt(lambda: os.kill(os.getpid(), 0)),
            "getrlimit": attempt(lambda: resource.getrlimit(resource.RLIMIT_AS)),
            "setrlimit": attempt(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))),
            "symlink": attempt(lambda: os.symlink("/", "/tmp/never-created-by-seccomp-test")),
            "thread": attempt(lambda: (thread.start(), thread.join())),
        }
        outcome["thread_ran"] = len(box)
        print(json.dumps(outcome))
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["active"] is True
    assert outcome["fork"] == outcome["socket"] == outcome["kill_parent"] == 1  # EPERM
    assert outcome["setrlimit"] == "ValueError" and outcome["symlink"] == 1
    assert outcome["kill_self"] == outcome["getrlimit"] == outcome["thread"] == "ok"
    assert outcome["thread_ran"] == 1


def test_landlock_blocks_writes_outside_without_the_audit_hook(tmp_path):
    if probes.landlock_abi() < 1:
        pytest.skip("the kernel offers no Landlock")
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("original")
    probe = textwrap.dedent("""
        import json, os, sys
        from discoverygym.sandbox import _runner as r
        inside, outside = sys.argv[1], sys.argv[2]
        active = r.install_landlock(r._libc(), inside)
        def attempt(fn):
            try:
                fn()
                return "ok"
            except OSError as exc:
                return exc.errno
        print(json.dumps({
            "active": active,
            "write_inside": attempt(lambda: open(os.path.join(inside, "a.txt"), "w").write("x")),
            "mkdir_inside": attempt(lambda: os.mkdir(os.path.join(inside, "d"))),
            "write_outside": attempt(lambda: open(os.path.join(outside, "new.txt"), "w")),
            "truncate_outside": attempt(lambda: open(os.path.join(outside, "victim.txt"), "r+")),
            "remove_outside": attempt(lambda: os.remove(os.path.join(outside, "victim.txt"))),
            "mkdir_outside": attempt(lambda: os.mkdir(os.path.join(outside, "d"))),
            "dev_null": attempt(lambda: open(os.devnull, "w").write("x")),
            "read_outside": attempt(lambda: open(os.path.join(outside, "victim.txt")).read()),
        }))
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", probe, str(inside), str(outside)],
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["active"] is True
    assert outcome["write_inside"] == outcome["mkdir_inside"] == "ok"
    assert outcome["dev_null"] == outcome["read_outside"] == "ok"
    assert outcome["write_outside"] == outcome["remove_outside"] == outcome["mkdir_outside"] == 13
    assert outcome["truncate_outside"] in (13, "ok")  # TRUNCATE is only handled from Landlock ABI 3
    assert sorted(os.listdir(outside)) == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == "original"


def test_seccomp_program_shape():
    prog = runner.seccomp_program("x86_64", network=False, subprocess_ok=False, self_pid=1234)
    assert prog[-1] == (0x06, 0, 0, 0x7FFF0000)  # default: allow
    assert (0x15, 0, 1, 41) in prog  # socket is checked
    assert len(prog) < 4096 and all(0 <= jt < 256 and 0 <= jf < 256 for _, jt, jf, _ in prog)
    open_net = runner.seccomp_program("aarch64", network=True, subprocess_ok=True, self_pid=1)
    assert (0x15, 0, 1, 198) not in open_net and (0x15, 0, 1, 220) not in open_net
