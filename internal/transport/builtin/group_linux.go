package builtin

import (
	"context"
	"sync"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/hybrid"
	"github.com/narma-rma/narma/internal/transport/shm"
)

// heap is the process's shared heap for "shm" jobs, made by the first.
var heap struct {
	once sync.Once
	h    *shm.Heap
	err  error
}

// processHeap returns the process's shared heap, made and installed as
// mem's source on first use.
func processHeap() (*shm.Heap, error) {
	heap.once.Do(func() {
		heap.h = shm.NewPrivateHeap()
		mem.SetSource(heap.h)
	})
	return heap.h, heap.err
}

// hybridGroup returns n endpoints of the hybrid transport in this process,
// ranks alternating between two hosts (so that every pair of neighbours
// talks over TCP and every other pair over shared memory).
func hybridGroup(n int) ([]transport.Endpoint, error) {
	h, err := processHeap()
	if err != nil {
		return nil, err
	}
	hosts := make([]int, n)
	for r := range hosts {
		hosts[r] = r % 2
	}
	eps, err := hybrid.Group(context.Background(), h, hosts)
	if err != nil {
		return nil, err
	}
	return endpoints(eps), nil
}

// shmGroup returns n endpoints of the shared-memory transport in this
// process, over a heap that becomes mem's source.
func shmGroup(n int) ([]transport.Endpoint, error) {
	if _, err := processHeap(); err != nil {
		return nil, err
	}
	eps, err := shm.Group(context.Background(), heap.h, n)
	if err != nil {
		return nil, err
	}
	return endpoints(eps), nil
}
