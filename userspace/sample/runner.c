// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: the run.  The targets: the command, started paused until
 * its events are open, or the process of -p, each of whose threads gets
 * its events; the signals that end sampling; the loop that reads the
 * rings until the target ends, -d's time is up or a signal says so; and
 * the end, when the events are off and their rings read to the last.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "htmm_spawn.h"
#include "htmm_util.h"

#include "events.h"
#include "runner.h"
#include "sampler.h"
#include "sideband.h"
#include "util.h"

/* At -d, how long the command has after SIGTERM before SIGKILL. */
#define KILL_GRACE_S		1.0
/* Re-reads of /proc/PID/task while new threads keep showing up. */
#define TASK_SCAN_ROUNDS	100
/* How often to look for the -p target when there is no pidfd. */
#define GONE_POLL_MS		200

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

static volatile sig_atomic_t stop_requests;
static volatile sig_atomic_t child_changed;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requests++;
}

static void on_sigchld(int sig)
{
	(void)sig;
	child_changed = 1;
}

/*
 * The signals that end sampling, and SIGCHLD: blocked but in ppoll(), so
 * that none comes between a look at the flags and the wait.
 */
void setup_signals(sigset_t *origmask, sigset_t *waitmask)
{
	static const int stoppers[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;
	sigset_t block;

	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(stoppers) / sizeof(stoppers[0]); i++)
		sigaddset(&block, stoppers[i]);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, origmask);
	*waitmask = *origmask;
	for (size_t i = 0; i < sizeof(stoppers) / sizeof(stoppers[0]); i++)
		sigdelset(waitmask, stoppers[i]);
	sigdelset(waitmask, SIGCHLD);

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stoppers) / sizeof(stoppers[0]); i++) {
		struct sigaction old;

		/* What was ignored when we started (nohup) stays ignored. */
		if (sigaction(stoppers[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sa.sa_handler = on_stop_signal;
		sigaction(stoppers[i], &sa, NULL);
	}
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
}

void reap(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

/*
 * Start the command: its process waits until its events are open, which
 * enable_on_exec turns on when it executes the command, so that it is
 * sampled from its first instruction.  Returns 0, or the exit status.
 */
int start_command(struct sampler *S, const sigset_t *origmask)
{
	char **argv = S->o->cmd;
	struct htmm_spawn sp;
	int err, r, cpu;
	pid_t pid;

	if (htmm_spawn_paused(argv, origmask, &sp)) {
		error("%s: %s", sp.what, strerror(errno));
		return 1;
	}
	pid = sp.pid;
	S->child = S->target = pid;
	/* A write to a pipe the child no longer reads fails, not kills us. */
	signal(SIGPIPE, SIG_IGN);

	err = open_thread(S, pid, &cpu);
	if (err) {
		if (err > 0)
			open_error(S, pid, cpu, err);
		htmm_spawn_abort(&sp);	/* it exits without running it */
		S->child = 0;
		return 1;
	}
	S->t0 = now();
	r = htmm_spawn_go(&sp, &err);
	if (r == 0)
		return 0;
	/* execvp() failed (r == 1), or the pipe did (r < 0): reaped. */
	S->child = 0;
	if (r < 0) {
		error("%s: cannot tell whether it started", argv[0]);
		return 127;
	}
	/* A name with a '/' is not looked for in PATH: it is a path. */
	if (err == ENOENT && !strchr(argv[0], '/'))
		error("%s: command not found", argv[0]);
	else
		error("%s: %s", argv[0], strerror(err));
	return err == EACCES ? 126 : 127;
}

/* Is tid among the first n of tids? */
static bool has_tid(const pid_t *tids, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++) {
		if (tids[i] == tid)
			return true;
	}
	return false;
}

/*
 * Open the events of the threads of pid not opened yet.  Returns how many
 * were, or -1 on an error reported.
 */
static int attach_new_threads(struct sampler *S, pid_t pid, pid_t **tids,
			      size_t *nr, size_t *cap)
{
	char path[64];
	struct dirent *d;
	int added = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;	/* gone: found out by the caller */
	while ((d = readdir(dir))) {
		char *end;
		long tid = strtol(d->d_name, &end, 10);
		int err, cpu;

		if (*end || tid <= 0 || has_tid(*tids, *nr, tid))
			continue;
		err = open_thread(S, tid, &cpu);
		if (err == ESRCH)
			continue;	/* it exited meanwhile */
		if (err) {
			if (err > 0)
				open_error(S, tid, cpu, err);
			closedir(dir);
			return -1;
		}
		GROW(*tids, *nr, *cap);
		(*tids)[(*nr)++] = tid;
		added++;
	}
	closedir(dir);
	return added;
}

/* Sample the running process pid: every thread it has and will have. */
int attach_pid(struct sampler *S, pid_t pid)
{
	pid_t *tids = NULL;
	size_t nr = 0, cap = 0;
	int added = 1, ret = 1;
	struct proc *p;

	if (kill(pid, 0) && errno == ESRCH) {
		error("pid %d: no such process", (int)pid);
		return 1;
	}
	S->target = pid;
	S->pidfd = -1;
#ifdef SYS_pidfd_open
	/* Before the events, so that it is this process that is waited for. */
	S->pidfd = syscall(SYS_pidfd_open, (long)pid, 0L);
#endif

	/* Threads started meanwhile by threads without events yet: again. */
	for (int round = 0; round < TASK_SCAN_ROUNDS && added > 0; round++)
		added = attach_new_threads(S, pid, &tids, &nr, &cap);
	if (added < 0)
		goto out;
	if (!nr) {
		error("pid %d: no such process (or it exited)", (int)pid);
		goto out;
	}
	if (ioctl_all(S, PERF_EVENT_IOC_ENABLE, "PERF_EVENT_IOC_ENABLE"))
		goto out;
	S->t0 = now();
	/*
	 * Its mappings, from the start: after the events are on, so that
	 * what it maps meanwhile is in the records if not here (a mapping
	 * in both is the same).
	 */
	p = proc_get(&S->procs, pid);
	read_proc_maps(pid, &gen_cur(p)->maps);
	fprintf(stderr, PROG ": sampling pid %d (%zu thread%s) on %zu CPUs; "
		"SIGINT or SIGTERM ends it\n", (int)pid, nr, nr == 1 ? "" : "s",
		S->nr_rings);
	ret = 0;
out:
	free(tids);
	return ret;
}

/* Has the -p target exited (without a pidfd to tell)? */
static bool process_gone(pid_t pid)
{
	char path[64], buf[512], *p;
	bool gone = false;
	FILE *f;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT;
	if (fgets(buf, sizeof(buf), f)) {
		/* The state follows the command name, in parentheses. */
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
			gone = true;
	}
	fclose(f);
	return gone;
}

/* ------------------------------------------------------------------ */
/* The sampling loop                                                   */
/* ------------------------------------------------------------------ */

/* The poll set: every event, then the -p target's pidfd. */
static struct pollfd *make_pollset(const struct sampler *S, size_t *n)
{
	struct pollfd *p = xcalloc(S->nr_fds + 1, sizeof(*p));

	for (size_t i = 0; i < S->nr_fds; i++)
		p[i] = (struct pollfd) { .fd = S->fds[i], .events = POLLIN };
	*n = S->nr_fds;
	if (S->pidfd >= 0)
		p[(*n)++] = (struct pollfd) { .fd = S->pidfd, .events = POLLIN };
	return p;
}

/*
 * Stop polling events whose task and its children are all gone: they say
 * so (POLLHUP) at every poll.  Their rings, shared with others, stay.
 * Returns how many events are still polled.
 */
static size_t drop_hung_up(struct pollfd *p, size_t nr_events)
{
	size_t live = 0;

	for (size_t i = 0; i < nr_events; i++) {
		if (p[i].fd >= 0 && (p[i].revents & (POLLHUP | POLLERR)))
			p[i].fd = -1;
		if (p[i].fd >= 0)
			live++;
	}
	return live;
}

static bool child_exited(struct sampler *S, struct run_state *st)
{
	pid_t r;

	if (!child_changed)
		return false;
	child_changed = 0;
	r = waitpid(S->child, &st->status, WNOHANG);
	if (r == S->child) {
		st->reaped = true;
		return true;
	}
	return false;
}

/*
 * Is a signal that ends sampling pending?  One that came after ppoll()
 * returned is blocked until the next: a Ctrl-C that killed the command
 * reaches us before its SIGCHLD does, but may come after ppoll() did.
 */
static bool stop_pending(void)
{
	sigset_t pending;

	if (stop_requests)
		return true;
	if (sigpending(&pending))
		return false;
	return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
	       sigismember(&pending, SIGHUP) == 1;
}

/*
 * The end of sampling a command at -d: the events are turned off, so that
 * nothing after the deadline is sampled, and the command gets SIGTERM, and
 * SIGKILL KILL_GRACE_S later if it is still there.
 */
static void stop_at_deadline(struct sampler *S, struct run_state *st)
{
	ioctl_all(S, PERF_EVENT_IOC_DISABLE, "PERF_EVENT_IOC_DISABLE");
	S->t1 = now();
	st->stopped = true;
	/* A signal that came first stays what ended it. */
	if (st->why == STOP_EXIT)
		st->why = STOP_DURATION;
	kill(S->child, SIGTERM);
	st->stopping = true;
	st->kill_at = S->t1 + KILL_GRACE_S;
}

/* The earlier of two times, 0 standing for none. */
static double earlier(double a, double b)
{
	return a <= 0 ? b : b <= 0 || a < b ? a : b;
}

/* The time to wait in ppoll() until wake (0: none), or NULL for no limit. */
static struct timespec *poll_timeout(const struct sampler *S, double wake,
				     struct timespec *ts)
{
	/* Without a pidfd, the -p target is looked for now and then. */
	bool look = !S->child && S->pidfd < 0;
	double left = wake > 0 ? wake - now() : GONE_POLL_MS / 1e3;

	if (wake <= 0 && !look)
		return NULL;
	if (look && left > GONE_POLL_MS / 1e3)
		left = GONE_POLL_MS / 1e3;
	if (left < 0)
		left = 0;
	ts->tv_sec = (time_t)left;
	ts->tv_nsec = (long)((left - ts->tv_sec) * 1e9);
	return ts;
}

/*
 * Sample until the target ends, the time is up, or a signal says so.
 * Returns 0, or -1 if it could not go on (said).
 */
int run(struct sampler *S, const sigset_t *waitmask, struct run_state *st)
{
	double deadline = S->o->duration > 0 ? S->t0 + S->o->duration : 0;
	size_t nr_poll, nr_events = S->nr_fds;
	struct pollfd *p = make_pollset(S, &nr_poll);
	sig_atomic_t handled = 0;	/* the stop requests acted upon */
	int ret = 0;

	for (;;) {
		struct timespec ts;
		int r;

		r = ppoll(p, nr_poll, poll_timeout(S, earlier(deadline, st->kill_at), &ts),
			  waitmask);
		if (r < 0 && errno != EINTR) {
			error("ppoll: %s", strerror(errno));
			ret = -1;
			break;
		}
		drain(S);
		/* A stop request first: the command may have died of it too. */
		if (stop_requests && st->why == STOP_EXIT)
			st->why = STOP_SIGNAL;
		if (!S->child) {
			if (st->why == STOP_SIGNAL)
				break;
			if (deadline > 0 && now() >= deadline) {
				st->why = STOP_DURATION;
				break;
			}
			if ((S->pidfd >= 0 && r > 0 && p[nr_poll - 1].revents) ||
			    (S->pidfd < 0 && process_gone(S->target)))
				break;
			if (r > 0 && !drop_hung_up(p, nr_events))
				break;	/* every thread and child of the target is gone */
			continue;
		}
		if (stop_requests != handled) {
			/* The first asks the command to end; more force it. */
			handled = stop_requests;
			kill(S->child, st->stopping ? SIGKILL : SIGTERM);
			st->stopping = true;
		}
		if (deadline > 0 && now() >= deadline) {
			stop_at_deadline(S, st);
			deadline = 0;	/* now wait for the command to end */
		}
		if (st->kill_at > 0 && now() >= st->kill_at) {
			kill(S->child, SIGKILL);
			st->kill_at = 0;
		}
		if (child_exited(S, st)) {
			if (st->why == STOP_EXIT && stop_pending())
				st->why = STOP_SIGNAL;
			break;
		}
		if (r > 0)
			drop_hung_up(p, nr_events);
	}
	if (!st->stopped)
		S->t1 = now();
	free(p);
	return ret;
}

/*
 * The records the kernel could not write, as the events count them
 * (inherited events count into the event they come from).
 */
static uint64_t events_lost(const struct sampler *S)
{
	struct { uint64_t value, lost; } rf;	/* read_format: LOST only */
	uint64_t n = 0;

	if (!(S->attr.read_format & PERF_FORMAT_LOST))
		return 0;
	for (size_t i = 0; i < S->nr_fds; i++) {
		if (read(S->fds[i], &rf, sizeof(rf)) == sizeof(rf))
			n += rf.lost;
	}
	return n;
}

/* Stop the events and read what is left in the rings. */
void finish(struct sampler *S)
{
	/* Nothing more is written once they are off: the drain ends. */
	ioctl_all(S, PERF_EVENT_IOC_DISABLE, "PERF_EVENT_IOC_DISABLE");
	while (drain_round(S))
		;
	sb_replay(&S->sb, &S->procs, UINT64_MAX);
	if (S->sb.late)
		error("%" PRIu64 " mapping or process records came more than %llu ms "
		      "late, and were replayed out of their order: a few samples may "
		      "be named after the wrong mappings", S->sb.late,
		      SB_SLACK_NS / 1000000);
	S->kernel_lost = events_lost(S);
	close_events(S);
}

