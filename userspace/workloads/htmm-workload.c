// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-workload: the workloads of the tiering benchmark (make bench).
 *
 * A buffer of base pages is first touched on a slow node, then accessed
 * one random cache line at a time with a known probability for every page:
 *
 *   hotset  a contiguous hot set takes HOT% of the accesses, spread evenly;
 *           the rest of the buffer shares the others evenly
 *   zipf    page ranks follow a Zipf law of exponent ALPHA; the ranks are
 *           scattered over the buffer by a fixed random permutation, as the
 *           keys of a hash table would be
 *   phase   as hotset, but the hot set moves to another, disjoint part of
 *           the buffer halfway through the run
 *
 * Because the workload knows the probability of each page, it can say what
 * share of its accesses went to the fast node.  Every second it reads where
 * its pages are with move_pages(2) and prints one CSV row: the operations
 * done, the share of the hot set (the pages of the hot set, or for zipf the
 * HOTSIZE most probable pages) and of the rest on the fast node, the
 * access-weighted fast-tier hit ratio, its own system time, and the cpu
 * time of the kernel threads named with -K.
 *
 *   htmm-workload -w hotset|zipf|phase [-s SIZE] [-k HOTSIZE] [-t SECONDS]
 *                 [-n NODE] [-f NODE] [-p HOT%] [-a ALPHA] [-K PID,...]
 *                 [-W WINDOW]
 *
 * Under the emulated slow tier (qemu/plugin/slowtier.c), -W brackets the
 * timed part of the run, after the buffer is placed, in the plugin's
 * counting window WINDOW, so that the plugin reports this run's slow-tier
 * access ratio apart from the set-up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "htmm_util.h"
#include "slowtier.h"

#define PROG		"htmm-workload"
#define VERSION		"0.1"

#define MPOL_DEFAULT	0
#define MPOL_BIND	2

/* Read one page in COLD_STRIDE of the cold part each second. */
#define COLD_STRIDE	16
/* Pages per move_pages(2) call. */
#define BATCH		1024
/* Operations between two looks at the clock. */
#define OPS_PER_CHECK	4096
#define CACHE_LINE	64
#define MAX_KTHREADS	16

enum kind { HOTSET, ZIPF, PHASE };

struct workload {
	enum kind kind;
	char *buf;
	size_t psize, npages, nhot;
	double hot_prob;	/* hotset, phase: share of accesses to the hot set */
	size_t hot_start;	/* hotset, phase: first page of the hot set */
	/* zipf: page of each rank, and the cumulative probability of ranks */
	uint32_t *page_of_rank;
	double *cdf;
	uint64_t rng;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " -w hotset|zipf|phase [-s SIZE] [-k HOTSIZE] [-t SECONDS]\n"
		"                     [-n NODE] [-f NODE] [-p HOT%%] [-a ALPHA] [-K PID,...]\n"
		"                     [-W WINDOW]\n"
		"  -w, --workload KIND  hotset, zipf or phase (the hot set moves halfway)\n"
		"  -s, --size SIZE      buffer size, with K, M or G (default 256M)\n"
		"  -k, --hot SIZE       hot set size (default: an eighth of the buffer)\n"
		"  -t, --time SECONDS   how long to run (default 30)\n"
		"  -n, --node NODE      first-touch the buffer on NODE, then drop the policy\n"
		"  -f, --fast NODE      the fast node whose share is reported (default 0)\n"
		"  -p, --hot-prob PCT   hotset, phase: share of accesses to the hot set\n"
		"                       (default 90)\n"
		"  -a, --alpha ALPHA    zipf: the exponent (default 0.99)\n"
		"  -K, --kthreads LIST  pids of kernel threads whose cpu time to report\n"
		"  -W, --window ID      bracket the timed part in the slow-tier plugin's\n"
		"                       counting window ID (0-255)\n"
		"  -h, --help           this help\n"
		"  -V, --version        the version\n"
		"Prints a CSV row per second: t_s,ops,ops_per_s,hot_fast_pct,\n"
		"cold_fast_pct,hit_pct,phase,task_sys_ms,kthread_ms\n");
}

static bool parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return !errno && end != s && !*end && *out >= lo && *out <= hi;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* xorshift64*: fast, and good enough to pick pages. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* A uniform integer below @n (n < 2^32). */
static size_t below(uint64_t *s, size_t n)
{
	return (size_t)(((next_rand(s) >> 32) * (uint64_t)n) >> 32);
}

static size_t pick_page(struct workload *w)
{
	uint64_t r;

	switch (w->kind) {
	case ZIPF: {
		double u = (next_rand(&w->rng) >> 11) * 0x1.0p-53;
		size_t lo = 0, hi = w->npages - 1;

		/* The first rank whose cumulative probability exceeds u. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (w->cdf[mid] > u)
				hi = mid;
			else
				lo = mid + 1;
		}
		return w->page_of_rank[lo];
	}
	default:
		r = next_rand(&w->rng);
		if ((r >> 11) * 0x1.0p-53 < w->hot_prob)
			return w->hot_start + below(&w->rng, w->nhot);
		/* The cold pages: those before the hot set, then those after. */
		r = below(&w->rng, w->npages - w->nhot);
		return r < w->hot_start ? r : r + w->nhot;
	}
}

static int setup_zipf(struct workload *w, double alpha)
{
	double sum = 0;

	w->page_of_rank = malloc(w->npages * sizeof(*w->page_of_rank));
	w->cdf = malloc(w->npages * sizeof(*w->cdf));
	if (!w->page_of_rank || !w->cdf)
		return -1;
	for (size_t i = 0; i < w->npages; i++)
		w->page_of_rank[i] = i;
	/* Fisher-Yates, with a fixed seed: the same layout every run. */
	for (size_t i = w->npages - 1; i > 0; i--) {
		size_t j = below(&w->rng, i + 1);
		uint32_t t = w->page_of_rank[i];

		w->page_of_rank[i] = w->page_of_rank[j];
		w->page_of_rank[j] = t;
	}
	for (size_t r = 0; r < w->npages; r++) {
		sum += pow(r + 1, -alpha);
		w->cdf[r] = sum;
	}
	for (size_t r = 0; r < w->npages; r++)
		w->cdf[r] /= sum;
	w->cdf[w->npages - 1] = 1.0;
	return 0;
}

/* The probability of rank @r (zipf). */
static double rank_prob(const struct workload *w, size_t r)
{
	return r ? w->cdf[r] - w->cdf[r - 1] : w->cdf[0];
}

/*
 * Placement of a list of pages: adds to *on the number on @node and to *all
 * the number that are mapped, and to *weight_on the weight of those on @node.
 */
struct tally {
	size_t on, all;
	double weight_on;
};

struct batch {
	void *pages[BATCH];
	double weight[BATCH];
	int status[BATCH];
	size_t n;
};

static int flush(struct batch *b, int node, struct tally *t)
{
	if (!b->n)
		return 0;
	if (syscall(SYS_move_pages, 0, b->n, b->pages, NULL, b->status, 0))
		return -1;
	for (size_t i = 0; i < b->n; i++) {
		t->all += b->status[i] >= 0;
		if (b->status[i] == node) {
			t->on++;
			t->weight_on += b->weight[i];
		}
	}
	b->n = 0;
	return 0;
}

static int add(struct batch *b, void *page, double weight, int node,
	       struct tally *t)
{
	b->pages[b->n] = page;
	b->weight[b->n++] = weight;
	return b->n == BATCH ? flush(b, node, t) : 0;
}

struct placement {
	double hot_pct, cold_pct, hit_pct;
};

/*
 * Where the pages are: every page of the hot set, and one in COLD_STRIDE
 * of the rest (weighted by the probability of the pages it stands for).
 */
static int read_placement(struct workload *w, int node, unsigned int round,
			  struct placement *pl)
{
	static struct batch b;
	struct tally hot = { 0 }, cold = { 0 };
	size_t first = round % COLD_STRIDE;

	if (w->kind == ZIPF) {
		for (size_t r = 0; r < w->nhot; r++)
			if (add(&b, w->buf + w->page_of_rank[r] * w->psize,
				rank_prob(w, r), node, &hot))
				return -1;
		if (flush(&b, node, &hot))
			return -1;
		for (size_t r = w->nhot; r < w->npages; r += COLD_STRIDE) {
			size_t last = r + COLD_STRIDE < w->npages ?
				      r + COLD_STRIDE : w->npages;
			double mass = w->cdf[last - 1] - w->cdf[r - 1];

			if (add(&b, w->buf + w->page_of_rank[r] * w->psize,
				mass, node, &cold))
				return -1;
		}
		if (flush(&b, node, &cold))
			return -1;
		pl->hit_pct = 100 * (hot.weight_on + cold.weight_on);
	} else {
		size_t ncold = w->npages - w->nhot;

		for (size_t i = 0; i < w->nhot; i++)
			if (add(&b, w->buf + (w->hot_start + i) * w->psize, 0,
				node, &hot))
				return -1;
		if (flush(&b, node, &hot))
			return -1;
		for (size_t i = first; i < ncold; i += COLD_STRIDE) {
			size_t page = i < w->hot_start ? i : i + w->nhot;

			if (add(&b, w->buf + page * w->psize, 0, node, &cold))
				return -1;
		}
		if (flush(&b, node, &cold))
			return -1;
		pl->hit_pct = 100 * (w->hot_prob * hot.on / (hot.all ? hot.all : 1) +
				     (1 - w->hot_prob) * cold.on /
				     (cold.all ? cold.all : 1));
	}
	pl->hot_pct = hot.all ? 100.0 * hot.on / hot.all : 0;
	pl->cold_pct = cold.all ? 100.0 * cold.on / cold.all : 0;
	return 0;
}

/* Cpu time of the kernel threads in @pids, in ms (those gone count 0). */
static double kthread_ms(const int *pids, int n)
{
	unsigned long long ns, sum = 0;
	char path[64];

	for (int i = 0; i < n; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/schedstat", pids[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		fclose(f);
	}
	return sum / 1e6;
}

static double task_sys_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
}

static int parse_pids(char *s, int *pids, int *n)
{
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		char *end;
		long v = strtol(tok, &end, 10);

		if (*end || v <= 0 || *n == MAX_KTHREADS)
			return -1;
		pids[(*n)++] = v;
	}
	return 0;
}

/* One CSV row, for the second @t_s of the run. */
static int report(struct workload *w, int fast, unsigned int round, double t_s,
		  unsigned long long ops, double rate, int phase,
		  const int *pids, int npids)
{
	struct placement pl;

	if (read_placement(w, fast, round, &pl)) {
		perror(PROG ": move_pages");
		return -1;
	}
	printf("%.0f,%llu,%.0f,%.1f,%.1f,%.1f,%d,%.0f,%.0f\n", t_s, ops, rate,
	       pl.hot_pct, pl.cold_pct, pl.hit_pct, phase, task_sys_ms(),
	       kthread_ms(pids, npids));
	fflush(stdout);
	return 0;
}

static int place(struct workload *w, size_t size, long node)
{
	unsigned long mask = 1UL << node;

	if (node >= 0 &&
	    syscall(SYS_mbind, w->buf, size, MPOL_BIND, &mask, 64, 0)) {
		perror(PROG ": mbind");
		return -1;
	}
	for (size_t off = 0; off < size; off += w->psize)
		w->buf[off] = 1;
	/* Placed: from now on the kernel may move the pages anywhere. */
	if (node >= 0 &&
	    syscall(SYS_mbind, w->buf, size, MPOL_DEFAULT, NULL, 0, 0)) {
		perror(PROG ": mbind");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "workload", required_argument, NULL, 'w' },
		{ "size", required_argument, NULL, 's' },
		{ "hot", required_argument, NULL, 'k' },
		{ "time", required_argument, NULL, 't' },
		{ "node", required_argument, NULL, 'n' },
		{ "fast", required_argument, NULL, 'f' },
		{ "hot-prob", required_argument, NULL, 'p' },
		{ "alpha", required_argument, NULL, 'a' },
		{ "kthreads", required_argument, NULL, 'K' },
		{ "window", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct workload w = { .rng = 0x9E3779B97F4A7C15ULL, .hot_prob = 0.9 };
	size_t size = 256UL << 20, hot = 0;
	double seconds = 30, alpha = 0.99, pct, t0, next, last_t;
	unsigned long long ops = 0, last_ops = 0;
	const char *kind = NULL;
	int pids[MAX_KTHREADS], npids = 0, phase = 1;
	long node = -1, fast = 0, window = -1;
	unsigned int round = 0;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "w:s:k:t:n:f:p:a:K:W:hV", opts,
				NULL)) != -1) {
		switch (c) {
		case 'w':
			kind = optarg;
			break;
		case 's':
		case 'k':
			if (!htmm_parse_size(optarg, c == 's' ? &size : &hot)) {
				fprintf(stderr, PROG ": bad size '%s'\n", optarg);
				return 2;
			}
			break;
		case 't':
			if (!parse_double(optarg, 1, 86400, &seconds)) {
				fprintf(stderr, PROG ": bad time '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
		case 'f':
			errno = 0;
			*(c == 'n' ? &node : &fast) = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg ||
			    (c == 'n' ? node : fast) < 0 ||
			    (c == 'n' ? node : fast) >= 64) {
				fprintf(stderr, PROG ": bad node '%s'\n", optarg);
				return 2;
			}
			break;
		case 'p':
			if (!parse_double(optarg, 0, 100, &pct)) {
				fprintf(stderr, PROG ": bad share '%s'\n", optarg);
				return 2;
			}
			w.hot_prob = pct / 100;
			break;
		case 'a':
			if (!parse_double(optarg, 0.01, 10, &alpha)) {
				fprintf(stderr, PROG ": bad exponent '%s'\n", optarg);
				return 2;
			}
			break;
		case 'K':
			if (parse_pids(optarg, pids, &npids)) {
				fprintf(stderr, PROG ": bad pid list '%s' (at most %d)\n",
					optarg, MAX_KTHREADS);
				return 2;
			}
			break;
		case 'W':
			errno = 0;
			window = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || window < 0 ||
			    window > 255) {
				fprintf(stderr, PROG ": bad window '%s' (0-255)\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			puts(PROG " " VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !kind) {
		if (!kind)
			fprintf(stderr, PROG ": which workload? (-w)\n");
		usage(stderr);
		return 2;
	}
	if (!strcmp(kind, "hotset")) {
		w.kind = HOTSET;
	} else if (!strcmp(kind, "zipf")) {
		w.kind = ZIPF;
	} else if (!strcmp(kind, "phase")) {
		w.kind = PHASE;
	} else {
		fprintf(stderr, PROG ": unknown workload '%s' (hotset, zipf, phase)\n",
			kind);
		return 2;
	}

	w.psize = sysconf(_SC_PAGESIZE);
	w.npages = size / w.psize;
	w.nhot = (hot ? hot : size / 8) / w.psize;
	if (w.npages < 2 * COLD_STRIDE || w.npages > UINT32_MAX) {
		fprintf(stderr, PROG ": size out of range\n");
		return 2;
	}
	/* Room for two disjoint hot sets, and for a cold part to sample. */
	if (!w.nhot || w.nhot > w.npages / 4) {
		fprintf(stderr, PROG ": the hot set must be at most a quarter of the buffer\n");
		return 2;
	}
	w.hot_start = w.npages / 4;
	if (w.kind == ZIPF && setup_zipf(&w, alpha)) {
		fprintf(stderr, PROG ": out of memory for %zu ranks\n", w.npages);
		return 1;
	}

	w.buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w.buf == MAP_FAILED) {
		perror(PROG ": mmap");
		return 1;
	}
	/* Base pages: placement is judged page by page. */
	if (madvise(w.buf, size, MADV_NOHUGEPAGE)) {
		perror(PROG ": madvise");
		return 1;
	}
	t0 = now();
	if (place(&w, size, node))
		return 1;
	fprintf(stderr, PROG ": %s, %zu MiB (hot set %zu MiB) placed in %.1f s\n",
		kind, size >> 20, (w.nhot * w.psize) >> 20, now() - t0);

	printf("t_s,ops,ops_per_s,hot_fast_pct,cold_fast_pct,hit_pct,phase,"
	       "task_sys_ms,kthread_ms\n");
	if (window >= 0 && slowtier_cmd(SLOWTIER_BEGIN, window)) {
		perror(PROG ": slow-tier window");
		return 1;
	}
	t0 = last_t = now();
	/* Where the pages start from. */
	if (report(&w, fast, round++, 0, 0, 0, phase, pids, npids))
		return 1;
	for (next = t0 + 1;; next += 1) {
		double t;

		do {
			for (int i = 0; i < OPS_PER_CHECK; i++) {
				size_t page = pick_page(&w);
				size_t line = below(&w.rng, w.psize / CACHE_LINE);

				((volatile uint64_t *)(w.buf + page * w.psize))
					[line * CACHE_LINE / sizeof(uint64_t)]++;
			}
			ops += OPS_PER_CHECK;
			t = now();
		} while (t < next);

		if (report(&w, fast, round++, next - t0, ops,
			   (ops - last_ops) / (t - last_t), phase, pids, npids))
			return 1;
		if (next - t0 >= seconds)
			break;
		if (w.kind == PHASE && phase == 1 && next - t0 >= seconds / 2) {
			/* The hot set moves to the other half of the buffer. */
			w.hot_start = w.npages / 4 * 3 - w.nhot / 2;
			phase = 2;
		}
		/* The time spent reading placement is not counted as work. */
		last_t = now();
		last_ops = ops;
	}
	if (window >= 0 && slowtier_cmd(SLOWTIER_END, window)) {
		perror(PROG ": slow-tier window");
		return 1;
	}
	return 0;
}
