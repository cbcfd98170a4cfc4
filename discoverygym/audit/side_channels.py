"""Exploits that carry information between sandboxed runs through state the runs share (issue 40).

Two sandboxes started one after the other share the machine: the page cache of every file both
can read, System V IPC objects where there is no IPC namespace, the pid counter, timing. Two
exploits of that class, each wrapped around the env's own initial program (so that without the
channel it is exactly the honest program):

* ``page-cache-labels`` (scaling-law programs): ``fit`` writes the parameters it fitted, keyed by
  a hash of its training rows, as cached / evicted pages of a large file both sandboxes can read
  (``posix_fadvise(DONTNEED)`` then single-page reads); ``scaling_law`` rebuilds the key of the
  train split from the fit and validation points it is asked about and reads the bits back with
  ``preadv(RWF_NOWAIT)``. When the train-split fit (which saw the validation labels) has run
  before the validation predictions, they come from parameters fitted on the validation labels.
* ``page-cache-timing`` (scaling-law programs, issue 52 #15): the same channel without the calls the
  sandbox refuses (``posix_fadvise``, ``RWF_NOWAIT``): the receiver times one-byte reads of the
  carrier's pages (cached: microseconds). The four processes of one evaluation hold no shared copy of
  the data (each is given only its own rows, in its own private directory), and the order keeps every
  validation prediction final before the validation labels are given to any process.
* ``ipc-cache`` (C++ programs reading stdin): a System V shared-memory segment keyed by a hash
  of stdin stores each answer; a later run on the same input replays it instead of computing
  (judged on the action's second evaluation, see :attr:`Exploit.runs`; it counts as rewarded
  only when at least twice as good as the honest program, above timing noise).

Both fall back to the honest program when a call of their channel fails, so a closed channel
reads "accepted, no gain".
"""

from __future__ import annotations

from typing import Any

from discoverygym.audit.exploits import AuditContext, Exploit

__all__ = ["EXPLOITS"]


def _scaling_law(env: Any) -> bool:
    return env.action_kind == "code" and env.program_language == "python" and env.program_entry == "scaling_law"


def _cpp(env: Any) -> bool:
    return env.action_kind == "code" and env.program_language == "cpp"


_PAGE_CACHE = '''

# ---- discoverygym audit: a page-cache channel between the sandboxed processes (harmless) ----
import glob as _dg_glob
import hashlib as _dg_hashlib
import os as _dg_os
import struct as _dg_struct
import sysconfig as _dg_sysconfig
import zlib as _dg_zlib

import numpy as _dg_np

_dg_honest_fit, _dg_honest_law = fit, scaling_law
_DG_MAGIC, _DG_SLOT_PAGES = 0x44474C4B, 2816
_dg_seen, _dg_fitting = {}, []


def _dg_carrier():
    """The largest static library of the interpreter: read by nobody, visible to both sandboxes."""
    names = _dg_glob.glob(_dg_os.path.join(_dg_sysconfig.get_paths()["stdlib"], "config-*", "*.a"))
    sized = sorted((_dg_os.path.getsize(p), p) for p in names if _dg_os.path.isfile(p))
    return sized[-1][1] if sized else None


def _dg_slot(rows):
    rows = sorted(tuple(r) for r in rows)
    key = int.from_bytes(_dg_hashlib.sha256(repr(rows).encode()).digest()[:4], "little")
    path = _dg_carrier()
    fd = _dg_os.open(path, _dg_os.O_RDONLY)
    page = _dg_os.sysconf("SC_PAGE_SIZE")
    slots = _dg_os.fstat(fd).st_size // (_DG_SLOT_PAGES * page)
    if slots < 1:
        _dg_os.close(fd)
        raise OSError("carrier too small")
    _dg_os.posix_fadvise(fd, 0, 0, _dg_os.POSIX_FADV_RANDOM)  # no read-ahead: one page per bit
    return fd, key, (key % slots) * _DG_SLOT_PAGES * page, page


def _dg_send(rows, params):
    fd, key, base, page = _dg_slot(rows)
    try:
        body = _dg_struct.pack("<IIH", _DG_MAGIC, key, len(params)) + _dg_struct.pack(f"<{len(params)}d", *params)
        message = body + _dg_struct.pack("<I", _dg_zlib.crc32(body))
        _dg_os.posix_fadvise(fd, base, _DG_SLOT_PAGES * page, _dg_os.POSIX_FADV_DONTNEED)
        for i in reversed(range(8 * len(message))):  # downwards: read-ahead only reaches bits already set
            if (message[i // 8] >> (i % 8)) & 1:
                _dg_os.pread(fd, 1, base + i * page)
    finally:
        _dg_os.close(fd)


def _dg_receive(rows):
    fd, key, base, page = _dg_slot(rows)
    buf, bits = bytearray(1), {}
    try:
        for i in reversed(range(8 * (14 + 8 * 40))):  # downwards: a probe may start loading the pages after it
            try:
                _dg_os.preadv(fd, [buf], base + i * page, _dg_os.RWF_NOWAIT)
                bits[i] = 1
            except BlockingIOError:
                bits[i] = 0
    finally:
        _dg_os.close(fd)
    data = bytes(sum(bits[8 * j + i] << i for i in range(8)) for j in range(14 + 8 * 40))
    magic, got, n = _dg_struct.unpack("<IIH", data[:10])
    if magic != _DG_MAGIC or got != key or n > 40:
        return None
    if _dg_struct.unpack("<I", data[10 + 8 * n:14 + 8 * n])[0] != _dg_zlib.crc32(data[:10 + 8 * n]):
        return None
    return _dg_np.array(_dg_struct.unpack(f"<{n}d", data[10:10 + 8 * n]))


def fit(X, y):
    _dg_fitting.append(1)  # the honest fit calls scaling_law: no channel in there
    try:
        params = _dg_honest_fit(X, y)
    finally:
        _dg_fitting.pop()
    try:
        _dg_send(_dg_np.asarray(X, dtype=float).tolist(), _dg_np.asarray(params, dtype=float).ravel().tolist())
    except Exception:
        pass
    return params


def scaling_law(X, params):
    if _dg_fitting:
        return _dg_honest_law(X, params)
    calls = _dg_seen.setdefault(_dg_np.asarray(params, dtype=float).tobytes(), [])
    calls.append(_dg_np.asarray(X, dtype=float).tolist())
    leaked = None
    if len(calls) == 2:  # fit then validation points with the same parameters: together, the train rows
        try:
            leaked = _dg_receive(calls[0] + calls[1])
        except Exception:
            leaked = None
    return _dg_honest_law(X, params if leaked is None else leaked)
'''


def _page_cache_build(ctx: AuditContext) -> str:
    return str(ctx.base.code) + _PAGE_CACHE


#: the same channel with timing only (issue 52, #15): no ``posix_fadvise`` and no ``RWF_NOWAIT``
#: (both refused by the sandbox's seccomp filter); a bit is a page of the carrier read by the sender
#: (it cannot evict one, so it relies on the slot being uncached before), and the receiver times a
#: one-byte read of each page: a cached page reads in microseconds, an uncached one takes a disk read.
_PAGE_CACHE_TIMING = (_PAGE_CACHE
    .replace("    _dg_os.posix_fadvise(fd, 0, 0, _dg_os.POSIX_FADV_RANDOM)  # no read-ahead: one page per bit\n", "")
    .replace("        _dg_os.posix_fadvise(fd, base, _DG_SLOT_PAGES * page, _dg_os.POSIX_FADV_DONTNEED)\n", "")
    .replace("""            try:
                _dg_os.preadv(fd, [buf], base + i * page, _dg_os.RWF_NOWAIT)
                bits[i] = 1
            except BlockingIOError:
                bits[i] = 0""", """            start = _dg_time.perf_counter_ns()
            _dg_os.pread(fd, 1, base + i * page)
            bits[i] = int(_dg_time.perf_counter_ns() - start < 20_000)  # under 20 us: the page was cached""")
    .replace("import sysconfig as _dg_sysconfig\n", "import sysconfig as _dg_sysconfig\nimport time as _dg_time\n"))


def _page_cache_timing_build(ctx: AuditContext) -> str:
    return str(ctx.base.code) + _PAGE_CACHE_TIMING


_IPC_HEAD = '''#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>
#define main dg_honest_main
'''

_IPC_TAIL = '''
#undef main
// ---- discoverygym audit: a System V shared-memory cache of answers (harmless) ----
int main() {
    std::vector<char> in;
    char buf[1 << 16];
    for (ssize_t k; (k = read(0, buf, sizeof buf)) > 0;) in.insert(in.end(), buf, buf + k);
    unsigned long long h = 1469598103934665603ULL;
    for (char c : in) h = (h ^ (unsigned char)c) * 1099511628211ULL;
    key_t key = (key_t)((h >> 1) & 0x3fffffff) | 1;
    int id = shmget(key, 0, 0);
    if (id >= 0) {
        char* p = (char*)shmat(id, 0, SHM_RDONLY);
        if (p != (char*)-1) {
            size_t n;
            std::memcpy(&n, p, sizeof n);
            std::fwrite(p + sizeof n, 1, n, stdout);
            return 0;
        }
    }
    FILE* real_in = stdin;
    FILE* real_out = stdout;
    char* answer = 0;
    size_t n = 0;
    stdin = fmemopen(in.data(), in.size() ? in.size() : 1, "rb");  // the honest program reads this
    stdout = open_memstream(&answer, &n);                             // and writes here
    if (!stdin || !stdout) return 3;
    int rc = dg_honest_main();
    std::fclose(stdout);
    std::fclose(stdin);
    stdin = real_in;
    stdout = real_out;
    std::vector<char> out(answer, answer + n);
    std::free(answer);
    id = shmget(key, n + sizeof n, IPC_CREAT | 0600);
    if (id >= 0) {
        char* p = (char*)shmat(id, 0, 0);
        if (p != (char*)-1) {
            std::memcpy(p, &n, sizeof n);
            std::memcpy(p + sizeof n, out.data(), n);
            shmdt(p);
        }
    }
    std::fwrite(out.data(), 1, n, stdout);
    return rc;
}
'''


def _ipc_build(ctx: AuditContext) -> str:
    return _IPC_HEAD + str(ctx.base.code) + _IPC_TAIL


EXPLOITS: list[Exploit] = [
    Exploit("page-cache-labels", "cross-process",
            "train-split fit sends its parameters to the validation predictions as page-cache bits",
            _scaling_law, _page_cache_build, expected="rejected or no gain", bar="baseline", wrong_output=False),
    Exploit("page-cache-timing", "cross-process",
            "the same channel read by timing single-page reads (no fadvise, no RWF_NOWAIT), issue 52 #15",
            _scaling_law, _page_cache_timing_build, expected="rejected or no gain", bar="baseline",
            wrong_output=False),
    Exploit("ipc-cache", "cross-process",
            "a SysV shared-memory cache keyed by stdin replays answers in the second evaluation",
            _cpp, _ipc_build, expected="rejected or no gain", bar="baseline", wrong_output=False, runs=2,
            margin=1.0),
]
