package shm

import (
	"errors"
	"sync/atomic"
	"unsafe"
)

// The control segment of an endpoint ("r<rank>" in the job) holds
// everything its peers touch besides window memory, each part on cache
// lines of its own:
//
//	header      magic, geometry, owner pid, state, doorbell     (hdrSize)
//	notices     the bounded multi-producer notice ring           (slots x 64)
//	exposures   the table of exposed regions                     (maxExpose x 64)
//	am rings    one single-producer byte ring per source rank    (size x amRingSize)

const (
	lineSize  = 64
	hdrSize   = 4096
	magic     = 0x616d72616e_0004 // "narma", layout version 4
	maxExpose = 4096              // regions exposed at once per endpoint
	keyIdxBit = 12                // key = generation<<keyIdxBit | table index
)

// Endpoint states in the header.
const (
	stateInit uint32 = iota
	stateOpen
	stateClosed
	stateFailed // set by Kill, for tests
)

// header is the first page of a control segment.
type header struct {
	magic      uint64
	size       uint32 // ranks in the job
	rank       uint32
	pid        uint32
	slots      uint32 // notice ring slots (a power of two)
	amRingSize uint32 // bytes of data per AM ring (a power of two)
	_          [lineSize - 28]byte

	state atomic.Uint32
	_     [lineSize - 4]byte

	// bell is the futex word the endpoint's progress goroutine and its
	// waiters (Sleep) sleep on; producers, wakers and a peer's WakeRank
	// bump it and wake them when sleepers, a count of the sleepers and of
	// the waiters between Prepare and Sleep, is not zero.
	bell     atomic.Uint32
	sleepers atomic.Uint32
	_        [lineSize - 8]byte

	// amSeq counts AM records published to any of the endpoint's rings,
	// so that a poll that finds it unchanged skips the rings.
	amSeq atomic.Uint64
	_     [lineSize - 8]byte

	// enq is the notice ring's next free position.
	enq atomic.Uint64
	_   [lineSize - 8]byte

	// deq is the notice ring's next position to take, written by the
	// endpoint's consumer only.
	deq atomic.Uint64
	_   [lineSize - 8]byte
}

// slot is one notice: a cache line. A notified put of at most inlineMax
// bytes carries its data in the slot (inl bytes of data, for offset
// putOff of the region): whoever claims the slot first (st) copies the
// data into the region, the consumer as it takes the notice or the
// origin as it flushes (the paper's inline transfer).
type slot struct {
	seq    atomic.Uint64 // Vyukov sequence: pos when free, pos+1 when full
	st     atomic.Uint64 // state of the inline data: stWord(pos, inlinePending...)
	src    uint32
	kind   uint8
	op     uint8
	inl    uint8 // bytes of inline data, 0 for none
	_      uint8
	tag    int32
	putOff uint32 // offset of the inline data in the region
	key    uint64
	offset uint64
	value  uint64
	data   [inlineMax]byte
}

// inlineMax is the most data a notice slot carries.
const inlineMax = lineSize - 56

// States of a slot's inline data (the low two bits of slot.st, above
// which is the slot's position, so that a claim never takes the slot's
// next use for this one).
const (
	inlinePending  uint64 = iota // not yet copied
	inlineOrigin                 // the origin is copying it (flush)
	inlineConsumer               // the consumer is copying it (drain)
	inlineApplied                // the origin has copied it
)

// stWord is the value of slot.st for the inline data of the notice at
// pos in state state.
func stWord(pos, state uint64) uint64 { return pos<<2 | state }

// exposure is one entry of the exposure table.
type exposure struct {
	gen atomic.Uint64 // key generation while exposed, 0 when free
	pid uint32        // process whose heap holds the segment
	seg uint32        // segment id in that heap
	off uint64        // offset of the region in the segment
	len uint64        // length of the region
	_   [lineSize - 32]byte
}

// amRing is the head of a single-producer, single-consumer byte ring.
type amRing struct {
	tail atomic.Uint64 // written by the producer
	_    [lineSize - 8]byte
	head atomic.Uint64 // written by the consumer
	_    [lineSize - 8]byte
}

// ctl is a typed view of a mapped control segment.
type ctl struct {
	mem       []byte
	hdr       *header
	slots     []slot
	exposures []exposure
	ringHeads []*amRing // by source rank
	ringData  [][]byte  // by source rank

	// headSeen is, in a producer's view of a peer's segment, the value
	// of hdr.deq it last read.
	headSeen atomic.Uint64
}

// ctlSize returns the size of a control segment for the given geometry.
func ctlSize(size, slots, amRingSize int) int {
	return hdrSize + slots*lineSize + maxExpose*lineSize + size*(2*lineSize+amRingSize)
}

// layout returns the view of a control segment; hdr says its geometry
// (and is checked against the mapping's length).
func layout(b []byte) (*ctl, error) {
	if len(b) < hdrSize || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%lineSize != 0 {
		return nil, errors.New("shm: control segment too short or misaligned")
	}
	h := (*header)(unsafe.Pointer(&b[0]))
	if h.magic != magic {
		return nil, errors.New("shm: not a narma control segment (or another version)")
	}
	size, slots, rs := int(h.size), int(h.slots), int(h.amRingSize)
	if size < 1 || slots < 2 || slots&(slots-1) != 0 || rs < 4096 || rs&(rs-1) != 0 ||
		size > 1<<20 || slots > 1<<24 || rs > 1<<30 || ctlSize(size, slots, rs) > len(b) {
		return nil, errors.New("shm: control segment geometry does not fit its mapping")
	}
	c := &ctl{mem: b, hdr: h}
	off := hdrSize
	c.slots = unsafe.Slice((*slot)(unsafe.Pointer(&b[off])), slots)
	off += slots * lineSize
	c.exposures = unsafe.Slice((*exposure)(unsafe.Pointer(&b[off])), maxExpose)
	off += maxExpose * lineSize
	ringHeads := make([]*amRing, size)
	c.ringData = make([][]byte, size)
	for i := 0; i < size; i++ {
		ringHeads[i] = (*amRing)(unsafe.Pointer(&b[off]))
		off += 2 * lineSize
		c.ringData[i] = b[off : off+rs : off+rs]
		off += rs
	}
	c.ringHeads = ringHeads
	return c, nil
}
