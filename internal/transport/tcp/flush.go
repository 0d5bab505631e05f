package tcp

import (
	"context"

	"github.com/narma-rma/narma/internal/transport"
)

// Flushes: remote completion waits for the target's acknowledgement of
// everything sent before; local completion only for what still reads or
// writes the origin's buffers.

// Flush waits until every operation this endpoint issued to target is
// complete at the target: it sends a flush request, which the target
// answers once it has applied everything before it, and returns an error
// if the target refused one of those operations.
func (e *Endpoint) Flush(ctx context.Context, target int) error {
	if !e.open() {
		return transport.ErrClosed
	}
	p, err := e.peer(target)
	if err != nil {
		return err
	}
	if p == nil {
		return ctx.Err()
	}
	w, err := p.startFlush()
	if err != nil || w == nil {
		return err
	}
	return w.wait(ctx)
}

// FlushAll is Flush for every target, the flushes running together.
func (e *Endpoint) FlushAll(ctx context.Context) error {
	if !e.open() {
		return transport.ErrClosed
	}
	var first error
	var spare [8]*waiter // fence-sized jobs flush without allocating
	waits := spare[:0]
	for _, p := range e.peers {
		if p == nil {
			continue
		}
		w, err := p.startFlush()
		if err != nil && first == nil {
			first = err
		}
		if w != nil {
			waits = append(waits, w)
		}
	}
	for _, w := range waits {
		if err := w.wait(ctx); err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// FlushLocal waits until the operations issued to target are complete at
// this end (transport.LocalFlusher). A put, an accumulate and a message
// are written to the connection before their call returns, so their
// buffers are free at once; only the results of gets and fetching
// atomics wait for the peer's replies. So FlushLocal returns at once
// unless calls wait for replies, and then flushes, the flush's answer
// coming after theirs.
func (e *Endpoint) FlushLocal(ctx context.Context, target int) error {
	if !e.open() {
		return transport.ErrClosed
	}
	p, err := e.peer(target)
	if err != nil || p == nil {
		if err == nil {
			err = ctx.Err()
		}
		return err
	}
	if o := p.out.Load(); o == nil || !o.awaiting() {
		if err := p.err(); err != nil {
			return err
		}
		return ctx.Err()
	}
	return e.Flush(ctx, target)
}

// FlushLocalAll is FlushLocal for every target.
func (e *Endpoint) FlushLocalAll(ctx context.Context) error {
	if !e.open() {
		return transport.ErrClosed
	}
	var first error
	for r, p := range e.peers {
		if p == nil {
			continue
		}
		if err := e.FlushLocal(ctx, r); err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		first = ctx.Err()
	}
	return first
}
