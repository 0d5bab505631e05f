//go:build !race

package async_test

import (
	"context"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// TestAllocs checks that issuing operations and flushing them allocate
// nothing in the steady state. (Not under the race detector, whose
// sync.Pool drops items on purpose.)
func TestAllocs(t *testing.T) {
	eps := world(t, 2)
	_, key := expose(t, eps[1], 64)
	r := region(t, eps[0], 1, key, 64)
	ctx := context.Background()
	src, dst, res := make([]byte, 32), make([]byte, 32), make([]byte, 8)
	one := mem.Bytes([]int64{1})
	var c transport.Completion
	nt := transport.TagNotice(transport.NoticeTag, 0)
	eps[1].SetNoticeHandler(func(int, transport.Key, transport.Notice) {})
	for _, tc := range []struct {
		what string
		f    func()
	}{
		{"Put+Get+Accumulate+CompareSwap, then FlushAll", func() {
			_ = r.Put(0, src, nt, &c)
			_ = r.Get(0, dst, transport.Notice{}, nil)
			_ = r.Accumulate(32, mem.Sum, mem.Int64, one, res, nt, &c)
			_ = r.CompareSwap(40, mem.Int64, one, one, res, transport.Notice{}, &c)
			_ = eps[0].FlushAll(ctx)
		}},
		{"Put+Flush", func() {
			_ = r.Put(8, src[:8], transport.Notice{}, nil)
			_ = eps[0].Flush(ctx, 1)
		}},
	} {
		if n := testing.AllocsPerRun(1000, tc.f); n != 0 {
			t.Errorf("%s: %v allocations per run", tc.what, n)
		}
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}
