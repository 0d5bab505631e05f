package shmem

import (
	"context"
	"fmt"
	"testing"

	"github.com/narma-rma/narma"
)

// BenchmarkPingPong is the ping-pong of Dinan et al.'s Fig. 3 on the
// in-process transport: two PEs take turns sending a message of size
// bytes to each other (the sender of one iteration receives the next).
// One op is one message, learnt of by its receiver: ns/op is the half
// round-trip time. Variants, on the same runtime:
//
//   - put-fence-flag (the paper's baseline): Put, Fence, AtomicInc of a
//     flag at the receiver, which waits with WaitUntil(flag != 0) and
//     resets the flag;
//   - put-ct (counting puts): PutCT; the receiver waits with CT.Wait(1)
//     and resets the count with CT.Set(0);
//   - put-signal (OpenSHMEM 1.5): PutSignal setting the signal word to the
//     iteration number; the receiver waits with SignalWaitUntil.
//
// Every message is checked by its receiver (its first and last bytes).
func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20} {
		for _, v := range []struct {
			name string
			send func(ctx context.Context, p *pingPong, i int) error
			recv func(ctx context.Context, p *pingPong, i int) error
		}{
			{"put-fence-flag", sendFlag, recvFlag},
			{"put-ct", sendCT, recvCT},
			{"put-signal", sendSignal, recvSignal},
		} {
			b.Run(fmt.Sprintf("%dB/%s", size, v.name), func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				err := narma.Run(2, func(c *narma.Comm) error {
					ctx := c.Context()
					p, err := newPingPong(ctx, c, size)
					if err != nil {
						return err
					}
					if err := p.w.BarrierAll(ctx); err != nil {
						return err
					}
					me := p.w.MyPE()
					got := p.rcv.Local(p.w)
					if me == 0 {
						b.ResetTimer()
					}
					for i := 0; i < b.N; i++ {
						var err error
						if i%2 == me {
							p.snd[0], p.snd[size-1] = byte(i), byte(i+1)
							err = v.send(ctx, p, i)
						} else {
							err = v.recv(ctx, p, i)
							if err == nil {
								if got[0] != byte(i) || got[size-1] != byte(i+1) {
									err = fmt.Errorf("PE %d, message %d: got %d...%d", me, i, got[0], got[size-1])
								}
							}
						}
						if err != nil {
							return err
						}
					}
					if me == 0 {
						b.StopTimer()
					}
					return p.w.Finalize(ctx)
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// pingPong is one PE's state in BenchmarkPingPong.
type pingPong struct {
	w     *World
	peer  int
	snd   []byte      // the message, in private memory
	rcv   Sym[byte]   // where the partner's message lands
	flag  Sym[int32]  // baseline: the flag
	local []int32     // baseline: the flag's local copy
	ct    *CT         // counting puts
	sig   Sym[uint64] // put-with-signal: the signal word
}

func newPingPong(ctx context.Context, c *narma.Comm, size int) (*pingPong, error) {
	w, err := Init(ctx, c, WithHeapSize(size+1024))
	if err != nil {
		return nil, err
	}
	p := &pingPong{w: w, peer: 1 - w.MyPE(), snd: make([]byte, size)}
	if p.rcv, err = Alloc[byte](ctx, w, size); err != nil {
		return nil, err
	}
	if p.flag, err = Alloc[int32](ctx, w, 1); err != nil {
		return nil, err
	}
	p.local = p.flag.Local(w)
	if p.sig, err = Alloc[uint64](ctx, w, 1); err != nil {
		return nil, err
	}
	if p.ct, err = CTCreate(ctx, w); err != nil {
		return nil, err
	}
	return p, nil
}

func sendFlag(ctx context.Context, p *pingPong, _ int) error {
	if err := Put(ctx, p.w, p.rcv, p.snd, p.peer); err != nil {
		return err
	}
	if err := p.w.Fence(ctx); err != nil {
		return err
	}
	return AtomicInc(ctx, p.w, p.flag, p.peer)
}

func recvFlag(ctx context.Context, p *pingPong, _ int) error {
	if err := WaitUntil(ctx, p.w, p.flag, CmpNE, 0); err != nil {
		return err
	}
	p.local[0] = 0 // the paper's "flag = 0": nobody updates it now
	return nil
}

func sendCT(ctx context.Context, p *pingPong, _ int) error {
	return PutCT(ctx, p.ct, p.rcv, p.snd, p.peer)
}

func recvCT(ctx context.Context, p *pingPong, _ int) error {
	if err := p.ct.Wait(ctx, 1); err != nil {
		return err
	}
	return p.ct.Set(0)
}

func sendSignal(ctx context.Context, p *pingPong, i int) error {
	return PutSignal(ctx, p.w, p.rcv, p.snd, p.sig, uint64(i+1), SignalSet, p.peer)
}

func recvSignal(ctx context.Context, p *pingPong, i int) error {
	_, err := SignalWaitUntil(ctx, p.w, p.sig, CmpGE, uint64(i+1))
	return err
}
