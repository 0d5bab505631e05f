package transport

import (
	"context"
	"sync"
	"sync/atomic"
)

// Completion counts operations in flight, as UCX's uct_completion does: a
// transport calls Add before returning from an operation that is not yet
// complete and Done when it completes. Many operations may share one
// Completion; it is complete when the count is back at zero, and it keeps
// the first error. The zero value is ready to use and complete.
type Completion struct {
	pending atomic.Int64

	mu   sync.Mutex
	err  error
	ch   chan struct{} // closed when pending drops to zero; nil if nobody waits
	wake func()        // called when pending drops to zero, if set
}

// SetWake installs f, called (on the completing goroutine) each time the
// count drops back to zero: a way for an engine waiting on many kinds of
// events to hear of this one. Set it before the first Add.
func (c *Completion) SetWake(f func()) { c.wake = f }

// Add records n more operations in flight.
func (c *Completion) Add(n int) { c.pending.Add(int64(n)) }

// Done records that one operation completed, with err if it failed.
func (c *Completion) Done(err error) {
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	if c.pending.Add(-1) == 0 {
		c.mu.Lock()
		if c.ch != nil {
			close(c.ch)
			c.ch = nil
		}
		c.mu.Unlock()
		if c.wake != nil {
			c.wake()
		}
	}
}

// Reset forgets the recorded error, so that a reused Completion reports
// only the errors of operations issued after it. It must be called only
// while the Completion is complete.
func (c *Completion) Reset() {
	c.mu.Lock()
	c.err = nil
	c.mu.Unlock()
}

// Complete reports whether no operation is in flight.
func (c *Completion) Complete() bool { return c.pending.Load() == 0 }

// Err returns the first error recorded.
func (c *Completion) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Wait blocks until the completion is complete or ctx is done, and returns
// the first error recorded or ctx's error.
func (c *Completion) Wait(ctx context.Context) error {
	for !c.Complete() {
		c.mu.Lock()
		if c.ch == nil {
			c.ch = make(chan struct{})
		}
		ch := c.ch
		c.mu.Unlock()
		if c.Complete() {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.Err()
}
