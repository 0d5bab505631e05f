package tcp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// validHeaders are well-formed headers of every kind, as the senders of
// this package build them, with the direction they travel in.
var validHeaders = []struct {
	name    string
	request bool
	h       header
}{
	{"put", true, header{kind: KindPut, key: 1, off: 8, length: 16}},
	{"put with tag", true, header{kind: KindPut, key: 3, off: 0, length: 1, notice: uint8(transport.NoticeTag), tag: -7}},
	{"put with counter", true, header{kind: KindPut, key: 3, off: 5, length: 3, notice: uint8(transport.NoticeCounter), tag: 2}},
	{"put with signal", true, header{kind: KindPut, key: 2, off: 64, length: 4096, notice: uint8(transport.NoticeSignal),
		aux: uint8(transport.SignalAdd), noffset: 8, nvalue: 1<<64 - 1}},
	{"empty put with notice", true, header{kind: KindPut, key: 1, off: 128, notice: uint8(transport.NoticeTag), tag: 9}},
	{"get", true, header{kind: KindGet, id: 1, key: 1, off: 0, result: 64}},
	{"get with notice", true, header{kind: KindGet, id: 1 << 31, key: 9, off: 16, result: chunkPayload,
		notice: uint8(transport.NoticeSignal), aux: uint8(transport.SignalSet), noffset: 24, nvalue: 5}},
	{"accumulate", true, header{kind: KindAccumulate, op: mem.Sum, typ: mem.Int64, key: 1, off: 8, length: 16}},
	{"accumulate bytes", true, header{kind: KindAccumulate, op: mem.Bxor, typ: mem.Uint8, key: 1, off: 3, length: 5}},
	{"fetching accumulate", true, header{kind: KindAccumulate, op: mem.Max, typ: mem.Float32, flags: flagFetch,
		id: 4, key: 1, off: 4, length: 8, result: 8, notice: uint8(transport.NoticeCounter), tag: 1}},
	{"fetch (no-op)", true, header{kind: KindAccumulate, op: mem.NoOp, typ: mem.Uint16, flags: flagFetch,
		id: 5, key: 1, off: 2, result: 6}},
	{"accumulate of a whole chunk", true, header{kind: KindAccumulate, op: mem.Replace, typ: mem.Uint64, flags: flagFetch,
		id: 5, key: 1, length: chunkPayload, result: chunkPayload}},
	{"compare-swap", true, header{kind: KindCompareSwap, typ: mem.Int32, key: 1, off: 4, length: 8}},
	{"fetching compare-swap", true, header{kind: KindCompareSwap, typ: mem.Float64, flags: flagFetch,
		id: 6, key: 1, off: 16, length: 16, result: 8, notice: uint8(transport.NoticeTag), tag: 3}},
	{"am", true, header{kind: KindAM, aux: transport.MaxAMID - 1, off: 4, length: 10}},
	{"am, header only", true, header{kind: KindAM, aux: 0, off: 3, length: 3}},
	{"flush", true, header{kind: KindFlush, id: 7}},
	{"lookup", true, header{kind: KindLookup, id: 8, key: 2, off: 4096}},
	{"withdraw", true, header{kind: KindWithdraw, id: 9, key: 2}},
	{"ping", true, header{kind: KindPing, id: 10}},
	{"bye", true, header{kind: KindBye, id: 11}},
	{"bye-ack", true, header{kind: KindByeAck}},
	{"reply", false, header{kind: KindReply, id: 12, length: 8}},
	{"reply, empty", false, header{kind: KindReply, id: 1}},
	{"refusal", false, header{kind: KindReply, id: 13, notice: uint8(StatusBounds)}},
	{"refusal, last status", false, header{kind: KindReply, id: 13, notice: uint8(numStatus - 1)}},
	{"reply-bye", false, header{kind: KindReplyBye}},
}

func encoded(h header) []byte {
	b := make([]byte, headerSize)
	h.encode(b)
	return b
}

// checkDecode decodes b in both directions and checks the properties every
// input must have: no panic, a *FrameError on refusal, acceptance in the
// direction of the kind only, and an exact round trip when accepted. It
// returns the directions b was accepted in.
func checkDecode(t *testing.T, b []byte) (asRequest, asReply bool) {
	t.Helper()
	for _, request := range []bool{true, false} {
		h, err := decodeHeader(b, request)
		if err != nil {
			var fe *FrameError
			if !errors.As(err, &fe) {
				t.Fatalf("decodeHeader(%x, %v): error %v (%T) is not a *FrameError", b, request, err, err)
			}
			if fe.Kind != Kind(b[0]) {
				t.Fatalf("decodeHeader(%x, %v): FrameError names kind %v, the frame's is %v", b, request, fe.Kind, Kind(b[0]))
			}
			_ = err.Error()
			continue
		}
		if h.kind.request() != request {
			t.Fatalf("decodeHeader(%x, %v) accepted a %v frame travelling the wrong way", b, request, h.kind)
		}
		if got := encoded(h); !bytes.Equal(got, b) {
			t.Fatalf("decodeHeader(%x, %v) = %+v, which encodes to %x", b, request, h, got)
		}
		if h.length > maxPayload || h.result > maxPayload || h.off > 1<<62 {
			t.Fatalf("decodeHeader(%x, %v) accepted lengths %d/%d at %d", b, request, h.length, h.result, h.off)
		}
		switch h.kind {
		case KindGet:
			if h.result > chunkPayload {
				t.Fatalf("decodeHeader(%x, %v) accepted a get of %d bytes", b, request, h.result)
			}
		case KindAccumulate, KindCompareSwap:
			if h.length > chunkPayload || h.result > chunkPayload {
				t.Fatalf("decodeHeader(%x, %v) accepted an atomic of %d/%d bytes", b, request, h.length, h.result)
			}
			size := uint64(h.typ.Size())
			if size == 0 || h.off%size != 0 {
				t.Fatalf("decodeHeader(%x, %v) accepted an atomic on %v at offset %d", b, request, h.typ, h.off)
			}
		case KindAM:
			if h.aux >= transport.MaxAMID || h.off > uint64(h.length) {
				t.Fatalf("decodeHeader(%x, %v) accepted AM id %d with a header of %d of %d bytes", b, request, h.aux, h.off, h.length)
			}
		}
		if request {
			asRequest = true
		} else {
			asReply = true
		}
	}
	return asRequest, asReply
}

func FuzzDecodeHeader(f *testing.F) {
	for _, v := range validHeaders {
		f.Add(encoded(v.h))
	}
	for _, v := range invalidHeaders {
		f.Add(v.b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Every input is made a header: cut or padded with zeros.
		var b [headerSize]byte
		copy(b[:], data)
		checkDecode(t, b[:])
	})
}

func TestDecodeValidHeaders(t *testing.T) {
	kinds := make(map[Kind]bool)
	for _, v := range validHeaders {
		b := encoded(v.h)
		h, err := decodeHeader(b, v.request)
		if err != nil {
			t.Errorf("%s: decodeHeader refused %+v: %v", v.name, v.h, err)
			continue
		}
		if h != v.h {
			t.Errorf("%s: decodeHeader(encode(%+v)) = %+v", v.name, v.h, h)
		}
		if req, rep := checkDecode(t, b); req != v.request || rep == v.request {
			t.Errorf("%s: accepted as request %v, as reply %v; want only as request=%v", v.name, req, rep, v.request)
		}
		kinds[v.h.kind] = true
	}
	for k := KindPut; k < numKinds; k++ {
		if !kinds[k] {
			t.Errorf("no valid %v header in the table", k)
		}
	}
}

// invalidHeaders are malformed headers, each refused in both directions.
var invalidHeaders = func() []struct {
	name string
	b    []byte
} {
	var out []struct {
		name string
		b    []byte
	}
	add := func(name string, h header, edit ...func(b []byte)) {
		b := encoded(h)
		for _, e := range edit {
			e(b)
		}
		out = append(out, struct {
			name string
			b    []byte
		}{name, b})
	}
	set := func(i int, v byte) func([]byte) { return func(b []byte) { b[i] = v } }
	put := header{kind: KindPut, key: 1, off: 8, length: 16}
	get := header{kind: KindGet, id: 1, key: 1, result: 8}
	acc := header{kind: KindAccumulate, op: mem.Sum, typ: mem.Int64, key: 1, off: 8, length: 16}
	cas := header{kind: KindCompareSwap, typ: mem.Int32, key: 1, off: 4, length: 8}
	am := header{kind: KindAM, aux: 1, off: 2, length: 10}
	with := func(h header, f func(h *header)) header { f(&h); return h }

	add("kind 0", header{})
	add("kind 0 with fields", put, set(0, 0))
	add("first unknown kind", put, set(0, byte(numKinds)))
	add("kind 255", put, set(0, 255))

	add("put: reserved byte 6", put, set(6, 1))
	add("put: reserved byte 7", put, set(7, 0x80))
	add("put: reserved flag", with(put, func(h *header) { h.flags = 2 }))
	add("put: fetch flag", with(put, func(h *header) { h.flags = flagFetch }))
	add("put: op", with(put, func(h *header) { h.op = mem.Sum }))
	add("put: type", with(put, func(h *header) { h.typ = mem.Int8 }))
	add("put: result", with(put, func(h *header) { h.result = 8 }))
	add("put: unknown notice kind", with(put, func(h *header) { h.notice = uint8(transport.NoticeSignal) + 1 }))
	add("put: payload over the limit", with(put, func(h *header) { h.length = maxPayload + 1 }))
	add("put: offset out of range", with(put, func(h *header) { h.off = 1<<62 + 1 }))
	add("put: offset 2^64-1", with(put, func(h *header) { h.off = 1<<64 - 1 }))

	add("get without id", with(get, func(h *header) { h.id = 0 }))
	add("get with payload", with(get, func(h *header) { h.length = 8 }))
	add("get with fetch flag", with(get, func(h *header) { h.flags = flagFetch }))
	add("get with op", with(get, func(h *header) { h.op = mem.Replace }))
	add("get over the limit", with(get, func(h *header) { h.result = maxPayload + 1 }))
	add("get over the chunk", with(get, func(h *header) { h.result = chunkPayload + 1 }))

	add("accumulate: bitwise op on a float", with(acc, func(h *header) { h.op, h.typ = mem.Band, mem.Float64 }))
	add("accumulate: op 0", with(acc, func(h *header) { h.op = 0 }))
	add("accumulate: unknown op", with(acc, func(h *header) { h.op = mem.NoOp + 1 }))
	add("accumulate: type 0", with(acc, func(h *header) { h.typ = 0 }))
	add("accumulate: unknown type", with(acc, func(h *header) { h.typ = mem.Float64 + 1 }))
	add("accumulate: misaligned", with(acc, func(h *header) { h.off = 4 }))
	add("accumulate: partial element", with(acc, func(h *header) { h.length = 12 }))
	add("accumulate: no operand", with(acc, func(h *header) { h.length = 0 }))
	add("accumulate: fetch without id", with(acc, func(h *header) { h.flags, h.result = flagFetch, 16 }))
	add("accumulate: fetch of the wrong size", with(acc, func(h *header) { h.flags, h.result, h.id = flagFetch, 8, 1 }))
	add("accumulate: result without fetch", with(acc, func(h *header) { h.result, h.id = 16, 1 }))
	add("accumulate: fetch without result", with(acc, func(h *header) { h.flags, h.id = flagFetch, 1 }))
	add("accumulate: no-op without fetch", with(acc, func(h *header) { h.op = mem.NoOp }))
	add("accumulate: no-op with nothing", with(acc, func(h *header) { h.op, h.length = mem.NoOp, 0 }))
	add("accumulate: operand over the chunk", with(acc, func(h *header) { h.length = chunkPayload + 8 }))
	add("accumulate: fetch over the chunk", with(acc, func(h *header) {
		h.op, h.length, h.flags, h.id, h.result = mem.NoOp, 0, flagFetch, 1, chunkPayload+8
	}))

	add("compare-swap: op", with(cas, func(h *header) { h.op = mem.Sum }))
	add("compare-swap: type 0", with(cas, func(h *header) { h.typ = 0 }))
	add("compare-swap: one operand", with(cas, func(h *header) { h.length = 4 }))
	add("compare-swap: misaligned", with(cas, func(h *header) { h.off = 2 }))
	add("compare-swap: fetch without id", with(cas, func(h *header) { h.flags, h.result = flagFetch, 4 }))
	add("compare-swap: fetch of two elements", with(cas, func(h *header) { h.flags, h.result, h.id = flagFetch, 8, 1 }))

	add("am: id MaxAMID", with(am, func(h *header) { h.aux = transport.MaxAMID }))
	add("am: id 255", with(am, func(h *header) { h.aux = 255 }))
	add("am: header longer than the message", with(am, func(h *header) { h.off = 11 }))
	add("am: with id", with(am, func(h *header) { h.id = 1 }))
	add("am: with key", with(am, func(h *header) { h.key = 1 }))
	add("am: with notice", with(am, func(h *header) { h.notice = uint8(transport.NoticeTag) }))
	add("am: with tag", with(am, func(h *header) { h.tag = 1 }))
	add("am: with result", with(am, func(h *header) { h.result = 1 }))

	add("flush without id", header{kind: KindFlush})
	add("flush with key", header{kind: KindFlush, id: 1, key: 1})
	add("flush with payload", header{kind: KindFlush, id: 1, length: 1})
	add("flush with notice", header{kind: KindFlush, id: 1, notice: 1})
	add("lookup without id", header{kind: KindLookup, key: 1, off: 8})
	add("lookup with tag", header{kind: KindLookup, id: 1, key: 1, off: 8, tag: 1})
	add("withdraw with offset", header{kind: KindWithdraw, id: 1, key: 1, off: 8})
	add("ping with payload", header{kind: KindPing, id: 1, length: 8})
	add("ping with signal offset", header{kind: KindPing, id: 1, noffset: 8})
	add("bye with value", header{kind: KindBye, id: 1, nvalue: 1})
	add("bye-ack with id", header{kind: KindByeAck, id: 1})
	add("reply-bye with id", header{kind: KindReplyBye, id: 1})
	add("reply-bye with key", header{kind: KindReplyBye, key: 1})

	add("reply: unknown status", header{kind: KindReply, id: 1, notice: uint8(numStatus)})
	add("reply: payload on a refusal", header{kind: KindReply, id: 1, notice: uint8(StatusNoRegion), length: 8})
	add("reply: key", header{kind: KindReply, id: 1, key: 1})
	add("reply: offset", header{kind: KindReply, id: 1, off: 1})
	add("reply: tag", header{kind: KindReply, id: 1, tag: 1})
	add("reply: aux", header{kind: KindReply, id: 1, aux: 1})
	add("reply: fetch flag", header{kind: KindReply, id: 1, flags: flagFetch})
	add("reply: over the limit", header{kind: KindReply, id: 1, length: maxPayload + 1})
	return out
}()

func TestDecodeInvalidHeaders(t *testing.T) {
	for _, v := range invalidHeaders {
		if req, rep := checkDecode(t, v.b); req || rep {
			t.Errorf("%s: %x accepted (as request %v, as reply %v)", v.name, v.b, req, rep)
		}
	}
}

// TestDecodeWrongDirection checks that every valid header is refused in
// the other direction, with a FrameError saying so.
func TestDecodeWrongDirection(t *testing.T) {
	for _, v := range validHeaders {
		_, err := decodeHeader(encoded(v.h), !v.request)
		var fe *FrameError
		if !errors.As(err, &fe) || fe.Reason != "wrong direction" {
			t.Errorf("%s sent the wrong way: error %v, want a FrameError for the wrong direction", v.name, err)
		}
	}
}
