// SPDX-License-Identifier: GPL-2.0
/*
 * toucher: the workload of htmm-sample's host tests, with functions a
 * sampler must find by name.
 *
 *   toucher [-w] touch MIB   write one byte of each page of MIB MiB of
 *                            fresh anonymous memory, in touch_pages(): one
 *                            page fault per page (no huge pages); the
 *                            memory is a mapping of its own, between two
 *                            PROT_NONE guard pages, so that the kernel
 *                            cannot merge it with the memory around it
 *   toucher [-w] burn MS     spin for MS milliseconds in burn_cpu()
 *   toucher [-w] remap N     map a page, touch it and unmap it, N times,
 *                            in remap_pages(): N mappings, N page faults
 *
 * With -w it prints "ready PID" once its memory is mapped, and waits for a
 * byte on its standard input before it goes on, so that a test can start a
 * sampler on it first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB		(1UL << 20)
/* How many rounds burn_cpu() spins between looks at the clock. */
#define BURN_ROUNDS	(1UL << 20)

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: toucher [-w] touch MIB | toucher [-w] burn MS | "
		"toucher [-w] remap N\n");
	exit(2);
}

/* Every page of [p, p + len) faults once here: the sampler names it. */
static __attribute__((noinline)) void touch_pages(volatile char *p, size_t len,
						  size_t page)
{
	for (size_t off = 0; off < len; off += page)
		p[off] = 1;
}

/*
 * len bytes of fresh anonymous memory between two PROT_NONE pages: a
 * mapping of its own, whatever the memory around it (a sanitizer's, say)
 * may be, since a mapping merges only with one of the same protection.
 */
static char *map_guarded(size_t len, size_t page)
{
	char *g = mmap(NULL, len + 2 * page, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (g == MAP_FAILED)
		return MAP_FAILED;
	return mmap(g + page, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

/* One mapping and one fault per round: the sampler's side band grows. */
static __attribute__((noinline)) int remap_pages(unsigned long n, size_t page)
{
	for (unsigned long i = 0; i < n; i++) {
		volatile char *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return -1;
		p[0] = 1;
		munmap((void *)p, page);
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Where the CPU time goes: the sampler names it, and main as its caller. */
static __attribute__((noinline)) unsigned long burn_cpu(double seconds)
{
	double end = now() + seconds;
	volatile unsigned long x = 1;

	do {
		for (unsigned long i = 0; i < BURN_ROUNDS; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	} while (now() < end);
	return x;
}

/* Say we are ready, and wait for the go: a byte on stdin. */
static void wait_for_go(void)
{
	char c;
	ssize_t n;

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	do {
		n = read(STDIN_FILENO, &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1) {
		fprintf(stderr, "toucher: no go on stdin\n");
		exit(1);
	}
}

static unsigned long parse_ulong(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v == 0)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	bool wait = false;
	unsigned long n;

	if (argc > 1 && !strcmp(argv[1], "-w")) {
		wait = true;
		argv++;
		argc--;
	}
	if (argc != 3)
		usage();
	n = parse_ulong(argv[2]);

	if (!strcmp(argv[1], "touch")) {
		size_t len = n * MIB, page = sysconf(_SC_PAGESIZE);
		char *p = map_guarded(len, page);

		if (p == MAP_FAILED) {
			perror("toucher: mmap");
			return 1;
		}
		/* A huge page would take one fault for 512 pages. */
		if (madvise(p, len, MADV_NOHUGEPAGE))
			perror("toucher: madvise(MADV_NOHUGEPAGE)");
		if (wait)
			wait_for_go();
		touch_pages(p, len, page);
		printf("touched %zu pages\n", len / page);
		return 0;
	}
	if (!strcmp(argv[1], "remap")) {
		if (wait)
			wait_for_go();
		if (remap_pages(n, sysconf(_SC_PAGESIZE))) {
			perror("toucher: mmap");
			return 1;
		}
		printf("remapped %lu pages\n", n);
		return 0;
	}
	if (!strcmp(argv[1], "burn")) {
		if (wait)
			wait_for_go();
		printf("burnt %lx\n", burn_cpu(n / 1e3));
		return 0;
	}
	usage();
}
