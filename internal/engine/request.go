package engine

import (
	"context"

	"github.com/narma-rma/narma/internal/transport"
)

type reqKind uint8

const (
	reqDone      reqKind = iota // complete at creation (eager send)
	reqRecv                     // a posted receive
	reqRMA                      // a request-based RMA operation
	reqNotify                   // a persistent notification request
	reqThreshold                // a notification-counter threshold
)

// Request is a nonblocking operation in flight. A Request is used by one
// goroutine at a time.
type Request struct {
	c      *Comm
	kind   reqKind
	op     string
	recv   *recvReq
	comp   transport.Completion
	win    *Win // the window: of a notification or threshold request, or of a request-based operation waiting in a deferred queue
	target int
	st     Status
	err    error
	freed  bool

	// notification request
	src, tag       int32 // pattern, with AnySource/AnyTag
	count, matched int
	active         bool

	// threshold request
	counter   int
	threshold uint64
	reached   bool

	reported bool // the wait family reported its completion (see pending)
}

func (r *Request) check(op string) error {
	if r == nil {
		return opErr(op, -1, ErrFreed, "nil request")
	}
	if r.freed {
		return opErr(op, r.c.rank, ErrFreed, "request")
	}
	return nil
}

// Test reports whether the operation is complete, without blocking. Once
// it reports true, the status and error are final.
func (r *Request) Test() (Status, bool, error) {
	if r != nil && r.c != nil && r.kind != reqNotify {
		r.c.progress() // a notification request polls for itself
	}
	return r.test("Test")
}

// test is Test on behalf of the call name (Test, Wait, WaitAny...), which
// its errors name.
func (r *Request) test(name string) (Status, bool, error) {
	if err := r.check(name); err != nil {
		return Status{}, false, err
	}
	switch r.kind {
	case reqRecv:
		if !r.c.recvDone(r.recv) {
			if !r.c.srcFailed(r.recv.src) {
				return Status{}, false, nil
			}
			// The rank it waits for (for AnySource: possibly) failed:
			// take in what arrived before giving up.
			r.c.progress()
			if r.c.cancel(r.recv) {
				return Status{}, true, opErr(r.op, r.c.rank, ErrPeer, "%s failed", r.c.failedName(r.recv.src))
			}
		}
		if r.recv.err != nil {
			return r.recv.st, true, opErr(r.op, r.c.rank, r.recv.err, "message of %d bytes from rank %d into buffer of %d", r.recv.st.Count, r.recv.st.Source, len(r.recv.buf))
		}
		return r.recv.st, true, nil
	case reqNotify:
		return r.testNotify(name)
	case reqThreshold:
		return r.testThreshold(name)
	case reqRMA:
		if !r.comp.Complete() && r.win != nil {
			if err := r.win.progressRequest(bg, r.target, false); err != nil {
				return Status{}, false, err
			}
		}
		if !r.comp.Complete() {
			return Status{}, false, nil
		}
		if err := r.comp.Err(); err != nil {
			return r.st, true, r.c.transportFailure(r.op, bg, err, "rank %d", r.st.Source)
		}
		return r.st, true, nil
	}
	return r.st, true, r.err
}

// Wait blocks until the operation is complete or ctx is done.
func (r *Request) Wait(ctx context.Context) (Status, error) {
	if err := r.check("Wait"); err != nil {
		return Status{}, err
	}
	if r.kind == reqRMA && r.win != nil && !r.comp.Complete() {
		if err := r.win.progressRequest(ctx, r.target, true); err != nil {
			return Status{}, err
		}
	}
	// What has arrived already (the next value of a stream) completes
	// the request without the set-up of a wait.
	st, done, err := r.test("Wait")
	if done || err != nil {
		return st, err
	}
	// A notification request on a window whose origins may put notices
	// straight into its inbox (pushDirect) makes, between full tests,
	// which poll the transport too, quick looks at the inbox alone (two
	// loads): an arrival there is seen sooner, and a poll of the
	// transport that finds nothing costs more than the whole look. The
	// first call is a full test, and so is every quickLooks+1-th.
	quick := r.kind == reqNotify && r.win != nil && r.win.maps != nil
	looks := quickLooks
	werr := r.c.waitPolling(ctx, r.kind == reqNotify, func() bool {
		if quick && looks < quickLooks && !r.win.inbox.pending() {
			looks++
			return false
		}
		looks = 0
		st, done, err = r.test("Wait")
		return done || err != nil
	})
	if werr != nil && !done && err == nil {
		return Status{}, r.c.ctxErr("Wait", werr)
	}
	return st, err
}

// quickLooks is how many quick looks at its inbox alone a notification
// request's Wait makes between full tests (see Wait).
const quickLooks = 8

// Free releases the request. A receive that has not matched is cancelled.
// Notices an active notification request has already matched are consumed
// with it (MPI likewise lets a freed persistent request complete on its
// own); notices it has not matched stay queued for other requests.
// Free of an RMA request does not cancel the operation; its completion is
// still guaranteed by the epoch's closing call.
func (r *Request) Free() error {
	if err := r.check("Free"); err != nil {
		return err
	}
	if r.kind == reqRecv {
		r.c.cancel(r.recv)
	}
	r.freed = true
	return nil
}

// Isend starts a send. With the eager protocol the data is copied out
// before Isend returns, so the request is already complete.
func (c *Comm) Isend(ctx context.Context, buf []byte, dest, tag int) (*Request, error) {
	if err := ctx.Err(); err != nil {
		return nil, c.ctxErr("Isend", err)
	}
	if dest == ProcNull {
		if err := c.checkTag("Isend", tag); err != nil {
			return nil, err
		}
	} else if err := c.send("Isend", c.user, buf, dest, tag); err != nil {
		return nil, err
	}
	return &Request{c: c, kind: reqDone, op: "Isend", st: Status{Source: c.rank, Tag: tag, Count: len(buf)}}, nil
}

// Irecv posts a receive into buf and returns at once.
func (c *Comm) Irecv(buf []byte, src, tag int) (*Request, error) {
	if src == ProcNull {
		if err := c.checkRecvArgs("Irecv", AnySource, tag); err != nil {
			return nil, err
		}
		return &Request{c: c, kind: reqDone, op: "Irecv", st: nullStatus}, nil
	}
	if err := c.checkRecvArgs("Irecv", src, tag); err != nil {
		return nil, err
	}
	rr := &recvReq{src: src, from: c.from(src), grp: c.grp, ctx: c.user, tag: tag, buf: buf}
	c.post(rr)
	return &Request{c: c, kind: reqRecv, op: "Irecv", recv: rr}, nil
}
