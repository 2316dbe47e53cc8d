// SPDX-License-Identifier: GPL-2.0
/*
 * perf_rb_test: unit tests of libhtmm's perf ring-buffer reader, in TAP.
 *
 * The reader's cases are those of the kernel's reader (mm/htmm/tests/
 * ringbuf-kunit.h): a ring the test writes records into as the kernel would,
 * with free-running counters and records straddling the end of the ring,
 * corrupt headers, short samples, LOST and THROTTLE records, a budget; and
 * one ring the kernel itself writes, from a perf event on this process.
 * The sample parser is checked field by field and against records too
 * short for what they claim.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perf_rb.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define PAGE		4096ULL

/* The sample_type of the kernel's tests: 24-byte samples. */
#define RBT_TYPE	(PERF_SAMPLE_TID | PERF_SAMPLE_ADDR)
#define RBT_SIZE	24

/* ---- a minimal TAP harness: a failed check fails its test ---- */

static bool test_failed;

static bool check(bool ok, const char *what, int line)
{
	if (!ok) {
		printf("# line %d: check failed: %s\n", line, what);
		test_failed = true;
	}
	return ok;
}

static bool check_eq(uint64_t want, uint64_t got, const char *expr, int line)
{
	if (want != got) {
		printf("# line %d: %s: want %" PRIu64 " (0x%" PRIx64 "), got %"
		       PRIu64 " (0x%" PRIx64 ")\n", line, expr, want, want, got, got);
		test_failed = true;
	}
	return want == got;
}

#define EXPECT(c)		check((c), #c, __LINE__)
#define EXPECT_EQ(w, g)		check_eq((uint64_t)(w), (uint64_t)(g), #g, __LINE__)
#define ASSERT(c)		do { if (!EXPECT(c)) return; } while (0)
#define ASSERT_EQ(w, g)		do { if (!EXPECT_EQ(w, g)) return; } while (0)

static char skip_reason[160];

static void skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(skip_reason, sizeof(skip_reason), fmt, ap);
	va_end(ap);
}

/* ---- a ring the test writes into, as the kernel would ---- */

struct rbt {
	struct perf_event_mmap_page *up;
	unsigned char *data;
	uint64_t head;
	struct perf_rb rb;
	/* What the reader handed on. */
	unsigned int nr;
	uint32_t pids[32];
	uint64_t addrs[32];
	const void *recs[32];
	unsigned int nr_records;
	uint32_t record_types[32];
};

/* A ring of @size bytes whose stream starts at byte @start. */
static struct rbt *rbt_new(uint64_t size, uint64_t start)
{
	struct rbt *t = calloc(1, sizeof(*t));

	if (!t || posix_memalign((void **)&t->up, PAGE, PAGE) ||
	    posix_memalign((void **)&t->data, PAGE, size)) {
		perror("perf_rb_test: allocating a ring");
		exit(1);
	}
	memset(t->up, 0, PAGE);
	/* Garbage where nothing was written: the reader must not look. */
	memset(t->data, 0xa5, size);
	if (perf_rb_init(&t->rb, t->up, t->data, size)) {
		perror("perf_rb_test: perf_rb_init");
		exit(1);
	}
	t->head = start;
	t->up->data_tail = start;
	/* Publish as the kernel does: the reader acquires data_head. */
	__atomic_store_n(&t->up->data_head, start, __ATOMIC_RELEASE);
	return t;
}

static void rbt_free(struct rbt *t)
{
	free(t->up);
	free(t->data);
	free(t);
}

/* Write @len bytes at the head, wrapping around the end of the ring. */
static void rbt_put(struct rbt *t, const void *src, size_t len)
{
	const unsigned char *s = src;

	while (len) {
		uint64_t off = t->head & (t->rb.size - 1);
		size_t n = len < t->rb.size - off ? len : t->rb.size - off;

		memcpy(t->data + off, s, n);
		s += n;
		t->head += n;
		len -= n;
	}
}

static void rbt_publish(struct rbt *t)
{
	/* The records below the new head are written before it is seen. */
	__atomic_store_n(&t->up->data_head, t->head, __ATOMIC_RELEASE);
}

static void rbt_put_sample(struct rbt *t, uint32_t pid, uint64_t addr)
{
	struct {
		struct perf_event_header hdr;
		uint32_t pid, tid;
		uint64_t addr;
	} rec = {
		.hdr = { .type = PERF_RECORD_SAMPLE, .size = sizeof(rec) },
		.pid = pid, .tid = pid + 1, .addr = addr,
	};

	rbt_put(t, &rec, sizeof(rec));
}

static void rbt_put_raw(struct rbt *t, uint32_t type, uint16_t size,
			const uint64_t *body)
{
	struct perf_event_header hdr = { .type = type, .size = size };

	rbt_put(t, &hdr, sizeof(hdr));
	rbt_put(t, body, size - sizeof(hdr));
}

static void rbt_collect(void *arg, const struct perf_sample *s,
			const struct perf_event_header *rec)
{
	struct rbt *t = arg;

	if (t->nr < ARRAY_SIZE(t->addrs)) {
		t->pids[t->nr] = s->pid;
		t->addrs[t->nr] = s->addr;
		t->recs[t->nr] = rec;
	}
	t->nr++;
}

static void rbt_record(void *arg, const struct perf_event_header *rec)
{
	struct rbt *t = arg;

	if (t->nr_records < ARRAY_SIZE(t->record_types))
		t->record_types[t->nr_records] = rec->type;
	t->nr_records++;
}

static const struct perf_rb_ops rbt_ops = {
	.sample = rbt_collect,
	.record = rbt_record,
};

static uint64_t rbt_read(struct rbt *t, uint64_t type, unsigned int max,
			 struct perf_rb_counts *c)
{
	return perf_rb_read(&t->rb, type, max, &rbt_ops, t, c);
}

/* ---- the reader ---- */

static void test_wraps(void)
{
	struct perf_rb_counts c = { 0 };
	struct rbt *t;
	unsigned int i;

	/* Free-running counters well past the size, 24 bytes before a wrap. */
	t = rbt_new(2 * PAGE, 3 * 2 * PAGE - 24);
	for (i = 0; i < 10; i++)
		rbt_put_sample(t, 100 + i, 0x10000 + i * PAGE);
	rbt_publish(t);

	EXPECT_EQ(0, rbt_read(t, RBT_TYPE, ~0U, &c));
	EXPECT_EQ(10, t->nr);
	EXPECT_EQ(10, c.samples);
	EXPECT_EQ(0, c.malformed);
	for (i = 0; i < 10 && i < t->nr; i++) {
		EXPECT_EQ(100 + i, t->pids[i]);
		EXPECT_EQ(0x10000 + i * PAGE, t->addrs[i]);
	}
	EXPECT_EQ(t->head, t->up->data_tail);
	EXPECT_EQ(0, perf_rb_unread(&t->rb));
	rbt_free(t);
}

static void test_straddles_end(void)
{
	struct perf_rb_counts c = { 0 };
	struct rbt *t;

	/*
	 * The second record's header is the last 8 bytes of the ring, its
	 * pid and address are at the start: it is handed on from the copy,
	 * the first one in place.
	 */
	t = rbt_new(PAGE, 5 * PAGE - 32);
	rbt_put_sample(t, 7, 0x7000);
	rbt_put_sample(t, 8, 0x123456789000ULL);
	rbt_put_sample(t, 9, 0x9000);
	rbt_publish(t);

	rbt_read(t, RBT_TYPE, ~0U, &c);
	ASSERT_EQ(3, t->nr);
	EXPECT_EQ(8, t->pids[1]);
	EXPECT_EQ(0x123456789000ULL, t->addrs[1]);
	EXPECT_EQ(9, t->pids[2]);
	EXPECT(t->recs[0] == t->data + PAGE - 32);
	EXPECT(t->recs[1] == (const void *)t->rb.copy);
	EXPECT(t->recs[2] == t->data + 16);
	EXPECT_EQ(0, c.malformed);
	rbt_free(t);
}

/* A big record, a long callchain, across the end of the ring. */
static void collect_chain(void *arg, const struct perf_sample *s,
			  const struct perf_event_header *rec)
{
	uint64_t *sum = arg;

	(void)rec;
	for (uint64_t i = 0; i < s->nr_callchain; i++)
		sum[0] += s->callchain[i] == 0x400000 + i;
	sum[1] = s->nr_callchain;
	sum[2] = s->ip;
}

static void test_big_record_straddles_end(void)
{
	enum { NR_IPS = 1000 };
	const uint64_t type = PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN;
	static const struct perf_rb_ops ops = { .sample = collect_chain };
	struct perf_event_header hdr = {
		.type = PERF_RECORD_SAMPLE,
		.size = sizeof(hdr) + (2 + NR_IPS) * sizeof(uint64_t),
	};
	struct perf_rb_counts c = { 0 };
	uint64_t body[2 + NR_IPS], sum[3] = { 0 };
	struct rbt *t;

	body[0] = 0xabc;
	body[1] = NR_IPS;
	for (unsigned int i = 0; i < NR_IPS; i++)
		body[2 + i] = 0x400000 + i;
	/* 8016 bytes in a ring of 8192, half before the end, half after. */
	t = rbt_new(2 * PAGE, 2 * PAGE - 4000);
	rbt_put(t, &hdr, sizeof(hdr));
	rbt_put(t, body, sizeof(body));
	rbt_publish(t);

	EXPECT_EQ(0, perf_rb_read(&t->rb, type, ~0U, &ops, sum, &c));
	EXPECT_EQ(1, c.samples);
	EXPECT_EQ(0xabc, sum[2]);
	EXPECT_EQ(NR_IPS, sum[1]);
	EXPECT_EQ(NR_IPS, sum[0]);
	rbt_free(t);
}

static void test_corrupt_size(void)
{
	/* Below a header, not 8-aligned, more than was written. */
	static const uint16_t bad[] = { 0, 4, 12, 4096, 65528 };

	for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++) {
		struct perf_rb_counts c = { 0 };
		struct perf_event_header hdr = {
			.type = PERF_RECORD_SAMPLE, .size = bad[i],
		};
		uint64_t pad[3] = { 0 };
		struct rbt *t = rbt_new(PAGE, 0);

		rbt_put_sample(t, 1, 0x1000);
		rbt_put(t, &hdr, sizeof(hdr));
		rbt_put(t, pad, sizeof(pad));
		rbt_put_sample(t, 2, 0x2000);
		rbt_publish(t);

		/* The good record before it is read; nothing after it is. */
		if (!EXPECT_EQ(0, rbt_read(t, RBT_TYPE, ~0U, &c)) |
		    !EXPECT_EQ(1, t->nr) | !EXPECT_EQ(1, c.malformed) |
		    !EXPECT_EQ(t->head, t->up->data_tail))
			printf("# ... with a record of size %u\n", bad[i]);
		rbt_free(t);
	}
}

static void test_head_too_far(void)
{
	struct perf_rb_counts c = { 0 };
	struct rbt *t = rbt_new(PAGE, 0);

	/* More unread than the ring holds: the stream cannot be followed. */
	rbt_put_sample(t, 1, 0x1000);
	t->head += 2 * PAGE;
	rbt_publish(t);

	EXPECT_EQ(0, rbt_read(t, RBT_TYPE, ~0U, &c));
	EXPECT_EQ(0, t->nr);
	EXPECT_EQ(1, c.malformed);
	EXPECT_EQ(t->head, t->up->data_tail);
	rbt_free(t);
}

static void test_short_sample(void)
{
	struct perf_rb_counts c = { 0 };
	uint64_t body[1] = { 0x4242 };
	struct rbt *t = rbt_new(PAGE, 0);

	/* A sample too short for its sample_type is skipped alone. */
	rbt_put_raw(t, PERF_RECORD_SAMPLE, 16, body);
	rbt_put_sample(t, 3, 0x3000);
	rbt_publish(t);

	rbt_read(t, RBT_TYPE, ~0U, &c);
	EXPECT_EQ(1, c.malformed);
	EXPECT_EQ(1, c.samples);
	ASSERT_EQ(1, t->nr);
	EXPECT_EQ(0x3000, t->addrs[0]);
	EXPECT_EQ(t->head, t->up->data_tail);
	rbt_free(t);
}

static void test_lost_throttle(void)
{
	struct perf_rb_counts c = { 0 };
	uint64_t lost[2] = { 1, 7 }, lost_samples[1] = { 3 }, thr[3] = { 5, 1, 1 };
	struct rbt *t = rbt_new(PAGE, 0);

	rbt_put_raw(t, PERF_RECORD_LOST, 24, lost);
	rbt_put_raw(t, PERF_RECORD_THROTTLE, 32, thr);
	rbt_put_sample(t, 4, 0x4000);
	rbt_put_raw(t, PERF_RECORD_UNTHROTTLE, 32, thr);
	rbt_put_raw(t, PERF_RECORD_LOST_SAMPLES, 16, lost_samples);
	rbt_put_raw(t, PERF_RECORD_COMM, 32, thr);
	/* Too short for what they tell: malformed, skipped alone. */
	rbt_put_raw(t, PERF_RECORD_LOST, 16, lost);
	rbt_put_raw(t, PERF_RECORD_LOST_SAMPLES, 8, lost);
	rbt_publish(t);

	rbt_read(t, RBT_TYPE, ~0U, &c);
	EXPECT_EQ(10, c.lost);
	EXPECT_EQ(1, c.throttled);
	EXPECT_EQ(1, c.unthrottled);
	EXPECT_EQ(1, c.samples);
	EXPECT_EQ(1, c.other);
	EXPECT_EQ(2, c.malformed);
	/* The records but the sample and the malformed ones are handed on. */
	ASSERT_EQ(5, t->nr_records);
	EXPECT_EQ(PERF_RECORD_LOST, t->record_types[0]);
	EXPECT_EQ(PERF_RECORD_COMM, t->record_types[4]);
	EXPECT_EQ(t->head, t->up->data_tail);
	rbt_free(t);
}

static void test_budget(void)
{
	struct perf_rb_counts c = { 0 };
	struct rbt *t = rbt_new(PAGE, 0);
	unsigned int i;

	for (i = 0; i < 10; i++)
		rbt_put_sample(t, i, 0x1000 * (i + 1));
	rbt_publish(t);

	EXPECT_EQ(6 * RBT_SIZE, rbt_read(t, RBT_TYPE, 4, &c));
	EXPECT_EQ(4, t->nr);
	EXPECT_EQ(6 * RBT_SIZE, perf_rb_unread(&t->rb));
	/* The tail was stored for the records read, not beyond. */
	EXPECT_EQ(4 * RBT_SIZE, t->up->data_tail);
	EXPECT_EQ(0, rbt_read(t, RBT_TYPE, 100, &c));
	EXPECT_EQ(10, t->nr);
	EXPECT_EQ(0x5000, t->addrs[4]);
	rbt_free(t);
}

/* ---- the sample parser ---- */

#define ALL_TYPES							\
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |	\
	 PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |		\
	 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |	\
	 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |			\
	 PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC |		\
	 PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_PHYS_ADDR |		\
	 PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE |		\
	 PERF_SAMPLE_CODE_PAGE_SIZE)

/* A record, seen as a header or as u64 words. */
union rec {
	struct perf_event_header hdr;
	uint64_t w[64];
};

/*
 * A sample with every field the parser knows, in the kernel's order.  The
 * kernel writes the same value for IDENTIFIER and ID: here they differ, as
 * every field does, so that a field read in another's place shows.
 */
#define FULL_IDENTIFIER	0x1d
#define FULL_ID		0x2e
#define FULL_TRANSACTION 0x83

static size_t build_full_sample(union rec *r)
{
	uint64_t *w = r->w;
	size_t n = 1;
	union perf_sample_weight weight = { .full = 0 };
	uint32_t u32[2];

	w[n++] = FULL_IDENTIFIER;		/* IDENTIFIER */
	w[n++] = 0x401000;			/* IP */
	u32[0] = 1234; u32[1] = 1235;		/* TID */
	memcpy(&w[n++], u32, sizeof(u32));
	w[n++] = 999999;			/* TIME */
	w[n++] = 0x7f0000001000;		/* ADDR */
	w[n++] = FULL_ID;			/* ID */
	w[n++] = 0x5d;				/* STREAM_ID */
	u32[0] = 3; u32[1] = 0;			/* CPU */
	memcpy(&w[n++], u32, sizeof(u32));
	w[n++] = 100;				/* PERIOD */
	w[n++] = 2;				/* CALLCHAIN nr */
	w[n++] = 0x401000;
	w[n++] = 0x402000;
	u32[0] = 12;				/* RAW: 4 + 12 = 16 bytes */
	memcpy(&w[n], u32, sizeof(u32[0]));
	memcpy((char *)&w[n] + 4, "raw-payload", 12);
	n += 2;
	weight.var1_dw = 250;			/* WEIGHT_STRUCT */
	weight.var2_w = 40;
	w[n++] = weight.full;
	w[n++] = 0x68100142;			/* DATA_SRC */
	w[n++] = FULL_TRANSACTION;		/* TRANSACTION */
	w[n++] = 0x12345000;			/* PHYS_ADDR */
	w[n++] = 77;				/* CGROUP */
	w[n++] = 4096;				/* DATA_PAGE_SIZE */
	w[n++] = 2 << 20;			/* CODE_PAGE_SIZE */
	r->hdr.type = PERF_RECORD_SAMPLE;
	r->hdr.size = n * sizeof(uint64_t);
	return n * sizeof(uint64_t);
}

static void test_sample_fields(void)
{
	union rec r = { .w = { 0 } };
	struct perf_sample s;

	build_full_sample(&r);
	ASSERT_EQ(0, perf_sample_parse(ALL_TYPES, &r.hdr, &s));
	EXPECT_EQ(0x401000, s.ip);
	EXPECT_EQ(1234, s.pid);
	EXPECT_EQ(1235, s.tid);
	EXPECT_EQ(999999, s.time);
	EXPECT_EQ(0x7f0000001000, s.addr);
	/* With both, the ID is the ID's, not the IDENTIFIER's. */
	EXPECT_EQ(FULL_ID, s.id);
	EXPECT_EQ(0x5d, s.stream_id);
	EXPECT_EQ(3, s.cpu);
	EXPECT_EQ(100, s.period);
	ASSERT_EQ(2, s.nr_callchain);
	EXPECT_EQ(0x402000, s.callchain[1]);
	EXPECT_EQ(12, s.raw_size);
	EXPECT(s.raw && !memcmp(s.raw, "raw-payload", 12));
	EXPECT_EQ(250, s.weight);
	EXPECT_EQ(40, s.ins_lat);
	EXPECT_EQ(0x68100142, s.data_src);
	EXPECT_EQ(FULL_TRANSACTION, s.transaction);
	EXPECT_EQ(0x12345000, s.phys_addr);
	EXPECT_EQ(77, s.cgroup);
	EXPECT_EQ(4096, s.data_page_size);
	EXPECT_EQ(2 << 20, s.code_page_size);
}

/* IDENTIFIER without ID: the first word, and the ID of the sample. */
static void test_sample_identifier(void)
{
	union rec r = { .w = { 0, FULL_IDENTIFIER, 0x401000, FULL_ID } };
	struct perf_sample s;

	r.hdr.type = PERF_RECORD_SAMPLE;
	r.hdr.size = 3 * sizeof(uint64_t);
	ASSERT_EQ(0, perf_sample_parse(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP,
				       &r.hdr, &s));
	EXPECT_EQ(FULL_IDENTIFIER, s.id);
	EXPECT_EQ(0x401000, s.ip);
	/* ID alone: the word after the IP, as STREAM_ID is the next. */
	r.w[1] = 0x401000;
	r.w[2] = FULL_ID;
	r.w[3] = 0x5d;
	r.hdr.size = 4 * sizeof(uint64_t);
	ASSERT_EQ(0, perf_sample_parse(PERF_SAMPLE_IP | PERF_SAMPLE_ID |
				       PERF_SAMPLE_STREAM_ID, &r.hdr, &s));
	EXPECT_EQ(0x401000, s.ip);
	EXPECT_EQ(FULL_ID, s.id);
	EXPECT_EQ(0x5d, s.stream_id);
}

static void test_sample_bounds(void)
{
	union rec r = { .w = { 0 } };
	struct perf_event_header *hdr = &r.hdr;
	uint64_t *w = r.w;
	size_t full = build_full_sample(&r);
	struct perf_sample s;
	uint32_t raw_size;

	/* Cut short anywhere, the record is refused. */
	for (size_t size = sizeof(*hdr); size < full; size += sizeof(uint64_t)) {
		hdr->size = size;
		if (!EXPECT_EQ(-1, perf_sample_parse(ALL_TYPES, hdr, &s)))
			printf("# ... cut to %zu of %zu bytes\n", size, full);
	}
	hdr->size = full;
	EXPECT_EQ(0, perf_sample_parse(ALL_TYPES, hdr, &s));

	/* A callchain longer than the record: w[10] is its nr. */
	w[10] = UINT64_MAX / 8;
	EXPECT_EQ(-1, perf_sample_parse(ALL_TYPES, hdr, &s));
	w[10] = 2;
	/* Raw data longer than the record, and raw data not padded. */
	raw_size = 4000;
	memcpy(&w[13], &raw_size, sizeof(raw_size));
	EXPECT_EQ(-1, perf_sample_parse(ALL_TYPES, hdr, &s));
	raw_size = 11;
	memcpy(&w[13], &raw_size, sizeof(raw_size));
	EXPECT_EQ(-1, perf_sample_parse(ALL_TYPES, hdr, &s));
}

static void test_sample_types(void)
{
	static const uint64_t refused[] = {
		PERF_SAMPLE_READ, PERF_SAMPLE_BRANCH_STACK,
		PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER,
		PERF_SAMPLE_REGS_INTR, PERF_SAMPLE_AUX,
		PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT,
		1ULL << 62,
	};
	union rec r = { .w = { 0 } };
	struct perf_sample s;

	EXPECT(perf_sample_type_ok(ALL_TYPES));
	EXPECT(perf_sample_type_ok(PERF_SAMPLE_IP | PERF_SAMPLE_WEIGHT));
	for (unsigned int i = 0; i < ARRAY_SIZE(refused); i++) {
		r.hdr.size = 4 * sizeof(uint64_t);
		if (!EXPECT(!perf_sample_type_ok(PERF_SAMPLE_IP | refused[i])) |
		    !EXPECT_EQ(-1, perf_sample_parse(PERF_SAMPLE_IP | refused[i],
						     &r.hdr, &s)))
			printf("# ... sample_type bits 0x%" PRIx64 "\n", refused[i]);
	}
}

static void test_sample_id(void)
{
	const uint64_t type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			      PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
			      PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	/* COMM: { pid, tid, "toucher\0" } then TID, TIME, CPU. */
	struct {
		struct perf_event_header hdr;
		uint32_t pid, tid;
		char comm[8];
		uint32_t id_pid, id_tid;
		uint64_t id_time;
		uint32_t id_cpu, res;
	} rec = {
		.hdr = { .type = PERF_RECORD_COMM, .size = sizeof(rec) },
		.pid = 10, .tid = 11, .comm = "toucher",
		.id_pid = 10, .id_tid = 11, .id_time = 123456789, .id_cpu = 1,
	};
	struct perf_sample_id id;

	EXPECT_EQ(3 * sizeof(uint64_t), perf_sample_id_size(type));
	ASSERT_EQ(0, perf_sample_id_parse(type, &rec.hdr, 16, &id));
	EXPECT_EQ(10, id.pid);
	EXPECT_EQ(11, id.tid);
	EXPECT_EQ(123456789, id.time);
	EXPECT_EQ(1, id.cpu);
	/* No room for the COMM's own 16 bytes and the trailer. */
	EXPECT_EQ(-1, perf_sample_id_parse(type, &rec.hdr, 24, &id));
	rec.hdr.size = 16;
	EXPECT_EQ(-1, perf_sample_id_parse(type, &rec.hdr, 0, &id));
}

/* Every field a trailer can have, each of its own value, in their order. */
static void test_sample_id_all_fields(void)
{
	const uint64_t type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
			      PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			      PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
			      PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	/* FORK: { pid, ppid, tid, ptid, time } then the trailer. */
	struct {
		struct perf_event_header hdr;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
		uint32_t id_pid, id_tid;
		uint64_t id_time, id_id, id_stream_id;
		uint32_t id_cpu, res;
		uint64_t id_identifier;
	} rec = {
		.hdr = { .type = PERF_RECORD_FORK, .size = sizeof(rec) },
		.pid = 20, .ppid = 10, .tid = 20, .ptid = 10, .time = 5,
		.id_pid = 21, .id_tid = 22, .id_time = 987654321,
		.id_id = FULL_ID, .id_stream_id = 0x5d, .id_cpu = 7,
		.id_identifier = FULL_IDENTIFIER,
	};
	/* Only the IDENTIFIER of them, after the TID. */
	struct {
		struct perf_event_header hdr;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
		uint32_t id_pid, id_tid;
		uint64_t id_identifier;
	} rec2 = {
		.hdr = { .type = PERF_RECORD_FORK, .size = sizeof(rec2) },
		.id_pid = 31, .id_tid = 32, .id_identifier = FULL_IDENTIFIER,
	};
	struct perf_sample_id id;

	/* IP and PERIOD are no part of it. */
	EXPECT_EQ(6 * sizeof(uint64_t), perf_sample_id_size(type));
	ASSERT_EQ(0, perf_sample_id_parse(type, &rec.hdr, 24, &id));
	EXPECT_EQ(21, id.pid);
	EXPECT_EQ(22, id.tid);
	EXPECT_EQ(987654321, id.time);
	/* With both, the ID is the ID's, not the IDENTIFIER's. */
	EXPECT_EQ(FULL_ID, id.id);
	EXPECT_EQ(0x5d, id.stream_id);
	EXPECT_EQ(7, id.cpu);

	ASSERT_EQ(0, perf_sample_id_parse(PERF_SAMPLE_TID | PERF_SAMPLE_IDENTIFIER,
					  &rec2.hdr, 24, &id));
	EXPECT_EQ(31, id.pid);
	EXPECT_EQ(32, id.tid);
	EXPECT_EQ(FULL_IDENTIFIER, id.id);
	EXPECT_EQ(0, id.stream_id);
	EXPECT_EQ(0, id.time);
}

/* ---- the kernel's own output ---- */

static void test_real_output(void)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.size = sizeof(attr),
		.disabled = 1,
		.sample_period = 1,
		.sample_type = RBT_TYPE,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	struct perf_rb_counts c = { 0 };
	size_t len = 2 * PAGE;		/* the user page and one data page */
	volatile char *page;
	struct rbt *t;
	uint64_t unread;
	void *base;
	bool found = false;
	int fd;

	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		skip("perf_event_open: %s", strerror(errno));
		return;
	}
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!EXPECT(base != MAP_FAILED) || !EXPECT(page != MAP_FAILED))
		goto out;
	t = calloc(1, sizeof(*t));
	if (!EXPECT(t != NULL) ||
	    !EXPECT_EQ(0, perf_rb_init_mmap(&t->rb, base, len)))
		goto out_t;
	EXPECT_EQ(PAGE, t->rb.size);

	/* The kernel writes a sample for the first touch of the page. */
	if (!EXPECT_EQ(0, ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)))
		goto out_t;
	page[0] = 1;
	EXPECT_EQ(0, ioctl(fd, PERF_EVENT_IOC_DISABLE, 0));

	unread = perf_rb_unread(&t->rb);
	/* Header, pid and tid, addr: other faults may come along. */
	EXPECT(unread >= RBT_SIZE && unread % RBT_SIZE == 0);
	EXPECT_EQ(0, rbt_read(t, RBT_TYPE, ~0U, &c));
	EXPECT_EQ(unread / RBT_SIZE, t->nr);
	EXPECT_EQ(0, c.malformed);
	for (unsigned int i = 0; i < t->nr && i < ARRAY_SIZE(t->addrs); i++) {
		if (t->addrs[i] != (uintptr_t)page)
			continue;
		found = true;
		EXPECT_EQ(getpid(), t->pids[i]);
	}
	EXPECT(found);
	EXPECT_EQ(unread, t->rb.up->data_tail);
out_t:
	free(t);
out:
	if (page != MAP_FAILED)
		munmap((void *)page, PAGE);
	if (base != MAP_FAILED)
		munmap(base, len);
	close(fd);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "reader: free-running counters past the size, wrapping", test_wraps },
	{ "reader: a record straddling the end of the ring", test_straddles_end },
	{ "reader: a long callchain straddling the end", test_big_record_straddles_end },
	{ "reader: corrupt sizes 0, 4, 12, too big are malformed", test_corrupt_size },
	{ "reader: a head more than a ring ahead is malformed", test_head_too_far },
	{ "reader: a short sample is skipped alone", test_short_sample },
	{ "reader: LOST, LOST_SAMPLES, THROTTLE, UNTHROTTLE, other", test_lost_throttle },
	{ "reader: a budget leaves the rest unread", test_budget },
	{ "parser: every field in the kernel's order", test_sample_fields },
	{ "parser: IDENTIFIER without ID, ID and STREAM_ID alone", test_sample_identifier },
	{ "parser: records too short for their fields", test_sample_bounds },
	{ "parser: sample types it cannot walk are refused", test_sample_types },
	{ "parser: the sample_id_all trailer", test_sample_id },
	{ "parser: a trailer with ID, STREAM_ID and IDENTIFIER", test_sample_id_all_fields },
	{ "reader: a page-fault sample the kernel wrote", test_real_output },
};

int main(void)
{
	int failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("1..%zu\n", ARRAY_SIZE(tests));
	for (size_t i = 0; i < ARRAY_SIZE(tests); i++) {
		test_failed = false;
		skip_reason[0] = '\0';
		tests[i].fn();
		if (test_failed) {
			printf("not ok %zu %s\n", i + 1, tests[i].name);
			failed++;
		} else if (skip_reason[0]) {
			printf("ok %zu %s # SKIP %s\n", i + 1, tests[i].name, skip_reason);
		} else {
			printf("ok %zu %s\n", i + 1, tests[i].name);
		}
	}
	return failed ? 1 : 0;
}
