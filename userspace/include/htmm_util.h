/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libhtmm: small helpers shared by the htmm tools.
 */
#ifndef HTMM_UTIL_H
#define HTMM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/syscall.h>

/* pidfd_open(2), for C libraries whose headers predate it. */
#ifndef SYS_pidfd_open
# if defined(__NR_pidfd_open)
#  define SYS_pidfd_open __NR_pidfd_open
# elif defined(__x86_64__) && !defined(__ILP32__)
#  define SYS_pidfd_open 434
# endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A size in bytes: a whole decimal number above 0, with an optional suffix
 * K, M or G (either case, powers of 1024).  Returns false, *out unchanged,
 * for anything else.  (An overflow of the suffix's shift is not checked.)
 */
bool htmm_parse_size(const char *s, size_t *out);

/*
 * A command-line error: "PROG: message" on stderr (none if @fmt is NULL),
 * then @usage(stderr), then exit status 2.
 */
void htmm_usage_error(const char *prog, void (*usage)(FILE *f),
		      const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));

/*
 * The share, in percent, of the pages of [p, p + len) that are on @node,
 * looking at one page in @step, read with move_pages(2); -1 if it cannot
 * be read.  Pages not yet mapped count for nothing.
 */
double htmm_share_on_node(const void *p, size_t len, size_t step, int node);

#ifdef __cplusplus
}
#endif

#endif /* HTMM_UTIL_H */
