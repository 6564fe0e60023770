// SPDX-License-Identifier: BSD-2-Clause
/*
 * mkseeds_qp.c - write a seed corpus for fuzz/fuzz_qp.c into a directory.
 *
 *   mkseeds_qp OUTDIR
 *
 * Each seed is a script in fuzz_qp's input language (its decode_cfg() and
 * act()): a connection and a sequence of actions that takes the pair
 * somewhere worth starting from -- every operation at a few sizes and
 * MTUs with the PSNs about to wrap, a lost packet, a duplicated one,
 * reordering, an RNR wait, a timeout, each opcode forged towards either
 * side, mutated copies of real frames.  The bytes must follow fuzz_qp.c's
 * decoder; when it changes these seeds still decode (every byte string
 * does), just less usefully, until they are updated.
 */
#include <stdint.h>
#include <stdio.h>

#define MKSEEDS_NAME "mkseeds_qp"
#include "mkseeds_common.h"

/* connection: MTU index, PSN bytes (0x80|n: 0xffffff - n), timeout,
 * retry | rnr << 4, ORD/IRD nibbles, depths, flags of A | B << 3, timer */
static void cfg(unsigned mtu, unsigned flags, unsigned retry)
{
	b(mtu);	  /* 256 << mtu */
	b(0x83);  /* A's first PSN 0xfffffc: the wrap comes soon */
	b(7);	  /* timeout 8: 1 ms */
	b(retry); /* retry_cnt | rnr_retry << 4 */
	b(0xff);  /* ORD 3, IRD 3 on both sides */
	b(0xff);  /* 31 send and receive WQEs each */
	b(flags); /* QP flags */
	b(0x81);  /* B's first PSN 0xfffffc */
	b(1);	  /* min_rnr_timer 1: 10 us */
}

/* post a send WR; op: enum dr_wr_opcode; lensel: fuzz_qp pick_len index */
static void send(unsigned side, unsigned op, unsigned lensel, unsigned remote_reg)
{
	b(side << 7 | 0);
	b(op);	     /* one SGE */
	b(0x80 | 1); /* signaled */
	b32(0x1000 + op);
	b(lensel);
	if (op == 5 || op == 6) { /* atomics: compare/add, swap */
		b32(0);
		b32(1);
		b32(0);
		b32(2);
	}
	b(4); /* SGE: the local region, its key */
	b16(0);
	b(remote_reg); /* remote region, its key, in bounds */
	b16(64);
}

static void recv(unsigned side, unsigned lensel)
{
	b(side << 7 | 3);
	b(0); /* one SGE */
	b(lensel);
	b(4);
	b16(0);
}

/* dir: the sender's side; kind: fuzz_qp act_link switch */
static void link(unsigned side, unsigned kind, unsigned n)
{
	b(side << 7 | 5);
	b(kind);
	b(n);
}

static void all(unsigned rounds)
{
	while (rounds--) {
		link(0, 3, 0);
		link(1, 3, 0);
	}
}

static void clock_to_deadline(void)
{
	b(9);
	b(7);
}

static int ops_seeds(void)
{
	static const unsigned sizes[] = {0, 1, 5, 6, 8, 9, 10};
	static const unsigned mtus[] = {0, 2, 4};

	for (unsigned m = 0; m < 3; m++)
		for (unsigned op = 0; op < 7; op++)
			for (unsigned s = 0; s < 7; s += (op >= 5 ? 7 : 2)) {
				cfg(mtus[m], 0, 0x77);
				recv(1, 10);
				recv(1, 10);
				send(0, op, sizes[s], 0);
				send(0, op, sizes[(s + 3) % 7], 0);
				all(4);
				if (flush("ops"))
					return -1;
			}
	/* flags: WRITE_IMM without a WQE, deferred ACKs, adaptive RTO */
	for (unsigned fl = 1; fl < 8; fl++) {
		cfg(1, fl | fl << 3, 0x77);
		recv(1, 9);
		send(0, 3, 5, 0);
		send(0, 1, 5, 0);
		send(1, 2, 6, 0);
		all(3);
		b(14);	      /* flush side 0 */
		b(0x80 | 14); /* flush side 1 */
		all(2);
		if (flush("flags"))
			return -1;
	}
	return 0;
}

static int fault_seeds(void)
{
	/* lost first packet, then the timer */
	cfg(0, 0, 0x73);
	recv(1, 10);
	send(0, 0, 9, 0);
	link(0, 4, 0);
	all(2);
	clock_to_deadline();
	all(3);
	if (flush("loss"))
		return -1;
	/* duplicate and reorder a multi-packet WRITE and a READ */
	cfg(0, 0, 0x77);
	send(0, 2, 9, 0);
	send(0, 4, 8, 0);
	link(0, 5, 2);
	link(0, 6, 3);
	link(0, 7, 1);
	all(1);
	link(1, 6, 2);
	all(3);
	if (flush("reorder"))
		return -1;
	/* RNR: a SEND before its receive */
	cfg(1, 0, 0x33);
	send(0, 0, 5, 0);
	all(1);
	clock_to_deadline();
	recv(1, 9);
	all(3);
	if (flush("rnr"))
		return -1;
	/* remote errors: bad region, read-only region, no rights */
	for (unsigned reg = 1; reg < 4; reg++) {
		cfg(2, 0, 0x77);
		send(0, 2, 5, reg);
		all(3);
		if (flush("remerr"))
			return -1;
	}
	/* dead peer: nothing ever delivered */
	cfg(0, 0, 0x22);
	send(0, 0, 5, 0);
	for (unsigned k = 0; k < 8; k++) {
		link(0, 4, 7);
		clock_to_deadline();
	}
	if (flush("dead"))
		return -1;
	return 0;
}

/* forged frames: each entry of fuzz_qp's opcode table, to each side */
static int forge_seeds(void)
{
	for (unsigned side = 0; side < 2; side++)
		for (unsigned op = 0; op < 32; op++) {
			cfg(0, 0, 0x77);
			recv(side, 9);
			send(side ^ 1, 0, 5, 0);
			b(side << 7 | 11);
			b(op);		   /* opcode index */
			b(0);		   /* how: ACK, good ICRC */
			b(1);		   /* AckReq */
			b(op & 1 ? 2 : 0); /* PSN base: resp.psn or comp.psn */
			b(0);		   /* delta */
			b(5);		   /* length: pmtu */
			b(0);		   /* remote: the RDMA region, its key */
			b16(0);
			b32(0); /* swap_add */
			b32(1);
			b32(0); /* cmp */
			b32(0);
			for (unsigned k = 0; k < 20; k++) /* msn..qkey */
				b(0);
			all(2);
			if (flush("forge"))
				return -1;
		}
	/* mutated copies of what was sent */
	/* parameter bytes of each of fuzz_qp act_mutate's edits */
	static const unsigned param[13] = {1, 1, 0, 1, 2, 1, 1, 4, 0, 1, 4, 2, 2};

	for (unsigned e = 0; e < 13; e++) {
		cfg(1, 0, 0x77);
		recv(1, 9);
		send(0, 2, 8, 0);
		send(0, 0, 5, 0);
		link(0, 0, 1);
		b(13); /* mutate a frame side 0 sent */
		b(1);  /* the one before the last */
		b(0);  /* good ICRC */
		b(0);  /* one edit */
		b(e);
		for (unsigned k = 0; k < param[e]; k++)
			b(1);
		all(3);
		if (flush("mutate"))
			return -1;
	}
	return 0;
}

/* Inputs that once broke an invariant, kept as they were found: each run
 * starts from them, so a regression is a finding at once. */
static int regression_seeds(void)
{
	/* an ACK past an unanswered READ during an RNR wait: the go-back-N
	 * left the RNR deadline set, no retransmit timer armed, the resend
	 * lost -- a READ outstanding with nothing to recover it (comp.c
	 * dr_comp_resend) */
	static const uint8_t rnr_resend[] = {
	    0x00, 0x83, 0x07, 0x77, 0xff, 0xff, 0x00, 0x81, 0x01, 0x02, 0x0a, 0x81, 0x00,
	    0x00, 0x10, 0x02, 0x09, 0x04, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x04, 0x81,
	    0x00, 0x00, 0x10, 0x04, 0x08, 0x04, 0x00, 0x00, 0x00, 0x00, 0x02, 0x05, 0x06,
	    0x03, 0x05, 0x07, 0x01, 0x05, 0x03, 0x00, 0x85, 0x03, 0x00, 0x85, 0x06, 0x02,
	    0x05, 0x03, 0x00, 0x85, 0x03, 0xe0, 0xb5, 0x5a, 0x8b, 0xdd, 0x55, 0x00, 0x00,
	    0x00, 0x05, 0x03, 0x00, 0x85, 0x03, 0x00, 0x05, 0x03, 0x00, 0x85, 0x03, 0x00,
	};

	for (size_t i = 0; i < sizeof(rnr_resend); i++)
		b(rnr_resend[i]);
	return flush("regression-rnr-resend");
}

int main(int argc, char **argv)
{
	static int (*const gen[])(void) = {ops_seeds, fault_seeds, forge_seeds, regression_seeds};

	return mkseeds_main(argc, argv, gen, sizeof(gen) / sizeof(gen[0]));
}
