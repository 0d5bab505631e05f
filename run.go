package narma

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/narma-rma/narma/internal/engine"
	"github.com/narma-rma/narma/internal/transport/inproc"
)

// Run runs fn on n ranks, each a goroutine of this process with its own
// Comm, and returns when all have returned. The ranks communicate through
// the in-process transport; setting the environment variable
// NARMA_TRANSPORT=async runs them over a wrapper of it whose operations
// complete later, on other goroutines, as over a network (for testing). If a rank returns an error or
// panics, the job is aborted: blocking calls on the other ranks return
// errors wrapping ErrAborted, and Run returns the first rank's error (a
// panic becomes an error with its stack). Run never crashes the process
// for a rank's panic.
func Run(n int, fn func(c *Comm) error) error {
	return RunContext(context.Background(), n, fn)
}

// RunContext is Run with a context: when ctx is done the job is aborted
// and RunContext returns ctx's error.
func RunContext(ctx context.Context, n int, fn func(c *Comm) error) error {
	if n < 1 {
		return fmt.Errorf("narma: Run: %d ranks: %w", n, ErrInvalid)
	}
	if fn == nil {
		return fmt.Errorf("narma: Run: nil function: %w", ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	eps, err := newEndpoints(n)
	if err != nil {
		return fmt.Errorf("narma: Run: %w", err)
	}
	j := newJob(ctx)
	defer j.cancel()
	comms := make([]*Comm, n)
	for r := range comms {
		comms[r] = &Comm{e: engine.New(eps[r], j.ctx.Done(), j.cause), ctx: j.ctx}
	}
	stop := context.AfterFunc(ctx, func() { j.fail(ctx.Err()) })
	defer stop()
	var wg sync.WaitGroup
	for r := range comms {
		wg.Add(1)
		go func(c *Comm) {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					j.fail(fmt.Errorf("narma: rank %d panicked: %v\n%s", c.Rank(), p, debug.Stack()))
				}
			}()
			if err := fn(c); err != nil {
				j.fail(fmt.Errorf("rank %d: %w", c.Rank(), err))
			}
		}(comms[r])
	}
	wg.Wait()
	for _, c := range comms {
		c.e.Close()
	}
	if err := j.err(); err != nil {
		return err
	}
	// The ranks may have finished while ctx was being cancelled, before
	// the AfterFunc above recorded it.
	return ctx.Err()
}

// newEndpoints makes the endpoints of a Run job: the in-process transport
// that NARMA_TRANSPORT selects (see Run).
var newEndpoints = inproc.New

// job is the shared fate of the ranks of one Run: the first failure
// cancels its context, which every blocking call watches.
type job struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	first  error
}

func newJob(parent context.Context) *job {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	return &job{ctx: ctx, cancel: cancel}
}

func (j *job) fail(err error) {
	j.mu.Lock()
	if j.first == nil {
		j.first = err
	}
	j.mu.Unlock()
	j.cancel()
}

func (j *job) err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.first
}

// cause is what aborted calls report: ErrAborted, wrapping the first
// failure's message.
func (j *job) cause() error {
	if err := j.err(); err != nil {
		return &abortError{cause: err}
	}
	return ErrAborted
}

type abortError struct{ cause error }

func (e *abortError) Error() string { return "narma: job aborted: " + e.cause.Error() }

func (e *abortError) Is(target error) bool { return target == ErrAborted }
