// SPDX-License-Identifier: BSD-2-Clause
/* tshark's fields of the frames of a capture (tshark_fields.h). */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "tshark_fields.h"

unsigned tshark_fields(const char *tshark, const char *path, const char *filter,
		       const char *const *fields, unsigned nf, char *rows, size_t flen,
		       unsigned max)
{
	char cmd[2048], line[8192];
	unsigned n = 0;
	size_t off;
	FILE *f;

	/* the RPC-over-RDMA heuristic is not about the frames (test_port.c) */
	off = (size_t)snprintf(
	    cmd, sizeof(cmd),
	    "'%s' --disable-heuristic rpcrdma_infiniband -r '%s' %s%s%s -T fields "
	    "-E separator=/t",
	    tshark, path, filter ? "-Y '" : "", filter ? filter : "", filter ? "'" : "");
	for (unsigned i = 0; i < nf && off < sizeof(cmd); i++)
		off += (size_t)snprintf(cmd + off, sizeof(cmd) - off, " -e %s", fields[i]);
	ck_assert_uint_lt(off + sizeof(" 2>/dev/null"), sizeof(cmd));
	strcat(cmd, " 2>/dev/null");
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		char *s = line;

		ck_assert_uint_lt(n, max);
		line[strcspn(line, "\n")] = '\0';
		for (unsigned i = 0; i < nf; i++) {
			char *tab = strchr(s, '\t'), *dst = rows + ((size_t)n * nf + i) * flen;
			size_t l;

			if (tab)
				*tab = '\0';
			l = strnlen(s, flen - 1);
			memcpy(dst, s, l);
			dst[l] = '\0';
			ck_assert_msg(tab || i == nf - 1, "tshark: short line");
			s = tab ? tab + 1 : s + strlen(s);
		}
		n++;
	}
	ck_assert_int_eq(pclose(f), 0);
	return n;
}
