// SPDX-License-Identifier: GPL-2.0
/*
 * Count the guest kernel's instructions per translation block (QEMU TCG
 * plugin API 1, QEMU 7.2): a measuring tool for docs/benchmarks.md, not
 * part of the build.  Each block translated at a kernel address gets an
 * inline counter of its executions; at exit, "vaddr insns executions"
 * lines go to out=FILE.  pcprof-sym.py sums them per function of a
 * System.map.  Build beside qemu/plugin/qemu-plugin-api.h:
 *
 *   gcc -std=c11 -O2 -fPIC -shared -fvisibility=hidden -pthread \
 *	-Iqemu/plugin -o pcprof.so docs/bench/pcprof.c
 *
 * and add "-plugin pcprof.so,out=FILE" to QEMU's arguments.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qemu-plugin-api.h"

enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

struct ent { uint64_t vaddr, count; uint32_t n; struct ent *next; };
static struct ent *head;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *out = "/tmp/prof/pcprof.txt";

static void trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t va = qemu_plugin_tb_vaddr(tb);
	struct ent *e;

	(void)id;
	if (va < 0xffffffff80000000ULL)
		return;
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->vaddr = va;
	e->n = qemu_plugin_tb_n_insns(tb);
	pthread_mutex_lock(&lock);
	e->next = head;
	head = e;
	pthread_mutex_unlock(&lock);
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &e->count, 1);
}

static void done(qemu_plugin_id_t id, void *p)
{
	FILE *f = fopen(out, "w");

	(void)id; (void)p;
	if (!f)
		return;
	for (struct ent *e = head; e; e = e->next)
		if (e->count)
			fprintf(f, "%" PRIx64 " %u %" PRIu64 "\n", e->vaddr, e->n, e->count);
	fclose(f);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out = argv[i] + 4;
	qemu_plugin_register_vcpu_tb_trans_cb(id, trans);
	qemu_plugin_register_atexit_cb(id, done, NULL);
	return 0;
}
