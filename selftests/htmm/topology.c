// SPDX-License-Identifier: GPL-2.0
/*
 * The test bench's own assumptions: every htmm test runs on a guest whose
 * node 0 holds the CPUs and the fast memory, whose node 1 holds only
 * memory in a lower memory tier, and whose node 2 is memoryless until a
 * test onlines its memory.  If the guest is not built that way, the
 * results of every other test mean nothing, so check it first.
 *
 * The expected node sizes come from the boot script through the environment
 * (HTMM_FAST_MEM_MB, HTMM_SLOW_MEM_MB); without them those checks skip.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../kselftest_harness.h"

#define NODE_SYSFS "/sys/devices/system/node"
#define TIER_SYSFS "/sys/devices/virtual/memory_tiering"
#define MAX_NODES 64

/* Read a whole sysfs file into buf; returns length or -errno. */
static int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return n;
}

/*
 * Parse a kernel list like "0-1,4" into a bitmap of up to MAX_NODES bits.
 * Returns the number of members or -1 on a parse error.
 */
static int parse_list(const char *s, unsigned long long *mask)
{
	int count = 0;

	*mask = 0;
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b;

		if (end == s || a < 0 || a >= MAX_NODES)
			return -1;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a || b >= MAX_NODES)
				return -1;
		}
		for (long i = a; i <= b; i++) {
			*mask |= 1ULL << i;
			count++;
		}
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return count;
}

static int read_list(const char *path, unsigned long long *mask)
{
	char buf[256];

	if (read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	return parse_list(buf, mask);
}

/* The memory tier (its id, larger is slower) that holds node nid, or -1. */
static int tier_of_node(int nid, int *ntiers)
{
	DIR *d = opendir(TIER_SYSFS);
	struct dirent *e;
	int tier = -1;

	*ntiers = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[512];
		unsigned long long nodes;
		int id;

		if (sscanf(e->d_name, "memory_tier%d", &id) != 1)
			continue;
		snprintf(path, sizeof(path), TIER_SYSFS "/%s/nodelist", e->d_name);
		if (read_list(path, &nodes) <= 0)
			continue;
		(*ntiers)++;
		if (nodes & (1ULL << nid))
			tier = id;
	}
	closedir(d);
	return tier;
}

/* MemTotal of a node in MiB, from its meminfo, or -1. */
static long node_mem_mb(int nid)
{
	char path[128], buf[4096], key[64];
	const char *p;
	long kb;

	snprintf(path, sizeof(path), NODE_SYSFS "/node%d/meminfo", nid);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	snprintf(key, sizeof(key), "Node %d MemTotal:", nid);
	p = strstr(buf, key);
	if (!p || sscanf(p + strlen(key), "%ld", &kb) != 1)
		return -1;
	return kb / 1024;
}

TEST(nodes_0_and_1_have_memory)
{
	unsigned long long online, mem;

	ASSERT_GT(read_list(NODE_SYSFS "/online", &online), 0);
	ASSERT_GT(read_list(NODE_SYSFS "/has_memory", &mem), 0);
	EXPECT_TRUE(online & 1);
	EXPECT_TRUE(online & 2);
	EXPECT_TRUE(mem & 1);
	EXPECT_TRUE(mem & 2);
}

TEST(node_0_holds_every_cpu)
{
	unsigned long long node0, online;

	ASSERT_GT(read_list("/sys/devices/system/cpu/online", &online), 0);
	ASSERT_GT(read_list(NODE_SYSFS "/node0/cpulist", &node0), 0);
	EXPECT_EQ(online, node0);
}

TEST(node_1_has_no_cpus)
{
	char buf[64];
	unsigned long long has_cpu;

	ASSERT_GE(read_file(NODE_SYSFS "/node1/cpulist", buf, sizeof(buf)), 0);
	EXPECT_STREQ("", buf);
	ASSERT_GT(read_list(NODE_SYSFS "/has_cpu", &has_cpu), 0);
	EXPECT_FALSE(has_cpu & 2);
}

/*
 * Node 2 is online with neither memory nor CPUs: a DIMM that the guest found
 * at boot and left offline (memory hotplug), the memoryless node of the
 * tests that need one.
 */
TEST(node_2_is_memoryless)
{
	unsigned long long online, mem, has_cpu;

	ASSERT_GT(read_list(NODE_SYSFS "/online", &online), 0);
	ASSERT_GT(read_list(NODE_SYSFS "/has_memory", &mem), 0);
	ASSERT_GT(read_list(NODE_SYSFS "/has_cpu", &has_cpu), 0);
	EXPECT_TRUE(online & 4);
	EXPECT_FALSE(mem & 4);
	EXPECT_FALSE(has_cpu & 4);
}

TEST(two_memory_tiers)
{
	int ntiers, t0, t1;

	t0 = tier_of_node(0, &ntiers);
	ASSERT_GE(t0, 0) TH_LOG("node 0 is in no memory tier (is CONFIG_ACPI_HMAT set?)");
	t1 = tier_of_node(1, &ntiers);
	ASSERT_GE(t1, 0) TH_LOG("node 1 is in no memory tier");
	EXPECT_EQ(2, ntiers);
	EXPECT_NE(t0, t1);
}

TEST(node_1_tier_is_below_node_0)
{
	int ntiers, t0, t1;

	t0 = tier_of_node(0, &ntiers);
	t1 = tier_of_node(1, &ntiers);
	ASSERT_GE(t0, 0);
	ASSERT_GE(t1, 0);
	/* A larger abstract distance (tier id) is a slower tier. */
	EXPECT_LT(t0, t1) TH_LOG("node 0 tier %d, node 1 tier %d", t0, t1);
}

TEST(node_sizes_match_the_boot_options)
{
	const char *fast = getenv("HTMM_FAST_MEM_MB");
	const char *slow = getenv("HTMM_SLOW_MEM_MB");
	long want[2], got[2];

	if (!fast || !slow)
		SKIP(return, "HTMM_FAST_MEM_MB/HTMM_SLOW_MEM_MB not set by the boot script");
	want[0] = atol(fast);
	want[1] = atol(slow);
	for (int nid = 0; nid < 2; nid++) {
		got[nid] = node_mem_mb(nid);
		ASSERT_GT(got[nid], 0);
		/*
		 * MemTotal leaves out what firmware and the kernel keep for
		 * themselves: on node 0 also the kernel image and, on a KASAN
		 * kernel, the shadow of all memory (an eighth of it).  Allow
		 * 40% of node 0 and 15% of the others.
		 */
		EXPECT_LE(got[nid], want[nid]);
		EXPECT_GE(got[nid], want[nid] * (nid ? 85 : 60) / 100)
			TH_LOG("node %d: %ld MiB, boot option %ld MiB", nid, got[nid], want[nid]);
	}
}

/*
 * move_pages(2) is how every later test reads back where a page lives, and
 * the mechanism the tiers rest on: a page moved to node 1 and back must
 * report each node and keep its contents.
 */
TEST(page_moves_between_tiers)
{
	long psize = sysconf(_SC_PAGESIZE);
	unsigned char *p;
	void *pages[1];
	int nodes[1], status[1];

	p = mmap(NULL, psize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (long i = 0; i < psize; i++)
		p[i] = (unsigned char)(i * 7 + 3);
	pages[0] = p;

	for (int target = 1; target >= 0; target--) {
		nodes[0] = target;
		status[0] = -1;
		ASSERT_EQ(0, syscall(SYS_move_pages, 0, 1, pages, nodes, status, 0))
			TH_LOG("move_pages to node %d: %s", target, strerror(errno));
		EXPECT_EQ(target, status[0]);
		status[0] = -1;
		ASSERT_EQ(0, syscall(SYS_move_pages, 0, 1, pages, NULL, status, 0));
		EXPECT_EQ(target, status[0]);
	}
	for (long i = 0; i < psize; i++)
		ASSERT_EQ((unsigned char)(i * 7 + 3), p[i]);
	munmap(p, psize);
}

TEST_HARNESS_MAIN
