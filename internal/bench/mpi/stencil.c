/*
 * stencil.c: the MPI reference of narmabench's experiment 3, the
 * pipelined stencil Sync_p2p of the Parallel Research Kernels (Belli and
 * Hoefler, Fig. 4b), as defined in internal/bench/stencil.go:
 * A(i,j) = A(i-1,j) + A(i,j-1) - A(i-1,j-1) over a square n x n grid of
 * int64 (n = size/8: a size is the byte width of a row), first row and
 * column holding their index, split in blocks of columns over the ranks.
 * Rank p needs for row i the last value of row i of rank p-1; at the end
 * of an iteration the last rank sends -A(n-1,n-1) to rank 0 as the next
 * A(0,0). Variants:
 *
 *   mpi-send-recv  MPI_Send and MPI_Recv of each value
 *   mpi-fence      a wavefront of MPI_Win_fence epochs, one fence per
 *                  pipeline step on every rank, MPI_Put of each value
 *   mpi-pscw       MPI_Put of each value in MPI_Win_start/complete; the
 *                  target waits (MPI_Win_wait) and posts again
 *   mpi-put-flag   on a flag window (common.h) in one MPI_Win_lock_all
 *                  epoch: MPI_Put of each value into its slot of the
 *                  target's window, MPI_Win_flush, then the count of
 *                  values sent to the target into its flag, MPI_Win_flush;
 *                  the target polls its own flag until the count reaches
 *                  the values it has taken plus one. With a window of
 *                  MPI_Win_allocate_shared (Open MPI: osc sm) the count is
 *                  put and polled with loads after MPI_Win_sync
 *
 * Usage: mpirun -np N stencil [-i ITERS] [-r ROUNDS] [-w WARMUP] SIZE...
 * Times are per iteration as the last rank measured them. Verification
 * is the PRK's (the corner is iterations*(2n-2) after a round), plus
 * every received value and the whole block; a failure aborts the run.
 * After the CSV header, "# config" lines say how each variant calls MPI.
 */
#include "common.h"

static int me, np, up, down;
static long m, n, start, w;
static int64_t *a, *outs, *base;
static MPI_Win win;         /* fence's and pscw's */
static struct flagwin fw;   /* put-flag's */
static MPI_Group gup, gdown;
static int iter, fences;
static const char *vname;

static int64_t corner0(int k) { return -(int64_t)k * (m + n - 2); }
static int64_t want(long i, long j, int k)
{
	if (i == 0 && j == 0)
		return corner0(k);
	if (i == 0)
		return j;
	if (j == 0)
		return i;
	return i + j - corner0(k);
}

static void fail(const char *what, long i, long j, int64_t got, int64_t exp)
{
	fprintf(stderr, "stencil %s: %ldx%ld grid, iteration %d: %s A(%ld,%ld) is %lld, want %lld: data not delivered\n",
		vname, m, n, iter, what, i, j, (long long)got, (long long)exp);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* send-recv */
static void sr_send(long slot)
{
	MPI_Send(&outs[slot], 1, MPI_INT64_T, down, slot == m ? 22 : 21, MPI_COMM_WORLD);
}
static int64_t sr_recv(long slot)
{
	int64_t v;
	MPI_Recv(&v, 1, MPI_INT64_T, up, slot == m ? 22 : 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return v;
}

/* fence: rank p computes row i in pipeline step i+p-1 and puts its last
 * value then; the fence ending the step makes it visible for step i+p. */
static void fence_to(int k)
{
	for (; fences < k; fences++)
		MPI_Win_fence(0, win);
}
static void fence_open(void) { fences = 0; MPI_Win_fence(MPI_MODE_NOPRECEDE, win); }
static void fence_row(long i) { fence_to((int)(i + me - 1)); }
static void fence_send(long slot) { MPI_Put(&outs[slot], 1, MPI_INT64_T, down, slot, 1, MPI_INT64_T, win); }
static int64_t local(long slot) { return base[slot]; }
static void fence_end(void) { fence_to((int)(m + np - 2)); fences = 0; }
static void fence_close(void) { MPI_Win_fence(MPI_MODE_NOSUCCEED, win); }

/* pscw */
static void pscw_open(void) { MPI_Win_post(gup, 0, win); }
static void pscw_send(long slot)
{
	MPI_Win_start(gdown, 0, win);
	MPI_Put(&outs[slot], 1, MPI_INT64_T, down, slot, 1, MPI_INT64_T, win);
	MPI_Win_complete(win);
}
static int64_t pscw_recv(long slot)
{
	MPI_Win_wait(win);
	int64_t v = base[slot];
	MPI_Win_post(gup, 0, win);
	return v;
}
static void pscw_close(void)
{
	MPI_Win_start(gdown, 0, win);
	MPI_Win_complete(win);
	MPI_Win_wait(win);
}

/* put-flag: a rank sends to down only and takes from up only, so the
 * flag of a window counts the values of one origin. They count on over
 * rounds and sizes, as the flag does. A slot is not put again before its
 * target took it: the next iteration starts on rank 0 only when the
 * corner has come round through every rank. */
static int64_t nsent, ntaken;
static void flag_open(void) { MPI_Win_lock_all(MPI_MODE_NOCHECK, fw.win); }
static void flag_send(long slot)
{
	flagwin_put(&fw, &outs[slot], 1, slot, down);
	flagwin_raise(&fw, down, ++nsent);
}
static int64_t flag_recv(long slot)
{
	flagwin_wait(&fw, me, ++ntaken);
	return fw.base[FLAG_WORDS + slot];
}
static void flag_close(void) { MPI_Win_unlock_all(fw.win); }

struct variant {
	const char *name;
	void (*open)(void);
	void (*send)(long slot);
	int64_t (*recv)(long slot);
	void (*row)(long i);
	void (*end)(void);
	void (*close)(void);
};

static const struct variant variants[] = {
	{"mpi-send-recv", NULL, sr_send, sr_recv, NULL, NULL, NULL},
	{"mpi-fence", fence_open, fence_send, local, fence_row, fence_end, fence_close},
	{"mpi-pscw", pscw_open, pscw_send, pscw_recv, NULL, NULL, pscw_close},
	{"mpi-put-flag", flag_open, flag_send, flag_recv, NULL, NULL, flag_close},
};
#define NVARIANTS (int)(sizeof variants / sizeof variants[0])

static void sweep(const struct variant *v, int iters)
{
	int k = iter, last = np - 1;
	if (me == 0 && k > 0) {
		int64_t c = v->recv(m);
		if (c != corner0(k))
			fail("corner", m - 1, n - 1, -c, -corner0(k));
		a[0] = c;
	}
	int64_t left = start - 1;
	for (long i = 1; i < m; i++) {
		if (v->row)
			v->row(i);
		int64_t *r = a + i * w, *prev = a + (i - 1) * w;
		if (me > 0) {
			int64_t l = v->recv(i);
			if (l != want(i, start - 1, k))
				fail("received", i, start - 1, l, want(i, start - 1, k));
			r[0] = prev[0] + l - left;
			left = l;
		}
		for (long j = 1; j < w; j++)
			r[j] = prev[j] + r[j - 1] - prev[j - 1];
		if (me < last) {
			outs[i] = r[w - 1];
			v->send(i);
		}
	}
	if (me == last && k < iters - 1) {
		outs[m] = -a[m * w - 1];
		v->send(m);
	}
	if (v->end)
		v->end();
}

/* measure runs iters iterations with v from the initial grid, verifies
 * them and returns the last rank's time in ns on rank 0. */
static double measure(const struct variant *v, int iters)
{
	vname = v->name;
	memset(a, 0, sizeof(int64_t) * m * w);
	for (long j = 0; j < w; j++)
		a[j] = start + j;
	if (me == 0)
		for (long i = 0; i < m; i++)
			a[i * w] = i;
	if (v->open)
		v->open();
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (iter = 0; iter < iters; iter++)
		sweep(v, iters);
	double t = (MPI_Wtime() - t0) * 1e9;
	if (v->close)
		v->close();
	iter = iters - 1;
	if (me == np - 1 && a[m * w - 1] != (int64_t)iters * (m + n - 2))
		fail("corner (PRK check)", m - 1, n - 1, a[m * w - 1], (int64_t)iters * (m + n - 2));
	for (long i = 0; i < m; i++)
		for (long j = 0; j < w; j++)
			if (a[i * w + j] != want(i, start + j, iters - 1))
				fail("verification:", i, start + j, a[i * w + j], want(i, start + j, iters - 1));
	if (me == np - 1)
		MPI_Send(&t, 1, MPI_DOUBLE, 0, 23, MPI_COMM_WORLD);
	else if (me == 0)
		MPI_Recv(&t, 1, MPI_DOUBLE, np - 1, 23, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return t;
}

int main(int argc, char **argv)
{
	struct options o;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	if (np < 2)
		die("stencil needs at least 2 ranks");
	parse_options(argc, argv, &o, 64L << 10);
	up = (me + np - 1) % np;
	down = (me + 1) % np;
	long mmax = 0;
	for (int i = 0; i < o.nsizes; i++) {
		if (o.sizes[i] / 8 < 2L * np)
			die("stencil: need at least 2 columns per rank");
		if (o.sizes[i] / 8 > mmax)
			mmax = o.sizes[i] / 8;
	}
	outs = calloc(mmax + 1, 8);
	MPI_Win_allocate((mmax + 1) * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	memset(base, 0, (mmax + 1) * 8);
	flagwin_alloc(&fw, mmax + 1);
	MPI_Group world;
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	MPI_Group_incl(world, 1, &up, &gup);
	MPI_Group_incl(world, 1, &down, &gdown);
	MPI_Barrier(MPI_COMM_WORLD);
	if (me == 0) {
		header();
		config("mpi-send-recv", 0, "MPI_Send, MPI_Recv of each value");
		config("mpi-fence", 1, "MPI_Win_allocate; MPI_Put of each value, one MPI_Win_fence a pipeline step");
		config("mpi-pscw", 1, "MPI_Win_allocate; MPI_Put of each value in MPI_Win_start/complete, the target in MPI_Win_wait/post");
		config("mpi-put-flag", 1, flagwin_calls(&fw));
	}

	double *times = malloc(sizeof(double) * NVARIANTS * o.rounds);
	for (int si = 0; si < o.nsizes; si++) {
		long size = o.sizes[si];
		m = n = size / 8;
		start = me * n / np;
		w = (me + 1) * n / np - start;
		a = malloc(sizeof(int64_t) * m * w);
		if (!outs || !a || !times)
			die("out of memory");
		int iters = o.iters;
		if (iters == 0) {
			/* as narmabench's stItersFor */
			long k = (1L << 22) / (n * n);
			iters = k < 4 ? 4 : k > 2000 ? 2000 : (int)k;
		}
		int warm = o.warmup == 0 ? 1 : o.warmup;
		for (int vi = 0; warm > 0 && vi < NVARIANTS; vi++)
			measure(&variants[vi], warm);
		for (int r = 0; r < o.rounds; r++)
			for (int vi = 0; vi < NVARIANTS; vi++)
				times[vi * o.rounds + r] = measure(&variants[vi], iters) / iters;
		for (int vi = 0; me == 0 && vi < NVARIANTS; vi++)
			row("stencil", variants[vi].name, size, np, iters, o.rounds,
			    &times[vi * o.rounds], 8.0 * (m - 1));
		free(a);
	}
	free(times);
	MPI_Group_free(&gup);
	MPI_Group_free(&gdown);
	MPI_Group_free(&world);
	MPI_Win_free(&fw.win);
	MPI_Win_free(&win);
	free(outs);
	MPI_Finalize();
	return 0;
}
