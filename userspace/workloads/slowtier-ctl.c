// SPDX-License-Identifier: GPL-2.0
/*
 * slowtier-ctl: talk to the emulated slow tier (the QEMU plugin of
 * qemu/plugin/slowtier.c) from inside the guest, and measure it.
 *
 * The plugin watches the guest's instructions for the 8-byte no-op
 * 0F 1F 84 00 YY XX 54 53 (nopl 0x5354XXYY(%rax,%rax,1)) and runs command
 * XX with argument YY when it executes.  libhtmm's slowtier_cmd() writes
 * that no-op and a ret into an executable page and calls it; without the
 * plugin, nothing happens.
 *
 *   slowtier-ctl begin ID   open the plugin's measurement window ID (0-255)
 *   slowtier-ctl end ID     close it: the plugin writes what it counted
 *   slowtier-ctl fast       turn the added latency off
 *   slowtier-ctl slow       turn it back on
 *   slowtier-ctl chase -n NODE [-s SIZE] [-c LOADS] [-C CPU] [-W ID]
 *
 * chase times dependent loads (a pointer chase) over a buffer bound to NODE:
 * the buffer's cache lines are linked into one random cycle, so that each
 * load waits for the one before and, with the buffer well above the size of
 * the plugin's cache model, misses it.  The chase stays on one CPU, -C or
 * the one it started on (the plugin models a cache per CPU).  It prints one
 * line of key=value pairs: the loads, their time, the time per load, and
 * the share of the buffer's pages that were on NODE.  With -W, the timed
 * loads are window ID.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "htmm_util.h"
#include "slowtier.h"

#define PROG		"slowtier-ctl"
#define VERSION		"0.1"

#define MPOL_BIND	2

#define CACHE_LINE	64

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " begin ID | end ID | fast | slow\n"
		"       " PROG " chase -n NODE [-s SIZE] [-c LOADS] [-C CPU] [-W ID]\n"
		"Commands to the emulated slow tier (the QEMU plugin slowtier):\n"
		"  begin ID          open measurement window ID (0 to 255)\n"
		"  end ID            close window ID: the plugin writes its counts\n"
		"  fast              turn the slow tier's added latency off\n"
		"  slow              turn it back on\n"
		"  chase             time dependent loads, each to a cache line of a\n"
		"                    buffer bound to a node, in one random cycle\n"
		"    -n, --node NODE    the buffer's node\n"
		"    -s, --size SIZE    its size, with K, M or G (default 64M)\n"
		"    -c, --loads LOADS  how many loads to time, with K, M or G\n"
		"                       (default 4M)\n"
		"    -C, --cpu CPU      run on CPU (default: the one it starts on)\n"
		"    -W, --window ID    make the timed loads window ID\n"
		"  -h, --help        this help\n"
		"  -V, --version     the version\n"
		"Without the plugin, the commands do nothing.  chase prints:\n"
		"node=N cpu=N size=BYTES lines=N loads=N seconds=S ns_per_load=NS\n"
		"on_node_pct=P end=ADDRESS\n");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 0);
	return !errno && end != s && !*end && *s != '-' && *out <= max;
}

/* xorshift64*: fast, and good enough to shuffle. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/*
 * Link the @lines cache lines of @buf into one cycle in random order: each
 * line's first word points to the next line.  Returns the first line.
 */
static void **link_cycle(char *buf, size_t lines)
{
	uint32_t *order = malloc(lines * sizeof(*order));
	uint64_t rng = 0x9E3779B97F4A7C15ULL;
	void **first;

	if (!order)
		return NULL;
	for (size_t i = 0; i < lines; i++)
		order[i] = i;
	/* Fisher-Yates, with a fixed seed: the same cycle every run. */
	for (size_t i = lines - 1; i > 0; i--) {
		size_t j = next_rand(&rng) % (i + 1);
		uint32_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < lines; i++)
		*(void **)(buf + (size_t)order[i] * CACHE_LINE) =
			buf + (size_t)order[(i + 1) % lines] * CACHE_LINE;
	first = (void **)(buf + (size_t)order[0] * CACHE_LINE);
	free(order);
	return first;
}

static int chase(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "node", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "loads", required_argument, NULL, 'c' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "window", required_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 },
	};
	const char *size_arg = "64M";
	size_t size = 64UL << 20, lines;
	size_t loads = 4UL << 20;
	unsigned long node = 64, window = 256, mask, cpu = CPU_SETSIZE;
	void **p;
	double t0, t1, pct;
	cpu_set_t cpus;
	char *buf;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "n:s:c:C:W:", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!parse_ulong(optarg, 63, &node))
				htmm_usage_error(PROG, usage, "bad node '%s'", optarg);
			break;
		case 's':
			if (!htmm_parse_size(optarg, &size))
				htmm_usage_error(PROG, usage, "bad size '%s'", optarg);
			size_arg = optarg;
			break;
		case 'c':
			if (!htmm_parse_size(optarg, &loads))
				htmm_usage_error(PROG, usage,
						 "bad number of loads '%s'", optarg);
			break;
		case 'C':
			if (!parse_ulong(optarg, CPU_SETSIZE - 1, &cpu))
				htmm_usage_error(PROG, usage, "bad cpu '%s'", optarg);
			break;
		case 'W':
			if (!parse_ulong(optarg, 255, &window))
				htmm_usage_error(PROG, usage,
						 "bad window '%s' (0 to 255)", optarg);
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc)
		htmm_usage_error(PROG, usage, "chase: unexpected argument '%s'",
				 argv[optind]);
	if (node == 64)
		htmm_usage_error(PROG, usage, "chase: which node? (-n)");
	lines = size / CACHE_LINE;
	if (lines < 2 || lines > UINT32_MAX)
		htmm_usage_error(PROG, usage, "chase: size '%s' out of range "
				 "(128 bytes to 256G)", size_arg);

	/* One CPU, one cache of the model: a move would find lines in another. */
	if (cpu == CPU_SETSIZE) {
		int now_on = sched_getcpu();

		cpu = now_on >= 0 ? now_on : 0;
	}
	CPU_ZERO(&cpus);
	CPU_SET(cpu, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus)) {
		fprintf(stderr, PROG ": cannot run on cpu %lu: %s\n", cpu,
			strerror(errno));
		return 1;
	}

	buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror(PROG ": mmap");
		return 1;
	}
	mask = 1UL << node;
	if (syscall(SYS_mbind, buf, size, MPOL_BIND, &mask, 64, 0)) {
		fprintf(stderr, PROG ": mbind to node %lu: %s\n", node,
			strerror(errno));
		return 1;
	}
	p = link_cycle(buf, lines);
	if (!p) {
		fprintf(stderr, PROG ": out of memory for %zu lines\n", lines);
		return 1;
	}
	pct = htmm_share_on_node(buf, size, 1, node);
	if (pct < 0) {
		perror(PROG ": move_pages");
		return 1;
	}

	if (window < 256 && slowtier_cmd(SLOWTIER_BEGIN, window)) {
		perror(PROG ": begin");
		return 1;
	}
	t0 = now();
	for (size_t i = 0; i < loads; i++)
		p = *(void **)p;
	t1 = now();
	if (window < 256 && slowtier_cmd(SLOWTIER_END, window)) {
		perror(PROG ": end");
		return 1;
	}

	/* p is printed, so that the loads cannot be left out. */
	printf("node=%lu cpu=%lu size=%zu lines=%zu loads=%zu seconds=%.6f "
	       "ns_per_load=%.2f on_node_pct=%.1f end=%p\n", node, cpu, size,
	       lines, loads, t1 - t0, (t1 - t0) * 1e9 / loads, pct, (void *)p);
	return 0;
}

int main(int argc, char **argv)
{
	enum slowtier_cmd cmd;
	unsigned long id = 0;
	const char *what;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	what = argv[1];
	if (!strcmp(what, "-h") || !strcmp(what, "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(what, "-V") || !strcmp(what, "--version")) {
		puts(PROG " " VERSION);
		return 0;
	}
	if (!strcmp(what, "chase"))
		return chase(argc - 1, argv + 1);

	if (!strcmp(what, "begin") || !strcmp(what, "end")) {
		cmd = what[0] == 'b' ? SLOWTIER_BEGIN : SLOWTIER_END;
		if (argc != 3)
			htmm_usage_error(PROG, usage,
					 "%s: which window? (an ID from 0 to 255)", what);
		if (!parse_ulong(argv[2], 255, &id))
			htmm_usage_error(PROG, usage, "bad window '%s' (0 to 255)",
					 argv[2]);
	} else if (!strcmp(what, "fast") || !strcmp(what, "slow")) {
		cmd = what[0] == 'f' ? SLOWTIER_FAST : SLOWTIER_SLOW;
		if (argc != 2)
			htmm_usage_error(PROG, usage, "unexpected argument '%s'",
					 argv[2]);
	} else {
		htmm_usage_error(PROG, usage, "unknown command '%s'", what);
	}
	if (slowtier_cmd(cmd, id)) {
		fprintf(stderr, PROG ": %s: %s\n", what, strerror(errno));
		return 1;
	}
	return 0;
}
