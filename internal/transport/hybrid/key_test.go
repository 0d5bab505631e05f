package hybrid

import (
	"testing"

	"github.com/narma-rma/narma/internal/transport"
)

// TestKeyPacking: pack and unpack are inverse for inner keys that fit in
// half a key, whatever their bytes, and pack refuses any other.
func TestKeyPacking(t *testing.T) {
	var full transport.Key
	for i := range halfKey {
		full[i] = 0xff
	}
	words := []uint64{0, 1, 0x1fff, 1 << 40, 1<<64 - 1}
	var cases [][2]transport.Key
	for _, l := range words {
		for _, r := range words {
			cases = append(cases, [2]transport.Key{transport.WordKey(l), transport.WordKey(r)})
		}
	}
	cases = append(cases, [2]transport.Key{full, full}, [2]transport.Key{full, {}})
	for _, c := range cases {
		k, ok := pack(c[0], c[1])
		if !ok {
			t.Fatalf("pack(%v, %v) refused", c[0], c[1])
		}
		if l, r := unpack(k); l != c[0] || r != c[1] {
			t.Fatalf("unpack(pack(%v, %v)) = %v, %v", c[0], c[1], l, r)
		}
	}
	var over transport.Key
	over[halfKey] = 1
	for _, c := range [][2]transport.Key{{over, {}}, {{}, over}, {over, over}} {
		if k, ok := pack(c[0], c[1]); ok {
			t.Errorf("pack(%v, %v) = %v, want a refusal", c[0], c[1], k)
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
