/* SPDX-License-Identifier: GPL-2.0 */
/*
 * htmm-sample's report: the hottest pages, mappings and code sites of a
 * run, in text or JSON.
 */
#ifndef HTMM_SAMPLE_REPORT_H
#define HTMM_SAMPLE_REPORT_H

#include <stdio.h>

struct run_state;
struct sampler;

/* Write the report; 0, or -1 if it could not be written. */
int write_report(struct sampler *S, const struct run_state *st, FILE *out);

#endif /* HTMM_SAMPLE_REPORT_H */
