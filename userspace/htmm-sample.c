// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: sample where a process touches memory, with perf events, and
 * tell its hottest pages and mappings and the code that touched them.
 *
 *   htmm-sample [-e EVENT] [-c PERIOD] [-g] [-d SECONDS] [-m PAGES] [-n N]
 *               [-j] [-o FILE] (-p PID | [--] CMD [ARGS...])
 *
 * How it goes:
 *
 *  - Events: one per CPU and per target thread (the command's child, or
 *    every thread of PID), with inherit=1 so that threads and processes
 *    created later are followed; the CPUs are the online ones, or for a
 *    PMU event those of the PMU's sysfs cpus (or cpumask) file, since a
 *    hybrid CPU's cpu_core PMU cannot count on its other cores.  The
 *    kernel refuses to mmap an inherited event that is not bound to a
 *    CPU, so each CPU's events are redirected (PERF_EVENT_IOC_SET_OUTPUT)
 *    into one ring per CPU.
 *  - Rings: read by libhtmm's perf_rb reader, with the protocol of
 *    tools/lib/perf (acquire data_head, release data_tail, records that
 *    wrap copied out); LOST, LOST_SAMPLES and THROTTLE records are counted.
 *  - Mappings: a process may be gone when the report is made, its
 *    /proc/PID/maps with it, so its mappings are tracked: a snapshot of
 *    /proc/PID/maps for -p (taken once the events are on, so that nothing
 *    mapped meanwhile is missed), then the MMAP2, FORK and COMM(exec)
 *    records.  The rings are read one after the other, so those records
 *    come out of time order; they are queued, and replayed in the order of
 *    their time (CLOCK_MONOTONIC, sample_id_all) into the address spaces
 *    of each process: one from its fork() (a copy of its parent's) or from
 *    the start, and one more from each exec().  As perf does per round,
 *    the queue is replayed and freed up to a time that every ring has been
 *    read past (less SB_SLACK_NS, for a record stamped before it was
 *    written), so that its memory does not grow with the run.
 *  - Symbols: samples are counted by (pid, address) with the time of the
 *    last one, and named in the address space their process had then.
 *    The samples are grouped by address space, and each group is named
 *    with one libdwfl session, ended before the next, so that the files
 *    it opens are never those of every process at once: the runs of each
 *    file's mappings are reported as modules (dwfl_report_module, as
 *    dwfl_linux_proc_maps_report does), and libdwfl names the functions:
 *    no ELF is parsed here.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>
#include <linux/perf_event.h>

#include "htmm_spawn.h"
#include "htmm_util.h"
#include "perf_rb.h"

#define PROG "htmm-sample"
#define VERSION "0.1"

#define DEFAULT_MMAP_PAGES	64	/* ring data pages per CPU */
#define DEFAULT_TOP		10	/* rows per table */
/* Callchain entries: a context marker, the IP, the caller, a few more. */
#define MAX_STACK		8
/* Records read from one ring before the next ring's turn. */
#define DRAIN_BUDGET		4096
/* Rounds over the rings per wake-up before signals and clock are seen to. */
#define DRAIN_ROUNDS		16
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
/* At -d, how long the command has after SIGTERM before SIGKILL. */
#define KILL_GRACE_S		1.0
/* Wake up when a ring is this share full. */
#define WAKEUP_SHARE		4
/* Re-reads of /proc/PID/task while new threads keep showing up. */
#define TASK_SCAN_ROUNDS	100
/* How often to look for the -p target when there is no pidfd. */
#define GONE_POLL_MS		200
/* IBS counts in units of 16: the low nibble of its period must be 0. */
#define IBS_PERIOD_UNIT		16
/* The most precise PEBS level asked for; lower ones are tried next. */
#define MAX_PRECISE_IP		3
#define SYSFS_PMU		"/sys/bus/event_source/devices"
#define PARANOID_PATH		"/proc/sys/kernel/perf_event_paranoid"
#define MLOCK_PATH		"/proc/sys/kernel/perf_event_mlock_kb"

/* The default periods. */
#define FAULT_PERIOD		1	/* every fault */
#define CLOCK_PERIOD_NS		100000	/* 10 kHz */
#define PEBS_PERIOD		2000	/* loads or stores */
#define IBS_PERIOD		100000	/* cycles */

/* The sample fields every event has. */
#define BASE_SAMPLE_TYPE						\
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |		\
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
/*
 * The data address only: DATA_SRC would need a mem-loads-aux group leader
 * on some Intel CPUs (Sapphire Rapids, hybrids), and neither it nor the
 * WEIGHT is reported.
 */
#define MEM_SAMPLE_TYPE		PERF_SAMPLE_ADDR

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

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

static const struct event_def events[] = {
	{ "page-faults", EV_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, FAULT_PERIOD,
	  PERF_SAMPLE_ADDR, false, "fault", "faults", "page faults, with their address (the default)" },
	{ "minor-faults", EV_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, FAULT_PERIOD,
	  PERF_SAMPLE_ADDR, false, "fault", "faults", "page faults served without I/O" },
	{ "major-faults", EV_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, FAULT_PERIOD,
	  PERF_SAMPLE_ADDR, false, "fault", "faults", "page faults that waited for I/O" },
	{ "cpu-clock", EV_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, CLOCK_PERIOD_NS,
	  0, true, "ns", "ns", "CPU time, with callchains" },
	{ "task-clock", EV_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, CLOCK_PERIOD_NS,
	  0, true, "ns", "ns", "task time, with callchains" },
	{ "mem-loads", EV_PMU_ALIAS, 0, PEBS_PERIOD,
	  MEM_SAMPLE_TYPE, false, "load", "loads", "loads, with their data address (Intel PEBS)" },
	{ "mem-stores", EV_PMU_ALIAS, 0, PEBS_PERIOD,
	  MEM_SAMPLE_TYPE, false, "store", "stores", "stores, with their data address (Intel PEBS)" },
	{ "ibs-op", EV_IBS_OP, 0, IBS_PERIOD,
	  MEM_SAMPLE_TYPE, false, "cycle", "cycles", "micro-ops, with data address (AMD IBS)" },
};
#define NR_EVENTS (sizeof(events) / sizeof(events[0]))

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

/* ------------------------------------------------------------------ */
/* Errors and memory                                                   */
/* ------------------------------------------------------------------ */

static void __attribute__((format(printf, 1, 2))) error(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void __attribute__((noreturn)) out_of_memory(void)
{
	error("out of memory");
	exit(1);
}

static void *xrealloc_array(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		out_of_memory();
	p = realloc(p, n && size ? n * size : 1);
	if (!p)
		out_of_memory();
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		out_of_memory();
	return p;
}

/* Make room for one more element at p[nr]. */
#define GROW(p, nr, cap)						\
	do {								\
		if ((nr) == (cap)) {					\
			(cap) = (cap) ? 2 * (cap) : 16;			\
			(p) = xrealloc_array((p), (cap), sizeof(*(p)));	\
		}							\
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CLOCK_MONOTONIC in ns: the clock of the records' times (use_clockid). */
static uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* A whole number in a file (a sysctl, a PMU type), or -1 with errno. */
static long read_long_file(const char *path)
{
	FILE *f = fopen(path, "re");
	long v;
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%ld", &v);
	fclose(f);
	if (n != 1) {
		errno = EINVAL;
		return -1;
	}
	return v;
}

/* ------------------------------------------------------------------ */
/* A hash table of three-u64 keys                                      */
/* ------------------------------------------------------------------ */

struct hent {
	uint64_t k[3];
	uint64_t v;
	uint64_t last;		/* count_at(): the time of the last sample */
	bool used;
};

struct htab {
	struct hent *e;
	size_t cap, nr;		/* cap: a power of two, or 0 */
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
	return mix64(a ^ mix64(b ^ mix64(c)));
}

static struct hent *htab_slot(const struct htab *h, uint64_t a, uint64_t b,
			      uint64_t c)
{
	size_t i = hash3(a, b, c) & (h->cap - 1);

	for (;; i = (i + 1) & (h->cap - 1)) {
		struct hent *e = &h->e[i];

		if (!e->used || (e->k[0] == a && e->k[1] == b && e->k[2] == c))
			return e;
	}
}

static void htab_grow(struct htab *h)
{
	struct htab n = { .cap = h->cap ? 2 * h->cap : 64 };

	n.e = xcalloc(n.cap, sizeof(*n.e));
	for (size_t i = 0; i < h->cap; i++) {
		if (h->e[i].used)
			*htab_slot(&n, h->e[i].k[0], h->e[i].k[1], h->e[i].k[2]) = h->e[i];
	}
	n.nr = h->nr;
	free(h->e);
	*h = n;
}

/* The value of key (a, b, c), or NULL. */
static uint64_t *htab_find(const struct htab *h, uint64_t a, uint64_t b,
			   uint64_t c)
{
	struct hent *e;

	if (!h->cap)
		return NULL;
	e = htab_slot(h, a, b, c);
	return e->used ? &e->v : NULL;
}

/* The entry of key (a, b, c), added with 0 if new. */
static struct hent *htab_entry(struct htab *h, uint64_t a, uint64_t b,
			       uint64_t c)
{
	struct hent *e;

	/* At most half full, so that probes stay short. */
	if (2 * (h->nr + 1) > h->cap)
		htab_grow(h);
	e = htab_slot(h, a, b, c);
	if (!e->used) {
		*e = (struct hent) { .k = { a, b, c }, .used = true };
		h->nr++;
	}
	return e;
}

/* The value of key (a, b, c), added as 0 if new. */
static uint64_t *htab_get(struct htab *h, uint64_t a, uint64_t b, uint64_t c)
{
	return &htab_entry(h, a, b, c)->v;
}

/* Count one sample of key (a, b, c) taken at time t. */
static void count_at(struct htab *h, uint64_t a, uint64_t b, uint64_t c,
		     uint64_t t)
{
	struct hent *e = htab_entry(h, a, b, c);

	e->v++;
	if (t > e->last)
		e->last = t;
}

static void htab_free(struct htab *h)
{
	free(h->e);
	memset(h, 0, sizeof(*h));
}

/* Interned strings: one copy of each, compared by address. */
static struct htab strings;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static const char *intern(const char *s)
{
	uint64_t h = hash_str(s);

	/* k[1] tells apart strings of the same hash. */
	for (uint64_t i = 0;; i++) {
		uint64_t *v = htab_get(&strings, h, i, 0);
		char *copy;

		if (*v && !strcmp((const char *)(uintptr_t)*v, s))
			return (const char *)(uintptr_t)*v;
		if (*v)
			continue;
		copy = strdup(s);
		if (!copy)
			out_of_memory();
		*v = (uintptr_t)copy;
		return copy;
	}
}

static void free_strings(void)
{
	for (size_t i = 0; i < strings.cap; i++) {
		if (strings.e[i].used)
			free((void *)(uintptr_t)strings.e[i].v);
	}
	htab_free(&strings);
}

/* ------------------------------------------------------------------ */
/* Mappings                                                            */
/* ------------------------------------------------------------------ */

struct map {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min, prot, flags;
	const char *name;	/* interned; "[anon]" for anonymous memory */
};

/* A process's mappings, sorted, not overlapping. */
struct maps {
	struct map *m;
	size_t nr, cap;
};

/* The name a mapping is shown by: perf's "//anon" and "" are "[anon]". */
static const char *map_name(const char *name)
{
	if (!name[0] || !strcmp(name, "//anon"))
		return intern("[anon]");
	return intern(name);
}

static bool map_is_file(const struct map *m)
{
	return m->name[0] == '/' && (m->ino || m->maj || m->min);
}

/* Anonymous memory: "[anon]" (or "[anon:NAME]"), the heap, a stack. */
static bool map_is_anon(const struct map *m)
{
	return !strncmp(m->name, "[anon", 5) || !strcmp(m->name, "[heap]") ||
	       !strncmp(m->name, "[stack", 6);
}

/* The index of the first mapping that ends above addr. */
static size_t maps_lower(const struct maps *ms, uint64_t addr)
{
	size_t lo = 0, hi = ms->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ms->m[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct map *maps_find(const struct maps *ms, uint64_t addr)
{
	size_t i = maps_lower(ms, addr);

	return i < ms->nr && ms->m[i].start <= addr ? &ms->m[i] : NULL;
}

/*
 * Add a mapping, as mmap() does: what it overlaps is unmapped, the parts of
 * mappings it overlaps in part are kept.
 */
static void maps_insert(struct maps *ms, const struct map *nm)
{
	struct map repl[3];
	size_t i = maps_lower(ms, nm->start), j = i, n = 0;

	if (nm->end <= nm->start)
		return;
	while (j < ms->nr && ms->m[j].start < nm->end)
		j++;
	if (i < j && ms->m[i].start < nm->start) {
		repl[n] = ms->m[i];
		repl[n++].end = nm->start;
	}
	repl[n++] = *nm;
	if (i < j && ms->m[j - 1].end > nm->end) {
		repl[n] = ms->m[j - 1];
		repl[n].pgoff += nm->end - repl[n].start;
		repl[n++].start = nm->end;
	}
	/* Replace m[i, j) by repl[0, n). */
	while (ms->nr + n - (j - i) > ms->cap) {
		ms->cap = ms->cap ? 2 * ms->cap : 16;
		ms->m = xrealloc_array(ms->m, ms->cap, sizeof(*ms->m));
	}
	memmove(&ms->m[i + n], &ms->m[j], (ms->nr - j) * sizeof(*ms->m));
	memcpy(&ms->m[i], repl, n * sizeof(*repl));
	ms->nr = ms->nr + n - (j - i);
}

static void maps_copy(struct maps *dst, const struct maps *src)
{
	dst->nr = 0;
	if (dst->cap < src->nr) {
		dst->cap = src->nr;
		dst->m = xrealloc_array(dst->m, dst->cap, sizeof(*dst->m));
	}
	if (src->nr)
		memcpy(dst->m, src->m, src->nr * sizeof(*src->m));
	dst->nr = src->nr;
}

/* One line of /proc/PID/maps into *m; false if it is not one. */
static bool parse_maps_line(const char *line, struct map *m)
{
	char perms[8], name[PATH_MAX];
	int nread = -1;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &m->start, &m->end, perms, &m->pgoff, &m->maj, &m->min,
		   &m->ino, &nread) < 7 || nread < 0 || strlen(perms) < 4)
		return false;
	m->prot = (perms[0] == 'r' ? PROT_READ : 0) |
		  (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	m->flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	snprintf(name, sizeof(name), "%s", line + nread);
	name[strcspn(name, "\n")] = '\0';
	m->name = map_name(name);
	return true;
}

/* Read /proc/PID/maps into ms. */
static int read_proc_maps(pid_t pid, struct maps *ms)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	struct map m;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		if (parse_maps_line(line, &m))
			maps_insert(ms, &m);
	}
	free(line);
	fclose(f);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Processes, as the side-band records tell them                       */
/* ------------------------------------------------------------------ */

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

static struct proc *proc_find(const struct procs *ps, pid_t pid)
{
	uint64_t *v = htab_find(&ps->idx, (uint32_t)pid, 0, 0);

	return v ? &ps->p[*v - 1] : NULL;
}

/* The process pid, added if new.  Pointers to others may move. */
static struct proc *proc_get(struct procs *ps, pid_t pid)
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
static struct gen *gen_cur(struct proc *p)
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
static const struct gen *find_gen(const struct procs *ps, pid_t pid, uint64_t t)
{
	const struct proc *p = proc_find(ps, pid);

	return p ? gen_at(p, t) : NULL;
}

static void procs_free(struct procs *ps)
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

static bool sb_mmap2(struct sideband *sb, uint64_t type,
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

static bool sb_fork(struct sideband *sb, uint64_t type,
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

static bool sb_comm(struct sideband *sb, uint64_t type,
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
static void sb_replay(struct sideband *sb, struct procs *ps, uint64_t upto)
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

/* ------------------------------------------------------------------ */
/* The sampler                                                         */
/* ------------------------------------------------------------------ */

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
static bool drain_round(struct sampler *S)
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
static void drain(struct sampler *S)
{
	for (int round = 0; round < DRAIN_ROUNDS && drain_round(S); round++)
		;
	sb_catch_up(S);
}

/* ------------------------------------------------------------------ */
/* Opening the events                                                  */
/* ------------------------------------------------------------------ */

#define ONLINE_PATH	"/sys/devices/system/cpu/online"

/*
 * The CPUs of a CPU list file ("0-3,5"), in *cpus; -1 with errno if it
 * cannot be opened.
 */
static int read_cpulist(const char *path, int **cpus, size_t *nr)
{
	FILE *f = fopen(path, "re");
	size_t cap = 0;
	int a, b;
	char sep;

	*cpus = NULL;
	*nr = 0;
	if (!f)
		return -1;
	while (fscanf(f, "%d", &a) == 1) {
		b = a;
		sep = '\n';
		if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			if (fscanf(f, "%c", &sep) != 1)
				sep = '\n';
		}
		for (int c = a; c <= b; c++) {
			GROW(*cpus, *nr, cap);
			(*cpus)[(*nr)++] = c;
		}
		if (sep != ',')
			break;
	}
	fclose(f);
	return 0;
}

static bool has_cpu(const int *cpus, size_t nr, int cpu)
{
	for (size_t i = 0; i < nr; i++) {
		if (cpus[i] == cpu)
			return true;
	}
	return false;
}

/*
 * The CPUs to open the events on: the online ones; for a PMU event, those
 * of them that the PMU's sysfs cpus (or cpumask) file lists, if it has
 * one: a hybrid CPU's cpu_core PMU has no counters on its other cores.
 */
static int event_cpus(const struct sampler *S, int **cpus, size_t *nr)
{
	static const char *const files[] = { "cpus", "cpumask" };
	char path[PATH_MAX];
	int *pmu_cpus = NULL;
	size_t nr_pmu = 0, n = 0;
	bool listed = false;

	if (read_cpulist(ONLINE_PATH, cpus, nr)) {
		error("%s: %s", ONLINE_PATH, strerror(errno));
		return -1;
	}
	if (!*nr) {
		error("%s: no CPU found in it", ONLINE_PATH);
		return -1;
	}
	for (size_t i = 0; S->pmu && !listed && i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), SYSFS_PMU "/%s/%s", S->pmu, files[i]);
		listed = !read_cpulist(path, &pmu_cpus, &nr_pmu);
		if (!listed && errno != ENOENT) {
			error("%s: %s: %s", S->o->ev->name, path, strerror(errno));
			return -1;
		}
	}
	if (!listed)
		return 0;	/* every online CPU */
	for (size_t i = 0; i < *nr; i++) {
		if (has_cpu(pmu_cpus, nr_pmu, (*cpus)[i]))
			(*cpus)[n++] = (*cpus)[i];
	}
	free(pmu_cpus);
	*nr = n;
	if (!n) {
		error("%s: %s lists no online CPU: the %s PMU cannot sample here",
		      S->o->ev->name, path, S->pmu);
		return -1;
	}
	return 0;
}

/*
 * Put value v into the attr fields a PMU format says, e.g. "config:0-7"
 * or "config1:0-15" or "config:0-7,32-35": the bits of v fill the ranges
 * in turn.
 */
static int apply_format(struct perf_event_attr *attr, const char *format,
			uint64_t v)
{
	char field[16];
	const char *p;
	__u64 *dst;
	int n = 0;

	if (sscanf(format, "%15[a-z0-9]:%n", field, &n) != 1 || !n)
		return -1;
	if (!strcmp(field, "config"))
		dst = &attr->config;
	else if (!strcmp(field, "config1"))
		dst = &attr->config1;
	else if (!strcmp(field, "config2"))
		dst = &attr->config2;
#ifdef PERF_ATTR_SIZE_VER8
	else if (!strcmp(field, "config3"))
		dst = &attr->config3;
#endif
	else
		return -1;
	for (p = format + n; *p;) {
		unsigned int lo, hi;
		int used = 0;

		if (sscanf(p, "%u%n", &lo, &used) != 1)
			return -1;
		p += used;
		hi = lo;
		if (*p == '-' && sscanf(p + 1, "%u%n", &hi, &used) == 1)
			p += 1 + used;
		if (hi < lo || hi > 63)
			return -1;
		for (unsigned int bit = lo; bit <= hi; bit++, v >>= 1)
			*dst |= (v & 1) << bit;
		if (*p == ',')
			p++;
		else if (*p && !isspace((unsigned char)*p))
			return -1;
		else
			break;
	}
	return 0;
}

/* Read a sysfs file's first line into buf. */
static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return -1;
	ok = fgets(buf, size, f) != NULL;
	fclose(f);
	if (!ok) {
		errno = EINVAL;
		return -1;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* One term of an alias ("event=0xcd", "ldlat=3", "pebs") into attr. */
static int apply_term(struct perf_event_attr *attr, const char *pmu,
		      const char *event, char *term)
{
	char path[PATH_MAX], format[128], *eq = strchr(term, '='), *end;
	uint64_t v = 1;

	if (eq) {
		*eq = '\0';
		errno = 0;
		v = strtoull(eq + 1, &end, 0);
		if (errno || end == eq + 1 || *end) {
			error("%s: %s/%s/events/%s: cannot use '%s=%s'", event,
			      SYSFS_PMU, pmu, event, term, eq + 1);
			return -1;
		}
	}
	snprintf(path, sizeof(path), SYSFS_PMU "/%s/format/%s", pmu, term);
	if (read_line(path, format, sizeof(format))) {
		error("%s: %s: %s", event, path, strerror(errno));
		return -1;
	}
	if (apply_format(attr, format, v)) {
		error("%s: %s: cannot use the format '%s'", event, path, format);
		return -1;
	}
	return 0;
}

/*
 * A CPU PMU's event alias, as perf would read it: the PMU type, and the
 * alias's terms placed into config* by the PMU's format files.  The PMU's
 * name goes into *pmu_name.
 */
static int pmu_alias_attr(const char *event, struct perf_event_attr *attr,
			  const char **pmu_name)
{
	/* "cpu" on most Intel CPUs, "cpu_core" for the big cores of hybrids. */
	static const char *const pmus[] = { "cpu", "cpu_core" };
	char path[PATH_MAX], alias[256], *save, *term;
	const char *pmu = NULL;
	long type;

	for (size_t i = 0; i < sizeof(pmus) / sizeof(pmus[0]) && !pmu; i++) {
		snprintf(path, sizeof(path), SYSFS_PMU "/%s/events/%s", pmus[i], event);
		if (!read_line(path, alias, sizeof(alias)))
			pmu = pmus[i];
	}
	if (!pmu) {
		error("%s: this CPU has no such event (no %s/cpu/events/%s nor "
		      "%s/cpu_core/events/%s): it needs an Intel CPU with PEBS, "
		      "and a kernel that exposes its PMU", event, SYSFS_PMU, event,
		      SYSFS_PMU, event);
		return -1;
	}
	snprintf(path, sizeof(path), SYSFS_PMU "/%s/type", pmu);
	type = read_long_file(path);
	if (type < 0) {
		error("%s: %s: %s", event, path, strerror(errno));
		return -1;
	}
	attr->type = type;
	*pmu_name = pmu;
	for (term = strtok_r(alias, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
		if (apply_term(attr, pmu, event, term))
			return -1;
	}
	/* PEBS: the sampled IP and address are those of the access. */
	attr->precise_ip = MAX_PRECISE_IP;
	return 0;
}

static int ibs_op_attr(const char *event, struct perf_event_attr *attr,
		       const char **pmu_name)
{
	long type = read_long_file(SYSFS_PMU "/ibs_op/type");

	if (type < 0) {
		error("%s: this CPU has no IBS (no %s/ibs_op/type): it needs an "
		      "AMD CPU with IBS, and a kernel that exposes it", event, SYSFS_PMU);
		return -1;
	}
	attr->type = type;
	*pmu_name = "ibs_op";
	/* IBS cannot leave the kernel out: it refuses exclude_*. */
	attr->exclude_kernel = 0;
	attr->exclude_hv = 0;
	return 0;
}

/* The attr of every event opened. */
static int setup_attr(struct sampler *S)
{
	const struct opts *o = S->o;
	const struct event_def *ev = o->ev;
	struct perf_event_attr *a = &S->attr;
	size_t ring = (size_t)o->mmap_pages * S->page_size;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->sample_period = o->period;
	a->sample_type = BASE_SAMPLE_TYPE | ev->sample_type;
	a->disabled = 1;
	a->inherit = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	/* The side band: mappings, processes, exec()s, with their time. */
	a->mmap = 1;
	a->mmap2 = 1;
	a->mmap_data = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	/* Times of our clock: the side band is replayed up to clock_ns(). */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* Wake the reader up once a ring is a share full, not per record. */
	a->watermark = 1;
	a->wakeup_watermark = ring / WAKEUP_SHARE;
	a->enable_on_exec = o->cmd != NULL;
	/*
	 * A LOST record comes only with the next record written to its
	 * ring: the losses at the end are known from the events' counts.
	 */
	a->read_format = PERF_FORMAT_LOST;
	if (o->callchain) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_kernel = 1;
		a->sample_max_stack = MAX_STACK;
	}

	switch (ev->kind) {
	case EV_SOFTWARE:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = ev->config;
		return 0;
	case EV_PMU_ALIAS:
		return pmu_alias_attr(ev->name, a, &S->pmu);
	case EV_IBS_OP:
		return ibs_op_attr(ev->name, a, &S->pmu);
	}
	return -1;
}

static const char *paranoid_meaning(long level)
{
	if (level >= 3)
		return "unprivileged users may not use perf events";
	if (level == 2)
		return "unprivileged users may sample user space only, of processes they may ptrace";
	if (level == 1)
		return "unprivileged users may sample user and kernel space of processes they may ptrace";
	return "unprivileged users may sample any process";
}

/* Say why perf_event_open() failed with err. */
static void open_error(const struct sampler *S, pid_t tid, int cpu, int err)
{
	const char *ev = S->o->ev->name;
	long paranoid;

	switch (err) {
	case EACCES:
	case EPERM:
		paranoid = read_long_file(PARANOID_PATH);
		error("%s on pid %d: perf_event_open: %s (%s is %ld: %s; root or "
		      "CAP_PERFMON is not limited by it)", ev, (int)tid, strerror(err),
		      PARANOID_PATH, paranoid, paranoid_meaning(paranoid));
		break;
	case ESRCH:
		error("pid %d: no such process", (int)tid);
		break;
	case EMFILE:
	case ENFILE:
		error("%s: perf_event_open: %s, with %zu events open (one per thread "
		      "and CPU): raise the limit (ulimit -n)", ev, strerror(err),
		      S->nr_fds);
		break;
	case ENOENT:
	case ENODEV:
	case EOPNOTSUPP:
		error("%s: not supported here (perf_event_open on CPU %d: %s)",
		      ev, cpu, strerror(err));
		break;
	default:
		error("%s on pid %d, CPU %d: perf_event_open: %s", ev, (int)tid, cpu,
		      strerror(err));
	}
}

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * Open one event.  What a kernel or CPU refuses is given up, and the attr
 * that worked kept for the next ones: the count of lost records (Linux
 * 6.0), then PEBS precise levels one by one.
 */
static int open_one(struct sampler *S, pid_t tid, int cpu)
{
	int fd;

	for (;;) {
		fd = perf_event_open(&S->attr, tid, cpu);
		if (fd >= 0 || (errno != EOPNOTSUPP && errno != EINVAL))
			return fd;
		if (errno == EINVAL && (S->attr.read_format & PERF_FORMAT_LOST))
			S->attr.read_format &= ~(uint64_t)PERF_FORMAT_LOST;
		else if (S->attr.precise_ip > 1)
			S->attr.precise_ip--;
		else
			return fd;
	}
}

static int map_ring(struct sampler *S, struct ring *r, int fd)
{
	r->len = (1 + S->o->mmap_pages) * S->page_size;
	r->base = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED) {
		int err = errno;
		struct rlimit rl;
		char memlock[32] = "?";

		r->base = NULL;
		if (err == EPERM) {
			/* perf_mmap(): beyond both limits, without CAP_IPC_LOCK */
			if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur == RLIM_INFINITY)
				snprintf(memlock, sizeof(memlock), "unlimited");
			else if (!getrlimit(RLIMIT_MEMLOCK, &rl))
				snprintf(memlock, sizeof(memlock), "%llu KiB",
					 (unsigned long long)rl.rlim_cur >> 10);
			error("mmap of a %zu KiB ring for CPU %d: %s: more locked memory "
			      "than this user may have (%s is %ld KiB per CPU, and beyond "
			      "it RLIMIT_MEMLOCK is %s); a smaller -m would do, or "
			      "CAP_IPC_LOCK", r->len >> 10, r->cpu, strerror(err),
			      MLOCK_PATH, read_long_file(MLOCK_PATH), memlock);
		} else if (err == ENOMEM) {
			error("mmap of a %zu KiB ring for CPU %d: %s: the kernel could "
			      "not allocate it; a smaller -m would do", r->len >> 10,
			      r->cpu, strerror(err));
		} else {
			error("mmap of a %zu KiB ring for CPU %d: %s", r->len >> 10,
			      r->cpu, strerror(err));
		}
		return -1;
	}
	r->rb = xcalloc(1, sizeof(*r->rb));
	if (perf_rb_init_mmap(r->rb, r->base, r->len)) {
		error("CPU %d: the kernel's ring is not a power of two in size", r->cpu);
		return -1;
	}
	r->fd = fd;
	return 0;
}

/*
 * Open the events of thread tid (or of the command's child), one per CPU;
 * the first event of a CPU gets its ring, the others write into it.
 * Returns 0; or the errno of perf_event_open() on *cpu, not reported yet
 * (ESRCH: the thread is gone); or -1 for an error reported.
 */
static int open_thread(struct sampler *S, pid_t tid, int *cpu)
{
	for (size_t i = 0; i < S->nr_rings; i++) {
		struct ring *r = &S->rings[i];
		int fd = open_one(S, tid, r->cpu);

		*cpu = r->cpu;
		if (fd < 0)
			return errno;
		GROW(S->fds, S->nr_fds, S->cap_fds);
		S->fds[S->nr_fds++] = fd;
		if (!r->base) {
			if (map_ring(S, r, fd))
				return -1;
		} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd)) {
			error("CPU %d: PERF_EVENT_IOC_SET_OUTPUT: %s", r->cpu, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void close_events(struct sampler *S)
{
	for (size_t i = 0; i < S->nr_fds; i++)
		close(S->fds[i]);
	S->nr_fds = 0;
	for (size_t i = 0; i < S->nr_rings; i++) {
		if (S->rings[i].base)
			munmap(S->rings[i].base, S->rings[i].len);
		free(S->rings[i].rb);
		S->rings[i].base = NULL;
		S->rings[i].rb = NULL;
	}
}

static int ioctl_all(struct sampler *S, unsigned long req, const char *what)
{
	for (size_t i = 0; i < S->nr_fds; i++) {
		if (ioctl(S->fds[i], req, 0)) {
			error("%s: %s", what, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

static volatile sig_atomic_t stop_requests;
static volatile sig_atomic_t child_changed;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requests++;
}

static void on_sigchld(int sig)
{
	(void)sig;
	child_changed = 1;
}

/*
 * The signals that end sampling, and SIGCHLD: blocked but in ppoll(), so
 * that none comes between a look at the flags and the wait.
 */
static void setup_signals(sigset_t *origmask, sigset_t *waitmask)
{
	static const int stoppers[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;
	sigset_t block;

	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(stoppers) / sizeof(stoppers[0]); i++)
		sigaddset(&block, stoppers[i]);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, origmask);
	*waitmask = *origmask;
	for (size_t i = 0; i < sizeof(stoppers) / sizeof(stoppers[0]); i++)
		sigdelset(waitmask, stoppers[i]);
	sigdelset(waitmask, SIGCHLD);

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stoppers) / sizeof(stoppers[0]); i++) {
		struct sigaction old;

		/* What was ignored when we started (nohup) stays ignored. */
		if (sigaction(stoppers[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sa.sa_handler = on_stop_signal;
		sigaction(stoppers[i], &sa, NULL);
	}
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
}

static void reap(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

/*
 * Start the command: its process waits until its events are open, which
 * enable_on_exec turns on when it executes the command, so that it is
 * sampled from its first instruction.  Returns 0, or the exit status.
 */
static int start_command(struct sampler *S, const sigset_t *origmask)
{
	char **argv = S->o->cmd;
	struct htmm_spawn sp;
	int err, r, cpu;
	pid_t pid;

	if (htmm_spawn_paused(argv, origmask, &sp)) {
		error("%s: %s", sp.what, strerror(errno));
		return 1;
	}
	pid = sp.pid;
	S->child = S->target = pid;
	/* A write to a pipe the child no longer reads fails, not kills us. */
	signal(SIGPIPE, SIG_IGN);

	err = open_thread(S, pid, &cpu);
	if (err) {
		if (err > 0)
			open_error(S, pid, cpu, err);
		htmm_spawn_abort(&sp);	/* it exits without running it */
		S->child = 0;
		return 1;
	}
	S->t0 = now();
	r = htmm_spawn_go(&sp, &err);
	if (r == 0)
		return 0;
	/* execvp() failed (r == 1), or the pipe did (r < 0): reaped. */
	S->child = 0;
	if (r < 0) {
		error("%s: cannot tell whether it started", argv[0]);
		return 127;
	}
	/* A name with a '/' is not looked for in PATH: it is a path. */
	if (err == ENOENT && !strchr(argv[0], '/'))
		error("%s: command not found", argv[0]);
	else
		error("%s: %s", argv[0], strerror(err));
	return err == EACCES ? 126 : 127;
}

/* Is tid among the first n of tids? */
static bool has_tid(const pid_t *tids, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++) {
		if (tids[i] == tid)
			return true;
	}
	return false;
}

/*
 * Open the events of the threads of pid not opened yet.  Returns how many
 * were, or -1 on an error reported.
 */
static int attach_new_threads(struct sampler *S, pid_t pid, pid_t **tids,
			      size_t *nr, size_t *cap)
{
	char path[64];
	struct dirent *d;
	int added = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;	/* gone: found out by the caller */
	while ((d = readdir(dir))) {
		char *end;
		long tid = strtol(d->d_name, &end, 10);
		int err, cpu;

		if (*end || tid <= 0 || has_tid(*tids, *nr, tid))
			continue;
		err = open_thread(S, tid, &cpu);
		if (err == ESRCH)
			continue;	/* it exited meanwhile */
		if (err) {
			if (err > 0)
				open_error(S, tid, cpu, err);
			closedir(dir);
			return -1;
		}
		GROW(*tids, *nr, *cap);
		(*tids)[(*nr)++] = tid;
		added++;
	}
	closedir(dir);
	return added;
}

/* Sample the running process pid: every thread it has and will have. */
static int attach_pid(struct sampler *S, pid_t pid)
{
	pid_t *tids = NULL;
	size_t nr = 0, cap = 0;
	int added = 1, ret = 1;
	struct proc *p;

	if (kill(pid, 0) && errno == ESRCH) {
		error("pid %d: no such process", (int)pid);
		return 1;
	}
	S->target = pid;
	S->pidfd = -1;
#ifdef SYS_pidfd_open
	/* Before the events, so that it is this process that is waited for. */
	S->pidfd = syscall(SYS_pidfd_open, (long)pid, 0L);
#endif

	/* Threads started meanwhile by threads without events yet: again. */
	for (int round = 0; round < TASK_SCAN_ROUNDS && added > 0; round++)
		added = attach_new_threads(S, pid, &tids, &nr, &cap);
	if (added < 0)
		goto out;
	if (!nr) {
		error("pid %d: no such process (or it exited)", (int)pid);
		goto out;
	}
	if (ioctl_all(S, PERF_EVENT_IOC_ENABLE, "PERF_EVENT_IOC_ENABLE"))
		goto out;
	S->t0 = now();
	/*
	 * Its mappings, from the start: after the events are on, so that
	 * what it maps meanwhile is in the records if not here (a mapping
	 * in both is the same).
	 */
	p = proc_get(&S->procs, pid);
	read_proc_maps(pid, &gen_cur(p)->maps);
	fprintf(stderr, PROG ": sampling pid %d (%zu thread%s) on %zu CPUs; "
		"SIGINT or SIGTERM ends it\n", (int)pid, nr, nr == 1 ? "" : "s",
		S->nr_rings);
	ret = 0;
out:
	free(tids);
	return ret;
}

/* Has the -p target exited (without a pidfd to tell)? */
static bool process_gone(pid_t pid)
{
	char path[64], buf[512], *p;
	bool gone = false;
	FILE *f;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT;
	if (fgets(buf, sizeof(buf), f)) {
		/* The state follows the command name, in parentheses. */
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
			gone = true;
	}
	fclose(f);
	return gone;
}

/* ------------------------------------------------------------------ */
/* The sampling loop                                                   */
/* ------------------------------------------------------------------ */

enum stop_reason { STOP_EXIT, STOP_DURATION, STOP_SIGNAL };

static const char *const stop_names[] = {
	[STOP_EXIT] = "exit", [STOP_DURATION] = "duration", [STOP_SIGNAL] = "signal",
};

struct run_state {
	enum stop_reason why;
	bool stopping;		/* the command was asked to end */
	bool stopped;		/* the events were turned off (-d) */
	double kill_at;		/* when to kill the command, or 0 */
	int status;		/* the command's wait status */
	bool reaped;
};

/* The poll set: every event, then the -p target's pidfd. */
static struct pollfd *make_pollset(const struct sampler *S, size_t *n)
{
	struct pollfd *p = xcalloc(S->nr_fds + 1, sizeof(*p));

	for (size_t i = 0; i < S->nr_fds; i++)
		p[i] = (struct pollfd) { .fd = S->fds[i], .events = POLLIN };
	*n = S->nr_fds;
	if (S->pidfd >= 0)
		p[(*n)++] = (struct pollfd) { .fd = S->pidfd, .events = POLLIN };
	return p;
}

/*
 * Stop polling events whose task and its children are all gone: they say
 * so (POLLHUP) at every poll.  Their rings, shared with others, stay.
 * Returns how many events are still polled.
 */
static size_t drop_hung_up(struct pollfd *p, size_t nr_events)
{
	size_t live = 0;

	for (size_t i = 0; i < nr_events; i++) {
		if (p[i].fd >= 0 && (p[i].revents & (POLLHUP | POLLERR)))
			p[i].fd = -1;
		if (p[i].fd >= 0)
			live++;
	}
	return live;
}

static bool child_exited(struct sampler *S, struct run_state *st)
{
	pid_t r;

	if (!child_changed)
		return false;
	child_changed = 0;
	r = waitpid(S->child, &st->status, WNOHANG);
	if (r == S->child) {
		st->reaped = true;
		return true;
	}
	return false;
}

/*
 * Is a signal that ends sampling pending?  One that came after ppoll()
 * returned is blocked until the next: a Ctrl-C that killed the command
 * reaches us before its SIGCHLD does, but may come after ppoll() did.
 */
static bool stop_pending(void)
{
	sigset_t pending;

	if (stop_requests)
		return true;
	if (sigpending(&pending))
		return false;
	return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
	       sigismember(&pending, SIGHUP) == 1;
}

/*
 * The end of sampling a command at -d: the events are turned off, so that
 * nothing after the deadline is sampled, and the command gets SIGTERM, and
 * SIGKILL KILL_GRACE_S later if it is still there.
 */
static void stop_at_deadline(struct sampler *S, struct run_state *st)
{
	ioctl_all(S, PERF_EVENT_IOC_DISABLE, "PERF_EVENT_IOC_DISABLE");
	S->t1 = now();
	st->stopped = true;
	/* A signal that came first stays what ended it. */
	if (st->why == STOP_EXIT)
		st->why = STOP_DURATION;
	kill(S->child, SIGTERM);
	st->stopping = true;
	st->kill_at = S->t1 + KILL_GRACE_S;
}

/* The earlier of two times, 0 standing for none. */
static double earlier(double a, double b)
{
	return a <= 0 ? b : b <= 0 || a < b ? a : b;
}

/* The time to wait in ppoll() until wake (0: none), or NULL for no limit. */
static struct timespec *poll_timeout(const struct sampler *S, double wake,
				     struct timespec *ts)
{
	/* Without a pidfd, the -p target is looked for now and then. */
	bool look = !S->child && S->pidfd < 0;
	double left = wake > 0 ? wake - now() : GONE_POLL_MS / 1e3;

	if (wake <= 0 && !look)
		return NULL;
	if (look && left > GONE_POLL_MS / 1e3)
		left = GONE_POLL_MS / 1e3;
	if (left < 0)
		left = 0;
	ts->tv_sec = (time_t)left;
	ts->tv_nsec = (long)((left - ts->tv_sec) * 1e9);
	return ts;
}

/*
 * Sample until the target ends, the time is up, or a signal says so.
 * Returns 0, or -1 if it could not go on (said).
 */
static int run(struct sampler *S, const sigset_t *waitmask, struct run_state *st)
{
	double deadline = S->o->duration > 0 ? S->t0 + S->o->duration : 0;
	size_t nr_poll, nr_events = S->nr_fds;
	struct pollfd *p = make_pollset(S, &nr_poll);
	sig_atomic_t handled = 0;	/* the stop requests acted upon */
	int ret = 0;

	for (;;) {
		struct timespec ts;
		int r;

		r = ppoll(p, nr_poll, poll_timeout(S, earlier(deadline, st->kill_at), &ts),
			  waitmask);
		if (r < 0 && errno != EINTR) {
			error("ppoll: %s", strerror(errno));
			ret = -1;
			break;
		}
		drain(S);
		/* A stop request first: the command may have died of it too. */
		if (stop_requests && st->why == STOP_EXIT)
			st->why = STOP_SIGNAL;
		if (!S->child) {
			if (st->why == STOP_SIGNAL)
				break;
			if (deadline > 0 && now() >= deadline) {
				st->why = STOP_DURATION;
				break;
			}
			if ((S->pidfd >= 0 && r > 0 && p[nr_poll - 1].revents) ||
			    (S->pidfd < 0 && process_gone(S->target)))
				break;
			if (r > 0 && !drop_hung_up(p, nr_events))
				break;	/* every thread and child of the target is gone */
			continue;
		}
		if (stop_requests != handled) {
			/* The first asks the command to end; more force it. */
			handled = stop_requests;
			kill(S->child, st->stopping ? SIGKILL : SIGTERM);
			st->stopping = true;
		}
		if (deadline > 0 && now() >= deadline) {
			stop_at_deadline(S, st);
			deadline = 0;	/* now wait for the command to end */
		}
		if (st->kill_at > 0 && now() >= st->kill_at) {
			kill(S->child, SIGKILL);
			st->kill_at = 0;
		}
		if (child_exited(S, st)) {
			if (st->why == STOP_EXIT && stop_pending())
				st->why = STOP_SIGNAL;
			break;
		}
		if (r > 0)
			drop_hung_up(p, nr_events);
	}
	if (!st->stopped)
		S->t1 = now();
	free(p);
	return ret;
}

/*
 * The records the kernel could not write, as the events count them
 * (inherited events count into the event they come from).
 */
static uint64_t events_lost(const struct sampler *S)
{
	struct { uint64_t value, lost; } rf;	/* read_format: LOST only */
	uint64_t n = 0;

	if (!(S->attr.read_format & PERF_FORMAT_LOST))
		return 0;
	for (size_t i = 0; i < S->nr_fds; i++) {
		if (read(S->fds[i], &rf, sizeof(rf)) == sizeof(rf))
			n += rf.lost;
	}
	return n;
}

/* Stop the events and read what is left in the rings. */
static void finish(struct sampler *S)
{
	/* Nothing more is written once they are off: the drain ends. */
	ioctl_all(S, PERF_EVENT_IOC_DISABLE, "PERF_EVENT_IOC_DISABLE");
	while (drain_round(S))
		;
	sb_replay(&S->sb, &S->procs, UINT64_MAX);
	if (S->sb.late)
		error("%" PRIu64 " mapping or process records came more than %llu ms "
		      "late, and were replayed out of their order: a few samples may "
		      "be named after the wrong mappings", S->sb.late,
		      SB_SLACK_NS / 1000000);
	S->kernel_lost = events_lost(S);
	close_events(S);
}

/*
 * The records lost: those the PMU said it lost, and those that did not
 * fit in a ring, as LOST records told or, if more, as the events count.
 */
static uint64_t total_lost(const struct sampler *S)
{
	uint64_t ring = S->counts.lost - S->pmu_lost;

	return S->pmu_lost + (S->kernel_lost > ring ? S->kernel_lost : ring);
}

/* ------------------------------------------------------------------ */
/* Symbols                                                             */
/* ------------------------------------------------------------------ */

static char *debuginfo_path;

/* Our own vDSO's image, and its size; looked for on first use. */
static char *vdso_image;
static size_t vdso_size;
static bool vdso_looked_for;

/*
 * The vDSO is in no file, and the process may be gone, but its image is
 * ours, that of every process of our ABI on this kernel (as perf assumes
 * too); a vDSO of another size is of another ABI, and is left unnamed.
 */
static void find_vdso(void)
{
	struct maps self = { 0 };
	const char *name = intern("[vdso]");

	vdso_looked_for = true;
	if (read_proc_maps(getpid(), &self))
		return;
	for (size_t i = 0; i < self.nr && !vdso_image; i++) {
		const struct map *m = &self.m[i];

		if (m->name != name)
			continue;
		vdso_size = m->end - m->start;
		vdso_image = xcalloc(1, vdso_size);
		memcpy(vdso_image, (const void *)(uintptr_t)m->start, vdso_size);
	}
	free(self.m);
}

static void free_vdso(void)
{
	free(vdso_image);
	vdso_image = NULL;
	vdso_looked_for = false;
}

/* The files that could not be opened, each said once: path -> 1. */
static struct htab unopened;

static void say_unopened(const char *path, int err)
{
	uint64_t *said = htab_get(&unopened, (uintptr_t)intern(path), 0, 0);

	if (*said)
		return;
	*said = 1;
	error("%s: %s: its functions go unnamed", path, strerror(err));
}

/*
 * libdwfl's find_elf: the file a module is named after, or for the vDSO
 * our own image.  As dwfl_linux_proc_find_elf, but a file that cannot be
 * opened is said, and a file is opened for as long as its module lives.
 */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name,
		    Dwarf_Addr base, char **file_name, Elf **elfp)
{
	struct stat st;
	int fd;

	(void)mod;
	(void)userdata;
	(void)base;
	if (!strcmp(name, "[vdso]")) {
		/* libdwfl ends the Elf, and leaves the image alone. */
		if (vdso_image)
			*elfp = elf_memory(vdso_image, vdso_size);
		return -1;
	}
	if (name[0] != '/')
		return -1;
	/* Regular files only: a device's open() may block, or do something. */
	if (stat(name, &st)) {
		say_unopened(name, errno);
		return -1;
	}
	if (!S_ISREG(st.st_mode))
		return -1;
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say_unopened(name, errno);
		return -1;
	}
	*file_name = strdup(name);
	if (!*file_name) {
		close(fd);
		out_of_memory();
	}
	return fd;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static void report_module(Dwfl *dwfl, pid_t pid, const char *name,
			  uint64_t low, uint64_t high)
{
	if (!dwfl_report_module(dwfl, name, low, high))
		error("pid %d: %s at 0x%" PRIx64 "-0x%" PRIx64 ": dwfl_report_module: %s",
		      (int)pid, name, low, high, dwfl_errmsg(-1));
}

/* Do two mappings map the same file? */
static bool same_file(const struct map *a, const struct map *b)
{
	return a->ino == b->ino && a->maj == b->maj && a->min == b->min &&
	       a->name == b->name;
}

/*
 * Report the modules of ms to libdwfl, as dwfl_linux_proc_maps_report()
 * would from /proc/PID/maps: each run of mappings of one file (with other
 * memory between them) is a module from the start of its first to the end
 * of its last; the vDSO is one too.  A file's name is given as it is:
 * no text to parse, so that no name can be misread.
 */
static void report_modules(Dwfl *dwfl, const struct maps *ms, pid_t pid)
{
	const char *vdso = intern("[vdso]");
	const struct map *first = NULL;	/* of the file being reported */
	uint64_t high = 0;

	if (!vdso_looked_for)
		find_vdso();
	for (size_t i = 0; i < ms->nr; i++) {
		const struct map *m = &ms->m[i];
		bool is_vdso = m->name == vdso && vdso_image &&
			       m->end - m->start == vdso_size;

		if (!is_vdso && !map_is_file(m))
			continue;	/* no module of its own, no end of one */
		if (first && !is_vdso && same_file(first, m)) {
			high = m->end;
			continue;
		}
		if (first)
			report_module(dwfl, pid, first->name, first->start, high);
		first = NULL;
		if (is_vdso) {
			report_module(dwfl, pid, vdso, m->start, m->end);
			continue;
		}
		first = m;
		high = m->end;
	}
	if (first)
		report_module(dwfl, pid, first->name, first->start, high);
}

/*
 * A libdwfl session for the address space g of pid: its modules, and what
 * they are named by; NULL if it cannot be had.  It holds the files it has
 * opened until the caller ends it (dwfl_end()).
 */
static Dwfl *gen_dwfl(const struct gen *g, pid_t pid)
{
	Dwfl *dwfl = dwfl_begin(&dwfl_callbacks);

	if (!dwfl) {
		error("pid %d: dwfl_begin: %s", (int)pid, dwfl_errmsg(-1));
		return NULL;
	}
	dwfl_report_begin(dwfl);
	report_modules(dwfl, &g->maps, pid);
	if (dwfl_report_end(dwfl, NULL, NULL))
		error("pid %d: dwfl_report_end: %s", (int)pid, dwfl_errmsg(-1));
	return dwfl;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

struct where {
	const char *func;	/* interned */
	const char *module;	/* interned */
	Dwfl_Module *mod;	/* NULL if libdwfl does not know it */
};

/* Name the code at ip in the address space g (or NULL), with dwfl (or NULL). */
static void resolve(Dwfl *dwfl, const struct gen *g, uint64_t ip, struct where *w)
{
	const struct map *m = g ? maps_find(&g->maps, ip) : NULL;
	const char *name;

	w->func = intern("[unknown]");
	w->module = intern(m ? basename_of(m->name) : "[unknown]");
	w->mod = dwfl ? dwfl_addrmodule(dwfl, ip) : NULL;
	if (!w->mod)
		return;
	name = dwfl_module_info(w->mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	if (name)
		w->module = intern(basename_of(name));
	name = dwfl_module_addrname(w->mod, ip);
	if (name)
		w->func = intern(name);
}

/* Something to name in the address space g of pid (g may be NULL). */
struct lookup {
	const struct gen *g;
	pid_t pid;
	size_t i;		/* what: an index in the caller's table */
};

/* By address space, so that each is one session; then in table order. */
static int lookup_cmp(const void *a, const void *b)
{
	const struct lookup *x = a, *y = b;

	if (x->g != y->g)
		return (uintptr_t)x->g < (uintptr_t)y->g ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Sort the lookups l[0, n) by address space, and call fn for each with a
 * libdwfl session of its address space (or NULL), one session at a time.
 */
static void for_each_lookup(struct lookup *l, size_t n,
			    void (*fn)(void *arg, Dwfl *dwfl, const struct lookup *l),
			    void *arg)
{
	qsort(l, n, sizeof(*l), lookup_cmp);
	for (size_t i = 0; i < n;) {
		const struct gen *g = l[i].g;
		Dwfl *dwfl = g ? gen_dwfl(g, l[i].pid) : NULL;

		for (; i < n && l[i].g == g; i++)
			fn(arg, dwfl, &l[i]);
		if (dwfl)
			dwfl_end(dwfl);
	}
}

/* "file.c:42" for ip, if there is debug information; else NULL. */
static const char *source_of(Dwfl_Module *mod, uint64_t ip)
{
	Dwfl_Line *line = mod ? dwfl_module_getsrc(mod, ip) : NULL;
	const char *file;
	char buf[PATH_MAX + 32];
	int lineno = 0;

	if (!line)
		return NULL;
	file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
	if (!file)
		return NULL;
	snprintf(buf, sizeof(buf), "%s:%d", basename_of(file), lineno);
	return intern(buf);
}

/* ------------------------------------------------------------------ */
/* The report                                                          */
/* ------------------------------------------------------------------ */

struct page_row {
	uint64_t page, samples;
	pid_t pid;
	const char *mapping;
};

struct map_row {
	uint64_t start, end, samples;
	pid_t pid;
	const char *name;
	bool anon;
};

struct site_row {
	const char *func, *module, *source;
	uint64_t samples;
	uint64_t best_ip, best_samples;	/* the site's hottest address */
	uint64_t best_time;
	pid_t best_pid;
	const char *caller_func, *caller_module;
	uint64_t caller_samples;
};

struct report {
	bool has_addr;
	struct page_row *pages;
	size_t nr_pages;
	struct map_row *maps;
	size_t nr_maps;
	struct site_row *sites;
	size_t nr_sites;
	uint64_t samples;	/* the sum over every table */
};

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int page_cmp(const void *a, const void *b)
{
	const struct page_row *x = a, *y = b;

	if (x->samples != y->samples)
		return cmp_u64_desc(x->samples, y->samples);
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->page < y->page ? -1 : x->page > y->page;
}

static int map_cmp(const void *a, const void *b)
{
	const struct map_row *x = a, *y = b;

	if (x->samples != y->samples)
		return cmp_u64_desc(x->samples, y->samples);
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int site_cmp(const void *a, const void *b)
{
	const struct site_row *x = a, *y = b;
	int c;

	if (x->samples != y->samples)
		return cmp_u64_desc(x->samples, y->samples);
	c = strcmp(x->func, y->func);
	return c ? c : strcmp(x->module, y->module);
}

/* Every page with samples, and the mapping it is in. */
static void build_pages(struct sampler *S, struct report *R)
{
	struct htab by_map = { 0 };	/* (pid, map) -> row + 1 */
	size_t maps_cap = 0;

	R->pages = xcalloc(S->pages.nr, sizeof(*R->pages));
	for (size_t i = 0; i < S->pages.cap; i++) {
		const struct hent *e = &S->pages.e[i];
		const struct gen *g;
		const struct map *m;
		struct page_row *row;
		uint64_t *v;

		if (!e->used)
			continue;
		g = find_gen(&S->procs, e->k[0], e->last);
		m = g ? maps_find(&g->maps, e->k[1]) : NULL;
		row = &R->pages[R->nr_pages++];
		*row = (struct page_row) {
			.pid = e->k[0], .page = e->k[1], .samples = e->v,
			.mapping = m ? m->name : intern("[unknown]"),
		};
		/* Samples outside any known mapping go to one row per process. */
		v = htab_get(&by_map, e->k[0], (uintptr_t)m, 0);
		if (!*v) {
			GROW(R->maps, R->nr_maps, maps_cap);
			R->maps[R->nr_maps] = (struct map_row) {
				.pid = e->k[0], .start = m ? m->start : 0,
				.end = m ? m->end : 0, .name = row->mapping,
				.anon = m && map_is_anon(m),
			};
			*v = ++R->nr_maps;
		}
		R->maps[*v - 1].samples += e->v;
	}
	htab_free(&by_map);
	qsort(R->pages, R->nr_pages, sizeof(*R->pages), page_cmp);
	qsort(R->maps, R->nr_maps, sizeof(*R->maps), map_cmp);
}

/* The site row of where w, added if new. */
static struct site_row *site_of(struct report *R, struct htab *idx,
				size_t *cap, const struct where *w)
{
	uint64_t *v = htab_get(idx, (uintptr_t)w->func, (uintptr_t)w->module, 0);

	if (!*v) {
		GROW(R->sites, R->nr_sites, *cap);
		R->sites[R->nr_sites] = (struct site_row) {
			.func = w->func, .module = w->module,
		};
		*v = ++R->nr_sites;
	}
	return &R->sites[*v - 1];
}

/* What build_sites() builds, as it goes. */
struct site_build {
	struct report *R;
	const struct hent *const *code;	/* the code entries looked up */
	struct htab idx;		/* (func, module) -> site + 1 */
	size_t cap;
	struct htab callers;		/* (site, func, module) -> samples */
};

/* Add the samples of (pid, ip, caller) to its site and its caller's tally. */
static void add_code(void *arg, Dwfl *dwfl, const struct lookup *l)
{
	struct site_build *b = arg;
	const struct hent *e = b->code[l->i];
	struct where w, cw;
	struct site_row *site;
	size_t row;

	resolve(dwfl, l->g, e->k[1], &w);
	site = site_of(b->R, &b->idx, &b->cap, &w);
	site->samples += e->v;
	if (e->v > site->best_samples) {
		site->best_samples = e->v;
		site->best_ip = e->k[1];
		site->best_pid = e->k[0];
		site->best_time = e->last;
	}
	if (!e->k[2])
		return;
	row = site - b->R->sites;
	resolve(dwfl, l->g, e->k[2], &cw);
	*htab_get(&b->callers, row, (uintptr_t)cw.func, (uintptr_t)cw.module) += e->v;
}

/*
 * The code sites, each with its most frequent caller: named one address
 * space at a time (see for_each_lookup()).
 */
static void build_sites(struct sampler *S, struct report *R)
{
	struct site_build b = { .R = R };
	const struct hent **code = xcalloc(S->code.nr, sizeof(*code));
	struct lookup *l = xcalloc(S->code.nr, sizeof(*l));
	struct where kernel = { intern("[kernel]"), intern("[kernel]"), NULL };
	size_t n = 0;

	for (size_t i = 0; i < S->code.cap; i++) {
		const struct hent *e = &S->code.e[i];

		if (!e->used)
			continue;
		if (e->k[0] == KERNEL_KEY) {
			site_of(R, &b.idx, &b.cap, &kernel)->samples += e->v;
			continue;
		}
		code[n] = e;
		l[n] = (struct lookup) {
			.g = find_gen(&S->procs, e->k[0], e->last), .pid = e->k[0], .i = n,
		};
		n++;
	}
	b.code = code;
	for_each_lookup(l, n, add_code, &b);
	for (size_t i = 0; i < b.callers.cap; i++) {
		const struct hent *e = &b.callers.e[i];
		struct site_row *site;

		if (!e->used)
			continue;
		site = &R->sites[e->k[0]];
		if (e->v > site->caller_samples) {
			site->caller_samples = e->v;
			site->caller_func = (const char *)(uintptr_t)e->k[1];
			site->caller_module = (const char *)(uintptr_t)e->k[2];
		}
	}
	free(code);
	free(l);
	htab_free(&b.idx);
	htab_free(&b.callers);
	qsort(R->sites, R->nr_sites, sizeof(*R->sites), site_cmp);
}

static void add_source(void *arg, Dwfl *dwfl, const struct lookup *l)
{
	struct site_row *s = &((struct report *)arg)->sites[l->i];
	struct where w;

	resolve(dwfl, l->g, s->best_ip, &w);
	s->source = source_of(w.mod, s->best_ip);
}

/* The source line of the top sites' hottest addresses, where known. */
static void add_sources(struct sampler *S, struct report *R, size_t top)
{
	struct lookup *l = xcalloc(top < R->nr_sites ? top : R->nr_sites, sizeof(*l));
	size_t n = 0;

	for (size_t i = 0; i < R->nr_sites && i < top; i++) {
		const struct site_row *s = &R->sites[i];

		if (s->best_samples)
			l[n++] = (struct lookup) {
				.g = find_gen(&S->procs, s->best_pid, s->best_time),
				.pid = s->best_pid, .i = i,
			};
	}
	for_each_lookup(l, n, add_source, R);
	free(l);
}

static void build_report(struct sampler *S, struct report *R)
{
	memset(R, 0, sizeof(*R));
	R->has_addr = S->attr.sample_type & PERF_SAMPLE_ADDR;
	if (R->has_addr)
		build_pages(S, R);
	build_sites(S, R);
	add_sources(S, R, S->o->top);
	for (size_t i = 0; i < R->nr_sites; i++)
		R->samples += R->sites[i].samples;
}

static void free_report(struct report *R)
{
	free(R->pages);
	free(R->maps);
	free(R->sites);
}

static double pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * n / total : 0.0;
}

static uint64_t rest_pages(const struct report *R, size_t top)
{
	uint64_t n = 0;

	for (size_t i = top; i < R->nr_pages; i++)
		n += R->pages[i].samples;
	return n;
}

static uint64_t rest_maps(const struct report *R, size_t top)
{
	uint64_t n = 0;

	for (size_t i = top; i < R->nr_maps; i++)
		n += R->maps[i].samples;
	return n;
}

static uint64_t rest_sites(const struct report *R, size_t top)
{
	uint64_t n = 0;

	for (size_t i = top; i < R->nr_sites; i++)
		n += R->sites[i].samples;
	return n;
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* ---- text ---- */

static void text_target(FILE *f, const struct sampler *S, const struct run_state *st)
{
	if (S->o->cmd) {
		fputs("target:     ", f);
		for (char **a = S->o->cmd; *a; a++)
			fprintf(f, "%s%s", a == S->o->cmd ? "" : " ", *a);
		fprintf(f, " (pid %d", (int)S->target);
		if (st->reaped && WIFEXITED(st->status))
			fprintf(f, ", exit status %d)\n", WEXITSTATUS(st->status));
		else if (st->reaped && WIFSIGNALED(st->status))
			fprintf(f, ", killed by signal %d)\n", WTERMSIG(st->status));
		else
			fputs(")\n", f);
	} else {
		fprintf(f, "target:     pid %d\n", (int)S->target);
	}
}

static void text_header(FILE *f, const struct sampler *S, const struct run_state *st)
{
	const struct event_def *ev = S->o->ev;

	fprintf(f, PROG " " VERSION "\n");
	text_target(f, S, st);
	fprintf(f, "event:      %s, a sample every %" PRIu64 " %s, %s%s\n",
		ev->name, (uint64_t)S->attr.sample_period,
		S->attr.sample_period == 1 ? ev->unit : ev->units,
		S->attr.exclude_kernel ? "user space only" : "user and kernel space",
		S->o->callchain ? ", with callchains" : "");
	fprintf(f, "duration:   %.3f s (ended by %s)\n", S->t1 - S->t0,
		stop_names[st->why]);
	fprintf(f, "samples:    %" PRIu64 "\n", S->counts.samples);
	fprintf(f, "lost:       %" PRIu64 "   throttled: %" PRIu64 "   unthrottled: %"
		PRIu64 "   malformed: %" PRIu64 "\n", total_lost(S),
		S->counts.throttled, S->counts.unthrottled,
		S->counts.malformed + S->sb.malformed);
	if (total_lost(S) > S->pmu_lost)
		fprintf(f, "            (records were lost when a ring was full: "
			"a larger -m would keep them)\n");
}

static void text_pages(FILE *f, const struct report *R, size_t top)
{
	size_t n = min_size(top, R->nr_pages);

	fprintf(f, "\nhottest pages (%zu pages with samples)\n", R->nr_pages);
	fprintf(f, "  %-18s %8s %10s  %s\n", "page", "pid", "samples", "mapping");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  0x%016" PRIx64 " %8d %10" PRIu64 "  %s\n", R->pages[i].page,
			(int)R->pages[i].pid, R->pages[i].samples, R->pages[i].mapping);
	if (R->nr_pages > n)
		fprintf(f, "  (%zu more pages: %" PRIu64 " samples)\n",
			R->nr_pages - n, rest_pages(R, n));
}

static void text_maps(FILE *f, const struct report *R, size_t top)
{
	size_t n = min_size(top, R->nr_maps);

	fprintf(f, "\nhottest mappings\n");
	fprintf(f, "  %10s %7s %8s  %-37s  %s\n", "samples", "%", "pid", "range", "mapping");
	for (size_t i = 0; i < n; i++) {
		const struct map_row *m = &R->maps[i];
		char range[48] = "-";

		if (m->end)
			snprintf(range, sizeof(range), "0x%" PRIx64 "-0x%" PRIx64,
				 m->start, m->end);
		fprintf(f, "  %10" PRIu64 " %7.2f %8d  %-37s  %s\n", m->samples,
			pct(m->samples, R->samples), (int)m->pid, range, m->name);
	}
	if (R->nr_maps > n)
		fprintf(f, "  (%zu more mappings: %" PRIu64 " samples)\n",
			R->nr_maps - n, rest_maps(R, n));
}

/* "[module]" in buf, unless it is in brackets already ("[vdso]"). */
static const char *bracketed(const char *module, char *buf, size_t size)
{
	if (module[0] == '[')
		return module;
	snprintf(buf, size, "[%s]", module);
	return buf;
}

static void text_sites(FILE *f, const struct report *R, size_t top, bool callchain)
{
	size_t n = min_size(top, R->nr_sites);

	fprintf(f, "\ncode sites\n");
	fprintf(f, "  %10s %7s  %s\n", "samples", "%", "function [module]");
	for (size_t i = 0; i < n; i++) {
		const struct site_row *s = &R->sites[i];
		char buf[PATH_MAX + 2];

		fprintf(f, "  %10" PRIu64 " %7.2f  %s %s", s->samples,
			pct(s->samples, R->samples), s->func,
			bracketed(s->module, buf, sizeof(buf)));
		if (s->source)
			fprintf(f, " at %s", s->source);
		fputc('\n', f);
		if (callchain && s->caller_func)
			fprintf(f, "  %10s %7s    called most from %s %s (%.1f%%)\n", "", "",
				s->caller_func,
				bracketed(s->caller_module, buf, sizeof(buf)),
				pct(s->caller_samples, s->samples));
	}
	if (R->nr_sites > n)
		fprintf(f, "  (%zu more sites: %" PRIu64 " samples)\n",
			R->nr_sites - n, rest_sites(R, n));
}

static void print_text(FILE *f, const struct sampler *S, const struct run_state *st,
		       const struct report *R)
{
	size_t top = S->o->top;

	text_header(f, S, st);
	if (R->has_addr) {
		text_pages(f, R, top);
		text_maps(f, R, top);
	} else {
		fprintf(f, "\n(%s samples carry no data address: no page tables)\n",
			S->o->ev->name);
	}
	text_sites(f, R, top, S->o->callchain);
}

/* ---- JSON ---- */

/* The length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	/* No overlong forms, no surrogates, nothing above U+10FFFF. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	}
	return n;
}

/* A JSON string; bytes that are not UTF-8 (a file name's) become U+FFFD. */
static void json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*s) {
		size_t n = utf8_len(s);

		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s < 0x20 || *s == 0x7f)
			fprintf(f, "\\u%04x", *s);
		else if (!n)
			fputs("\\ufffd", f);
		else
			fwrite(s, 1, n, f);
		s += n ? n : 1;
	}
	fputc('"', f);
}

static void json_target(FILE *f, const struct sampler *S, const struct run_state *st)
{
	fputs("  \"target\": {", f);
	if (S->o->cmd) {
		fputs("\"command\": [", f);
		for (char **a = S->o->cmd; *a; a++) {
			fputs(a == S->o->cmd ? "" : ", ", f);
			json_str(f, *a);
		}
		fputs("], ", f);
	}
	fprintf(f, "\"pid\": %d", (int)S->target);
	if (S->o->cmd && st->reaped && WIFEXITED(st->status))
		fprintf(f, ", \"exit_status\": %d", WEXITSTATUS(st->status));
	else if (S->o->cmd && st->reaped && WIFSIGNALED(st->status))
		fprintf(f, ", \"signal\": %d", WTERMSIG(st->status));
	fputs("},\n", f);
}

static void json_pages(FILE *f, const struct report *R, size_t top)
{
	size_t n = min_size(top, R->nr_pages);

	fprintf(f, "  \"pages\": {\"distinct\": %zu, \"rest_samples\": %" PRIu64
		", \"top\": [", R->nr_pages, rest_pages(R, n));
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s\n    {\"address\": \"0x%" PRIx64 "\", \"pid\": %d, "
			"\"samples\": %" PRIu64 ", \"mapping\": ", i ? "," : "",
			R->pages[i].page, (int)R->pages[i].pid, R->pages[i].samples);
		json_str(f, R->pages[i].mapping);
		fputc('}', f);
	}
	fputs("]},\n", f);
}

static void json_maps(FILE *f, const struct report *R, size_t top)
{
	size_t n = min_size(top, R->nr_maps);

	fprintf(f, "  \"mappings\": {\"distinct\": %zu, \"rest_samples\": %" PRIu64
		", \"top\": [", R->nr_maps, rest_maps(R, n));
	for (size_t i = 0; i < n; i++) {
		const struct map_row *m = &R->maps[i];

		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_str(f, m->name);
		fprintf(f, ", \"pid\": %d, \"start\": \"0x%" PRIx64 "\", \"end\": \"0x%"
			PRIx64 "\", \"anonymous\": %s, \"samples\": %" PRIu64
			", \"percent\": %.2f}", (int)m->pid, m->start, m->end,
			m->anon ? "true" : "false", m->samples, pct(m->samples, R->samples));
	}
	fputs("]},\n", f);
}

static void json_sites(FILE *f, const struct report *R, size_t top)
{
	size_t n = min_size(top, R->nr_sites);

	fprintf(f, "  \"code_sites\": {\"distinct\": %zu, \"rest_samples\": %" PRIu64
		", \"top\": [", R->nr_sites, rest_sites(R, n));
	for (size_t i = 0; i < n; i++) {
		const struct site_row *s = &R->sites[i];

		fprintf(f, "%s\n    {\"function\": ", i ? "," : "");
		json_str(f, s->func);
		fputs(", \"module\": ", f);
		json_str(f, s->module);
		fprintf(f, ", \"samples\": %" PRIu64 ", \"percent\": %.2f, \"source\": ",
			s->samples, pct(s->samples, R->samples));
		json_str(f, s->source);
		fputs(", \"caller\": ", f);
		if (s->caller_func) {
			fputs("{\"function\": ", f);
			json_str(f, s->caller_func);
			fputs(", \"module\": ", f);
			json_str(f, s->caller_module);
			fprintf(f, ", \"samples\": %" PRIu64 "}", s->caller_samples);
		} else {
			fputs("null", f);
		}
		fputc('}', f);
	}
	fputs("]}\n", f);
}

static void print_json(FILE *f, const struct sampler *S, const struct run_state *st,
		       const struct report *R)
{
	size_t top = S->o->top;

	fputs("{\n  \"tool\": \"" PROG "\",\n  \"version\": \"" VERSION "\",\n", f);
	json_target(f, S, st);
	fputs("  \"event\": ", f);
	json_str(f, S->o->ev->name);
	fprintf(f, ",\n  \"period\": %" PRIu64 ",\n  \"callchains\": %s,\n"
		"  \"user_only\": %s,\n  \"duration_s\": %.3f,\n  \"ended_by\": \"%s\",\n",
		(uint64_t)S->attr.sample_period, S->o->callchain ? "true" : "false",
		S->attr.exclude_kernel ? "true" : "false", S->t1 - S->t0,
		stop_names[st->why]);
	fprintf(f, "  \"samples\": %" PRIu64 ",\n  \"lost\": %" PRIu64 ",\n"
		"  \"throttled\": %" PRIu64 ",\n  \"unthrottled\": %" PRIu64 ",\n"
		"  \"malformed\": %" PRIu64 ",\n", S->counts.samples, total_lost(S),
		S->counts.throttled, S->counts.unthrottled,
		S->counts.malformed + S->sb.malformed);
	if (R->has_addr) {
		json_pages(f, R, top);
		json_maps(f, R, top);
	} else {
		fputs("  \"pages\": null,\n  \"mappings\": null,\n", f);
	}
	json_sites(f, R, top);
	fputs("}\n", f);
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [OPTIONS] [--] CMD [ARGS...]\n"
		"       " PROG " [OPTIONS] -p PID\n"
		"\n"
		"Sample where CMD, or the running process PID, touches memory, with\n"
		"perf events, following all its threads and children; then tell the\n"
		"number of samples, the hottest pages and mappings, and the code sites\n"
		"that caused them.\n"
		"\n"
		"  -e, --event EVENT     what to sample (default page-faults), one of:\n");
	for (size_t i = 0; i < NR_EVENTS; i++)
		fprintf(f, "                          %-13s %s\n", events[i].name, events[i].help);
	fprintf(f,
		"  -c, --period N        a sample every N events (default: per event;\n"
		"                        1 fault, 100000 ns of cpu-clock)\n"
		"  -g, --call-graph      record callchains, to tell the callers\n"
		"  -p, --pid PID         sample the running process PID until it exits\n"
		"  -d, --duration SECS   stop after SECS seconds (the command gets SIGTERM,\n"
		"                        and SIGKILL a second later)\n"
		"  -m, --mmap-pages N    ring buffer data pages per CPU, a power of two\n"
		"                        (default %d)\n"
		"  -n, --top N           rows per table (default %d)\n"
		"  -j, --json            the report as one JSON object\n"
		"  -o, --output FILE     write the report to FILE, not to stdout\n"
		"  -h, --help            print this help and exit\n"
		"  -V, --version         print the version and exit\n"
		"\n"
		"The exit status is CMD's when it ends by itself (128+N if signal N\n"
		"killed it), 0 when -d or SIGINT/SIGTERM ended the sampling, or with -p;\n"
		"1 if sampling failed, 2 for a usage error, 126 or 127 if CMD cannot be\n"
		"run.\n", DEFAULT_MMAP_PAGES, DEFAULT_TOP);
}

#define usage_error(...) htmm_usage_error(PROG, usage, __VA_ARGS__)

static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!isdigit((unsigned char)s[0]))
		return false;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static const struct event_def *find_event(const char *name)
{
	for (size_t i = 0; i < NR_EVENTS; i++) {
		if (!strcmp(events[i].name, name))
			return &events[i];
	}
	return NULL;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "period", required_argument, NULL, 'c' },
		{ "call-graph", no_argument, NULL, 'g' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "top", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool callchain = false;
	uint64_t v;
	char *end;
	int c;

	*o = (struct opts) {
		.ev = &events[0], .mmap_pages = DEFAULT_MMAP_PAGES, .top = DEFAULT_TOP,
	};
	/* "+": the first operand is the command; its options are its own. */
	while ((c = getopt_long(argc, argv, "+e:c:gp:d:m:n:jo:hV", lopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			o->ev = find_event(optarg);
			if (!o->ev)
				usage_error("--event: no event '%s' (see --help for the list)",
					    optarg);
			break;
		case 'c':
			if (!parse_u64(optarg, 1, INT64_MAX, &o->period))
				usage_error("--period: '%s' is not a period (an integer >= 1)",
					    optarg);
			break;
		case 'g':
			callchain = true;
			break;
		case 'p':
			if (!parse_u64(optarg, 1, INT_MAX, &v))
				usage_error("--pid: '%s' is not a process id (an integer >= 1)",
					    optarg);
			o->pid = v;
			break;
		case 'd':
			errno = 0;
			o->duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->duration > 0))
				usage_error("--duration: '%s' is not a number of seconds > 0",
					    optarg);
			break;
		case 'm':
			if (!parse_u64(optarg, 1, 1UL << 20, &v) || (v & (v - 1)))
				usage_error("--mmap-pages: '%s' is not a power of two of pages",
					    optarg);
			o->mmap_pages = v;
			break;
		case 'n':
			if (!parse_u64(optarg, 1, INT_MAX, &v))
				usage_error("--top: '%s' is not a number of rows (>= 1)", optarg);
			o->top = v;
			break;
		case 'j':
			o->json = true;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " " VERSION "\n");
			exit(0);
		default:
			/* getopt_long() has said what is wrong. */
			usage_error(NULL);
		}
	}
	if (o->pid && optind < argc)
		usage_error("--pid and a command do not go together");
	if (!o->pid && optind >= argc)
		usage_error("no command given, and no --pid");
	o->cmd = o->pid ? NULL : argv + optind;
	o->callchain = callchain || o->ev->callchain;
	if (!o->period)
		o->period = o->ev->period;
	if (o->ev->kind == EV_IBS_OP && o->period % IBS_PERIOD_UNIT)
		usage_error("--period: IBS counts by %d: %" PRIu64 " is not a multiple of it",
			    IBS_PERIOD_UNIT, o->period);
}

/* ------------------------------------------------------------------ */
/* Main                                                                */
/* ------------------------------------------------------------------ */

/* The soft limit of open files up to the hard one: an event per thread and CPU. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int setup(struct sampler *S, const struct opts *o)
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

static void teardown(struct sampler *S)
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

/* Write the report; 0, or -1 if it could not be written. */
static int write_report(struct sampler *S, const struct run_state *st, FILE *out)
{
	struct report R;
	int ret = 0;

	build_report(S, &R);
	/* Every sample is in every table once. */
	if (R.samples != S->counts.samples ||
	    (R.has_addr && rest_maps(&R, 0) != S->counts.samples))
		error("internal error: %" PRIu64 " samples read, %" PRIu64 " in the tables",
		      S->counts.samples, R.samples);
	if (S->o->json)
		print_json(out, S, st, &R);
	else
		print_text(out, S, st, &R);
	free_report(&R);
	if (fflush(out) || ferror(out)) {
		error("%s: %s", S->o->output ? S->o->output : "stdout", strerror(errno));
		ret = -1;
	}
	return ret;
}

/* The exit status of the run: see usage(). */
static int exit_status(const struct sampler *S, const struct run_state *st)
{
	if (!S->o->cmd || st->why != STOP_EXIT || !st->reaped)
		return 0;
	if (WIFEXITED(st->status))
		return WEXITSTATUS(st->status);
	if (WIFSIGNALED(st->status))
		return 128 + WTERMSIG(st->status);
	return 1;
}

int main(int argc, char **argv)
{
	struct run_state st = { .why = STOP_EXIT };
	struct sampler S;
	sigset_t origmask, waitmask;
	struct opts o;
	FILE *out = stdout;
	int ret;

	parse_args(argc, argv, &o);
	if (o.output) {
		out = fopen(o.output, "we");
		if (!out) {
			error("%s: %s", o.output, strerror(errno));
			return 1;
		}
	}
	if (setup(&S, &o)) {
		ret = 1;
		goto out;
	}
	setup_signals(&origmask, &waitmask);
	ret = o.cmd ? start_command(&S, &origmask) : attach_pid(&S, o.pid);
	if (ret)
		goto out;
	if (run(&S, &waitmask, &st)) {
		/* Sampling failed: the command is not left to run unsampled. */
		if (S.child && !st.reaped) {
			kill(S.child, SIGKILL);
			reap(S.child, &st.status);
		}
		ret = 1;
		goto out;
	}
	if (S.child && !st.reaped)
		reap(S.child, &st.status);
	finish(&S);
	ret = write_report(&S, &st, out) ? 1 : exit_status(&S, &st);
out:
	teardown(&S);
	free_vdso();
	htab_free(&unopened);
	free_strings();
	if (out != stdout && fclose(out) && !ret) {
		error("%s: %s", o.output, strerror(errno));
		ret = 1;
	}
	return ret;
}
