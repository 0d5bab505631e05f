package transporttest

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// testCompareSwap checks a successful, a failed and an idempotent
// compare-and-swap on every element type, from a peer and from self.
func testCompareSwap(t *testing.T, f factory) {
	e := newEnv(t, f, 2)
	runCompareSwap(t, e, mem.Int8, intVals[int8]())
	runCompareSwap(t, e, mem.Int16, intVals[int16]())
	runCompareSwap(t, e, mem.Int32, intVals[int32]())
	runCompareSwap(t, e, mem.Int64, intVals[int64]())
	runCompareSwap(t, e, mem.Uint8, intVals[uint8]())
	runCompareSwap(t, e, mem.Uint16, intVals[uint16]())
	runCompareSwap(t, e, mem.Uint32, intVals[uint32]())
	runCompareSwap(t, e, mem.Uint64, intVals[uint64]())
	runCompareSwap(t, e, mem.Float32, floatVals[float32]())
	runCompareSwap(t, e, mem.Float64, floatVals[float64]())
}

func runCompareSwap[T mem.Elem](t *testing.T, e *env, typ mem.Type, vals []T) {
	t.Run(typ.String(), func(t *testing.T) {
		sz := typ.Size()
		// Three elements; the middle one is the target, its neighbours
		// must not change.
		buf, key := e.expose(1, 3*sz)
		a, b, c := mem.Bytes(vals[1:2]), mem.Bytes(vals[3:4]), mem.Bytes(vals[4:5])
		for origin := 0; origin < 2; origin++ {
			r := e.region(origin, 1, key, len(buf))
			memset(buf, 0xa5)
			copy(buf[sz:], a)
			steps := []struct {
				what                  string
				compare, swap, before []byte
				after                 []byte
			}{
				{"matching", a, b, a, b},
				{"not matching", a, c, b, b},
				{"swapping a value for itself", b, b, b, b},
				{"matching again", b, c, b, c},
			}
			for _, s := range steps {
				what := fmt.Sprintf("%s CompareSwap from rank %d", s.what, origin)
				res := filled(sz)
				e.must(e.cas(r, sz, typ, s.compare, s.swap, res, noNotice), "%s", what)
				e.flush(origin, 1)
				checkBytes(t, what+": previous value", res, s.before)
				checkBytes(t, what+": element", buf[sz:2*sz], s.after)
				checkFilled(t, what+": neighbours", buf[:sz], 0xa5)
				checkFilled(t, what+": neighbours", buf[2*sz:], 0xa5)
			}
		}
	})
}

// testCompareSwapMutex builds a spin lock from compare-and-swap on a word
// at one rank and has goroutines of every rank increment a counter next to
// it with a plain Get and Put under the lock. Mutual exclusion is checked
// directly, and no increment may be lost.
func testCompareSwapMutex(t *testing.T, f factory) {
	const n, workers, rounds = 3, 3, 100
	e := newEnv(t, f, n)
	// Lock word at 0 (0 = free, else the owner's id), counter at 8.
	buf, key := e.expose(1, 16)
	var inside atomic.Int32
	var errs errorList
	var wg sync.WaitGroup
	for rank := 0; rank < n; rank++ {
		r := e.region(rank, 1, key, len(buf))
		for w := 0; w < workers; w++ {
			id := int64(rank*workers + w + 1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := mutexWorker(e, rank, r, id, rounds, &inside); err != nil {
					errs.add("%v", err)
				}
			}()
		}
	}
	wg.Wait()
	errs.report(t)
	e.flushAll()
	le := binary.LittleEndian
	if got := le.Uint64(buf[0:]); got != 0 {
		t.Errorf("lock word = %d after every worker released it", got)
	}
	if got := le.Uint64(buf[8:]); got != n*workers*rounds {
		t.Errorf("counter = %d, want %d: increments lost, the lock did not exclude", got, n*workers*rounds)
	}
}

// mutexWorker takes the lock rounds times and increments the counter each
// time.
func mutexWorker(e *env, rank int, r transport.Region, id int64, rounds int, inside *atomic.Int32) error {
	for k := 0; k < rounds; k++ {
		if err := mutexRound(e, rank, r, id, inside); err != nil {
			return err
		}
	}
	return nil
}

// mutexRound takes the lock once and increments the counter. Each round
// has the suite's bound: on a loaded machine a worker far from the lock
// may wait long, but must get it every time.
func mutexRound(e *env, rank int, r transport.Region, id int64, inside *atomic.Int32) error {
	zero := make([]byte, 8)
	me := mem.Bytes([]int64{id})
	res := make([]byte, 8)
	ctr := make([]byte, 8)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		if err := e.cas(r, 0, mem.Int64, zero, me, res, noNotice); err != nil {
			return fmt.Errorf("worker %d: acquire: %w", id, err)
		}
		if binary.LittleEndian.Uint64(res) == 0 {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("worker %d: lock not acquired within %v", id, timeout)
		}
		// Yield, then sleep between attempts: goroutines that only
		// yield keep Go's scheduler from polling the network (it does so
		// only when nothing else is runnable, or every 10 ms), so the
		// holder's requests over TCP would crawl.
		if attempt < 8 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
	if in := inside.Add(1); in != 1 {
		return fmt.Errorf("worker %d: %d workers inside the critical section", id, in)
	}
	if err := e.get(r, 8, ctr, noNotice); err != nil {
		return fmt.Errorf("worker %d: Get: %w", id, err)
	}
	binary.LittleEndian.PutUint64(ctr, binary.LittleEndian.Uint64(ctr)+1)
	if err := e.put(r, 8, ctr, noNotice); err != nil {
		return fmt.Errorf("worker %d: Put: %w", id, err)
	}
	if err := e.eps[rank].Flush(ctx, 1); err != nil {
		return fmt.Errorf("worker %d: Flush: %w", id, err)
	}
	inside.Add(-1)
	if err := e.cas(r, 0, mem.Int64, me, zero, res, noNotice); err != nil {
		return fmt.Errorf("worker %d: release: %w", id, err)
	}
	if got := int64(binary.LittleEndian.Uint64(res)); got != id {
		return fmt.Errorf("worker %d: released a lock held by %d", id, got)
	}
	// A spin lock is not fair: a worker whose compare-and-swap is a load
	// and store next to the lock would take it again at once, every time,
	// before one whose request crosses a network gets there (seen with
	// the hybrid transport on a loaded machine). Step back a little after
	// each release (yielding: a sleep this short lasts a millisecond or
	// more when the process idles).
	for range 8 {
		runtime.Gosched()
	}
	return nil
}
