package async_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/async"
	"github.com/narma-rma/narma/internal/transport/local"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

// wrapLocal returns n asynchronous endpoints over local ones.
func wrapLocal(t testing.TB, n int) []transport.Endpoint {
	t.Helper()
	eps, err := local.New(n)
	if err != nil {
		t.Fatal(err)
	}
	return async.Wrap(eps)
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint { return wrapLocal(t, n) })
}

// world is a set of wrapped endpoints closed at the end of the test.
func world(t *testing.T, n int) []transport.Endpoint {
	t.Helper()
	eps := wrapLocal(t, n)
	t.Cleanup(func() {
		for _, ep := range eps {
			_ = ep.Close()
		}
	})
	return eps
}

// expose exposes size zeroed bytes at ep and returns them and ep's key.
func expose(t *testing.T, ep transport.Endpoint, size int) ([]byte, transport.Key) {
	t.Helper()
	b := mem.Alloc(size)
	t.Cleanup(func() { _ = mem.Free(b) })
	key, err := ep.Expose(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, key
}

func region(t *testing.T, ep transport.Endpoint, target int, key transport.Key, size int) transport.Region {
	t.Helper()
	r, err := ep.Region(target, key, size)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCaps(t *testing.T) {
	eps := world(t, 2)
	want := transport.Caps{Name: "async(local)"}
	for i, ep := range eps {
		if c := ep.Caps(); c != want {
			t.Errorf("rank %d: Caps() = %+v, want %+v", i, c, want)
		}
		if h := ep.Host(); h != (transport.Host{Ranks: 2, OneProcess: true}) {
			t.Errorf("rank %d: Host() = %+v, want the inner endpoint's", i, h)
		}
	}
	_, key := expose(t, eps[1], 64)
	r := region(t, eps[0], 1, key, 64)
	if _, ok := r.(transport.WordRegion); ok {
		t.Error("region implements WordRegion")
	}
	if _, ok := eps[0].(transporttest.Killer); !ok {
		t.Error("endpoint over a local one does not pass Kill through")
	}
}

// TestFlushWaits issues 1000 puts without waiting for them, from one
// reused 8-byte buffer (copied at issue) and from separate larger buffers,
// to two targets, and checks that Flush and FlushAll make all the data
// visible and that the Completion is complete by then.
func TestFlushWaits(t *testing.T) {
	const ops = 1000
	eps := world(t, 3)
	ctx := ctxT(t)
	small, k1 := expose(t, eps[1], ops*8)
	large, k2 := expose(t, eps[2], ops*64)
	r1 := region(t, eps[0], 1, k1, len(small))
	r2 := region(t, eps[0], 2, k2, len(large))

	var c transport.Completion
	word := make([]byte, 8)
	srcs := make([][]byte, ops)
	for i := range ops {
		binary.LittleEndian.PutUint64(word, uint64(i)+1)
		if err := r1.Put(i*8, word, transport.Notice{}, &c); err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
		srcs[i] = bytes.Repeat([]byte{byte(i)}, 64)
		var cc *transport.Completion // every other one without a Completion
		if i%2 == 0 {
			cc = &c
		}
		if err := r2.Put(i*64, srcs[i], transport.Notice{}, cc); err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
	}
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatalf("Flush(1): %v", err)
	}
	for i := range ops {
		if got := binary.LittleEndian.Uint64(small[i*8:]); got != uint64(i)+1 {
			t.Fatalf("after Flush(1): word %d = %d, want %d", i, got, i+1)
		}
	}
	if err := eps[0].FlushAll(ctx); err != nil {
		t.Fatalf("FlushAll: %v", err)
	}
	if !c.Complete() {
		t.Fatal("Completion pending after FlushAll")
	}
	if err := c.Err(); err != nil {
		t.Fatalf("Completion: %v", err)
	}
	for i := range ops {
		if !bytes.Equal(large[i*64:(i+1)*64], srcs[i]) {
			t.Fatalf("after FlushAll: block %d differs", i)
		}
	}
}

// TestCompletionCounts issues gets and atomics sharing one Completion and
// waits for it to reach zero; then the results are all there.
func TestCompletionCounts(t *testing.T) {
	const ops = 1000
	eps := world(t, 2)
	ctx := ctxT(t)
	buf, key := expose(t, eps[1], ops*8+8)
	for i := range ops {
		binary.LittleEndian.PutUint64(buf[i*8:], uint64(i)*3)
	}
	r := region(t, eps[0], 1, key, len(buf))
	var c transport.Completion
	dsts := make([]byte, ops*8)
	tickets := make([]byte, ops*8)
	one := mem.Bytes([]int64{1})
	for i := range ops {
		if err := r.Get(i*8, dsts[i*8:(i+1)*8], transport.Notice{}, &c); err != nil {
			t.Fatal(err)
		}
		if err := r.Accumulate(ops*8, mem.Sum, mem.Int64, one, tickets[i*8:(i+1)*8], transport.Notice{}, &c); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if !c.Complete() {
		t.Fatal("Completion not complete after Wait")
	}
	for i := range ops {
		if got := binary.LittleEndian.Uint64(dsts[i*8:]); got != uint64(i)*3 {
			t.Fatalf("Get %d: %d, want %d", i, got, i*3)
		}
		// One origin, FIFO worker: the tickets come in issue order.
		if got := binary.LittleEndian.Uint64(tickets[i*8:]); got != uint64(i) {
			t.Fatalf("fetch-and-add %d: %d, want %d", i, got, i)
		}
	}
}

// blocker is a notice handler at a target that blocks the origin's worker
// (on which it runs) at the first notice until release is closed, so that
// the operations queued behind are deterministically pending.
type blocker struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newBlocker(ep transport.Endpoint) *blocker {
	b := &blocker{entered: make(chan struct{}), release: make(chan struct{})}
	ep.SetNoticeHandler(func(int, transport.Key, transport.Notice) {
		b.once.Do(func() {
			close(b.entered)
			<-b.release
		})
	})
	return b
}

// TestPending holds the worker up and checks what may be seen of the
// operations queued behind: not complete, results not written, Flush
// waiting (and giving up with its context), active messages overtaking
// them, small sources already copied.
func TestPending(t *testing.T) {
	eps := world(t, 2)
	ctx := ctxT(t)
	buf, key := expose(t, eps[1], 64)
	copy(buf[32:], "abcdefgh")
	r := region(t, eps[0], 1, key, 64)
	b := newBlocker(eps[1])
	var ams atomic.Int64
	eps[1].SetAMHandler(0, func(int, []byte, []byte) { ams.Add(1) })

	if err := r.Put(0, []byte{1}, transport.TagNotice(transport.NoticeTag, 0), nil); err != nil {
		t.Fatal(err)
	}
	<-b.entered
	var c transport.Completion
	word := []byte("12345678")
	if err := r.Put(8, word, transport.Notice{}, &c); err != nil {
		t.Fatal(err)
	}
	copy(word, "xxxxxxxx") // copied at issue: the put must write 12345678
	dst := bytes.Repeat([]byte{0xee}, 8)
	if err := r.Get(32, dst, transport.Notice{}, &c); err != nil {
		t.Fatal(err)
	}
	if c.Complete() {
		t.Fatal("Completion complete while the worker is held up")
	}
	if !bytes.Equal(dst, bytes.Repeat([]byte{0xee}, 8)) {
		t.Fatal("Get's dst written while the worker is held up")
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := eps[0].Flush(short, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush while the worker is held up: %v, want DeadlineExceeded", err)
	}
	if err := eps[0].FlushAll(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FlushAll while the worker is held up: %v, want DeadlineExceeded", err)
	}
	// Flush of a target with nothing outstanding does not wait.
	if err := eps[0].Flush(ctx, 0); err != nil {
		t.Fatalf("Flush(0): %v", err)
	}
	// Active messages do not queue behind data.
	if err := eps[0].SendAM(1, 0, []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	if ams.Load() != 1 {
		t.Fatal("active message held up behind data operations")
	}
	if buf[8] != 0 {
		t.Fatal("Put executed while the worker is held up")
	}

	close(b.release)
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if !c.Complete() {
		t.Fatal("Completion pending after Flush")
	}
	if string(buf[8:16]) != "12345678" || buf[0] != 1 {
		t.Fatalf("target after Flush: %q", buf[:16])
	}
	if string(dst) != "abcdefgh" {
		t.Fatalf("Get after Flush: %q", dst)
	}
}

// TestErrors checks where errors are reported: argument errors at issue
// with the Completion untouched; target-side errors through the
// Completion, or, for operations without one, once by the next Flush of
// their target.
func TestErrors(t *testing.T) {
	eps := world(t, 3)
	ctx := ctxT(t)
	_, key := expose(t, eps[1], 64)
	r := region(t, eps[0], 1, key, 64)
	var c transport.Completion
	eight := make([]byte, 8)
	for _, tc := range []struct {
		what string
		err  error
		want error
	}{
		{"Put out of bounds", r.Put(60, eight, transport.Notice{}, &c), transport.ErrBounds},
		{"Get out of bounds", r.Get(-1, eight, transport.Notice{}, &c), transport.ErrBounds},
		{"misaligned Accumulate", r.Accumulate(4, mem.Sum, mem.Int64, eight, nil, transport.Notice{}, &c), transport.ErrAlign},
		{"Band on floats", r.Accumulate(0, mem.Band, mem.Float64, eight, nil, transport.Notice{}, &c), mem.ErrOp},
		{"short result", r.Accumulate(0, mem.Sum, mem.Int64, eight, eight[:4], transport.Notice{}, &c), mem.ErrLength},
		{"CompareSwap out of bounds", r.CompareSwap(64, mem.Int64, eight, eight, nil, transport.Notice{}, &c), transport.ErrBounds},
		{"misaligned CompareSwap", r.CompareSwap(2, mem.Int32, eight, eight, nil, transport.Notice{}, &c), transport.ErrAlign},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, tc.err, tc.want)
		}
	}
	if !c.Complete() {
		t.Fatal("operations refused at issue left the Completion pending")
	}

	if err := eps[1].Unexpose(key); err != nil {
		t.Fatal(err)
	}
	// With a Completion: reported there, not by Flush.
	if err := r.Put(0, eight, transport.Notice{}, &c); err != nil {
		t.Fatalf("Put on a withdrawn region failed at issue: %v", err)
	}
	if err := c.Wait(ctx); !errors.Is(err, transport.ErrNoRegion) {
		t.Fatalf("Completion of a Put on a withdrawn region: %v, want ErrNoRegion", err)
	}
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatalf("Flush after an error reported through a Completion: %v", err)
	}
	// Without: reported by the next Flush of the target, once.
	if err := r.Get(0, eight, transport.Notice{}, nil); err != nil {
		t.Fatalf("Get on a withdrawn region failed at issue: %v", err)
	}
	if err := eps[0].Flush(ctx, 2); err != nil {
		t.Fatalf("Flush of another target: %v", err)
	}
	if err := eps[0].Flush(ctx, 1); !errors.Is(err, transport.ErrNoRegion) {
		t.Fatalf("Flush after a failed Get without Completion: %v, want ErrNoRegion", err)
	}
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatalf("second Flush: %v", err)
	}
	if err := r.Put(0, eight, transport.Notice{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := eps[0].FlushAll(ctx); !errors.Is(err, transport.ErrNoRegion) {
		t.Fatalf("FlushAll after a failed Put without Completion: %v, want ErrNoRegion", err)
	}
	if err := eps[0].FlushAll(ctx); err != nil {
		t.Fatalf("second FlushAll: %v", err)
	}
}

// TestHandlersIssue has notice handlers, which run on an origin's worker,
// issue operations to every rank, including the origin and the target
// itself: queueing from a worker must not deadlock.
func TestHandlersIssue(t *testing.T) {
	const n, rounds = 3, 200
	eps := world(t, n)
	ctx := ctxT(t)
	bufs := make([][]byte, n)
	regs := make([][]transport.Region, n) // regs[origin][target]
	keys := make([]transport.Key, n)
	for i := range eps {
		bufs[i], keys[i] = expose(t, eps[i], 8)
	}
	for o := range eps {
		for tg := range eps {
			regs[o] = append(regs[o], region(t, eps[o], tg, keys[tg], 8))
		}
	}
	one := mem.Bytes([]int64{1})
	var handled atomic.Int64
	var comp transport.Completion
	var errs sync.Map
	for tg := range eps {
		eps[tg].SetNoticeHandler(func(src int, _ transport.Key, nt transport.Notice) {
			handled.Add(1)
			if nt.Tag() == 0 {
				return
			}
			for k := range n { // count to everyone, plus a notified one onward
				if err := regs[tg][k].Accumulate(0, mem.Sum, mem.Int64, one, nil, transport.Notice{}, &comp); err != nil {
					errs.Store(err.Error(), true)
				}
			}
			// The next hop is the target itself for Tag 3 (n = 3): the
			// handler then queues at the endpoint whose worker runs it.
			next := transport.TagNotice(transport.NoticeTag, nt.Tag()-1)
			if err := regs[tg][(tg+int(nt.Tag()))%n].Accumulate(0, mem.Sum, mem.Int64, one, nil, next, &comp); err != nil {
				errs.Store(err.Error(), true)
			}
		})
	}
	for i := range rounds {
		nt := transport.TagNotice(transport.NoticeTag, 3)
		if err := regs[i%n][(i+1)%n].Accumulate(0, mem.Sum, mem.Int64, one, nil, nt, &comp); err != nil {
			t.Fatal(err)
		}
	}
	// Each chain is 4 notified accumulates and 3 rounds of n plain ones.
	want := int64(rounds * (4 + 3*n))
	deadline := time.Now().Add(20 * time.Second)
	for sum(bufs) != want || handled.Load() != rounds*4 {
		if time.Now().After(deadline) {
			t.Fatalf("sum %d, want %d; %d notices handled, want %d", sum(bufs), want, handled.Load(), rounds*4)
		}
		for _, ep := range eps {
			if err := ep.FlushAll(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := comp.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	errs.Range(func(k, _ any) bool { t.Error(k); return true })
}

func sum(bufs [][]byte) int64 {
	var s int64
	for _, b := range bufs {
		s += int64(mem.AtomicLoad64(b))
	}
	return s
}

// TestClose checks that Close executes the queued operations first,
// refuses later ones with ErrClosed, and leaves no goroutine behind.
func TestClose(t *testing.T) {
	before := runtime.NumGoroutine()
	const n, ops = 4, 500
	eps := wrapLocal(t, n)
	buf, key := expose(t, eps[0], ops*8)
	r := region(t, eps[1], 0, key, len(buf))
	var c transport.Completion
	for i := range ops {
		if err := r.Put(i*8, mem.Bytes([]int64{int64(i) + 1}), transport.Notice{}, &c); err != nil {
			t.Fatal(err)
		}
	}
	if err := eps[1].Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !c.Complete() || c.Err() != nil {
		t.Fatalf("operations queued before Close: complete %v, error %v", c.Complete(), c.Err())
	}
	for i := range ops {
		if got := int64(binary.LittleEndian.Uint64(buf[i*8:])); got != int64(i)+1 {
			t.Fatalf("word %d = %d after Close, want %d", i, got, i+1)
		}
	}
	if err := r.Put(0, []byte{1}, transport.Notice{}, &c); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Put after Close: %v, want ErrClosed", err)
	}
	if !c.Complete() {
		t.Fatal("Put refused after Close left the Completion pending")
	}
	if err := eps[1].Close(); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
	for i, ep := range eps {
		if i != 1 {
			if err := ep.Close(); err != nil {
				t.Fatalf("Close of rank %d: %v", i, err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}
