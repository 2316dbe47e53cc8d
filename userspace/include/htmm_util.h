/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libhtmm: small helpers shared by the htmm tools.
 */
#ifndef HTMM_UTIL_H
#define HTMM_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A size in bytes: a whole decimal number above 0, with an optional suffix
 * K, M or G (either case, powers of 1024).  Returns false, *out unchanged,
 * for anything else.  (An overflow of the suffix's shift is not checked.)
 */
bool htmm_parse_size(const char *s, size_t *out);

#ifdef __cplusplus
}
#endif

#endif /* HTMM_UTIL_H */
