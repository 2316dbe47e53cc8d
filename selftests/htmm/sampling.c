// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling pipeline end to end: a managed process touches a buffer, and
 * ksamplingd consumes samples whose addresses lie in it.  The samples are
 * read back through the htmm:htmm_sample tracepoint and /proc/vmstat.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "htmm_test.h"

#define HTMM HTMM_SYSFS
#define TRACING "/sys/kernel/tracing"
#define EVENT TRACING "/events/htmm/htmm_sample/enable"
#define MB (1UL << 20)

/* Touch every page of [p, p + len) until @seconds have passed. */
static unsigned long touch_for(volatile char *p, size_t len, double seconds)
{
	double end = now_s() + seconds;
	unsigned long passes = 0;

	while (now_s() < end) {
		for (size_t off = 0; off < len; off += 4096)
			p[off]++;
		passes++;
	}
	return passes;
}

/* What the trace holds for @pid: samples in total and in [lo, hi). */
struct trace_count {
	long total;
	long inside;
};

static int count_trace(pid_t pid, unsigned long lo, unsigned long hi,
		       struct trace_count *tc)
{
	FILE *f = fopen(TRACING "/trace", "r");
	char line[512];

	memset(tc, 0, sizeof(*tc));
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "htmm_sample: pid=");
		unsigned long addr;
		int tpid;

		if (!p || sscanf(p, "htmm_sample: pid=%d addr=%lx", &tpid, &addr) != 2)
			continue;
		if (tpid != pid)
			continue;
		tc->total++;
		if (addr >= lo && addr < hi)
			tc->inside++;
	}
	fclose(f);
	return 0;
}

/*
 * What the tests change, to be put back after each, and the child of the
 * test's process, to be ended.  The teardown runs in the parent of the
 * test's process (FIXTURE_TEARDOWN_PARENT(), which shares this with it),
 * or, after a failed ASSERT, in the test's process itself: this harness's
 * wrapper takes the parent's path once the ASSERT longjmp()ed back into it
 * (its record of which process it is does not survive the longjmp()).  A
 * FIXTURE_TEARDOWN() did not run at all then: a failed test left the event
 * on, sample_period_max and buffer_pages at 1 and the trace buffer at
 * 8 MB to the tests after it.  Everything is saved here before it is
 * changed, and the teardown needs nothing else.
 */
/* Take @cpu offline or bring it online: 0 or an errno. */
static int cpu_set_online(int cpu, bool online)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online",
		 cpu);
	return write_file(path, online ? "1" : "0");
}

FIXTURE(sampling)
{
	char enable[8];		/* the event's "enable" */
	char buffer_kb[32];	/* the trace's buffer_size_kb */
	char period_max[32];	/* sample_period_max */
	char buffer_pages[32];	/* buffer_pages, if a test sets it */
	pid_t pid;		/* the test's child, until reaped */
	int cpu_offline;	/* a cpu a test took offline, or 0 */
};

FIXTURE_SETUP(sampling)
{
	char kb[64], *expanded;
	int fd;

	if (access(EVENT, W_OK))
		SKIP(return, "no htmm:htmm_sample tracepoint (tracefs at " TRACING "?)");
	ASSERT_EQ(0, read_file(TRACING "/buffer_size_kb", kb, sizeof(kb)));
	/*
	 * "7 (expanded: 1408)" before tracing was first used: the size it
	 * takes then is the one to put back (7 would shrink it to 7 kB).
	 */
	expanded = strstr(kb, "expanded: ");
	snprintf(self->buffer_kb, sizeof(self->buffer_kb), "%ld",
		 strtol(expanded ? expanded + strlen("expanded: ") : kb,
			NULL, 10));
	ASSERT_EQ(0, read_file(EVENT, self->enable, sizeof(self->enable)));
	ASSERT_EQ(0, read_file(HTMM "/sample_period_max", self->period_max,
			       sizeof(self->period_max)));
	ASSERT_EQ(0, write_file(TRACING "/buffer_size_kb", "8192"));
	/* Empty the trace: an open with O_TRUNC does. */
	fd = open(TRACING "/trace", O_WRONLY | O_TRUNC);
	ASSERT_GE(fd, 0);
	close(fd);
	ASSERT_EQ(0, write_file(EVENT, "1"));
	/* Every fault a sample: ksamplingd may have raised the period. */
	ASSERT_EQ(0, write_file(HTMM "/sample_period_max", "1"));
}

FIXTURE_TEARDOWN_PARENT(sampling)
{
	/*
	 * The child is killed, and reaped when this is its parent (the
	 * test's process, after a failed ASSERT); its session goes with
	 * its mm, which the next test must not find.
	 */
	if (self->pid > 0) {
		kill(self->pid, SIGKILL);
		waitpid(self->pid, NULL, 0);
		if (!session_gone(self->pid, 30)) {
			TH_LOG("sessions/%d still there 30 s after its process was killed",
			       self->pid);
			_metadata->exit_code = KSFT_FAIL;
		}
	}
	if (self->cpu_offline > 0)
		cpu_set_online(self->cpu_offline, true);
	if (self->buffer_pages[0])
		write_file(HTMM "/buffer_pages", self->buffer_pages);
	if (self->period_max[0])
		write_file(HTMM "/sample_period_max", self->period_max);
	if (self->enable[0])
		write_file(EVENT, self->enable);
	if (self->buffer_kb[0])
		write_file(TRACING "/buffer_size_kb", self->buffer_kb);
}

/*
 * A child maps @len bytes, tells the parent where, waits for the go, then
 * touches the buffer for @seconds and exits.  Its pid is kept in *@track
 * (the fixture's) from its fork until it is reaped, for the teardown.
 */
struct child {
	pid_t pid;
	pid_t *track;		/* the fixture's record of the pid */
	int go;			/* write end: the child starts on a byte */
	unsigned long lo, hi;	/* its buffer */
};

static int spawn_toucher(struct child *c, size_t len, double seconds,
			 pid_t *track)
{
	const unsigned long slow_mask = 1UL << 1;
	int up[2], down[2];
	char byte;

	c->pid = -1;
	c->track = track;
	if (pipe(up) || pipe(down))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (!c->pid) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		unsigned long range[2] = { (unsigned long)p, (unsigned long)p + len };

		close(up[0]);
		close(down[1]);
		if (p == MAP_FAILED)
			_exit(2);
		/* Page by page: a huge page would be one fault for 2 MiB. */
		madvise(p, len, MADV_NOHUGEPAGE);
		/*
		 * On the slow node, where the scanner arms pages (it reads
		 * the fast node's accessed bits instead).
		 */
		if (syscall(SYS_mbind, p, len, 2 /* MPOL_BIND */, &slow_mask,
			    64, 0))
			_exit(5);
		if (write(up[1], range, sizeof(range)) != sizeof(range))
			_exit(3);
		if (read(down[0], &byte, 1) != 1)
			_exit(4);
		/*
		 * First touches on the slow node; then the policy goes, for
		 * htmm leaves a range bound by mbind(2) alone, as NUMA
		 * balancing does, and the scanner arms the buffer.
		 */
		memset(p, 1, len);
		if (syscall(SYS_mbind, p, len, 0 /* MPOL_DEFAULT */, NULL, 0, 0))
			_exit(6);
		touch_for(p, len, seconds);
		/* Alive, and managed, until the parent is done with it. */
		while (read(down[0], &byte, 1) > 0)
			;
		_exit(0);
	}
	/* The parent's: the fixture is shared with the child as well. */
	*c->track = c->pid;
	close(up[1]);
	close(down[0]);
	c->go = down[1];
	{
		unsigned long range[2];

		if (read(up[0], range, sizeof(range)) != sizeof(range))
			return -1;
		c->lo = range[0];
		c->hi = range[1];
	}
	close(up[0]);
	return 0;
}

static int wait_child(struct child *c)
{
	int status;

	close(c->go);
	if (waitpid(c->pid, &status, 0) != c->pid)
		return -1;
	*c->track = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F_TIMEOUT(sampling, samples_land_in_the_touched_buffer, 300)
{
	long long sampled0 = vmstat("htmm_sampled");
	long long hints0 = vmstat("numa_hint_faults");
	struct trace_count tc;
	struct child c;
	double t0;

	ASSERT_GE(sampled0, 0) TH_LOG("no htmm_sampled in /proc/vmstat");
	ASSERT_EQ(0, spawn_toucher(&c, 32 * MB, 3.0, &self->pid));
	ASSERT_EQ(0, sys_htmm_start(c.pid, -1));
	/* Its directory is there, so that its going below means something. */
	EXPECT_TRUE(session_dir_exists(c.pid));
	t0 = now_s();
	ASSERT_EQ(1, write(c.go, "g", 1));
	ASSERT_EQ(0, wait_child(&c));

	ASSERT_EQ(0, count_trace(c.pid, c.lo, c.hi, &tc));
	TH_LOG("%ld samples of pid %d in %.1f s, %ld in its 32 MiB buffer; htmm_sampled +%lld, numa_hint_faults +%lld",
	       tc.total, c.pid, now_s() - t0, tc.inside,
	       vmstat("htmm_sampled") - sampled0,
	       hints0 >= 0 ? vmstat("numa_hint_faults") - hints0 : -1);
	/*
	 * The scanner armed the buffer, and the hint faults it took are the
	 * samples (how many depends on how fast the kernel is: fewer on a
	 * debug kernel); the buffer's 8192 first touches are none.  A fault
	 * whose PTE kmigraterd replaced under it (a migration entry: the
	 * page was moving) is recorded and weighed, but do_numa_page() finds
	 * the PTE changed and returns before it counts a hint fault; a few
	 * of those, not thousands of first touches, may come on top.
	 */
	EXPECT_GT(tc.inside, 0);
	if (hints0 >= 0) {
		long long hints = vmstat("numa_hint_faults") - hints0;

		EXPECT_LE(tc.total, hints + hints / 100 + 16);
	}
	/* Nearly all of them are the buffer's, not the stack's or libc's. */
	EXPECT_GE(tc.inside * 100, tc.total * 90);
	EXPECT_GE(vmstat("htmm_sampled") - sampled0, tc.total);
	/* The session ended with the process. */
	EXPECT_TRUE(session_gone(c.pid, 30));
	EXPECT_EQ(ESRCH, sys_htmm_end(c.pid));
}

/*
 * A cpu that comes online after the session started is sampled as well:
 * the child takes its hint faults on cpu 1 only, which was offline when
 * the session's events were opened.
 */
TEST_F_TIMEOUT(sampling, cpu_online_after_start_is_sampled, 300)
{
	long long hints0 = vmstat("numa_hint_faults"), hints;
	struct trace_count tc;
	cpu_set_t on1;
	struct child c;
	int err;

	if (access("/sys/devices/system/cpu/cpu1/online", W_OK))
		SKIP(return, "cpu 1 cannot go offline");
	err = cpu_set_online(1, false);
	ASSERT_EQ(0, err) TH_LOG("cpu 1 offline: %s", strerror(err));
	self->cpu_offline = 1;
	ASSERT_EQ(0, spawn_toucher(&c, 32 * MB, 3.0, &self->pid));
	ASSERT_EQ(0, sys_htmm_start(c.pid, -1));
	err = cpu_set_online(1, true);
	ASSERT_EQ(0, err) TH_LOG("cpu 1 online: %s", strerror(err));
	self->cpu_offline = 0;
	CPU_ZERO(&on1);
	CPU_SET(1, &on1);
	ASSERT_EQ(0, sched_setaffinity(c.pid, sizeof(on1), &on1));
	ASSERT_EQ(1, write(c.go, "g", 1));
	ASSERT_EQ(0, wait_child(&c));

	ASSERT_EQ(0, count_trace(c.pid, c.lo, c.hi, &tc));
	hints = vmstat("numa_hint_faults") - hints0;
	TH_LOG("on cpu 1: %ld samples of pid %d, %ld in its buffer; numa_hint_faults +%lld",
	       tc.total, c.pid, tc.inside, hints);
	ASSERT_LT(0, hints) TH_LOG("no hint fault at all: nothing was armed");
	EXPECT_GT(tc.inside, 0);
}

struct thread_arg {
	char *p;
	size_t len;
};

static void *thread_touch(void *arg)
{
	struct thread_arg *ta = arg;

	memset(ta->p, 1, ta->len);
	touch_for(ta->p, ta->len, 2.0);
	return NULL;
}

/*
 * Only the thread touches its buffer, whose 2048 pages each take a first
 * touch: every one of these faults reaches the session's buffers (read as
 * a sample or as a fault on no armed page, or counted lost) only if the
 * thread has events of its own.  The leader itself takes a few dozen.
 */
TEST_F_TIMEOUT(sampling, threads_created_after_start_are_sampled, 300)
{
	struct thread_arg ta = { .len = 8 * MB };
	unsigned long range[2];
	int up[2], hold[2], status;
	struct trace_count tc;
	long long faults;
	pthread_t th;
	pid_t pid;
	char byte;

	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(hold));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(up[0]);
		close(hold[1]);
		/* The session starts first; the thread comes after it. */
		if (sys_htmm_start(0, -1))
			_exit(10);
		ta.p = mmap(NULL, ta.len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ta.p == MAP_FAILED)
			_exit(11);
		madvise(ta.p, ta.len, MADV_NOHUGEPAGE);
		range[0] = (unsigned long)ta.p;
		range[1] = range[0] + ta.len;
		if (write(up[1], range, sizeof(range)) != sizeof(range))
			_exit(12);
		if (pthread_create(&th, NULL, thread_touch, &ta))
			_exit(13);
		pthread_join(th, NULL);
		/* Managed until the parent has read the session. */
		while (read(hold[0], &byte, 1) > 0)
			;
		_exit(0);
	}
	self->pid = pid;
	close(up[1]);
	close(hold[0]);
	ASSERT_EQ((ssize_t)sizeof(range), read(up[0], range, sizeof(range)));
	close(up[0]);
	faults = wait_session_faults(pid, 2048, 60);
	close(hold[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	self->pid = 0;
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, count_trace(pid, range[0], range[1], &tc));
	TH_LOG("%lld faults of pid %d reached its session; %ld samples, %ld in the thread's buffer",
	       faults, pid, tc.total, tc.inside);
	EXPECT_GE(faults, 2048);
}

/*
 * A thread that was already running when the session started waits for the
 * go, then creates a thread of its own, and each touches one half of a
 * buffer on the slow node.
 */
struct early_thread {
	char *p;
	size_t len;
	int go;
};

static void *early_thread_run(void *arg)
{
	struct early_thread *et = arg;
	struct thread_arg half = { .p = et->p + et->len / 2, .len = et->len / 2 };
	pthread_t th;
	char byte;

	if (read(et->go, &byte, 1) != 1)
		return (void *)1;
	if (pthread_create(&th, NULL, thread_touch, &half))
		return (void *)2;
	memset(et->p, 1, et->len / 2);
	touch_for(et->p, et->len / 2, 2.0);
	pthread_join(th, NULL);
	return NULL;
}

/*
 * Each of the two threads first-touches 2048 pages.  The thread that ran
 * before the start needs events of its own, and the thread it creates
 * inherits its events: without the first, neither thread's faults reach
 * the session.
 */
TEST_F_TIMEOUT(sampling, threads_running_before_start_are_sampled, 300)
{
	const unsigned long slow_mask = 1UL << 1;
	struct early_thread et = { .len = 16 * MB };
	struct trace_count first, second;
	int up[2], down[2], hold[2], status;
	unsigned long range[2];
	long long faults;
	pthread_t th;
	char byte;
	void *ret;
	pid_t pid;

	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	ASSERT_EQ(0, pipe(hold));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(up[0]);
		close(down[1]);
		close(hold[1]);
		et.go = down[0];
		et.p = mmap(NULL, et.len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (et.p == MAP_FAILED)
			_exit(11);
		madvise(et.p, et.len, MADV_NOHUGEPAGE);
		if (syscall(SYS_mbind, et.p, et.len, 2 /* MPOL_BIND */,
			    &slow_mask, 64, 0))
			_exit(12);
		/* The thread runs before the session starts. */
		if (pthread_create(&th, NULL, early_thread_run, &et))
			_exit(13);
		range[0] = (unsigned long)et.p;
		range[1] = range[0] + et.len;
		if (write(up[1], range, sizeof(range)) != sizeof(range))
			_exit(14);
		/* The leader itself touches nothing of the buffer. */
		if (pthread_join(th, &ret) || ret)
			_exit(15);
		while (read(hold[0], &byte, 1) > 0)
			;
		_exit(0);
	}
	self->pid = pid;
	close(up[1]);
	close(down[0]);
	close(hold[0]);
	ASSERT_EQ((ssize_t)sizeof(range), read(up[0], range, sizeof(range)));
	close(up[0]);
	ASSERT_EQ(0, sys_htmm_start(pid, -1));
	ASSERT_EQ(1, write(down[1], "g", 1));
	close(down[1]);
	faults = wait_session_faults(pid, 4096, 60);
	close(hold[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	self->pid = 0;
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));

	ASSERT_EQ(0, count_trace(pid, range[0], range[0] + et.len / 2, &first));
	ASSERT_EQ(0, count_trace(pid, range[0] + et.len / 2, range[1], &second));
	TH_LOG("%lld faults of pid %d reached its session; %ld samples: %ld in the half of the thread that ran before the start, %ld in the half of the thread it created after",
	       faults, pid, first.total, first.inside, second.inside);
	EXPECT_GE(faults, 4096);
}

/* A thread that waits for the go, then first-touches its buffer. */
struct racing_thread {
	char *p;
	size_t len;
	int go;
	int done;
};

/* Raw clone()'s thread: system calls and memset() only, no TLS. */
static int racing_thread_run(void *arg)
{
	struct racing_thread *rt = arg;
	char byte;

	if (read(rt->go, &byte, 1) != 1)
		syscall(SYS_exit, 1);
	memset(rt->p, 1, rt->len);
	__atomic_store_n(&rt->done, 1, __ATOMIC_RELEASE);
	syscall(SYS_exit, 0);
	return 0;
}

#define RACING_FDS 100000

/*
 * The child of a trial: it sets *@cloning, on which the parent spins to
 * call htmm_start(), and creates a thread that first-touches the buffer at
 * @p.  The thread gets a copy of the child's table of RACING_FDS files (no
 * CLONE_FILES), whose copying holds its clone() for milliseconds between
 * the copy of its creator's perf events and its joining the thread list:
 * the start falls in between, as it would by chance in any process.
 */
static void racing_child(char *p, size_t len, int *cloning, int up, int go,
			 int hold)
{
	static char stack[256 << 10] __attribute__((aligned(64)));
	struct racing_thread rt = { .p = p, .len = len, .go = go };
	struct rlimit rl = { RACING_FDS + 64, RACING_FDS + 64 };
	char byte;
	int i;

	if (setrlimit(RLIMIT_NOFILE, &rl))
		_exit(12);
	for (i = 0; i < RACING_FDS; i++) {
		if (dup(up) < 0)
			_exit(13);
	}
	/* The parent, spinning on the flag, calls htmm_start() at once. */
	__atomic_store_n(cloning, 1, __ATOMIC_RELEASE);
	if (clone(racing_thread_run, stack + sizeof(stack),
		  CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD |
		  CLONE_SYSVSEM, &rt) < 0)
		_exit(15);
	while (!__atomic_load_n(&rt.done, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (write(up, "d", 1) != 1)
		_exit(16);
	/* Managed until the parent has read the session. */
	while (read(hold, &byte, 1) > 0)
		;
	_exit(0);
}

/*
 * A process creates a thread while htmm_start() opens the session's
 * events: the thread's clone() copies its creator's events before they
 * are opened, and puts it on the thread list after htmm_start() looked at
 * the list.  The thread must get the events all the same: each of its
 * 1,024 first touches reaches the session.
 */
TEST_F_TIMEOUT(sampling, threads_created_while_it_starts_are_sampled, 600)
{
	int *cloning = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	const size_t len = 4 * MB;
	int trial, missed = 0;

	ASSERT_NE(MAP_FAILED, cloning);

	for (trial = 0; trial < 10; trial++) {
		int up[2], go[2], hold[2], status;
		long long faults;
		char byte;
		pid_t pid;

		ASSERT_EQ(0, pipe(up));
		ASSERT_EQ(0, pipe(go));
		ASSERT_EQ(0, pipe(hold));
		*cloning = 0;
		pid = fork();
		ASSERT_GE(pid, 0);
		if (!pid) {
			char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			close(up[0]);
			close(go[1]);
			close(hold[1]);
			if (p == MAP_FAILED)
				_exit(11);
			madvise(p, len, MADV_NOHUGEPAGE);
			racing_child(p, len, cloning, up[1], go[0], hold[0]);
		}
		self->pid = pid;
		close(up[1]);
		close(go[0]);
		close(hold[0]);
		while (!__atomic_load_n(cloning, __ATOMIC_ACQUIRE))
			;
		ASSERT_EQ(0, sys_htmm_start(pid, -1));
		ASSERT_EQ(1, write(go[1], "g", 1));
		/* The thread is done touching. */
		ASSERT_EQ(1, read(up[0], &byte, 1));
		faults = wait_session_faults(pid, len / 4096, 10);
		close(hold[1]);
		close(go[1]);
		close(up[0]);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		self->pid = 0;
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(0, WEXITSTATUS(status));
		if (faults < (long long)(len / 4096)) {
			TH_LOG("trial %d: %lld faults reached the session, of the thread's %zu first touches and more",
			       trial, faults, len / 4096);
			missed++;
		}
	}
	munmap(cloning, 4096);
	EXPECT_EQ(0, missed) TH_LOG("%d of 10 threads were not sampled", missed);
}

/*
 * The session of a process that exits ends with it: its directory goes.
 * htmm_end(-1)'s ENOENT alone would not tell: htmm_end_all() passes over
 * sessions whose process is gone, so a session leaked by a kernel that did
 * not tear it down at exit would give ENOENT too.  Such a kernel fails the
 * wait for sessions/<pid> to go.
 */
TEST_F_TIMEOUT(sampling, session_ends_when_its_process_exits, 300)
{
	struct child c;
	double t0;
	int gone;

	ASSERT_EQ(0, spawn_toucher(&c, 1 * MB, 0.1, &self->pid));
	ASSERT_EQ(0, sys_htmm_start(c.pid, -1));
	ASSERT_EQ(EBUSY, sys_htmm_start(c.pid, -1));
	/* There while the process lives: named by its pid. */
	ASSERT_TRUE(session_dir_exists(c.pid));
	ASSERT_EQ(1, write(c.go, "g", 1));
	ASSERT_EQ(0, wait_child(&c));
	/*
	 * The reaped process's mm is gone, and its session with it; a
	 * generous bound for a loaded debug kernel.
	 */
	t0 = now_s();
	gone = session_gone(c.pid, 30);
	TH_LOG("sessions/%d %s %.2f s after the reap", c.pid,
	       gone ? "gone" : "still there", now_s() - t0);
	EXPECT_TRUE(gone);
	/* No session is left that this (root) caller could end. */
	EXPECT_EQ(ENOENT, sys_htmm_end(-1));
}

static long long session_stat(pid_t pid, const char *name)
{
	char path[128], buf[64];

	snprintf(path, sizeof(path), HTMM "/sessions/%d/%s", pid, name);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	return atoll(buf);
}

/*
 * Buffers of one page (128 samples each) overflow under a burst of first
 * touches: perf drops samples and says so with PERF_RECORD_LOST, which
 * ksamplingd counts, and every record it reads is whole.
 */
TEST_F_TIMEOUT(sampling, overflowing_buffers_are_counted_not_misread, 600)
{
	long long lost0 = vmstat("htmm_sample_lost"), sampled, lost, malformed;
	double start;
	struct trace_count tc;
	struct child c;

	/* Put back by the teardown, also when an ASSERT below fails. */
	ASSERT_EQ(0, read_file(HTMM "/buffer_pages", self->buffer_pages,
			       sizeof(self->buffer_pages)));
	ASSERT_EQ(0, write_file(HTMM "/buffer_pages", "1"));
	ASSERT_EQ(0, spawn_toucher(&c, 64 * MB, 3.0, &self->pid));
	ASSERT_EQ(0, sys_htmm_start(c.pid, -1));
	ASSERT_EQ(0, write_file(HTMM "/buffer_pages", self->buffer_pages));
	ASSERT_EQ(1, write(c.go, "g", 1));
	/*
	 * Read the session's figures while it lives (the child waits for
	 * wait_child()), once ksamplingd has read a PERF_RECORD_LOST and a
	 * sample: a debug kernel reads the burst's records seconds after it,
	 * and the first touches that overflow the buffers are no samples,
	 * so the hint faults that are may come later.
	 */
	start = now_s();
	do {
		usleep(100 * 1000);
		lost = session_stat(c.pid, "lost");
		sampled = session_stat(c.pid, "sampled");
	} while ((lost <= 0 || sampled <= 0) && now_s() - start < patience(60));
	malformed = session_stat(c.pid, "malformed");
	ASSERT_EQ(0, wait_child(&c));
	ASSERT_EQ(0, count_trace(c.pid, c.lo, c.hi, &tc));

	TH_LOG("%lld samples consumed, %lld lost (htmm_sample_lost +%lld), %lld malformed; %ld of %ld traced samples in the buffer",
	       sampled, lost, vmstat("htmm_sample_lost") - lost0, malformed,
	       tc.inside, tc.total);
	EXPECT_GT(sampled, 0);
	EXPECT_GT(lost, 0);
	EXPECT_GE(vmstat("htmm_sample_lost") - lost0, lost);
	EXPECT_EQ(0, malformed);
	/* What was read was read right: addresses in the buffer. */
	EXPECT_GE(tc.inside * 100, tc.total * 90);
}

TEST_HARNESS_MAIN
