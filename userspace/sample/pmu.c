// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: the PMUs of sysfs (/sys/bus/event_source/devices).  The
 * CPUs an event can be opened on, from the online CPUs and its PMU's cpus
 * or cpumask; a PEBS event's attr from its CPU PMU's alias and format
 * files; IBS op's.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include "events.h"
#include "pmu.h"
#include "sampler.h"
#include "util.h"

/* The most precise PEBS level asked for; lower ones are tried next. */
#define MAX_PRECISE_IP		3
#define SYSFS_PMU		"/sys/bus/event_source/devices"

#define ONLINE_PATH	"/sys/devices/system/cpu/online"

/*
 * The CPUs of a CPU list file ("0-3,5"), in *cpus; -1 with errno if it
 * cannot be opened.
 */
static int read_cpulist(const char *path, int **cpus, size_t *nr)
{
	FILE *f = fopen(path, "re");
	size_t cap = 0;
	int a, b;
	char sep;

	*cpus = NULL;
	*nr = 0;
	if (!f)
		return -1;
	while (fscanf(f, "%d", &a) == 1) {
		b = a;
		sep = '\n';
		if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			if (fscanf(f, "%c", &sep) != 1)
				sep = '\n';
		}
		for (int c = a; c <= b; c++) {
			GROW(*cpus, *nr, cap);
			(*cpus)[(*nr)++] = c;
		}
		if (sep != ',')
			break;
	}
	fclose(f);
	return 0;
}

static bool has_cpu(const int *cpus, size_t nr, int cpu)
{
	for (size_t i = 0; i < nr; i++) {
		if (cpus[i] == cpu)
			return true;
	}
	return false;
}

/*
 * The CPUs to open the events on: the online ones; for a PMU event, those
 * of them that the PMU's sysfs cpus (or cpumask) file lists, if it has
 * one: a hybrid CPU's cpu_core PMU has no counters on its other cores.
 */
int event_cpus(const struct sampler *S, int **cpus, size_t *nr)
{
	static const char *const files[] = { "cpus", "cpumask" };
	char path[PATH_MAX];
	int *pmu_cpus = NULL;
	size_t nr_pmu = 0, n = 0;
	bool listed = false;

	if (read_cpulist(ONLINE_PATH, cpus, nr)) {
		error("%s: %s", ONLINE_PATH, strerror(errno));
		return -1;
	}
	if (!*nr) {
		error("%s: no CPU found in it", ONLINE_PATH);
		return -1;
	}
	for (size_t i = 0; S->pmu && !listed && i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), SYSFS_PMU "/%s/%s", S->pmu, files[i]);
		listed = !read_cpulist(path, &pmu_cpus, &nr_pmu);
		if (!listed && errno != ENOENT) {
			error("%s: %s: %s", S->o->ev->name, path, strerror(errno));
			return -1;
		}
	}
	if (!listed)
		return 0;	/* every online CPU */
	for (size_t i = 0; i < *nr; i++) {
		if (has_cpu(pmu_cpus, nr_pmu, (*cpus)[i]))
			(*cpus)[n++] = (*cpus)[i];
	}
	free(pmu_cpus);
	*nr = n;
	if (!n) {
		error("%s: %s lists no online CPU: the %s PMU cannot sample here",
		      S->o->ev->name, path, S->pmu);
		return -1;
	}
	return 0;
}

/*
 * Put value v into the attr fields a PMU format says, e.g. "config:0-7"
 * or "config1:0-15" or "config:0-7,32-35": the bits of v fill the ranges
 * in turn.
 */
static int apply_format(struct perf_event_attr *attr, const char *format,
			uint64_t v)
{
	char field[16];
	const char *p;
	__u64 *dst;
	int n = 0;

	if (sscanf(format, "%15[a-z0-9]:%n", field, &n) != 1 || !n)
		return -1;
	if (!strcmp(field, "config"))
		dst = &attr->config;
	else if (!strcmp(field, "config1"))
		dst = &attr->config1;
	else if (!strcmp(field, "config2"))
		dst = &attr->config2;
#ifdef PERF_ATTR_SIZE_VER8
	else if (!strcmp(field, "config3"))
		dst = &attr->config3;
#endif
	else
		return -1;
	for (p = format + n; *p;) {
		unsigned int lo, hi;
		int used = 0;

		if (sscanf(p, "%u%n", &lo, &used) != 1)
			return -1;
		p += used;
		hi = lo;
		if (*p == '-' && sscanf(p + 1, "%u%n", &hi, &used) == 1)
			p += 1 + used;
		if (hi < lo || hi > 63)
			return -1;
		for (unsigned int bit = lo; bit <= hi; bit++, v >>= 1)
			*dst |= (v & 1) << bit;
		if (*p == ',')
			p++;
		else if (*p && !isspace((unsigned char)*p))
			return -1;
		else
			break;
	}
	return 0;
}

/* Read a sysfs file's first line into buf. */
static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return -1;
	ok = fgets(buf, size, f) != NULL;
	fclose(f);
	if (!ok) {
		errno = EINVAL;
		return -1;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* One term of an alias ("event=0xcd", "ldlat=3", "pebs") into attr. */
static int apply_term(struct perf_event_attr *attr, const char *pmu,
		      const char *event, char *term)
{
	char path[PATH_MAX], format[128], *eq = strchr(term, '='), *end;
	uint64_t v = 1;

	if (eq) {
		*eq = '\0';
		errno = 0;
		v = strtoull(eq + 1, &end, 0);
		if (errno || end == eq + 1 || *end) {
			error("%s: %s/%s/events/%s: cannot use '%s=%s'", event,
			      SYSFS_PMU, pmu, event, term, eq + 1);
			return -1;
		}
	}
	snprintf(path, sizeof(path), SYSFS_PMU "/%s/format/%s", pmu, term);
	if (read_line(path, format, sizeof(format))) {
		error("%s: %s: %s", event, path, strerror(errno));
		return -1;
	}
	if (apply_format(attr, format, v)) {
		error("%s: %s: cannot use the format '%s'", event, path, format);
		return -1;
	}
	return 0;
}

/*
 * A CPU PMU's event alias, as perf would read it: the PMU type, and the
 * alias's terms placed into config* by the PMU's format files.  The PMU's
 * name goes into *pmu_name.
 */
int pmu_alias_attr(const char *event, struct perf_event_attr *attr,
			  const char **pmu_name)
{
	/* "cpu" on most Intel CPUs, "cpu_core" for the big cores of hybrids. */
	static const char *const pmus[] = { "cpu", "cpu_core" };
	char path[PATH_MAX], alias[256], *save, *term;
	const char *pmu = NULL;
	long type;

	for (size_t i = 0; i < sizeof(pmus) / sizeof(pmus[0]) && !pmu; i++) {
		snprintf(path, sizeof(path), SYSFS_PMU "/%s/events/%s", pmus[i], event);
		if (!read_line(path, alias, sizeof(alias)))
			pmu = pmus[i];
	}
	if (!pmu) {
		error("%s: this CPU has no such event (no %s/cpu/events/%s nor "
		      "%s/cpu_core/events/%s): it needs an Intel CPU with PEBS, "
		      "and a kernel that exposes its PMU", event, SYSFS_PMU, event,
		      SYSFS_PMU, event);
		return -1;
	}
	snprintf(path, sizeof(path), SYSFS_PMU "/%s/type", pmu);
	type = read_long_file(path);
	if (type < 0) {
		error("%s: %s: %s", event, path, strerror(errno));
		return -1;
	}
	attr->type = type;
	*pmu_name = pmu;
	for (term = strtok_r(alias, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
		if (apply_term(attr, pmu, event, term))
			return -1;
	}
	/* PEBS: the sampled IP and address are those of the access. */
	attr->precise_ip = MAX_PRECISE_IP;
	return 0;
}

int ibs_op_attr(const char *event, struct perf_event_attr *attr,
		       const char **pmu_name)
{
	long type = read_long_file(SYSFS_PMU "/ibs_op/type");

	if (type < 0) {
		error("%s: this CPU has no IBS (no %s/ibs_op/type): it needs an "
		      "AMD CPU with IBS, and a kernel that exposes it", event, SYSFS_PMU);
		return -1;
	}
	attr->type = type;
	*pmu_name = "ibs_op";
	/* IBS cannot leave the kernel out: it refuses exclude_*. */
	attr->exclude_kernel = 0;
	attr->exclude_hv = 0;
	return 0;
}

