package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
)

const maxRanks = 9

// TestBarrierWaits: a rank that enters the barrier late holds every other
// rank in it. Each rank counts itself in before entering; after the
// barrier every rank must see all n, for every choice of the late rank.
func TestBarrierWaits(t *testing.T) {
	for n := 1; n <= maxRanks; n++ {
		for late := 0; late < n; late++ {
			cs := newComms(t, n)
			var entered atomic.Int32
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				if c.Rank() == late {
					time.Sleep(10 * time.Millisecond)
				}
				entered.Add(1)
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if got := entered.Load(); got != int32(n) {
					return fmt.Errorf("n=%d late=%d: left the barrier with %d ranks entered", n, late, got)
				}
				return nil
			})
		}
	}
}

// TestBarrierRounds runs many barriers back to back with a per-round
// count, so that a barrier that lets a rank through early, or a message of
// one barrier matched by the next, is seen.
func TestBarrierRounds(t *testing.T) {
	const rounds = 200
	for n := 1; n <= maxRanks; n++ {
		cs := newComms(t, n)
		var count [rounds]atomic.Int32
		runOK(t, cs, func(ctx context.Context, c *Comm) error {
			r := rand.New(rand.NewPCG(uint64(c.Rank()), 9))
			for i := 0; i < rounds; i++ {
				for k := r.IntN(3); k > 0; k-- {
					runtime.Gosched()
				}
				count[i].Add(1)
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if got := count[i].Load(); got != int32(n) {
					return fmt.Errorf("n=%d round %d: %d ranks entered", n, i, got)
				}
			}
			return nil
		})
	}
}

func TestBcast(t *testing.T) {
	for n := 1; n <= maxRanks; n++ {
		for _, size := range []int{0, 1, 13, 4096} {
			cs := newComms(t, n)
			data := make([][]byte, n) // the root's data, per root
			for root := range data {
				data[root] = make([]byte, size)
				for i := range data[root] {
					data[root][i] = byte(root*37 + i*11 + 1)
				}
			}
			// Every rank broadcasts from every root in turn, so consecutive
			// broadcasts with different roots share the tag.
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				for root := 0; root < n; root++ {
					buf := make([]byte, size)
					if c.Rank() == root {
						copy(buf, data[root])
					}
					if err := c.Bcast(ctx, buf, root); err != nil {
						return err
					}
					if !bytes.Equal(buf, data[root]) {
						return fmt.Errorf("n=%d size=%d root=%d: wrong data", n, size, root)
					}
				}
				if err := c.Bcast(ctx, nil, n); !errors.Is(err, ErrRank) {
					return fmt.Errorf("Bcast with root %d: %v, want ErrRank", n, err)
				}
				return nil
			})
		}
	}
}

// doublingSum is the reference for Allreduce's summation order:
// recursive doubling over the largest power of two p2 of the ranks, rank
// r below n-p2 first adding rank r+p2's values; each pair adds the lower
// ranks' sum on the left.
func doublingSum(vals [][]float64) []float64 {
	n := len(vals)
	p2 := 1
	for p2*2 <= n {
		p2 *= 2
	}
	acc := make([][]float64, p2)
	for r := range p2 {
		acc[r] = append([]float64(nil), vals[r]...)
		if r+p2 < n {
			for i := range acc[r] {
				acc[r][i] += vals[r+p2][i]
			}
		}
	}
	for k := 1; k < p2; k <<= 1 {
		next := make([][]float64, p2)
		for r := range p2 {
			lo, hi := min(r, r^k), max(r, r^k)
			next[r] = make([]float64, len(acc[r]))
			for i := range next[r] {
				next[r][i] = acc[lo][i] + acc[hi][i]
			}
		}
		acc = next
	}
	return acc[0]
}

func TestAllreduceFloat64(t *testing.T) {
	const k = 37
	for n := 1; n <= maxRanks; n++ {
		cs := newComms(t, n)
		r := rand.New(rand.NewPCG(uint64(n), 1))
		vals := make([][]float64, n)
		for i := range vals {
			vals[i] = make([]float64, k)
			for j := range vals[i] {
				// Mixed magnitudes and signs, so that the summation order
				// changes the rounding.
				vals[i][j] = (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(30)-15))
			}
		}
		want := doublingSum(vals)
		results := make([][]byte, n)
		runOK(t, cs, func(ctx context.Context, c *Comm) error {
			send := append([]float64(nil), vals[c.Rank()]...)
			recv := make([]float64, k)
			if err := c.Allreduce(ctx, mem.Bytes(send), mem.Bytes(recv), mem.Float64, mem.Sum); err != nil {
				return err
			}
			for j := range send {
				if math.Float64bits(send[j]) != math.Float64bits(vals[c.Rank()][j]) {
					return fmt.Errorf("Allreduce modified the send buffer")
				}
			}
			results[c.Rank()] = bytes.Clone(mem.Bytes(recv))
			return nil
		})
		if t.Failed() {
			return
		}
		for rank := range results {
			if !bytes.Equal(results[rank], results[0]) {
				t.Fatalf("n=%d: rank %d's result differs bitwise from rank 0's", n, rank)
			}
		}
		if !bytes.Equal(results[0], mem.Bytes(want)) {
			t.Errorf("n=%d: result differs from the recursive-doubling reference", n)
		}
		// And it is the sum, up to rounding.
		got := make([]float64, k)
		copy(mem.Bytes(got), results[0])
		for j := 0; j < k; j++ {
			var s, mag float64
			for i := 0; i < n; i++ {
				s += vals[i][j]
				mag += math.Abs(vals[i][j])
			}
			if math.Abs(got[j]-s) > 1e-12*mag {
				t.Errorf("n=%d element %d: %g, want about %g", n, j, got[j], s)
			}
		}
	}
}

func TestAllreduceIntOps(t *testing.T) {
	for n := 1; n <= maxRanks; n++ {
		cs := newComms(t, n)
		runOK(t, cs, func(ctx context.Context, c *Comm) error {
			for _, op := range []mem.Op{mem.Sum, mem.Max, mem.Min, mem.Bxor, mem.Replace} {
				send := []int64{int64(c.Rank()), -int64(c.Rank()) * 3, 1 << c.Rank()}
				recv := make([]int64, 3)
				if err := c.Allreduce(ctx, mem.Bytes(send), mem.Bytes(recv), mem.Int64, op); err != nil {
					return err
				}
				var want [3]int64
				for r := 0; r < n; r++ {
					v := [3]int64{int64(r), -int64(r) * 3, 1 << r}
					for i := range want {
						if r == 0 {
							want[i] = v[i]
							continue
						}
						switch op {
						case mem.Sum:
							want[i] += v[i]
						case mem.Max:
							want[i] = max(want[i], v[i])
						case mem.Min:
							want[i] = min(want[i], v[i])
						case mem.Bxor:
							want[i] ^= v[i]
						}
					}
				}
				if op == mem.Replace {
					continue // the result depends on the combination order
				}
				if [3]int64(recv) != want {
					return fmt.Errorf("n=%d %v: %v, want %v", n, op, recv, want)
				}
			}
			return nil
		})
	}
}

func TestAllreduceArgs(t *testing.T) {
	cs := newComms(t, 2)
	runOK(t, cs, func(ctx context.Context, c *Comm) error {
		b8, b16, b12 := make([]byte, 8), make([]byte, 16), make([]byte, 12)
		for _, tc := range []struct {
			send, recv []byte
			t          mem.Type
			o          mem.Op
			want       error
		}{
			{b8, b8, mem.Float64, mem.NoOp, ErrOp},
			{b8, b8, mem.Float64, mem.Band, ErrOp},
			{b8, b8, mem.Type(0), mem.Sum, ErrOp},
			{b12, b12, mem.Int64, mem.Sum, ErrLayout},
			{b8, b16, mem.Int64, mem.Sum, ErrLayout},
		} {
			if err := c.Allreduce(ctx, tc.send, tc.recv, tc.t, tc.o); !errors.Is(err, tc.want) {
				return fmt.Errorf("Allreduce(%d, %d bytes, %v, %v) = %v, want %v", len(tc.send), len(tc.recv), tc.t, tc.o, err, tc.want)
			}
			if err := c.ReduceScatter(ctx, append(tc.send, tc.send...), tc.send, tc.t, tc.o); tc.want == ErrOp && !errors.Is(err, tc.want) {
				return fmt.Errorf("ReduceScatter(%v, %v) = %v, want %v", tc.t, tc.o, err, tc.want)
			}
		}
		if err := c.Allgather(ctx, b8, b8); !errors.Is(err, ErrLayout) {
			return fmt.Errorf("Allgather into a short buffer: %v, want ErrLayout", err)
		}
		if err := c.ReduceScatter(ctx, b8, b8, mem.Int32, mem.Sum); !errors.Is(err, ErrLayout) {
			return fmt.Errorf("ReduceScatter from a short buffer: %v, want ErrLayout", err)
		}
		// After all the local errors the ranks are still in step.
		return c.Barrier(ctx)
	})
}

func TestAllgather(t *testing.T) {
	for n := 1; n <= maxRanks; n++ {
		for _, b := range []int{0, 1, 7, 1000} {
			cs := newComms(t, n)
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				for rep := 0; rep < 3; rep++ {
					send := make([]byte, b)
					for i := range send {
						send[i] = byte(c.Rank()*13 + i + rep)
					}
					recv := make([]byte, b*n)
					if err := c.Allgather(ctx, send, recv); err != nil {
						return err
					}
					for r := 0; r < n; r++ {
						for i := 0; i < b; i++ {
							if recv[r*b+i] != byte(r*13+i+rep) {
								return fmt.Errorf("n=%d b=%d rep %d: block of rank %d wrong at %d", n, b, rep, r, i)
							}
						}
					}
				}
				return nil
			})
		}
	}
}

func rsValue(src, blk, i int) int32 {
	return int32(src*100003-blk*7919+i*31) ^ int32(src<<28)
}

func TestReduceScatterInt32(t *testing.T) {
	for n := 1; n <= maxRanks; n++ {
		for _, k := range []int{0, 1, 5} {
			cs := newComms(t, n)
			runOK(t, cs, func(ctx context.Context, c *Comm) error {
				for rep := 0; rep < 3; rep++ {
					send := make([]int32, n*k)
					for blk := 0; blk < n; blk++ {
						for i := 0; i < k; i++ {
							send[blk*k+i] = rsValue(c.Rank(), blk, i) + int32(rep)
						}
					}
					keep := append([]int32(nil), send...)
					recv := make([]int32, k)
					if k == 0 {
						recv = nil
					}
					if err := c.ReduceScatter(ctx, mem.Bytes(send), mem.Bytes(recv), mem.Int32, mem.Sum); err != nil {
						return err
					}
					for i := 0; i < k; i++ {
						var want int32
						for src := 0; src < n; src++ {
							want += rsValue(src, c.Rank(), i) + int32(rep)
						}
						if recv[i] != want {
							return fmt.Errorf("n=%d k=%d rep %d: element %d = %d, want %d", n, k, rep, i, recv[i], want)
						}
					}
					for i := range send {
						if send[i] != keep[i] {
							return fmt.Errorf("ReduceScatter modified the send buffer")
						}
					}
				}
				return nil
			})
		}
	}
}

// mismatchOutcome runs f with a short deadline on every rank and sorts the
// outcomes.
func mismatchOutcome(t *testing.T, cs []*Comm, f func(ctx context.Context, c *Comm) error) (coll, hung, ok []int) {
	t.Helper()
	errs := runRanks(t, cs, func(ctx context.Context, c *Comm) error {
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		return f(ctx, c)
	})
	for r, err := range errs {
		switch {
		case err == nil:
			ok = append(ok, r)
		case errors.Is(err, ErrCollective):
			coll = append(coll, r)
		case errors.Is(err, context.DeadlineExceeded):
			hung = append(hung, r)
		default:
			t.Errorf("rank %d: %v, want ErrCollective", r, err)
		}
	}
	return coll, hung, ok
}

// TestCollectiveLengthMismatch: ranks that pass buffers of different
// lengths get ErrCollective. In Allgather and ReduceScatter every rank
// exchanges with every other, so every rank must detect the mismatch. In
// Bcast and Allreduce only the ranks that receive a mismatched message can
// detect it; the test requires at least one ErrCollective and logs the
// ranks that were left waiting.
func TestCollectiveLengthMismatch(t *testing.T) {
	for n := 2; n <= 5; n++ {
		// odd is the rank with the odd length: a leaf of the broadcast
		// tree, and (for n > 2) an inner rank.
		testMismatch(t, n, n-1)
		if n/2 != n-1 {
			testMismatch(t, n, n/2)
		}
	}
}

func testMismatch(t *testing.T, n, odd int) {
	t.Run(fmt.Sprintf("Allgather/n=%d/odd=%d", n, odd), func(t *testing.T) {
		coll, hung, ok := mismatchOutcome(t, newComms(t, n), func(ctx context.Context, c *Comm) error {
			b := 8
			if c.Rank() == odd {
				b = 16
			}
			return c.Allgather(ctx, make([]byte, b), make([]byte, b*n))
		})
		if len(coll) != n {
			t.Errorf("ErrCollective on ranks %v, timed out %v, nil %v; want ErrCollective everywhere", coll, hung, ok)
		}
	})
	t.Run(fmt.Sprintf("ReduceScatter/n=%d/odd=%d", n, odd), func(t *testing.T) {
		coll, hung, ok := mismatchOutcome(t, newComms(t, n), func(ctx context.Context, c *Comm) error {
			b := 8
			if c.Rank() == odd {
				b = 16
			}
			return c.ReduceScatter(ctx, make([]byte, b*n), make([]byte, b), mem.Int32, mem.Sum)
		})
		if len(coll) != n {
			t.Errorf("ErrCollective on ranks %v, timed out %v, nil %v; want ErrCollective everywhere", coll, hung, ok)
		}
	})
	t.Run(fmt.Sprintf("Allreduce/n=%d/odd=%d", n, odd), func(t *testing.T) {
		coll, hung, ok := mismatchOutcome(t, newComms(t, n), func(ctx context.Context, c *Comm) error {
			b := 8
			if c.Rank() == odd {
				b = 16
			}
			return c.Allreduce(ctx, make([]byte, b), make([]byte, b), mem.Float64, mem.Sum)
		})
		if len(coll) == 0 {
			t.Errorf("no rank got ErrCollective (timed out %v, nil %v)", hung, ok)
		}
		if len(hung) > 0 {
			t.Logf("ErrCollective on %v; ranks %v blocked until their deadline", coll, hung)
		}
	})
	t.Run(fmt.Sprintf("Bcast/n=%d/odd=%d", n, odd), func(t *testing.T) {
		coll, hung, ok := mismatchOutcome(t, newComms(t, n), func(ctx context.Context, c *Comm) error {
			b := 8
			if c.Rank() == odd {
				b = 16
			}
			buf := make([]byte, b)
			if err := c.Bcast(ctx, buf, 0); err != nil {
				return err
			}
			if c.Rank() != 0 && !bytes.Equal(buf, make([]byte, 8)) {
				return fmt.Errorf("rank %d returned nil with %d bytes", c.Rank(), len(buf))
			}
			return nil
		})
		if len(coll) == 0 {
			t.Errorf("no rank got ErrCollective (timed out %v, nil %v)", hung, ok)
		}
		for _, r := range ok {
			if r == odd {
				t.Errorf("rank %d with the odd length returned nil", r)
			}
		}
		if len(hung) > 0 {
			t.Logf("ErrCollective on %v; ranks %v blocked until their deadline", coll, hung)
		}
	})
}

// TestCollectiveErrorWrites records whether a collective that fails with
// ErrCollective has written into its receive buffer (the public package
// documents that a failing call writes nothing).
func TestCollectiveErrorWrites(t *testing.T) {
	const n = 3
	cs := newComms(t, n)
	var wrote atomic.Int32
	mismatchOutcome(t, cs, func(ctx context.Context, c *Comm) error {
		b := 8
		if c.Rank() == 1 {
			b = 16
		}
		send := bytes.Repeat([]byte{0xAA}, b)
		recv := make([]byte, b*n)
		err := c.Allgather(ctx, send, recv)
		if err != nil && !bytes.Equal(recv, make([]byte, b*n)) {
			wrote.Add(1)
		}
		return err
	})
	if w := wrote.Load(); w > 0 {
		t.Logf("Allgather: %d of %d ranks wrote into recv before failing with ErrCollective", w, n)
	}
}

// TestCollectivesInterleaved mixes collectives and user messages with the
// same tag numbers, to check that the collective context keeps them apart.
func TestCollectivesInterleaved(t *testing.T) {
	const n = 4
	cs := newComms(t, n)
	runOK(t, cs, func(ctx context.Context, c *Comm) error {
		next := (c.Rank() + 1) % n
		prev := (c.Rank() + n - 1) % n
		// User messages with the tags the collectives use, sent first.
		for _, tag := range []int{tagBarrier, tagBcast, tagReduce, tagAllgather, tagRedScat} {
			if err := c.Send(ctx, []byte{byte(tag)}, next, tag); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		v := []int32{int32(c.Rank())}
		var sum [1]int32
		if err := c.Allreduce(ctx, mem.Bytes(v), mem.Bytes(sum[:]), mem.Int32, mem.Sum); err != nil {
			return err
		}
		if sum[0] != n*(n-1)/2 {
			return fmt.Errorf("sum %d", sum[0])
		}
		all := make([]byte, 4*n)
		if err := c.Allgather(ctx, binary.LittleEndian.AppendUint32(nil, uint32(c.Rank())), all); err != nil {
			return err
		}
		for _, tag := range []int{tagRedScat, tagAllgather, tagReduce, tagBcast, tagBarrier} {
			buf := make([]byte, 1)
			if _, err := c.Recv(ctx, buf, prev, tag); err != nil || buf[0] != byte(tag) {
				return fmt.Errorf("user message tag %d: %v %v", tag, buf, err)
			}
		}
		if _, found, _ := c.Iprobe(AnySource, AnyTag); found {
			return fmt.Errorf("a message is left over")
		}
		return nil
	})
}

// TestDupSeparatesContexts: messages on a duplicate never match receives
// on its parent (and the other way round), collectives run on both, and
// windows made on both communicators keep distinct identities.
func TestDupSeparatesContexts(t *testing.T) {
	comms := newComms(t, 3)
	runOK(t, comms, func(ctx context.Context, c *Comm) error {
		d, err := c.Dup(ctx)
		if err != nil {
			return err
		}
		peer := (c.rank + 1) % c.size
		from := (c.rank + c.size - 1) % c.size
		// Same tag on both communicators, the duplicate's message sent first.
		if err := d.Send(ctx, []byte{'d'}, peer, 7); err != nil {
			return err
		}
		if err := c.Send(ctx, []byte{'c'}, peer, 7); err != nil {
			return err
		}
		buf := make([]byte, 1)
		if _, err := c.Recv(ctx, buf, AnySource, AnyTag); err != nil || buf[0] != 'c' {
			return fmt.Errorf("parent received %q, %v; want its own message", buf, err)
		}
		if _, err := d.Recv(ctx, buf, from, 7); err != nil || buf[0] != 'd' {
			return fmt.Errorf("duplicate received %q, %v; want its own message", buf, err)
		}
		if err := d.Barrier(ctx); err != nil {
			return err
		}
		w1, err := c.Allocate(ctx, 8, WinOptions{})
		if err != nil {
			return err
		}
		w2, err := d.Allocate(ctx, 8, WinOptions{})
		if err != nil {
			return err
		}
		if w1.id == w2.id {
			return fmt.Errorf("windows on parent and duplicate share id %d", w1.id)
		}
		if err := w2.Free(ctx); err != nil {
			return err
		}
		if err := w1.Free(ctx); err != nil {
			return err
		}
		return d.Close()
	})
}
