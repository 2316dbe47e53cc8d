// SPDX-License-Identifier: GPL-2.0
/*
 * slowtier: a QEMU TCG plugin that makes the guest's slow memory tier slow.
 *
 * Under TCG every guest-physical address costs the same, whatever HMAT
 * tells the guest.  This plugin sees every load and store of the guest,
 * classifies it by physical address into the fast node (node 0), the slow
 * node (node 1) or other memory, passes it through a model of a last-level
 * cache, and adds a latency to each miss to the slow node by holding the
 * vCPU's thread.  It counts accesses and misses per node and writes them
 * once a second, and measures windows that the guest opens and closes
 * itself with a marker instruction (slowtier-ctl in the guest).
 *
 * Arguments (-plugin slowtier.so,KEY=VALUE,...):
 *
 *   fast=START-END[@GPA]  a range of node 0, half-open, hex or decimal;
 *   slow=START-END[@GPA]  one of node 1; both repeatable.  START-END are
 *                         addresses as qemu_plugin_hwaddr_phys_addr()
 *                         reports them; @GPA is the guest-physical address
 *                         of START when that differs (QEMU before 8.2, see
 *                         qemu/host/boot.sh), used only to name hot pages
 *   llc=SIZE              the cache model's size, K/M/G suffixes (8M)
 *   ways=N                its associativity (16); lines are 64 bytes
 *   latency=NS            added per miss to node 1 (DEFAULT_LATENCY_NS)
 *   out=FILE              the output file (slowtier.csv)
 *   hot=N                 at exit, list the N pages with the most misses (0)
 *
 * The output file: lines that start with '#' are comments.  First the
 * configuration ("# slowtier ..."), then a CSV header and one row per
 * second of host time, each counting that second only:
 *
 *   t_s,accesses,miss_fast,miss_slow,miss_other,star_pct,delay_ms,latency_ns
 *
 * accesses are the loads and stores to RAM (MMIO is left out), miss_* the
 * cache model's misses per node, star_pct = 100 * miss_slow / (miss_fast +
 * miss_slow) the share of the accesses that reached memory that went to
 * the slow tier,
 * delay_ms the time added, latency_ns the added latency then in force.
 * A window's counts go to a line "# window id=...", and at exit a line
 * "# summary ..." and the "# hot pfn=..." lines follow.  Both also give
 * user_star_pct, star_pct of the misses at user addresses only: the
 * programs' own accesses, without the kernel's (its threads and page
 * tables, a migration's copy), which a window's user_miss_fast and
 * user_miss_slow count.
 *
 * Control from the guest: the 8-byte no-op 0F 1F 84 00 YY XX 54 53, that is
 * nopl 0x5354XXYY(%rax,%rax,1), runs command XX with argument YY when the
 * guest executes it: 1 begins window YY, 2 ends it, 3 turns the added
 * latency off, 4 back on at the configured value.  Without the plugin it
 * does nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qemu-plugin-api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/*
 * The default added latency per miss to node 1.  The guest's HMAT says
 * node 0 answers in 80 ns and node 1 in 250 ns, so a dependent load that
 * misses on node 1 should take 250/80 = 3.1 times as long as one on node 0:
 * node 1 needs 2.125 times node 0's time per miss added.  Under TCG a miss
 * costs what QEMU's soft TLB and the host's memory cost.  Measured in the
 * guest with slowtier-ctl chase (64 MiB, 2M loads, every one a miss of the
 * cache model; qemu/guest/slowtier-test.sh, the fastest of 3 rounds) on the
 * project's build machine (2 cores, QEMU 7.2 TCG): a load on node 0 took
 * 187 to 197 ns with this plugin loaded at latency 0 when the host was
 * quietest (160 to 172 ns without the plugin), so 2.125 * 190 = 404
 * ns.  With 400, six runs of make test's check took 165 to 207 ns per load
 * on node 0 (190 or more in five) and 606 to 654 on node 1: 3.1 to 3.7
 * times (node 0's time moves with the host's other work, the 400 ns added
 * do not).  The guest loses
 * 6 to 12% more than the 400 ns the plugin holds it for (side effects of
 * the spin on the host, which it cannot time).  The figure depends on the
 * host: measure again on another (make test prints the times).
 */
#define DEFAULT_LATENCY_NS	400

#define DEFAULT_LLC		(8u << 20)
#define DEFAULT_WAYS		16
#define LINE_SHIFT		6
#define PAGE_SHIFT		12
#define MAX_RANGES		16
#define MAX_WINDOWS		256
/* The latency owed by a vCPU is paid once it reaches this much. */
#define DEBT_NS			1000

/* The markers of the control no-op, around XX (command) and YY (argument). */
static const uint8_t CTL_HEAD[4] = { 0x0f, 0x1f, 0x84, 0x00 };
static const uint8_t CTL_TAIL[2] = { 0x54, 0x53 };

enum ctl_cmd { CTL_BEGIN = 1, CTL_END, CTL_FAST, CTL_SLOW };

enum node { NODE_FAST, NODE_SLOW, NODE_OTHER, NR_NODES };

struct range {
	uint64_t start, end;	/* half-open, as the plugin API reports */
	uint64_t gpa;		/* the guest-physical address of start */
	enum node node;
	size_t first_page;	/* its first entry in page_misses[] */
};

/* What is counted, per vCPU or summed over them. */
struct counters {
	uint64_t accesses;
	uint64_t miss[NR_NODES];
	/* The misses at user addresses: the programs', not the kernel's. */
	uint64_t user_miss[NR_NODES];
	uint64_t delay_ns;
};

/*
 * The state of a vCPU.  Only the vCPU's own thread runs its callbacks, so
 * nothing here takes a lock; the counters are also read, relaxed, by the
 * reporter thread and by window commands run on other vCPUs.
 *
 * The cache model is per vCPU: it models a private last-level cache per
 * core, so cores do not see each other's lines (no coherence, no sharing).
 * Each set keeps its lines' numbers most recently used first (LRU);
 * EMPTY marks a way not yet filled.  Loads and stores are alike (a store
 * allocates its line) and write-backs are not modeled: only misses reach
 * memory.  An access counts at the line of its first byte.
 */
struct vcpu {
	struct counters c;
	int64_t debt_ns;	/* latency owed; below 0, paid in advance */
	uint64_t last_line;	/* the last line touched: the MRU of its set */
	uint64_t *tags;		/* sets * ways */
} __attribute__((aligned(64)));

#define EMPTY	UINT64_MAX

struct window {
	bool open;
	uint64_t t0_ns;
	struct counters start;
};

static struct {
	struct range ranges[MAX_RANGES];
	int nranges;
	uint64_t llc;
	unsigned int ways;
	uint64_t sets;
	bool sets_pow2;		/* then a mask finds the set */
	uint64_t latency_ns;
	unsigned int hot;
	const char *out;
} cfg = {
	.llc = DEFAULT_LLC,
	.ways = DEFAULT_WAYS,
	.latency_ns = DEFAULT_LATENCY_NS,
	.out = "slowtier.csv",
};

static struct vcpu *vcpus;
static unsigned int nvcpus;
/* The latency in force: cfg.latency_ns, or 0 after a "fast" command. */
static uint64_t cur_latency_ns;
/* Misses per page of the ranges, when hot pages are asked for. */
static uint64_t *page_misses;
static size_t npages;

static uint64_t start_ns;
/* The output file, the windows and the reporter's stop flag. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static bool stopping;
static pthread_t reporter_thread;
static FILE *out;
static struct window windows[MAX_WINDOWS];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/*
 * A counter of the calling vCPU: it is the only writer, so a relaxed load
 * and store make the increment (no locked instruction), and readers on
 * other threads, which load it relaxed too, never see a torn value.
 */
static inline void bump(uint64_t *p, uint64_t n)
{
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELAXED);
}

static inline uint64_t peek(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* The counters summed over every vCPU, as they are now. */
static void snapshot(struct counters *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned int i = 0; i < nvcpus; i++) {
		const struct counters *c = &vcpus[i].c;

		s->accesses += peek(&c->accesses);
		for (int n = 0; n < NR_NODES; n++) {
			s->miss[n] += peek(&c->miss[n]);
			s->user_miss[n] += peek(&c->user_miss[n]);
		}
		s->delay_ns += peek(&c->delay_ns);
	}
}

static void subtract(struct counters *d, const struct counters *a,
		     const struct counters *b)
{
	d->accesses = a->accesses - b->accesses;
	for (int n = 0; n < NR_NODES; n++) {
		d->miss[n] = a->miss[n] - b->miss[n];
		d->user_miss[n] = a->user_miss[n] - b->user_miss[n];
	}
	d->delay_ns = a->delay_ns - b->delay_ns;
}

/* The share of the memory (fast and slow) misses @miss that went to node 1. */
static double star_pct(const uint64_t *miss)
{
	uint64_t mem = miss[NODE_FAST] + miss[NODE_SLOW];

	return mem ? 100.0 * miss[NODE_SLOW] / mem : 0;
}

/*
 * Whether @vaddr is a user address: on x86-64 (four- or five-level paging)
 * and arm64, the kernel's half of the address space has the top bit set.
 */
static inline bool user_addr(uint64_t vaddr)
{
	return !(vaddr >> 63);
}

static const struct range *find_range(uint64_t addr)
{
	for (int i = 0; i < cfg.nranges; i++)
		if (addr >= cfg.ranges[i].start && addr < cfg.ranges[i].end)
			return &cfg.ranges[i];
	return NULL;
}

/* An access to @line: true on a hit of the cache model. */
static bool llc_access(struct vcpu *v, uint64_t line)
{
	uint64_t index = cfg.sets_pow2 ? line & (cfg.sets - 1) : line % cfg.sets;
	uint64_t *set = v->tags + index * cfg.ways;
	unsigned int i;
	bool hit;

	v->last_line = line;
	for (i = 0; i < cfg.ways; i++)
		if (set[i] == line)
			break;
	if (i == 0)
		return true;
	hit = i < cfg.ways;
	if (!hit)
		i = cfg.ways - 1;	/* the least recently used goes */
	memmove(set + 1, set, i * sizeof(*set));
	set[0] = line;
	return hit;
}

/*
 * Hold the vCPU for the latency it owes.  The clock is read only here, once
 * a microsecond is owed, not on every miss; what the spin overshoots is
 * credit for the next one, so the time added over many misses is exact.
 */
static void pay_debt(struct vcpu *v)
{
	uint64_t t0 = now_ns(), t;

	do
		t = now_ns();
	while ((int64_t)(t - t0) < v->debt_ns);
	v->debt_ns -= (int64_t)(t - t0);
	bump(&v->c.delay_ns, t - t0);
}

static void on_mem(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
		   uint64_t vaddr, void *udata)
{
	struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
	const struct range *r;
	struct vcpu *v;
	uint64_t addr, line, lat;
	enum node node;

	(void)udata;
	if (!hw || qemu_plugin_hwaddr_is_io(hw) || vcpu_index >= nvcpus)
		return;
	v = &vcpus[vcpu_index];
	addr = qemu_plugin_hwaddr_phys_addr(hw);
	line = addr >> LINE_SHIFT;
	bump(&v->c.accesses, 1);
	if (line == v->last_line || llc_access(v, line))
		return;

	r = find_range(addr);
	node = r ? r->node : NODE_OTHER;
	bump(&v->c.miss[node], 1);
	if (user_addr(vaddr))
		bump(&v->c.user_miss[node], 1);
	if (page_misses && r)
		__atomic_fetch_add(&page_misses[r->first_page +
						((addr - r->start) >> PAGE_SHIFT)],
				   1, __ATOMIC_RELAXED);
	if (node != NODE_SLOW)
		return;
	lat = __atomic_load_n(&cur_latency_ns, __ATOMIC_RELAXED);
	if (!lat)
		return;
	v->debt_ns += lat;
	if (v->debt_ns >= DEBT_NS)
		pay_debt(v);
}

/* The window line: what happened between begin and end, on every vCPU. */
static void print_counts(const struct counters *d, double seconds)
{
	fprintf(out, "seconds=%.3f accesses=%" PRIu64 " miss_fast=%" PRIu64
		" miss_slow=%" PRIu64 " miss_other=%" PRIu64
		" star_pct=%.2f delay_s=%.3f latency_ns=%" PRIu64
		" user_miss_fast=%" PRIu64 " user_miss_slow=%" PRIu64
		" user_star_pct=%.2f\n",
		seconds, d->accesses, d->miss[NODE_FAST], d->miss[NODE_SLOW],
		d->miss[NODE_OTHER], star_pct(d->miss), d->delay_ns / 1e9,
		__atomic_load_n(&cur_latency_ns, __ATOMIC_RELAXED),
		d->user_miss[NODE_FAST], d->user_miss[NODE_SLOW],
		star_pct(d->user_miss));
}

static void on_control(unsigned int vcpu_index, void *udata)
{
	unsigned int cmd = (uintptr_t)udata >> 8, id = (uintptr_t)udata & 0xff;
	struct window *w = &windows[id];
	uint64_t t = now_ns();
	struct counters now, d;

	(void)vcpu_index;
	pthread_mutex_lock(&lock);
	if (!out)	/* QEMU is exiting */
		cmd = 0;
	switch (cmd) {
	case CTL_BEGIN:
		w->open = true;
		w->t0_ns = t;
		snapshot(&w->start);
		break;
	case CTL_END:
		if (!w->open) {
			fprintf(out, "# window id=%u error=never-begun\n", id);
			break;
		}
		snapshot(&now);
		subtract(&d, &now, &w->start);
		w->open = false;
		fprintf(out, "# window id=%u ", id);
		print_counts(&d, (t - w->t0_ns) / 1e9);
		break;
	case CTL_FAST:
	case CTL_SLOW:
		__atomic_store_n(&cur_latency_ns,
				 cmd == CTL_FAST ? 0 : cfg.latency_ns,
				 __ATOMIC_RELAXED);
		fprintf(out, "# latency_ns=%" PRIu64 " from t_s=%.3f\n",
			cmd == CTL_FAST ? 0 : cfg.latency_ns,
			(t - start_ns) / 1e9);
		break;
	}
	if (out)
		fflush(out);
	pthread_mutex_unlock(&lock);
}

/* Is this the control no-op?  Then its command and argument, as XX << 8 | YY. */
static bool control_insn(const struct qemu_plugin_insn *insn, unsigned int *ctl)
{
	const uint8_t *b;

	if (qemu_plugin_insn_size(insn) != 8)
		return false;
	b = qemu_plugin_insn_data(insn);
	if (memcmp(b, CTL_HEAD, 4) || memcmp(b + 6, CTL_TAIL, 2))
		return false;
	if (b[5] < CTL_BEGIN || b[5] > CTL_SLOW)
		return false;
	*ctl = (unsigned int)b[5] << 8 | b[4];
	return true;
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		unsigned int ctl;

		qemu_plugin_register_vcpu_mem_cb(insn, on_mem,
						 QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_RW, NULL);
		if (control_insn(insn, &ctl))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_control,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)ctl);
	}
}

/* One CSV row a second, of what that second counted. */
static void *reporter(void *arg)
{
	struct counters prev = { 0 }, now, d;
	uint64_t next = start_ns;
	unsigned long t_s = 0;

	(void)arg;
	pthread_mutex_lock(&lock);
	while (!stopping) {
		struct timespec ts;

		next += 1000000000u;
		ts.tv_sec = next / 1000000000u;
		ts.tv_nsec = next % 1000000000u;
		while (!stopping &&
		       pthread_cond_timedwait(&wake, &lock, &ts) != ETIMEDOUT)
			;
		if (stopping)
			break;
		snapshot(&now);
		subtract(&d, &now, &prev);
		prev = now;
		fprintf(out, "%lu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%.2f,%.3f,%" PRIu64 "\n", ++t_s, d.accesses,
			d.miss[NODE_FAST], d.miss[NODE_SLOW], d.miss[NODE_OTHER],
			star_pct(d.miss), d.delay_ns / 1e6,
			__atomic_load_n(&cur_latency_ns, __ATOMIC_RELAXED));
		fflush(out);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

struct hot_page {
	uint64_t misses;
	size_t index;
};

static int by_misses(const void *a, const void *b)
{
	const struct hot_page *x = a, *y = b;

	return x->misses < y->misses ? 1 : x->misses > y->misses ? -1 : 0;
}

/* The hottest pages, by their guest-physical frame numbers. */
static void print_hot(void)
{
	struct hot_page *hot;
	size_t n = 0;

	hot = malloc(npages * sizeof(*hot));
	if (!hot) {
		fprintf(out, "# hot error=out-of-memory\n");
		return;
	}
	for (size_t i = 0; i < npages; i++) {
		uint64_t m = peek(&page_misses[i]);

		if (m)
			hot[n++] = (struct hot_page){ m, i };
	}
	qsort(hot, n, sizeof(*hot), by_misses);
	for (size_t i = 0; i < n && i < cfg.hot; i++) {
		const struct range *r = cfg.ranges;

		while (hot[i].index >= r->first_page +
		       ((r->end - r->start + (1u << PAGE_SHIFT) - 1) >> PAGE_SHIFT))
			r++;
		fprintf(out, "# hot pfn=0x%" PRIx64 " node=%d misses=%" PRIu64 "\n",
			(r->gpa >> PAGE_SHIFT) + (hot[i].index - r->first_page),
			r->node == NODE_FAST ? 0 : 1, hot[i].misses);
	}
	free(hot);
}

static void on_exit_qemu(qemu_plugin_id_t id, void *udata)
{
	struct counters total;

	(void)id;
	(void)udata;
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	pthread_join(reporter_thread, NULL);

	pthread_mutex_lock(&lock);
	snapshot(&total);
	fprintf(out, "# summary accesses=%" PRIu64 " miss_fast=%" PRIu64
		" miss_slow=%" PRIu64 " miss_other=%" PRIu64 " star_pct=%.2f"
		" delay_s=%.3f seconds=%.1f user_star_pct=%.2f\n",
		total.accesses, total.miss[NODE_FAST], total.miss[NODE_SLOW],
		total.miss[NODE_OTHER], star_pct(total.miss),
		total.delay_ns / 1e9, (now_ns() - start_ns) / 1e9,
		star_pct(total.user_miss));
	if (page_misses && cfg.hot)
		print_hot();
	fclose(out);
	out = NULL;
	pthread_mutex_unlock(&lock);
}

/* --- arguments ---------------------------------------------------------- */

static bool parse_u64(const char *s, char **end, uint64_t *v)
{
	errno = 0;
	*v = strtoull(s, end, 0);
	return !errno && *end != s && *s != '-';
}

/* A size: a number with an optional K, M or G (powers of 1024). */
static bool parse_size(const char *s, uint64_t *v)
{
	char *end;

	if (!parse_u64(s, &end, v))
		return false;
	if (*end && strchr("KkMmGg", *end)) {
		const char *units = "KMG";

		*v <<= 10 * (strchr(units, *end & ~0x20) - units + 1);
		end++;
	}
	return !*end;
}

/* START-END[@GPA] */
static bool parse_range(const char *s, enum node node)
{
	struct range *r = &cfg.ranges[cfg.nranges];
	char *end;

	if (cfg.nranges == MAX_RANGES)
		return false;
	if (!parse_u64(s, &end, &r->start) || *end != '-' ||
	    !parse_u64(end + 1, &end, &r->end) || r->end <= r->start)
		return false;
	r->gpa = r->start;
	if (*end == '@' && !parse_u64(end + 1, &end, &r->gpa))
		return false;
	if (*end)
		return false;
	for (int i = 0; i < cfg.nranges; i++)
		if (r->start < cfg.ranges[i].end && cfg.ranges[i].start < r->end)
			return false;
	r->node = node;
	cfg.nranges++;
	return true;
}

static bool parse_arg(const char *arg)
{
	const char *val = strchr(arg, '=');
	uint64_t v;
	char *end;

	if (!val)
		return false;
	val++;
	if (!strncmp(arg, "fast=", 5))
		return parse_range(val, NODE_FAST);
	if (!strncmp(arg, "slow=", 5))
		return parse_range(val, NODE_SLOW);
	if (!strncmp(arg, "llc=", 4))
		return parse_size(val, &cfg.llc) && cfg.llc;
	if (!strncmp(arg, "ways=", 5)) {
		if (!parse_u64(val, &end, &v) || *end || !v || v > 1024)
			return false;
		cfg.ways = v;
		return true;
	}
	if (!strncmp(arg, "latency=", 8))
		return parse_u64(val, &end, &cfg.latency_ns) && !*end &&
		       cfg.latency_ns <= 1000000;
	if (!strncmp(arg, "hot=", 4)) {
		if (!parse_u64(val, &end, &v) || *end || v > 1000000)
			return false;
		cfg.hot = v;
		return true;
	}
	if (!strncmp(arg, "out=", 4)) {
		cfg.out = val;
		return *val;
	}
	return false;
}

static void print_config(void)
{
	fprintf(out, "# slowtier");
	for (int i = 0; i < cfg.nranges; i++) {
		const struct range *r = &cfg.ranges[i];

		fprintf(out, " %s=0x%" PRIx64 "-0x%" PRIx64,
			r->node == NODE_FAST ? "fast" : "slow", r->start, r->end);
		if (r->gpa != r->start)
			fprintf(out, "@0x%" PRIx64, r->gpa);
	}
	fprintf(out, " llc=%" PRIu64 " ways=%u line=%u latency_ns=%" PRIu64
		" hot=%u vcpus=%u\n", cfg.llc, cfg.ways, 1u << LINE_SHIFT,
		cfg.latency_ns, cfg.hot, nvcpus);
	fprintf(out, "t_s,accesses,miss_fast,miss_slow,miss_other,star_pct,"
		"delay_ms,latency_ns\n");
	fflush(out);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	pthread_condattr_t attr;

	if (!info->system_emulation) {
		fprintf(stderr, "slowtier: system emulation only\n");
		return -1;
	}
	for (int i = 0; i < argc; i++) {
		if (!parse_arg(argv[i])) {
			fprintf(stderr, "slowtier: bad argument '%s' (fast=START-END, "
				"slow=START-END: half-open, apart, at most %d; "
				"llc=SIZE, ways=N, latency=NS, out=FILE, hot=N)\n",
				argv[i], MAX_RANGES);
			return -1;
		}
	}
	if (cfg.llc % ((uint64_t)cfg.ways << LINE_SHIFT)) {
		fprintf(stderr, "slowtier: llc=%" PRIu64 " is not a whole number "
			"of sets of %u 64-byte lines\n", cfg.llc, cfg.ways);
		return -1;
	}
	cfg.sets = cfg.llc / ((uint64_t)cfg.ways << LINE_SHIFT);
	cfg.sets_pow2 = !(cfg.sets & (cfg.sets - 1));

	nvcpus = info->system.max_vcpus > 0 ? info->system.max_vcpus : 1;
	vcpus = aligned_alloc(64, nvcpus * sizeof(*vcpus));
	if (!vcpus)
		goto nomem;
	memset(vcpus, 0, nvcpus * sizeof(*vcpus));
	for (unsigned int i = 0; i < nvcpus; i++) {
		vcpus[i].last_line = EMPTY;
		vcpus[i].tags = malloc(cfg.sets * cfg.ways * sizeof(uint64_t));
		if (!vcpus[i].tags)
			goto nomem;
		memset(vcpus[i].tags, 0xff, cfg.sets * cfg.ways * sizeof(uint64_t));
	}
	for (int i = 0; i < cfg.nranges; i++) {
		struct range *r = &cfg.ranges[i];

		r->first_page = npages;
		npages += (r->end - r->start + (1u << PAGE_SHIFT) - 1) >> PAGE_SHIFT;
	}
	if (cfg.hot && npages) {
		page_misses = calloc(npages, sizeof(*page_misses));
		if (!page_misses)
			goto nomem;
	}
	cur_latency_ns = cfg.latency_ns;

	out = fopen(cfg.out, "w");
	if (!out) {
		fprintf(stderr, "slowtier: %s: %s\n", cfg.out, strerror(errno));
		return -1;
	}
	start_ns = now_ns();
	print_config();

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&wake, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&reporter_thread, NULL, reporter, NULL)) {
		fprintf(stderr, "slowtier: cannot start the reporter thread\n");
		return -1;
	}

	qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
	qemu_plugin_register_atexit_cb(id, on_exit_qemu, NULL);
	return 0;

nomem:
	fprintf(stderr, "slowtier: out of memory\n");
	return -1;
}
