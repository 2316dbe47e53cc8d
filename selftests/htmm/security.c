// SPDX-License-Identifier: GPL-2.0
/*
 * What an unprivileged user may and may not do with htmm: manage their own
 * processes on the hint-fault source whatever perf_event_paranoid says,
 * nothing to another user's process or to a kernel thread, and nothing
 * learnt from another user's session.
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
#include <sys/prctl.h>
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
 * The levels of perf_event_paranoid a test runs at: 2 (no kernel profiling
 * for users, the upstream default) and 3 (no perf_event_open() at all for
 * users, Debian's default), in @levels; how many this kernel takes.
 */
static int paranoid_levels(const char **levels)
{
	int n = 0;

	if (!set_paranoid("2"))
		levels[n++] = "2";
	if (!set_paranoid("3"))
		levels[n++] = "3";
	return n;
}

/*
 * A user's own process, on the hint-fault source: allowed at every level
 * of perf_event_paranoid.  Its events count the process's own page faults
 * in user mode, with no PMU, and no user reads their samples: what perf's
 * levels guard is not at stake, and what the caller needs is what
 * migrate_pages(2) needs.  (The PEBS and IBS sources follow perf's rules
 * in full, level 3 included; this machine may have neither.)
 */
TEST(hint_faults_need_no_perf_privilege)
{
	char old[16], source[256];
	const char *levels[2];
	int i, n, rc[2];

	ASSERT_EQ(0, read_file(PARANOID, old, sizeof(old)));
	ASSERT_EQ(0, read_file(HTMM_SYSFS "/source", source, sizeof(source)));
	ASSERT_EQ(0, write_file(HTMM_SYSFS "/source", "hint-fault"));
	n = paranoid_levels(levels);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, set_paranoid(levels[i]));
		rc[i] = as_nobody(start_self, 0);
		/* Root is never held back. */
		EXPECT_EQ(0, start_self(0)) TH_LOG("root, at %s", levels[i]);
	}
	ASSERT_EQ(0, set_paranoid(old));
	/* Back to the choice that was in brackets. */
	ASSERT_NE(NULL, strchr(source, '['));
	*strchrnul(source, ']') = '\0';
	ASSERT_EQ(0, write_file(HTMM_SYSFS "/source", strchr(source, '[') + 1));
	ASSERT_LT(0, n) TH_LOG("perf_event_paranoid takes neither 2 nor 3");
	for (i = 0; i < n; i++) {
		ASSERT_NE(100, rc[i]) TH_LOG("could not become nobody");
		EXPECT_EQ(0, rc[i]) TH_LOG("refused at perf_event_paranoid %s",
					   levels[i]);
	}
}

/* A process of user @uid that sleeps until killed. */
static pid_t sleeper_as(uid_t uid)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
		    setresuid(uid, uid, uid))
			_exit(100);
		for (;;)
			pause();
	}
	return pid;
}

static int start_others(long pid)
{
	return expect(sys_htmm_start(pid, -1), EPERM, 1,
		      "htmm_start(another user's process)");
}

/*
 * Another user's process, root's or not, is refused at every level of
 * perf_event_paranoid, as migrate_pages(2) would refuse to move its pages.
 */
TEST(another_users_process_is_refused_at_every_paranoid_level)
{
	pid_t other = sleeper_as(NOBODY - 1), roots = sleeper();
	int i, n, rc[2][2];
	const char *levels[2];
	char old[16];

	ASSERT_LT(0, other);
	ASSERT_LT(0, roots);
	ASSERT_EQ(0, read_file(PARANOID, old, sizeof(old)));
	n = paranoid_levels(levels);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, set_paranoid(levels[i]));
		rc[i][0] = as_nobody(start_others, other);
		rc[i][1] = as_nobody(start_others, roots);
	}
	ASSERT_EQ(0, set_paranoid(old));
	/* Its owner's process was alive all along: no false EPERM. */
	EXPECT_EQ(0, kill(other, 0));
	reap(other);
	reap(roots);
	ASSERT_LT(0, n) TH_LOG("perf_event_paranoid takes neither 2 nor 3");
	for (i = 0; i < n; i++) {
		ASSERT_NE(100, rc[i][0]) TH_LOG("could not become nobody");
		EXPECT_EQ(0, rc[i][0]) TH_LOG("user %d's process, at %s",
					      NOBODY - 1, levels[i]);
		EXPECT_EQ(0, rc[i][1]) TH_LOG("root's process, at %s",
					      levels[i]);
	}
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
