// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/mm/htmm/: the tunables refuse bad values and keep good ones,
 * and each session has a directory, named by its pid, whose counters move
 * while its process runs and which goes away when the session ends.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/sched.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "htmm_test.h"

#define HTMM HTMM_SYSFS

static long long get_ll(const char *path)
{
	char buf[64];

	if (read_file(path, buf, sizeof(buf)))
		return -1;
	return atoll(buf);
}

TEST(source_is_listed_and_chosen)
{
	char buf[256];

	/* PEBS or IBS may come first on hardware; hint faults work anywhere. */
	ASSERT_EQ(0, read_file(HTMM "/source", buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, "[auto] ", 7)) TH_LOG("source: %s", buf);
	EXPECT_NE(NULL, strstr(buf, " hint-fault"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/source", "no-such-source"));
	ASSERT_EQ(0, write_file(HTMM "/source", "hint-fault"));
	ASSERT_EQ(0, read_file(HTMM "/source", buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, "auto ", 5)) TH_LOG("source: %s", buf);
	EXPECT_NE(NULL, strstr(buf, " [hint-fault]"));
	ASSERT_EQ(0, write_file(HTMM "/source", "auto"));
	ASSERT_EQ(0, read_file(HTMM "/source", buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, "[auto] ", 7));
}

TEST(tunables_refuse_bad_values)
{
	long long pages = get_ll(HTMM "/buffer_pages");
	long long quota = get_ll(HTMM "/cpu_quota");
	char old[32];

	ASSERT_GT(pages, 0);
	ASSERT_GT(quota, 0);
	EXPECT_EQ(EINVAL, write_file(HTMM "/buffer_pages", "3"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/buffer_pages", "0"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/buffer_pages", "2048"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/cpu_quota", "0"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/cpu_quota", "1001"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/cpu_quota", "ten"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/hint_scan_period_ms", "1"));
	EXPECT_EQ(pages, get_ll(HTMM "/buffer_pages"));
	EXPECT_EQ(quota, get_ll(HTMM "/cpu_quota"));

	EXPECT_EQ(0, write_file(HTMM "/buffer_pages", "32"));
	EXPECT_EQ(32, get_ll(HTMM "/buffer_pages"));
	snprintf(old, sizeof(old), "%lld", pages);
	EXPECT_EQ(0, write_file(HTMM "/buffer_pages", old));
	EXPECT_EQ(pages, get_ll(HTMM "/buffer_pages"));
}

TEST(tunables_are_root_only)
{
	char buf[64];
	pid_t pid = fork();
	int status;

	ASSERT_GE(pid, 0);
	if (!pid) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		/* Readable by anyone, writable by root only. */
		if (read_file(HTMM "/cpu_quota", buf, sizeof(buf)))
			_exit(11);
		_exit(write_file(HTMM "/cpu_quota", "50") == EACCES ? 0 : 12);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST(session_directory_follows_the_session)
{
	char dir[128], path[192], unarmed[192], lost[192], buf[64];
	long long sampled0, sampled1, unarmed0, unarmed1, lost0, lost1 = 0;
	int go[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		char c, *p;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		p = mmap(NULL, 16 << 20, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(2);
		madvise(p, 16 << 20, MADV_NOHUGEPAGE);
		memset(p, 1, 16 << 20);
		/* Wait for the end of the pipe, then exit. */
		while (read(go[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(go[0]);
	/*
	 * Each first touch is a sample of the hint-fault source, at a sample
	 * period of 1: ksamplingd may have raised it, to hold its quota.
	 */
	ASSERT_EQ(0, write_file(HTMM "/source", "hint-fault"));
	ASSERT_EQ(0, write_file(HTMM "/sample_period_max", "1"));
	snprintf(dir, sizeof(dir), HTMM "/sessions/%d", pid);
	EXPECT_NE(0, access(dir, F_OK));

	ASSERT_EQ(0, sys_htmm_start(pid, -1));
	ASSERT_EQ(0, write_file(HTMM "/source", "auto"));
	ASSERT_EQ(0, write_file(HTMM "/sample_period_max", "0"));
	ASSERT_EQ(0, access(dir, F_OK)) TH_LOG("no %s", dir);
	snprintf(path, sizeof(path), "%s/node", dir);
	EXPECT_EQ(0, get_ll(path));
	snprintf(path, sizeof(path), "%s/source", dir);
	ASSERT_EQ(0, read_file(path, buf, sizeof(buf)));
	EXPECT_STREQ("hint-fault", buf);
	snprintf(path, sizeof(path), "%s/events", dir);
	EXPECT_EQ(sysconf(_SC_NPROCESSORS_ONLN), get_ll(path));

	snprintf(path, sizeof(path), "%s/sampled", dir);
	snprintf(unarmed, sizeof(unarmed), "%s/unarmed", dir);
	snprintf(lost, sizeof(lost), "%s/lost", dir);
	sampled0 = get_ll(path);
	unarmed0 = get_ll(unarmed);
	lost0 = get_ll(lost);
	ASSERT_GE(sampled0, 0);
	ASSERT_GE(unarmed0, 0);
	ASSERT_GE(lost0, 0);
	/*
	 * The child touches 4096 pages, each a page fault that the source
	 * records.  As the ABI says, a fault on a page that the scanner had
	 * not armed (a first touch) is counted in unarmed, one on an armed
	 * page in sampled, and one perf could not record (its buffer full
	 * while ksamplingd was busy) in lost: together, every fault.
	 */
	ASSERT_EQ(1, write(go[1], "g", 1));
	for (int i = 0; i < 200; i++) {
		sampled1 = get_ll(path);
		unarmed1 = get_ll(unarmed);
		lost1 = get_ll(lost);
		if (sampled1 - sampled0 + unarmed1 - unarmed0 +
		    lost1 - lost0 >= 4096)
			break;
		usleep(100 * 1000);
	}
	TH_LOG("sampled %lld -> %lld, unarmed %lld -> %lld, lost %lld -> %lld",
	       sampled0, sampled1, unarmed0, unarmed1, lost0, lost1);
	EXPECT_GE(sampled1 - sampled0 + unarmed1 - unarmed0 + lost1 - lost0,
		  4096);
	/* Every sample of the hint-fault source is a fault. */
	snprintf(path, sizeof(path), "%s/fault", dir);
	EXPECT_GE(get_ll(path), sampled1);

	ASSERT_EQ(0, sys_htmm_end(pid));
	EXPECT_NE(0, access(dir, F_OK));
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
}

#define HOT_LEN (32UL << 20)
/* Where the buffer of the exec test is, in both of its images. */
#define HOLD_ADDR 0x600000000000UL

/*
 * The other image of the exec tests, and the thread of the pthread_exit()
 * test: touch 16 MiB, first touched on the slow node, where the scanner
 * arms pages, until killed.
 */
static void touch_slow_forever(void)
{
	unsigned long slow = 1UL << 1;
	char *p = mmap(NULL, 16 << 20, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		_exit(21);
	madvise(p, 16 << 20, MADV_NOHUGEPAGE);
	if (syscall(SYS_mbind, p, 16 << 20, 2 /* MPOL_BIND */, &slow, 64, 0))
		_exit(22);
	memset(p, 1, 16 << 20);
	if (syscall(SYS_mbind, p, 16 << 20, 0 /* MPOL_DEFAULT */, NULL, 0, 0))
		_exit(23);
	for (;;)
		for (size_t off = 0; off < 16 << 20; off += 4096)
			p[off]++;
}

/*
 * The image the exec test's child execs into (this program, with
 * HTMM_SYSFS_HOLD set): it maps the buffer's range again, touches none of
 * it, and waits to be killed.
 */
__attribute__((constructor)) static void hold_mapping(void)
{
	if (getenv("HTMM_SYSFS_TOUCH"))
		touch_slow_forever();
	if (!getenv("HTMM_SYSFS_HOLD"))
		return;
	if (mmap((void *)HOLD_ADDR, HOT_LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) ==
	    MAP_FAILED)
		_exit(20);
	for (;;)
		pause();
}

/* Wait up to 10 s for @pid to run the image named @argv0. */
static void wait_exec(pid_t pid, const char *argv0)
{
	char cmdline[32], path[64];

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	for (int i = 0; i < 100; i++) {
		if (!read_file(path, cmdline, sizeof(cmdline)) &&
		    !strcmp(cmdline, argv0))
			return;
		usleep(100000);
	}
}

/* Wait up to @seconds for @pid's session file @name to reach @want (or, if
 * !@up, to fall to it); its last value. */
static long long wait_session_ll(pid_t pid, const char *name, long long want,
				 int up, double seconds)
{
	double start = now_s();
	long long v;

	for (;;) {
		v = session_ll(pid, name);
		if (v >= 0 && (up ? v >= want : v <= want))
			return v;
		if (now_s() - start >= seconds)
			return v;
		usleep(100000);
	}
}

/*
 * A child that touches a buffer of @len (first touched on the slow node,
 * then unbound), at @at if not NULL, and a 1 MiB one, until told: 'u'
 * unmaps the buffer, 'x' execs this program into hold_mapping().
 */
static pid_t hot_child(void *at, size_t len, int *cmd_fd, int *ack_fd)
{
	int cmd[2], ack[2];
	pid_t pid;

	if (pipe(cmd) || pipe(ack))
		return -1;
	pid = fork();
	if (pid)
		goto parent;

	{
		unsigned long slow = 1UL << 1;
		char *p = mmap(at, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS |
			       (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);
		char *q = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char c;

		close(cmd[1]);
		close(ack[0]);
		/* Not left behind by a test that failed. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (p == MAP_FAILED || q == MAP_FAILED)
			_exit(2);
		madvise(p, len, MADV_NOHUGEPAGE);
		madvise(q, 1 << 20, MADV_NOHUGEPAGE);
		if (syscall(SYS_mbind, p, len, 2 /* MPOL_BIND */, &slow,
			    64, 0))
			_exit(3);
		memset(p, 1, len);
		if (syscall(SYS_mbind, p, len, 0 /* MPOL_DEFAULT */, NULL,
			    0, 0))
			_exit(4);
		memset(q, 1, 1 << 20);
		if (fcntl(cmd[0], F_SETFL, O_NONBLOCK) || write(ack[1], "r", 1) != 1)
			_exit(5);
		for (;;) {
			if (read(cmd[0], &c, 1) == 1) {
				if (c == 'u') {
					munmap(p, len);
					p = NULL;
				} else if (c == 'x') {
					setenv("HTMM_SYSFS_HOLD", "1", 1);
					execl("/proc/self/exe", "sysfs-hold", (char *)NULL);
					_exit(6);
				}
				if (write(ack[1], &c, 1) != 1)
					_exit(7);
			}
			for (size_t off = 0; p && off < len; off += 4096)
				p[off]++;
			for (size_t off = 0; off < 1 << 20; off += 4096)
				q[off]++;
		}
	}
parent:
	close(cmd[0]);
	close(ack[1]);
	*cmd_fd = cmd[1];
	*ack_fd = ack[0];
	return pid;
}

static void end_child(pid_t pid, int cmd, int ack)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(cmd);
	close(ack);
}

/*
 * A pid used again at once.  A process that ends keeps its session until
 * its mm is released, which may be after it was reaped; a new process with
 * its pid (clone3()'s set_tid) may start a session at once all the same,
 * with a directory of its own.
 */
#define REUSES 200	/* at most */

/* A child that sleeps, with the pid @want (clone3()'s set_tid), or -1. */
static pid_t sleeper_with_pid(pid_t want)
{
	struct clone_args args = {
		.exit_signal = SIGCHLD,
		.set_tid = (uintptr_t)&want,
		.set_tid_size = 1,
	};
	pid_t pid = syscall(__NR_clone3, &args, sizeof(args));

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	return pid;
}

TEST(reused_pid_starts_a_session_at_once)
{
	int busy = 0, other = 0, n = 0, i;
	char path[96], node[16];
	pid_t first, again = -1;
	double start = now_s();

	/* Within the harness's 30 s: fewer rounds on a debug kernel. */
	for (i = 0; i < REUSES && (i < 20 || now_s() - start < 15); i++) {
		int err;

		first = sleeper();
		ASSERT_LT(0, first);
		ASSERT_EQ(0, sys_htmm_start(first, -1));
		reap(first);
		again = sleeper_with_pid(first);
		if (again < 0) {
			/* Another process took the pid first. */
			ASSERT_EQ(EEXIST, errno);
			other++;
			continue;
		}
		ASSERT_EQ(first, again);
		n++;
		err = sys_htmm_start(again, -1);
		if (err == EBUSY) {
			busy++;
		} else {
			ASSERT_EQ(0, err);
			snprintf(path, sizeof(path), HTMM "/sessions/%d/node", again);
			ASSERT_EQ(0, read_file(path, node, sizeof(node)));
		}
		reap(again);
	}
	TH_LOG("%d of %d starts on a pid just used again were refused (EBUSY)",
	       busy, n);
	ASSERT_EQ(0, busy);
	ASSERT_LE(i / 2, n);
	ASSERT_TRUE(session_gone(again, 10));
}

/*
 * Kill the test's child @pid, reap it if this process is its parent, and
 * wait for its session to go; a session left behind fails the test.
 */
static void end_test_child(struct __test_metadata *_metadata, pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (!session_gone(pid, 30)) {
		TH_LOG("sessions/%d still there 30 s after its process was killed",
		       pid);
		_metadata->exit_code = KSFT_FAIL;
	}
}

/*
 * ksamplingd's budget: the tunables it is made of, put back after, and the
 * managed child, ended after.  The teardown is FIXTURE_TEARDOWN_PARENT(),
 * which shares this with the test's process: a FIXTURE_TEARDOWN() did not
 * run after a failed ASSERT, and left the quota and share of the test to
 * every test after it.  After a failed ASSERT it runs in the test's
 * process itself (the harness's wrapper takes the parent's path once the
 * ASSERT longjmp()ed into it), else in its parent: it needs nothing else.
 */
FIXTURE(budget) {
	char quota[32], share[32];
	pid_t child;
};

FIXTURE_SETUP(budget)
{
	ASSERT_EQ(0, read_file(HTMM "/cpu_quota", self->quota,
			       sizeof(self->quota)));
	ASSERT_EQ(0, read_file(HTMM "/cpu_share", self->share,
			       sizeof(self->share)));
	self->child = -1;
}

FIXTURE_TEARDOWN_PARENT(budget)
{
	end_test_child(_metadata, self->child);
	write_file(HTMM "/cpu_quota", self->quota);
	write_file(HTMM "/cpu_share", self->share);
}

/*
 * Wait up to @seconds for cpu_budget to reach @limit or more (@above), or
 * @limit or less; the last value read, -1 if unreadable.
 */
static long long wait_budget(bool above, long long limit, double seconds)
{
	double start = now_s();
	long long b;

	while ((b = get_ll(HTMM "/cpu_budget")) >= 0 &&
	       (above ? b < limit : b > limit) && now_s() - start < seconds)
		usleep(100000);
	return b;
}

/*
 * The budget is cpu_share of the managed processes' cpu time, and never
 * less than cpu_quota: a session whose process spins raises it far above
 * the quota, and once the process stops running it falls back to it.
 */
TEST_F_TIMEOUT(budget, follows_the_managed_processes_cpu, 120)
{
	long long busy, idle, quota = 10;
	pid_t pid;

	EXPECT_EQ(EINVAL, write_file(HTMM "/cpu_share", "1001"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/cpu_share", "all"));
	ASSERT_EQ(0, write_file(HTMM "/cpu_quota", "10"));
	ASSERT_EQ(0, write_file(HTMM "/cpu_share", "1000"));
	/* With no session (the tests run one at a time): the quota. */
	ASSERT_EQ(quota, get_ll(HTMM "/cpu_budget"));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		volatile unsigned long n = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			n++;
	}
	/* Set by the parent only: the child shares the fixture. */
	self->child = pid;
	ASSERT_EQ(0, sys_htmm_start(self->child, -1));
	/* A process on (most of) a cpu: its whole share, not 1%. */
	busy = wait_budget(true, 300, 30);
	TH_LOG("cpu_budget %lld with the process spinning", busy);
	ASSERT_LE(300, busy);

	/* Stopped, it uses no cpu: the budget falls back to the quota. */
	ASSERT_EQ(0, kill(self->child, SIGSTOP));
	idle = wait_budget(false, 2 * quota, 60);
	TH_LOG("cpu_budget %lld with the process stopped", idle);
	ASSERT_GE(2 * quota, idle);
	ASSERT_LE(quota, idle);

	/* No share: the quota alone, though the process spins again. */
	ASSERT_EQ(0, write_file(HTMM "/cpu_share", "0"));
	ASSERT_EQ(0, kill(self->child, SIGCONT));
	sleep(3);
	EXPECT_GE(2 * quota, get_ll(HTMM "/cpu_budget"));
	/* Ended here, where it is reaped: its pid is not killed again. */
	end_test_child(_metadata, self->child);
	self->child = -1;
}

/* The word in [] of the file @path ("[auto] hint-fault"); 0 or an errno. */
static int read_choice(const char *path, char *buf, size_t size)
{
	char raw[256], *l, *r;
	int err = read_file(path, raw, sizeof(raw));

	if (err)
		return err;
	l = strchr(raw, '[');
	r = l ? strchr(l, ']') : NULL;
	if (!r || (size_t)(r - l) > size)
		return EBADMSG;
	*r = '\0';
	memcpy(buf, l + 1, r - l);
	return 0;
}

#define MEMCG "htmm-sysfs"

/*
 * The hotness tests sample fast: ksamplingd gets a fifth of a cpu.  What
 * they change is put back after each, and what they leave is ended: the
 * child of the test's process, whose session the next test must not find,
 * and the memory cgroup it was in.  The teardown is
 * FIXTURE_TEARDOWN_PARENT(), which shares this with the test's process: a
 * FIXTURE_TEARDOWN() did not run after a failed ASSERT, and left the
 * quota, the period bound and the source of the test behind.  After a
 * failed ASSERT it runs in the test's process itself (the harness's
 * wrapper takes the parent's path once the ASSERT longjmp()ed into it),
 * else in its parent: it needs nothing but what is here.
 */
FIXTURE(hotness) {
	char quota[32];
	char period_max[32];
	char source[32];
	char promote_rate[32];
	pid_t pid;		/* the test's child, until reaped */
	bool memcg;		/* MEMCG may exist */
};

FIXTURE_SETUP(hotness)
{
	ASSERT_EQ(0, read_file(HTMM "/cpu_quota", self->quota,
			       sizeof(self->quota)));
	ASSERT_EQ(0, read_file(HTMM "/sample_period_max", self->period_max,
			       sizeof(self->period_max)));
	ASSERT_EQ(0, read_choice(HTMM "/source", self->source,
				 sizeof(self->source)));
	ASSERT_EQ(0, read_file(HTMM "/promote_rate_mb", self->promote_rate,
			       sizeof(self->promote_rate)));
	ASSERT_EQ(0, write_file(HTMM "/cpu_quota", "200"));
}

FIXTURE_TEARDOWN_PARENT(hotness)
{
	end_test_child(_metadata, self->pid);
	/* Empty once its process has exited, a zombie or not. */
	if (self->memcg) {
		double start = now_s();

		while (rmdir(CGROUP_ROOT "/" MEMCG) && errno == EBUSY &&
		       now_s() - start < 10)
			usleep(50000);
	}
	write_file(HTMM "/source", self->source);
	write_file(HTMM "/sample_period_max", self->period_max);
	write_file(HTMM "/cpu_quota", self->quota);
	write_file(HTMM "/promote_rate_mb", self->promote_rate);
}

/*
 * A first touch is a page fault, which the hint-fault source records, but
 * not a hint fault: the page was not there to be armed, even where the
 * scanner had already passed over its range.  As the ABI says, it counts in
 * unarmed, not in sampled, and gives the page no access count.
 */
TEST_F_TIMEOUT(hotness, first_touches_are_unarmed, 300)
{
	const size_t len = 16UL << 20;
	long long epoch, sampled0, unarmed0, lost0, sampled1, unarmed1, lost1;
	int go[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		char c, *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		close(go[1]);
		if (p == MAP_FAILED)
			_exit(1);
		madvise(p, len, MADV_NOHUGEPAGE);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		memset(p, 1, len);
		while (read(go[0], &c, 1) > 0)
			;
		_exit(0);
	}
	self->pid = pid;
	close(go[0]);
	ASSERT_EQ(0, write_file(HTMM "/source", "hint-fault"));
	ASSERT_EQ(0, write_file(HTMM "/sample_period_max", "1"));
	ASSERT_EQ(0, sys_htmm_start(pid, -1));
	ASSERT_EQ(0, write_file(HTMM "/source", "auto"));

	/* Two rounds of the scanner: it has been over the untouched buffer. */
	epoch = session_ll(pid, "epoch");
	ASSERT_LE(0, epoch);
	ASSERT_LE(epoch + 2, wait_session_ll(pid, "epoch", epoch + 2, 1, 120));
	sampled0 = session_ll(pid, "sampled");
	unarmed0 = session_ll(pid, "unarmed");
	lost0 = session_ll(pid, "lost");

	ASSERT_EQ(1, write(go[1], "g", 1));
	wait_session_faults(pid, unarmed0 + sampled0 + lost0 + len / 4096, 60);
	sampled1 = session_ll(pid, "sampled");
	unarmed1 = session_ll(pid, "unarmed");
	lost1 = session_ll(pid, "lost");
	ASSERT_EQ(0, write_file(HTMM "/sample_period_max", "0"));
	TH_LOG("%zu first touches: sampled +%lld, unarmed +%lld, lost +%lld",
	       len / 4096, sampled1 - sampled0, unarmed1 - unarmed0,
	       lost1 - lost0);
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	self->pid = 0;
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));

	EXPECT_GE(unarmed1 - unarmed0 + lost1 - lost0,
		  (long long)(len / 4096) * 31 / 32);
	/* The child's other faults, if any were hints: a handful. */
	EXPECT_LE(sampled1 - sampled0, (long long)(len / 4096) / 32);
}

/*
 * The counts of a range that is unmapped are freed: the session's tracked
 * pages fall from the buffer's to the few of what is still mapped, while
 * the process goes on.
 */
TEST_F_TIMEOUT(hotness, counts_of_unmapped_ranges_are_freed, 600)
{
	long long before, after;
	int cmd, ack;
	pid_t pid;
	char c;

	pid = hot_child(NULL, HOT_LEN, &cmd, &ack);
	self->pid = pid;
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(ack, &c, 1));
	ASSERT_EQ(0, sys_htmm_start(pid, -1));

	before = wait_session_ll(pid, "tracked", HOT_LEN / 4096 / 4, 1,
				 patience(60));
	ASSERT_EQ(1, write(cmd, "u", 1));
	ASSERT_EQ(1, read(ack, &c, 1));
	/* The counts go at the sweep of an epoch, which may be stretched. */
	after = wait_session_ll(pid, "tracked", 1024, 0, patience(60));
	TH_LOG("tracked pages: %lld with the 32 MiB buffer mapped, %lld after it was unmapped",
	       before, after);
	end_child(pid, cmd, ack);
	self->pid = 0;
	ASSERT_GE(before, (long long)(HOT_LEN / 4096 / 4));
	ASSERT_LE(after, 1024);
}

/*
 * An exec() starts the counts afresh: the old image's counts name its
 * addresses, not the new one's, though the new image maps the same range.
 */
TEST_F_TIMEOUT(hotness, exec_starts_counts_afresh, 300)
{
	long long before, after;
	int cmd, ack;
	pid_t pid;
	char c;

	pid = hot_child((void *)HOLD_ADDR, HOT_LEN, &cmd, &ack);
	self->pid = pid;
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(ack, &c, 1)) TH_LOG("the child could not map its buffer");
	ASSERT_EQ(0, sys_htmm_start(pid, -1));

	before = wait_session_ll(pid, "tracked", HOT_LEN / 4096 / 4, 1, 60);
	ASSERT_EQ(1, write(cmd, "x", 1));
	/* Its session follows it across exec(): wait for the new image. */
	wait_exec(pid, "sysfs-hold");
	after = wait_session_ll(pid, "tracked", 64, 0, 20);
	TH_LOG("tracked pages: %lld before the exec, %lld after", before, after);
	end_child(pid, cmd, ack);
	self->pid = 0;
	ASSERT_GE(before, (long long)(HOT_LEN / 4096 / 4));
	ASSERT_LE(after, 64);
}

/* The figure @key of the memory.stat of the cgroup @name, or -1. */
static long long memcg_stat(const char *name, const char *key)
{
	char path[128], line[128];
	long long v = -1;
	size_t n = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), CGROUP_ROOT "/%s/memory.stat", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ')
			v = atoll(line + n + 1);
	fclose(f);
	return v;
}

/*
 * The counts are the process's memory: ksamplingd, which allocates them
 * and is in no cgroup of its own, charges them to the process's memory
 * cgroup, whose slab grows by at least half of what the chunks of counts
 * of its 128 MiB buffer take (HTMM_CHUNK_PAGES, 64, four-byte counts per
 * chunk).
 */
TEST_F_TIMEOUT(hotness, counts_are_charged_to_the_process_memcg, 300)
{
	const size_t len = 128UL << 20;
	long long slab0, slab1, tracked, want;
	int cmd, ack, err;
	double start;
	pid_t pid;
	char c;

	self->memcg = true;
	err = cgroup_make(MEMCG, "memory");
	ASSERT_EQ(0, err) TH_LOG("no memory cgroup: %s", strerror(err));
	pid = hot_child(NULL, len, &cmd, &ack);
	self->pid = pid;
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(ack, &c, 1));
	ASSERT_EQ(0, cgroup_join(MEMCG, pid));
	slab0 = memcg_stat(MEMCG, "slab_unreclaimable");
	ASSERT_LE(0, slab0);
	ASSERT_EQ(0, sys_htmm_start(pid, -1));

	tracked = wait_session_ll(pid, "tracked", len / 4096 / 2, 1, 120);
	want = tracked / 64 * 256 / 2;
	/*
	 * memory.stat is flushed on a read only past a batch of updates per
	 * cpu, which the chunks alone may not make; otherwise every 2 s.
	 */
	start = now_s();
	do {
		slab1 = memcg_stat(MEMCG, "slab_unreclaimable");
		if (slab1 - slab0 >= want)
			break;
		usleep(200000);
	} while (now_s() - start < 6);
	TH_LOG("%lld pages tracked; the cgroup's slab_unreclaimable %lld -> %lld (+%lld bytes, %.0f per tracked page)",
	       tracked, slab0, slab1, slab1 - slab0,
	       tracked > 0 ? (double)(slab1 - slab0) / tracked : 0.0);
	end_child(pid, cmd, ack);
	self->pid = 0;
	cgroup_remove(MEMCG);
	ASSERT_GE(tracked, (long long)(len / 4096 / 2));
	ASSERT_GE(slab1 - slab0, want);
}

/* What the process of the tests below does once its session started. */
enum after_start {
	EXEC_BY_LEADER,		/* its leader execs */
	EXEC_BY_THREAD,		/* another thread execs, and becomes the leader */
	LEADER_EXITS,		/* its leader calls pthread_exit() */
	SIBLING_EXITS,		/* the other thread exits, the leader goes on */
};

/* Do what the byte @c says: 't' touch memory, 'x' exec, 'q' exit. */
static void act(char c)
{
	if (c == 't')
		touch_slow_forever();
	if (c == 'q')
		pthread_exit(NULL);
	setenv("HTMM_SYSFS_TOUCH", "1", 1);
	execl("/proc/self/exe", "sysfs-touch", (char *)NULL);
	_exit(31);
}

/* A thread that waits for a byte on the pipe @arg, and acts on it. */
static void *waiting_thread(void *arg)
{
	int fd = *(int *)arg;
	char c;

	if (read(fd, &c, 1) != 1)
		_exit(30);
	act(c);
	return NULL;
}

/*
 * A process with a thread besides its leader, managed from before @what:
 * its session follows it, and samples the memory that the process then
 * touches, at least 256 samples within 30 s.  An exec() by a thread other
 * than the leader makes it the leader and ends the others.
 *
 * Nothing is promoted meanwhile: the scanner arms slow-tier pages only, and
 * 16 MiB touched all the time can all be up before the count starts,
 * leaving nothing to sample (a failure seen once in CI: 194 samples in
 * 30 s, all up a second after the start).
 */
static void keeps_sampling(struct __test_metadata *_metadata,
			   FIXTURE_DATA(hotness) *self, enum after_start what)
{
	long long sampled0, sampled1 = -1;
	int thread_cmd[2], leader_cmd[2];
	double start;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(thread_cmd));
	ASSERT_EQ(0, pipe(leader_cmd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		pthread_t th;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (pthread_create(&th, NULL, waiting_thread, &thread_cmd[0]))
			_exit(32);
		if (read(leader_cmd[0], &c, 1) != 1)
			_exit(33);
		act(c);
	}
	self->pid = pid;
	close(thread_cmd[0]);
	close(leader_cmd[0]);
	ASSERT_EQ(0, write_file(HTMM "/promote_rate_mb", "0"));
	ASSERT_EQ(0, sys_htmm_start(pid, -1));
	switch (what) {
	case EXEC_BY_LEADER:
		ASSERT_EQ(1, write(leader_cmd[1], "x", 1));
		break;
	case EXEC_BY_THREAD:
		ASSERT_EQ(1, write(thread_cmd[1], "x", 1));
		break;
	case LEADER_EXITS:
		ASSERT_EQ(1, write(thread_cmd[1], "t", 1));
		ASSERT_EQ(1, write(leader_cmd[1], "q", 1));
		break;
	case SIBLING_EXITS:
		ASSERT_EQ(1, write(thread_cmd[1], "q", 1));
		usleep(200000);
		ASSERT_EQ(1, write(leader_cmd[1], "t", 1));
		break;
	}
	if (what < LEADER_EXITS)
		wait_exec(pid, "sysfs-touch");
	/* Past the first touches, which are over in well under a second. */
	sleep(1);
	sampled0 = session_ll(pid, "sampled");
	start = now_s();
	while (now_s() - start < 30) {
		sampled1 = session_ll(pid, "sampled");
		if (sampled1 - sampled0 >= 256)
			break;
		usleep(200000);
	}
	TH_LOG("sampled: %lld a second after, %lld %.1f s later (unarmed %lld, lost %lld)",
	       sampled0, sampled1, now_s() - start,
	       session_ll(pid, "unarmed"), session_ll(pid, "lost"));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	self->pid = 0;
	close(thread_cmd[1]);
	close(leader_cmd[1]);
	ASSERT_LE(0, sampled0) TH_LOG("the session did not follow");
	ASSERT_GE(sampled1 - sampled0, 256);
}

TEST_F_TIMEOUT(hotness, exec_by_the_leader_keeps_sampling, 300)
{
	keeps_sampling(_metadata, self, EXEC_BY_LEADER);
}

TEST_F_TIMEOUT(hotness, exec_by_a_thread_keeps_sampling, 300)
{
	keeps_sampling(_metadata, self, EXEC_BY_THREAD);
}

TEST_F_TIMEOUT(hotness, leader_exit_keeps_sampling, 300)
{
	keeps_sampling(_metadata, self, LEADER_EXITS);
}

TEST_F_TIMEOUT(hotness, sibling_exit_keeps_sampling, 300)
{
	keeps_sampling(_metadata, self, SIBLING_EXITS);
}

/*
 * Every tunable of /sys/kernel/mm/htmm/, from mm/htmm/sysfs.c: the bounds
 * its store method checks (the ABI's), a value in between, and what kind
 * of value it takes.  A writable file missing from this table fails
 * all_tunables.keep_to_their_ranges.
 */
enum tunable_kind {
	TK_UINT,	/* an unsigned int in [min, max], kstrtouint() */
	TK_U64,		/* a u64 with bit 63 clear, kstrtou64() */
	TK_POW2,	/* a power of two in [min, max], kstrtouint() */
	TK_WORD,	/* one of words[]; reading shows the choice in [] */
};

struct tunable {
	const char *name;
	enum tunable_kind kind;
	unsigned long long min, max;
	unsigned long long mid;		/* within, neither min nor max */
	const char *words[2];		/* TK_WORD */
};

#define NUM(_name, _kind, _min, _max, _mid)				\
	{ .name = (_name), .kind = (_kind), .min = (_min), .max = (_max),	\
	  .mid = (_mid) }
#define WORDS(_name, _w0, _w1)						\
	{ .name = (_name), .kind = TK_WORD, .words = { (_w0), (_w1) } }

static const struct tunable all_tunables[] = {
	WORDS("source", "auto", "hint-fault"),
	NUM("buffer_pages", TK_POW2, 1, 1024, 32),
	NUM("cpu_quota", TK_UINT, 1, 1000, 30),
	NUM("cpu_share", TK_UINT, 0, 1000, 200),
	NUM("batch_high", TK_UINT, 1, 100, 50),
	NUM("batch_low", TK_UINT, 0, 100, 10),
	NUM("interval_ms", TK_UINT, 1, 10000, 100),
	NUM("sample_period_min", TK_U64, 0, (1ULL << 63) - 1, 7),
	NUM("sample_period_max", TK_U64, 0, (1ULL << 63) - 1, 7),
	/* These two with CONFIG_HTMM_SOURCE_HINT, which the guest has. */
	NUM("hint_scan_mb", TK_UINT, 1, 1U << 20, 256),
	NUM("hint_scan_period_ms", TK_UINT, 10, 600000, 1000),
	NUM("cooling_period_ms", TK_UINT, 0, 3600000, 4000),
	WORDS("hot_threshold_mode", "adaptive", "fixed"),
	NUM("hot_threshold", TK_UINT, 1, 32767, 4),
	NUM("store_weight", TK_UINT, 1, 64, 2),
	NUM("promote_rate_mb", TK_UINT, 0, 1U << 20, 2048),
	NUM("demote_watermark", TK_UINT, 0, 50, 2),
	NUM("fast_budget_mb", TK_UINT, 0, INT_MAX, 64),
	NUM("migrate_interval_ms", TK_UINT, 10, 600000, 1000),
};

#define NR_TUNABLES (sizeof(all_tunables) / sizeof(all_tunables[0]))

/* The files that only show figures (mode 0444, no store method). */
static const char *const read_only_files[] = {
	"cpu_budget", "sample_period", "ksamplingd_cpu", "kmigraterd_cpu",
};

#define NR_READ_ONLY (sizeof(read_only_files) / sizeof(read_only_files[0]))

static void tunable_path(const struct tunable *t, char *path, size_t size)
{
	snprintf(path, size, HTMM "/%s", t->name);
}

/*
 * The value of @t as it would be written back: the number, or the word in
 * brackets; 0 or an errno.
 */
static int tunable_get(const struct tunable *t, char *buf, size_t size)
{
	char path[128], raw[256], *l, *r;
	int err;

	tunable_path(t, path, sizeof(path));
	err = read_file(path, raw, sizeof(raw));
	if (err)
		return err;
	l = raw;
	if (t->kind == TK_WORD) {
		l = strchr(raw, '[');
		r = l ? strchr(l, ']') : NULL;
		if (!r)
			return EBADMSG;
		*r = '\0';
		l++;
	}
	if (strlen(l) >= size)
		return EOVERFLOW;
	memcpy(buf, l, strlen(l) + 1);
	return 0;
}

static int tunable_set(const struct tunable *t, const char *value)
{
	char path[128];

	tunable_path(t, path, sizeof(path));
	return write_file(path, value);
}

/* Set the tunable @name; 0 or an errno. */
static int set_tunable(const char *name, const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), HTMM "/%s", name);
	return write_file(path, value);
}

/* Every tunable's value when a test began, to put back after it. */
struct saved_tunables {
	char value[NR_TUNABLES][64];
	bool saved[NR_TUNABLES];
};

static void save_tunables(struct saved_tunables *s)
{
	for (size_t i = 0; i < NR_TUNABLES; i++)
		s->saved[i] = !tunable_get(&all_tunables[i], s->value[i],
					   sizeof(s->value[i]));
}

/* Put back what save_tunables() read; the names that would not go back. */
static void restore_tunables(struct __test_metadata *_metadata,
			     const struct saved_tunables *s)
{
	for (size_t i = 0; i < NR_TUNABLES; i++) {
		int err;

		if (!s->saved[i])
			continue;
		err = tunable_set(&all_tunables[i], s->value[i]);
		/* Not EXPECT_*(): a failure of the test is still pending. */
		if (err) {
			TH_LOG("%s: %s not restored: %s", all_tunables[i].name,
			       s->value[i], strerror(err));
			_metadata->exit_code = KSFT_FAIL;
		}
	}
}

/* Whether the word @w is among the names @list shows (one may be in []). */
static bool word_listed(const char *list, const char *w)
{
	char copy[256], *tok, *save = NULL;

	snprintf(copy, sizeof(copy), "%s", list);
	for (tok = strtok_r(copy, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save)) {
		size_t n = strlen(tok);

		if (tok[0] == '[' && n > 2 && tok[n - 1] == ']') {
			tok[n - 1] = '\0';
			tok++;
		}
		if (!strcmp(tok, w))
			return true;
	}
	return false;
}

FIXTURE(all_tunables) {
	struct saved_tunables saved;
};

FIXTURE_SETUP(all_tunables)
{
	char list[256];

	save_tunables(&self->saved);
	for (size_t i = 0; i < NR_TUNABLES; i++) {
		ASSERT_TRUE(self->saved.saved[i])
			TH_LOG("%s cannot be read", all_tunables[i].name);
	}
	/* The guest's kernel has CONFIG_HTMM_SOURCE_HINT: hint_scan_* exist. */
	ASSERT_EQ(0, read_file(HTMM "/source", list, sizeof(list)));
	ASSERT_TRUE(word_listed(list, "hint-fault")) TH_LOG("source: %s", list);
}

/*
 * In the parent of the test's process: the values go back even when the
 * test died of a signal.
 */
FIXTURE_TEARDOWN_PARENT(all_tunables)
{
	restore_tunables(_metadata, &self->saved);
}

/* A value refused, and the errno the store method refuses it with. */
struct refusal {
	char value[48];
	int err;
};

/*
 * The values @t refuses: one under its minimum and one over its maximum,
 * non-numbers (EINVAL, as kstrtouint() and the range checks say: the ABI
 * names no errno for them), and a number beyond what the parser takes
 * (ERANGE, kstrtouint()'s and kstrtou64()'s).  Returns how many.
 */
static int refusals_of(const struct tunable *t, struct refusal *r)
{
	int n = 0;

#define REFUSE(_err, ...) do {						\
		snprintf(r[n].value, sizeof(r[n].value), __VA_ARGS__);	\
		r[n++].err = (_err);					\
	} while (0)
	switch (t->kind) {
	case TK_WORD:
		REFUSE(EINVAL, "no-such-%s", t->words[0]);
		/* A prefix of a word, and a word with more after it. */
		REFUSE(EINVAL, "%.*s", (int)strlen(t->words[1]) - 1, t->words[1]);
		REFUSE(EINVAL, "%s %s", t->words[0], t->words[1]);
		REFUSE(EINVAL, "%c%s", t->words[1][0] - 'a' + 'A', t->words[1] + 1);
		return n;
	case TK_POW2:
		/* A number in range that is no power of two. */
		REFUSE(EINVAL, "%llu", t->min * 2 + 1);
		/* The next power of two above the maximum. */
		REFUSE(EINVAL, "%llu", t->max * 2);
		/* fall through */
	case TK_UINT:
	case TK_U64:
		if (t->min)
			REFUSE(EINVAL, "%llu", t->min - 1);
		else
			REFUSE(EINVAL, "-1");
		REFUSE(EINVAL, "%llu", t->max + 1);
		REFUSE(EINVAL, "ten");
		REFUSE(EINVAL, "1.5");
		REFUSE(EINVAL, "12abc");
		REFUSE(ERANGE, t->kind == TK_U64 ? "18446744073709551616" :
						   "4294967296");
		return n;
	}
#undef REFUSE
	return n;
}

/*
 * Each tunable takes its documented minimum and maximum (and keeps them),
 * refuses one below the minimum, one above the maximum, non-numbers and
 * numbers too large to parse, and keeps its value when it refuses one.  A
 * word tunable takes each of its words and refuses anything else.  And
 * every writable file of /sys/kernel/mm/htmm/ is in the table: a tunable
 * added without its checks fails here.
 */
TEST_F(all_tunables, keep_to_their_ranges)
{
	size_t listed = 0;
	struct dirent *e;
	DIR *d;

	for (size_t i = 0; i < NR_TUNABLES; i++) {
		const struct tunable *t = &all_tunables[i];
		struct refusal r[16];
		char keep[48], got[64], log[512];
		int n = refusals_of(t, r), len = 0;

		if (t->kind == TK_WORD) {
			for (int w = 0; w < 2; w++) {
				char with_nl[48];

				/* The second as echo(1) writes it. */
				snprintf(with_nl, sizeof(with_nl), "%s%s",
					 t->words[w], w ? "\n" : "");
				ASSERT_EQ(0, tunable_set(t, with_nl))
					TH_LOG("%s: %s refused", t->name, t->words[w]);
				ASSERT_EQ(0, tunable_get(t, got, sizeof(got)));
				EXPECT_STREQ(t->words[w], got) TH_LOG("%s", t->name);
			}
			snprintf(keep, sizeof(keep), "%s", t->words[1]);
			len += snprintf(log + len, sizeof(log) - len, "%s and %s kept",
					t->words[0], t->words[1]);
		} else {
			unsigned long long ends[2] = { t->min, t->max };

			for (int b = 0; b < 2; b++) {
				char v[32];

				snprintf(v, sizeof(v), b ? "%llu" : "%llu\n", ends[b]);
				ASSERT_EQ(0, tunable_set(t, v))
					TH_LOG("%s: %llu refused", t->name, ends[b]);
				ASSERT_EQ(0, tunable_get(t, got, sizeof(got)));
				EXPECT_EQ(ends[b], strtoull(got, NULL, 10))
					TH_LOG("%s: wrote %llu, read %s", t->name,
					       ends[b], got);
			}
			snprintf(keep, sizeof(keep), "%llu", t->mid);
			len += snprintf(log + len, sizeof(log) - len,
					"%llu and %llu kept", t->min, t->max);
		}
		/* Refusals must leave a value that is neither end as it was. */
		ASSERT_EQ(0, tunable_set(t, keep)) TH_LOG("%s: %s", t->name, keep);
		len += snprintf(log + len, sizeof(log) - len, "; refused:");
		for (int j = 0; j < n; j++) {
			int err = tunable_set(t, r[j].value);

			EXPECT_EQ(r[j].err, err)
				TH_LOG("%s: writing \"%s\" gave %s, not %s", t->name,
				       r[j].value, err ? strerror(err) : "success",
				       strerror(r[j].err));
			ASSERT_EQ(0, tunable_get(t, got, sizeof(got)));
			EXPECT_STREQ(keep, got)
				TH_LOG("%s: \"%s\" was refused but the value is now %s",
				       t->name, r[j].value, got);
			len += snprintf(log + len, sizeof(log) - len, " \"%s\" (%s)",
					r[j].value, strerror(err));
			if (len >= (int)sizeof(log))
				len = sizeof(log) - 1;
		}
		TH_LOG("%s: %s; %s kept throughout", t->name, log, keep);
		ASSERT_EQ(0, tunable_set(t, self->saved.value[i]))
			TH_LOG("%s: %s", t->name, self->saved.value[i]);
	}

	/* Nothing writable here that the table does not hold. */
	d = opendir(HTMM);
	ASSERT_NE(NULL, d);
	while ((e = readdir(d))) {
		char path[300];
		struct stat st;
		bool known = false;

		snprintf(path, sizeof(path), HTMM "/%s", e->d_name);
		if (e->d_name[0] == '.' || stat(path, &st) || S_ISDIR(st.st_mode))
			continue;
		if (st.st_mode & 0222) {
			for (size_t i = 0; i < NR_TUNABLES; i++)
				known |= !strcmp(all_tunables[i].name, e->d_name);
			listed += known;
		} else {
			for (size_t i = 0; i < NR_READ_ONLY; i++)
				known |= !strcmp(read_only_files[i], e->d_name);
		}
		EXPECT_TRUE(known) TH_LOG("%s (mode %o) is in no table of this test",
					  e->d_name, st.st_mode & 0777);
	}
	closedir(d);
	EXPECT_EQ(NR_TUNABLES, listed);
}

/*
 * Every tunable is readable by anyone and writable by root only (mode
 * 0644, owned by root): an unprivileged process cannot open one for
 * writing (EACCES), and the value stays what it was.
 */
TEST_F(all_tunables, are_root_only)
{
	struct result {
		int read_err, write_err;
	} *res;
	char before[NR_TUNABLES][64], attempt[NR_TUNABLES][64], now[64];
	int status;
	pid_t pid;

	res = mmap(NULL, sizeof(*res) * NR_TUNABLES, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, res);
	for (size_t i = 0; i < NR_TUNABLES; i++) {
		const struct tunable *t = &all_tunables[i];

		ASSERT_EQ(0, tunable_get(t, before[i], sizeof(before[i])));
		/* A value the tunable would take from root, not its own. */
		if (t->kind == TK_WORD)
			snprintf(attempt[i], sizeof(attempt[i]), "%s",
				 strcmp(before[i], t->words[0]) ? t->words[0] :
								  t->words[1]);
		else
			snprintf(attempt[i], sizeof(attempt[i]), "%llu",
				 strtoull(before[i], NULL, 10) == t->min ? t->max :
									 t->min);
		res[i].read_err = res[i].write_err = -1;
	}
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char buf[256], path[128];

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		for (size_t i = 0; i < NR_TUNABLES; i++) {
			tunable_path(&all_tunables[i], path, sizeof(path));
			res[i].read_err = read_file(path, buf, sizeof(buf));
			res[i].write_err = write_file(path, attempt[i]);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("the unprivileged child failed: status %#x", status);
	for (size_t i = 0; i < NR_TUNABLES; i++) {
		const struct tunable *t = &all_tunables[i];
		char path[128];
		struct stat st;

		tunable_path(t, path, sizeof(path));
		ASSERT_EQ(0, stat(path, &st));
		EXPECT_EQ(0644U, st.st_mode & 0777) TH_LOG("%s", t->name);
		EXPECT_EQ(0U, st.st_uid) TH_LOG("%s", t->name);
		EXPECT_EQ(0, res[i].read_err)
			TH_LOG("%s: nobody cannot read it: %s", t->name,
			       strerror(res[i].read_err));
		EXPECT_EQ(EACCES, res[i].write_err)
			TH_LOG("%s: nobody writing %s: %s", t->name, attempt[i],
			       res[i].write_err ? strerror(res[i].write_err) :
						  "success");
		ASSERT_EQ(0, tunable_get(t, now, sizeof(now)));
		EXPECT_STREQ(before[i], now) TH_LOG("%s", t->name);
		TH_LOG("%s: nobody reads it, and writing %s gives %s; still %s",
		       t->name, attempt[i], strerror(res[i].write_err), now);
	}
	munmap(res, sizeof(*res) * NR_TUNABLES);
}

/*
 * The source refuses a source this machine cannot use with ENODEV and a
 * name htmm does not know with EINVAL, as the ABI says, and keeps the one
 * it had: new sessions still get it.  Under QEMU's TCG there is no PMU:
 * neither PEBS nor IBS is listed, and both are known to this kernel
 * (CONFIG_HTMM_SOURCE_PEBS and _IBS).
 */
TEST_F(all_tunables, source_refuses_unusable_and_unknown_names)
{
	const char *const pmu[] = { "pebs", "ibs" };
	const char *const unknown[] = {
		"no-such-source", "PEBS", "hint", "hint-faults", "auto hint-fault",
	};
	char list[256], now[64], path[96];
	int nodev = 0, err;
	pid_t pid;

	ASSERT_EQ(0, set_tunable("source", "hint-fault"));
	ASSERT_EQ(0, read_file(HTMM "/source", list, sizeof(list)));
	for (size_t i = 0; i < 2; i++) {
		char with_nl[16];

		if (word_listed(list, pmu[i])) {
			/* On a machine that has it: it is taken. */
			EXPECT_EQ(0, set_tunable("source", pmu[i]));
			ASSERT_EQ(0, tunable_get(&all_tunables[0], now, sizeof(now)));
			EXPECT_STREQ(pmu[i], now);
			TH_LOG("%s is listed (%s), and taken", pmu[i], list);
			ASSERT_EQ(0, set_tunable("source", "hint-fault"));
			continue;
		}
		snprintf(with_nl, sizeof(with_nl), "%s\n", pmu[i]);
		err = set_tunable("source", pmu[i]);
		EXPECT_EQ(ENODEV, err) TH_LOG("%s: %s", pmu[i], strerror(err));
		err = set_tunable("source", with_nl);
		EXPECT_EQ(ENODEV, err) TH_LOG("%s\\n: %s", pmu[i], strerror(err));
		ASSERT_EQ(0, tunable_get(&all_tunables[0], now, sizeof(now)));
		EXPECT_STREQ("hint-fault", now);
		TH_LOG("%s: not listed (%s), refused with %s; hint-fault kept",
		       pmu[i], list, strerror(err));
		nodev++;
	}
	/* A machine has at most one of the two; the guest has neither. */
	EXPECT_LE(1, nodev);
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		err = set_tunable("source", unknown[i]);
		EXPECT_EQ(EINVAL, err) TH_LOG("\"%s\": %s", unknown[i],
					      err ? strerror(err) : "success");
		ASSERT_EQ(0, tunable_get(&all_tunables[0], now, sizeof(now)));
		EXPECT_STREQ("hint-fault", now);
	}
	/* What new sessions use is still what was chosen. */
	pid = sleeper();
	ASSERT_LT(0, pid);
	err = sys_htmm_start(pid, -1);
	if (!err) {
		snprintf(path, sizeof(path), HTMM "/sessions/%d/source", pid);
		err = read_file(path, now, sizeof(now));
		sys_htmm_end(pid);
	}
	reap(pid);
	ASSERT_EQ(0, err);
	EXPECT_STREQ("hint-fault", now);
}

/*
 * The files that only show figures refuse writes, root's too: sysfs opens
 * a file without a store method (mode 0444) for writing with EACCES
 * (kernfs_fop_open()), before any store could run.
 */
TEST(read_only_files_refuse_writes)
{
	for (size_t i = 0; i < NR_READ_ONLY; i++) {
		char path[128], before[64], after[64];
		struct stat st;
		int fd, err;

		snprintf(path, sizeof(path), HTMM "/%s", read_only_files[i]);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s", path);
		EXPECT_EQ(0444U, st.st_mode & 0777) TH_LOG("%s", path);
		ASSERT_EQ(0, read_file(path, before, sizeof(before)));
		err = write_file(path, "1");
		EXPECT_EQ(EACCES, err) TH_LOG("%s: %s", path,
					      err ? strerror(err) : "written");
		fd = open(path, O_RDWR | O_CLOEXEC);
		EXPECT_EQ(-1, fd);
		EXPECT_EQ(EACCES, errno);
		if (fd >= 0)
			close(fd);
		ASSERT_EQ(0, read_file(path, after, sizeof(after)));
		EXPECT_TRUE(after[0] >= '0' && after[0] <= '9') TH_LOG("%s", after);
		TH_LOG("%s: mode %o, writing refused with %s (read %s, then %s)",
		       read_only_files[i], st.st_mode & 0777, strerror(err), before,
		       after);
	}
}

/*
 * The files of a session's directory, sessions/<pid>/, as the ABI lists
 * them.  The session_files tests below judge each one that no other test
 * judged, and a few more, against something it must agree with: the
 * pages' nodes as move_pages(2) reads them, /proc/vmstat, the
 * htmm:htmm_migrate trace, the tunables, the workload's own layout, or
 * another file.
 */
static const char *const session_file_names[] = {
	"node", "source", "events", "sampled", "fast_read", "slow_read",
	"store", "fault", "fast", "slow", "unmapped", "bad_addr", "lost",
	"throttled", "malformed", "untracked", "unarmed", "tracked", "epoch",
	"hot_threshold", "histogram", "pages_fast", "pages_slow", "pages_hot",
	"pages_warm", "pages_cold", "censuses", "promoted", "demoted",
	"promote_failed", "demote_failed", "skipped", "dropped", "requeued",
	"no_room",
	/* Its pace, judged by tiering.sessions_are_paced_each_on_its_own. */
	"sample_period", "sampling_cpu", "cpu_budget",
	/* The scan's: tiering.light_2mib_are_armed_less_yet_followed. */
	"scan_armed", "scan_light",
	/* Its backoff: tiering.scan_backs_off_while_nothing_is_hot. */
	"hinted", "scan_backoff",
};

#define NR_SESSION_FILES \
	(sizeof(session_file_names) / sizeof(session_file_names[0]))

#define SF_MB		(1UL << 20)
#define SF_PAGE		4096UL
#define SF_NR_BINS	16		/* HTMM_NR_BINS */
#define SF_QUEUE_LEN	4096		/* HTMM_QUEUE_LEN */
#define SF_MIN_CHUNKS	1024		/* HTMM_MIN_CHUNKS */
#define SF_NULL_FAULTS	64
#define TRACING		"/sys/kernel/tracing"
#define MIGRATE_EVENT	TRACING "/events/htmm/htmm_migrate/enable"

/*
 * A part of a workload's buffer: first touched on @node, one page every
 * @step bytes, then read over and over (@loop) or left alone; @shared:
 * shared memory, mapped by a second process as well (a forked one that
 * reads each page once).
 */
struct part {
	size_t off, len, step;
	int node;
	bool loop, shared;
};

/* A workload: a child process and the pipes that command it. */
struct kid {
	pid_t pid;
	int cmd, ack;
	char *p;		/* its buffer: an address in the child only */
	size_t len;
};

static volatile uintptr_t null_addr;	/* 0, which the compiler cannot see */
static sigjmp_buf null_env;

static void null_fault_handler(int sig)
{
	(void)sig;
	siglongjmp(null_env, 1);
}

/* Fault on address 0 @n times, surviving each SIGSEGV. */
static void null_faults(int n)
{
	struct sigaction sa = { .sa_handler = null_fault_handler };

	sigaction(SIGSEGV, &sa, NULL);
	for (int i = 0; i < n; i++)
		if (!sigsetjmp(null_env, 1))
			(void)*(volatile char *)null_addr;
	signal(SIGSEGV, SIG_DFL);
}

/* bind_to(), in the child: a failure ends it with 3. */
static void sf_mbind(char *p, size_t len, int node)
{
	if (bind_to(p, len, node))
		_exit(3);
}

static __attribute__((noreturn)) void
kid_main(char *p, size_t len, const struct part *parts, int nparts, int cmd,
	 int ack)
{
	bool shared = false;
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (madvise(p, len, MADV_NOHUGEPAGE))
		_exit(2);
	for (int i = 0; i < nparts; i++) {
		const struct part *pt = &parts[i];

		/*
		 * Shared memory: copy-on-write pages that a fork shares are
		 * not even armed (change_prot_numa() skips them).
		 */
		if (pt->shared &&
		    mmap(p + pt->off, pt->len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			_exit(2);
		if (pt->shared)
			madvise(p + pt->off, pt->len, MADV_NOHUGEPAGE);
		/*
		 * Placed by a policy that is then taken away: a vma with a
		 * policy of its own that has no MPOL_F_MOF is not managed.
		 */
		sf_mbind(p + pt->off, pt->len, pt->node);
		for (size_t o = 0; o < pt->len; o += pt->step)
			p[pt->off + o] = 1;
		sf_mbind(p + pt->off, pt->len, -1);
		shared |= pt->shared;
	}
	if (shared) {
		int mapped[2];
		pid_t other;

		/* The rest stays this process's own: not shared, not copied. */
		for (int i = 0; i < nparts; i++)
			if (!parts[i].shared &&
			    madvise(p + parts[i].off, parts[i].len, MADV_DONTFORK))
				_exit(5);
		if (pipe(mapped))
			_exit(5);
		other = fork();
		if (other < 0)
			_exit(5);
		if (!other) {
			/* Map the shared pages (a fork copies no such PTE). */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (int i = 0; i < nparts; i++) {
				const volatile char *q = p + parts[i].off;

				for (size_t o = 0; parts[i].shared && o < parts[i].len;
				     o += parts[i].step)
					(void)q[o];
			}
			if (write(mapped[1], "m", 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
		if (read(mapped[0], &c, 1) != 1)
			_exit(5);
	}
	if (fcntl(cmd, F_SETFL, O_NONBLOCK) || write(ack, "r", 1) != 1)
		_exit(6);
	for (;;) {
		if (read(cmd, &c, 1) == 1) {
			if (c == 'n')
				null_faults(SF_NULL_FAULTS);
			if (write(ack, &c, 1) != 1)
				_exit(7);
		}
		/* Reads: shared pages stay shared. */
		for (int i = 0; i < nparts; i++) {
			const volatile char *q = p + parts[i].off;

			for (size_t o = 0; parts[i].loop && o < parts[i].len;
			     o += parts[i].step)
				(void)q[o];
		}
	}
}

/* Start a workload with the buffer @parts describe; 0 or -1. */
static int kid_start(struct kid *k, size_t len, const struct part *parts,
		     int nparts)
{
	int cmd[2], ack[2];
	pid_t pid;
	char c;

	k->pid = -1;
	k->len = len;
	/* Mapped here to learn its address; the child's copy is its own. */
	k->p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (k->p == MAP_FAILED || pipe(cmd) || pipe(ack))
		return -1;
	/* @k may be shared (the fixture's): only the parent writes it. */
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(cmd[1]);
		close(ack[0]);
		kid_main(k->p, len, parts, nparts, cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	munmap(k->p, len);
	k->pid = pid;
	k->cmd = cmd[1];
	k->ack = ack[0];
	return read(k->ack, &c, 1) == 1 && c == 'r' ? 0 : -1;
}

/* Ask the workload to do @c, and wait for it to be done. */
static int kid_do(struct kid *k, char c)
{
	char r;

	return write(k->cmd, &c, 1) == 1 && read(k->ack, &r, 1) == 1 && r == c ?
	       0 : -1;
}

static void kid_end(struct kid *k)
{
	if (k->pid <= 0)
		return;
	kill(k->pid, SIGKILL);
	waitpid(k->pid, NULL, 0);
	close(k->cmd);
	close(k->ack);
}

/*
 * The pages of the workload's [off, off + len), one every @step bytes, on
 * each node (@on[0], @on[1]), by move_pages(2); 0 or an errno.
 */
static int kid_nodes(const struct kid *k, size_t off, size_t len, size_t step,
		     long on[2])
{
	enum { BATCH = 512 };
	void *pages[BATCH];
	int status[BATCH];
	size_t n = 0;

	on[0] = on[1] = 0;
	for (size_t o = 0; o < len; o += step) {
		pages[n++] = k->p + off + o;
		if (n < BATCH && o + step < len)
			continue;
		if (syscall(SYS_move_pages, k->pid, n, pages, NULL, status, 0))
			return errno;
		for (size_t i = 0; i < n; i++)
			if (status[i] == 0 || status[i] == 1)
				on[status[i]]++;
		n = 0;
	}
	return 0;
}

/* The resident pages of @pid (/proc/<pid>/statm), or -1. */
static long resident_pages(pid_t pid)
{
	char path[64], buf[128];
	long size, res;

	snprintf(path, sizeof(path), "/proc/%d/statm", pid);
	if (read_file(path, buf, sizeof(buf)) ||
	    sscanf(buf, "%ld %ld", &size, &res) != 2)
		return -1;
	return res;
}

/*
 * A session's census: pages_fast, _slow, _hot, _warm, _cold, and @n, the
 * number of censuses taken (censuses) when it was read.
 */
struct census {
	long long fast, slow, hot, warm, cold, n;
};

/*
 * The census, read whole: kmigraterd writes its five figures one after
 * the other, then counts the census in censuses, so they are read until
 * two readings in a row agree, censuses with them.  The figures are then
 * those of census @c->n or a later one.
 */
static int census_read(pid_t pid, struct census *c)
{
	for (int i = 0; i < 200; i++) {
		struct census a, b;

		a.n = session_ll(pid, "censuses");
		b.n = a.n;
		a.fast = session_ll(pid, "pages_fast");
		a.slow = session_ll(pid, "pages_slow");
		a.hot = session_ll(pid, "pages_hot");
		a.warm = session_ll(pid, "pages_warm");
		a.cold = session_ll(pid, "pages_cold");
		b.fast = session_ll(pid, "pages_fast");
		b.slow = session_ll(pid, "pages_slow");
		b.hot = session_ll(pid, "pages_hot");
		b.warm = session_ll(pid, "pages_warm");
		b.cold = session_ll(pid, "pages_cold");
		if (a.fast < 0 || a.n < 0)
			return -1;
		if (!memcmp(&a, &b, sizeof(a)) &&
		    session_ll(pid, "censuses") == a.n) {
			*c = a;
			return 0;
		}
		usleep(2000);
	}
	return -1;
}

#define CENSUS_FMT "fast %lld slow %lld hot %lld warm %lld cold %lld"
#define CENSUS_ARGS(c) (c).fast, (c).slow, (c).hot, (c).warm, (c).cold

/*
 * Whether the histogram's pages add up to tracked: ksamplingd changes both
 * together under htmm_lock, and they are read without it, so up to 100
 * tries for a histogram read between two equal readings of tracked.
 */
static bool histogram_adds_up(struct __test_metadata *_metadata, pid_t pid,
			      long long *tracked)
{
	long long bins[SF_NR_BINS + 1], t0 = -1, t1 = -1, sum = 0;
	int n = -1;

	for (int i = 0; i < 100; i++) {
		t0 = session_ll(pid, "tracked");
		n = session_histogram(pid, bins, SF_NR_BINS + 1);
		t1 = session_ll(pid, "tracked");
		sum = 0;
		for (int b = 0; b < n; b++)
			sum += bins[b];
		if (n == SF_NR_BINS && t0 == t1 && sum == t0)
			break;
		usleep(20000);
	}
	*tracked = t1;
	TH_LOG("histogram: %d bins, %lld pages; tracked %lld", n, sum, t1);
	EXPECT_EQ(SF_NR_BINS, n);
	return n == SF_NR_BINS && t0 == t1 && sum == t0;
}

/* Each of @names of @pid's session, into @v; -1 if one is gone. */
static int session_read(pid_t pid, const char *const *names, int n,
			long long *v)
{
	for (int i = 0; i < n; i++) {
		v[i] = session_ll(pid, names[i]);
		if (v[i] < 0)
			return -1;
	}
	return 0;
}

/*
 * Wait, up to @timeout_s, for @names of @pid's session to hold still for
 * @hold_s; 0 with their values in @v, or -1.
 */
static int session_settle(pid_t pid, const char *const *names, int n,
			  long long *v, double hold_s, double timeout_s)
{
	long long w[32];
	double start = now_s(), still = now_s();

	if (n > 32 || session_read(pid, names, n, v))
		return -1;
	while (now_s() - start < timeout_s) {
		usleep(100000);
		if (session_read(pid, names, n, w))
			return -1;
		if (memcmp(v, w, n * sizeof(*v))) {
			memcpy(v, w, n * sizeof(*v));
			still = now_s();
		} else if (now_s() - still >= hold_s) {
			return 0;
		}
	}
	return -1;
}

static void set_or_fail(struct __test_metadata *_metadata, const char *name,
			const char *value)
{
	int err = set_tunable(name, value);

	ASSERT_EQ(0, err) TH_LOG("%s = %s: %s", name, value, strerror(err));
}

FIXTURE(session_files) {
	struct saved_tunables saved;
	char migrate_event[8];		/* htmm_migrate's enable, if changed */
	struct kid kid;
};

/*
 * The hint-fault source at a sample period of 1 (every scan at once:
 * ksamplingd's budget does not stretch it), kmigraterd's census every
 * 100 ms and never stretched (a budget of a whole cpu), and no promotion
 * unless a test turns it on: the pages stay where the workload put them.
 */
FIXTURE_SETUP(session_files)
{
	save_tunables(&self->saved);
	self->migrate_event[0] = '\0';
	self->kid.pid = -1;
	/* The vmstat checks below count on no other session running. */
	ASSERT_EQ(0, sessions_left(30)) TH_LOG("sessions of other tests are left");
	set_or_fail(_metadata, "source", "hint-fault");
	set_or_fail(_metadata, "sample_period_max", "1");
	set_or_fail(_metadata, "cpu_quota", "1000");
	set_or_fail(_metadata, "migrate_interval_ms", "100");
	set_or_fail(_metadata, "promote_rate_mb", "0");
}

FIXTURE_TEARDOWN_PARENT(session_files)
{
	/* The workload died with the test's process (PR_SET_PDEATHSIG). */
	if (self->kid.pid > 0)
		kill(self->kid.pid, SIGKILL);
	if (self->migrate_event[0])
		write_file(MIGRATE_EVENT, self->migrate_event);
	restore_tunables(_metadata, &self->saved);
}

/*
 * The directory holds the files the ABI lists, each readable by root only
 * (mode 0400: numa_maps tells as much), and none is writable, root
 * included (no store method: EACCES from sysfs).  A file this test does
 * not know is held to the same modes, and named in the log.
 */
static void check_session_dir(struct __test_metadata *_metadata, pid_t pid)
{
	char dir[64], path[320];
	size_t found = 0;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), HTMM "/sessions/%d", pid);
	d = opendir(dir);
	ASSERT_NE(NULL, d);
	while ((e = readdir(d))) {
		bool known = false;
		struct stat st;
		int err;

		if (e->d_name[0] == '.')
			continue;
		for (size_t i = 0; i < NR_SESSION_FILES; i++)
			known |= !strcmp(session_file_names[i], e->d_name);
		if (!known)
			TH_LOG("%s: a file these tests do not judge", e->d_name);
		found += known;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		ASSERT_EQ(0, stat(path, &st));
		EXPECT_EQ(0400U, st.st_mode & 0777) TH_LOG("%s", e->d_name);
		err = write_file(path, "0");
		EXPECT_EQ(EACCES, err) TH_LOG("%s: %s", e->d_name,
					      err ? strerror(err) : "written");
	}
	closedir(d);
	EXPECT_EQ(NR_SESSION_FILES, found);
}

/* Whether @v is a power of two. */
static bool pow2(long long v)
{
	return v > 0 && !(v & (v - 1));
}

/*
 * A workload with a hot part and a cold part on the slow node and a part
 * in use on the fast node, while nothing is promoted.  The census, the
 * threshold, the histogram and the sample counters must agree with its
 * layout, with move_pages(2), with /proc/vmstat and with each other.
 */
TEST_F_TIMEOUT(session_files, samples_and_census_add_up, 900)
{
	enum { HOT = 1024, COLD = 3072, WARM = 1024, SLACK = 256 };
	const struct part parts[] = {
		{ .off = 0, .len = HOT * SF_PAGE, .step = SF_PAGE, .node = 1,
		  .loop = true },
		{ .off = HOT * SF_PAGE, .len = COLD * SF_PAGE, .step = SF_PAGE,
		  .node = 1 },
		{ .off = (HOT + COLD) * SF_PAGE, .len = WARM * SF_PAGE,
		  .step = SF_PAGE, .node = 0, .loop = true },
	};
	static const char *const sample_names[] = {
		"sampled", "fast_read", "slow_read", "store", "fault", "fast",
		"slow", "unmapped", "bad_addr", "lost", "throttled", "malformed",
		"untracked", "unarmed",
	};
	enum { SAMPLED, FAST_READ, SLOW_READ, STORE, FAULT, FAST, SLOW,
	       UNMAPPED, BAD_ADDR, LOST, THROTTLED, MALFORMED, UNTRACKED,
	       UNARMED, NR_SAMPLE };
	long long v[NR_SAMPLE], lost0, throttled0, lost1, throttled1, bad0;
	long long thr, tracked;
	struct kid *k = &self->kid;
	struct census c = { -1, -1, -1, -1, -1, -1 };
	long on[2], warm_on[2], res;
	double start;
	pid_t pid;

	/* A fixed threshold of 2: a count of 1 is warm, 2 or more hot. */
	set_or_fail(_metadata, "hot_threshold_mode", "fixed");
	set_or_fail(_metadata, "hot_threshold", "2");
	lost0 = vmstat("htmm_sample_lost");
	throttled0 = vmstat("htmm_sample_throttled");
	ASSERT_LE(0, lost0);
	ASSERT_LE(0, throttled0);
	ASSERT_EQ(0, kid_start(k, (HOT + COLD + WARM) * SF_PAGE, parts, 3));
	pid = k->pid;
	ASSERT_EQ(0, sys_htmm_start(pid, -1));
	check_session_dir(_metadata, pid);

	/*
	 * hot_threshold, fixed: the tunable, read as it is now.  A session
	 * that kept a copy from its start, or showed its adaptive bin, fails.
	 */
	EXPECT_EQ(2, session_ll(pid, "hot_threshold"));

	/*
	 * The census.  The hot part takes a hint fault a round; the part in
	 * use on the fast node is never armed, but its accessed bits count
	 * two accesses a round (htmm_hotness_used()), which leaves it a count
	 * of 3 after the scan's pass and of 1 after the end of the round: hot
	 * or warm, whichever the census finds, never cold.  The cold part,
	 * touched only before the session began, has no count: cold.
	 */
	start = now_s();
	while (now_s() - start < patience(60)) {
		if (!census_read(pid, &c) &&
		    c.hot + c.warm >= WARM + HOT / 4)
			break;
		usleep(200000);
	}
	TH_LOG("census after %.1f s: " CENSUS_FMT, now_s() - start,
	       CENSUS_ARGS(c));
	ASSERT_EQ(0, kid_nodes(k, 0, (HOT + COLD) * SF_PAGE, SF_PAGE, on));
	ASSERT_EQ(0, kid_nodes(k, (HOT + COLD) * SF_PAGE, WARM * SF_PAGE,
			       SF_PAGE, warm_on));
	res = resident_pages(pid);
	TH_LOG("move_pages: slow parts %ld on node 0, %ld on node 1; fast part %ld on node 0; %ld pages resident",
	       on[0], on[1], warm_on[0], res);
	/* promote_rate_mb 0: nothing goes up (the ABI: "0: no promotion"). */
	EXPECT_EQ(HOT + COLD, on[1]);
	EXPECT_EQ(WARM, warm_on[0]);
	EXPECT_EQ(0, session_ll(pid, "promoted"));
	/*
	 * pages_hot and pages_warm: the fast part in use, and the hot part,
	 * sampled every round, are hot or warm.
	 */
	EXPECT_LE(WARM + HOT / 4, c.hot + c.warm);
	/*
	 * pages_cold: the cold part is never sampled, and reads cold whole.
	 * A kernel that gave first touches (unarmed) or armed pages that
	 * were not touched a count fails here, and the hot and warm pages
	 * cannot be more than the parts in use and the few other pages the
	 * process uses.
	 */
	EXPECT_LE(COLD, c.cold);
	EXPECT_GE(HOT + WARM + SLACK, c.hot + c.warm);
	/* Every page in exactly one class of each kind: one walk counts both. */
	EXPECT_EQ(c.fast + c.slow, c.hot + c.warm + c.cold);
	/*
	 * pages_slow and pages_fast against move_pages(2): the slow parts
	 * are all the slow pages the process has (give or take the few
	 * pages of its other mappings), and all its counted pages are
	 * resident.  A census that missed pages, counted them twice or on
	 * the wrong tier fails here.
	 */
	EXPECT_LE(on[1], c.slow);
	EXPECT_GE(on[1] + SLACK, c.slow);
	EXPECT_LE(warm_on[0], c.fast);
	EXPECT_GE(res, c.fast + c.slow);

	/*
	 * A fixed threshold of 1: every page with a count is hot, and none
	 * is warm (the bin under 1 is that of a count of 0: the ABI's
	 * "colder, or never sampled").  A census that kept the old threshold
	 * fails.
	 */
	set_or_fail(_metadata, "hot_threshold", "1");
	EXPECT_EQ(1, session_ll(pid, "hot_threshold"));
	start = now_s();
	while (now_s() - start < patience(60)) {
		if (!census_read(pid, &c) && !c.warm &&
		    c.hot >= WARM / 2 + HOT / 4)
			break;
		usleep(200000);
	}
	TH_LOG("threshold 1, census after %.1f s: " CENSUS_FMT,
	       now_s() - start, CENSUS_ARGS(c));
	EXPECT_EQ(0, c.warm);
	EXPECT_LE(WARM / 2 + HOT / 4, c.hot);
	EXPECT_GE(HOT + WARM + SLACK, c.hot);
	EXPECT_LE(COLD, c.cold);
	EXPECT_EQ(c.fast + c.slow, c.hot + c.warm + c.cold);

	/*
	 * A fixed threshold of 32767: no count comes near (a hint fault
	 * weighs at most 64, and counts halve every round), so nothing is
	 * hot, and nothing warm (the bin under it starts at 8192).
	 */
	set_or_fail(_metadata, "hot_threshold", "32767");
	EXPECT_EQ(32767, session_ll(pid, "hot_threshold"));
	start = now_s();
	while (now_s() - start < patience(20)) {
		if (!census_read(pid, &c) && !c.hot && !c.warm)
			break;
		usleep(200000);
	}
	TH_LOG("threshold 32767, census after %.1f s: " CENSUS_FMT,
	       now_s() - start, CENSUS_ARGS(c));
	EXPECT_EQ(0, c.hot);
	EXPECT_EQ(0, c.warm);
	EXPECT_EQ(c.fast + c.slow, c.cold);

	/*
	 * Adaptive, with a floor of 4: the lowest count of a log2 bin
	 * (a power of two) or the floor, whichever is higher.
	 */
	set_or_fail(_metadata, "hot_threshold", "4");
	set_or_fail(_metadata, "hot_threshold_mode", "adaptive");
	usleep(500000);
	thr = session_ll(pid, "hot_threshold");
	TH_LOG("adaptive, floor 4: hot_threshold %lld", thr);
	EXPECT_LE(4, thr);
	EXPECT_TRUE(thr == 4 || pow2(thr)) TH_LOG("%lld", thr);

	/*
	 * bad_addr: a fault on address 0 is recorded like any fault, with
	 * address 0, which names no user page: each of the workload's
	 * SF_NULL_FAULTS is dropped as a bad address (or lost, if perf had
	 * no room for it), and nothing else the workload does names one.
	 * A kernel that let address 0 through (to be looked up, and counted
	 * unmapped or unarmed) fails.
	 */
	bad0 = session_ll(pid, "bad_addr");
	ASSERT_EQ(0, kid_do(k, 'n'));

	/* Then still: every record read, no count changing but by cooling. */
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(0, session_settle(pid, sample_names, NR_SAMPLE, v, 1.0,
				    patience(30)))
		TH_LOG("the sample counters do not settle");
	lost1 = vmstat("htmm_sample_lost");
	throttled1 = vmstat("htmm_sample_throttled");
	for (int i = 0; i < NR_SAMPLE; i++)
		TH_LOG("%s %lld", sample_names[i], v[i]);
	TH_LOG("vmstat: htmm_sample_lost +%lld, htmm_sample_throttled +%lld",
	       lost1 - lost0, throttled1 - throttled0);

	/*
	 * fast_read, slow_read, store: the hint-fault source's one event
	 * counts faults, which tell no load from a store: its samples are
	 * all of kind fault.  A kind taken from the wrong event fails.
	 */
	EXPECT_EQ(0, v[FAST_READ]);
	EXPECT_EQ(0, v[SLOW_READ]);
	EXPECT_EQ(0, v[STORE]);
	EXPECT_EQ(v[SAMPLED], v[FAST_READ] + v[SLOW_READ] + v[STORE] + v[FAULT]);
	/*
	 * slow and fast: the source arms the lower tiers' pages only, and a
	 * fault on a top-tier page is dropped (counted in unarmed): no sample
	 * lands on the fast tier, and the hot part's land on the slow one.
	 * A kernel that weighed top-tier faults, or took a node's tier the
	 * wrong way round, fails.
	 */
	EXPECT_EQ(0, v[FAST]);
	EXPECT_LT(HOT / 4, v[SLOW]);
	/*
	 * unmapped: each sample is on a fast page, a slow page or no page
	 * (ksamplingd could not resolve it), once: the three add up to
	 * sampled.  A sample counted in none of them, or in two, fails.
	 */
	EXPECT_EQ(v[SAMPLED], v[FAST] + v[SLOW] + v[UNMAPPED]);
	EXPECT_LE(v[BAD_ADDR] - bad0, SF_NULL_FAULTS);
	EXPECT_LE(SF_NULL_FAULTS, v[BAD_ADDR] - bad0 + v[LOST]);
	/*
	 * lost and throttled are the records perf wrote about the session's
	 * buffers, which /proc/vmstat counts as well (for all sessions:
	 * this is the only one).  The hint-fault source's software event,
	 * at a period of 1, is never throttled (perf_swevent_overflow()).
	 * A session counter that missed records, took them from another
	 * session or counted one kind of record as another fails.
	 */
	EXPECT_EQ(lost1 - lost0, v[LOST]);
	EXPECT_EQ(throttled1 - throttled0, v[THROTTLED]);
	EXPECT_EQ(0, v[THROTTLED]);
	EXPECT_EQ(0, v[MALFORMED]);
	/*
	 * untracked: the workload's 80 chunks of counts are far under the
	 * bound of 1024, and the guest has memory to spare: every sample is
	 * counted.  A bound lower than the ABI's fails.
	 */
	EXPECT_EQ(0, v[UNTRACKED]);

	/*
	 * histogram: 16 bins whose pages add up to tracked, which holds at
	 * least the pages sampled (the hot part) and those whose accessed
	 * bit was counted (the fast part).  A bin that lost or kept pages
	 * when counts moved, or a cooling that dropped them, fails.
	 */
	EXPECT_TRUE(histogram_adds_up(_metadata, pid, &tracked));
	EXPECT_LE(HOT / 4 + WARM / 2, tracked);

	ASSERT_EQ(0, sys_htmm_end(pid));
	kid_end(k);
	k->pid = -1;
}

/*
 * untracked: a session keeps at most one chunk of 64 counts for every 32
 * resident pages of its process, and at least 1024 chunks (the ABI).  A
 * workload that reads 2048 pages 256 KiB apart, one page in each chunk, has
 * 2048 + a few hundred resident pages: the bound is 1024 chunks, and the
 * samples of half its pages find no room.
 */
TEST_F_TIMEOUT(session_files, samples_over_the_bound_are_untracked, 600)
{
	enum { SPARSE = 2048, SLACK = 256 };
	const size_t step = 256 << 10;
	const struct part parts[] = {
		{ .off = 0, .len = SPARSE * step, .step = step, .node = 1,
		  .loop = true },
	};
	long long untracked = -1, tracked = -1;
	struct kid *k = &self->kid;
	double start;
	pid_t pid;

	/* Every round over the whole 512 MiB at once. */
	set_or_fail(_metadata, "hint_scan_mb", "1024");
	ASSERT_EQ(0, kid_start(k, SPARSE * step, parts, 1));
	pid = k->pid;
	ASSERT_EQ(0, sys_htmm_start(pid, -1));
	start = now_s();
	while (now_s() - start < patience(60)) {
		untracked = session_ll(pid, "untracked");
		tracked = session_ll(pid, "tracked");
		if (untracked > 0 && tracked >= SF_MIN_CHUNKS * 3 / 4)
			break;
		usleep(200000);
	}
	TH_LOG("after %.1f s: tracked %lld, untracked %lld (sampled %lld, slow %lld, %ld pages resident)",
	       now_s() - start, tracked, untracked, session_ll(pid, "sampled"),
	       session_ll(pid, "slow"), resident_pages(pid));
	/*
	 * Samples over the bound are counted, not silently dropped: a
	 * kernel that did not hold the bound (tracked near 2048, none
	 * untracked) or dropped them uncounted fails.
	 */
	EXPECT_LT(0, untracked);
	/*
	 * The bound holds: at most 1024 of the sparse pages, one to a
	 * chunk, and the few other pages the process uses, share chunks.
	 */
	EXPECT_GE(SF_MIN_CHUNKS + SLACK, tracked);
	/* And it is no lower than the ABI's 1024 chunks. */
	EXPECT_LE(SF_MIN_CHUNKS * 3 / 4, tracked);
	EXPECT_TRUE(histogram_adds_up(_metadata, pid, &tracked));
	ASSERT_EQ(0, sys_htmm_end(pid));
	kid_end(k);
	k->pid = -1;
}

/* What the htmm:htmm_migrate trace says was moved for @pid. */
struct migrate_trace {
	long long promoted, promote_failed, demoted, demote_failed, events;
};

static int migrate_trace_read(pid_t pid, struct migrate_trace *t)
{
	FILE *f = fopen(TRACING "/trace", "r");
	char line[512], dir[16];
	unsigned long nr;
	unsigned int moved;
	int tpid, nid;

	memset(t, 0, sizeof(*t));
	if (!f)
		return errno;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "htmm_migrate: pid=");

		if (!p || sscanf(p, "htmm_migrate: pid=%d %15s nid=%d nr_pages=%lu nr_moved=%u",
				 &tpid, dir, &nid, &nr, &moved) != 5 || tpid != pid)
			continue;
		t->events++;
		if (!strcmp(dir, "promote")) {
			t->promoted += moved;
			t->promote_failed += nr - moved;
		} else {
			t->demoted += moved;
			t->demote_failed += nr - moved;
		}
	}
	fclose(f);
	return 0;
}

/* Events the trace buffer overwrote, over every cpu; -1 if unreadable. */
static long long trace_overrun(void)
{
	long long sum = 0;

	for (long cpu = 0; cpu < sysconf(_SC_NPROCESSORS_CONF); cpu++) {
		char path[96], line[128];
		long long v;
		FILE *f;

		snprintf(path, sizeof(path), TRACING "/per_cpu/cpu%ld/stats", cpu);
		f = fopen(path, "r");
		if (!f)
			return -1;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "overrun: %lld", &v) == 1)
				sum += v;
		fclose(f);
	}
	return sum;
}

/*
 * What kmigraterd does for a session, phase by phase, on a workload whose
 * 7424 pages on the slow node are all in use, 256 of them shared with
 * another process; a fixed threshold of 1 makes each page hot (queued for
 * promotion) at its first sample:
 *
 * 1. promote_rate_mb 0: nothing moves, the queue (4096 hints) fills and
 *    the hints of the other pages are dropped: dropped;
 * 2. fast_budget_mb 4: promotion stops at the budget: no_room;
 * 3. no budget: the queue drains, and the hot pages whose hints were
 *    dropped are queued again by the census, the process stopped so that
 *    no sample of theirs queues them first: requeued; the shared pages
 *    stay where they are: skipped;
 * 4. a threshold of 32767 and fast_budget_mb 4: the pages over the budget
 *    go down: demoted, demote_failed.
 *
 * promoted, demoted, promote_failed and demote_failed must then be what
 * the htmm:htmm_migrate trace of the whole session says kmigraterd moved.
 */
TEST_F_TIMEOUT(session_files, migration_counters_follow_the_moves, 1800)
{
	enum { OWN = 7168, SHARED = 256, SLACK = 256, BUDGET = 1024,
	       SPARE = 64 };
	const struct part parts[] = {
		{ .off = 0, .len = OWN * SF_PAGE, .step = SF_PAGE, .node = 1,
		  .loop = true },
		/* Shared memory (shmem), mapped by another process too. */
		{ .off = OWN * SF_PAGE, .len = SHARED * SF_PAGE, .step = SF_PAGE,
		  .node = 1, .loop = true, .shared = true },
	};
	static const char *const names[] = {
		"promoted", "demoted", "promote_failed", "demote_failed",
		"skipped", "dropped", "requeued", "no_room",
	};
	enum { PROMOTED, DEMOTED, PROMOTE_FAILED, DEMOTE_FAILED, SKIPPED,
	       DROPPED, REQUEUED, NO_ROOM, NR_NAMES };
	long long v[NR_NAMES], tracked = -1, dropped = -1, requeued = -1;
	long long skipped = -1, no_room = -1, demoted = -1, other_fast;
	/* What reading a record counts: still once the buffers are read. */
	static const char *const record_names[] = {
		"sampled", "unarmed", "bad_addr", "lost", "malformed",
		"dropped",
	};
	enum { NR_RECORD = ARRAY_SIZE(record_names) };
	long long rec[NR_RECORD], requeued0 = -1, epoch0 = -1, epoch1 = -1;
	long long counted = -1, fast = -1, spare = -1, stopped_n = -1;
	int status;
	struct kid *k = &self->kid;
	struct migrate_trace tr;
	struct census c = { -1, -1, -1, -1, -1, -1 };
	long on[2] = { -1, -1 }, shared_on[2] = { -1, -1 };
	double start, requeue_s, census_s = -1;
	char scan_period[32];
	pid_t pid;
	int fd;

	/* The trace of every move, from before the session starts. */
	ASSERT_EQ(0, read_file(MIGRATE_EVENT, self->migrate_event,
			       sizeof(self->migrate_event)))
		TH_LOG("no htmm:htmm_migrate tracepoint at %s", MIGRATE_EVENT);
	fd = open(TRACING "/trace", O_WRONLY | O_TRUNC);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, write_file(MIGRATE_EVENT, "1"));
	set_or_fail(_metadata, "hot_threshold_mode", "fixed");
	set_or_fail(_metadata, "hot_threshold", "1");
	ASSERT_EQ(0, kid_start(k, (OWN + SHARED) * SF_PAGE, parts, 2));
	pid = k->pid;
	ASSERT_EQ(0, sys_htmm_start(pid, -1));

	/*
	 * 1. dropped.  Nothing leaves the queue, which holds 4096 pages: of
	 * the slow pages sampled (tracked, but for the fast pages the
	 * accessed bits count), all but those were dropped, each at least
	 * once.  A drop not counted fails.
	 */
	start = now_s();
	while (now_s() - start < patience(60)) {
		tracked = session_ll(pid, "tracked");
		if (!census_read(pid, &c) &&
		    tracked - c.fast >= SF_QUEUE_LEN + 1024 &&
		    session_ll(pid, "dropped") > 0)
			break;
		usleep(200000);
	}
	dropped = session_ll(pid, "dropped");
	ASSERT_EQ(0, kid_nodes(k, 0, (OWN + SHARED) * SF_PAGE, SF_PAGE, on));
	TH_LOG("1. no promotion, after %.1f s: tracked %lld, dropped %lld, promoted %lld; %ld pages on node 0; " CENSUS_FMT,
	       now_s() - start, tracked, dropped, session_ll(pid, "promoted"),
	       on[0], CENSUS_ARGS(c));
	ASSERT_LT(0, dropped);
	EXPECT_LE(tracked - c.fast - SF_QUEUE_LEN - SLACK / 4, dropped);
	/* promote_rate_mb 0: no promotion. */
	EXPECT_EQ(0, session_ll(pid, "promoted"));
	EXPECT_EQ(0, on[0]);
	/* The process's other pages on the fast node (its stack, ...). */
	other_fast = c.fast;

	/*
	 * 2. no_room.  With a budget of 4 MiB, promotion stops at 31/32 of
	 * it, with hints waiting: each time, no_room.  The process's pages
	 * on the fast node stay within the budget.  A kernel that promoted
	 * past the budget, or stopped without counting it, fails.
	 */
	set_or_fail(_metadata, "fast_budget_mb", "4");
	set_or_fail(_metadata, "promote_rate_mb", "2048");
	/* no_room counts when kmigraterd isolates, before the pages move. */
	start = now_s();
	while (now_s() - start < patience(60)) {
		no_room = session_ll(pid, "no_room");
		if (!kid_nodes(k, 0, (OWN + SHARED) * SF_PAGE, SF_PAGE, on) &&
		    no_room > 0 && on[0] >= BUDGET / 2)
			break;
		usleep(100000);
	}
	ASSERT_EQ(0, census_read(pid, &c));
	ASSERT_EQ(0, kid_nodes(k, 0, (OWN + SHARED) * SF_PAGE, SF_PAGE, on));
	TH_LOG("2. budget 4 MiB, after %.1f s: no_room %lld, promoted %lld; %ld pages on node 0; " CENSUS_FMT,
	       now_s() - start, no_room, session_ll(pid, "promoted"), on[0],
	       CENSUS_ARGS(c));
	EXPECT_LT(0, no_room);
	EXPECT_GE(BUDGET, c.fast);
	EXPECT_GE(BUDGET, on[0]);
	/* And up to it: the budget was what stopped promotion. */
	EXPECT_LE(BUDGET / 2, on[0]);

	/*
	 * 3. requeued.  Without a budget the queue drains; the census finds
	 * the hot slow pages whose hints were dropped and queues them again
	 * (before the scan comes back to them: the census runs every 100 ms,
	 * a round takes a second).  The shared pages are left where they
	 * are: the hint-fault scan of a managed process does not even arm a
	 * page another process maps, so they have no hints.  A census that
	 * left dropped hot pages to the next scan (requeued 0), or a shared
	 * page moved, fails.
	 *
	 * Samples must not queue the dropped pages first: on the debug
	 * kernel, sampling at a period of 1 takes the whole budget, and the
	 * census, which has what sampling leaves, may be stretched for
	 * longer than a round.  Holding the scan is not enough: the pages it
	 * armed before fault still, and their samples queued every dropped
	 * page ahead of a stretched census (seen once in four minutes:
	 * requeued 0, all the pages up).  Stopping the process is not
	 * either: ksamplingd still reads the records its buffers hold.  So
	 * the scan is held, the process stopped, and the buffers read while
	 * the budget still holds the queue full, which drops their hints;
	 * then the budget goes, and the census must requeue.
	 *
	 * And there must be hot pages left to requeue when it comes: pages
	 * counted (hot: the threshold is 1), less all on the fast node and
	 * all the queue holds, hot in a lower tier and in no queue.  Until
	 * the scan was held the counts cooled once a round, and a page
	 * sampled once in a round, as most are on the debug kernel, read as
	 * cold after the next (seen: 6930 pages hot, then 5028, and in
	 * another run the census found none to requeue in four minutes).
	 * So the process runs a second more, its samples dropped, until
	 * there are some.  The hold stops the cooling: a window of the scan
	 * begins where the last ended, at the end of the address space, so
	 * its round ends as it begins, and none begins for the hold's
	 * period; the epoch must hold still.  Once the census has
	 * requeued, the process and the scan are let go: the pages the
	 * debug kernel had not sampled yet in 1. need them.
	 *
	 * The hot pages are what the census reads as hot, not what the
	 * histogram counts: a page not sampled in the last 3 epochs reads
	 * as cold, whatever its count, and the census does not requeue it,
	 * but the histogram keeps it in its bin until its count cools to 0
	 * (seen: 5246 pages counted, 975 on the fast node, and no requeue
	 * in four minutes).  So the census is read once one has run on the
	 * stopped process from its start (censuses grew by two).  Its hot
	 * pages, less all on the fast node and a full queue, are hot in a
	 * lower tier and in no queue.
	 */
	ASSERT_EQ(0, read_file(HTMM "/hint_scan_period_ms", scan_period,
			       sizeof(scan_period)));
	start = now_s();
	for (;;) {
		long long bins[SF_NR_BINS + 1];
		int n;

		set_or_fail(_metadata, "hint_scan_period_ms", "600000");
		ASSERT_EQ(0, kill(pid, SIGSTOP));
		ASSERT_EQ(pid, waitpid(pid, &status, WUNTRACED));
		ASSERT_TRUE(WIFSTOPPED(status));
		ASSERT_EQ(0, session_settle(pid, record_names, NR_RECORD, rec,
					    1.0, patience(30)))
			TH_LOG("the stopped process's records are not all read");
		epoch0 = session_ll(pid, "epoch");
		n = session_histogram(pid, bins, SF_NR_BINS + 1);
		ASSERT_EQ(SF_NR_BINS, n);
		counted = 0;
		for (int b = 1; b < n; b++)
			counted += bins[b];
		/* Census n + 1 may have begun before the stop; n + 2 not. */
		stopped_n = session_ll(pid, "censuses");
		ASSERT_LE(0, stopped_n);
		census_s = now_s();
		while (!census_read(pid, &c) && c.n < stopped_n + 2 &&
		       now_s() - census_s < patience(60))
			usleep(100000);
		ASSERT_LE(stopped_n + 2, c.n)
			TH_LOG("no census of the stopped process in %.1f s",
			       now_s() - census_s);
		census_s = now_s() - census_s;
		ASSERT_EQ(0, kid_nodes(k, 0, OWN * SF_PAGE, SF_PAGE, on));
		fast = c.fast > on[0] + other_fast ? c.fast : on[0] + other_fast;
		spare = c.hot - fast - SF_QUEUE_LEN;
		if (spare >= SPARE || now_s() - start >= patience(60))
			break;
		ASSERT_EQ(0, kill(pid, SIGCONT));
		set_or_fail(_metadata, "hint_scan_period_ms", scan_period);
		usleep(1000000);
	}
	TH_LOG("3. held after %.1f s: %lld pages counted, %lld hot (census %lld, %.1f s after the stop), %lld on the fast node, so %lld hot in a lower tier and in no queue",
	       now_s() - start, counted, c.hot, c.n, census_s, fast, spare);
	ASSERT_LE(0, epoch0);
	ASSERT_LE(SPARE, spare);
	requeued0 = session_ll(pid, "requeued");
	ASSERT_LE(0, requeued0);
	set_or_fail(_metadata, "fast_budget_mb", "0");
	start = now_s();
	while (now_s() - start < patience(60)) {
		requeued = session_ll(pid, "requeued");
		if (requeued > requeued0)
			break;
		usleep(200000);
	}
	requeue_s = now_s() - start;
	epoch1 = session_ll(pid, "epoch");
	ASSERT_EQ(0, kill(pid, SIGCONT));
	set_or_fail(_metadata, "hint_scan_period_ms", scan_period);
	/* Then the pages go up, with a patience of their own. */
	start = now_s();
	while (now_s() - start < patience(60)) {
		if (!kid_nodes(k, 0, OWN * SF_PAGE, SF_PAGE, on) &&
		    on[0] >= OWN * 9 / 10)
			break;
		usleep(200000);
	}
	skipped = session_ll(pid, "skipped");
	ASSERT_EQ(0, kid_nodes(k, OWN * SF_PAGE, SHARED * SF_PAGE, SF_PAGE,
			       shared_on));
	TH_LOG("3. no budget, process stopped: requeued %lld to %lld after %.1f s, epochs %lld to %lld; then running, after %.1f s: skipped %lld, promoted %lld; own pages %ld on node 0, shared %ld on node 1",
	       requeued0, requeued, requeue_s, epoch0, epoch1,
	       now_s() - start, skipped, session_ll(pid, "promoted"), on[0],
	       shared_on[1]);
	EXPECT_LE(OWN * 9 / 10, on[0]);
	EXPECT_LT(requeued0, requeued);
	EXPECT_EQ(epoch0, epoch1)
		TH_LOG("the counts cooled while the scan was held");
	EXPECT_EQ(SHARED, shared_on[1]);

	/*
	 * 4. demoted.  With nothing hot and a budget of 4 MiB, the census
	 * finds the process over it and demotes its coldest pages, down to
	 * the budget.  Not quite: the coldest are the pages the process
	 * has not used since its fork, which its parent maps as well, and
	 * which cannot move (skipped).  The census demotes only from the
	 * coldest bins that hold enough pages to meet the budget, unmovable
	 * ones included, so the process may stay over it by up to those
	 * pages for good (seen: 1027 pages for a budget of 1024).  Its
	 * buffer itself goes down to the budget.
	 */
	set_or_fail(_metadata, "hot_threshold", "32767");
	set_or_fail(_metadata, "fast_budget_mb", "4");
	start = now_s();
	while (now_s() - start < patience(60)) {
		demoted = session_ll(pid, "demoted");
		if (!census_read(pid, &c) && c.fast <= BUDGET + other_fast &&
		    demoted > 0 && !kid_nodes(k, 0, OWN * SF_PAGE, SF_PAGE, on) &&
		    on[0] <= BUDGET)
			break;
		usleep(200000);
	}
	ASSERT_EQ(0, kid_nodes(k, 0, OWN * SF_PAGE, SF_PAGE, on));
	TH_LOG("4. nothing hot, budget 4 MiB, after %.1f s: demoted %lld, demote_failed %lld, skipped %lld; own pages %ld on node 0; other pages on it %lld before; " CENSUS_FMT,
	       now_s() - start, demoted, session_ll(pid, "demote_failed"),
	       session_ll(pid, "skipped"), on[0], other_fast, CENSUS_ARGS(c));
	EXPECT_LT(OWN * 9 / 10 - BUDGET - SLACK, demoted);
	EXPECT_GE(BUDGET + other_fast, c.fast);
	EXPECT_GE(BUDGET, on[0]);

	/*
	 * The counters against the trace, once nothing moves: each move of
	 * kmigraterd is one htmm_migrate event, with the pages it isolated
	 * and those that moved; promoted and demoted are the pages that
	 * moved, promote_failed and demote_failed the others.  A counter
	 * that missed a move, or counted one the wrong way, fails.  With no
	 * budget, nothing hot and room on the fast node, kmigraterd has
	 * nothing more to move: the process may still be over the budget by
	 * a few pages, and a census that demoted them between the reads of
	 * the trace and of the counters would set them apart.
	 */
	set_or_fail(_metadata, "fast_budget_mb", "0");
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(0, session_settle(pid, names, NR_NAMES, v, 2.0,
				    patience(60)))
		TH_LOG("kmigraterd's counters do not settle");
	ASSERT_EQ(0, migrate_trace_read(pid, &tr));
	ASSERT_EQ(0, session_read(pid, names, NR_NAMES, v + 0));
	for (int i = 0; i < NR_NAMES; i++)
		TH_LOG("%s %lld", names[i], v[i]);
	TH_LOG("trace: %lld events: promoted %lld (failed %lld), demoted %lld (failed %lld); overrun %lld",
	       tr.events, tr.promoted, tr.promote_failed, tr.demoted,
	       tr.demote_failed, trace_overrun());
	ASSERT_EQ(0, trace_overrun());
	EXPECT_EQ(tr.promoted, v[PROMOTED]);
	EXPECT_EQ(tr.promote_failed, v[PROMOTE_FAILED]);
	EXPECT_EQ(tr.demoted, v[DEMOTED]);
	EXPECT_EQ(tr.demote_failed, v[DEMOTE_FAILED]);

	ASSERT_EQ(0, sys_htmm_end(pid));
	kid_end(k);
	k->pid = -1;
}

TEST_HARNESS_MAIN
