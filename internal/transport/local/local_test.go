package local_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint {
		eps, err := local.New(n)
		if err != nil {
			t.Fatal(err)
		}
		return eps
	})
}

func newFabric(t testing.TB, n int) *local.Fabric {
	t.Helper()
	f, err := local.NewFabric(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestNewFabric(t *testing.T) {
	for _, n := range []int{0, -1} {
		if _, err := local.NewFabric(n); err == nil {
			t.Errorf("NewFabric(%d): no error", n)
		}
		if _, err := local.New(n); err == nil {
			t.Errorf("New(%d): no error", n)
		}
	}
	f := newFabric(t, 3)
	if f.Size() != 3 || len(f.Endpoints()) != 3 {
		t.Fatalf("Size() = %d, %d endpoints", f.Size(), len(f.Endpoints()))
	}
	for i, ep := range f.Endpoints() {
		if ep != transport.Endpoint(f.Endpoint(i)) || f.Endpoint(i).Fabric() != f {
			t.Errorf("endpoint %d: Endpoints and Endpoint disagree", i)
		}
	}
	if f.Endpoint(-1) != nil || f.Endpoint(3) != nil {
		t.Error("Endpoint out of range is not nil")
	}
	want := transport.Caps{Name: "local", Synchronous: true, Direct: true}
	if c := f.Endpoint(0).Caps(); c != want {
		t.Errorf("Caps() = %+v, want %+v", c, want)
	}
	if h := f.Endpoint(0).Host(); h != (transport.Host{Ranks: 3, OneProcess: true}) {
		t.Errorf("Host() = %+v, want 3 ranks of one process", h)
	}
}

// TestAllocs checks that the hot path allocates nothing: operations on a
// cached handle, with and without notices, Flush, and SendAM.
func TestAllocs(t *testing.T) {
	f := newFabric(t, 2)
	a, b := f.Endpoint(0), f.Endpoint(1)
	buf := mem.Alloc(64)
	key, err := b.Expose(buf)
	if err != nil {
		t.Fatal(err)
	}
	var notices, ams int
	b.SetNoticeHandler(func(int, transport.Key, transport.Notice) { notices++ })
	b.SetAMHandler(3, func(int, []byte, []byte) { ams++ })
	r, err := a.Region(1, key, 64)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 16)
	dst := make([]byte, 16)
	one := mem.Bytes([]int64{1})
	res := make([]byte, 8)
	cmp := make([]byte, 8)
	var c transport.Completion
	ctx := context.Background()
	nt := transport.SignalNotice(transport.SignalAdd, 8, 1)
	check := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, n := range []transport.Notice{{}, nt} {
			check(r.Put(16, src, n, &c))
			check(r.Get(16, dst, n, nil))
			check(r.Accumulate(0, mem.Sum, mem.Int64, one, nil, n, &c))
			check(r.Accumulate(0, mem.Sum, mem.Int64, one, res, n, &c))
			check(r.Accumulate(40, mem.Max, mem.Uint8, one[:1], res[:1], n, &c))
			check(r.CompareSwap(8, mem.Int64, cmp, one, res, n, &c))
		}
		check(a.Flush(ctx, 1))
		check(a.FlushAll(ctx))
		check(a.SendAM(1, 3, src, dst))
	})
	if allocs != 0 {
		t.Errorf("hot path: %v allocations per run, want 0", allocs)
	}
	if notices == 0 || ams == 0 {
		t.Fatal("handlers not called")
	}
}

func TestRegionCached(t *testing.T) {
	f := newFabric(t, 2)
	key, err := f.Endpoint(1).Expose(mem.Alloc(64))
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := f.Endpoint(0).Region(1, key, 64)
	r2, _ := f.Endpoint(0).Region(1, key, 64)
	r3, _ := f.Endpoint(0).Region(1, key, 32)
	if r1 != r2 {
		t.Error("Region with the same arguments returned a new handle")
	}
	if r3 == r1 || r3.Size() != 32 {
		t.Error("Region of another size returned the same handle")
	}
	if err := r3.Put(32, []byte{1}, transport.Notice{}, nil); !errors.Is(err, transport.ErrBounds) {
		t.Errorf("Put past a 32-byte handle: %v, want ErrBounds", err)
	}
	if _, err := f.Endpoint(0).Region(1, key, 65); !errors.Is(err, transport.ErrBounds) {
		t.Errorf("Region larger than the region: %v, want ErrBounds", err)
	}
	if err := f.Endpoint(1).Unexpose(key); err != nil {
		t.Fatal(err)
	}
	if err := r1.Put(0, []byte{1}, transport.Notice{}, nil); !errors.Is(err, transport.ErrNoRegion) {
		t.Errorf("Put after Unexpose: %v, want ErrNoRegion", err)
	}
}

func TestSendAMErrors(t *testing.T) {
	f := newFabric(t, 2)
	a := f.Endpoint(0)
	if err := a.SendAM(1, 0, nil, nil); !errors.Is(err, local.ErrNoHandler) {
		t.Errorf("SendAM without a handler: %v, want ErrNoHandler", err)
	}
	if err := a.SendAM(1, transport.MaxAMID, nil, nil); !errors.Is(err, local.ErrNoHandler) {
		t.Errorf("SendAM to AMID MaxAMID: %v, want ErrNoHandler", err)
	}
	if err := a.SendAM(2, 0, nil, nil); !errors.Is(err, local.ErrRank) {
		t.Errorf("SendAM to rank 2: %v, want ErrRank", err)
	}
	f.Endpoint(1).SetAMHandler(0, func(int, []byte, []byte) {})
	if err := a.SendAM(1, 0, nil, nil); err != nil {
		t.Errorf("SendAM: %v", err)
	}
	f.Endpoint(1).SetAMHandler(0, nil)
	if err := a.SendAM(1, 0, nil, nil); !errors.Is(err, local.ErrNoHandler) {
		t.Errorf("SendAM after removing the handler: %v, want ErrNoHandler", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("SetAMHandler(MaxAMID) did not panic")
		}
	}()
	a.SetAMHandler(transport.MaxAMID, func(int, []byte, []byte) {})
}

func TestNoNoticeHandler(t *testing.T) {
	f := newFabric(t, 2)
	buf := mem.Alloc(8)
	key, _ := f.Endpoint(1).Expose(buf)
	r, _ := f.Endpoint(0).Region(1, key, 8)
	if err := r.Put(0, []byte{7}, transport.TagNotice(transport.NoticeTag, 0), nil); err != nil {
		t.Fatalf("notified Put to a rank without a notice handler: %v", err)
	}
	if buf[0] != 7 {
		t.Fatal("Put not applied")
	}
}

func TestCloseAndKill(t *testing.T) {
	f := newFabric(t, 3)
	var told []int
	for i := 0; i < 3; i++ {
		f.Endpoint(i).SetFailureHandler(func(peer int, err error) {
			if !errors.Is(err, transport.ErrPeer) {
				t.Errorf("FailureHandler of %d: %v, want ErrPeer", i, err)
			}
			told = append(told, i*10+peer)
		})
	}
	if err := f.Endpoint(0).Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Endpoint(0).Close(); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if err := f.Kill(0); err == nil {
		t.Error("Kill of a closed rank: no error")
	}
	if err := f.Kill(3); !errors.Is(err, local.ErrRank) {
		t.Errorf("Kill(3): %v, want ErrRank", err)
	}
	if len(told) != 0 {
		t.Fatalf("FailureHandler called on Close: %v", told)
	}
	if err := f.Endpoint(2).Kill(); err != nil {
		t.Fatal(err)
	}
	// Only rank 1 is still open: rank 0 closed, rank 2 is the dead one.
	if len(told) != 1 || told[0] != 12 {
		t.Fatalf("FailureHandler calls %v, want rank 1 told of peer 2", told)
	}
	if err := f.Endpoint(2).Kill(); err == nil {
		t.Error("second Kill: no error")
	}
	if err := f.Endpoint(2).Close(); err != nil {
		t.Errorf("Close of a killed endpoint: %v", err)
	}
	if _, err := f.Endpoint(1).Region(2, transport.WordKey(1), 0); !errors.Is(err, transport.ErrPeer) {
		t.Errorf("Region of a killed rank: %v, want ErrPeer", err)
	}
}

func TestLoadStore(t *testing.T) {
	// Misalignment of the region memory itself is reported as ErrAlign,
	// matching mem.ErrAlign too.
	buf := mem.Alloc(16)
	err := local.AccumulateAt(buf[1:], 0, mem.Sum, mem.Int16, []byte{1, 0}, nil)
	if !errors.Is(err, transport.ErrAlign) || !errors.Is(err, mem.ErrAlign) {
		t.Errorf("accumulate on misaligned memory: %v", err)
	}
	err = local.CompareSwapAt(buf[4:], 0, mem.Int64, make([]byte, 8), make([]byte, 8), nil)
	if !errors.Is(err, transport.ErrAlign) {
		t.Errorf("compare-and-swap on misaligned memory: %v", err)
	}
	// NoOp with a nil src reads as many elements as result holds.
	copy(buf, []byte{1, 2, 3, 4})
	res := make([]byte, 4)
	if err := local.AccumulateAt(buf, 0, mem.NoOp, mem.Uint8, nil, res); err != nil || string(res) != "\x01\x02\x03\x04" {
		t.Errorf("NoOp with nil src: %v, %x", err, res)
	}
	if err := local.AccumulateAt(buf, 14, mem.NoOp, mem.Uint8, nil, res); !errors.Is(err, transport.ErrBounds) {
		t.Errorf("NoOp with nil src past the end: %v, want ErrBounds", err)
	}
}

// TestWordPath: single 8-byte elements, which AccumulateAt and
// CompareSwapAt apply to the word directly, come out as the general path
// of package mem makes them, for every operator and 8-byte type; and
// misplaced ones are still refused.
func TestWordPath(t *testing.T) {
	vals := []int64{0, 1, -1, 42, -7 << 40, 1 << 62}
	ops := []mem.Op{mem.Sum, mem.Prod, mem.Min, mem.Max, mem.Band, mem.Bor, mem.Bxor, mem.Replace, mem.NoOp}
	for _, typ := range []mem.Type{mem.Int64, mem.Uint64, mem.Float64} {
		for _, op := range ops {
			if !op.ValidFor(typ) {
				continue
			}
			for _, a := range vals {
				for _, b := range vals {
					got, want := mem.Alloc(16), mem.Alloc(16)
					mem.AtomicStore64(got[8:], uint64(a))
					mem.AtomicStore64(want[8:], uint64(a))
					src := mem.Bytes([]int64{b})
					gres, wres := make([]byte, 8), make([]byte, 8)
					if err := local.AccumulateAt(got, 8, op, typ, src, gres); err != nil {
						t.Fatalf("%v %v: %v", typ, op, err)
					}
					if err := mem.AtomicAccumulate(op, typ, want[8:], src, wres); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) || !bytes.Equal(gres, wres) {
						t.Fatalf("%v %v of %d with %d: memory % x result % x, want % x and % x", typ, op, a, b, got[8:], gres, want[8:], wres)
					}
					if err := local.CompareSwapAt(got, 8, typ, src, mem.Bytes([]int64{a}), gres); err != nil {
						t.Fatal(err)
					}
					if err := mem.AtomicCompareSwap(typ, want[8:], src, mem.Bytes([]int64{a}), wres); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) || !bytes.Equal(gres, wres) {
						t.Fatalf("%v compare-and-swap: memory % x result % x, want % x and % x", typ, got[8:], gres, want[8:], wres)
					}
				}
			}
		}
	}
	buf := mem.Alloc(16)
	one := mem.Bytes([]int64{1})
	for _, c := range []struct {
		off  int
		want error
	}{{4, transport.ErrAlign}, {12, transport.ErrBounds}, {-8, transport.ErrBounds}, {16, transport.ErrBounds}} {
		if err := local.AccumulateAt(buf, c.off, mem.Sum, mem.Int64, one, nil); !errors.Is(err, c.want) {
			t.Errorf("accumulate at %d: %v, want %v", c.off, err, c.want)
		}
		if err := local.CompareSwapAt(buf, c.off, mem.Int64, one, one, nil); !errors.Is(err, c.want) {
			t.Errorf("compare-and-swap at %d: %v, want %v", c.off, err, c.want)
		}
	}
	if !bytes.Equal(buf, make([]byte, 16)) {
		t.Errorf("refused operations wrote % x", buf)
	}
}

func BenchmarkPut8(b *testing.B) {
	f := newFabric(b, 2)
	key, _ := f.Endpoint(1).Expose(mem.Alloc(64))
	r, _ := f.Endpoint(0).Region(1, key, 64)
	src := make([]byte, 8)
	for b.Loop() {
		_ = r.Put(8, src, transport.Notice{}, nil)
	}
}

func BenchmarkAccumulateInt64(b *testing.B) {
	f := newFabric(b, 2)
	key, _ := f.Endpoint(1).Expose(mem.Alloc(64))
	r, _ := f.Endpoint(0).Region(1, key, 64)
	one := mem.Bytes([]int64{1})
	for b.Loop() {
		_ = r.Accumulate(8, mem.Sum, mem.Int64, one, nil, transport.Notice{}, nil)
	}
}

func BenchmarkPutNotice(b *testing.B) {
	f := newFabric(b, 2)
	key, _ := f.Endpoint(1).Expose(mem.Alloc(64))
	f.Endpoint(1).SetNoticeHandler(func(int, transport.Key, transport.Notice) {})
	r, _ := f.Endpoint(0).Region(1, key, 64)
	src := make([]byte, 8)
	nt := transport.TagNotice(transport.NoticeTag, 1)
	for b.Loop() {
		_ = r.Put(8, src, nt, nil)
	}
}

// TestConcurrentLifecycle runs handle creation and atomics on regions that
// are exposed and withdrawn meanwhile, then closes the endpoints under the
// traffic: every error must be one of the documented ones, and nothing
// may deadlock or race.
func TestConcurrentLifecycle(t *testing.T) {
	const n = 3
	f := newFabric(t, n)
	var cur atomic.Uint64 // key of rank 0's current region
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for rank := 0; rank < n; rank++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := mem.Bytes([]int64{1})
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := f.Endpoint(rank).Region(0, transport.WordKey(cur.Load()), 64)
				if err == nil {
					err = r.Accumulate(8, mem.Sum, mem.Int64, one, nil, transport.TagNotice(transport.NoticeTag, 0), nil)
				}
				if err != nil && !errors.Is(err, transport.ErrNoRegion) && !errors.Is(err, transport.ErrPeer) && !errors.Is(err, transport.ErrClosed) {
					t.Errorf("rank %d: %v", rank, err)
					return
				}
			}
		}()
	}
	f.Endpoint(0).SetNoticeHandler(func(int, transport.Key, transport.Notice) {})
	for i := 0; i < 300; i++ {
		key, err := f.Endpoint(0).Expose(mem.Alloc(64))
		if err != nil {
			t.Fatal(err)
		}
		cur.Store(keyWord(key))
		runtime.Gosched()
		if err := f.Endpoint(0).Unexpose(key); err != nil {
			t.Fatal(err)
		}
	}
	key, _ := f.Endpoint(0).Expose(mem.Alloc(64))
	cur.Store(keyWord(key))
	for rank := n - 1; rank >= 0; rank-- {
		if err := f.Endpoint(rank).Close(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// keyWord returns the word of a key of this transport (transport.WordKey).
func keyWord(k transport.Key) uint64 {
	w, _ := k.AsWord()
	return w
}
