package join

import (
	"context"
	"fmt"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport/shm"
)

// launched joins the job of a launcher over its transport.
func launched(ctx context.Context, env bootstrap.Env) (*Job, error) {
	switch env.Transport {
	case "", "shm":
	case "tcp", "hybrid":
		return launchedTCP(ctx, env)
	default:
		return nil, fmt.Errorf("join: %s=%q: unknown transport (want shm, tcp or hybrid)", bootstrap.EnvTransport, env.Transport)
	}
	client, err := env.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	// The bootstrap's rounds are needed only to start: once every rank
	// has mapped every other's control segment, the transport watches
	// the peers. The connection stays open, watched, until the process
	// exits.
	heap, err := shm.NewHeap(env.Job)
	if err != nil {
		client.Close()
		return nil, err
	}
	// Every allocation of the library in this process now comes from
	// shared segments, which the peers can map.
	prev := mem.SetSource(heap)
	ep, err := shm.New(ctx, shm.Config{Rank: env.Rank, Size: env.Size, Heap: heap, Exchange: client.Exchange})
	if err != nil {
		mem.SetSource(prev)
		client.Close()
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	watch(client, env)
	return &Job{Endpoint: ep, Transport: "shm", boot: client}, nil
}
