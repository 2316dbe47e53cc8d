// SPDX-License-Identifier: GPL-2.0
/*
 * htmmstat: a live view of htmm, one line per interval in the manner of
 * vmstat(8), of the whole system or of one session (-p PID).  It reads only
 * the documented interfaces: /proc/vmstat and /sys/kernel/mm/htmm/.
 *
 *   htmmstat [-p PID] [--histogram] [--json] [-n COUNT] [INTERVAL [COUNT]]
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG "htmmstat"
#define VERSION "0.1"
#define HTMM "/sys/kernel/mm/htmm"
#define NR_BINS 16

/* Counters of a session's directory that the view shows as rates. */
static const char *const rate_files[] = {
	"sampled", "fault", "fast_read", "slow_read", "store", "lost",
	"promoted", "demoted",
};
#define NR_RATES (sizeof(rate_files) / sizeof(rate_files[0]))

/* Figures shown as they are. */
static const char *const level_files[] = {
	"pages_fast", "pages_slow", "pages_hot", "hot_threshold",
};
#define NR_LEVELS (sizeof(level_files) / sizeof(level_files[0]))

/* The same rates, system-wide, from /proc/vmstat where it has them. */
static const char *const vmstat_names[NR_RATES] = {
	"htmm_sampled", NULL, NULL, NULL, NULL, "htmm_sample_lost",
	"htmm_promoted", "htmm_demoted",
};

struct snapshot {
	unsigned long long rate[NR_RATES];
	unsigned long long level[NR_LEVELS];
	unsigned long long hist[NR_BINS];
	unsigned int sessions;
	unsigned int ksamplingd;	/* thousandths of a cpu */
	unsigned int kmigraterd;
	bool have_threshold;
	double time;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [-p PID] [--histogram] [--json] [-n COUNT] [INTERVAL [COUNT]]\n"
		"\n"
		"Show what htmm does, one line every INTERVAL seconds (default 1): the\n"
		"samples consumed per second by kind, samples lost, pages promoted and\n"
		"demoted per second, pages in the fast and slow tiers and their fast-tier\n"
		"share, hot pages, the hot threshold, and the cpu share of ksamplingd and\n"
		"kmigraterd.  Without -p, of all sessions together.\n"
		"\n"
		"  -p, --pid PID     one session: the process PID\n"
		"  -H, --histogram   after each line, the histogram of access counts\n"
		"  -j, --json        one JSON object per line, for scripts\n"
		"  -n, --count N     stop after N lines (default: until interrupted)\n"
		"  -h, --help        this help\n"
		"  -V, --version     the version\n");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Read the numbers of the file @path into @v (at most @n); how many. */
static int read_numbers(const char *path, unsigned long long *v, int n)
{
	FILE *f = fopen(path, "re");
	int i = 0;

	if (!f)
		return -1;
	while (i < n && fscanf(f, "%llu", &v[i]) == 1)
		i++;
	fclose(f);
	return i;
}

static unsigned int read_permille(const char *name)
{
	char path[128];
	unsigned long long v = 0;

	snprintf(path, sizeof(path), HTMM "/%s", name);
	read_numbers(path, &v, 1);
	return (unsigned int)v;
}

/* A session's files are root's, and we are not. */
static bool denied;

/* Add the figures of the session in @dir to @s; false if it is gone. */
static bool add_session(const char *dir, struct snapshot *s)
{
	char path[512];
	unsigned long long v, hist[NR_BINS];
	int n;

	snprintf(path, sizeof(path), "%s/sampled", dir);
	n = read_numbers(path, &v, 1);
	if (n != 1) {
		if (n < 0 && errno == EACCES)
			denied = true;
		return false;
	}
	for (size_t i = 0; i < NR_RATES; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, rate_files[i]);
		if (read_numbers(path, &v, 1) == 1)
			s->rate[i] += v;
	}
	for (size_t i = 0; i < NR_LEVELS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, level_files[i]);
		if (read_numbers(path, &v, 1) == 1)
			s->level[i] += v;
	}
	snprintf(path, sizeof(path), "%s/histogram", dir);
	if (read_numbers(path, hist, NR_BINS) == NR_BINS)
		for (int b = 0; b < NR_BINS; b++)
			s->hist[b] += hist[b];
	s->sessions++;
	return true;
}

/* The system-wide counters /proc/vmstat has, over those of the sessions. */
static void add_vmstat(struct snapshot *s)
{
	char name[128];
	unsigned long long v;
	FILE *f = fopen("/proc/vmstat", "re");

	if (!f)
		return;
	while (fscanf(f, "%127s %llu", name, &v) == 2)
		for (size_t i = 0; i < NR_RATES; i++)
			if (vmstat_names[i] && !strcmp(name, vmstat_names[i]))
				s->rate[i] = v;
	fclose(f);
}

/*
 * Take a snapshot of session @pid, or (pid 0) of the system.  Returns false
 * when the session is gone.  The kinds of samples come from the sessions
 * alive; the totals, system-wide, from /proc/vmstat, which keeps counting
 * what ended sessions did.
 */
static bool take(pid_t pid, struct snapshot *s)
{
	char dir[512];
	struct dirent *de;
	DIR *d;

	memset(s, 0, sizeof(*s));
	s->time = now();
	s->ksamplingd = read_permille("ksamplingd_cpu");
	s->kmigraterd = read_permille("kmigraterd_cpu");
	if (pid) {
		snprintf(dir, sizeof(dir), HTMM "/sessions/%d", (int)pid);
		s->have_threshold = true;
		return add_session(dir, s);
	}
	d = opendir(HTMM "/sessions");
	if (d) {
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(dir, sizeof(dir), HTMM "/sessions/%s", de->d_name);
			add_session(dir, s);
		}
		closedir(d);
	}
	/* A threshold is a session's: of several, none is shown. */
	s->have_threshold = s->sessions == 1;
	add_vmstat(s);
	return true;
}

static double rate(const struct snapshot *a, const struct snapshot *b, size_t i)
{
	double dt = b->time - a->time;

	/* Sessions come and go: a total may fall, a rate may not. */
	if (dt <= 0 || b->rate[i] < a->rate[i])
		return 0;
	return (b->rate[i] - a->rate[i]) / dt;
}

static double fast_share(const struct snapshot *s)
{
	unsigned long long all = s->level[0] + s->level[1];

	return all ? 100.0 * s->level[0] / all : 0;
}

static void print_header(void)
{
	printf("%8s %7s %7s %7s %7s %6s %7s %7s %9s %9s %6s %9s %6s %5s %5s\n",
	       "samples", "fault", "load-f", "load-s", "store", "lost", "prom",
	       "dem", "fast-pg", "slow-pg", "fast%", "hot-pg", "thresh",
	       "ksd%", "kmd%");
}

static void print_line(const struct snapshot *a, const struct snapshot *b)
{
	char thresh[16] = "-";

	if (b->have_threshold)
		snprintf(thresh, sizeof(thresh), "%llu", b->level[3]);
	printf("%8.0f %7.0f %7.0f %7.0f %7.0f %6.0f %7.0f %7.0f %9llu %9llu %5.1f%% %9llu %6s %5.1f %5.1f\n",
	       rate(a, b, 0), rate(a, b, 1), rate(a, b, 2), rate(a, b, 3),
	       rate(a, b, 4), rate(a, b, 5), rate(a, b, 6), rate(a, b, 7),
	       b->level[0], b->level[1], fast_share(b), b->level[2], thresh,
	       b->ksamplingd / 10.0, b->kmigraterd / 10.0);
}

static void print_json(const struct snapshot *a, const struct snapshot *b,
		       pid_t pid, bool histogram)
{
	printf("{\"pid\":%d,\"sessions\":%u,\"interval_s\":%.3f", (int)pid,
	       b->sessions, b->time - a->time);
	for (size_t i = 0; i < NR_RATES; i++)
		printf(",\"%s_per_s\":%.1f", rate_files[i], rate(a, b, i));
	printf(",\"pages_fast\":%llu,\"pages_slow\":%llu,\"fast_pct\":%.1f,\"pages_hot\":%llu",
	       b->level[0], b->level[1], fast_share(b), b->level[2]);
	if (b->have_threshold)
		printf(",\"hot_threshold\":%llu", b->level[3]);
	else
		printf(",\"hot_threshold\":null");
	printf(",\"ksamplingd_cpu_pct\":%.1f,\"kmigraterd_cpu_pct\":%.1f",
	       b->ksamplingd / 10.0, b->kmigraterd / 10.0);
	if (histogram) {
		printf(",\"histogram\":[");
		for (int i = 0; i < NR_BINS; i++)
			printf("%s%llu", i ? "," : "", b->hist[i]);
		printf("]");
	}
	printf("}\n");
}

/* The histogram as bars: bin 0 (count 0), then [2^(b-1), 2^b). */
static void print_histogram(const struct snapshot *s)
{
	unsigned long long max = 0;
	int last = 0;

	for (int b = 0; b < NR_BINS; b++) {
		if (s->hist[b] > max)
			max = s->hist[b];
		if (s->hist[b])
			last = b;
	}
	printf("  access counts (pages per bin):\n");
	for (int b = 0; b <= last; b++) {
		char range[24];
		int width = max ? (int)(40 * s->hist[b] / max) : 0;

		if (!b)
			snprintf(range, sizeof(range), "0");
		else if (b == 1)
			snprintf(range, sizeof(range), "1");
		else
			snprintf(range, sizeof(range), "%u-%u", 1U << (b - 1),
				 (1U << b) - 1);
		printf("  %11s %9llu %.*s\n", range, s->hist[b], width,
		       "########################################");
	}
}

static bool parse_uint(const char *s, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return !errno && end != s && !*end && s[0] != '-';
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "histogram", no_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long pid = 0, count = 0, interval = 1, lines = 0;
	bool json = false, histogram = false;
	struct snapshot prev, cur;
	struct sigaction sa = { .sa_handler = on_signal };
	int c;

	while ((c = getopt_long(argc, argv, "p:Hjn:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!parse_uint(optarg, &pid) || !pid || pid > 0x7fffffff) {
				fprintf(stderr, PROG ": bad pid '%s'\n", optarg);
				return 2;
			}
			break;
		case 'H':
			histogram = true;
			break;
		case 'j':
			json = true;
			break;
		case 'n':
			if (!parse_uint(optarg, &count) || !count) {
				fprintf(stderr, PROG ": bad count '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			puts(PROG " " VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc && (!parse_uint(argv[optind++], &interval) || !interval ||
			      interval > 3600)) {
		fprintf(stderr, PROG ": bad interval '%s'\n", argv[optind - 1]);
		return 2;
	}
	if (optind < argc && (!parse_uint(argv[optind++], &count) || !count)) {
		fprintf(stderr, PROG ": bad count '%s'\n", argv[optind - 1]);
		return 2;
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}

	if (access(HTMM, F_OK)) {
		fprintf(stderr, PROG ": htmm is not in the running kernel (no " HTMM
			"): boot a kernel built with the htmm patch series (CONFIG_HTMM=y)\n");
		return 1;
	}
	if (!take((pid_t)pid, &prev) || denied) {
		if (denied)
			fprintf(stderr, PROG ": the figures of sessions (" HTMM
				"/sessions/) are readable by root only\n");
		else
			fprintf(stderr, PROG ": no htmm session for pid %lu (see "
				HTMM "/sessions/; htmm-launch starts one)\n",
				pid);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	while (!stop && (!count || lines < count)) {
		struct timespec ts = { .tv_sec = (time_t)interval };

		if (nanosleep(&ts, NULL) && stop)
			break;
		if (!take((pid_t)pid, &cur)) {
			if (!json)
				printf(PROG ": the session of pid %lu ended\n", pid);
			break;
		}
		if (json) {
			print_json(&prev, &cur, (pid_t)pid, histogram);
		} else {
			if (lines % 20 == 0 || histogram)
				print_header();
			print_line(&prev, &cur);
			if (histogram)
				print_histogram(&cur);
		}
		fflush(stdout);
		prev = cur;
		lines++;
	}
	return 0;
}
