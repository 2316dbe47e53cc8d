// SPDX-License-Identifier: GPL-2.0
/*
 * htmm_start() and htmm_end() under fire: random arguments, and threads
 * that start and end sessions on processes that exec and exit under them.
 * Only documented errors may come back, and nothing may be left behind.
 * Run on the debug kernel, KASAN, lockdep and kmemleak watch the same.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "htmm_test.h"

static bool start_errno_ok(int err)
{
	switch (err) {
	case 0: case ESRCH: case EPERM: case EINVAL: case EBUSY: case ENODEV:
	case ENOMEM:
		return true;
	}
	return false;
}

static bool end_errno_ok(int err)
{
	switch (err) {
	case 0: case ESRCH: case ENOENT: case EPERM: case EINVAL:
		return true;
	}
	return false;
}

#define FUZZ_CALLS 20000

FIXTURE(fuzz) {};
FIXTURE_SETUP(fuzz) {}
FIXTURE_TEARDOWN(fuzz) {}

/* Not a timed test: a debug kernel takes most of a minute for the calls. */
TEST_F_TIMEOUT(fuzz, returns_only_documented_errnos, 300)
{
	static const int nodes[] = { -1, 0, 1, 2, -2, 63, 64, 4096, INT_MAX, INT_MIN };
	unsigned int seed = 12345, bad = 0, started = 0, i;
	pid_t live = sleeper(), dead;
	int running, last, end_all, left;

	ASSERT_GT(live, 0);
	dead = sleeper();
	ASSERT_GT(dead, 0);
	reap(dead);

	for (i = 0; i < FUZZ_CALLS; i++) {
		pid_t pids[] = { 0, -1, -2, 1, 2, live, dead, INT_MAX,
				 (pid_t)rand_r(&seed), (pid_t)(rand_r(&seed) % 4096) };
		pid_t pid = pids[rand_r(&seed) % (sizeof(pids) / sizeof(pids[0]))];
		int node = nodes[rand_r(&seed) % (sizeof(nodes) / sizeof(nodes[0]))];
		int err;

		if (rand_r(&seed) & 1) {
			err = sys_htmm_start(pid, node);
			if (!start_errno_ok(err)) {
				bad++;
				TH_LOG("htmm_start(%d, %d): %s", pid, node, strerror(err));
			}
			if (!err)
				started++;
		} else {
			err = sys_htmm_end(pid);
			if (!end_errno_ok(err)) {
				bad++;
				TH_LOG("htmm_end(%d): %s", pid, strerror(err));
			}
		}
	}
	/*
	 * Everything started was ended: htmm_end(-1) ends each session left,
	 * and sessions/ is empty while their processes (this one, init, the
	 * sleeper) still live, so none went with its process instead.  The
	 * calls' own ends usually leave none: the sleeper is given one (or
	 * has one), for htmm_end(-1) to end.
	 */
	running = sessions_left(0);
	last = sys_htmm_start(live, -1);
	EXPECT_TRUE(last == 0 || last == EBUSY)
		TH_LOG("htmm_start(sleeper): %s", strerror(last));
	end_all = sys_htmm_end(-1);
	left = sessions_left(30);
	reap(live);
	TH_LOG("%d calls, %u sessions started, %u undocumented errnos; %d running at the end, %d left after htmm_end(-1)",
	       FUZZ_CALLS, started, bad, running, left);
	EXPECT_EQ(0U, bad);
	/*
	 * The calls reached the sessions' code, not only the checks of
	 * their arguments: pids 0, 1 and the live sleeper with nodes -1
	 * and 0 start sessions.  A kernel that refused every start with a
	 * documented errno (ENODEV, EPERM, ...) fails here.
	 */
	EXPECT_GT(started, 0U);
	EXPECT_EQ(0, end_all) TH_LOG("htmm_end(-1): %s", strerror(end_all));
	EXPECT_EQ(0, left);
}

/* The storm: threads start and end sessions on processes that churn. */
struct storm {
	_Atomic pid_t target[4];	/* sleepers, and the latest churn child */
	atomic_bool stop;
	atomic_uint calls, bad, started;
};

static void *storm_thread(void *arg)
{
	struct storm *st = arg;
	unsigned int seed = (unsigned int)(uintptr_t)&seed;

	while (!atomic_load(&st->stop)) {
		pid_t pid = atomic_load(&st->target[rand_r(&seed) % 4]);
		int err;

		if (rand_r(&seed) % 3) {
			err = sys_htmm_start(pid, -1);
			if (!start_errno_ok(err))
				atomic_fetch_add(&st->bad, 1);
			if (!err)
				atomic_fetch_add(&st->started, 1);
		} else {
			err = sys_htmm_end(rand_r(&seed) % 8 ? pid : -1);
			if (!end_errno_ok(err))
				atomic_fetch_add(&st->bad, 1);
		}
		atomic_fetch_add(&st->calls, 1);
	}
	return NULL;
}

/*
 * Children that exec, fork (the child execs) and exit, over and over: the
 * storm's threads hit each of them at any point of its life.
 */
static void *churn_thread(void *arg)
{
	struct storm *st = arg;

	while (!atomic_load(&st->stop)) {
		pid_t pid = fork();

		if (pid == 0) {
			pid_t grandchild = fork();

			if (grandchild == 0)
				execl("/bin/true", "true", (char *)NULL);
			if (grandchild > 0)
				waitpid(grandchild, NULL, 0);
			execl("/bin/sleep", "sleep", "0.05", (char *)NULL);
			_exit(127);
		}
		if (pid < 0)
			continue;
		atomic_store(&st->target[3], pid);
		waitpid(pid, NULL, 0);
	}
	return NULL;
}

FIXTURE(storm) {};
FIXTURE_SETUP(storm) {}
FIXTURE_TEARDOWN(storm) {}

/*
 * At least 5 s of storm, and on until more than 100 calls were made and a
 * session started, which a loaded debug kernel may take longer to reach
 * (310 calls in 5 s seen): at most STORM_MAX_S.
 */
#define STORM_MAX_S 120

TEST_F_TIMEOUT(storm, start_end_storm_on_churning_processes, 300)
{
	pthread_t threads[4], churn;
	struct storm st = {};
	pid_t sleepers[3];
	double t0, storm_s;
	int i, running, end_all, left;

	for (i = 0; i < 3; i++) {
		sleepers[i] = sleeper();
		ASSERT_GT(sleepers[i], 0);
		atomic_store(&st.target[i], sleepers[i]);
	}
	atomic_store(&st.target[3], sleepers[0]);
	ASSERT_EQ(0, pthread_create(&churn, NULL, churn_thread, &st));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, storm_thread, &st));
	t0 = now_s();
	do {
		usleep(100 * 1000);
		storm_s = now_s() - t0;
	} while (storm_s < 5 ||
		 ((atomic_load(&st.calls) <= 100 || !atomic_load(&st.started)) &&
		  storm_s < STORM_MAX_S));
	atomic_store(&st.stop, true);
	for (i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	pthread_join(churn, NULL);

	/*
	 * As in the fuzzer: htmm_end(-1) ends what the storm left, and a
	 * session on each sleeper, before the sleepers go.  The churn's
	 * children are reaped: their sessions end with their address
	 * spaces, which sessions_left() waits for.
	 */
	running = sessions_left(0);
	for (i = 0; i < 3; i++) {
		int err = sys_htmm_start(sleepers[i], -1);

		EXPECT_TRUE(err == 0 || err == EBUSY)
			TH_LOG("htmm_start(sleeper): %s", strerror(err));
	}
	end_all = sys_htmm_end(-1);
	left = sessions_left(30);
	for (i = 0; i < 3; i++)
		reap(sleepers[i]);
	TH_LOG("%u calls in %.1f s, %u sessions started, %u undocumented errnos; %d running at the end, %d left after htmm_end(-1)",
	       atomic_load(&st.calls), storm_s, atomic_load(&st.started),
	       atomic_load(&st.bad), running, left);
	EXPECT_GT(atomic_load(&st.calls), 100U);
	EXPECT_EQ(0U, atomic_load(&st.bad));
	/*
	 * The storm hit live sessions, not only refusals: the three
	 * sleepers live throughout and any start on them that finds no
	 * session succeeds.  A kernel whose every start failed, with a
	 * documented errno or not, fails here.
	 */
	EXPECT_GT(atomic_load(&st.started), 0U);
	EXPECT_EQ(0, end_all) TH_LOG("htmm_end(-1): %s", strerror(end_all));
	EXPECT_EQ(0, left);
}

static int fail_set(const char *type, const char *attr, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/debug/%s/%s", type, attr);
	return write_file(path, val);
}

/*
 * Fail the n-th allocation of htmm_start(), slab or page, for n = 1, 2, ...
 * until a call goes through without one (/proc/thread-self/fail-nth): every
 * allocation the call makes fails once.  Each failed call must fail cleanly,
 * with ENOMEM, the errno htmm_start(2) documents for an allocation that
 * failed ("could not allocate the session, its promotion queue, its events
 * or their ring buffers"), and leave no session behind; kmemleak, on the
 * debug kernel, checks that nothing leaked.  A kernel that passed an
 * allocation failure on as another errno (ENODEV from a perf error it
 * misread, EBUSY, EINVAL, ...) fails.
 */
TEST_F_TIMEOUT(storm, faults_during_start_leave_nothing_behind, 300)
{
	unsigned int injected = 0, bad = 0, partial = 0, n;
	int first_bad = 0;
	char buf[16];
	pid_t child;
	int fd;

	if (access("/sys/kernel/debug/failslab/ignore-gfp-wait", W_OK))
		SKIP(return, "no fault injection in this kernel (make test-debug has it)");
	/* Sleeping allocations too, and single pages. */
	ASSERT_EQ(0, fail_set("failslab", "ignore-gfp-wait", "N"));
	ASSERT_EQ(0, fail_set("fail_page_alloc", "ignore-gfp-wait", "N"));
	ASSERT_EQ(0, fail_set("fail_page_alloc", "min-order", "0"));
	ASSERT_EQ(0, fail_set("failslab", "verbose", "0"));
	ASSERT_EQ(0, fail_set("fail_page_alloc", "verbose", "0"));
	child = sleeper();
	ASSERT_GT(child, 0);
	fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);

	for (n = 1; n <= 500; n++) {
		int err;

		snprintf(buf, sizeof(buf), "%u", n);
		ASSERT_EQ((ssize_t)strlen(buf), pwrite(fd, buf, strlen(buf), 0));
		err = sys_htmm_start(child, -1);
		/* fail-nth reads 0 once the fault was injected. */
		memset(buf, 0, sizeof(buf));
		ASSERT_LT(0, pread(fd, buf, sizeof(buf) - 1, 0));
		if (atoi(buf)) {
			/* No n-th allocation: the call is past all of them. */
			ASSERT_EQ(0, pwrite(fd, "0", 1, 0) < 0);
			EXPECT_EQ(0, err);
			EXPECT_EQ(0, sys_htmm_end(child));
			break;
		}
		if (!err) {
			/* A failure htmm did not depend on (a retried path). */
			EXPECT_EQ(0, sys_htmm_end(child));
			continue;
		}
		injected++;
		if (err != ENOMEM) {
			if (!bad++)
				first_bad = err;
			TH_LOG("allocation %u: htmm_start: %s, not ENOMEM", n,
			       strerror(err));
		}
		/* No half-made session: there is nothing to end. */
		if (sys_htmm_end(child) != ENOENT)
			partial++;
	}
	close(fd);
	reap(child);
	TH_LOG("htmm_start makes %u failable allocations; %u failed it, %u with another errno than ENOMEM (the first: %s), %u left a session",
	       n - 1, injected, bad, bad ? strerror(first_bad) : "none", partial);
	EXPECT_GT(injected, 0U);
	EXPECT_LT(n, 500U);
	EXPECT_EQ(0U, bad);
	EXPECT_EQ(0U, partial);
	EXPECT_EQ(0, sessions_left(30));
}

TEST_HARNESS_MAIN
