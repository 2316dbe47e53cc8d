/* SPDX-License-Identifier: GPL-2.0 */
/*
 * htmm-sample's PMUs, as sysfs describes them: the CPUs a PMU counts on,
 * and a PMU event's attr (a CPU PMU's alias, or AMD IBS op).
 */
#ifndef HTMM_SAMPLE_PMU_H
#define HTMM_SAMPLE_PMU_H

#include <stddef.h>

struct perf_event_attr;
struct sampler;

/*
 * The CPUs to open the events on: the online ones; for a PMU event, those
 * of them that the PMU's sysfs cpus (or cpumask) file lists, if it has one.
 */
int event_cpus(const struct sampler *S, int **cpus, size_t *nr);
/*
 * A CPU PMU's event alias, as perf would read it: the PMU type, and the
 * alias's terms placed into config* by the PMU's format files.  The PMU's
 * name goes into *pmu_name.
 */
int pmu_alias_attr(const char *event, struct perf_event_attr *attr,
		   const char **pmu_name);
int ibs_op_attr(const char *event, struct perf_event_attr *attr,
		const char **pmu_name);

#endif /* HTMM_SAMPLE_PMU_H */
