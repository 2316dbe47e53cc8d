/* SPDX-License-Identifier: GPL-2.0 */
/*
 * htmm-sample's sampler: the options of a run, its events' rings, and
 * what is read from them: samples counted by page and by code site,
 * side-band records queued and replayed into the processes.
 */
#ifndef HTMM_SAMPLE_SAMPLER_H
#define HTMM_SAMPLE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/perf_event.h>

#include "events.h"
#include "htab.h"
#include "perf_rb.h"
#include "sideband.h"

/* What the command line asks for (htmm-sample.c's parse_args()). */
struct opts {
	const struct event_def *ev;
	uint64_t period;
	bool callchain;
	pid_t pid;
	char **cmd;
	double duration;	/* 0: until the target ends */
	unsigned long mmap_pages;
	unsigned long top;
	bool json;
	const char *output;
};

struct ring {
	int cpu;
	int fd;			/* the event whose buffer it is */
	void *base;
	size_t len;
	struct perf_rb *rb;
	uint64_t drained;	/* clock_ns() before the last read that emptied it */
};

struct sampler {
	const struct opts *o;
	struct perf_event_attr attr;
	const char *pmu;	/* the PMU of the event, or NULL */
	long page_size;

	struct ring *rings;	/* one per CPU sampled */
	size_t nr_rings;

	int *fds;		/* every event */
	size_t nr_fds, cap_fds;

	struct perf_rb_counts counts;
	uint64_t pmu_lost;	/* of counts.lost, what LOST_SAMPLES told */
	uint64_t kernel_lost;	/* the events' own count of records lost */
	struct htab pages;	/* (pid, page, 0) -> samples */
	struct htab code;	/* (pid, ip, caller) -> samples */
	struct sideband sb;	/* read, not replayed yet */
	struct procs procs;	/* their address spaces, as replayed */

	pid_t child;		/* the command's process, or 0 */
	pid_t target;		/* what is sampled */
	int pidfd;		/* the -p target's, or -1 */
	double t0, t1;
};

/* The key of the samples taken in the kernel, whatever the process. */
#define KERNEL_KEY	UINT64_MAX

/*
 * Set up S for the options o: its attr, a ring per CPU to be mapped when
 * its first event is opened.  0, or -1 (said).
 */
int setup(struct sampler *S, const struct opts *o);
/* Close S's events, and free what it holds. */
void teardown(struct sampler *S);
/* One round over the rings; true if some ring still has records. */
bool drain_round(struct sampler *S);
/* Read the rings: a few rounds, then the side band's replay. */
void drain(struct sampler *S);

#endif /* HTMM_SAMPLE_SAMPLER_H */
