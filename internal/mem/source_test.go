package mem

import (
	"errors"
	"testing"
)

// heapSource is a Source over the Go heap that records its calls.
type heapSource struct {
	allocs, frees int
	fail          bool
}

func (h *heapSource) Alloc(n int) ([]byte, error) {
	if h.fail {
		return nil, errors.New("refused")
	}
	h.allocs++
	w := make([]uint64, (n+7)/8+BlockAlign/8)
	b := Bytes(w)
	off := int(-Addr(b) & (BlockAlign - 1))
	return b[off : off+n], nil
}

func (h *heapSource) Free(b []byte) error { h.frees++; return nil }

func TestSourceSuppliesAlloc(t *testing.T) {
	h := &heapSource{}
	prev := SetSource(h)
	defer SetSource(prev)

	b := Alloc(13)
	if h.allocs != 1 {
		t.Fatalf("source saw %d allocations, want 1", h.allocs)
	}
	if len(b) != 13 || cap(b) < 16 || Addr(b)%BlockAlign != 0 {
		t.Fatalf("block len %d cap %d addr %#x: want 13, >=16, aligned", len(b), cap(b), Addr(b))
	}
	if !Owns(b) {
		t.Fatal("Owns does not recognise a block of the source")
	}
	if e := Alloc(0); len(e) != 0 || h.allocs != 1 {
		t.Fatalf("Alloc(0) went to the source (%d allocations)", h.allocs)
	}
	if err := Free(b); err != nil || h.frees != 1 {
		t.Fatalf("Free: %v, source frees %d", err, h.frees)
	}
	if err := Free(b); !errors.Is(err, ErrNotAllocated) || h.frees != 1 {
		t.Fatalf("second Free: %v, source frees %d", err, h.frees)
	}

	h.fail = true
	c := Alloc(8)
	if len(c) != 8 || !Owns(c) {
		t.Fatal("a failing source did not fall back to the heap")
	}
	if err := Free(c); err != nil || h.frees != 1 {
		t.Fatalf("Free of a fallback block: %v, source frees %d", err, h.frees)
	}
}
