package shm

import (
	"context"
	"errors"

	"github.com/narma-rma/narma/internal/bootstrap"
)

// Group returns n connected endpoints in this process, endpoint i having
// rank i, over heap's job: the shared-memory transport without processes,
// for tests and for measuring the transport itself. heap should be mem's
// source (mem.SetSource) so that the engine's memory can be exposed.
func Group(ctx context.Context, heap *Heap, n int) ([]*Endpoint, error) {
	return GroupConfig(ctx, Config{Heap: heap, Size: n})
}

// GroupConfig is Group with the settings of cfg (its Rank and Exchange
// are ignored).
func GroupConfig(ctx context.Context, cfg Config) ([]*Endpoint, error) {
	if cfg.Size < 1 {
		return nil, errors.New("shm: group of no ranks")
	}
	return bootstrap.StartLocal(cfg.Size, func(r int, x func(context.Context, []byte) ([][]byte, error)) (*Endpoint, error) {
		c := cfg
		c.Rank, c.Exchange = r, x
		return New(ctx, c)
	})
}

// Kill simulates the abrupt failure of the endpoint's rank, for tests of
// ranks that share a process: the endpoint stops as by Close, but its
// control segment says "failed", so that its peers report it to their
// FailureHandler (within their check interval) as they would a process
// that died.
func (e *Endpoint) Kill() error { return e.shutdown(stateFailed) }
