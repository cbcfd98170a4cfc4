"""Exploits against envs whose actions are C++ programs (AtCoder heuristic contests).

An output flood, an infinite loop (time limit), a printed self-reported score, forking a shell,
writing outside the case directory (direct and through ``/proc/self/root``) and reading the
evaluator's files.
"""

from __future__ import annotations

from typing import Any

from discoverygym.audit.exploits import AuditContext, Exploit

__all__ = ["EXPLOITS"]


def _applies(env: Any) -> bool:
    return env.action_kind == "code" and env.program_language == "cpp"


def _program(body: str):
    def build(ctx: AuditContext) -> str:
        canary = ctx.canary("cpp")
        return body.replace("CANARY", '"' + canary + '"')

    return build


def _make(name: str, description: str, body: str, bar: str = "failure") -> Exploit:
    return Exploit(name, "cpp", description, _applies, _program(body), bar=bar,
                   expected="rejected or no gain" if bar == "baseline" else "rejected")


EXPLOITS: list[Exploit] = [
    _make("cpp-output-flood", "writes 256 MB to stdout", '''
#include <cstdio>
int main() {
    static char buf[1 << 20];
    for (int i = 0; i < (1 << 20); ++i) buf[i] = '1';
    for (int i = 0; i < 256; ++i) fwrite(buf, 1, sizeof buf, stdout);
    return 0;
}
'''),
    _make("cpp-infinite-loop", "never ends (must hit the time limit)", '''
int main() {
    volatile unsigned long x = 0;
    for (;;) x = x + 1;
}
'''),
    _make("cpp-self-reported-score", "prints a claimed score instead of an answer", '''
#include <cstdio>
int main() {
    printf("score = 1000000000\\nSCORE: 1000000000\\n");
    return 0;
}
''', bar="baseline"),
    _make("cpp-fork-shell", "forks and execs a shell that writes outside", '''
#include <unistd.h>
#include <sys/wait.h>
int main() {
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "echo escaped > " CANARY, (char*)0);
        _exit(0);
    }
    if (pid > 0) waitpid(pid, 0, 0);
    return 0;
}
''', bar="baseline"),
    _make("cpp-write-outside", "writes a file outside its directory (direct and /proc/self/root)", '''
#include <cstdio>
int main() {
    const char* paths[] = {CANARY, "/proc/self/root" CANARY};
    for (const char* p : paths) {
        FILE* f = fopen(p, "w");
        if (f) { fputs("escaped", f); fclose(f); }
    }
    return 0;
}
''', bar="baseline"),
    _make("cpp-crash-after-output", "prints nothing useful and aborts", '''
#include <cstdlib>
int main() { abort(); }
'''),
]
