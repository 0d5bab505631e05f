package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/narma-rma/narma"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// CholeskyTiles is the number of tiles per dimension of the matrix the
// Cholesky experiment factorizes: a size of s bytes is a tile edge of
// b = s/8 elements and a matrix of N = CholeskyTiles*b.
const CholeskyTiles = 8

// DefaultCholeskySizes are the tile edges of the Cholesky experiment when
// Config.Sizes is nil: tiles of 8x8 to 128x128 elements (matrices of 64 to
// 1024 rows).
var DefaultCholeskySizes = []int{64, 128, 256, 512, 1024}

// CholeskyMaxResidual is the largest relative residual
// ||A - L L^T||_F / ||A||_F the Cholesky experiment accepts.
const CholeskyMaxResidual = 1e-10

// cholVariant is one Cholesky variant: send gives a tile message to one
// rank, recv takes one tile message aimed at this rank (whichever came
// first) and returns its tile id and words.
type cholVariant struct {
	Variant
	send func(ch *cholesky, msg []int64, id, dst int) error
	recv func(ch *cholesky) (id int, msg []int64, err error)
}

var cholVariants = []cholVariant{
	{Variant: Variant{Name: "send-recv", Summary: "Send of each tile; the receiver Probes any tag (tag = tile id), then Recvs", Classic: true},
		send: cholSendRecvSend, recv: cholSendRecvRecv},
	{Variant: Variant{Name: "one-sided", Summary: "Put of the tile into its slot, FetchAndOp on the receiver's queue counter, Flush, tile id into the claimed queue entry (FetchAndOp Replace), Flush; the receiver polls its queue", Classic: true},
		send: cholOneSidedSend, recv: cholOneSidedRecv},
	{Variant: Variant{Name: "put-notify", Summary: "PutNotify of the tile into its slot with Tag = tile id, FlushLocal; the receiver waits with a persistent any-source any-tag request and reads the tile id from its Status"},
		send: cholNotifySend, recv: cholNotifyRecv},
}

// Cholesky returns experiment 5, the tile Cholesky factorization as a task
// graph of Belli and Hoefler's Fig. 5. A symmetric positive definite
// matrix of CholeskyTiles x CholeskyTiles tiles of b x b float64 elements
// (b = size/8) is factorized by the right-looking tile algorithm: for each
// k, POTRF of tile (k,k), TRSM of the tiles (i,k) below it, and SYRK and
// GEMM updates of the trailing tiles, all kernels from gonum. The tiles
// are distributed 1-D cyclically by tile column (column j on rank j mod n),
// so the diagonal tile stays at the owner of its column's TRSMs and only
// the panel tiles (i,k), i > k, travel: each goes, as soon as its TRSM
// has produced it, to the owners of the columns k+1..i that update with
// it, along a binary tree rooted at its producer (every receiver forwards
// it to its children at once). Every rank runs its tasks in the order of
// the sequential algorithm and, whenever a task needs a tile it has not
// got, takes the tile messages that arrive, whichever they are, storing
// and forwarding them, until it has it.
//
// The matrix is the same on every run: A_ij = A_ji uniform in [-1, 1)
// from a hash of (i, j), A_ii = N, hence diagonally dominant. A row's
// time is the time of one factorization, from a barrier to the barrier
// after it, as rank 0 measured it; its bandwidth is the bytes of the
// factorized lower triangle of tiles per median time. Every tile message
// carries a stamp of the factorization and tile in its first and last
// words, checked by every receiver, and after the last factorization of
// each measured round rank 0 gathers L and checks that
// ||A - L L^T||_F / ||A||_F < CholeskyMaxResidual. Config.Corrupt sees every
// tile message (a producer's and a forwarder's), the float64 bits of the
// tile as int64 words between the two stamps.
func Cholesky() Experiment {
	return Experiment{
		Name:     "cholesky",
		Summary:  fmt.Sprintf("tile Cholesky factorization as a task graph, %dx%d tiles of 8x8 to 128x128 (Belli & Hoefler, Fig. 5)", CholeskyTiles, CholeskyTiles),
		Measure:  "time per factorization",
		SizeName: func(size int) string { return fmt.Sprintf("%dx%d", size/8, size/8) },
		Columns:  fmt.Sprintf("tiles of b x b float64 elements, a matrix of %d x %d tiles (--sizes gives 8*b bytes, a tile's row)", CholeskyTiles, CholeskyTiles),
		Ranks:    0,
		Variants: tableVariants(cholVariants),
		Run:      runCholesky,
	}
}

// cholesky is one rank's state in the Cholesky job.
//
// The window holds one slot per panel tile (a rank receives a tile at
// most once per factorization), then the queue of the one-sided variant:
// one entry per panel tile and a counter. Factorizations are separated by
// barriers, after which every message of the previous one has been taken,
// so slots and queue entries are reused without further synchronization.
type cholesky struct {
	c       *narma.Comm
	ctx     context.Context
	cfg     Config
	v       cholVariant
	w       *narma.Win[int64]
	me, np  int
	t, b    int   // tiles per dimension, tile edge
	m       int   // words of a tile message: stamp, b*b elements, stamp
	npanel  int   // panel tiles, (i,k) with i > k
	queue   int   // displacement of the one-sided queue, after the slots
	count   int   // displacement of the one-sided queue counter
	read    int64 // queue entries this rank has taken so far
	req     *narma.Request
	orig    [][]float64 // the matrix's tiles this rank owns, by tile index i*t+j
	tiles   [][]float64 // the working tiles: owned ones, and received panel tiles
	have    []bool      // panel tiles this rank has got in this factorization
	msgs    [][]int64   // outgoing messages, by panel tile id
	in      []int64     // receive buffer of send-recv
	fact    int64       // factorizations run so far, by every variant
	scratch int64       // FetchAndOp results
}

// panelID is the id of panel tile (i,k), i > k: 0 to t(t-1)/2-1.
func panelID(i, k int) int { return i*(i-1)/2 + k }

// panelTile returns the tile (i,k) of panel tile id.
func panelTile(id int) (i, k int) {
	i = 1
	for panelID(i+1, 0) <= id {
		i++
	}
	return i, id - panelID(i, 0)
}

// owner is the rank of tile column j.
func (ch *cholesky) owner(j int) int { return j % ch.np }

// slot is the displacement of the window slot of panel tile id.
func (ch *cholesky) slot(id int) int { return id * ch.m }

// tileStamp is the stamp of tile id in factorization f.
func tileStamp(f int64, id int) int64 { return f<<32 | int64(id+1) }

// tree returns the ranks that need panel tile id, its producer first, in
// the order of the broadcast tree: position p forwards to 2p+1 and 2p+2.
func (ch *cholesky) tree(id int) []int {
	i, k := panelTile(id)
	ranks := []int{ch.owner(k)}
	for j := k + 1; j <= i; j++ {
		if r := ch.owner(j); !slices.Contains(ranks, r) {
			ranks = append(ranks, r)
		}
	}
	return ranks
}

// cholIters is the default number of factorizations per measured round
// for tiles of b x b: about 10^8 flops, between 1 and 100.
func cholIters(b int) int {
	n := float64(CholeskyTiles * b)
	return max(1, min(100, int(1e8/(n*n*n/3))))
}

// cholEntry is the element (i, j) of the experiment's matrix of n rows.
func cholEntry(i, j, n int) float64 {
	if i == j {
		return float64(n)
	}
	if i < j {
		i, j = j, i
	}
	x := uint64(i)<<32 | uint64(j)
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/(1<<52) - 1
}

func runCholesky(c *narma.Comm, cfg Config) (rows []Row, err error) {
	e := Cholesky()
	if err := e.Check(cfg); err != nil {
		return nil, err
	}
	np := c.Size()
	if np < 2 {
		return nil, fmt.Errorf("cholesky needs at least 2 ranks, the job has %d", np)
	}
	sizes := cfg.sizesOr(DefaultCholeskySizes)
	rounds := cfg.rounds()
	variants := selectedEntries(e, cfg, cholVariants)
	ctx := c.Context()
	t := CholeskyTiles
	for si, size := range sizes {
		b := size / 8
		ch := &cholesky{c: c, ctx: ctx, cfg: cfg, me: c.Rank(), np: np, t: t, b: b,
			m: b*b + 2, npanel: t * (t - 1) / 2}
		ch.queue = ch.npanel * ch.m
		ch.count = ch.queue + ch.npanel
		ch.setup()
		if ch.w, err = narma.Allocate[int64](ctx, c, ch.count+1, narma.WithStrategy(cfg.Strategy)); err != nil {
			return nil, err
		}
		if ch.req, err = ch.w.NotifyInit(narma.AnySource, narma.AnyTag, 1); err != nil {
			return nil, err
		}
		iters := cfg.Iters
		if iters == 0 {
			iters = cholIters(b)
		}
		warm := cfg.Warmup
		if warm == 0 {
			warm = max(1, iters/10)
		}
		times, err := interleavedRounds(variants, newPlan(c, cfg, e, si, sizes, iters, warm, 1),
			meanTime(ch.measure))
		if err != nil {
			return nil, err
		}
		if err := ch.req.Free(); err != nil {
			return nil, err
		}
		if err := c.Barrier(ctx); err != nil {
			return nil, err
		}
		if err := ch.w.Free(ctx); err != nil {
			return nil, err
		}
		if ch.me != 0 {
			continue
		}
		lower := t * (t + 1) / 2 * b * b * 8
		rows = appendRows(rows, e.Name, variants, times, size, np, rounds, float64(lower))
	}
	return rows, nil
}

// setup builds this rank's tiles of the matrix and the buffers.
func (ch *cholesky) setup() {
	t, b := ch.t, ch.b
	n := t * b
	ch.orig = make([][]float64, t*t)
	ch.tiles = make([][]float64, t*t)
	for j := 0; j < t; j++ {
		for i := j; i < t; i++ {
			if ch.owner(j) == ch.me {
				a := make([]float64, b*b)
				for r := 0; r < b; r++ {
					for s := 0; s < b; s++ {
						a[r*b+s] = cholEntry(i*b+r, j*b+s, n)
					}
				}
				ch.orig[i*t+j] = a
			}
			ch.tiles[i*t+j] = make([]float64, b*b)
		}
	}
	ch.have = make([]bool, ch.npanel)
	ch.msgs = make([][]int64, ch.npanel)
	for id := range ch.msgs {
		ch.msgs[id] = make([]int64, ch.m)
	}
	ch.in = make([]int64, ch.m)
}

func (ch *cholesky) errorf(format string, args ...any) error {
	return fmt.Errorf("cholesky %s: %w", ch.v.Name, fmt.Errorf(format, args...))
}

// measure runs iters factorizations with variant v in one LockAll epoch,
// then checks the last one's result, and returns the time this rank
// measured for the factorizations.
func (ch *cholesky) measure(v cholVariant, iters int) (time.Duration, error) {
	ch.v = v
	if err := ch.w.LockAll(ch.ctx, 0); err != nil {
		return 0, ch.errorf("LockAll: %w", err)
	}
	var d time.Duration
	for it := 0; it < iters; it++ {
		ch.fact++
		ch.reset()
		if err := ch.c.Barrier(ch.ctx); err != nil {
			return 0, err
		}
		start := time.Now()
		if err := ch.factorize(); err != nil {
			return 0, ch.errorf("tiles of %dx%d, factorization %d: %w", ch.b, ch.b, ch.fact, err)
		}
		// Completes this rank's puts; after the barrier every message of
		// the factorization has been taken.
		if err := ch.w.FlushAll(ch.ctx); err != nil {
			return 0, err
		}
		if err := ch.c.Barrier(ch.ctx); err != nil {
			return 0, err
		}
		d += time.Since(start)
	}
	if err := ch.w.UnlockAll(ch.ctx); err != nil {
		return 0, ch.errorf("UnlockAll: %w", err)
	}
	if err := ch.verify(); err != nil {
		return 0, ch.errorf("tiles of %dx%d, factorization %d: %w", ch.b, ch.b, ch.fact, err)
	}
	return d, nil
}

// reset restores this rank's tiles of the matrix and forgets the
// received ones.
func (ch *cholesky) reset() {
	for idx, a := range ch.orig {
		if a != nil {
			copy(ch.tiles[idx], a)
		}
	}
	clear(ch.have)
}

// Views of tiles as gonum matrices.

func (ch *cholesky) general(i, j int) blas64.General {
	return blas64.General{Rows: ch.b, Cols: ch.b, Stride: ch.b, Data: ch.tiles[i*ch.t+j]}
}

func (ch *cholesky) symmetric(i int) blas64.Symmetric {
	return blas64.Symmetric{Uplo: blas.Lower, N: ch.b, Stride: ch.b, Data: ch.tiles[i*ch.t+i]}
}

// factorize runs this rank's tasks of one factorization: for each k, if
// it owns column k, POTRF and the TRSMs of the column, each panel tile
// sent as soon as it is computed; then the updates of its columns j > k.
func (ch *cholesky) factorize() error {
	t := ch.t
	for k := 0; k < t; k++ {
		if ch.owner(k) == ch.me {
			lkk, ok := lapack64.Potrf(ch.symmetric(k))
			if !ok {
				return fmt.Errorf("POTRF of tile (%d,%d): not positive definite", k, k)
			}
			lkk.Diag = blas.NonUnit
			for i := k + 1; i < t; i++ {
				blas64.Trsm(blas.Right, blas.Trans, 1, lkk, ch.general(i, k))
				id := panelID(i, k)
				ch.have[id] = true
				if err := ch.forward(id); err != nil {
					return err
				}
			}
		}
		for j := k + 1; j < t; j++ {
			if ch.owner(j) != ch.me {
				continue
			}
			if err := ch.need(panelID(j, k)); err != nil {
				return err
			}
			ljk := ch.general(j, k)
			blas64.Syrk(blas.NoTrans, -1, ljk, 1, ch.symmetric(j))
			for i := j + 1; i < t; i++ {
				if err := ch.need(panelID(i, k)); err != nil {
					return err
				}
				blas64.Gemm(blas.NoTrans, blas.Trans, -1, ch.general(i, k), ljk, 1, ch.general(i, j))
			}
		}
	}
	return nil
}

// forward sends panel tile id, which this rank has, to its children in
// the tile's broadcast tree.
func (ch *cholesky) forward(id int) error {
	tree := ch.tree(id)
	p := slices.Index(tree, ch.me)
	if p < 0 || 2*p+1 >= len(tree) {
		return nil
	}
	i, k := panelTile(id)
	msg := ch.msgs[id]
	s := tileStamp(ch.fact, id)
	msg[0], msg[ch.m-1] = s, s
	for x, f := range ch.tiles[i*ch.t+k] {
		msg[1+x] = int64(math.Float64bits(f))
	}
	if ch.cfg.Corrupt != nil {
		ch.cfg.Corrupt(ch.v.Name, msg)
	}
	for _, c := range []int{2*p + 1, 2*p + 2} {
		if c < len(tree) {
			if err := ch.v.send(ch, msg, id, tree[c]); err != nil {
				return fmt.Errorf("sending tile (%d,%d) to rank %d: %w", i, k, tree[c], err)
			}
		}
	}
	return nil
}

// need returns once this rank has panel tile id, taking (storing and
// forwarding) the tile messages that arrive until then.
func (ch *cholesky) need(id int) error {
	for !ch.have[id] {
		got, msg, err := ch.v.recv(ch)
		if err != nil {
			return fmt.Errorf("waiting for tile %d: %w", id, err)
		}
		if got < 0 || got >= ch.npanel || ch.have[got] {
			return fmt.Errorf("rank %d got a message for tile id %d: data not delivered", ch.me, got)
		}
		want := tileStamp(ch.fact, got)
		if first, last := msg[0], msg[ch.m-1]; first != want || last != want {
			return fmt.Errorf("tile %d arrived at rank %d with first word %#x and last word %#x, want %#x: data not delivered",
				got, ch.me, first, last, want)
		}
		i, k := panelTile(got)
		tile := ch.tiles[i*ch.t+k]
		for x := range tile {
			tile[x] = math.Float64frombits(uint64(msg[1+x]))
		}
		ch.have[got] = true
		if err := ch.forward(got); err != nil {
			return err
		}
	}
	return nil
}

// verify gathers L on rank 0, which checks its residual.
func (ch *cholesky) verify() error {
	t, b := ch.t, ch.b
	const tagGather = 1 << 20
	if ch.me != 0 {
		for j := ch.me; j < t; j += ch.np {
			for i := j; i < t; i++ {
				if err := ch.c.Send(ch.ctx, narma.Bytes(ch.tiles[i*t+j]), 0, tagGather+i*t+j); err != nil {
					return err
				}
			}
		}
		return nil
	}
	n := t * b
	l := mat.NewDense(n, n, nil)
	buf := make([]float64, b*b)
	for j := 0; j < t; j++ {
		for i := j; i < t; i++ {
			tile := ch.tiles[i*t+j]
			if r := ch.owner(j); r != 0 {
				if _, err := ch.c.Recv(ch.ctx, narma.Bytes(buf), r, tagGather+i*t+j); err != nil {
					return err
				}
				tile = buf
			}
			for r := 0; r < b; r++ {
				for s := 0; s < b; s++ {
					if i > j || r >= s {
						l.Set(i*b+r, j*b+s, tile[r*b+s])
					}
				}
			}
		}
	}
	a := mat.NewDense(n, n, nil)
	for r := 0; r < n; r++ {
		for s := 0; s < n; s++ {
			a.Set(r, s, cholEntry(r, s, n))
		}
	}
	var diff mat.Dense
	diff.Mul(l, l.T())
	diff.Sub(a, &diff)
	res := mat.Norm(&diff, 2) / mat.Norm(a, 2)
	if !(res < CholeskyMaxResidual) {
		return fmt.Errorf("residual ||A - L L^T||_F / ||A||_F = %g, want < %g: wrong factor", res, CholeskyMaxResidual)
	}
	return nil
}

// send-recv: the tag is the tile id; the receiver probes for any tag.

func cholSendRecvSend(ch *cholesky, msg []int64, id, dst int) error {
	return ch.c.Send(ch.ctx, narma.Bytes(msg), dst, id)
}

func cholSendRecvRecv(ch *cholesky) (int, []int64, error) {
	st, err := ch.c.Probe(ch.ctx, narma.AnySource, narma.AnyTag)
	if err != nil {
		return 0, nil, err
	}
	if st.Count != 8*ch.m {
		return st.Tag, nil, fmt.Errorf("message of %d bytes from rank %d, want %d: data not delivered", st.Count, st.Source, 8*ch.m)
	}
	if _, err := ch.c.Recv(ch.ctx, narma.Bytes(ch.in), st.Source, st.Tag); err != nil {
		return 0, nil, err
	}
	return st.Tag, ch.in, nil
}

// one-sided: the sender puts the tile into its slot, claims an entry of
// the receiver's queue with a FetchAndOp on its counter, flushes, and
// writes the tile's stamp into the entry with an atomic replace; the
// receiver polls its next queue entry with atomic reads until it holds a
// stamp of the current factorization. Entries are used round robin: a
// rank receives at most npanel tiles per factorization, and takes all of
// them before the barrier that ends it.

func cholOneSidedSend(ch *cholesky, msg []int64, id, dst int) error {
	if err := ch.w.Put(msg, dst, ch.slot(id)); err != nil {
		return err
	}
	var pos int64
	if err := ch.w.FetchAndOp(1, &pos, dst, ch.count, narma.Sum); err != nil {
		return err
	}
	if err := ch.w.Flush(ch.ctx, dst); err != nil {
		return err
	}
	if err := ch.w.FetchAndOp(tileStamp(ch.fact, id), &ch.scratch, dst, ch.queue+int(pos%int64(ch.npanel)), narma.Replace); err != nil {
		return err
	}
	return ch.w.Flush(ch.ctx, dst)
}

func cholOneSidedRecv(ch *cholesky) (int, []int64, error) {
	entry := ch.queue + int(ch.read%int64(ch.npanel))
	var v int64
	err := poll(ch.ctx, func() (bool, error) {
		if err := ch.w.FetchAndOp(0, &v, ch.me, entry, narma.NoOp); err != nil {
			return false, err
		}
		if err := ch.w.Flush(ch.ctx, ch.me); err != nil {
			return false, err
		}
		f := v >> 32
		if f > ch.fact {
			return false, fmt.Errorf("queue entry holds %#x in factorization %d", v, ch.fact)
		}
		return f == ch.fact, nil
	})
	if err != nil {
		return 0, nil, err
	}
	ch.read++
	id := int(v&(1<<32-1)) - 1
	if id < 0 || id >= ch.npanel {
		return id, nil, nil
	}
	return id, ch.w.Local()[ch.slot(id):][:ch.m], nil
}

// put-notify: the tag is the tile id; one persistent request takes the
// notices from any source with any tag, one at a time. The sender
// completes each put locally before it reuses the tile's buffer (and
// under the deferred strategy nothing moves before a flush); the notice
// tells the receiver that the tile is there, so the sender waits for no
// answer.

func cholNotifySend(ch *cholesky, msg []int64, id, dst int) error {
	if err := ch.w.PutNotify(msg, dst, ch.slot(id), narma.Tag(id)); err != nil {
		return err
	}
	return ch.w.FlushLocal(ch.ctx, dst)
}

func cholNotifyRecv(ch *cholesky) (int, []int64, error) {
	if err := ch.req.Start(); err != nil {
		return 0, nil, err
	}
	st, err := ch.req.Wait(ch.ctx)
	if err != nil {
		return 0, nil, err
	}
	if st.Tag < 0 || st.Tag >= ch.npanel {
		return st.Tag, nil, nil
	}
	return st.Tag, ch.w.Local()[ch.slot(st.Tag):][:ch.m], nil
}
