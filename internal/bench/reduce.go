package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/narma-rma/narma"
)

// Arity is the number of children of a node of the reduction tree: the
// children of rank r are ranks Arity*r+1 to Arity*r+Arity.
const Arity = 16

// Tags of the tree reduction's notices and messages.
const (
	tagUp   = 11 // a partial sum, child to parent
	tagDown = 12 // the result, parent to child
)

// DefaultReduceSizes are the vector sizes of the tree reduction when
// Config.Sizes is nil: 8 B to 64 KiB.
var DefaultReduceSizes = []int{8, 64, 512, 4 << 10, 32 << 10, 64 << 10}

// redVariant is one tree-reduction variant. op runs one whole operation
// on one rank: the reduction up the tree and the broadcast of the result
// down it. open and close, run untimed around each measured run, open
// and close its epochs.
type redVariant struct {
	Variant
	open  func(t *treeReduce) error
	op    func(t *treeReduce, n int) error
	close func(t *treeReduce) error
}

var redVariants = []redVariant{
	{Variant: Variant{Name: "send-recv", Summary: "two-sided: Recv from the children in any order, Send to the parent; down the same way", Classic: true},
		op: srReduce},
	{Variant: Variant{Name: "pscw", Summary: "parent Posts to its children, each Starts, Puts into its slot, Completes; parent Waits; down the same way", Classic: true},
		op: pscwReduce},
	{Variant: Variant{Name: "put-notify", Summary: "PutNotify into the child's slot with a Tag, Flush; parent waits with one persistent request counting all children; down the same way"},
		open: redLockAll, op: notifyReduce, close: redUnlockAll},
	{Variant: Variant{Name: "allreduce", Summary: "the runtime's Allreduce (Sum)", Classic: true},
		op: allreduceOp},
}

// TreeReduce returns experiment 4, the 16-ary tree reduction of Belli and
// Hoefler's Fig. 4c: every rank contributes a vector of int64 (so sums
// are exact), partial sums travel up the tree (the children of rank r are
// 16r+1 to 16r+16) to rank 0, and the result travels back down the same
// tree with the same mechanism, so that one operation is an allreduce and
// no rank can start the next operation before every rank has the result
// of this one. The time per reduction is that of the whole operation, up
// and down; the runtime's own Allreduce is measured alongside. Each rank's
// contribution depends on its rank, the operation's number and the index
// of the word, so the expected sum is known in closed form: every rank
// checks every word of every result.
func TreeReduce() Experiment {
	return Experiment{
		Name:     "reduce",
		Summary:  "16-ary tree reduction and broadcast over all ranks, 8 B to 64 KiB (Belli & Hoefler, Fig. 4c)",
		Measure:  "time per reduction",
		Ranks:    0,
		Variants: tableVariants(redVariants),
		Run:      runTreeReduce,
	}
}

// treeReduce is one rank's state in the tree-reduction job.
type treeReduce struct {
	c        *narma.Comm
	ctx      context.Context
	cfg      Config
	variant  string
	w        *narma.Win[int64] // Arity child slots of nmax words, then the result area
	me, size int
	parent   int   // -1 at the root
	children []int // in rank order
	slot     int   // this rank's slot in its parent's window, in words
	nmax     int
	acc      []int64 // the partial sum this rank sends up
	in       []int64 // send-recv's incoming partial sums; allreduce's result
	res      []int64 // send-recv's incoming result
	up       *narma.Request
	down     *narma.Request
	ops      int64 // operations so far, the same on every rank
}

// redItersFor is the default number of operations per round at size
// bytes: about 1 MiB per rank, between 10 and 200.
func redItersFor(size int) int { return max(10, min(200, (1<<20)/size)) }

func runTreeReduce(c *narma.Comm, cfg Config) (rows []Row, err error) {
	e := TreeReduce()
	if err := e.Check(cfg); err != nil {
		return nil, err
	}
	if c.Size() < 2 {
		return nil, fmt.Errorf("reduce needs at least 2 ranks, the job has %d", c.Size())
	}
	sizes := cfg.sizesOr(DefaultReduceSizes)
	rounds := cfg.rounds()
	variants := selectedEntries(e, cfg, redVariants)
	ctx := c.Context()
	nmax := slices.Max(sizes) / 8
	t := &treeReduce{c: c, ctx: ctx, cfg: cfg, me: c.Rank(), size: c.Size(), parent: -1, nmax: nmax,
		acc: make([]int64, nmax), in: make([]int64, nmax), res: make([]int64, nmax)}
	if t.me > 0 {
		t.parent = (t.me - 1) / Arity
		t.slot = (t.me - 1 - Arity*t.parent) * nmax
	}
	for ch := Arity*t.me + 1; ch <= Arity*t.me+Arity && ch < t.size; ch++ {
		t.children = append(t.children, ch)
	}
	if t.w, err = narma.Allocate[int64](ctx, c, (Arity+1)*nmax, narma.WithStrategy(cfg.Strategy)); err != nil {
		return nil, err
	}
	// One request counts the partial sums of all children; one waits for
	// the result from the parent.
	if len(t.children) > 0 {
		if t.up, err = t.w.NotifyInit(narma.AnySource, tagUp, len(t.children)); err != nil {
			return nil, err
		}
	}
	if t.parent >= 0 {
		if t.down, err = t.w.NotifyInit(t.parent, tagDown, 1); err != nil {
			return nil, err
		}
	}

	for si, size := range sizes {
		n := size / 8
		iters := cfg.Iters
		if iters == 0 {
			iters = redItersFor(size)
		}
		warm := cfg.Warmup
		if warm == 0 {
			warm = max(2, iters/10)
		}
		times, err := interleavedRounds(variants, newPlan(c, cfg, e, si, sizes, iters, warm, 1),
			meanTime(func(v redVariant, iters int) (time.Duration, error) { return t.measure(v, n, iters) }))
		if err != nil {
			return nil, err
		}
		if t.me != 0 {
			continue
		}
		rows = appendRows(rows, e.Name, variants, times, size, t.size, rounds, float64(size))
	}

	for _, r := range []*narma.Request{t.up, t.down} {
		if r == nil {
			continue
		}
		if err := r.Free(); err != nil {
			return nil, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	if err := t.w.Free(ctx); err != nil {
		return nil, err
	}
	return rows, nil
}

// measure runs iters operations on n-word vectors with variant v and
// returns the time this rank measured (rank 0's is reported).
func (t *treeReduce) measure(v redVariant, n, iters int) (time.Duration, error) {
	t.variant = v.Name
	if v.open != nil {
		if err := v.open(t); err != nil {
			return 0, t.errorf("open: %w", err)
		}
	}
	if err := t.c.Barrier(t.ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		t.ops++
		if err := v.op(t, n); err != nil {
			return 0, t.errorf("%s, operation %d: %w", FormatSize(8*n), t.ops, err)
		}
	}
	d := time.Since(start)
	if v.close != nil {
		if err := v.close(t); err != nil {
			return 0, t.errorf("close: %w", err)
		}
	}
	return d, nil
}

func (t *treeReduce) errorf(format string, args ...any) error {
	return fmt.Errorf("reduce %s: %w", t.variant, fmt.Errorf(format, args...))
}

// Contributions: rank r adds r*redRankMul + k*redOpMul + i to word i of
// operation k.
const (
	redRankMul = 1<<20 + 7
	redOpMul   = 3
)

// contribute writes this rank's contribution to the current operation
// into acc.
func (t *treeReduce) contribute(acc []int64) {
	base := int64(t.me)*redRankMul + t.ops*redOpMul
	for i := range acc {
		acc[i] = base + int64(i)
	}
}

// corrupt gives an outgoing partial sum to the corrupting hook, if any.
func (t *treeReduce) corrupt(msg []int64) {
	if t.cfg.Corrupt != nil {
		t.cfg.Corrupt(t.variant, msg)
	}
}

// check verifies that sum is the sum of every rank's contribution to the
// current operation.
func (t *treeReduce) check(sum []int64) error {
	n := int64(t.size)
	base := redRankMul*n*(n-1)/2 + n*t.ops*redOpMul
	for i, v := range sum {
		if want := base + n*int64(i); v != want {
			return fmt.Errorf("word %d of the sum is %d, want %d: data not delivered", i, v, want)
		}
	}
	return nil
}

// add adds the partial sum in to acc.
func add(acc, in []int64) {
	for i, v := range in {
		acc[i] += v
	}
}

// send-recv

func srReduce(t *treeReduce, n int) error {
	acc := t.acc[:n]
	t.contribute(acc)
	for range t.children {
		st, err := t.c.Recv(t.ctx, narma.Bytes(t.in[:n]), narma.AnySource, tagUp)
		if err != nil {
			return err
		}
		if st.Count != 8*n {
			return fmt.Errorf("partial sum of %d bytes from rank %d, want %d", st.Count, st.Source, 8*n)
		}
		add(acc, t.in[:n])
	}
	res := acc
	if t.parent >= 0 {
		t.corrupt(acc)
		if err := t.c.Send(t.ctx, narma.Bytes(acc), t.parent, tagUp); err != nil {
			return err
		}
		res = t.res[:n]
		st, err := t.c.Recv(t.ctx, narma.Bytes(res), t.parent, tagDown)
		if err != nil {
			return err
		}
		if st.Count != 8*n {
			return fmt.Errorf("result of %d bytes from rank %d, want %d", st.Count, st.Source, 8*n)
		}
	}
	if err := t.check(res); err != nil {
		return err
	}
	for _, ch := range t.children {
		if err := t.c.Send(t.ctx, narma.Bytes(res), ch, tagDown); err != nil {
			return err
		}
	}
	return nil
}

// pscw: up, a parent exposes its child slots to its children for one
// epoch; down, a child exposes its result area to its parent. A window
// has one exposure epoch at a time, and each is closed before the next.

func pscwReduce(t *treeReduce, n int) error {
	acc := t.acc[:n]
	t.contribute(acc)
	local := t.w.Local()
	if len(t.children) > 0 {
		if err := t.w.Post(t.children, 0); err != nil {
			return err
		}
		if err := t.w.Wait(t.ctx); err != nil {
			return err
		}
		for j := range t.children {
			add(acc, local[j*t.nmax:j*t.nmax+n])
		}
	}
	res := acc
	if t.parent >= 0 {
		t.corrupt(acc)
		if err := t.w.Start(t.ctx, []int{t.parent}, 0); err != nil {
			return err
		}
		if err := t.w.Put(acc, t.parent, t.slot); err != nil {
			return err
		}
		if err := t.w.Complete(t.ctx); err != nil {
			return err
		}
		if err := t.w.Post([]int{t.parent}, 0); err != nil {
			return err
		}
		if err := t.w.Wait(t.ctx); err != nil {
			return err
		}
		res = local[Arity*t.nmax : Arity*t.nmax+n]
	}
	if err := t.check(res); err != nil {
		return err
	}
	if len(t.children) > 0 {
		if err := t.w.Start(t.ctx, t.children, 0); err != nil {
			return err
		}
		for _, ch := range t.children {
			if err := t.w.Put(res, ch, Arity*t.nmax); err != nil {
				return err
			}
		}
		if err := t.w.Complete(t.ctx); err != nil {
			return err
		}
	}
	return nil
}

// put-notify: one persistent request counts the notices of all children,
// whatever their order. One tag per direction suffices: a child sends its
// partial sum of operation k+1 only after it received the result of
// operation k, which its parent sends only after its request matched
// every notice of operation k and it read every slot; likewise a parent
// writes a child's result area again only after that child's next
// partial sum arrived, by when the child has forwarded the result. Every
// put is flushed, so that it also completes under the deferred strategy.

func redLockAll(t *treeReduce) error   { return t.w.LockAll(t.ctx, 0) }
func redUnlockAll(t *treeReduce) error { return t.w.UnlockAll(t.ctx) }

func notifyReduce(t *treeReduce, n int) error {
	acc := t.acc[:n]
	t.contribute(acc)
	local := t.w.Local()
	if len(t.children) > 0 {
		if err := wait(t.ctx, t.up); err != nil {
			return err
		}
		for j := range t.children {
			add(acc, local[j*t.nmax:j*t.nmax+n])
		}
	}
	res := acc
	if t.parent >= 0 {
		t.corrupt(acc)
		if err := t.w.PutNotify(acc, t.parent, t.slot, narma.Tag(tagUp)); err != nil {
			return err
		}
		if err := t.w.FlushAll(t.ctx); err != nil {
			return err
		}
		if err := wait(t.ctx, t.down); err != nil {
			return err
		}
		res = local[Arity*t.nmax : Arity*t.nmax+n]
	}
	if err := t.check(res); err != nil {
		return err
	}
	if len(t.children) > 0 {
		for _, ch := range t.children {
			if err := t.w.PutNotify(res, ch, Arity*t.nmax, narma.Tag(tagDown)); err != nil {
				return err
			}
		}
		if err := t.w.FlushAll(t.ctx); err != nil {
			return err
		}
	}
	return nil
}

// allreduce: the runtime's collective; every rank's contribution counts
// as an outgoing partial sum.

func allreduceOp(t *treeReduce, n int) error {
	acc := t.acc[:n]
	t.contribute(acc)
	t.corrupt(acc)
	if err := narma.Allreduce(t.ctx, t.c, acc, t.in[:n], narma.Sum); err != nil {
		return err
	}
	return t.check(t.in[:n])
}
