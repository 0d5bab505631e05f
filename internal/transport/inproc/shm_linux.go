package inproc

import (
	"context"
	"sync"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/shm"
)

// heap is the process's shared heap for "shm" jobs, made by the first.
var heap struct {
	once sync.Once
	h    *shm.Heap
	err  error
}

// newShm returns n endpoints of the shared-memory transport in this
// process, over a heap that becomes mem's source.
func newShm(n int) ([]transport.Endpoint, error) {
	heap.once.Do(func() {
		heap.h = shm.NewPrivateHeap()
		mem.SetSource(heap.h)
	})
	if heap.err != nil {
		return nil, heap.err
	}
	eps, err := shm.Group(context.Background(), heap.h, n)
	if err != nil {
		return nil, err
	}
	out := make([]transport.Endpoint, n)
	for i, e := range eps {
		out[i] = e
	}
	return out, nil
}
