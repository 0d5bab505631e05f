package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/narma-rma/narma/internal/transport/local"
)

// checkFifo fails t unless q holds exactly want, in order.
func checkFifo(t *testing.T, q *fifo[int], want []int) {
	t.Helper()
	if q.Len() != len(want) {
		t.Fatalf("Len %d, want %d", q.Len(), len(want))
	}
	if got := q.All(); !slices.Equal(got, want) {
		t.Fatalf("All %v, want %v", got, want)
	}
	for i, w := range want {
		if q.At(i) != w {
			t.Fatalf("At(%d) = %d, want %d", i, q.At(i), w)
		}
	}
}

// TestFifoAgainstSlice runs random pushes and removals, most from the
// front as matching makes them, on a fifo and on a plain slice.
func TestFifoAgainstSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q fifo[int]
	var ref []int
	next := 0
	for step := range 20000 {
		switch r := rng.IntN(10); {
		case r < 5 || len(ref) == 0:
			q.Push(next)
			ref = append(ref, next)
			next++
		case r < 8:
			q.Remove(0)
			ref = ref[1:]
		default:
			i := rng.IntN(len(ref))
			q.Remove(i)
			ref = slices.Delete(slices.Clone(ref), i, i+1)
		}
		if step%97 == 0 || len(ref) < 4 {
			checkFifo(t, &q, ref)
		}
	}
	checkFifo(t, &q, ref)
}

// TestFifoFrontRemovalsKeepItSmall: a queue that is pushed at the back
// and emptied from the front, n at a time, never holds a backing array
// much larger than its peak length (the dead prefix is reclaimed), and
// removals leave no references behind.
func TestFifoFrontRemovalsKeepItSmall(t *testing.T) {
	var q fifo[*int]
	for round := range 100 {
		for i := range 50 {
			v := round*50 + i
			q.Push(&v)
		}
		for range 49 {
			q.Remove(0)
		}
	}
	if q.Len() != 100 {
		t.Fatalf("Len %d, want 100", q.Len())
	}
	if c := cap(q.s); c > 512 {
		t.Errorf("backing array of %d for at most 150 live elements", c)
	}
	for i, p := range q.s[:q.head] {
		if p != nil {
			t.Fatalf("dead slot %d still references %d", i, *p)
		}
	}
	for q.Len() > 0 {
		q.Remove(q.Len() - 1)
	}
	if q.head != 0 || len(q.s) != 0 {
		t.Fatalf("empty queue: head %d, len %d", q.head, len(q.s))
	}
}

// BenchmarkRecvBehindStream receives, in order, a backlog of `behind`
// unexpected messages from one source: a receiver that fell behind a
// stream. Each receive should cost the same whatever the backlog.
func BenchmarkRecvBehindStream(b *testing.B) {
	for _, behind := range []int{1, 1000, 100000} {
		b.Run(fmt.Sprintf("behind=%d", behind), func(b *testing.B) {
			eps, err := local.New(2)
			if err != nil {
				b.Fatal(err)
			}
			c := New(eps[0], nil, nil)
			defer c.Close()
			hdr, payload := msgHdr(c.user, 7), make([]byte, 8)
			for range behind {
				c.handleMsg(1, hdr, payload)
			}
			buf := make([]byte, 8)
			b.ResetTimer()
			for range b.N {
				c.handleMsg(1, hdr, payload)
				r := c.newRecv(1, c.user, 7, buf)
				c.post(r)
				if !c.recvDone(r) {
					b.Fatal("backlogged message not matched")
				}
				c.freeRecv(r)
			}
		})
	}
}
