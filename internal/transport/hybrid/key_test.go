package hybrid

import (
	"testing"

	"github.com/narma-rma/narma/internal/transport"
)

// TestKeyPacking: pack and unpack are inverse over the whole range of
// inner keys, refuse keys that do not fit, and a key near a real one
// (wrong in its low bits) is wrong for both inner endpoints.
func TestKeyPacking(t *testing.T) {
	const maxL, maxR = transport.Key(1)<<LocalKeyBits - 1, transport.Key(1)<<RemoteKeyBits - 1
	cases := [][2]transport.Key{
		{0, 0}, {1, 1}, {0x1fff, 1}, {0x2ffe, 2}, {maxL, maxR}, {maxL, 0}, {0, maxR},
		{1 << 30, 12345}, {0xabcdef123, 0x3ffffff},
	}
	for _, c := range cases {
		k, ok := pack(c[0], c[1])
		if !ok {
			t.Fatalf("pack(%#x, %#x) refused", c[0], c[1])
		}
		if l, r := unpack(k); l != c[0] || r != c[1] {
			t.Fatalf("unpack(pack(%#x, %#x)) = %#x, %#x", c[0], c[1], l, r)
		}
		for _, d := range []transport.Key{1, 7, 1000, 1 << 20} {
			if k+d < k {
				continue
			}
			l, r := unpack(k + d)
			if l == c[0] || r == c[1] {
				t.Errorf("key %#x + %d unpacks to (%#x, %#x): an inner key of (%#x, %#x) survives", k, d, l, r, c[0], c[1])
			}
		}
	}
	for _, c := range [][2]transport.Key{{maxL + 1, 0}, {0, maxR + 1}, {1 << 63, 1}, {1, 1 << 40}} {
		if k, ok := pack(c[0], c[1]); ok {
			t.Errorf("pack(%#x, %#x) = %#x, want a refusal", c[0], c[1], k)
		}
	}
}

func TestMinLimit(t *testing.T) {
	for _, c := range [][3]int{{0, 0, 0}, {0, 5, 5}, {5, 0, 5}, {3, 5, 3}, {9, 4, 4}} {
		if got := minLimit(c[0], c[1]); got != c[2] {
			t.Errorf("minLimit(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}
