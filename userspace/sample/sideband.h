/* SPDX-License-Identifier: GPL-2.0 */
/*
 * htmm-sample's side band: the processes and their address spaces, as
 * the MMAP2, FORK and COMM(exec) records tell them, and the queue those
 * records wait in until they are replayed in time order.
 */
#ifndef HTMM_SAMPLE_SIDEBAND_H
#define HTMM_SAMPLE_SIDEBAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/perf_event.h>

#include "htab.h"
#include "maps.h"

/*
 * How long before it is in its ring a side-band record may be stamped:
 * the records stamped before the time every ring was last found empty,
 * less this, are all read.  The kernel stamps a record and writes it with
 * preemption off, within microseconds; one later than this is counted
 * (sb.late), and said.
 */
#define SB_SLACK_NS		100000000ULL
/* The side-band records queued before the queue is replayed. */
#define SB_QUEUE_MIN		4096

/*
 * One address space of a process: the process has a new one from its
 * fork() (a copy of its parent's) and from each exec() (empty).
 */
struct gen {
	uint64_t start;		/* when it began: 0, a fork(), an exec() */
	struct maps maps;
};

struct proc {
	pid_t pid;
	struct gen *gens;	/* in time order */
	size_t nr_gens, cap_gens;
};

struct procs {
	struct proc *p;
	size_t nr, cap;
	struct htab idx;	/* pid -> index + 1 */
};

/* The process pid, added if new.  Pointers to others may move. */
struct proc *proc_get(struct procs *ps, pid_t pid);
/* The address space p has now, as the replay goes. */
struct gen *gen_cur(struct proc *p);
/* The address space of pid at time t, or NULL. */
const struct gen *find_gen(const struct procs *ps, pid_t pid, uint64_t t);
void procs_free(struct procs *ps);

/* A side-band record, parsed (sideband.c). */
struct sb_event;

/* The side-band records read and not replayed yet. */
struct sideband {
	struct sb_event *e;
	size_t nr, cap;
	size_t replay_at;	/* replay when nr reaches it */
	uint64_t seq;		/* records queued so far */
	uint64_t done;		/* the records before this time are replayed */
	uint64_t late;		/* records that came after that */
	uint64_t malformed;	/* records too short for what they tell */
};

/*
 * Queue a PERF_RECORD_MMAP2, FORK or COMM record of an event of
 * sample_type type; false if it is too short for what it tells.
 */
bool sb_mmap2(struct sideband *sb, uint64_t type,
	      const struct perf_event_header *rec);
bool sb_fork(struct sideband *sb, uint64_t type,
	     const struct perf_event_header *rec);
bool sb_comm(struct sideband *sb, uint64_t type,
	     const struct perf_event_header *rec);
/*
 * Replay the queued records stamped before time upto, in time order, into
 * the address spaces of ps, and drop them from the queue.
 */
void sb_replay(struct sideband *sb, struct procs *ps, uint64_t upto);

#endif /* HTMM_SAMPLE_SIDEBAND_H */
