// SPDX-License-Identifier: GPL-2.0
/*
 * htmm-sample: sample where a process touches memory, with perf events, and
 * tell its hottest pages and mappings and the code that touched them.
 *
 *   htmm-sample [-e EVENT] [-c PERIOD] [-g] [-d SECONDS] [-m PAGES] [-n N]
 *               [-j] [-o FILE] (-p PID | [--] CMD [ARGS...])
 *
 * How it goes:
 *
 *  - Events: one per CPU and per target thread (the command's child, or
 *    every thread of PID), with inherit=1 so that threads and processes
 *    created later are followed; the CPUs are the online ones, or for a
 *    PMU event those of the PMU's sysfs cpus (or cpumask) file, since a
 *    hybrid CPU's cpu_core PMU cannot count on its other cores.  The
 *    kernel refuses to mmap an inherited event that is not bound to a
 *    CPU, so each CPU's events are redirected (PERF_EVENT_IOC_SET_OUTPUT)
 *    into one ring per CPU.
 *  - Rings: read by libhtmm's perf_rb reader, with the protocol of
 *    tools/lib/perf (acquire data_head, release data_tail, records that
 *    wrap copied out); LOST, LOST_SAMPLES and THROTTLE records are counted.
 *  - Mappings: a process may be gone when the report is made, its
 *    /proc/PID/maps with it, so its mappings are tracked: a snapshot of
 *    /proc/PID/maps for -p (taken once the events are on, so that nothing
 *    mapped meanwhile is missed), then the MMAP2, FORK and COMM(exec)
 *    records.  The rings are read one after the other, so those records
 *    come out of time order; they are queued, and replayed in the order of
 *    their time (CLOCK_MONOTONIC, sample_id_all) into the address spaces
 *    of each process: one from its fork() (a copy of its parent's) or from
 *    the start, and one more from each exec().  As perf does per round,
 *    the queue is replayed and freed up to a time that every ring has been
 *    read past (less SB_SLACK_NS, for a record stamped before it was
 *    written), so that its memory does not grow with the run.
 *  - Symbols: samples are counted by (pid, address) with the time of the
 *    last one, and named in the address space their process had then.
 *    The samples are grouped by address space, and each group is named
 *    with one libdwfl session, ended before the next, so that the files
 *    it opens are never those of every process at once: the runs of each
 *    file's mappings are reported as modules (dwfl_report_module, as
 *    dwfl_linux_proc_maps_report does), and libdwfl names the functions:
 *    no ELF is parsed here.
 *
 * Where it is: this file has the options and the outline of a run
 * (main()); the units it is made of are in sample/, each with one job, as
 * tools/perf/util/ is perf's:
 *
 *   events.c    the events -e knows, the attr of the one sampled, opening
 *               it per thread and CPU, the rings, what a refusal means
 *   pmu.c       the PMUs of sysfs: the CPUs they count on, the attr of a
 *               PEBS alias (format files) or of IBS op
 *   sampler.c   the sampler's setup and teardown; reading the rings into
 *               the counts and the side-band queue
 *   runner.c    the target (the command, or -p PID), the signals, the
 *               sampling loop and its end
 *   sideband.c  the side-band records: their queue and replay into the
 *               processes and their address spaces
 *   maps.c      a process's mappings, and /proc/PID/maps
 *   symbols.c   naming code with libdwfl, one address space at a time
 *   report.c    the tables of the report, in text or JSON
 *   htab.c      the hash table of three-u64 keys, and interned strings
 *   util.c      errors, memory, clocks
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "htmm_util.h"

#include "sample/events.h"
#include "sample/htab.h"
#include "sample/report.h"
#include "sample/runner.h"
#include "sample/sampler.h"
#include "sample/symbols.h"
#include "sample/util.h"

#define DEFAULT_MMAP_PAGES	64	/* ring data pages per CPU */
#define DEFAULT_TOP		10	/* rows per table */

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [OPTIONS] [--] CMD [ARGS...]\n"
		"       " PROG " [OPTIONS] -p PID\n"
		"\n"
		"Sample where CMD, or the running process PID, touches memory, with\n"
		"perf events, following all its threads and children; then tell the\n"
		"number of samples, the hottest pages and mappings, and the code sites\n"
		"that caused them.\n"
		"\n"
		"  -e, --event EVENT     what to sample (default page-faults), one of:\n");
	for (size_t i = 0; i < nr_event_defs; i++)
		fprintf(f, "                          %-13s %s\n", event_defs[i].name,
			event_defs[i].help);
	fprintf(f,
		"  -c, --period N        a sample every N events (default: per event;\n"
		"                        1 fault, 100000 ns of cpu-clock)\n"
		"  -g, --call-graph      record callchains, to tell the callers\n"
		"  -p, --pid PID         sample the running process PID until it exits\n"
		"  -d, --duration SECS   stop after SECS seconds (the command gets SIGTERM,\n"
		"                        and SIGKILL a second later)\n"
		"  -m, --mmap-pages N    ring buffer data pages per CPU, a power of two\n"
		"                        (default %d)\n"
		"  -n, --top N           rows per table (default %d)\n"
		"  -j, --json            the report as one JSON object\n"
		"  -o, --output FILE     write the report to FILE, not to stdout\n"
		"  -h, --help            print this help and exit\n"
		"  -V, --version         print the version and exit\n"
		"\n"
		"The exit status is CMD's when it ends by itself (128+N if signal N\n"
		"killed it), 0 when -d or SIGINT/SIGTERM ended the sampling, or with -p;\n"
		"1 if sampling failed, 2 for a usage error, 126 or 127 if CMD cannot be\n"
		"run.\n", DEFAULT_MMAP_PAGES, DEFAULT_TOP);
}

#define usage_error(...) htmm_usage_error(PROG, usage, __VA_ARGS__)

static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!isdigit((unsigned char)s[0]))
		return false;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static const struct event_def *find_event(const char *name)
{
	for (size_t i = 0; i < nr_event_defs; i++) {
		if (!strcmp(event_defs[i].name, name))
			return &event_defs[i];
	}
	return NULL;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "period", required_argument, NULL, 'c' },
		{ "call-graph", no_argument, NULL, 'g' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "top", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool callchain = false;
	uint64_t v;
	char *end;
	int c;

	*o = (struct opts) {
		.ev = &event_defs[0], .mmap_pages = DEFAULT_MMAP_PAGES, .top = DEFAULT_TOP,
	};
	/* "+": the first operand is the command; its options are its own. */
	while ((c = getopt_long(argc, argv, "+e:c:gp:d:m:n:jo:hV", lopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			o->ev = find_event(optarg);
			if (!o->ev)
				usage_error("--event: no event '%s' (see --help for the list)",
					    optarg);
			break;
		case 'c':
			if (!parse_u64(optarg, 1, INT64_MAX, &o->period))
				usage_error("--period: '%s' is not a period (an integer >= 1)",
					    optarg);
			break;
		case 'g':
			callchain = true;
			break;
		case 'p':
			if (!parse_u64(optarg, 1, INT_MAX, &v))
				usage_error("--pid: '%s' is not a process id (an integer >= 1)",
					    optarg);
			o->pid = v;
			break;
		case 'd':
			errno = 0;
			o->duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->duration > 0))
				usage_error("--duration: '%s' is not a number of seconds > 0",
					    optarg);
			break;
		case 'm':
			if (!parse_u64(optarg, 1, 1UL << 20, &v) || (v & (v - 1)))
				usage_error("--mmap-pages: '%s' is not a power of two of pages",
					    optarg);
			o->mmap_pages = v;
			break;
		case 'n':
			if (!parse_u64(optarg, 1, INT_MAX, &v))
				usage_error("--top: '%s' is not a number of rows (>= 1)", optarg);
			o->top = v;
			break;
		case 'j':
			o->json = true;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " " VERSION "\n");
			exit(0);
		default:
			/* getopt_long() has said what is wrong. */
			usage_error(NULL);
		}
	}
	if (o->pid && optind < argc)
		usage_error("--pid and a command do not go together");
	if (!o->pid && optind >= argc)
		usage_error("no command given, and no --pid");
	o->cmd = o->pid ? NULL : argv + optind;
	o->callchain = callchain || o->ev->callchain;
	if (!o->period)
		o->period = o->ev->period;
	if (o->ev->kind == EV_IBS_OP && o->period % IBS_PERIOD_UNIT)
		usage_error("--period: IBS counts by %d: %" PRIu64 " is not a multiple of it",
			    IBS_PERIOD_UNIT, o->period);
}

/* ------------------------------------------------------------------ */
/* Main                                                                */
/* ------------------------------------------------------------------ */

/* The exit status of the run: see usage(). */
static int exit_status(const struct sampler *S, const struct run_state *st)
{
	if (!S->o->cmd || st->why != STOP_EXIT || !st->reaped)
		return 0;
	if (WIFEXITED(st->status))
		return WEXITSTATUS(st->status);
	if (WIFSIGNALED(st->status))
		return 128 + WTERMSIG(st->status);
	return 1;
}

/*
 * The outline of a run: the options; the sampler and its events set up;
 * the command started, or the process attached to; sampling until it
 * ends; what is left in the rings read; the report written.
 */
int main(int argc, char **argv)
{
	struct run_state st = { .why = STOP_EXIT };
	struct sampler S;
	sigset_t origmask, waitmask;
	struct opts o;
	FILE *out = stdout;
	int ret;

	parse_args(argc, argv, &o);
	if (o.output) {
		out = fopen(o.output, "we");
		if (!out) {
			error("%s: %s", o.output, strerror(errno));
			return 1;
		}
	}
	if (setup(&S, &o)) {
		ret = 1;
		goto out;
	}
	setup_signals(&origmask, &waitmask);
	ret = o.cmd ? start_command(&S, &origmask) : attach_pid(&S, o.pid);
	if (ret)
		goto out;
	if (run(&S, &waitmask, &st)) {
		/* Sampling failed: the command is not left to run unsampled. */
		if (S.child && !st.reaped) {
			kill(S.child, SIGKILL);
			reap(S.child, &st.status);
		}
		ret = 1;
		goto out;
	}
	if (S.child && !st.reaped)
		reap(S.child, &st.status);
	finish(&S);
	ret = write_report(&S, &st, out) ? 1 : exit_status(&S, &st);
out:
	teardown(&S);
	free_symbols();
	free_strings();
	if (out != stdout && fclose(out) && !ret) {
		error("%s: %s", o.output, strerror(errno));
		ret = 1;
	}
	return ret;
}
