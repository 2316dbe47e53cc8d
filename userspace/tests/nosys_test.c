// SPDX-License-Identifier: GPL-2.0
/*
 * nosys_test: libhtmm on a kernel without htmm, in TAP.
 *
 * The host's kernel has no htmm.  Its system call numbers 463 and 464
 * may be free (ENOSYS from the kernel itself) or belong to setxattrat()
 * and getxattrat() (6.13 and later), which fail with EINVAL on libhtmm's
 * arguments; either way libhtmm must say ENOSYS, and its messages must
 * say that the kernel has no htmm.  On a kernel with htmm every case is
 * skipped: there is nothing to fall back from.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "htmm.h"

static int n;
static int failed;

static void result(int ok, const char *name, int ret, int err)
{
	printf("%sok %d %s # returned %d, errno %d (%s)\n", ok ? "" : "not ",
	       ++n, name, ret, err, strerrorname_np(err) ?: "?");
	failed |= !ok;
}

int main(void)
{
	static const char *const names[] = {
		"start_on_self_is_enosys", "start_on_pid_1_is_enosys",
		"end_of_self_is_enosys", "end_all_is_enosys",
		"messages_say_the_kernel_has_no_htmm",
	};
	const char *s, *e;
	int ret, err, ok;

	printf("1..5\n");
	if (!access("/sys/kernel/mm/htmm", F_OK)) {
		for (unsigned int i = 0; i < 5; i++)
			printf("ok %u %s # SKIP this kernel has htmm\n", i + 1,
			       names[i]);
		return 0;
	}

	errno = 0;
	ret = htmm_start(getpid(), HTMM_NODE_AUTO);
	err = errno;
	result(ret == -1 && err == ENOSYS, names[0], ret, err);

	/* Another user's process: the kernel's own EPERM would be wrong. */
	errno = 0;
	ret = htmm_start(1, 0);
	err = errno;
	result(ret == -1 && err == ENOSYS, names[1], ret, err);

	errno = 0;
	ret = htmm_end(getpid());
	err = errno;
	result(ret == -1 && err == ENOSYS, names[2], ret, err);

	errno = 0;
	ret = htmm_end(-1);
	err = errno;
	result(ret == -1 && err == ENOSYS, names[3], ret, err);

	s = htmm_start_strerror(ENOSYS);
	e = htmm_end_strerror(ENOSYS);
	ok = strstr(s, "no htmm") && strstr(s, "CONFIG_HTMM") && !strcmp(s, e);
	printf("%sok %d %s # '%s'\n", ok ? "" : "not ", ++n, names[4], s);
	failed |= !ok;
	return failed;
}
