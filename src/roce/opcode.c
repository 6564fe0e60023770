// SPDX-License-Identifier: BSD-2-Clause
/*
 * The one opcode table: every BTH opcode droce speaks, what follows the BTH,
 * where the packet sits in its message and what it asks of the receiver.
 * Sources: IBA vol. 1 table 38 (opcodes) and 9.2 (header order); rdma_rxe
 * rxe_opcode.c (docs/protocol.md A.6).  Header offsets are derived from the
 * header sizes and the fixed order of enum dr_hdr, never typed by hand.
 */
#include "dr_roce.h"

#define DR_BTH_LEN sizeof(struct dr_bth)

/* size of header h if the flag set f has it */
#define HSZ(f, h, type) (((f) & (1u << (h))) ? sizeof(struct type) : 0)

/* bytes of the extension headers that come before header number n */
#define LEN_BEFORE(f, n)                                        \
	((0 < (n) ? HSZ(f, DR_HDR_DETH, dr_deth) : 0) +         \
	 (1 < (n) ? HSZ(f, DR_HDR_RETH, dr_reth) : 0) +         \
	 (2 < (n) ? HSZ(f, DR_HDR_ATMETH, dr_atmeth) : 0) +     \
	 (3 < (n) ? HSZ(f, DR_HDR_AETH, dr_aeth) : 0) +         \
	 (4 < (n) ? HSZ(f, DR_HDR_ATMACK, dr_atmack) : 0) +     \
	 (5 < (n) ? HSZ(f, DR_HDR_IMMDT, dr_immdt) : 0) +       \
	 (6 < (n) ? HSZ(f, DR_HDR_IETH, dr_ieth) : 0))

_Static_assert(DR_HDR_NUM == 7, "LEN_BEFORE lists every header");

#define OFF(f, h) (((f) & (1u << (h))) ? DR_BTH_LEN + LEN_BEFORE(f, h) : 0)

/* the macro keeps its hand layout, a line per field */
/* clang-format off */
#define OP(nm, f, a)                                                     \
	{                                                                \
		.name = nm, .flags = (f) | DR_OPF_VALID, .ack = (a),     \
		.hdr_len = DR_BTH_LEN + LEN_BEFORE(f, DR_HDR_NUM) +      \
			   (((f) & DR_OPF_CNP) ? DR_CNP_RSVD_LEN : 0),   \
		.off = { OFF(f, 0), OFF(f, 1), OFF(f, 2), OFF(f, 3),     \
			 OFF(f, 4), OFF(f, 5), OFF(f, 6) },              \
	}
/* clang-format on */

/* requests from the requester of an RC QP; a SEND takes its receive WQE
 * at its first packet and completes it at its last, a WRITE with
 * immediate does both at the packet with the ImmDt */
/* one opcode a line, read as a table */
/* clang-format off */
#define SEND (DR_OPF_REQ | DR_OPF_SEND | DR_OPF_PAYLOAD)
#define WRITE (DR_OPF_REQ | DR_OPF_WRITE | DR_OPF_PAYLOAD)
#define TAKE DR_OPF_RWQE
#define DONE DR_OPF_RECV_DONE
#define ATOMIC (DR_OPF_REQ | DR_OPF_ATOMIC | DR_OPF_ATMETH | DR_OPF_ONLY)
/* READ responses from the responder */
#define RRSP (DR_OPF_RSP | DR_OPF_READ | DR_OPF_PAYLOAD)
#define UD (DR_OPF_UD | DR_OPF_SEND | DR_OPF_PAYLOAD | TAKE | DONE | DR_OPF_DETH | DR_OPF_ONLY)

const struct dr_opcode_info dr_opcode_tab[256] = {
	[DR_OP_SEND_FIRST] = OP("RC_SEND_FIRST", SEND | TAKE | DR_OPF_FIRST, DR_ACK_IF_REQ),
	[DR_OP_SEND_MIDDLE] = OP("RC_SEND_MIDDLE", SEND | DR_OPF_MIDDLE, DR_ACK_IF_REQ),
	[DR_OP_SEND_LAST] = OP("RC_SEND_LAST", SEND | DONE | DR_OPF_LAST, DR_ACK_IF_REQ),
	[DR_OP_SEND_LAST_IMM] = OP("RC_SEND_LAST_WITH_IMMEDIATE",
				   SEND | DONE | DR_OPF_LAST | DR_OPF_IMMDT, DR_ACK_IF_REQ),
	[DR_OP_SEND_ONLY] = OP("RC_SEND_ONLY", SEND | TAKE | DONE | DR_OPF_ONLY, DR_ACK_IF_REQ),
	[DR_OP_SEND_ONLY_IMM] = OP("RC_SEND_ONLY_WITH_IMMEDIATE",
				   SEND | TAKE | DONE | DR_OPF_ONLY | DR_OPF_IMMDT, DR_ACK_IF_REQ),
	[DR_OP_WRITE_FIRST] = OP("RC_RDMA_WRITE_FIRST", WRITE | DR_OPF_FIRST | DR_OPF_RETH,
				 DR_ACK_IF_REQ),
	[DR_OP_WRITE_MIDDLE] = OP("RC_RDMA_WRITE_MIDDLE", WRITE | DR_OPF_MIDDLE, DR_ACK_IF_REQ),
	[DR_OP_WRITE_LAST] = OP("RC_RDMA_WRITE_LAST", WRITE | DR_OPF_LAST, DR_ACK_IF_REQ),
	/* WRITE with immediate consumes a receive WQE (IBA 9.4.3) */
	[DR_OP_WRITE_LAST_IMM] = OP("RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
				    WRITE | TAKE | DONE | DR_OPF_LAST | DR_OPF_IMMDT,
				    DR_ACK_IF_REQ),
	[DR_OP_WRITE_ONLY] = OP("RC_RDMA_WRITE_ONLY", WRITE | DR_OPF_ONLY | DR_OPF_RETH,
				DR_ACK_IF_REQ),
	[DR_OP_WRITE_ONLY_IMM] = OP("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
				    WRITE | TAKE | DONE | DR_OPF_ONLY | DR_OPF_RETH |
					    DR_OPF_IMMDT,
				    DR_ACK_IF_REQ),
	[DR_OP_READ_REQ] = OP("RC_RDMA_READ_REQUEST",
			      DR_OPF_REQ | DR_OPF_READ | DR_OPF_RETH | DR_OPF_ONLY,
			      DR_ACK_READ_RSP),
	[DR_OP_READ_RSP_FIRST] = OP("RC_RDMA_READ_RESPONSE_FIRST",
				    RRSP | DR_OPF_FIRST | DR_OPF_AETH, DR_ACK_NONE),
	[DR_OP_READ_RSP_MIDDLE] = OP("RC_RDMA_READ_RESPONSE_MIDDLE", RRSP | DR_OPF_MIDDLE,
				     DR_ACK_NONE),
	[DR_OP_READ_RSP_LAST] = OP("RC_RDMA_READ_RESPONSE_LAST", RRSP | DR_OPF_LAST | DR_OPF_AETH,
				   DR_ACK_NONE),
	[DR_OP_READ_RSP_ONLY] = OP("RC_RDMA_READ_RESPONSE_ONLY", RRSP | DR_OPF_ONLY | DR_OPF_AETH,
				   DR_ACK_NONE),
	[DR_OP_ACK] = OP("RC_ACKNOWLEDGE", DR_OPF_RSP | DR_OPF_ACK | DR_OPF_AETH | DR_OPF_ONLY,
			 DR_ACK_NONE),
	[DR_OP_ATOMIC_ACK] = OP("RC_ATOMIC_ACKNOWLEDGE",
				DR_OPF_RSP | DR_OPF_ACK | DR_OPF_ATOMIC | DR_OPF_AETH |
					DR_OPF_ATMACK | DR_OPF_ONLY,
				DR_ACK_NONE),
	[DR_OP_CMP_SWAP] = OP("RC_COMPARE_SWAP", ATOMIC, DR_ACK_ATOMIC),
	[DR_OP_FETCH_ADD] = OP("RC_FETCH_ADD", ATOMIC, DR_ACK_ATOMIC),
	[DR_OP_SEND_LAST_INV] = OP("RC_SEND_LAST_WITH_INVALIDATE",
				   SEND | DONE | DR_OPF_LAST | DR_OPF_IETH, DR_ACK_IF_REQ),
	[DR_OP_SEND_ONLY_INV] = OP("RC_SEND_ONLY_WITH_INVALIDATE",
				   SEND | TAKE | DONE | DR_OPF_ONLY | DR_OPF_IETH, DR_ACK_IF_REQ),
	[DR_OP_UD_SEND_ONLY] = OP("UD_SEND_ONLY", UD, DR_ACK_NONE),
	[DR_OP_UD_SEND_ONLY_IMM] = OP("UD_SEND_ONLY_WITH_IMMEDIATE", UD | DR_OPF_IMMDT,
				      DR_ACK_NONE),
	/* RoCEv2 annex A17.9.3: BTH, 16 reserved bytes, ICRC */
	[DR_OP_CNP] = OP("CNP", DR_OPF_CNP | DR_OPF_ONLY, DR_ACK_NONE),
};
/* clang-format on */
