// SPDX-License-Identifier: GPL-2.0
/*
 * perf_rb: reading a perf ring buffer from userspace; see perf_rb.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "perf_rb.h"

/* The sample fields whose layout the sample_type alone tells. */
#define SAMPLE_TYPES_OK							\
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |	\
	 PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |		\
	 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |	\
	 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_WEIGHT |	\
	 PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC |		\
	 PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_PHYS_ADDR |		\
	 PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE |		\
	 PERF_SAMPLE_CODE_PAGE_SIZE)

/* The fields of a sample_id_all trailer, in their order. */
#define SAMPLE_ID_TYPES							\
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |		\
	 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

#define HDR_SIZE	sizeof(struct perf_event_header)
#define WORD		sizeof(uint64_t)

int perf_rb_init(struct perf_rb *rb, struct perf_event_mmap_page *up,
		 const void *data, uint64_t size)
{
	if (size < HDR_SIZE || (size & (size - 1))) {
		errno = EINVAL;
		return -1;
	}
	rb->up = up;
	rb->data = data;
	rb->size = size;
	return 0;
}

int perf_rb_init_mmap(struct perf_rb *rb, void *base, size_t len)
{
	struct perf_event_mmap_page *up = base;
	uint64_t off = up->data_offset, size = up->data_size;

	/* Before Linux 4.1 the ring is all the pages after the user page. */
	if (!off) {
		long page = sysconf(_SC_PAGESIZE);

		if (page <= 0 || (size_t)page > len)
			goto inval;
		off = page;
		size = len - page;
	}
	if (off > len || size > len - off)
		goto inval;
	return perf_rb_init(rb, up, (unsigned char *)base + off, size);
inval:
	errno = EINVAL;
	return -1;
}

uint64_t perf_rb_unread(const struct perf_rb *rb)
{
	/* Pairs with the kernel's barrier before it publishes data_head. */
	uint64_t head = __atomic_load_n(&rb->up->data_head, __ATOMIC_ACQUIRE);

	return head - __atomic_load_n(&rb->up->data_tail, __ATOMIC_RELAXED);
}

/* Copy @len bytes at stream position @pos out of @rb: at most one wrap. */
static void rb_copy(const struct perf_rb *rb, uint64_t pos, void *dst,
		    size_t len)
{
	uint64_t off = pos & (rb->size - 1);
	size_t first = len < rb->size - off ? len : rb->size - off;

	memcpy(dst, rb->data + off, first);
	memcpy((unsigned char *)dst + first, rb->data, len - first);
}

/*
 * The record of @size bytes at @pos, where it lies if it does not wrap,
 * else copied out whole into rb->copy.
 */
static const struct perf_event_header *rb_record(struct perf_rb *rb,
						 uint64_t pos, size_t size)
{
	uint64_t off = pos & (rb->size - 1);

	if (off + size <= rb->size)
		return (const struct perf_event_header *)(rb->data + off);
	rb_copy(rb, pos, rb->copy, size);
	return (const struct perf_event_header *)rb->copy;
}

/*
 * Count the record @rec (of a plausible size) and hand it on.  Returns
 * false if it is malformed.
 */
static bool rb_dispatch(const struct perf_event_header *rec,
			uint64_t sample_type, const struct perf_rb_ops *ops,
			void *arg, struct perf_rb_counts *c)
{
	const uint64_t *body = (const uint64_t *)(rec + 1);
	size_t words = (rec->size - HDR_SIZE) / WORD;
	struct perf_sample s;

	switch (rec->type) {
	case PERF_RECORD_SAMPLE:
		if (perf_sample_parse(sample_type, rec, &s))
			return false;
		c->samples++;
		if (ops && ops->sample)
			ops->sample(arg, &s, rec);
		return true;
	case PERF_RECORD_LOST:
		/* { header, u64 id, u64 lost } */
		if (words < 2)
			return false;
		c->lost += body[1];
		break;
	case PERF_RECORD_LOST_SAMPLES:
		/* { header, u64 lost } */
		if (words < 1)
			return false;
		c->lost += body[0];
		break;
	case PERF_RECORD_THROTTLE:
		c->throttled++;
		break;
	case PERF_RECORD_UNTHROTTLE:
		c->unthrottled++;
		break;
	default:
		c->other++;
		break;
	}
	if (ops && ops->record)
		ops->record(arg, rec);
	return true;
}

uint64_t perf_rb_read(struct perf_rb *rb, uint64_t sample_type,
		      unsigned int max, const struct perf_rb_ops *ops,
		      void *arg, struct perf_rb_counts *c)
{
	struct perf_event_mmap_page *up = rb->up;
	struct perf_event_header hdr;
	uint64_t head, tail;

	/* The records below head are visible once head is: see perf_rb.h. */
	head = __atomic_load_n(&up->data_head, __ATOMIC_ACQUIRE);
	/* Only this reader writes data_tail. */
	tail = __atomic_load_n(&up->data_tail, __ATOMIC_RELAXED);

	while (tail != head && max) {
		uint64_t unread = head - tail;

		if (unread > rb->size || unread < HDR_SIZE)
			goto malformed;
		rb_copy(rb, tail, &hdr, sizeof(hdr));
		if (hdr.size < HDR_SIZE || hdr.size > unread || hdr.size % WORD)
			goto malformed;
		if (!rb_dispatch(rb_record(rb, tail, hdr.size), sample_type,
				 ops, arg, c))
			c->malformed++;	/* skipped alone: its size is right */
		tail += hdr.size;
		max--;
	}
	/* Done with the records below tail before the kernel reuses them. */
	__atomic_store_n(&up->data_tail, tail, __ATOMIC_RELEASE);
	return head - tail;

malformed:
	/* The stream cannot be followed: drop what was written. */
	c->malformed++;
	/* As above: nothing below head is read any more. */
	__atomic_store_n(&up->data_tail, head, __ATOMIC_RELEASE);
	return 0;
}

bool perf_sample_type_ok(uint64_t sample_type)
{
	/* WEIGHT and WEIGHT_STRUCT are two layouts of one field. */
	return !(sample_type & ~(uint64_t)SAMPLE_TYPES_OK) &&
	       (sample_type & PERF_SAMPLE_WEIGHT_TYPE) != PERF_SAMPLE_WEIGHT_TYPE;
}

/* A walk over the u64 words of a record's body. */
struct cursor {
	const uint64_t *p, *end;
};

/* The next @n words, or NULL if the record ends first. */
static const uint64_t *take(struct cursor *cur, uint64_t n)
{
	const uint64_t *p = cur->p;

	if (n > (uint64_t)(cur->end - p))
		return NULL;
	cur->p += n;
	return p;
}

/* Take one word into *@v if @bit is in @type; false if the record ended. */
static bool take_u64(struct cursor *cur, uint64_t type, uint64_t bit,
		     uint64_t *v)
{
	const uint64_t *p;

	if (!(type & bit))
		return true;
	p = take(cur, 1);
	if (!p)
		return false;
	*v = *p;
	return true;
}

/* Take the u32 pair of a TID or CPU field if @bit is in @type. */
static bool take_u32s(struct cursor *cur, uint64_t type, uint64_t bit,
		      uint32_t *a, uint32_t *b)
{
	const uint64_t *p;
	uint32_t v[2];

	if (!(type & bit))
		return true;
	p = take(cur, 1);
	if (!p)
		return false;
	memcpy(v, p, sizeof(v));
	*a = v[0];
	if (b)
		*b = v[1];
	return true;
}

/* CALLCHAIN: { u64 nr; u64 ips[nr]; } */
static bool take_callchain(struct cursor *cur, struct perf_sample *s)
{
	const uint64_t *nr = take(cur, 1);

	if (!nr)
		return false;
	s->callchain = take(cur, *nr);
	if (!s->callchain)
		return false;
	s->nr_callchain = *nr;
	return true;
}

/* RAW: { u32 size; char data[size]; }, padded by the kernel to u64s. */
static bool take_raw(struct cursor *cur, struct perf_sample *s)
{
	const unsigned char *start = (const unsigned char *)cur->p;
	uint32_t size;
	uint64_t bytes;

	if (cur->p == cur->end)
		return false;
	memcpy(&size, start, sizeof(size));
	bytes = sizeof(size) + (uint64_t)size;
	if (bytes % WORD || !take(cur, bytes / WORD))
		return false;
	s->raw_size = size;
	s->raw = start + sizeof(size);
	return true;
}

/* WEIGHT is a u64; WEIGHT_STRUCT is union perf_sample_weight. */
static bool take_weight(struct cursor *cur, uint64_t type,
			struct perf_sample *s)
{
	union perf_sample_weight w = { .full = 0 };
	uint64_t v = 0;

	if (!take_u64(cur, type, PERF_SAMPLE_WEIGHT_TYPE, &v))
		return false;
	w.full = v;
	if (type & PERF_SAMPLE_WEIGHT_STRUCT) {
		s->weight = w.var1_dw;
		s->ins_lat = w.var2_w;
	} else {
		s->weight = w.full;
	}
	return true;
}

int perf_sample_parse(uint64_t t, const struct perf_event_header *rec,
		      struct perf_sample *s)
{
	struct cursor cur;
	uint64_t identifier = 0;
	uint32_t res;

	memset(s, 0, sizeof(*s));
	if (rec->size < HDR_SIZE || !perf_sample_type_ok(t))
		return -1;
	/* Only now that the size is known to cover the header. */
	cur.p = (const uint64_t *)(rec + 1);
	cur.end = cur.p + (rec->size - HDR_SIZE) / WORD;

	/* The order of perf_output_sample(). */
	if (!take_u64(&cur, t, PERF_SAMPLE_IDENTIFIER, &identifier) ||
	    !take_u64(&cur, t, PERF_SAMPLE_IP, &s->ip) ||
	    !take_u32s(&cur, t, PERF_SAMPLE_TID, &s->pid, &s->tid) ||
	    !take_u64(&cur, t, PERF_SAMPLE_TIME, &s->time) ||
	    !take_u64(&cur, t, PERF_SAMPLE_ADDR, &s->addr) ||
	    !take_u64(&cur, t, PERF_SAMPLE_ID, &s->id) ||
	    !take_u64(&cur, t, PERF_SAMPLE_STREAM_ID, &s->stream_id) ||
	    !take_u32s(&cur, t, PERF_SAMPLE_CPU, &s->cpu, &res) ||
	    !take_u64(&cur, t, PERF_SAMPLE_PERIOD, &s->period))
		return -1;
	/* READ would come here: rejected by perf_sample_type_ok(). */
	if ((t & PERF_SAMPLE_CALLCHAIN) && !take_callchain(&cur, s))
		return -1;
	if ((t & PERF_SAMPLE_RAW) && !take_raw(&cur, s))
		return -1;
	/* BRANCH_STACK, REGS_USER and STACK_USER would come here. */
	if (!take_weight(&cur, t, s) ||
	    !take_u64(&cur, t, PERF_SAMPLE_DATA_SRC, &s->data_src) ||
	    !take_u64(&cur, t, PERF_SAMPLE_TRANSACTION, &s->transaction) ||
	    /* REGS_INTR would come here. */
	    !take_u64(&cur, t, PERF_SAMPLE_PHYS_ADDR, &s->phys_addr) ||
	    !take_u64(&cur, t, PERF_SAMPLE_CGROUP, &s->cgroup) ||
	    !take_u64(&cur, t, PERF_SAMPLE_DATA_PAGE_SIZE, &s->data_page_size) ||
	    !take_u64(&cur, t, PERF_SAMPLE_CODE_PAGE_SIZE, &s->code_page_size))
		return -1;
	/* IDENTIFIER duplicates ID: the kernel writes both if both are set. */
	if ((t & PERF_SAMPLE_IDENTIFIER) && !(t & PERF_SAMPLE_ID))
		s->id = identifier;
	return 0;
}

size_t perf_sample_id_size(uint64_t sample_type)
{
	return (size_t)__builtin_popcountll(sample_type & SAMPLE_ID_TYPES) * WORD;
}

int perf_sample_id_parse(uint64_t t, const struct perf_event_header *rec,
			 size_t body, struct perf_sample_id *id)
{
	size_t trailer = perf_sample_id_size(t);
	struct cursor cur;
	uint64_t identifier = 0;
	uint32_t res;

	memset(id, 0, sizeof(*id));
	if (rec->size < HDR_SIZE || rec->size - HDR_SIZE < body ||
	    rec->size - HDR_SIZE - body < trailer)
		return -1;
	cur.p = (const uint64_t *)((const unsigned char *)rec + rec->size - trailer);
	cur.end = cur.p + trailer / WORD;

	/* The order of perf_event__output_id_sample(). */
	if (!take_u32s(&cur, t, PERF_SAMPLE_TID, &id->pid, &id->tid) ||
	    !take_u64(&cur, t, PERF_SAMPLE_TIME, &id->time) ||
	    !take_u64(&cur, t, PERF_SAMPLE_ID, &id->id) ||
	    !take_u64(&cur, t, PERF_SAMPLE_STREAM_ID, &id->stream_id) ||
	    !take_u32s(&cur, t, PERF_SAMPLE_CPU, &id->cpu, &res) ||
	    !take_u64(&cur, t, PERF_SAMPLE_IDENTIFIER, &identifier))
		return -1;
	if (!(t & PERF_SAMPLE_ID))
		id->id = identifier;
	return 0;
}
