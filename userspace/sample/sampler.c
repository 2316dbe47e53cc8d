// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: the sampler.  Its setup (the attr, a ring per CPU) and
 * teardown, and the reading of its rings: each sample counted by (pid,
 * page) and by (pid, ip, caller), each side-band record queued, and the
 * queue replayed up to a time every ring has been read past.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "events.h"
#include "perf_rb.h"
#include "pmu.h"
#include "sampler.h"
#include "sideband.h"
#include "util.h"

/* Records read from one ring before the next ring's turn. */
#define DRAIN_BUDGET		4096
/* Rounds over the rings per wake-up before signals and clock are seen to. */
#define DRAIN_ROUNDS		16

/*
 * The caller of the sampled function: the first frame after the sampled
 * IP in a user callchain, less one so that it lies within the call.
 */
static uint64_t chain_caller(const struct perf_sample *s)
{
	unsigned int frames = 0;

	for (uint64_t i = 0; i < s->nr_callchain; i++) {
		uint64_t ip = s->callchain[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX)
			continue;	/* a context marker */
		if (frames++ == 1)
			return ip ? ip - 1 : 0;
	}
	return 0;
}

static void on_sample(void *arg, const struct perf_sample *s,
		      const struct perf_event_header *rec)
{
	struct sampler *S = arg;
	uint64_t mode = rec->misc & PERF_RECORD_MISC_CPUMODE_MASK;

	if (S->attr.sample_type & PERF_SAMPLE_ADDR)
		count_at(&S->pages, s->pid, s->addr & ~(uint64_t)(S->page_size - 1), 0,
			 s->time);
	if (mode == PERF_RECORD_MISC_KERNEL)
		count_at(&S->code, KERNEL_KEY, 0, 0, s->time);
	else
		count_at(&S->code, s->pid, s->ip, chain_caller(s), s->time);
}

static void on_record(void *arg, const struct perf_event_header *rec)
{
	struct sampler *S = arg;
	uint64_t type = S->attr.sample_type;
	bool ok = true;

	switch (rec->type) {
	case PERF_RECORD_MMAP2:
		ok = sb_mmap2(&S->sb, type, rec);
		break;
	case PERF_RECORD_FORK:
		ok = sb_fork(&S->sb, type, rec);
		break;
	case PERF_RECORD_COMM:
		ok = sb_comm(&S->sb, type, rec);
		break;
	case PERF_RECORD_LOST_SAMPLES:
		/* { u64 lost }: lost by the PMU, not by a full ring */
		S->pmu_lost += ((const uint64_t *)(rec + 1))[0];
		break;
	}
	if (!ok)
		S->sb.malformed++;
}

static const struct perf_rb_ops rb_ops = {
	.sample = on_sample,
	.record = on_record,
};

/* One round over the rings; true if some ring still has records. */
bool drain_round(struct sampler *S)
{
	bool more = false;

	for (size_t i = 0; i < S->nr_rings; i++) {
		struct ring *r = &S->rings[i];
		uint64_t t = clock_ns();

		if (perf_rb_read(r->rb, S->attr.sample_type, DRAIN_BUDGET,
				 &rb_ops, S, &S->counts))
			more = true;
		else
			r->drained = t;	/* all it had when t was taken is read */
	}
	return more;
}

/*
 * Replay the side-band records that can no longer be preceded by one not
 * read yet: those stamped before every ring was last found empty, less
 * the slack of SB_SLACK_NS.  Only once enough are queued.
 */
static void sb_catch_up(struct sampler *S)
{
	uint64_t upto = UINT64_MAX;

	if (S->sb.nr < S->sb.replay_at)
		return;
	for (size_t i = 0; i < S->nr_rings; i++) {
		if (S->rings[i].drained < upto)
			upto = S->rings[i].drained;
	}
	if (upto > SB_SLACK_NS)
		sb_replay(&S->sb, &S->procs, upto - SB_SLACK_NS);
}

/* Read the rings: a few rounds, then the side band's replay. */
void drain(struct sampler *S)
{
	for (int round = 0; round < DRAIN_ROUNDS && drain_round(S); round++)
		;
	sb_catch_up(S);
}

/* The soft limit of open files up to the hard one: an event per thread and CPU. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int setup(struct sampler *S, const struct opts *o)
{
	int *cpus = NULL;

	memset(S, 0, sizeof(*S));
	S->o = o;
	S->pidfd = -1;
	S->page_size = sysconf(_SC_PAGESIZE);
	if (S->page_size <= 0) {
		error("sysconf(_SC_PAGESIZE): %s", strerror(errno));
		return -1;
	}
	S->sb.replay_at = SB_QUEUE_MIN;
	if (setup_attr(S))
		return -1;
	if (event_cpus(S, &cpus, &S->nr_rings)) {
		free(cpus);
		return -1;
	}
	S->rings = xcalloc(S->nr_rings, sizeof(*S->rings));
	for (size_t i = 0; i < S->nr_rings; i++)
		S->rings[i].cpu = cpus[i];
	free(cpus);
	if (!perf_sample_type_ok(S->attr.sample_type)) {
		error("internal error: sample_type 0x%llx cannot be parsed",
		      (unsigned long long)S->attr.sample_type);
		return -1;
	}
	raise_nofile();
	return 0;
}

void teardown(struct sampler *S)
{
	close_events(S);
	if (S->pidfd >= 0)
		close(S->pidfd);
	free(S->fds);
	free(S->rings);
	free(S->sb.e);
	procs_free(&S->procs);
	htab_free(&S->pages);
	htab_free(&S->code);
}
