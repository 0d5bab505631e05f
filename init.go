package narma

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/narma-rma/narma/internal/engine"
	"github.com/narma-rma/narma/internal/transport/join"
)

// Init joins the job this process belongs to and returns its rank's Comm.
// Under the launcher (narmarun -n 4 ./prog) every process is one rank and
// the ranks communicate through shared memory (or over TCP, with
// narmarun --transport tcp); without a launcher Init returns a job of
// this process alone, one rank (as MPI's singleton init does), so that a
// program run with plain `go run` works too. A process calls Init once;
// it ends its part with Comm.Close.
//
// ctx bounds the start-up (meeting the other ranks). The Comm's Context
// lasts until Close.
func Init(ctx context.Context) (*Comm, error) {
	j, err := join.Join(ctx)
	if err != nil {
		if errors.Is(err, join.ErrJoined) {
			return nil, fmt.Errorf("narma: Init: this process already joined a job: %w", ErrInvalid)
		}
		return nil, fmt.Errorf("narma: Init: %w", err)
	}
	jctx, cancel := context.WithCancel(context.Background())
	c := &Comm{ctx: jctx}
	c.e = engine.New(j.Endpoint, jctx.Done(), nil)
	if j.Ready != nil {
		// The engine's handlers are in place: wait for the other ranks'.
		if err := j.Ready(ctx); err != nil {
			cancel()
			return nil, errors.Join(fmt.Errorf("narma: Init: %w", err), c.e.Close())
		}
	}
	c.fin = &finalizer{cancel: cancel}
	return c, nil
}

// finalizer ends a job made by Init once.
type finalizer struct {
	once   sync.Once
	cancel context.CancelFunc
	err    error
}

// Close ends this rank's part in a job made by Init, collectively, as
// MPI_Finalize does: it waits until every rank has called Close (so that
// no rank leaves while others still access its memory), then releases the
// transport. Blocking calls still running on other goroutines of this
// rank return errors wrapping ErrAborted. If a peer failed, Close still
// releases everything and returns the error. Closing again returns the
// first result; Close on a Comm of Run, or a duplicate, returns an error
// wrapping ErrInvalid (Run ends its ranks itself).
func (c *Comm) Close() error {
	if c.fin == nil {
		return fmt.Errorf("narma: Close: not a Comm made by Init: %w", ErrInvalid)
	}
	c.fin.once.Do(func() {
		berr := c.e.Barrier(c.ctx)
		c.fin.cancel()
		cerr := c.e.Close()
		c.fin.err = errors.Join(berr, cerr)
	})
	return c.fin.err
}
