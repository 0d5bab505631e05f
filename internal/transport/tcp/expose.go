package tcp

import (
	"fmt"
	"sync"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// Exposure: the regions this endpoint serves, counted while requests use
// them so that Unexpose waits for those under way.

// exposed is a region this endpoint exposed. Operations that use its
// memory hold mu for reading, so Unexpose (which takes it for writing)
// returns only once none is running. Only a put streaming its payload
// into the memory waits for the network meanwhile: Unexpose interrupts
// it (withdraw). A get's reply is copied out before it is written
// (replyFrom). Nothing else takes mu for writing while the region is
// exposed.
type exposed struct {
	mu   sync.RWMutex
	mem  []byte
	dead bool

	smu         sync.Mutex   // guards the fields below
	users       map[int]bool // ranks that looked the region up
	streams     []*inConn    // readers streaming a put into mem
	withdrawing bool         // Unexpose began: no more users, streams stop
}

// Expose makes m accessible to the other ranks and returns its key. Keys
// are never reused by an endpoint.
func (e *Endpoint) Expose(m []byte) (transport.Key, error) {
	e.rmu.Lock()
	defer e.rmu.Unlock()
	if !e.open() {
		return transport.Key{}, transport.ErrClosed
	}
	e.lastKey++
	key := transport.WordKey(e.lastKey)
	e.regions[key] = &exposed{mem: m}
	return key, nil
}

// acquire returns the region key with its lock held for reading, or nil
// if there is no such region. The caller releases it with mu.RUnlock.
func (e *Endpoint) acquire(key transport.Key) *exposed {
	e.rmu.RLock()
	x := e.regions[key]
	e.rmu.RUnlock()
	if x == nil {
		return nil
	}
	x.mu.RLock()
	if x.dead {
		x.mu.RUnlock()
		return nil
	}
	return x
}

// Unexpose withdraws the region key. Operations on it that arrive later
// are refused (the origin hears of it at its next Flush), and before
// Unexpose returns, every rank that holds a handle on the region has been
// told, so its later operations through the handle fail at once with
// transport.ErrNoRegion (a rank that does not answer within the peer
// timeout is not waited for further). A rank whose lookup of the region
// was answered but whose Region call had not returned yet is told too:
// that call fails with transport.ErrNoRegion. Operations on the region
// in progress finish first, except a put whose payload is still
// arriving: Unexpose interrupts it, and the rest of its payload is
// dropped and the put refused, so that a slow or stalled peer cannot
// hold Unexpose. A get's reply is copied out of the region before it is
// written, so a peer that stops reading its replies cannot hold it
// either; no byte of the region is read once Unexpose has returned.
func (e *Endpoint) Unexpose(key transport.Key) error {
	e.rmu.Lock()
	if !e.open() {
		e.rmu.Unlock()
		return transport.ErrClosed
	}
	x := e.regions[key]
	delete(e.regions, key)
	e.rmu.Unlock()
	if x == nil {
		return fmt.Errorf("tcp: unexpose key %v at rank %d: %w", key, e.rank, transport.ErrNoRegion)
	}
	users := x.withdraw()
	x.mu.Lock()
	x.dead = true
	x.mu.Unlock()
	e.withdrawHandles(e.rank, key)
	var waits []*waiter
	for r := range users {
		p := e.peers[r]
		o, err := p.conn()
		if err != nil {
			continue
		}
		w := newWaiter()
		if o.send(&header{kind: KindWithdraw, key: keyWord(key)}, nil, &call{w: w}) == nil {
			waits = append(waits, w)
		}
	}
	timer := time.NewTimer(e.timeout)
	defer timer.Stop()
	for _, w := range waits {
		select {
		case <-w.ch:
		case <-timer.C:
			return nil
		}
	}
	return nil
}

// keyWord returns the word a frame carries for key: this transport's keys
// are one word (transport.WordKey), and Region refuses any other.
func keyWord(key transport.Key) uint64 {
	w, _ := key.AsWord()
	return w
}
