/*
 * common.h: what the MPI reference programs of narmabench share: the
 * command line, the statistics of the rounds and the CSV output, in the
 * column order of a row in narmabench's CSV (internal/bench/output.go,
 * CSVRowColumns).
 */
#ifndef NARMA_MPI_COMMON_H
#define NARMA_MPI_COMMON_H

#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* header prints the CSV header. Rank 0 prints it once its windows exist:
 * narmabench takes a run that failed before it as a launch the MPI
 * refused (internal/bench/mpi.go), one that failed after it as an error. */
static void header(void)
{
	printf("experiment,variant,bytes,ranks,iters,rounds,median_ns,min_ns,max_ns,mb_per_s,unsound,overlap_pct,p10_ns,p90_ns\n");
}

/* config prints how a variant calls MPI, on rank 0 after the header:
 * "# config VARIANT KIND: CALLS", KIND being two-sided or one-sided.
 * narmabench adds the components its launch selected for the kind. */
static void config(const char *variant, int onesided, const char *calls)
{
	printf("# config %s %s: %s\n", variant, onesided ? "one-sided" : "two-sided", calls);
}

/*
 * A flag window carries data and, after it, a notice: the origin puts the
 * data, completes the put with MPI_Win_flush, then raises the target's
 * flag word to a value that never decreases and flushes again; the target
 * waits until its own flag reaches what it expects, then reads the data.
 * Every rank's part of the window is the flag, alone on its cache line
 * (FLAG_WORDS words), followed by the data words.
 *
 * The window comes, if the MPI grants it, from MPI_Win_allocate_shared
 * with alloc_shared_noncontig (each rank's part on its own pages): the
 * flag is raised with MPI_Put and the target polls its own flag with
 * loads, an MPI_Win_sync before each. That is the fastest one-sided
 * set-up on one host; Open MPI serves it with osc sm, where a put is a
 * copy into the shared segment, a flush a memory barrier, and a poll
 * costs no call into the library but MPI_Win_sync. If the MPI refuses a
 * shared window (ranks on several hosts, or no shared-memory component),
 * it comes from MPI_Win_allocate and the flag is an atomic: raised with
 * MPI_Fetch_and_op (MPI_REPLACE), polled with MPI_Fetch_and_op
 * (MPI_NO_OP) and MPI_Win_flush on itself.
 *
 * A local poll never enters the library's progress, so it never yields
 * the processor as Open MPI's waits do when a host has more ranks than
 * processors: there the poll calls sched_yield after every miss, else
 * the rank that is to raise the flag may wait for a time slice.
 */
#define FLAG_WORDS 8

struct flagwin {
	MPI_Win win;
	int64_t *base;	/* this rank's part: the flag line, then the data */
	int shared;	/* from MPI_Win_allocate_shared, polled locally */
	int yield;	/* sched_yield after a miss of a local poll */
};

/* flagwin_alloc collectively creates f with words data words a rank. */
static void flagwin_alloc(struct flagwin *f, long words)
{
	MPI_Aint bytes = (MPI_Aint)(FLAG_WORDS + words) * 8;
	MPI_Comm comm, host;
	MPI_Info info;
	int ok, all, here;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	/* A refusal must come back as an error code, not abort the job. */
	MPI_Comm_dup(MPI_COMM_WORLD, &comm);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	MPI_Info_create(&info);
	MPI_Info_set(info, "alloc_shared_noncontig", "true");
	ok = MPI_Win_allocate_shared(bytes, 8, info, comm, &f->base, &f->win) == MPI_SUCCESS;
	MPI_Info_free(&info);
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
	if (ok && !all)
		MPI_Win_free(&f->win);
	f->shared = all;
	if (!all && MPI_Win_allocate(bytes, 8, MPI_INFO_NULL, comm, &f->base, &f->win) != MPI_SUCCESS)
		die("flag window: MPI_Win_allocate failed");
	MPI_Comm_free(&comm);
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
	MPI_Comm_size(host, &here);
	MPI_Comm_free(&host);
	f->yield = f->shared && cpus > 0 && here > cpus;
	memset(f->base, 0, bytes);
	MPI_Barrier(MPI_COMM_WORLD);
}

/* flagwin_calls describes what the window's origin and target call. */
static const char *flagwin_calls(const struct flagwin *f)
{
	if (f->shared && f->yield)
		return "MPI_Win_allocate_shared (alloc_shared_noncontig) in MPI_Win_lock_all; "
		       "MPI_Put of the data, MPI_Win_flush, MPI_Put of the flag, MPI_Win_flush; "
		       "local poll: the target loads its own flag after MPI_Win_sync "
		       "(and sched_yield after a miss: more ranks than processors)";
	if (f->shared)
		return "MPI_Win_allocate_shared (alloc_shared_noncontig) in MPI_Win_lock_all; "
		       "MPI_Put of the data, MPI_Win_flush, MPI_Put of the flag, MPI_Win_flush; "
		       "local poll: the target loads its own flag after MPI_Win_sync";
	return "MPI_Win_allocate in MPI_Win_lock_all (MPI_Win_allocate_shared refused); "
	       "MPI_Put of the data, MPI_Win_flush, MPI_Fetch_and_op (MPI_REPLACE) of the flag, MPI_Win_flush; "
	       "the target polls its flag with MPI_Fetch_and_op (MPI_NO_OP) and MPI_Win_flush";
}

/* flagwin_put puts the n words src at data word at of target's part and
 * completes the put. Inside MPI_Win_lock_all. */
static void flagwin_put(struct flagwin *f, const int64_t *src, long n, long at, int target)
{
	MPI_Put(src, n, MPI_INT64_T, target, FLAG_WORDS + at, n, MPI_INT64_T, f->win);
	MPI_Win_flush(target, f->win);
}

/* flagwin_raise sets target's flag to v, which is not below its value,
 * after the puts that flagwin_put completed. Inside MPI_Win_lock_all. */
static void flagwin_raise(struct flagwin *f, int target, int64_t v)
{
	if (f->shared) {
		/* One aligned word, written by one origin only: the target's
		 * loads see it whole. */
		MPI_Put(&v, 1, MPI_INT64_T, target, 0, 1, MPI_INT64_T, f->win);
	} else {
		int64_t old;
		MPI_Fetch_and_op(&v, &old, MPI_INT64_T, target, 0, MPI_REPLACE, f->win);
	}
	MPI_Win_flush(target, f->win);
}

/* flagwin_wait waits until this rank's (me) flag reaches want; the data
 * put before the flag was raised is then in f->base + FLAG_WORDS. Inside
 * MPI_Win_lock_all. */
static void flagwin_wait(struct flagwin *f, int me, int64_t want)
{
	int64_t v;
	if (f->shared) {
		/* MPI_Win_sync orders the window's copies; the acquire load
		 * orders the reads of the data after the flag's. */
		for (;;) {
			MPI_Win_sync(f->win);
			v = __atomic_load_n(&f->base[0], __ATOMIC_ACQUIRE);
			if (v >= want)
				return;
			if (f->yield)
				sched_yield();
		}
	}
	do {
		MPI_Fetch_and_op(NULL, &v, MPI_INT64_T, me, 0, MPI_NO_OP, f->win);
		MPI_Win_flush(me, f->win);
	} while (v < want);
	MPI_Win_sync(f->win);
}

#endif
