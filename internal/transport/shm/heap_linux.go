package shm

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/sys"
)

// Heap is the shared-memory allocator of one process in a job: every block
// is a segment file of its own, mapped here and, on demand, by the peers
// that access it. Installed with mem.SetSource, it makes every allocation
// of the library (window memory, control words, narma.AllocMem) shareable.
// It also keeps the mappings this process made of other processes'
// segments. A Heap is safe for concurrent use.
type Heap struct {
	job string
	pid int

	mu     sync.Mutex
	nextID uint32
	own    []ownSeg          // this process's segments, sorted by address
	byID   map[uint32][]byte // this process's segments by id
	remote map[segRef][]byte // mappings of other processes' segments
	closed bool

	// private: every rank using the heap is in this process, so segment
	// files are removed as soon as they are made (nobody opens them).
	private bool
}

// ownSeg is one segment of this process.
type ownSeg struct {
	base uintptr
	id   uint32
	mem  []byte // the whole mapping
}

// segRef names a segment of the job: the process that made it and its id.
type segRef struct {
	pid uint32
	id  uint32
}

var _ mem.Source = (*Heap)(nil)

// NewHeap returns the heap of this process in job (see NewJobID).
func NewHeap(job string) (*Heap, error) {
	if !validJob(job) {
		return nil, fmt.Errorf("shm: %q is not a job identifier", job)
	}
	return &Heap{job: job, pid: os.Getpid(), byID: make(map[uint32][]byte), remote: make(map[segRef][]byte)}, nil
}

// NewPrivateHeap returns a heap for a job whose ranks all run in this
// process (Group): its segments are shared mappings as in a process job,
// but their files are removed at once, so that nothing is left behind
// even if the process dies.
func NewPrivateHeap() *Heap {
	h, _ := NewHeap(NewJobID())
	h.private = true
	return h
}

// Job returns the job the heap belongs to.
func (h *Heap) Job() string { return h.job }

func (h *Heap) segName(pid, id uint32) string {
	return "p" + strconv.FormatUint(uint64(pid), 10) + "." + strconv.FormatUint(uint64(id), 10)
}

// Alloc returns n zeroed bytes in a new segment (mem.Source).
func (h *Heap) Alloc(n int) ([]byte, error) {
	if n <= 0 || n > 1<<46 {
		return nil, fmt.Errorf("shm: allocation of %d bytes", n)
	}
	size := (n + pageSize - 1) &^ (pageSize - 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("shm: heap closed")
	}
	h.nextID++
	id := h.nextID
	path := segmentPath(h.job, h.segName(uint32(h.pid), id))
	b, err := createSegment(path, size)
	if err != nil {
		return nil, err
	}
	if h.private {
		os.Remove(path)
	}
	base := mem.Addr(b)
	i, _ := slices.BinarySearchFunc(h.own, base, func(s ownSeg, a uintptr) int { return cmpAddr(s.base, a) })
	h.own = slices.Insert(h.own, i, ownSeg{base: base, id: id, mem: b})
	h.byID[id] = b
	return b[:n], nil
}

func cmpAddr(a, b uintptr) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Free unmaps and removes a segment returned by Alloc (mem.Source). Peers
// that mapped it keep their mapping until they close.
func (h *Heap) Free(b []byte) error {
	if len(b) == 0 {
		return errors.New("shm: free of an empty block")
	}
	base := mem.Addr(b)
	h.mu.Lock()
	defer h.mu.Unlock()
	i, found := slices.BinarySearchFunc(h.own, base, func(s ownSeg, a uintptr) int { return cmpAddr(s.base, a) })
	if !found {
		return errors.New("shm: free of a block that is not a segment")
	}
	s := h.own[i]
	h.own = slices.Delete(h.own, i, i+1)
	delete(h.byID, s.id)
	os.Remove(segmentPath(h.job, h.segName(uint32(h.pid), s.id)))
	return sys.Retire(s.mem)
}

// locate returns the segment id and offset of b, which must lie inside one
// segment of this process.
func (h *Heap) locate(b []byte) (id uint32, off int, ok bool) {
	addr := mem.Addr(b)
	h.mu.Lock()
	defer h.mu.Unlock()
	i, found := slices.BinarySearchFunc(h.own, addr, func(s ownSeg, a uintptr) int { return cmpAddr(s.base, a) })
	if !found {
		if i == 0 {
			return 0, 0, false
		}
		i--
	}
	s := h.own[i]
	if addr < s.base || addr-s.base+uintptr(len(b)) > uintptr(len(s.mem)) {
		return 0, 0, false
	}
	return s.id, int(addr - s.base), true
}

// attach returns the whole mapping of segment id of process pid, mapping
// it on first use.
func (h *Heap) attach(pid, id uint32) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("shm: heap closed")
	}
	if int(pid) == h.pid {
		if b, ok := h.byID[id]; ok {
			return b, nil
		}
		return nil, fmt.Errorf("shm: no segment %d in this process", id)
	}
	if h.private {
		return nil, fmt.Errorf("shm: segment %d of process %d: this heap serves only its own process", id, pid)
	}
	ref := segRef{pid, id}
	if b, ok := h.remote[ref]; ok {
		return b, nil
	}
	b, err := openSegment(segmentPath(h.job, h.segName(pid, id)))
	if err != nil {
		return nil, err
	}
	h.remote[ref] = b
	return b, nil
}

// Close retires the mappings of other processes' segments (see retire:
// stale handles on them read zeros instead of faulting). This process's
// own segments stay until freed (the blocks may still be in use); the
// job's owner removes the files of all of them (RemoveJob).
func (h *Heap) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	for ref, b := range h.remote {
		sys.Retire(b)
		delete(h.remote, ref)
	}
	return nil
}
