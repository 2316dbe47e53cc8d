// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: the report.  The samples of the run in three tables: the
 * pages (each in the mapping its process had when it was last sampled),
 * the mappings, and the code sites with their most frequent callers and
 * source lines, named by symbols.c; then written as text or as JSON.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <linux/perf_event.h>

#include "events.h"
#include "htab.h"
#include "maps.h"
#include "report.h"
#include "runner.h"
#include "sampler.h"
#include "sideband.h"
#include "symbols.h"
#include "util.h"

/* What ended sampling, as the report says it. */
static const char *const stop_names[] = {
	[STOP_EXIT] = "exit", [STOP_DURATION] = "duration", [STOP_SIGNAL] = "signal",
};

struct page_row {
	uint64_t page, samples;
	pid_t pid;
	const char *mapping;
};

struct map_row {
	uint64_t start, end, samples;
	pid_t pid;
	const char *name;
	bool anon;
};

struct site_row {
	const char *func, *module, *source;
	uint64_t samples;
	uint64_t best_ip, best_samples;	/* the site's hottest address */
	uint64_t best_time;
	pid_t best_pid;
	const char *caller_func, *caller_module;
	uint64_t caller_samples;
};

struct report {
	bool has_addr;
	struct page_row *pages;
	size_t nr_pages;
	struct map_row *maps;
	size_t nr_maps;
	struct site_row *sites;
	size_t nr_sites;
	uint64_t samples;	/* the sum over every table */
};

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int page_cmp(const void *a, const void *b)
{
	const struct page_row *x = a, *y = b;

	if (x->samples != y->samples)
		return cmp_u64_desc(x->samples, y->samples);
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->page < y->page ? -1 : x->page > y->page;
}

static int map_cmp(const void *a, const void *b)
{
	const struct map_row *x = a, *y = b;

	if (x->samples != y->samples)
		return cmp_u64_desc(x->samples, y->samples);
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int site_cmp(const void *a, const void *b)
{
	const struct site_row *x = a, *y = b;
	int c;

	if (x->samples != y->samples)
		return cmp_u64_desc(x->samples, y->samples);
	c = strcmp(x->func, y->func);
	return c ? c : strcmp(x->module, y->module);
}

/* Every page with samples, and the mapping it is in. */
static void build_pages(struct sampler *S, struct report *R)
{
	struct htab by_map = { 0 };	/* (pid, map) -> row + 1 */
	size_t maps_cap = 0;

	R->pages = xcalloc(S->pages.nr, sizeof(*R->pages));
	for (size_t i = 0; i < S->pages.cap; i++) {
		const struct hent *e = &S->pages.e[i];
		const struct gen *g;
		const struct map *m;
		struct page_row *row;
		uint64_t *v;

		if (!e->used)
			continue;
		g = find_gen(&S->procs, e->k[0], e->last);
		m = g ? maps_find(&g->maps, e->k[1]) : NULL;
		row = &R->pages[R->nr_pages++];
		*row = (struct page_row) {
			.pid = e->k[0], .page = e->k[1], .samples = e->v,
			.mapping = m ? m->name : intern("[unknown]"),
		};
		/* Samples outside any known mapping go to one row per process. */
		v = htab_get(&by_map, e->k[0], (uintptr_t)m, 0);
		if (!*v) {
			GROW(R->maps, R->nr_maps, maps_cap);
			R->maps[R->nr_maps] = (struct map_row) {
				.pid = e->k[0], .start = m ? m->start : 0,
				.end = m ? m->end : 0, .name = row->mapping,
				.anon = m && map_is_anon(m),
			};
			*v = ++R->nr_maps;
		}
		R->maps[*v - 1].samples += e->v;
	}
	htab_free(&by_map);
	qsort(R->pages, R->nr_pages, sizeof(*R->pages), page_cmp);
	qsort(R->maps, R->nr_maps, sizeof(*R->maps), map_cmp);
}

/* The site row of where w, added if new. */
static struct site_row *site_of(struct report *R, struct htab *idx,
				size_t *cap, const struct where *w)
{
	uint64_t *v = htab_get(idx, (uintptr_t)w->func, (uintptr_t)w->module, 0);

	if (!*v) {
		GROW(R->sites, R->nr_sites, *cap);
		R->sites[R->nr_sites] = (struct site_row) {
			.func = w->func, .module = w->module,
		};
		*v = ++R->nr_sites;
	}
	return &R->sites[*v - 1];
}

/* What build_sites() builds, as it goes. */
struct site_build {
	struct report *R;
	const struct hent *const *code;	/* the code entries looked up */
	struct htab idx;		/* (func, module) -> site + 1 */
	size_t cap;
	struct htab callers;		/* (site, func, module) -> samples */
};

/* Add the samples of (pid, ip, caller) to its site and its caller's tally. */
static void add_code(void *arg, Dwfl *dwfl, const struct lookup *l)
{
	struct site_build *b = arg;
	const struct hent *e = b->code[l->i];
	struct where w, cw;
	struct site_row *site;
	size_t row;

	resolve(dwfl, l->g, e->k[1], &w);
	site = site_of(b->R, &b->idx, &b->cap, &w);
	site->samples += e->v;
	if (e->v > site->best_samples) {
		site->best_samples = e->v;
		site->best_ip = e->k[1];
		site->best_pid = e->k[0];
		site->best_time = e->last;
	}
	if (!e->k[2])
		return;
	row = site - b->R->sites;
	resolve(dwfl, l->g, e->k[2], &cw);
	*htab_get(&b->callers, row, (uintptr_t)cw.func, (uintptr_t)cw.module) += e->v;
}

/*
 * The code sites, each with its most frequent caller: named one address
 * space at a time (see for_each_lookup()).
 */
static void build_sites(struct sampler *S, struct report *R)
{
	struct site_build b = { .R = R };
	const struct hent **code = xcalloc(S->code.nr, sizeof(*code));
	struct lookup *l = xcalloc(S->code.nr, sizeof(*l));
	struct where kernel = { intern("[kernel]"), intern("[kernel]"), NULL };
	size_t n = 0;

	for (size_t i = 0; i < S->code.cap; i++) {
		const struct hent *e = &S->code.e[i];

		if (!e->used)
			continue;
		if (e->k[0] == KERNEL_KEY) {
			site_of(R, &b.idx, &b.cap, &kernel)->samples += e->v;
			continue;
		}
		code[n] = e;
		l[n] = (struct lookup) {
			.g = find_gen(&S->procs, e->k[0], e->last), .pid = e->k[0], .i = n,
		};
		n++;
	}
	b.code = code;
	for_each_lookup(l, n, add_code, &b);
	for (size_t i = 0; i < b.callers.cap; i++) {
		const struct hent *e = &b.callers.e[i];
		struct site_row *site;

		if (!e->used)
			continue;
		site = &R->sites[e->k[0]];
		if (e->v > site->caller_samples) {
			site->caller_samples = e->v;
			site->caller_func = (const char *)(uintptr_t)e->k[1];
			site->caller_module = (const char *)(uintptr_t)e->k[2];
		}
	}
	free(code);
	free(l);
	htab_free(&b.idx);
	htab_free(&b.callers);
	qsort(R->sites, R->nr_sites, sizeof(*R->sites), site_cmp);
}

static void add_source(void *arg, Dwfl *dwfl, const struct lookup *l)
{
	struct site_row *s = &((struct report *)arg)->sites[l->i];
	struct where w;

	resolve(dwfl, l->g, s->best_ip, &w);
	s->source = source_of(w.mod, s->best_ip);
}

/* The source line of the top sites' hottest addresses, where known. */
static void add_sources(struct sampler *S, struct report *R, size_t top)
{
	struct lookup *l = xcalloc(top < R->nr_sites ? top : R->nr_sites, sizeof(*l));
	size_t n = 0;

	for (size_t i = 0; i < R->nr_sites && i < top; i++) {
		const struct site_row *s = &R->sites[i];

		if (s->best_samples)
			l[n++] = (struct lookup) {
				.g = find_gen(&S->procs, s->best_pid, s->best_time),
				.pid = s->best_pid, .i = i,
			};
	}
	for_each_lookup(l, n, add_source, R);
	free(l);
}

static void build_report(struct sampler *S, struct report *R)
{
	memset(R, 0, sizeof(*R));
	R->has_addr = S->attr.sample_type & PERF_SAMPLE_ADDR;
	if (R->has_addr)
		build_pages(S, R);
	build_sites(S, R);
	add_sources(S, R, S->o->top);
	for (size_t i = 0; i < R->nr_sites; i++)
		R->samples += R->sites[i].samples;
}

static void free_report(struct report *R)
{
	free(R->pages);
	free(R->maps);
	free(R->sites);
}

static double pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * n / total : 0.0;
}

static uint64_t rest_pages(const struct report *R, size_t top)
{
	uint64_t n = 0;

	for (size_t i = top; i < R->nr_pages; i++)
		n += R->pages[i].samples;
	return n;
}

static uint64_t rest_maps(const struct report *R, size_t top)
{
	uint64_t n = 0;

	for (size_t i = top; i < R->nr_maps; i++)
		n += R->maps[i].samples;
	return n;
}

static uint64_t rest_sites(const struct report *R, size_t top)
{
	uint64_t n = 0;

	for (size_t i = top; i < R->nr_sites; i++)
		n += R->sites[i].samples;
	return n;
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/*
 * The records lost: those the PMU said it lost, and those that did not
 * fit in a ring, as LOST records told or, if more, as the events count.
 */
static uint64_t total_lost(const struct sampler *S)
{
	uint64_t ring = S->counts.lost - S->pmu_lost;

	return S->pmu_lost + (S->kernel_lost > ring ? S->kernel_lost : ring);
}

/* ---- text ---- */

static void text_target(FILE *f, const struct sampler *S, const struct run_state *st)
{
	if (S->o->cmd) {
		fputs("target:     ", f);
		for (char **a = S->o->cmd; *a; a++)
			fprintf(f, "%s%s", a == S->o->cmd ? "" : " ", *a);
		fprintf(f, " (pid %d", (int)S->target);
		if (st->reaped && WIFEXITED(st->status))
			fprintf(f, ", exit status %d)\n", WEXITSTATUS(st->status));
		else if (st->reaped && WIFSIGNALED(st->status))
			fprintf(f, ", killed by signal %d)\n", WTERMSIG(st->status));
		else
			fputs(")\n", f);
	} else {
		fprintf(f, "target:     pid %d\n", (int)S->target);
	}
}

static void text_header(FILE *f, const struct sampler *S, const struct run_state *st)
{
	const struct event_def *ev = S->o->ev;

	fprintf(f, PROG " " VERSION "\n");
	text_target(f, S, st);
	fprintf(f, "event:      %s, a sample every %" PRIu64 " %s, %s%s\n",
		ev->name, (uint64_t)S->attr.sample_period,
		S->attr.sample_period == 1 ? ev->unit : ev->units,
		S->attr.exclude_kernel ? "user space only" : "user and kernel space",
		S->o->callchain ? ", with callchains" : "");
	fprintf(f, "duration:   %.3f s (ended by %s)\n", S->t1 - S->t0,
		stop_names[st->why]);
	fprintf(f, "samples:    %" PRIu64 "\n", S->counts.samples);
	fprintf(f, "lost:       %" PRIu64 "   throttled: %" PRIu64 "   unthrottled: %"
		PRIu64 "   malformed: %" PRIu64 "\n", total_lost(S),
		S->counts.throttled, S->counts.unthrottled,
		S->counts.malformed + S->sb.malformed);
	if (total_lost(S) > S->pmu_lost)
		fprintf(f, "            (records were lost when a ring was full: "
			"a larger -m would keep them)\n");
}

static void text_pages(FILE *f, const struct report *R, size_t top)
{
	size_t n = min_size(top, R->nr_pages);

	fprintf(f, "\nhottest pages (%zu pages with samples)\n", R->nr_pages);
	fprintf(f, "  %-18s %8s %10s  %s\n", "page", "pid", "samples", "mapping");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  0x%016" PRIx64 " %8d %10" PRIu64 "  %s\n", R->pages[i].page,
			(int)R->pages[i].pid, R->pages[i].samples, R->pages[i].mapping);
	if (R->nr_pages > n)
		fprintf(f, "  (%zu more pages: %" PRIu64 " samples)\n",
			R->nr_pages - n, rest_pages(R, n));
}

static void text_maps(FILE *f, const struct report *R, size_t top)
{
	size_t n = min_size(top, R->nr_maps);

	fprintf(f, "\nhottest mappings\n");
	fprintf(f, "  %10s %7s %8s  %-37s  %s\n", "samples", "%", "pid", "range", "mapping");
	for (size_t i = 0; i < n; i++) {
		const struct map_row *m = &R->maps[i];
		char range[48] = "-";

		if (m->end)
			snprintf(range, sizeof(range), "0x%" PRIx64 "-0x%" PRIx64,
				 m->start, m->end);
		fprintf(f, "  %10" PRIu64 " %7.2f %8d  %-37s  %s\n", m->samples,
			pct(m->samples, R->samples), (int)m->pid, range, m->name);
	}
	if (R->nr_maps > n)
		fprintf(f, "  (%zu more mappings: %" PRIu64 " samples)\n",
			R->nr_maps - n, rest_maps(R, n));
}

/* "[module]" in buf, unless it is in brackets already ("[vdso]"). */
static const char *bracketed(const char *module, char *buf, size_t size)
{
	if (module[0] == '[')
		return module;
	snprintf(buf, size, "[%s]", module);
	return buf;
}

static void text_sites(FILE *f, const struct report *R, size_t top, bool callchain)
{
	size_t n = min_size(top, R->nr_sites);

	fprintf(f, "\ncode sites\n");
	fprintf(f, "  %10s %7s  %s\n", "samples", "%", "function [module]");
	for (size_t i = 0; i < n; i++) {
		const struct site_row *s = &R->sites[i];
		char buf[PATH_MAX + 2];

		fprintf(f, "  %10" PRIu64 " %7.2f  %s %s", s->samples,
			pct(s->samples, R->samples), s->func,
			bracketed(s->module, buf, sizeof(buf)));
		if (s->source)
			fprintf(f, " at %s", s->source);
		fputc('\n', f);
		if (callchain && s->caller_func)
			fprintf(f, "  %10s %7s    called most from %s %s (%.1f%%)\n", "", "",
				s->caller_func,
				bracketed(s->caller_module, buf, sizeof(buf)),
				pct(s->caller_samples, s->samples));
	}
	if (R->nr_sites > n)
		fprintf(f, "  (%zu more sites: %" PRIu64 " samples)\n",
			R->nr_sites - n, rest_sites(R, n));
}

static void print_text(FILE *f, const struct sampler *S, const struct run_state *st,
		       const struct report *R)
{
	size_t top = S->o->top;

	text_header(f, S, st);
	if (R->has_addr) {
		text_pages(f, R, top);
		text_maps(f, R, top);
	} else {
		fprintf(f, "\n(%s samples carry no data address: no page tables)\n",
			S->o->ev->name);
	}
	text_sites(f, R, top, S->o->callchain);
}

/* ---- JSON ---- */

/* The length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	/* No overlong forms, no surrogates, nothing above U+10FFFF. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	}
	return n;
}

/* A JSON string; bytes that are not UTF-8 (a file name's) become U+FFFD. */
static void json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*s) {
		size_t n = utf8_len(s);

		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s < 0x20 || *s == 0x7f)
			fprintf(f, "\\u%04x", *s);
		else if (!n)
			fputs("\\ufffd", f);
		else
			fwrite(s, 1, n, f);
		s += n ? n : 1;
	}
	fputc('"', f);
}

static void json_target(FILE *f, const struct sampler *S, const struct run_state *st)
{
	fputs("  \"target\": {", f);
	if (S->o->cmd) {
		fputs("\"command\": [", f);
		for (char **a = S->o->cmd; *a; a++) {
			fputs(a == S->o->cmd ? "" : ", ", f);
			json_str(f, *a);
		}
		fputs("], ", f);
	}
	fprintf(f, "\"pid\": %d", (int)S->target);
	if (S->o->cmd && st->reaped && WIFEXITED(st->status))
		fprintf(f, ", \"exit_status\": %d", WEXITSTATUS(st->status));
	else if (S->o->cmd && st->reaped && WIFSIGNALED(st->status))
		fprintf(f, ", \"signal\": %d", WTERMSIG(st->status));
	fputs("},\n", f);
}

static void json_pages(FILE *f, const struct report *R, size_t top)
{
	size_t n = min_size(top, R->nr_pages);

	fprintf(f, "  \"pages\": {\"distinct\": %zu, \"rest_samples\": %" PRIu64
		", \"top\": [", R->nr_pages, rest_pages(R, n));
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s\n    {\"address\": \"0x%" PRIx64 "\", \"pid\": %d, "
			"\"samples\": %" PRIu64 ", \"mapping\": ", i ? "," : "",
			R->pages[i].page, (int)R->pages[i].pid, R->pages[i].samples);
		json_str(f, R->pages[i].mapping);
		fputc('}', f);
	}
	fputs("]},\n", f);
}

static void json_maps(FILE *f, const struct report *R, size_t top)
{
	size_t n = min_size(top, R->nr_maps);

	fprintf(f, "  \"mappings\": {\"distinct\": %zu, \"rest_samples\": %" PRIu64
		", \"top\": [", R->nr_maps, rest_maps(R, n));
	for (size_t i = 0; i < n; i++) {
		const struct map_row *m = &R->maps[i];

		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_str(f, m->name);
		fprintf(f, ", \"pid\": %d, \"start\": \"0x%" PRIx64 "\", \"end\": \"0x%"
			PRIx64 "\", \"anonymous\": %s, \"samples\": %" PRIu64
			", \"percent\": %.2f}", (int)m->pid, m->start, m->end,
			m->anon ? "true" : "false", m->samples, pct(m->samples, R->samples));
	}
	fputs("]},\n", f);
}

static void json_sites(FILE *f, const struct report *R, size_t top)
{
	size_t n = min_size(top, R->nr_sites);

	fprintf(f, "  \"code_sites\": {\"distinct\": %zu, \"rest_samples\": %" PRIu64
		", \"top\": [", R->nr_sites, rest_sites(R, n));
	for (size_t i = 0; i < n; i++) {
		const struct site_row *s = &R->sites[i];

		fprintf(f, "%s\n    {\"function\": ", i ? "," : "");
		json_str(f, s->func);
		fputs(", \"module\": ", f);
		json_str(f, s->module);
		fprintf(f, ", \"samples\": %" PRIu64 ", \"percent\": %.2f, \"source\": ",
			s->samples, pct(s->samples, R->samples));
		json_str(f, s->source);
		fputs(", \"caller\": ", f);
		if (s->caller_func) {
			fputs("{\"function\": ", f);
			json_str(f, s->caller_func);
			fputs(", \"module\": ", f);
			json_str(f, s->caller_module);
			fprintf(f, ", \"samples\": %" PRIu64 "}", s->caller_samples);
		} else {
			fputs("null", f);
		}
		fputc('}', f);
	}
	fputs("]}\n", f);
}

static void print_json(FILE *f, const struct sampler *S, const struct run_state *st,
		       const struct report *R)
{
	size_t top = S->o->top;

	fputs("{\n  \"tool\": \"" PROG "\",\n  \"version\": \"" VERSION "\",\n", f);
	json_target(f, S, st);
	fputs("  \"event\": ", f);
	json_str(f, S->o->ev->name);
	fprintf(f, ",\n  \"period\": %" PRIu64 ",\n  \"callchains\": %s,\n"
		"  \"user_only\": %s,\n  \"duration_s\": %.3f,\n  \"ended_by\": \"%s\",\n",
		(uint64_t)S->attr.sample_period, S->o->callchain ? "true" : "false",
		S->attr.exclude_kernel ? "true" : "false", S->t1 - S->t0,
		stop_names[st->why]);
	fprintf(f, "  \"samples\": %" PRIu64 ",\n  \"lost\": %" PRIu64 ",\n"
		"  \"throttled\": %" PRIu64 ",\n  \"unthrottled\": %" PRIu64 ",\n"
		"  \"malformed\": %" PRIu64 ",\n", S->counts.samples, total_lost(S),
		S->counts.throttled, S->counts.unthrottled,
		S->counts.malformed + S->sb.malformed);
	if (R->has_addr) {
		json_pages(f, R, top);
		json_maps(f, R, top);
	} else {
		fputs("  \"pages\": null,\n  \"mappings\": null,\n", f);
	}
	json_sites(f, R, top);
	fputs("}\n", f);
}

/* Write the report; 0, or -1 if it could not be written. */
int write_report(struct sampler *S, const struct run_state *st, FILE *out)
{
	struct report R;
	int ret = 0;

	build_report(S, &R);
	/* Every sample is in every table once. */
	if (R.samples != S->counts.samples ||
	    (R.has_addr && rest_maps(&R, 0) != S->counts.samples))
		error("internal error: %" PRIu64 " samples read, %" PRIu64 " in the tables",
		      S->counts.samples, R.samples);
	if (S->o->json)
		print_json(out, S, st, &R);
	else
		print_text(out, S, st, &R);
	free_report(&R);
	if (fflush(out) || ferror(out)) {
		error("%s: %s", S->o->output ? S->o->output : "stdout", strerror(errno));
		ret = -1;
	}
	return ret;
}

