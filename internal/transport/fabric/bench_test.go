//go:build fabric

package fabric_test

import (
	"context"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/fabric"
)

// BenchmarkPutFlush is a put of 64 bytes and a flush, between two
// goroutine ranks.
func BenchmarkPutFlush(b *testing.B) {
	for _, size := range []int{64, 4096} {
		b.Run(sizeName(size), func(b *testing.B) {
			eps := group(b, 2)
			defer closeAll(eps)
			buf := mem.Alloc(size)
			defer mem.Free(buf)
			key, err := eps[1].Expose(buf)
			if err != nil {
				b.Fatal(err)
			}
			r, err := eps[0].Region(1, key, size)
			if err != nil {
				b.Fatal(err)
			}
			src := make([]byte, size)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := r.Put(0, src, transport.Notice{}, nil); err != nil {
					b.Fatal(err)
				}
				if err := eps[0].Flush(ctx, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1024 {
		return itoa(n/1024) + "K"
	}
	return itoa(n)
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func closeAll(eps []*fabric.Endpoint) {
	for _, e := range eps {
		e.Close()
	}
}
