//go:build fabric

package fabric

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// Messages: every fi_send of the transport carries one, a fixed header
// and a body, into one of the target's posted receive buffers.

// msgKind says what a message asks.
type msgKind uint8

const (
	msgAM       msgKind = iota + 1 // an active message, or its first fragment
	msgFrag                        // a further fragment of an active message
	msgNotice                      // a notice that follows its operation
	msgAcc                         // an accumulate, applied at the target
	msgCas                         // a compare-and-swap, applied at the target
	msgReply                       // the answer to msgAcc, msgCas or a call
	msgLookup                      // does region (slot, gen) exist, of size off?
	msgWithdraw                    // the region (slot, gen) of the sender is gone
	msgFlush                       // answer once everything before is applied
	msgBye                         // the sender closes
	msgPing                        // the heartbeat: answer with msgPong
	msgPong                        // the answer to msgPing
	msgMax
)

// msgHeader is the size of a message's header.
const msgHeader = 64

// msgBufSize is the size of a receive (and send) buffer: a message's
// header and body never exceed it.
const msgBufSize = 64 << 10

// maxBody is the most body one message carries.
const maxBody = msgBufSize - msgHeader

// status is a reply's verdict.
type status uint8

const (
	statusOK status = iota
	statusNoRegion
	statusBounds
	statusAlign
	statusOp
	statusLength
	statusErr
)

// err returns the error a status stands for.
func (s status) err() error {
	switch s {
	case statusOK:
		return nil
	case statusNoRegion:
		return transport.ErrNoRegion
	case statusBounds:
		return transport.ErrBounds
	case statusAlign:
		return transport.ErrAlign
	case statusOp:
		return mem.ErrOp
	case statusLength:
		return mem.ErrLength
	}
	return errors.New("fabric: the target refused the operation")
}

// statusOf returns the status that carries err.
func statusOf(err error) status {
	switch {
	case err == nil:
		return statusOK
	case errors.Is(err, transport.ErrNoRegion):
		return statusNoRegion
	case errors.Is(err, transport.ErrBounds):
		return statusBounds
	case errors.Is(err, transport.ErrAlign):
		return statusAlign
	case errors.Is(err, mem.ErrOp):
		return statusOp
	case errors.Is(err, mem.ErrLength):
		return statusLength
	}
	return statusErr
}

// msg is a decoded message header.
type msg struct {
	kind   msgKind
	more   bool   // msgAM: fragments follow
	a, b   uint8  // msgAM: AMID; msgAcc: op, type; msgCas: type; msgReply: status
	src    uint32 // the sender's rank
	id     uint64 // the operation a reply answers; msgAM: the body's total length
	slot   uint32 // region slot and generation at the target
	gen    uint32
	off    uint64 // offset in the region; msgLookup: the handle's size
	notice transport.Notice
	n1, n2 uint32 // msgAM: header length; msgAcc, msgCas: operand length
	seq    uint32 // the message's number from its source to its target, from 1
}

// put encodes m's header into b.
func (m *msg) put(b []byte) {
	_ = b[msgHeader-1]
	b[0] = byte(m.kind)
	b[1] = 0
	if m.more {
		b[1] = 1
	}
	b[2], b[3] = m.a, m.b
	le := binary.LittleEndian
	le.PutUint32(b[4:], m.src)
	le.PutUint64(b[8:], m.id)
	le.PutUint32(b[16:], m.slot)
	le.PutUint32(b[20:], m.gen)
	le.PutUint64(b[24:], m.off)
	head, value := noticeWords(m.notice)
	le.PutUint64(b[32:], head)
	le.PutUint64(b[40:], value)
	le.PutUint32(b[48:], m.n1)
	le.PutUint32(b[52:], m.n2)
	le.PutUint32(b[56:], m.seq)
	le.PutUint32(b[60:], 0)
}

// seqAt is where a message's sequence number is, set when it is issued.
const seqAt = 56

// decode decodes the header of b and returns its body.
func (m *msg) decode(b []byte) ([]byte, error) {
	if len(b) < msgHeader {
		return nil, fmt.Errorf("fabric: message of %d bytes", len(b))
	}
	le := binary.LittleEndian
	*m = msg{
		kind:   msgKind(b[0]),
		more:   b[1]&1 != 0,
		a:      b[2],
		b:      b[3],
		src:    le.Uint32(b[4:]),
		id:     le.Uint64(b[8:]),
		slot:   le.Uint32(b[16:]),
		gen:    le.Uint32(b[20:]),
		off:    le.Uint64(b[24:]),
		notice: noticeFrom(le.Uint64(b[32:]), le.Uint64(b[40:])),
		n1:     le.Uint32(b[48:]),
		n2:     le.Uint32(b[52:]),
		seq:    le.Uint32(b[56:]),
	}
	if m.kind == 0 || m.kind >= msgMax || b[1]&^1 != 0 || le.Uint32(b[60:]) != 0 {
		return nil, fmt.Errorf("fabric: message of kind %d, flags %#x", b[0], b[1])
	}
	if k := transport.NoticeKind(b[32]); k > transport.NoticeSignal {
		return nil, fmt.Errorf("fabric: message with a notice of kind %d", k)
	}
	return b[msgHeader:], nil
}

// noticeWords and noticeFrom carry a notice as two words.
func noticeWords(n transport.Notice) (head, value uint64) {
	switch n.Kind() {
	case transport.NoticeNone:
		return 0, 0
	case transport.NoticeSignal:
		return uint64(n.Kind()) | uint64(n.Op())<<8 | n.Offset()<<16, n.Value()
	}
	return uint64(n.Kind()) | uint64(uint32(n.Tag()))<<16, 0
}

func noticeFrom(head, value uint64) transport.Notice {
	if transport.NoticeKind(head) == transport.NoticeNone {
		return transport.Notice{}
	}
	return transport.NoticeOf(transport.NoticeKind(head), transport.SignalOp(head>>8), int32(uint32(head>>16)), head>>16, value)
}

// Notices in remote CQ data: a write whose notice is a tag or a counter
// carries it in 8 bytes: the kind in bits 0-1, the origin's rank in bits
// 2-17, the region's slot in bits 18-31 and the tag in bits 32-63. The
// origin is in the data because providers do not all name the source of
// a remote write's completion (tcp;ofi_rxm names none, or a wrong one,
// with FI_SOURCE); a rank or slot too large to fit sends its notice as
// a message instead.
const (
	cqSrcBits  = 16
	cqSlotBits = 14
	maxCQSrc   = 1<<cqSrcBits - 1
	maxCQSlot  = 1<<cqSlotBits - 1
)

// cqData encodes a tag or counter notice from src on the region in slot,
// and reports whether it fits.
func cqData(n transport.Notice, src int, slot uint32) (uint64, bool) {
	k := n.Kind()
	if (k != transport.NoticeTag && k != transport.NoticeCounter) || slot > maxCQSlot || src < 0 || src > maxCQSrc {
		return 0, false
	}
	return uint64(k) | uint64(src)<<2 | uint64(slot)<<(2+cqSrcBits) | uint64(uint32(n.Tag()))<<32, true
}

// fromCQData decodes what cqData encoded.
func fromCQData(d uint64) (n transport.Notice, src int, slot uint32, ok bool) {
	k := transport.NoticeKind(d & 3)
	if k != transport.NoticeTag && k != transport.NoticeCounter {
		return transport.Notice{}, 0, 0, false
	}
	return transport.TagNotice(k, int32(uint32(d>>32))), int(d>>2) & maxCQSrc, uint32(d>>(2+cqSrcBits)) & maxCQSlot, true
}
