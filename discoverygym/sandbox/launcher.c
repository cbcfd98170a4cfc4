#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* usage: launcher STATUS_FD AS_BYTES CPU_S FSIZE_BYTES WALL_MS FLAGS WRITE_DIR UID GID MAX_FILES PROG [ARGS...]
   FLAGS: 1 = no fork (seccomp), 2 = no sockets/ptrace (seccomp), 4 = Landlock if the kernel has it,
   8 = Landlock required (exit 122 without it), 16 = signals only to the program and its process
   group, no pidfd_send_signal/pidfd_getfd/process_vm_readv/writev (seccomp). System V IPC and POSIX
   message queues are refused in every mode (seccomp). WRITE_DIR: the only directory the program may
   change (with /dev/null for writing). UID/GID >= 0: switch to them (needs root) before exec.
   PROG is opened before the switch and executed through its descriptor. MAX_FILES > 0: WRITE_DIR
   is a file system of the run's own (bubblewrap's private /tmp tmpfs); its used inodes are
   polled (statfs, every 10 ms) and the group killed once the program added more than MAX_FILES.
   With flag 16 the program also gets RLIMIT_NOFILE = NOFILE_CAP.
   Status line: TIMED_OUT CODE SIGNAL WALL USER SYS MAXRSS_KB FILES_OVER FILES_ADDED (-1: not counted). */

#define NOFILE_CAP 256

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

#define LL_CREATE 444
#define LL_ADD 445
#define LL_RESTRICT 446
#define LL_WRITE_FILE (1ULL << 1)
#define LL_WRITE_V1 ((1ULL << 1) | (1ULL << 4) | (1ULL << 5) | (1ULL << 6) | (1ULL << 7) | (1ULL << 8) \
                     | (1ULL << 9) | (1ULL << 10) | (1ULL << 11) | (1ULL << 12))
#define LL_REFER (1ULL << 13)
#define LL_TRUNCATE (1ULL << 14)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_attr { uint64_t fs, net, scoped; };
struct __attribute__((packed)) ll_path { uint64_t allowed; int32_t parent_fd; };

/* A Landlock ruleset (not yet enforced): changes allowed only below dir, writes to /dev/null;
   from ABI 6 no signals to, and no abstract sockets of, processes outside. -1 when unavailable. */
static int landlock_ruleset(const char *dir) {
    long abi = syscall(LL_CREATE, NULL, 0, 1);
    if (abi < 1) return -1;
    struct ll_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.fs = LL_WRITE_V1 | (abi >= 2 ? LL_REFER : 0) | (abi >= 3 ? LL_TRUNCATE : 0);
    size_t size = 8;
    if (abi >= 6) { attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL; size = sizeof attr; }
    int rs = (int)syscall(LL_CREATE, &attr, size, 0);
    if (rs < 0) return -1;
    const char *paths[2] = {dir, "/dev/null"};
    uint64_t rights[2] = {attr.fs, attr.fs & (LL_WRITE_FILE | LL_TRUNCATE)};
    for (int i = 0; i < 2; i++) {
        int fd = open(paths[i], O_PATH | O_CLOEXEC);
        if (fd < 0) { close(rs); return -1; }
        struct ll_path rule = {rights[i], fd};
        long r = syscall(LL_ADD, rs, 1, &rule, 0);
        close(fd);
        if (r != 0) { close(rs); return -1; }
    }
    return rs;
}

/* Append to f (at n) a rule for syscall nr: allowed when the low 32 bits of its first argument
   (the kernel reads a pid_t, an int, there) equal one of the k values, else EPERM. */
static int only_targets(struct sock_filter *f, int n, unsigned nr, const uint32_t *v, int k) {
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, (unsigned char)(k + 3));
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                                          + 4
#endif
                                          );
    for (int i = 0; i < k; i++)
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, v[i], (unsigned char)(k - i), 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    return n;
}

static int install_filter(int flags) {
#ifdef ARCH
    struct sock_filter f[192];
    int n = 0;
#define S(c, k) f[n++] = (struct sock_filter)BPF_STMT(c, k)
#define J(c, k, t, e) f[n++] = (struct sock_filter)BPF_JUMP(c, k, t, e)
#define DENY(nr, err) J(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1); S(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err))
    S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    J(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
    S(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    J(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1);
    S(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
    if (flags & 2) {
        DENY(__NR_socket, EPERM);
        DENY(__NR_ptrace, EPERM);
    }
    /* Always: System V IPC and POSIX message queues. Their objects outlive the program and,
       without an IPC namespace (no bubblewrap), the sandbox: a shared-memory segment kept answers
       between runs (issue 40). */
    static const unsigned ipc[] = {
        __NR_shmget, __NR_shmat, __NR_shmctl, __NR_shmdt, __NR_semget, __NR_semop, __NR_semctl,
        __NR_semtimedop, __NR_msgget, __NR_msgsnd, __NR_msgrcv, __NR_msgctl, __NR_mq_open,
        __NR_mq_unlink, __NR_mq_timedsend, __NR_mq_timedreceive, __NR_mq_notify, __NR_mq_getsetattr};
    for (unsigned i = 0; i < sizeof ipc / sizeof ipc[0]; i++) { DENY(ipc[i], EPERM); }
    if (flags & 1) {
#ifdef __NR_fork
        DENY(__NR_fork, EPERM);
#endif
#ifdef __NR_vfork
        DENY(__NR_vfork, EPERM);
#endif
#ifdef __NR_clone3
        DENY(__NR_clone3, ENOSYS);
#endif
        J(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4);
        S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
        J(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1);
        S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        S(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    }
    if (flags & 16) {
        /* Signals only to the program itself (pid = pgid = getpid(), called in the child just
           before exec) and its process group; threads signal each other with tgkill(own tgid). */
        uint32_t self = (uint32_t)getpid();
        uint32_t group[3] = {0, self, (uint32_t)-(int32_t)self};
        n = only_targets(f, n, __NR_kill, group, 3);
        n = only_targets(f, n, __NR_rt_sigqueueinfo, group, 3);
        n = only_targets(f, n, __NR_tgkill, &self, 1);
        n = only_targets(f, n, __NR_rt_tgsigqueueinfo, &self, 1);
        n = only_targets(f, n, __NR_tkill, &self, 1);
#ifdef __NR_pidfd_send_signal
        DENY(__NR_pidfd_send_signal, EPERM);
#endif
#ifdef __NR_pidfd_getfd
        DENY(__NR_pidfd_getfd, EPERM);
#endif
        DENY(__NR_process_vm_readv, EPERM);
        DENY(__NR_process_vm_writev, EPERM);
    }
    S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {(unsigned short)n, f};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
#else
    (void)flags;
    return 0;
#endif
}

/* Inodes in use on the file system holding dir, -1 when it does not count them. */
static long long inodes_used(const char *dir) {
    struct statfs s;
    if (statfs(dir, &s) != 0 || s.f_files == 0) return -1;
    return (long long)(s.f_files - s.f_ffree);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void fail(const char *what) {
    fprintf(stderr, "launcher: %s: %s\n", what, strerror(errno));
    _exit(122);
}

int main(int argc, char **argv) {
    if (argc < 12) { fprintf(stderr, "launcher: bad arguments\n"); return 120; }
    int status_fd = atoi(argv[1]);
    rlim_t as_bytes = strtoull(argv[2], 0, 10), cpu_s = strtoull(argv[3], 0, 10);
    rlim_t fsize = strtoull(argv[4], 0, 10);
    long wall_ms = atol(argv[5]);
    int flags = atoi(argv[6]);
    const char *write_dir = argv[7];
    long uid = atol(argv[8]), gid = atol(argv[9]);
    long long max_files = atoll(argv[10]);
    char **prog = argv + 11;
    long long base_inodes = max_files > 0 ? inodes_used(write_dir) : -1;
    pid_t launcher_pid = getpid();
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    double start = now();
    pid_t pid = fork();
    if (pid < 0) { perror("launcher: fork"); return 121; }
    if (pid == 0) {
        setpgid(0, 0);
        sigprocmask(SIG_SETMASK, &old, 0);
        close(status_fd);
        struct rlimit r;
        r.rlim_cur = r.rlim_max = as_bytes; setrlimit(RLIMIT_AS, &r);
        r.rlim_cur = cpu_s; r.rlim_max = cpu_s + 1; setrlimit(RLIMIT_CPU, &r);
        r.rlim_cur = r.rlim_max = fsize; setrlimit(RLIMIT_FSIZE, &r);
        r.rlim_cur = r.rlim_max = 0; setrlimit(RLIMIT_CORE, &r);
        if ((flags & 16) && getrlimit(RLIMIT_NOFILE, &r) == 0) {
            if (r.rlim_max > NOFILE_CAP) r.rlim_max = NOFILE_CAP;
            r.rlim_cur = r.rlim_max;
            setrlimit(RLIMIT_NOFILE, &r);
        }
        int exe = open(prog[0], O_RDONLY | O_CLOEXEC);
        if (exe < 0) { errno = errno ? errno : ENOENT; fail("open program"); }
        int ruleset = -1;
        if (flags & 12) {
            ruleset = landlock_ruleset(write_dir);
            if (ruleset < 0 && (flags & 8)) { errno = ENOSYS; fail("Landlock is required but unavailable"); }
        }
        if (gid >= 0 && (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0)) fail("setgid");
        if (uid >= 0 && (setresuid(uid, uid, uid) != 0 || geteuid() != (uid_t)uid)) fail("setuid");
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* after the switch: changing credentials clears it */
        if (getppid() != launcher_pid) _exit(124);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs");
        if (ruleset >= 0 && syscall(LL_RESTRICT, ruleset, 0) != 0) fail("Landlock");
        if (ruleset >= 0) close(ruleset);
        if (install_filter(flags) != 0) fail("seccomp");
        extern char **environ;
        fexecve(exe, prog, environ);
        perror("launcher: exec");
        _exit(123);
    }
    setpgid(pid, pid);
    int timed_out = 0, files_over = 0, st = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    for (;;) {
        pid_t w = wait4(pid, &st, WNOHANG, &ru);
        if (w == pid) break;
        double left = start + wall_ms / 1000.0 - now();
        if (base_inodes >= 0 && inodes_used(write_dir) - base_inodes > max_files) {
            files_over = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            wait4(pid, &st, 0, &ru);
            break;
        }
        if (left <= 0) {
            timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            wait4(pid, &st, 0, &ru);
            break;
        }
        if (base_inodes >= 0 && left > 0.01) left = 0.01;
        struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
        sigtimedwait(&chld, 0, &ts);
    }
    double wall = now() - start;
    kill(-pid, SIGKILL); /* leftovers of the group (compiler helpers) */
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1, sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    long long added = base_inodes >= 0 ? inodes_used(write_dir) - base_inodes : -1;
    if (base_inodes >= 0 && added > max_files) files_over = 1;
    dprintf(status_fd, "%d %d %d %.6f %.6f %.6f %ld %d %lld\n", timed_out, code, sig, wall,
            ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6,
            ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6, ru.ru_maxrss, files_over, added);
    return 0;
}
