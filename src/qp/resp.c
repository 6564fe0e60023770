/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * resp.c - the responder: checks and executes incoming requests and
 * answers them (IBA 9.7.4, 9.7.5.1; docs/protocol.md B.3, B.5-B.9).
 *
 * One request packet walks the state machine below, checks first in the
 * order IBA 9.7.5.1 lists them (PSN, opcode sequence, length, resources,
 * key), then execution, completion and acknowledgement.  Every refusal is
 * one exit: NAK_SEQ (ahead of the expected PSN), DUPLICATE (behind it),
 * RNR (no receive WQE) or ERROR (a NAK and the QP to ERROR).
 *
 * An RDMA or atomic request that executes (a WRITE: its last packet) or is
 * refused with an error NAK is reported once through ops->remote_op, when
 * the packet has been dealt with entirely; duplicates, replays, sequence
 * NAKs and RNR NAKs are not.
 */
#include <string.h>

#include "qp_priv.h"

enum dr_resp_state {
	DR_RESP_CHECK_PSN,
	DR_RESP_CHECK_OP_SEQ,
	DR_RESP_CHECK_LENGTH,
	DR_RESP_CHECK_RESOURCE,
	DR_RESP_CHECK_RKEY,
	DR_RESP_EXECUTE,
	DR_RESP_COMPLETE,
	DR_RESP_ACKNOWLEDGE,
	DR_RESP_DUPLICATE,
	DR_RESP_NAK_SEQ,
	DR_RESP_RNR,
	DR_RESP_ERROR,
	DR_RESP_DONE,
	DR_RESP_NUM
};

static const char *const dr_resp_state_names[DR_RESP_NUM] = {
    [DR_RESP_CHECK_PSN] = "CHECK_PSN",
    [DR_RESP_CHECK_OP_SEQ] = "CHECK_OP_SEQ",
    [DR_RESP_CHECK_LENGTH] = "CHECK_LENGTH",
    [DR_RESP_CHECK_RESOURCE] = "CHECK_RESOURCE",
    [DR_RESP_CHECK_RKEY] = "CHECK_RKEY",
    [DR_RESP_EXECUTE] = "EXECUTE",
    [DR_RESP_COMPLETE] = "COMPLETE",
    [DR_RESP_ACKNOWLEDGE] = "ACKNOWLEDGE",
    [DR_RESP_DUPLICATE] = "DUPLICATE",
    [DR_RESP_NAK_SEQ] = "NAK_SEQ",
    [DR_RESP_RNR] = "RNR",
    [DR_RESP_ERROR] = "ERROR",
    [DR_RESP_DONE] = "DONE",
};

struct dr_resp_ctx {
	const struct dr_pkt *pkt;
	uint32_t f;		   /* the opcode's flags as the responder acts on them */
	uint8_t ack;		   /* what the request is owed (enum dr_op_ack) */
	bool remote;		   /* an RDMA or atomic request: reported (ops->remote_op) */
	uint8_t nak;		   /* ERROR: the NAK syndrome */
	enum dr_wc_status rstatus; /* ERROR: for a receive WQE in progress */
	uint8_t *ptr;		   /* CHECK_RKEY: the local target */
	uint64_t va;
	uint32_t rkey, len;
	bool replay;  /* DUPLICATE: a request executed before */
	bool rop_due; /* rop is to be reported (ops->remote_op) */
	struct dr_remote_op rop;
};

/* ---- the request's class ------------------------------------------------------ */

/* The responder decides by the opcode table's flags (dr_roce.h enum
 * dr_opf).  droce offers no SEND with invalidate (it has no memory windows
 * or remote invalidation): such a request belongs to no class the
 * responder executes and is owed nothing, so it is refused in sequence
 * (CHECK_OP_SEQ: invalid request) and dropped as a duplicate. */
static void dr_resp_classify(struct dr_resp_ctx *c)
{
	const struct dr_opcode_info *o = c->pkt->op;

	c->f = o->flags;
	c->ack = o->ack;
	if (c->f & DR_OPF_IETH) {
		c->f &= ~DR_OPF_SEND;
		c->ack = DR_ACK_NONE;
	}
	c->remote = true;
	if (c->f & DR_OPF_WRITE)
		c->rop.kind = DR_REMOTE_WRITE;
	else if (c->f & DR_OPF_READ)
		c->rop.kind = DR_REMOTE_READ;
	else if (c->f & DR_OPF_ATOMIC) /* the table's class stops at "atomic" */
		c->rop.kind =
		    c->pkt->opcode == DR_OP_CMP_SWAP ? DR_REMOTE_CMP_SWAP : DR_REMOTE_FETCH_ADD;
	else
		c->remote = false;
}

/* a WRITE with immediate: completes as a receive; takes a receive WQE
 * unless the QP keeps it off its receive queue (DR_QP_WRITE_IMM_NO_WQE) */
static bool dr_resp_write_imm(const struct dr_resp_ctx *c)
{
	return (c->f & DR_OPF_WRITE) && (c->f & DR_OPF_IMMDT);
}
static bool dr_resp_takes_rwqe(const struct dr_qp *qp, const struct dr_resp_ctx *c)
{
	if (!(c->f & DR_OPF_RWQE))
		return false;
	return !dr_resp_write_imm(c) || !(qp->flags & DR_QP_WRITE_IMM_NO_WQE);
}

/* ---- answers ------------------------------------------------------------------ */

/* The held ACK (DR_QP_DEFER_ACK) goes first: whatever the responder
 * sends next must not overtake it. */
void dr_resp_flush_ack(struct dr_qp *qp)
{
	char note[DR_QP_NOTE_LEN] = "";
	struct dr_pkt_desc d;

	if (!qp->resp.ack_due)
		return;
	qp->resp.ack_due = false;
	qp->resp.ack_lazy = false;
	qp->stats.tx_acks++;
	if (qp->resp.ack_unasked)
		qp->stats.tx_unasked_acks++;
	dr_qp_desc(qp, &d, DR_OP_ACK, qp->resp.ack_psn);
	d.aeth.syndrome = DR_AETH_ACK_UNLIMITED;
	d.aeth.msn = qp->resp.ack_msn;
	if (qp->resp.ack_from != qp->resp.ack_psn && dr_qp_noting(qp))
		dr_qp_note_add(note, "ACK coalesced: covers PSN %u..%u", qp->resp.ack_from,
			       qp->resp.ack_psn);
	dr_qp_send_frame_note(qp, &d, note);
}

/* An AETH-only answer; note: its annotation (NULL: none). */
static void dr_resp_send_aeth(struct dr_qp *qp, uint8_t opcode, uint32_t psn, uint8_t syndrome,
			      const char *note)
{
	struct dr_pkt_desc d;

	dr_resp_flush_ack(qp);
	dr_qp_desc(qp, &d, opcode, psn);
	d.aeth.syndrome = syndrome;
	d.aeth.msn = qp->resp.msn;
	dr_qp_send_frame_note(qp, &d, note);
}

static void dr_resp_ack(struct dr_qp *qp, uint32_t psn)
{
	qp->stats.tx_acks++;
	dr_resp_send_aeth(qp, DR_OP_ACK, psn, DR_AETH_ACK_UNLIMITED, NULL);
}

/* "NAK sent: <reason>, expected PSN <e>, received PSN <r>" into note (or
 * nothing, when nobody listens) */
static const char *dr_resp_nak_note(struct dr_qp *qp, char *note, uint8_t syndrome, uint32_t psn)
{
	note[0] = '\0';
	if (dr_qp_noting(qp))
		dr_qp_note_add(note, "NAK sent: %s, expected PSN %u, received PSN %u",
			       dr_qp_nak_name(syndrome), qp->resp.psn, psn);
	return note;
}

/* The READ RESPONSE opcodes by position (IBA table 38). */
static const uint8_t dr_read_rsp_opcode[DR_POS_NUM] = {
    [DR_POS_ONLY] = DR_OP_READ_RSP_ONLY,
    [DR_POS_FIRST] = DR_OP_READ_RSP_FIRST,
    [DR_POS_MIDDLE] = DR_OP_READ_RSP_MIDDLE,
    [DR_POS_LAST] = DR_OP_READ_RSP_LAST,
};

/* READ RESPONSE packets for [ptr, ptr+len) starting at psn (IBA 9.7.4;
 * AETH on FIRST/LAST/ONLY only). */
static void dr_resp_read_reply(struct dr_qp *qp, uint32_t psn, const uint8_t *ptr, uint32_t len)
{
	uint32_t pmtu = qp->attr.path_mtu, n = dr_qp_npkts(qp, len), i;

	dr_resp_flush_ack(qp);
	for (i = 0; i < n; i++) {
		uint32_t off = i * pmtu, plen = len - off < pmtu ? len - off : pmtu;
		struct dr_pkt_desc d;

		dr_qp_desc(qp, &d, dr_read_rsp_opcode[dr_pos_of(i, n)],
			   dr_psn_add(psn, (int32_t)i));
		d.aeth.syndrome = DR_AETH_ACK_UNLIMITED;
		d.aeth.msn = qp->resp.msn;
		d.payload = plen ? ptr + off : NULL;
		d.payload_len = plen;
		qp->stats.tx_read_rsps++;
		dr_qp_send_frame(qp, &d);
	}
}

static void dr_resp_atomic_reply(struct dr_qp *qp, uint32_t psn, uint64_t orig)
{
	struct dr_pkt_desc d;

	dr_resp_flush_ack(qp);
	dr_qp_desc(qp, &d, DR_OP_ATOMIC_ACK, psn);
	d.aeth.syndrome = DR_AETH_ACK_UNLIMITED;
	d.aeth.msn = qp->resp.msn;
	d.atmack_orig = orig;
	qp->stats.tx_atomic_acks++;
	dr_qp_send_frame(qp, &d);
}

static struct dr_rd_res *dr_resp_res_next(struct dr_qp *qp)
{
	/* FIFO ring of max_dest_rd_atomic entries (B.7): the requester keeps
	 * within it by honouring its ORD */
	struct dr_rd_res *r = &qp->resp.res[qp->resp.res_next];

	qp->resp.res_next = (qp->resp.res_next + 1) % qp->resp.nres;
	memset(r, 0, sizeof(*r));
	return r;
}

/* Note the request's outcome for ops->remote_op (called by dr_resp_input
 * once the packet is dealt with).  status: DR_WC_SUCCESS, else the NAK's. */
static void dr_resp_note_remote_op(struct dr_qp *qp, struct dr_resp_ctx *c,
				   enum dr_wc_status status)
{
	const struct dr_reth *reth = dr_pkt_reth(c->pkt);
	struct dr_remote_op *r = &c->rop;

	if (!c->remote)
		return;
	c->rop_due = true;
	r->status = status;
	r->syndrome = status == DR_WC_SUCCESS ? 0 : c->nak;
	r->psn = c->pkt->psn;
	if (reth)
		r->length = ntohl(reth->len);
	else if (r->kind == DR_REMOTE_WRITE &&
		 (status == DR_WC_SUCCESS || qp->resp.in == DR_OPF_WRITE))
		r->length = qp->resp.wr_len; /* a WRITE's MIDDLE or LAST */
	if (r->kind == DR_REMOTE_FETCH_ADD || r->kind == DR_REMOTE_CMP_SWAP) {
		const struct dr_atmeth *a = dr_pkt_atmeth(c->pkt);

		/* IBA 9.4.5: FETCH_ADD's addend travels in the swap/add field */
		r->compare_add = be64toh(r->kind == DR_REMOTE_FETCH_ADD ? a->swap_add : a->cmp);
		r->swap = r->kind == DR_REMOTE_CMP_SWAP ? be64toh(a->swap_add) : 0;
	}
}

/* ---- states ---------------------------------------------------------------------- */

static enum dr_resp_state dr_resp_check_psn(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	int32_t d = dr_psn_diff(c->pkt->psn, qp->resp.psn);

	if (d > 0)
		return DR_RESP_NAK_SEQ;
	if (d < 0)
		return DR_RESP_DUPLICATE;
	qp->resp.nak_sent = false; /* the gap, if any, is closed */
	qp->resp.nak_rnr = false;
	return DR_RESP_CHECK_OP_SEQ;
}

static enum dr_resp_state dr_resp_check_op_seq(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	uint32_t f = c->f;
	bool ok;

	/* IBA 9.7.5.1 (opcode sequence check): a message continues with MIDDLE/LAST of
	 * its own kind; nothing else may start until it ends */
	if (qp->resp.in)
		ok = (f & qp->resp.in) && (f & (DR_OPF_MIDDLE | DR_OPF_LAST));
	else
		ok = (f & (DR_OPF_SEND | DR_OPF_WRITE | DR_OPF_READ | DR_OPF_ATOMIC)) &&
		     (f & (DR_OPF_FIRST | DR_OPF_ONLY));
	if (!ok) {
		/* also SEND_*_WITH_INVALIDATE, which droce does not offer */
		c->nak = DR_AETH_NAK_INV_REQ;
		return DR_RESP_ERROR;
	}
	return DR_RESP_CHECK_LENGTH;
}

/* A WRITE MIDDLE or LAST of plen bytes that continues the WRITE in
 * progress: MIDDLE exactly PMTU and leaving something for LAST, LAST
 * 1..PMTU and ending it exactly (B.9, IBA 9.7.5.1) */
static bool dr_resp_write_cont_ok(const struct dr_qp *qp, uint32_t f, uint32_t plen)
{
	if (f & DR_OPF_MIDDLE)
		return plen == qp->attr.path_mtu && plen < qp->resp.wr_resid;
	return plen && plen <= qp->attr.path_mtu && plen == qp->resp.wr_resid;
}

static enum dr_resp_state dr_resp_check_length(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	uint32_t pmtu = qp->attr.path_mtu, plen = c->pkt->payload_len;
	const struct dr_reth *reth = dr_pkt_reth(c->pkt);
	uint32_t f = c->f;
	bool ok = true;

	/* B.9 / IBA 9.7.5.1 (length check): FIRST and MIDDLE exactly PMTU, LAST
	 * 1..PMTU, ONLY up to PMTU; a WRITE's packets add up to its RETH */
	if (f & (DR_OPF_FIRST | DR_OPF_MIDDLE))
		ok = plen == pmtu;
	else if (f & DR_OPF_END)
		ok = plen <= pmtu && ((f & DR_OPF_ONLY) || plen > 0);
	if (ok && reth) {
		c->va = be64toh(reth->va);
		c->rkey = ntohl(reth->rkey);
		c->len = ntohl(reth->len);
		if (c->len > DR_QP_MAX_RETH)
			ok = false;
		else if ((f & DR_OPF_WRITE) && (f & DR_OPF_ONLY))
			ok = plen == c->len;
		else if ((f & DR_OPF_WRITE) && (f & DR_OPF_FIRST))
			ok = c->len > pmtu;
	} else if (ok && (f & DR_OPF_WRITE)) {
		ok = dr_resp_write_cont_ok(qp, f, plen);
	}
	if (ok && (f & DR_OPF_ATOMIC)) {
		const struct dr_atmeth *a = dr_pkt_atmeth(c->pkt);

		c->va = be64toh(a->va);
		c->rkey = ntohl(a->rkey);
		c->len = 8;
	}
	if (!ok) {
		c->nak = DR_AETH_NAK_INV_REQ;
		return DR_RESP_ERROR;
	}
	return DR_RESP_CHECK_RESOURCE;
}

static enum dr_resp_state dr_resp_check_resource(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	if (dr_resp_takes_rwqe(qp, c) && qp->rq.tail == qp->rq.head)
		return DR_RESP_RNR;
	if ((c->f & (DR_OPF_READ | DR_OPF_ATOMIC)) && qp->resp.nres == 0) {
		/* B.7: max_dest_rd_atomic == 0 -> invalid request */
		c->nak = DR_AETH_NAK_INV_REQ;
		return DR_RESP_ERROR;
	}
	return DR_RESP_CHECK_RKEY;
}

static enum dr_resp_state dr_resp_check_rkey(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	unsigned access;

	/* the packets that name the target: a RETH or an AtomicETH */
	if ((c->f & DR_OPF_WRITE) && (c->f & DR_OPF_RETH))
		access = DR_ACCESS_REMOTE_WRITE;
	else if (c->f & DR_OPF_READ)
		access = DR_ACCESS_REMOTE_READ;
	else if (c->f & DR_OPF_ATOMIC)
		access = DR_ACCESS_REMOTE_ATOMIC;
	else
		return DR_RESP_EXECUTE;
	if (access == DR_ACCESS_REMOTE_ATOMIC && (c->va & 7)) {
		/* IBA 9.4.5: atomics need 8-byte alignment; rxe answers
		 * invalid request (B.9) */
		c->nak = DR_AETH_NAK_INV_REQ;
		return DR_RESP_ERROR;
	}
	/* IBA 9.7.5.1 / 10.6.7: key, bounds, rights -> remote access error */
	if (!qp->mrt || dr_mr_check(qp->mrt, c->rkey, c->va, c->len, access, &c->ptr) != DR_MR_OK) {
		c->nak = DR_AETH_NAK_REM_ACCESS;
		return DR_RESP_ERROR;
	}
	return DR_RESP_EXECUTE;
}

static enum dr_resp_state dr_resp_execute_read(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	struct dr_rd_res *r = dr_resp_res_next(qp);
	uint32_t n = dr_qp_npkts(qp, c->len), psn = c->pkt->psn;
	bool cont;

	r->valid = true;
	r->first_psn = psn;
	r->last_psn = dr_psn_add(psn, (int32_t)n - 1);
	r->va = c->va;
	r->rkey = c->rkey;
	r->length = c->len;
	/* the READ takes all its PSNs at once and counts as a message when
	 * executed (B.1, C9-148) */
	qp->resp.psn = dr_psn_add(psn, (int32_t)n);
	qp->resp.msn = (qp->resp.msn + 1) & 0xffffff;
	dr_resp_read_reply(qp, psn, c->ptr, c->len);
	/* A READ of more than a chunk (DR_QP_READ_CHUNK packets, or
	 * DR_QP_READ_CHUNK_MIN: a capped QP's, one started with a small
	 * window, or any before requests grew to 126) comes from a droce
	 * requester as several requests of one size, each a whole chunk but
	 * the last, each at the PSN and address where the previous one ended:
	 * it is reported once, as the application posted it.  (An
	 * application that itself reads exactly chunk-sized pieces back to
	 * back, each where the last ended, is counted once per run of them.) */
	cont = qp->resp.rd_cont && psn == qp->resp.rd_cont_psn && c->va == qp->resp.rd_cont_va &&
	       c->rkey == qp->resp.rd_cont_rkey;
	if (!cont)
		qp->resp.rd_cont_n = n;
	qp->resp.rd_cont = n == qp->resp.rd_cont_n &&
			   (n == DR_QP_READ_CHUNK || n == DR_QP_READ_CHUNK_MIN) &&
			   c->len == n * qp->attr.path_mtu;
	qp->resp.rd_cont_psn = qp->resp.psn;
	qp->resp.rd_cont_va = c->va + c->len;
	qp->resp.rd_cont_rkey = c->rkey;
	if (!cont)
		dr_resp_note_remote_op(qp, c, DR_WC_SUCCESS);
	return DR_RESP_DONE;
}

static enum dr_resp_state dr_resp_execute_atomic(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	const struct dr_atmeth *a = dr_pkt_atmeth(c->pkt);
	struct dr_rd_res *r = dr_resp_res_next(qp);
	uint64_t orig, val;

	/* IBA 9.4.5: 64-bit read-modify-write, original value returned */
	memcpy(&orig, c->ptr, 8);
	if (c->rop.kind == DR_REMOTE_FETCH_ADD)
		val = orig + be64toh(a->swap_add);
	else
		val = orig == be64toh(a->cmp) ? be64toh(a->swap_add) : orig;
	memcpy(c->ptr, &val, 8);
	qp->stats.atomics_executed++;
	r->valid = true;
	r->atomic = true;
	r->first_psn = r->last_psn = c->pkt->psn;
	r->va = c->va;
	r->rkey = c->rkey;
	r->length = 8;
	r->orig = orig;
	qp->resp.psn = dr_psn_add(c->pkt->psn, 1);
	qp->resp.msn = (qp->resp.msn + 1) & 0xffffff;
	dr_resp_atomic_reply(qp, c->pkt->psn, orig);
	dr_resp_note_remote_op(qp, c, DR_WC_SUCCESS);
	return DR_RESP_DONE;
}

static enum dr_resp_state dr_resp_execute(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	const struct dr_pkt *pkt = c->pkt;
	uint32_t f = c->f;

	/* what the request is owed says how it executes */
	if (c->ack == DR_ACK_READ_RSP)
		return dr_resp_execute_read(qp, c);
	if (c->ack == DR_ACK_ATOMIC)
		return dr_resp_execute_atomic(qp, c);
	if (f & DR_OPF_SEND) {
		struct dr_recv_wqe *rw;

		if (!qp->resp.rwqe) {
			qp->resp.rwqe = true;
			qp->resp.rcv_off = 0;
		}
		rw = dr_rq_wqe(qp, qp->rq.tail);
		if (qp->resp.rcv_off + pkt->payload_len > rw->length) {
			/* IBA 9.7.5.1 (B.9): message too long for the
			 * receive -> invalid request; local length error here */
			c->nak = DR_AETH_NAK_INV_REQ;
			c->rstatus = DR_WC_LOC_LEN_ERR;
			return DR_RESP_ERROR;
		}
		dr_sge_copy_in(rw->sge, rw->wr.num_sge, qp->resp.rcv_off, pkt->payload,
			       pkt->payload_len);
		qp->resp.rcv_off += pkt->payload_len;
		qp->resp.in = f & DR_OPF_END ? 0 : DR_OPF_SEND;
		return DR_RESP_COMPLETE;
	}
	/* WRITE */
	if (f & DR_OPF_RETH) {
		qp->resp.wr_ptr = c->ptr;
		qp->resp.wr_resid = c->len;
		qp->resp.wr_len = c->len;
	}
	if (pkt->payload_len) {
		/* the port may have put it there while checking its ICRC: at
		 * this very place, named by dr_resp_place from the same state */
		if (!pkt->payload_placed)
			memcpy(qp->resp.wr_ptr, pkt->payload, pkt->payload_len);
		qp->resp.wr_ptr += pkt->payload_len;
		qp->resp.wr_resid -= pkt->payload_len;
	}
	qp->resp.in = f & DR_OPF_END ? 0 : DR_OPF_WRITE;
	if (dr_resp_takes_rwqe(qp, c))
		qp->resp.rwqe = true; /* it takes the immediate, no data */
	return DR_RESP_COMPLETE;
}

unsigned dr_resp_place(const struct dr_qp *qp, const struct dr_pkt *pkt, struct iovec *dst,
		       unsigned max)
{
	uint32_t f = pkt->op->flags;

	/* the next packet of the WRITE in progress, of the length the
	 * checks above want (CHECK_OP_SEQ, CHECK_LENGTH): what
	 * dr_resp_execute copies, and where.  Its bytes are within what the
	 * FIRST's RETH named, passed its rkey check, and still due */
	if (!max || !(f & DR_OPF_WRITE) || !(f & (DR_OPF_MIDDLE | DR_OPF_LAST)) ||
	    qp->resp.in != DR_OPF_WRITE || pkt->psn != qp->resp.psn ||
	    !dr_resp_write_cont_ok(qp, f, pkt->payload_len))
		return 0;
	dst[0] = (struct iovec){qp->resp.wr_ptr, pkt->payload_len};
	return 1;
}

static enum dr_resp_state dr_resp_complete(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	uint32_t f = c->f;

	qp->resp.psn = dr_psn_add(qp->resp.psn, 1);
	if (!(f & DR_OPF_END))
		return DR_RESP_ACKNOWLEDGE;
	qp->resp.msn = (qp->resp.msn + 1) & 0xffffff;
	if (f & DR_OPF_RECV_DONE) {
		const struct dr_immdt *imm = dr_pkt_immdt(c->pkt);
		struct dr_wc wc = {
		    .status = DR_WC_SUCCESS,
		    .opcode = f & DR_OPF_SEND ? DR_WC_RECV : DR_WC_RECV_WRITE_IMM,
		    /* WRITE_WITH_IMM: the DMA length, though its WQE took nothing */
		    .byte_len = (uint32_t)(f & DR_OPF_SEND ? qp->resp.rcv_off : qp->resp.wr_len),
		    .has_imm = imm != NULL,
		    .imm = imm ? ntohl(imm->imm) : 0,
		    .solicited = dr_bth_se(c->pkt->bth),
		};

		if (qp->resp.rwqe) {
			wc.wr_id = dr_rq_wqe(qp, qp->rq.tail)->wr.wr_id;
			qp->rq.tail++;
			qp->resp.rwqe = false;
		} else {
			/* DR_QP_WRITE_IMM_NO_WQE: a completion of its own */
			wc.no_wqe = true;
		}
		dr_qp_complete(qp, &wc);
	}
	if (f & DR_OPF_WRITE)
		dr_resp_note_remote_op(qp, c, DR_WC_SUCCESS);
	return DR_RESP_ACKNOWLEDGE;
}

static enum dr_resp_state dr_resp_acknowledge(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	/* B.3: ACK only when asked, for exactly that PSN, with the MSN --
	 * or, coalesced, with a later ACK that covers it.  Unasked
	 * (dr_qp_set_lazy_ack): held, to go by lazy_ns at the latest */
	if (!c->pkt->ackreq) {
		if (!qp->lazy_ack)
			return DR_RESP_DONE;
		if (!qp->resp.ack_due) {
			qp->resp.ack_due = true;
			qp->resp.ack_lazy = true;
			qp->resp.ack_from = c->pkt->psn;
			qp->resp.lazy_ns = dr_qp_now(qp) + DR_QP_LAZY_ACK_NS;
			dr_qp_timer_update(qp);
		}
		qp->resp.ack_unasked = true;
		qp->resp.ack_psn = c->pkt->psn;
		qp->resp.ack_msn = qp->resp.msn;
		return DR_RESP_DONE;
	}
	qp->resp.ack_unasked = false;
	if (!(qp->flags & DR_QP_DEFER_ACK)) {
		/* this ACK covers a lazy one held */
		qp->resp.ack_due = false;
		qp->resp.ack_lazy = false;
		dr_resp_ack(qp, c->pkt->psn);
		return DR_RESP_DONE;
	}
	if (qp->resp.ack_due)
		qp->stats.acks_coalesced++;
	else
		qp->resp.ack_from = c->pkt->psn;
	qp->resp.ack_due = true;
	qp->resp.ack_lazy = false;
	qp->resp.ack_psn = c->pkt->psn;
	qp->resp.ack_msn = qp->resp.msn;
	return DR_RESP_DONE;
}

static enum dr_resp_state dr_resp_duplicate(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	const struct dr_pkt *pkt = c->pkt;
	uint32_t i;

	qp->stats.rx_dup_reqs++;
	c->replay = true;
	/* B.7: a duplicate gets again what it was owed, from what is kept */
	if (c->ack == DR_ACK_IF_REQ) {
		/* (C9-105): not executed again; ACK the last in-order PSN */
		dr_qp_note_event(qp, "duplicate: %s PSN %u acknowledged again, ACK PSN %u",
				 dr_qp_note_op(pkt->op), pkt->psn, dr_psn_add(qp->resp.psn, -1));
		dr_resp_ack(qp, dr_psn_add(qp->resp.psn, -1));
		return DR_RESP_DONE;
	}
	for (i = 0; i < qp->resp.nres; i++) {
		struct dr_rd_res *r = &qp->resp.res[i];

		if (!r->valid || dr_psn_diff(pkt->psn, r->first_psn) < 0 ||
		    dr_psn_diff(pkt->psn, r->last_psn) > 0)
			continue;
		if (c->ack == DR_ACK_ATOMIC) {
			/* answered from the replay cache, never executed twice */
			if (!r->atomic || r->first_psn != pkt->psn)
				break;
			dr_qp_note_event(
			    qp, "duplicate: %s PSN %u answered again from the replay cache",
			    dr_qp_note_op(pkt->op), pkt->psn);
			dr_resp_atomic_reply(qp, pkt->psn, r->orig);
			return DR_RESP_DONE;
		}
		if (c->ack == DR_ACK_READ_RSP && !r->atomic) {
			const struct dr_reth *reth = dr_pkt_reth(pkt);
			uint64_t va = be64toh(reth->va), skip;
			uint32_t len = ntohl(reth->len), rkey = ntohl(reth->rkey);
			uint8_t *ptr;

			/* IBA 9.7.5.1 / B.7: a retried READ must ask for the
			 * tail of the original, starting at its PSN's offset */
			skip = (uint64_t)(uint32_t)dr_psn_diff(pkt->psn, r->first_psn) *
			       qp->attr.path_mtu;
			if (rkey != r->rkey || va != r->va + skip || va + len > r->va + r->length)
				break;
			if (dr_mr_check(qp->mrt, rkey, va, len, DR_ACCESS_REMOTE_READ, &ptr) !=
			    DR_MR_OK) {
				c->nak = DR_AETH_NAK_REM_ACCESS;
				return DR_RESP_ERROR;
			}
			dr_qp_note_event(
			    qp, "duplicate: READ PSN %u answered again from the request", pkt->psn);
			dr_resp_read_reply(qp, pkt->psn, ptr, len);
			return DR_RESP_DONE;
		}
		break;
	}
	/* no resource covers it: drop silently (B.7, class D) */
	dr_qp_drop(qp, DR_RX_DROP_PSN_STALE);
	return DR_RESP_DONE;
}

static enum dr_resp_state dr_resp_nak_seq(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	/* B.6 (IBA 9.7.5.1, PSN check): one NAK per gap carrying the expected
	 * PSN, then silence until the gap closes */
	if (!qp->resp.nak_sent) {
		char note[DR_QP_NOTE_LEN];

		qp->resp.nak_sent = true;
		qp->resp.nak_rnr = false;
		qp->stats.tx_seq_naks++;
		dr_resp_send_aeth(qp, DR_OP_ACK, qp->resp.psn, DR_AETH_NAK_PSN_SEQ,
				  dr_resp_nak_note(qp, note, DR_AETH_NAK_PSN_SEQ, c->pkt->psn));
	} else if (qp->resp.nak_rnr) {
		/* held behind the RNR NAK: the requester stopped for want of a
		 * receive here, not for a loss; counted apart so that a
		 * lossless link shows no lost frames */
		dr_qp_drop(qp, DR_RX_DROP_PSN_AHEAD_RNR);
	} else {
		dr_qp_drop(qp, DR_RX_DROP_PSN_AHEAD);
	}
	return DR_RESP_DONE;
}

static enum dr_resp_state dr_resp_rnr(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	/* B.5: RNR NAK with our min_rnr_timer for the packet's PSN.  It
	 * counts as this gap's NAK: what follows it is dropped silently
	 * (rx_drop_psn_ahead_rnr, not a loss) until the requester comes
	 * back to this PSN. */
	char note[DR_QP_NOTE_LEN] = "";

	qp->stats.tx_rnr_naks++;
	qp->resp.nak_sent = true;
	qp->resp.nak_rnr = true;
	if (dr_qp_noting(qp))
		dr_qp_note_add(note,
			       "RNR NAK sent: no receive posted for %s PSN %u, asks for %g ms",
			       dr_qp_note_op(c->pkt->op), c->pkt->psn,
			       (double)dr_rnr_timer_ns(qp->attr.min_rnr_timer & 0x1f) / 1e6);
	dr_resp_send_aeth(qp, DR_OP_ACK, c->pkt->psn,
			  DR_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f), note);
	return DR_RESP_DONE;
}

static enum dr_resp_state dr_resp_error(struct dr_qp *qp, struct dr_resp_ctx *c)
{
	char note[DR_QP_NOTE_LEN];

	/* B.9: NAK for the offending PSN, the receive in progress fails, the
	 * QP moves to ERROR and flushes the rest */
	qp->stats.tx_err_naks++;
	dr_qp_log(qp, "qp %u resp: NAK 0x%02x psn %u opcode %s", qp->qpn, c->nak, c->pkt->psn,
		  c->pkt->op->name);
	dr_resp_send_aeth(qp, DR_OP_ACK, c->pkt->psn, c->nak,
			  dr_resp_nak_note(qp, note, c->nak, c->pkt->psn));
	if (qp->resp.rwqe || c->rstatus != DR_WC_SUCCESS) {
		if (qp->rq.tail != qp->rq.head) {
			struct dr_recv_wqe *rw = dr_rq_wqe(qp, qp->rq.tail++);
			struct dr_wc wc = {
			    .wr_id = rw->wr.wr_id,
			    .status =
				c->rstatus != DR_WC_SUCCESS ? c->rstatus : DR_WC_REM_INV_REQ_ERR,
			    .opcode = DR_WC_RECV,
			    .syndrome = c->nak,
			};

			qp->resp.rwqe = false;
			dr_qp_complete(qp, &wc);
		}
	}
	/* a refused replay was reported when it first executed */
	if (!c->replay)
		dr_resp_note_remote_op(qp, c, dr_qp_nak_status(c->nak));
	dr_qp_error(qp, dr_qp_nak_name(c->nak));
	return DR_RESP_DONE;
}

typedef enum dr_resp_state (*dr_resp_fn)(struct dr_qp *qp, struct dr_resp_ctx *c);

static const dr_resp_fn dr_resp_tab[DR_RESP_NUM] = {
    [DR_RESP_CHECK_PSN] = dr_resp_check_psn,
    [DR_RESP_CHECK_OP_SEQ] = dr_resp_check_op_seq,
    [DR_RESP_CHECK_LENGTH] = dr_resp_check_length,
    [DR_RESP_CHECK_RESOURCE] = dr_resp_check_resource,
    [DR_RESP_CHECK_RKEY] = dr_resp_check_rkey,
    [DR_RESP_EXECUTE] = dr_resp_execute,
    [DR_RESP_COMPLETE] = dr_resp_complete,
    [DR_RESP_ACKNOWLEDGE] = dr_resp_acknowledge,
    [DR_RESP_DUPLICATE] = dr_resp_duplicate,
    [DR_RESP_NAK_SEQ] = dr_resp_nak_seq,
    [DR_RESP_RNR] = dr_resp_rnr,
    [DR_RESP_ERROR] = dr_resp_error,
};

void dr_resp_input(struct dr_qp *qp, const struct dr_pkt *pkt)
{
	struct dr_resp_ctx c = {.pkt = pkt, .rstatus = DR_WC_SUCCESS};
	enum dr_resp_state s = DR_RESP_CHECK_PSN;

	dr_resp_classify(&c);
	while (s != DR_RESP_DONE) {
		enum dr_resp_state next = dr_resp_tab[s](qp, &c);

		if (next == DR_RESP_RNR || next == DR_RESP_ERROR)
			dr_qp_log(qp, "qp %u resp: %s -> %s psn %u", qp->qpn,
				  dr_resp_state_names[s], dr_resp_state_names[next], pkt->psn);
		s = next;
	}
	if (c.rop_due && qp->ops->remote_op)
		qp->ops->remote_op(qp->ctx, qp, &c.rop);
}
