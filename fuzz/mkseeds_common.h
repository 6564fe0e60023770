/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the seed writers of the scripted harnesses (mkseeds_qp.c for
 * fuzz_qp, mkseeds_mad.c for fuzz_mad) share: one seed is built byte by
 * byte in buf, then written to OUTDIR/TAG-NNNN; main() runs each
 * generator in turn.  MKSEEDS_NAME, the program's name, is defined before
 * this header.
 */
#ifndef MKSEEDS_COMMON_H
#define MKSEEDS_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *outdir;
static unsigned nseeds;
static uint8_t buf[4096];
static size_t len;

static inline void b(unsigned v)
{
	if (len < sizeof(buf))
		buf[len++] = (uint8_t)v;
}

static inline void b16(unsigned v)
{
	b(v >> 8);
	b(v);
}

static inline void b32(uint32_t v)
{
	b16(v >> 16);
	b16(v & 0xffff);
}

/* The seed built so far, as OUTDIR/TAG-NNNN; the next one starts empty. */
static int flush(const char *tag)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s-%04u", outdir, tag, nseeds);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, MKSEEDS_NAME ": %s: %s\n", path, strerror(errno));
		return -1;
	}
	nseeds++;
	len = 0;
	return 0;
}

/* main(): OUTDIR, then every generator (each returns 0 or -1). */
static int mkseeds_main(int argc, char **argv, int (*const gen[])(void), size_t ngen)
{
	if (argc != 2) {
		fprintf(stderr, "usage: " MKSEEDS_NAME " OUTDIR\n");
		return 1;
	}
	outdir = argv[1];
	for (size_t i = 0; i < ngen; i++)
		if (gen[i]())
			return 1;
	printf(MKSEEDS_NAME ": %u seeds in %s\n", nseeds, outdir);
	return 0;
}

#endif /* MKSEEDS_COMMON_H */
