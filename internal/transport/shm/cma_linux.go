package shm

import (
	"encoding/binary"
	"fmt"
	"github.com/narma-rma/narma/internal/mem"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/narma-rma/narma/internal/sys"

	"github.com/narma-rma/narma/internal/transport"
)

// Single copy (cross-memory attach, CMA): an active message whose payload
// is at least cmaMin bytes does not stream through the pair's byte ring.
// Its record carries only the header and where the payload lies in the
// sender's address space; the target reads the payload from there with
// process_vm_readv, one copy in the kernel from the sender's buffer, and
// acknowledges in the ring's rdv word; SendAM returns once the
// acknowledgement has come (the payload is then no longer needed). The
// sender's lines are read where they are, which the ring cannot do: every
// byte of a ring is written by one core and read by the other.
//
// The kernel allows it between processes of one user unless Yama's
// ptrace_scope forbids it (1: only a declared tracer and its descendants,
// which each rank arranges by naming its parent, the launcher, with
// PR_SET_PTRACER; 2 and 3: never) or a seccomp policy refuses the call.
// CMAStatus tells; a target whose read fails anyway acknowledges the
// failure, and the sender sends that message, and every later one to
// that target, through the ring.

// cmaMin is the smallest payload sent by single copy.
const cmaMin = 64 << 10

// recRemote marks a record whose payload is in the sender's memory: its
// body is the message header, then a cmaDesc.
const recRemote = 4

// cmaDescLen is the size of the descriptor after the header: the
// payload's address and length in the sender, and the rendezvous number.
const cmaDescLen = 24

var cmaOnce struct {
	sync.Once
	ok     bool
	reason string
}

// cmaProbe is what the single-copy check reads from this process: a
// variable, whose address does not move as a goroutine's stack can.
var cmaProbe = [8]byte{1, 2, 3, 4, 5, 6, 7, 8}

// CMAStatus reports whether ranks of a job on this host may read each
// other's memory with process_vm_readv (single-copy large messages), and
// if not, why.
func CMAStatus() (ok bool, reason string) {
	cmaOnce.Do(func() {
		cmaOnce.ok, cmaOnce.reason = probeCMA()
	})
	return cmaOnce.ok, cmaOnce.reason
}

func probeCMA() (bool, string) {
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		switch s := strings.TrimSpace(string(b)); s {
		case "0", "1":
		default:
			return false, "Yama ptrace_scope is " + s + " (process_vm_readv between ranks not allowed)"
		}
	}
	// The call itself, on this process: refused by a seccomp policy or
	// missing from the kernel.
	var dst [8]byte
	if err := sys.ReadProcess(os.Getpid(), mem.Addr(cmaProbe[:]), dst[:]); err != nil {
		return false, "process_vm_readv: " + err.Error()
	}
	if dst != cmaProbe {
		return false, "process_vm_readv read wrong data"
	}
	return true, "process_vm_readv"
}

// sendRemote sends an active message by single copy to target (s is this
// endpoint's sender state for it, locked); it reports false if the target
// could not read the payload, which the caller must then send through
// the ring.
func (e *Endpoint) sendRemote(target int, s *sender, id transport.AMID, hdr, payload []byte) (bool, error) {
	t := e.peers[target]
	data := t.ringData[e.rank]
	rh := t.ringHeads[e.rank]
	s.rdv++
	n := s.rdv
	var desc [cmaDescLen]byte
	binary.LittleEndian.PutUint64(desc[0:], uint64(mem.Addr(payload)))
	binary.LittleEndian.PutUint64(desc[8:], uint64(len(payload)))
	binary.LittleEndian.PutUint64(desc[16:], n)
	length := uint32(recHead + len(hdr) + cmaDescLen)
	rest := recRest(uint8(id), recFirst|recLast|recRemote, uint16(len(hdr)), uint32(len(payload)))
	if err := e.writeRecord(target, s, data, rh, length, rest, hdr, desc[:]); err != nil {
		return false, err
	}
	// Wait for the acknowledgement, draining this endpoint's own queues
	// meanwhile when nobody else does (a target sending to this one at
	// the same time waits likewise); a handler that sends holds draining
	// already, and tryLock leaves it alone.
	for spin := 0; ; spin++ {
		if v := rh.loadRdv(); v>>1 == n {
			runtime.KeepAlive(payload)
			return v&1 == 0, nil
		}
		if e.draining.tryLock() {
			e.ackWait, e.ackSeq = rh, n
			e.drain(nil, pollNotices)
			e.ackWait = nil
			e.draining.unlock()
		}
		if spin&15 == 15 {
			if err := e.peerErr(target); err != nil {
				return false, err
			}
			if e.shared {
				runtime.Gosched()
			}
			sys.Yield()
		}
	}
}

// remote handles a recRemote record of src with body b: it reads the
// payload from the sender's memory, acknowledges, and delivers the
// message; draining is held. A payload it cannot read is acknowledged as
// failed (the sender then sends it through the ring) and not delivered.
func (e *Endpoint) remote(src int, rh *amRing, rec *recHeader, b []byte) {
	hdr := b[:rec.hdrLen:rec.hdrLen]
	desc := b[rec.hdrLen:]
	if len(desc) < cmaDescLen {
		return // malformed: drop
	}
	addr := binary.LittleEndian.Uint64(desc[0:])
	n := binary.LittleEndian.Uint64(desc[8:])
	seq := binary.LittleEndian.Uint64(desc[16:])
	if n != uint64(rec.total) {
		rh.storeRdv(seq<<1 | 1)
		return
	}
	// Read into the place the handler's side chooses (a posted receive's
	// buffer: one copy in all), else into the source's reassembly buffer.
	var dst []byte
	p := e.AMPlacer(transport.AMID(rec.id))
	if p != nil {
		if dst = p.Place(src, hdr, int(n)); dst != nil && len(dst) != int(n) {
			p.Unplace(src, hdr)
			dst = nil
		}
	}
	var a *assembly
	if dst == nil {
		a = e.reassembly(src, int(n))
		dst = a.buf
	}
	if err := sys.ReadProcess(e.cmaPids[src], uintptr(addr), dst); err != nil {
		if a == nil {
			p.Unplace(src, hdr)
		}
		e.cmaFailed(src, err)
		rh.storeRdv(seq<<1 | 1)
		return
	}
	rh.storeRdv(seq << 1)
	e.deliverAM(src, rec.id, hdr, dst)
	if a != nil {
		a.release()
	}
}

// cmaFailed notes, once per source, why a single-copy read failed, for
// CMAFailures.
func (e *Endpoint) cmaFailed(src int, err error) {
	e.cmaMu.Lock()
	defer e.cmaMu.Unlock()
	if e.cmaErrs == nil {
		e.cmaErrs = make(map[int]error)
	}
	if _, ok := e.cmaErrs[src]; !ok {
		e.cmaErrs[src] = fmt.Errorf("shm: single-copy read from rank %d: %w", src, err)
	}
}

// CMAFailures returns, per source rank, why a single-copy read of its
// large messages failed (those messages then came through the ring).
func (e *Endpoint) CMAFailures() map[int]error {
	e.cmaMu.Lock()
	defer e.cmaMu.Unlock()
	m := make(map[int]error, len(e.cmaErrs))
	for r, err := range e.cmaErrs {
		m[r] = err
	}
	return m
}
