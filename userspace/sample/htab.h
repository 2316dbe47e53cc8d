/* SPDX-License-Identifier: GPL-2.0 */
/*
 * htmm-sample's hash table of three-u64 keys (open addressing, at most
 * half full), and the interned strings kept in one.
 */
#ifndef HTMM_SAMPLE_HTAB_H
#define HTMM_SAMPLE_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hent {
	uint64_t k[3];
	uint64_t v;
	uint64_t last;		/* count_at(): the time of the last sample */
	bool used;
};

struct htab {
	struct hent *e;
	size_t cap, nr;		/* cap: a power of two, or 0 */
};

/* The value of key (a, b, c), or NULL. */
uint64_t *htab_find(const struct htab *h, uint64_t a, uint64_t b,
		    uint64_t c);
/* The value of key (a, b, c), added as 0 if new. */
uint64_t *htab_get(struct htab *h, uint64_t a, uint64_t b, uint64_t c);
/* Count one sample of key (a, b, c) taken at time t. */
void count_at(struct htab *h, uint64_t a, uint64_t b, uint64_t c,
	      uint64_t t);
void htab_free(struct htab *h);

/* Interned strings: one copy of each, compared by address. */
const char *intern(const char *s);
void free_strings(void);

#endif /* HTMM_SAMPLE_HTAB_H */
