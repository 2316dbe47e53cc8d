/* SPDX-License-Identifier: GPL-2.0 */
/*
 * htmm-sample's errors, memory and clocks: the name its messages start
 * with, allocations that end the tool when memory runs out, the clocks.
 */
#ifndef HTMM_SAMPLE_UTIL_H
#define HTMM_SAMPLE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROG "htmm-sample"
#define VERSION "0.1"

/*
 * A message on stderr, after the tool's name.  Inline, so that no symbol
 * of the program has the name of the C library's error(3).
 */
static inline void __attribute__((format(printf, 1, 2))) error(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void __attribute__((noreturn)) out_of_memory(void);
void *xrealloc_array(void *p, size_t n, size_t size);
void *xcalloc(size_t n, size_t size);

/* Make room for one more element at p[nr]. */
#define GROW(p, nr, cap)						\
	do {								\
		if ((nr) == (cap)) {					\
			(cap) = (cap) ? 2 * (cap) : 16;			\
			(p) = xrealloc_array((p), (cap), sizeof(*(p)));	\
		}							\
	} while (0)

double now(void);
uint64_t clock_ns(void);
long read_long_file(const char *path);

#endif /* HTMM_SAMPLE_UTIL_H */
