// SPDX-License-Identifier: BSD-2-Clause
/*
 * droce-pcapcheck - check a capture of RoCEv2 traffic with droce's own
 * parser: every frame to UDP port 4791 must parse with dr_pkt_parse() and
 * carry a valid ICRC (Wireshark never checks the ICRC, docs/protocol.md E).
 *
 *   droce-pcapcheck [options] FILE.pcapng...
 *
 * Every frame of every file is classified:
 *   RoCE   UDP destination port 4791 over IPv4/IPv6 (a VLAN tag is allowed);
 *          its dr_pkt_parse() verdict must be DR_PKT_OK, ICRC included.  A
 *          frame the capture cut short (caplen < wire length) is bad too: it
 *          cannot be checked.
 *          A UDP GSO super-frame (docs/protocol.md A.10: N packets of one
 *          size, the last maybe shorter, behind one Ethernet/IPv4/UDP
 *          header, as a capture on a veth between two droce packet: ports
 *          sees it) is cut as the kernel would cut it, and each packet
 *          checked and counted as a frame of its own would be (counted
 *          apart too: UDP_GSO_FRAMES, UDP_GSO_PACKETS).
 *   ARP    ethertype 0x0806
 *   other  everything else (TCP, ICMP, IPv6 ND, ...); an ICMP destination
 *          unreachable that quotes a UDP/4791 datagram is counted apart
 *          (ICMP_PORT_UNREACH: the kernel answered RoCE traffic).
 *
 * Good RoCE frames are counted by BTH opcode, QP1 MADs by CM attribute
 * (CM_REQ .. CM_DREP), and AETHs by syndrome (ACK, RNR_NAK, NAK_PSN_SEQ...).
 * RC request packets are followed per flow (source IP, destination IP,
 * destination QP): a PSN seen before is a RETRANSMIT when the frame differs
 * (droce gives every transmission a new IPv4 ID) or a DUPLICATE when it is
 * byte-identical as far as the ICRC tells (e.g. netem's duplicate); a PSN
 * ahead of the next expected one is a PSN_GAP (loss before the capture
 * point, or reordering), and a PSN never seen before that is behind the
 * newest is PSN_LATE (it fills a gap: reordered, or the retransmission of a
 * packet lost before the capture point).  RDMA READ responses are followed
 * the same way, apart from the requests in the same direction: a response
 * PSN seen before is RSP_RESENT (a READ asked for again).
 *
 * Capture comments (pcapng opt_comment, as FI_DROCE_PCAP writes them) are
 * read as droce's notes: one or more "keyword: details" joined by "; "
 * (README.md, "Reading a capture").  A frame marked dropped (a "dropped:"
 * note, or an epb_dropcount above 0, which is how FI_DROCE_PCAP marks a
 * frame it received and threw away) never reached droce's engine: it is
 * counted among the frames and by drop reason, and nowhere else (not RoCE,
 * not an opcode, not a PSN).  Retransmissions are broken down by cause: the
 * text of a "retransmit:" note up to its first comma; a RETRANSMIT without
 * a note that resends the PSN after the previous annotated one of its flow
 * belongs to the same go-back-N and takes its cause; any other is "resent
 * by the peer" when the frame came in (epb_flags: the peer decided, its
 * own capture says why), else "unexplained".
 *
 * Options:
 *   -v, --verbose       list every bad frame (number, file offset, verdict,
 *                       addresses, opcode, PSN, carried/computed ICRC) and the
 *                       first PSN events per flow; -vv lists every PSN event
 *   -q, --quiet         print only failures
 *   --require LIST      comma-separated counter names that must be present,
 *                       each optionally NAME:N for "at least N" (default 1):
 *                       an opcode name (RC_SEND_ONLY, RC_ACKNOWLEDGE, ...,
 *                       UD_SEND_ONLY), a CM attribute (CM_REQ, CM_REP, CM_RTU,
 *                       CM_REJ, CM_MRA, CM_DREQ, CM_DREP, or Wireshark's
 *                       ConnectRequest, ...), an AETH syndrome (ACK, NAK (any
 *                       NAK or RNR NAK), RNR_NAK, NAK_PSN_SEQ, NAK_INV_REQ,
 *                       NAK_REM_ACCESS, NAK_REM_OP, NAK_INV_RD_REQ), ARP,
 *                       RETRANSMIT, DUPLICATE, PSN_GAP, PSN_LATE, RSP_RESENT,
 *                       ICMP_PORT_UNREACH, ROCE, UDP_GSO_FRAMES,
 *                       UDP_GSO_PACKETS (super-frames cut, the packets they
 *                       carried), and from the comments UNEXPLAINED
 *                       (retransmissions droce sent, or of
 *                       unknown direction, without a cause),
 *                       DROPPED (frames marked dropped), ANNOTATED (frames
 *                       with a comment)
 *   --forbid LIST       counter names that must be zero (same names)
 *   --min-roce N        at least N RoCE frames in all (default 1)
 *   --notes             list every annotated frame as it is read, one tab-separated
 *                       line each: number, seconds since the file's first frame,
 *                       direction (in, out or -, from epb_flags), a summary and
 *                       the comment(s), joined by "; ", control characters
 *                       written \t, \n, \r, \xNN (also with -q)
 *   --list-names        print every counter name and exit
 *
 * Exit: 0 all good; 1 a bad RoCE frame, a missing requirement or a forbidden
 * counter; 2 usage error or an unreadable/corrupt capture.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dr_roce.h"
#include "pcapng.h"

#define ETH_P_ARP     0x0806
#define IPPROTO_ICMP_ 1
#define IPPROTO_TCP_  6
#define V_TRUNCATED   DR_PKT_VERDICT_NUM /* pseudo-verdict: caplen < origlen */
#define EVENTS_SHOWN  10		 /* PSN events listed per flow and kind at -v */

/* ---- counters -------------------------------------------------------------- */

enum psn_event { EV_RETRANSMIT, EV_DUPLICATE, EV_GAP, EV_LATE, EV_RSP_RESENT, EV_NUM };
static const char *const ev_name[EV_NUM] = {"RETRANSMIT", "DUPLICATE", "PSN_GAP", "PSN_LATE",
					    "RSP_RESENT"};

static struct {
	uint64_t frames, roce, roce_ok, roce_bad, arp, other;
	uint64_t other_tcp, other_udp, other_icmp, other_ipv6, other_nonip, other_nonether;
	uint64_t icmp_unreach_roce;
	uint64_t verdict[DR_PKT_VERDICT_NUM + 1];
	uint64_t opcode[256];
	uint64_t cm[0x20];  /* by CM attribute ID (0x10..0x16) */
	uint64_t mad_other; /* QP1 datagrams that are not CM MADs */
	uint64_t aeth[256]; /* by syndrome byte */
	uint64_t ev[EV_NUM];
	uint64_t rc_requests; /* RC request packets followed */
	uint64_t flows;
	uint64_t gso_frames, gso_packets; /* UDP GSO super-frames, the packets cut from them */
} tot;

static const struct {
	const char *name, *ws_name;
	uint16_t attr;
} cm_names[] = {
    {"CM_REQ", "ConnectRequest", DR_CM_ATTR_REQ},
    {"CM_MRA", "MsgRcptAck", DR_CM_ATTR_MRA},
    {"CM_REJ", "ConnectReject", DR_CM_ATTR_REJ},
    {"CM_REP", "ConnectReply", DR_CM_ATTR_REP},
    {"CM_RTU", "ReadyToUse", DR_CM_ATTR_RTU},
    {"CM_DREQ", "DisconnectRequest", DR_CM_ATTR_DREQ},
    {"CM_DREP", "DisconnectReply", DR_CM_ATTR_DREP},
};
#define N_CM (sizeof(cm_names) / sizeof(cm_names[0]))

static const struct {
	const char *name;
	uint8_t syndrome;
} nak_names[] = {
    {"NAK_PSN_SEQ", DR_AETH_NAK_PSN_SEQ},	{"NAK_INV_REQ", DR_AETH_NAK_INV_REQ},
    {"NAK_REM_ACCESS", DR_AETH_NAK_REM_ACCESS}, {"NAK_REM_OP", DR_AETH_NAK_REM_OP},
    {"NAK_INV_RD_REQ", DR_AETH_NAK_INV_RD_REQ},
};
#define N_NAK (sizeof(nak_names) / sizeof(nak_names[0]))

/* ---- notes: the capture's comments ---------------------------------------------- */

/* The keywords of droce's notes (README.md, "Reading a capture"), in the
 * order the report lists them; a note is matched up to its colon. */
static const char *const note_kw[] = {
    "retransmit",    "NAK sent", "NAK received", "RNR NAK sent", "RNR NAK received", "duplicate",
    "ACK coalesced", "CNP sent", "CNP received", "QP state",	 "CM state",	     "dropped",
};
#define N_KW	      (sizeof(note_kw) / sizeof(note_kw[0]))
#define KW_RETRANSMIT 0
#define KW_DROPPED    (N_KW - 1)

/* Names counted as they come: retransmit causes, drop reasons, keywords
 * outside the vocabulary */
struct tally {
	char **name;
	uint64_t *n;
	size_t len, cap;
};

static struct {
	uint64_t frames; /* with at least one comment */
	uint64_t notes;	 /* in all */
	uint64_t kw[N_KW];
	struct tally other_kw;
	struct tally causes;  /* frames retransmitted, by cause */
	uint64_t peer;	      /* retransmissions received, without a note */
	uint64_t unexplained; /* sent, or of unknown direction, without a note */
	uint64_t dropped;     /* frames */
	struct tally drop_reasons;
} notes;

static bool list_notes;

static uint64_t aeth_class(uint8_t lo, uint8_t hi)
{
	uint64_t n = 0;

	for (unsigned s = lo; s <= hi; s++)
		n += tot.aeth[s];
	return n;
}

static uint64_t count_acks(void)
{
	return aeth_class(0x00, 0x1f);
}
static uint64_t count_rnr(void)
{
	return aeth_class(0x20, 0x3f);
}
static uint64_t count_naks(void)
{
	return aeth_class(0x60, 0x7f);
}

/* The value of a counter by name; false if no counter has that name. */
static bool counter_get(const char *name, uint64_t *v)
{
	for (unsigned op = 0; op < 256; op++)
		if (dr_opcode_valid(op) && !strcasecmp(name, dr_opcode_name(op))) {
			*v = tot.opcode[op];
			return true;
		}
	for (unsigned i = 0; i < N_CM; i++)
		if (!strcasecmp(name, cm_names[i].name) || !strcasecmp(name, cm_names[i].ws_name)) {
			*v = tot.cm[cm_names[i].attr];
			return true;
		}
	for (unsigned i = 0; i < N_NAK; i++)
		if (!strcasecmp(name, nak_names[i].name)) {
			*v = tot.aeth[nak_names[i].syndrome];
			return true;
		}
	for (unsigned i = 0; i < EV_NUM; i++)
		if (!strcasecmp(name, ev_name[i])) {
			*v = tot.ev[i];
			return true;
		}
	if (!strcasecmp(name, "ACK"))
		*v = count_acks();
	else if (!strcasecmp(name, "RNR_NAK"))
		*v = count_rnr();
	else if (!strcasecmp(name, "NAK"))
		*v = count_rnr() + count_naks();
	else if (!strcasecmp(name, "ARP"))
		*v = tot.arp;
	else if (!strcasecmp(name, "ICMP_PORT_UNREACH"))
		*v = tot.icmp_unreach_roce;
	else if (!strcasecmp(name, "ROCE"))
		*v = tot.roce;
	else if (!strcasecmp(name, "UDP_GSO_FRAMES"))
		*v = tot.gso_frames;
	else if (!strcasecmp(name, "UDP_GSO_PACKETS"))
		*v = tot.gso_packets;
	else if (!strcasecmp(name, "UNEXPLAINED"))
		*v = notes.unexplained;
	else if (!strcasecmp(name, "DROPPED"))
		*v = notes.dropped;
	else if (!strcasecmp(name, "ANNOTATED"))
		*v = notes.frames;
	else
		return false;
	return true;
}

static void list_names(void)
{
	printf("opcodes:");
	for (unsigned op = 0; op < 256; op++)
		if (dr_opcode_valid(op))
			printf(" %s", dr_opcode_name(op));
	printf("\nCM attributes:");
	for (unsigned i = 0; i < N_CM; i++)
		printf(" %s (%s)", cm_names[i].name, cm_names[i].ws_name);
	printf("\nAETH: ACK NAK RNR_NAK");
	for (unsigned i = 0; i < N_NAK; i++)
		printf(" %s", nak_names[i].name);
	printf("\nother: ARP ROCE ICMP_PORT_UNREACH RETRANSMIT DUPLICATE PSN_GAP PSN_LATE "
	       "RSP_RESENT\nfrom the comments: UNEXPLAINED DROPPED ANNOTATED\n");
}

/* ---- RC request PSN tracking ------------------------------------------------ */

/* One RC send queue as seen on the wire: source and destination IP, UDP
 * source port and destination QP.  A new connection may reuse all four (QP
 * numbers are small and reused); its random start PSN gives it away: a PSN
 * further than PSN_EPOCH from the flow's starts a new flow. */
#define PSN_EPOCH (1 << 16)

struct flow {
	uint8_t src[16], dst[16]; /* IPv4 in the first 4 bytes */
	uint8_t v6;
	bool rsp; /* READ responses, not requests */
	uint16_t sport;
	uint32_t dqpn;
	uint32_t first_psn;
	uint32_t next_psn;   /* one past the highest PSN seen */
	bool superseded;     /* a later connection took over this key */
	uint32_t read_slack; /* PSNs the last READ request may have used up */
	size_t gbn_cause;    /* cause of the go-back-N under way + 1, 0: none */
	uint32_t gbn_next;   /* the PSN that would continue it */
	uint64_t first_frame;
	uint64_t requests, ev[EV_NUM];
};

static struct flow *flows;
static size_t n_flows, cap_flows;

/* (flow, PSN) -> ICRC of the last frame seen with that PSN: open addressing */
struct psn_slot {
	uint64_t key; /* flow index << 24 | PSN, plus 1 (0 = empty) */
	uint32_t icrc;
};
static struct psn_slot *slots;
static size_t n_slots, used_slots;

static int verbose;
static bool quiet;

static size_t slot_index(uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 20) & (n_slots - 1);
}

/* Find or insert key; returns the slot, *fresh when it was inserted. */
static struct psn_slot *psn_lookup(uint64_t key, bool *fresh)
{
	size_t i;

	if ((used_slots + 1) * 4 > n_slots * 3) {
		struct psn_slot *old = slots;
		size_t old_n = n_slots;

		n_slots = n_slots ? n_slots * 2 : 1u << 16;
		slots = calloc(n_slots, sizeof(*slots));
		if (!slots) {
			perror("droce-pcapcheck");
			exit(2);
		}
		for (size_t j = 0; j < old_n; j++) {
			if (!old[j].key)
				continue;
			i = slot_index(old[j].key);
			while (slots[i].key)
				i = (i + 1) & (n_slots - 1);
			slots[i] = old[j];
		}
		free(old);
	}
	for (i = slot_index(key); slots[i].key; i = (i + 1) & (n_slots - 1))
		if (slots[i].key == key) {
			*fresh = false;
			return &slots[i];
		}
	slots[i].key = key;
	used_slots++;
	*fresh = true;
	return &slots[i];
}

static void psn_reset(void)
{
	free(slots);
	slots = NULL;
	n_slots = used_slots = 0;
	free(flows);
	flows = NULL;
	n_flows = cap_flows = 0;
}

static void addr_str(const struct flow *f, const uint8_t *a, char *buf, size_t len)
{
	inet_ntop(f->v6 ? AF_INET6 : AF_INET, a, buf, len);
}

static void flow_name(const struct flow *f, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	addr_str(f, f->src, s, sizeof(s));
	addr_str(f, f->dst, d, sizeof(d));
	snprintf(buf, len, "%s:%u -> %s QP 0x%06x", s, f->sport, d, f->dqpn);
}

static struct flow *flow_get(const struct dr_pkt *p, uint64_t num, bool rsp)
{
	uint8_t src[16] = {0}, dst[16] = {0};
	uint8_t v6 = p->ip6 != NULL;
	uint16_t sport = ntohs(p->udp->sport);

	if (v6) {
		memcpy(src, p->ip6->saddr, 16);
		memcpy(dst, p->ip6->daddr, 16);
	} else {
		memcpy(src, &p->ip4->saddr, 4);
		memcpy(dst, &p->ip4->daddr, 4);
	}
	for (size_t i = 0; i < n_flows; i++) {
		struct flow *f = &flows[i];
		int32_t d;

		if (f->superseded || f->dqpn != p->dqpn || f->sport != sport || f->v6 != v6 ||
		    f->rsp != rsp || memcmp(f->src, src, 16) || memcmp(f->dst, dst, 16))
			continue;
		d = dr_psn_diff(p->psn, f->next_psn);
		if (d < PSN_EPOCH && d > -PSN_EPOCH)
			return f;
		f->superseded = true; /* a new connection on the same addresses */
		break;
	}
	if (n_flows == cap_flows) {
		size_t nc = cap_flows ? cap_flows * 2 : 16;
		struct flow *nf;

		/* the PSN key holds the flow index in 40 bits: plenty */
		nf = realloc(flows, nc * sizeof(*nf));
		if (!nf) {
			perror("droce-pcapcheck");
			exit(2);
		}
		flows = nf;
		cap_flows = nc;
	}
	memset(&flows[n_flows], 0, sizeof(flows[n_flows]));
	memcpy(flows[n_flows].src, src, 16);
	memcpy(flows[n_flows].dst, dst, 16);
	flows[n_flows].v6 = v6;
	flows[n_flows].rsp = rsp;
	flows[n_flows].sport = sport;
	flows[n_flows].dqpn = p->dqpn;
	flows[n_flows].first_psn = p->psn;
	flows[n_flows].next_psn = p->psn;
	flows[n_flows].first_frame = num;
	if (!rsp)
		tot.flows++;
	return &flows[n_flows++];
}

static void psn_event(struct flow *f, enum psn_event ev, uint64_t num, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void psn_event(struct flow *f, enum psn_event ev, uint64_t num, const char *fmt, ...)
{
	char name[128];
	va_list ap;

	f->ev[ev]++;
	tot.ev[ev]++;
	if (!verbose || quiet || (verbose < 2 && f->ev[ev] > EVENTS_SHOWN))
		return;
	flow_name(f, name, sizeof(name));
	printf("  frame %" PRIu64 ": %s %s: ", num, ev_name[ev], name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (verbose < 2 && f->ev[ev] == EVENTS_SHOWN)
		printf(" (further %s events of this flow not listed; -vv lists all)", ev_name[ev]);
	putchar('\n');
}

/* Count the frames of a go-back-N: cause is what the frame's "retransmit:"
 * note says (its index in notes.causes + 1), 0 when it has none; inbound
 * when the capture marks it received.  droce may annotate only the first
 * packet it resends: the ones that follow it PSN by PSN carry on the same
 * retransmission (after a READ request, up to read_slack PSNs further: its
 * responses' PSNs, which depend on the path MTU).  Called before
 * f->read_slack moves on to this packet. */
static void gbn_track(struct flow *f, const struct dr_pkt *p, bool resent, size_t cause,
		      bool inbound)
{
	int32_t d = dr_psn_diff(p->psn, f->gbn_next);

	if (cause) {
		f->gbn_cause = cause; /* counted when the note was read */
	} else if (!resent) {
		f->gbn_cause = 0;
		return;
	} else if (f->gbn_cause && d >= 0 && (uint32_t)d <= f->read_slack) {
		notes.causes.n[f->gbn_cause - 1]++;
	} else {
		if (inbound)
			notes.peer++;
		else
			notes.unexplained++;
		f->gbn_cause = 0;
		return;
	}
	f->gbn_next = dr_psn_add(p->psn, 1);
}

/* Follow the PSNs of RC request packets, flow by flow; cause as gbn_track(). */
static void psn_track(const struct dr_pkt *p, uint64_t num, size_t cause, bool inbound)
{
	struct flow *f;
	struct psn_slot *s;
	bool fresh;
	int32_t d;

	if (p->opcode >= DR_OP_READ_RSP_FIRST && p->opcode <= DR_OP_READ_RSP_ONLY) {
		f = flow_get(p, num, true);
		s = psn_lookup((((uint64_t)(f - flows) << 24) | p->psn) + 1, &fresh);
		if (!fresh)
			psn_event(f, EV_RSP_RESENT, num, "READ response PSN %u (%s) again",
				  p->psn, dr_opcode_name(p->opcode));
		s->icrc = p->icrc;
		return;
	}
	if (!(p->op->flags & DR_OPF_REQ) || (p->op->flags & DR_OPF_UD))
		return;
	f = flow_get(p, num, false);
	f->requests++;
	tot.rc_requests++;
	s = psn_lookup((((uint64_t)(f - flows) << 24) | p->psn) + 1, &fresh);
	d = dr_psn_diff(p->psn, f->next_psn);
	gbn_track(f, p, !fresh && s->icrc != p->icrc, cause, inbound);
	if (!fresh) {
		if (s->icrc == p->icrc)
			psn_event(f, EV_DUPLICATE, num, "PSN %u (%s) again, byte-identical", p->psn,
				  dr_opcode_name(p->opcode));
		else
			psn_event(f, EV_RETRANSMIT, num, "PSN %u (%s) resent, %d behind the newest",
				  p->psn, dr_opcode_name(p->opcode), -d - 1);
	} else if (d > 0 && (uint32_t)d > f->read_slack) {
		psn_event(f, EV_GAP, num, "PSN %u (%s), expected %u: %d PSN(s) not seen yet",
			  p->psn, dr_opcode_name(p->opcode), f->next_psn, d);
	} else if (d < 0) {
		psn_event(f, EV_LATE, num, "PSN %u (%s) first seen %d behind the newest", p->psn,
			  dr_opcode_name(p->opcode), -d - 1);
	}
	s->icrc = p->icrc;
	if (d >= 0)
		f->next_psn = dr_psn_add(p->psn, 1);
	/* a READ request takes one PSN per response packet (IBA 9.7.1): as
	 * many as its length needs at the smallest path MTU, 256 bytes */
	f->read_slack = 0;
	if (p->opcode == DR_OP_READ_REQ) {
		uint32_t len = ntohl(dr_pkt_reth(p)->len);

		f->read_slack = len > 256 ? (len - 1) / 256 : 0;
	}
}

/* ---- classification ------------------------------------------------------------ */

enum kind { K_ROCE, K_ARP, K_OTHER };

/* Decide what a frame is without trusting it: UDP/4791 over IP is RoCE,
 * whatever else is wrong with it (that is for dr_pkt_parse to say). */
static enum kind classify(const uint8_t *f, size_t len)
{
	size_t off = sizeof(struct dr_eth_hdr);
	uint16_t type;

	if (len < off) {
		tot.other_nonip++;
		return K_OTHER;
	}
	type = (uint16_t)(f[12] << 8 | f[13]);
	if (type == DR_ETH_P_VLAN && len >= off + 4) {
		type = (uint16_t)(f[16] << 8 | f[17]);
		off += 4;
	}
	if (type == ETH_P_ARP)
		return K_ARP;
	if (type == DR_ETH_P_IPV4 && len >= off + 20) {
		const uint8_t *ip = f + off;
		size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
		unsigned frag = (unsigned)(ip[6] << 8 | ip[7]) & DR_IP_OFFMASK;

		if (ip[9] == DR_IPPROTO_UDP && !frag && ihl >= 20 && len >= off + ihl + 4 &&
		    (ip[ihl + 2] << 8 | ip[ihl + 3]) == DR_ROCE_UDP_PORT)
			return K_ROCE;
		if (ip[9] == DR_IPPROTO_UDP) {
			tot.other_udp++;
		} else if (ip[9] == IPPROTO_TCP_) {
			tot.other_tcp++;
		} else if (ip[9] == IPPROTO_ICMP_) {
			const uint8_t *ic = ip + ihl, *in = ic + 8;

			tot.other_icmp++;
			/* type 3 code 3 quoting IPv4 + UDP to 4791 */
			if (ihl >= 20 && len >= off + ihl + 8 + 20 && ic[0] == 3 && ic[1] == 3 &&
			    (in[0] >> 4) == 4 && in[9] == DR_IPPROTO_UDP) {
				size_t iihl = (size_t)(in[0] & 0x0f) * 4;

				if ((size_t)(in - f) + iihl + 4 <= len &&
				    (in[iihl + 2] << 8 | in[iihl + 3]) == DR_ROCE_UDP_PORT)
					tot.icmp_unreach_roce++;
			}
		}
		return K_OTHER;
	}
	if (type == DR_ETH_P_IPV6 && len >= off + 40 + 4) {
		const uint8_t *ip6 = f + off;

		if (ip6[6] == DR_IPPROTO_UDP && (ip6[42] << 8 | ip6[43]) == DR_ROCE_UDP_PORT)
			return K_ROCE;
		tot.other_ipv6++;
		return K_OTHER;
	}
	if (type == DR_ETH_P_IPV6)
		tot.other_ipv6++;
	else
		tot.other_nonip++;
	return K_OTHER;
}

static void print_bad(const char *path, const struct dr_pcapng_pkt *cp, enum dr_pkt_verdict v,
		      const struct dr_pkt *p)
{
	char s[INET6_ADDRSTRLEN] = "?", d[INET6_ADDRSTRLEN] = "?";

	if (quiet && verbose == 0)
		return;
	if (p->ip4) {
		inet_ntop(AF_INET, &p->ip4->saddr, s, sizeof(s));
		inet_ntop(AF_INET, &p->ip4->daddr, d, sizeof(d));
	} else if (p->ip6) {
		inet_ntop(AF_INET6, p->ip6->saddr, s, sizeof(s));
		inet_ntop(AF_INET6, p->ip6->daddr, d, sizeof(d));
	}
	printf("  BAD frame %" PRIu64 " (%s, offset %" PRIu64 ", %u bytes): %s; %s -> %s",
	       cp->number, path, cp->offset, cp->origlen,
	       v == V_TRUNCATED ? "capture truncated the frame (caplen < wire length)"
				: dr_pkt_verdict_str(v),
	       s, d);
	if (p->op)
		printf(" %s QP 0x%06x PSN %u", dr_opcode_name(p->opcode), p->dqpn, p->psn);
	if (v == DR_PKT_BAD_ICRC)
		printf(" ICRC carried 0x%08x computed 0x%08x", p->icrc, dr_pkt_icrc(p));
	putchar('\n');
}

static void count_good(const struct dr_pkt *p, uint64_t num, size_t cause, bool inbound)
{
	tot.opcode[p->opcode]++;
	if (p->hdr[DR_HDR_AETH])
		tot.aeth[dr_aeth_syndrome(dr_pkt_aeth(p))]++;
	if ((p->op->flags & DR_OPF_UD) && p->dqpn == DR_GSI_QPN) {
		struct dr_mad mad;

		if (!dr_mad_parse(p->payload, p->payload_len, &mad) && dr_mad_is_cm(&mad) &&
		    mad.attr_id < sizeof(tot.cm) / sizeof(tot.cm[0]))
			tot.cm[mad.attr_id]++;
		else
			tot.mad_other++;
	}
	psn_track(p, num, cause, inbound);
}

/* ---- UDP GSO super-frames ---------------------------------------------------- */

#define GSO_HDRS    42u	  /* Ethernet 14, IPv4 20 (no options), UDP 8 */
#define GSO_MAX_PKT 4200u /* the largest packet droce sends: path MTU 4096 */

static uint16_t rd16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static void wr16(uint8_t *b, unsigned v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

/* Piece i (size len, at off of the UDP payload) of super-frame f, as the
 * kernel cuts it: f's headers with its lengths, the ID plus i, a fresh IP
 * checksum, no UDP checksum.  Returns its parse verdict into p (the frame
 * in buf, which must hold GSO_HDRS + GSO_MAX_PKT). */
static enum dr_pkt_verdict gso_piece(const uint8_t *f, size_t off, size_t len, unsigned i,
				     uint8_t *buf, struct dr_pkt *p)
{
	uint8_t *ip = buf + 14;
	uint32_t s = 0;

	memcpy(buf, f, GSO_HDRS);
	memcpy(buf + GSO_HDRS, f + GSO_HDRS + off, len);
	wr16(ip + 2, 28 + len);
	wr16(ip + 4, rd16(ip + 4) + i);
	wr16(ip + 10, 0);
	for (unsigned k = 0; k < 20; k += 2)
		s += rd16(ip + k);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	wr16(ip + 10, ~s & 0xffff);
	wr16(ip + 24, 8 + len);
	wr16(ip + 26, 0);
	return dr_pkt_parse(buf, GSO_HDRS + len, 0, p);
}

/* The frame, if it is a super-frame: true once every packet in it has been
 * counted; false (nothing counted) when no packet size cuts it into valid
 * packets.  The size is found by the first packet's ICRC: the sizes that
 * cut the last super-frames first, then every multiple of 4. */
static bool gso_cut(const struct dr_pcapng_pkt *cp, size_t cause, bool inbound)
{
	static uint8_t buf[GSO_HDRS + GSO_MAX_PKT];
	static size_t recent[4];
	const uint8_t *f = cp->data, *ip = f + 14;
	size_t total, len = 0, tries[4 + GSO_MAX_PKT / 4], nt = 0, n, off;
	struct dr_pkt p;

	if (cp->caplen != cp->origlen || cp->caplen <= GSO_HDRS || rd16(f + 12) != 0x0800 ||
	    ip[0] != 0x45 || ip[9] != 17 || (rd16(ip + 6) & 0x3fff) ||
	    rd16(ip + 22) != DR_ROCE_UDP_PORT || cp->caplen != 14u + rd16(ip + 2))
		return false;
	total = cp->caplen - GSO_HDRS;
	for (unsigned i = 0; i < 4; i++)
		if (recent[i])
			tries[nt++] = recent[i];
	for (size_t l = 20; l <= GSO_MAX_PKT; l += 4)
		tries[nt++] = l;
	for (size_t t = 0; t < nt && !len; t++)
		if (tries[t] < total && gso_piece(f, 0, tries[t], 0, buf, &p) == DR_PKT_OK)
			len = tries[t];
	if (!len)
		return false;
	if (recent[0] != len) {
		memmove(recent + 1, recent, sizeof(recent) - sizeof(recent[0]));
		recent[0] = len;
	}
	/* every piece must be a packet: else the whole frame is bad */
	for (off = 0, n = 0; off < total; off += len, n++)
		if (gso_piece(f, off, total - off < len ? total - off : len, (unsigned)n, buf,
			      &p) != DR_PKT_OK)
			return false;
	tot.gso_frames++;
	for (off = 0, n = 0; off < total; off += len, n++) {
		gso_piece(f, off, total - off < len ? total - off : len, (unsigned)n, buf, &p);
		tot.roce++;
		tot.roce_ok++;
		tot.verdict[DR_PKT_OK]++;
		tot.gso_packets++;
		count_good(&p, cp->number, cause, inbound);
	}
	return true;
}

/* s[0..len) with its control characters written as \t, \n, \r or \xNN,
 * so a comment from any writer stays on its line and in its column. */
static char *escape(const char *s, size_t len)
{
	char *e = malloc(len * 4 + 1), *o = e;

	if (!e) {
		perror("droce-pcapcheck");
		exit(2);
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\t' || c == '\n' || c == '\r') {
			*o++ = '\\';
			*o++ = c == '\t' ? 't' : c == '\n' ? 'n' : 'r';
		} else if (c < 0x20 || c == 0x7f) {
			o += sprintf(o, "\\x%02x", c);
		} else {
			*o++ = (char)c;
		}
	}
	*o = '\0';
	return e;
}

/* Count one more s[0..len) in t (escaped); returns its index. */
static size_t tally_add(struct tally *t, const char *s, size_t len)
{
	char *name = escape(s, len);
	size_t i;

	for (i = 0; i < t->len; i++)
		if (!strcmp(t->name[i], name)) {
			free(name);
			t->n[i]++;
			return i;
		}
	if (t->len == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 8;
		char **nn = realloc(t->name, nc * sizeof(*nn));
		uint64_t *nv = nn ? realloc(t->n, nc * sizeof(*nv)) : NULL;

		if (nn)
			t->name = nn;
		if (!nv) {
			perror("droce-pcapcheck");
			exit(2);
		}
		t->n = nv;
		t->cap = nc;
	}
	t->name[i] = name;
	t->n[i] = 1;
	t->len++;
	return i;
}

/* The details of a note from *s (after "keyword:"), up to the first comma
 * and without the spaces around: a retransmit cause, a drop reason. */
static size_t first_item(const char **s, size_t len)
{
	const char *comma;

	while (len && **s == ' ') {
		(*s)++;
		len--;
	}
	comma = memchr(*s, ',', len);
	if (comma)
		len = (size_t)(comma - *s);
	while (len && (*s)[len - 1] == ' ')
		len--;
	return len;
}

/* Read a frame's comments as notes and count them.  Returns true when the
 * frame is marked dropped; *cause is its retransmit cause (index in
 * notes.causes + 1, counted here), 0 for none or a dropped frame. */
static bool read_notes(const struct dr_pcapng_pkt *cp, size_t *cause)
{
	const char *rtx = NULL, *why = NULL;
	size_t rtx_len = 0, why_len = 0;
	bool dropped = cp->has_dropcount && cp->dropcount;

	*cause = 0;
	if (cp->ncomments)
		notes.frames++;
	for (unsigned c = 0; c < cp->ncomments; c++) {
		const char *note = cp->comments[c];

		while (*note) {
			const char *end = strstr(note, "; "), *colon;
			size_t len = end ? (size_t)(end - note) : strlen(note), kw;

			colon = memchr(note, ':', len);
			notes.notes++;
			for (kw = 0; kw < N_KW; kw++)
				if (colon && strlen(note_kw[kw]) == (size_t)(colon - note) &&
				    !memcmp(note, note_kw[kw], (size_t)(colon - note)))
					break;
			if (kw == N_KW) {
				tally_add(&notes.other_kw, colon ? note : "(no keyword)",
					  colon ? (size_t)(colon - note) : strlen("(no keyword)"));
			} else {
				notes.kw[kw]++;
			}
			if (kw == KW_RETRANSMIT && !rtx) {
				rtx = colon + 1;
				rtx_len = first_item(&rtx, len - (size_t)(rtx - note));
			} else if (kw == KW_DROPPED && !why) {
				why = colon + 1;
				why_len = first_item(&why, len - (size_t)(why - note));
				dropped = true;
			}
			note += end ? len + 2 : len;
		}
	}
	if (dropped) {
		notes.dropped++;
		if (!why)
			why = "(no reason given)", why_len = strlen(why);
		tally_add(&notes.drop_reasons, why, why_len);
	} else if (rtx) {
		*cause = tally_add(&notes.causes, rtx, rtx_len) + 1;
	}
	return dropped;
}

/* What a frame is, in one line (for --notes): the RoCE headers droce's
 * parser finds, the ICRC not checked (a frame dropped for it still says
 * what it was). */
static void summarize(const struct dr_pcapng_pkt *cp, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	enum dr_pkt_verdict v;
	struct dr_pkt p;
	struct dr_mad mad;
	size_t n;

	if (cp->linktype != DR_LINKTYPE_ETHERNET) {
		snprintf(buf, len, "link type %u", cp->linktype);
		return;
	}
	if (cp->caplen >= 14 && cp->data[12] == ETH_P_ARP >> 8 &&
	    cp->data[13] == (ETH_P_ARP & 0xff)) {
		snprintf(buf, len, "ARP");
		return;
	}
	v = dr_pkt_parse(cp->data, cp->caplen, DR_PARSE_NO_ICRC, &p);
	if (v != DR_PKT_OK) {
		snprintf(buf, len, "%u bytes, not RoCEv2 to droce's parser: %s", cp->origlen,
			 dr_pkt_verdict_str(v));
		return;
	}
	inet_ntop(p.ip6 ? AF_INET6 : AF_INET, p.ip6 ? (const void *)p.ip6->saddr : &p.ip4->saddr, s,
		  sizeof(s));
	inet_ntop(p.ip6 ? AF_INET6 : AF_INET, p.ip6 ? (const void *)p.ip6->daddr : &p.ip4->daddr, d,
		  sizeof(d));
	n = (size_t)snprintf(buf, len, "%s -> %s %s QP 0x%06x PSN %u", s, d,
			     dr_opcode_name(p.opcode), p.dqpn, p.psn);
	if (n >= len)
		return;
	if (p.hdr[DR_HDR_AETH]) {
		uint8_t syn = dr_aeth_syndrome(dr_pkt_aeth(&p));
		const char *what = syn < 0x20 ? "ACK" : syn < 0x40 ? "RNR_NAK" : "NAK";

		for (unsigned i = 0; i < N_NAK; i++)
			if (nak_names[i].syndrome == syn)
				what = nak_names[i].name;
		snprintf(buf + n, len - n, " %s", what);
	} else if ((p.op->flags & DR_OPF_UD) && p.dqpn == DR_GSI_QPN &&
		   !dr_mad_parse(p.payload, p.payload_len, &mad) && dr_mad_is_cm(&mad)) {
		for (unsigned i = 0; i < N_CM; i++)
			if (cm_names[i].attr == mad.attr_id)
				snprintf(buf + n, len - n, " %s", cm_names[i].name);
	}
}

/* One --notes line: number, time since the first frame, direction,
 * summary, the comments joined by "; " */
static void print_note_line(const struct dr_pcapng_pkt *cp, uint64_t t0_sec, uint32_t t0_nsec)
{
	/* |t - t0| as seconds and nanoseconds: no product that can overflow,
	 * whatever the stamps of a corrupt or odd file */
	bool neg = cp->ts_sec < t0_sec || (cp->ts_sec == t0_sec && cp->ts_nsec < t0_nsec);
	uint64_t hi_s = neg ? t0_sec : cp->ts_sec, lo_s = neg ? cp->ts_sec : t0_sec;
	uint32_t hi_ns = neg ? t0_nsec : cp->ts_nsec, lo_ns = neg ? cp->ts_nsec : t0_nsec;
	uint64_t sec = hi_s - lo_s, nsec;
	char sum[256];

	if (hi_ns < lo_ns) {
		sec--;
		nsec = 1000000000u + hi_ns - lo_ns;
	} else {
		nsec = hi_ns - lo_ns;
	}
	summarize(cp, sum, sizeof(sum));
	printf("%" PRIu64 "\t%s%" PRIu64 ".%09" PRIu64 "\t%s\t%s\t", cp->number, neg ? "-" : "",
	       sec, nsec,
	       (cp->flags & 3) == DR_PCAPNG_FLAG_INBOUND    ? "in"
	       : (cp->flags & 3) == DR_PCAPNG_FLAG_OUTBOUND ? "out"
							    : "-",
	       sum);
	for (unsigned c = 0; c < cp->ncomments; c++) {
		char *e = escape(cp->comments[c], strlen(cp->comments[c]));

		printf("%s%s", c ? "; " : "", e);
		free(e);
	}
	putchar('\n');
}

static int check_file(const char *path)
{
	char err[256];
	struct dr_pcapng *r = dr_pcapng_open(path, err, sizeof(err));
	struct dr_pcapng_pkt cp;
	uint64_t bad_before = tot.roce_bad, t0_sec = 0;
	uint32_t t0_nsec = 0;
	int rc;

	if (!r) {
		fprintf(stderr, "droce-pcapcheck: %s\n", err);
		return 2;
	}
	psn_reset();
	if (list_notes)
		printf("annotated frames (number, time, direction, summary, comment; "
		       "tab-separated):\n");
	while ((rc = dr_pcapng_next(r, &cp)) == 1) {
		struct dr_pkt p;
		enum dr_pkt_verdict v;
		size_t cause;

		tot.frames++;
		if (cp.number == 1) {
			t0_sec = cp.ts_sec;
			t0_nsec = cp.ts_nsec;
		}
		if (list_notes && cp.ncomments)
			print_note_line(&cp, t0_sec, t0_nsec);
		if (read_notes(&cp, &cause))
			continue; /* never reached droce's engine */
		if (cp.linktype != DR_LINKTYPE_ETHERNET) {
			tot.other++;
			tot.other_nonether++;
			continue;
		}
		switch (classify(cp.data, cp.caplen)) {
		case K_ARP:
			tot.arp++;
			continue;
		case K_OTHER:
			tot.other++;
			continue;
		case K_ROCE:
			break;
		}
		v = dr_pkt_parse(cp.data, cp.caplen, 0, &p);
		if (v != DR_PKT_OK && gso_cut(&cp, cause, (cp.flags & 3) == DR_PCAPNG_FLAG_INBOUND))
			continue;
		tot.roce++;
		if (cp.caplen < cp.origlen)
			v = V_TRUNCATED;
		tot.verdict[v]++;
		if (v == DR_PKT_OK) {
			tot.roce_ok++;
			count_good(&p, cp.number, cause, (cp.flags & 3) == DR_PCAPNG_FLAG_INBOUND);
			continue;
		}
		tot.roce_bad++;
		if (v == DR_PKT_BAD_ICRC)
			(void)dr_pkt_parse(cp.data, cp.caplen, DR_PARSE_NO_ICRC, &p);
		print_bad(path, &cp, v, &p);
	}
	if (rc < 0) {
		fprintf(stderr, "droce-pcapcheck: %s\n", dr_pcapng_strerror(r));
		dr_pcapng_close(r);
		return 2;
	}
	dr_pcapng_close(r);
	if (verbose && !quiet)
		for (size_t i = 0; i < n_flows; i++) {
			char name[128];

			flow_name(&flows[i], name, sizeof(name));
			if (flows[i].rsp) {
				printf("  READ responses %s from frame %" PRIu64 " PSN %u: %" PRIu64
				       " resent\n",
				       name, flows[i].first_frame, flows[i].first_psn,
				       flows[i].ev[EV_RSP_RESENT]);
				continue;
			}
			printf("  flow %s from frame %" PRIu64 " PSN %u: %" PRIu64
			       " request packets, %" PRIu64 " retransmitted, %" PRIu64
			       " duplicated, %" PRIu64 " PSN gaps, %" PRIu64 " late\n",
			       name, flows[i].first_frame, flows[i].first_psn, flows[i].requests,
			       flows[i].ev[EV_RETRANSMIT], flows[i].ev[EV_DUPLICATE],
			       flows[i].ev[EV_GAP], flows[i].ev[EV_LATE]);
		}
	psn_reset();
	return tot.roce_bad > bad_before;
}

/* ---- report ------------------------------------------------------------------ */

/* A tally's lines in alphabetical order, so they do not depend on which
 * came first (it is sorted in place: only once nothing is counted). */
static void tally_print(struct tally *t)
{
	for (size_t i = 1; i < t->len; i++)
		for (size_t j = i; j && strcmp(t->name[j - 1], t->name[j]) > 0; j--) {
			char *name = t->name[j];
			uint64_t n = t->n[j];

			t->name[j] = t->name[j - 1];
			t->n[j] = t->n[j - 1];
			t->name[j - 1] = name;
			t->n[j - 1] = n;
		}
	for (size_t i = 0; i < t->len; i++)
		printf("  %-44s %10" PRIu64 "\n", t->name[i], t->n[i]);
}

/* The lines after the counts of the frames: what the comments say.  Always
 * these three headers, each "name: N" followed by "  NAME  COUNT" lines. */
static void report_notes(void)
{
	uint64_t rtx = notes.peer + notes.unexplained;

	for (size_t i = 0; i < notes.causes.len; i++)
		rtx += notes.causes.n[i];
	printf("retransmissions by cause: %" PRIu64 "\n", rtx);
	tally_print(&notes.causes);
	if (notes.peer)
		printf("  %-44s %10" PRIu64 "\n", "resent by the peer", notes.peer);
	if (notes.unexplained)
		printf("  %-44s %10" PRIu64 "\n", "unexplained", notes.unexplained);
	printf("notes: %" PRIu64 " on %" PRIu64 " frame(s)\n", notes.notes, notes.frames);
	for (size_t i = 0; i < N_KW; i++)
		if (notes.kw[i])
			printf("  %-44s %10" PRIu64 "\n", note_kw[i], notes.kw[i]);
	tally_print(&notes.other_kw);
	printf("dropped by droce: %" PRIu64 " frame(s)\n", notes.dropped);
	tally_print(&notes.drop_reasons);
}

static void report(void)
{
	printf("frames: %" PRIu64 "  RoCEv2 (UDP/4791): %" PRIu64 " (ok %" PRIu64 ", bad %" PRIu64
	       ")  ARP: %" PRIu64 "  other: %" PRIu64 "\n",
	       tot.frames, tot.roce, tot.roce_ok, tot.roce_bad, tot.arp, tot.other);
	if (tot.other)
		printf("  other: TCP %" PRIu64 ", UDP %" PRIu64 ", ICMP %" PRIu64
		       " (port unreachable for UDP/4791: %" PRIu64 "), IPv6 %" PRIu64
		       ", non-IP %" PRIu64 ", non-Ethernet %" PRIu64 "\n",
		       tot.other_tcp, tot.other_udp, tot.other_icmp, tot.icmp_unreach_roce,
		       tot.other_ipv6, tot.other_nonip, tot.other_nonether);
	if (tot.gso_frames)
		printf("UDP GSO super-frames: %" PRIu64 " carrying %" PRIu64
		       " RoCEv2 packets (counted "
		       "above and below one by one)\n",
		       tot.gso_frames, tot.gso_packets);
	if (!tot.roce) {
		printf("no RoCE frames\n");
		report_notes();
		return;
	}
	printf("by verdict:\n");
	for (unsigned v = 0; v <= DR_PKT_VERDICT_NUM; v++)
		if (tot.verdict[v])
			printf("  %-44s %10" PRIu64 "\n",
			       v == V_TRUNCATED ? "truncated by the capture"
						: dr_pkt_verdict_str(v),
			       tot.verdict[v]);
	printf("by opcode:\n");
	for (unsigned op = 0; op < 256; op++)
		if (tot.opcode[op])
			printf("  0x%02x %-39s %10" PRIu64 "\n", op, dr_opcode_name(op),
			       tot.opcode[op]);
	if (tot.opcode[DR_OP_UD_SEND_ONLY] || tot.opcode[DR_OP_UD_SEND_ONLY_IMM]) {
		printf("QP1 MADs:\n");
		for (unsigned i = 0; i < N_CM; i++)
			if (tot.cm[cm_names[i].attr])
				printf("  %-8s %-35s %10" PRIu64 "\n", cm_names[i].name,
				       cm_names[i].ws_name, tot.cm[cm_names[i].attr]);
		if (tot.mad_other)
			printf("  %-44s %10" PRIu64 "\n", "not a CM MAD", tot.mad_other);
	}
	if (count_acks() + count_rnr() + count_naks()) {
		printf("AETH syndromes:\n");
		printf("  %-44s %10" PRIu64 "\n", "ACK", count_acks());
		if (count_rnr())
			printf("  %-44s %10" PRIu64 "\n", "RNR_NAK", count_rnr());
		for (unsigned i = 0; i < N_NAK; i++)
			if (tot.aeth[nak_names[i].syndrome])
				printf("  %-44s %10" PRIu64 "\n", nak_names[i].name,
				       tot.aeth[nak_names[i].syndrome]);
		if (count_naks() > aeth_class(0x60, 0x64))
			printf("  %-44s %10" PRIu64 "\n", "NAK (reserved code)",
			       count_naks() - aeth_class(0x60, 0x64));
		if (aeth_class(0x40, 0x5f) + aeth_class(0x80, 0xff))
			printf("  %-44s %10" PRIu64 "\n", "reserved syndrome",
			       aeth_class(0x40, 0x5f) + aeth_class(0x80, 0xff));
	}
	printf("RC request PSNs: %" PRIu64 " packets in %" PRIu64 " flow(s); RETRANSMIT %" PRIu64
	       ", DUPLICATE %" PRIu64 ", PSN_GAP %" PRIu64 ", PSN_LATE %" PRIu64
	       "; READ responses resent %" PRIu64 "\n",
	       tot.rc_requests, tot.flows, tot.ev[EV_RETRANSMIT], tot.ev[EV_DUPLICATE],
	       tot.ev[EV_GAP], tot.ev[EV_LATE], tot.ev[EV_RSP_RESENT]);
	report_notes();
}

struct cond {
	char name[64];
	uint64_t min; /* --require: at least min; --forbid: min = 0 means "must be 0" */
	bool forbid;
};

static struct cond conds[256];
static unsigned n_conds;

static int add_conds(const char *list, bool forbid)
{
	char *dup = strdup(list), *save = NULL;
	uint64_t dummy;

	if (!dup)
		return -1;
	for (char *t = strtok_r(dup, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		char *colon = strchr(t, ':');
		struct cond *c;

		if (n_conds == sizeof(conds) / sizeof(conds[0])) {
			fprintf(stderr, "droce-pcapcheck: too many conditions\n");
			free(dup);
			return -1;
		}
		c = &conds[n_conds];
		c->forbid = forbid;
		c->min = 1;
		if (colon) {
			char *end;

			*colon = '\0';
			errno = 0;
			c->min = strtoull(colon + 1, &end, 10);
			if (errno || *end || end == colon + 1 || forbid) {
				fprintf(stderr, "droce-pcapcheck: bad count in '%s:%s'\n", t,
					colon + 1);
				free(dup);
				return -1;
			}
		}
		if (!counter_get(t, &dummy) || strlen(t) >= sizeof(c->name)) {
			fprintf(stderr,
				"droce-pcapcheck: unknown counter '%s' (--list-names lists them)\n",
				t);
			free(dup);
			return -1;
		}
		strcpy(c->name, t);
		n_conds++;
	}
	free(dup);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: droce-pcapcheck [-v|-vv] [-q] [--require NAME[:N],...] "
		   "[--forbid NAME,...] [--min-roce N] [--notes] [--list-names] FILE.pcapng...\n"
		   "Checks every UDP/4791 frame with droce's parser (ICRC included) and counts "
		   "frames by opcode,\nCM message, AETH syndrome and verdict, retransmissions by "
		   "cause and droce's notes\n(capture comments); --notes lists the annotated "
		   "frames.  Exit 0 pass, 1 check failed,\n2 usage or file error.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"verbose", no_argument, NULL, 'v'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"require", required_argument, NULL, 'r'},
	    {"forbid", required_argument, NULL, 'f'},
	    {"min-roce", required_argument, NULL, 'm'},
	    {"list-names", no_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},
	    {"notes", no_argument, NULL, 'n'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t min_roce = 1;
	int c, fail = 0;

	while ((c = getopt_long(argc, argv, "vqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			verbose++;
			break;
		case 'q':
			quiet = true;
			break;
		case 'r':
		case 'f':
			if (add_conds(optarg, c == 'f'))
				return 2;
			break;
		case 'm': {
			char *end;

			errno = 0;
			min_roce = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg) {
				fprintf(stderr, "droce-pcapcheck: bad --min-roce '%s'\n", optarg);
				return 2;
			}
			break;
		}
		case 'l':
			list_names();
			return 0;
		case 'n':
			list_notes = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		int rc;

		if (!quiet)
			printf("%s:\n", argv[i]);
		rc = check_file(argv[i]);
		if (rc == 2)
			return 2;
	}
	if (!quiet)
		report();

	if (tot.roce_bad) {
		printf("FAIL: %" PRIu64 " bad RoCE frame(s)%s\n", tot.roce_bad,
		       verbose ? "" : " (-v lists them)");
		fail = 1;
	}
	if (tot.roce < min_roce) {
		printf("FAIL: %" PRIu64 " RoCE frame(s), at least %" PRIu64 " required\n", tot.roce,
		       min_roce);
		fail = 1;
	}
	for (unsigned i = 0; i < n_conds; i++) {
		uint64_t v = 0;

		(void)counter_get(conds[i].name, &v);
		if (conds[i].forbid && v) {
			printf("FAIL: %s: %" PRIu64 ", forbidden\n", conds[i].name, v);
			fail = 1;
		} else if (!conds[i].forbid && v < conds[i].min) {
			printf("FAIL: %s: %" PRIu64 ", at least %" PRIu64 " required\n",
			       conds[i].name, v, conds[i].min);
			fail = 1;
		}
	}
	if (!fail && !quiet)
		printf("PASS: every RoCE frame parses with a valid ICRC%s\n",
		       n_conds ? "; every --require/--forbid holds" : "");
	return fail;
}
