// SPDX-License-Identifier: GPL-2.0
/*
 * The policy tunables of /sys/kernel/mm/htmm, end to end: each test sets a
 * value other than the default, runs a managed workload, and checks what
 * Documentation/ABI/testing/sysfs-kernel-mm-htmm promises of that value:
 *
 *  - promote_rate_mb: 0 promotes nothing; a low rate bounds the pages
 *    promoted over time by the rate, plus a second's worth of tokens and
 *    one folio.
 *  - migrate_interval_ms: the census (the count of a session's pages per
 *    tier, which updates sessions/<pid>/pages_*) runs once an interval.
 *  - hot_threshold_mode fixed with hot_threshold: the session's threshold
 *    reads the value; pages whose counts stay under it stay down, and
 *    come up once it is at their counts.
 *  - demote_watermark: under it, the cold pages of a managed process go
 *    down until the fast node has that much free.
 *  - cooling_period_ms 0 ("never") leaves the sessions of the hint-fault
 *    source, the only one this guest has, cooling once a round of the
 *    scan, as the ABI says: pages no longer used lose their counts.  That
 *    the period itself paces the cooling, and that 0 stops it, needs a
 *    PMU source (PEBS, IBS), which an emulated cpu does not have.
 *
 * Node 0 is the fast tier, node 1 the slow one.  Every tunable a test
 * changes is saved by the fixture and written back after it, also when
 * the test fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "htmm_test.h"
#include "tier_test.h"

/* Generous: only a hang should reach it (the debug kernel is slow). */
#define POLICY_TIMEOUT 900

/* Read every page of [p, p + len) over and over for @seconds. */
static void read_for(const void *p, size_t len, double seconds)
{
	double t = now_s();

	while (now_s() - t < seconds)
		read_pages(p, len);
}

#define POLICY_NR_BINS	16		/* HTMM_NR_BINS */

/*
 * Pages of @pid's session in histogram bins @from and up; with @top, also
 * the highest bin that holds a page, of the same reading.  -1 if
 * unreadable.
 */
static long long hist_from(pid_t pid, int from, int *top)
{
	long long bins[POLICY_NR_BINS], sum = 0;
	int n = session_histogram(pid, bins, POLICY_NR_BINS);

	if (n < 0)
		return -1;
	for (int b = from; b < n; b++)
		sum += bins[b];
	if (top) {
		while (n > 1 && !bins[n - 1])
			n--;
		*top = n - 1;
	}
	return sum;
}

/* Log what the session of @pid did, for the record. */
static void log_session(struct __test_metadata *_metadata, pid_t pid)
{
	char path[128], hist[256] = "";

	snprintf(path, sizeof(path), HTMM_SYSFS "/sessions/%d/histogram", pid);
	read_file(path, hist, sizeof(hist));
	TH_LOG("session %d: %lld samples, epoch %lld, threshold %lld, histogram [%s], %lld promoted (%lld failed), %lld demoted, %lld dropped, no room %lld times",
	       pid, session_ll(pid, "sampled"), session_ll(pid, "epoch"),
	       session_ll(pid, "hot_threshold"), hist,
	       session_ll(pid, "promoted"),
	       session_ll(pid, "promote_failed"),
	       session_ll(pid, "demoted"), session_ll(pid, "dropped"),
	       session_ll(pid, "no_room"));
}

/* The tunables these tests change, saved before and written back after. */
static const char *const tunables[] = {
	"promote_rate_mb", "migrate_interval_ms", "hot_threshold",
	"hot_threshold_mode", "demote_watermark", "cpu_quota", "cpu_share",
	"cooling_period_ms",
};
#define NR_TUNABLES (sizeof(tunables) / sizeof(tunables[0]))

static int set(const char *name, const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), HTMM_SYSFS "/%s", name);
	return write_file(path, value);
}

FIXTURE(policy) {
	char saved[NR_TUNABLES][32];
	pid_t child;
};

FIXTURE_SETUP(policy)
{
	char path[128];

	if (!have_tiers())
		SKIP(return, "needs node 1 (a slow tier) and htmm");
	for (unsigned int i = 0; i < NR_TUNABLES; i++) {
		snprintf(path, sizeof(path), HTMM_SYSFS "/%s", tunables[i]);
		ASSERT_EQ(0, read_file(path, self->saved[i],
				       sizeof(self->saved[i])));
		/* The mode reads "[adaptive] fixed": keep the one in force. */
		if (!strcmp(tunables[i], "hot_threshold_mode")) {
			bool fixed = strstr(self->saved[i], "[fixed]");

			snprintf(self->saved[i], sizeof(self->saved[i]), "%s",
				 fixed ? "fixed" : "adaptive");
		}
	}
	/*
	 * These tests are about policy, not about ksamplingd's cost: a fifth
	 * of a cpu, so that the debug kernel thins the scan out no more than
	 * the plain one does (as tiering.c does).
	 */
	ASSERT_EQ(0, set("cpu_quota", "200"));
}

/*
 * Run once, by whichever process gets there: after a pass or a fatal
 * signal, the parent of the test's process; after a failed ASSERT, the
 * test's process itself, whose longjmp() back into the harness's wrapper
 * loses the record, set after the setjmp(), of which process it is (a
 * FIXTURE_TEARDOWN() did not run at all then, and the tunables stayed as
 * the failed test left them).  So it works in either: the test's session
 * may still run, and its children die with it (PR_SET_PDEATHSIG).
 */
FIXTURE_TEARDOWN_PARENT(policy)
{
	if (self->child > 0)
		kill(self->child, SIGKILL);
	for (unsigned int i = 0; i < NR_TUNABLES; i++)
		if (self->saved[i][0])
			set(tunables[i], self->saved[i]);
}

/* Every page sampled is hot: hints for all of them, at once. */
static void every_sample_hot(struct __test_metadata *_metadata)
{
	ASSERT_EQ(0, set("hot_threshold", "1"));
	ASSERT_EQ(0, set("hot_threshold_mode", "fixed"));
}

/*
 * promote_rate_mb 0 is "no promotion": 8 MiB on node 1 read over and over,
 * with every sampled page hot, stay there while every page was sampled
 * (at least once each) and a few scan rounds passed.  Then the default
 * rate again, and they go up: the workload could promote.
 */
TEST_F_TIMEOUT(policy, promote_rate_zero_promotes_nothing, POLICY_TIMEOUT)
{
	const size_t len = 8 * MB;
	const long pages = len / PAGE;
	long long sampled = 0, epoch = 0;
	char *buf = buffer_on(len, SLOW, MADV_NOHUGEPAGE);
	double start;
	long on;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(pages, pages_on(buf, len, SLOW, NULL));
	every_sample_hot(_metadata);
	ASSERT_EQ(0, set("promote_rate_mb", "0"));

	ASSERT_EQ(0, sys_htmm_start(0, FAST));
	start = now_s();
	/* Each page sampled once would do; three rounds make sure. */
	while (now_s() - start < patience(60)) {
		read_for(buf, len, 1);
		sampled = session_ll(getpid(), "sampled");
		epoch = session_ll(getpid(), "epoch");
		if (sampled >= pages && epoch >= 3)
			break;
	}
	on = pages_on(buf, len, FAST, NULL);
	log_session(_metadata, getpid());
	TH_LOG("rate 0: after %.1f s, %lld samples over %lld epochs; %ld of %ld pages on node 0",
	       now_s() - start, sampled, epoch, on, pages);
	ASSERT_LE(pages, sampled) TH_LOG("too few samples to judge");
	ASSERT_LE(3, epoch);
	ASSERT_EQ(0, on);
	ASSERT_EQ(0, session_ll(getpid(), "promoted"));

	/* The default rate: the same hot pages go up. */
	ASSERT_EQ(0, set("promote_rate_mb", "2048"));
	start = now_s();
	on = read_until_up(buf, len, patience(60));
	log_session(_metadata, getpid());
	TH_LOG("rate 2048: %ld of %ld pages on node 0 after %.1f s", on, pages,
	       now_s() - start);
	ASSERT_GE(on * 10, pages * 9);
	ASSERT_EQ(0, sys_htmm_end(0));
}

/*
 * promote_rate_mb 1 (256 pages a second): 32 MiB on node 1 read over and
 * over, every sampled page hot, so that hints for far more than the rate
 * wait.  At every second of 20, the session's promoted pages stay within
 * rate * t, plus the tokens kmigraterd starts with (a second's worth, all
 * it keeps) and one folio isolated past the last token (here a small
 * page; 512 for the largest it may meet).  With the default rate the
 * whole buffer goes up in a few seconds, far over that.
 */
TEST_F_TIMEOUT(policy, low_promote_rate_bounds_promotion, POLICY_TIMEOUT)
{
	const size_t len = 32 * MB;
	const long pages = len / PAGE, rate = 256, slack = rate + 512;
	long long promoted = 0, worst = LLONG_MIN;
	double start, t = 0, worst_t = 0;
	char *buf = buffer_on(len, SLOW, MADV_NOHUGEPAGE);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(pages, pages_on(buf, len, SLOW, NULL));
	every_sample_hot(_metadata);
	ASSERT_EQ(0, set("promote_rate_mb", "1"));

	ASSERT_EQ(0, sys_htmm_start(0, FAST));
	start = now_s();
	while (t < 20) {
		read_for(buf, len, 1);
		/* Read first, then the time: the bound only loosens. */
		promoted = session_ll(getpid(), "promoted");
		t = now_s() - start;
		ASSERT_LE(0, promoted);
		if (promoted - (long long)(rate * t) > worst) {
			worst = promoted - (long long)(rate * t);
			worst_t = t;
		}
	}
	log_session(_metadata, getpid());
	TH_LOG("%lld pages promoted in %.1f s at %ld pages/s (%.0f/s); furthest over rate * t: %lld pages at %.1f s (slack %ld)",
	       promoted, t, rate, promoted / t, worst, worst_t, slack);
	EXPECT_LE(worst, slack);
	/*
	 * The rate is what holds promotion back, not a lack of hot pages:
	 * the hints kept coming.  On the debug kernel the faults may come
	 * slower than the rate (half a millisecond each), so only that
	 * some pages went up.
	 */
	if (debug_kernel()) {
		EXPECT_LT(0, promoted);
	} else {
		EXPECT_GE(promoted, (long long)(rate * t / 2));
	}
	ASSERT_EQ(0, sys_htmm_end(0));
}

/*
 * A process whose resident memory grows a page every 5 ms on node 0, from
 * @base MiB it touches first: each census sees a new pages_fast, so the
 * changes of that file, polled every 20 ms, count the censuses.  It grows
 * for 10 minutes; a census of it costs what its pages cost to walk.
 */
static pid_t grower_from(size_t base)
{
	pid_t pid = fork();

	if (!pid) {
		const size_t len = (base + 128) * MB;
		const struct timespec ts = { 0, 5000000 };
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* Small pages: huge ones would grow it 2 MiB at a time. */
		if (p == MAP_FAILED || madvise(p, len, MADV_NOHUGEPAGE))
			_exit(1);
		memset(p, 1, base * MB);
		for (size_t off = base * MB;; off = (off + PAGE) % len) {
			p[off] = 1;
			nanosleep(&ts, NULL);
		}
	}
	return pid;
}

static pid_t grower(void)
{
	return grower_from(0);
}

/* The changes of @pid's pages_fast over @seconds. */
static int censuses(struct __test_metadata *_metadata, pid_t pid,
		    double seconds)
{
	long long first = session_ll(pid, "pages_fast"), last = first, v;
	double start = now_s();
	int n = 0;

	while (now_s() - start < seconds) {
		usleep(20000);
		v = session_ll(pid, "pages_fast");
		n += v != last;
		last = v;
	}
	TH_LOG("pages_fast %lld to %lld in %.1f s: %d changes", first, last,
	       seconds, n);
	return n;
}

/*
 * Wait up to @seconds for two censuses of @pid's session less than @gap
 * seconds apart; how long that took, or -1.
 */
static double census_settles(pid_t pid, double gap, double seconds)
{
	long long last = session_ll(pid, "pages_fast"), v;
	double start = now_s(), prev = -1;

	while (now_s() - start < seconds) {
		usleep(20000);
		v = session_ll(pid, "pages_fast");
		if (v == last)
			continue;
		last = v;
		if (prev >= 0 && now_s() - prev < gap)
			return now_s() - start;
		prev = now_s();
	}
	return -1;
}

/*
 * migrate_interval_ms: the census of a session runs once an interval.  At
 * 250 ms it runs about 4 times as often as at 1000 ms (2 to 8 times, for
 * the time kmigraterd's own work and the polling add), and never more
 * often than the interval allows.
 *
 * The interval is stretched (up to 64 times) while the session's census
 * costs more than its cpu budget, each session on its own
 * (census_stretch_starts_afresh_each_session).  So first a short interval,
 * until the censuses come at it, and then the two measured.
 */
TEST_F_TIMEOUT(policy, migrate_interval_sets_census_cadence, POLICY_TIMEOUT)
{
	const double secs = 10;
	double settled;
	int fast, slow;
	char cpu[32] = "";

	ASSERT_EQ(0, set("migrate_interval_ms", "100"));
	self->child = grower();
	ASSERT_LT(0, self->child);
	ASSERT_EQ(0, sys_htmm_start(self->child, FAST));
	/* A stretch of 2 at most. */
	settled = census_settles(self->child, 0.25, patience(30));
	TH_LOG("censuses 100 ms apart after %.1f s", settled);
	ASSERT_LE(0, settled) TH_LOG("the census never came at the interval");

	ASSERT_EQ(0, set("migrate_interval_ms", "1000"));
	/* The census due at the old interval, then the new one's. */
	sleep(2);
	slow = censuses(_metadata, self->child, secs);
	ASSERT_EQ(0, set("migrate_interval_ms", "250"));
	sleep(2);
	fast = censuses(_metadata, self->child, secs);
	read_file(HTMM_SYSFS "/kmigraterd_cpu", cpu, sizeof(cpu));
	log_session(_metadata, self->child);
	TH_LOG("censuses in %.0f s: %d at 1000 ms, %d at 250 ms (ratio %.2f); kmigraterd %s/1000 of a cpu",
	       secs, slow, fast, slow ? (double)fast / slow : -1.0, cpu);
	ASSERT_LT(0, slow) TH_LOG("no census seen");
	/* Never more often than the interval (one more at the edges). */
	EXPECT_LE(slow, secs / 1.0 + 1);
	EXPECT_LE(fast, secs / 0.25 + 1);
	/*
	 * The ratio on the plain kernel only.  On the debug kernel the
	 * censuses came at neither interval: 10 at 1000 ms and 23 at 250 ms
	 * in one run (kmigraterd at 11% of a cpu), 7 and 8 in another (at
	 * 1.4%), after the stretch took 10 to 14 s to come down at 100 ms.
	 * The stretch, which follows kmigraterd's cost, rules there; why it
	 * stayed up at 1.4% of a cpu is not explained yet.
	 */
	if (!debug_kernel()) {
		EXPECT_LE(2 * slow, fast);
		EXPECT_LE(fast, 8 * slow);
	}
	ASSERT_EQ(0, sys_htmm_end(self->child));
}

/*
 * migrate_interval_ms lowered while a session runs applies at once: the
 * next census is due the new interval after the last one, and kmigraterd,
 * asleep for the old interval, is woken to see it.  At 60 s no census
 * follows the first within 3 s (the control); at 100 ms they come 100 ms
 * apart within a second or two, where the kernel that fixed each census's
 * due time at the interval of the one before waited out the minute.
 */
TEST_F_TIMEOUT(policy, lowered_migrate_interval_applies_at_once,
	       POLICY_TIMEOUT)
{
	long long first = 0;
	double settled;

	ASSERT_EQ(0, set("migrate_interval_ms", "60000"));
	self->child = grower();
	ASSERT_LT(0, self->child);
	ASSERT_EQ(0, sys_htmm_start(self->child, FAST));
	/* The first census comes when the session starts. */
	for (settled = now_s(); now_s() - settled < patience(10);) {
		first = session_ll(self->child, "pages_fast");
		if (first)
			break;
		usleep(20000);
	}
	ASSERT_LT(0, first) TH_LOG("no census at the start");
	sleep(3);
	EXPECT_EQ(first, session_ll(self->child, "pages_fast"))
		TH_LOG("a census within 3 s at an interval of 60 s");

	ASSERT_EQ(0, set("migrate_interval_ms", "100"));
	settled = census_settles(self->child, 0.25, patience(10));
	log_session(_metadata, self->child);
	TH_LOG("censuses 100 ms apart %.1f s after the interval went from 60 s to 100 ms",
	       settled);
	ASSERT_LE(0, settled) TH_LOG("the lowered interval did not apply");
	EXPECT_GE(patience(3), settled);
	ASSERT_EQ(0, sys_htmm_end(self->child));
}

/*
 * The census stretch is each session's own.  A census that costs more than
 * its session's cpu budget runs up to 64 intervals apart: with cpu_quota 1
 * (a thousandth of a cpu) and no share of the process's cpu time, a census
 * of 64 MiB every 10 ms is over budget, and within seconds the censuses
 * come far apart.  That session ends, and a new one starts on a new,
 * small process, with the budget back at the fixture's 200 thousandths
 * and the interval at 100 ms: its censuses come 100 ms apart from the
 * start.  With one stretch for kmigraterd, the new session inherited the
 * old one's 64 (its second census came 6.7 s after the first).  (Small:
 * on the debug kernel a census of 64 MiB takes longer than 100 ms, and
 * the next one comes after it.)
 */
TEST_F_TIMEOUT(policy, census_stretch_starts_afresh_each_session,
	       POLICY_TIMEOUT)
{
	double settled;
	int n;

	ASSERT_EQ(0, set("migrate_interval_ms", "10"));
	ASSERT_EQ(0, set("cpu_quota", "1"));
	ASSERT_EQ(0, set("cpu_share", "0"));
	self->child = grower_from(64);
	ASSERT_LT(0, self->child);
	ASSERT_EQ(0, sys_htmm_start(self->child, FAST));
	/* Doubling a second from 1: 64 after 6 s, and 2 s to show it. */
	sleep(8);
	n = censuses(_metadata, self->child, 4);
	TH_LOG("over its budget: %d censuses in 4 s at an interval of 10 ms", n);
	/* Stretched 10 times at least (at 1, one each poll: 200). */
	ASSERT_GE(40, n) TH_LOG("the census was not held to its budget");
	ASSERT_EQ(0, sys_htmm_end(self->child));
	kill(self->child, SIGKILL);
	waitpid(self->child, NULL, 0);

	ASSERT_EQ(0, set("cpu_quota", "200"));
	ASSERT_EQ(0, set("migrate_interval_ms", "100"));
	self->child = grower();
	ASSERT_LT(0, self->child);
	ASSERT_EQ(0, sys_htmm_start(self->child, FAST));
	settled = census_settles(self->child, 0.25, patience(10));
	log_session(_metadata, self->child);
	TH_LOG("the new session's censuses 100 ms apart after %.1f s",
	       settled);
	ASSERT_LE(0, settled) TH_LOG("the new session's census was stretched");
	EXPECT_GE(patience(3), settled);
	ASSERT_EQ(0, sys_htmm_end(self->child));
}

/*
 * hot_threshold_mode fixed: the session's threshold is hot_threshold.  At
 * 1024, more than any count reaches (a fault weighs at most 64 and counts
 * halve every round: they settle under 128), 8 MiB on node 1 read over
 * and over stay there, though their counts are over the default threshold
 * of 4.  At 1, the same pages, whose counts are at it, go up.
 */
TEST_F_TIMEOUT(policy, fixed_threshold_decides_promotion, POLICY_TIMEOUT)
{
	const size_t len = 8 * MB;
	const long pages = len / PAGE;
	long long sampled = 0, epoch = 0, over4, thr;
	char *buf = buffer_on(len, SLOW, MADV_NOHUGEPAGE);
	double start;
	long on;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(pages, pages_on(buf, len, SLOW, NULL));
	ASSERT_EQ(0, set("hot_threshold", "1024"));
	ASSERT_EQ(0, set("hot_threshold_mode", "fixed"));

	ASSERT_EQ(0, sys_htmm_start(0, FAST));
	start = now_s();
	/* Counts settle within a few rounds. */
	while (now_s() - start < patience(60)) {
		read_for(buf, len, 1);
		sampled = session_ll(getpid(), "sampled");
		epoch = session_ll(getpid(), "epoch");
		if (sampled >= 2 * pages && epoch >= 5 &&
		    now_s() - start >= 10)
			break;
	}
	on = pages_on(buf, len, FAST, NULL);
	thr = session_ll(getpid(), "hot_threshold");
	/* Bin 3 holds counts 4 to 7: at the default threshold and over. */
	over4 = hist_from(getpid(), 3, NULL);
	log_session(_metadata, getpid());
	TH_LOG("threshold %lld: after %.1f s, %lld samples over %lld epochs, %lld pages counted 4 or more; %ld of %ld pages on node 0",
	       thr, now_s() - start, sampled, epoch, over4, on, pages);
	ASSERT_EQ(1024, thr);
	ASSERT_LE(pages, sampled) TH_LOG("too few samples to judge");
	ASSERT_EQ(0, on);
	ASSERT_EQ(0, session_ll(getpid(), "promoted"));
	/*
	 * The pages were hot by the default's measure.  On the plain kernel
	 * only: on a loaded debug kernel a fault may come so late after its
	 * arming that it weighs 1 and counts stay at 1 or 2 (tiering.c).
	 * (In one debug run of this program alone, all 2048 counted 4 or
	 * more.)
	 */
	if (!debug_kernel()) {
		EXPECT_LE(pages / 2, over4);
	}

	/* At their counts: up. */
	ASSERT_EQ(0, set("hot_threshold", "1"));
	start = now_s();
	on = read_until_up(buf, len, patience(60));
	thr = session_ll(getpid(), "hot_threshold");
	log_session(_metadata, getpid());
	TH_LOG("threshold %lld: %ld of %ld pages on node 0 after %.1f s", thr,
	       on, pages, now_s() - start);
	ASSERT_EQ(1, thr);
	ASSERT_GE(on * 10, pages * 9);
	ASSERT_EQ(0, sys_htmm_end(0));
}

/*
 * demote_watermark 20: 128 MiB of a managed process, cold, on node 0, and
 * another process holding node 0 down to 10% free.  Under the default
 * watermark of 2% nothing needs to go; at 20% kmigraterd demotes the cold
 * pages until a fifth of the node is free (within 10% of it: other
 * allocations come and go).
 */
TEST_F_TIMEOUT(policy, demote_watermark_keeps_room_free, POLICY_TIMEOUT)
{
	const size_t len = 128 * MB;
	long total_kb = node_meminfo_kb(FAST, "MemTotal"), free_kb, low_kb;
	long wm_kb = total_kb / 5, down = 0;
	long long epoch = 0, demoted;
	int pipefd[2], back[2];
	double start;
	size_t hog_kb;
	char *buf, c;
	pid_t hog;

	ASSERT_LT(0, total_kb);
	ASSERT_EQ(0, pipe(pipefd));
	ASSERT_EQ(0, pipe(back));
	/* Before the buffer, so that the two share no page. */
	hog = fork();
	ASSERT_LE(0, hog);
	if (!hog) {
		unsigned long mask = 1UL << FAST;
		char *h;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (read(pipefd[0], &hog_kb, sizeof(hog_kb)) != sizeof(hog_kb))
			_exit(1);
		h = mmap(NULL, hog_kb * 1024, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		/* Preferred, not bound: past the node, not an OOM kill. */
		if (h == MAP_FAILED ||
		    syscall(SYS_mbind, h, hog_kb * 1024, MPOL_PREFERRED, &mask,
			    64, 0))
			_exit(2);
		memset(h, 1, hog_kb * 1024);
		if (write(back[1], "r", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	/* Not in the child: the fixture's data is shared with it. */
	self->child = hog;
	buf = buffer_on(len, FAST, MADV_NOHUGEPAGE);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ((long)(len / PAGE), pages_on(buf, len, FAST, NULL));

	ASSERT_EQ(0, sys_htmm_start(0, FAST));
	/* Until the first epoch ends, no page reads as cold (htmm.rst). */
	start = now_s();
	while ((epoch = session_ll(getpid(), "epoch")) < 2 &&
	       now_s() - start < patience(30))
		usleep(100000);
	ASSERT_LE(2, epoch);

	/* Node 0 down to a tenth free: over the default watermark. */
	free_kb = node_meminfo_kb(FAST, "MemFree");
	ASSERT_LT(total_kb / 10 + 32 * 1024, free_kb);
	hog_kb = free_kb - total_kb / 10;
	ASSERT_EQ((ssize_t)sizeof(hog_kb), write(pipefd[1], &hog_kb,
						 sizeof(hog_kb)));
	ASSERT_EQ(1, read(back[0], &c, 1));
	low_kb = node_meminfo_kb(FAST, "MemFree");
	demoted = session_ll(getpid(), "demoted");
	/* Well under the watermark to come, so that htmm has work to do. */
	ASSERT_GT(wm_kb * 3 / 4, low_kb);

	ASSERT_EQ(0, set("demote_watermark", "20"));
	start = now_s();
	while ((free_kb = node_meminfo_kb(FAST, "MemFree")) < wm_kb * 9 / 10 &&
	       now_s() - start < patience(60))
		usleep(200000);
	down = pages_on(buf, len, SLOW, NULL);
	demoted = session_ll(getpid(), "demoted") - demoted;
	log_session(_metadata, getpid());
	TH_LOG("node 0: %ld kB, %ld kB free with the hog (%zu kB); %ld kB free %.1f s after the watermark went to %ld kB; %lld pages demoted, %ld of the buffer's on node 1",
	       total_kb, low_kb, hog_kb, free_kb, now_s() - start, wm_kb,
	       demoted, down);
	ASSERT_LE(wm_kb * 9 / 10, free_kb);
	/*
	 * htmm made the room: at least half of it from the cold buffer.
	 * (More of the buffer may be on node 1 than htmm demoted: kswapd
	 * may demote a few pages while the hog fills the node.)
	 */
	EXPECT_LE((wm_kb - low_kb) / 4 / 2, demoted);
	EXPECT_LE((wm_kb - low_kb) / 4 / 2, down);
	ASSERT_EQ(0, sys_htmm_end(0));
}

/*
 * cooling_period_ms 0 is "never" for the sources that cool by the period;
 * a hint-fault session's counts halve once a round of the scan instead.
 * So with the period at 0, 8 MiB on node 1 (kept there: promote_rate_mb
 * 0) read until their counts are 4 or more, then left alone, cool: no
 * page of node 1 counts 2 or more once every count has halved enough, and
 * the epochs come once a round of the scan, not never: a scan period at
 * first (hint_scan_period_ms, 1 s here: the process is far smaller than
 * hint_scan_mb), then, as the rounds of a process left alone queue
 * nothing, twice as far apart each time, up to 16 periods (the scan's
 * backoff): in the runs here, 5 epochs took 30 s, and 7 took 48 s.  Under
 * patience(30), as this test waited before the backoff, one failed with
 * 1,767 pages still counting 2 or more.  The epochs
 * allowed are the highest bin with a page when left alone, b: a count of
 * bin b, under 2^b, halves under 2 in b - 1 (counts reach bin 8 or 9, a
 * probe's sample adding to its round's), and records still buffered then
 * may count in the epoch after.  The histogram counts every page of the
 * session, and the process's pages on node 0 that it uses (its stack, the
 * harness's data) count 1 to 3 from their accessed bits: the pages of
 * node 1 counted 2 or more are at most those of the histogram
 * less the session's pages on node 0.
 */
TEST_F_TIMEOUT(policy, hint_fault_counts_cool_with_cooling_off, POLICY_TIMEOUT)
{
	const size_t len = 8 * MB;
	const long pages = len / PAGE;
	long long warm = 0, left = -1, fast = -1, e0, e1;
	int top = -1;
	char *buf = buffer_on(len, SLOW, MADV_NOHUGEPAGE);
	double start, t;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, set("cooling_period_ms", "0"));
	ASSERT_EQ(0, set("promote_rate_mb", "0"));

	ASSERT_EQ(0, sys_htmm_start(0, FAST));
	start = now_s();
	/*
	 * Warm: counts of 4 or more.  On the debug kernel a fault weighs 1
	 * (it comes late after its arming) and counts settle at 1 or 2:
	 * counts of 2 or more (from a weight confirmed in two rounds).
	 */
	while (now_s() - start < patience(60)) {
		read_for(buf, len, 1);
		warm = hist_from(getpid(), debug_kernel() ? 2 : 3, &top);
		if (warm >= pages / 2)
			break;
	}
	log_session(_metadata, getpid());
	ASSERT_LE(pages / 2, warm) TH_LOG("the pages never warmed up");

	/*
	 * Left alone.  The highest bin is of the reading that found the
	 * pages warm (an epoch since would lower it), before the epoch: one
	 * that ends between is free.
	 */
	e0 = session_ll(getpid(), "epoch");
	ASSERT_LE(2, top);
	start = now_s();
	do {
		usleep(200000);
		/* First: an epoch that ends as the counts are read is free. */
		e1 = session_ll(getpid(), "epoch");
		fast = session_ll(getpid(), "pages_fast");
		left = hist_from(getpid(), 2, NULL);
		ASSERT_LE(0, left);
		left -= fast;
	} while (left > 0 && now_s() - start < patience(120));
	t = now_s() - start;
	log_session(_metadata, getpid());
	TH_LOG("cooling_period_ms 0: %lld pages counted 2 or more, less the %lld on node 0 (of %lld warm), after %lld epochs in %.1f s; the highest bin was %d",
	       left + fast, fast, warm, e1 - e0, t, top);
	ASSERT_LE(0, fast);
	ASSERT_GE(0, left);
	EXPECT_LE(e1 - e0, top);
	EXPECT_LT(0, session_ll(getpid(), "tracked"));
	ASSERT_EQ(0, session_ll(getpid(), "promoted"));
	ASSERT_EQ(0, sys_htmm_end(0));
}

TEST_HARNESS_MAIN
