//go:build !linux

package builtin

import (
	"context"
	"errors"
	"fmt"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/registry"
)

// Off Linux, shm starts neither way (it needs shared memory and futexes),
// and hybrid jobs run over TCP alone (withHostMemory).

func registerShm() {
	registry.Register(registry.Transport{
		Name:    "shm",
		OneHost: true,
		Summary: "ranks as processes of one host (Linux only)",
		Group: func(int) ([]transport.Endpoint, error) {
			return nil, errors.New("the shm transport needs Linux")
		},
		Join: func(_ context.Context, env bootstrap.Env) (*registry.Joined, error) {
			return nil, fmt.Errorf("join: rank %d of %d: the shm transport needs Linux (shared memory and futexes); use tcp", env.Rank, env.Size)
		},
	})
}

func registerHybrid() {
	registry.Register(registry.Transport{
		Name:    "hybrid",
		Network: true,
		Summary: "ranks on several hosts: TCP between all of them off Linux",
		Group: func(int) ([]transport.Endpoint, error) {
			return nil, errors.New("the hybrid transport needs Linux")
		},
		Join: func(ctx context.Context, env bootstrap.Env) (*registry.Joined, error) {
			return launchedTCP(ctx, env, true)
		},
	})
}
