package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/coarray"
)

// Tags of the stencil's notices and messages.
const (
	tagStRow    = 21 // a boundary value, rank p to rank p+1
	tagStCorner = 22 // the corner, last rank to rank 0
	tagStTime   = 23 // the last rank's measured time, to rank 0
)

// DefaultStencilSizes are the sizes of the stencil when Config.Sizes is
// nil: grid rows of 256 B to 16 KiB, that is square grids of 32 x 32 to
// 2048 x 2048 points.
var DefaultStencilSizes = []int{256, 1 << 10, 4 << 10, 16 << 10}

// MaxStencilSize is the largest size the stencil accepts: rows of 64 KiB,
// a grid of 8192 x 8192 points (512 MiB over all ranks).
const MaxStencilSize = 64 << 10

// stVariant is one stencil variant: how a value travels to the next rank
// in the ring (a row's boundary value to rank p+1, the corner from the
// last rank to rank 0) and how its arrival is learnt. slot is the value's
// word in the target's window: the row, or m for the corner. row, if not
// nil, is called on every rank before it computes row i, and endIter at
// the end of every iteration; open and close, run untimed around each
// measured run, open and close its epochs.
type stVariant struct {
	Variant
	open    func(s *stencil) error
	send    func(s *stencil, slot int, out []int64) error
	recv    func(s *stencil, slot int) (int64, error)
	row     func(s *stencil, i int) error
	endIter func(s *stencil) error
	close   func(s *stencil) error
}

var stVariants = []stVariant{
	{Variant: Variant{Name: "send-recv", Summary: "two-sided Send and Recv of each value", Classic: true},
		send: stSend, recv: stRecv},
	{Variant: Variant{Name: "fence", Summary: "wavefront of Fence epochs: Put of each value, one Fence on every rank per pipeline step", Classic: true},
		open: stFenceOpen, send: stFenceSend, recv: stLocal, row: stFenceRow, endIter: stFenceEnd, close: stFenceClose},
	{Variant: Variant{Name: "pscw", Summary: "Put of each value in Start/Complete; target Waits and Posts again", Classic: true},
		open: stPSCWOpen, send: stPSCWSend, recv: stPSCWRecv, close: stPSCWClose},
	{Variant: Variant{Name: "put-notify", Summary: "PutNotify of each value with a Tag, FlushLocal; target waits with a persistent request"},
		open: stLockAll, send: stNotifySend, recv: stNotifyRecv, close: stUnlockAll},
	{Variant: Variant{Name: "counters", Summary: "PutNotify of each value with a Counter, FlushLocal; target WaitCounter"},
		open: stLockAll, send: stCounterSend, recv: stCounterRecv, close: stUnlockAll},
	{Variant: Variant{Name: "events", Summary: "coarray Put of each value, then Event Post; target Event Wait"},
		send: stEventSend, recv: stEventRecv},
}

// Stencil returns experiment 3, the pipelined stencil Sync_p2p of the
// Parallel Research Kernels (Belli and Hoefler, Fig. 4b; Fanfarillo and
// Del Vento, Fig. 3; Dinan et al., Fig. 5): A(i,j) = A(i-1,j) + A(i,j-1) -
// A(i-1,j-1) over an m x n grid whose first row and column hold their
// index (A(0,j) = j, A(i,0) = i). The grid is split in blocks of columns
// over the ranks, at least two columns each. Each rank sweeps its block
// row by row, and needs for row i the last value of row i of its left
// neighbour: one 8-byte message per row and neighbour, so that the ranks
// form a pipeline. At the end of an iteration the last rank sends
// -A(m-1,n-1) to rank 0, which starts the next iteration with it as
// A(0,0); every variant sends the corner the way it sends the rows. It
// runs on any number of ranks from 2.
//
// A size is the size of a row of the grid in bytes: n = size/8 columns,
// and the grid is square, m = n. The values are int64 (the PRK's doubles
// hold the same integers exactly). A row's Iters is the number of
// iterations per measured round, its times are times per iteration as the
// last rank measured them (from the barrier that starts a round to the
// end of its sweep), and its bandwidth is the bytes a rank sends per
// iteration, 8(m-1), over the median time (a rate of 2(m-1)(n-1) flops per
// iteration would need a field of its own).
//
// Verification is the PRK's: after k iterations the corner A(m-1,n-1) is
// k(m+n-2), which the last rank checks after each round. Since A(i,j) =
// i + j - A(0,0) inside the grid, every rank also checks every value it
// receives, as it arrives, and its whole block after each round.
func Stencil() Experiment {
	return Experiment{
		Name:     "stencil",
		Summary:  "pipelined stencil Sync_p2p of the PRK, grid rows of 256 B to 16 KiB (Belli & Hoefler, Fig. 4b)",
		Measure:  "time per iteration",
		Ranks:    0,
		Variants: tableVariants(stVariants),
		Run:      runStencil,
	}
}

// stencil is one rank's state in the stencil job.
type stencil struct {
	c        *narma.Comm
	ctx      context.Context
	cfg      Config
	variant  string
	me, np   int
	up, down int // the ranks this one receives from and sends to, in the ring
	m, n     int // the grid, for the current size
	start, w int // this rank's columns: [start, start+w)
	a        []int64
	iter     int     // the current iteration of the round, from 0
	outs     []int64 // outgoing values, one word per slot (so none is reused before its epoch ends)
	in       []int64 // send-recv's incoming value
	// The window: the boundary values of rows 0 to mmax-1, then the corner.
	win     *narma.Win[int64]
	req     *narma.Request // put-notify's request, for the up rank's notices
	counted uint64         // counters' notices received so far
	fences  int            // fence: fences of the current iteration
	// events: the coarray job, an array like the window and one event.
	im  *coarray.Images
	arr *coarray.Array[int64]
	ev  *coarray.Event
}

// stItersFor is the default number of iterations per round for an n x n
// grid: about four million points, between 4 and 2000 iterations, so that
// a round lasts milliseconds and measures the pipeline's steady state.
// (With a million points and at most 50 iterations, a round of the
// 32 x 32 grid lasted about 100 us and a 512 x 512 one 4 iterations: the
// start of a round, from the barrier to the filled pipeline, then
// weighed as much as the rest, and narma's and Open MPI's put-notify and
// send/recv rounds varied by half.) The MPI reference (mpi/stencil.c)
// uses the same rule.
func stItersFor(n int) int { return max(4, min(2000, (1<<22)/(n*n))) }

func runStencil(c *narma.Comm, cfg Config) (rows []Row, err error) {
	e := Stencil()
	if err := e.Check(cfg); err != nil {
		return nil, err
	}
	np := c.Size()
	if np < 2 {
		return nil, fmt.Errorf("stencil needs at least 2 ranks, the job has %d", np)
	}
	sizes := cfg.sizesOr(DefaultStencilSizes)
	for _, size := range sizes {
		if size > MaxStencilSize {
			return nil, fmt.Errorf("stencil: rows of %s: at most %s (a grid of %d x %d)", FormatSize(size), FormatSize(MaxStencilSize), MaxStencilSize/8, MaxStencilSize/8)
		}
		if size/8 < 2*np {
			return nil, fmt.Errorf("stencil: rows of %s: %d columns over %d ranks, need at least 2 per rank", FormatSize(size), size/8, np)
		}
	}
	rounds := cfg.rounds()
	variants := selectedEntries(e, cfg, stVariants)
	ctx := c.Context()
	mmax := slices.Max(sizes) / 8
	me := c.Rank()
	s := &stencil{c: c, ctx: ctx, cfg: cfg, me: me, np: np, up: (me + np - 1) % np, down: (me + 1) % np,
		outs: make([]int64, mmax+1), in: make([]int64, 1)}
	if s.win, err = narma.Allocate[int64](ctx, c, mmax+1, narma.WithStrategy(cfg.Strategy)); err != nil {
		return nil, err
	}
	if err := s.win.SetCounters(ctx, 1); err != nil {
		return nil, err
	}
	// Rank 0 receives only the corner, the others only rows.
	tag := tagStRow
	if me == 0 {
		tag = tagStCorner
	}
	if s.req, err = s.win.NotifyInit(s.up, tag, 1); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(variants, func(v stVariant) bool { return v.Name == "events" }) {
		if s.im, err = coarray.Init(ctx, c); err != nil {
			return nil, err
		}
		if s.arr, err = coarray.New[int64](ctx, s.im, mmax+1); err != nil {
			return nil, err
		}
		if s.ev, err = coarray.NewEvent(ctx, s.im); err != nil {
			return nil, err
		}
	}

	for si, size := range sizes {
		s.setGrid(size / 8)
		iters := cfg.Iters
		if iters == 0 {
			iters = stItersFor(s.n)
		}
		warm := cfg.Warmup
		if warm == 0 {
			warm = 1
		}
		times, err := interleavedRounds(variants, newPlan(c, cfg, e, si, sizes, iters, warm, 1),
			meanTime(s.measure))
		if err != nil {
			return nil, err
		}
		if me != 0 {
			continue
		}
		rows = appendRows(rows, e.Name, variants, times, size, np, rounds, float64(8*(s.m-1)))
	}

	if err := s.req.Free(); err != nil {
		return nil, err
	}
	if s.im != nil {
		if err := s.ev.Free(ctx); err != nil {
			return nil, err
		}
		if err := s.arr.Free(ctx); err != nil {
			return nil, err
		}
		if err := s.im.Finalize(ctx); err != nil {
			return nil, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	if err := s.win.Free(ctx); err != nil {
		return nil, err
	}
	return rows, nil
}

// setGrid sets the grid to n x n points and this rank's block of columns.
func (s *stencil) setGrid(n int) {
	s.m, s.n = n, n
	s.start = s.me * n / s.np
	s.w = (s.me+1)*n/s.np - s.start
	s.a = make([]int64, s.m*s.w)
}

func (s *stencil) errorf(format string, args ...any) error {
	return fmt.Errorf("stencil %s: %w", s.variant, fmt.Errorf(format, args...))
}

// corner0 returns A(0,0) in iteration k: -A(m-1,n-1) of iteration k-1,
// that is -k(m+n-2).
func (s *stencil) corner0(k int) int64 { return -int64(k) * int64(s.m+s.n-2) }

// want returns A(i,j) in iteration k.
func (s *stencil) want(i, j, k int) int64 {
	switch {
	case i == 0 && j == 0:
		return s.corner0(k)
	case i == 0:
		return int64(j)
	case j == 0:
		return int64(i)
	}
	return int64(i+j) - s.corner0(k)
}

// measure runs iters iterations from the initial grid with variant v,
// checks the result and returns the time the last rank measured, on rank
// 0 (zero elsewhere).
func (s *stencil) measure(v stVariant, iters int) (time.Duration, error) {
	s.variant = v.Name
	m, w := s.m, s.w
	a := s.a
	clear(a)
	for k := range w {
		a[k] = int64(s.start + k)
	}
	if s.me == 0 {
		for i := range m {
			a[i*w] = int64(i)
		}
	}
	if v.open != nil {
		if err := v.open(s); err != nil {
			return 0, s.errorf("open: %w", err)
		}
	}
	if err := s.c.Barrier(s.ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	for s.iter = 0; s.iter < iters; s.iter++ {
		if err := s.sweep(v, iters); err != nil {
			return 0, s.errorf("%s grid, iteration %d: %w", s.dims(), s.iter, err)
		}
	}
	d := time.Since(start)
	if v.close != nil {
		if err := v.close(s); err != nil {
			return 0, s.errorf("close: %w", err)
		}
	}
	if err := s.verify(iters); err != nil {
		return 0, s.errorf("%s grid, %d iterations: %w", s.dims(), iters, err)
	}
	// The last rank finishes last: its time is the round's.
	last := s.np - 1
	buf := []int64{d.Nanoseconds()}
	switch s.me {
	case last:
		return 0, s.c.Send(s.ctx, narma.Bytes(buf), 0, tagStTime)
	case 0:
		if _, err := s.c.Recv(s.ctx, narma.Bytes(buf), last, tagStTime); err != nil {
			return 0, err
		}
		return time.Duration(buf[0]), nil
	}
	return 0, nil
}

func (s *stencil) dims() string { return fmt.Sprintf("%dx%d", s.m, s.n) }

// sweep runs iteration s.iter of iters on this rank's block.
func (s *stencil) sweep(v stVariant, iters int) error {
	m, w, a, k := s.m, s.w, s.a, s.iter
	last := s.np - 1
	if s.me == 0 && k > 0 {
		c, err := v.recv(s, m)
		if err != nil {
			return err
		}
		if want := s.corner0(k); c != want {
			return fmt.Errorf("corner -A(%d,%d) from rank %d is %d, want %d: data not delivered", m-1, s.n-1, s.up, c, want)
		}
		a[0] = c
	}
	left := int64(s.start - 1) // A(i-1, start-1), for row i
	for i := 1; i < m; i++ {
		if v.row != nil {
			if err := v.row(s, i); err != nil {
				return err
			}
		}
		row, prev := a[i*w:(i+1)*w], a[(i-1)*w:i*w]
		if s.me > 0 {
			l, err := v.recv(s, i)
			if err != nil {
				return err
			}
			if want := s.want(i, s.start-1, k); l != want {
				return fmt.Errorf("A(%d,%d) from rank %d is %d, want %d: data not delivered", i, s.start-1, s.up, l, want)
			}
			row[0] = prev[0] + l - left
			left = l
		}
		for j := 1; j < w; j++ {
			row[j] = prev[j] + row[j-1] - prev[j-1]
		}
		if s.me < last {
			if err := s.send(v, i, row[w-1]); err != nil {
				return err
			}
		}
	}
	if s.me == last && k < iters-1 {
		if err := s.send(v, m, -a[m*w-1]); err != nil {
			return err
		}
	}
	if v.endIter != nil {
		return v.endIter(s)
	}
	return nil
}

// send sends value to the down rank's slot with v, after the corrupting
// hook, if any, has seen it.
func (s *stencil) send(v stVariant, slot int, value int64) error {
	out := s.outs[slot : slot+1]
	out[0] = value
	if s.cfg.Corrupt != nil {
		s.cfg.Corrupt(s.variant, out)
	}
	return v.send(s, slot, out)
}

// verify checks this rank's block after iters iterations, and on the last
// rank the PRK's corner.
func (s *stencil) verify(iters int) error {
	k := iters - 1
	if s.me == s.np-1 {
		got, want := s.a[s.m*s.w-1], int64(iters)*int64(s.m+s.n-2)
		if got != want {
			return fmt.Errorf("corner A(%d,%d) is %d, want iterations*(m+n-2) = %d: verification failed, data not delivered", s.m-1, s.n-1, got, want)
		}
	}
	for i := range s.m {
		for j := range s.w {
			if got, want := s.a[i*s.w+j], s.want(i, s.start+j, k); got != want {
				return fmt.Errorf("A(%d,%d) is %d, want %d: verification failed, data not delivered", i, s.start+j, got, want)
			}
		}
	}
	return nil
}

// send-recv

func stSend(s *stencil, slot int, out []int64) error {
	tag := tagStRow
	if slot == s.m {
		tag = tagStCorner
	}
	return s.c.Send(s.ctx, narma.Bytes(out), s.down, tag)
}

func stRecv(s *stencil, slot int) (int64, error) {
	tag := tagStRow
	if slot == s.m {
		tag = tagStCorner
	}
	st, err := s.c.Recv(s.ctx, narma.Bytes(s.in), s.up, tag)
	if err != nil {
		return 0, err
	}
	if st.Count != 8 {
		return 0, fmt.Errorf("message of %d bytes, want 8", st.Count)
	}
	return s.in[0], nil
}

// stLocal reads a slot of the window, once its value is known to be
// there.
func stLocal(s *stencil, slot int) (int64, error) { return s.win.Local()[slot], nil }

// fence: a wavefront. Every rank fences once per pipeline step, m+np-2
// steps per iteration: rank p computes row i in step i+p-1 (from 0) and
// puts its last value into rank p+1's window then; the Fence that ends
// the step makes it visible for step i+p. The last rank puts the corner
// in the last step, after its last row, and rank 0 reads it after the
// iteration's last Fence.

func stFenceOpen(s *stencil) error {
	s.fences = 0
	return s.win.Fence(s.ctx, narma.NoPrecede)
}

// fenceTo fences until the iteration has had n fences.
func (s *stencil) fenceTo(n int) error {
	for s.fences < n {
		if err := s.win.Fence(s.ctx, 0); err != nil {
			return err
		}
		s.fences++
	}
	return nil
}

func stFenceRow(s *stencil, i int) error { return s.fenceTo(i + s.me - 1) }

func stFenceSend(s *stencil, slot int, out []int64) error { return s.win.Put(out, s.down, slot) }

func stFenceEnd(s *stencil) error {
	if err := s.fenceTo(s.m + s.np - 2); err != nil {
		return err
	}
	s.fences = 0
	return nil
}

func stFenceClose(s *stencil) error { return s.win.Fence(s.ctx, narma.NoSucceed) }

// pscw: each rank keeps its window posted to its up rank for the next
// value, and posts again as soon as it has read one; it sends each value
// in an access epoch of its own to its down rank.

func stPSCWOpen(s *stencil) error { return s.win.Post([]int{s.up}, 0) }

func stPSCWSend(s *stencil, slot int, out []int64) error {
	if err := s.win.Start(s.ctx, []int{s.down}, 0); err != nil {
		return err
	}
	if err := s.win.Put(out, s.down, slot); err != nil {
		return err
	}
	return s.win.Complete(s.ctx)
}

func stPSCWRecv(s *stencil, slot int) (int64, error) {
	if err := s.win.Wait(s.ctx); err != nil {
		return 0, err
	}
	v := s.win.Local()[slot]
	return v, s.win.Post([]int{s.up}, 0)
}

// stPSCWClose ends the exposure epoch still posted: an empty access epoch
// to the down rank completes the down rank's.
func stPSCWClose(s *stencil) error {
	if err := s.win.Start(s.ctx, []int{s.down}, 0); err != nil {
		return err
	}
	if err := s.win.Complete(s.ctx); err != nil {
		return err
	}
	return s.win.Wait(s.ctx)
}

// The notified variants run in one LockAll epoch per measured run. Every
// put is flushed before the next, so that the n-th notice a rank matches
// is that of the n-th value.

func stLockAll(s *stencil) error   { return s.win.LockAll(s.ctx, 0) }
func stUnlockAll(s *stencil) error { return s.win.UnlockAll(s.ctx) }

// put-notify

func stNotifySend(s *stencil, slot int, out []int64) error {
	tag := tagStRow
	if slot == s.m {
		tag = tagStCorner
	}
	if err := s.win.PutNotify(out, s.down, slot, narma.Tag(tag)); err != nil {
		return err
	}
	return s.win.FlushLocal(s.ctx, s.down)
}

func stNotifyRecv(s *stencil, slot int) (int64, error) {
	if err := wait(s.ctx, s.req); err != nil {
		return 0, err
	}
	return s.win.Local()[slot], nil
}

// counters: each rank receives one kind of value (rows, or the corner on
// rank 0), so one counter suffices.

func stCounterSend(s *stencil, slot int, out []int64) error {
	if err := s.win.PutNotify(out, s.down, slot, narma.Counter(0)); err != nil {
		return err
	}
	return s.win.FlushLocal(s.ctx, s.down)
}

func stCounterRecv(s *stencil, slot int) (int64, error) {
	s.counted++
	if err := s.win.WaitCounter(s.ctx, 0, s.counted); err != nil {
		return 0, err
	}
	return s.win.Local()[slot], nil
}

// events: Fortran 2018's coarray way, as in the CAF paper: put the value
// into the down image's coarray, then EVENT POST its event; the image
// waits on its own event (one event: an image receives rows or the
// corner, never both, and a post completes every earlier put).

func stEventSend(s *stencil, slot int, out []int64) error {
	if err := s.arr.Put(s.down, slot, out); err != nil {
		return err
	}
	return s.ev.Post(s.down)
}

func stEventRecv(s *stencil, slot int) (int64, error) {
	if err := s.ev.Wait(s.ctx, 1); err != nil {
		return 0, err
	}
	return s.arr.Local()[slot], nil
}
