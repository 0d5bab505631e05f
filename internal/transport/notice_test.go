package transport

import (
	"testing"
	"unsafe"
)

// A Notice must stay two words: the public calls pass it, with their other
// arguments, in registers (see Notice).
func TestNoticeIsTwoWords(t *testing.T) {
	if got := unsafe.Sizeof(Notice{}); got != 16 {
		t.Fatalf("Notice is %d bytes, want 16", got)
	}
}

func TestNoticeFields(t *testing.T) {
	for _, tc := range []struct {
		n                Notice
		kind             NoticeKind
		op               SignalOp
		tag              int32
		offset, value    uint64
		checkTag, signal bool
	}{
		{n: Notice{}, kind: NoticeNone, checkTag: true},
		{n: TagNotice(NoticeTag, 7), kind: NoticeTag, tag: 7, checkTag: true},
		{n: TagNotice(NoticeTag, -1), kind: NoticeTag, tag: -1, checkTag: true},
		{n: TagNotice(NoticeCounter, 1<<31-1), kind: NoticeCounter, tag: 1<<31 - 1, checkTag: true},
		{n: SignalNotice(SignalAdd, 128, 1<<63+77), kind: NoticeSignal, op: SignalAdd, offset: 128, value: 1<<63 + 77, signal: true},
		{n: SignalNotice(SignalSet, MaxNoticeOffset, 0), kind: NoticeSignal, op: SignalSet, offset: MaxNoticeOffset, signal: true},
		{n: SignalNotice(SignalSet, 1<<63, 5), kind: NoticeSignal, op: SignalSet, offset: MaxNoticeOffset, value: 5, signal: true},
		{n: SignalNotice(SignalAdd, 8, 1).WithOffset(64), kind: NoticeSignal, op: SignalAdd, offset: 64, value: 1, signal: true},
	} {
		n := tc.n
		if n.Kind() != tc.kind {
			t.Errorf("%+v: Kind %d, want %d", n, n.Kind(), tc.kind)
		}
		if tc.checkTag && (n.Tag() != tc.tag || n.Op() != 0 || n.Value() != 0) {
			t.Errorf("%+v: Tag %d Op %d Value %d, want %d 0 0", n, n.Tag(), n.Op(), n.Value(), tc.tag)
		}
		if tc.signal && (n.Op() != tc.op || n.Offset() != tc.offset || n.Value() != tc.value) {
			t.Errorf("%+v: Op %d Offset %d Value %d, want %d %d %d", n, n.Op(), n.Offset(), n.Value(), tc.op, tc.offset, tc.value)
		}
		if got := NoticeOf(n.Kind(), n.Op(), n.Tag(), n.Offset(), n.Value()); got != n {
			t.Errorf("NoticeOf of the fields of %+v gives %+v", n, got)
		}
	}
}

// FuzzNoticeOf: a transport rebuilds a notice from the fields it stored
// (or read off the wire); whatever they hold, the notice built from them
// carries them back, within its ranges.
func FuzzNoticeOf(f *testing.F) {
	f.Add(uint8(NoticeTag), uint8(0), int32(5), uint64(0), uint64(0))
	f.Add(uint8(NoticeSignal), uint8(SignalAdd), int32(-1), uint64(1<<60), uint64(3))
	f.Fuzz(func(t *testing.T, kind, op uint8, tag int32, off, value uint64) {
		n := NoticeOf(NoticeKind(kind), SignalOp(op), tag, off, value)
		if n.Kind() != NoticeKind(kind) {
			t.Fatalf("kind %d became %d", kind, n.Kind())
		}
		if NoticeKind(kind) == NoticeSignal {
			if n.Op() != SignalOp(op) || n.Value() != value || n.Offset() != min(off, MaxNoticeOffset) {
				t.Fatalf("signal (%d, %d, %d) became (%d, %d, %d)", op, off, value, n.Op(), n.Offset(), n.Value())
			}
			return
		}
		if n.Tag() != tag || n.Op() != 0 || n.Value() != 0 {
			t.Fatalf("tag %d became %d (op %d, value %d)", tag, n.Tag(), n.Op(), n.Value())
		}
	})
}

// TestWordKey: a word key gives its word back, a key with bytes past the
// word is not one, and keys print as the hexadecimal of their used bytes.
func TestWordKey(t *testing.T) {
	for _, v := range []uint64{0, 1, 0x1234, 1<<64 - 1} {
		if w, ok := WordKey(v).AsWord(); !ok || w != v {
			t.Errorf("WordKey(%#x).AsWord() = %#x, %v", v, w, ok)
		}
	}
	k := WordKey(5)
	k[KeySize-1] = 1
	if _, ok := k.AsWord(); ok {
		t.Error("a key with a byte past its first word is taken for a word key")
	}
	if k == WordKey(5) {
		t.Error("keys that differ past the first word compare equal")
	}
	for _, c := range []struct {
		k    Key
		want string
	}{{Key{}, "0x00"}, {WordKey(0x0102), "0x0201"}} {
		if got := c.k.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}
