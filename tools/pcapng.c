// SPDX-License-Identifier: BSD-2-Clause
/*
 * A small pcapng reader and writer (draft-ietf-opsawg-pcapng).
 *
 * Reader: one block at a time is read whole into a buffer, its two length
 * fields are compared, and every field inside is checked against the block
 * body before it is used.  Multi-byte fields are decoded with explicit
 * byte-order helpers (the section's order, from its byte-order magic), so
 * nothing depends on the host's order.
 *
 * Writer: little-endian, only the options the caller gives, so the output is
 * a pure function of the packets, their timestamps and those options.  Each
 * block is assembled whole in the writer's buffer and handed over in one
 * call: one fwrite() on a stream, one write(2) on a file descriptor.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pcapng.h"

/* Block types (section 4 and appendix A) */
#define BT_SHB 0x0A0D0D0Au
#define BT_IDB 0x00000001u
#define BT_OPB 0x00000002u /* obsolete Packet Block */
#define BT_SPB 0x00000003u
#define BT_EPB 0x00000006u
#define BT_ISB 0x00000005u

#define BOM 0x1A2B3C4Du

/* Option codes */
#define OPT_ENDOFOPT	   0
#define OPT_COMMENT	   1
#define OPT_SHB_HARDWARE   2
#define OPT_SHB_OS	   3
#define OPT_SHB_USERAPPL   4
#define OPT_IF_NAME	   2
#define OPT_IF_DESCRIPTION 3
#define OPT_EPB_FLAGS	   2
#define OPT_EPB_DROPCOUNT  4
#define OPT_ISB_STARTTIME  2
#define OPT_ISB_ENDTIME	   3
#define OPT_ISB_IFRECV	   4
#define OPT_ISB_IFDROP	   5
#define IF_TSRESOL	   9
#define IF_TSOFFSET	   14

/* Fixed part of each block body (after type and length, before options) */
#define SHB_FIXED      16 /* BOM, major, minor, section length */
#define IDB_FIXED      8  /* linktype, reserved, snaplen */
#define EPB_FIXED      20 /* ifid, ts high, ts low, caplen, origlen */
/* (the obsolete PB has the same 20 bytes: ifid(16), drops(16), ts, caplen, len) */
#define SPB_FIXED      4  /* origlen */
#define ISB_FIXED      12 /* ifid, ts high, ts low */
#define BLOCK_OVERHEAD 12 /* type, length, trailing length */

#define MAX_IFACES 4096

struct iface {
	uint16_t linktype;
	uint32_t snaplen; /* 0: no limit */
	uint64_t units;	  /* timestamp units per second */
	int64_t tsoffset_s;
};

struct dr_pcapng {
	FILE *f;
	bool own_f;
	bool be;     /* current section is big-endian */
	bool failed; /* sticky: a corrupt file is not read past the fault */
	char *name;
	struct iface *ifs;
	uint32_t nif;
	uint8_t *blk; /* the current block, whole */
	size_t blk_cap;
	uint64_t off;	   /* file offset of the next block */
	uint64_t blk_off;  /* file offset of the current block */
	uint32_t blk_type; /* type of the current block, once read */
	bool have_type;
	uint64_t npkts;
	char *cbuf; /* the current packet's comments, NUL-terminated */
	const char **cptr;
	size_t cbuf_cap, cptr_cap;
	char err[256];
};

static uint16_t get16(const struct dr_pcapng *r, const uint8_t *p)
{
	return r->be ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static uint32_t get32(const struct dr_pcapng *r, const uint8_t *p)
{
	if (r->be)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint64_t get64(const struct dr_pcapng *r, const uint8_t *p)
{
	uint64_t a = get32(r, p), b = get32(r, p + 4);

	return r->be ? a << 32 | b : b << 32 | a;
}

static uint32_t pad4(uint32_t n)
{
	return (n + 3) & ~3u;
}

static const char *block_name(uint32_t type)
{
	switch (type) {
	case BT_SHB:
		return "section header block";
	case BT_IDB:
		return "interface description block";
	case BT_OPB:
		return "packet block";
	case BT_SPB:
		return "simple packet block";
	case BT_EPB:
		return "enhanced packet block";
	default:
		return "block";
	}
}

/* Record an error as "NAME: offset N: BLOCK: message"; the block is the one
 * read_block() last saw the type of (r->blk_type, or none yet). */
static int fail(struct dr_pcapng *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct dr_pcapng *r, const char *fmt, ...)
{
	char msg[160], what[48] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->have_type)
		snprintf(what, sizeof(what), " %s 0x%08x:", block_name(r->blk_type), r->blk_type);
	snprintf(r->err, sizeof(r->err), "%s: offset %llu:%s %s", r->name,
		 (unsigned long long)r->blk_off, what, msg);
	r->failed = true;
	return -1;
}

/* Read n bytes of the current block; a short read is a truncated block. */
static int read_exact(struct dr_pcapng *r, void *dst, size_t n, size_t have, size_t want)
{
	size_t got = fread(dst, 1, n, r->f);

	if (got == n)
		return 0;
	if (ferror(r->f))
		return fail(r, "read error: %s", strerror(errno));
	return fail(r, "truncated: %zu of %zu bytes", have + got, want);
}

/* The first four bytes are not a section header: say what they look like. */
static int not_pcapng(struct dr_pcapng *r, const uint8_t *m)
{
	bool classic = !memcmp(m, "\xd4\xc3\xb2\xa1", 4) || !memcmp(m, "\xa1\xb2\xc3\xd4", 4) ||
		       !memcmp(m, "\x4d\x3c\xb2\xa1", 4) || !memcmp(m, "\xa1\xb2\x3c\x4d", 4);

	return fail(r, "not a pcapng file (starts %02x%02x%02x%02x)%s", m[0], m[1], m[2], m[3],
		    classic ? ": classic pcap, convert it with editcap -F pcapng" : "");
}

/* Read the next block whole into r->blk.  Returns 1 with *type and *len set,
 * 0 at a clean end of file (no byte of a new block), -1 on error. */
static int read_block(struct dr_pcapng *r, uint32_t *type, uint32_t *len)
{
	uint8_t hdr[12];
	size_t got, hlen = 8;
	uint32_t t, l;

	r->blk_off = r->off;
	r->have_type = false;
	got = fread(hdr, 1, 8, r->f);
	if (got == 0 && feof(r->f))
		return 0;
	if (got < 8) {
		if (r->off == 0 && got >= 4 && memcmp(hdr, "\x0a\x0d\x0d\x0a", 4))
			return not_pcapng(r, hdr);
		if (ferror(r->f))
			return fail(r, "read error: %s", strerror(errno));
		return fail(r, "truncated block header: %zu of 8 bytes", got);
	}

	/* The SHB type reads the same in both orders; its byte-order magic
	 * decides how this and every later block of the section is read. */
	t = get32(r, hdr);
	if (r->off == 0 && t != BT_SHB)
		return not_pcapng(r, hdr);
	r->blk_type = t;
	r->have_type = true;
	if (t == BT_SHB) {
		if (read_exact(r, hdr + 8, 4, 8, 12) < 0)
			return -1;
		hlen = 12;
		if (!memcmp(hdr + 8, "\x1a\x2b\x3c\x4d", 4))
			r->be = true;
		else if (!memcmp(hdr + 8, "\x4d\x3c\x2b\x1a", 4))
			r->be = false;
		else
			return fail(r, "bad byte-order magic %02x%02x%02x%02x", hdr[8], hdr[9],
				    hdr[10], hdr[11]);
	}
	l = get32(r, hdr + 4);

	if (l < BLOCK_OVERHEAD || (t == BT_SHB && l < BLOCK_OVERHEAD + SHB_FIXED))
		return fail(r, "length %u too small", l);
	if (l % 4)
		return fail(r, "length %u not a multiple of 4", l);
	if (l > DR_PCAPNG_MAX_BLOCK)
		return fail(r, "length %u over the %u-byte limit", l, DR_PCAPNG_MAX_BLOCK);

	if (l > r->blk_cap) {
		uint8_t *nb = realloc(r->blk, l);

		if (!nb)
			return fail(r, "out of memory for %u bytes", l);
		r->blk = nb;
		r->blk_cap = l;
	}
	memcpy(r->blk, hdr, hlen);
	if (read_exact(r, r->blk + hlen, l - hlen, hlen, l) < 0)
		return -1;
	if (get32(r, r->blk + l - 4) != l)
		return fail(r, "trailing length %u != leading length %u", get32(r, r->blk + l - 4),
			    l);

	r->off += l;
	*type = t;
	*len = l;
	return 1;
}

/* The option of a block's option list at body[*o] (section 3.5): 1 with
 * *code, *len and *val set and *o moved past its padding, 0 at
 * opt_endofopt or at the end of the body (the end marker may be left out),
 * -1 when its value runs past the block. */
static int next_opt(struct dr_pcapng *r, const uint8_t *body, uint32_t blen, uint32_t *o,
		    uint16_t *code, uint16_t *len, const uint8_t **val)
{
	if (blen - *o < 4)
		return 0;
	*code = get16(r, body + *o);
	*len = get16(r, body + *o + 2);
	if (*code == OPT_ENDOFOPT)
		return 0;
	if (pad4(*len) > blen - *o - 4)
		return fail(r, "option %u at offset %llu (%u bytes) runs past the block", *code,
			    (unsigned long long)(r->blk_off + 8 + *o), *len);
	*val = body + *o + 4;
	*o += 4 + pad4(*len);
	return 1;
}

static int parse_shb(struct dr_pcapng *r, const uint8_t *body, uint32_t blen)
{
	uint16_t major = get16(r, body + 4), minor = get16(r, body + 6);

	(void)blen; /* read_block() guarantees SHB_FIXED bytes */
	/* Readers must refuse a major version they do not know (4.1). */
	if (major != 1)
		return fail(r, "unsupported pcapng version %u.%u", major, minor);
	/* A new section starts a new list of interfaces. */
	r->nif = 0;
	return 0;
}

/* if_tsresol (4.2): MSB set: a negative power of 2, else of 10 */
static int tsresol_units(struct dr_pcapng *r, uint8_t v, uint64_t *units)
{
	unsigned exp = v & 0x7f;

	if (v & 0x80) {
		if (exp > 63)
			return fail(r, "if_tsresol 2^-%u out of range", exp);
		*units = (uint64_t)1 << exp;
		return 0;
	}
	if (exp > 19)
		return fail(r, "if_tsresol 10^-%u out of range", exp);
	for (*units = 1; exp; exp--)
		*units *= 10;
	return 0;
}

static int parse_idb(struct dr_pcapng *r, const uint8_t *body, uint32_t blen)
{
	struct iface ifc = { .units = 1000000 }; /* default if_tsresol 6 */
	uint32_t o = IDB_FIXED;

	if (blen < IDB_FIXED)
		return fail(r, "%u-byte body too short", blen);
	if (r->nif >= MAX_IFACES)
		return fail(r, "more than %u interfaces", MAX_IFACES);
	ifc.linktype = get16(r, body);
	ifc.snaplen = get32(r, body + 4);

	for (;;) {
		const uint8_t *val = NULL;
		uint16_t code, olen;
		int ret = next_opt(r, body, blen, &o, &code, &olen, &val);

		if (ret <= 0) {
			if (ret < 0)
				return -1;
			break;
		}
		if (code == IF_TSRESOL) {
			if (olen != 1)
				return fail(r, "if_tsresol length %u != 1", olen);
			if (tsresol_units(r, val[0], &ifc.units) < 0)
				return -1;
		} else if (code == IF_TSOFFSET) {
			if (olen != 8)
				return fail(r, "if_tsoffset length %u != 8", olen);
			ifc.tsoffset_s = (int64_t)get64(r, val);
		}
	}

	if (r->nif % 8 == 0) {
		struct iface *n = realloc(r->ifs, (r->nif + 8) * sizeof(*n));

		if (!n)
			return fail(r, "out of memory for interface %u", r->nif);
		r->ifs = n;
	}
	r->ifs[r->nif++] = ifc;
	return 0;
}

static void set_ts(const struct iface *ifc, uint64_t ts, struct dr_pcapng_pkt *pkt)
{
	uint64_t frac = ts % ifc->units;

	pkt->ts_sec = ts / ifc->units + (uint64_t)ifc->tsoffset_s;
#ifdef __SIZEOF_INT128__
	pkt->ts_nsec = (uint32_t)((unsigned __int128)frac * 1000000000u / ifc->units);
#else
	pkt->ts_nsec = (uint32_t)((long double)frac * 1e9L / ifc->units);
#endif
}

static const struct iface *iface_of(struct dr_pcapng *r, uint32_t ifid)
{
	if (ifid >= r->nif) {
		fail(r, "interface %u not described (%u in section)", ifid, r->nif);
		return NULL;
	}
	return &r->ifs[ifid];
}

/* One opt_comment into the reader's comment buffer, NUL-terminated.  The
 * value is UTF-8 without a terminator (3.5); NULs at its end (some writers
 * add one) are dropped, one inside it would hide the rest from a C string
 * and is refused. */
static int add_comment(struct dr_pcapng *r, uint32_t blen, size_t *used, const uint8_t *val,
		       uint16_t len, unsigned long long off, struct dr_pcapng_pkt *pkt)
{
	const uint8_t *nul;

	/* Each comment takes 4 + pad4(len) >= len + 1 bytes of the body, and
	 * at least 4: blen bytes and blen / 4 pointers are always enough. */
	if (r->cbuf_cap < blen) {
		char *nb = realloc(r->cbuf, blen);

		if (!nb)
			return fail(r, "out of memory for comments");
		r->cbuf = nb;
		r->cbuf_cap = blen;
	}
	if (r->cptr_cap < blen / 4) {
		const char **np = realloc(r->cptr, blen / 4 * sizeof(*np));

		if (!np)
			return fail(r, "out of memory for comments");
		r->cptr = np;
		r->cptr_cap = blen / 4;
	}
	while (len && !val[len - 1])
		len--;
	nul = memchr(val, 0, len);
	if (nul)
		return fail(r, "opt_comment at offset %llu: NUL byte at %u of its %u bytes", off,
			    (unsigned)(nul - val), len);
	memcpy(r->cbuf + *used, val, len);
	r->cbuf[*used + len] = '\0';
	r->cptr[pkt->ncomments++] = r->cbuf + *used;
	*used += len + 1u;
	return 0;
}

/* An option of n bytes that a block may hold once (4.3.1: epb_flags,
 * epb_dropcount); *seen says whether it came already. */
static int once_opt(struct dr_pcapng *r, const char *name, unsigned long long off, uint16_t len,
		    uint16_t n, bool *seen)
{
	if (len != n)
		return fail(r, "%s at offset %llu: length %u != %u", name, off, len, n);
	if (*seen)
		return fail(r, "%s at offset %llu: a second one", name, off);
	*seen = true;
	return 0;
}

/* The options of an EPB (4.3.1) or obsolete Packet Block (A), which
 * starts them at body[o]: comments, flags (same code in both), drop count
 * (EPB only; the Packet Block has a field). */
static int parse_pkt_opts(struct dr_pcapng *r, uint32_t type, const uint8_t *body, uint32_t blen,
			  uint32_t o, struct dr_pcapng_pkt *pkt)
{
	size_t used = 0;

	for (;;) {
		unsigned long long off = r->blk_off + 8 + o; /* the option's, in the file */
		const uint8_t *val = NULL;
		uint16_t code, len;
		int ret = next_opt(r, body, blen, &o, &code, &len, &val);

		if (ret <= 0)
			return ret;
		if (code == OPT_COMMENT) {
			if (add_comment(r, blen, &used, val, len, off, pkt) < 0)
				return -1;
		} else if (code == OPT_EPB_FLAGS) {
			if (once_opt(r, "epb_flags", off, len, 4, &pkt->has_flags) < 0)
				return -1;
			pkt->flags = get32(r, val);
		} else if (code == OPT_EPB_DROPCOUNT && type == BT_EPB) {
			if (once_opt(r, "epb_dropcount", off, len, 8, &pkt->has_dropcount) < 0)
				return -1;
			pkt->dropcount = get64(r, val);
		}
	}
}

/* EPB (4.3) and the obsolete Packet Block (A): same layout once the 16-bit
 * interface id of the latter is accounted for. */
static int parse_epb(struct dr_pcapng *r, uint32_t type, const uint8_t *body, uint32_t blen,
		     struct dr_pcapng_pkt *pkt)
{
	const struct iface *ifc;
	uint32_t ifid, caplen;

	if (blen < EPB_FIXED)
		return fail(r, "%u-byte body too short", blen);
	ifid = type == BT_EPB ? get32(r, body) : get16(r, body);
	ifc = iface_of(r, ifid);
	if (!ifc)
		return -1;
	caplen = get32(r, body + 12);
	if (caplen > blen - EPB_FIXED || pad4(caplen) > blen - EPB_FIXED)
		return fail(r, "captured length %u runs past the block", caplen);

	pkt->data = body + EPB_FIXED;
	pkt->caplen = caplen;
	pkt->origlen = get32(r, body + 16);
	pkt->ifid = ifid;
	pkt->linktype = ifc->linktype;
	set_ts(ifc, (uint64_t)get32(r, body + 4) << 32 | get32(r, body + 8), pkt);
	return parse_pkt_opts(r, type, body, blen, EPB_FIXED + pad4(caplen), pkt);
}

/* SPB (4.4): interface 0, no timestamp; the captured length is implied by
 * the original length, the snaplen and the block length. */
static int parse_spb(struct dr_pcapng *r, const uint8_t *body, uint32_t blen,
		     struct dr_pcapng_pkt *pkt)
{
	const struct iface *ifc = iface_of(r, 0);
	uint32_t caplen;

	if (!ifc)
		return -1;
	if (blen < SPB_FIXED)
		return fail(r, "%u-byte body too short", blen);
	pkt->origlen = get32(r, body);
	caplen = pkt->origlen;
	if (ifc->snaplen && caplen > ifc->snaplen)
		caplen = ifc->snaplen;
	if (caplen > blen - SPB_FIXED)
		return fail(r, "%u packet bytes in a %u-byte body", caplen, blen);

	pkt->data = body + SPB_FIXED;
	pkt->caplen = caplen;
	pkt->ifid = 0;
	pkt->linktype = ifc->linktype;
	pkt->ts_sec = 0;
	pkt->ts_nsec = 0;
	return 0;
}

int dr_pcapng_next(struct dr_pcapng *r, struct dr_pcapng_pkt *pkt)
{
	uint32_t type, len;
	int ret;

	if (r->failed)
		return -1;
	for (;;) {
		const uint8_t *body;
		uint32_t blen;

		ret = read_block(r, &type, &len);
		if (ret <= 0)
			return ret;
		memset(pkt, 0, sizeof(*pkt));
		body = r->blk + 8;
		blen = len - BLOCK_OVERHEAD;

		switch (type) {
		case BT_SHB:
			ret = parse_shb(r, body, blen);
			break;
		case BT_IDB:
			ret = parse_idb(r, body, blen);
			break;
		case BT_EPB:
		case BT_OPB:
			ret = parse_epb(r, type, body, blen, pkt);
			if (ret == 0)
				goto out_pkt;
			break;
		case BT_SPB:
			ret = parse_spb(r, body, blen, pkt);
			if (ret == 0)
				goto out_pkt;
			break;
		default:
			/* NRB, ISB, DSB, custom...: not needed here; a reader
			 * skips blocks it does not understand (section 3) */
			ret = 0;
			break;
		}
		if (ret < 0)
			return -1;
	}

out_pkt:
	pkt->comments = r->cptr; /* where add_comment() left them */
	pkt->number = ++r->npkts;
	pkt->offset = r->blk_off;
	return 1;
}

const char *dr_pcapng_strerror(const struct dr_pcapng *r)
{
	return r->err[0] ? r->err : "no error";
}

void dr_pcapng_close(struct dr_pcapng *r)
{
	if (!r)
		return;
	if (r->own_f && r->f)
		fclose(r->f);
	free(r->blk);
	free(r->cbuf);
	free(r->cptr);
	free(r->ifs);
	free(r->name);
	free(r);
}

struct dr_pcapng *dr_pcapng_open_stream(FILE *f, const char *name, char *err, size_t errlen)
{
	struct dr_pcapng *r;
	uint32_t type, len;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	r->f = f;
	r->name = strdup(name);
	if (!r->name) {
		snprintf(err, errlen, "%s: out of memory", name);
		goto out_free;
	}

	/* The first block must be a section header (4.1): read_block()
	 * refuses anything else at offset 0. */
	ret = read_block(r, &type, &len);
	if (ret == 1)
		ret = parse_shb(r, r->blk + 8, len - BLOCK_OVERHEAD);
	if (ret < 0) {
		snprintf(err, errlen, "%s", r->err);
		goto out_free;
	}
	if (ret == 0 && !r->have_type) {
		snprintf(err, errlen, "%s: empty file", name);
		goto out_free;
	}
	return r;

out_free:
	dr_pcapng_close(r); /* own_f is false: the caller keeps f */
	return NULL;
}

struct dr_pcapng *dr_pcapng_open(const char *path, char *err, size_t errlen)
{
	struct dr_pcapng *r;
	FILE *f = fopen(path, "rb");

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	r = dr_pcapng_open_stream(f, path, err, errlen);
	if (!r) {
		fclose(f);
		return NULL;
	}
	r->own_f = true;
	return r;
}

/* ---- Writer ------------------------------------------------------------ */

struct dr_pcapng_writer {
	FILE *f; /* or NULL: fd */
	int fd;	 /* -1: f */
	bool own_f;
	int err; /* first failure, as -errno */
	uint32_t snaplen;
	uint8_t *blk; /* the block being assembled */
	size_t len, cap;
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* Append n bytes to the block being assembled. */
static void emit(struct dr_pcapng_writer *w, const void *p, size_t n)
{
	if (w->err || !n)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		uint8_t *b;

		while (cap < w->len + n)
			cap *= 2;
		b = realloc(w->blk, cap);
		if (!b) {
			w->err = -ENOMEM;
			return;
		}
		w->blk = b;
		w->cap = cap;
	}
	memcpy(w->blk + w->len, p, n);
	w->len += n;
}

/* The assembled block to the file in one call.  On a descriptor that is
 * one write(2): a process that exit()s in a signal handler while a thread
 * is half-way through a record leaves the file without that record, never
 * with part of it (stdio's buffer would be flushed by exit() as it is). */
static void emit_done(struct dr_pcapng_writer *w)
{
	size_t off = 0;
	ssize_t n;

	if (w->err)
		goto out;
	if (w->f) {
		if (fwrite(w->blk, 1, w->len, w->f) != w->len)
			w->err = errno ? -errno : -EIO;
		goto out;
	}
	while (off < w->len) {
		n = write(w->fd, w->blk + off, w->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			w->err = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
out:
	w->len = 0;
}

static const uint8_t zeros[4];

/* type | length | fixed[0..flen) | body[0..blen) padded | options | length */
static void emit_block(struct dr_pcapng_writer *w, uint32_t type, const uint8_t *fixed,
		       uint32_t flen, const void *body, uint32_t blen, const uint8_t *opts,
		       uint32_t olen)
{
	uint32_t len = BLOCK_OVERHEAD + flen + pad4(blen) + olen;
	uint8_t b[8];

	put32(b, type);
	put32(b + 4, len);
	emit(w, b, 8);
	emit(w, fixed, flen);
	emit(w, body, blen);
	emit(w, zeros, pad4(blen) - blen);
	emit(w, opts, olen);
	emit(w, b + 4, 4);
	emit_done(w);
}

/* One option at b: code, length, value padded to 4 bytes.  Returns its size. */
static uint32_t put_opt(uint8_t *b, uint16_t code, const void *v, uint16_t n)
{
	put16(b, code);
	put16(b + 2, n);
	memcpy(b + 4, v, n);
	memset(b + 4 + n, 0, pad4(n) - n);
	return 4 + pad4(n);
}

/* A string option, cut to DR_PCAPNG_MAX_STR bytes; none for NULL. */
static uint32_t put_str(uint8_t *b, uint16_t code, const char *s)
{
	return s ? put_opt(b, code, s, (uint16_t)strnlen(s, DR_PCAPNG_MAX_STR)) : 0;
}

/* the end of a non-empty option list */
static uint32_t put_end(uint8_t *b, uint32_t olen)
{
	if (!olen)
		return 0;
	put32(b + olen, OPT_ENDOFOPT); /* code 0, length 0 */
	return olen + 4;
}

static struct dr_pcapng_writer *open_common(FILE *f, int fd, const struct dr_pcapng_wopts *o)
{
	struct dr_pcapng_writer *w = calloc(1, sizeof(*w));
	uint8_t shb[SHB_FIXED], idb[IDB_FIXED], opts[3 * (4 + DR_PCAPNG_MAX_STR + 3) + 4];
	uint8_t resol = o->nanoseconds ? 9 : 6;
	uint32_t olen = 0;

	if (!w)
		return NULL;
	w->f = f;
	w->fd = fd;
	w->snaplen = o->snaplen;

	put32(shb, BOM);
	put16(shb + 4, 1);	    /* major */
	put16(shb + 6, 0);	    /* minor */
	put64(shb + 8, UINT64_MAX); /* section length: not given */
	olen += put_str(opts + olen, OPT_SHB_HARDWARE, o->hardware);
	olen += put_str(opts + olen, OPT_SHB_OS, o->os);
	olen += put_str(opts + olen, OPT_SHB_USERAPPL, o->appname);
	olen = put_end(opts, olen);
	emit_block(w, BT_SHB, shb, sizeof(shb), NULL, 0, opts, olen);

	put16(idb, DR_LINKTYPE_ETHERNET);
	put16(idb + 2, 0);
	put32(idb + 4, o->snaplen);
	olen = 0;
	olen += put_str(opts + olen, OPT_IF_NAME, o->if_name);
	olen += put_str(opts + olen, OPT_IF_DESCRIPTION, o->if_description);
	olen += put_opt(opts + olen, IF_TSRESOL, &resol, 1); /* 10^-resol s */
	olen = put_end(opts, olen);
	emit_block(w, BT_IDB, idb, sizeof(idb), NULL, 0, opts, olen);

	if (w->err) {
		errno = -w->err;
		free(w->blk);
		free(w);
		return NULL;
	}
	return w;
}

struct dr_pcapng_writer *dr_pcapng_writer_open_opts(FILE *f, const struct dr_pcapng_wopts *o)
{
	return open_common(f, -1, o);
}

struct dr_pcapng_writer *dr_pcapng_writer_open_fd(int fd, const struct dr_pcapng_wopts *o)
{
	return open_common(NULL, fd, o);
}

struct dr_pcapng_writer *dr_pcapng_writer_open_stream(FILE *f, uint32_t snaplen,
						      const char *appname)
{
	struct dr_pcapng_wopts o = {.snaplen = snaplen, .appname = appname};

	return dr_pcapng_writer_open_opts(f, &o);
}

struct dr_pcapng_writer *dr_pcapng_writer_open(const char *path, uint32_t snaplen,
					       const char *appname)
{
	struct dr_pcapng_writer *w;
	FILE *f = fopen(path, "wb");
	int e;

	if (!f)
		return NULL;
	w = dr_pcapng_writer_open_stream(f, snaplen, appname);
	if (!w) {
		e = errno;
		fclose(f);
		errno = e;
		return NULL;
	}
	w->own_f = true;
	return w;
}

int dr_pcapng_write(struct dr_pcapng_writer *w, uint64_t ts_us, const void *data, uint32_t len)
{
	struct dr_pcapng_epb e = {.ts = ts_us};

	return dr_pcapng_write_epb(w, &e, data, len);
}

int dr_pcapng_write_epb(struct dr_pcapng_writer *w, const struct dr_pcapng_epb *e, const void *data,
			uint32_t len)
{
	uint32_t caplen = w->snaplen && len > w->snaplen ? w->snaplen : len;
	uint8_t epb[EPB_FIXED], opts[4 + DR_PCAPNG_MAX_STR + 3 + 8 + 12 + 4], v[8];
	uint32_t olen = 0;

	if (caplen > DR_PCAPNG_MAX_BLOCK - BLOCK_OVERHEAD - EPB_FIXED - sizeof(opts))
		return -EMSGSIZE;
	put32(epb, 0); /* interface 0 */
	put32(epb + 4, (uint32_t)(e->ts >> 32));
	put32(epb + 8, (uint32_t)e->ts);
	put32(epb + 12, caplen);
	put32(epb + 16, len);
	olen += put_str(opts + olen, OPT_COMMENT, e->comment);
	if (e->flags) {
		put32(v, e->flags);
		olen += put_opt(opts + olen, OPT_EPB_FLAGS, v, 4);
	}
	if (e->has_dropcount) {
		put64(v, e->dropcount);
		olen += put_opt(opts + olen, OPT_EPB_DROPCOUNT, v, 8);
	}
	olen = put_end(opts, olen);
	emit_block(w, BT_EPB, epb, sizeof(epb), data, caplen, opts, olen);
	return w->err;
}

int dr_pcapng_write_isb(struct dr_pcapng_writer *w, uint64_t ts, uint64_t start, uint64_t end,
			uint64_t ifrecv, uint64_t ifdrop)
{
	uint8_t isb[ISB_FIXED], opts[4 * 12 + 4], v[8];
	uint32_t olen = 0;

	put32(isb, 0); /* interface 0 */
	put32(isb + 4, (uint32_t)(ts >> 32));
	put32(isb + 8, (uint32_t)ts);
	put64(v, start);
	olen += put_opt(opts + olen, OPT_ISB_STARTTIME, v, 8);
	put64(v, end);
	olen += put_opt(opts + olen, OPT_ISB_ENDTIME, v, 8);
	put64(v, ifrecv);
	olen += put_opt(opts + olen, OPT_ISB_IFRECV, v, 8);
	put64(v, ifdrop);
	olen += put_opt(opts + olen, OPT_ISB_IFDROP, v, 8);
	olen = put_end(opts, olen);
	emit_block(w, BT_ISB, isb, sizeof(isb), NULL, 0, opts, olen);
	return w->err;
}

int dr_pcapng_writer_flush(struct dr_pcapng_writer *w)
{
	if (w->f && fflush(w->f) && !w->err)
		w->err = errno ? -errno : -EIO;
	return w->err;
}

int dr_pcapng_writer_close(struct dr_pcapng_writer *w)
{
	int ret;

	if (!w)
		return 0;
	if (w->f && fflush(w->f) && !w->err)
		w->err = errno ? -errno : -EIO;
	if (w->own_f && fclose(w->f) && !w->err)
		w->err = errno ? -errno : -EIO;
	ret = w->err;
	free(w->blk);
	free(w);
	return ret;
}
