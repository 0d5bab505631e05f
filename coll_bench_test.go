package narma_test

// Collectives over 16 goroutine ranks against the same operations built
// by hand from narma's point-to-point calls, as a program without
// collectives would write them (recursive doubling, a binomial tree, a
// dissemination barrier, everybody sending to everybody): the issue's
// criterion is that the library's are no slower.

import (
	"context"
	"fmt"
	"testing"

	"github.com/narma-rma/narma"
)

// collRanks is the job size of the collective benchmarks.
const collRanks = 16

// collCase is one collective, by the library and by hand, on n float64.
type collCase struct {
	name string
	lib  func(ctx context.Context, c *narma.Comm, in, out, tmp []float64) error
	hand func(ctx context.Context, c *narma.Comm, in, out, tmp []float64) error
	// outLen is the length of out for n elements in.
	outLen func(n int) int
}

var collCases = []collCase{
	{"Allreduce",
		func(ctx context.Context, c *narma.Comm, in, out, _ []float64) error {
			return narma.Allreduce(ctx, c, in, out, narma.Sum)
		}, handAllreduce, func(n int) int { return n }},
	{"Bcast",
		func(ctx context.Context, c *narma.Comm, _, out, _ []float64) error {
			return narma.Bcast(ctx, c, out, 0)
		}, handBcast, func(n int) int { return n }},
	{"Allgather",
		func(ctx context.Context, c *narma.Comm, in, out, _ []float64) error {
			return narma.Allgather(ctx, c, in, out)
		}, handAllgather, func(n int) int { return n * collRanks }},
	{"Barrier",
		func(ctx context.Context, c *narma.Comm, _, _, _ []float64) error { return c.Barrier(ctx) },
		handBarrier, func(n int) int { return n }},
}

// BenchmarkCollectives16: each collective at 8 B and 4 KiB per rank,
// "lib" and "hand" side by side; the time is per call, on rank 0.
func BenchmarkCollectives16(b *testing.B) {
	for _, cc := range collCases {
		for _, size := range []int{8, 4 << 10} {
			if cc.name == "Barrier" && size > 8 {
				continue
			}
			for _, impl := range []string{"lib", "hand"} {
				f := cc.lib
				if impl == "hand" {
					f = cc.hand
				}
				b.Run(fmt.Sprintf("%s/%dB/%s", cc.name, size, impl), func(b *testing.B) {
					benchColl(b, size/8, cc.outLen(size/8), f)
				})
			}
		}
	}
}

func benchColl(b *testing.B, n, outN int, f func(ctx context.Context, c *narma.Comm, in, out, tmp []float64) error) {
	err := narma.Run(collRanks, func(c *narma.Comm) error {
		ctx := c.Context()
		in, out, tmp := make([]float64, n), make([]float64, outN), make([]float64, outN)
		for i := range in {
			in[i] = float64(c.Rank() + i)
		}
		for range 10 { // warm up
			if err := f(ctx, c, in, out, tmp); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			b.ResetTimer()
		}
		for range b.N {
			if err := f(ctx, c, in, out, tmp); err != nil {
				return err
			}
		}
		if c.Rank() == 0 {
			b.StopTimer()
		}
		return c.Barrier(ctx)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// The hand-built collectives: tags of their own, user messages on c.

const handTag = 900

// handAllreduce: recursive doubling (collRanks is a power of two), the
// lower rank's values on the left of each sum.
func handAllreduce(ctx context.Context, c *narma.Comm, in, out, tmp []float64) error {
	me := c.Rank()
	copy(out, in)
	for k := 1; k < c.Size(); k <<= 1 {
		peer := me ^ k
		if err := narma.Send(ctx, c, out, peer, handTag); err != nil {
			return err
		}
		if _, err := narma.Recv(ctx, c, tmp[:len(out)], peer, handTag); err != nil {
			return err
		}
		for i := range out {
			if peer < me {
				out[i] = tmp[i] + out[i]
			} else {
				out[i] += tmp[i]
			}
		}
	}
	return nil
}

// handBcast: a binomial tree from rank 0.
func handBcast(ctx context.Context, c *narma.Comm, _, out, _ []float64) error {
	me, n := c.Rank(), c.Size()
	mask := 1
	for mask < n {
		if me&mask != 0 {
			if _, err := narma.Recv(ctx, c, out, me-mask, handTag); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if me+mask < n && me&(mask-1) == 0 && me&mask == 0 {
			if err := narma.Send(ctx, c, out, me+mask, handTag); err != nil {
				return err
			}
		}
	}
	return nil
}

// handAllgather: every rank sends its block to every other.
func handAllgather(ctx context.Context, c *narma.Comm, in, out, _ []float64) error {
	me, n, b := c.Rank(), c.Size(), len(in)
	for d := 1; d < n; d++ {
		if err := narma.Send(ctx, c, in, (me+d)%n, handTag); err != nil {
			return err
		}
	}
	copy(out[me*b:], in)
	for d := 1; d < n; d++ {
		src := (me - d + n) % n
		if _, err := narma.Recv(ctx, c, out[src*b:(src+1)*b], src, handTag); err != nil {
			return err
		}
	}
	return nil
}

// handBarrier: dissemination with empty messages.
func handBarrier(ctx context.Context, c *narma.Comm, _, _, _ []float64) error {
	me, n := c.Rank(), c.Size()
	for k := 1; k < n; k <<= 1 {
		if err := c.Send(ctx, nil, (me+k)%n, handTag+k); err != nil {
			return err
		}
		if _, err := c.Recv(ctx, nil, (me-k+n)%n, handTag+k); err != nil {
			return err
		}
	}
	return nil
}

// TestHandCollectives: the hand-built collectives of the benchmark
// compute what the library's do (a benchmark of a wrong baseline would
// prove nothing).
func TestHandCollectives(t *testing.T) {
	runLocal(t, collRanks, func(c *narma.Comm) error {
		ctx := c.Context()
		for _, cc := range collCases {
			for _, n := range []int{1, 5} {
				in := make([]float64, n)
				for i := range in {
					in[i] = float64(c.Rank()*10 + i)
				}
				lib, hand := make([]float64, cc.outLen(n)), make([]float64, cc.outLen(n))
				tmp := make([]float64, cc.outLen(n))
				if c.Rank() == 0 {
					for i := range lib {
						lib[i], hand[i] = float64(i+1), float64(i+1)
					}
				}
				if err := cc.lib(ctx, c, in, lib, tmp); err != nil {
					return err
				}
				if err := cc.hand(ctx, c, in, hand, tmp); err != nil {
					return err
				}
				if fmt.Sprint(lib) != fmt.Sprint(hand) {
					return fmt.Errorf("%s of %d: library %v, by hand %v", cc.name, n, lib, hand)
				}
			}
		}
		return nil
	})
}
