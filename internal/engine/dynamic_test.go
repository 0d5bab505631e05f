package engine

import (
	"bytes"
	"testing"
)

// FuzzDecodeDynAddr: a decoded address encodes back to the same bytes,
// and anything else is refused without a panic.
func FuzzDecodeDynAddr(f *testing.F) {
	a := DynAddr{Win: 7<<32 | 3, Rank: 2, ID: 9, Size: 4096}
	a.Key[0], a.Key[31] = 1, 255
	f.Add(a.AppendBinary(nil))
	f.Add(make([]byte, DynAddrSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, ok := DecodeDynAddr(b)
		if !ok {
			if d != (DynAddr{}) {
				t.Fatalf("refused encoding gave %+v", d)
			}
			return
		}
		if d.Rank < 0 || d.Size < 0 {
			t.Fatalf("decoded %+v", d)
		}
		if back := d.AppendBinary(nil); !bytes.Equal(back, b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, d, back)
		}
	})
}
