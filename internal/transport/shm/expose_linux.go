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
		return transport.Key{}, transport.ErrClosed
	}
	var seg uint32
	var off int
	if len(m) > 0 {
		var ok bool
		seg, off, ok = e.heap.locate(m)
		if !ok {
			return transport.Key{}, errors.New("shm: memory is not in a shared segment of this process (allocate it with the library's allocator while the transport is set up)")
		}
	}
	e.expMu.Lock()
	defer e.expMu.Unlock()
	if len(e.free) == 0 {
		return transport.Key{}, fmt.Errorf("shm: more than %d regions exposed", maxExpose)
	}
	idx := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	e.nextGen++
	x := &e.own.exposures[idx]
	x.pid, x.seg, x.off, x.len = uint32(os.Getpid()), seg, uint64(off), uint64(len(m))
	x.gen.Store(e.nextGen)
	return shmKey(e.nextGen, idx), nil
}

// Unexpose withdraws a region: handles on it fail with
// transport.ErrNoRegion from then on.
func (e *Endpoint) Unexpose(key transport.Key) error {
	if e.closed.Load() {
		return transport.ErrClosed
	}
	idx, gen, ok := splitKey(key)
	e.expMu.Lock()
	defer e.expMu.Unlock()
	if !ok || e.own.exposures[idx].gen.Load() != gen {
		return fmt.Errorf("shm: unexpose key %v at rank %d: %w", key, e.rank, transport.ErrNoRegion)
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
	idx, gen, ok := splitKey(key)
	t := e.peers[target]
	if !ok {
		return nil, fmt.Errorf("shm: key %v at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	x := &t.exposures[idx]
	if x.gen.Load() != gen {
		return nil, fmt.Errorf("shm: key %v at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	pid, seg, off, n := x.pid, x.seg, x.off, x.len
	if size < 0 || uint64(size) > n {
		return nil, fmt.Errorf("shm: handle of %d bytes on a region of %d: %w", size, n, transport.ErrBounds)
	}
	r := &region{ep: e, target: target, exp: x, gen: gen, key: key, word: keyWord(gen, idx)}
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
		return nil, fmt.Errorf("shm: key %v at rank %d: %w", key, target, transport.ErrNoRegion)
	}
	return r, nil
}

// shmKey returns the key of the exposure in table slot idx in generation
// gen (the count of the endpoint's exposures): one word, generation above
// slot.
func shmKey(gen uint64, idx int) transport.Key { return transport.WordKey(keyWord(gen, idx)) }

// keyWord is the word of shmKey(gen, idx), as a notice's slot carries it.
func keyWord(gen uint64, idx int) uint64 { return gen<<keyIdxBit | uint64(idx) }

// splitKey returns the table slot and generation of key, and false if key
// cannot be a key of this transport (not a word, a slot past the table,
// generation 0).
func splitKey(key transport.Key) (idx int, gen uint64, ok bool) {
	w, ok := key.AsWord()
	idx, gen = int(w&(1<<keyIdxBit-1)), w>>keyIdxBit
	return idx, gen, ok && idx < maxExpose && gen != 0
}
