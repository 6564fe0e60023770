/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tshark's fields of the frames of a capture, for the suites that check
 * what Wireshark shows of FI_DROCE_PCAP files (test_capture, test_notes).
 */
#ifndef TESTS_TSHARK_FIELDS_H
#define TESTS_TSHARK_FIELDS_H

#include <stddef.h>

/* Each frame of path that display filter (NULL: every one) selects: the
 * fields (tshark -e) fields[0..nf), each cut to flen - 1 bytes, into rows,
 * row after row of nf fields of flen bytes; at most max rows.  Returns the
 * number of rows.  Failures are Check assertions. */
unsigned tshark_fields(const char *tshark, const char *path, const char *filter,
		       const char *const *fields, unsigned nf, char *rows, size_t flen,
		       unsigned max);

#endif /* TESTS_TSHARK_FIELDS_H */
