package shm

import (
	"sync/atomic"

	"github.com/narma-rma/narma/internal/mem"

	"github.com/narma-rma/narma/internal/transport"
)

// The notice ring is a bounded multi-producer queue of cache-line slots:
// a producer claims position pos with a compare-and-swap on enq, once it
// knows that the consumer has taken the notice of the slot's last lap
// (pos - deq < slots, deq being the consumer's next position, published
// in the header), fills slot pos%slots and publishes it by storing pos+1
// as its sequence; the single consumer takes the slot when it carries
// deq+1 and then advances deq. The consumer writes nothing into the
// slots, so a producer's next write finds the line shared, not modified
// elsewhere; producers read deq only when the value they last saw says
// the ring is full. A full ring makes producers wait: nothing is dropped.
//
// A small notified put claims its position before it writes its data
// (region.Put): the compare-and-swap, a locked instruction, then waits
// only for stores issued before the put, and the data's and the slot's
// stores, each a cache line the consumer holds, go to the store buffer
// together and drain while the producer goes on.

// tryPush publishes notice n from src about the region whose key is the
// word key into the ring of c; it reports false if the ring is full.
func (c *ctl) tryPush(src int, key uint64, n transport.Notice) bool {
	pos, ok := c.tryClaim()
	if ok {
		c.publish(pos, src, key, n)
	}
	return ok
}

// tryClaim takes the ring's next position for the caller, which must then
// publish it, and soon: the consumer takes no later notice before it. It
// reports false if the ring is full.
func (c *ctl) tryClaim() (pos uint64, ok bool) {
	slots := uint64(len(c.slots))
	for {
		pos := c.hdr.enq.Load()
		if pos-c.headSeen.Load() >= slots {
			head := c.hdr.loadDeq()
			c.headSeen.Store(head)
			if pos-head >= slots {
				return 0, false
			}
		}
		if c.hdr.enq.CompareAndSwap(pos, pos+1) {
			return pos, true
		}
		// another producer took pos
	}
}

// publish fills the slot of claimed position pos with notice n about the
// region whose key is the word key, and publishes it.
func (c *ctl) publish(pos uint64, src int, key uint64, n transport.Notice) {
	s := &c.slots[pos&uint64(len(c.slots)-1)]
	s.src = uint32(src)
	s.kind = uint8(n.Kind())
	s.op = uint8(n.Op())
	s.tag = n.Tag()
	s.key = key
	s.offset = n.Offset()
	s.value = n.Value()
	s.storeSeq(pos+1, c.relaxed)
}

// pop reads the notice at position deq, if it has been published (the
// caller then advances deq, which frees the slot): its source, the word
// of its region's key (Endpoint.keyOf), and the notice.
func (c *ctl) pop(deq uint64) (src int, key uint64, n transport.Notice, ok bool) {
	s := &c.slots[deq&uint64(len(c.slots)-1)]
	if s.loadSeq() != deq+1 {
		return 0, 0, n, false
	}
	n = transport.NoticeOf(transport.NoticeKind(s.kind), transport.SignalOp(s.op), s.tag, s.offset, s.value)
	return int(s.src), s.key, n, true
}

// noticePending reports whether the notice at deq has been published.
func (c *ctl) noticePending(deq uint64) bool {
	return c.slots[deq&uint64(len(c.slots)-1)].loadSeq() == deq+1
}

// Active messages travel in records through the byte ring of their
// (source, target) pair, in the target's control segment. A record is a
// 16-byte head, then the message header and a piece of the payload, padded
// to 8 bytes; a message too large for one record is split into several
// consecutive ones, which the target reassembles.
//
// The head's first word says that the record is there: it holds the
// record's length and a mark of its position in the ring's stream
// (recMark), and the producer stores it last, after the rest of the
// record, with a sequentially consistent store (the store of its
// handshake with sleepers). The consumer polls the word at its own
// position: a small message is then one cache line for it to read, the
// data beside its mark, as in the notice ring's slots. A mark left by an
// earlier lap of the ring names another position, and before it
// publishes a record the producer clears the word where the next record's
// mark will go, so that no bytes an earlier lap left there (a payload's,
// which could hold anything) are ever taken for a mark.
const (
	recHead  = 16
	recFirst = 1 // the record starts a message (carries the header)
	recLast  = 2 // the record ends a message
)

// recHeader is the decoded head of a record.
type recHeader struct {
	length uint32 // head + header + payload piece, unpadded
	id     uint8  // AMID
	flags  uint8
	hdrLen uint16
	total  uint32 // whole payload of the message (first record)
}

// recMark is the mark of the record at stream position pos (a multiple
// of 8): never 0, so that a zeroed ring holds no record.
func recMark(pos uint64) uint32 { return uint32(pos>>3) + 1 }

// recWord returns the head's first word of the record at pos in ring
// data: its mark in the low half, its length in the high half. pos is a
// multiple of 8 and data is 8-aligned, so the word never wraps.
func recWord(data []byte, pos uint64) *uint64 {
	return mem.Word64(data[pos&uint64(len(data)-1):])
}

// recRest returns a head's second word: everything but the length.
// Producers build it from values, not from a recHeader: a word loaded
// from fields just stored one by one cannot be forwarded from the store
// buffer, and stalls.
func recRest(id, flags uint8, hdrLen uint16, total uint32) uint64 {
	return uint64(id) | uint64(flags)<<8 | uint64(hdrLen)<<16 | uint64(total)<<32
}

// decode sets h from the head's first word w and its second word rest.
// The caller passes h on by pointer, for the reason recRest gives: a
// copy of h would load whole words from fields just stored one by one.
func (h *recHeader) decode(w, rest uint64) {
	h.length = uint32(w >> 32)
	h.id = uint8(rest)
	h.flags = uint8(rest >> 8)
	h.hdrLen = uint16(rest >> 16)
	h.total = uint32(rest >> 32)
}

// publishRec makes the record at pos, written but for its first word,
// visible to the consumer. Its store is the producer's store of the
// handshake with sleeping consumers, as a notice slot's (slot.storeSeq):
// a release store if the consumers run a global barrier before they
// sleep (relaxed), else a sequentially consistent one.
func publishRec(data []byte, pos uint64, length uint32, relaxed bool) {
	w, v := recWord(data, pos), uint64(length)<<32|uint64(recMark(pos))
	if relaxed {
		mem.StoreRelease64(w, v)
	} else {
		mem.StoreFenced64(w, v)
	}
}

// recAt returns the first word of the record at pos if it has been
// published.
func recAt(data []byte, pos uint64) (w uint64, ok bool) {
	w = atomic.LoadUint64(recWord(data, pos))
	return w, uint32(w) == recMark(pos)
}

// pad8 rounds n up to a multiple of 8.
func pad8(n int) int { return (n + 7) &^ 7 }

// ringWrite copies src into ring data at virtual position pos, wrapping.
func ringWrite(data []byte, pos uint64, src []byte) {
	i := int(pos & uint64(len(data)-1))
	n := copy(data[i:], src)
	if n < len(src) {
		copy(data, src[n:])
	}
}

// ringRead copies len(dst) bytes of ring data at virtual position pos.
func ringRead(data []byte, pos uint64, dst []byte) {
	i := int(pos & uint64(len(data)-1))
	n := copy(dst, data[i:])
	if n < len(dst) {
		copy(dst[n:], data)
	}
}

// ringSlice returns the n bytes at pos as a slice of data if they do not
// wrap, else nil.
func ringSlice(data []byte, pos uint64, n int) []byte {
	i := int(pos & uint64(len(data)-1))
	if i+n > len(data) {
		return nil
	}
	return data[i : i+n : i+n]
}
