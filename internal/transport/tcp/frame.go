package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// Kind is the kind of a frame. Requests travel from the rank that opened a
// connection (the origin) to the rank that accepted it (the target);
// replies travel back on the same connection.
type Kind uint8

// Frame kinds.
const (
	// Requests, origin to target.
	KindPut         Kind = iota + 1 // write the payload at key/off
	KindGet                         // read Result bytes at key/off, reply with them
	KindAccumulate                  // apply Op to the payload's elements; reply with the old contents if Fetch
	KindCompareSwap                 // payload compare||swap; reply with the old value if Fetch
	KindAM                          // active message: Off bytes of header, then the payload
	KindFlush                       // reply once every earlier request is applied
	KindLookup                      // does key exist with at least Off bytes? reply
	KindWithdraw                    // the sender withdrew its region key: forget handles on it; reply
	KindPing                        // heartbeat; reply
	KindBye                         // the sender closes in an orderly way; reply
	KindByeAck                      // acknowledges a KindBye sent in the reply direction

	// Replies, target to origin.
	KindReply    // answers request ID with Status and a payload
	KindReplyBye // the target closes in an orderly way; answered by KindByeAck

	numKinds
)

var kindNames = [...]string{"invalid", "put", "get", "accumulate", "compare-swap", "am", "flush",
	"lookup", "withdraw", "ping", "bye", "bye-ack", "reply", "reply-bye"}

// String returns the kind's name, e.g. "put".
func (k Kind) String() string {
	if k == 0 || k >= numKinds {
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// request reports whether frames of kind k travel from origin to target.
func (k Kind) request() bool { return k >= KindPut && k <= KindByeAck }

// Status is the outcome carried by a reply.
type Status uint8

// Reply statuses.
const (
	StatusOK Status = iota
	StatusNoRegion
	StatusBounds
	StatusAlign
	StatusOp
	StatusLength
	numStatus
)

// err returns the error a status stands for, nil for StatusOK.
func (s Status) err() error {
	switch s {
	case StatusOK:
		return nil
	case StatusNoRegion:
		return transport.ErrNoRegion
	case StatusBounds:
		return transport.ErrBounds
	case StatusAlign:
		return transport.ErrAlign
	case StatusOp:
		return mem.ErrOp
	case StatusLength:
		return mem.ErrLength
	}
	return fmt.Errorf("tcp: status %d", s)
}

// headerSize is the size of a frame header in bytes.
const headerSize = 56

// Header fields, all little-endian:
//
//	 0 kind      uint8
//	 1 notice    uint8   notice kind (requests) or Status (replies)
//	 2 aux       uint8   signal op of a notice, or AM id
//	 3 op        uint8   mem.Op of an accumulate
//	 4 typ       uint8   mem.Type of an accumulate or compare-and-swap
//	 5 flags     uint8   flagFetch
//	 6 reserved  uint16  zero
//	 8 id        uint32  request id, echoed by its reply (0: no reply wanted)
//	12 tag       int32   notice tag or counter index
//	16 key       uint64  region key
//	24 off       uint64  byte offset in the region; AM: header length; lookup: size
//	32 length    uint32  payload bytes that follow the header
//	36 result    uint32  bytes the reply carries (get, fetching atomics)
//	40 nvalue    uint64  signal operand
//	48 noffset   uint64  signal word offset
type header struct {
	kind    Kind
	notice  uint8
	aux     uint8
	op      mem.Op
	typ     mem.Type
	flags   uint8
	id      uint32
	tag     int32
	key     uint64
	off     uint64
	length  uint32
	result  uint32
	nvalue  uint64
	noffset uint64
}

// flagFetch asks an atomic for the previous contents.
const flagFetch = 1

// maxPayload bounds the payload of one frame, an active message's (other
// transfers are split into frames of chunkPayload bytes).
const maxPayload = 1 << 30

// chunkPayload bounds the data of one put, get or accumulate frame:
// larger ones are split at the origin into frames of this size, the
// notice riding on the last. A frame in progress holds up the frames
// behind it on its connection (heartbeats among them), and a write
// into a window holds the region: chunks keep both short. An
// accumulate's operand and result, and a get's reply, which the target
// holds in memory of its own, are refused beyond it.
const chunkPayload = 4 << 20

func (h *header) encode(b []byte) {
	_ = b[headerSize-1]
	b[0] = byte(h.kind)
	b[1] = h.notice
	b[2] = h.aux
	b[3] = byte(h.op)
	b[4] = byte(h.typ)
	b[5] = h.flags
	b[6], b[7] = 0, 0
	le := binary.LittleEndian
	le.PutUint32(b[8:], h.id)
	le.PutUint32(b[12:], uint32(h.tag))
	le.PutUint64(b[16:], h.key)
	le.PutUint64(b[24:], h.off)
	le.PutUint32(b[32:], h.length)
	le.PutUint32(b[36:], h.result)
	le.PutUint64(b[40:], h.nvalue)
	le.PutUint64(b[48:], h.noffset)
}

// FrameError reports a malformed frame: the connection that carried it is
// closed.
type FrameError struct {
	Kind   Kind
	Reason string
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("tcp: malformed %v frame: %s", e.Kind, e.Reason)
}

// decodeHeader parses and checks a header on its own: the kind is known
// and travels in the direction given, reserved bits are zero, the fields a
// kind does not use are zero, the fields it uses are in range, and the
// payload length is what the kind implies. Checks that need the region
// (key, bounds) are made when the frame is applied.
func decodeHeader(b []byte, request bool) (header, error) {
	le := binary.LittleEndian
	h := header{
		kind:    Kind(b[0]),
		notice:  b[1],
		aux:     b[2],
		op:      mem.Op(b[3]),
		typ:     mem.Type(b[4]),
		flags:   b[5],
		id:      le.Uint32(b[8:]),
		tag:     int32(le.Uint32(b[12:])),
		key:     le.Uint64(b[16:]),
		off:     le.Uint64(b[24:]),
		length:  le.Uint32(b[32:]),
		result:  le.Uint32(b[36:]),
		nvalue:  le.Uint64(b[40:]),
		noffset: le.Uint64(b[48:]),
	}
	bad := func(format string, args ...any) (header, error) {
		return header{}, &FrameError{Kind: h.kind, Reason: fmt.Sprintf(format, args...)}
	}
	if h.kind == 0 || h.kind >= numKinds {
		return bad("unknown kind")
	}
	if h.kind.request() != request {
		return bad("wrong direction")
	}
	if b[6] != 0 || b[7] != 0 || h.flags&^flagFetch != 0 {
		return bad("reserved bits set")
	}
	if h.length > maxPayload || h.result > maxPayload {
		return bad("length %d/%d over the limit", h.length, h.result)
	}
	if h.off > 1<<62 {
		return bad("offset %d out of range", h.off)
	}
	fetch := h.flags&flagFetch != 0
	switch h.kind {
	case KindPut, KindGet, KindAccumulate, KindCompareSwap:
		if err := checkHeaderNotice(&h); err != nil {
			return bad("%v", err)
		}
	default:
		if h.notice != 0 || h.tag != 0 || h.nvalue != 0 || h.noffset != 0 {
			if h.kind != KindReply && h.kind != KindAM {
				return bad("notice fields set")
			}
		}
	}
	switch h.kind {
	case KindPut:
		if h.op != 0 || h.typ != 0 || fetch || h.result != 0 {
			return bad("fields of another kind set")
		}
	case KindGet:
		if h.op != 0 || h.typ != 0 || fetch || h.length != 0 || h.id == 0 {
			return bad("fields of another kind set")
		}
		if h.result > chunkPayload {
			// The target copies the reply into memory of its own
			// (replyFrom): bounded like an accumulate's.
			return bad("get of %d bytes over the limit of %d", h.result, chunkPayload)
		}
	case KindAccumulate:
		if !h.op.ValidFor(h.typ) {
			return bad("operation %v on %v", h.op, h.typ)
		}
		if h.length > chunkPayload || h.result > chunkPayload {
			// The target holds the operand and the result in memory
			// of its own: bounded by the chunk that origins split
			// accumulates into.
			return bad("accumulate of %d/%d bytes over the limit of %d", h.length, h.result, chunkPayload)
		}
		size := uint32(h.typ.Size())
		n := h.length
		if h.op == mem.NoOp && h.length == 0 {
			n = h.result
		}
		if n == 0 || n%size != 0 || h.off%uint64(size) != 0 {
			return bad("%d bytes of %v at %d", n, h.typ, h.off)
		}
		if fetch != (h.result != 0) || (fetch && (h.result != n || h.id == 0)) || (!fetch && h.op == mem.NoOp) {
			return bad("fetch flag, result length and id disagree")
		}
	case KindCompareSwap:
		if !h.typ.Valid() || h.op != 0 {
			return bad("compare-and-swap on %v", h.typ)
		}
		size := uint32(h.typ.Size())
		if h.length != 2*size || h.off%uint64(size) != 0 {
			return bad("%d bytes of operands for %v at %d", h.length, h.typ, h.off)
		}
		if fetch != (h.result != 0) || (fetch && (h.result != size || h.id == 0)) {
			return bad("fetch flag, result length and id disagree")
		}
	case KindAM:
		if h.op != 0 || h.typ != 0 || fetch || h.result != 0 || h.key != 0 || h.id != 0 {
			return bad("fields of another kind set")
		}
		if h.aux >= transport.MaxAMID || h.off > uint64(h.length) || h.notice != 0 || h.tag != 0 || h.nvalue != 0 || h.noffset != 0 {
			return bad("AM id %d, header %d of %d bytes", h.aux, h.off, h.length)
		}
	case KindReply:
		if h.notice >= uint8(numStatus) || h.aux != 0 || h.op != 0 || h.typ != 0 || fetch ||
			h.key != 0 || h.off != 0 || h.result != 0 || h.tag != 0 || h.nvalue != 0 || h.noffset != 0 {
			return bad("fields of another kind set")
		}
		if h.notice != uint8(StatusOK) && h.length != 0 {
			return bad("payload on a refusal")
		}
	default: // control frames: an id at most, and a key/size for lookup and withdraw
		if h.aux != 0 || h.op != 0 || h.typ != 0 || fetch || h.length != 0 || h.result != 0 {
			return bad("fields of another kind set")
		}
		if h.kind != KindLookup && h.kind != KindWithdraw && (h.key != 0 || h.off != 0) {
			return bad("key or offset set")
		}
		if h.kind == KindWithdraw && h.off != 0 {
			return bad("offset set")
		}
		wantID := h.kind != KindReplyBye && h.kind != KindByeAck
		if wantID != (h.id != 0) {
			return bad("id %d", h.id)
		}
	}
	return h, nil
}

// checkHeaderNotice checks the notice fields of a data request: a notice
// travels as the origin gave it, only its kind must be known.
func checkHeaderNotice(h *header) error {
	if transport.NoticeKind(h.notice) > transport.NoticeSignal {
		return fmt.Errorf("notice kind %d", h.notice)
	}
	return nil
}

// noticeOf returns the notice a data request carries.
func (h *header) noticeOf() transport.Notice {
	return transport.NoticeOf(transport.NoticeKind(h.notice), transport.SignalOp(h.aux), h.tag, h.noffset, h.nvalue)
}

// setNotice stores n in a data request's header.
func (h *header) setNotice(n transport.Notice) {
	h.notice = uint8(n.Kind())
	h.aux = uint8(n.Op())
	h.tag = n.Tag()
	h.noffset = n.Offset()
	h.nvalue = n.Value()
}

// statusOf maps an error of the load/store core to the status of a reply.
func statusOf(err error) Status {
	switch {
	case err == nil:
		return StatusOK
	case errors.Is(err, transport.ErrNoRegion):
		return StatusNoRegion
	case errors.Is(err, transport.ErrAlign):
		return StatusAlign
	case errors.Is(err, transport.ErrBounds):
		return StatusBounds
	case errors.Is(err, mem.ErrOp):
		return StatusOp
	}
	return StatusLength
}
