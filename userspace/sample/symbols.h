/* SPDX-License-Identifier: GPL-2.0 */
/*
 * htmm-sample's symbols: code addresses named with elfutils' libdwfl, one
 * session per address space at a time.
 */
#ifndef HTMM_SAMPLE_SYMBOLS_H
#define HTMM_SAMPLE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <elfutils/libdwfl.h>

#include "sideband.h"

struct where {
	const char *func;	/* interned */
	const char *module;	/* interned */
	Dwfl_Module *mod;	/* NULL if libdwfl does not know it */
};

/* Name the code at ip in the address space g (or NULL), with dwfl (or NULL). */
void resolve(Dwfl *dwfl, const struct gen *g, uint64_t ip, struct where *w);

/* Something to name in the address space g of pid (g may be NULL). */
struct lookup {
	const struct gen *g;
	pid_t pid;
	size_t i;		/* what: an index in the caller's table */
};

/*
 * Sort the lookups l[0, n) by address space, and call fn for each with a
 * libdwfl session of its address space (or NULL), one session at a time.
 */
void for_each_lookup(struct lookup *l, size_t n,
		     void (*fn)(void *arg, Dwfl *dwfl, const struct lookup *l),
		     void *arg);
/* "file.c:42" for ip, if there is debug information; else NULL. */
const char *source_of(Dwfl_Module *mod, uint64_t ip);
/* Free what naming kept: our vDSO's image, the files said unopened. */
void free_symbols(void);

#endif /* HTMM_SAMPLE_SYMBOLS_H */
