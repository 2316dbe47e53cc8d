/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libhtmm: commands to the emulated slow tier (qemu/plugin/slowtier.c).
 *
 * Under QEMU with the slowtier plugin loaded, a guest program talks to the
 * plugin in band: it executes the 8-byte no-op
 *
 *	nopl 0x5354XXYY(%rax,%rax,1)	(0f 1f 84 00 YY XX 54 53)
 *
 * where XX is the command and YY its argument.  The plugin watches for that
 * exact encoding; without the plugin (or on real hardware) it is a no-op.
 */
#ifndef HTMM_SLOWTIER_H
#define HTMM_SLOWTIER_H

#ifdef __cplusplus
extern "C" {
#endif

enum slowtier_cmd {
	SLOWTIER_BEGIN = 1,	/* begin counting window ARG (0-255) */
	SLOWTIER_END = 2,	/* end window ARG: the plugin writes its counts */
	SLOWTIER_FAST = 3,	/* slow-tier misses cost no added latency */
	SLOWTIER_SLOW = 4,	/* back to the configured added latency */
};

/*
 * Execute the command's no-op.  Returns 0, or -1 with errno set if the
 * code page could not be made (mmap).  Whether a plugin heard it cannot
 * be known from here: the plugin's output file tells.
 */
int slowtier_cmd(enum slowtier_cmd cmd, unsigned int arg);

#ifdef __cplusplus
}
#endif

#endif
