// SPDX-License-Identifier: GPL-2.0
/*
 * libhtmm: small helpers shared by the htmm tools (see htmm_util.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

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
