// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: symbols.  The mappings of an address space are reported
 * to libdwfl as modules (a run of one file's mappings each, and the vDSO
 * from our own image), and libdwfl names the functions and source lines:
 * no ELF is parsed here.  A file that cannot be opened is said once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

#include "htab.h"
#include "maps.h"
#include "sideband.h"
#include "symbols.h"
#include "util.h"

static char *debuginfo_path;

/* Our own vDSO's image, and its size; looked for on first use. */
static char *vdso_image;
static size_t vdso_size;
static bool vdso_looked_for;

/*
 * The vDSO is in no file, and the process may be gone, but its image is
 * ours, that of every process of our ABI on this kernel (as perf assumes
 * too); a vDSO of another size is of another ABI, and is left unnamed.
 */
static void find_vdso(void)
{
	struct maps self = { 0 };
	const char *name = intern("[vdso]");

	vdso_looked_for = true;
	if (read_proc_maps(getpid(), &self))
		return;
	for (size_t i = 0; i < self.nr && !vdso_image; i++) {
		const struct map *m = &self.m[i];

		if (m->name != name)
			continue;
		vdso_size = m->end - m->start;
		vdso_image = xcalloc(1, vdso_size);
		memcpy(vdso_image, (const void *)(uintptr_t)m->start, vdso_size);
	}
	free(self.m);
}

static void free_vdso(void)
{
	free(vdso_image);
	vdso_image = NULL;
	vdso_looked_for = false;
}

/* The files that could not be opened, each said once: path -> 1. */
static struct htab unopened;

static void say_unopened(const char *path, int err)
{
	uint64_t *said = htab_get(&unopened, (uintptr_t)intern(path), 0, 0);

	if (*said)
		return;
	*said = 1;
	error("%s: %s: its functions go unnamed", path, strerror(err));
}

/*
 * libdwfl's find_elf: the file a module is named after, or for the vDSO
 * our own image.  As dwfl_linux_proc_find_elf, but a file that cannot be
 * opened is said, and a file is opened for as long as its module lives.
 */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name,
		    Dwarf_Addr base, char **file_name, Elf **elfp)
{
	struct stat st;
	int fd;

	(void)mod;
	(void)userdata;
	(void)base;
	if (!strcmp(name, "[vdso]")) {
		/* libdwfl ends the Elf, and leaves the image alone. */
		if (vdso_image)
			*elfp = elf_memory(vdso_image, vdso_size);
		return -1;
	}
	if (name[0] != '/')
		return -1;
	/* Regular files only: a device's open() may block, or do something. */
	if (stat(name, &st)) {
		say_unopened(name, errno);
		return -1;
	}
	if (!S_ISREG(st.st_mode))
		return -1;
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say_unopened(name, errno);
		return -1;
	}
	*file_name = strdup(name);
	if (!*file_name) {
		close(fd);
		out_of_memory();
	}
	return fd;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static void report_module(Dwfl *dwfl, pid_t pid, const char *name,
			  uint64_t low, uint64_t high)
{
	if (!dwfl_report_module(dwfl, name, low, high))
		error("pid %d: %s at 0x%" PRIx64 "-0x%" PRIx64 ": dwfl_report_module: %s",
		      (int)pid, name, low, high, dwfl_errmsg(-1));
}

/* Do two mappings map the same file? */
static bool same_file(const struct map *a, const struct map *b)
{
	return a->ino == b->ino && a->maj == b->maj && a->min == b->min &&
	       a->name == b->name;
}

/*
 * Report the modules of ms to libdwfl, as dwfl_linux_proc_maps_report()
 * would from /proc/PID/maps: each run of mappings of one file (with other
 * memory between them) is a module from the start of its first to the end
 * of its last; the vDSO is one too.  A file's name is given as it is:
 * no text to parse, so that no name can be misread.
 */
static void report_modules(Dwfl *dwfl, const struct maps *ms, pid_t pid)
{
	const char *vdso = intern("[vdso]");
	const struct map *first = NULL;	/* of the file being reported */
	uint64_t high = 0;

	if (!vdso_looked_for)
		find_vdso();
	for (size_t i = 0; i < ms->nr; i++) {
		const struct map *m = &ms->m[i];
		bool is_vdso = m->name == vdso && vdso_image &&
			       m->end - m->start == vdso_size;

		if (!is_vdso && !map_is_file(m))
			continue;	/* no module of its own, no end of one */
		if (first && !is_vdso && same_file(first, m)) {
			high = m->end;
			continue;
		}
		if (first)
			report_module(dwfl, pid, first->name, first->start, high);
		first = NULL;
		if (is_vdso) {
			report_module(dwfl, pid, vdso, m->start, m->end);
			continue;
		}
		first = m;
		high = m->end;
	}
	if (first)
		report_module(dwfl, pid, first->name, first->start, high);
}

/*
 * A libdwfl session for the address space g of pid: its modules, and what
 * they are named by; NULL if it cannot be had.  It holds the files it has
 * opened until the caller ends it (dwfl_end()).
 */
static Dwfl *gen_dwfl(const struct gen *g, pid_t pid)
{
	Dwfl *dwfl = dwfl_begin(&dwfl_callbacks);

	if (!dwfl) {
		error("pid %d: dwfl_begin: %s", (int)pid, dwfl_errmsg(-1));
		return NULL;
	}
	dwfl_report_begin(dwfl);
	report_modules(dwfl, &g->maps, pid);
	if (dwfl_report_end(dwfl, NULL, NULL))
		error("pid %d: dwfl_report_end: %s", (int)pid, dwfl_errmsg(-1));
	return dwfl;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* Name the code at ip in the address space g (or NULL), with dwfl (or NULL). */
void resolve(Dwfl *dwfl, const struct gen *g, uint64_t ip, struct where *w)
{
	const struct map *m = g ? maps_find(&g->maps, ip) : NULL;
	const char *name;

	w->func = intern("[unknown]");
	w->module = intern(m ? basename_of(m->name) : "[unknown]");
	w->mod = dwfl ? dwfl_addrmodule(dwfl, ip) : NULL;
	if (!w->mod)
		return;
	name = dwfl_module_info(w->mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	if (name)
		w->module = intern(basename_of(name));
	name = dwfl_module_addrname(w->mod, ip);
	if (name)
		w->func = intern(name);
}

/* By address space, so that each is one session; then in table order. */
static int lookup_cmp(const void *a, const void *b)
{
	const struct lookup *x = a, *y = b;

	if (x->g != y->g)
		return (uintptr_t)x->g < (uintptr_t)y->g ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Sort the lookups l[0, n) by address space, and call fn for each with a
 * libdwfl session of its address space (or NULL), one session at a time.
 */
void for_each_lookup(struct lookup *l, size_t n,
			    void (*fn)(void *arg, Dwfl *dwfl, const struct lookup *l),
			    void *arg)
{
	qsort(l, n, sizeof(*l), lookup_cmp);
	for (size_t i = 0; i < n;) {
		const struct gen *g = l[i].g;
		Dwfl *dwfl = g ? gen_dwfl(g, l[i].pid) : NULL;

		for (; i < n && l[i].g == g; i++)
			fn(arg, dwfl, &l[i]);
		if (dwfl)
			dwfl_end(dwfl);
	}
}

/* "file.c:42" for ip, if there is debug information; else NULL. */
const char *source_of(Dwfl_Module *mod, uint64_t ip)
{
	Dwfl_Line *line = mod ? dwfl_module_getsrc(mod, ip) : NULL;
	const char *file;
	char buf[PATH_MAX + 32];
	int lineno = 0;

	if (!line)
		return NULL;
	file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
	if (!file)
		return NULL;
	snprintf(buf, sizeof(buf), "%s:%d", basename_of(file), lineno);
	return intern(buf);
}

/* Free what naming kept: our vDSO's image, the files said unopened. */
void free_symbols(void)
{
	free_vdso();
	htab_free(&unopened);
}
