// SPDX-License-Identifier: GPL-2.0
/*
 * libhtmm: wrappers for the htmm_start() and htmm_end() system calls, and
 * messages for their errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "htmm.h"

/*
 * The system calls, with the arguments they do not take passed as zeros.
 * Their numbers, free in Linux 6.12, belong to other system calls in later
 * kernels (463 and 464 are setxattrat() and getxattrat() since 6.13), and
 * these, with a zero size argument, fail with EINVAL before they do
 * anything.
 */
#ifdef __NR_htmm_start
static long sys_htmm_start(pid_t pid, int node)
{
	return syscall(__NR_htmm_start, (long)pid, (long)node, 0L, 0L, 0L, 0L);
}

/*
 * Is __NR_htmm_start htmm_start() on this kernel?  No process has pid
 * INT_MAX (pid_max is at most 2^22), so htmm_start() fails with ESRCH
 * there, while the other system calls with that number fail otherwise.
 */
static int is_htmm_kernel(void)
{
	int saved = errno, yes;

	yes = sys_htmm_start(INT_MAX, HTMM_NODE_AUTO) < 0 && errno == ESRCH;
	errno = saved;
	return yes;
}

/* An EINVAL from a kernel that is not htmm's is an ENOSYS. */
static int htmm_result(long ret)
{
	if (ret >= 0)
		return 0;
	if (errno == EINVAL && !is_htmm_kernel())
		errno = ENOSYS;
	return -1;
}
#endif

int htmm_start(pid_t pid, int node)
{
#ifdef __NR_htmm_start
	return htmm_result(sys_htmm_start(pid, node));
#else
	(void)pid;
	(void)node;
	errno = ENOSYS;
	return -1;
#endif
}

int htmm_end(pid_t pid)
{
#if defined(__NR_htmm_start) && defined(__NR_htmm_end)
	return htmm_result(syscall(__NR_htmm_end, (long)pid, 0L, 0L, 0L, 0L, 0L));
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

#define NOSYS_MSG "this kernel has no htmm (CONFIG_HTMM is off, or not the htmm kernel)"

const char *htmm_start_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case ESRCH:
		return "no such process, or it is exiting";
	case EINVAL:
		return "invalid argument: a negative pid, a kernel thread, or a node "
		       "that is out of range, offline, without memory or not in the "
		       "top memory tier";
	case EPERM:
		return "not allowed to manage this process (needs the access that "
		       "migrate_pages(2) and perf_event_open(2) need, and "
		       "CAP_SYS_NICE for a node outside its cpuset)";
	case EBUSY:
		return "the process is already managed by htmm";
	case EAGAIN:
		return "the process created threads faster than htmm could "
		       "open its sampling events on them; try again";
	case ENODEV:
		return "no sampling source works on this machine";
	case ENOMEM:
		return "the kernel is out of memory";
	case ENOSYS:
		return NOSYS_MSG;
	default:
		return strerror(err);
	}
}

const char *htmm_end_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case ESRCH:
		return "no such process";
	case ENOENT:
		return "the process is not managed by htmm (with pid -1: no "
		       "session that the caller may end)";
	case EPERM:
		return "not allowed to end the management of this process";
	case EINVAL:
		return "invalid pid (below -1)";
	case ENOSYS:
		return NOSYS_MSG;
	default:
		return strerror(err);
	}
}
