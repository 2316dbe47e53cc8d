// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: a hash table of three-u64 keys, each with a value and the
 * time of its last sample; and the interned strings, the one table that
 * lives as long as the tool.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "htab.h"
#include "util.h"

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
	return mix64(a ^ mix64(b ^ mix64(c)));
}

static struct hent *htab_slot(const struct htab *h, uint64_t a, uint64_t b,
			      uint64_t c)
{
	size_t i = hash3(a, b, c) & (h->cap - 1);

	for (;; i = (i + 1) & (h->cap - 1)) {
		struct hent *e = &h->e[i];

		if (!e->used || (e->k[0] == a && e->k[1] == b && e->k[2] == c))
			return e;
	}
}

static void htab_grow(struct htab *h)
{
	struct htab n = { .cap = h->cap ? 2 * h->cap : 64 };

	n.e = xcalloc(n.cap, sizeof(*n.e));
	for (size_t i = 0; i < h->cap; i++) {
		if (h->e[i].used)
			*htab_slot(&n, h->e[i].k[0], h->e[i].k[1], h->e[i].k[2]) = h->e[i];
	}
	n.nr = h->nr;
	free(h->e);
	*h = n;
}

/* The value of key (a, b, c), or NULL. */
uint64_t *htab_find(const struct htab *h, uint64_t a, uint64_t b,
			   uint64_t c)
{
	struct hent *e;

	if (!h->cap)
		return NULL;
	e = htab_slot(h, a, b, c);
	return e->used ? &e->v : NULL;
}

/* The entry of key (a, b, c), added with 0 if new. */
static struct hent *htab_entry(struct htab *h, uint64_t a, uint64_t b,
			       uint64_t c)
{
	struct hent *e;

	/* At most half full, so that probes stay short. */
	if (2 * (h->nr + 1) > h->cap)
		htab_grow(h);
	e = htab_slot(h, a, b, c);
	if (!e->used) {
		*e = (struct hent) { .k = { a, b, c }, .used = true };
		h->nr++;
	}
	return e;
}

/* The value of key (a, b, c), added as 0 if new. */
uint64_t *htab_get(struct htab *h, uint64_t a, uint64_t b, uint64_t c)
{
	return &htab_entry(h, a, b, c)->v;
}

/* Count one sample of key (a, b, c) taken at time t. */
void count_at(struct htab *h, uint64_t a, uint64_t b, uint64_t c,
		     uint64_t t)
{
	struct hent *e = htab_entry(h, a, b, c);

	e->v++;
	if (t > e->last)
		e->last = t;
}

void htab_free(struct htab *h)
{
	free(h->e);
	memset(h, 0, sizeof(*h));
}

/* Interned strings: one copy of each, compared by address. */
static struct htab strings;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

const char *intern(const char *s)
{
	uint64_t h = hash_str(s);

	/* k[1] tells apart strings of the same hash. */
	for (uint64_t i = 0;; i++) {
		uint64_t *v = htab_get(&strings, h, i, 0);
		char *copy;

		if (*v && !strcmp((const char *)(uintptr_t)*v, s))
			return (const char *)(uintptr_t)*v;
		if (*v)
			continue;
		copy = strdup(s);
		if (!copy)
			out_of_memory();
		*v = (uintptr_t)copy;
		return copy;
	}
}

void free_strings(void)
{
	for (size_t i = 0; i < strings.cap; i++) {
		if (strings.e[i].used)
			free((void *)(uintptr_t)strings.e[i].v);
	}
	htab_free(&strings);
}
