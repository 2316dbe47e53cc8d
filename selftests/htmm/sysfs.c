// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/mm/htmm/: the tunables refuse bad values and keep good ones,
 * and each session has a directory, named by its pid, whose counters move
 * while its process runs and which goes away when the session ends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
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

/* ksamplingd's budget: the tunables it is made of, put back after. */
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

FIXTURE_TEARDOWN(budget)
{
	if (self->child > 0)
		reap(self->child);
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

	EXPECT_EQ(EINVAL, write_file(HTMM "/cpu_share", "1001"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/cpu_share", "all"));
	ASSERT_EQ(0, write_file(HTMM "/cpu_quota", "10"));
	ASSERT_EQ(0, write_file(HTMM "/cpu_share", "1000"));
	/* With no session (the tests run one at a time): the quota. */
	ASSERT_EQ(quota, get_ll(HTMM "/cpu_budget"));

	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child) {
		volatile unsigned long n = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			n++;
	}
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
}

/* The hotness tests sample fast: ksamplingd gets a fifth of a cpu. */
FIXTURE(hotness) {
	char quota[32];
};

FIXTURE_SETUP(hotness)
{
	ASSERT_EQ(0, read_file(HTMM "/cpu_quota", self->quota,
			       sizeof(self->quota)));
	ASSERT_EQ(0, write_file(HTMM "/cpu_quota", "200"));
}

FIXTURE_TEARDOWN(hotness)
{
	if (self->quota[0])
		write_file(HTMM "/cpu_quota", self->quota);
	/* A test that stopped early leaves no sample period bound behind. */
	write_file(HTMM "/sample_period_max", "0");
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
TEST_F_TIMEOUT(hotness, counts_of_unmapped_ranges_are_freed, 300)
{
	long long before, after;
	int cmd, ack;
	pid_t pid;
	char c;

	pid = hot_child(NULL, HOT_LEN, &cmd, &ack);
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(ack, &c, 1));
	ASSERT_EQ(0, sys_htmm_start(pid, -1));

	before = wait_session_ll(pid, "tracked", HOT_LEN / 4096 / 4, 1, 60);
	ASSERT_EQ(1, write(cmd, "u", 1));
	ASSERT_EQ(1, read(ack, &c, 1));
	after = wait_session_ll(pid, "tracked", 1024, 0, 60);
	TH_LOG("tracked pages: %lld with the 32 MiB buffer mapped, %lld after it was unmapped",
	       before, after);
	end_child(pid, cmd, ack);
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
	ASSERT_GE(before, (long long)(HOT_LEN / 4096 / 4));
	ASSERT_LE(after, 64);
}

#define MEMCG "htmm-sysfs"

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
	long long slab0, slab1, tracked;
	int cmd, ack, err;
	pid_t pid;
	char c;

	err = cgroup_make(MEMCG, "memory");
	ASSERT_EQ(0, err) TH_LOG("no memory cgroup: %s", strerror(err));
	pid = hot_child(NULL, len, &cmd, &ack);
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(ack, &c, 1));
	ASSERT_EQ(0, cgroup_join(MEMCG, pid));
	slab0 = memcg_stat(MEMCG, "slab_unreclaimable");
	ASSERT_LE(0, slab0);
	ASSERT_EQ(0, sys_htmm_start(pid, -1));

	tracked = wait_session_ll(pid, "tracked", len / 4096 / 2, 1, 120);
	slab1 = memcg_stat(MEMCG, "slab_unreclaimable");
	TH_LOG("%lld pages tracked; the cgroup's slab_unreclaimable %lld -> %lld (+%lld bytes, %.0f per tracked page)",
	       tracked, slab0, slab1, slab1 - slab0,
	       tracked > 0 ? (double)(slab1 - slab0) / tracked : 0.0);
	end_child(pid, cmd, ack);
	cgroup_remove(MEMCG);
	ASSERT_GE(tracked, (long long)(len / 4096 / 2));
	ASSERT_GE(slab1 - slab0, tracked / 64 * 256 / 2);
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
 */
static void keeps_sampling(struct __test_metadata *_metadata,
			   enum after_start what)
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
	close(thread_cmd[0]);
	close(leader_cmd[0]);
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
	close(thread_cmd[1]);
	close(leader_cmd[1]);
	ASSERT_LE(0, sampled0) TH_LOG("the session did not follow");
	ASSERT_GE(sampled1 - sampled0, 256);
}

TEST_F_TIMEOUT(hotness, exec_by_the_leader_keeps_sampling, 300)
{
	keeps_sampling(_metadata, EXEC_BY_LEADER);
}

TEST_F_TIMEOUT(hotness, exec_by_a_thread_keeps_sampling, 300)
{
	keeps_sampling(_metadata, EXEC_BY_THREAD);
}

TEST_F_TIMEOUT(hotness, leader_exit_keeps_sampling, 300)
{
	keeps_sampling(_metadata, LEADER_EXITS);
}

TEST_F_TIMEOUT(hotness, sibling_exit_keeps_sampling, 300)
{
	keeps_sampling(_metadata, SIBLING_EXITS);
}

TEST_HARNESS_MAIN
