package transport

import (
	"fmt"
	"sync/atomic"
)

// Handlers is the handler table of an endpoint, for implementations to
// embed: it provides Endpoint's SetAMHandler, SetNoticeHandler and
// SetFailureHandler, and lookups that cost one atomic load, so that
// handlers may be installed while deliveries run. The zero value holds no
// handler.
type Handlers struct {
	am      [MaxAMID]atomic.Pointer[AMHandler]
	placer  [MaxAMID]atomic.Pointer[AMPlacer]
	notice  atomic.Pointer[NoticeHandler]
	failure atomic.Pointer[FailureHandler]
}

// SetAMHandler installs f as the handler for id; a nil f removes it. It
// panics if id is not below MaxAMID (the engine owns the numbering).
func (h *Handlers) SetAMHandler(id AMID, f AMHandler) {
	if id >= MaxAMID {
		panic(fmt.Sprintf("transport: SetAMHandler: AMID %d out of range", id))
	}
	if f == nil {
		h.am[id].Store(nil)
		return
	}
	h.am[id].Store(&f)
}

// SetAMPlacer installs p as the placer of the payloads of handler id; a
// nil p removes it (Placer).
func (h *Handlers) SetAMPlacer(id AMID, p AMPlacer) {
	if id >= MaxAMID {
		panic(fmt.Sprintf("transport: SetAMPlacer: AMID %d out of range", id))
	}
	if p == nil {
		h.placer[id].Store(nil)
		return
	}
	h.placer[id].Store(&p)
}

// AMPlacer returns the placer for id, or nil.
func (h *Handlers) AMPlacer(id AMID) AMPlacer {
	if id >= MaxAMID {
		return nil
	}
	if p := h.placer[id].Load(); p != nil {
		return *p
	}
	return nil
}

// SetNoticeHandler installs f as the handler for notices; a nil f removes
// it, and notices are then dropped.
func (h *Handlers) SetNoticeHandler(f NoticeHandler) {
	if f == nil {
		h.notice.Store(nil)
		return
	}
	h.notice.Store(&f)
}

// SetFailureHandler installs f as the handler told of failed peers; a nil
// f removes it.
func (h *Handlers) SetFailureHandler(f FailureHandler) {
	if f == nil {
		h.failure.Store(nil)
		return
	}
	h.failure.Store(&f)
}

// AM returns the handler for id, or nil.
func (h *Handlers) AM(id AMID) AMHandler {
	if id >= MaxAMID {
		return nil
	}
	if f := h.am[id].Load(); f != nil {
		return *f
	}
	return nil
}

// Notice returns the notice handler, or nil.
func (h *Handlers) Notice() NoticeHandler {
	if f := h.notice.Load(); f != nil {
		return *f
	}
	return nil
}

// Failure returns the failure handler, or nil.
func (h *Handlers) Failure() FailureHandler {
	if f := h.failure.Load(); f != nil {
		return *f
	}
	return nil
}
