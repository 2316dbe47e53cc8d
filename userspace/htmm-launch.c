// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-launch: run a command, or manage a running process, with htmm.
 *
 *   htmm-launch [--node N] [--quiet] [--] CMD [ARGS...]
 *   htmm-launch [--node N] [--quiet] --pid PID
 *
 * In command mode the child is managed before it executes CMD: it waits on
 * a pipe until htmm_start() has succeeded on it, so that no instruction of
 * CMD runs unmanaged.  If htmm_start() fails, CMD is not run at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "htmm.h"
#include "htmm_spawn.h"
#include "htmm_util.h"

#define PROG "htmm-launch"
#define VERSION "0.1"

/* The signals passed on to the command in command mode. */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
#define NR_FORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

/* The signals that end --pid mode. */
static const int stoppers[] = { SIGINT, SIGTERM, SIGHUP };
#define NR_STOPPERS (sizeof(stoppers) / sizeof(stoppers[0]))

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t stop_signal;

/* The /proc/vmstat counters of the summary. */
static const char *const counters[] = {
	"htmm_sampled", "htmm_sample_lost", "htmm_sample_throttled",
	"htmm_promoted", "htmm_demoted",
};
#define NR_COUNTERS (sizeof(counters) / sizeof(counters[0]))

struct vmstat {
	unsigned long long val[NR_COUNTERS];
	bool present[NR_COUNTERS];
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [--node N] [--quiet] [--] CMD [ARGS...]\n"
		"       " PROG " [--node N] [--quiet] --pid PID\n"
		"\n"
		"Run CMD, or manage the running process PID, with htmm: the kernel\n"
		"samples its memory accesses and keeps its hot pages in the fast\n"
		"memory tier.  CMD starts only once it is managed.\n"
		"\n"
		"  -n, --node N    fast-tier NUMA node to promote into; -1 (the\n"
		"                  default) lets the kernel choose a top-tier node\n"
		"  -p, --pid PID   manage the running process PID until it exits or\n"
		"                  " PROG " gets SIGINT or SIGTERM\n"
		"  -q, --quiet     do not print the summary at the end\n"
		"  -h, --help      print this help and exit\n"
		"  -V, --version   print the version and exit\n"
		"\n"
		"In command mode the exit status is that of CMD (128+N if signal N\n"
		"killed it), 127 if CMD cannot be found, 126 if it cannot be run,\n"
		"1 if htmm cannot manage it, 2 for a usage error.\n");
}

#define usage_error(...) htmm_usage_error(PROG, usage, __VA_ARGS__)

/* A whole decimal integer within [min, max], or false. */
static bool parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static const char *errno_name(int err)
{
	static char buf[32];

	switch (err) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EINTR: return "EINTR";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOSYS: return "ENOSYS";
	case EAGAIN: return "EAGAIN";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	}
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Read the summary's counters; a counter the kernel lacks stays absent. */
static void read_vmstat(struct vmstat *vs)
{
	char name[128];
	unsigned long long val;
	FILE *f;

	memset(vs, 0, sizeof(*vs));
	f = fopen("/proc/vmstat", "re");
	if (!f)
		return;
	while (fscanf(f, "%127s %llu", name, &val) == 2) {
		for (size_t i = 0; i < NR_COUNTERS; i++) {
			if (!strcmp(name, counters[i])) {
				vs->val[i] = val;
				vs->present[i] = true;
			}
		}
	}
	fclose(f);
}

/* The figures of the process's own session, as last read. */
struct session_fig {
	long long val[4];
	bool seen;
	bool denied;	/* the files are root's, and we are not */
};

static const char *const session_files[] = {
	"promoted", "demoted", "pages_fast", "pages_slow",
};

/*
 * Read the session's figures while it exists: it goes away with the
 * process's memory, before the process can be reaped.
 */
static void read_session(pid_t pid, struct session_fig *fig)
{
	long long val[4];

	for (size_t i = 0; i < 4; i++) {
		char path[128];
		FILE *f;
		int ok;

		snprintf(path, sizeof(path), "/sys/kernel/mm/htmm/sessions/%d/%s",
			 (int)pid, session_files[i]);
		f = fopen(path, "re");
		if (!f) {
			if (errno == EACCES)
				fig->denied = true;
			return;
		}
		ok = fscanf(f, "%lld", &val[i]) == 1;
		fclose(f);
		if (!ok)
			return;
	}
	memcpy(fig->val, val, sizeof(val));
	fig->seen = true;
}

static void print_summary(const char *what, double seconds,
			  const struct vmstat *before, const struct vmstat *after,
			  const struct session_fig *fig)
{
	fprintf(stderr, PROG ": %s: %.3f s wall time\n", what, seconds);
	fprintf(stderr, PROG ": system-wide htmm counters over that time "
		"(/proc/vmstat, all managed processes):\n");
	for (size_t i = 0; i < NR_COUNTERS; i++) {
		if (before->present[i] && after->present[i])
			fprintf(stderr, "  %-24s %+lld\n", counters[i],
				(long long)(after->val[i] - before->val[i]));
		else
			fprintf(stderr, "  %-24s n/a\n", counters[i]);
	}
	if (fig->seen) {
		long long fast = fig->val[2], total = fig->val[2] + fig->val[3];

		fprintf(stderr, PROG ": this process: %lld pages promoted, %lld demoted; "
			"%lld of its %lld resident pages (%.1f%%) in the fast tier "
			"when last counted\n", fig->val[0], fig->val[1], fast, total,
			total ? 100.0 * fast / total : 0.0);
	} else if (fig->denied) {
		fprintf(stderr, PROG ": this process: its figures (/sys/kernel/mm/"
			"htmm/sessions/) are readable by root only\n");
	}
}

static void report_start_error(int err)
{
	fprintf(stderr, PROG ": htmm_start: %s (%s)\n",
		htmm_start_strerror(err), errno_name(err));
}

static void die_errno(const char *what)
{
	fprintf(stderr, PROG ": %s: %s\n", what, strerror(errno));
	exit(1);
}

/*
 * Pass a signal on to the command.  A signal the kernel itself sent (a
 * terminal's ^C, ^\ or hangup: si_code SI_KERNEL) went to the whole
 * foreground process group, the command included, so passing it on would
 * deliver it twice.
 */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	pid_t pid = child_pid;

	(void)uc;
	if (pid > 0 && !(si && si->si_code == SI_KERNEL))
		kill(pid, sig);
	errno = saved;
}

static void note_stop(int sig)
{
	stop_signal = sig;
}

static int run_command(char **argv, int node, bool quiet)
{
	struct vmstat before, after;
	struct session_fig fig = { 0 };
	struct sigaction sa;
	struct htmm_spawn sp;
	sigset_t block, oldmask;
	int status, err, r;
	double t0, t1;
	pid_t pid;

	/*
	 * Block the forwarded signals across fork(): the parent's handlers,
	 * installed after it, must know the child's pid.
	 */
	sigemptyset(&block);
	for (size_t i = 0; i < NR_FORWARDED; i++)
		sigaddset(&block, forwarded[i]);
	sigprocmask(SIG_BLOCK, &block, &oldmask);

	read_vmstat(&before);
	/* The child waits for the go with the mask we started with. */
	if (htmm_spawn_paused(argv, &oldmask, &sp))
		die_errno(sp.what);
	pid = sp.pid;
	child_pid = pid;

	/* A write to a child that died early must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NR_FORWARDED; i++) {
		struct sigaction old;

		/* What was ignored when we started stays ignored. */
		if (sigaction(forwarded[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(forwarded[i], &sa, NULL);
	}
	sigprocmask(SIG_SETMASK, &oldmask, NULL);

	if (htmm_start(pid, node)) {
		err = errno;
		report_start_error(err);
		kill(pid, SIGKILL);
		htmm_spawn_abort(&sp);
		return 1;
	}

	t0 = now();
	r = htmm_spawn_go(&sp, &err);
	if (r != 0) {
		/* execvp() failed (r == 1), or the pipe did (r < 0): reaped. */
		if (r < 0) {
			fprintf(stderr, PROG ": %s: cannot tell whether it started\n", argv[0]);
			return 127;
		}
		if (err == ENOENT)
			fprintf(stderr, PROG ": %s: command not found\n", argv[0]);
		else
			fprintf(stderr, PROG ": %s: %s\n", argv[0], strerror(err));
		return err == EACCES ? 126 : 127;
	}

	/*
	 * Wait for the end without reaping, so that no signal is passed on
	 * to a process that reuses the pid; then reap.
	 */
	for (;;) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 250 * 1000 * 1000 };
		siginfo_t si = { 0 };

		if (waitid(P_PID, pid, &si, WEXITED | WNOWAIT | WNOHANG) == 0) {
			if (si.si_pid == pid)
				break;
		} else if (errno != EINTR) {
			die_errno("waitid");
		}
		read_session(pid, &fig);
		nanosleep(&ts, NULL);
	}
	t1 = now();
	child_pid = 0;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			die_errno("waitpid");
	}

	if (!quiet) {
		char what[64];

		read_vmstat(&after);
		snprintf(what, sizeof(what), "%s (pid %d)", argv[0], (int)pid);
		print_summary(what, t1 - t0, &before, &after, &fig);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* Has process pid gone (exited, perhaps a zombie not yet reaped)? */
static bool process_gone(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	bool gone = false;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT;
	if (fgets(buf, sizeof(buf), f)) {
		/* The state follows the command name, which is in parentheses. */
		p = strrchr(buf, ')');
		if (p && (p[1] == ' ') && (p[2] == 'Z' || p[2] == 'X'))
			gone = true;
	}
	fclose(f);
	return gone;
}

static int manage_pid(pid_t pid, int node, bool quiet)
{
	struct vmstat before, after;
	struct session_fig fig = { 0 };
	struct sigaction sa;
	sigset_t block, waitmask;
	int pidfd = -1;
	double t0, t1;
	bool exited = false;

	/*
	 * The stop signals stay blocked but while we wait (ppoll() unblocks
	 * them atomically), so that none is missed after htmm_start().
	 */
	sigemptyset(&block);
	for (size_t i = 0; i < NR_STOPPERS; i++)
		sigaddset(&block, stoppers[i]);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	for (size_t i = 0; i < NR_STOPPERS; i++)
		sigdelset(&waitmask, stoppers[i]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = note_stop;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NR_STOPPERS; i++) {
		struct sigaction old;

		/* What was ignored when we started (nohup) stays ignored. */
		if (sigaction(stoppers[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(stoppers[i], &sa, NULL);
	}

	/* Before htmm_start(), so that it is this process it waits for. */
#ifdef SYS_pidfd_open
	pidfd = syscall(SYS_pidfd_open, (long)pid, 0L);
#endif

	read_vmstat(&before);
	if (htmm_start(pid, node)) {
		report_start_error(errno);
		return 1;
	}
	t0 = now();
	if (!quiet) {
		if (node == HTMM_NODE_AUTO)
			fprintf(stderr, PROG ": managing pid %d; SIGINT or SIGTERM ends it\n",
				(int)pid);
		else
			fprintf(stderr, PROG ": managing pid %d, fast node %d; "
				"SIGINT or SIGTERM ends it\n", (int)pid, node);
	}

	while (!stop_signal) {
		if (pidfd >= 0) {
			struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
			struct timespec ts = { .tv_sec = 0, .tv_nsec = 250 * 1000 * 1000 };
			int r;

			read_session(pid, &fig);
			r = ppoll(&pfd, 1, &ts, &waitmask);

			if (r < 0 && errno != EINTR) {
				/* Carry on with the other way. */
				close(pidfd);
				pidfd = -1;
			} else if (r > 0) {
				exited = true;
				break;
			}
		} else {
			struct timespec ts = { .tv_sec = 0, .tv_nsec = 200 * 1000 * 1000 };

			read_session(pid, &fig);
			if (process_gone(pid)) {
				exited = true;
				break;
			}
			ppoll(NULL, 0, &ts, &waitmask);
		}
	}
	t1 = now();
	if (pidfd >= 0)
		close(pidfd);

	if (!exited && htmm_end(pid) && errno != ENOENT && errno != ESRCH) {
		int err = errno;

		fprintf(stderr, PROG ": htmm_end: %s (%s)\n",
			htmm_end_strerror(err), errno_name(err));
		return 1;
	}
	if (!quiet) {
		char what[64];

		read_vmstat(&after);
		snprintf(what, sizeof(what), "pid %d %s", (int)pid,
			 exited ? "exited" : "no longer managed");
		print_summary(what, t1 - t0, &before, &after, &fig);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "node", required_argument, NULL, 'n' },
		{ "pid", required_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int node = HTMM_NODE_AUTO, c;
	bool quiet = false;
	pid_t pid = 0;
	long v;

	/* "+": the first operand is the command; its options are its own. */
	while ((c = getopt_long(argc, argv, "+n:p:qhV", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!parse_int(optarg, -1, INT_MAX, &v))
				usage_error("--node: '%s' is not a node number (an integer >= -1)",
					    optarg);
			node = v;
			break;
		case 'p':
			if (!parse_int(optarg, 1, INT_MAX, &v))
				usage_error("--pid: '%s' is not a process id (an integer >= 1)",
					    optarg);
			pid = v;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf(PROG " " VERSION "\n");
			return 0;
		default:
			/* getopt_long() has said what is wrong. */
			usage_error(NULL);
		}
	}

	if (pid) {
		if (optind < argc)
			usage_error("--pid and a command do not go together");
		return manage_pid(pid, node, quiet);
	}
	if (optind >= argc)
		usage_error("no command given");
	return run_command(argv + optind, node, quiet);
}
