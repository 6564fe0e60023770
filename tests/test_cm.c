// SPDX-License-Identifier: BSD-2-Clause
/*
 * IB CM MAD codec against the real rdma_rxe connection setups in
 * tests/golden: every CM MAD unpacks and packs back byte for byte, and the
 * fields of the rping handshake read as Wireshark shows them (values below
 * from `tshark -V` on tests/golden/rxe-rping.pcapng, frames 21-23, 84, 85,
 * and rxe-host-cm_reject-client.pcapng).
 */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "dr_roce.h"
#include "../tools/pcapng.h"
#include "ck_run.h"

static const char *golden_dir(void)
{
	static char dir[4096];
	const char *top = getenv("top_srcdir");

	snprintf(dir, sizeof(dir), "%s/tests/golden", top ? top : ".");
	return dir;
}

/* Calls fn for every CM MAD of a capture (1-based frame numbers). */
static int for_each_mad(const char *file, void (*fn)(uint64_t no, const struct dr_pkt *pkt,
						     const struct dr_mad *mad, void *arg),
			void *arg)
{
	char path[4200], err[256];
	struct dr_pcapng_pkt cp;
	struct dr_pcapng *r;
	int n = 0, ret;

	snprintf(path, sizeof(path), "%s/%s", golden_dir(), file);
	r = dr_pcapng_open(path, err, sizeof(err));
	ck_assert_msg(r, "%s", err);
	while ((ret = dr_pcapng_next(r, &cp)) == 1) {
		struct dr_pkt pkt;
		struct dr_mad mad;

		if (dr_pkt_parse(cp.data, cp.caplen, 0, &pkt) != DR_PKT_OK ||
		    pkt.opcode != DR_OP_UD_SEND_ONLY || pkt.dqpn != DR_GSI_QPN)
			continue;
		ck_assert_int_eq(dr_deth_qkey(dr_pkt_deth(&pkt)), DR_GSI_QKEY);
		ck_assert_int_eq(dr_deth_sqp(dr_pkt_deth(&pkt)), DR_GSI_QPN);
		ck_assert_int_eq(dr_mad_parse(pkt.payload, pkt.payload_len, &mad), 0);
		ck_assert(dr_mad_is_cm(&mad));
		fn(cp.number, &pkt, &mad, arg);
		n++;
	}
	ck_assert_msg(ret == 0, "%s", dr_pcapng_strerror(r));
	dr_pcapng_close(r);
	return n;
}

/* unpack + pack of the body, and build of the whole MAD, are lossless */
static void check_roundtrip(uint64_t no, const struct dr_pkt *pkt, const struct dr_mad *mad,
			    void *arg)
{
	uint8_t body[DR_MAD_BODY_LEN], whole[DR_MAD_LEN];
	int *counts = arg;

	memset(body, 0xa5, sizeof(body));
	switch (mad->attr_id) {
#define CASE(ATTR, type)                                     \
	case ATTR: {                                         \
		struct dr_cm_##type m;                       \
		dr_cm_##type##_unpack(mad->body, &m);        \
		dr_cm_##type##_pack(&m, body);               \
		break;                                       \
	}
		CASE(DR_CM_ATTR_REQ, req)
		CASE(DR_CM_ATTR_REP, rep)
		CASE(DR_CM_ATTR_RTU, rtu)
		CASE(DR_CM_ATTR_REJ, rej)
		CASE(DR_CM_ATTR_DREQ, dreq)
		CASE(DR_CM_ATTR_DREP, drep)
		CASE(DR_CM_ATTR_MRA, mra)
#undef CASE
	default:
		ck_abort_msg("frame %lu: unexpected CM attribute 0x%04x", (unsigned long)no,
			     mad->attr_id);
	}
	ck_assert_msg(!memcmp(body, mad->body, sizeof(body)), "frame %lu attr 0x%04x repacks differently",
		      (unsigned long)no, mad->attr_id);
	dr_mad_build(mad, whole);
	ck_assert(!memcmp(whole, pkt->payload, DR_MAD_LEN));
	counts[mad->attr_id & 0xf]++;
}

/* CM MADs per capture, by attribute (counted with tshark, see header) */
static const struct {
	const char *file;
	int req, rej, rep, rtu, dreq, drep;
} golden_cm[] = {
	{ "rxe-rping.pcapng", 1, 0, 1, 1, 1, 1 },
	{ "rxe-ucmatose.pcapng", 1, 0, 1, 1, 1, 1 },
	{ "rxe-fi_pingpong_verbs.pcapng", 1, 0, 1, 1, 1, 1 },
	{ "rxe-write_bw_cm.pcapng", 2, 0, 2, 2, 2, 2 },
	{ "rxe-host-cm_reject-client.pcapng", 1, 1, 0, 0, 0, 0 },
	{ "rxe-host-rping-client-nft.pcapng", 4, 1, 0, 0, 0, 0 },
	{ "rxe-rc_pingpong.pcapng", 0, 0, 0, 0, 0, 0 },
	{ "rxe-write_bw.pcapng", 0, 0, 0, 0, 0, 0 },
};

START_TEST(test_golden_roundtrip)
{
	int counts[16] = { 0 };
	int n = for_each_mad(golden_cm[_i].file, check_roundtrip, counts);

	ck_assert_int_eq(counts[DR_CM_ATTR_REQ & 0xf], golden_cm[_i].req);
	ck_assert_int_eq(counts[DR_CM_ATTR_REJ & 0xf], golden_cm[_i].rej);
	ck_assert_int_eq(counts[DR_CM_ATTR_REP & 0xf], golden_cm[_i].rep);
	ck_assert_int_eq(counts[DR_CM_ATTR_RTU & 0xf], golden_cm[_i].rtu);
	ck_assert_int_eq(counts[DR_CM_ATTR_DREQ & 0xf], golden_cm[_i].dreq);
	ck_assert_int_eq(counts[DR_CM_ATTR_DREP & 0xf], golden_cm[_i].drep);
	ck_assert_int_eq(n, golden_cm[_i].req + golden_cm[_i].rej + golden_cm[_i].rep +
				    golden_cm[_i].rtu + golden_cm[_i].dreq + golden_cm[_i].drep);
}
END_TEST

/* Expected field values, checked by check_fields: a member of a CM
 * message struct (by offset and width) and its value. */
struct field_eq {
	const char *what;
	size_t off, size;
	uint64_t value;
};
/* clang-format off */
#define F(type, member, v) { #member, offsetof(struct type, member), sizeof(((struct type *)0)->member), v }
/* clang-format on */

static uint64_t get_member(const void *base, size_t size)
{
	switch (size) {
	case 1:
		return *(const uint8_t *)base;
	case 2:
		return *(const uint16_t *)base;
	case 4:
		return *(const uint32_t *)base;
	default:
		return *(const uint64_t *)base;
	}
}

static void check_fields(uint64_t no, const void *m, const struct field_eq *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = get_member((const uint8_t *)m + f[i].off, f[i].size);

		ck_assert_msg(v == f[i].value, "frame %lu: %s is 0x%llx, not 0x%llx",
			      (unsigned long)no, f[i].what, (unsigned long long)v,
			      (unsigned long long)f[i].value);
	}
}

/* clang-format off */
static const struct field_eq rping_req[] = {
	F(dr_cm_req, local_comm_id, 0x6fcdc0ce),
	F(dr_cm_req, service_id, DR_CM_SID_TCP_PS + 0x1c06),
	F(dr_cm_req, local_ca_guid, 0x505400fffe77000cull),
	F(dr_cm_req, local_qkey, 0),
	F(dr_cm_req, local_qpn, 0x11),
	F(dr_cm_req, responder_resources, 1),
	F(dr_cm_req, initiator_depth, 1),
	F(dr_cm_req, remote_cm_resp_timeout, 0x14),
	F(dr_cm_req, transport_type, 0),
	F(dr_cm_req, starting_psn, 0xd202c3),
	F(dr_cm_req, local_cm_resp_timeout, 0x14),
	F(dr_cm_req, retry_count, 7),
	F(dr_cm_req, pkey, 0xffff),
	F(dr_cm_req, path_mtu, 3), /* IB_MTU_1024 */
	F(dr_cm_req, rnr_retry_count, 7),
	F(dr_cm_req, max_cm_retries, 15),
	F(dr_cm_req, primary.local_lid, 0xffff),
	F(dr_cm_req, primary.remote_lid, 0xffff),
}, rping_req_path[] = {
	F(dr_cm_req, primary.hop_limit, 0x40),
	F(dr_cm_req, primary.local_ack_timeout, 0x13),
	F(dr_cm_req, alternate.local_lid, 0),
}, rping_cma[] = {
	F(dr_cma_hdr, cma_version, 0),
	F(dr_cma_hdr, ip_version, 4),
	F(dr_cma_hdr, src_port, 0x833f),
	F(dr_cma_hdr, src_addr[15], 12),
	F(dr_cma_hdr, dst_addr[15], 11),
}, rping_rep[] = {
	F(dr_cm_rep, local_comm_id, 0x6965d408),
	F(dr_cm_rep, remote_comm_id, 0x6fcdc0ce),
	F(dr_cm_rep, local_qpn, 0x11),
	F(dr_cm_rep, starting_psn, 0x9d6578),
	F(dr_cm_rep, responder_resources, 1),
	F(dr_cm_rep, initiator_depth, 1),
	F(dr_cm_rep, target_ack_delay, 0x0f),
	F(dr_cm_rep, rnr_retry_count, 7),
	F(dr_cm_rep, local_ca_guid, 0x505400fffe77000bull),
}, rping_rtu[] = {
	F(dr_cm_rtu, local_comm_id, 0x6fcdc0ce),
	F(dr_cm_rtu, remote_comm_id, 0x6965d408),
}, rping_dreq[] = {
	F(dr_cm_dreq, local_comm_id, 0x6fcdc0ce),
	F(dr_cm_dreq, remote_comm_id, 0x6965d408),
	F(dr_cm_dreq, remote_qpn, 0x11),
}, rping_drep[] = {
	F(dr_cm_drep, local_comm_id, 0x6965d408),
	F(dr_cm_drep, remote_comm_id, 0x6fcdc0ce),
};
/* clang-format on */

#define FIELDS(t) t, sizeof(t) / sizeof(t[0])
/* the rping handshake: frame, CM attribute, the fields of its body */
static const struct {
	uint64_t no;
	uint16_t attr;
	const struct field_eq *fields;
	size_t n;
} rping_mads[] = {
    {21, DR_CM_ATTR_REQ, FIELDS(rping_req)},   {22, DR_CM_ATTR_REP, FIELDS(rping_rep)},
    {23, DR_CM_ATTR_RTU, FIELDS(rping_rtu)},   {84, DR_CM_ATTR_DREQ, FIELDS(rping_dreq)},
    {85, DR_CM_ATTR_DREP, FIELDS(rping_drep)},
};

union cm_msg {
	struct dr_cm_req req;
	struct dr_cm_rep rep;
	struct dr_cm_rtu rtu;
	struct dr_cm_dreq dreq;
	struct dr_cm_drep drep;
};

static void check_rping(uint64_t no, const struct dr_pkt *pkt, const struct dr_mad *mad,
			void *arg)
{
	union cm_msg m;
	unsigned i = 0;
	uint32_t ip;

	ck_assert_uint_eq(mad->tid, 0x00000002cec0cd6full);
	ck_assert_int_eq(mad->method, DR_MAD_METHOD_SEND);
	while (i < sizeof(rping_mads) / sizeof(rping_mads[0]) && rping_mads[i].no != no)
		i++;
	ck_assert_msg(i < sizeof(rping_mads) / sizeof(rping_mads[0]),
		      "unexpected CM MAD in frame %lu", (unsigned long)no);
	ck_assert_int_eq(mad->attr_id, rping_mads[i].attr);
	switch (mad->attr_id) {
	case DR_CM_ATTR_REQ:
		dr_cm_req_unpack(mad->body, &m.req);
		break;
	case DR_CM_ATTR_REP:
		dr_cm_rep_unpack(mad->body, &m.rep);
		break;
	case DR_CM_ATTR_RTU:
		dr_cm_rtu_unpack(mad->body, &m.rtu);
		break;
	case DR_CM_ATTR_DREQ:
		dr_cm_dreq_unpack(mad->body, &m.dreq);
		break;
	default:
		dr_cm_drep_unpack(mad->body, &m.drep);
		break;
	}
	check_fields(no, &m, rping_mads[i].fields, rping_mads[i].n);
	if (mad->attr_id == DR_CM_ATTR_REQ) {
		struct dr_cma_hdr cma;

		ck_assert(dr_gid_to_ipv4(m.req.primary.local_gid, &ip));
		ck_assert_uint_eq(ip, 0xc0a84d0c); /* 192.168.77.12 */
		ck_assert(dr_gid_to_ipv4(m.req.primary.remote_gid, &ip));
		ck_assert_uint_eq(ip, 0xc0a84d0b);
		check_fields(no, &m, FIELDS(rping_req_path));
		dr_cma_hdr_unpack(m.req.private_data, &cma);
		check_fields(no, &cma, FIELDS(rping_cma));
	}
}

START_TEST(test_rping_fields)
{
	ck_assert_int_eq(for_each_mad("rxe-rping.pcapng", check_rping, NULL), 5);
}
END_TEST

/* clang-format off */
static const struct field_eq reject_rej[] = {
	F(dr_cm_rej, local_comm_id, 0x0d0ce000),
	F(dr_cm_rej, remote_comm_id, 0xb86a86b7),
	F(dr_cm_rej, msg_rejected, 0),
	F(dr_cm_rej, reject_info_len, 0),
	F(dr_cm_rej, reason, DR_CM_REJ_CONSUMER_DEFINED),
};
/* clang-format on */
#undef F

static void check_rej(uint64_t no, const struct dr_pkt *pkt, const struct dr_mad *mad, void *arg)
{
	struct dr_cm_rej rej;

	if (mad->attr_id != DR_CM_ATTR_REJ)
		return;
	dr_cm_rej_unpack(mad->body, &rej);
	check_fields(no, &rej, FIELDS(reject_rej));
	(*(int *)arg)++;
}

START_TEST(test_rej_fields)
{
	int rejs = 0;

	for_each_mad("rxe-host-cm_reject-client.pcapng", check_rej, &rejs);
	ck_assert_int_eq(rejs, 1);
}
END_TEST

/* Every field lands at its IBA position: set one field to all ones in an
 * otherwise zero REQ and look at the bytes (IBA 12.6.5 table 99). */
#define M(member) offsetof(struct dr_cm_req, member), sizeof(((struct dr_cm_req *)0)->member)
static const struct {
	const char *what;
	size_t off, size; /* the struct member */
	uint64_t value;	  /* all ones for its width */
	unsigned byte;	  /* where its bits land in the body */
	uint8_t expect[4];
	unsigned len;
} req_bits[] = {
    {"vendor_id", M(vendor_id), 0xffffff, 4, {0x00, 0xff, 0xff, 0xff}, 4},
    {"local_qpn", M(local_qpn), 0xffffff, 32, {0xff, 0xff, 0xff, 0x00}, 4},
    {"responder_resources", M(responder_resources), 0xff, 35, {0xff, 0x00}, 2},
    {"remote_cm_resp_timeout", M(remote_cm_resp_timeout), 0x1f, 43, {0xf8}, 1},
    {"transport_type", M(transport_type), 3, 43, {0x06}, 1},
    {"e2e_flow_ctrl", M(e2e_flow_ctrl), 1, 43, {0x01}, 1},
    {"starting_psn", M(starting_psn), 0xffffff, 44, {0xff, 0xff, 0xff, 0x00}, 4},
    {"local_cm_resp_timeout", M(local_cm_resp_timeout), 0x1f, 47, {0xf8}, 1},
    {"retry_count", M(retry_count), 7, 47, {0x07}, 1},
    {"pkey", M(pkey), 0xffff, 48, {0xff, 0xff, 0x00}, 3},
    {"path_mtu", M(path_mtu), 0xf, 50, {0xf0}, 1},
    {"rdc_exists", M(rdc_exists), 1, 50, {0x08}, 1},
    {"rnr_retry_count", M(rnr_retry_count), 7, 50, {0x07}, 1},
    {"max_cm_retries", M(max_cm_retries), 0xf, 51, {0xf0}, 1},
    {"srq", M(srq), 1, 51, {0x08}, 1},
    {"primary.local_lid", M(primary.local_lid), 0xffff, 52, {0xff, 0xff, 0x00}, 3},
    {"primary.flow_label", M(primary.flow_label), 0xfffff, 88, {0xff, 0xff, 0xf0, 0x00}, 4},
    {"primary.packet_rate", M(primary.packet_rate), 0x3f, 91, {0x3f}, 1},
    {"primary.traffic_class", M(primary.traffic_class), 0xff, 92, {0xff, 0x00}, 2},
    {"primary.hop_limit", M(primary.hop_limit), 0xff, 93, {0xff, 0x00}, 2},
    {"primary.sl", M(primary.sl), 0xf, 94, {0xf0}, 1},
    {"primary.subnet_local", M(primary.subnet_local), 1, 94, {0x08}, 1},
    {"primary.local_ack_timeout", M(primary.local_ack_timeout), 0x1f, 95, {0xf8}, 1},
    {"alternate.local_lid", M(alternate.local_lid), 0xffff, 96, {0xff, 0xff, 0x00}, 3},
    {"alternate.local_ack_timeout", M(alternate.local_ack_timeout), 0x1f, 139, {0xf8}, 1},
};
#undef M

static void set_member(void *base, size_t size, uint64_t v)
{
	switch (size) {
	case 1: *(uint8_t *)base = (uint8_t)v; break;
	case 2: *(uint16_t *)base = (uint16_t)v; break;
	case 4: *(uint32_t *)base = (uint32_t)v; break;
	default: *(uint64_t *)base = v; break;
	}
}

START_TEST(test_req_field_positions)
{
	uint8_t body[DR_MAD_BODY_LEN];
	struct dr_cm_req req, back;
	unsigned nonzero = 0;

	memset(&req, 0, sizeof(req));
	set_member((uint8_t *)&req + req_bits[_i].off, req_bits[_i].size, req_bits[_i].value);
	dr_cm_req_pack(&req, body);
	ck_assert_msg(!memcmp(body + req_bits[_i].byte, req_bits[_i].expect, req_bits[_i].len),
		      "%s", req_bits[_i].what);
	for (unsigned i = 0; i < sizeof(body); i++)
		nonzero += body[i] != 0;
	for (unsigned i = 0; i < req_bits[_i].len; i++)
		nonzero -= req_bits[_i].expect[i] != 0;
	ck_assert_msg(nonzero == 0, "%s spills outside its field", req_bits[_i].what);
	memset(&back, 0, sizeof(back));
	dr_cm_req_unpack(body, &back);
	ck_assert(!memcmp(&back, &req, sizeof(req)));
}
END_TEST

START_TEST(test_mad_header)
{
	struct dr_mad mad, back;
	uint8_t buf[DR_MAD_LEN];
	static const uint8_t hdr[24] = { 1, 7, 2, 3, 0, 0, 0, 0, 0x11, 0x22, 0x33, 0x44,
					 0x55, 0x66, 0x77, 0x88, 0x00, 0x10, 0, 0, 0, 0, 0, 0 };

	dr_mad_init_cm(&mad, DR_CM_ATTR_REQ, 0x1122334455667788ull);
	dr_mad_build(&mad, buf);
	ck_assert(!memcmp(buf, hdr, sizeof(hdr)));
	ck_assert_int_eq(dr_mad_parse(buf, sizeof(buf), &back), 0);
	ck_assert(dr_mad_is_cm(&back));
	ck_assert_uint_eq(back.tid, 0x1122334455667788ull);
	ck_assert_int_eq(dr_mad_parse(buf, sizeof(buf) - 1, &back), -EINVAL);
	ck_assert_int_eq(dr_mad_parse(buf, sizeof(buf) + 1, &back), -EINVAL);
	buf[1] = 0x81; /* not the CM class */
	ck_assert_int_eq(dr_mad_parse(buf, sizeof(buf), &back), 0);
	ck_assert(!dr_mad_is_cm(&back));
}
END_TEST

START_TEST(test_gid_ipv4)
{
	uint8_t gid[16];
	uint32_t ip;

	dr_gid_from_ipv4(gid, 0xc0000201);
	ck_assert(dr_gid_to_ipv4(gid, &ip));
	ck_assert_uint_eq(ip, 0xc0000201);
	ck_assert_uint_eq(gid[10], 0xff);
	gid[0] = 0xfe; /* a link-local GID is not IPv4-mapped */
	ck_assert(!dr_gid_to_ipv4(gid, &ip));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cm_mad");
	TCase *tc = tcase_create("cm");

	tcase_add_loop_test(tc, test_golden_roundtrip, 0, sizeof(golden_cm) / sizeof(golden_cm[0]));
	tcase_add_test(tc, test_rping_fields);
	tcase_add_test(tc, test_rej_fields);
	tcase_add_loop_test(tc, test_req_field_positions, 0, sizeof(req_bits) / sizeof(req_bits[0]));
	tcase_add_test(tc, test_mad_header);
	tcase_add_test(tc, test_gid_ipv4);
	suite_add_tcase(s, tc);
	return ck_run(s, false);
}
