// SPDX-License-Identifier: GPL-2.0
/*
 * The single-core memcpy bandwidth of the machine it runs on: the ceiling
 * for a transport that copies each byte once.
 *
 *   memcpy [MIB [PASSES]]
 *
 * Copies a buffer of MIB MiB (default 64) into another PASSES times
 * (default 16), pinned to one CPU, after touching both buffers so that no
 * page fault is timed. Prints one line: "memcpy_mib_s MEDIAN BEST MIB
 * PASSES", bandwidths in MiB/s (2^20 bytes, perftest's MB), the median
 * and the best pass.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
	int passes = argc > 2 ? atoi(argv[2]) : 16;
	size_t len = mib << 20;
	double *rate, t;
	cpu_set_t set;
	char *src, *dst;
	int i;

	if (!mib || passes < 1) {
		fprintf(stderr, "usage: %s [MIB [PASSES]]\n", argv[0]);
		return 2;
	}
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("sched_setaffinity (not pinned)");

	src = malloc(len);
	dst = malloc(len);
	rate = calloc(passes, sizeof(*rate));
	if (!src || !dst || !rate) {
		perror("malloc");
		return 1;
	}
	memset(src, 0x5a, len);
	memset(dst, 0xa5, len);

	for (i = 0; i < passes; i++) {
		t = now();
		memcpy(dst, src, len);
		t = now() - t;
		/* Keep the copy from being optimised away. */
		src[i % len] ^= dst[(len - 1 - i) % len];
		rate[i] = t > 0 ? mib / t : 0;
	}
	qsort(rate, passes, sizeof(*rate), cmp_double);
	printf("memcpy_mib_s %.1f %.1f %zu %d\n", rate[passes / 2],
	       rate[passes - 1], mib, passes);
	return 0;
}
