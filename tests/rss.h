/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The resident set of this process, for the flood tests (test_cm_sm,
 * test_fi_msg) that bound what a hostile peer can make droce hold.
 */
#ifndef TESTS_RSS_H
#define TESTS_RSS_H

#include <check.h>
#include <stdio.h>
#include <unistd.h>

/* resident KiB, from the second field of /proc/self/statm (pages) */
static inline long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size, pages;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%ld %ld", &size, &pages), 2);
	fclose(f);
	return pages * (sysconf(_SC_PAGESIZE) / 1024);
}

#endif /* TESTS_RSS_H */
