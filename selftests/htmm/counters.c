// SPDX-License-Identifier: GPL-2.0
/*
 * htmm's counters and tracepoints, read against what happened:
 *
 * - the samples perf throttled: the vmstat counter htmm_sample_throttled
 *   and the session's file throttled, with perf's sample rate at its
 *   lowest (kernel.perf_event_max_sample_rate = 1);
 * - the moves kmigraterd made: each htmm:htmm_migrate record, by direction,
 *   against the session's promoted, promote_failed, demoted and
 *   demote_failed and /proc/vmstat's htmm_promoted and htmm_demoted (all
 *   in pages);
 * - the reasons htmm gives migrate_pages(): migrate:mm_migrate_pages's
 *   reason=htmm_promote and reason=htmm_demote, and no other reason from
 *   kmigraterd;
 * - which pages moved: htmm:htmm_migrate names no page, so the
 *   migrate:remove_migration_pte records of kmigraterd (one for each page
 *   table entry set back after a move, with the new page's pfn) tell
 *   which addresses moved, and where to: every one in the buffer, each
 *   page's last record naming the page it maps now (/proc/self/pagemap),
 *   on the node move_pages(2) reports.
 *
 * Node 0 is the fast tier, node 1 the slow one.  Every setting a test
 * changes (sysctls, htmm's sysfs, tracefs) is put back by the fixture's
 * teardown, which runs after a failed assertion too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "htmm_test.h"
#include "tier_test.h"

#define PERF_RATE "/proc/sys/kernel/perf_event_max_sample_rate"
#define PERF_CPU "/proc/sys/kernel/perf_cpu_time_max_percent"

/*
 * The pfn of each page of [p, p + len) in @pfns, from /proc/self/pagemap
 * (0: not present; root sees the pfns).
 */
static int pfns_of(void *p, size_t len, unsigned long *pfns)
{
	size_t n = len / PAGE;
	uint64_t *e = calloc(n, sizeof(*e));
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0 || !e) {
		err = fd < 0 ? errno : ENOMEM;
		goto out;
	}
	if (pread(fd, e, n * sizeof(*e), (uintptr_t)p / PAGE * sizeof(*e)) !=
	    (ssize_t)(n * sizeof(*e))) {
		err = EIO;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		pfns[i] = (e[i] >> 63) ? e[i] & ((1ULL << 55) - 1) : 0;
out:
	if (fd >= 0)
		close(fd);
	free(e);
	return err;
}

/* The pfns [lo, hi) each node's zones span, from /proc/zoneinfo. */
struct span {
	unsigned long lo, hi;
};

#define NODES 2

static int node_spans(struct span *sp)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	unsigned long spanned = 0, start;
	char line[256];
	int node = -1, n;

	if (!f)
		return errno;
	for (n = 0; n < NODES; n++)
		sp[n].lo = sp[n].hi = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone", &n) == 1) {
			node = n;
			spanned = 0;
		} else if (sscanf(line, " spanned %lu", &start) == 1) {
			spanned = start;
		} else if (sscanf(line, " start_pfn: %lu", &start) == 1 &&
			   node >= 0 && node < NODES && spanned) {
			if (!sp[node].hi || start < sp[node].lo)
				sp[node].lo = start;
			if (start + spanned > sp[node].hi)
				sp[node].hi = start + spanned;
		}
	}
	fclose(f);
	return 0;
}

static int node_of_pfn(const struct span *sp, unsigned long pfn)
{
	for (int n = 0; n < NODES; n++)
		if (pfn >= sp[n].lo && pfn < sp[n].hi)
			return n;
	return -1;
}

/*
 * The pfn an x86-64 page table entry maps.  One without _PAGE_PRESENT
 * (PROT_NONE, as NUMA hints are) holds its pfn inverted (L1TF).
 */
static unsigned long pte_pfn(unsigned long pte)
{
	const unsigned long mask = 0x000ffffffffff000UL;

	return ((pte & 1) ? pte & mask : ~pte & mask) >> 12;
}

/* What the trace holds, as the tests judge it.  [0]: down, [1]: up. */
struct traced {
	/* The ring buffer kept every record written. */
	unsigned long entries, written;
	/* htmm:htmm_migrate */
	long moves[2];			/* records */
	long long pages[2];		/* pages isolated to move */
	long long moved[2];		/* pages moved */
	long other_pid;			/* records of another process */
	long wrong_nid;			/* to another node */
	/* migrate:mm_migrate_pages, by reason htmm_demote, htmm_promote */
	long calls[2];
	long long succeeded[2];
	long long failed[2];
	long kmd_other_reason;		/* kmigraterd's, another reason */
	long htmm_reason_elsewhere;	/* htmm's, not kmigraterd's */
	/* migrate:remove_migration_pte, kmigraterd's */
	long ptes;
	long ptes_to[NODES];		/* by the node of the pfn mapped */
	long ptes_nowhere;		/* a pfn on neither node */
	long ptes_outside;		/* an address outside the buffer */
	long ptes_large;		/* of a huge page */
	/* The pfn of each page of the buffer's last record, or 0. */
	unsigned long *last_pfn;
};

/* The pid of a trace line's task, "comm-pid" before its "[cpu]"; or -1. */
static pid_t line_pid(const char *line)
{
	const char *cpu = strstr(line, " [");
	const char *dash;

	if (!cpu)
		return -1;
	for (dash = cpu; dash > line && *dash != '-'; dash--)
		;
	return *dash == '-' ? atoi(dash + 1) : -1;
}

/*
 * Read @dir's trace into @tr: the records of process @pid's moves, and
 * kmigraterd's (@kmd's), against the buffer [buf, buf + len).  0 or an
 * errno.
 */
static int read_trace(const char *dir, pid_t pid, pid_t kmd,
		      const struct span *sp, const char *buf, size_t len,
		      struct traced *tr)
{
	unsigned long *last = tr->last_pfn;
	char path[128], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/trace", dir);
	f = fopen(path, "r");
	if (!f)
		return errno;
	memset(tr, 0, sizeof(*tr));
	tr->last_pfn = last;
	memset(last, 0, len / PAGE * sizeof(*last));
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		unsigned int moved;
		char dir_s[16];
		const char *p;
		int tpid, nid, order, up;

		if (sscanf(line, "# entries-in-buffer/entries-written: %lu/%lu",
			   &a, &b) == 2) {
			tr->entries = a;
			tr->written = b;
			continue;
		}
		if (line[0] == '#')
			continue;
		p = strstr(line, " htmm_migrate: ");
		if (p && sscanf(p, " htmm_migrate: pid=%d %15s nid=%d nr_pages=%lu nr_moved=%u",
				&tpid, dir_s, &nid, &a, &moved) == 5) {
			up = !strcmp(dir_s, "promote");
			if (tpid != pid) {
				tr->other_pid++;
				continue;
			}
			tr->moves[up]++;
			tr->pages[up] += a;
			tr->moved[up] += moved;
			if (nid != (up ? FAST : SLOW))
				tr->wrong_nid++;
			continue;
		}
		p = strstr(line, " mm_migrate_pages: ");
		if (p && sscanf(p, " mm_migrate_pages: nr_succeeded=%lu nr_failed=%lu",
				&a, &b) == 2) {
			const char *r = strstr(p, " reason=");
			bool kmd_line = line_pid(line) == kmd;

			if (!r)
				continue;
			if (!strncmp(r, " reason=htmm_", 13)) {
				up = !strncmp(r, " reason=htmm_promote", 20);
				if (!kmd_line) {
					tr->htmm_reason_elsewhere++;
					continue;
				}
				tr->calls[up]++;
				tr->succeeded[up] += a;
				tr->failed[up] += b;
			} else if (kmd_line) {
				tr->kmd_other_reason++;
			}
			continue;
		}
		p = strstr(line, " remove_migration_pte: ");
		if (p && line_pid(line) == kmd &&
		    sscanf(p, " remove_migration_pte: addr=%lx, pte=%lx order=%d",
			   &a, &b, &order) == 3) {
			unsigned long pfn = pte_pfn(b);

			tr->ptes++;
			nid = node_of_pfn(sp, pfn);
			if (nid < 0)
				tr->ptes_nowhere++;
			else
				tr->ptes_to[nid]++;
			if (order)
				tr->ptes_large++;
			if (a < (uintptr_t)buf || a >= (uintptr_t)buf + len) {
				tr->ptes_outside++;
				continue;
			}
			last[(a - (uintptr_t)buf) / PAGE] = pfn;
		}
	}
	fclose(f);
	return 0;
}

/* A session's moves, from its sysfs files; -1 in each once it is gone. */
struct moves {
	long long promoted, promote_failed, demoted, demote_failed;
};

static void session_moves(pid_t pid, struct moves *m)
{
	m->promoted = session_ll(pid, "promoted");
	m->promote_failed = session_ll(pid, "promote_failed");
	m->demoted = session_ll(pid, "demoted");
	m->demote_failed = session_ll(pid, "demote_failed");
}

/* Whether the htmm_migrate records add up to @m, in both directions. */
static bool traced_matches(const struct traced *tr, const struct moves *m)
{
	return tr->moved[1] == m->promoted &&
	       tr->pages[1] == m->promoted + m->promote_failed &&
	       tr->moved[0] == m->demoted &&
	       tr->pages[0] == m->demoted + m->demote_failed;
}

/* A setting a test changed, with the value to put back. */
struct saved {
	char path[160];
	char value[64];
};

#define MAX_SAVED 16

FIXTURE(counters) {
	struct saved saved[MAX_SAVED];
	int nr_saved;
	char tracing[64];	/* tracefs, once a test enabled events */
	bool mounted;		/* the test mounted it */
};

/*
 * What to write back of the value @v a file read: the choice in force of
 * a list ("[adaptive] fixed"), the size in force of tracefs's
 * buffer_size_kb ("7 (expanded: 1408)" until the ring buffer is first
 * used), else the value itself.
 */
static void restorable(char *v)
{
	char *p = strchr(v, '['), *q = strstr(v, "(expanded: ");

	if (p)
		p++;
	else if (q)
		p = q + strlen("(expanded: ");
	else
		return;
	memmove(v, p, strlen(p) + 1);
	v[strcspn(v, "])")] = '\0';
}

/*
 * Set @path to @value, after saving what it held for the teardown (once
 * per path: the first value is the one to put back).  0 or an errno.
 */
static int set(FIXTURE_DATA(counters) *self, const char *path,
	       const char *value)
{
	struct saved *s = NULL;
	int i, err;

	for (i = 0; i < self->nr_saved; i++)
		if (!strcmp(self->saved[i].path, path))
			s = &self->saved[i];
	if (!s) {
		if (self->nr_saved == MAX_SAVED)
			return ENOSPC;
		s = &self->saved[self->nr_saved];
		snprintf(s->path, sizeof(s->path), "%s", path);
		err = read_file(path, s->value, sizeof(s->value));
		if (err)
			return err;
		restorable(s->value);
		self->nr_saved++;
	}
	return write_file(path, value);
}

FIXTURE_SETUP(counters)
{
	self->nr_saved = 0;
	self->tracing[0] = '\0';
	self->mounted = false;
	if (!have_tiers())
		SKIP(return, "needs node 1 (a slow tier) and htmm");
}

/*
 * Run once, in the parent of the test's process (the settings go back even
 * when the test died of a signal) or, after a failed ASSERT, in the test's
 * process itself: its longjmp() back into the harness's wrapper loses the
 * child variable set after setjmp(), which then reads as the parent's (a
 * FIXTURE_TEARDOWN() is skipped there).
 */
FIXTURE_TEARDOWN_PARENT(counters)
{
	char path[128];
	int fd;

	sys_htmm_end(0);
	/*
	 * In reverse: perf's rate can be written back only while perf's
	 * cpu limit, put back after it, still allows it.
	 */
	while (self->nr_saved--)
		write_file(self->saved[self->nr_saved].path,
			   self->saved[self->nr_saved].value);
	if (self->tracing[0]) {
		/* Events off (above): leave the buffer empty. */
		snprintf(path, sizeof(path), "%s/trace", self->tracing);
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		if (self->mounted)
			umount(self->tracing);
	}
}

/*
 * Where tracefs is: /sys/kernel/tracing, mounted there if it is not (the
 * test's teardown unmounts it then), or under debugfs.  0 or an errno.
 */
static int find_tracing(FIXTURE_DATA(counters) *self)
{
	const char *const dirs[] = { "/sys/kernel/tracing",
				     "/sys/kernel/debug/tracing" };
	char path[96];

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/events", dirs[i]);
		if (!access(path, F_OK)) {
			snprintf(self->tracing, sizeof(self->tracing), "%s",
				 dirs[i]);
			return 0;
		}
		if (!i && !mount("tracefs", dirs[0], "tracefs", 0, NULL)) {
			self->mounted = true;
			snprintf(self->tracing, sizeof(self->tracing), "%s",
				 dirs[0]);
			if (!access(path, F_OK))
				return 0;
			umount(dirs[0]);
			self->mounted = false;
			self->tracing[0] = '\0';
		}
	}
	return ENOENT;
}

/* Enable @event ("system/name") of tracefs; 0 or an errno. */
static int enable_event(FIXTURE_DATA(counters) *self, const char *event)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/events/%s/enable", self->tracing,
		 event);
	return set(self, path, "1");
}

/* Empty the trace: an open with O_TRUNC does. */
static int clear_trace(const char *dir)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/trace", dir);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/*
 * Trace htmm's moves: htmm:htmm_migrate, and migrate:mm_migrate_pages and
 * migrate:remove_migration_pte for the reasons and the pages; a buffer of
 * 8 MiB a cpu holds the thousands of records of the tests' buffers.
 */
static int trace_moves(FIXTURE_DATA(counters) *self)
{
	char path[128];
	int err;

	snprintf(path, sizeof(path), "%s/buffer_size_kb", self->tracing);
	err = set(self, path, "8192");
	if (!err) {
		snprintf(path, sizeof(path), "%s/tracing_on", self->tracing);
		err = set(self, path, "1");
	}
	/*
	 * By default an open of trace for reading stops the writing of
	 * records until it is closed: those of moves made meanwhile would be
	 * lost, and the tests read the trace while kmigraterd may move.
	 */
	snprintf(path, sizeof(path), "%s/options/pause-on-trace",
		 self->tracing);
	if (!err && !access(path, F_OK))
		err = set(self, path, "0");
	if (!err)
		err = enable_event(self, "htmm/htmm_migrate");
	if (!err)
		err = enable_event(self, "migrate/mm_migrate_pages");
	if (!err)
		err = enable_event(self, "migrate/remove_migration_pte");
	if (!err)
		err = clear_trace(self->tracing);
	return err;
}

/*
 * The tunables of the tests that move pages, as tiering.c sets them: a
 * fifth of a cpu for ksamplingd, and on the debug kernel a page sampled
 * once is hot (there a hint fault costs half a millisecond, and the
 * adaptive threshold takes minutes to tell anything).
 */
static int tune_for_moves(FIXTURE_DATA(counters) *self)
{
	int err = set(self, HTMM_SYSFS "/cpu_quota", "200");

	if (err || !debug_kernel())
		return err;
	err = set(self, HTMM_SYSFS "/hot_threshold", "1");
	if (!err)
		err = set(self, HTMM_SYSFS "/hot_threshold_mode", "fixed");
	return err;
}

/* Log what the session of this process did. */
static void log_session(struct __test_metadata *_metadata)
{
	pid_t pid = getpid();

	TH_LOG("session: %lld samples (%lld throttled, %lld lost), %lld promoted (%lld failed), %lld demoted (%lld failed), %lld skipped",
	       session_ll(pid, "sampled"), session_ll(pid, "throttled"),
	       session_ll(pid, "lost"), session_ll(pid, "promoted"),
	       session_ll(pid, "promote_failed"), session_ll(pid, "demoted"),
	       session_ll(pid, "demote_failed"), session_ll(pid, "skipped"));
}

static void log_traced(struct __test_metadata *_metadata,
		       const struct traced *tr)
{
	TH_LOG("htmm_migrate: %ld up (%lld of %lld pages moved), %ld down (%lld of %lld); mm_migrate_pages: htmm_promote %ld calls (%lld moved, %lld failed), htmm_demote %ld (%lld, %lld); remove_migration_pte: %ld by kmigraterd, %ld to node 0, %ld to node 1, %ld outside the buffer; trace %lu of %lu records",
	       tr->moves[1], tr->moved[1], tr->pages[1], tr->moves[0],
	       tr->moved[0], tr->pages[0], tr->calls[1], tr->succeeded[1],
	       tr->failed[1], tr->calls[0], tr->succeeded[0], tr->failed[0],
	       tr->ptes, tr->ptes_to[FAST], tr->ptes_to[SLOW],
	       tr->ptes_outside, tr->entries, tr->written);
}

/*
 * Wait, the process's pages no longer touched, for the session's counts of
 * moves to hold still and the htmm_migrate records to add up to them (the
 * counts and the trace are read one after the other, while kmigraterd may
 * still move a batch).  The counts, in @m, as the trace (@tr) last read
 * them.
 */
static void wait_settled(const char *dir, pid_t kmd, const struct span *sp,
			 const char *buf, size_t len, struct traced *tr,
			 struct moves *m)
{
	double start = now_s();
	struct moves again;

	for (;;) {
		session_moves(getpid(), m);
		read_trace(dir, getpid(), kmd, sp, buf, len, tr);
		session_moves(getpid(), &again);
		if ((!memcmp(m, &again, sizeof(*m)) && traced_matches(tr, m)) ||
		    now_s() - start > patience(30))
			return;
		usleep(100000);
	}
}

/*
 * After the session ended, the moves of /proc/vmstat since @v0
 * (htmm_demoted, htmm_promoted), in @vm, and the trace, in @tr, read once:
 * kmigraterd counts and records each batch under the session's move lock,
 * which htmm_end() waits for, so that both are whole when it returns.
 */
static void read_ended(const char *dir, pid_t kmd, const struct span *sp,
		       const char *buf, size_t len, const long long *v0,
		       struct traced *tr, long long *vm)
{
	vm[0] = vmstat("htmm_demoted") - v0[0];
	vm[1] = vmstat("htmm_promoted") - v0[1];
	read_trace(dir, getpid(), kmd, sp, buf, len, tr);
}

/*
 * The buffer's pages that the trace and the page tables disagree on: a
 * page whose last remove_migration_pte record names another pfn than it
 * has, or one with no record that is not where it started (@from).
 */
static long disagreements(struct __test_metadata *_metadata, char *buf,
			  size_t len, int from, const struct traced *tr)
{
	size_t n = len / PAGE;
	unsigned long *pfns = calloc(n, sizeof(*pfns));
	int *nodes = calloc(n, sizeof(*nodes));
	long bad = 0, shown = 0;

	if (!pfns || !nodes || pfns_of(buf, len, pfns) ||
	    pid_page_nodes(0, buf, len, nodes)) {
		free(pfns);
		free(nodes);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		bool ok = tr->last_pfn[i] ? tr->last_pfn[i] == pfns[i] :
					    nodes[i] == from;

		if (ok)
			continue;
		if (shown++ < 4)
			TH_LOG("page %zu: on node %d, pfn %#lx; its last record: pfn %#lx",
			       i, nodes[i], pfns[i], tr->last_pfn[i]);
		bad++;
	}
	free(pfns);
	free(nodes);
	return bad;
}

/*
 * Throttling: with perf's sample rate at its lowest, 1 a second (one
 * sample per event per tick), perf throttles a sampling event at its
 * first overflow in a tick that it accounts as an interrupt, and writes a
 * PERF_RECORD_THROTTLE into the event's buffer; ksamplingd counts those in
 * the session's throttled and in htmm_sample_throttled.
 *
 * Which events perf throttles depends on the source.  PEBS's and IBS's
 * (hardware: overflow interrupts) are: there both counters must rise, by
 * the same records.  The hint-fault source's (the guest's: QEMU has no
 * sampling PMU) are software page-fault events of period 1, and perf
 * never throttles those: perf_swevent_overflow() accounts the first
 * overflow of each event with throttle = 0, and a page fault overflows
 * once.  There, however many samples, neither counter may move: a count
 * there would be records that perf did not write, and it would double the
 * session's period for nothing (htmm_next_period()).
 */
TEST_F_TIMEOUT(counters, throttled_samples_are_counted, 600)
{
	const size_t len = 32 * MB;
	const long long want = 4096;
	long long thr0 = vmstat("htmm_sample_throttled");
	long long sampled = 0, throttled, vm;
	char pct[16] = "", source[32] = "", rate[32] = "";
	char path[128];
	double start;
	char *buf;

	ASSERT_LE(0, thr0) TH_LOG("no htmm_sample_throttled in /proc/vmstat");
	ASSERT_EQ(0, sessions_left(30));
	/*
	 * The rate can be set only while perf limits its cpu time (not 0,
	 * not 100%): then 25%, its default, for the test.
	 */
	ASSERT_EQ(0, read_file(PERF_CPU, pct, sizeof(pct)));
	if (atoi(pct) == 0 || atoi(pct) == 100) {
		ASSERT_EQ(0, set(self, PERF_CPU, "25"));
	}
	ASSERT_EQ(0, set(self, PERF_RATE, "1"));
	/* Densest sampling, and the cpu for it: many samples, quickly. */
	ASSERT_EQ(0, set(self, HTMM_SYSFS "/sample_period_max", "1"));
	ASSERT_EQ(0, set(self, HTMM_SYSFS "/cpu_quota", "200"));
	buf = buffer_on(len, SLOW, MADV_NOHUGEPAGE);
	ASSERT_NE(NULL, buf);

	ASSERT_EQ(0, sys_htmm_start(0, FAST));
	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%d/source",
		 getpid());
	ASSERT_EQ(0, read_file(path, source, sizeof(source)));
	start = now_s();
	while (sampled < want && now_s() - start < patience(60)) {
		double t = now_s();

		while (now_s() - t < 0.2)
			read_pages(buf, len);
		sampled = session_ll(getpid(), "sampled");
		ASSERT_LE(0, sampled);
	}
	/* The session's first: each record counts in both at once. */
	throttled = session_ll(getpid(), "throttled");
	vm = vmstat("htmm_sample_throttled") - thr0;
	read_file(PERF_RATE, rate, sizeof(rate));
	log_session(_metadata);
	TH_LOG("source %s, perf_event_max_sample_rate %s: %lld samples in %.1f s; throttled %lld, htmm_sample_throttled +%lld",
	       source, rate, sampled, now_s() - start, throttled, vm);
	ASSERT_EQ(0, sys_htmm_end(0));
	ASSERT_GE(sampled, want) TH_LOG("too few samples to judge");
	/* The rate held: perf lowers it on its own, never raises it. */
	ASSERT_EQ(1, atoi(rate));
	if (!strcmp(source, "hint-fault")) {
		EXPECT_EQ(0, throttled);
		EXPECT_EQ(0, vm);
	} else {
		EXPECT_LT(0, throttled);
		EXPECT_GE(vm, throttled);
	}
	ASSERT_EQ(-1, check(buf, len, (uintptr_t)buf));
}

/*
 * An 8 MiB buffer on the slow node, read over and over, goes up; every
 * move is in the trace: the htmm_migrate records of promotions add up to
 * the session's promoted and promote_failed and to htmm_promoted, each to
 * node 0; migrate_pages() was called with reason htmm_promote for as many
 * pages; and kmigraterd's remove_migration_pte records are of the
 * buffer's pages, each page's last one the page it maps now, as many on
 * node 0 as were promoted.
 */
TEST_F_TIMEOUT(counters, promotions_are_traced, 600)
{
	const size_t len = 8 * MB, npages = len / PAGE;
	pid_t kmd = kthread_pid("kmigraterd");
	struct traced tr = { 0 }, settled;
	long long v0[2], vm[2];
	struct span sp[NODES];
	struct moves m;
	double start;
	char *buf;
	long on = 0, bad;

	if (find_tracing(self))
		SKIP(return, "no tracefs");
	ASSERT_LT(0, kmd);
	ASSERT_EQ(0, node_spans(sp));
	ASSERT_LT(sp[SLOW].lo, sp[SLOW].hi);
	ASSERT_EQ(0, sessions_left(30));
	tr.last_pfn = calloc(npages, sizeof(*tr.last_pfn));
	ASSERT_NE(NULL, tr.last_pfn);
	ASSERT_EQ(0, tune_for_moves(self));
	buf = buffer_on(len, SLOW, MADV_NOHUGEPAGE);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ((long)npages, pages_on(buf, len, SLOW, NULL));

	ASSERT_EQ(0, trace_moves(self));
	v0[0] = vmstat("htmm_demoted");
	v0[1] = vmstat("htmm_promoted");
	ASSERT_LE(0, v0[0]);
	ASSERT_LE(0, v0[1]);
	ASSERT_EQ(0, sys_htmm_start(0, FAST));
	start = now_s();
	while (now_s() - start < patience(60)) {
		double t = now_s();

		while (now_s() - t < 0.5)
			read_pages(buf, len);
		on = pages_on(buf, len, FAST, NULL);
		ASSERT_LE(0, on);
		if (on * 10 >= (long)npages * 9)
			break;
	}
	TH_LOG("%ld of %zu pages on node 0 after %.1f s", on, npages,
	       now_s() - start);
	/* The pages are left alone now: kmigraterd has nothing more. */
	wait_settled(self->tracing, kmd, sp, buf, len, &tr, &m);
	/*
	 * The session's counts against the trace read with them: pages of
	 * the process outside the buffer may still move before the end.
	 */
	settled = tr;
	log_session(_metadata);
	log_traced(_metadata, &tr);
	ASSERT_EQ(0, sys_htmm_end(0));
	read_ended(self->tracing, kmd, sp, buf, len, v0, &tr, vm);
	TH_LOG("htmm_promoted +%lld, htmm_demoted +%lld", vm[1], vm[0]);

	ASSERT_GE(on * 10, (long)npages * 9) TH_LOG("the buffer never went up");
	/* Nothing was overwritten: the sums below are of every record. */
	ASSERT_EQ(tr.written, tr.entries);
	/* htmm:htmm_migrate, against the session's counts... */
	EXPECT_LT(0, tr.moves[1]);
	EXPECT_EQ(m.promoted, settled.moved[1]);
	EXPECT_EQ(m.promoted + m.promote_failed, settled.pages[1]);
	EXPECT_EQ(m.demoted, settled.moved[0]);
	EXPECT_EQ(m.demoted + m.demote_failed, settled.pages[0]);
	/* ... against /proc/vmstat, after the session's end... */
	EXPECT_EQ(vm[1], tr.moved[1]);
	EXPECT_EQ(vm[0], tr.moved[0]);
	/* ... naming this process, up to node 0 and down to node 1. */
	EXPECT_EQ(0, tr.other_pid);
	EXPECT_EQ(0, tr.wrong_nid);
	/* The buffer's pages went up: at least 90% of them were moved. */
	EXPECT_GE(tr.moved[1] * 10, (long long)npages * 9);

	/* migrate:mm_migrate_pages: the reason, and as many pages. */
	EXPECT_LT(0, tr.calls[1]);
	EXPECT_EQ(tr.moved[1], tr.succeeded[1]);
	EXPECT_EQ(tr.moved[0], tr.succeeded[0]);
	EXPECT_EQ(0, tr.kmd_other_reason);
	EXPECT_EQ(0, tr.htmm_reason_elsewhere);

	/*
	 * migrate:remove_migration_pte: the buffer's pages alone (the
	 * process has no other page on node 1), small, each on a node.  A
	 * page that moved is mapped again at its new pfn; one whose move
	 * failed after it was unmapped, at its old one: those on node 0 are
	 * the promoted pages and the failed demotions.
	 */
	EXPECT_EQ(0, tr.ptes_outside);
	EXPECT_EQ(0, tr.ptes_large);
	EXPECT_EQ(0, tr.ptes_nowhere);
	EXPECT_LE(tr.moved[1], tr.ptes_to[FAST]);
	EXPECT_LE(tr.ptes_to[FAST], tr.moved[1] +
		  (tr.pages[0] - tr.moved[0]));
	EXPECT_LE(tr.moved[0], tr.ptes_to[SLOW]);
	EXPECT_LE(tr.ptes_to[SLOW], tr.moved[0] +
		  (tr.pages[1] - tr.moved[1]));
	bad = disagreements(_metadata, buf, len, SLOW, &tr);
	EXPECT_EQ(0, bad);
	ASSERT_EQ(-1, check(buf, len, (uintptr_t)buf));
	free(tr.last_pfn);
}

/*
 * A 32 MiB buffer on the fast node, untouched, with a fast-tier budget of
 * 8 MiB: its pages go down until the session fits, and every move is in
 * the trace as above, down to node 1, with reason htmm_demote.  The
 * process's other cold pages (its data, its stack) may go down too: their
 * remove_migration_pte records are outside the buffer, and counted.
 */
TEST_F_TIMEOUT(counters, demotions_are_traced, 600)
{
	const size_t len = 32 * MB, npages = len / PAGE, budget = 8 * MB;
	pid_t kmd = kthread_pid("kmigraterd");
	struct traced tr = { 0 }, settled;
	long long v0[2], vm[2];
	struct span sp[NODES];
	long fast = npages, bad;
	struct moves m;
	double start;
	char *buf;

	if (find_tracing(self))
		SKIP(return, "no tracefs");
	ASSERT_LT(0, kmd);
	ASSERT_EQ(0, node_spans(sp));
	ASSERT_LT(sp[FAST].lo, sp[FAST].hi);
	ASSERT_EQ(0, sessions_left(30));
	tr.last_pfn = calloc(npages, sizeof(*tr.last_pfn));
	ASSERT_NE(NULL, tr.last_pfn);
	ASSERT_EQ(0, tune_for_moves(self));
	buf = buffer_on(len, FAST, MADV_NOHUGEPAGE);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ((long)npages, pages_on(buf, len, FAST, NULL));
	ASSERT_EQ(0, set(self, HTMM_SYSFS "/fast_budget_mb", "8"));

	ASSERT_EQ(0, trace_moves(self));
	v0[0] = vmstat("htmm_demoted");
	v0[1] = vmstat("htmm_promoted");
	ASSERT_LE(0, v0[0]);
	ASSERT_LE(0, v0[1]);
	ASSERT_EQ(0, sys_htmm_start(0, FAST));
	start = now_s();
	while (fast * PAGE > budget && now_s() - start < patience(60)) {
		usleep(100000);
		fast = pages_on(buf, len, FAST, NULL);
		ASSERT_LE(0, fast);
	}
	TH_LOG("%ld of %zu pages on node 0 after %.1f s (budget %zu)", fast,
	       npages, now_s() - start, budget / PAGE);
	wait_settled(self->tracing, kmd, sp, buf, len, &tr, &m);
	/*
	 * The session's counts against the trace read with them: pages of
	 * the process outside the buffer may still move before the end.
	 */
	settled = tr;
	log_session(_metadata);
	log_traced(_metadata, &tr);
	ASSERT_EQ(0, sys_htmm_end(0));
	read_ended(self->tracing, kmd, sp, buf, len, v0, &tr, vm);
	TH_LOG("htmm_promoted +%lld, htmm_demoted +%lld", vm[1], vm[0]);

	ASSERT_GE(budget, fast * PAGE)
		TH_LOG("the buffer never fit the budget");
	ASSERT_EQ(tr.written, tr.entries);
	/* htmm:htmm_migrate, against the session and /proc/vmstat. */
	EXPECT_LT(0, tr.moves[0]);
	EXPECT_EQ(m.demoted, settled.moved[0]);
	EXPECT_EQ(m.demoted + m.demote_failed, settled.pages[0]);
	EXPECT_EQ(m.promoted, settled.moved[1]);
	EXPECT_EQ(m.promoted + m.promote_failed, settled.pages[1]);
	EXPECT_EQ(vm[0], tr.moved[0]);
	EXPECT_EQ(vm[1], tr.moved[1]);
	EXPECT_EQ(0, tr.other_pid);
	EXPECT_EQ(0, tr.wrong_nid);
	/* At least the buffer's pages over the budget went down. */
	EXPECT_GE(tr.moved[0], (long long)((len - budget) / PAGE));

	/* migrate:mm_migrate_pages: reason htmm_demote. */
	EXPECT_LT(0, tr.calls[0]);
	EXPECT_EQ(tr.moved[0], tr.succeeded[0]);
	EXPECT_EQ(tr.moved[1], tr.succeeded[1]);
	EXPECT_EQ(0, tr.kmd_other_reason);
	EXPECT_EQ(0, tr.htmm_reason_elsewhere);

	/*
	 * migrate:remove_migration_pte: down to node 1 as many as were
	 * demoted (and the failed promotions); the buffer's pages on node 1
	 * are those whose last record says so.
	 */
	EXPECT_EQ(0, tr.ptes_large);
	EXPECT_EQ(0, tr.ptes_nowhere);
	EXPECT_LE(tr.moved[0], tr.ptes_to[SLOW]);
	EXPECT_LE(tr.ptes_to[SLOW], tr.moved[0] +
		  (tr.pages[1] - tr.moved[1]));
	EXPECT_LE(tr.moved[1], tr.ptes_to[FAST]);
	EXPECT_LE(tr.ptes_to[FAST], tr.moved[1] +
		  (tr.pages[0] - tr.moved[0]));
	bad = disagreements(_metadata, buf, len, FAST, &tr);
	EXPECT_EQ(0, bad);
	ASSERT_EQ(-1, check(buf, len, (uintptr_t)buf));
	free(tr.last_pfn);
}

TEST_HARNESS_MAIN
