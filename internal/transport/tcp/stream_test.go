package tcp

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// streamNotice is the notice of the i-th put of an origin: the three
// kinds in turn, each carrying i.
func streamNotice(i int, slot int) transport.Notice {
	switch i % 3 {
	case 0:
		return transport.TagNotice(transport.NoticeTag, int32(i))
	case 1:
		return transport.TagNotice(transport.NoticeCounter, int32(i))
	}
	return transport.SignalNotice(transport.SignalAdd, uint64(slot*8), uint64(i))
}

// TestNoticeStream has three origins each stream small notified puts to
// one target, with flushes in between, and checks that the target gets
// every notice exactly once, in each origin's order, after the put's data.
func TestNoticeStream(t *testing.T) {
	const origins = 3
	perOrigin := 10000
	if testing.Short() {
		perOrigin = 1000
	}
	eps := newGroup(t, Config{Size: origins + 1})
	target := eps[0]
	m := mem.Alloc(origins * 8)
	key, err := target.Expose(m)
	if err != nil {
		t.Fatal(err)
	}

	// next[src] is the index of the put whose notice src must deliver
	// next; only src's reader touches it, but the test reads it at the
	// end, hence the lock.
	var mu sync.Mutex
	var next [origins + 1]int
	var bad []string
	target.SetNoticeHandler(func(src int, k transport.Key, n transport.Notice) {
		mu.Lock()
		defer mu.Unlock()
		if src < 1 || src > origins || k != key {
			bad = append(bad, fmt.Sprintf("notice from rank %d on key %d", src, k))
			return
		}
		i := next[src]
		slot := src - 1
		if want := streamNotice(i, slot); n != want {
			bad = append(bad, fmt.Sprintf("rank %d: notice %+v, want that of put %d, %+v", src, n, i, want))
		}
		if got := binary.LittleEndian.Uint64(m[slot*8:]); got != uint64(i) {
			bad = append(bad, fmt.Sprintf("rank %d: notice of put %d delivered with data %d", src, i, got))
		}
		next[src]++
	})

	var wg sync.WaitGroup
	errs := make(chan error, origins)
	for o := 1; o <= origins; o++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := eps[o]
			slot := o - 1
			r, err := e.Region(0, key, len(m))
			if err != nil {
				errs <- err
				return
			}
			ctx := context.Background()
			var buf [8]byte
			for i := range perOrigin {
				binary.LittleEndian.PutUint64(buf[:], uint64(i))
				if err := r.Put(slot*8, buf[:], streamNotice(i, slot), nil); err != nil {
					errs <- fmt.Errorf("rank %d: put %d: %w", o, i, err)
					return
				}
				// Flushes now and then, at a period of its own.
				if i%(50+17*o) == 0 {
					if err := e.Flush(ctx, 0); err != nil {
						errs <- fmt.Errorf("rank %d: flush after put %d: %w", o, i, err)
						return
					}
				}
			}
			if err := e.Flush(ctx, 0); err != nil {
				errs <- fmt.Errorf("rank %d: last flush: %w", o, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, b := range bad {
		if i == 10 {
			t.Errorf("... and %d more", len(bad)-i)
			break
		}
		t.Error(b)
	}
	for o := 1; o <= origins; o++ {
		if next[o] != perOrigin {
			t.Errorf("rank %d: %d notices delivered after its last flush, want %d", o, next[o], perOrigin)
		}
	}
}
