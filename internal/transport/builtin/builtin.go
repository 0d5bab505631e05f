// Package builtin registers narma's transports with package registry:
// local (ranks as goroutines, loads and stores), shm (processes of one
// host, shared memory; Linux), tcp (any hosts) and hybrid (shared memory
// within a host, TCP between hosts). Importing it is enough; the
// in-process start (inproc) and the launched one (join) do.
package builtin

import (
	"context"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/local"
	"github.com/narma-rma/narma/internal/transport/registry"
	"github.com/narma-rma/narma/internal/transport/tcp"
)

func init() {
	registry.Register(registry.Transport{
		Name:    "local",
		Summary: "ranks as goroutines of one process: loads and stores on the target's memory, complete on return",
		Group:   local.New,
	})
	registry.Register(registry.Transport{
		Name:    "tcp",
		Network: true,
		Summary: "ranks on any hosts: one frame per operation over authenticated TCP connections",
		Group:   tcpGroup,
		Join: func(ctx context.Context, env bootstrap.Env) (*registry.Joined, error) {
			return launchedTCP(ctx, env, false)
		},
	})
	registerShm()
	registerHybrid()
}

// tcpGroup returns n endpoints of the tcp transport in this process,
// connected over loopback.
func tcpGroup(n int) ([]transport.Endpoint, error) {
	eps, err := tcp.Group(context.Background(), tcp.Config{Size: n})
	if err != nil {
		return nil, err
	}
	return endpoints(eps), nil
}

// endpoints returns eps as transport endpoints.
func endpoints[E transport.Endpoint](eps []E) []transport.Endpoint {
	out := make([]transport.Endpoint, len(eps))
	for i, e := range eps {
		out[i] = e
	}
	return out
}
