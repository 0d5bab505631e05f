package local

import (
	"encoding/binary"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// Single 8-byte integers (lock words, counters, flags) are the commonest
// atomics, and on a word in reach they cost one locked instruction: the
// general path's checks and its switch over types and operators would
// double that. word picks them out; everything else, errors included, takes
// the general path.

// word returns the 8 bytes at off of region if an atomic on one element
// of type t with an n-byte operand and result (if not nil) may be applied
// to them directly: t an 8-byte integer, n 8, the element inside region
// and aligned. It returns nil otherwise.
func word(region []byte, off int, t mem.Type, n int, result []byte) []byte {
	if t.Size() != 8 || t.IsFloat() || n != 8 || (result != nil && len(result) != 8) ||
		off < 0 || off > len(region)-8 || off%8 != 0 || mem.Addr(region)%8 != 0 {
		return nil
	}
	return region[off : off+8]
}

// accumulateWord applies Sum or Replace to the word w with operand src,
// storing the previous value into result if not nil; it reports false,
// having done nothing, for another op.
func accumulateWord(w []byte, op mem.Op, src, result []byte) bool {
	v := binary.LittleEndian.Uint64(src)
	var old uint64
	switch op {
	case mem.Sum:
		old = mem.AtomicAdd64(w, v) - v
	case mem.Replace:
		old = mem.AtomicSwap64(w, v)
	default:
		return false
	}
	if result != nil {
		binary.LittleEndian.PutUint64(result, old)
	}
	return true
}

// compareSwapWord is CompareSwapAt on the word w.
func compareSwapWord(w []byte, compare, swap, result []byte) {
	old := mem.AtomicCompareSwap64(w, binary.LittleEndian.Uint64(compare), binary.LittleEndian.Uint64(swap))
	if result != nil {
		binary.LittleEndian.PutUint64(result, old)
	}
}

// Word is a transport.Word on memory in reach: the 8 bytes it holds,
// aligned. The regions of this package and of shm give them out.
type Word []byte

// WordAt returns the word at off of region as a Word, or
// transport.ErrBounds or transport.ErrAlign.
func WordAt(region []byte, off int) (Word, error) {
	if off < 0 || off > len(region)-8 {
		return nil, transport.ErrBounds
	}
	if off%8 != 0 || mem.Addr(region)%8 != 0 {
		return nil, transport.ErrAlign
	}
	return Word(region[off : off+8 : off+8]), nil
}

// CompareSwap replaces the word by new if it equals old, and returns its
// previous value (transport.Word).
func (w Word) CompareSwap(old, new uint64) uint64 { return mem.AtomicCompareSwap64(w, old, new) }

// Add adds delta to the word and returns its previous value
// (transport.Word).
func (w Word) Add(delta uint64) uint64 { return mem.AtomicAdd64(w, delta) - delta }
