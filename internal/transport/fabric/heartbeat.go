//go:build fabric

package fabric

import (
	"fmt"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// The heartbeat finds peers that died without a word: a process killed
// on another host, a host or link gone. A dead peer's provider answers
// nothing, so an operation to it may never complete and a rank that
// only waits for its notices would wait forever.
//
// Every Timeout/5 the heartbeat visits each peer this endpoint has
// exchanged anything with. A peer heard from since the last visit (a
// message or a notice in CQ data, which its narma issued) is alive; the
// completion of an operation to it is not enough, since a provider may
// acknowledge data for a process that no longer runs its progress. One
// not heard from gets a ping, which its progress answers. A peer silent
// for longer than Timeout fails with ErrPeer, and so does one that takes
// no ping for that long (a closed endpoint, on tcp;ofi_rxm) or whose
// ping fails. The traffic is at most one small message per visit to
// each peer this rank talks to, none to a peer that sends anyway.

// beat is the heartbeat's state of one peer.
type beat struct {
	heardAt time.Time // when a visit last found the peer heard from
}

// heard notes that p showed signs of life.
func (p *peer) heard() {
	if !p.alive.Load() {
		p.alive.Store(true)
	}
	if !p.known.Load() {
		p.known.Store(true)
	}
}

// heartbeat visits the peers until the endpoint closes.
func (e *Endpoint) heartbeat() {
	defer close(e.beatDone)
	every := max(e.timeout/5, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	beats := make([]beat, e.size)
	now := time.Now()
	for i := range beats {
		beats[i].heardAt = now
	}
	for {
		select {
		case <-e.beatStop:
			return
		case now = <-t.C:
		}
		for _, p := range e.peers {
			if p.rank != e.rank && p.known.Load() && p.err() == nil {
				e.visit(p, &beats[p.rank], now)
			}
		}
	}
}

// visit checks p at time now.
func (e *Endpoint) visit(p *peer, b *beat, now time.Time) {
	if p.alive.Swap(false) {
		b.heardAt = now
		return
	}
	if silent := now.Sub(b.heardAt); silent > e.timeout {
		// This process may have been the one that stalled (a long GC,
		// an oversubscribed host): read what arrived first.
		e.Poll()
		if p.alive.Swap(false) {
			b.heardAt = now
			return
		}
		e.fail(p, fmt.Errorf("fabric: rank %d silent for %v: %w", p.rank, silent.Round(time.Millisecond), transport.ErrPeer))
		e.dropQueue(p, p.err())
		return
	}
	// Not ordered after data (it may still queue behind a notice).
	_ = e.sendMsg(p, &msg{kind: msgPing}, nil, nil, false)
}
