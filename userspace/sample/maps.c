// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: the mappings of an address space, what a mapping is (a
 * file's, anonymous memory), and /proc/PID/maps.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "htab.h"
#include "maps.h"
#include "util.h"

/* The name a mapping is shown by: perf's "//anon" and "" are "[anon]". */
const char *map_name(const char *name)
{
	if (!name[0] || !strcmp(name, "//anon"))
		return intern("[anon]");
	return intern(name);
}

bool map_is_file(const struct map *m)
{
	return m->name[0] == '/' && (m->ino || m->maj || m->min);
}

/* Anonymous memory: "[anon]" (or "[anon:NAME]"), the heap, a stack. */
bool map_is_anon(const struct map *m)
{
	return !strncmp(m->name, "[anon", 5) || !strcmp(m->name, "[heap]") ||
	       !strncmp(m->name, "[stack", 6);
}

/* The index of the first mapping that ends above addr. */
static size_t maps_lower(const struct maps *ms, uint64_t addr)
{
	size_t lo = 0, hi = ms->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ms->m[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct map *maps_find(const struct maps *ms, uint64_t addr)
{
	size_t i = maps_lower(ms, addr);

	return i < ms->nr && ms->m[i].start <= addr ? &ms->m[i] : NULL;
}

/*
 * Add a mapping, as mmap() does: what it overlaps is unmapped, the parts of
 * mappings it overlaps in part are kept.
 */
void maps_insert(struct maps *ms, const struct map *nm)
{
	struct map repl[3];
	size_t i = maps_lower(ms, nm->start), j = i, n = 0;

	if (nm->end <= nm->start)
		return;
	while (j < ms->nr && ms->m[j].start < nm->end)
		j++;
	if (i < j && ms->m[i].start < nm->start) {
		repl[n] = ms->m[i];
		repl[n++].end = nm->start;
	}
	repl[n++] = *nm;
	if (i < j && ms->m[j - 1].end > nm->end) {
		repl[n] = ms->m[j - 1];
		repl[n].pgoff += nm->end - repl[n].start;
		repl[n++].start = nm->end;
	}
	/* Replace m[i, j) by repl[0, n). */
	while (ms->nr + n - (j - i) > ms->cap) {
		ms->cap = ms->cap ? 2 * ms->cap : 16;
		ms->m = xrealloc_array(ms->m, ms->cap, sizeof(*ms->m));
	}
	memmove(&ms->m[i + n], &ms->m[j], (ms->nr - j) * sizeof(*ms->m));
	memcpy(&ms->m[i], repl, n * sizeof(*repl));
	ms->nr = ms->nr + n - (j - i);
}

void maps_copy(struct maps *dst, const struct maps *src)
{
	dst->nr = 0;
	if (dst->cap < src->nr) {
		dst->cap = src->nr;
		dst->m = xrealloc_array(dst->m, dst->cap, sizeof(*dst->m));
	}
	if (src->nr)
		memcpy(dst->m, src->m, src->nr * sizeof(*src->m));
	dst->nr = src->nr;
}

/* One line of /proc/PID/maps into *m; false if it is not one. */
static bool parse_maps_line(const char *line, struct map *m)
{
	char perms[8], name[PATH_MAX];
	int nread = -1;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &m->start, &m->end, perms, &m->pgoff, &m->maj, &m->min,
		   &m->ino, &nread) < 7 || nread < 0 || strlen(perms) < 4)
		return false;
	m->prot = (perms[0] == 'r' ? PROT_READ : 0) |
		  (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	m->flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	snprintf(name, sizeof(name), "%s", line + nread);
	name[strcspn(name, "\n")] = '\0';
	m->name = map_name(name);
	return true;
}

/* Read /proc/PID/maps into ms. */
int read_proc_maps(pid_t pid, struct maps *ms)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	struct map m;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		if (parse_maps_line(line, &m))
			maps_insert(ms, &m);
	}
	free(line);
	fclose(f);
	return 0;
}

