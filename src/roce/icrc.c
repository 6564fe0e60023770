// SPDX-License-Identifier: BSD-2-Clause
/*
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) and the RoCEv2 ICRC.
 *
 * Three implementations of one function: slice-by-8 tables (portable); on
 * x86-64 CPUs with PCLMULQDQ, carry-less-multiply folding of 64 bytes per
 * step (the method of Gopal et al., "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ", Intel 2009), its 128-bit remainder folded to
 * 32 bits and Barrett-reduced; and on CPUs with AVX-512 VPCLMULQDQ the same
 * folding on 512-bit registers, 256 bytes per step, or, on CPUs with
 * VPCLMULQDQ but not AVX-512 (AMD Zen 3, Intel's client cores), on 256-bit
 * AVX2 registers, 128 bytes per step.  All continue across buffers, zlib
 * style: crc(a||b) = dr_crc32(dr_crc32(0, a), b).
 *
 * The ICRC (IBA 7.8.1, RoCEv2 annex A17.3.3; docs/protocol.md A.9) is that
 * CRC over 8 bytes of 0xFF, the IP/UDP/BTH headers with their variant fields
 * masked to ones, the remaining transport headers, the payload and the pad.
 */
#include "dr_roce.h"

#include <errno.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

static uint32_t crc_tab[8][256];

__attribute__((constructor)) static void crc_tab_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
		crc_tab[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

/* raw register in, raw register out (no pre/post inversion) */
static uint32_t crc_sb8_raw(uint32_t c, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo = le32toh(lo) ^ c;
		hi = le32toh(hi);
		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

uint32_t dr_crc32_sb8(uint32_t crc, const void *buf, size_t len)
{
	return ~crc_sb8_raw(~crc, buf, len);
}

#if defined(__x86_64__)
/*
 * Folding constants for the reflected CRC-32 polynomial: x^(4*128+64) and
 * x^(4*128) mod P (fold by four 128-bit lanes), x^(128+64) and x^128 mod P
 * (fold by one), bit-reflected and shifted by one as the method requires.
 */
#define K1 0x154442bd4ull
#define K2 0x1c6e41596ull
#define K3 0x1751997d0ull
#define K4 0x0ccaa009eull
#define K5   0x163cd6124ull
#define MU   0x1f7011641ull
#define POLY 0x1db710641ull

__attribute__((target("pclmul,sse4.1"))) static inline __m128i fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* x0 stands for everything before p (16 bytes whose CRC from zero is the
 * register): fold it over the remaining 16-byte blocks, reduce it to 32
 * bits, and finish the last len % 16 bytes with slice-by-8. */
__attribute__((target("pclmul,sse4.1"))) static inline uint32_t crc_pclmul_tail(__m128i x0,
									  const uint8_t *p,
									  size_t len)
{
	const __m128i k34 = _mm_set_epi64x(K4, K3);

	while (len >= 16) {
		x0 = _mm_xor_si128(fold(x0, k34), _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
	/* x0 now stands for everything so far, as 16 bytes CRC'd from zero:
	 * fold 128 -> 64 -> 32 bits and Barrett-reduce (the method's final
	 * steps; x^64 mod P and the Barrett pair mu = x^64 / P, P itself),
	 * instead of running those 16 bytes through slice-by-8 */
	{
		const __m128i mask32 = _mm_setr_epi32(-1, 0, 0, 0);
		const __m128i k5 = _mm_set_epi64x(0, K5);
		const __m128i mu_p = _mm_set_epi64x(MU, POLY);
		__m128i t;
		uint32_t c;

		t = _mm_clmulepi64_si128(x0, k34, 0x10);
		x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), t);
		t = _mm_srli_si128(x0, 4);
		x0 = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), k5, 0x00);
		x0 = _mm_xor_si128(x0, t);
		t = x0;
		x0 = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), mu_p, 0x10);
		x0 = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32), mu_p, 0x00);
		c = (uint32_t)_mm_extract_epi32(_mm_xor_si128(x0, t), 1);
		return crc_sb8_raw(c, p, len);
	}
}

__attribute__((target("pclmul,sse4.1"))) static uint32_t crc_pclmul_raw(uint32_t c,
									 const uint8_t *p,
									 size_t len)
{
	const __m128i k12 = _mm_set_epi64x(K2, K1);
	const __m128i k34 = _mm_set_epi64x(K4, K3);
	__m128i x0, x1, x2, x3;

	x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)c));
	if (len < 64) /* short (headers of a small frame): one lane */
		return crc_pclmul_tail(x0, p + 16, len - 16);
	x1 = _mm_loadu_si128((const __m128i *)(p + 16));
	x2 = _mm_loadu_si128((const __m128i *)(p + 32));
	x3 = _mm_loadu_si128((const __m128i *)(p + 48));
	p += 64;
	len -= 64;

	while (len >= 64) {
		x0 = _mm_xor_si128(fold(x0, k12), _mm_loadu_si128((const __m128i *)p));
		x1 = _mm_xor_si128(fold(x1, k12), _mm_loadu_si128((const __m128i *)(p + 16)));
		x2 = _mm_xor_si128(fold(x2, k12), _mm_loadu_si128((const __m128i *)(p + 32)));
		x3 = _mm_xor_si128(fold(x3, k12), _mm_loadu_si128((const __m128i *)(p + 48)));
		p += 64;
		len -= 64;
	}
	x0 = _mm_xor_si128(fold(x0, k34), x1);
	x0 = _mm_xor_si128(fold(x0, k34), x2);
	x0 = _mm_xor_si128(fold(x0, k34), x3);
	return crc_pclmul_tail(x0, p, len);
}

/*
 * The same folding on 512-bit registers (AVX-512 with VPCLMULQDQ): four
 * registers of four 128-bit lanes each take 256 bytes per step, each lane
 * folded 2048 bits forward.  The 16 lanes are then folded into the last
 * register (512 bits apart), 64-byte blocks added the same way, its four
 * lanes folded into one (384, 256 and 128 bits), and the 128-bit path
 * finishes.  Constants x^(D+32) (_HI) and x^(D-32) (_LO) mod P for
 * distance D, as above (tests/test_wire.c recomputes them all).
 */
#define K2048_HI 0x11542778aull
#define K2048_LO 0x1322d1430ull
#define K384_HI 0x03db1ecdcull
#define K384_LO 0x174359406ull
#define K256_HI 0x0f1da05aaull
#define K256_LO 0x15a546366ull
#define DR_CRC_VPCLMUL_MIN 256

#define VP_TARGET "avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1"

__attribute__((target(VP_TARGET))) static inline __m512i fold512(__m512i x, __m512i k, __m512i d)
{
	/* a ^ b ^ d in one ternary-logic step (truth table 0x96) */
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
					 _mm512_clmulepi64_epi128(x, k, 0x11), d, 0x96);
}

/*
 * The folding itself.  x0 stands for the 64 bytes before p (their CRC from
 * zero is the register's); len >= 192.  With copy, every 64-byte block
 * loaded is stored to *q as well as folded, so data read once is both
 * checked and placed (dr_crc32_copy, dr_icrc_frame_copy).  Returns the
 * 128-bit remainder for crc_pclmul_tail, *pp, *qq and *lenp advanced past
 * what was folded (fewer than 64 bytes are left).  Inlined into each
 * caller, copy a constant: no test in the loop.
 */
__attribute__((target(VP_TARGET), always_inline)) static inline __m128i
vp_fold(__m512i x0, const uint8_t **pp, uint8_t **qq, size_t *lenp, bool copy)
{
	const __m512i k2048 = _mm512_broadcast_i32x4(_mm_set_epi64x(K2048_LO, K2048_HI));
	const __m512i k512 = _mm512_broadcast_i32x4(_mm_set_epi64x(K2, K1));
	/* lane i of the last register is folded 384 - 128 i bits; lane 3 is
	 * added as it is (its constant 0 makes its product 0) */
	const __m512i klanes = _mm512_set_epi64(0, 0, K4, K3, K256_LO, K256_HI, K384_LO, K384_HI);
	const uint8_t *p = *pp;
	uint8_t *q = copy ? *qq : NULL;
	size_t len = *lenp;
	__m512i x1, x2, x3, d0, d1, d2, d3;
	__m128i r;

	x1 = _mm512_loadu_si512(p);
	x2 = _mm512_loadu_si512(p + 64);
	x3 = _mm512_loadu_si512(p + 128);
	if (copy) {
		_mm512_storeu_si512(q, x1);
		_mm512_storeu_si512(q + 64, x2);
		_mm512_storeu_si512(q + 128, x3);
		q += 192;
	}
	p += 192;
	len -= 192;
	while (len >= 256) {
		d0 = _mm512_loadu_si512(p);
		d1 = _mm512_loadu_si512(p + 64);
		d2 = _mm512_loadu_si512(p + 128);
		d3 = _mm512_loadu_si512(p + 192);
		if (copy) {
			_mm512_storeu_si512(q, d0);
			_mm512_storeu_si512(q + 64, d1);
			_mm512_storeu_si512(q + 128, d2);
			_mm512_storeu_si512(q + 192, d3);
			q += 256;
		}
		x0 = fold512(x0, k2048, d0);
		x1 = fold512(x1, k2048, d1);
		x2 = fold512(x2, k2048, d2);
		x3 = fold512(x3, k2048, d3);
		p += 256;
		len -= 256;
	}
	x1 = fold512(x0, k512, x1);
	x2 = fold512(x1, k512, x2);
	x3 = fold512(x2, k512, x3);
	while (len >= 64) {
		d0 = _mm512_loadu_si512(p);
		if (copy) {
			_mm512_storeu_si512(q, d0);
			q += 64;
		}
		x3 = fold512(x3, k512, d0);
		p += 64;
		len -= 64;
	}
	x0 = fold512(x3, klanes, _mm512_maskz_mov_epi64(0xc0, x3));
	r = _mm_ternarylogic_epi64(_mm512_castsi512_si128(x0), _mm512_extracti32x4_epi32(x0, 1),
				   _mm512_extracti32x4_epi32(x0, 2), 0x96);
	r = _mm_xor_si128(r, _mm512_extracti32x4_epi32(x0, 3));
	*pp = p;
	if (copy)
		*qq = q;
	*lenp = len;
	return r;
}

/* The first 64 bytes of p, the register c added in. */
__attribute__((target(VP_TARGET))) static inline __m512i vp_first(uint32_t c, const uint8_t *p)
{
	return _mm512_xor_si512(_mm512_loadu_si512(p),
				_mm512_zextsi128_si512(_mm_cvtsi32_si128((int)c)));
}

/* len >= 256 */
__attribute__((target(VP_TARGET))) static uint32_t crc_vpclmul_raw(uint32_t c, const uint8_t *p,
								   size_t len)
{
	__m512i x0 = vp_first(c, p);
	__m128i r;

	p += 64;
	len -= 64;
	r = vp_fold(x0, &p, NULL, &len, false);
	/* Upper halves clean before any other code runs (GCC put no
	 * VZEROUPPER before the tail call into slice-by-8): left dirty, every
	 * legacy-SSE instruction after it, in droce, DPDK or libc, merges
	 * them, and a zero-config veth moved a third less on an Intel Xeon
	 * (bench/PROFILE.md section 7; test_wire's test_crc_upper_clean) */
	_mm256_zeroupper();
	return crc_pclmul_tail(r, p, len);
}

/* crc_vpclmul_raw that also copies p to q; len >= 256. */
__attribute__((target(VP_TARGET))) static uint32_t
crc_vpclmul_copy_raw(uint32_t c, uint8_t *q, const uint8_t *p, size_t len)
{
	__m512i x0 = vp_first(c, p);
	__m128i r;

	_mm512_storeu_si512(q, _mm512_loadu_si512(p));
	p += 64;
	q += 64;
	len -= 64;
	r = vp_fold(x0, &p, &q, &len, true);
	_mm256_zeroupper(); /* as in crc_vpclmul_raw */
	memcpy(q, p, len);
	return crc_pclmul_tail(r, p, len);
}

/*
 * An IPv4 frame's ICRC over its headers and payload in one pass of the
 * folding, with a copy of the payload to q if q (dr_icrc_frame,
 * dr_icrc_frame_copy).  The stream it folds starts with one 64-byte block
 * holding the 8 bytes of 0xFF and the masked headers, then the payload:
 * a CRC register of 0 is not moved by leading zero bytes, and 0xFF..FF
 * XORed into the first four of the 0xFF bytes (the register's usual
 * start) leaves 00 00 00 00 FF FF FF FF; so zeros, those 8 bytes and the
 * headers fill the block, which then stays where it is in the folding,
 * the payload's loads and stores as aligned as it is.
 *
 * The block is built in a register, not in memory: the headers' last
 * hdr_len bytes loaded under a mask (the bytes before l3 are not read),
 * the ones ORed in from icrc_ones4 at the headers' offset.  Built in
 * memory, with narrow stores for the masks, its wide loads could not be
 * forwarded from those stores and waited for them to reach the cache:
 * on the receiver of a zero-config veth that wait was 7 % of its CPU
 * (bench/PROFILE.md section 7, "Stop 31").  hdr_len <= 56, the masked
 * headers an IPv4 frame's (icrc_masked_len), any len (p may be NULL if
 * it is 0); the register returned is raw (not inverted).
 */
static const uint8_t icrc_ones4[128] = {
    /* the last 4 of the 8 0xFF bytes */
    [60] = 0xff,
    [61] = 0xff,
    [62] = 0xff,
    [63] = 0xff,
    /* IPv4 TOS, TTL, header checksum */
    [64 + 1] = 0xff,
    [64 + 8] = 0xff,
    [64 + 10] = 0xff,
    [64 + 11] = 0xff,
    /* UDP checksum, BTH byte 4 */
    [64 + 26] = 0xff,
    [64 + 27] = 0xff,
    [64 + 32] = 0xff,
};

/* icrc_vpclmul4 for a short frame (a READ request, an ACK, an 8-byte
 * SEND): the block built the same way, in four 128-bit lanes, and folded
 * 16 bytes at a time.  No 512-bit register: a few 512-bit instructions
 * between every two short frames cost more than the folding (8 B over
 * memif: 1.07-1.17 us a half round trip against 0.91-0.97). */
__attribute__((target(VP_TARGET))) static uint32_t icrc_short4(const uint8_t *l3, size_t hdr_len,
							       const uint8_t *p, size_t len)
{
	const __m128i k34 = _mm_set_epi64x(K4, K3);
	size_t s = 64 - hdr_len;
	const uint8_t *b = (const uint8_t *)((uintptr_t)l3 - s);
	uint64_t keep = ~0ull << s;
	__m128i r = _mm_setzero_si128();

	for (unsigned i = 0; i < 4; i++) {
		__m128i x =
		    _mm_or_si128(_mm_maskz_loadu_epi8((__mmask16)(keep >> (16 * i)), b + 16 * i),
				 _mm_loadu_si128((const __m128i *)(icrc_ones4 + 64 - s + 16 * i)));

		r = i ? _mm_xor_si128(fold(r, k34), x) : x;
	}
	return crc_pclmul_tail(r, p, len);
}

__attribute__((target(VP_TARGET))) static uint32_t
icrc_vpclmul4(const uint8_t *l3, size_t hdr_len, uint8_t *q, const uint8_t *p, size_t len)
{
	size_t s = 64 - hdr_len;
	__m512i blk;
	__m128i r;

	if (len < 192) {
		if (q && len)
			memcpy(q, p, len);
		return icrc_short4(l3, hdr_len, p, len);
	}
	blk =
	    _mm512_or_si512(_mm512_maskz_loadu_epi8(~0ull << s, (const void *)((uintptr_t)l3 - s)),
			    _mm512_loadu_si512(icrc_ones4 + 64 - s));
	if (q) {
		r = vp_fold(blk, &p, &q, &len, true);
		_mm256_zeroupper();
		memcpy(q, p, len);
	} else {
		r = vp_fold(blk, &p, NULL, &len, false);
		_mm256_zeroupper();
	}
	return crc_pclmul_tail(r, p, len);
}

/*
 * The same folding on 256-bit registers (AVX2 with VPCLMULQDQ, no AVX-512:
 * AMD Zen 3, where the 128-bit path ran at 10 GB/s and held 15 % of each
 * CPU of a zero-config veth's 1 MiB writes).  Four registers of two
 * 128-bit lanes take 128 bytes per step, each lane folded 1024 bits
 * forward; the registers are then folded into the last one (256 bits
 * apart), 32-byte blocks added the same way, its two lanes folded into
 * one (128 bits) and the 128-bit path finishes.  No masked byte loads and
 * no ternary logic here (both AVX-512): the ICRC's first block is built
 * with a byte shuffle instead (v2_block).
 */
#define K1024_HI      0x1e88ef372ull
#define K1024_LO      0x14a7fe880ull
#define DR_CRC_V2_MIN 128

#define V2_TARGET "avx2,vpclmulqdq,pclmul,sse4.1"

__attribute__((target(V2_TARGET))) static inline __m256i fold256(__m256i x, __m256i k, __m256i d)
{
	return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
						 _mm256_clmulepi64_epi128(x, k, 0x11)),
				d);
}

/*
 * vp_fold's counterpart: x0 stands for the 32 bytes before p; len >= 96.
 * With copy, every block loaded is stored to *q as well.  Returns the
 * 128-bit remainder for crc_pclmul_tail, *pp, *qq and *lenp advanced past
 * what was folded (fewer than 32 bytes are left).
 */
__attribute__((target(V2_TARGET), always_inline)) static inline __m128i
v2_fold(__m256i x0, const uint8_t **pp, uint8_t **qq, size_t *lenp, bool copy)
{
	const __m256i k1024 = _mm256_broadcastsi128_si256(_mm_set_epi64x(K1024_LO, K1024_HI));
	const __m256i k256 = _mm256_broadcastsi128_si256(_mm_set_epi64x(K256_LO, K256_HI));
	const uint8_t *p = *pp;
	uint8_t *q = copy ? *qq : NULL;
	size_t len = *lenp;
	__m256i x1, x2, x3, d0, d1, d2, d3;

	x1 = _mm256_loadu_si256((const __m256i *)p);
	x2 = _mm256_loadu_si256((const __m256i *)(p + 32));
	x3 = _mm256_loadu_si256((const __m256i *)(p + 64));
	if (copy) {
		_mm256_storeu_si256((__m256i *)q, x1);
		_mm256_storeu_si256((__m256i *)(q + 32), x2);
		_mm256_storeu_si256((__m256i *)(q + 64), x3);
		q += 96;
	}
	p += 96;
	len -= 96;
	while (len >= 128) {
		d0 = _mm256_loadu_si256((const __m256i *)p);
		d1 = _mm256_loadu_si256((const __m256i *)(p + 32));
		d2 = _mm256_loadu_si256((const __m256i *)(p + 64));
		d3 = _mm256_loadu_si256((const __m256i *)(p + 96));
		if (copy) {
			_mm256_storeu_si256((__m256i *)q, d0);
			_mm256_storeu_si256((__m256i *)(q + 32), d1);
			_mm256_storeu_si256((__m256i *)(q + 64), d2);
			_mm256_storeu_si256((__m256i *)(q + 96), d3);
			q += 128;
		}
		x0 = fold256(x0, k1024, d0);
		x1 = fold256(x1, k1024, d1);
		x2 = fold256(x2, k1024, d2);
		x3 = fold256(x3, k1024, d3);
		p += 128;
		len -= 128;
	}
	x1 = fold256(x0, k256, x1);
	x2 = fold256(x1, k256, x2);
	x3 = fold256(x2, k256, x3);
	while (len >= 32) {
		d0 = _mm256_loadu_si256((const __m256i *)p);
		if (copy) {
			_mm256_storeu_si256((__m256i *)q, d0);
			q += 32;
		}
		x3 = fold256(x3, k256, d0);
		p += 32;
		len -= 32;
	}
	*pp = p;
	if (copy)
		*qq = q;
	*lenp = len;
	/* lane 0 lies 128 bits before lane 1 */
	return _mm_xor_si128(fold(_mm256_castsi256_si128(x3), _mm_set_epi64x(K4, K3)),
			     _mm256_extracti128_si256(x3, 1));
}

/* len >= DR_CRC_V2_MIN */
__attribute__((target(V2_TARGET))) static uint32_t crc_v2_raw(uint32_t c, const uint8_t *p,
							      size_t len)
{
	__m256i x0 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p),
				      _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)c)));
	__m128i r;

	p += 32;
	len -= 32;
	r = v2_fold(x0, &p, NULL, &len, false);
	_mm256_zeroupper(); /* as in crc_vpclmul_raw */
	return crc_pclmul_tail(r, p, len);
}

/* crc_v2_raw that also copies p to q; len >= DR_CRC_V2_MIN. */
__attribute__((target(V2_TARGET))) static uint32_t crc_v2_copy_raw(uint32_t c, uint8_t *q,
								   const uint8_t *p, size_t len)
{
	__m256i d = _mm256_loadu_si256((const __m256i *)p);
	__m128i r;

	_mm256_storeu_si256((__m256i *)q, d);
	p += 32;
	q += 32;
	len -= 32;
	r = v2_fold(_mm256_xor_si256(d, _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)c))), &p, &q,
		    &len, true);
	_mm256_zeroupper();
	memcpy(q, p, len);
	return crc_pclmul_tail(r, p, len);
}

/* pshufb controls: from shuf_shift + 16 - t, bytes moved t places up,
 * zeros shifted in (an index with its top bit set selects zero) */
static const int8_t shuf_shift[32] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    0,	1,  2,	3,  4,	5,  6,	7,  8,	9,  10, 11, 12, 13, 14, 15,
};

/*
 * icrc_vpclmul4's first block without AVX-512's masked loads, folded to
 * one 128-bit register (the 64 bytes' CRC from zero): each 16-byte lane
 * of it is the headers' bytes loaded as they are, or, for the lane where
 * they start, the headers' first 16 bytes shifted into place by a byte
 * shuffle, or zero; ORed with the ones of icrc_ones4.  Nothing before l3
 * is read.  hdr_len 40..56, an IPv4 frame's (icrc_masked_len).
 */
__attribute__((target(V2_TARGET))) static inline __m128i v2_block(const uint8_t *l3, size_t hdr_len)
{
	const __m128i k34 = _mm_set_epi64x(K4, K3);
	const long s = 64 - (long)hdr_len;
	__m128i r = _mm_setzero_si128();

	for (long i = 0; i < 4; i++) {
		long off = 16 * i - s; /* the lane's first byte in the headers */
		__m128i x = _mm_loadu_si128((const __m128i *)(icrc_ones4 + 64 - s + 16 * i));

		if (off >= 0)
			x = _mm_or_si128(x, _mm_loadu_si128((const __m128i *)(l3 + off)));
		else if (off > -16)
			x = _mm_or_si128(
			    x, _mm_shuffle_epi8(
				   _mm_loadu_si128((const __m128i *)l3),
				   _mm_loadu_si128((const __m128i *)(shuf_shift + 16 + off))));
		r = i ? _mm_xor_si128(fold(r, k34), x) : x;
	}
	return r;
}

/* icrc_vpclmul4 on 256-bit registers: the first block folded to 16 bytes
 * (v2_block), which with the payload's first 16 start the folding. */
__attribute__((target(V2_TARGET))) static uint32_t icrc_v2(const uint8_t *l3, size_t hdr_len,
							   uint8_t *q, const uint8_t *p, size_t len)
{
	__m128i r = v2_block(l3, hdr_len), d;

	if (len < 16 + 96) {
		if (q && len)
			memcpy(q, p, len);
		return crc_pclmul_tail(r, p, len);
	}
	d = _mm_loadu_si128((const __m128i *)p);
	p += 16;
	len -= 16;
	if (q) {
		_mm_storeu_si128((__m128i *)q, d);
		q += 16;
		r = v2_fold(_mm256_set_m128i(d, r), &p, &q, &len, true);
		_mm256_zeroupper();
		memcpy(q, p, len);
	} else {
		r = v2_fold(_mm256_set_m128i(d, r), &p, NULL, &len, false);
		_mm256_zeroupper();
	}
	return crc_pclmul_tail(r, p, len);
}

static bool have_pclmul, have_vpclmul, have_v2;
#define DR_CRC_PCLMUL_MIN 32
/* the implementations dr_crc32 may use (dr_crc32_select) */
static bool use_pclmul, use_vpclmul, use_v2;

__attribute__((constructor)) static void crc_cpu_init(void)
{
	unsigned a, b, c, d;

	if (__get_cpuid(1, &a, &b, &c, &d))
		have_pclmul = (c & bit_PCLMUL) && (c & bit_SSE4_1);
	/* __builtin_cpu_supports checks that the OS saves the ZMM state */
	__builtin_cpu_init();
	have_vpclmul = have_pclmul && __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
		       __builtin_cpu_supports("vpclmulqdq");
	/* (and that it saves the YMM state) */
	have_v2 =
	    have_pclmul && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq");
	use_pclmul = have_pclmul;
	use_vpclmul = have_vpclmul;
	use_v2 = have_v2 && !have_vpclmul;
}
#endif

uint32_t dr_crc32(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	/* from 256 bytes the 512-bit folding wins; from 32 bytes 128-bit
	 * folding beats slice-by-8 even with its 16-byte final reduction */
	if (use_vpclmul && len >= DR_CRC_VPCLMUL_MIN)
		return ~crc_vpclmul_raw(~crc, buf, len);
	if (use_v2 && len >= DR_CRC_V2_MIN)
		return ~crc_v2_raw(~crc, buf, len);
	if (use_pclmul && len >= DR_CRC_PCLMUL_MIN)
		return ~crc_pclmul_raw(~crc, buf, len);
#endif
	return ~crc_sb8_raw(~crc, buf, len);
}

uint32_t dr_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	if (use_vpclmul && len >= DR_CRC_VPCLMUL_MIN)
		return ~crc_vpclmul_copy_raw(~crc, dst, src, len);
	if (use_v2 && len >= DR_CRC_V2_MIN)
		return ~crc_v2_copy_raw(~crc, dst, src, len);
#endif
	/* short, or only 128-bit PCLMULQDQ: two passes, the second over
	 * what the first left in the cache */
	memcpy(dst, src, len);
	return dr_crc32(crc, src, len);
}

const char *dr_crc32_impl(void)
{
#if defined(__x86_64__)
	if (use_vpclmul)
		return "vpclmul";
	if (use_v2)
		return "vpclmul256";
	if (use_pclmul)
		return "pclmul";
#endif
	return "slice-by-8";
}

int dr_crc32_select(const char *impl)
{
#if defined(__x86_64__)
	if (!impl) {
		use_pclmul = have_pclmul;
		use_vpclmul = have_vpclmul;
		use_v2 = have_v2 && !have_vpclmul;
		return 0;
	}
	if (!strcmp(impl, "vpclmul")) {
		if (!have_vpclmul)
			return -ENOTSUP;
		use_pclmul = use_vpclmul = true;
		use_v2 = false;
		return 0;
	}
	if (!strcmp(impl, "vpclmul256")) {
		if (!have_v2)
			return -ENOTSUP;
		use_pclmul = use_v2 = true;
		use_vpclmul = false;
		return 0;
	}
	if (!strcmp(impl, "pclmul")) {
		if (!have_pclmul)
			return -ENOTSUP;
		use_pclmul = true;
		use_vpclmul = use_v2 = false;
		return 0;
	}
	if (!strcmp(impl, "slice-by-8")) {
		use_pclmul = use_vpclmul = use_v2 = false;
		return 0;
	}
	return -EINVAL;
#else
	if (!impl || !strcmp(impl, "slice-by-8"))
		return 0;
	return strcmp(impl, "vpclmul") && strcmp(impl, "vpclmul256") && strcmp(impl, "pclmul")
		   ? -EINVAL
		   : -ENOTSUP;
#endif
}

/*
 * ICRC over the headers.  Masked to ones (A.9): IPv4 TOS, TTL and header
 * checksum; IPv6 traffic class, flow label and hop limit; the UDP checksum;
 * BTH byte 4 (FECN, BECN, resv6a).  Everything else is covered as sent.
 */

/* Bytes of IP, UDP and BTH at h (the masked part), or 0 if h does not hold
 * them; *iplen: the IP header's length. */
static size_t icrc_masked_len(const uint8_t *h, size_t hdr_len, size_t *iplen)
{
	size_t n;

	if (hdr_len < 1)
		return 0;
	if ((h[0] >> 4) == 4)
		*iplen = sizeof(struct dr_ipv4_hdr);
	else if ((h[0] >> 4) == 6)
		*iplen = sizeof(struct dr_ipv6_hdr);
	else
		return 0;
	n = *iplen + sizeof(struct dr_udp_hdr) + sizeof(struct dr_bth);
	return hdr_len < n ? 0 : n;
}

/* Apply the masks to a copy of the headers at m. */
static void icrc_mask(uint8_t *m, size_t iplen)
{
	if (iplen == sizeof(struct dr_ipv4_hdr)) {
		struct dr_ipv4_hdr *ip = (struct dr_ipv4_hdr *)m;

		ip->tos = 0xff;
		ip->ttl = 0xff;
		ip->csum = 0xffff;
	} else {
		struct dr_ipv6_hdr *ip6 = (struct dr_ipv6_hdr *)m;

		ip6->ver_tc_flow |= htonl(0x0fffffff);
		ip6->hop_limit = 0xff;
	}
	((struct dr_udp_hdr *)(m + iplen))->csum = 0xffff;
	m[iplen + sizeof(struct dr_udp_hdr) + 4] = 0xff;
}

int dr_icrc_start(const void *l3, size_t hdr_len, uint32_t *state)
{
	uint8_t m[sizeof(struct dr_ipv6_hdr) + sizeof(struct dr_udp_hdr) + sizeof(struct dr_bth)];
	const uint8_t *h = l3;
	size_t iplen, n = icrc_masked_len(h, hdr_len, &iplen);

	if (!n)
		return -1;
	memcpy(m, h, n);
	icrc_mask(m, iplen);
	*state = dr_crc32(dr_crc32(DR_ICRC_SEED, m, n), h + n, hdr_len - n);
	return 0;
}

/* Headers and payload of frames up to this long take dr_icrc_frame's
 * one-pass route (an ACK, a short SEND: one CRC call, not four). */
#define DR_ICRC_GATHER 256

int dr_icrc_frame(const void *l3, size_t hdr_len, const void *payload, size_t payload_len,
		  const void *pad, size_t pad_len, uint32_t *icrc)
{
	uint8_t m[DR_ICRC_GATHER];
	size_t iplen;

#if defined(__x86_64__)
	/* one pass, as dr_icrc_frame_copy's without the copy */
	if (use_vpclmul && hdr_len <= 56 && icrc_masked_len(l3, hdr_len, &iplen)) {
		*icrc = dr_icrc_update(~icrc_vpclmul4(l3, hdr_len, NULL, payload, payload_len), pad,
				       pad_len);
		return 0;
	}
	if (use_v2 && hdr_len <= 56 && icrc_masked_len(l3, hdr_len, &iplen)) {
		*icrc =
		    dr_icrc_update(~icrc_v2(l3, hdr_len, NULL, payload, payload_len), pad, pad_len);
		return 0;
	}
#endif
	if (hdr_len + payload_len + pad_len > sizeof(m)) {
		if (dr_icrc_start(l3, hdr_len, icrc))
			return -1;
		*icrc = dr_icrc_update(*icrc, payload, payload_len);
		*icrc = dr_icrc_update(*icrc, pad, pad_len);
		return 0;
	}
	if (!icrc_masked_len(l3, hdr_len, &iplen))
		return -1;
	memcpy(m, l3, hdr_len);
	/* payload and pad may be NULL when empty (an ACK; the parser's pad) */
	if (payload_len)
		memcpy(m + hdr_len, payload, payload_len);
	if (pad_len)
		memcpy(m + hdr_len + payload_len, pad, pad_len);
	icrc_mask(m, iplen);
	*icrc = dr_crc32(DR_ICRC_SEED, m, hdr_len + payload_len + pad_len);
	return 0;
}

int dr_icrc_frame_copy(const void *l3, size_t hdr_len, const void *payload, size_t payload_len,
		       const void *pad, size_t pad_len, void *dst, uint32_t *icrc)
{
	size_t iplen;

#if defined(__x86_64__)
	/* one pass over headers and payload, the payload placed on the way */
	if (use_vpclmul && hdr_len <= 56 && icrc_masked_len(l3, hdr_len, &iplen)) {
		*icrc = dr_icrc_update(~icrc_vpclmul4(l3, hdr_len, dst, payload, payload_len), pad,
				       pad_len);
		return 0;
	}
	if (use_v2 && hdr_len <= 56 && icrc_masked_len(l3, hdr_len, &iplen)) {
		*icrc =
		    dr_icrc_update(~icrc_v2(l3, hdr_len, dst, payload, payload_len), pad, pad_len);
		return 0;
	}
#endif
	if (dr_icrc_start(l3, hdr_len, icrc))
		return -1;
	*icrc = dr_crc32_copy(*icrc, dst, payload, payload_len);
	*icrc = dr_icrc_update(*icrc, pad, pad_len);
	return 0;
}

/* RFC 1071 over the 20-byte header without options (the parser refuses
 * options), in 32-bit words; any other length the 16-bit way. */
uint16_t dr_ipv4_csum(const struct dr_ipv4_hdr *ip)
{
	const uint8_t *p = (const uint8_t *)ip;
	size_t len = dr_ipv4_ihl(ip) * 4u;
	uint64_t sum = 0;

	if (len == sizeof(*ip)) {
		uint32_t w[5];

		memcpy(w, p, sizeof(w));
		/* the checksum field is the high half of word 2 in memory order:
		 * leave it out by subtracting it back */
		sum = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
		sum -= ip->csum;
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		return (uint16_t)~sum;
	}
	for (size_t i = 0; i + 1 < len; i += 2) {
		if (i == offsetof(struct dr_ipv4_hdr, csum))
			continue;
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}
