//go:build fabric

package fabric

import (
	"fmt"
	"sync"
	"unsafe"
)

// Local memory registration. Providers that set FI_MR_LOCAL (verbs
// without rxm, EFA) need every buffer they read or write on this side
// registered, and its descriptor passed with each operation; injected
// data is exempt. The endpoint registers its C buffers (the send and
// bounce pool, the receive buffers) once when it makes them, and a
// caller's large buffer, which it hands libfabric pinned instead of
// copying, for the duration of its operation.

// localKeyBase starts the keys requested for local registrations, apart
// from the exposed regions' (slot<<20 | generation), for providers that
// take the requested key (no FI_MR_PROV_KEY).
const localKeyBase = 1 << 63

// newBuf returns a C buffer of n bytes, registered if the endpoint
// registers local buffers.
func (e *Endpoint) newBuf(n int) (cbuf, error) {
	b := newCbuf(n)
	if !e.regLocal {
		return b, nil
	}
	mr, desc, err := e.lib.registerLocal(b.b, localKeyBase|e.localKeys.Add(1))
	if err != nil {
		b.free()
		return cbuf{}, fmt.Errorf("fabric: register a %d-byte buffer: %w", n, err)
	}
	b.mr, b.desc = mr, desc
	e.regs.add(b.b, desc)
	return b, nil
}

// freeBuf releases a buffer of newBuf.
func (e *Endpoint) freeBuf(b cbuf) {
	if b.mr != 0 {
		e.regs.remove(b.desc)
	}
	b.free()
}

// registerOp registers o's pinned buffer (its data), if the endpoint
// registers local buffers.
func (e *Endpoint) registerOp(o *op) error {
	if !e.regLocal || len(o.data) == 0 {
		return nil
	}
	mr, desc, err := e.lib.registerLocal(o.data, localKeyBase|e.localKeys.Add(1))
	if err != nil {
		return fmt.Errorf("fabric: register %d bytes: %w", len(o.data), err)
	}
	o.mr, o.desc = mr, desc
	e.regs.add(o.data, desc)
	return nil
}

// unpin closes o's own registration and unpins its buffer: libfabric
// is done with it.
func (e *Endpoint) unpin(o *op) {
	if o.mr != 0 {
		e.regs.remove(o.desc)
		_ = deregister(o.mr)
		o.mr, o.desc = 0, 0
	}
	if o.pinned {
		o.pin.Unpin()
		o.pinned = false
	}
}

// descriptor returns the descriptor that goes with o's local buffers: none for
// injected data, o's own registration for a pinned buffer, else its C
// buffer's.
func (o *op) descriptor() uint64 {
	switch {
	case o.inject:
		return 0
	case o.mr != 0:
		return o.desc
	}
	return o.buf.desc
}

// regCheck, in tests, records every local registration, and counts the
// buffers handed to libfabric outside the registration whose descriptor
// goes with them.
type regCheck struct {
	mu    sync.Mutex
	spans map[uint64][2]uintptr // descriptor -> [start, end)
	bad   int
	what  string // the first bad one
}

func newRegCheck() *regCheck { return &regCheck{spans: make(map[uint64][2]uintptr)} }

func (r *regCheck) add(b []byte, desc uint64) {
	if r == nil {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	r.mu.Lock()
	r.spans[desc] = [2]uintptr{start, start + uintptr(len(b))}
	r.mu.Unlock()
}

func (r *regCheck) remove(desc uint64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.spans, desc)
	r.mu.Unlock()
}

// check notes what, a buffer of an operation, if it does not lie in the
// registration desc names (injected data, desc 0, is exempt).
func (r *regCheck) check(what string, b []byte, desc uint64, inject bool) {
	if r == nil || len(b) == 0 || inject {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.spans[desc]
	if ok && start >= s[0] && start+uintptr(len(b)) <= s[1] {
		return
	}
	if r.bad == 0 {
		r.what = fmt.Sprintf("%s of %d bytes with descriptor %#x", what, len(b), desc)
	}
	r.bad++
}

// failures returns how many buffers were outside their registration,
// and the first.
func (r *regCheck) failures() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad, r.what
}
