// SPDX-License-Identifier: BSD-2-Clause
/*
 * mkseeds_mad.c - write a seed corpus for fuzz/fuzz_mad.c into a directory.
 *
 *   mkseeds_mad OUTDIR
 *
 * Each seed is a script in fuzz_mad's input language (its act()): the
 * handshakes run to ESTABLISHED, then one thing happens -- a disconnect
 * from either side, a release, a lost MAD and the resends, each CM message
 * forged towards either CM from the peer's address or a third one, each
 * message as 256 raw bytes built by the codec, mutated copies of what was
 * sent.  The bytes follow fuzz_mad.c's decoder; every byte string decodes,
 * so a change there only makes these seeds less useful until updated.
 */
#include <stdint.h>
#include <stdio.h>

#define MKSEEDS_NAME "mkseeds_mad"
#include "mkseeds_common.h"

#include "dr_roce.h"

/* both CMs accept (policy 1), 3 retries */
static void start(void)
{
	b(0x5f);
}

static void deliver_all(unsigned rounds)
{
	while (rounds--) {
		b(0); /* wire: deliver up to 16 */
		b(0);
		b(15);
	}
}

static void clock_next(void)
{
	b(3);
	b(7);
}

static void handshake(void)
{
	start();
	deliver_all(4);
}

static void app(unsigned side, unsigned what, unsigned which)
{
	b(side << 7 | 9);
	b(what);
	b(which);
}

static int scenario_seeds(void)
{
	for (unsigned side = 0; side < 2; side++)
		for (unsigned which = 0; which < 2; which++) {
			handshake();
			app(side, 3, which); /* disconnect */
			deliver_all(3);
			clock_next();
			if (flush("disc"))
				return -1;
			handshake();
			app(side, 4, which); /* release */
			deliver_all(3);
			if (flush("release"))
				return -1;
		}
	/* lost MADs: drop the newest each time, then resend */
	for (unsigned k = 1; k < 5; k++) {
		start();
		for (unsigned d = 0; d < k; d++) {
			b(0);
			b(3); /* drop the newest */
			b(0);
			deliver_all(1);
		}
		for (unsigned t = 0; t < 4; t++) {
			clock_next();
			deliver_all(2);
		}
		if (flush("loss"))
			return -1;
	}
	/* a passive side that waits, then rejects; unlisten; unreachable */
	b(0x0f); /* policy 0: CONNREQs wait */
	deliver_all(2);
	app(1, 2, 0);
	app(0, 2, 0);
	deliver_all(3);
	if (flush("reject"))
		return -1;
	handshake();
	app(1, 7, 0);
	app(0, 0, 0);
	deliver_all(3);
	app(0, 8, 0);
	if (flush("unlisten"))
		return -1;
	return 0;
}

/* every message kind forged, towards either CM, from the peer or not */
static int forge_seeds(void)
{
	for (unsigned to = 0; to < 2; to++)
		for (unsigned attr = 0; attr < 8; attr++)
			for (unsigned src = 0; src < 3; src++) {
				handshake();
				b(to << 7 | 5);
				b(attr | 2 << 3); /* MTU 1024, retries 0 */
				b(0);		  /* flags: header as is */
				b(src);		  /* the real peer, again, a third host */
				b(attr);	  /* the reference id */
				for (unsigned k = 0; k < 24; k++)
					b(k & 1 ? 0 : attr); /* comm ID picks, fields */
				deliver_all(2);
				if (flush("forge"))
					return -1;
			}
	return 0;
}

/* each CM message as raw bytes built by the codec */
static int raw_seeds(void)
{
	static const uint16_t attrs[] = {DR_CM_ATTR_REQ, DR_CM_ATTR_REP,  DR_CM_ATTR_RTU,
					 DR_CM_ATTR_REJ, DR_CM_ATTR_DREQ, DR_CM_ATTR_DREP,
					 DR_CM_ATTR_MRA, 0x0019};
	uint8_t mad[DR_MAD_LEN];

	for (unsigned a = 0; a < sizeof(attrs) / sizeof(attrs[0]); a++) {
		struct dr_mad m;
		struct dr_cm_req req;

		dr_mad_init_cm(&m, attrs[a], 0x1234567800000000ull | a);
		memset(&req, 0, sizeof(req));
		req.local_comm_id = 0x11223344;
		req.service_id = DR_CM_SID_TCP_PS + 7471;
		req.local_qpn = 0x123;
		req.path_mtu = 3;
		req.primary.local_lid = 0xffff;
		dr_gid_from_ipv4(req.primary.local_gid, 0xc0000201);
		dr_gid_from_ipv4(req.primary.remote_gid, 0xc0000202);
		req.private_data[1] = 0x40; /* rdma_cm header, IPv4 */
		dr_cm_req_pack(&req, m.body);
		dr_mad_build(&m, mad);
		handshake();
		b(1 << 7 | 7);
		b(0);	/* header as built */
		b(0);	/* from the peer */
		b(255); /* 256 bytes */
		for (unsigned k = 0; k < DR_MAD_LEN; k++)
			b(mad[k]);
		deliver_all(2);
		if (flush("raw"))
			return -1;
	}
	/* mutated copies of the last MADs */
	for (unsigned k = 0; k < 8; k++) {
		handshake();
		b(8);
		b(k | (k & 1 ? 0x80 : 0));
		b(1); /* two edits */
		b(24 + 4 * k);
		b(0x01);
		b(24 + 4 * k + 3);
		b(0x80);
		deliver_all(2);
		if (flush("mutate"))
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static int (*const gen[])(void) = {scenario_seeds, forge_seeds, raw_seeds};

	return mkseeds_main(argc, argv, gen, sizeof(gen) / sizeof(gen[0]));
}
