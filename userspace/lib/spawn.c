// SPDX-License-Identifier: GPL-2.0
/*
 * libhtmm: start a command that waits for a go before it runs (see
 * htmm_spawn.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "htmm_spawn.h"

/* Read a whole int from a pipe: 1 if read, 0 at end of file, -1 on error. */
static int read_int(int fd, int *v)
{
	size_t got = 0;

	while (got < sizeof(*v)) {
		ssize_t n = read(fd, (char *)v + got, sizeof(*v) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 && !got ? 0 : -1;
		got += n;
	}
	return 1;
}

static void reap(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* The child: wait for the go, then become the command. */
static void __attribute__((noreturn))
child_main(char **argv, int go_fd, int err_fd, const sigset_t *mask)
{
	char c;
	ssize_t n;
	int err;

	sigprocmask(SIG_SETMASK, mask, NULL);
	do {
		n = read(go_fd, &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(1);	/* no go: the parent gave up, or died */
	execvp(argv[0], argv);
	err = errno;
	if (write(err_fd, &err, sizeof(err)) != sizeof(err))
		_exit(127);
	_exit(err == EACCES ? 126 : 127);
}

int htmm_spawn_paused(char **argv, const sigset_t *child_mask,
		      struct htmm_spawn *sp)
{
	int go[2], errp[2], err;
	pid_t pid;

	sp->pid = 0;
	sp->go_fd = sp->err_fd = -1;
	sp->what = "pipe2";
	if (pipe2(go, O_CLOEXEC))
		return -1;
	if (pipe2(errp, O_CLOEXEC)) {
		err = errno;
		close(go[0]);
		close(go[1]);
		errno = err;
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = errno;
		sp->what = "fork";
		close(go[0]);
		close(go[1]);
		close(errp[0]);
		close(errp[1]);
		errno = err;
		return -1;
	}
	if (pid == 0) {
		close(go[1]);
		close(errp[0]);
		child_main(argv, go[0], errp[1], child_mask);
	}
	close(go[0]);
	close(errp[1]);
	sp->pid = pid;
	sp->go_fd = go[1];
	sp->err_fd = errp[0];
	sp->what = NULL;
	return 0;
}

int htmm_spawn_go(struct htmm_spawn *sp, int *exec_errno)
{
	int r;

	while (write(sp->go_fd, "g", 1) < 0 && errno == EINTR)
		;
	close_fd(&sp->go_fd);

	/* The pipe closes on a successful exec(): the error comes first. */
	r = read_int(sp->err_fd, exec_errno);
	close_fd(&sp->err_fd);
	if (r != 0)
		reap(sp->pid);
	return r;
}

void htmm_spawn_abort(struct htmm_spawn *sp)
{
	close_fd(&sp->go_fd);
	close_fd(&sp->err_fd);
	reap(sp->pid);
}
