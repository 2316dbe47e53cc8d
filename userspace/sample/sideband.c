// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: processes, as the side-band records tell them.  Each has
 * an address space from the start or its fork() (a copy of its parent's),
 * and one more from each exec(); the records are parsed into a queue, and
 * replayed into them in the order of their time.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "perf_rb.h"
#include "sideband.h"
#include "util.h"

static struct proc *proc_find(const struct procs *ps, pid_t pid)
{
	uint64_t *v = htab_find(&ps->idx, (uint32_t)pid, 0, 0);

	return v ? &ps->p[*v - 1] : NULL;
}

/* The process pid, added if new.  Pointers to others may move. */
struct proc *proc_get(struct procs *ps, pid_t pid)
{
	uint64_t *v = htab_get(&ps->idx, (uint32_t)pid, 0, 0);

	if (!*v) {
		GROW(ps->p, ps->nr, ps->cap);
		memset(&ps->p[ps->nr], 0, sizeof(ps->p[ps->nr]));
		ps->p[ps->nr].pid = pid;
		*v = ++ps->nr;
	}
	return &ps->p[*v - 1];
}

/* Start a new address space of p at time t. */
static struct gen *gen_new(struct proc *p, uint64_t t)
{
	struct gen *g;

	GROW(p->gens, p->nr_gens, p->cap_gens);
	g = &p->gens[p->nr_gens++];
	memset(g, 0, sizeof(*g));
	g->start = t;
	return g;
}

/* The address space p has now, as the replay goes. */
struct gen *gen_cur(struct proc *p)
{
	return p->nr_gens ? &p->gens[p->nr_gens - 1] : gen_new(p, 0);
}

/* The address space p had at time t: the first one if t is before all. */
static const struct gen *gen_at(const struct proc *p, uint64_t t)
{
	size_t i = p->nr_gens;

	while (i > 1 && p->gens[i - 1].start > t)
		i--;
	return i ? &p->gens[i - 1] : NULL;
}

/* The address space of pid at time t, or NULL. */
const struct gen *find_gen(const struct procs *ps, pid_t pid, uint64_t t)
{
	const struct proc *p = proc_find(ps, pid);

	return p ? gen_at(p, t) : NULL;
}

void procs_free(struct procs *ps)
{
	for (size_t i = 0; i < ps->nr; i++) {
		for (size_t j = 0; j < ps->p[i].nr_gens; j++)
			free(ps->p[i].gens[j].maps.m);
		free(ps->p[i].gens);
	}
	free(ps->p);
	htab_free(&ps->idx);
	memset(ps, 0, sizeof(*ps));
}

enum sb_kind { SB_MMAP, SB_FORK, SB_EXEC };

/* A side-band record, parsed, to be replayed in time order. */
struct sb_event {
	uint64_t time;
	uint64_t seq;		/* order of reading, for equal times */
	enum sb_kind kind;
	pid_t pid, ppid;
	struct map map;		/* SB_MMAP */
};

/* PERF_RECORD_MMAP2, after the header, before the file name. */
struct mmap2_body {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
};

/* PERF_RECORD_FORK, after the header. */
struct fork_body {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

static struct sb_event *sb_add(struct sideband *sb, enum sb_kind kind,
			       uint64_t time, pid_t pid)
{
	struct sb_event *e;

	GROW(sb->e, sb->nr, sb->cap);
	e = &sb->e[sb->nr++];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->time = time;
	e->pid = pid;
	e->seq = sb->seq++;
	/* Replayed late, out of its order: see SB_SLACK_NS. */
	if (time < sb->done)
		sb->late++;
	return e;
}

bool sb_mmap2(struct sideband *sb, uint64_t type,
		     const struct perf_event_header *rec)
{
	const char *name = (const char *)rec + sizeof(*rec) + sizeof(struct mmap2_body);
	struct perf_sample_id id;
	struct mmap2_body b;
	struct sb_event *e;
	size_t room;

	if (perf_sample_id_parse(type, rec, sizeof(b), &id))
		return false;
	room = rec->size - sizeof(*rec) - sizeof(b) - perf_sample_id_size(type);
	if (!memchr(name, '\0', room))
		return false;
	memcpy(&b, rec + 1, sizeof(b));
	e = sb_add(sb, SB_MMAP, id.time, b.pid);
	e->map = (struct map) {
		.start = b.addr, .end = b.addr + b.len, .pgoff = b.pgoff,
		.maj = b.maj, .min = b.min, .ino = b.ino,
		.prot = b.prot, .flags = b.flags, .name = map_name(name),
	};
	return true;
}

bool sb_fork(struct sideband *sb, uint64_t type,
		    const struct perf_event_header *rec)
{
	struct perf_sample_id id;
	struct fork_body b;
	struct sb_event *e;

	if (perf_sample_id_parse(type, rec, sizeof(b), &id))
		return false;
	memcpy(&b, rec + 1, sizeof(b));
	/* A new thread shares its process's mappings: nothing to do. */
	if (b.pid == b.ppid)
		return true;
	e = sb_add(sb, SB_FORK, b.time, b.pid);
	e->ppid = b.ppid;
	return true;
}

bool sb_comm(struct sideband *sb, uint64_t type,
		    const struct perf_event_header *rec)
{
	struct perf_sample_id id;
	uint32_t pid;

	/* { u32 pid, tid; char comm[]; } */
	if (perf_sample_id_parse(type, rec, 2 * sizeof(uint32_t), &id))
		return false;
	memcpy(&pid, rec + 1, sizeof(pid));
	if (rec->misc & PERF_RECORD_MISC_COMM_EXEC)
		sb_add(sb, SB_EXEC, id.time, pid);
	return true;
}

static int sb_cmp(const void *a, const void *b)
{
	const struct sb_event *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A child's first address space: a copy of its parent's at the fork(). */
static void replay_fork(struct procs *ps, const struct sb_event *e)
{
	struct gen *g = gen_new(proc_get(ps, e->pid), e->time);
	struct proc *parent = proc_find(ps, e->ppid);

	if (parent && parent->nr_gens)
		maps_copy(&g->maps, &gen_cur(parent)->maps);
}

static void replay_one(struct procs *ps, const struct sb_event *e)
{
	switch (e->kind) {
	case SB_MMAP:
		maps_insert(&gen_cur(proc_get(ps, e->pid))->maps, &e->map);
		break;
	case SB_FORK:
		replay_fork(ps, e);
		break;
	case SB_EXEC:
		gen_new(proc_get(ps, e->pid), e->time);
		break;
	}
}

/*
 * Replay the queued records stamped before time upto, in time order, into
 * the address spaces of each process (from its fork() or the start, and
 * from each exec()), and drop them from the queue.
 */
void sb_replay(struct sideband *sb, struct procs *ps, uint64_t upto)
{
	size_t n = 0, keep;

	qsort(sb->e, sb->nr, sizeof(*sb->e), sb_cmp);
	while (n < sb->nr && sb->e[n].time < upto)
		replay_one(ps, &sb->e[n++]);
	memmove(sb->e, sb->e + n, (sb->nr - n) * sizeof(*sb->e));
	sb->nr -= n;
	if (upto > sb->done)
		sb->done = upto;
	/* Sorting again is worth it once the queue has doubled. */
	keep = sb->nr > SB_QUEUE_MIN / 2 ? 2 * sb->nr : SB_QUEUE_MIN;
	sb->replay_at = keep;
	/* Give back what a burst took. */
	if (sb->cap > 2 * keep) {
		sb->cap = keep;
		sb->e = xrealloc_array(sb->e, sb->cap, sizeof(*sb->e));
	}
}
