/*
 * pingpong.c: the MPI reference of narmabench's experiment 1, the
 * ping-pong latency between two ranks (Belli and Hoefler, Fig. 3), with
 * the classic variants of internal/bench/pingpong.go:
 *
 *   mpi-send-recv  MPI_Send and MPI_Recv
 *   mpi-put-flag   on a flag window (common.h), in an MPI_Win_lock_all
 *                  epoch: MPI_Put of the message, MPI_Win_flush, the stamp
 *                  into the target's flag, MPI_Win_flush; the target polls
 *                  its own flag. With a window of MPI_Win_allocate_shared
 *                  (Open MPI: osc sm) the flag is put and polled with
 *                  loads after MPI_Win_sync, the fastest one-sided
 *                  ping-pong on one host; else, as before, the flag is
 *                  MPI_Fetch_and_op's on a window of MPI_Win_allocate
 *   mpi-pscw       MPI_Put in MPI_Win_start/complete; the target keeps its
 *                  window posted (MPI_Win_post/wait)
 *   mpi-fence      MPI_Put between two MPI_Win_fence
 *
 * Usage: mpirun -np 2 pingpong [-i ITERS] [-r ROUNDS] [-w WARMUP] SIZE...
 * (sizes in bytes, multiples of 8). For each size, a warm-up, then ROUNDS
 * rounds of ITERS round trips of every variant in turn; rank 0 times each
 * round trip and prints one CSV line per variant and size whose figures
 * are over the rounds' medians of half round trips, in ns (as the
 * machine's floor in C and Open MPI's own benchmarks report them: the
 * median of single round trips, which a hiccup of the machine does not
 * move).
 * Every message carries a stamp in its first and last words, which the
 * target checks; a wrong one aborts the run. As in pingpong.go, the check
 * comes after the answer is sent, off the round trip's path: messages
 * rotate through SLOTS areas of the windows, so that the peer writes a
 * message's area again only after the check. After the CSV header,
 * "# config" lines say how each variant calls MPI.
 */
#include "common.h"

static int me, peer;
static int64_t *msg, *in, *base; /* outgoing, send-recv's incoming, the window */
static long nmax;                 /* words of the largest message */
static MPI_Win win;               /* fence's and pscw's */
static struct flagwin fw;         /* put-flag's */
static MPI_Group gpeer;
static int64_t stamps;

static void stamp(int64_t *m, long n, int64_t s)
{
	m[0] = s;
	m[n - 1] = s;
}

/* A message rotates through SLOTS areas of nmax words: slot(s) is the
 * word offset of the area of the message stamped s. */
#define SLOTS 4
static long slot(int64_t s) { return (long)(s % SLOTS) * nmax; }

static void check(const int64_t *m, long n, int64_t s, const char *variant)
{
	if (m[0] != s || m[n - 1] != s) {
		fprintf(stderr, "pingpong %s: message %lld arrived with first word %lld and last word %lld: data not delivered\n",
			variant, (long long)s, (long long)m[0], (long long)m[n - 1]);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

/* expect notes the received message to check after the answer; verify
 * checks it. */
static const int64_t *pend;
static long pend_n;
static int64_t pend_s;
static const char *pend_v;
static void expect(const int64_t *m, long n, int64_t s, const char *variant)
{
	pend = m;
	pend_n = n;
	pend_s = s;
	pend_v = variant;
}
static void verify(void)
{
	if (pend)
		check(pend, pend_n, pend_s, pend_v);
	pend = NULL;
}

/* send-recv */
static void sr_send(long n, int64_t s) { stamp(msg, n, s); MPI_Send(msg, n, MPI_INT64_T, peer, 1, MPI_COMM_WORLD); }
static void sr_recv(long n, int64_t s)
{
	MPI_Recv(in, n, MPI_INT64_T, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	expect(in, n, s, "mpi-send-recv");
}

/* put-flag: the stamps only grow, so the flag is the stamp itself. */
static void flag_open(void) { MPI_Win_lock_all(MPI_MODE_NOCHECK, fw.win); }
static void flag_close(void) { MPI_Win_unlock_all(fw.win); }
static void flag_send(long n, int64_t s)
{
	stamp(msg, n, s);
	flagwin_put(&fw, msg, n, slot(s), peer);
	flagwin_raise(&fw, peer, s);
}
static void flag_recv(long n, int64_t s)
{
	flagwin_wait(&fw, me, s);
	expect(fw.base + FLAG_WORDS + slot(s), n, s, "mpi-put-flag");
}

/* pscw */
static void pscw_open(void) { MPI_Win_post(gpeer, 0, win); }
static void pscw_send(long n, int64_t s)
{
	stamp(msg, n, s);
	MPI_Win_start(gpeer, 0, win);
	MPI_Put(msg, n, MPI_INT64_T, peer, slot(s), n, MPI_INT64_T, win);
	MPI_Win_complete(win);
}
static void pscw_recv(long n, int64_t s)
{
	MPI_Win_wait(win);
	expect(base + slot(s), n, s, "mpi-pscw");
	MPI_Win_post(gpeer, 0, win);
}
/* An empty access epoch ends the peer's exposure epoch still posted. */
static void pscw_close(void)
{
	MPI_Win_start(gpeer, 0, win);
	MPI_Win_complete(win);
	MPI_Win_wait(win);
}

/* fence */
static void fence_open(void) { MPI_Win_fence(MPI_MODE_NOPRECEDE, win); }
static void fence_close(void) { MPI_Win_fence(MPI_MODE_NOSUCCEED, win); }
static void fence_send(long n, int64_t s)
{
	stamp(msg, n, s);
	MPI_Put(msg, n, MPI_INT64_T, peer, slot(s), n, MPI_INT64_T, win);
	MPI_Win_fence(0, win);
}
static void fence_recv(long n, int64_t s)
{
	MPI_Win_fence(0, win);
	expect(base + slot(s), n, s, "mpi-fence");
}

struct variant {
	const char *name;
	void (*open)(void);
	void (*send)(long n, int64_t s);
	void (*recv)(long n, int64_t s);
	void (*close)(void);
};

static const struct variant variants[] = {
	{"mpi-send-recv", NULL, sr_send, sr_recv, NULL},
	{"mpi-fence", fence_open, fence_send, fence_recv, fence_close},
	{"mpi-pscw", pscw_open, pscw_send, pscw_recv, pscw_close},
	{"mpi-put-flag", flag_open, flag_send, flag_recv, flag_close},
};
#define NVARIANTS (int)(sizeof variants / sizeof variants[0])

/* measure runs iters round trips of n words with v; it returns the median
 * of rank 0's round trips, in ns (rts holds at least iters of them). */
static double measure(const struct variant *v, long n, int iters, double *rts)
{
	if (v->open)
		v->open();
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < iters; i++) {
		double t0 = MPI_Wtime();
		int64_t ping = stamps + 1, pong = stamps + 2;
		stamps += 2;
		if (me == 0) {
			v->send(n, ping);
			verify();
			v->recv(n, pong);
		} else {
			v->recv(n, ping);
			v->send(n, pong);
			verify();
		}
		rts[i] = (MPI_Wtime() - t0) * 1e9;
	}
	verify();
	if (v->close)
		v->close();
	qsort(rts, iters, sizeof rts[0], cmp_double);
	return iters % 2 ? rts[iters / 2] : (rts[iters / 2 - 1] + rts[iters / 2]) / 2;
}

int main(int argc, char **argv)
{
	struct options o;
	int np;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	if (np != 2)
		die("pingpong needs 2 ranks");
	parse_options(argc, argv, &o, 256L << 20);
	peer = 1 - me;
	nmax = 0;
	for (int i = 0; i < o.nsizes; i++)
		if (o.sizes[i] / 8 > nmax)
			nmax = o.sizes[i] / 8;
	msg = calloc(nmax, 8);
	in = calloc(nmax, 8);
	if (!msg || !in)
		die("out of memory");
	MPI_Win_allocate(SLOTS * nmax * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	memset(base, 0, SLOTS * nmax * 8);
	flagwin_alloc(&fw, SLOTS * nmax);
	MPI_Group world;
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	MPI_Group_incl(world, 1, &peer, &gpeer);
	MPI_Barrier(MPI_COMM_WORLD);
	if (me == 0) {
		header();
		config("mpi-send-recv", 0, "MPI_Send, MPI_Recv");
		config("mpi-fence", 1, "MPI_Win_allocate; MPI_Put between MPI_Win_fence");
		config("mpi-pscw", 1, "MPI_Win_allocate; MPI_Put in MPI_Win_start/complete, the target in MPI_Win_post/wait");
		config("mpi-put-flag", 1, flagwin_calls(&fw));
	}

	double *times = malloc(sizeof(double) * NVARIANTS * o.rounds);
	double *rts = NULL;
	int nrts = 0;
	for (int si = 0; si < o.nsizes; si++) {
		long size = o.sizes[si], n = size / 8;
		int iters = o.iters;
		if (iters == 0) {
			long k = (4L << 20) / size;
			iters = k < 10 ? 10 : k > 1000 ? 1000 : (int)k;
		}
		int warm = o.warmup;
		if (warm == 0)
			warm = iters / 10 > 2 ? iters / 10 : 2;
		int need = iters > warm ? iters : warm;
		if (need > nrts) {
			free(rts);
			nrts = need;
			if (!(rts = malloc(sizeof(double) * nrts)))
				die("out of memory");
		}
		for (int vi = 0; warm > 0 && vi < NVARIANTS; vi++)
			measure(&variants[vi], n, warm, rts);
		/* Rounds of every variant in turn, so that drift hits all alike. */
		for (int r = 0; r < o.rounds; r++)
			for (int vi = 0; vi < NVARIANTS; vi++)
				times[vi * o.rounds + r] = measure(&variants[vi], n, iters, rts) / 2.0;
		for (int vi = 0; me == 0 && vi < NVARIANTS; vi++)
			row("pingpong", variants[vi].name, size, np, iters, o.rounds,
			    &times[vi * o.rounds], (double)size);
	}
	free(times);
	free(rts);
	MPI_Group_free(&gpeer);
	MPI_Group_free(&world);
	MPI_Win_free(&fw.win);
	MPI_Win_free(&win);
	free(msg);
	free(in);
	MPI_Finalize();
	return 0;
}
