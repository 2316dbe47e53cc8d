/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf_rb: reading a perf ring buffer mmap()ed by userspace, and parsing
 * the records found in it.
 *
 * The protocol is the one of tools/lib/perf, and of htmm's in-kernel
 * reader (mm/htmm/ringbuf.c), whose behaviour on a broken stream this one
 * mirrors:
 *
 *  - data_head and data_tail are free-running byte counts, masked only to
 *    find an offset in the ring;
 *  - data_head is loaded with acquire semantics, so that the records below
 *    it are visible; data_tail is stored with release semantics once the
 *    records below it have been used, so that the kernel does not overwrite
 *    them while they are being read;
 *  - a record that wraps around the end of the ring is copied out whole
 *    before it is handed on;
 *  - nothing the kernel wrote is trusted: a header whose size cannot be
 *    right means the stream cannot be followed any more, and everything up
 *    to the head is dropped and counted as malformed.
 */
#ifndef PERF_RB_H
#define PERF_RB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#ifdef __cplusplus
extern "C" {
#endif

/* perf_event_header.size is a u16: no record is larger. */
#define PERF_RB_MAX_RECORD	65536

struct perf_rb {
	struct perf_event_mmap_page *up;	/* the user page */
	const unsigned char *data;		/* the ring */
	uint64_t size;				/* of the ring, a power of two */
	/*
	 * A record that wraps around the end of the ring is copied here,
	 * and the record handed on points here; it is valid until the
	 * callback returns.
	 */
	uint64_t copy[PERF_RB_MAX_RECORD / sizeof(uint64_t)];
};

/* What perf_rb_read() consumed, added to by each call. */
struct perf_rb_counts {
	uint64_t samples;	/* PERF_RECORD_SAMPLEs handed on */
	uint64_t lost;		/* records the kernel dropped, as it said */
	uint64_t throttled;	/* PERF_RECORD_THROTTLEs */
	uint64_t unthrottled;	/* PERF_RECORD_UNTHROTTLEs */
	uint64_t other;		/* records of other types */
	uint64_t malformed;	/* records that could not be parsed */
};

/*
 * A PERF_RECORD_SAMPLE, parsed.  The fields not in the sample_type are 0.
 * callchain and raw point into the record.
 */
struct perf_sample {
	uint64_t ip;
	uint64_t time;
	uint64_t addr;
	uint64_t id;
	uint64_t stream_id;
	uint64_t period;
	uint64_t weight;	/* WEIGHT, or WEIGHT_STRUCT's var1_dw */
	uint64_t data_src;
	uint64_t transaction;
	uint64_t phys_addr;
	uint64_t cgroup;
	uint64_t data_page_size;
	uint64_t code_page_size;
	uint32_t pid, tid;
	uint32_t cpu;
	uint16_t ins_lat;	/* WEIGHT_STRUCT's var2_w */
	uint64_t nr_callchain;
	const uint64_t *callchain;
	uint32_t raw_size;
	const void *raw;
};

/* The sample_id_all trailer of a record other than a sample. */
struct perf_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
	uint64_t stream_id;
	uint32_t cpu;
};

/*
 * What perf_rb_read() does with the records it consumes.  Either callback
 * may be NULL.
 */
struct perf_rb_ops {
	/* Each sample that could be parsed. */
	void (*sample)(void *arg, const struct perf_sample *s,
		       const struct perf_event_header *rec);
	/*
	 * Each record other than a sample, LOST and THROTTLE records
	 * included, once they have been counted; not those found malformed.
	 */
	void (*record)(void *arg, const struct perf_event_header *rec);
};

/*
 * Set @rb up over a ring of @size bytes at @data, whose user page is @up.
 * Returns 0, or -1 with errno EINVAL if @size is not a power of two of at
 * least a record header.
 */
int perf_rb_init(struct perf_rb *rb, struct perf_event_mmap_page *up,
		 const void *data, uint64_t size);

/*
 * Set @rb up over the @len bytes that mmap() of a perf event returned at
 * @base: the user page, then the ring.  The ring's place is the one the
 * kernel gives in the user page (data_offset, data_size), or the page
 * after it on kernels too old to say.
 */
int perf_rb_init_mmap(struct perf_rb *rb, void *base, size_t len);

/* Bytes written by the kernel and not yet consumed. */
uint64_t perf_rb_unread(const struct perf_rb *rb);

/*
 * Consume at most @max records, parsing samples as of @sample_type (that
 * of every event writing into the ring), and count them into @c.
 * Returns the bytes left unread when it stopped.
 */
uint64_t perf_rb_read(struct perf_rb *rb, uint64_t sample_type,
		      unsigned int max, const struct perf_rb_ops *ops,
		      void *arg, struct perf_rb_counts *c);

/*
 * Can perf_sample_parse() walk samples of @sample_type?  Not with the
 * fields whose layout depends on more of the attr than the sample_type
 * (READ, BRANCH_STACK, REGS_USER, STACK_USER, REGS_INTR, AUX), nor with
 * bits it does not know.
 */
bool perf_sample_type_ok(uint64_t sample_type);

/*
 * Parse the sample @rec, whose fields are those of @sample_type in the
 * kernel's order.  Returns 0, or -1 if the record is too short for them,
 * or the sample_type is not one perf_sample_type_ok() accepts.
 */
int perf_sample_parse(uint64_t sample_type,
		      const struct perf_event_header *rec,
		      struct perf_sample *s);

/* The bytes of the sample_id_all trailer of @sample_type. */
size_t perf_sample_id_size(uint64_t sample_type);

/*
 * Parse the sample_id_all trailer at the end of @rec, a record other than a
 * sample whose own fields take @body bytes after the header.  Returns 0, or
 * -1 if the record has no room for both.
 */
int perf_sample_id_parse(uint64_t sample_type,
			 const struct perf_event_header *rec, size_t body,
			 struct perf_sample_id *id);

#ifdef __cplusplus
}
#endif

#endif /* PERF_RB_H */
