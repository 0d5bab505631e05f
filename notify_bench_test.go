package narma_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// Target-side costs of matched notifications, the quantities of Belli and
// Hoefler's model (their figures on a Cray XC30: init 0.07 µs, start
// 0.008 µs, free 0.04 µs, receive overhead 0.07 µs).

// BenchmarkNotifyInitFree: creating and freeing a notification request.
func BenchmarkNotifyInitFree(b *testing.B) {
	b.ReportAllocs()
	onRank0(b, 1, nil, func(ctx context.Context, w *narma.Win[int64]) error {
		for i := 0; i < b.N; i++ {
			r, err := w.NotifyInit(1, 7, 1)
			if err != nil {
				return err
			}
			if err := r.Free(); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkNotifyTest: Start and a successful Test with one matching
// notice waiting (the paper's start plus receive overhead), with active
// requests for other tags and unrelated notices queued, to show what
// matching costs. (Start alone cannot be timed in a loop: starting an
// active request is refused.)
func BenchmarkNotifyTest(b *testing.B) {
	for _, active := range []int{1, 4, 64} {
		for _, unexpected := range []int{0, 100, 10000} {
			b.Run(fmt.Sprintf("active=%d/unexpected=%d", active, unexpected), func(b *testing.B) {
				benchNotifyTest(b, active, unexpected)
			})
		}
	}
}

func benchNotifyTest(b *testing.B, active, unexpected int) {
	const tag, batch = 7, 256
	onRank0(b, 1, nil, func(ctx context.Context, w *narma.Win[int64]) error {
		b.StopTimer()
		if err := w.Lock(ctx, narma.Shared, 0, 0); err != nil {
			return err
		}
		// Notices to self stand in for a remote origin's: the target's
		// work is the same, and the origin's is kept out of the timing.
		for i := 0; i < unexpected; i++ {
			if err := w.PutNotify(nil, 0, 0, narma.Tag(1000+i%50)); err != nil {
				return err
			}
		}
		var others []*narma.Request
		for i := 1; i < active; i++ {
			r, err := w.NotifyInit(0, 2000+i, 1) // never matched
			if err != nil {
				return err
			}
			if err := r.Start(); err != nil {
				return err
			}
			others = append(others, r)
		}
		r, err := w.NotifyInit(0, tag, 1)
		if err != nil {
			return err
		}
		// Bring the unrelated notices into the matching engine.
		drain, err := w.NotifyInit(0, 9999, 1)
		if err != nil {
			return err
		}
		if err := drain.Start(); err != nil {
			return err
		}
		if _, _, err := drain.Test(); err != nil {
			return err
		}
		if err := drain.Free(); err != nil {
			return err
		}
		b.ReportAllocs()
		for done := 0; done < b.N; done += batch {
			k := min(batch, b.N-done)
			b.StopTimer()
			for i := 0; i < k; i++ {
				if err := w.PutNotify(nil, 0, 0, narma.Tag(tag)); err != nil {
					return err
				}
			}
			b.StartTimer()
			for i := 0; i < k; i++ {
				if err := r.Start(); err != nil {
					return err
				}
				if _, ok, err := r.Test(); !ok || err != nil {
					return fmt.Errorf("Test: ok=%v err=%v", ok, err)
				}
			}
		}
		b.StopTimer()
		for _, o := range append(others, r) {
			if err := o.Free(); err != nil {
				return err
			}
		}
		return w.Unlock(ctx, 0)
	})
}

// BenchmarkProducerConsumer is the ping-pong of the paper's Fig. 3 on the
// in-process transport: a message of size bytes goes to the partner, who
// learns of its arrival and answers with a message of the same size. The
// time per operation is one round trip. Each rank has one buffer, as in
// the paper's Listing 1 and in a one-buffer send/recv ping-pong: the
// one-sided variants put from and into window memory, the two-sided one
// receives into the buffer it sends from. Variants, on the same runtime:
//
//   - put-notify: one notified put each way (Notified Access);
//   - send-recv: two-sided messages;
//   - put-flag: put, flush, then a flag written with an atomic REPLACE and
//     flushed; the partner polls the flag with FetchAndOp(NO_OP).
func BenchmarkProducerConsumer(b *testing.B) {
	for _, size := range []int{8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20} {
		for _, v := range []struct {
			name string
			fn   pingPong
		}{
			{"put-notify", pcNotify},
			{"send-recv", pcSendRecv},
			{"put-flag", pcFlag},
		} {
			b.Run(fmt.Sprintf("%dB/%s", size, v.name), func(b *testing.B) {
				b.SetBytes(int64(2 * size))
				b.ReportAllocs()
				n := size / 8
				err := narma.Run(2, func(c *narma.Comm) error {
					ctx := c.Context()
					// Data for each direction, plus a flag word.
					w, err := narma.Allocate[int64](ctx, c, n+1)
					if err != nil {
						return err
					}
					if err := w.LockAll(ctx, 0); err != nil {
						return err
					}
					if err := c.Barrier(ctx); err != nil {
						return err
					}
					if c.Rank() == 0 {
						b.ResetTimer()
					}
					buf := make([]int64, n) // the message buffer of send-recv
					if v.name != "send-recv" {
						buf = w.Local()[:n] // the one-sided variants send their window
					}
					err = v.fn(c, w, buf, b.N)
					if c.Rank() == 0 {
						b.StopTimer()
					}
					if err != nil {
						return err
					}
					if err := w.UnlockAll(ctx); err != nil {
						return err
					}
					if err := c.Barrier(ctx); err != nil {
						return err
					}
					return w.Free(ctx)
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// pingPong runs iters round trips of a producer-consumer variant between
// ranks 0 and 1; buf is the message.
type pingPong func(c *narma.Comm, w *narma.Win[int64], buf []int64, iters int) error

func pcNotify(c *narma.Comm, w *narma.Win[int64], buf []int64, iters int) error {
	return notifyLoop(c, w, buf, iters, true)
}

// pcNotifyNoFlush is pcNotify without the flush after each put: the
// partner's answer is the proof that the put arrived, so nothing else
// travels. The window must use the Immediate strategy (a deferred lock
// moves nothing before a flush).
func pcNotifyNoFlush(c *narma.Comm, w *narma.Win[int64], buf []int64, iters int) error {
	return notifyLoop(c, w, buf, iters, false)
}

// notifyLoop is the notified-put ping-pong, flushing each put if flush.
func notifyLoop(c *narma.Comm, w *narma.Win[int64], buf []int64, iters int, flush bool) error {
	ctx := c.Context()
	peer := 1 - c.Rank()
	r, err := w.NotifyInit(peer, 1, 1)
	if err != nil {
		return err
	}
	defer r.Free()
	for i := 0; i < iters; i++ {
		if c.Rank() == 1 {
			if err := r.Start(); err != nil {
				return err
			}
			if _, err := r.Wait(ctx); err != nil {
				return err
			}
		}
		if err := w.PutNotify(buf, peer, 0, narma.Tag(1)); err != nil {
			return err
		}
		if flush {
			if err := w.Flush(ctx, peer); err != nil {
				return err
			}
		}
		if c.Rank() == 0 {
			if err := r.Start(); err != nil {
				return err
			}
			if _, err := r.Wait(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func pcSendRecv(c *narma.Comm, _ *narma.Win[int64], buf []int64, iters int) error {
	ctx := c.Context()
	peer := 1 - c.Rank()
	msg := narma.Bytes(buf)
	for i := 0; i < iters; i++ {
		if c.Rank() == 1 {
			if _, err := c.Recv(ctx, msg, peer, 1); err != nil {
				return err
			}
		}
		if err := c.Send(ctx, msg, peer, 1); err != nil {
			return err
		}
		if c.Rank() == 0 {
			if _, err := c.Recv(ctx, msg, peer, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

func pcFlag(c *narma.Comm, w *narma.Win[int64], buf []int64, iters int) error {
	return flagLoop(c, w, buf, iters, false)
}

// pcFlagLean is put-flag with the fewest messages: put, flush, then the
// flag written with a non-fetching accumulate (REPLACE) and not flushed
// (the partner's answer shows it arrived): three messages and the flush's
// answer per message.
func pcFlagLean(c *narma.Comm, w *narma.Win[int64], buf []int64, iters int) error {
	return flagLoop(c, w, buf, iters, true)
}

// flagLoop is the put-flag ping-pong, lean or not. Its waiter yields
// between looks at its flag; the lean one, for TCP, only for 50 us, then
// it sleeps a microsecond between looks (which lets Go's scheduler poll
// the network).
func flagLoop(c *narma.Comm, w *narma.Win[int64], buf []int64, iters int, lean bool) error {
	ctx := c.Context()
	me, peer := c.Rank(), 1-c.Rank()
	flag := len(buf) // displacement of the flag word
	// Flags count round trips over every call on the window: both ranks'
	// flags hold the same count when a call starts (the callers
	// synchronize between calls).
	var seen int64
	if err := w.FetchAndOp(0, &seen, me, flag, narma.NoOp); err != nil {
		return err
	}
	if err := w.Flush(ctx, me); err != nil {
		return err
	}
	base := seen
	// Both have read their flag before either writes the other's:
	// otherwise rank 1 could read a flag rank 0 already bumped and wait
	// for one bump too many.
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	wait := func() error {
		var v int64
		start := time.Now()
		for polls := 0; ; polls++ {
			if err := w.FetchAndOp(0, &v, me, flag, narma.NoOp); err != nil {
				return err
			}
			if err := w.Flush(ctx, me); err != nil {
				return err
			}
			if v > seen {
				seen = v
				return nil
			}
			// The lean variant (for TCP) yields for 50 us, then sleeps
			// between looks: goroutines that only yield keep Go's
			// scheduler from polling the network (it does so when
			// nothing else is runnable, or every 10 ms), so the flag
			// would take that long to arrive.
			if !lean || polls < 64 || time.Since(start) < 50*time.Microsecond {
				runtime.Gosched()
			} else {
				time.Sleep(time.Microsecond)
			}
		}
	}
	for i := 0; i < iters; i++ {
		if me == 1 {
			if err := wait(); err != nil {
				return err
			}
		}
		if err := w.Put(buf, peer, 0); err != nil {
			return err
		}
		if err := w.Flush(ctx, peer); err != nil {
			return err
		}
		if lean {
			if err := w.Accumulate([]int64{base + int64(i+1)}, peer, flag, narma.Replace); err != nil {
				return err
			}
		} else {
			var old int64
			if err := w.FetchAndOp(base+int64(i+1), &old, peer, flag, narma.Replace); err != nil {
				return err
			}
			if err := w.Flush(ctx, peer); err != nil {
				return err
			}
		}
		if me == 0 {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenchmarkPutNotifyStream is the origin's side of a stream of 8-byte
// notified puts (the paper's o_s, as narmabench loggp measures it): rank
// 0 issues b.N PutNotify calls with a Counter notice to rank 1 in one
// LockAll epoch, rank 1 waits until its counter has seen them all. Run
// it over shared memory with NARMA_TRANSPORT=shm.
func BenchmarkPutNotifyStream(b *testing.B) {
	b.ReportAllocs()
	err := narma.Run(2, func(c *narma.Comm) error {
		ctx := c.Context()
		const slots = 64
		w, err := narma.Allocate[int64](ctx, c, slots)
		if err != nil {
			return err
		}
		if err := w.SetCounters(ctx, 1); err != nil {
			return err
		}
		if err := w.LockAll(ctx, 0); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			b.ResetTimer()
			v := []int64{0}
			for i := 0; i < b.N; i++ {
				v[0] = int64(i)
				if err := w.PutNotify(v, 1, i%slots, narma.Counter(0)); err != nil {
					return err
				}
			}
			if err := w.FlushLocal(ctx, 1); err != nil {
				return err
			}
			b.StopTimer()
		} else if err := w.WaitCounter(ctx, 0, uint64(b.N)); err != nil {
			return err
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		return w.Free(ctx)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkNotifySelf is the whole software cost of a producer-consumer
// exchange, both sides on one rank: Start a request, PutNotify 8 bytes
// with its tag to this rank, Flush, Wait for the match. No cache line
// moves between cores, so what it shows is the instructions (and stalls
// inside one core) that the ping-pong's half round trip adds to the
// machine's floor. Run it over shared memory with NARMA_TRANSPORT=shm.
func BenchmarkNotifySelf(b *testing.B) {
	onRank0(b, 64, nil, func(ctx context.Context, w *narma.Win[int64]) error {
		if err := w.LockAll(ctx, 0); err != nil {
			return err
		}
		r, err := w.NotifyInit(0, 1, 1)
		if err != nil {
			return err
		}
		v := []int64{1}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := r.Start(); err != nil {
				return err
			}
			v[0] = int64(i)
			// Four areas a line apart, as the ping-pong's.
			if err := w.PutNotify(v, 0, (i%4)*8, narma.Tag(1)); err != nil {
				return err
			}
			if err := w.Flush(ctx, 0); err != nil {
				return err
			}
			if _, err := r.Wait(ctx); err != nil {
				return err
			}
		}
		b.StopTimer()
		if err := r.Free(); err != nil {
			return err
		}
		return w.UnlockAll(ctx)
	})
}

// BenchmarkSendRecvSelf is the whole software cost of a two-sided
// exchange of 8 bytes, both sides on one rank: Send to this rank, then
// Recv it. As BenchmarkNotifySelf, it shows the instructions a ping-pong's
// half round trip adds to the machine's floor. Run it over shared memory
// with NARMA_TRANSPORT=shm.
func BenchmarkSendRecvSelf(b *testing.B) {
	err := narma.Run(2, func(c *narma.Comm) error {
		if c.Rank() != 0 {
			return nil
		}
		ctx := c.Context()
		out, in := []int64{1}, []int64{0}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			out[0] = int64(i)
			if err := narma.Send(ctx, c, out, 0, 1); err != nil {
				return err
			}
			if _, err := narma.Recv(ctx, c, in, 0, 1); err != nil {
				return err
			}
		}
		b.StopTimer()
		if in[0] != int64(b.N-1) {
			return fmt.Errorf("received %d, want %d", in[0], b.N-1)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
