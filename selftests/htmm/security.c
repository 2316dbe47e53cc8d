// SPDX-License-Identifier: GPL-2.0
/*
 * What an unprivileged user may and may not do with htmm: nothing to
 * another user's process, nothing to a kernel thread, only what perf itself
 * allows (perf_event_paranoid), and nothing learnt from another user's
 * session.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "htmm_test.h"

#define NOBODY 65534
#define PARANOID "/proc/sys/kernel/perf_event_paranoid"

/*
 * Run @fn(@arg) in a child as nobody; its exit status: 0 for success, 100
 * if it could not become nobody, else what @fn returned.
 */
static int as_nobody(int (*fn)(long), long arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(100);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Return @err, but as an exit status that says which check failed. */
static int expect(int got, int want, int code, const char *what)
{
	if (got == want)
		return 0;
	fprintf(stderr, "# %s: %s, not %s\n", what, got ? strerror(got) : "success",
		want ? strerror(want) : "success");
	return code;
}

static int end_others(long pid)
{
	int err;

	err = expect(sys_htmm_end(pid), EPERM, 1, "htmm_end(root's process)");
	if (err)
		return err;
	/* -1 ends only what the caller may end: nothing here. */
	err = expect(sys_htmm_end(-1), ENOENT, 2, "htmm_end(-1)");
	if (err)
		return err;
	return expect(sys_htmm_start(pid, -1), EPERM, 3, "htmm_start(root's process)");
}

/* Root's session: nobody can neither end it nor start another on it. */
TEST(nobody_cannot_touch_roots_session)
{
	pid_t pid = sleeper();
	char path[128];
	int rc;

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, sys_htmm_start(pid, -1));
	rc = as_nobody(end_others, pid);
	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%d", pid);
	EXPECT_EQ(0, access(path, F_OK)) TH_LOG("the session is gone");
	EXPECT_EQ(0, sys_htmm_end(pid));
	reap(pid);
	ASSERT_NE(100, rc) TH_LOG("could not become nobody");
	ASSERT_EQ(0, rc);
}

static int start_kthreads(long unused __attribute__((unused)))
{
	int err;

	/* kthreadd (2) is a kernel thread, init (1) root's process. */
	err = expect(sys_htmm_start(2, -1), EINVAL, 1, "htmm_start(kthreadd)");
	if (err)
		return err;
	return expect(sys_htmm_start(1, -1), EPERM, 2, "htmm_start(init)");
}

/*
 * Nobody may manage a kernel thread or init; root may not either manage a
 * kernel thread, which has no memory of its own to place.
 */
TEST(kernel_threads_and_init_are_refused)
{
	int rc = as_nobody(start_kthreads, 0);

	ASSERT_NE(100, rc) TH_LOG("could not become nobody");
	EXPECT_EQ(0, rc);
	EXPECT_EQ(EINVAL, sys_htmm_start(2, -1));
}

static int start_self(long want)
{
	int err = expect(sys_htmm_start(0, -1), want, 1, "htmm_start(self)");

	if (err || want)
		return err;
	return expect(sys_htmm_end(0), 0, 2, "htmm_end(self)");
}

static int set_paranoid(const char *v)
{
	return write_file(PARANOID, v);
}

/*
 * A user's own process: allowed where perf lets the user sample it
 * (perf_event_paranoid 2, user space only), refused at 3, where perf
 * refuses any perf_event_open() without CAP_SYS_ADMIN.
 */
TEST(perf_event_paranoid_decides_for_own_process)
{
	char old[16];
	int rc2, rc3;

	ASSERT_EQ(0, read_file(PARANOID, old, sizeof(old)));
	ASSERT_EQ(0, set_paranoid("2"));
	rc2 = as_nobody(start_self, 0);
	if (set_paranoid("3")) {
		set_paranoid(old);
		SKIP(return, "perf_event_paranoid takes no 3 in this kernel");
	}
	rc3 = as_nobody(start_self, EPERM);
	/* Root is not held back by it. */
	EXPECT_EQ(0, start_self(0));
	ASSERT_EQ(0, set_paranoid(old));
	ASSERT_NE(100, rc2) TH_LOG("could not become nobody");
	EXPECT_EQ(0, rc2) TH_LOG("refused at perf_event_paranoid 2");
	EXPECT_EQ(0, rc3) TH_LOG("not refused at perf_event_paranoid 3");
}

/*
 * Count the files of @pid's session, and those the caller can open: 0 if
 * there are files and the caller can open none, else which check failed.
 */
static int session_unreadable(long pid)
{
	char dir[128], path[512];
	int files = 0, readable = 0;
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), HTMM_SYSFS "/sessions/%ld", pid);
	d = opendir(dir);
	if (!d)
		return 1;
	while ((de = readdir(d))) {
		int fd;

		if (de->d_name[0] == '.')
			continue;
		files++;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			fprintf(stderr, "# %s: readable\n", path);
			readable++;
			close(fd);
		} else if (errno != EACCES) {
			fprintf(stderr, "# %s: %s, not EACCES\n", path,
				strerror(errno));
			readable++;
		}
	}
	closedir(d);
	if (!files)
		return 2;
	return readable ? 3 : 0;
}

/*
 * How root's process uses its memory (its histogram, its pages on each
 * tier) is for root to read, as /proc/<pid>/numa_maps is for those who may
 * ptrace it.
 */
TEST(nobody_cannot_read_roots_session)
{
	char path[128], buf[64];
	pid_t pid = sleeper();
	int rc;

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, sys_htmm_start(pid, -1));
	rc = as_nobody(session_unreadable, pid);
	/* Root reads it. */
	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%d/histogram", pid);
	EXPECT_EQ(0, read_file(path, buf, sizeof(buf)));
	EXPECT_EQ(0, sys_htmm_end(pid));
	reap(pid);
	ASSERT_NE(100, rc) TH_LOG("could not become nobody");
	EXPECT_EQ(0, rc);
}

TEST_HARNESS_MAIN
