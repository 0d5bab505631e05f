package narma_test

// Helpers shared by the black-box tests of package narma: a Run with a
// deadline, the table of synchronization modes and strategies, an epoch
// driver that opens and closes access epochs in every mode, and error
// collection for the rank functions (which run on their own goroutines and
// so report by returning errors, never by calling t.Fatal).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/ranktest"
)

// testTimeout bounds every job: a hang fails the test instead of blocking
// CI.
const testTimeout = ranktest.Timeout

// runErr runs fn on n goroutine ranks under a deadline and returns Run's
// error (ranktest.RunErr).
func runErr(t *testing.T, n int, fn func(c *narma.Comm) error) error {
	t.Helper()
	return ranktest.RunErr(t, n, fn)
}

// run runs fn on n ranks under a deadline and fails the test on error:
// first with the ranks as goroutines (Run, over the transport that
// NARMA_TRANSPORT selects), then, unless NARMA_TRANSPORT is set or
// NARMA_TEST_PROCS=0, with the ranks as processes of the test binary over
// the shared-memory transport (ranktest.Run; TestMain lets the binary
// serve as a rank). Rank functions report by returning errors, so the same
// checks hold in both.
func run(t *testing.T, n int, fn func(c *narma.Comm) error) {
	t.Helper()
	ranktest.Run(t, n, fn)
}

// runLocal is run with goroutine ranks only, for tests whose ranks
// coordinate through Go values (channels closed by one rank and awaited by
// another), which processes do not share.
func runLocal(t *testing.T, n int, fn func(c *narma.Comm) error) {
	t.Helper()
	ranktest.RunLocal(t, n, fn)
}

// runTests is the part of TestMain shared with the other packages' tests:
// it runs the tests, the test binary serving as the rank processes of run
// (ranktest.Main).
func runTests(m *testing.M) { ranktest.Main(m) }

var strategies = []narma.Strategy{narma.Immediate, narma.Deferred}

// mode is a synchronization mode of the RMA model.
type mode int

const (
	modeFence   mode = iota // Fence ... Fence
	modePSCW                // Post/Start ... Complete/Wait
	modeLock                // Lock(target) ... Unlock(target), per target
	modeLockAll             // LockAll ... UnlockAll
)

var modes = []mode{modeFence, modePSCW, modeLock, modeLockAll}

func (m mode) String() string {
	switch m {
	case modeFence:
		return "fence"
	case modePSCW:
		return "pscw"
	case modeLock:
		return "lock"
	case modeLockAll:
		return "lockall"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

func (m mode) passive() bool { return m == modeLock || m == modeLockAll }

// forModes runs f as a subtest for every synchronization mode and
// strategy.
func forModes(t *testing.T, f func(t *testing.T, m mode, st narma.Strategy)) {
	for _, m := range modes {
		for _, st := range strategies {
			t.Run(fmt.Sprintf("%v/%v", m, st), func(t *testing.T) { f(t, m, st) })
		}
	}
}

// forStrategies runs f as a subtest for both strategies.
func forStrategies(t *testing.T, f func(t *testing.T, st narma.Strategy)) {
	for _, st := range strategies {
		t.Run(st.String(), func(t *testing.T) { f(t, st) })
	}
}

// epoch opens and closes access epochs on w in one mode. targets are the
// ranks this rank accesses; origins the ranks that access this rank (used
// by PSCW's Post). Lock mode locks every target with kind, in ascending
// order. In fence mode every rank must call begin and end, whatever its
// targets.
type epoch[T narma.Elem] struct {
	ctx       context.Context
	w         *narma.Win[T]
	m         mode
	kind      narma.LockType
	targets   []int
	origins   []int
	fenceOpen bool
}

func newEpoch[T narma.Elem](ctx context.Context, w *narma.Win[T], m mode, targets, origins []int) *epoch[T] {
	return &epoch[T]{ctx: ctx, w: w, m: m, kind: narma.Shared, targets: targets, origins: origins}
}

// allToAll returns an epoch in which every rank accesses every rank.
func allToAll[T narma.Elem](c *narma.Comm, w *narma.Win[T], m mode) *epoch[T] {
	all := ranks(c.Size())
	return newEpoch(c.Context(), w, m, all, all)
}

// allToOne returns an epoch in which every rank accesses rank root only.
func allToOne[T narma.Elem](c *narma.Comm, w *narma.Win[T], m mode, root int) *epoch[T] {
	var origins []int
	if c.Rank() == root {
		origins = ranks(c.Size())
	}
	return newEpoch(c.Context(), w, m, []int{root}, origins)
}

func (e *epoch[T]) begin() error {
	switch e.m {
	case modeFence:
		if !e.fenceOpen {
			if err := e.w.Fence(e.ctx, narma.NoPrecede); err != nil {
				return err
			}
			e.fenceOpen = true
		}
	case modePSCW:
		if len(e.origins) > 0 {
			if err := e.w.Post(e.origins, 0); err != nil {
				return err
			}
		}
		if len(e.targets) > 0 {
			if err := e.w.Start(e.ctx, e.targets, 0); err != nil {
				return err
			}
		}
	case modeLock:
		for _, t := range e.targets {
			if err := e.w.Lock(e.ctx, e.kind, t, 0); err != nil {
				return err
			}
		}
	case modeLockAll:
		return e.w.LockAll(e.ctx, 0)
	}
	return nil
}

// end closes the epoch: every operation issued in it is complete at its
// target when end returns (for fence and PSCW, on the target as well).
func (e *epoch[T]) end() error {
	switch e.m {
	case modeFence:
		return e.w.Fence(e.ctx, 0)
	case modePSCW:
		if len(e.targets) > 0 {
			if err := e.w.Complete(e.ctx); err != nil {
				return err
			}
		}
		if len(e.origins) > 0 {
			return e.w.Wait(e.ctx)
		}
	case modeLock:
		for _, t := range e.targets {
			if err := e.w.Unlock(e.ctx, t); err != nil {
				return err
			}
		}
	case modeLockAll:
		return e.w.UnlockAll(e.ctx)
	}
	return nil
}

// finish closes the fence sequence (Fence with NoSucceed) after the last
// end; for the other modes it does nothing.
func (e *epoch[T]) finish() error {
	if e.m == modeFence && e.fenceOpen {
		e.fenceOpen = false
		return e.w.Fence(e.ctx, narma.NoSucceed)
	}
	return nil
}

// ranks returns 0..n-1.
func ranks(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

// checks collects the failures of one rank.
type checks struct {
	rank int
	errs []error
}

func newChecks(c *narma.Comm) *checks { return &checks{rank: c.Rank()} }

func (k *checks) errorf(format string, args ...any) {
	k.errs = append(k.errs, fmt.Errorf("rank %d: "+format, append([]any{k.rank}, args...)...))
}

// ok records err if it is not nil.
func (k *checks) ok(what string, err error) {
	if err != nil {
		k.errorf("%s: unexpected error: %v", what, err)
	}
}

// is records a failure unless err wraps sentinel and its message names
// call. It reports whether err matched.
func (k *checks) is(what string, err, sentinel error, call string) bool {
	switch {
	case err == nil:
		k.errorf("%s: got no error, want %v", what, sentinel)
		return false
	case !errors.Is(err, sentinel):
		k.errorf("%s: got %q, want an error wrapping %q", what, err, sentinel)
		return false
	case call != "" && !strings.Contains(err.Error(), call):
		k.errorf("%s: error %q does not name the call %q", what, err, call)
		return false
	}
	return true
}

// isIn is like is but also requires the message to mention every string
// in values (the bad value).
func (k *checks) isIn(what string, err, sentinel error, call string, values ...string) {
	if !k.is(what, err, sentinel, call) {
		return
	}
	for _, v := range values {
		if !strings.Contains(err.Error(), v) {
			k.errorf("%s: error %q does not mention the bad value %q", what, err, v)
		}
	}
}

func (k *checks) err() error { return errors.Join(k.errs...) }

// pattern is the value of element i of rank r's window in tests that check
// memory is unchanged: never zero, distinct across ranks and elements.
func pattern(r, i int) int64 { return int64(r*1000 + i + 1) }

func fillPattern(s []int64, r int) {
	for i := range s {
		s[i] = pattern(r, i)
	}
}

// checkPattern reports the elements of s that differ from rank r's pattern.
func checkPattern(s []int64, r int) error {
	for i, v := range s {
		if v != pattern(r, i) {
			return fmt.Errorf("rank %d window[%d] = %d, want untouched %d (window %v)", r, i, v, pattern(r, i), s)
		}
	}
	return nil
}

// yield gives other goroutines a chance to run, to widen the windows in
// which a broken synchronization would let accesses interleave.
func yield(k int) {
	for i := 0; i < k; i++ {
		runtime.Gosched()
	}
}

// await blocks until ch is closed or the job is aborted.
func await(c *narma.Comm, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-c.Context().Done():
		return c.Context().Err()
	}
}

// allocPattern allocates a window of n int64 per rank with strategy st,
// fills the local part with the rank's pattern and synchronizes, so that
// every rank may access every window afterwards.
func allocPattern(c *narma.Comm, n int, st narma.Strategy) (*narma.Win[int64], error) {
	ctx := c.Context()
	w, err := narma.Allocate[int64](ctx, c, n, narma.WithStrategy(st))
	if err != nil {
		return nil, err
	}
	if w.Strategy() != st {
		return nil, fmt.Errorf("window strategy %v, want %v", w.Strategy(), st)
	}
	fillPattern(w.Local(), c.Rank())
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// gatherCheck runs check on every rank's window after a barrier; the
// barrier orders the reads after every rank's closing synchronization.
func barrierThen(c *narma.Comm, check func() error) error {
	if err := c.Barrier(c.Context()); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	return c.Barrier(c.Context())
}

// skipOnAsync skips tests that measure properties of the in-process
// transport (allocation counts, completion at return) when the suite runs
// over another transport that NARMA_TRANSPORT selects (async, or shm
// within one process). It does not skip in the rank processes of run,
// whose NARMA_TRANSPORT the launcher sets: they run the test's jobs over
// shared memory between processes, where these properties hold as well.
func skipOnAsync(t *testing.T) {
	t.Helper()
	if os.Getenv("NARMA_TRANSPORT") != "" && !ranktest.RankProcess() {
		t.Skip("measures the in-process transport; NARMA_TRANSPORT is set")
	}
}
