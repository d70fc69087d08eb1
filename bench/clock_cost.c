/*
 * clock_cost.c: ns per clock_gettime(CLOCK_REALTIME) call on this machine,
 * the one clock read snowflake_next() makes per ID.  bench/run compiles and
 * runs it; callgrind cannot show this cost (under valgrind the call is a plain
 * system call).  Prints the median of 7 rounds of 1,000,000 calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CALLS 1000000
#define ROUNDS 7

static int
cmp(const void *a, const void *b)
{
	double		x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

int
main(void)
{
	double		ns[ROUNDS];
	volatile long sink = 0;

	for (int r = 0; r < ROUNDS; r++)
	{
		struct timespec a, b, t;

		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < CALLS; i++)
		{
			clock_gettime(CLOCK_REALTIME, &t);
			sink += t.tv_nsec;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		ns[r] = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / CALLS;
	}
	qsort(ns, ROUNDS, sizeof(double), cmp);
	printf("%.1f\n", ns[ROUNDS / 2]);
	return 0;
}
