/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the stateful harnesses (fuzz_qp.c, fuzz_mad.c) share: failing on a
 * broken invariant, reading the input, and a reproducible random source.
 *
 * The fuzz builds compile the engine with -Dgetrandom=dr_fuzz_getrandom
 * (.ci/fuzz.sh): identifiers and keys then come from this generator, so an
 * input replayed in a fresh process (a reported crash) meets the same QPNs,
 * keys and comm IDs it met when it was found.  Never linked into droce.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* FUZZ_NAME, the harness's name, is defined before this header. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fputs(FUZZ_NAME ": invariant broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* ---- the input: a reader that yields zeros once it runs dry ------------------ */

struct rd {
	const uint8_t *p;
	size_t n;
};

static uint8_t u8(struct rd *r)
{
	if (!r->n)
		return 0;
	r->n--;
	return *r->p++;
}

/* An action script's next byte, false at the end of the input: its top bit
 * picks the side, the low seven the action. */
static bool next_action(struct rd *r, unsigned *action, unsigned *side)
{
	uint8_t b;

	if (!r->n)
		return false;
	b = u8(r);
	*side = b >> 7;
	*action = b & 0x7f;
	return true;
}

/* big-endian; separate statements: the order of reads is fixed */
static uint16_t u16(struct rd *r)
{
	uint16_t hi = u8(r);

	return (uint16_t)(hi << 8 | u8(r));
}

static uint32_t u32(struct rd *r)
{
	uint32_t hi = u16(r);

	return hi << 16 | u16(r);
}

static inline uint64_t u64(struct rd *r)
{
	uint64_t hi = u32(r);

	return hi << 32 | u32(r);
}

/* ---- a reproducible random source -------------------------------------------- */

static uint64_t dr_fuzz_rand_state = 0x9e3779b97f4a7c15ull;

ssize_t dr_fuzz_getrandom(void *buf, size_t len, unsigned int flags);
ssize_t dr_fuzz_getrandom(void *buf, size_t len, unsigned int flags)
{
	uint8_t *p = buf;

	(void)flags;
	for (size_t i = 0; i < len; i++) {
		/* splitmix64, one byte a step: fast enough, and reproducible */
		uint64_t z = (dr_fuzz_rand_state += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		p[i] = (uint8_t)(z ^ (z >> 31));
	}
	return (ssize_t)len;
}

#endif /* FUZZ_COMMON_H */
