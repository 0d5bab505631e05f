package shm

import (
	"errors"
	"fmt"
	"os"

	"github.com/narma-rma/narma/internal/transport"
)

// Exposure: the table of this endpoint's exposed memory in its control
// segment, and the regions of peers' exposures.

// Expose makes m, which must lie in one segment of the endpoint's heap
// (memory from mem.Alloc while the heap is mem's source), accessible to
// the other ranks.
func (e *Endpoint) Expose(m []byte) (transport.Key, error) {
	if e.closed.Load() {
		return 0, transport.ErrClosed
	}
	var seg uint32
	var off int
	if len(m) > 0 {
		var ok bool
		seg, off, ok = e.heap.locate(m)
		if !ok {
			return 0, errors.New("shm: memory is not in a shared segment of this process (allocate it with the library's allocator while the transport is set up)")
		}
	}
	e.expMu.Lock()
	defer e.expMu.Unlock()
	if len(e.free) == 0 {
		return 0, fmt.Errorf("shm: more than %d regions exposed", maxExpose)
	}
	idx := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	e.nextGen++
	x := &e.own.exposures[idx]
	x.pid, x.seg, x.off, x.len = uint32(os.Getpid()), seg, uint64(off), uint64(len(m))
	x.gen.Store(e.nextGen)
	return transport.Key(e.nextGen<<keyIdxBit | uint64(idx)), nil
}

// Unexpose withdraws a region: handles on it fail with
// transport.ErrNoRegion from then on.
func (e *Endpoint) Unexpose(key transport.Key) error {
	if e.closed.Load() {
		return transport.ErrClosed
	}
	idx := int(key & (1<<keyIdxBit - 1))
	gen := uint64(key) >> keyIdxBit
	e.expMu.Lock()
	defer e.expMu.Unlock()
	if idx >= maxExpose || gen == 0 || e.own.exposures[idx].gen.Load() != gen {
		return fmt.Errorf("shm: unexpose key %d at rank %d: %w", key, e.rank, transport.ErrNoRegion)
	}
	e.own.exposures[idx].gen.Store(0)
	e.free = append(e.free, idx)
	return nil
}

// Region returns a handle for the region key exposed by target, limited
// to its first size bytes.
func (e *Endpoint) Region(target int, key transport.Key, size int) (transport.Region, error) {
	if err := e.peerErr(target); err != nil {
		return nil, err
	}
	idx := int(key & (1<<keyIdxBit - 1))
	gen := uint64(key) >> keyIdxBit
	t := e.peers[target]
	if idx >= maxExpose || gen == 0 {
		return nil, fmt.Errorf("shm: key %d at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	x := &t.exposures[idx]
	if x.gen.Load() != gen {
		return nil, fmt.Errorf("shm: key %d at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	pid, seg, off, n := x.pid, x.seg, x.off, x.len
	if size < 0 || uint64(size) > n {
		return nil, fmt.Errorf("shm: handle of %d bytes on a region of %d: %w", size, n, transport.ErrBounds)
	}
	r := &region{ep: e, target: target, exp: x, gen: gen, key: key}
	if n > 0 {
		segMem, err := e.heap.attach(pid, seg)
		if err != nil {
			return nil, fmt.Errorf("shm: region %d of rank %d: %w", key, target, err)
		}
		if off > uint64(len(segMem)) || n > uint64(len(segMem))-off {
			return nil, fmt.Errorf("shm: region %d of rank %d lies outside its segment: %w", key, target, transport.ErrBounds)
		}
		// Keep the capacity up to the segment's end: the sub-word
		// atomics need the aligned word around each element.
		r.mem = segMem[off : off+uint64(size)]
	}
	if x.gen.Load() != gen {
		return nil, fmt.Errorf("shm: key %d at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	return r, nil
}
