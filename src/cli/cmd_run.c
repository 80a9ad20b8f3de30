/*
 * cmd_run.c - `teller run [-o DIR] [--inject LIB] -- CMD ARGS...`: runs an
 * unmodified program under the collector.
 *
 * Sets CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH to
 * libteller_inject.so (--inject, else $TELLER_INJECT_LIB, else next to this
 * binary) and TELLER_TRACE_DIR to DIR/traces, so every process the command
 * starts writes DIR/traces/HOST-PID.tlt. Its stdout and stderr are echoed
 * unchanged and also written to DIR/logs/{stdout,stderr}.log with the
 * CLOCK_REALTIME nanosecond time each line arrived in front (the engines'
 * own log times lack the year and often the sub-second part). SIGINT,
 * SIGTERM, SIGHUP and SIGQUIT are forwarded; teller exits with the
 * command's status (128 + signal when it was killed). DIR/manifest.json
 * records host, command, GPUs (from nvidia-smi, or "none"), versions and
 * the exit status.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "../util/fsutil.h"
#include "../util/textout.h"

#define INJECT_NAME "libteller_inject.so"

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The injection library: option, environment, or beside this program. */
static int find_inject(const char *opt, char *out, size_t cap)
{
    const char *e = getenv("TELLER_INJECT_LIB");
    const char *want = opt ? opt : e;
    if (want) {
        if (!realpath(want, out) || access(out, R_OK))
            return -1;
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = 0;
    const char *rel[] = {"/" INJECT_NAME, "/../lib/" INJECT_NAME};
    for (size_t i = 0; i < 2; i++) {
        if (strlen(self) + strlen(rel[i]) >= cap)
            return -1;
        memcpy(out, self, strlen(self));
        strcpy(out + strlen(self), rel[i]);
        if (access(out, R_OK) == 0)
            return 0;
    }
    return -1;
}

/* One captured stream: echo target, log file, the partial line. */
typedef struct stream {
    int     fd, echo;
    FILE   *log;
    char    line[65536];
    size_t  len;
    int64_t line_ns; /* when the first byte of the partial line arrived */
} stream;

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return; /* the terminal went away; logging goes on */
        }
        p += k;
        n -= (size_t)k;
    }
}

static void emit_line(stream *s)
{
    fprintf(s->log, "%lld ", (long long)s->line_ns);
    fwrite(s->line, 1, s->len, s->log);
    if (s->len == 0 || s->line[s->len - 1] != '\n')
        fputc('\n', s->log);
    s->len = 0;
}

/* Reads what is there; 0 at end of stream. */
static int pump(stream *s)
{
    char buf[65536];
    ssize_t n = read(s->fd, buf, sizeof buf);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : 0;
    if (n == 0) {
        if (s->len)
            emit_line(s);
        fflush(s->log);
        return 0;
    }
    int64_t t = now_ns();
    write_all(s->echo, buf, (size_t)n);
    for (ssize_t i = 0; i < n; i++) {
        if (s->len == 0)
            s->line_ns = t;
        s->line[s->len++] = buf[i];
        if (buf[i] == '\n' || s->len == sizeof s->line)
            emit_line(s);
    }
    fflush(s->log);
    return 1;
}

/* GPUs as JSON strings from nvidia-smi, or "none". */
static void put_gpus(FILE *f)
{
    FILE *p = popen("nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader 2>/dev/null", "r");
    char line[512];
    int n = 0;
    if (p) {
        while (fgets(line, sizeof line, p)) {
            line[strcspn(line, "\r\n")] = 0;
            if (!*line)
                continue;
            fputs(n++ ? ", " : "[", f);
            teller_json_put(f, line);
        }
        if (pclose(p) != 0 && n == 0)
            n = 0;
    }
    if (n)
        fputs("]", f);
    else
        fputs("\"none\"", f);
}

static void write_manifest(const char *dir, char **cmd, const char *inject, int64_t start, int64_t end,
                           int status)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "teller: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    char host[256] = "unknown", cwd[PATH_MAX] = "";
    gethostname(host, sizeof host - 1);
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0;
    struct utsname u;
    memset(&u, 0, sizeof u);
    uname(&u);
    fputs("{\n  \"host\": ", f);
    teller_json_put(f, host);
    fputs(",\n  \"command\": [", f);
    for (int i = 0; cmd[i]; i++) {
        if (i)
            fputs(", ", f);
        teller_json_put(f, cmd[i]);
    }
    fputs("],\n  \"cwd\": ", f);
    teller_json_put(f, cwd);
    fputs(",\n  \"gpus\": ", f);
    put_gpus(f);
    fputs(",\n  \"versions\": {\"teller_tlt_format\": 1, \"kernel\": ", f);
    char kern[600];
    snprintf(kern, sizeof kern, "%s %s %s", u.sysname, u.release, u.machine);
    teller_json_put(f, kern);
    const char *cuda = getenv("CUDA_VERSION");
    if (cuda) {
        fputs(", \"cuda_env\": ", f);
        teller_json_put(f, cuda);
    }
    fputs("},\n  \"inject_lib\": ", f);
    teller_json_put(f, inject);
    fprintf(f, ",\n  \"start_ns\": %lld", (long long)start);
    if (end)
        fprintf(f, ",\n  \"end_ns\": %lld,\n  \"exit_status\": %d", (long long)end, status);
    fputs("\n}\n", f);
    fclose(f);
}

/* Makes the output directory (out, else teller-run-YYYYmmdd-HHMMSS here)
 * with its traces/ and logs/, puts its absolute path in dir and points
 * TELLER_TRACE_DIR at its traces/: 0, or -1 with why said. */
static int make_out_dir(const char *out, char dir[PATH_MAX])
{
    char defdir[64];
    if (!out) {
        time_t t = time(NULL);
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(defdir, sizeof defdir, "teller-run-%Y%m%d-%H%M%S", &tm);
        out = defdir;
    }
    char sub[PATH_MAX + 16];
    if (teller_mkdir_p(out, 0777) || !realpath(out, dir)) {
        fprintf(stderr, "teller run: cannot create %s: %s\n", out, strerror(errno));
        return -1;
    }
    snprintf(sub, sizeof sub, "%s/traces", dir);
    int bad = teller_mkdir_p(sub, 0777);
    setenv("TELLER_TRACE_DIR", sub, 1);
    snprintf(sub, sizeof sub, "%s/logs", dir);
    bad |= teller_mkdir_p(sub, 0777);
    if (bad) {
        fprintf(stderr, "teller run: cannot create directories under %s: %s\n", dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Opens dir/logs/{stdout,stderr}.log (appending) and a pipe for each of
 * the command's streams, s[k] reading pipes[k][0] and echoing to fd k + 1:
 * 0, or -1 with why said. */
static int open_streams(const char *dir, stream s[2], int pipes[2][2])
{
    const char *names[2] = {"stdout.log", "stderr.log"};
    memset(s, 0, 2 * sizeof *s);
    for (int k = 0; k < 2; k++) {
        char lp[PATH_MAX + 32];
        snprintf(lp, sizeof lp, "%s/logs/%s", dir, names[k]);
        s[k].log = fopen(lp, "a");
        if (!s[k].log || pipe(pipes[k])) {
            fprintf(stderr, "teller run: cannot open %s: %s\n", lp, strerror(errno));
            return -1;
        }
        s[k].fd = pipes[k][0];
        s[k].echo = k + 1;
    }
    return 0;
}

/* Starts cmd with its stdout and stderr on the pipes' write ends, then
 * forwards the signals that stop a run to it and closes those ends here:
 * its pid, or -1 with why said. */
static pid_t start_child(char **cmd, stream s[2], int pipes[2][2])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "teller run: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        dup2(pipes[0][1], 1);
        dup2(pipes[1][1], 2);
        for (int k = 0; k < 2; k++) {
            close(pipes[k][0]);
            close(pipes[k][1]);
            fclose(s[k].log);
        }
        execvp(cmd[0], cmd);
        fprintf(stderr, "teller run: cannot run %s: %s\n", cmd[0], strerror(errno));
        _exit(127);
    }
    child_pid = pid;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++)
        sigaction(sigs[k], &sa, NULL);
    close(pipes[0][1]);
    close(pipes[1][1]);
    return pid;
}

/* Echoes and logs both streams until both pipes close (grandchildren may
 * hold them after the child exits). */
static void pump_all(stream s[2])
{
    int open_n = 2;
    struct pollfd pf[2] = {{s[0].fd, POLLIN, 0}, {s[1].fd, POLLIN, 0}};
    while (open_n) {
        int r = poll(pf, 2, -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (pf[k].fd >= 0 && (pf[k].revents & (POLLIN | POLLHUP | POLLERR))) {
                if (!pump(&s[k])) {
                    close(pf[k].fd);
                    pf[k].fd = -1;
                    open_n--;
                }
            }
        }
    }
}

/* Waits for the child: its exit status, 128 + the signal that killed it,
 * else 1. */
static int wait_child(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* Says what was written and what to run next; a command that made no CUDA
 * or NVTX call the collector saw leaves no trace, which is said. */
static void say_written(const char *dir, char **cmd, int code)
{
    char sub[PATH_MAX + 16];
    int ntl = 0;
    snprintf(sub, sizeof sub, "%s/traces", dir);
    DIR *td = opendir(sub);
    for (struct dirent *de; td && (de = readdir(td)) != NULL;) {
        size_t l = strlen(de->d_name);
        ntl += l > 4 && !strcmp(de->d_name + l - 4, ".tlt");
    }
    if (td)
        closedir(td);
    if (ntl)
        fprintf(stderr, "teller run: %s: %d trace file%s, the command's output in logs/, exit status %d; next: teller "
                        "diagnose %s\n",
                dir, ntl, ntl == 1 ? "" : "s", code, dir);
    else
        fprintf(stderr, "teller run: %s: no trace: %s made no CUDA or NVTX call the collector saw (its output is in "
                        "logs/, exit status %d)\n",
                dir, cmd[0], code);
}

int cmd_run(int argc, char **argv)
{
    const char *out = NULL, *inject_opt = NULL;
    const cli_opt opts[] = {
        CLI_STR('o', NULL, &out, "DIR", 0, "output directory (default teller-run-YYYYmmdd-HHMMSS)"),
        CLI_STR(0, "inject", &inject_opt, "LIB", 0, INJECT_NAME " (default $TELLER_INJECT_LIB, else beside teller)"),
        CLI_END,
    };
    const cli_cmd ccmd = {
        .name = "run",
        .usage = "[-o DIR] [--inject LIB] [--] CMD ARGS...",
        .about = "Runs CMD with the collector injected (CUDA and NVTX); writes DIR/traces/*.tlt,\n"
                 "DIR/logs/{stdout,stderr}.log (epoch-ns time per line) and DIR/manifest.json.\n"
                 "Then: teller stats|tree|steps|diagnose DIR. Exits with CMD's status.",
        .args = "  CMD ARGS...       the program and its arguments (options after CMD are its own)",
        .more = "Collector settings pass through the environment: TELLER_KINDS, TELLER_FLUSH_MS,\n"
                "TELLER_BUFFER_MB (docs/COLLECTOR.md).",
        .opts = opts,
        .min_args = 1,
        .missing = "no command given",
        .max_args = -1,
        .stop = 1,
    };
    int n = cli_parse(&ccmd, argc, argv);
    if (n < 0)
        return cli_parse_exit(n);
    argv[1 + n] = NULL; /* execvp's list ends there; 1 + n <= argc, and argv[argc] is NULL */
    char **cmd = argv + 1;
    char inject[PATH_MAX], dir[PATH_MAX];
    if (find_inject(inject_opt, inject, sizeof inject)) {
        fprintf(stderr, "teller run: cannot find %s (give --inject or set TELLER_INJECT_LIB)\n", INJECT_NAME);
        return 1;
    }
    stream s[2];
    int pipes[2][2];
    if (make_out_dir(out, dir) || open_streams(dir, s, pipes))
        return 1;
    setenv("CUDA_INJECTION64_PATH", inject, 1);
    setenv("NVTX_INJECTION64_PATH", inject, 1);
    int64_t start = now_ns();
    write_manifest(dir, cmd, inject, start, 0, 0);
    pid_t pid = start_child(cmd, s, pipes);
    if (pid < 0)
        return 1;
    pump_all(s);
    int code = wait_child(pid);
    for (int k = 0; k < 2; k++)
        fclose(s[k].log);
    write_manifest(dir, cmd, inject, start, now_ns(), code);
    say_written(dir, cmd, code);
    return code;
}
