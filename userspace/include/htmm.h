/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libhtmm: the htmm system calls.
 *
 * htmm keeps the hot pages of the processes it manages in the fast memory
 * tier.  A process is managed from htmm_start() until htmm_end(), its exit,
 * whichever comes first; the management follows it across execve().
 *
 * Both wrappers return 0 on success and -1 with errno set on failure, like
 * the C library's system call wrappers.  They fail with ENOSYS on a kernel
 * without htmm, including a later kernel that has other system calls at
 * htmm's numbers.
 */
#ifndef HTMM_H
#define HTMM_H

#include <sys/types.h>
#include <sys/syscall.h>
#include <asm/unistd.h>

/*
 * The system call numbers come from the kernel's uapi headers when they know
 * them.  Without them: the kernel's tables give htmm the same numbers on
 * x86, arm, arm64, riscv, loongarch, powerpc and s390 (and on the other
 * architectures that take theirs from the generic table); elsewhere (alpha,
 * mips, x32, where the numbers are offset), the wrappers fail with ENOSYS.
 */
#if (defined(__x86_64__) && !defined(__ILP32__)) || defined(__i386__) || \
	defined(__aarch64__) || defined(__arm__) || defined(__riscv) || \
	defined(__loongarch__) || defined(__powerpc__) || defined(__s390__)
# ifndef __NR_htmm_start
#  define __NR_htmm_start 463
# endif
# ifndef __NR_htmm_end
#  define __NR_htmm_end 464
# endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* htmm_start() node: let the kernel choose a top-tier node. */
#define HTMM_NODE_AUTO (-1)
/* htmm_end() pid: end every session the caller may end. */
#define HTMM_END_ALL (-1)

/*
 * Start managing process @pid (0: the caller), promoting its hot pages into
 * NUMA node @node, which must be in the top memory tier, or HTMM_NODE_AUTO.
 * Errors: ESRCH, EINVAL, EPERM, EBUSY, ENODEV, ENOMEM, ENOSYS.
 */
int htmm_start(pid_t pid, int node);

/*
 * Stop managing process @pid (0: the caller), or with HTMM_END_ALL every
 * process the caller may end.
 * Errors: ESRCH, ENOENT, EPERM, EINVAL, ENOSYS.
 */
int htmm_end(pid_t pid);

/*
 * A message for an errno of htmm_start() or htmm_end(), for people.  For an
 * errno the call does not document, the C library's strerror() text.
 */
const char *htmm_start_strerror(int err);
const char *htmm_end_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* HTMM_H */
