// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-touch: a memory workload for trying htmm.  It maps a buffer, places
 * its first touch on a node if asked, then writes one byte of every page in
 * turn until the time is up, and reports how many pages it touched per
 * second, and at the end the share of its pages on node 0.  With a hot set, it touches the pages of the hot set over and
 * over, and the rest of the buffer once every eight seconds.
 *
 *   htmm-touch [-s SIZE] [-w HOTSIZE] [-t SECONDS] [-n NODE] [-H] [-v]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "htmm_util.h"

#define MPOL_DEFAULT	0
#define MPOL_BIND	2

static void usage(FILE *f)
{
	fprintf(f,
		"usage: htmm-touch [-s SIZE] [-w HOTSIZE] [-t SECONDS] [-n NODE] [-H] [-v]\n"
		"  -s, --size SIZE     buffer size, with K, M or G (default 128M)\n"
		"  -w, --hot SIZE      touch only the first SIZE over and over, and the\n"
		"                      rest every 8 s (default: all of it, over and over)\n"
		"  -t, --time SECONDS  how long to touch it (default 5)\n"
		"  -n, --node NODE     place the first touch on NODE, then drop the policy\n"
		"  -H, --no-thp        base pages only, no transparent huge pages\n"
		"  -v, --verbose       print every second the rate, and the share of the\n"
		"                      hot set and of the rest that is on node 0\n"
		"  -h, --help          this help\n"
		"  -V, --version       the version\n");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "hot", required_argument, NULL, 'w' },
		{ "time", required_argument, NULL, 't' },
		{ "node", required_argument, NULL, 'n' },
		{ "no-thp", no_argument, NULL, 'H' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	size_t size = 128UL << 20, psize = sysconf(_SC_PAGESIZE);
	size_t hot = 0;
	double seconds = 5, t0, t1, next, last_t, cold_t;
	unsigned long long touched = 0, last = 0;
	bool verbose = false, no_thp = false;
	long node = -1;
	volatile char *p;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "s:w:t:n:HvhV", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!htmm_parse_size(optarg, &size)) {
				fprintf(stderr, "htmm-touch: bad size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'w':
			if (!htmm_parse_size(optarg, &hot)) {
				fprintf(stderr, "htmm-touch: bad hot size '%s'\n", optarg);
				return 2;
			}
			break;
		case 't':
			seconds = strtod(optarg, &end);
			if (*end || seconds <= 0) {
				fprintf(stderr, "htmm-touch: bad time '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
			node = strtol(optarg, &end, 10);
			if (*end || node < 0 || node >= 64) {
				fprintf(stderr, "htmm-touch: bad node '%s'\n", optarg);
				return 2;
			}
			break;
		case 'H':
			no_thp = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			puts("htmm-touch 0.1");
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	if (!hot || hot > size)
		hot = size;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("htmm-touch: mmap");
		return 1;
	}
	if (no_thp && madvise((void *)p, size, MADV_NOHUGEPAGE)) {
		perror("htmm-touch: madvise");
		return 1;
	}
	if (node >= 0) {
		unsigned long mask = 1UL << node;

		if (syscall(SYS_mbind, p, size, MPOL_BIND, &mask, 64, 0)) {
			perror("htmm-touch: mbind");
			return 1;
		}
	}
	for (size_t off = 0; off < size; off += psize)
		p[off] = 1;
	/* Placed: from now on the kernel may move the pages anywhere. */
	if (node >= 0 && syscall(SYS_mbind, p, size, MPOL_DEFAULT, NULL, 0, 0)) {
		perror("htmm-touch: mbind");
		return 1;
	}

	t0 = now();
	next = t0 + 1;
	last_t = t0;
	cold_t = t0;
	for (t1 = t0; t1 - t0 < seconds; t1 = now()) {
		for (size_t off = 0; off < hot; off += psize)
			p[off]++;
		touched += hot / psize;
		if (hot < size && t1 - cold_t >= 8) {
			for (size_t off = hot; off < size; off += psize)
				p[off]++;
			touched += (size - hot) / psize;
			cold_t = t1;
		}
		if (verbose && t1 >= next) {
			printf("htmm-touch: %.0f s: %.0f pages/s", t1 - t0,
			       (touched - last) / (t1 - last_t));
			/* Every page of the hot set, one in 16 of the rest. */
			printf(", hot set %.1f%% on node 0",
			       htmm_share_on_node((const void *)p, hot, 1, 0));
			if (hot < size)
				printf(", rest %.1f%%",
				       htmm_share_on_node((const void *)(p + hot), size - hot, 16, 0));
			printf("\n");
			fflush(stdout);
			last = touched;
			last_t = t1;
			next += 1;
		}
	}
	printf("htmm-touch: %zu MiB, %.1f s, %llu page touches, %.0f pages/s\n",
	       size >> 20, t1 - t0, touched, touched / (t1 - t0));
	/* Where its pages ended up, read back page by page. */
	if (hot < size)
		printf("htmm-touch: at the end, %.1f%% of the hot set (%zu pages) and %.1f%% of the rest (%zu pages) on node 0\n",
		       htmm_share_on_node((const void *)p, hot, 1, 0), hot / psize,
		       htmm_share_on_node((const void *)(p + hot), size - hot, 1, 0),
		       (size - hot) / psize);
	else
		printf("htmm-touch: at the end, %.1f%% of its %zu pages on node 0\n",
		       htmm_share_on_node((const void *)p, size, 1, 0), size / psize);
	return 0;
}
