/*
 * common.h: what the MPI reference programs of narmabench share: the
 * command line, the statistics of the rounds and the CSV output, in the
 * column order of a row in narmabench's CSV (internal/bench/output.go,
 * CSVRowColumns).
 */
#ifndef NARMA_MPI_COMMON_H
#define NARMA_MPI_COMMON_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXSIZES 64

/* options are the command line: -i ITERS -r ROUNDS -w WARMUP SIZE...
 * (ITERS 0: by size; WARMUP 0: by size, negative: none). */
struct options {
	int iters, rounds, warmup;
	int nsizes;
	long sizes[MAXSIZES];
};

static void die(const char *msg)
{
	fprintf(stderr, "%s\n", msg);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

static void parse_options(int argc, char **argv, struct options *o, long maxsize)
{
	o->iters = 0;
	o->rounds = 15;
	o->warmup = 0;
	o->nsizes = 0;
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && strcmp(argv[i], "-i") == 0)
			o->iters = atoi(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "-r") == 0)
			o->rounds = atoi(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "-w") == 0)
			o->warmup = atoi(argv[++i]);
		else if (o->nsizes < MAXSIZES) {
			char *end;
			long s = strtol(argv[i], &end, 10);
			if (*end != 0 || s < 8 || s % 8 != 0 || s > maxsize)
				die("bad size: want a multiple of 8 bytes in range");
			o->sizes[o->nsizes++] = s;
		}
	}
	if (o->iters < 0 || o->rounds < 1)
		die("usage: PROGRAM [-i ITERS] [-r ROUNDS] [-w WARMUP] SIZE...");
	if (o->nsizes == 0)
		die("usage: PROGRAM [-i ITERS] [-r ROUNDS] [-w WARMUP] SIZE...");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* quantile returns the q-quantile of the n sorted times t, interpolated
 * linearly between the two nearest (as internal/bench/bench.go does). */
static double quantile(const double *t, int n, double q)
{
	double pos = q * (n - 1);
	int i = (int)pos;
	if (i >= n - 1)
		return t[n - 1];
	return t[i] + (pos - i) * (t[i + 1] - t[i]);
}

/* row prints one CSV line: the median, minimum and maximum of the rounds'
 * times t (ns, sorted in place), the bandwidth of moved bytes per median
 * time, and the 10th and 90th percentiles of the times. */
static void row(const char *experiment, const char *variant, long bytes, int ranks,
		int iters, int rounds, double *t, double moved)
{
	qsort(t, rounds, sizeof t[0], cmp_double);
	double med = rounds % 2 ? t[rounds / 2] : (t[rounds / 2 - 1] + t[rounds / 2]) / 2;
	double p10 = quantile(t, rounds, 0.1), p90 = quantile(t, rounds, 0.9);
	if (p10 > med)
		p10 = med;
	if (p90 < med)
		p90 = med;
	printf("%s,%s,%ld,%d,%d,%d,%.1f,%.1f,%.1f,%.1f,false,0.0,%.1f,%.1f\n", experiment, variant,
	       bytes, ranks, iters, rounds, med, t[0], t[rounds - 1], moved / med * 1e3, p10, p90);
	fflush(stdout);
}

static void header(void)
{
	printf("experiment,variant,bytes,ranks,iters,rounds,median_ns,min_ns,max_ns,mb_per_s,unsound,overlap_pct,p10_ns,p90_ns\n");
}

#endif
