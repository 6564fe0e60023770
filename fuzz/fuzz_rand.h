/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fuzz builds compile the engine with -Dgetrandom=dr_fuzz_getrandom
 * (.ci/fuzz.sh): identifiers and keys then come from this generator, so an
 * input replayed in a fresh process (a reported crash) meets the same QPNs,
 * keys and comm IDs it met when it was found.  Never linked into droce.
 */
#ifndef FUZZ_RAND_H
#define FUZZ_RAND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

#endif /* FUZZ_RAND_H */
