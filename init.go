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
// Init also joins jobs that other launchers start, recognized from their
// environment: Slurm's srun (SLURM_PROCID with SLURM_STEP_NUM_TASKS),
// Open MPI's mpirun (OMPI_COMM_WORLD_RANK/SIZE) and MPICH's or Intel
// MPI's mpiexec (PMI_RANK/SIZE). Such launchers give no way to meet, so
// the job's environment names one: NARMA_RENDEZVOUS=host:port, an
// address of the host where rank 0 runs, at which rank 0 serves the
// job's bootstrap and the others dial it, and NARMA_SECRET, at least 32
// hex digits, which authenticates every connection of the job (for
// example `export NARMA_RENDEZVOUS=$(hostname -i):29500
// NARMA_SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')` in a
// batch script before srun; Open MPI's mpirun forwards them with -x).
// Such a job runs over the TCP transport; rank 0's Close waits until the
// others have left.
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
	c.fin = &finalizer{cancel: cancel, finish: j.Finish}
	return c, nil
}

// finalizer ends a job made by Init once.
type finalizer struct {
	once   sync.Once
	cancel context.CancelFunc
	finish func() error // the job's own end, if it has one
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
		var ferr error
		if c.fin.finish != nil {
			ferr = c.fin.finish()
		}
		c.fin.err = errors.Join(berr, cerr, ferr)
	})
	return c.fin.err
}
