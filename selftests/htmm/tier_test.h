/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests that place pages share (tiering, counters, policy):
 * buffers first touched on a node and carrying a pattern, reading them,
 * and where their pages are, read back with move_pages(2).  Node 0 is the
 * fast tier, node 1 the slow one.
 */
#ifndef HTMM_TIER_TEST_H
#define HTMM_TIER_TEST_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "htmm_test.h"

#define MB (1UL << 20)
#define PAGE 4096UL
#define HUGE (2 * MB)
#define FAST 0
#define SLOW 1

/* Whether the guest has the two tiers these tests need. */
static inline int have_tiers(void)
{
	return !access("/sys/devices/system/node/node1/meminfo", F_OK) &&
	       !access(HTMM_SYSFS, F_OK);
}

/*
 * The nodes of the pages of [p, p + len) of the process @pid (0: this
 * one), one status of move_pages(2) a page into @status: 0 or -errno.
 */
static inline int pid_page_nodes(pid_t pid, void *p, size_t len, int *status)
{
	enum { BATCH = 1024 };
	void *pages[BATCH];

	for (size_t off = 0; off < len; off += BATCH * PAGE) {
		size_t n = (len - off) / PAGE;

		if (n > BATCH)
			n = BATCH;
		for (size_t i = 0; i < n; i++)
			pages[i] = (char *)p + off + i * PAGE;
		if (syscall(SYS_move_pages, pid, n, pages, NULL,
			    status + off / PAGE, 0))
			return -errno;
	}
	return 0;
}

/*
 * Pages of [p, p + len) of the process @pid (0: this one) on @node, out of
 * the @resident ones; -errno if move_pages(2) fails.
 */
static inline long pid_pages_on(pid_t pid, void *p, size_t len, int node,
				long *resident)
{
	enum { BATCH = 1024 };
	int status[BATCH];
	long on = 0, res = 0;

	for (size_t off = 0; off < len; off += BATCH * PAGE) {
		size_t n = (len - off) / PAGE;
		int err;

		if (n > BATCH)
			n = BATCH;
		err = pid_page_nodes(pid, (char *)p + off, n * PAGE, status);
		if (err)
			return err;
		for (size_t i = 0; i < n; i++) {
			res += status[i] >= 0;
			on += status[i] == node;
		}
	}
	if (resident)
		*resident = res;
	return on;
}

/* Pages of [p, p + len) on @node, out of the @resident ones. */
static inline long pages_on(void *p, size_t len, int node, long *resident)
{
	return pid_pages_on(0, p, len, node, resident);
}

/* Fill [p, p + len) with a pattern that depends on each word's place. */
static inline void fill(void *p, size_t len, uint64_t seed)
{
	uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = (i * 0x9e3779b97f4a7c15ULL) ^ seed;
}

/* The offset of the first word that lost its pattern, or -1. */
static inline long check(const void *p, size_t len, uint64_t seed)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		if (w[i] != ((i * 0x9e3779b97f4a7c15ULL) ^ seed))
			return i * 8;
	return -1;
}

/* Read one word of every page of [p, p + len). */
static inline uint64_t read_pages(const void *p, size_t len)
{
	const volatile uint64_t *w = p;
	uint64_t sum = 0;

	for (size_t off = 0; off < len; off += PAGE)
		sum += w[off / 8];
	return sum;
}

/* Read every page of [p, p + len) over and over, for a second. */
static inline void read_second(const void *p, size_t len)
{
	double t = now_s();

	while (now_s() - t < 1)
		read_pages(p, len);
}

/*
 * Read every page of [p, p + len), a second at a time, until 90% of its
 * pages are on the fast node or @seconds passed; the pages there.
 */
static inline long read_until_up(const char *p, size_t len, double seconds)
{
	double start = now_s();
	long on = 0;

	while (now_s() - start < seconds) {
		read_second(p, len);
		on = pages_on((void *)p, len, FAST, NULL);
		if (on * 10 >= (long)(len / PAGE) * 9)
			break;
	}
	return on;
}

/*
 * An anonymous buffer of @len bytes first touched on @node, with @advice
 * (MADV_NOHUGEPAGE, MADV_HUGEPAGE) and the pattern of fill() seeded with
 * its address, its policy then taken away: htmm leaves a range bound by
 * mbind(2) alone.  Aligned, so that huge pages can back all of it.
 */
static inline void *buffer_on(size_t len, int node, int advice)
{
	void *p = mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + HUGE - 1) & ~(HUGE - 1));
	if (madvise(a, len, advice) || bind_to(a, len, node))
		return NULL;
	fill(a, len, (uintptr_t)a);
	if (bind_to(a, len, -1))
		return NULL;
	return a;
}

/* The pid of the kernel thread named @comm, or -1. */
static inline pid_t kthread_pid(const char *comm)
{
	char path[64], name[32];

	for (pid_t pid = 2; pid < 1000; pid++) {
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		if (!read_file(path, name, sizeof(name)) && !strcmp(name, comm))
			return pid;
	}
	return -1;
}

/* A field of @node's meminfo, in kB, or -1. */
static inline long node_meminfo_kb(int node, const char *field)
{
	char path[64], line[256], name[64];
	long kb = -1, v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo",
		 node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Node %*d %63[^:]: %ld kB", name, &v) == 2 &&
		    !strcmp(name, field)) {
			kb = v;
			break;
		}
	fclose(f);
	return kb;
}

#endif /* HTMM_TIER_TEST_H */
