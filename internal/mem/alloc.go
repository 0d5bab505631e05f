package mem

import (
	"errors"
	"slices"
	"sync"
	"unsafe"
)

// BlockAlign is the alignment in bytes of the first byte of every block
// returned by Alloc.
const BlockAlign = 64

// ErrNotAllocated is returned by Free when its argument is not exactly a
// live block returned by Alloc.
var ErrNotAllocated = errors.New("mem: not a block returned by Alloc")

// block is one registered allocation.
type block struct {
	base    uintptr  // address of the first byte handed out
	n       int      // length handed out
	backing []uint64 // keeps the memory alive while registered (Go heap)
	src     Source   // the source that supplied the block, if not the Go heap
	mem     []byte   // the block as the source returned it
}

// Source supplies the memory of Alloc in place of the Go heap, so that a
// transport whose ranks are processes can hand out memory that its peers
// map (shared memory). A Source is installed for the whole process with
// SetSource.
type Source interface {
	// Alloc returns n > 0 zeroed bytes whose first byte is
	// BlockAlign-aligned, with a capacity of at least n rounded up to a
	// multiple of 8, or an error.
	Alloc(n int) ([]byte, error)
	// Free releases a block returned by Alloc.
	Free(b []byte) error
}

// source is the installed Source; nil means the Go heap.
var source struct {
	mu sync.RWMutex
	s  Source
}

// SetSource makes Alloc take memory from s (from the Go heap if s is nil)
// and returns the previous source. Blocks already allocated keep their
// source: Free returns them to it.
func SetSource(s Source) Source {
	source.mu.Lock()
	defer source.mu.Unlock()
	prev := source.s
	source.s = s
	return prev
}

// registry holds the live blocks sorted by base address. Blocks never
// overlap (each has its own backing array) and the Go heap does not move
// objects, so addresses are stable keys while the backing is referenced.
var registry struct {
	mu     sync.RWMutex
	blocks []block
}

// Alloc returns n zeroed bytes whose first byte is BlockAlign-aligned and
// registers the block so that Owns recognises it until it is passed to Free.
// A registered block stays reachable (is not garbage collected) until freed.
//
// The returned slice has length n and a capacity of n rounded up to a
// multiple of 8; the bytes between length and capacity are padding that
// belongs to the block. This guarantees that every aligned 32- or 64-bit
// word overlapping the block lies inside its backing memory, which the
// sub-word atomics of AtomicAccumulate and AtomicCompareSwap rely on.
// Alloc(0) returns a non-nil empty slice that is a distinct block. Alloc
// panics if n is negative.
//
// If a Source is installed (SetSource), non-empty blocks come from it; if
// it fails, Alloc falls back to the Go heap (a transport that needs the
// source's memory then refuses to expose the block, with an error).
func Alloc(n int) []byte {
	if n < 0 {
		panic("mem: Alloc with negative size")
	}
	if n > 0 {
		source.mu.RLock()
		src := source.s
		source.mu.RUnlock()
		if src != nil {
			if b, err := src.Alloc(n); err == nil {
				register(block{base: Addr(b), n: n, src: src, mem: b})
				return b[:n:max(cap(b), (n+7)&^7)]
			}
		}
	}
	padded := (n + 7) &^ 7
	words := padded/8 + BlockAlign/8
	backing := make([]uint64, words)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&backing[0])), words*8)
	off := int(-uintptr(unsafe.Pointer(&raw[0])) & (BlockAlign - 1))
	b := raw[off : off+n : off+padded]

	register(block{base: uintptr(unsafe.Pointer(unsafe.SliceData(b))), n: n, backing: backing})
	return b
}

// register adds blk to the registry.
func register(blk block) {
	registry.mu.Lock()
	i, _ := slices.BinarySearchFunc(registry.blocks, blk.base, cmpBase)
	registry.blocks = slices.Insert(registry.blocks, i, blk)
	registry.mu.Unlock()
}

func cmpBase(b block, base uintptr) int {
	switch {
	case b.base < base:
		return -1
	case b.base > base:
		return 1
	}
	return 0
}

// Owns reports whether the non-empty slice b lies entirely within the
// first len bytes of one live block returned by Alloc. It reports false
// for an empty b.
func Owns(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	addr := Addr(b)
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	// i is the index of the first block with base > addr (or == addr).
	i, found := slices.BinarySearchFunc(registry.blocks, addr, cmpBase)
	if !found {
		if i == 0 {
			return false
		}
		i--
	}
	blk := registry.blocks[i]
	return addr >= blk.base && addr-blk.base+uintptr(len(b)) <= uintptr(blk.n)
}

// Free unregisters a block returned by Alloc. b must be exactly that block:
// the same first byte and the same length. Otherwise, or if the block was
// already freed, Free returns ErrNotAllocated and changes nothing. After
// Free the memory is reclaimed by the garbage collector once no slice
// refers to it.
func Free(b []byte) error {
	if b == nil {
		return ErrNotAllocated
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	registry.mu.Lock()
	i, found := slices.BinarySearchFunc(registry.blocks, base, cmpBase)
	if !found || registry.blocks[i].n != len(b) {
		registry.mu.Unlock()
		return ErrNotAllocated
	}
	blk := registry.blocks[i]
	registry.blocks = slices.Delete(registry.blocks, i, i+1)
	registry.mu.Unlock()
	if blk.src != nil {
		return blk.src.Free(blk.mem)
	}
	return nil
}
