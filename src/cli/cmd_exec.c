/*
 * cmd_exec.c: "rlock exec NAME [options] -- CMD [ARGS...]": flock(1)
 * across machines. Takes lock NAME, runs CMD while the watchdog renews the
 * lease, releases the lock and exits with CMD's status.
 *
 * Threads. The lock's owner is the thread that took it, and only that
 * thread may release it, so a "lock thread" does both: it acquires, tells
 * the main thread, waits to be asked to release, and releases. The main
 * thread only waits for signals, with sigwaitinfo(): every signal it cares
 * about is blocked in the whole process (it is blocked before the client
 * starts its threads, which inherit the mask) and arrives as an event:
 *   SIGUSR1   from the lock thread (acquired or failed) and from the
 *             lost-lock callback (rlock_on_lost(), on the client's
 *             notifier thread); the flags in exec_run say which
 *   SIGCHLD   the command ended
 *   SIGINT, SIGTERM, SIGHUP, SIGQUIT
 *             while waiting for the lock: give up and die by the signal;
 *             while CMD runs: pass it on to CMD, unless the terminal sent
 *             it (si_code SI_KERNEL), since the terminal already signalled
 *             CMD's process group, which CMD shares with us
 * Losing the lock is learnt only from the lost-lock callback, nothing
 * polls. A fixed lease (--lease) is not renewed, so it is lost when it runs
 * out: that moment is known, and a timer (sigtimedwait's timeout) marks it.
 *
 * The child dies with us (PR_SET_PDEATHSIG): a command left running after
 * rlock is killed would run unlocked once the lease runs out.
 *
 * The child restores the signal mask and SIGPIPE before exec; descriptors
 * the client opened (its Redis connections) are marked close-on-exec so CMD
 * does not inherit them, while the caller's own descriptors pass through,
 * as with flock(1). If exec fails, the child reports errno through a
 * close-on-exec pipe and the parent prints the message.
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char exec_help[] =
    "Usage: rlock exec [OPTIONS] NAME [--] CMD [ARGS...]\n"
    "\n"
    "Takes lock NAME (waiting for it if needed), runs CMD while holding it,\n"
    "releases it and exits with CMD's exit status: flock(1) across\n"
    "machines. The lease is renewed by the watchdog while CMD runs (every\n"
    "third of lockWatchdogTimeout, 30 s by default; set it in a --config\n"
    "file), so a crashed holder's lock frees itself within that time.\n"
    "\n"
    "If the lock is lost while CMD runs (force-unlocked, expired or taken\n"
    "while Redis was unreachable), CMD gets SIGTERM (see --signal), then\n"
    "SIGKILL if it is still running --kill-after later, and rlock exits 76.\n"
    "Only CMD's own process is signalled; a shell script that starts\n"
    "long-running children should pass the signal on (or 'exec' them).\n"
    "SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to rlock are passed on to CMD\n"
    "(the terminal's Ctrl-C already reaches CMD directly); while rlock is\n"
    "still waiting for the lock they end rlock instead. If rlock itself\n"
    "dies (even by SIGKILL), CMD gets SIGKILL: nothing renews the lease any\n"
    "more (not for set-user-ID commands such as sudo; see docs/cli.md).\n"
    "\n"
    "Options:\n"
    "  --wait MS         give up after MS milliseconds (0: one attempt;\n"
    "                    -1, the default: wait as long as it takes)\n"
    "  --lease MS        a fixed lease of MS milliseconds with no renewal;\n"
    "                    when it runs out CMD is treated as having lost the\n"
    "                    lock (default: the watchdog renews the lease)\n"
    "  --signal SIG      what CMD gets when the lock is lost (default TERM;\n"
    "                    a name such as INT or SIGINT, or a number)\n"
    "  --kill-after MS   send SIGKILL this long after that signal if CMD is\n"
    "                    still running (default 10000; 0: at once)\n"
    "  --url URL, --config FILE, -h/--help: see 'rlock --help'\n"
    "\n"
    "CMD starts at the first argument after NAME, or after '--'.\n"
    "\n"
    "Exit status:\n"
    "  CMD's status  the lock was held throughout\n"
    "  128+N         CMD was killed by signal N\n"
    "  75            the lock was not acquired within --wait\n"
    "  76            the lock was lost while CMD ran\n"
    "  126, 127      CMD could not be run, or was not found\n"
    "  1, 64, 69, 70, 77, 78: as 'rlock --help' lists\n"
    "CMD's own statuses pass through unchanged, so a CMD that itself exits\n"
    "75 or 76 cannot be told apart from rlock's.\n";

enum {
    OPT_WAIT = CLI_OPT_FIRST_OWN,
    OPT_LEASE,
    OPT_SIGNAL,
    OPT_KILL_AFTER,
};

#define LEASE_MAX      ((int64_t)1 << 50) /* rlock_trylock()'s limit */
#define MAX_TRACKED_FD 4096

/* What the main thread, the lock thread and the lost-lock callback share. */
typedef struct exec_run {
    rlock *l;
    int64_t wait_ms;
    int64_t lease_ms;
    pthread_t main_thread;
    pthread_t lock_thread;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool release; /* under mu: the lock thread should release now */

    int acquire_rc;         /* written before acquired is set */
    atomic_bool acquired;   /* the attempt is over (acquire_rc says how) */
    int release_rc;         /* read after joining the lock thread */
    atomic_int lost_reason; /* 0, or the first RLOCK_LOST_* reported */
} exec_run;

/* Wakes the main thread out of sigwaitinfo(). */
static void wake_main(exec_run *r)
{
    pthread_kill(r->main_thread, SIGUSR1);
}

/* The lost-lock callback: runs on the client's notifier thread. */
static void on_lost(const char *name, uint64_t owner, uint64_t hold,
                    int reason, void *arg)
{
    exec_run *r = arg;
    int none = 0;
    (void)name;
    (void)owner;
    (void)hold; /* its one hold */
    atomic_compare_exchange_strong(&r->lost_reason, &none, reason);
    wake_main(r);
}

/* The lock thread: acquire, wait for the word, release. */
static void *lock_main(void *arg)
{
    exec_run *r = arg;
    r->acquire_rc = rlock_trylock(r->l, r->wait_ms, r->lease_ms);
    atomic_store(&r->acquired, true);
    wake_main(r);
    if (r->acquire_rc != 0)
        return NULL;
    pthread_mutex_lock(&r->mu);
    while (!r->release)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    r->release_rc = rlock_unlock(r->l);
    return NULL;
}

/* Asks the lock thread to release and waits for it; returns its result. */
static int release_lock(exec_run *r)
{
    pthread_mutex_lock(&r->mu);
    r->release = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->lock_thread, NULL);
    return r->release_rc;
}

static const char *lost_text(int reason)
{
    switch (reason) {
    case RLOCK_LOST_GONE:
        return "it was deleted, force-unlocked or expired";
    case RLOCK_LOST_TAKEN:
        return "another client holds it now";
    case RLOCK_LOST_EXPIRED:
        return "renewals failed for a whole lease";
    case RLOCK_LOST_ABANDONED:
        return "its owning thread exited";
    default:
        return "its fixed lease ran out";
    }
}

/* ------------------------------------------------------------------------ */
/* Arguments                                                                */
/* ------------------------------------------------------------------------ */

static const struct {
    const char *name;
    int sig;
} signal_names[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},
    {"KILL", SIGKILL}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
    {"TERM", SIGTERM}, {"ALRM", SIGALRM}, {NULL, 0},
};

/* Parses a signal name ("TERM", "SIGTERM", any case) or number. Returns
 * the signal, or 0. */
static int parse_signal(const char *text)
{
    char *end;
    long n = strtol(text, &end, 10);
    if (*text != '\0' && *end == '\0')
        return n >= 1 && n <= SIGRTMAX ? (int)n : 0;
    if (strncasecmp(text, "SIG", 3) == 0)
        text += 3;
    for (int i = 0; signal_names[i].name != NULL; i++)
        if (strcasecmp(text, signal_names[i].name) == 0)
            return signal_names[i].sig;
    return 0;
}

/* Writes "SIGTERM" (or "signal 40") for sig into buf. */
static const char *signal_text(int sig, char *buf, size_t len)
{
    for (int i = 0; signal_names[i].name != NULL; i++)
        if (signal_names[i].sig == sig) {
            snprintf(buf, len, "SIG%s", signal_names[i].name);
            return buf;
        }
    snprintf(buf, len, "signal %d", sig);
    return buf;
}

/* ------------------------------------------------------------------------ */
/* Descriptors                                                              */
/* ------------------------------------------------------------------------ */

/* Marks in open[] the descriptors below MAX_TRACKED_FD open right now. */
static void note_open_fds(unsigned char *open)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        int fd = atoi(e->d_name);
        if (fd >= 0 && fd < MAX_TRACKED_FD && fd != dirfd(d) &&
            e->d_name[0] != '.')
            open[fd] = 1;
    }
    closedir(d);
}

/* Sets close-on-exec on every descriptor opened since `before` was
 * noted (the client's sockets and pipes). */
static void cloexec_new_fds(const unsigned char *before)
{
    unsigned char now[MAX_TRACKED_FD] = {0};
    note_open_fds(now);
    for (int fd = 3; fd < MAX_TRACKED_FD; fd++) {
        if (now[fd] && !before[fd]) {
            int flags = fcntl(fd, F_GETFD);
            if (flags >= 0)
                fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Running the command                                                      */
/* ------------------------------------------------------------------------ */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void no_op(int sig)
{
    (void)sig;
}

/* Ends the process by sig, as if it had never been caught. */
static void die_by(int sig)
{
    sigset_t one;
    signal(sig, SIG_DFL);
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    _exit(128 + sig); /* not reached unless sig is ignored by default */
}

/* Starts cmd in a child with the caller's signal mask. Returns its pid, or
 * -1 with *status set after printing why. */
static pid_t spawn(char **cmd, const sigset_t *old_mask, int *status)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        cli_error("cannot start '%s': %s", cmd[0], strerror(errno));
        *status = CLI_SOFTWARE;
        return -1;
    }
    pid_t guardian = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        cli_error("cannot start '%s': %s", cmd[0], strerror(errno));
        close(pipefd[0]);
        close(pipefd[1]);
        *status = CLI_SOFTWARE;
        return -1;
    }
    if (pid == 0) {
        close(pipefd[0]);
        /* CMD must not outlive the process that holds the lock for it:
         * once we are gone nobody renews the lease, and another holder may
         * start beside CMD when it runs out. SIGKILL, not --signal: there
         * is no one left to escalate if CMD ignores a gentler one. The
         * kernel sends it when the forking thread exits, which here is the
         * main thread, alive until the process ends. getppid() closes the
         * race of a guardian that died before prctl(). */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != guardian)
            _exit(CLI_SOFTWARE);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_SETMASK, old_mask, NULL);
        execvp(cmd[0], cmd);
        int e = errno;
        ssize_t n = write(pipefd[1], &e, sizeof(e));
        (void)n;
        _exit(e == ENOENT ? CLI_NOT_FOUND : CLI_CANNOT_RUN);
    }
    close(pipefd[1]);
    int e = 0;
    ssize_t n;
    do
        n = read(pipefd[0], &e, sizeof(e));
    while (n < 0 && errno == EINTR);
    close(pipefd[0]);
    if (n == (ssize_t)sizeof(e)) {
        waitpid(pid, NULL, 0);
        cli_error("cannot run '%s': %s", cmd[0], strerror(e));
        *status = e == ENOENT ? CLI_NOT_FOUND : CLI_CANNOT_RUN;
        return -1;
    }
    return pid;
}

typedef struct supervise {
    exec_run *run;
    const char *name;
    pid_t pid;
    int stop_signal;
    int64_t kill_after_ms;
    int64_t lease_deadline; /* CLOCK_MONOTONIC ms, or -1 */
    int64_t kill_deadline;  /* or -1 */
    bool lost;
} supervise;

/* The lock is gone: stop the command. */
static void lock_lost(supervise *sv, int reason)
{
    char sig[24];
    if (sv->lost)
        return;
    sv->lost = true;
    cli_error("lost lock '%s' while the command ran (%s); sending %s to "
              "pid %d",
              sv->name, lost_text(reason),
              signal_text(sv->stop_signal, sig, sizeof(sig)), (int)sv->pid);
    kill(sv->pid, sv->stop_signal);
    sv->kill_deadline = now_ms() + sv->kill_after_ms;
}

/* Waits for the command to end, handling signals, lock loss and the kill
 * timer. Returns the command's wait status. */
static int supervise_child(supervise *sv, const sigset_t *handled)
{
    for (;;) {
        int64_t now = now_ms(), until = -1;
        if (sv->kill_deadline >= 0)
            until = sv->kill_deadline;
        if (!sv->lost && sv->lease_deadline >= 0 &&
            (until < 0 || sv->lease_deadline < until))
            until = sv->lease_deadline;
        siginfo_t si;
        int sig;
        if (until >= 0) {
            int64_t left = until > now ? until - now : 0;
            struct timespec ts = {.tv_sec = left / 1000,
                                  .tv_nsec = (left % 1000) * 1000000};
            sig = sigtimedwait(handled, &si, &ts);
        } else {
            sig = sigwaitinfo(handled, &si);
        }
        if (sig < 0) {
            if (errno != EAGAIN)
                continue; /* EINTR */
            now = now_ms();
            if (!sv->lost && sv->lease_deadline >= 0 &&
                now >= sv->lease_deadline)
                lock_lost(sv, 0);
            else if (sv->kill_deadline >= 0 && now >= sv->kill_deadline) {
                cli_error("the command (pid %d) is still running; sending "
                          "SIGKILL",
                          (int)sv->pid);
                kill(sv->pid, SIGKILL);
                sv->kill_deadline = -1;
            }
            continue;
        }
        if (sig == SIGCHLD) {
            int status;
            pid_t got;
            do
                got = waitpid(sv->pid, &status, WNOHANG);
            while (got < 0 && errno == EINTR);
            if (got == sv->pid)
                return status;
        } else if (sig == SIGUSR1) {
            int reason = atomic_load(&sv->run->lost_reason);
            if (reason != 0)
                lock_lost(sv, reason);
        } else if (si.si_code != SI_KERNEL) {
            kill(sv->pid, sig); /* sent to us by a process: pass it on */
        }
    }
}

/* Returns the exit status for a wait status, as shells compute it. */
static int status_of(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return CLI_SOFTWARE;
}

/* ------------------------------------------------------------------------ */
/* rlock exec                                                               */
/* ------------------------------------------------------------------------ */

typedef struct exec_args {
    const char *name;
    char **cmd;
    int64_t wait_ms;
    int64_t lease_ms;
    int stop_signal;
    int64_t kill_after_ms;
} exec_args;

/* Parses exec's arguments; returns 0, -1 after printing help, or an exit
 * status. */
static int parse_args(int argc, char **argv, cli_common *cm, exec_args *a)
{
    static const cli_opt opts[] = {
        {"wait", OPT_WAIT, true},
        {"lease", OPT_LEASE, true},
        {"signal", OPT_SIGNAL, true},
        {"kill-after", OPT_KILL_AFTER, true},
        {NULL, 0, false},
    };
    cli_parser p;
    const char *value;
    int cmd_at = -1;

    *a = (exec_args){.wait_ms = RLOCK_WAIT_FOREVER,
                     .lease_ms = RLOCK_LEASE_WATCHDOG,
                     .stop_signal = SIGTERM,
                     .kill_after_ms = 10000};
    cli_parser_init(&p, "exec", argc, argv);
    for (int id;
         cmd_at < 0 && (id = cli_next(&p, opts, &value)) != CLI_ARG_END;) {
        int st = CLI_OK;
        switch (id) {
        case CLI_ARG_ERROR:
            return CLI_USAGE;
        case CLI_OPT_HELP:
            fputs(exec_help, stdout);
            return -1;
        case CLI_ARG_POSITIONAL:
            if (a->name == NULL)
                a->name = value;
            else
                cmd_at = p.i - 1; /* the command starts here */
            break;
        case OPT_WAIT:
            st =
                cli_parse_ms("exec", "wait", value, -1, INT32_MAX, &a->wait_ms);
            break;
        case OPT_LEASE:
            st = cli_parse_ms("exec", "lease", value, 1, LEASE_MAX,
                              &a->lease_ms);
            break;
        case OPT_KILL_AFTER:
            st = cli_parse_ms("exec", "kill-after", value, 0, INT32_MAX,
                              &a->kill_after_ms);
            break;
        case OPT_SIGNAL:
            a->stop_signal = parse_signal(value);
            if (a->stop_signal == 0)
                st = cli_usage_error("exec",
                                     "--signal wants a signal name such as "
                                     "TERM or a number, not '%s'",
                                     value);
            break;
        default:
            cli_take_common(cm, id, value);
            break;
        }
        if (st != 0)
            return st;
    }
    if (cmd_at < 0 && p.rest >= 0)
        cmd_at = p.rest;
    if (a->name == NULL)
        return cli_usage_error("exec", "missing the lock NAME");
    if (a->name[0] == '\0')
        return cli_usage_error("exec", "a lock NAME cannot be empty");
    if (cmd_at < 0 || cmd_at >= argc)
        return cli_usage_error("exec", "missing the command to run");
    a->cmd = argv + cmd_at;
    return CLI_OK;
}

/* Waits until the lock thread's attempt is over. A stop signal meanwhile
 * ends the process by that signal (releasing first if the attempt had just
 * succeeded). */
static void await_acquire(exec_run *r, const sigset_t *handled)
{
    while (!atomic_load(&r->acquired)) {
        siginfo_t si;
        int sig = sigwaitinfo(handled, &si);
        if (sig < 0 || sig == SIGUSR1 || sig == SIGCHLD)
            continue;
        if (atomic_load(&r->acquired) && r->acquire_rc == 0)
            release_lock(r);
        die_by(sig);
    }
}

int cli_cmd_exec(int argc, char **argv, cli_common *cm)
{
    exec_args a;
    int st = parse_args(argc, argv, cm, &a);
    if (st != 0)
        return st < 0 ? CLI_OK : st;

    static unsigned char startup_fds[MAX_TRACKED_FD];
    note_open_fds(startup_fds);

    sigset_t handled, old_mask;
    sigemptyset(&handled);
    sigaddset(&handled, SIGINT);
    sigaddset(&handled, SIGTERM);
    sigaddset(&handled, SIGHUP);
    sigaddset(&handled, SIGQUIT);
    sigaddset(&handled, SIGCHLD);
    sigaddset(&handled, SIGUSR1);
    /* SIGCHLD's default is to discard it; a handler keeps it pending */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = no_op;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a dropped socket is an error, not death */
    pthread_sigmask(SIG_BLOCK, &handled, &old_mask);

    rlock_client *c;
    st = cli_connect(cm, NULL, &c);
    if (st != 0)
        return st;
    exec_run run = {.wait_ms = a.wait_ms,
                    .lease_ms = a.lease_ms,
                    .main_thread = pthread_self()};
    pthread_mutex_init(&run.mu, NULL);
    pthread_cond_init(&run.cv, NULL);
    atomic_init(&run.acquired, false);
    atomic_init(&run.lost_reason, 0);
    int rc = rlock_get(c, a.name, &run.l);
    if (rc == 0)
        rc = rlock_on_lost(run.l, on_lost, &run);
    if (rc == 0 && pthread_create(&run.lock_thread, NULL, lock_main, &run))
        rc = RLOCK_ENOMEM;
    if (rc != 0) {
        cli_error("cannot use lock '%s': %s", a.name, rlock_strerror(rc));
        st = cli_status_of(rc);
        goto out;
    }

    await_acquire(&run, &handled);
    rc = run.acquire_rc;
    if (rc != 0) {
        pthread_join(run.lock_thread, NULL);
        if (rc == RLOCK_ETIMEDOUT) {
            cli_error("lock '%s' is held elsewhere; gave up after %lld ms",
                      a.name, (long long)a.wait_ms);
            st = CLI_TEMPFAIL;
        } else if (rc == RLOCK_EPROTO || rc == RLOCK_ESERVER) {
            cli_error("'%s' is not a lock (Redis refused the lock script: "
                      "%s)",
                      a.name, rlock_strerror(rc));
            st = CLI_FAILURE;
        } else {
            cli_error("cannot acquire '%s': %s", a.name, rlock_strerror(rc));
            st = cli_status_of(rc);
        }
        goto out;
    }

    supervise sv = {.run = &run,
                    .name = a.name,
                    .stop_signal = a.stop_signal,
                    .kill_after_ms = a.kill_after_ms,
                    .lease_deadline =
                        a.lease_ms > 0 ? now_ms() + a.lease_ms : -1,
                    .kill_deadline = -1};
    int reason = atomic_load(&run.lost_reason);
    if (reason != 0) {
        cli_error("lost lock '%s' before the command started (%s)", a.name,
                  lost_text(reason));
        release_lock(&run);
        st = CLI_LOST;
        goto out;
    }
    cloexec_new_fds(startup_fds);
    sv.pid = spawn(a.cmd, &old_mask, &st);
    if (sv.pid < 0) {
        release_lock(&run);
        goto out;
    }
    st = status_of(supervise_child(&sv, &handled));
    rc = release_lock(&run);
    if (sv.lost) {
        st = CLI_LOST;
    } else if (rc == RLOCK_ELOST) {
        cli_error("lock '%s' was lost while the command ran (found at "
                  "release)",
                  a.name);
        st = CLI_LOST;
    } else if (rc == RLOCK_ENOTIFY) {
        /* released: only its waiters were not told, and they re-check */
        cli_error("released lock '%s', but %s", a.name, rlock_strerror(rc));
    } else if (rc != 0) {
        cli_error("could not release lock '%s': %s (it expires on its own)",
                  a.name, rlock_strerror(rc));
    }
out:
    rlock_free(run.l);
    rlock_client_free(c);
    pthread_mutex_destroy(&run.mu);
    pthread_cond_destroy(&run.cv);
    return st;
}
