/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How every Check suite here ends its main(): run the suite, print
 * Check's summary, exit status for automake's test driver.  Forking per
 * test (Check's default, CK_FORK=no in the environment turns it off for a
 * debugger) keeps a crashing test from hiding the ones after it; suites
 * whose cases must share one process (DPDK's EAL started once, a printed
 * table in order) pass nofork and say why.
 */
#ifndef CK_RUN_H
#define CK_RUN_H

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>

static inline int ck_run(Suite *s, bool nofork)
{
	SRunner *sr = srunner_create(s);
	int failed;

	if (nofork)
		srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* CK_RUN_H */
