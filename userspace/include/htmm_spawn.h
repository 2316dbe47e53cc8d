/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libhtmm: start a command that waits for a go before it runs.
 *
 * The tools that run a command under htmm (htmm-launch, htmm-sample) must
 * set something up on its process before the command's first instruction:
 * they fork a child that blocks until they release it, then becomes the
 * command with execvp().  Whether execvp() failed, and with which errno,
 * comes back on a close-on-exec pipe, which a successful exec closes.
 *
 *	struct htmm_spawn sp;
 *
 *	if (htmm_spawn_paused(argv, &mask, &sp))
 *		fail("%s: %s", sp.what, strerror(errno));
 *	signal(SIGPIPE, SIG_IGN);
 *	if (cannot set up sp.pid) {
 *		htmm_spawn_abort(&sp);
 *		return 1;
 *	}
 *	switch (htmm_spawn_go(&sp, &err)) { ... }
 *
 * The go is a write to a pipe the child may no longer read (it died): the
 * caller should ignore SIGPIPE before htmm_spawn_go() or htmm_spawn_abort().
 */
#ifndef HTMM_SPAWN_H
#define HTMM_SPAWN_H

#include <signal.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct htmm_spawn {
	pid_t pid;		/* the child */
	int go_fd;		/* the go's write end; -1 once used */
	int err_fd;		/* execvp()'s errno's read end; -1 once used */
	const char *what;	/* on failure: the call that failed */
};

/*
 * Fork a child that sets its signal mask to @child_mask, waits for the go,
 * then executes argv[0] with execvp(); flushes stdio first.  The child
 * exits 1 without running the command if the go's pipe closes instead, and
 * if execvp() fails, it exits 126 (EACCES) or 127 after it has written the
 * errno on the error pipe.
 *
 * Returns 0 with @sp set, or -1 with errno set and sp->what the call that
 * failed ("pipe2" or "fork"), nothing left open.
 */
int htmm_spawn_paused(char **argv, const sigset_t *child_mask,
		      struct htmm_spawn *sp);

/*
 * Release the child and learn whether it became the command.  Returns 0 if
 * it did; 1 if execvp() failed, with its errno in *exec_errno; -1 if it
 * cannot be told (the error pipe failed).  Unless 0 is returned, the child
 * has been reaped.  Either way the pipes are closed.
 */
int htmm_spawn_go(struct htmm_spawn *sp, int *exec_errno);

/*
 * Do not release the child: close the pipes, so that it exits 1 without
 * running the command (if it is still alive), and reap it.
 */
void htmm_spawn_abort(struct htmm_spawn *sp);

#ifdef __cplusplus
}
#endif

#endif /* HTMM_SPAWN_H */
