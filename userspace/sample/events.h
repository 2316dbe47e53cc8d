/* SPDX-License-Identifier: GPL-2.0 */
/*
 * htmm-sample's events: the ones it knows (-e), the perf_event_attr of
 * the one sampled, and opening it per thread and CPU into a ring per CPU.
 */
#ifndef HTMM_SAMPLE_EVENTS_H
#define HTMM_SAMPLE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sampler;

/* IBS counts in units of 16: the low nibble of its period must be 0. */
#define IBS_PERIOD_UNIT		16

enum event_kind {
	EV_SOFTWARE,	/* PERF_TYPE_SOFTWARE, config from the table */
	EV_PMU_ALIAS,	/* a CPU PMU's sysfs alias of the same name (PEBS) */
	EV_IBS_OP,	/* AMD IBS op sampling */
};

struct event_def {
	const char *name;
	enum event_kind kind;
	uint64_t config;	/* EV_SOFTWARE: PERF_COUNT_SW_* */
	uint64_t period;	/* the default sample period */
	uint64_t sample_type;	/* besides BASE_SAMPLE_TYPE */
	bool callchain;		/* callchains by default */
	const char *unit;	/* what the period counts, one and more */
	const char *units;
	const char *help;
};

/* The events -e knows; the first is the default. */
extern const struct event_def event_defs[];
extern const size_t nr_event_defs;

/* The attr of every event opened. */
int setup_attr(struct sampler *S);
/* Say why perf_event_open() failed with err. */
void open_error(const struct sampler *S, pid_t tid, int cpu, int err);
/*
 * Open the events of thread tid, one per CPU, each CPU's into its ring:
 * 0; or the errno of perf_event_open() on *cpu, not reported yet (ESRCH:
 * the thread is gone); or -1 for an error reported.
 */
int open_thread(struct sampler *S, pid_t tid, int *cpu);
void close_events(struct sampler *S);
int ioctl_all(struct sampler *S, unsigned long req, const char *what);

#endif /* HTMM_SAMPLE_EVENTS_H */
