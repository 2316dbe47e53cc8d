// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: the events.  The table of those -e knows, with their
 * periods and sample fields; the attr of the one sampled (the PMU's part
 * is pmu.c's); opening it per thread and CPU, the first event of a CPU
 * with its ring, the others redirected into it; and what to say when the
 * kernel refuses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "events.h"
#include "perf_rb.h"
#include "pmu.h"
#include "sampler.h"
#include "util.h"

/* Callchain entries: a context marker, the IP, the caller, a few more. */
#define MAX_STACK		8
/* Wake up when a ring is this share full. */
#define WAKEUP_SHARE		4
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

const struct event_def event_defs[] = {
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
const size_t nr_event_defs = sizeof(event_defs) / sizeof(event_defs[0]);

/* The attr of every event opened. */
int setup_attr(struct sampler *S)
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
void open_error(const struct sampler *S, pid_t tid, int cpu, int err)
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
int open_thread(struct sampler *S, pid_t tid, int *cpu)
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

void close_events(struct sampler *S)
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

int ioctl_all(struct sampler *S, unsigned long req, const char *what)
{
	for (size_t i = 0; i < S->nr_fds; i++) {
		if (ioctl(S->fds[i], req, 0)) {
			error("%s: %s", what, strerror(errno));
			return -1;
		}
	}
	return 0;
}
