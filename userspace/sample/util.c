// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: errors and memory (error() itself is inline, in util.h),
 * the clocks, and the whole number in a file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "util.h"

void __attribute__((noreturn)) out_of_memory(void)
{
	error("out of memory");
	exit(1);
}

void *xrealloc_array(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		out_of_memory();
	p = realloc(p, n && size ? n * size : 1);
	if (!p)
		out_of_memory();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		out_of_memory();
	return p;
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CLOCK_MONOTONIC in ns: the clock of the records' times (use_clockid). */
uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* A whole number in a file (a sysctl, a PMU type), or -1 with errno. */
long read_long_file(const char *path)
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
