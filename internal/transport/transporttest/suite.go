// Package transporttest is the conformance suite of narma transports.
// Every implementation of transport.Endpoint runs it from its tests:
//
//	func TestConformance(t *testing.T) {
//		transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint {
//			eps, err := mytransport.New(n)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return eps
//		})
//	}
//
// The suite checks the contract written in package transport: data
// movement of every size to peers and to self, bounds and alignment checks
// that write nothing, the arithmetic and atomicity of the accumulate
// family on every element type, compare-and-swap (including a mutex built
// on it), notices delivered after their data and in issue order, active
// messages delivered in order to the right handler, Flush, withdrawn
// regions, orderly Close, the advertised Caps, and peer failure when the
// endpoints implement Killer.
//
// It works with asynchronous transports: every operation is issued with a
// Completion that is waited for, and deliveries to handlers are awaited
// with a deadline. Operations may report errors either when issued or
// through their Completion.
package transporttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// Killer is implemented by endpoints whose transport can simulate the
// abrupt failure of their rank in tests. After Kill returns, or soon
// after, every other endpoint's FailureHandler must be called once with
// the killed rank and an error matching transport.ErrPeer, and operations
// aimed at the killed rank must fail with an error matching
// transport.ErrPeer. The peer-failure test is skipped if the endpoints do
// not implement Killer.
type Killer interface {
	Kill() error
}

// timeout bounds every wait of the suite.
const timeout = 20 * time.Second

// Run runs the conformance suite as subtests of t. newEndpoints must
// return n fresh, connected endpoints, endpoint i having rank i, with no
// handler installed; it is called once or more by each subtest (n is at
// most 4). The suite closes the endpoints when a subtest ends, ignoring
// errors; newEndpoints may register further cleanup with t.Cleanup.
func Run(t *testing.T, newEndpoints func(t *testing.T, n int) []transport.Endpoint) {
	tests := []struct {
		name string
		f    func(*testing.T, factory)
	}{
		{"Caps", testCaps},
		{"Synchronous", testSynchronous},
		{"Direct", testDirect},
		{"Mapped", testMapped},
		{"RegionLookup", testRegionLookup},
		{"PutGet", testPutGet},
		{"PutGetConcurrent", testPutGetConcurrent},
		{"Bounds", testBounds},
		{"AccumulateErrors", testAccumulateErrors},
		{"Accumulate", testAccumulate},
		{"AccumulateConcurrent", testAccumulateConcurrent},
		{"CompareSwap", testCompareSwap},
		{"CompareSwapMutex", testCompareSwapMutex},
		{"Notice", testNotice},
		{"NoticeOrder", testNoticeOrder},
		{"NoticeGet", testNoticeGet},
		{"AM", testAM},
		{"AMOrder", testAMOrder},
		{"AMReply", testAMReply},
		{"Flush", testFlush},
		{"FlushLocal", testFlushLocal},
		{"Unexpose", testUnexpose},
		{"Close", testClose},
		{"PeerFailure", testPeerFailure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, newEndpoints) })
	}
}

// factory is the argument of Run.
type factory = func(t *testing.T, n int) []transport.Endpoint

// env is the world of one subtest.
type env struct {
	t    *testing.T
	eps  []transport.Endpoint
	caps transport.Caps
}

// newEnv makes n endpoints and checks their identity and capabilities.
func newEnv(t *testing.T, f factory, n int) *env {
	t.Helper()
	eps := f(t, n)
	if len(eps) != n {
		t.Fatalf("factory returned %d endpoints, want %d", len(eps), n)
	}
	t.Cleanup(func() {
		for _, ep := range eps {
			if ep != nil {
				_ = ep.Close()
			}
		}
	})
	for i, ep := range eps {
		if ep == nil {
			t.Fatalf("endpoint %d is nil", i)
		}
		if ep.Rank() != i || ep.Size() != n {
			t.Fatalf("endpoint %d: Rank() = %d, Size() = %d; want %d, %d", i, ep.Rank(), ep.Size(), i, n)
		}
	}
	return &env{t: t, eps: eps, caps: eps[0].Caps()}
}

// expose allocates size zeroed bytes with mem.Alloc and exposes them at
// rank.
func (e *env) expose(rank, size int) ([]byte, transport.Key) {
	e.t.Helper()
	b := mem.Alloc(size)
	e.t.Cleanup(func() { _ = mem.Free(b) })
	key, err := e.eps[rank].Expose(b)
	if err != nil {
		e.t.Fatalf("rank %d: Expose(%d bytes): %v", rank, size, err)
	}
	return b, key
}

// region returns origin's handle on target's region key of size bytes.
func (e *env) region(origin, target int, key transport.Key, size int) transport.Region {
	e.t.Helper()
	r, err := e.eps[origin].Region(target, key, size)
	if err != nil {
		e.t.Fatalf("rank %d: Region(%d, %d, %d): %v", origin, target, key, size, err)
	}
	if r.Size() != size {
		e.t.Fatalf("rank %d: Region(%d, %d, %d).Size() = %d", origin, target, key, size, r.Size())
	}
	return r
}

// do issues an operation with a fresh Completion and waits for it. It
// returns the operation's error, whether reported at issue or through the
// Completion, and checks the Completion contract: an operation that fails
// at issue leaves it complete, and on a Synchronous transport every
// operation leaves it complete. It may be called from any goroutine.
func (e *env) do(op func(c *transport.Completion) error) error {
	var c transport.Completion
	err := op(&c)
	if err != nil {
		if !c.Complete() {
			return fmt.Errorf("operation failed at issue (%w) but left its Completion pending", err)
		}
		return err
	}
	if e.caps.Synchronous && !c.Complete() {
		return errors.New("synchronous transport left a Completion pending after the operation returned")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("operation did not complete within %v", timeout)
		}
		return err
	}
	return nil
}

// must fails the test if err is not nil.
func (e *env) must(err error, format string, args ...any) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}

// put, get, acc and cas issue one operation and wait for it.
func (e *env) put(r transport.Region, off int, src []byte, n transport.Notice) error {
	return e.do(func(c *transport.Completion) error { return r.Put(off, src, n, c) })
}

func (e *env) get(r transport.Region, off int, dst []byte, n transport.Notice) error {
	return e.do(func(c *transport.Completion) error { return r.Get(off, dst, n, c) })
}

func (e *env) acc(r transport.Region, off int, op mem.Op, t mem.Type, src, result []byte, n transport.Notice) error {
	return e.do(func(c *transport.Completion) error { return r.Accumulate(off, op, t, src, result, n, c) })
}

func (e *env) cas(r transport.Region, off int, t mem.Type, compare, swap, result []byte, n transport.Notice) error {
	return e.do(func(c *transport.Completion) error { return r.CompareSwap(off, t, compare, swap, result, n, c) })
}

// flush flushes origin's operations to target.
func (e *env) flush(origin, target int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := e.eps[origin].Flush(ctx, target); err != nil {
		e.t.Fatalf("rank %d: Flush(%d): %v", origin, target, err)
	}
}

// flushAll flushes every endpoint's operations to every target.
func (e *env) flushAll() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i, ep := range e.eps {
		if err := ep.FlushAll(ctx); err != nil {
			e.t.Fatalf("rank %d: FlushAll: %v", i, err)
		}
	}
}

// eventually waits until cond holds, failing the test after the timeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// pattern returns n bytes of a pseudo-random sequence determined by seed.
func pattern(seed uint64, n int) []byte {
	b := make([]byte, n)
	fill(b, seed)
	return b
}

// fill fills b with the sequence of pattern(seed, len(b)).
func fill(b []byte, seed uint64) {
	x := seed*0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 24)
	}
}

// memset sets every byte of b to v.
func memset(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// firstDiff returns the index of the first difference of a and b, or -1.
func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

// checkBytes fails the test if got differs from want.
func checkBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if i := firstDiff(got, want); i >= 0 {
		g, w := -1, -1
		if i < len(got) {
			g = int(got[i])
		}
		if i < len(want) {
			w = int(want[i])
		}
		t.Fatalf("%s: differs at byte %d of %d: got %#x, want %#x", what, i, len(want), g, w)
	}
}

// checkFilled fails the test unless every byte of b is v.
func checkFilled(t *testing.T, what string, b []byte, v byte) {
	t.Helper()
	for i, x := range b {
		if x != v {
			t.Fatalf("%s: byte %d is %#x, want %#x", what, i, x, v)
		}
	}
}

// errorList collects failures found on goroutines that may outlive the
// test (handlers); report fails the test with them.
type errorList struct {
	mu   sync.Mutex
	errs []string
}

func (l *errorList) add(format string, args ...any) {
	l.mu.Lock()
	if len(l.errs) < 20 {
		l.errs = append(l.errs, fmt.Sprintf(format, args...))
	}
	l.mu.Unlock()
}

func (l *errorList) failed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errs) > 0
}

func (l *errorList) report(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.errs {
		t.Error(s)
	}
	if len(l.errs) > 0 {
		t.FailNow()
	}
}

// noNotice is the zero Notice: a plain access.
var noNotice transport.Notice
