// SPDX-License-Identifier: GPL-2.0
/*
 * libhtmm: commands to the emulated slow tier; see <slowtier.h>.
 *
 * The argument is part of the instruction, so the no-op is written into a
 * page of its own and called: one small page per call, unmapped at once.
 * QEMU translates the fresh code like any other, and the plugin sees it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "slowtier.h"

int slowtier_cmd(enum slowtier_cmd cmd, unsigned int arg)
{
	const unsigned char code[] = {
		0x0f, 0x1f, 0x84, 0x00,		/* nopl disp32(%rax,%rax,1) */
		(unsigned char)arg, (unsigned char)cmd, 0x54, 0x53,
		0xc3,				/* ret */
	};
	long psize = sysconf(_SC_PAGESIZE);
	void (*fn)(void);
	void *page;

	if (cmd < SLOWTIER_BEGIN || cmd > SLOWTIER_SLOW || arg > 255) {
		errno = EINVAL;
		return -1;
	}
	page = mmap(NULL, psize, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return -1;
	memcpy(page, code, sizeof(code));
	if (mprotect(page, psize, PROT_READ | PROT_EXEC)) {
		int err = errno;

		munmap(page, psize);
		errno = err;
		return -1;
	}
	/* A data pointer to a function pointer: POSIX allows it (dlsym). */
	*(void **)&fn = page;
	fn();
	munmap(page, psize);
	return 0;
}
