/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the htmm selftests share: the two system calls, called directly, and
 * reading and writing sysfs files.  Each returns 0 or an errno.
 */
#ifndef HTMM_TEST_H
#define HTMM_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* From the kernel's uapi headers; else x86_64's, or none (ENOSYS). */
#ifndef __NR_htmm_start
# ifdef __x86_64__
#  define __NR_htmm_start 463
# else
#  define __NR_htmm_start -1
# endif
#endif
#ifndef __NR_htmm_end
# ifdef __x86_64__
#  define __NR_htmm_end 464
# else
#  define __NR_htmm_end -1
# endif
#endif

#define HTMM_SYSFS "/sys/kernel/mm/htmm"

/*
 * The arguments the calls do not take are passed as zeros: numbers 463 and
 * 464 belong to other system calls from Linux 6.13 on, and these fail with
 * EINVAL on zeros before they do anything.
 */
static inline int sys_htmm_start(pid_t pid, int node)
{
	if (syscall(__NR_htmm_start, (long)pid, (long)node, 0L, 0L, 0L, 0L))
		return errno;
	return 0;
}

static inline int sys_htmm_end(pid_t pid)
{
	if (syscall(__NR_htmm_end, (long)pid, 0L, 0L, 0L, 0L, 0L))
		return errno;
	return 0;
}

/* Write @s to the file @path. */
static inline int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return errno;
	if (write(fd, s, strlen(s)) < 0)
		err = errno;
	close(fd);
	return err;
}

/* Read the file @path into @buf, without its final newline. */
static inline int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return errno;
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

#define CGROUP_ROOT "/sys/fs/cgroup"

/*
 * The cgroup @name under CGROUP_ROOT (cgroup v2, mounted if it is not),
 * with @controller ("cpuset", "memory") enabled for it; 0 or an errno.
 */
static inline int cgroup_make(const char *name, const char *controller)
{
	char path[128], enable[32];

	if (mkdir(CGROUP_ROOT, 0755) && errno != EEXIST)
		return errno;
	if (mount("cgroup2", CGROUP_ROOT, "cgroup2", 0, NULL) && errno != EBUSY)
		return errno;
	snprintf(enable, sizeof(enable), "+%s", controller);
	if (write_file(CGROUP_ROOT "/cgroup.subtree_control", enable))
		return EIO;
	snprintf(path, sizeof(path), CGROUP_ROOT "/%s", name);
	if (mkdir(path, 0755) && errno != EEXIST)
		return errno;
	return 0;
}

/* Write @value to the file @file of the cgroup @name; 0 or an errno. */
static inline int cgroup_write(const char *name, const char *file,
			       const char *value)
{
	char path[192];

	snprintf(path, sizeof(path), CGROUP_ROOT "/%s/%s", name, file);
	return write_file(path, value);
}

/* Move @pid into the cgroup @name ("" for the root); 0 or an errno. */
static inline int cgroup_join(const char *name, pid_t pid)
{
	char value[32];

	snprintf(value, sizeof(value), "%d", pid);
	return cgroup_write(name, "cgroup.procs", value);
}

/* Remove the cgroup @name, once nothing is in it. */
static inline void cgroup_remove(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), CGROUP_ROOT "/%s", name);
	rmdir(path);
}

/* A counter of /proc/vmstat, or -1. */
static inline long long vmstat(const char *name)
{
	char key[64];
	long long v;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2) {
		if (!strcmp(key, name)) {
			fclose(f);
			return v;
		}
	}
	fclose(f);
	return -1;
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The number in @pid's session file @name, or -1 (no such session). */
static inline long long session_ll(pid_t pid, const char *name)
{
	char path[128], buf[64];

	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%d/%s", pid, name);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	return atoll(buf);
}

/*
 * The page faults of @pid that reached its session's buffers: those
 * ksamplingd read (samples, and faults on no page armed lately, first
 * touches among them), and those perf lost; -1 once the session is gone.
 */
static inline long long session_faults(pid_t pid)
{
	long long n = 0, v;
	const char *const names[] = { "sampled", "unarmed", "lost", "bad_addr" };
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		v = session_ll(pid, names[i]);
		if (v < 0)
			return -1;
		n += v;
	}
	return n;
}

/*
 * The bins of @pid's histogram, at most @max of them, into @bins: how many
 * it read, or -1 if the histogram is unreadable.  Reading one more than the
 * kernel has (HTMM_NR_BINS) tells that it has no more.
 */
static inline int session_histogram(pid_t pid, long long *bins, int max)
{
	char path[128], buf[512], *s, *end;
	int n = 0;

	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%d/histogram", pid);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	for (s = buf; n < max; s = end) {
		long long v = strtoll(s, &end, 10);

		if (end == s)
			break;
		bins[n++] = v;
	}
	return n;
}

/* Whether the guest runs the debug kernel (KASAN, lockdep, ...). */
static inline int debug_kernel(void)
{
	return getenv("HTMM_DEBUG_KERNEL") != NULL;
}

/*
 * How long to wait for pages to move, given the bound for the plain guest
 * kernel.  On the debug kernel (KASAN, lockdep, kmemleak) the scan, the
 * faults and the reading of their records cost many times what they cost
 * on the plain one, while the test's own loads do not: ksamplingd holds its
 * budget with a scan up to 64 times sparser, and a hot set that goes up in
 * 1-2 s on the plain kernel takes 80 s or more there, twice that when the
 * host is busy.  These tests judge where pages go; how fast they go is
 * judged by the plain kernel's bounds and measured by the benchmarks.
 */
static inline double patience(double plain)
{
	return debug_kernel() ? 4 * plain : plain;
}

/* Wait up to @seconds for session_faults(@pid) to reach @want; the last. */
static inline long long wait_session_faults(pid_t pid, long long want,
					    double seconds)
{
	double start = now_s();
	long long n;

	while ((n = session_faults(pid)) >= 0 && n < want &&
	       now_s() - start < seconds)
		usleep(100000);
	return n;
}

/* A child that sleeps until killed, or until its parent dies. */
static inline pid_t sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	return pid;
}

static inline void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * Whether the session of the (ended) process @pid is gone from
 * sessions/, waiting up to @timeout_s for its teardown.  After the process
 * is reaped, htmm_end() says ESRCH whether or not its session leaked; the
 * sessions directory tells.
 */
static inline int session_gone(pid_t pid, double timeout_s)
{
	char path[64];
	double t0 = now_s();

	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%d", (int)pid);
	while (!access(path, F_OK)) {
		if (now_s() - t0 > timeout_s)
			return 0;
		usleep(50000);
	}
	return 1;
}

/*
 * The pids of the sessions in sessions/, the first @max of them in @pids
 * (which may be NULL, to count them); how many there are, or -1 if the
 * directory cannot be read.
 */
static inline int session_pids(pid_t *pids, int max)
{
	DIR *d = opendir(HTMM_SYSFS "/sessions");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (pids && n < max)
			pids[n] = atoi(e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

/*
 * The number of sessions in sessions/ once it is empty or @timeout_s has
 * passed; -1 if the directory cannot be read.
 */
static inline int sessions_left(double timeout_s)
{
	double t0 = now_s();

	for (;;) {
		int n = session_pids(NULL, 0);

		if (n <= 0 || now_s() - t0 > timeout_s)
			return n;
		usleep(50000);
	}
}

/*
 * Whether the directory of @pid's session, sessions/<pid>, is there now.
 * htmm_end() removes it before it returns (htmm_end(2)).
 */
static inline int session_dir_exists(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%d", (int)pid);
	return !access(path, F_OK);
}

/* From <numaif.h>, which the guest has no library for. */
#define MPOL_DEFAULT 0
#define MPOL_PREFERRED 1
#define MPOL_BIND 2
#define MPOL_PREFERRED_MANY 5
#define MPOL_F_NUMA_BALANCING (1 << 13)
#define MPOL_MF_MOVE (1 << 1)

/* Bind [p, p + len) to @node, or (node < 0) take the policy away. */
static inline int bind_to(void *p, size_t len, int node)
{
	unsigned long mask = node < 0 ? 0 : 1UL << node;

	if (syscall(SYS_mbind, p, len, node < 0 ? MPOL_DEFAULT : MPOL_BIND,
		    node < 0 ? NULL : &mask, node < 0 ? 0 : 64, 0))
		return errno;
	return 0;
}

#endif /* HTMM_TEST_H */
