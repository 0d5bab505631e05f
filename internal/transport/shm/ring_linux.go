package shm

import (
	"encoding/binary"

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

// tryPush publishes notice n from src about region key into the ring of c;
// it reports false if the ring is full.
func (c *ctl) tryPush(src int, key transport.Key, n transport.Notice) bool {
	slots := uint64(len(c.slots))
	for {
		pos := c.hdr.enq.Load()
		if pos-c.headSeen.Load() >= slots {
			head := c.hdr.loadDeq()
			c.headSeen.Store(head)
			if pos-head >= slots {
				return false
			}
		}
		if !c.hdr.enq.CompareAndSwap(pos, pos+1) {
			continue // another producer took pos
		}
		s := &c.slots[pos&(slots-1)]
		s.src = uint32(src)
		s.kind = uint8(n.Kind)
		s.op = uint8(n.Op)
		s.tag = n.Tag
		s.key = uint64(key)
		s.offset = n.Offset
		s.value = n.Value
		s.storeSeq(pos + 1)
		return true
	}
}

// pop reads the notice at position deq, if it has been published (the
// caller then advances deq, which frees the slot).
func (c *ctl) pop(deq uint64) (src int, key transport.Key, n transport.Notice, ok bool) {
	s := &c.slots[deq&uint64(len(c.slots)-1)]
	if s.loadSeq() != deq+1 {
		return 0, 0, n, false
	}
	src, key = int(s.src), transport.Key(s.key)
	n = transport.Notice{Kind: transport.NoticeKind(s.kind), Op: transport.SignalOp(s.op), Tag: s.tag, Offset: s.offset, Value: s.value}
	return src, key, n, true
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

func (h recHeader) encode(b *[recHead]byte) {
	binary.LittleEndian.PutUint32(b[0:], h.length)
	b[4] = h.id
	b[5] = h.flags
	binary.LittleEndian.PutUint16(b[6:], h.hdrLen)
	binary.LittleEndian.PutUint32(b[8:], h.total)
	binary.LittleEndian.PutUint32(b[12:], 0)
}

func decodeRec(b *[recHead]byte) recHeader {
	return recHeader{
		length: binary.LittleEndian.Uint32(b[0:]),
		id:     b[4],
		flags:  b[5],
		hdrLen: binary.LittleEndian.Uint16(b[6:]),
		total:  binary.LittleEndian.Uint32(b[8:]),
	}
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
