package shm

import (
	"context"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/sys"
	"github.com/narma-rma/narma/internal/transport"
)

// Notices and flushes: every operation is complete at the target when it
// returns, so a flush only checks the peer; a notice goes through the
// target's ring and rings its doorbell if someone sleeps there.

// Flush reports a closed endpoint, a bad rank, a failed peer or ctx's
// error: every operation is complete at its target when it returns.
func (e *Endpoint) Flush(ctx context.Context, target int) error {
	if err := e.peerErr(target); err != nil {
		return err
	}
	return ctx.Err()
}

// FlushAll reports a closed endpoint or ctx's error: every operation is
// complete at its target when it returns.
func (e *Endpoint) FlushAll(ctx context.Context) error {
	if e.closed.Load() {
		return transport.ErrClosed
	}
	return ctx.Err()
}

// ring wakes target's progress goroutine if it sleeps on its doorbell.
func (e *Endpoint) ring(t *ctl) {
	if t.hdr.sleepers.Load() != 0 {
		t.hdr.bell.Add(1)
		sys.FutexWake(&t.hdr.bell)
	}
}

// WakeRank wakes rank's waiters that sleep on its doorbell, if any
// (transport.Waker), and not its progress goroutine alone (header.waiters);
// a bad rank is ignored. The caller's stores before it are visible to a
// waiter that registers to sleep, before its last look: by the waiter's
// global barrier (membarrier) where rank's waiters run one, else by a
// full barrier here, between them and the look at the waiters.
func (e *Endpoint) WakeRank(rank int) {
	if uint(rank) >= uint(len(e.peers)) || e.peers[rank] == nil {
		return
	}
	t := e.peers[rank]
	if !t.relaxed {
		var fence atomic.Uint32
		fence.Add(1) // a locked instruction: a full barrier
	}
	if t.hdr.waiters.Load() != 0 {
		t.hdr.bell.Add(1)
		sys.FutexWake(&t.hdr.bell)
	}
}

// notify queues notice n about the region whose key is the word key at
// target, waiting while the target's ring is full.
func (e *Endpoint) notify(target int, key uint64, n transport.Notice) error {
	t := e.peers[target]
	raceRelease()
	for spin := 0; ; spin++ {
		if t.tryPush(e.rank, key, n) {
			e.ring(t)
			return nil
		}
		e.ring(t)
		if err := e.backoff(target, spin); err != nil {
			return err
		}
	}
}
