// SPDX-License-Identifier: GPL-2.0
/*
 * What an unprivileged user may and may not do with htmm: manage their own
 * processes on the hint-fault source whatever perf_event_paranoid says,
 * nothing to another user's process or to a kernel thread, and nothing
 * learnt from another user's session; a node outside the process's cpuset
 * takes CAP_SYS_NICE, and ring buffers beyond perf_event_mlock_kb take
 * CAP_IPC_LOCK.  In a PID namespace, the system calls name processes by
 * the namespace's pids and reach only the processes it can see.
 * A Linux Security Module's refusal to let the caller move the process's
 * memory is EACCES, as for migrate_pages(2) (Smack, built into the guest's
 * kernels, stands for any LSM).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "htmm_test.h"

#define NOBODY 65534
#define PARANOID "/proc/sys/kernel/perf_event_paranoid"
#define MLOCK_KB "/proc/sys/kernel/perf_event_mlock_kb"
#define SOURCE HTMM_SYSFS "/source"
#define BUFFER_PAGES HTMM_SYSFS "/buffer_pages"
#define CPUSET "htmm-security"
#define NO_CAP -1

/* Take @cap out of the effective capabilities of the calling thread. */
static int drop_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return errno;
	data[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
	if (syscall(SYS_capset, &hdr, data))
		return errno;
	return 0;
}

/*
 * Run @fn(@arg) in a child: moved into the cgroup @cgroup first (unless
 * NULL), then as the user @uid, or with @uid 0 as root without the
 * capability @cap (unless NO_CAP).  Its exit status: 0 for success, 100 if
 * it could not be set up so, else what @fn returned.
 */
static int run_as(uid_t uid, const char *cgroup, int cap, int (*fn)(long),
		  long arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		if (cgroup && cgroup_join(cgroup, getpid()))
			_exit(100);
		if (uid && (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
			    setresuid(uid, uid, uid)))
			_exit(100);
		if (cap != NO_CAP && drop_cap(cap))
			_exit(100);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Run @fn(@arg) in a child as nobody; as run_as(). */
static int as_nobody(int (*fn)(long), long arg)
{
	return run_as(NOBODY, NULL, NO_CAP, fn, arg);
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
	int got = sys_htmm_start(0, -1);
	int err = expect(got, want, 1, "htmm_start(self)");

	if (got)
		return err;
	/* Ended even if it should have failed: no weight on what follows. */
	if (err)
		sys_htmm_end(0);
	else
		err = expect(sys_htmm_end(0), 0, 2, "htmm_end(self)");
	return err;
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

/*
 * A child that runs @setup(@arg), then sleeps until killed, or until its
 * parent dies: its pid once @setup returned 0, or -1.
 */
static pid_t sleeper_after(int (*setup)(long), long arg)
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		if (setup(arg))
			_exit(100);
		/* After @setup: a change of user clears it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (write(ready[1], "", 1) != 1)
			_exit(101);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1) {
		reap(pid);
		pid = -1;
	}
	close(ready[0]);
	return pid;
}

/*
 * Become user @uid, and dumpable again, as an exec() would make it: the
 * change of user made it not, and ptrace_may_access() refuses even its own
 * user a process that is not dumpable.  A refusal must come from what a
 * test changes.
 */
static int become_user(long uid)
{
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid))
		return -1;
	prctl(PR_SET_DUMPABLE, 1);
	return 0;
}

/* A process of user @uid that sleeps until killed, once it is @uid's. */
static pid_t sleeper_as(uid_t uid)
{
	return sleeper_after(become_user, uid);
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

/*
 * The settings the tests below change, restored whatever their outcome,
 * and the process one of them moves into a cpuset.
 */
/*
 * The pid in the initial namespace of the session whose process is pid
 * @vpid of the caller's namespace, found by the NSpid line of
 * /proc/<pid>/status of each session (this /proc is the initial
 * namespace's); 0 if none.
 */
static pid_t session_of_vpid(pid_t vpid)
{
	char path[64], line[256];
	pid_t pids[64], found = 0;
	int n = session_pids(pids, 64);

	for (int i = 0; !found && i < n && i < 64; i++) {
		long outer, inner;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)pids[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			/* Two levels: the initial namespace's, then ours. */
			if (sscanf(line, "NSpid: %ld %ld", &outer, &inner) == 2 &&
			    inner == vpid && outer == pids[i])
				found = outer;
		}
		fclose(f);
	}
	return found;
}

/*
 * pid 1 of a new PID namespace: manage pid 2 of it, then try to reach
 * @outside, a process of the initial namespace with a session, which the
 * namespace cannot see.  Exit status: 0, or which check failed.
 */
static int in_pidns(long outside)
{
	pid_t child = sleeper(), named;
	int err;

	if (getpid() != 1 || child != 2)
		return 10;
	err = expect(sys_htmm_start(2, -1), 0, 11, "htmm_start(2) in the namespace");
	if (err)
		return err;
	named = session_of_vpid(2);
	if (!named || named == 2) {
		fprintf(stderr, "# the session of pid 2 is named %d\n", named);
		return 12;
	}
	/* Not there to name, whether or not its number is in use here. */
	err = expect(sys_htmm_start(outside, -1), ESRCH, 13,
		     "htmm_start(a pid of the initial namespace)");
	if (err)
		return err;
	err = expect(sys_htmm_end(outside), ESRCH, 14,
		     "htmm_end(a pid of the initial namespace)");
	if (err)
		return err;
	/* -1: every session the caller may end, of those it can see. */
	err = expect(sys_htmm_end(-1), 0, 15, "htmm_end(-1) in the namespace");
	if (err)
		return err;
	if (!session_gone(named, 10))
		return 16;
	return expect(sys_htmm_end(-1), ENOENT, 17,
		      "htmm_end(-1) again in the namespace");
}

/* Fork pid 1 of a new PID namespace to run in_pidns(@outside). */
static int new_pidns(long outside)
{
	int status;
	pid_t pid;

	if (unshare(CLONE_NEWPID))
		return 100;
	pid = fork();
	if (pid < 0)
		return 100;
	if (!pid)
		_exit(in_pidns(outside));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 101;
	return WEXITSTATUS(status);
}

/*
 * In a PID namespace: pids are the namespace's, a session is named by its
 * process's pid in the initial namespace, and htmm_end(-1) ends only the
 * sessions of processes the namespace can see, as kill(-1) signals only
 * them.  Root's session of a process outside stays.  The number of the
 * outside process is above 2, so that the namespace has no process of
 * that number.
 */
TEST(pid_namespace_sees_only_its_own)
{
	pid_t outside = sleeper();
	char path[128];
	int rc;

	ASSERT_LT(2, outside);
	ASSERT_EQ(0, sys_htmm_start(outside, -1));
	rc = run_as(0, NULL, NO_CAP, new_pidns, outside);
	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%d", outside);
	EXPECT_EQ(0, access(path, F_OK))
		TH_LOG("htmm_end(-1) in the namespace ended a session outside it");
	EXPECT_EQ(0, sys_htmm_end(outside));
	reap(outside);
	ASSERT_NE(100, rc) TH_LOG("could not make a PID namespace");
	ASSERT_EQ(0, rc);
}

#define SMACKFS "/sys/fs/smackfs"
#define SMACK_LABEL "htmm-target"

/* Mount smackfs unless it is: 0, or an errno (ENOENT: no Smack). */
static int smackfs_ready(void)
{
	struct stat st;

	if (!access(SMACKFS "/load2", W_OK))
		return 0;
	if (stat(SMACKFS, &st))
		return errno;
	if (mount("smackfs", SMACKFS, "smackfs", 0, NULL))
		return errno;
	return access(SMACKFS "/load2", W_OK) ? errno : 0;
}

/* Let the floor label "_" (every process here) have @access to the target. */
static int smack_rule(const char *access)
{
	char rule[64];

	snprintf(rule, sizeof(rule), "_ " SMACK_LABEL " %s", access);
	return write_file(SMACKFS "/load2", rule);
}

/* Take the Smack label SMACK_LABEL: root with CAP_MAC_ADMIN may. */
static int take_smack_label(long unused __attribute__((unused)))
{
	return write_file("/proc/self/attr/smack/current", SMACK_LABEL);
}

/* Whether @pid's session is there: 0, else @code. */
static int session_there(long pid, int code)
{
	char path[128];

	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%ld", pid);
	if (!access(path, F_OK))
		return 0;
	fprintf(stderr, "# the session of %ld is gone\n", pid);
	return code;
}

/*
 * As root without CAP_MAC_OVERRIDE, on the target whose session root
 * started, under three rules for the floor label against the target's
 * label: none (not even ptrace read access: EPERM), read (ptrace read, but
 * not task_movememory's write: EACCES), read and write (allowed).  A
 * refused htmm_end() leaves the session.
 */
static int under_smack_rules(long pid)
{
	int err;

	err = expect(smack_rule("-"), 0, 100, "the rule -");
	if (!err)
		err = expect(sys_htmm_end(pid), EPERM, 1,
			     "htmm_end() with no access at all");
	if (!err)
		err = expect(smack_rule("r"), 0, 100, "the rule r");
	if (!err)
		err = expect(sys_htmm_end(pid), EACCES, 2,
			     "htmm_end() with read access only");
	if (!err)
		err = session_there(pid, 3);
	if (!err)
		err = expect(smack_rule("rw"), 0, 100, "the rule rw");
	if (!err)
		err = expect(sys_htmm_end(pid), 0, 4,
			     "htmm_end() with read and write access");
	if (!err)
		err = expect(smack_rule("r"), 0, 100, "the rule r");
	if (!err)
		err = expect(sys_htmm_start(pid, -1), EACCES, 5,
			     "htmm_start() with read access only");
	if (!err)
		err = expect(smack_rule("-"), 0, 100, "the rule -");
	if (!err)
		err = expect(sys_htmm_start(pid, -1), EPERM, 6,
			     "htmm_start() with no access at all");
	if (!err)
		err = expect(smack_rule("rw"), 0, 100, "the rule rw");
	if (!err)
		err = expect(sys_htmm_start(pid, -1), 0, 7,
			     "htmm_start() with read and write access");
	if (!err)
		err = expect(sys_htmm_end(pid), 0, 8,
			     "htmm_end() of that session");
	smack_rule("-");
	return err;
}

/*
 * An LSM that refuses the caller the right to move the process's memory
 * (its task_movememory hook) makes both system calls fail with EACCES and
 * change nothing; an LSM's refusal of ptrace read access is EPERM, as the
 * DAC check's is.  The steps with the rule that allows both show that the
 * refusals were the rules' doing.
 */
TEST(lsm_refusal_is_eacces)
{
	char path[128];
	pid_t target;
	int rc, err;

	err = smackfs_ready();
	if (err == ENOENT)
		SKIP(return, "no Smack in this kernel");
	ASSERT_EQ(0, err) TH_LOG("smackfs: %s", strerror(err));
	target = sleeper_after(take_smack_label, 0);
	ASSERT_LT(0, target) TH_LOG("could not label a process");
	ASSERT_EQ(0, sys_htmm_start(target, -1));
	rc = run_as(0, NULL, CAP_MAC_OVERRIDE, under_smack_rules, target);
	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%d", target);
	EXPECT_NE(0, access(path, F_OK)) TH_LOG("a session was left behind");
	sys_htmm_end(target);
	reap(target);
	ASSERT_NE(100, rc) TH_LOG("could not set the Smack rules");
	ASSERT_EQ(0, rc);
}

FIXTURE(limits) {
	char paranoid[16], mlock_kb[32], buffer_pages[16], source[256];
	pid_t target;
};

FIXTURE_SETUP(limits)
{
	ASSERT_EQ(0, read_file(PARANOID, self->paranoid,
			       sizeof(self->paranoid)));
	ASSERT_EQ(0, read_file(MLOCK_KB, self->mlock_kb,
			       sizeof(self->mlock_kb)));
	ASSERT_EQ(0, read_file(BUFFER_PAGES, self->buffer_pages,
			       sizeof(self->buffer_pages)));
	ASSERT_EQ(0, read_file(SOURCE, self->source, sizeof(self->source)));
	/* The choice in brackets, to write back. */
	ASSERT_NE(NULL, strchr(self->source, '['));
	*strchrnul(self->source, ']') = '\0';
	memmove(self->source, strchr(self->source, '[') + 1,
		strlen(strchr(self->source, '[')));
	self->target = 0;
}

/* In the parent: run even if the test was killed on its timeout. */
FIXTURE_TEARDOWN_PARENT(limits)
{
	double t0 = now_s();
	char path[128];

	if (self->target > 0) {
		sys_htmm_end(self->target);
		cgroup_join("", self->target);
		kill(self->target, SIGKILL);
	}
	/* Its last process may take a moment to leave it. */
	snprintf(path, sizeof(path), CGROUP_ROOT "/" CPUSET);
	while (rmdir(path) && errno == EBUSY && now_s() - t0 < 10)
		usleep(50000);
	write_file(PARANOID, self->paranoid);
	write_file(MLOCK_KB, self->mlock_kb);
	write_file(BUFFER_PAGES, self->buffer_pages);
	write_file(SOURCE, self->source);
}

static int start_on_node0(long pid)
{
	int err = expect(sys_htmm_start(pid, 0), 0, 1, "htmm_start(pid, 0)");

	return err ? err : expect(sys_htmm_end(pid), 0, 2, "htmm_end(pid)");
}

static int start_on_node0_refused(long pid)
{
	int err = sys_htmm_start(pid, 0);

	/* Ended if it started: no weight on what follows. */
	if (!err)
		sys_htmm_end(pid);
	return expect(err, EPERM, 1, "htmm_start(pid, 0) outside its cpuset");
}

/*
 * A node outside the cpuset of the process takes CAP_SYS_NICE, as
 * migrate_pages(2) takes it to move pages there: nobody's own process in
 * a cpuset of node 1 may not be given node 0, by nobody nor by root
 * without CAP_SYS_NICE; root may.  The cpuset is the process's, not the
 * caller's: the same call for it out of the cpuset succeeds, from a
 * caller in it.
 */
TEST_F(limits, node_outside_the_cpuset_needs_cap_sys_nice)
{
	int nobody, root_without, caller_in, err;
	pid_t target;

	err = cgroup_make(CPUSET, "cpuset");
	ASSERT_EQ(0, err) TH_LOG("no cpuset: %s", strerror(err));
	ASSERT_EQ(0, cgroup_write(CPUSET, "cpuset.mems", "1"));
	target = sleeper_as(NOBODY);
	ASSERT_LT(0, target);
	self->target = target;
	ASSERT_EQ(0, cgroup_join(CPUSET, target));

	nobody = as_nobody(start_on_node0_refused, target);
	root_without = run_as(0, NULL, CAP_SYS_NICE, start_on_node0_refused,
			      target);
	EXPECT_EQ(0, sys_htmm_start(target, 0)) TH_LOG("root, node 0");
	EXPECT_EQ(0, sys_htmm_end(target));

	/* Out of the cpuset, with the caller in it. */
	ASSERT_EQ(0, cgroup_join("", target));
	caller_in = run_as(NOBODY, CPUSET, NO_CAP, start_on_node0, target);

	ASSERT_NE(100, nobody) TH_LOG("could not become nobody");
	ASSERT_NE(100, root_without) TH_LOG("could not drop CAP_SYS_NICE");
	ASSERT_NE(100, caller_in) TH_LOG("could not join the cpuset");
	EXPECT_EQ(0, nobody) TH_LOG("nobody, in a cpuset of node 1");
	EXPECT_EQ(0, root_without) TH_LOG("root without CAP_SYS_NICE");
	EXPECT_EQ(0, caller_in) TH_LOG("nobody's process out of the cpuset");
}

/* The buffers' size for the test below, in data pages per cpu. */
#define MLOCK_PAGES 64

/*
 * A session's ring buffers are charged to the caller's user as perf
 * charges a mapped buffer, against perf_event_mlock_kb per online cpu;
 * beyond it, CAP_IPC_LOCK is needed, at every level of
 * perf_event_paranoid but -1, where perf lifts the limit.  On the
 * hint-fault source, one event per cpu, each with MLOCK_PAGES data pages
 * and a control page: with perf_event_mlock_kb at MLOCK_PAGES + 1 pages
 * nobody's session just fits, twice over (the first gave its charge back
 * when it ended); one page less, it does not, but root's does, and root's
 * without CAP_IPC_LOCK does not.
 */
TEST_F(limits, buffers_over_perf_event_mlock_kb_need_cap_ipc_lock)
{
	static const char *const levels[] = { "3", "2", "0", "-1" };
	const long page_kb = sysconf(_SC_PAGESIZE) / 1024;
	int i, over[4], root_without[4], fits[4][2];
	char kb_over[32], kb_fits[32], pages[16];

	snprintf(kb_fits, sizeof(kb_fits), "%ld", (MLOCK_PAGES + 1) * page_kb);
	snprintf(kb_over, sizeof(kb_over), "%ld", MLOCK_PAGES * page_kb);
	snprintf(pages, sizeof(pages), "%d", MLOCK_PAGES);
	ASSERT_EQ(0, write_file(SOURCE, "hint-fault"));
	ASSERT_EQ(0, write_file(BUFFER_PAGES, pages));
	TH_LOG("%ld cpus, %d + 1 pages each: %s kB fits, %s kB does not",
	       sysconf(_SC_NPROCESSORS_ONLN), MLOCK_PAGES, kb_fits, kb_over);

	for (i = 0; i < 4; i++) {
		/* perf lifts the limit for all at -1 only. */
		long want = strcmp(levels[i], "-1") ? EPERM : 0;

		ASSERT_EQ(0, write_file(PARANOID, levels[i]));
		ASSERT_EQ(0, write_file(MLOCK_KB, kb_over));
		over[i] = as_nobody(start_self, want);
		root_without[i] = run_as(0, NULL, CAP_IPC_LOCK, start_self,
					 want);
		/* Root, with CAP_IPC_LOCK, is never held back. */
		EXPECT_EQ(0, start_self(0)) TH_LOG("root, at %s", levels[i]);
		ASSERT_EQ(0, write_file(MLOCK_KB, kb_fits));
		fits[i][0] = as_nobody(start_self, 0);
		fits[i][1] = as_nobody(start_self, 0);
	}

	for (i = 0; i < 4; i++) {
		ASSERT_NE(100, over[i]) TH_LOG("could not become nobody");
		ASSERT_NE(100, root_without[i])
			TH_LOG("could not drop CAP_IPC_LOCK");
		EXPECT_EQ(0, over[i])
			TH_LOG("nobody over the limit, at %s", levels[i]);
		EXPECT_EQ(0, root_without[i])
			TH_LOG("root without CAP_IPC_LOCK, over, at %s",
			       levels[i]);
		EXPECT_EQ(0, fits[i][0])
			TH_LOG("nobody within the limit, at %s", levels[i]);
		EXPECT_EQ(0, fits[i][1])
			TH_LOG("nobody within the limit again, at %s",
			       levels[i]);
	}
}

TEST_HARNESS_MAIN
