/* SPDX-License-Identifier: GPL-2.0 */
/*
 * htmm-sample's mappings: a process's mappings, kept sorted and not
 * overlapping as mmap() would leave them, and read from /proc/PID/maps.
 */
#ifndef HTMM_SAMPLE_MAPS_H
#define HTMM_SAMPLE_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct map {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min, prot, flags;
	const char *name;	/* interned; "[anon]" for anonymous memory */
};

/* A process's mappings, sorted, not overlapping. */
struct maps {
	struct map *m;
	size_t nr, cap;
};

/* The name a mapping is shown by: perf's "//anon" and "" are "[anon]". */
const char *map_name(const char *name);
bool map_is_file(const struct map *m);
/* Anonymous memory: "[anon]" (or "[anon:NAME]"), the heap, a stack. */
bool map_is_anon(const struct map *m);

const struct map *maps_find(const struct maps *ms, uint64_t addr);
/* Add a mapping, as mmap() does. */
void maps_insert(struct maps *ms, const struct map *nm);
void maps_copy(struct maps *dst, const struct maps *src);
/* Read /proc/PID/maps into ms. */
int read_proc_maps(pid_t pid, struct maps *ms);

#endif /* HTMM_SAMPLE_MAPS_H */
