package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/coarray"
)

// Tags of the halo exchange: send-recv's edge messages, and the notices
// of the put-notify variant, one tag per iteration parity.
const (
	tagHaloEdge   = 71
	tagHaloNotify = 72 // and 73
)

// DefaultHaloSizes are the edge sizes of the halo exchange when
// Config.Sizes is nil: tiles of 8 x 8 to 512 x 512 cells per rank.
var DefaultHaloSizes = []int{64, 256, 1 << 10, 4 << 10}

// MaxHaloSize is the largest edge the halo exchange accepts: 16 KiB, a
// tile of 2048 x 2048 cells (two copies of it, 64 MiB, per rank).
const MaxHaloSize = 16 << 10

// haloCoordLimit bounds the global coordinates of the grid, so that the
// cell values (see haloValue) of distinct cells differ.
const haloCoordLimit = 1<<24 - 2

// Directions of a tile's sides and neighbours; d^1 is the opposite of d.
const (
	hNorth = iota // grid row - 1
	hSouth        // grid row + 1
	hWest         // grid column - 1
	hEast         // grid column + 1
)

var hDirNames = [4]string{"north", "south", "west", "east"}

// hVariant is one halo variant. exchange runs the communication of one
// iteration on rank h.me: it sends the edges h.out (one per neighbour,
// already stamped) and returns once the neighbours' edges of the
// iteration are in the halo of tile h.k%2 (those that arrive elsewhere it
// copies there). open and close, if not nil, run untimed around each
// measured run.
type hVariant struct {
	Variant
	open     func(h *halo) error
	exchange func(h *halo) error
	close    func(h *halo) error
}

var hVariants = []hVariant{
	{Variant: Variant{Name: "send-recv", Summary: "Irecv and Isend of each edge, WaitAll", Classic: true},
		exchange: hSendRecv},
	{Variant: Variant{Name: "events", Summary: "coarray Put of each edge, Event Post to each neighbour (one event per parity); Event Wait for the neighbours' posts"},
		exchange: hEvents},
	{Variant: Variant{Name: "put-notify", Summary: "PutNotify (columns strided) of each edge with a Tag (iteration parity), FlushAll; a counting request (any source, one notice per neighbour)"},
		open: hLockAll, exchange: hNotify, close: hUnlockAll},
	{Variant: Variant{Name: "counters", Summary: "PutNotify (columns strided) of each edge with a Counter (one per parity), FlushAll; WaitCounter"},
		open: hLockAll, exchange: hCounters, close: hUnlockAll},
}

// Halo returns experiment 7, the two-dimensional five-point halo exchange
// of Fanfarillo and Del Vento's Fig. 4: the ranks form a px x py process
// grid, as square as the number of ranks allows (px the largest divisor
// of it not above its square root), not periodic. Each rank owns a tile
// of s x s int64 cells with a halo of one cell; in each iteration it
// sends the edges of its tile to its two to four neighbours, learns that
// the neighbours' edges have landed in its halo, and updates its tile
// with the Jacobi-like step new = N + S + W + E - 3 old + 2^48 (into the
// other copy of the tile). It runs on any number of ranks from 2.
//
// A size is the byte length of one edge of a tile: s = size/8. A row's
// Iters is the number of iterations per measured round, its times are
// times per iteration as rank 0 measured them, and its bandwidth is the
// mean number of edge bytes a rank sends per iteration over the median
// time.
//
// The field is exact in integers: in iteration k the cell of global
// column X and row Y holds u(X, Y, k) = X + 2^24 Y + 2^48 k (modulo 2^64),
// a linear function, whose four neighbours sum to four times its value;
// the step thus yields u(k+1) exactly. Halo cells at the grid's border
// hold u as well (fixed boundary values, written locally). So every edge
// value derives from the sender's rank (its place in the grid), the
// iteration and the index along the edge, and every rank checks each
// edge it receives, as it arrives, and its tile after each measured run.
//
// Edges go out from a contiguous buffer (the Corrupt hook sees and may
// damage that copy, not the tile). The send-recv and events variants
// receive them into contiguous buffers and copy them into the halo; the
// notified variants put them straight into the neighbour's halo, the
// column edges with the strided layout narma.Vector(s, 1, s+2) at the
// target.
func Halo() Experiment {
	return Experiment{
		Name:     "halo",
		Summary:  "2-D five-point halo exchange on a process grid, edges of 64 B to 4 KiB (Fanfarillo & Del Vento, Fig. 4)",
		Measure:  "time per iteration",
		Ranks:    0,
		Variants: tableVariants(hVariants),
		Run:      runHalo,
	}
}

// halo is one rank's state in the halo job.
//
// A rank can be one iteration ahead of a neighbour, never two: it needs
// the neighbour's edges of an iteration to finish it, and the neighbour
// sends those only after it has finished the iteration before. So the
// tile, whose halo receives edges, comes in two copies, and so do the
// events, counters and notification tags, by iteration parity: iteration
// k reads tile k%2 (halo included) and writes the interior of tile
// (k+1)%2, whose halo the edges of iteration k+1 fill; a neighbour one
// iteration ahead writes the copy no one is reading.
type halo struct {
	c       *narma.Comm
	ctx     context.Context
	cfg     Config
	variant string
	me, np  int
	px, py  int    // the process grid: px rows of py ranks
	gr, gc  int    // this rank's place in it
	nb      [4]int // the neighbour in each direction, -1 if none
	nnb     int    // the number of neighbours
	smax    int    // the largest s of the run
	s       int    // the current tile's side
	k       int    // the current iteration of the run, from 0
	out     [4][]int64
	in      [4][]int64 // send-recv's incoming edges
	reqs    []*narma.Request
	// The window: the two copies of the tile, (s+2) x (s+2) each, row
	// major.
	win     *narma.Win[int64]
	nreq    [2]*narma.Request // put-notify's requests, per parity
	counted [2]uint64         // counters' notices expected so far, per parity
	// events: the coarray job, an array of 2 x 4 edge slots (parity,
	// side) and one event per parity.
	im  *coarray.Images
	arr *coarray.Array[int64]
	ev  [2]*coarray.Event
}

// hGrid returns the process grid for np ranks: px rows of py, px the
// largest divisor of np with px*px <= np.
func hGrid(np int) (px, py int) {
	px = 1
	for d := 1; d*d <= np; d++ {
		if np%d == 0 {
			px = d
		}
	}
	return px, np / px
}

// hItersFor is the default number of iterations per round for tiles of
// s x s cells: about a million cell updates per rank, between 10 and 1000.
func hItersFor(s int) int { return max(10, min(1000, (1<<20)/(s*s))) }

func runHalo(c *narma.Comm, cfg Config) (rows []Row, err error) {
	e := Halo()
	if err := e.Check(cfg); err != nil {
		return nil, err
	}
	np := c.Size()
	if np < 2 {
		return nil, fmt.Errorf("halo needs at least 2 ranks, the job has %d", np)
	}
	sizes := cfg.sizesOr(DefaultHaloSizes)
	px, py := hGrid(np)
	for _, size := range sizes {
		if size > MaxHaloSize {
			return nil, fmt.Errorf("halo: edges of %s: at most %s", FormatSize(size), FormatSize(MaxHaloSize))
		}
		if s := size / 8; px*s > haloCoordLimit || py*s > haloCoordLimit {
			return nil, fmt.Errorf("halo: edges of %s over a %d x %d grid: the global grid is too large for the cell values", FormatSize(size), px, py)
		}
	}
	rounds := cfg.rounds()
	variants := selectedEntries(e, cfg, hVariants)
	ctx := c.Context()
	me := c.Rank()
	h := &halo{c: c, ctx: ctx, cfg: cfg, me: me, np: np, px: px, py: py, gr: me / py, gc: me % py,
		smax: slices.Max(sizes) / 8}
	h.nb = [4]int{-1, -1, -1, -1}
	if h.gr > 0 {
		h.nb[hNorth] = me - py
	}
	if h.gr < px-1 {
		h.nb[hSouth] = me + py
	}
	if h.gc > 0 {
		h.nb[hWest] = me - 1
	}
	if h.gc < py-1 {
		h.nb[hEast] = me + 1
	}
	for d := range 4 {
		h.out[d] = make([]int64, h.smax)
		h.in[d] = make([]int64, h.smax)
		if h.nb[d] >= 0 {
			h.nnb++
		}
	}
	tmax := h.smax + 2
	if h.win, err = narma.Allocate[int64](ctx, c, 2*tmax*tmax, narma.WithStrategy(cfg.Strategy)); err != nil {
		return nil, err
	}
	if err := h.win.SetCounters(ctx, 2); err != nil {
		return nil, err
	}
	for p := range h.nreq {
		if h.nreq[p], err = h.win.NotifyInit(narma.AnySource, tagHaloNotify+p, h.nnb); err != nil {
			return nil, err
		}
	}
	if slices.ContainsFunc(variants, func(v hVariant) bool { return v.Name == "events" }) {
		if h.im, err = coarray.Init(ctx, c); err != nil {
			return nil, err
		}
		if h.arr, err = coarray.New[int64](ctx, h.im, 2*4*h.smax); err != nil {
			return nil, err
		}
		for p := range h.ev {
			if h.ev[p], err = coarray.NewEvent(ctx, h.im); err != nil {
				return nil, err
			}
		}
	}
	// The mean number of edges a rank sends per iteration, times np.
	edges := 2*(px-1)*py + 2*px*(py-1)

	for si, size := range sizes {
		h.s = size / 8
		iters := cfg.Iters
		if iters == 0 {
			iters = hItersFor(h.s)
		}
		warm := cfg.Warmup
		if warm == 0 {
			warm = max(2, iters/10)
		}
		times, err := interleavedRounds(variants, newPlan(c, cfg, e, si, sizes, iters, warm, 1),
			meanTime(h.measure))
		if err != nil {
			return nil, err
		}
		if me != 0 {
			continue
		}
		rows = appendRows(rows, e.Name, variants, times, size, np, rounds, float64(size*edges)/float64(np))
	}

	for _, r := range h.nreq {
		if err := r.Free(); err != nil {
			return nil, err
		}
	}
	if h.im != nil {
		for _, ev := range h.ev {
			if err := ev.Free(ctx); err != nil {
				return nil, err
			}
		}
		if err := h.arr.Free(ctx); err != nil {
			return nil, err
		}
		if err := h.im.Finalize(ctx); err != nil {
			return nil, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	if err := h.win.Free(ctx); err != nil {
		return nil, err
	}
	return rows, nil
}

func (h *halo) errorf(format string, args ...any) error {
	return fmt.Errorf("halo %s: %w", h.variant, fmt.Errorf(format, args...))
}

// haloValue is u(X, Y, k), the value of the cell of global column x and
// row y in iteration k.
func haloValue(x, y, k int) int64 { return int64(x) + int64(y)<<24 + int64(k)<<48 }

// t is the side of the current tile with its halo.
func (h *halo) t() int { return h.s + 2 }

// tile returns copy p of the current tile, halo included.
func (h *halo) tile(p int) []int64 {
	t := h.t()
	return h.win.Local()[p*t*t:][:t*t]
}

// want returns u at cell (i, j) of this rank's tile (halo at i or j 0 and
// s+1) in iteration k.
func (h *halo) want(i, j, k int) int64 {
	return haloValue(h.gc*h.s+j-1, h.gr*h.s+i-1, k)
}

// side returns the position of the m-th cell (from 0) of side d of the
// tile: the halo if halo, else the interior edge next to it.
func (h *halo) side(d, m int, halo bool) (i, j int) {
	lo, hi := 1, h.s // the first and last interior row (or column)
	if halo {
		lo, hi = 0, h.s+1
	}
	switch d {
	case hNorth:
		return lo, m + 1
	case hSouth:
		return hi, m + 1
	case hWest:
		return m + 1, lo
	}
	return m + 1, hi
}

// haloDisp returns the displacement of side d's halo in copy p of the
// tile, and its layout.
func (h *halo) haloDisp(p, d int) (int, narma.Layout) {
	t := h.t()
	i, j := h.side(d, 0, true)
	l := narma.Contiguous
	if d == hWest || d == hEast {
		l = narma.Vector(h.s, 1, t)
	}
	return p*t*t + i*t + j, l
}

// measure runs iters iterations from u(0) with variant v, checks the
// result and returns the time this rank measured.
func (h *halo) measure(v hVariant, iters int) (time.Duration, error) {
	h.variant = v.Name
	t, s := h.t(), h.s
	a := h.tile(0)
	for i := 1; i <= s; i++ {
		for j := 1; j <= s; j++ {
			a[i*t+j] = h.want(i, j, 0)
		}
	}
	if v.open != nil {
		if err := v.open(h); err != nil {
			return 0, h.errorf("open: %w", err)
		}
	}
	// The barrier also keeps a rank from the next run until every rank
	// has finished this one (and no longer reads its halo).
	if err := h.c.Barrier(h.ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	for h.k = 0; h.k < iters; h.k++ {
		if err := h.iterate(v); err != nil {
			return 0, h.errorf("%d x %d tiles, iteration %d: %w", s, s, h.k, err)
		}
	}
	d := time.Since(start)
	if v.close != nil {
		if err := v.close(h); err != nil {
			return 0, h.errorf("close: %w", err)
		}
	}
	a = h.tile(iters % 2)
	for i := 1; i <= s; i++ {
		for j := 1; j <= s; j++ {
			if got, want := a[i*t+j], h.want(i, j, iters); got != want {
				return 0, h.errorf("%d x %d tiles, %d iterations: cell (%d,%d) of rank %d is %#x, want %#x: verification failed, data not delivered",
					s, s, iters, i, j, h.me, got, want)
			}
		}
	}
	return d, nil
}

// iterate runs iteration h.k: stamps and sends the edges, waits for the
// neighbours', checks them, sets the border's halo and updates the tile.
func (h *halo) iterate(v hVariant) error {
	t, s, k, p := h.t(), h.s, h.k, h.k%2
	a := h.tile(p)
	for d, nb := range h.nb {
		if nb < 0 {
			continue
		}
		out := h.out[d][:s]
		for m := range out {
			i, j := h.side(d, m, false)
			out[m] = a[i*t+j]
		}
		if h.cfg.Corrupt != nil {
			h.cfg.Corrupt(h.variant, out)
		}
	}
	if err := v.exchange(h); err != nil {
		return err
	}
	for d, nb := range h.nb {
		for m := range s {
			i, j := h.side(d, m, true)
			if nb < 0 {
				a[i*t+j] = h.want(i, j, k)
				continue
			}
			if got, want := a[i*t+j], h.want(i, j, k); got != want {
				return fmt.Errorf("cell %d of the %s edge from rank %d arrived at rank %d as %#x, want %#x: data not delivered",
					m, hDirNames[d^1], nb, h.me, got, want)
			}
		}
	}
	b := h.tile(1 - p)
	for i := 1; i <= s; i++ {
		r, up, down, row := b[i*t:][:t], a[(i-1)*t:][:t], a[(i+1)*t:][:t], a[i*t:][:t]
		for j := 1; j <= s; j++ {
			r[j] = up[j] + down[j] + row[j-1] + row[j+1] - 3*row[j] + 1<<48
		}
	}
	return nil
}

// send-recv: the receives are posted first; Isend completes at once (the
// data is copied), so no order of the sends can deadlock.

func hSendRecv(h *halo) error {
	s := h.s
	h.reqs = h.reqs[:0]
	for d, nb := range h.nb {
		if nb < 0 {
			continue
		}
		r, err := h.c.Irecv(narma.Bytes(h.in[d][:s]), nb, tagHaloEdge)
		if err != nil {
			return err
		}
		h.reqs = append(h.reqs, r)
	}
	for d, nb := range h.nb {
		if nb < 0 {
			continue
		}
		r, err := h.c.Isend(h.ctx, narma.Bytes(h.out[d][:s]), nb, tagHaloEdge)
		if err != nil {
			return err
		}
		h.reqs = append(h.reqs, r)
	}
	if err := narma.WaitAll(h.ctx, h.reqs, nil); err != nil {
		return err
	}
	for d, nb := range h.nb {
		if nb >= 0 {
			h.copyIn(d, h.in[d][:s])
		}
	}
	return nil
}

// copyIn copies an edge received from the neighbour in direction d into
// the halo of the current tile.
func (h *halo) copyIn(d int, edge []int64) {
	t := h.t()
	a := h.tile(h.k % 2)
	for m, x := range edge {
		i, j := h.side(d, m, true)
		a[i*t+j] = x
	}
}

// events: Fortran 2018's coarray way, as in the CAF paper: put each edge
// into the neighbour's slot for this side and parity, EVENT POST the
// neighbour's event of the parity (which completes the put first); then
// EVENT WAIT for one post per neighbour. One event per parity: with one,
// a neighbour one iteration ahead could post for the next iteration while
// another neighbour's edge of this one is still on its way.

// hSlot is the element offset of side d's slot for parity p in the
// events' array.
func (h *halo) hSlot(p, d int) int { return (p*4 + d) * h.smax }

func hEvents(h *halo) error {
	s, p := h.s, h.k%2
	for d, nb := range h.nb {
		if nb < 0 {
			continue
		}
		if err := h.arr.Put(nb, h.hSlot(p, d^1), h.out[d][:s]); err != nil {
			return err
		}
		if err := h.ev[p].Post(nb); err != nil {
			return err
		}
	}
	if err := h.ev[p].Wait(h.ctx, h.nnb); err != nil {
		return err
	}
	local := h.arr.Local()
	for d, nb := range h.nb {
		if nb >= 0 {
			h.copyIn(d, local[h.hSlot(p, d):][:s])
		}
	}
	return nil
}

// The notified variants run in one LockAll epoch per measured run and put
// each edge into the neighbour's halo of the iteration's parity.

func hLockAll(h *halo) error   { return h.win.LockAll(h.ctx, 0) }
func hUnlockAll(h *halo) error { return h.win.UnlockAll(h.ctx) }

// putEdges puts the edges into the neighbours' halos with notice nt and
// completes the puts.
func (h *halo) putEdges(nt narma.Notice) error {
	s, p := h.s, h.k%2
	for d, nb := range h.nb {
		if nb < 0 {
			continue
		}
		disp, l := h.haloDisp(p, d^1)
		if err := h.win.PutStridedNotify(h.out[d][:s], narma.Contiguous, nb, disp, l, nt); err != nil {
			return err
		}
	}
	return h.win.FlushAll(h.ctx)
}

// put-notify: the parity picks the tag; the request of the parity counts
// one notice per neighbour, from any source.

func hNotify(h *halo) error {
	p := h.k % 2
	r := h.nreq[p]
	if err := r.Start(); err != nil {
		return err
	}
	if err := h.putEdges(narma.Tag(tagHaloNotify + p)); err != nil {
		return err
	}
	_, err := r.Wait(h.ctx)
	return err
}

// counters: counter p counts the edges of iterations of parity p.

func hCounters(h *halo) error {
	p := h.k % 2
	if err := h.putEdges(narma.Counter(p)); err != nil {
		return err
	}
	h.counted[p] += uint64(h.nnb)
	return h.win.WaitCounter(h.ctx, p, h.counted[p])
}
