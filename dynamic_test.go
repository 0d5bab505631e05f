package narma_test

// Dynamic windows: buffers attached and detached by their owners,
// addresses sent as bytes, resolved by origins, accessed in every
// synchronization mode; stale, forged and foreign addresses refused with
// nothing written.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/narma-rma/narma"
)

// sendAddr sends a to dest as bytes; recvAddr receives one from src.
func sendAddr(c *narma.Comm, a narma.Addr, dest int) error {
	b, err := a.MarshalBinary()
	if err != nil {
		return err
	}
	return c.Send(c.Context(), b, dest, 77)
}

func recvAddr(c *narma.Comm, src int) (narma.Addr, error) {
	var a narma.Addr
	b := make([]byte, narma.AddrSize)
	if _, err := c.Recv(c.Context(), b, src, 77); err != nil {
		return a, err
	}
	return a, a.UnmarshalBinary(b)
}

// TestDynamicWindow: each rank attaches a buffer and sends its address to
// the previous rank, which puts, accumulates and gets through it in every
// mode and strategy; the owner then attaches a larger buffer, sends that
// address and detaches the first: puts to the old address fail and leave
// the old buffer as it was, puts to the new one land.
func TestDynamicWindow(t *testing.T) {
	const n = 3
	forModes(t, func(t *testing.T, m mode, st narma.Strategy) {
		run(t, n, func(c *narma.Comm) error {
			ctx, me := c.Context(), c.Rank()
			next, prev := (me+1)%n, (me-1+n)%n
			w, err := narma.CreateDynamic[int64](ctx, c, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if len(w.Local()) != 0 {
				return fmt.Errorf("a dynamic window has %d local elements", len(w.Local()))
			}
			buf := narma.AllocMem[int64](4)
			fillPattern(buf, me)
			a, err := w.Attach(buf)
			if err != nil {
				return err
			}
			if a.Rank() != me || a.Len() != 32 {
				return fmt.Errorf("address of rank %d, %d bytes", a.Rank(), a.Len())
			}
			if err := sendAddr(c, a, prev); err != nil {
				return err
			}
			theirs, err := recvAddr(c, next)
			if err != nil {
				return err
			}
			disp, err := w.Resolve(theirs)
			if err != nil {
				return err
			}
			e := newEpoch(ctx, w, m, []int{next}, []int{prev})
			got := make([]int64, 2)
			if err := e.begin(); err != nil {
				return err
			}
			if err := w.Get(got, next, disp+2); err != nil {
				return err
			}
			if err := e.end(); err != nil {
				return err
			}
			if got[0] != pattern(next, 2) || got[1] != pattern(next, 3) {
				return fmt.Errorf("get through the address: %v, want rank %d's elements 2 and 3", got, next)
			}
			if err := e.begin(); err != nil {
				return err
			}
			if err := w.Put([]int64{-1}, next, disp); err != nil {
				return err
			}
			if err := w.Accumulate([]int64{10}, next, disp+1, narma.Sum); err != nil {
				return err
			}
			if err := e.end(); err != nil {
				return err
			}
			if err := e.finish(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if buf[0] != -1 || buf[1] != pattern(me, 1)+10 || buf[2] != pattern(me, 2) {
				return fmt.Errorf("attached buffer after a put and an accumulate: %v", buf)
			}
			// Beyond the buffer, and a displacement resolved for another
			// target: refused at the origin.
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			if err := w.Put([]int64{1, 2}, next, disp+3); !errors.Is(err, narma.ErrBounds) {
				return fmt.Errorf("put past the attached buffer: %v, want ErrBounds", err)
			}
			if n > 2 {
				if err := w.Put([]int64{1}, prev, disp); !errors.Is(err, narma.ErrBounds) {
					return fmt.Errorf("put to rank %d at rank %d's address: %v, want ErrBounds", prev, next, err)
				}
			}
			if err := w.Put([]int64{1}, next, 0); !errors.Is(err, narma.ErrBounds) {
				return fmt.Errorf("put at displacement 0 of a dynamic window: %v, want ErrBounds", err)
			}
			if err := w.PutNotify([]int64{1}, next, disp, narma.Signal(0, 1, narma.SignalAdd)); err == nil {
				return fmt.Errorf("a signal on a dynamic window was accepted")
			}
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
			// Grow: a new buffer, its address, the old one detached.
			big := narma.AllocMem[int64](8)
			b, err := w.Attach(big)
			if err != nil {
				return err
			}
			if err := sendAddr(c, b, prev); err != nil {
				return err
			}
			newTheirs, err := recvAddr(c, next)
			if err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if err := w.Detach(a); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			old := append([]int64(nil), buf...)
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			perr := w.Put([]int64{99}, next, disp)
			if perr == nil {
				perr = w.Flush(ctx, next)
			}
			if perr == nil {
				return fmt.Errorf("a put through a detached address succeeded")
			}
			nd, err := w.Resolve(newTheirs)
			if err != nil {
				return err
			}
			if err := w.Put([]int64{7}, next, nd+7); err != nil {
				return err
			}
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			if fmt.Sprint(buf) != fmt.Sprint(old) {
				return fmt.Errorf("detached buffer changed: %v, was %v", buf, old)
			}
			if big[7] != 7 {
				return fmt.Errorf("new buffer: %v", big)
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestDynamicNotify: notified puts through a resolved address reach a
// matching request and a counter at the owner.
func TestDynamicNotify(t *testing.T) {
	forSizes(t, func(t *testing.T, n int) {
		run(t, n, func(c *narma.Comm) error {
			ctx, me := c.Context(), c.Rank()
			w, err := narma.CreateDynamic[int32](ctx, c)
			if err != nil {
				return err
			}
			if err := w.SetCounters(ctx, 1); err != nil {
				return err
			}
			buf := narma.AllocMem[int32](n)
			a, err := w.Attach(buf)
			if err != nil {
				return err
			}
			req, err := w.NotifyInit(narma.AnySource, 3, n)
			if err != nil {
				return err
			}
			if err := req.Start(); err != nil {
				return err
			}
			// Every rank learns every rank's address.
			addrs := make([]byte, n*narma.AddrSize)
			mine, _ := a.MarshalBinary()
			if err := narma.Allgather(ctx, c, mine, addrs); err != nil {
				return err
			}
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			for r := range n {
				var ra narma.Addr
				if err := ra.UnmarshalBinary(addrs[r*narma.AddrSize : (r+1)*narma.AddrSize]); err != nil {
					return err
				}
				d, err := w.Resolve(ra)
				if err != nil {
					return err
				}
				if err := w.PutNotify([]int32{int32(me + 1)}, r, d+me, narma.Tag(3)); err != nil {
					return err
				}
				if err := w.PutNotify(nil, r, d, narma.Counter(0)); err != nil {
					return err
				}
			}
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
			if _, err := req.Wait(ctx); err != nil {
				return err
			}
			if err := w.WaitCounter(ctx, 0, uint64(n)); err != nil {
				return err
			}
			for r, v := range buf {
				if v != int32(r+1) {
					return fmt.Errorf("buffer %v", buf)
				}
			}
			if err := req.Free(); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

// TestDynamicErrors: Attach refuses memory not from AllocMem; Attach,
// Detach and Resolve refuse ordinary windows; Resolve refuses an address
// of another window, a forged key and a malformed encoding; Detach
// refuses an address it did not attach.
func TestDynamicErrors(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx, me := c.Context(), c.Rank()
		w, err := narma.CreateDynamic[int64](ctx, c)
		if err != nil {
			return err
		}
		other, err := narma.CreateDynamic[int64](ctx, c)
		if err != nil {
			return err
		}
		plain, err := narma.Allocate[int64](ctx, c, 1)
		if err != nil {
			return err
		}
		if _, err := w.Attach(make([]int64, 4)); !errors.Is(err, narma.ErrNotAllocated) {
			return fmt.Errorf("Attach of Go memory: %v, want ErrNotAllocated", err)
		}
		buf := narma.AllocMem[int64](2)
		if _, err := plain.Attach(buf); !errors.Is(err, narma.ErrInvalid) {
			return fmt.Errorf("Attach on an ordinary window: %v, want ErrInvalid", err)
		}
		a, err := other.Attach(buf)
		if err != nil {
			return err
		}
		if _, err := w.Resolve(a); !errors.Is(err, narma.ErrInvalid) {
			return fmt.Errorf("Resolve of another window's address: %v, want ErrInvalid", err)
		}
		if _, err := plain.Resolve(a); !errors.Is(err, narma.ErrInvalid) {
			return fmt.Errorf("Resolve on an ordinary window: %v, want ErrInvalid", err)
		}
		if err := w.Detach(a); !errors.Is(err, narma.ErrInvalid) {
			return fmt.Errorf("Detach of another window's address: %v, want ErrInvalid", err)
		}
		// A forged address: this window, the peer's rank, a key the
		// peer's transport never made.
		mineBuf := narma.AllocMem[int64](2)
		mine, err := w.Attach(mineBuf)
		if err != nil {
			return err
		}
		enc, _ := mine.MarshalBinary()
		peer := 1 - me
		var theirs narma.Addr
		got := make([]byte, narma.AddrSize)
		if err := c.Send(ctx, enc, peer, 1); err != nil {
			return err
		}
		if _, err := c.Recv(ctx, got, peer, 1); err != nil {
			return err
		}
		if err := theirs.UnmarshalBinary(got); err != nil {
			return err
		}
		forged := append([]byte(nil), got...)
		for i := narma.AddrSize - 32; i < narma.AddrSize; i++ {
			forged[i] ^= 0xA5
		}
		var fa narma.Addr
		if err := fa.UnmarshalBinary(forged); err != nil {
			return err
		}
		if d, err := w.Resolve(fa); err == nil {
			// A transport may check keys at the access: then the access
			// fails and writes nothing.
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			perr := w.Put([]int64{5}, peer, d)
			if perr == nil {
				perr = w.Flush(ctx, peer)
			}
			if err := w.UnlockAll(ctx); err != nil && perr == nil {
				perr = err
			}
			if perr == nil {
				return fmt.Errorf("a put through a forged address succeeded")
			}
		}
		// An empty access is no exception: displacement 0 names no
		// resolved address, whatever the strategy.
		if err := w.LockAll(ctx, 0); err != nil {
			return err
		}
		if err := w.PutNotify(nil, peer, 0, narma.Tag(3)); !errors.Is(err, narma.ErrBounds) {
			return fmt.Errorf("empty PutNotify at displacement 0 of a dynamic window: %v, want ErrBounds", err)
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		if err := fa.UnmarshalBinary(forged[:10]); !errors.Is(err, narma.ErrInvalid) {
			return fmt.Errorf("UnmarshalBinary of 10 bytes: %v, want ErrInvalid", err)
		}
		if err := w.Detach(theirs); !errors.Is(err, narma.ErrInvalid) {
			return fmt.Errorf("Detach of the peer's address: %v, want ErrInvalid", err)
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if mineBuf[0] != 0 || mineBuf[1] != 0 {
			return fmt.Errorf("a forged address wrote into an attached buffer: %v", mineBuf)
		}
		if err := plain.Free(ctx); err != nil {
			return err
		}
		if err := other.Free(ctx); err != nil {
			return err
		}
		return w.Free(ctx)
	})
}
