// SPDX-License-Identifier: GPL-2.0
/*
 * The htmm_start() and htmm_end() system calls: their errors, and the life
 * of a session.
 *
 * Every valid htmm_start() needs a sampling source; without one it fails
 * with ENODEV, and the tests that need a session skip (start_or_skip()).
 * They run for real on a kernel that has a source.
 *
 * Run as root, on the guest of topology.c: node 0 is the top tier, node 1
 * a memory-only node in a lower tier.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <asm/unistd.h>
#include <linux/membarrier.h>

#include "../kselftest_harness.h"
#include "htmm_test.h"

#define NOBODY 65534

/*
 * Start a session on @pid, or skip the test if the kernel has no usable
 * sampling source: htmm_start() then fails with ENODEV however valid the
 * call.  Any other failure fails the test.  Call it before any EXPECT_*:
 * a skip would hide an earlier failure.
 */
static bool start_or_skip(struct __test_metadata *_metadata, pid_t pid, int node)
{
	int err = sys_htmm_start(pid, node);

	if (err == ENODEV)
		SKIP(return false, "htmm_start: ENODEV, the kernel has no usable sampling source");
	ASSERT_EQ(0, err)
		TH_LOG("htmm_start(%d, %d): %s", (int)pid, node, strerror(err));
	return true;
}

/*
 * A child that sleeps until *wfd is closed, or its parent dies.  Returns
 * its pid, or -1.
 */
static pid_t spawn_sleeper(int *wfd)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		/*
		 * Hold no other sleeper's pipe open, or that one would never
		 * see its end.
		 */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != p[0])
				close(fd);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	*wfd = p[1];
	return pid;
}

/* Let a sleeper finish; its wait status, or -1. */
static int finish_sleeper(pid_t pid, int wfd)
{
	int status;

	close(wfd);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/* Kill and reap a child; its wait status, or -1. */
static int kill_child(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/* The pid of a process that existed but no longer does. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, NULL, 0) != pid)
		return -1;
	return pid;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* A /proc/meminfo figure in kB, or -1. */
static long meminfo_kb(const char *key)
{
	char line[256];
	size_t len = strlen(key);
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, len) && line[len] == ':') {
			kb = strtol(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb;
}

TEST(syscalls_are_implemented)
{
	int err;

	err = sys_htmm_start(-5, -1);
	ASSERT_NE(ENOSYS, err) TH_LOG("htmm_start: ENOSYS: kernel without CONFIG_HTMM");
	err = sys_htmm_end(-5);
	ASSERT_NE(ENOSYS, err) TH_LOG("htmm_end: ENOSYS: kernel without CONFIG_HTMM");
	/*
	 * And they are htmm's: no process has pid INT_MAX (pid_max is at most
	 * 2^22).  Kernels from 6.13 have setxattrat() at 463, which fails
	 * with EINVAL here.
	 */
	err = sys_htmm_start(INT_MAX, -1);
	ASSERT_EQ(ESRCH, err)
		TH_LOG("syscall %d is not htmm_start: %s", __NR_htmm_start, strerror(err));
}

TEST(negative_pid_is_einval)
{
	EXPECT_EQ(EINVAL, sys_htmm_start(-5, -1));
	EXPECT_EQ(EINVAL, sys_htmm_end(-5));
}

TEST(nonexistent_pid_is_esrch)
{
	pid_t pid = dead_pid();

	ASSERT_GT(pid, 0);
	EXPECT_EQ(ESRCH, sys_htmm_start(pid, -1));
	EXPECT_EQ(ESRCH, sys_htmm_end(pid));
}

TEST(node_out_of_range_is_einval)
{
	EXPECT_EQ(EINVAL, sys_htmm_start(0, 4096));
	EXPECT_EQ(EINVAL, sys_htmm_start(0, -2));
	EXPECT_EQ(EINVAL, sys_htmm_start(0, INT_MIN));
	EXPECT_EQ(EINVAL, sys_htmm_start(0, INT_MAX));
}

/* Node 1 has memory, but in a lower tier: it is no node to promote into. */
TEST(slow_node_is_einval)
{
	EXPECT_EQ(EINVAL, sys_htmm_start(0, 1));
}

TEST(fast_node_0_on_self)
{
	if (!start_or_skip(_metadata, 0, 0))
		return;
	EXPECT_EQ(0, sys_htmm_end(0));
}

/* pid 2 is kthreadd. */
TEST(kernel_thread)
{
	EXPECT_EQ(EINVAL, sys_htmm_start(2, -1));
	EXPECT_EQ(ENOENT, sys_htmm_end(2));
}

TEST(end_unmanaged_self_is_enoent)
{
	EXPECT_EQ(ENOENT, sys_htmm_end(0));
}

/*
 * With pid -1 htmm_end() ends every session the caller may end: another
 * test's leftovers would be ended by the first call, but not by the second.
 */
TEST(end_all_without_sessions_is_enoent)
{
	int err = sys_htmm_end(-1);

	EXPECT_TRUE(err == ENOENT || err == 0) TH_LOG("htmm_end(-1): %s", strerror(err));
	EXPECT_EQ(ENOENT, sys_htmm_end(-1));
	/*
	 * ENOENT holds too with a leaked session of a dead process, which
	 * htmm_end(-1) passes over: no session may be left at all (earlier
	 * tests' teardowns may still be on their way out).
	 */
	EXPECT_EQ(0, sessions_left(20)) TH_LOG("sessions left in " HTMM_SYSFS "/sessions");
}

/* nobody may not manage init, which root owns. */
TEST(unprivileged_caller_is_eperm)
{
	int status, err;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(10);
		err = sys_htmm_start(1, -1);
		if (err != EPERM) {
			fprintf(stderr, "# htmm_start(1, -1) as nobody: %s\n",
				err ? strerror(err) : "success");
			_exit(11);
		}
		err = sys_htmm_end(1);
		if (err != EPERM) {
			fprintf(stderr, "# htmm_end(1) as nobody: %s\n",
				err ? strerror(err) : "success");
			_exit(12);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child status 0x%x", status);
	EXPECT_NE(10, WEXITSTATUS(status)) TH_LOG("could not become nobody");
	EXPECT_NE(11, WEXITSTATUS(status)) TH_LOG("htmm_start(1, -1) was not EPERM");
	EXPECT_NE(12, WEXITSTATUS(status)) TH_LOG("htmm_end(1) was not EPERM");
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST(start_and_end_a_child)
{
	int wfd, fds;
	pid_t pid;

	pid = spawn_sleeper(&wfd);
	ASSERT_GT(pid, 0);
	fds = count_fds();
	ASSERT_GT(fds, 0);
	if (!start_or_skip(_metadata, pid, -1)) {
		finish_sleeper(pid, wfd);
		return;
	}
	/* A session's events belong to the kernel, not to the caller. */
	EXPECT_EQ(fds, count_fds());
	EXPECT_EQ(EBUSY, sys_htmm_start(pid, -1));
	EXPECT_EQ(EBUSY, sys_htmm_start(pid, 0));
	EXPECT_EQ(0, sys_htmm_end(pid));
	EXPECT_EQ(ENOENT, sys_htmm_end(pid));
	EXPECT_EQ(0, finish_sleeper(pid, wfd));
}

TEST(end_after_the_process_is_gone_is_esrch)
{
	int wfd, status;
	pid_t pid;

	pid = spawn_sleeper(&wfd);
	ASSERT_GT(pid, 0);
	if (!start_or_skip(_metadata, pid, -1)) {
		finish_sleeper(pid, wfd);
		return;
	}
	status = kill_child(pid);
	close(wfd);
	ASSERT_TRUE(WIFSIGNALED(status));
	/* ESRCH holds for a leaked session too: its directory must go. */
	EXPECT_TRUE(session_gone(pid, 20));
	EXPECT_EQ(ESRCH, sys_htmm_end(pid));
}

TEST(two_concurrent_sessions)
{
	int wfd[2];
	pid_t pid[2];

	pid[0] = spawn_sleeper(&wfd[0]);
	ASSERT_GT(pid[0], 0);
	pid[1] = spawn_sleeper(&wfd[1]);
	ASSERT_GT(pid[1], 0);
	if (!start_or_skip(_metadata, pid[0], -1)) {
		finish_sleeper(pid[0], wfd[0]);
		finish_sleeper(pid[1], wfd[1]);
		return;
	}
	EXPECT_EQ(0, sys_htmm_start(pid[1], -1));
	EXPECT_EQ(0, sys_htmm_end(pid[0]));
	EXPECT_EQ(0, sys_htmm_end(pid[1]));
	EXPECT_EQ(0, finish_sleeper(pid[0], wfd[0]));
	EXPECT_EQ(0, finish_sleeper(pid[1], wfd[1]));
}

TEST(start_and_end_self)
{
	if (!start_or_skip(_metadata, 0, -1))
		return;
	EXPECT_EQ(EBUSY, sys_htmm_start(getpid(), -1));
	EXPECT_EQ(0, sys_htmm_end(0));
	EXPECT_EQ(ENOENT, sys_htmm_end(0));
}

/* A session follows its process into the program it executes. */
/*
 * A child that, once told to, execs "@prog 5" (busybox's sleep), as uid
 * 65534 if @as_nobody.  The parent starts a session on it in between.
 */
struct execer {
	pid_t pid;
	int go;		/* the child execs on a byte here */
	int done;	/* end of file once it exec'd; its errno if it failed */
};

static int execer_spawn(struct execer *x, const char *prog, bool as_nobody)
{
	int go[2], done[2], err;
	ssize_t n;
	char c;

	if (pipe2(go, O_CLOEXEC) || pipe2(done, O_CLOEXEC))
		return -1;
	x->pid = fork();
	if (x->pid < 0)
		return -1;
	if (x->pid == 0) {
		close(go[1]);
		close(done[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (as_nobody && (setresgid(NOBODY, NOBODY, NOBODY) ||
				  setresuid(NOBODY, NOBODY, NOBODY)))
			_exit(10);
		do {
			n = read(go[0], &c, 1);
		} while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(11);
		execl(prog, "sleep", "5", (char *)NULL);
		err = errno;
		if (write(done[1], &err, sizeof(err)) < 0)
			_exit(12);
		_exit(127);
	}
	close(go[0]);
	close(done[1]);
	x->go = go[1];
	x->done = done[0];
	return 0;
}

/* Let the child exec: 0 once it has, or the errno of its execl(). */
static int execer_exec(struct execer *x)
{
	ssize_t n;
	int err = 0;

	if (write(x->go, "g", 1) != 1)
		return errno;
	close(x->go);
	do {
		n = read(x->done, &err, sizeof(err));
	} while (n < 0 && errno == EINTR);
	close(x->done);
	return n ? (err ? err : EIO) : 0;
}

static void execer_abort(struct execer *x)
{
	close(x->go);
	close(x->done);
	kill_child(x->pid);
}

TEST(session_follows_execve)
{
	struct execer x;
	int status;

	ASSERT_EQ(0, execer_spawn(&x, "/bin/sleep", false));
	if (!start_or_skip(_metadata, x.pid, -1)) {
		execer_abort(&x);
		return;
	}
	ASSERT_EQ(0, execer_exec(&x));
	ASSERT_EQ(0, waitpid(x.pid, &status, WNOHANG)) TH_LOG("sleep is not running");

	EXPECT_EQ(0, sys_htmm_end(x.pid));
	EXPECT_EQ(ENOENT, sys_htmm_end(x.pid));
	status = kill_child(x.pid);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* The thread of a process whose leader exited alone: it waits for EOF. */
static void *wait_for_eof(void *arg)
{
	char c;

	while (read((int)(long)arg, &c, 1) < 0 && errno == EINTR)
		;
	/* The leader is gone: the process ends with this last thread. */
	syscall(SYS_exit_group, 0);
	return NULL;
}

/* Whether the thread @pid is a zombie (its process may go on). */
static bool is_zombie(pid_t pid)
{
	char path[64], line[128];
	bool zombie = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "State:", 6)) {
			zombie = strchr(line, 'Z') != NULL;
			break;
		}
	}
	fclose(f);
	return zombie;
}

/*
 * A process whose leader called pthread_exit() lives on in its other
 * threads, with its memory: it can be managed, and its session ended.
 */
TEST(process_whose_leader_exited_alone)
{
	char dir[64];
	int p[2], status;
	pthread_t th;
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(p[1]);
		if (pthread_create(&th, NULL, wait_for_eof, (void *)(long)p[0]))
			_exit(1);
		/* The leader alone. */
		syscall(SYS_exit, 0);
	}
	close(p[0]);
	for (int i = 0; i < 500 && !is_zombie(pid); i++)
		usleep(10 * 1000);
	ASSERT_TRUE(is_zombie(pid)) TH_LOG("the leader did not exit alone");

	if (!start_or_skip(_metadata, pid, -1)) {
		close(p[1]);
		waitpid(pid, NULL, 0);
		return;
	}
	snprintf(dir, sizeof(dir), HTMM_SYSFS "/sessions/%d", pid);
	EXPECT_EQ(0, access(dir, F_OK));
	EXPECT_EQ(EBUSY, sys_htmm_start(pid, -1));
	EXPECT_EQ(0, sys_htmm_end(pid));
	EXPECT_NE(0, access(dir, F_OK));
	EXPECT_EQ(ENOENT, sys_htmm_end(pid));

	close(p[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
}

/* Copy @from to @to with mode @mode: 0 or an errno. */
static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in, out, err = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (out < 0) {
		err = errno;
		close(in);
		return err;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, n) != n) {
			err = errno ? errno : EIO;
			break;
		}
	}
	if (n < 0)
		err = errno;
	close(in);
	if (fchmod(out, mode) && !err)
		err = errno;
	close(out);
	return err;
}

/*
 * An exec that makes the process non-dumpable (here: of a program its user
 * may run but not read) is a secure exec, after which the session's owner
 * could not start one: perf ends the process's events there, and htmm the
 * session.
 */
TEST(session_ends_on_secure_exec)
{
	const char *prog = "/tmp/htmm-noread";
	struct execer x;
	int status;

	ASSERT_EQ(0, copy_file("/bin/busybox", prog, 0711));
	ASSERT_EQ(0, execer_spawn(&x, prog, true));
	if (!start_or_skip(_metadata, x.pid, -1)) {
		execer_abort(&x);
		return;
	}
	ASSERT_EQ(0, execer_exec(&x));
	EXPECT_EQ(ENOENT, sys_htmm_end(x.pid));
	status = kill_child(x.pid);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	unlink(prog);
}

/*
 * Wait for a grace period, so that memory that the kernel frees after one
 * (perf events, ring buffers) is counted as free.  membarrier() global is
 * synchronize_rcu(); without it the measure is just noisier.
 */
static void rcu_settle(void)
{
	for (int i = 0; i < 2; i++)
		syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

#define CYCLES 500
#define SLAB_SLACK_KB 1024
#define AVAIL_SLACK_KB 8192

FIXTURE(cycles) {};
FIXTURE_SETUP(cycles) {}
FIXTURE_TEARDOWN(cycles) {}

/* 500 cycles take minutes on a debug kernel: more than the default 30 s. */
TEST_F_TIMEOUT(cycles, start_end_cycles_do_not_leak, 600)
{
	/*
	 * On a debug kernel (KASAN holds freed objects in its quarantine),
	 * memory figures say nothing about leaks: kmemleak judges there.
	 */
	bool debug = getenv("HTMM_DEBUG_KERNEL") != NULL;
	long slab0, slab1, avail0, avail1;
	int wfd, i;
	pid_t pid;

	pid = spawn_sleeper(&wfd);
	ASSERT_GT(pid, 0);
	if (!start_or_skip(_metadata, pid, -1)) {
		finish_sleeper(pid, wfd);
		return;
	}
	ASSERT_EQ(0, sys_htmm_end(pid));
	/* Fill the caches a session uses before the first measure. */
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(0, sys_htmm_start(pid, -1));
		ASSERT_EQ(0, sys_htmm_end(pid));
	}
	rcu_settle();
	slab0 = meminfo_kb("Slab");
	avail0 = meminfo_kb("MemAvailable");
	ASSERT_GE(slab0, 0);
	ASSERT_GE(avail0, 0);

	for (i = 0; i < CYCLES; i++) {
		int err = sys_htmm_start(pid, -1);

		ASSERT_EQ(0, err) TH_LOG("cycle %d: htmm_start: %s", i, strerror(err));
		err = sys_htmm_end(pid);
		ASSERT_EQ(0, err) TH_LOG("cycle %d: htmm_end: %s", i, strerror(err));
	}

	/*
	 * perf frees events and buffers after an RCU grace period, from
	 * callbacks that may run seconds later on an idle guest: wait (up to
	 * 20 s) for Slab to come back within the slack, then judge.
	 */
	for (i = 0; i < (debug ? 1 : 200); i++) {
		rcu_settle();
		slab1 = meminfo_kb("Slab");
		if (slab1 - slab0 < SLAB_SLACK_KB)
			break;
		usleep(100 * 1000);
	}
	avail1 = meminfo_kb("MemAvailable");
	TH_LOG("slab settled after %d ms", i * 100);
	TH_LOG("%d cycles: Slab %ld -> %ld kB (%+ld), MemAvailable %ld -> %ld kB (%+ld)",
	       CYCLES, slab0, slab1, slab1 - slab0, avail0, avail1, avail1 - avail0);
	if (!debug) {
		EXPECT_LT(slab1 - slab0, SLAB_SLACK_KB);
		EXPECT_LT(avail0 - avail1, AVAIL_SLACK_KB);
	}
	EXPECT_EQ(0, finish_sleeper(pid, wfd));
}

TEST_HARNESS_MAIN
