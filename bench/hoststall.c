/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hoststall - how long the CPUs this process may use are taken away from it.
 *
 *   hoststall [SECS] [THRESHOLD_US]
 *
 * One thread per CPU of the affinity mask, pinned to it, reads
 * CLOCK_MONOTONIC in a tight loop for SECS seconds (default 2) and counts
 * the gaps between two reads longer than THRESHOLD_US (default 100): the
 * time the thread did not run.  With every CPU spinning, as two polling
 * droce processes do on a 2-CPU machine, a gap is the CPU given to
 * something else: another task of this kernel (perf sched shows which) or,
 * in a virtual machine, the host.  droce's retransmit timeout must be
 * longer than such gaps, or a stalled peer looks like a lost frame
 * (bench/PROFILE.md; fi_droce(7), spurious timeouts).
 *
 * Prints one line per CPU and a total:
 *   cpu N: gaps >0.1 ms A, >1 ms B, longest C ms, stalled D % of the time
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct spin {
	pthread_t t;
	int cpu;
	uint64_t secs_ns, thr_ns;
	uint64_t gaps, gaps_1ms, longest, stalled;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *spin_main(void *arg)
{
	struct spin *s = arg;
	cpu_set_t set;
	uint64_t t0, prev, t;

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		fprintf(stderr, "hoststall: cpu %d: cannot pin, measuring unpinned\n", s->cpu);
	t0 = prev = now_ns();
	while ((t = now_ns()) - t0 < s->secs_ns) {
		uint64_t d = t - prev;

		if (d > s->thr_ns) {
			s->gaps++;
			s->stalled += d;
			if (d > 1000000)
				s->gaps_1ms++;
			if (d > s->longest)
				s->longest = d;
		}
		prev = t;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0, thr_us = argc > 2 ? atof(argv[2]) : 100.0;
	struct spin *sp, tot = {0};
	cpu_set_t set;
	int n = 0, i, err;

	if (argc > 3 || secs <= 0 || thr_us <= 0) {
		fprintf(stderr, "usage: hoststall [SECS] [THRESHOLD_US]\n");
		return 2;
	}
	if (sched_getaffinity(0, sizeof(set), &set)) {
		perror("hoststall: sched_getaffinity");
		return 1;
	}
	sp = calloc((size_t)CPU_COUNT(&set), sizeof(*sp));
	if (!sp)
		return 1;
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &set))
			continue;
		sp[n].cpu = i;
		sp[n].secs_ns = (uint64_t)(secs * 1e9);
		sp[n].thr_ns = (uint64_t)(thr_us * 1e3);
		err = pthread_create(&sp[n].t, NULL, spin_main, &sp[n]);
		if (err) {
			fprintf(stderr, "hoststall: pthread_create: %s\n", strerror(err));
			return 1;
		}
		n++;
	}
	for (i = 0; i < n; i++) {
		pthread_join(sp[i].t, NULL);
		printf(
		    "cpu %d: gaps >%.1f ms %llu, >1 ms %llu, longest %.2f ms, stalled %.2f %% of "
		    "the time\n",
		    sp[i].cpu, thr_us / 1000, (unsigned long long)sp[i].gaps,
		    (unsigned long long)sp[i].gaps_1ms, sp[i].longest / 1e6,
		    100.0 * (double)sp[i].stalled / (double)sp[i].secs_ns);
		tot.gaps += sp[i].gaps;
		tot.gaps_1ms += sp[i].gaps_1ms;
		tot.stalled += sp[i].stalled;
		if (sp[i].longest > tot.longest)
			tot.longest = sp[i].longest;
	}
	printf("all %d CPUs over %.1f s: gaps >%.1f ms %llu, >1 ms %llu, longest %.2f ms\n", n,
	       secs, thr_us / 1000, (unsigned long long)tot.gaps, (unsigned long long)tot.gaps_1ms,
	       tot.longest / 1e6);
	free(sp);
	return 0;
}
