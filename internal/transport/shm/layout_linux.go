package shm

import (
	"errors"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/mem"
)

// The control segment of an endpoint ("r<rank>" in the job) holds
// everything its peers touch besides window memory, each part on cache
// lines of its own:
//
//	header      magic, geometry, owner pid, state, doorbell     (hdrSize)
//	notices     the bounded multi-producer notice ring           (slots x 64)
//	exposures   the table of exposed regions                     (maxExpose x 64)
//	am rings    one single-producer byte ring per source rank    (size x (64 + amRingSize))

const (
	lineSize  = 64
	hdrSize   = 4096
	magic     = 0x616d72616e_000a // "narma", layout version 10 (9: no header.waiters)
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
	// barrier is 1 if the endpoint's sleepers run a global memory
	// barrier before their last look (membarrier_linux.go): producers
	// may then publish its notices with plain stores.
	barrier uint32
	_       [lineSize - 32]byte

	state atomic.Uint32
	_     [lineSize - 4]byte

	// bell is the futex word the endpoint's progress goroutine and its
	// waiters (Sleep) sleep on; producers and wakers bump it and wake
	// them when sleepers, a count of the sleepers and of the waiters
	// between Prepare and Sleep, is not zero. A peer's WakeRank does so
	// only when waiters, the count of those waiters alone, is not zero:
	// what it announces (a notice or a word the peer updated in place)
	// is nothing the progress goroutine takes, and waking it would cost
	// the peer a system call, and this endpoint a wake-up and a global
	// barrier, for every such update while the owner computes.
	bell     atomic.Uint32
	sleepers atomic.Uint32
	waiters  atomic.Uint32
	_        [lineSize - 12]byte

	// enq is the notice ring's next free position.
	enq atomic.Uint64
	_   [lineSize - 8]byte

	// deq is the notice ring's next position to take, written by the
	// endpoint's consumer only, with release stores (producers read it
	// only when the ring looks full, and retry): loadDeq, storeDeq.
	deq uint64
	_   [lineSize - 8]byte
}

// slot is one notice: a cache line, written by one producer and read by
// the consumer. The data of a notified put is in the target's memory when
// its notice is visible.
type slot struct {
	seq    uint64 // Vyukov sequence: pos when free, pos+1 when full (loadSeq, storeSeq)
	src    uint32
	kind   uint8
	op     uint8
	_      uint16
	tag    int32
	_      uint32
	key    uint64
	offset uint64
	value  uint64
	_      [lineSize - 48]byte
}

// loadDeq returns the notice ring's next position to take.
func (h *header) loadDeq() uint64 { return atomic.LoadUint64(&h.deq) }

// storeDeq publishes the consumer's position: the slots before it may be
// reused.
func (h *header) storeDeq(v uint64) { mem.StoreRelease64(&h.deq, v) }

// loadSeq returns the slot's sequence.
func (s *slot) loadSeq() uint64 { return atomic.LoadUint64(&s.seq) }

// storeSeq publishes the slot's sequence. It is the producer's store of
// the handshake with sleeping consumers: a release store if the
// consumers run a global barrier before they sleep (relaxed; see
// membarrier_linux.go), else a sequentially consistent one, a plain store
// and a fence, which a consumer polling the line waits less for than the
// exchange of sync/atomic (mem.StoreFenced64).
func (s *slot) storeSeq(v uint64, relaxed bool) {
	if relaxed {
		mem.StoreRelease64(&s.seq, v)
	} else {
		mem.StoreFenced64(&s.seq, v)
	}
}

// exposure is one entry of the exposure table.
type exposure struct {
	gen atomic.Uint64 // key generation while exposed, 0 when free
	pid uint32        // process whose heap holds the segment
	seg uint32        // segment id in that heap
	off uint64        // offset of the region in the segment
	len uint64        // length of the region
	_   [lineSize - 32]byte
}

// amRing is the consumer's end of a single-producer, single-consumer
// byte ring; the producer's end is in the records themselves (recAt,
// publishRec in ring_linux.go).
type amRing struct {
	head uint64 // written by the consumer (loadHead, storeHead)
	// rdv is written by the consumer: the number of the last single-copy
	// message it took, shifted left by one, the low bit set if it could
	// not read the payload (cma_linux.go).
	rdv uint64
	_   [lineSize - 16]byte
}

// The consumer's end of an AM ring is published with release stores: the
// producer reads it only to know how far it may go, and looks again when
// that is not far enough.

func (r *amRing) loadHead() uint64   { return atomic.LoadUint64(&r.head) }
func (r *amRing) storeHead(v uint64) { mem.StoreRelease64(&r.head, v) }
func (r *amRing) loadRdv() uint64    { return atomic.LoadUint64(&r.rdv) }
func (r *amRing) storeRdv(v uint64)  { mem.StoreRelease64(&r.rdv, v) }

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
	// relaxed is, in a producer's view, whether it publishes notices to
	// the segment's endpoint with release stores (slot.storeSeq): this
	// process runs global barriers and the endpoint's sleepers run them.
	relaxed bool
}

// ctlSize returns the size of a control segment for the given geometry.
func ctlSize(size, slots, amRingSize int) int {
	return hdrSize + slots*lineSize + maxExpose*lineSize + size*(lineSize+amRingSize)
}

// layout returns the view of a control segment; hdr says its geometry
// (and is checked against the mapping's length).
func layout(b []byte) (*ctl, error) {
	if len(b) < hdrSize || mem.Addr(b)%lineSize != 0 {
		return nil, errors.New("shm: control segment too short or misaligned")
	}
	h, err := mem.As[header](b)
	if err != nil {
		return nil, err
	}
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
	if c.slots, err = mem.Slice[slot](b[off : off+slots*lineSize]); err != nil {
		return nil, err
	}
	off += slots * lineSize
	if c.exposures, err = mem.Slice[exposure](b[off : off+maxExpose*lineSize]); err != nil {
		return nil, err
	}
	off += maxExpose * lineSize
	ringHeads := make([]*amRing, size)
	c.ringData = make([][]byte, size)
	for i := 0; i < size; i++ {
		if ringHeads[i], err = mem.As[amRing](b[off : off+lineSize]); err != nil {
			return nil, err
		}
		off += lineSize
		c.ringData[i] = b[off : off+rs : off+rs]
		off += rs
	}
	c.ringHeads = ringHeads
	return c, nil
}
