//go:build fabric

package fabric

import (
	"bytes"
	"testing"

	"github.com/narma-rma/narma/internal/transport"
)

// FuzzMsgDecode: any bytes decode to a message or an error, never a
// panic, and a message that decodes encodes back to the same header.
func FuzzMsgDecode(f *testing.F) {
	for _, m := range []msg{
		{kind: msgAM, more: true, a: 3, src: 1, id: 70000, n1: 16, seq: 1},
		{kind: msgAcc, a: 1, b: 7, src: 2, id: 1<<32 | 5, slot: 3, gen: 9, off: 64, notice: transport.SignalNotice(transport.SignalAdd, 8, 1), n1: 8, n2: 8, seq: 77},
		{kind: msgReply, a: uint8(statusBounds), id: 42, seq: 2},
		{kind: msgBye, seq: 1 << 31},
		{kind: msgPing, src: 3, seq: 9},
		{kind: msgPong, src: 1, seq: 10},
	} {
		b := make([]byte, msgHeader+3)
		m.put(b)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(make([]byte, msgHeader))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m msg
		body, err := m.decode(b)
		if err != nil {
			return
		}
		if len(body) != len(b)-msgHeader {
			t.Fatalf("body of %d bytes from a message of %d", len(body), len(b))
		}
		out := make([]byte, msgHeader)
		m.put(out)
		var again msg
		if _, err := again.decode(out); err != nil || again != m {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", m, again, err)
		}
		// The notice words may be canonicalised (a tag notice drops its
		// value word); everything else is the bytes that came.
		if !bytes.Equal(out[:32], b[:32]) || !bytes.Equal(out[48:], b[48:msgHeader]) {
			t.Fatalf("header %x re-encoded as %x", b[:msgHeader], out)
		}
	})
}

// FuzzCQData: a word of remote CQ data decodes to a notice only if
// encoding that notice gives the word back.
func FuzzCQData(f *testing.F) {
	f.Add(uint64(0))
	for _, n := range []transport.Notice{transport.TagNotice(transport.NoticeTag, -1), transport.TagNotice(transport.NoticeCounter, 7)} {
		d, ok := cqData(n, 3, 9)
		if !ok {
			f.Fatalf("cqData(%+v) does not fit", n)
		}
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d uint64) {
		n, src, slot, ok := fromCQData(d)
		if !ok {
			return
		}
		back, fits := cqData(n, src, slot)
		if !fits || back != d {
			t.Fatalf("%#x decodes to %+v from %d, slot %d, which encodes to %#x (%v)", d, n, src, slot, back, fits)
		}
	})
}

func TestCQDataLimits(t *testing.T) {
	n := transport.TagNotice(transport.NoticeTag, 1)
	if _, ok := cqData(n, maxCQSrc+1, 0); ok {
		t.Error("a rank past the CQ data's field fits")
	}
	if _, ok := cqData(n, 0, maxCQSlot+1); ok {
		t.Error("a slot past the CQ data's field fits")
	}
	if _, ok := cqData(transport.SignalNotice(transport.SignalSet, 0, 1), 0, 0); ok {
		t.Error("a signal fits the CQ data")
	}
	if _, ok := cqData(n, maxCQSrc, maxCQSlot); !ok {
		t.Error("the largest rank and slot do not fit")
	}
}
