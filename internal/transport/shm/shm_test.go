//go:build linux

package shm

import (
	"context"
	"testing"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

// newHeap makes a job and its heap, installs the heap as mem's source for
// the test, and removes the job's segments at the end.
func newHeap(t testing.TB) *Heap {
	t.Helper()
	job := NewJobID()
	h, err := NewHeap(job)
	if err != nil {
		t.Fatal(err)
	}
	prev := mem.SetSource(h)
	t.Cleanup(func() {
		mem.SetSource(prev)
		if err := RemoveJob(job); err != nil {
			t.Error(err)
		}
	})
	return h
}

func newGroup(t testing.TB, cfg Config) []*Endpoint {
	t.Helper()
	if cfg.Heap == nil {
		cfg.Heap = newHeap(t)
	}
	eps, err := GroupConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, e := range eps {
			e.Close()
		}
	})
	return eps
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint {
		eps := newGroup(t, Config{Size: n, CheckInterval: 5e6})
		out := make([]transport.Endpoint, n)
		for i, e := range eps {
			out[i] = e
		}
		return out
	})
}
