package shm

import (
	"os"
	"runtime"
	"time"

	"github.com/narma-rma/narma/internal/sys"
)

// The background progress goroutine and the watch on peers.

// progress drains in the background, so that handlers run even when
// nobody polls, and watches the peers. While some goroutine of this
// process polls (Poll sets polled, which it clears) or drains, it naps on
// a timer, so that producers need not wake it; otherwise it sleeps on the
// doorbell, which producers ring. (Were it to sleep while another
// goroutine drains, an arrival published after that one's last look and
// before this one registered would wait for the end of the sleep, which
// no producer ends: it found nobody to ring for.)
func (e *Endpoint) progress() {
	defer e.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	nextCheck := time.Now().Add(e.interval)
	hdr := e.own.hdr
	for {
		select {
		case <-e.done:
			return
		default:
		}
		if e.draining.tryLock() {
			did := e.drain(nil, pollNotices)
			e.draining.unlock()
			if did {
				continue
			}
		}
		if now := time.Now(); now.After(nextCheck) {
			e.checkPeers()
			nextCheck = now.Add(e.interval)
		}
		if e.polled.Swap(false) || e.draining.held() {
			timer.Reset(2 * time.Millisecond)
			select {
			case <-timer.C:
			case <-e.kick:
				e.polled.Store(false)
				if !timer.Stop() {
					<-timer.C
				}
			case <-e.done:
				return
			}
			continue
		}
		b := hdr.bell.Load()
		hdr.sleepers.Add(1)
		if !e.lastLook() {
			hdr.sleepers.Add(^uint32(0))
			runtime.Gosched()
			continue
		}
		if e.draining.held() {
			// Another goroutine drains, and may have made its last
			// look before an arrival whose producer found nobody
			// registered to ring for: look again once it is done,
			// rather than sleep through that arrival (the model in
			// model/ring.pml finds that lost wake-up).
			hdr.sleepers.Add(^uint32(0))
			for e.draining.held() && !e.closed.Load() {
				runtime.Gosched()
			}
			continue
		}
		if e.pending() {
			hdr.sleepers.Add(^uint32(0))
			continue
		}
		runtime.Gosched()
		e.asleep.Store(uint64(b) + 1)
		sys.FutexWait(&hdr.bell, b, e.interval)
		if e.asleep.CompareAndSwap(uint64(b)+1, 0) {
			// Not taken over by a poller (poll): leave the sleepers.
			hdr.sleepers.Add(^uint32(0))
		}
		select {
		case <-e.kick: // stale: we are about to drain anyway
		default:
		}
	}
}

// lastLook is called by a sleeper after it registered (hdr.sleepers) and
// before it looks for arrivals a last time (in Prepare, for the engine's
// waiters, whose Poll after it is that look): producers that publish with
// release stores (ctl.relaxed) rely on it to make their stores visible
// to that look, or their load of hdr.sleepers see the registration. It
// reports false if the barrier failed: the caller must then not sleep.
func (e *Endpoint) lastLook() bool {
	return !e.barrier || sys.GlobalBarrier()
}

// checkPeers looks for peers that closed or whose process is gone, and
// reports the failed ones to the failure handler.
func (e *Endpoint) checkPeers() {
	me := os.Getpid()
	for r, p := range e.peers {
		if r == e.rank || e.peerState[r].Load() != peerOK {
			continue
		}
		// The progress goroutine and a drainer waiting for a peer
		// (awaitOrigin) may check at once: whoever changes the state
		// reports it.
		switch p.hdr.state.Load() {
		case stateClosed:
			e.peerState[r].CompareAndSwap(peerOK, peerClosed)
			continue
		case stateOpen:
			if e.pids[r] == me || sys.Alive(e.pids[r]) {
				continue
			}
		}
		if p.hdr.state.Load() == stateClosed {
			e.peerState[r].CompareAndSwap(peerOK, peerClosed)
			continue
		}
		if !e.peerState[r].CompareAndSwap(peerOK, peerFailed) {
			continue
		}
		if h := e.Failure(); h != nil {
			h(r, e.errFailed[r])
		}
	}
}
