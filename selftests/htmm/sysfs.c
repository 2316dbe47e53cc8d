// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/mm/htmm/: the tunables refuse bad values and keep good ones,
 * and each session has a directory, named by its pid, whose counters move
 * while its process runs and which goes away when the session ends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "htmm_test.h"

#define HTMM HTMM_SYSFS

static long long get_ll(const char *path)
{
	char buf[64];

	if (read_file(path, buf, sizeof(buf)))
		return -1;
	return atoll(buf);
}

TEST(source_is_listed_and_chosen)
{
	char buf[256];

	/* PEBS or IBS may come first on hardware; hint faults work anywhere. */
	ASSERT_EQ(0, read_file(HTMM "/source", buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, "[auto] ", 7)) TH_LOG("source: %s", buf);
	EXPECT_NE(NULL, strstr(buf, " hint-fault"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/source", "no-such-source"));
	ASSERT_EQ(0, write_file(HTMM "/source", "hint-fault"));
	ASSERT_EQ(0, read_file(HTMM "/source", buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, "auto ", 5)) TH_LOG("source: %s", buf);
	EXPECT_NE(NULL, strstr(buf, " [hint-fault]"));
	ASSERT_EQ(0, write_file(HTMM "/source", "auto"));
	ASSERT_EQ(0, read_file(HTMM "/source", buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, "[auto] ", 7));
}

TEST(tunables_refuse_bad_values)
{
	long long pages = get_ll(HTMM "/buffer_pages");
	long long quota = get_ll(HTMM "/cpu_quota");
	char old[32];

	ASSERT_GT(pages, 0);
	ASSERT_GT(quota, 0);
	EXPECT_EQ(EINVAL, write_file(HTMM "/buffer_pages", "3"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/buffer_pages", "0"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/buffer_pages", "2048"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/cpu_quota", "0"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/cpu_quota", "1001"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/cpu_quota", "ten"));
	EXPECT_EQ(EINVAL, write_file(HTMM "/hint_scan_period_ms", "1"));
	EXPECT_EQ(pages, get_ll(HTMM "/buffer_pages"));
	EXPECT_EQ(quota, get_ll(HTMM "/cpu_quota"));

	EXPECT_EQ(0, write_file(HTMM "/buffer_pages", "32"));
	EXPECT_EQ(32, get_ll(HTMM "/buffer_pages"));
	snprintf(old, sizeof(old), "%lld", pages);
	EXPECT_EQ(0, write_file(HTMM "/buffer_pages", old));
	EXPECT_EQ(pages, get_ll(HTMM "/buffer_pages"));
}

TEST(tunables_are_root_only)
{
	char buf[64];
	pid_t pid = fork();
	int status;

	ASSERT_GE(pid, 0);
	if (!pid) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		/* Readable by anyone, writable by root only. */
		if (read_file(HTMM "/cpu_quota", buf, sizeof(buf)))
			_exit(11);
		_exit(write_file(HTMM "/cpu_quota", "50") == EACCES ? 0 : 12);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST(session_directory_follows_the_session)
{
	char dir[128], path[192], unarmed[192], lost[192], buf[64];
	long long sampled0, sampled1, unarmed0, unarmed1, lost0, lost1 = 0;
	int go[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		char c, *p;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		p = mmap(NULL, 16 << 20, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(2);
		madvise(p, 16 << 20, MADV_NOHUGEPAGE);
		memset(p, 1, 16 << 20);
		/* Wait for the end of the pipe, then exit. */
		while (read(go[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(go[0]);
	/*
	 * Each first touch is a sample of the hint-fault source, at a sample
	 * period of 1: ksamplingd may have raised it, to hold its quota.
	 */
	ASSERT_EQ(0, write_file(HTMM "/source", "hint-fault"));
	ASSERT_EQ(0, write_file(HTMM "/sample_period_max", "1"));
	snprintf(dir, sizeof(dir), HTMM "/sessions/%d", pid);
	EXPECT_NE(0, access(dir, F_OK));

	ASSERT_EQ(0, sys_htmm_start(pid, -1));
	ASSERT_EQ(0, write_file(HTMM "/source", "auto"));
	ASSERT_EQ(0, write_file(HTMM "/sample_period_max", "0"));
	ASSERT_EQ(0, access(dir, F_OK)) TH_LOG("no %s", dir);
	snprintf(path, sizeof(path), "%s/node", dir);
	EXPECT_EQ(0, get_ll(path));
	snprintf(path, sizeof(path), "%s/source", dir);
	ASSERT_EQ(0, read_file(path, buf, sizeof(buf)));
	EXPECT_STREQ("hint-fault", buf);
	snprintf(path, sizeof(path), "%s/events", dir);
	EXPECT_EQ(sysconf(_SC_NPROCESSORS_ONLN), get_ll(path));

	snprintf(path, sizeof(path), "%s/sampled", dir);
	snprintf(unarmed, sizeof(unarmed), "%s/unarmed", dir);
	snprintf(lost, sizeof(lost), "%s/lost", dir);
	sampled0 = get_ll(path);
	unarmed0 = get_ll(unarmed);
	lost0 = get_ll(lost);
	ASSERT_GE(sampled0, 0);
	ASSERT_GE(unarmed0, 0);
	ASSERT_GE(lost0, 0);
	/*
	 * The child touches 4096 pages, each a page fault that the source
	 * records.  As the ABI says, a fault on a page that the scanner had
	 * not armed (a first touch) is counted in unarmed, one on an armed
	 * page in sampled, and one perf could not record (its buffer full
	 * while ksamplingd was busy) in lost: together, every fault.
	 */
	ASSERT_EQ(1, write(go[1], "g", 1));
	for (int i = 0; i < 200; i++) {
		sampled1 = get_ll(path);
		unarmed1 = get_ll(unarmed);
		lost1 = get_ll(lost);
		if (sampled1 - sampled0 + unarmed1 - unarmed0 +
		    lost1 - lost0 >= 4096)
			break;
		usleep(100 * 1000);
	}
	TH_LOG("sampled %lld -> %lld, unarmed %lld -> %lld, lost %lld -> %lld",
	       sampled0, sampled1, unarmed0, unarmed1, lost0, lost1);
	EXPECT_GE(sampled1 - sampled0 + unarmed1 - unarmed0 + lost1 - lost0,
		  4096);
	/* Every sample of the hint-fault source is a fault. */
	snprintf(path, sizeof(path), "%s/fault", dir);
	EXPECT_GE(get_ll(path), sampled1);

	ASSERT_EQ(0, sys_htmm_end(pid));
	EXPECT_NE(0, access(dir, F_OK));
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
