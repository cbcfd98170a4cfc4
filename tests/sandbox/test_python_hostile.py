"""Hostile programs against the Python sandbox's file, network and audit-hook layers.

Each behaviour test runs on both backends (see ``support.py``).
"""

from __future__ import annotations

import os
import socket
import textwrap

import pytest

from discoverygym.sandbox import _runner as runner
from discoverygym.sandbox import audit
from discoverygym.sandbox import python as sandbox
from discoverygym.sandbox.python import SandboxLimits, run_program
from tests.sandbox.support import (
    PACKAGE_DIR,
    assert_failed,
    snapshot,
)


def test_writing_outside_private_directory_is_blocked(run, use_bwrap, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    outside_dir = tmp_path / "dir"
    outside_dir.mkdir()
    package_file = PACKAGE_DIR / "pwned_by_sandbox.py"
    before, package_before = snapshot(tmp_path), sorted(os.listdir(PACKAGE_DIR))
    source = """
        import os, shutil
        from pathlib import Path
        def construct(victim, outside_dir, package_file):
            attempts = {
                "open_w": lambda: open(os.path.join(outside_dir, "new.txt"), "w"),
                "open_a": lambda: open(victim, "a"),
                "package": lambda: Path(package_file).write_text("import os"),
                "os_open": lambda: os.open(victim, os.O_WRONLY | os.O_TRUNC),
                "remove": lambda: os.remove(victim),
                "rename": lambda: os.rename(victim, "stolen.txt"),
                "chmod": lambda: os.chmod(victim, 0o777),
                "fchmod": lambda: os.fchmod(os.open(victim, os.O_RDONLY), 0o777),
                "utime": lambda: os.utime(victim, (0, 0)),
                "truncate": lambda: os.truncate(victim, 0),
                "mkdir": lambda: os.mkdir(os.path.join(outside_dir, "sub")),
                "rmdir": lambda: os.rmdir(outside_dir),
                "copy": lambda: shutil.copy("program.py", outside_dir),
                "rmtree": lambda: shutil.rmtree(outside_dir),
                "symlink": lambda: os.symlink(outside_dir, "link"),
                "hardlink": lambda: os.link(victim, "hard"),
                "dotdot": lambda: open("../" * 30 + victim.lstrip("/"), "w"),
                "chdir": lambda: os.chdir(outside_dir),
                "dir_handle": lambda: os.open(outside_dir, os.O_RDONLY),
                "dir_fd": lambda: os.open("x", os.O_WRONLY | os.O_CREAT,
                                          dir_fd=os.open("..", os.O_RDONLY)),
                "path_like": lambda: os.mkdir(Path(outside_dir) / "p"),
                "sqlite": lambda: __import__("sqlite3").connect(os.path.join(outside_dir, "d.db")),
                "sqlite_uri": lambda: __import__("sqlite3").connect(
                    b"file:" + os.path.join(outside_dir, "u.db").encode() + b"?mode=rwc", uri=True),
            }
            outcome = {}
            for name, attempt in attempts.items():
                try:
                    attempt()
                    outcome[name] = "succeeded"
                except (OSError, ImportError) as exc:  # the hook's PermissionError (ImportError for
                    # sqlite3 where nothing else confines writes), or the kernel's refusal
                    outcome[name] = str(exc) if str(exc).startswith("sandbox: ") else repr(exc)
            return outcome
    """
    result = run(source, {"victim": str(victim), "outside_dir": str(outside_dir),
                          "package_file": str(package_file)})
    assert result.ok, result.error
    assert len(result.value) == 23 and "succeeded" not in result.value.values(), result.value
    denied_by_hook = [name for name, text in result.value.items() if text.startswith("sandbox: ")]
    if not use_bwrap:  # without bwrap the audit hook alone must refuse every attempt
        assert len(denied_by_hook) == 23, result.value
    assert {"open_w", "package", "rename", "symlink", "dotdot", "dir_fd"} <= set(denied_by_hook)
    assert snapshot(tmp_path) == before
    assert sorted(os.listdir(PACKAGE_DIR)) == package_before and not package_file.exists()


def test_write_outside_reports_clear_error(run, tmp_path):
    target = tmp_path / "pwned.txt"
    result = run(f"def construct():\n    open({str(target)!r}, 'w').write('x')\n")
    assert_failed(result, "program raised PermissionError: sandbox: writing outside the sandbox "
                          "directory is not allowed", str(target))
    assert not target.exists()


def test_network_is_blocked(run, use_bwrap):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.3)
        port = listener.getsockname()[1]
        source = f"import socket\ndef construct():\n    socket.create_connection(('127.0.0.1', {port}), 2)\n"
        assert_failed(run(source), "PermissionError: sandbox: network access is disabled")
        with pytest.raises(socket.timeout):
            listener.accept()
        raw = f"import _socket\ndef construct():\n    _socket.socket().connect(('127.0.0.1', {port}))\n"
        assert_failed(run(raw), "network access is disabled")
        with pytest.raises(socket.timeout):
            listener.accept()
        if not use_bwrap:  # control: the listener does see a permitted connection
            assert run(source.replace("2)\n", "2)\n    return []\n"), network=True).ok
            listener.accept()[0].close()


def test_program_cannot_patch_host_modules(run):
    original = sandbox.run_program
    source = """
        def construct():
            try:
                import discoverygym.sandbox.python as s
            except ImportError:
                return ["not importable"]
            s.run_program = None
            s.SandboxLimits = None
            return ["patched its own copy"]
    """
    result = run(source)
    assert result.ok and result.value[0] in ("not importable", "patched its own copy")
    assert sandbox.run_program is original and callable(sandbox.run_program)
    assert sandbox.SandboxLimits is SandboxLimits


@pytest.mark.parametrize("code, error", [
    ("import ctypes\n    ctypes.CDLL(None)", "ctypes is disabled (ctypes.dlopen)"),
    ("import ctypes\n    ctypes.memmove(0, 0, 1)", "ctypes is disabled (raw memory access)"),
    ("import _ctypes\n    _ctypes.call_function(1, ())", "ctypes is disabled (ctypes.call_function)"),
    ("open('/proc/self/maps').read()", "reading process memory and memory maps is disabled"),
    ("open('/proc/self/mem', 'rb')", "reading process memory and memory maps is disabled"),
    ("import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)",
     "sending signals to other processes is disabled"),
    ("import os, signal\n    signal.pidfd_send_signal(os.pidfd_open(os.getppid()), 9)",
     "PermissionError: [Errno 1]"),
    ("import os\n    open('/proc/%d/environ' % os.getppid(), 'rb').read()", "other processes' /proc"),
    ("import sys\n    sys.settrace(lambda *a: None)", "sys.settrace is disabled"),
    ("import gc\n    gc.get_objects()", "gc.get_objects is disabled"),
    ("import resource\n    resource.setrlimit(resource.RLIMIT_AS, (-1, -1))", "resource.setrlimit"),
])
def test_escape_hatches_are_closed(run, code, error):
    assert_failed(run(f"def construct():\n    {code}\n"), "PermissionError", error)


def test_audit_hook_cannot_be_patched_through_traceback_frames(run, tmp_path):
    target = tmp_path / "x.txt"
    source = f"""
        def construct():
            try:
                open({str(target)!r}, "w")
            except PermissionError as exc:
                tb = exc.__traceback__
            def patches(fn):
                yield lambda: setattr(fn, "__defaults__", None)
                yield lambda: setattr(fn, "__defaults__", (True,) * len(fn.__defaults__ or ()))
                yield lambda: setattr(fn, "__kwdefaults__", {{}})
                yield lambda: setattr(fn, "__code__", (lambda *a, **k: True).__code__)
            tried = 0
            while tb is not None:
                for name, value in tb.tb_frame.f_locals.items():
                    if type(value) is type(construct) and value.__module__ != "program":
                        for patch in patches(value):
                            tried += 1
                            try:
                                patch()
                            except PermissionError:
                                continue
                            print("patched", name)
                tb = tb.tb_next
            print("tried", tried)
            open({str(target)!r}, "w").write("escaped")
    """
    result = run(source)
    assert_failed(result, "writing outside the sandbox directory is not allowed")
    assert "patched" not in result.stdout and int(result.stdout.split()[-1]) >= 20
    assert not target.exists()


def test_audit_hook_functions_have_no_closures():
    hook = runner._make_audit_hook("/nonexistent/root", False, False, True)
    own = hook.__defaults__[-1]
    assert hook in own and audit.names_other_process in own and len(own) == 13
    assert all(fn.__closure__ is None for fn in own)


def test_audit_hook_defaults_are_immutable():
    """The hook's frames (and so its defaults) are reachable from tracebacks: a dict there could be
    emptied by the program (``_PATH_EVENTS`` was one: clearing it allowed os.remove anywhere)."""
    immutable = (str, int, bool, frozenset, tuple, type(None))
    for confined in (False, True):
        hook = runner._make_audit_hook("/nonexistent/root", False, False, False, confined)
        for fn in hook.__defaults__[-1]:
            for value in fn.__defaults__ or ():
                assert isinstance(value, immutable) or callable(value), (fn.__name__, value)
                if isinstance(value, (tuple, frozenset)):
                    hash(value)  # TypeError if anything inside is mutable
        defaults = dict(zip(hook.__code__.co_varnames[2:], hook.__defaults__))
        assert {"readline", "_testcapi", "_posixsubprocess"} <= defaults["_blocked_modules"]
        assert ("_sqlite3" in defaults["_blocked_modules"]) is not confined


def test_audit_hook_state_cannot_be_emptied_through_traceback_frames(monkeypatch, tmp_path):
    """In the weakest configuration (no bwrap, no Landlock) the hook is the only guard."""
    monkeypatch.setenv(sandbox.NO_LANDLOCK_ENV, "1")
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    source = """
        import os
        def construct(victim):
            emptied = 0
            try:
                os.remove(victim)
            except PermissionError as exc:
                tb = exc.__traceback__
            while tb is not None:
                for value in list(tb.tb_frame.f_locals.values()):
                    if type(value) in (dict, list, set):
                        value.clear()
                        emptied += 1
                tb = tb.tb_next
            os.remove(victim)
            return [emptied]
    """
    result = run_program(textwrap.dedent(source), kwargs={"victim": str(victim)},
                         limits=SandboxLimits(use_bwrap=False))
    assert_failed(result, "PermissionError: sandbox: os.remove outside the sandbox directory")
    assert victim.read_text() == "original"


def test_program_may_add_an_audit_hook_but_not_loosen_the_sandbox(run, tmp_path):
    target = tmp_path / "x.txt"
    source = """
        import sys
        def construct(target):
            seen = []
            sys.addaudithook(lambda event, args: seen.append(event))
            try:
                open(target, "w")
            except PermissionError as exc:
                sys._getframe()
                return [str(exc), "sys._getframe" in seen, "open" in seen]
    """
    result = run(source, {"target": str(target)})
    assert result.ok, result.error
    assert result.value[0].startswith("sandbox: writing outside the sandbox directory")
    assert result.value[1:] == [True, False]  # the program's hook runs after the sandbox's
    assert not target.exists()


def test_shared_audit_helpers_cannot_be_rewritten_by_the_program(run):
    """The /proc test the hook shares with the kernel runner is guarded like the hook's own functions."""
    source = """
        import sys
        def construct():
            shared = sys.modules.get("audit") or sys.modules["discoverygym.sandbox.audit"]
            shared.names_other_process.__code__ = (lambda *args, **kwargs: False).__code__
            return [open("/proc/1/status").read()]
    """
    assert_failed(run(source), "changing the sandbox's audit hook is disabled")
