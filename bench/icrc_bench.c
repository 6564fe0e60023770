// SPDX-License-Identifier: BSD-2-Clause
/*
 * icrc_bench - how fast droce computes CRC-32 and the RoCEv2 ICRC on one
 * core.  Prints GB/s (10^9 bytes per second) for each implementation
 * (AVX-512 VPCLMULQDQ, PCLMULQDQ, portable slice-by-8) over cache-resident
 * buffers, and the whole-frame ICRC of 4096-byte-payload packets.  A
 * figure to read, not a test.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dr_roce.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef uint32_t (*crc_fn)(uint32_t crc, const void *buf, size_t len);

/* best of 5 runs of ~0.2 s each, in GB/s */
static double measure(crc_fn fn, const uint8_t *buf, size_t len, uint32_t *sink)
{
	double best = 0;

	for (int run = 0; run < 5; run++) {
		size_t bytes = 0;
		double t0 = now_s(), t;

		do {
			for (int i = 0; i < 64; i++) {
				*sink ^= fn(*sink, buf, len);
				bytes += len;
			}
			t = now_s() - t0;
		} while (t < 0.2);
		if (bytes / t / 1e9 > best)
			best = bytes / t / 1e9;
	}
	return best;
}

static double measure_frame(const uint8_t *frame, int len, uint32_t *sink)
{
	double best = 0;
	struct dr_pkt pkt;

	for (int run = 0; run < 5; run++) {
		size_t n = 0;
		double t0 = now_s(), t;

		do {
			for (int i = 0; i < 64; i++) {
				if (dr_pkt_parse(frame, (size_t)len, 0, &pkt) != DR_PKT_OK)
					return -1;
				*sink ^= pkt.icrc;
				n++;
			}
			t = now_s() - t0;
		} while (t < 0.2);
		if (n * (double)len / t / 1e9 > best)
			best = n * (double)len / t / 1e9;
	}
	return best;
}

/* A 4 KiB READ response taken by the requester, or a WRITE MIDDLE by the
 * responder, ns per frame (best of 5): parsed, its ICRC checked, its
 * payload copied into one of 64 buffers in turn (the benchmark's window of
 * 4 KiB READs); either as two passes (dr_pkt_parse, then memcpy) or as
 * one (DR_PARSE_DEFER_PLACE, then dr_pkt_icrc_copy, as the port does with
 * a place function). */
static double measure_place(const uint8_t *frame, int len, uint8_t *dst, bool fused, uint32_t *sink)
{
	double best = 1e9;
	struct dr_pkt pkt;

	for (int run = 0; run < 5; run++) {
		size_t n = 0;
		double t0 = now_s(), t;

		do {
			for (int i = 0; i < 64; i++) {
				uint8_t *to = dst + (size_t)i * 4096;

				if (dr_pkt_parse(frame, (size_t)len,
						 fused ? DR_PARSE_DEFER_PLACE : 0,
						 &pkt) != DR_PKT_OK)
					return -1;
				if (fused) {
					struct iovec iov = {to, pkt.payload_len};

					if (!dr_pkt_icrc_copy(&pkt, &iov, 1))
						return -1;
				} else {
					memcpy(to, pkt.payload, pkt.payload_len);
				}
				*sink ^= to[i];
				n++;
			}
			t = now_s() - t0;
		} while (t < 0.2);
		if (t / n * 1e9 < best)
			best = t / n * 1e9;
	}
	return best;
}

int main(void)
{
	static const size_t sizes[] = { 64, 256, 1024, 4096, 65536 };
	/* every implementation (dr_crc32_select); "-": not on this CPU */
	static const char *const impls[] = {"vpclmul", "vpclmul256", "pclmul", "slice-by-8"};
	static uint8_t buf[65536], frame[4200], payload[4096];
	struct dr_pkt_desc d;
	uint32_t sink = 0;
	int flen;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 7));
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)i;

	printf("CRC-32 on one core, GB/s; dr_crc32 uses: %s\n", dr_crc32_impl());
	printf("%8s", "bytes");
	for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++)
		printf(" %12s", impls[k]);
	printf("\n");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		printf("%8zu", sizes[i]);
		for (size_t k = 0; k < sizeof(impls) / sizeof(impls[0]); k++) {
			if (dr_crc32_select(impls[k]))
				printf(" %12s", "-");
			else
				printf(" %12.2f", measure(dr_crc32, buf, sizes[i], &sink));
		}
		printf("\n");
	}
	dr_crc32_select(NULL);

	dr_pkt_desc_init(&d);
	d.opcode = DR_OP_WRITE_MIDDLE;
	d.src_ip4 = 0xc0000201;
	d.dst_ip4 = 0xc0000202;
	d.payload = payload;
	d.payload_len = sizeof(payload);
	flen = dr_pkt_build(&d, frame, sizeof(frame));
	printf("parse + ICRC check of a %d-byte frame (4096 B payload): %.2f GB/s\n", flen,
	       measure_frame(frame, flen, &sink));
	{
		uint8_t *dst = aligned_alloc(4096, 64 * 4096);
		static const struct {
			uint8_t opcode;
			const char *name;
		} placed[] = {{DR_OP_READ_RSP_ONLY, "READ response"},
			      {DR_OP_WRITE_MIDDLE, "WRITE MIDDLE"}};

		if (!dst)
			return 1;
		for (size_t k = 0; k < sizeof(placed) / sizeof(placed[0]); k++) {
			d.opcode = placed[k].opcode;
			flen = dr_pkt_build(&d, frame, sizeof(frame));
			printf("a %d-byte %s parsed, checked and placed: "
			       "%.1f ns in two passes, %.1f ns in one\n",
			       flen, placed[k].name, measure_place(frame, flen, dst, false, &sink),
			       measure_place(frame, flen, dst, true, &sink));
		}
		free(dst);
	}
	printf("(checksum of all results: %08x)\n", sink); /* keeps the work observable */
	return 0;
}
