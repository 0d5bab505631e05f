package transporttest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// tryAll issues each kind of operation, with a notice, through r and
// returns a description of each and its error. Origin buffers are filled
// with 0xee and returned in bufs for the caller to check.
func (e *env) tryAll(r transport.Region, off int) (whats []string, errs []error, bufs [][]byte) {
	nt := transport.TagNotice(transport.NoticeTag, 5)
	add := func(what string, err error, b ...[]byte) {
		whats = append(whats, what)
		errs = append(errs, err)
		bufs = append(bufs, b...)
	}
	add("Put", e.put(r, off, pattern(9, 8), nt))
	dst := filled(8)
	add("Get", e.get(r, off, dst, nt), dst)
	res := filled(8)
	add("Accumulate", e.acc(r, off, mem.Sum, mem.Int64, mem.Bytes([]int64{1}), res, nt), res)
	res2 := filled(8)
	add("CompareSwap", e.cas(r, off, mem.Int64, filled(8), make([]byte, 8), res2, nt), res2)
	return whats, errs, bufs
}

// expectAll checks that every operation through r fails with want and
// leaves the origin buffers alone.
func (e *env) expectAll(what string, r transport.Region, want error) {
	e.t.Helper()
	whats, errs, bufs := e.tryAll(r, 0)
	for i, err := range errs {
		if !errors.Is(err, want) {
			e.t.Errorf("%s %s: got %v, want %v", whats[i], what, err, want)
		}
	}
	for _, b := range bufs {
		checkFilled(e.t, what+": origin buffer of a refused operation", b, 0xee)
	}
}

// testUnexpose checks that after Unexpose every handle on the region, from
// any origin, fails with ErrNoRegion, writes nothing and notifies nobody,
// also after a new region is exposed, while other regions keep working.
func testUnexpose(t *testing.T, f factory) {
	const n, size = 3, 64
	e := newEnv(t, f, n)
	var notices atomic.Int64
	e.eps[1].SetNoticeHandler(func(int, transport.Key, transport.Notice) { notices.Add(1) })
	bufA, keyA := e.expose(1, size)
	bufB, keyB := e.expose(1, size)
	var handles [n]transport.Region
	for o := range handles {
		handles[o] = e.region(o, 1, keyA, size)
		_, errs, _ := e.tryAll(handles[o], 8*o)
		for _, err := range errs {
			e.must(err, "operation from rank %d before Unexpose", o)
		}
	}
	rB := e.region(0, 1, keyB, size)
	e.flushAll()
	eventually(t, "the notices sent before Unexpose", func() bool { return notices.Load() == 4*n })

	e.must(e.eps[1].Unexpose(keyA), "Unexpose")
	memset(bufA, 0xa5)
	for o, r := range handles {
		e.expectAll(fmt.Sprintf("from rank %d after Unexpose", o), r, transport.ErrNoRegion)
	}
	if _, err := e.eps[0].Region(1, keyA, size); !errors.Is(err, transport.ErrNoRegion) {
		t.Errorf("Region of a withdrawn key: got %v, want ErrNoRegion", err)
	}
	if err := e.eps[1].Unexpose(keyA); !errors.Is(err, transport.ErrNoRegion) {
		t.Errorf("second Unexpose: got %v, want ErrNoRegion", err)
	}
	for _, bogus := range bogusKeys(keyA, keyB) {
		if err := e.eps[1].Unexpose(bogus); !errors.Is(err, transport.ErrNoRegion) {
			t.Errorf("Unexpose of the unknown key %v: got %v, want ErrNoRegion", bogus, err)
		}
	}

	// A new region (which may reuse the key) is not reached through the
	// old handles.
	bufC, keyC := e.expose(1, size)
	memset(bufC, 0xa5)
	if keyC == keyB {
		t.Fatalf("new region got the key %d of a live region", keyC)
	}
	for o, r := range handles {
		e.expectAll(fmt.Sprintf("from rank %d after a new Expose", o), r, transport.ErrNoRegion)
	}
	e.flushAll()
	checkFilled(t, "withdrawn region", bufA, 0xa5)
	checkFilled(t, "region exposed after the Unexpose", bufC, 0xa5)
	if got := notices.Load(); got != 4*n {
		t.Errorf("%d notices delivered for operations on a withdrawn region", got-4*n)
	}

	// The other region still works, through an old handle and a new one.
	e.must(e.put(rB, 0, pattern(1, size), noNotice), "Put to another region")
	e.flush(0, 1)
	checkBytes(t, "other region", bufB, pattern(1, size))
	rB2 := e.region(2, 1, keyB, size)
	e.must(e.put(rB2, 0, pattern(2, size), noNotice), "Put to another region through a new handle")
	e.flush(2, 1)
	checkBytes(t, "other region", bufB, pattern(2, size))
	checkFilled(t, "region exposed after the Unexpose", bufC, 0xa5)
}
