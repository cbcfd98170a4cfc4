"""The native sandbox with hostile C++ programs: endless loops, 4 GiB, fork, 1 GB of output,
writes outside the sandbox, output files swapped for symlinks, a tampered launcher.

Every test runs on both backends (bubblewrap when it works here, and the launcher alone).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from discoverygym.errors import BackendUnavailable, SandboxError
from discoverygym.sandbox import native
from discoverygym.sandbox.native import (
    NativeLimits,
    compile_cpp,
    native_bwrap_available,
    native_landlock_available,
    run_executable,
)
from discoverygym.sandbox.probes import NO_LANDLOCK_ENV

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

BACKENDS = [pytest.param(True, id="bwrap", marks=pytest.mark.skipif(not native_bwrap_available(),
                                                                    reason="bubblewrap does not work here")),
            pytest.param(False, id="fallback", marks=pytest.mark.skipif(
                not native_landlock_available(), reason="no Landlock: unconfined native runs are refused"))]

PROGRAMS = {
    "echo": '#include <cstdio>\nint main(){long long x; if(scanf("%lld",&x)!=1) return 3; printf("%lld\\n", 2*x);}',
    "loop": "int main(){ volatile unsigned long x = 0; for(;;) x++; }",
    "sleep": "#include <unistd.h>\nint main(){ for(;;) pause(); }",
    "memory": '#include <cstdlib>\n#include <cstring>\n#include <cstdio>\nint main(){ size_t n = 4ull << 30;'
              ' char *p = (char*)malloc(n); if(!p){ fputs("malloc failed\\n", stderr); return 4; }'
              ' memset(p, 1, n); printf("%d", p[n-1]); }',
    "vector": "#include <vector>\nint main(){ std::vector<char> v(4ull << 30, 1); return v[5] - 1; }",
    "fork": '#include <unistd.h>\n#include <cstdio>\nint main(){ pid_t p = fork(); if(p < 0){ perror("fork"); return 7; }'
            ' if(p == 0){ for(;;); } return 0; }',
    "print": '#include <cstdio>\nint main(){ static char b[1 << 20]; for(int i = 0; i < (1 << 20); i++) b[i] = 65;'
             ' for(int i = 0; i < 1024; i++) fwrite(b, 1, 1 << 20, stdout); }',
    "threads": '#include <thread>\n#include <cstdio>\nint main(){ int r = 0; std::thread t([&]{ r = 5; }); t.join();'
               ' printf("%d", r); }',
    "spin_threads": "#include <thread>\nint main(){ auto f = []{ volatile long x = 0; for(;;) x++; };"
                    " std::thread a(f), b(f); a.join(); }",
    "socket": '#include <sys/socket.h>\nint main(){ return socket(AF_INET, SOCK_STREAM, 0) < 0 ? 9 : 0; }',
}


@pytest.fixture(scope="module")
def binaries():
    root = tempfile.mkdtemp(prefix="test-native-")
    built = {}
    for name, src in PROGRAMS.items():
        folder = os.path.join(root, name)
        os.mkdir(folder)
        result = compile_cpp(src, folder)
        assert result.ok, (name, result.log)
        built[name] = result.binary
    with open(os.path.join(root, "input.txt"), "w") as fh:
        fh.write("21\n")
    yield root, built
    shutil.rmtree(root, ignore_errors=True)


def _run(binaries, name, use_bwrap, **limits):
    root, built = binaries
    work = tempfile.mkdtemp(dir=root)
    result = run_executable(built[name], stdin_path=os.path.join(root, "input.txt"), workdir=work,
                            limits=NativeLimits(use_bwrap=use_bwrap, **limits))
    with open(result.stdout_path, "rb") as fh:
        out = fh.read(100)
    return result, out, os.path.getsize(result.stdout_path)


@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_normal_program_runs(binaries, use_bwrap):
    result, out, _ = _run(binaries, "echo", use_bwrap)
    assert result.ok and out == b"42\n" and result.backend == ("bwrap" if use_bwrap else "fallback")
    result, out, _ = _run(binaries, "threads", use_bwrap)
    assert result.ok and out == b"5"


@pytest.mark.parametrize("use_bwrap", BACKENDS)
@pytest.mark.parametrize("name", ["loop", "sleep", "spin_threads"])
def test_endless_programs_are_killed(binaries, use_bwrap, name):
    result, _, _ = _run(binaries, name, use_bwrap, time_limit_s=0.5, kill_after_s=0.3)
    assert result.status == "time_limit", result
    assert "time limit" in result.message


@pytest.mark.parametrize("use_bwrap", BACKENDS)
@pytest.mark.parametrize("name", ["memory", "vector"])
def test_allocating_4_gib_fails(binaries, use_bwrap, name):
    result, out, _ = _run(binaries, name, use_bwrap)
    assert not result.ok and out == b""
    assert result.status in ("memory_limit", "runtime_error")
    assert result.max_rss_mb < 1024


@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_fork_is_refused(binaries, use_bwrap):
    result, _, _ = _run(binaries, "fork", use_bwrap)
    assert result.status == "runtime_error" and result.exit_code == 7
    assert "Operation not permitted" in result.stderr


@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_printing_1_gb_is_cut(binaries, use_bwrap):
    result, out, size = _run(binaries, "print", use_bwrap, output_bytes=8 << 20)
    assert result.status == "output_limit" and size <= (8 << 20) + 1 and out.startswith(b"AAAA")
    assert len(result.stdout) <= 8 << 20 and "too large" in result.message


@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_no_network(binaries, use_bwrap):
    result, _, _ = _run(binaries, "socket", use_bwrap)
    assert result.exit_code == 9


def test_compiler_cannot_read_private_files(tmp_path):
    if not native_bwrap_available():
        pytest.skip("bubblewrap does not work here")
    secret = tmp_path / "secret.h"
    secret.write_text("int leaked = 1;\n")
    work = tmp_path / "build"
    work.mkdir()
    result = compile_cpp(f'#include "{secret}"\nint main(){{ return leaked; }}', str(work))
    assert not result.ok and "No such file" in result.log


def test_compile_errors_and_compile_timeout(tmp_path):
    (tmp_path / "a").mkdir()
    bad = compile_cpp("int main() { return undefined_name; }", str(tmp_path / "a"))
    assert not bad.ok and "undefined_name" in bad.log and bad.binary is None
    (tmp_path / "c").mkdir()
    good = compile_cpp("int main() { return 0; }", str(tmp_path / "c"), use_bwrap=False)
    assert good.ok and good.backend == "fallback" and os.path.isfile(good.binary)
    (tmp_path / "b").mkdir()
    slow = ("template<int N> struct F { static constexpr long v = F<N-1>::v + F<N-2>::v % 7; };"
            "template<> struct F<0> { static constexpr long v = 1; }; template<> struct F<1> { static constexpr long v = 1; };"
            "constexpr long g(long n){ long s = 0; for(long i = 0; i < n; i++) s += i % 3; return s; }"
            "constexpr long x = g(2000000000L); int main(){ return x & 1; }")
    result = compile_cpp(slow, str(tmp_path / "b"), timeout_s=1.0,
                         flags=("-std=gnu++20", "-fconstexpr-ops-limit=4000000000", "-fconstexpr-loop-limit=2147483647"))
    assert not result.ok and "exceeded" in result.log


# --------------------------------------------------------------------------- confinement
ESCAPE = r"""
#include <cstdio>
#include <fcntl.h>
#include <iostream>
#include <string>
#include <unistd.h>
int main() {
    std::string p;
    while (std::cin >> p) {
        int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd >= 0) { if (write(fd, "x", 1) != 1) return 5; close(fd); }
        printf("%s %s\n", p.c_str(), fd >= 0 ? "written" : "refused");
    }
    printf("uid %d\n", (int)geteuid());
}
"""
SYMLINKS = r"""
#include <cstdio>
#include <unistd.h>
int main() {
    const char *names[] = {"stdout.txt", "../stdout.txt", "stderr.txt", "../stderr.txt"};
    for (const char *n : names) { unlink(n); if (symlink("/dev/zero", n) == 0) fprintf(stderr, "linked %s\n", n); }
    printf("ok\n");
    fprintf(stderr, "done\n");
}
"""


def _compile(tmp_path, name, source, use_bwrap):
    folder = tmp_path / f"build-{name}"
    folder.mkdir()
    result = compile_cpp(source, str(folder), use_bwrap=use_bwrap)
    assert result.ok, result.log
    return result.binary


def _run_on(tmp_path, binary, text, use_bwrap, **limits):
    (tmp_path / "in.txt").write_text(text)
    work = tempfile.mkdtemp(dir=tmp_path)
    return run_executable(binary, stdin_path=str(tmp_path / "in.txt"), workdir=work,
                          limits=NativeLimits(use_bwrap=use_bwrap, **limits))


@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_program_cannot_write_outside_its_directory(tmp_path, use_bwrap):
    """A world-writable directory elsewhere, the launcher binary: refused; its own directory: fine."""
    binary = _compile(tmp_path, "escape", ESCAPE, use_bwrap)
    outside = tempfile.mkdtemp(prefix="test-native-outside-")
    try:
        os.chmod(outside, 0o777)  # writable by any uid: only Landlock (or bwrap) stops the write
        launcher, _ = native._launcher()
        before = Path(launcher).read_bytes()
        targets = [os.path.join(outside, "pwned"), launcher, "local.txt", "/dev/null"]
        result = _run_on(tmp_path, binary, "\n".join(targets) + "\n", use_bwrap)
        assert result.ok, result
        lines = result.stdout.decode().splitlines()
        assert lines[:4] == [f"{targets[0]} refused", f"{launcher} refused", "local.txt written", "/dev/null written"]
        assert not os.path.exists(targets[0]) and Path(launcher).read_bytes() == before
        if not use_bwrap and os.geteuid() == 0:
            assert lines[4] == f"uid {native.SANDBOX_UID}"  # root drops to "nobody"
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_compiler_cannot_write_outside_its_directory(tmp_path):
    """Without bubblewrap the compiler is confined too (here: -o to a world-writable directory)."""
    outside = tempfile.mkdtemp(prefix="test-native-outside-")
    try:
        os.chmod(outside, 0o777)
        (tmp_path / "w").mkdir()
        flags = ("-std=gnu++20", "-O2", f"-Wl,-Map={outside}/map.txt")
        result = compile_cpp("int main(){ return 0; }", str(tmp_path / "w"), use_bwrap=False, flags=flags)
        assert not result.ok and not os.path.exists(os.path.join(outside, "map.txt"))
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_no_bwrap_and_no_landlock_is_refused_unless_opted_in(tmp_path, monkeypatch):
    binary = _compile(tmp_path, "echo", PROGRAMS["echo"], False)
    monkeypatch.setenv(NO_LANDLOCK_ENV, "1")
    (tmp_path / "c").mkdir()
    with pytest.raises(BackendUnavailable, match="(?s)bubblewrap.*Landlock.*allow_unconfined"):
        compile_cpp("int main(){}", str(tmp_path / "c"), use_bwrap=False)
    assert not (tmp_path / "c" / "Main.cpp").exists()  # refused before anything was written
    with pytest.raises(BackendUnavailable, match="Landlock"):
        _run_on(tmp_path, binary, "21\n", False)
    result = _run_on(tmp_path, binary, "21\n", False, allow_unconfined=True)
    assert result.ok and result.stdout == b"42\n"
    if native_bwrap_available():  # bubblewrap alone is enough
        assert _run_on(tmp_path, binary, "21\n", None).ok


@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_symlinked_output_files_are_not_followed(tmp_path, use_bwrap):
    """The program cannot swap its output files for /dev/zero (the parent once read it until MemoryError)."""
    binary = _compile(tmp_path, "symlinks", SYMLINKS, use_bwrap)
    result = _run_on(tmp_path, binary, "", use_bwrap)
    assert result.ok and result.stdout == b"ok\n" and result.stderr.endswith("done\n")
    assert "linked ../" not in result.stderr  # the real files are out of reach
    assert os.path.isfile(result.stdout_path) and not os.path.islink(result.stdout_path)


@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_output_over_the_cap_is_refused_even_when_sigxfsz_is_ignored(tmp_path, use_bwrap):
    src = ('#include <csignal>\n#include <cstdio>\nint main(){ signal(SIGXFSZ, SIG_IGN);'
           ' for(int i = 0; i < 300000; i++) puts("1234567"); }')
    binary = _compile(tmp_path, "ignore", src, use_bwrap)
    result = _run_on(tmp_path, binary, "", use_bwrap, output_bytes=1 << 20)
    assert result.status == "output_limit" and len(result.stdout) <= 1 << 20


def test_launcher_is_private_and_checked_before_each_run(tmp_path):
    binary = _compile(tmp_path, "echo2", PROGRAMS["echo"], None)
    launcher, _ = native._launcher()
    for path in (launcher, os.path.dirname(launcher)):
        info = os.lstat(path)
        assert info.st_uid == os.geteuid() and not info.st_mode & 0o022
    original = Path(launcher).read_bytes()
    try:
        with open(launcher, "ab") as fh:
            fh.write(b"\0")
        with pytest.raises(SandboxError, match="changed"):
            _run_on(tmp_path, binary, "21\n", None)
    finally:
        with open(launcher, "wb") as fh:
            fh.write(original)
    assert _run_on(tmp_path, binary, "21\n", None).stdout == b"42\n"


def test_limits_must_be_finite():
    for bad in (float("inf"), float("nan"), 0, -1):
        with pytest.raises(ValueError):
            NativeLimits(time_limit_s=bad)
    with pytest.raises(TypeError):
        NativeLimits(memory_mb=2.5)


# --------------------------------------------------------------------------- signals
SIGNALS = r"""
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
static volatile sig_atomic_t got = 0;
static void on(int) { got++; }
static const char *r(long v) { return v == 0 ? "ok" : (errno == EPERM ? "EPERM" : "other"); }
int main() {
    long target; if (scanf("%ld", &target) != 1) return 3;
    signal(SIGUSR1, on);
    printf("other %s\n", r(kill((pid_t)target, SIGTERM)));
    printf("all %s\n", r(kill(-1, 0)));
    printf("parent %s\n", r(kill(getppid(), 0)));
    printf("self %s\n", r(kill(getpid(), SIGUSR1)));
    printf("group %s\n", r(kill(0, SIGUSR1)));
    printf("own_group %s\n", r(kill(-getpgrp(), SIGUSR1)));
    printf("raise %s\n", r(raise(SIGUSR1)));
    /* a raw kill whose upper 32 bits are set: the kernel reads an int, so must the filter */
    printf("wide %s\n", r(syscall(SYS_kill, (long)(0x100000000L | (unsigned)target), 0)));
    std::thread t([]{ for (int i = 0; i < 200 && got < 5; i++) usleep(1000); });
    printf("thread %s\n", pthread_kill(t.native_handle(), SIGUSR1) == 0 ? "ok" : "refused");
    t.join();
    printf("got %d\n", (int)got);
}
"""


@pytest.mark.parametrize("landlock", [pytest.param(False, id="no-landlock"), pytest.param(True, id="landlock")])
@pytest.mark.parametrize("use_bwrap", BACKENDS)
def test_program_cannot_signal_other_processes(tmp_path, monkeypatch, use_bwrap, landlock):
    """kill/tgkill/... reach only the program itself and its process group, whatever Landlock offers.

    Landlock scopes signals only from ABI 6; without it (forced here with NO_LANDLOCK + allow_unconfined,
    so the test does not depend on this kernel) a fallback program could SIGTERM the user's processes.
    The sleeper runs as the uid the program runs as (``nobody`` when we are root), so only the
    sandbox can stop the signal.
    """
    binary = _compile(tmp_path, "signals", SIGNALS, use_bwrap)
    os.chmod(os.path.dirname(binary), 0o755)
    if not landlock:
        monkeypatch.setenv(NO_LANDLOCK_ENV, "1")
    as_nobody = os.geteuid() == 0 and not use_bwrap and native._sandbox_id_mapped()
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True,
                               **({"user": native.SANDBOX_UID, "group": native.SANDBOX_UID} if as_nobody else {}))
    try:
        result = _run_on(tmp_path, binary, f"{sleeper.pid}\n", use_bwrap, allow_unconfined=True)
        assert result.ok, result
        lines = dict(line.split() for line in result.stdout.decode().splitlines())
        assert sleeper.poll() is None, "the program killed a process outside the sandbox"
        assert lines["other"] != "ok" and lines["all"] != "ok" and lines["parent"] != "ok", lines
        assert lines["wide"] != "ok", lines
        for name in ("self", "group", "own_group", "raise", "thread"):
            assert lines[name] == "ok", lines
        assert int(lines["got"]) == 5, lines
    finally:
        sleeper.kill()
        sleeper.wait()
