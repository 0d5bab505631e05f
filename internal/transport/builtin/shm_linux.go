package builtin

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport/registry"
	"github.com/narma-rma/narma/internal/transport/shm"
)

func registerShm() {
	registry.Register(registry.Transport{
		Name:    "shm",
		OneHost: true,
		Summary: "ranks as processes of one host: windows in shared segments, notice rings and futex doorbells",
		Group:   shmGroup,
		Join:    launchedShm,
		Stale:   staleSegments,
		Remove:  shm.RemoveJob,
		Status:  cmaStatus,
	})
}

func registerHybrid() {
	registry.Register(registry.Transport{
		Name:    "hybrid",
		Network: true,
		Summary: "ranks on several hosts: shared memory between the ranks of a host, TCP between hosts",
		Group:   hybridGroup,
		Join: func(ctx context.Context, env bootstrap.Env) (*registry.Joined, error) {
			return launchedTCP(ctx, env, true)
		},
		Stale:  staleSegments,
		Remove: shm.RemoveJob,
		Status: cmaStatus,
	})
}

// cmaStatus says how large messages travel between the ranks of this
// host.
func cmaStatus() string {
	ok, why := shm.CMAStatus()
	if ok {
		return "large messages between ranks of a host: single copy (" + why + ")"
	}
	return "large messages between ranks of a host: through the rings, no single copy: " + why
}

// staleSegments removes the segment files of jobs whose owner is gone
// (shm.RemoveStale) and names them.
func staleSegments() ([]string, error) {
	names, err := shm.RemoveStale()
	for i, n := range names {
		names[i] = "segment " + filepath.Join(shm.Dir, n)
	}
	return names, err
}

// launchedShm joins the job of a launcher over the shared-memory
// transport.
func launchedShm(ctx context.Context, env bootstrap.Env) (*registry.Joined, error) {
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
	return &registry.Joined{Endpoint: ep, Name: "shm", Boot: client}, nil
}
