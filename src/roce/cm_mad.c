// SPDX-License-Identifier: BSD-2-Clause
/*
 * IB CM management datagrams: the MAD common header (IBA 13.4.3) and the
 * connection-management message bodies (IBA 12.6, tables 99-110; the same
 * layouts as include/rdma/ibta_vol1_c12.h).  IBA numbers bits from the most
 * significant bit of each byte; every field below is (byte, bit, width)
 * within the 232-byte body, listed once in a table per message that both the
 * packer and the unpacker walk.  Reserved bits are written as zero.
 */
#include <errno.h>

#include "dr_roce.h"

/* width bits starting at bit (0 = MSB) of body[byte], big-endian */
static uint64_t get_bits(const uint8_t *b, unsigned byte, unsigned bit, unsigned width)
{
	unsigned nbytes = (bit + width + 7) / 8;
	uint64_t v = 0;

	for (unsigned i = 0; i < nbytes; i++)
		v = v << 8 | b[byte + i];
	v >>= nbytes * 8 - bit - width;
	return width == 64 ? v : v & ((1ull << width) - 1);
}

static void put_bits(uint8_t *b, unsigned byte, unsigned bit, unsigned width, uint64_t val)
{
	unsigned nbytes = (bit + width + 7) / 8;
	unsigned shift = nbytes * 8 - bit - width;
	uint64_t mask = (width == 64 ? ~0ull : (1ull << width) - 1) << shift;
	uint64_t v = 0;

	for (unsigned i = 0; i < nbytes; i++)
		v = v << 8 | b[byte + i];
	v = (v & ~mask) | ((val << shift) & mask);
	for (unsigned i = nbytes; i-- > 0; v >>= 8)
		b[byte + i] = (uint8_t)v;
}

/* X(member, byte, bit, width) for scalar fields, B(member, byte, len) for
 * byte strings.  Offsets are from the start of the CM body (MAD byte 24). */
#define REQ_FIELDS(X, B)                                                                           \
	X(local_comm_id, 0, 0, 32)                                                                 \
	X(vendor_id, 5, 0, 24)                                                                     \
	X(service_id, 8, 0, 64)                                                                    \
	X(local_ca_guid, 16, 0, 64)                                                                \
	X(local_qkey, 28, 0, 32)                                                                   \
	X(local_qpn, 32, 0, 24)                                                                    \
	X(responder_resources, 35, 0, 8)                                                           \
	X(local_eecn, 36, 0, 24)                                                                   \
	X(initiator_depth, 39, 0, 8)                                                               \
	X(remote_eecn, 40, 0, 24)                                                                  \
	X(remote_cm_resp_timeout, 43, 0, 5)                                                        \
	X(transport_type, 43, 5, 2)                                                                \
	X(e2e_flow_ctrl, 43, 7, 1)                                                                 \
	X(starting_psn, 44, 0, 24)                                                                 \
	X(local_cm_resp_timeout, 47, 0, 5)                                                         \
	X(retry_count, 47, 5, 3)                                                                   \
	X(pkey, 48, 0, 16)                                                                         \
	X(path_mtu, 50, 0, 4)                                                                      \
	X(rdc_exists, 50, 4, 1)                                                                    \
	X(rnr_retry_count, 50, 5, 3)                                                               \
	X(max_cm_retries, 51, 0, 4)                                                                \
	X(srq, 51, 4, 1)                                                                           \
	X(ext_transport, 51, 5, 3)                                                                 \
	B(private_data, 140, DR_CM_REQ_PRIV_LEN)

/* one path record, relative to its start (52 primary, 96 alternate) */
#define PATH_FIELDS(X, B)                                  \
	X(local_lid, 0, 0, 16)                             \
	X(remote_lid, 2, 0, 16)                            \
	B(local_gid, 4, 16)                                \
	B(remote_gid, 20, 16)                              \
	X(flow_label, 36, 0, 20)                           \
	X(packet_rate, 39, 2, 6)                           \
	X(traffic_class, 40, 0, 8)                         \
	X(hop_limit, 41, 0, 8)                             \
	X(sl, 42, 0, 4)                                    \
	X(subnet_local, 42, 4, 1)                          \
	X(local_ack_timeout, 43, 0, 5)

#define REP_FIELDS(X, B)                                   \
	X(local_comm_id, 0, 0, 32)                         \
	X(remote_comm_id, 4, 0, 32)                        \
	X(local_qkey, 8, 0, 32)                            \
	X(local_qpn, 12, 0, 24)                            \
	X(local_eecn, 16, 0, 24)                           \
	X(starting_psn, 20, 0, 24)                         \
	X(responder_resources, 24, 0, 8)                   \
	X(initiator_depth, 25, 0, 8)                       \
	X(target_ack_delay, 26, 0, 5)                      \
	X(failover_accepted, 26, 5, 2)                     \
	X(e2e_flow_ctrl, 26, 7, 1)                         \
	X(rnr_retry_count, 27, 0, 3)                       \
	X(srq, 27, 3, 1)                                   \
	X(local_ca_guid, 28, 0, 64)                        \
	B(private_data, 36, DR_CM_REP_PRIV_LEN)

#define RTU_FIELDS(X, B)                                   \
	X(local_comm_id, 0, 0, 32)                         \
	X(remote_comm_id, 4, 0, 32)                        \
	B(private_data, 8, DR_CM_RTU_PRIV_LEN)

#define REJ_FIELDS(X, B)                                   \
	X(local_comm_id, 0, 0, 32)                         \
	X(remote_comm_id, 4, 0, 32)                        \
	X(msg_rejected, 8, 0, 2)                           \
	X(reject_info_len, 9, 0, 7)                        \
	X(reason, 10, 0, 16)                               \
	B(ari, 12, DR_CM_REJ_ARI_LEN)                      \
	B(private_data, 84, DR_CM_REJ_PRIV_LEN)

#define DREQ_FIELDS(X, B)                                  \
	X(local_comm_id, 0, 0, 32)                         \
	X(remote_comm_id, 4, 0, 32)                        \
	X(remote_qpn, 8, 0, 24)                            \
	B(private_data, 12, DR_CM_DREQ_PRIV_LEN)

#define DREP_FIELDS(X, B)                                  \
	X(local_comm_id, 0, 0, 32)                         \
	X(remote_comm_id, 4, 0, 32)                        \
	B(private_data, 8, DR_CM_DREP_PRIV_LEN)

#define MRA_FIELDS(X, B)                                   \
	X(local_comm_id, 0, 0, 32)                         \
	X(remote_comm_id, 4, 0, 32)                        \
	X(msg_mraed, 8, 0, 2)                              \
	X(service_timeout, 9, 0, 5)                        \
	B(private_data, 10, DR_CM_MRA_PRIV_LEN)

#define UNPACK_X(f, byte, bit, width) m->f = get_bits(b, base + (byte), bit, width);
#define UNPACK_B(f, byte, len) memcpy(m->f, b + base + (byte), len);
#define PACK_X(f, byte, bit, width) put_bits(b, base + (byte), bit, width, m->f);
#define PACK_B(f, byte, len) memcpy(b + base + (byte), m->f, len);

static void path_unpack(const uint8_t *b, unsigned base, struct dr_cm_path *m)
{
	PATH_FIELDS(UNPACK_X, UNPACK_B)
}

static void path_pack(const struct dr_cm_path *m, uint8_t *b, unsigned base)
{
	PATH_FIELDS(PACK_X, PACK_B)
}

#define DEFINE_MSG(name, FIELDS)                                              \
	static void name##_unpack_fields(const uint8_t *b, struct dr_cm_##name *m) \
	{                                                                     \
		const unsigned base = 0;                                      \
		FIELDS(UNPACK_X, UNPACK_B)                                    \
	}                                                                     \
	static void name##_pack_fields(const struct dr_cm_##name *m, uint8_t *b) \
	{                                                                     \
		const unsigned base = 0;                                      \
		memset(b, 0, DR_MAD_BODY_LEN);                                \
		FIELDS(PACK_X, PACK_B)                                        \
	}

DEFINE_MSG(req, REQ_FIELDS)
DEFINE_MSG(rep, REP_FIELDS)
DEFINE_MSG(rtu, RTU_FIELDS)
DEFINE_MSG(rej, REJ_FIELDS)
DEFINE_MSG(dreq, DREQ_FIELDS)
DEFINE_MSG(drep, DREP_FIELDS)
DEFINE_MSG(mra, MRA_FIELDS)

#define REQ_PRIMARY_PATH 52
#define REQ_ALTERNATE_PATH 96

void dr_cm_req_unpack(const uint8_t *body, struct dr_cm_req *m)
{
	req_unpack_fields(body, m);
	path_unpack(body, REQ_PRIMARY_PATH, &m->primary);
	path_unpack(body, REQ_ALTERNATE_PATH, &m->alternate);
}

void dr_cm_req_pack(const struct dr_cm_req *m, uint8_t *body)
{
	req_pack_fields(m, body);
	path_pack(&m->primary, body, REQ_PRIMARY_PATH);
	path_pack(&m->alternate, body, REQ_ALTERNATE_PATH);
}

#define DEFINE_PLAIN(name)                                                     \
	void dr_cm_##name##_unpack(const uint8_t *body, struct dr_cm_##name *m) \
	{                                                                      \
		name##_unpack_fields(body, m);                                 \
	}                                                                      \
	void dr_cm_##name##_pack(const struct dr_cm_##name *m, uint8_t *body)   \
	{                                                                      \
		name##_pack_fields(m, body);                                   \
	}

/* The REP's ECE vendor ID is three bytes in the low ends of the words
 * that hold the local QPN, EECN and starting PSN. */
void dr_cm_rep_unpack(const uint8_t *body, struct dr_cm_rep *m)
{
	rep_unpack_fields(body, m);
	m->vendor_id = (uint32_t)body[15] << 16 | (uint32_t)body[19] << 8 | body[23];
}

void dr_cm_rep_pack(const struct dr_cm_rep *m, uint8_t *body)
{
	rep_pack_fields(m, body);
	body[15] = (uint8_t)(m->vendor_id >> 16);
	body[19] = (uint8_t)(m->vendor_id >> 8);
	body[23] = (uint8_t)m->vendor_id;
}

DEFINE_PLAIN(rtu)
DEFINE_PLAIN(rej)
DEFINE_PLAIN(dreq)
DEFINE_PLAIN(drep)
DEFINE_PLAIN(mra)

int dr_mad_parse(const void *buf, size_t len, struct dr_mad *mad)
{
	const struct dr_mad_hdr *h = buf;

	if (len != DR_MAD_LEN)
		return -EINVAL;
	mad->base_version = h->base_version;
	mad->mgmt_class = h->mgmt_class;
	mad->class_version = h->class_version;
	mad->method = h->method;
	mad->status = ntohs(h->status);
	mad->class_specific = ntohs(h->class_specific);
	mad->tid = be64toh(h->tid);
	mad->attr_id = ntohs(h->attr_id);
	mad->attr_mod = ntohl(h->attr_mod);
	memcpy(mad->body, (const uint8_t *)buf + sizeof(*h), DR_MAD_BODY_LEN);
	return 0;
}

void dr_mad_build(const struct dr_mad *mad, void *buf)
{
	struct dr_mad_hdr *h = buf;

	h->base_version = mad->base_version;
	h->mgmt_class = mad->mgmt_class;
	h->class_version = mad->class_version;
	h->method = mad->method;
	h->status = htons(mad->status);
	h->class_specific = htons(mad->class_specific);
	h->tid = htobe64(mad->tid);
	h->attr_id = htons(mad->attr_id);
	h->resv = 0;
	h->attr_mod = htonl(mad->attr_mod);
	memcpy((uint8_t *)buf + sizeof(*h), mad->body, DR_MAD_BODY_LEN);
}

void dr_mad_init_cm(struct dr_mad *mad, uint16_t attr_id, uint64_t tid)
{
	memset(mad, 0, sizeof(*mad));
	mad->base_version = DR_MAD_BASE_VERSION;
	mad->mgmt_class = DR_MAD_CLASS_CM;
	mad->class_version = DR_MAD_CM_CLASS_VERSION;
	mad->method = DR_MAD_METHOD_SEND;
	mad->attr_id = attr_id;
	mad->tid = tid;
}

bool dr_mad_is_cm(const struct dr_mad *mad)
{
	return mad->base_version == DR_MAD_BASE_VERSION && mad->mgmt_class == DR_MAD_CLASS_CM &&
	       mad->class_version == DR_MAD_CM_CLASS_VERSION;
}

void dr_cma_hdr_unpack(const uint8_t *priv, struct dr_cma_hdr *h)
{
	h->cma_version = priv[0];
	h->ip_version = priv[1] >> 4;
	h->src_port = (uint16_t)(priv[2] << 8 | priv[3]);
	memcpy(h->src_addr, priv + 4, 16);
	memcpy(h->dst_addr, priv + 20, 16);
}

void dr_cma_hdr_pack(const struct dr_cma_hdr *h, uint8_t *priv)
{
	priv[0] = h->cma_version;
	priv[1] = (uint8_t)(h->ip_version << 4);
	priv[2] = h->src_port >> 8;
	priv[3] = h->src_port & 0xff;
	memcpy(priv + 4, h->src_addr, 16);
	memcpy(priv + 20, h->dst_addr, 16);
}

void dr_gid_from_ipv4(uint8_t gid[16], uint32_t ip4)
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	gid[12] = ip4 >> 24;
	gid[13] = ip4 >> 16;
	gid[14] = ip4 >> 8;
	gid[15] = ip4;
}

bool dr_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip4)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	if (memcmp(gid, prefix, sizeof(prefix)))
		return false;
	*ip4 = (uint32_t)gid[12] << 24 | (uint32_t)gid[13] << 16 | (uint32_t)gid[14] << 8 | gid[15];
	return true;
}
