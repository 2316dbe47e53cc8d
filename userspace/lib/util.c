// SPDX-License-Identifier: GPL-2.0
/*
 * libhtmm: small helpers shared by the htmm tools (see htmm_util.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "htmm_util.h"

bool htmm_parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || v == 0)
		return false;
	switch (*end) {
	case 'g': case 'G': v <<= 10; /* fall through */
	case 'm': case 'M': v <<= 10; /* fall through */
	case 'k': case 'K': v <<= 10; end++; break;
	case '\0': break;
	default: return false;
	}
	if (*end)
		return false;
	*out = v;
	return true;
}

void htmm_usage_error(const char *prog, void (*usage)(FILE *f),
		      const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fprintf(stderr, "%s: ", prog);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	usage(stderr);
	exit(2);
}

double htmm_share_on_node(const void *p, size_t len, size_t step, int node)
{
	enum { BATCH = 512 };
	size_t psize = sysconf(_SC_PAGESIZE), n = 0, on = 0, all = 0;
	void *pages[BATCH];
	int status[BATCH];

	for (size_t off = 0; off < len; off += psize * step) {
		pages[n++] = (char *)p + off;
		if (n == BATCH || off + psize * step >= len) {
			if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0))
				return -1;
			for (size_t i = 0; i < n; i++) {
				all += status[i] >= 0;
				on += status[i] == node;
			}
			n = 0;
		}
	}
	return all ? 100.0 * on / all : 0;
}
