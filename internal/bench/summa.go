package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/narma-rma/narma"
)

// Tags of the SUMMA experiment's notices and messages. The panels of A
// travel on the row communicators and those of B on the column
// communicators, each with windows of their own, so both use the same
// tags.
const (
	tagSuPanel = 41 // + slot: a panel put into slot 0 or 1 (put-notify)
	tagSuFree  = 43 // + slot: the slot's panel is no longer in use (put-notify)
	tagSuMsg   = 45 // + s mod 2: the panel message of step s (send-recv)
)

// DefaultSummaSizes are the sizes of the SUMMA experiment when
// Config.Sizes is nil: matrix rows of 512 B to 2 KiB, that is matrices
// of 64 x 64 to 256 x 256 elements.
var DefaultSummaSizes = []int{64 * 8, 128 * 8, 256 * 8}

// MaxSummaSize is the largest size the SUMMA experiment accepts: rows of
// 32 KiB, matrices of 4096 x 4096 elements (128 MiB each, over all
// ranks).
const MaxSummaSize = 32 << 10

// DefaultSummaPanel is the panel width b of the SUMMA experiment when
// SummaLayout.Panel is 0.
const DefaultSummaPanel = 32

// SummaMaxResidual is the largest relative residual ||Cx - A(Bx)|| /
// ||A(Bx)|| the SUMMA experiment accepts, for a random vector x.
const SummaMaxResidual = 1e-10

// SummaLayout chooses the process grid and the panel width of the SUMMA
// experiment (see SummaWith). Its zero value takes the defaults.
type SummaLayout struct {
	// Rows and Cols are the process grid, Rows x Cols ranks: both 0 for
	// the most square grid of the job's ranks (Rows <= Cols), else both
	// positive and their product the job's size.
	Rows, Cols int
	// Panel is the panel width b, in columns of A and rows of B; 0 means
	// DefaultSummaPanel.
	Panel int
}

// Check reports whether l is a valid layout: Rows and Cols both 0 or
// both positive, Panel not negative.
func (l SummaLayout) Check() error {
	if l.Rows < 0 || l.Cols < 0 || (l.Rows == 0) != (l.Cols == 0) {
		return fmt.Errorf("grid %d x %d: want two positive numbers of rows and columns, or neither", l.Rows, l.Cols)
	}
	if l.Panel < 0 {
		return fmt.Errorf("panel width %d: must not be negative", l.Panel)
	}
	return nil
}

// grid returns the grid of l for a job of np ranks.
func (l SummaLayout) grid(np int) (rows, cols int, err error) {
	if err := l.Check(); err != nil {
		return 0, 0, err
	}
	if l.Rows == 0 {
		rows, cols = hGrid(np)
		return rows, cols, nil
	}
	if l.Rows*l.Cols != np {
		return 0, 0, fmt.Errorf("a grid of %d x %d needs %d ranks, the job has %d", l.Rows, l.Cols, l.Rows*l.Cols, np)
	}
	return l.Rows, l.Cols, nil
}

// panel returns l's panel width.
func (l SummaLayout) panel() int {
	if l.Panel == 0 {
		return DefaultSummaPanel
	}
	return l.Panel
}

// suKernel adds the product of a (m x k) and b (k x n) to c (m x n), all
// three row-major and contiguous.
type suKernel func(c, a, b []float64, m, n, k int)

// suVariant is one SUMMA variant: how the panels of a step reach the
// ranks of a side (A along a row, B along a column). panel returns the
// message of step s of side sd on this rank (stamp, panel, stamp), once
// it is there, after sending it if this rank owns it; poll, if not nil,
// is called between chunks of the local multiply of step s, and done
// after it; open and close, untimed, open and close the epochs of a
// measured run.
type suVariant struct {
	Variant
	open, close func(su *summa) error
	panel       func(su *summa, sd *suSide, s int) ([]float64, error)
	poll        func(su *summa, s int) error
	done        func(su *summa, sd *suSide, s int) error
}

var suVariants = []suVariant{
	{Variant: Variant{Name: "send-recv", Summary: "Send of each panel along a binomial tree of its row (column) communicator, a step ahead, into receives posted a step ahead (two buffers)", Classic: true},
		panel: suSRPanel},
	{Variant: Variant{Name: "bcast", Summary: "narma.Bcast of each panel on its row (column) communicator at its step", Classic: true},
		panel: suBcastPanel},
	{Variant: Variant{Name: "put-notify", Summary: "PutNotify of each panel into slot s mod 2 of every rank of its row (column), Tag = slot, FlushLocal, a step ahead; receivers wait with a persistent request per slot and free a slot with a pure tag notice to its next owner"},
		open: suLockAll, close: suUnlockAll, panel: suNotifyPanel, poll: suNotifyPoll, done: suNotifyDone},
	{Variant: Variant{Name: "counter", Summary: "as put-notify with notification counters: one per slot counts the panels that arrived, one per slot the notices that freed it"},
		open: suLockAll, close: suUnlockAll, panel: suNotifyPanel, poll: suNotifyPoll, done: suNotifyDone},
}

// Summa returns the SUMMA experiment on the most square grid of the
// job's ranks with panels of DefaultSummaPanel columns: SummaWith of the
// zero SummaLayout.
func Summa() Experiment { return SummaWith(SummaLayout{}) }

// SummaWith returns the SUMMA experiment (van de Geijn and Watts'
// Scalable Universal Matrix Multiplication Algorithm) with layout l:
// C = A B of n x n float64 matrices, each distributed in blocks over a
// grid of Rows x Cols ranks (rank r at row r / Cols, column r mod Cols;
// block rows and columns split as evenly as n allows, empty ones
// included). The ranks of each grid row and of each grid column form a
// communicator (Comm.Split). The inner dimension is cut into panels of
// at most b = l.Panel columns, none crossing a block boundary; at step
// s the owner of the panel's columns of A puts or sends its piece (its
// block rows x the panel) to every rank of its grid row, the owner of
// the panel's rows of B its piece to every rank of its grid column, and
// every rank adds the product of the two pieces to its block of C, in
// chunks of rows. The variants differ in how the pieces travel: two-sided
// messages, narma.Bcast, or notified puts into two slots per side with
// tag notices or notification counters (see the variants' comments).
//
// A size is the size of a matrix row in bytes, n = size/8. A row's time
// is the time of one multiplication, from a barrier to the barrier after
// it, as rank 0 measured it; its bandwidth is the bytes of C, 8n^2, per
// median time, and the note under the table gives the rates in GFlop/s
// (2n^3 flops per multiplication). A and B are the same on every run
// (entries uniform in [-1, 1) from a hash of the position); every
// message carries a stamp of the multiplication, step and side in its
// first and last words, checked by every receiver, and after the last
// multiplication of each measured round every rank checks the product
// with a random vector x fixed per size: ||Cx - A(Bx)|| / ||A(Bx)|| <
// SummaMaxResidual, the reference A(Bx) computed once per size from A
// and B. A wrong product fails the run on every rank. Config.Corrupt
// sees every panel message once, at its owner, the float64 bits of the
// message as int64 words.
func SummaWith(l SummaLayout) Experiment { return summaExperiment(l, gemmAdd) }

// summaExperiment is SummaWith with the kernel of the local multiply
// (tests pass a wrong one).
func summaExperiment(l SummaLayout, kernel suKernel) Experiment {
	grid := "on the most square grid of the ranks (rows <= columns)"
	if l.Rows > 0 {
		grid = fmt.Sprintf("on a grid of %d x %d ranks", l.Rows, l.Cols)
	}
	return Experiment{
		Name:     "summa",
		Summary:  "SUMMA matrix multiply on a 2-D grid of ranks, panels broadcast on row and column communicators, matrices of 64x64 to 256x256 (issue 18)",
		Measure:  "time per multiplication",
		SizeName: func(size int) string { return fmt.Sprintf("%dx%d", size/8, size/8) },
		Columns:  fmt.Sprintf("n x n float64 matrices %s, panels of %d columns (--sizes gives 8*n bytes, a matrix row)", grid, l.panel()),
		Note:     func(rows []Row) []string { return summaNote(l, rows) },
		Ranks:    0,
		Variants: tableVariants(suVariants),
		Run: func(c *narma.Comm, cfg Config) ([]Row, error) {
			return runSumma(c, cfg, l, kernel)
		},
	}
}

// summaNote returns the lines under the table: the grid, and per size the
// rate of each variant in GFlop/s.
func summaNote(l SummaLayout, rows []Row) []string {
	var sizes []int
	rates := map[int][]string{}
	ranks := 0
	for _, r := range rows {
		if r.Experiment != "summa" || r.MedianNs <= 0 || strings.HasPrefix(r.Variant, MPIPrefix) {
			continue
		}
		ranks = r.Ranks
		if !slices.Contains(sizes, r.Bytes) {
			sizes = append(sizes, r.Bytes)
		}
		n := float64(r.Bytes / 8)
		rates[r.Bytes] = append(rates[r.Bytes], fmt.Sprintf("%s %.2f", r.Variant, 2*n*n*n/r.MedianNs))
	}
	if len(sizes) == 0 {
		return nil
	}
	pr, pc, err := l.grid(ranks)
	if err != nil {
		pr, pc = hGrid(ranks)
	}
	lines := []string{fmt.Sprintf("grid of %d x %d ranks, panels of up to %d columns; GFlop/s (2n^3 flops per median time):", pr, pc, l.panel())}
	for i, s := range sizes {
		end := ";" // the plot joins the lines into one paragraph
		if i == len(sizes)-1 {
			end = ""
		}
		lines = append(lines, fmt.Sprintf("  %dx%d: %s%s", s/8, s/8, strings.Join(rates[s], ", "), end))
	}
	return lines
}

// checkSummaSizes reports whether sizes are sizes the SUMMA experiment
// takes: at most MaxSummaSize.
func checkSummaSizes(sizes []int) error {
	for _, size := range sizes {
		if size > MaxSummaSize {
			return fmt.Errorf("rows of %s: at most %s (matrices of %d x %d)", FormatSize(size), FormatSize(MaxSummaSize), MaxSummaSize/8, MaxSummaSize/8)
		}
	}
	return nil
}

// The SUMMA experiment's entry of CheckSizes' checks (for its default
// layout, whose grid fits any number of ranks).
func init() {
	sizeChecks["summa"] = func(cfg Config, ranks int) error {
		return checkSummaSizes(cfg.sizesOr(DefaultSummaSizes))
	}
}

// summaIters is the default number of multiplications per measured round
// for n x n matrices: about 2*10^8 flops, between 1 and 100.
func summaIters(n int) int {
	f := 2 * float64(n) * float64(n) * float64(n)
	return max(1, min(100, int(2e8/f)))
}

// suEntry is element (i, j) of matrix m (0: A, 1: B, 2: the test vector
// x, a row), uniform in [-1, 1) from a hash of (m, i, j).
func suEntry(m, i, j int) float64 {
	x := uint64(m)<<58 ^ uint64(i)<<29 ^ uint64(j)
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/(1<<52) - 1
}

// summa is one rank's state in the SUMMA job, for one size.
type summa struct {
	c      *narma.Comm
	ctx    context.Context
	cfg    Config
	v      suVariant
	kernel suKernel
	me     int
	gi, gj int // this rank's grid row and column
	pc     int // columns of the grid
	n      int
	r0, r1 int // this rank's block rows of every matrix, [r0, r1)
	c0, c1 int // and its block columns
	// a, b and cm are this rank's blocks of A, B and C, row-major.
	a, b, cm []float64
	// cuts are the panels: step s covers [cuts[s], cuts[s+1]).
	cuts  []int
	sides [2]*suSide // A along the grid row, B along the grid column
	// x is the test vector, y the reference A(Bx) on rows [r0, r1), cx
	// and part buffers of the check.
	x, y, cx, part []float64
	mult           int64   // multiplications run so far, by every variant
	words          []int64 // the messages as Config.Corrupt sees them
}

// suSide is one side of the SUMMA job on this rank: the panels of A on
// its grid row's communicator, or those of B on its grid column's.
//
// A message (stamp, panel, stamp) of step s lives in buffer or slot s
// mod 2: of bufs (send-recv, bcast) or of the window (put-notify,
// counter), whose slot q holds elements [q*slot, (q+1)*slot).
type suSide struct {
	name  string
	comm  *narma.Comm
	me    int   // this rank in comm
	owner []int // per step, the rank of comm whose block holds the panel
	// length is the panel's elements per step; active says whether the
	// blocks of comm's ranks are not empty on this side, so that their
	// panels travel (every rank of comm has the same blocks' rows (A) or
	// columns (B), so they agree).
	length []int
	active bool
	pack   func(s int, dst []float64) // copies this rank's panel of step s into dst
	slot   int                        // elements of a message, the largest panel's
	bufs   [2][]float64
	recvs  [2]*narma.Request // send-recv: the receive posted for each parity
	next   int               // send-recv: the next step to post or send
	win    *narma.Win[float64]
	// put-notify: the persistent requests of the panels and of the
	// notices that free a slot, by slot.
	panelReq, freeReq [2]*narma.Request
	freeArmed         [2]bool // freeReq[q] started and not yet complete
	// counter: the counts expected so far, per slot, of counters q (the
	// panels) and 2+q (the notices that free slot q).
	panels, frees [2]uint64
	sent          []bool // notified variants: per step, whether this rank put its panel
}

// newSumma builds this rank's state for n x n matrices on a pr x pc grid
// (row and col are its grid row's and column's communicators) with
// panels of at most b columns: its blocks, the panels, the reference
// product, the windows and the requests.
func newSumma(c, row, col *narma.Comm, cfg Config, kernel suKernel, pr, pc, n, b int) (*summa, error) {
	me := c.Rank()
	su := &summa{c: c, ctx: c.Context(), cfg: cfg, kernel: kernel, me: me, gi: me / pc, gj: me % pc, pc: pc, n: n}
	su.r0, su.r1 = n*su.gi/pr, n*(su.gi+1)/pr
	su.c0, su.c1 = n*su.gj/pc, n*(su.gj+1)/pc
	mi, nj := su.r1-su.r0, su.c1-su.c0
	su.a, su.b, su.cm = make([]float64, mi*nj), make([]float64, mi*nj), make([]float64, mi*nj)
	for r := range mi {
		for j := range nj {
			su.a[r*nj+j] = suEntry(0, su.r0+r, su.c0+j)
			su.b[r*nj+j] = suEntry(1, su.r0+r, su.c0+j)
		}
	}
	su.cuts = summaCuts(n, pr, pc, b)
	steps := len(su.cuts) - 1
	maxW := 0
	for s := range steps {
		maxW = max(maxW, su.cuts[s+1]-su.cuts[s])
	}
	// A's panel of step s: columns [k0, k1) of the grid column that holds
	// them, this rank's block rows; B's: rows [k0, k1) of the grid row
	// that holds them, this rank's block columns.
	sa := &suSide{name: "A", comm: row, me: su.gj, active: mi > 0, slot: 2 + mi*maxW}
	sb := &suSide{name: "B", comm: col, me: su.gi, active: nj > 0, slot: 2 + maxW*nj}
	for s := range steps {
		k0, k1 := su.cuts[s], su.cuts[s+1]
		sa.owner = append(sa.owner, blockOf(k0, n, pc))
		sb.owner = append(sb.owner, blockOf(k0, n, pr))
		sa.length = append(sa.length, mi*(k1-k0))
		sb.length = append(sb.length, (k1-k0)*nj)
	}
	sa.pack = func(s int, dst []float64) {
		k0, w := su.cuts[s], su.cuts[s+1]-su.cuts[s]
		for r := range mi {
			copy(dst[r*w:(r+1)*w], su.a[r*nj+k0-su.c0:][:w])
		}
	}
	sb.pack = func(s int, dst []float64) {
		k0, k1 := su.cuts[s], su.cuts[s+1]
		copy(dst, su.b[(k0-su.r0)*nj:(k1-su.r0)*nj])
	}
	su.sides = [2]*suSide{sa, sb}
	su.reference()
	for _, sd := range su.sides {
		if err := sd.alloc(su.ctx, cfg.Strategy, steps); err != nil {
			return nil, err
		}
	}
	return su, nil
}

// summaCuts returns the panels of n x n matrices on a pr x pc grid with
// panels of at most b columns: the starts of the panels and n. A panel
// lies within one block of columns (of A) and one block of rows (of B),
// starting at a block boundary or b after the previous start.
func summaCuts(n, pr, pc, b int) []int {
	var bounds []int
	for i := 0; i <= pr; i++ {
		bounds = append(bounds, n*i/pr)
	}
	for j := 0; j <= pc; j++ {
		bounds = append(bounds, n*j/pc)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	var cuts []int
	for i := 0; i+1 < len(bounds); i++ {
		for k := bounds[i]; k < bounds[i+1]; k += b {
			cuts = append(cuts, k)
		}
	}
	return append(cuts, n)
}

// blockOf returns the block of n indices split in parts blocks (block i
// is [n*i/parts, n*(i+1)/parts)) that holds index k.
func blockOf(k, n, parts int) int {
	for i := range parts {
		if k < n*(i+1)/parts {
			return i
		}
	}
	return parts - 1
}

// alloc allocates sd's buffers, window and requests, collectively over
// sd.comm, for steps steps.
func (sd *suSide) alloc(ctx context.Context, st narma.Strategy, steps int) (err error) {
	sd.bufs = [2][]float64{make([]float64, sd.slot), make([]float64, sd.slot)}
	sd.sent = make([]bool, steps)
	if sd.win, err = narma.Allocate[float64](ctx, sd.comm, 2*sd.slot, narma.WithStrategy(st)); err != nil {
		return err
	}
	if err := sd.win.SetCounters(ctx, 4); err != nil {
		return err
	}
	for q := range 2 {
		if sd.panelReq[q], err = sd.win.NotifyInit(narma.AnySource, tagSuPanel+q, 1); err != nil {
			return err
		}
		if np := sd.comm.Size(); np > 1 {
			if sd.freeReq[q], err = sd.win.NotifyInit(narma.AnySource, tagSuFree+q, np-1); err != nil {
				return err
			}
		}
	}
	return nil
}

// free frees sd's requests and window, collectively over sd.comm.
func (sd *suSide) free(ctx context.Context) error {
	for q := range 2 {
		for _, r := range []*narma.Request{sd.panelReq[q], sd.freeReq[q]} {
			if r != nil {
				if err := r.Free(); err != nil {
					return err
				}
			}
		}
	}
	if err := sd.comm.Barrier(ctx); err != nil {
		return err
	}
	return sd.win.Free(ctx)
}

// reference computes the test vector x and the reference y = A(Bx) on
// this rank's block rows, from the entries of A and B.
func (su *summa) reference() {
	n := su.n
	su.x = make([]float64, n)
	for j := range n {
		su.x[j] = suEntry(2, 0, j)
	}
	bx := make([]float64, n)
	for k := range n {
		s := 0.0
		for j := range n {
			s += suEntry(1, k, j) * su.x[j]
		}
		bx[k] = s
	}
	mi := su.r1 - su.r0
	su.y = make([]float64, mi)
	for r := range mi {
		s := 0.0
		for k := range n {
			s += suEntry(0, su.r0+r, k) * bx[k]
		}
		su.y[r] = s
	}
	su.cx, su.part = make([]float64, mi), make([]float64, mi)
}

func (su *summa) errorf(format string, args ...any) error {
	return fmt.Errorf("summa %s: %w", su.v.Name, fmt.Errorf(format, args...))
}

func (su *summa) dims() string { return fmt.Sprintf("%dx%d", su.n, su.n) }

// steps returns the number of steps (panels) of a multiplication.
func (su *summa) steps() int { return len(su.cuts) - 1 }

// measure runs iters multiplications with variant v, checks the last
// one's product, and returns the time this rank measured for them.
func (su *summa) measure(v suVariant, iters int) (time.Duration, error) {
	su.v = v
	if v.open != nil {
		if err := v.open(su); err != nil {
			return 0, su.errorf("open: %w", err)
		}
	}
	var d time.Duration
	for range iters {
		su.mult++
		su.begin()
		if err := su.c.Barrier(su.ctx); err != nil {
			return 0, err
		}
		start := time.Now()
		if err := su.multiply(); err != nil {
			return 0, su.errorf("%s, multiplication %d: %w", su.dims(), su.mult, err)
		}
		// After the barrier every message of the multiplication has
		// been taken (each receiver waited for its panels, each owner
		// for the notices that freed its slots).
		if err := su.c.Barrier(su.ctx); err != nil {
			return 0, err
		}
		d += time.Since(start)
	}
	if v.close != nil {
		if err := v.close(su); err != nil {
			return 0, su.errorf("close: %w", err)
		}
	}
	if err := su.verify(); err != nil {
		return 0, su.errorf("%s, multiplication %d: %w", su.dims(), su.mult, err)
	}
	return d, nil
}

// begin clears C and the sides' state of a multiplication.
func (su *summa) begin() {
	clear(su.cm)
	for _, sd := range su.sides {
		sd.next = 0
		clear(sd.sent)
	}
}

// suChunk is the number of rows of C between two polls of a variant
// during the local multiply.
const suChunk = 8

// multiply runs this rank's part of one multiplication with su.v.
func (su *summa) multiply() error {
	v := su.v
	mi, nj := su.r1-su.r0, su.c1-su.c0
	for s := range su.steps() {
		w := su.cuts[s+1] - su.cuts[s]
		var p [2][]float64
		for i, sd := range su.sides {
			if !sd.active {
				continue
			}
			msg, err := v.panel(su, sd, s)
			if err != nil {
				return fmt.Errorf("step %d, panel of %s: %w", s, sd.name, err)
			}
			p[i] = msg[1 : 1+sd.length[s]]
		}
		for i0 := 0; i0 < mi; i0 += suChunk {
			i1 := min(i0+suChunk, mi)
			su.kernel(su.cm[i0*nj:i1*nj], p[0][i0*w:i1*w], p[1], i1-i0, nj, w)
			if v.poll != nil {
				if err := v.poll(su, s); err != nil {
					return fmt.Errorf("step %d: %w", s, err)
				}
			}
		}
		if v.done == nil {
			continue
		}
		for _, sd := range su.sides {
			if sd.active {
				if err := v.done(su, sd, s); err != nil {
					return fmt.Errorf("step %d, panel of %s: %w", s, sd.name, err)
				}
			}
		}
	}
	return nil
}

// stamp is the stamp of the message of step s of side sd in the current
// multiplication: an integer, exact in a float64.
func (su *summa) stamp(sd *suSide, s int) float64 {
	side := 0
	if sd == su.sides[1] {
		side = 1
	}
	return float64(su.mult<<16 | int64(s)<<1 | int64(side))
}

// fill writes this rank's message of step s of side sd into msg: the
// stamps and the panel; then Config.Corrupt, if set, sees it.
func (su *summa) fill(sd *suSide, s int, msg []float64) {
	l := sd.length[s]
	st := su.stamp(sd, s)
	msg[0], msg[l+1] = st, st
	sd.pack(s, msg[1:1+l])
	if su.cfg.Corrupt == nil {
		return
	}
	if cap(su.words) < len(msg) {
		su.words = make([]int64, len(msg))
	}
	words := su.words[:len(msg)]
	for i, f := range msg {
		words[i] = int64(math.Float64bits(f))
	}
	su.cfg.Corrupt(su.v.Name, words)
	for i, x := range words {
		msg[i] = math.Float64frombits(uint64(x))
	}
}

// check checks the stamps of msg, the message of step s of side sd that
// arrived here.
func (su *summa) check(sd *suSide, s int, msg []float64) error {
	l := sd.length[s]
	want := su.stamp(sd, s)
	if first, last := msg[0], msg[l+1]; first != want || last != want {
		return fmt.Errorf("the panel of %s of step %d from rank %d of the %s arrived at rank %d with stamps %v and %v, want %v: data not delivered",
			sd.name, s, sd.owner[s], sd.commName(), su.me, first, last, want)
	}
	return nil
}

// commName names sd's communicator in messages.
func (sd *suSide) commName() string {
	if sd.name == "A" {
		return "grid row"
	}
	return "grid column"
}

// verify checks the product: every rank computes Cx on its block rows
// and columns, the ranks of a grid row sum theirs, and the relative
// residual of Cx against the reference over all rows, summed over the
// job, must be below SummaMaxResidual. Every rank returns the same
// verdict.
func (su *summa) verify() error {
	mi, nj := su.r1-su.r0, su.c1-su.c0
	if mi > 0 {
		for r := range mi {
			s := 0.0
			for j, c := range su.cm[r*nj : (r+1)*nj] {
				s += c * su.x[su.c0+j]
			}
			su.part[r] = s
		}
		if err := narma.Allreduce(su.ctx, su.sides[0].comm, su.part, su.cx, narma.Sum); err != nil {
			return err
		}
	}
	sums := []float64{0, 0}
	if su.gj == 0 {
		for r, y := range su.y {
			d := su.cx[r] - y
			sums[0] += d * d
			sums[1] += y * y
		}
	}
	tot := []float64{0, 0}
	if err := narma.Allreduce(su.ctx, su.c, sums, tot, narma.Sum); err != nil {
		return err
	}
	res := math.Sqrt(tot[0]) / math.Sqrt(tot[1])
	if !(res < SummaMaxResidual) {
		return fmt.Errorf("||Cx - A(Bx)|| / ||A(Bx)|| = %g for a random x, want < %g: wrong product", res, SummaMaxResidual)
	}
	return nil
}

func runSumma(c *narma.Comm, cfg Config, l SummaLayout, kernel suKernel) (rows []Row, err error) {
	e := summaExperiment(l, kernel)
	if err := e.Check(cfg); err != nil {
		return nil, err
	}
	np := c.Size()
	pr, pc, err := l.grid(np)
	if err != nil {
		return nil, fmt.Errorf("summa: %w", err)
	}
	sizes := cfg.sizesOr(DefaultSummaSizes)
	if err := checkSummaSizes(sizes); err != nil {
		return nil, fmt.Errorf("summa: %w", err)
	}
	variants := selectedEntries(e, cfg, suVariants)
	ctx := c.Context()
	me := c.Rank()
	row, err := c.Split(ctx, me/pc, me%pc) // rank in the row: the grid column
	if err != nil {
		return nil, err
	}
	col, err := c.Split(ctx, me%pc, me/pc) // rank in the column: the grid row
	if err != nil {
		return nil, err
	}
	for si, size := range sizes {
		n := size / 8
		su, err := newSumma(c, row, col, cfg, kernel, pr, pc, n, l.panel())
		if err != nil {
			return nil, err
		}
		iters := cfg.Iters
		if iters == 0 {
			iters = summaIters(n)
		}
		warm := cfg.Warmup
		if warm == 0 {
			warm = max(1, iters/10)
		}
		times, err := interleavedRounds(variants, newPlan(c, cfg, e, si, sizes, iters, warm, 1), meanTime(su.measure))
		if err != nil {
			return nil, err
		}
		for _, sd := range su.sides {
			if err := sd.free(ctx); err != nil {
				return nil, err
			}
		}
		if me == 0 {
			rows = appendRows(rows, e.Name, variants, times, size, np, cfg.rounds(), float64(8*n*n))
		}
	}
	return rows, nil
}

// gemmAdd is the local multiply: c += a b, a m x k, b k x n, c m x n,
// row-major and contiguous. Columns of c go in blocks of 256 (a block of
// four rows of b stays in the first-level cache), rows of c in pairs and
// the inner dimension by four, so that each element of b loaded serves
// two rows and each store of c four products.
func gemmAdd(c, a, b []float64, m, n, k int) {
	const jb = 256
	for j0 := 0; j0 < n; j0 += jb {
		j1 := min(j0+jb, n)
		i := 0
		for ; i+2 <= m; i += 2 {
			c0 := c[i*n+j0 : i*n+j1]
			c1 := c[(i+1)*n+j0 : (i+1)*n+j1]
			a0, a1 := a[i*k:(i+1)*k], a[(i+1)*k:(i+2)*k]
			p := 0
			for ; p+4 <= k; p += 4 {
				b0 := b[p*n+j0 : p*n+j1]
				b1 := b[(p+1)*n+j0 : (p+1)*n+j1][:len(b0)]
				b2 := b[(p+2)*n+j0 : (p+2)*n+j1][:len(b0)]
				b3 := b[(p+3)*n+j0 : (p+3)*n+j1][:len(b0)]
				x0, x1, x2, x3 := a0[p], a0[p+1], a0[p+2], a0[p+3]
				y0, y1, y2, y3 := a1[p], a1[p+1], a1[p+2], a1[p+3]
				d0, d1 := c0[:len(b0)], c1[:len(b0)]
				for j, v0 := range b0 {
					v1, v2, v3 := b1[j], b2[j], b3[j]
					d0[j] += x0*v0 + x1*v1 + x2*v2 + x3*v3
					d1[j] += y0*v0 + y1*v1 + y2*v2 + y3*v3
				}
			}
			for ; p < k; p++ {
				bp := b[p*n+j0 : p*n+j1]
				x, y := a0[p], a1[p]
				d0, d1 := c0[:len(bp)], c1[:len(bp)]
				for j, v := range bp {
					d0[j] += x * v
					d1[j] += y * v
				}
			}
		}
		if i < m {
			c0 := c[i*n+j0 : i*n+j1]
			for p := range k {
				x := a[i*k+p]
				bp := b[p*n+j0 : p*n+j1]
				d0 := c0[:len(bp)]
				for j, v := range bp {
					d0[j] += x * v
				}
			}
		}
	}
}

// send-recv: each panel goes down a binomial tree of its communicator
// rooted at its owner. A rank posts the receive of step s+1 (into buffer
// (s+1) mod 2) and, if it owns the panel of step s+1, sends it, before it
// waits for step s: sends are eager, so the owner need not wait for
// anybody, and the buffer of step s+1 was last read by the multiply of
// step s-1, which is over. A rank forwards what it receives to its
// children when it has waited for it. The tag says the step's parity:
// a rank may send the panel of step s+1 it owns before it forwards that
// of step s, to the same child, and a receive must take the message of
// its own step; messages of one parity from one rank come in step order.

// treeParent returns the parent of rank me in the binomial tree of np
// ranks rooted at root, or -1 for the root.
func treeParent(me, root, np int) int {
	vr := (me - root + np) % np
	if vr == 0 {
		return -1
	}
	return (vr - vr&-vr + root) % np
}

// treeChildren calls f with each child of rank me in the binomial tree
// of np ranks rooted at root, the farthest first.
func treeChildren(me, root, np int, f func(child int) error) error {
	vr := (me - root + np) % np
	mask := 1
	for mask < np {
		if vr&mask != 0 {
			break
		}
		mask <<= 1
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if vr+mask < np {
			if err := f((vr + mask + root) % np); err != nil {
				return err
			}
		}
	}
	return nil
}

// suSRAdvance posts the receives, and makes the sends this rank owns, of
// the steps of sd up to step upto.
func suSRAdvance(su *summa, sd *suSide, upto int) error {
	np := sd.comm.Size()
	for ; sd.next <= upto && sd.next < su.steps(); sd.next++ {
		t := sd.next
		msg := sd.bufs[t%2][:2+sd.length[t]]
		root := sd.owner[t]
		if root != sd.me {
			r, err := narma.Irecv(sd.comm, msg, treeParent(sd.me, root, np), tagSuMsg+t%2)
			if err != nil {
				return err
			}
			sd.recvs[t%2] = r
			continue
		}
		su.fill(sd, t, msg)
		if err := treeChildren(sd.me, root, np, func(child int) error {
			return narma.Send(su.ctx, sd.comm, msg, child, tagSuMsg+t%2)
		}); err != nil {
			return err
		}
	}
	return nil
}

func suSRPanel(su *summa, sd *suSide, s int) ([]float64, error) {
	if err := suSRAdvance(su, sd, s+1); err != nil {
		return nil, err
	}
	msg := sd.bufs[s%2][:2+sd.length[s]]
	root := sd.owner[s]
	if root == sd.me {
		return msg, nil
	}
	st, err := sd.recvs[s%2].Wait(su.ctx)
	if err != nil {
		return nil, err
	}
	if st.Count != 8*len(msg) {
		return nil, fmt.Errorf("message of %d bytes from rank %d, want %d: data not delivered", st.Count, st.Source, 8*len(msg))
	}
	if err := su.check(sd, s, msg); err != nil {
		return nil, err
	}
	return msg, treeChildren(sd.me, root, sd.comm.Size(), func(child int) error {
		return narma.Send(su.ctx, sd.comm, msg, child, tagSuMsg+s%2)
	})
}

// bcast: every rank of the communicator calls narma.Bcast of the panel
// of step s, rooted at its owner, at step s (a binomial tree of eager
// messages in the engine); one buffer suffices.

func suBcastPanel(su *summa, sd *suSide, s int) ([]float64, error) {
	msg := sd.bufs[0][:2+sd.length[s]]
	if sd.owner[s] == sd.me {
		su.fill(sd, s, msg)
	}
	if err := narma.Bcast(su.ctx, sd.comm, msg, sd.owner[s]); err != nil {
		return nil, err
	}
	if sd.owner[s] == sd.me {
		return msg, nil
	}
	return msg, su.check(sd, s, msg)
}

// put-notify and counter: the owner of the panel of step s writes its
// message into slot q = s mod 2 of its own window and puts it from there,
// with a notice, into slot q of every other rank of its communicator,
// completing each put locally (FlushLocal); every rank multiplies with
// the message in its slot q. An owner puts the panel of step s+1 as soon
// as it may, a step ahead, polling between chunks of the multiply of
// step s; at the latest it puts it at step s+1, before it waits for
// anything.
//
// What guarantees that no put overwrites a panel still in use: slot q
// holds the panels of the steps s with s mod 2 = q, one after the other.
// Every rank, once its multiply of step s is over (the last read of slot
// q for step s), sends the owner of step s+2 a notice that frees slot q
// (a pure notice, tag tagSuFree+q or counter 2+q); the owner of step s+2
// puts into slot q only once every other rank of its communicator has
// freed it (put-notify: a persistent request for np-1 notices of tag
// tagSuFree+q from any source; counter: counter 2+q at the number of
// such notices expected so far). A notice of that tag or counter at the
// owner can only be for step s: those for step s+2 need step s+2's
// panel, which the owner has not put yet, and those for step s-2 were
// taken when it put step s (or went to another owner). Its own slot q
// the owner overwrites after its own multiply of step s, which it ran
// before. The first two steps of a multiplication need no notice: the
// barrier that ended the previous one came after every multiply. A
// receiver takes the notice of its panel with a persistent request per
// slot for tag tagSuPanel+q from any source (put-notify) or by waiting
// for counter q to count one more panel (counter): only one panel can be
// on its way to slot q at a time, so the notice is that of step s.

func suLockAll(su *summa) error {
	for _, sd := range su.sides {
		if err := sd.win.LockAll(su.ctx, 0); err != nil {
			return err
		}
	}
	return nil
}

func suUnlockAll(su *summa) error {
	for _, sd := range su.sides {
		if err := sd.win.UnlockAll(su.ctx); err != nil {
			return err
		}
	}
	return nil
}

// counters reports whether the current variant notifies with counters.
func (su *summa) counters() bool { return su.v.Name == "counter" }

// suNotifySend puts this rank's panel of step s of side sd, if it owns
// it and has not put it yet, once every other rank has freed the slot;
// if block is false and they have not yet, it returns without putting.
func suNotifySend(su *summa, sd *suSide, s int, block bool) error {
	if s >= su.steps() || sd.owner[s] != sd.me || sd.sent[s] {
		return nil
	}
	q := s % 2
	np := sd.comm.Size()
	if s >= 2 && np > 1 {
		switch {
		case su.counters():
			want := sd.frees[q] + uint64(np-1)
			if block {
				if err := sd.win.WaitCounter(su.ctx, 2+q, want); err != nil {
					return err
				}
			} else if got, err := sd.win.Counter(2 + q); err != nil || got < want {
				return err
			}
			sd.frees[q] = want
		default:
			r := sd.freeReq[q]
			if !sd.freeArmed[q] {
				if err := r.Start(); err != nil {
					return err
				}
				sd.freeArmed[q] = true
			}
			if block {
				if _, err := r.Wait(su.ctx); err != nil {
					return err
				}
			} else if _, done, err := r.Test(); err != nil || !done {
				return err
			}
			sd.freeArmed[q] = false
		}
	}
	msg := sd.win.Local()[q*sd.slot:][:2+sd.length[s]]
	su.fill(sd, s, msg)
	notice := narma.Tag(tagSuPanel + q)
	if su.counters() {
		notice = narma.Counter(q)
	}
	for t := range np {
		if t == sd.me {
			continue
		}
		if err := sd.win.PutNotify(msg, t, q*sd.slot, notice); err != nil {
			return err
		}
		if err := sd.win.FlushLocal(su.ctx, t); err != nil {
			return err
		}
	}
	sd.sent[s] = true
	return nil
}

func suNotifyPanel(su *summa, sd *suSide, s int) ([]float64, error) {
	q := s % 2
	msg := sd.win.Local()[q*sd.slot:][:2+sd.length[s]]
	if err := suNotifySend(su, sd, s, true); err != nil {
		return nil, err
	}
	if err := suNotifySend(su, sd, s+1, false); err != nil {
		return nil, err
	}
	if sd.owner[s] == sd.me {
		return msg, nil
	}
	if su.counters() {
		sd.panels[q]++
		if err := sd.win.WaitCounter(su.ctx, q, sd.panels[q]); err != nil {
			return nil, err
		}
	} else {
		r := sd.panelReq[q]
		if err := r.Start(); err != nil {
			return nil, err
		}
		st, err := r.Wait(su.ctx)
		if err != nil {
			return nil, err
		}
		if st.Source != sd.owner[s] {
			return nil, fmt.Errorf("the notice of slot %d came from rank %d of the %s, the owner is %d: data not delivered",
				q, st.Source, sd.commName(), sd.owner[s])
		}
	}
	return msg, su.check(sd, s, msg)
}

// suNotifyPoll puts the panels of step s+1 this rank owns if their slots
// are free by now.
func suNotifyPoll(su *summa, s int) error {
	for _, sd := range su.sides {
		if sd.active {
			if err := suNotifySend(su, sd, s+1, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// suNotifyDone frees slot s mod 2 for the owner of step s+2, unless this
// rank owns it.
func suNotifyDone(su *summa, sd *suSide, s int) error {
	if s+2 >= su.steps() || sd.owner[s+2] == sd.me {
		return nil
	}
	q := s % 2
	notice := narma.Tag(tagSuFree + q)
	if su.counters() {
		notice = narma.Counter(2 + q)
	}
	to := sd.owner[s+2]
	if err := sd.win.PutNotify(nil, to, 0, notice); err != nil {
		return err
	}
	return sd.win.FlushLocal(su.ctx, to)
}
