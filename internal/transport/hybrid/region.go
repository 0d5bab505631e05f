package hybrid

import (
	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// localRegion is a handle on a region of a rank of this host: the local
// endpoint's handle, whose errors are annotated with the global rank.
//
// It does not implement transport.WordRegion, even when the local
// handle does (shm's do). The hybrid endpoint is not Caps.Direct, and
// the conformance suite requires that such a transport offer no words;
// the engine would not use them anyway (it takes lock words through
// WordRegion only if Caps.Direct, internal/engine/win.go). Its
// lock words are then updated through the Region methods by every rank:
// with atomic instructions on the mapped memory by the ranks of the
// target's host, and with atomic instructions on the same memory by the
// target's TCP reader for the others (both through
// local.AccumulateAt/CompareSwapAt, sub-word elements through a CAS on
// the same aligned word), so the two paths stay coherent with each other
// and with the target's own operations, which go through the local
// endpoint.
type localRegion struct {
	r      transport.Region
	ep     *Endpoint
	target int
}

var _ transport.MappedRegion = (*localRegion)(nil)

func (r *localRegion) Size() int { return r.r.Size() }

// Mapped returns the local region's memory, if the local transport maps
// it (transport.MappedRegion).
func (r *localRegion) Mapped() ([]byte, bool) {
	if m, ok := r.r.(transport.MappedRegion); ok {
		return m.Mapped()
	}
	return nil, false
}

func (r *localRegion) Put(off int, src []byte, n transport.Notice, c *transport.Completion) error {
	return r.ep.localErr(r.target, r.r.Put(off, src, n, c))
}

func (r *localRegion) Get(off int, dst []byte, n transport.Notice, c *transport.Completion) error {
	return r.ep.localErr(r.target, r.r.Get(off, dst, n, c))
}

func (r *localRegion) Accumulate(off int, op mem.Op, t mem.Type, src, result []byte, n transport.Notice, c *transport.Completion) error {
	return r.ep.localErr(r.target, r.r.Accumulate(off, op, t, src, result, n, c))
}

func (r *localRegion) CompareSwap(off int, t mem.Type, compare, swap, result []byte, n transport.Notice, c *transport.Completion) error {
	return r.ep.localErr(r.target, r.r.CompareSwap(off, t, compare, swap, result, n, c))
}
