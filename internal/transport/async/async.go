package async

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/narma-rma/narma/internal/transport"
)

// Pacing of the worker's yields: before every Nth operation, N drawn
// uniformly from [1, maxGap], it calls runtime.Gosched 1 to maxYields
// times.
const (
	maxGap    = 8
	maxYields = 3
)

// wraps counts the calls of Wrap; it seeds the workers' generators so that
// successive worlds do not repeat the same pacing.
var wraps atomic.Uint64

// Wrap returns an asynchronous endpoint for each endpoint of eps (same
// ranks, same order), each with its own worker goroutine. The wrapped
// endpoints own the inner ones: closing a wrapped endpoint closes its
// inner endpoint, and the inner endpoints must not be used directly any
// more. A nil endpoint stays nil.
func Wrap(eps []transport.Endpoint) []transport.Endpoint {
	world := wraps.Add(1)
	out := make([]transport.Endpoint, len(eps))
	for i, inner := range eps {
		if inner == nil {
			continue
		}
		e := newEndpoint(inner, world)
		if _, ok := inner.(killer); ok {
			out[i] = killable{e}
		} else {
			out[i] = e
		}
	}
	return out
}

// killer is implemented by inner endpoints that can simulate the failure
// of their rank (transporttest.Killer).
type killer interface {
	Kill() error
}

// killable is an endpoint whose inner endpoint is a killer.
type killable struct {
	*endpoint
}

// Kill simulates the failure of the endpoint's rank by killing the inner
// endpoint. The worker keeps running until Close; the operations it then
// executes fail as the inner transport fails them.
func (k killable) Kill() error { return k.inner.(killer).Kill() }

// endpoint is a wrapped endpoint. Its worker executes the queued data
// operations; mu guards the queue and the completion bookkeeping.
type endpoint struct {
	inner transport.Endpoint
	caps  transport.Caps
	rank  int
	size  int

	mu      sync.Mutex
	work    sync.Cond       // signalled when the queue fills or closing is set; L is &mu
	queue   []op            // operations issued and not yet taken by the worker
	spare   []op            // the worker's previous batch, emptied, for reuse
	closing bool            // Close has begun: no operation may be queued
	issued  uint64          // sequence number of the last operation queued
	done    uint64          // sequence number of the last operation executed
	last    []uint64        // by target: sequence number of the last operation queued to it
	errs    []error         // by target: first unreported error of an operation without a Completion
	waiters []chan struct{} // Flush calls waiting for done to advance (channels of waitPool)

	exited chan struct{} // closed when the worker returns

	rng *rand.Rand // the worker's
}

var _ transport.Endpoint = (*endpoint)(nil)

func newEndpoint(inner transport.Endpoint, world uint64) *endpoint {
	c := inner.Caps()
	c.Name = "async(" + c.Name + ")"
	c.Synchronous = false
	c.Direct = false
	n := inner.Size()
	e := &endpoint{
		inner:  inner,
		caps:   c,
		rank:   inner.Rank(),
		size:   n,
		last:   make([]uint64, n),
		errs:   make([]error, n),
		exited: make(chan struct{}),
		rng:    rand.New(rand.NewPCG(uint64(inner.Rank()), world)),
	}
	e.work.L = &e.mu
	go e.run()
	return e
}

// Rank returns the inner endpoint's rank.
func (e *endpoint) Rank() int { return e.rank }

// Size returns the inner endpoint's number of ranks.
func (e *endpoint) Size() int { return e.size }

// Caps returns the inner endpoint's Caps with Name "async(<inner name>)"
// and Synchronous and Direct false.
func (e *endpoint) Caps() transport.Caps { return e.caps }

// Host returns the inner endpoint's.
func (e *endpoint) Host() transport.Host { return e.inner.Host() }

// isClosing reports whether Close has begun.
func (e *endpoint) isClosing() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closing
}

// Expose exposes m at the inner endpoint.
func (e *endpoint) Expose(m []byte) (transport.Key, error) {
	if e.isClosing() {
		return transport.Key{}, transport.ErrClosed
	}
	return e.inner.Expose(m)
}

// Unexpose withdraws key at the inner endpoint. Operations on it still
// queued at their origins fail as the inner transport fails them.
func (e *endpoint) Unexpose(key transport.Key) error {
	if e.isClosing() {
		return transport.ErrClosed
	}
	return e.inner.Unexpose(key)
}

// Region returns an asynchronous handle on the inner endpoint's region.
// The inner endpoint checks target, key and size.
func (e *endpoint) Region(target int, key transport.Key, size int) (transport.Region, error) {
	if e.isClosing() {
		return nil, transport.ErrClosed
	}
	r, err := e.inner.Region(target, key, size)
	if err != nil {
		return nil, err
	}
	if uint(target) >= uint(e.size) { // the inner endpoint should have refused it
		return nil, fmt.Errorf("async: region at rank %d in a world of %d", target, e.size)
	}
	return &region{ep: e, inner: r, target: target, size: r.Size()}, nil
}

// Flush waits until every operation issued to target before the call has
// been executed by the worker, or until ctx is done, and then flushes the
// inner endpoint. It returns the first error of an operation to target
// that had no Completion and whose error has not been returned yet, else
// the inner Flush's error; ctx.Err() if ctx ended the wait; and
// transport.ErrClosed once Close has begun.
func (e *endpoint) Flush(ctx context.Context, target int) error {
	return e.flush(ctx, target, e.inner.Flush)
}

// FlushLocal is Flush with the inner endpoint's FlushLocal: once the
// worker has executed an operation on the inner endpoint, that one says
// when its buffers are free (transport.LocalFlusher).
func (e *endpoint) FlushLocal(ctx context.Context, target int) error {
	return e.flush(ctx, target, func(ctx context.Context, t int) error {
		return transport.FlushLocal(ctx, e.inner, t)
	})
}

func (e *endpoint) flush(ctx context.Context, target int, inner func(context.Context, int) error) error {
	e.mu.Lock()
	if e.closing {
		e.mu.Unlock()
		return transport.ErrClosed
	}
	if uint(target) >= uint(e.size) {
		e.mu.Unlock()
		return fmt.Errorf("async: Flush of rank %d in a world of %d", target, e.size)
	}
	if err := e.waitLocked(ctx, e.last[target]); err != nil {
		e.mu.Unlock()
		return err
	}
	err := e.errs[target]
	e.errs[target] = nil
	e.mu.Unlock()
	if ierr := inner(ctx, target); err == nil {
		err = ierr
	}
	return err
}

// FlushAll waits until every operation issued before the call has been
// executed by the worker, or until ctx is done, and then flushes the inner
// endpoint. Its errors are those of Flush, for all targets at once.
func (e *endpoint) FlushAll(ctx context.Context) error {
	return e.flushAll(ctx, e.inner.FlushAll)
}

// FlushLocalAll is FlushLocal for every target.
func (e *endpoint) FlushLocalAll(ctx context.Context) error {
	return e.flushAll(ctx, func(ctx context.Context) error {
		return transport.FlushLocalAll(ctx, e.inner)
	})
}

func (e *endpoint) flushAll(ctx context.Context, inner func(context.Context) error) error {
	e.mu.Lock()
	if e.closing {
		e.mu.Unlock()
		return transport.ErrClosed
	}
	if err := e.waitLocked(ctx, e.issued); err != nil {
		e.mu.Unlock()
		return err
	}
	var err error
	for t, terr := range e.errs {
		if err == nil {
			err = terr
		}
		e.errs[t] = nil
	}
	e.mu.Unlock()
	if ierr := inner(ctx); err == nil {
		err = ierr
	}
	return err
}

// waitPool holds the wake-up channels of waiting Flush calls, each of
// capacity 1, so that waiting allocates nothing.
var waitPool = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

// waitLocked waits, with mu held (and released meanwhile), until the
// worker has executed operation seq, or ctx is done.
func (e *endpoint) waitLocked(ctx context.Context, seq uint64) error {
	if e.done >= seq {
		return nil
	}
	ch := waitPool.Get().(chan struct{})
	for e.done < seq {
		e.waiters = append(e.waiters, ch)
		e.mu.Unlock()
		select {
		case <-ch: // the worker took ch off the list
			e.mu.Lock()
		case <-ctx.Done():
			e.mu.Lock()
			if i := slices.Index(e.waiters, ch); i >= 0 {
				e.waiters = slices.Delete(e.waiters, i, i+1)
			} else {
				<-ch // the worker took ch off the list and signals it
			}
			waitPool.Put(ch)
			return ctx.Err()
		}
	}
	waitPool.Put(ch)
	return nil
}

// SendAM sends the message through the inner endpoint at once, without
// waiting for the data operations queued before it.
func (e *endpoint) SendAM(target int, id transport.AMID, hdr, payload []byte) error {
	if e.isClosing() {
		return transport.ErrClosed
	}
	return e.inner.SendAM(target, id, hdr, payload)
}

// SetAMHandler installs h at the inner endpoint.
func (e *endpoint) SetAMHandler(id transport.AMID, h transport.AMHandler) {
	e.inner.SetAMHandler(id, h)
}

// SetNoticeHandler installs h at the inner endpoint.
func (e *endpoint) SetNoticeHandler(h transport.NoticeHandler) { e.inner.SetNoticeHandler(h) }

// SetFailureHandler installs h at the inner endpoint.
func (e *endpoint) SetFailureHandler(h transport.FailureHandler) { e.inner.SetFailureHandler(h) }

// Close refuses further operations, waits until the worker has executed
// the queued ones and exited, and closes the inner endpoint, returning its
// error. Closing again returns transport.ErrClosed. Close must not be
// called from a handler running on this endpoint's worker.
func (e *endpoint) Close() error {
	e.mu.Lock()
	if e.closing {
		e.mu.Unlock()
		return transport.ErrClosed
	}
	e.closing = true
	e.work.Signal()
	e.mu.Unlock()
	<-e.exited
	return e.inner.Close()
}

// enqueue queues o, numbering it, and records it in o.c. It fails with
// transport.ErrClosed, leaving o.c alone, once Close has begun.
func (e *endpoint) enqueue(o *op) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing {
		return transport.ErrClosed
	}
	e.issued++
	o.seq = e.issued
	e.last[o.target] = o.seq
	if o.c != nil {
		o.c.Add(1)
	}
	if len(e.queue) == 0 {
		e.work.Signal()
	}
	e.queue = append(e.queue, *o)
	return nil
}

// run is the worker: it takes the queue in batches and executes them in
// order, until Close has begun and the queue is empty.
func (e *endpoint) run() {
	defer close(e.exited)
	gap := e.newGap()
	e.mu.Lock()
	for {
		for len(e.queue) == 0 && !e.closing {
			e.work.Wait()
		}
		if len(e.queue) == 0 {
			e.mu.Unlock()
			return
		}
		batch := e.queue
		e.queue, e.spare = e.spare[:0], nil
		e.mu.Unlock()

		for i := range batch {
			o := &batch[i]
			if gap--; gap == 0 {
				for range 1 + e.rng.IntN(maxYields) {
					runtime.Gosched()
				}
				gap = e.newGap()
			}
			err := o.exec()
			if o.c != nil {
				o.c.Done(err) // before Flush can see the operation done
			}
			e.mu.Lock()
			e.done = o.seq
			if err != nil && o.c == nil && e.errs[o.target] == nil {
				e.errs[o.target] = err
			}
			for _, ch := range e.waiters {
				ch <- struct{}{} // never blocks: ch is empty while listed
			}
			clear(e.waiters)
			e.waiters = e.waiters[:0]
			e.mu.Unlock()
		}
		clear(batch) // drop the references to buffers and Completions
		e.mu.Lock()
		if cap(e.queue) == 0 {
			e.queue = batch[:0] // nothing queued meanwhile: reuse at once
		} else {
			e.spare = batch[:0]
		}
	}
}

// newGap draws the number of operations until the next yield.
func (e *endpoint) newGap() int { return 1 + e.rng.IntN(maxGap) }
