package engine

import (
	"context"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// sharesMemory reports whether the transport maps job rank j's exposed
// memory into this process (transport.MemorySharer); always for the rank
// itself.
func (k *core) sharesMemory(j int) bool {
	if j == k.rank {
		return true
	}
	ms, ok := k.ep.(transport.MemorySharer)
	return ok && ms.SharesMemory(j)
}

// SplitShared returns the communicator of the ranks of c whose memory
// this rank reaches with loads and stores, collectively over c
// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED): the ranks of its host
// on shared-memory transports, only itself on network transports. Ranks
// keep their order in c.
func (c *Comm) SplitShared(ctx context.Context) (*Comm, error) {
	// The lowest job rank sharing memory with this one names the class:
	// sharing is an equivalence, so every member finds the same one.
	color := c.core.rank
	for j := range c.core.size {
		if c.sharesMemory(j) {
			color = j
			break
		}
	}
	return c.Split(ctx, color, c.rank)
}

// Mapped returns rank r's memory of the window as this process reaches
// it with loads and stores (MPI_Win_shared_query): its own memory for the
// calling rank, a mapping of the peer's on transports that share memory
// with it, else an error wrapping ErrNotShared.
func (w *Win) Mapped(r int) ([]byte, error) {
	if err := w.check("SharedQuery"); err != nil {
		return nil, err
	}
	if err := w.c.checkRank("SharedQuery", r); err != nil {
		return nil, err
	}
	if r == w.c.rank {
		return w.mem, nil
	}
	if m, ok := w.targets[r].region.(transport.MappedRegion); ok {
		if b, ok := m.Mapped(); ok {
			return b, nil
		}
	}
	return nil, opErr("SharedQuery", w.c.rank, ErrNotShared, "rank %d's memory is reached only through RMA calls (another host, or a transport that maps no peer's memory)", r)
}

// AllocateShared creates a window over size bytes of library memory,
// collectively, as Allocate, on a communicator whose ranks all reach each
// other's memory with loads and stores (MPI_Win_allocate_shared): Mapped
// then gives every rank's memory. On any other communicator every rank
// returns an error wrapping ErrNotShared, naming a rank that is not
// shared, and no window is left.
func (c *Comm) AllocateShared(ctx context.Context, size int, opt WinOptions) (*Win, error) {
	w, err := c.Allocate(ctx, size, opt)
	if err != nil {
		return nil, err
	}
	// Each rank reports the first rank it cannot map, or -1.
	var mine [1]int64
	mine[0] = -1
	for r := range c.size {
		if _, err := w.Mapped(r); err != nil {
			mine[0] = int64(r)
			break
		}
	}
	all := make([]int64, c.size)
	if err := c.Allgather(ctx, mem.Bytes(mine[:]), mem.Bytes(all)); err != nil {
		// Free is collective too, and a rank that failed the exchange
		// may not reach it: leave the window to the end of the job
		// rather than wait for ever.
		return nil, err
	}
	for r, bad := range all {
		if bad >= 0 {
			if err := w.Free(ctx); err != nil {
				return nil, err
			}
			return nil, opErr("AllocateShared", c.rank, ErrNotShared, "rank %d does not reach rank %d's memory with loads and stores; make the window on a communicator of SplitShared", r, bad)
		}
	}
	return w, nil
}
