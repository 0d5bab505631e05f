package transporttest

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// testCaps checks that every endpoint reports the same, sensible Caps,
// a Host whose count of ranks fits the job, and that MaxAM is enforced
// exactly.
func testCaps(t *testing.T, f factory) {
	e := newEnv(t, f, 3)
	if e.caps.Name == "" {
		t.Error("Caps().Name is empty")
	}
	if e.caps.MaxAM < 0 {
		t.Errorf("Caps().MaxAM = %d", e.caps.MaxAM)
	}
	for i, ep := range e.eps {
		if c := ep.Caps(); c != e.caps {
			t.Errorf("rank %d: Caps() = %+v, rank 0 says %+v", i, c, e.caps)
		}
		if h := ep.Host(); h.Ranks < 0 || h.Ranks > len(e.eps) {
			t.Errorf("rank %d: Host().Ranks = %d in a job of %d", i, h.Ranks, len(e.eps))
		}
	}
	if e.caps.MaxAM == 0 {
		return
	}
	// The limit is on header plus payload: exactly MaxAM passes, one more
	// byte does not.
	var mu sync.Mutex
	var got [][]byte
	e.eps[1].SetAMHandler(0, func(src int, hdr, payload []byte) {
		mu.Lock()
		got = append(got, append(bytes.Clone(hdr), payload...))
		mu.Unlock()
	})
	hdr := pattern(1, min(8, e.caps.MaxAM))
	payload := pattern(2, e.caps.MaxAM-len(hdr))
	e.must(e.eps[0].SendAM(1, 0, hdr, payload), "SendAM of MaxAM = %d bytes", e.caps.MaxAM)
	if err := e.eps[0].SendAM(1, 0, hdr, append(payload, 0)); !errors.Is(err, transport.ErrTooLarge) {
		t.Errorf("SendAM of MaxAM+1 bytes: got %v, want ErrTooLarge", err)
	}
	if err := e.eps[0].SendAM(1, 0, append(bytes.Clone(hdr), payload...), []byte{0}); !errors.Is(err, transport.ErrTooLarge) {
		t.Errorf("SendAM of MaxAM+1 bytes (in the header): got %v, want ErrTooLarge", err)
	}
	eventually(t, "the message of MaxAM bytes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	e.flushAll()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d messages delivered, want 1", len(got))
	}
	checkBytes(t, "message of MaxAM bytes", got[0], append(hdr, payload...))
}

// testSynchronous checks the claim of a Synchronous transport: operations
// are complete when they return, without a Flush, and leave their
// Completion untouched.
func testSynchronous(t *testing.T, f factory) {
	e := newEnv(t, f, 2)
	if !e.caps.Synchronous {
		t.Skip("transport is not synchronous")
	}
	buf, key := e.expose(1, 64)
	r := e.region(0, 1, key, 64)
	var c transport.Completion
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !c.Complete() {
			t.Fatalf("%s: Completion pending after return on a synchronous transport", what)
		}
	}

	src := pattern(3, 16)
	check("Put", r.Put(8, src, noNotice, &c))
	checkBytes(t, "target memory right after Put", buf[8:24], src)

	copy(buf[32:48], pattern(4, 16))
	dst := make([]byte, 16)
	check("Get", r.Get(32, dst, noNotice, &c))
	checkBytes(t, "Get result right after Get", dst, buf[32:48])

	clear(buf[:8])
	one := mem.Bytes([]int64{5})
	res := make([]byte, 8)
	check("Accumulate", r.Accumulate(0, mem.Sum, mem.Int64, one, res, noNotice, &c))
	checkBytes(t, "fetched value right after Accumulate", res, make([]byte, 8))
	checkBytes(t, "target memory right after Accumulate", buf[:8], one)

	check("CompareSwap", r.CompareSwap(0, mem.Int64, one, mem.Bytes([]int64{9}), res, noNotice, &c))
	checkBytes(t, "fetched value right after CompareSwap", res, one)
	checkBytes(t, "target memory right after CompareSwap", buf[:8], mem.Bytes([]int64{9}))
}

// testRegionLookup checks Region's refusals, distinct keys, zero-sized
// regions and regions of self.
func testRegionLookup(t *testing.T, f factory) {
	e := newEnv(t, f, 2)
	_, k1 := e.expose(1, 64)
	_, k2 := e.expose(1, 64)
	_, k3 := e.expose(0, 64)
	if k1 == k2 {
		t.Fatalf("two regions exposed by rank 1 have the same key %v", k1)
	}
	for _, bogus := range bogusKeys(k1, k2, k3) {
		if _, err := e.eps[0].Region(1, bogus, 64); !errors.Is(err, transport.ErrNoRegion) {
			t.Errorf("Region of the unknown key %v: got %v, want ErrNoRegion", bogus, err)
		}
	}
	for _, target := range []int{-1, 2, 1 << 20} {
		if _, err := e.eps[0].Region(target, k1, 64); err == nil {
			t.Errorf("Region of rank %d in a world of 2: no error", target)
		}
	}
	if _, err := e.eps[0].Region(1, k1, -1); err == nil {
		t.Error("Region of size -1: no error")
	}

	// Both regions of rank 1 are distinct memory.
	r1 := e.region(0, 1, k1, 64)
	r2 := e.region(0, 1, k2, 64)
	e.must(e.put(r1, 0, pattern(1, 64), noNotice), "Put to first region")
	e.must(e.put(r2, 0, pattern(2, 64), noNotice), "Put to second region")
	got := make([]byte, 64)
	e.must(e.get(r1, 0, got, noNotice), "Get from first region")
	checkBytes(t, "first region", got, pattern(1, 64))

	// A region of self.
	self := e.region(0, 0, k3, 64)
	e.must(e.put(self, 0, pattern(3, 64), noNotice), "Put to self")
	e.must(e.get(self, 0, got, noNotice), "Get from self")
	checkBytes(t, "region of self", got, pattern(3, 64))

	// An empty region accepts empty accesses only.
	_, k0 := e.expose(1, 0)
	r0 := e.region(0, 1, k0, 0)
	e.must(e.put(r0, 0, nil, noNotice), "empty Put to an empty region")
	e.must(e.get(r0, 0, nil, noNotice), "empty Get from an empty region")
	if err := e.put(r0, 0, []byte{1}, noNotice); !errors.Is(err, transport.ErrBounds) {
		t.Errorf("Put of 1 byte to an empty region: got %v, want ErrBounds", err)
	}
}

// testDirect checks the claim of a Direct transport: its regions implement
// WordRegion, and a Word is the target's word itself, coherent both ways
// with the region's operations, and refused where no aligned word fits. A
// transport that is not Direct must not offer words.
func testDirect(t *testing.T, f factory) {
	e := newEnv(t, f, 2)
	buf, key := e.expose(1, 64)
	r := e.region(0, 1, key, 64)
	wr, ok := r.(transport.WordRegion)
	if !e.caps.Direct {
		if ok {
			t.Fatal("regions of a transport without Caps.Direct implement WordRegion")
		}
		t.Skip("transport is not direct")
	}
	if !ok {
		t.Fatal("regions of a Caps.Direct transport do not implement WordRegion")
	}
	for _, off := range []int{-8, 60, 64, 4} {
		if _, err := wr.Word(off); err == nil {
			t.Errorf("Word(%d) of a 64-byte region: no error", off)
		}
	}
	w, err := wr.Word(16)
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 8)
	mem.AtomicStore64(val, 40)
	e.must(r.Put(16, val, noNotice, nil), "Put")
	e.flushAll()
	if prev := w.Add(2); prev != 40 || mem.AtomicLoad64(buf[16:]) != 42 {
		t.Fatalf("Add(2) after a Put of 40: previous %d, memory %d; want 40, 42", prev, mem.AtomicLoad64(buf[16:]))
	}
	if prev := w.CompareSwap(41, 7); prev != 42 || mem.AtomicLoad64(buf[16:]) != 42 {
		t.Fatalf("CompareSwap(41, 7) on 42: previous %d, memory %d; want 42 unchanged", prev, mem.AtomicLoad64(buf[16:]))
	}
	if prev := w.CompareSwap(42, 7); prev != 42 {
		t.Fatalf("CompareSwap(42, 7) on 42: previous %d", prev)
	}
	dst := make([]byte, 8)
	e.must(r.Get(16, dst, noNotice, nil), "Get")
	e.flushAll()
	if got := mem.AtomicLoad64(dst); got != 7 {
		t.Fatalf("Get after CompareSwap(42, 7): %d", got)
	}
	checkBytes(t, "the bytes around the word", buf[:16], make([]byte, 16))
}

// bogusKeys returns keys that name no region a transport exposed: the zero
// Key, and each given key with every bit flipped (a key is opaque, but a
// transport that uses part of it leaves the rest zero, and one made of
// two others, as hybrid, fills each half that way).
func bogusKeys(keys ...transport.Key) []transport.Key {
	out := []transport.Key{{}}
	for _, k := range keys {
		var inv transport.Key
		for i := range k {
			inv[i] = ^k[i]
		}
		if !slices.Contains(keys, inv) {
			out = append(out, inv)
		}
	}
	return out
}
