package transporttest

import (
	"testing"

	"github.com/narma-rma/narma/internal/transport"
)

// testMapped: SharesMemory is an equivalence that holds for the rank
// itself; a region of a rank the endpoint shares memory with maps the
// target's memory (a put is seen in the mapping, a store through it by
// a get), with the region's size; a region of a rank it does not share
// with offers no mapping.
func testMapped(t *testing.T, f factory) {
	const n = 3
	e := newEnv(t, f, n)
	shares := func(a, b int) bool {
		ms, ok := e.eps[a].(transport.MemorySharer)
		return ok && ms.SharesMemory(b)
	}
	for a := range n {
		if ms, ok := e.eps[a].(transport.MemorySharer); ok {
			if !ms.SharesMemory(a) {
				t.Errorf("rank %d does not share memory with itself", a)
			}
			for _, bad := range []int{-1, n} {
				if ms.SharesMemory(bad) {
					t.Errorf("rank %d shares memory with rank %d of %d", a, bad, n)
				}
			}
		}
		for b := range n {
			if a != b && shares(a, b) != shares(b, a) {
				t.Errorf("SharesMemory(%d) at rank %d is %v, the other way %v", b, a, shares(a, b), shares(b, a))
			}
			for c := range n {
				if a != b && b != c && a != c && shares(a, b) && shares(b, c) && !shares(a, c) {
					t.Errorf("ranks %d~%d and %d~%d share memory, %d and %d do not", a, b, b, c, a, c)
				}
			}
		}
	}
	const size = 64
	for target := 1; target < n; target++ {
		buf, key := e.expose(target, size)
		r := e.region(0, target, key, size)
		m, ok := r.(transport.MappedRegion)
		var mapped []byte
		if ok {
			mapped, ok = m.Mapped()
		}
		if !shares(0, target) {
			if ok {
				t.Errorf("region of rank %d, which rank 0 does not share memory with, is mapped", target)
			}
			continue
		}
		if !ok {
			t.Errorf("region of rank %d, which rank 0 shares memory with, is not mapped", target)
			continue
		}
		if len(mapped) != size {
			t.Fatalf("mapping of rank %d's region: %d bytes, want %d", target, len(mapped), size)
		}
		e.must(e.put(r, 8, []byte{1, 2, 3}, noNotice), "Put")
		e.flushAll()
		checkBytes(t, "the mapping after a put", mapped[8:11], []byte{1, 2, 3})
		checkBytes(t, "the target's memory after a put", buf[8:11], []byte{1, 2, 3})
		mapped[40] = 9
		dst := make([]byte, 1)
		e.must(e.get(r, 40, dst, noNotice), "Get")
		checkBytes(t, "a get after a store through the mapping", dst, []byte{9})
	}
}
