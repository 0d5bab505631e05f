package narma

import (
	"context"

	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/tcp"
)

// RunTCP runs fn on n goroutine ranks whose endpoints are those of the
// TCP transport made with cfg, each rank with its own endpoint, for tests
// that read the transport's frame counters.
func RunTCP(ctx context.Context, n int, cfg tcp.Config, fn func(c *Comm, ep *tcp.Endpoint) error) error {
	var eps []*tcp.Endpoint
	prev := newEndpoints
	defer func() { newEndpoints = prev }()
	newEndpoints = func(n int) ([]transport.Endpoint, error) {
		cfg.Size = n
		g, err := tcp.Group(ctx, cfg)
		if err != nil {
			return nil, err
		}
		eps = g
		out := make([]transport.Endpoint, n)
		for i, e := range g {
			out[i] = e
		}
		return out, nil
	}
	return RunContext(ctx, n, func(c *Comm) error { return fn(c, eps[c.Rank()]) })
}
