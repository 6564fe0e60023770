/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pcapng.h - a small pcapng reader and writer (no libpcap).
 *
 * Format: "PCAP Next Generation (pcapng) Capture File Format",
 * draft-ietf-opsawg-pcapng (section 4: SHB, IDB, EPB, SPB; the obsolete
 * Packet Block of appendix A is read too).  The reader accepts sections in
 * either byte order, skips blocks it does not know, and checks every length
 * against the block that holds it; a truncated or corrupt file is an error
 * naming the block and its file offset, never a silent short read.
 *
 * The writer emits one section (little-endian, whatever the host), one
 * Ethernet interface (microsecond or nanosecond timestamps), Enhanced Packet
 * Blocks (with a comment, flags and a drop count if asked) and Interface
 * Statistics Blocks: the same input always gives the same bytes.
 */
#ifndef DR_PCAPNG_H
#define DR_PCAPNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DR_LINKTYPE_ETHERNET 1

/* Largest block the reader accepts: bounds the allocation a corrupt length
 * field can cause. */
#define DR_PCAPNG_MAX_BLOCK (64u << 20)

/* ---- Reader ------------------------------------------------------------ */

struct dr_pcapng;

/* One captured packet.  data points into the reader's block buffer and is
 * valid until the next dr_pcapng_next() or dr_pcapng_close(). */
struct dr_pcapng_pkt {
	const uint8_t *data;
	uint32_t caplen;   /* bytes at data */
	uint32_t origlen;  /* length on the wire */
	uint32_t ifid;	   /* interface, counted within the current section */
	uint16_t linktype; /* of that interface (DR_LINKTYPE_ETHERNET, ...) */
	uint64_t ts_sec;   /* 0 for a Simple Packet Block (it has none) */
	uint32_t ts_nsec;
	uint64_t number; /* 1-based packet number, as Wireshark counts */
	uint64_t offset; /* file offset of the block that holds it */
	/* The block's options (EPB; the obsolete Packet Block's comments and
	 * flags); none for a Simple Packet Block.  comments[i] are the
	 * opt_comment values in file order, each NUL-terminated (a block may
	 * hold several); like data they live until the next call. */
	const char *const *comments;
	unsigned ncomments;
	bool has_flags;	    /* epb_flags present */
	uint32_t flags;	    /* DR_PCAPNG_FLAG_*, 0 when absent */
	bool has_dropcount; /* epb_dropcount present */
	uint64_t dropcount;
};

/* Open a capture and read its Section Header Block.  Returns NULL with a
 * message in err[0..errlen) when the file cannot be opened or is not pcapng. */
struct dr_pcapng *dr_pcapng_open(const char *path, char *err, size_t errlen);

/* The same on an open stream (e.g. fmemopen()); name is used in messages.
 * The reader does not close f. */
struct dr_pcapng *dr_pcapng_open_stream(FILE *f, const char *name, char *err, size_t errlen);

/* Next packet: 1 with *pkt filled, 0 at a clean end of file, -1 on a
 * truncated or corrupt file (dr_pcapng_strerror() says what and where;
 * every later call returns -1 again). */
int dr_pcapng_next(struct dr_pcapng *r, struct dr_pcapng_pkt *pkt);

const char *dr_pcapng_strerror(const struct dr_pcapng *r);

void dr_pcapng_close(struct dr_pcapng *r);

/* ---- Writer ------------------------------------------------------------ */

struct dr_pcapng_writer;

/* Create path and write the SHB (with shb_userappl = appname unless NULL)
 * and one Ethernet IDB (snaplen, if_tsresol = 6: microseconds).  Returns
 * NULL with errno set on failure. */
struct dr_pcapng_writer *dr_pcapng_writer_open(const char *path, uint32_t snaplen,
					       const char *appname);

/* The same on an open stream; dr_pcapng_writer_close() does not close it. */
struct dr_pcapng_writer *dr_pcapng_writer_open_stream(FILE *f, uint32_t snaplen,
						      const char *appname);

/* Append one Enhanced Packet Block; the packet is cut to snaplen.  Returns
 * 0 or -errno. */
int dr_pcapng_write(struct dr_pcapng_writer *w, uint64_t ts_us, const void *data, uint32_t len);

/* The writer of FI_DROCE_PCAP (src/roce/port_capture.c): options of the
 * section and of its one interface.  Strings are cut to DR_PCAPNG_MAX_STR
 * bytes; NULL ones are left out. */
#define DR_PCAPNG_MAX_STR 1024

struct dr_pcapng_wopts {
	uint32_t snaplen;	    /* 0: no limit */
	bool nanoseconds;	    /* if_tsresol 9, else 6 (microseconds) */
	const char *hardware;	    /* shb_hardware */
	const char *os;		    /* shb_os */
	const char *appname;	    /* shb_userappl */
	const char *if_name;	    /* if_name */
	const char *if_description; /* if_description */
};

/* The same as dr_pcapng_writer_open_stream() (which is this with snaplen
 * and appname only), with those options. */
struct dr_pcapng_writer *dr_pcapng_writer_open_opts(FILE *f, const struct dr_pcapng_wopts *o);

/* The same on a file descriptor, which dr_pcapng_writer_close() does not
 * close: each block goes to it in one write(2), so the file never holds
 * part of a record, even when the process exit()s from a signal handler
 * while a thread is writing one (FI_DROCE_PCAP). */
struct dr_pcapng_writer *dr_pcapng_writer_open_fd(int fd, const struct dr_pcapng_wopts *o);

/* epb_flags (section 4.3.1): direction, and link-layer errors */
#define DR_PCAPNG_FLAG_INBOUND	 0x00000001u
#define DR_PCAPNG_FLAG_OUTBOUND	 0x00000002u
#define DR_PCAPNG_FLAG_CRC_ERR	 0x01000000u
#define DR_PCAPNG_FLAG_TOO_LONG	 0x02000000u
#define DR_PCAPNG_FLAG_TOO_SHORT 0x04000000u

/* One Enhanced Packet Block and its options */
struct dr_pcapng_epb {
	uint64_t ts;	    /* in the interface's units (if_tsresol) */
	uint32_t flags;	    /* epb_flags, left out when 0 */
	bool has_dropcount; /* write epb_dropcount */
	uint64_t dropcount;
	const char *comment; /* opt_comment, or NULL */
};

/* Append one Enhanced Packet Block with those options; the packet is cut
 * to snaplen.  Returns 0 or -errno. */
int dr_pcapng_write_epb(struct dr_pcapng_writer *w, const struct dr_pcapng_epb *e, const void *data,
			uint32_t len);

/* Append an Interface Statistics Block for the interface, stamped ts, with
 * isb_starttime, isb_endtime, isb_ifrecv and isb_ifdrop.  Returns 0 or
 * -errno. */
int dr_pcapng_write_isb(struct dr_pcapng_writer *w, uint64_t ts, uint64_t start, uint64_t end,
			uint64_t ifrecv, uint64_t ifdrop);

/* Hand what was written to the file now (fflush; nothing to do on a
 * descriptor).  Returns 0 or -errno. */
int dr_pcapng_writer_flush(struct dr_pcapng_writer *w);

/* Flush and close.  Returns 0, or -errno if any write failed. */
int dr_pcapng_writer_close(struct dr_pcapng_writer *w);

#endif /* DR_PCAPNG_H */
