/* SPDX-License-Identifier: GPL-2.0 */
/*
 * htmm-sample's run: the target (the command it starts, or the process
 * -p names), the signals that end sampling, the sampling loop, its end.
 */
#ifndef HTMM_SAMPLE_RUNNER_H
#define HTMM_SAMPLE_RUNNER_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

struct sampler;

/* What ended sampling. */
enum stop_reason { STOP_EXIT, STOP_DURATION, STOP_SIGNAL };

/* A run as it goes, and how the command ended. */
struct run_state {
	enum stop_reason why;
	bool stopping;		/* the command was asked to end */
	bool stopped;		/* the events were turned off (-d) */
	double kill_at;		/* when to kill the command, or 0 */
	int status;		/* the command's wait status */
	bool reaped;
};

/*
 * The signals that end sampling, and SIGCHLD: blocked but in ppoll(), so
 * that none comes between a look at the flags and the wait.
 */
void setup_signals(sigset_t *origmask, sigset_t *waitmask);
void reap(pid_t pid, int *status);
/*
 * Start the command, sampled from its first instruction.  Returns 0, or
 * the exit status.
 */
int start_command(struct sampler *S, const sigset_t *origmask);
/* Sample the running process pid: every thread it has and will have. */
int attach_pid(struct sampler *S, pid_t pid);
/*
 * Sample until the target ends, the time is up, or a signal says so.
 * Returns 0, or -1 if it could not go on (said).
 */
int run(struct sampler *S, const sigset_t *waitmask, struct run_state *st);
/* Stop the events and read what is left in the rings. */
void finish(struct sampler *S);

#endif /* HTMM_SAMPLE_RUNNER_H */
