package mem

import (
	"bytes"
	"testing"
)

// TestCopyOut: CopyOut copies like copy for every length around its
// threshold, with dst and src of different lengths, misaligned, and
// overlapping either way.
func TestCopyOut(t *testing.T) {
	pattern := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7) + seed
		}
		return b
	}
	for _, n := range []int{0, 1, 63, 64, 127, 128, 129, 255, 256, 257, 300, 511, 4096, 4099} {
		for _, extra := range []int{-1, 0, 5} { // dst shorter, equal, longer
			for _, skew := range []int{0, 3} { // misaligned dst
				m := max(n+extra, 0)
				buf := pattern(m+skew, 1)
				dst := buf[skew:]
				want := bytes.Clone(dst)
				src := pattern(n, 9)
				k := copy(want, src)
				if got := CopyOut(dst, src); got != k {
					t.Fatalf("n=%d dst=%d skew=%d: copied %d bytes, want %d", n, m, skew, got, k)
				}
				if !bytes.Equal(dst, want) {
					t.Fatalf("n=%d dst=%d skew=%d: dst differs from copy's result", n, m, skew)
				}
			}
		}
	}
	for _, shift := range []int{-100, -1, 1, 64, 200} {
		const n = 1000
		a, b := pattern(n+400, 5), pattern(n+400, 5)
		d, s := 150+shift, 150
		copy(b[d:d+n], b[s:s+n])
		if got := CopyOut(a[d:d+n], a[s:s+n]); got != n {
			t.Fatalf("overlap %d: copied %d bytes, want %d", shift, got, n)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("overlap %d: result differs from copy's", shift)
		}
	}
}
