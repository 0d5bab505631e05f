//go:build !linux

package join

import (
	"context"
	"fmt"

	"github.com/narma-rma/narma/internal/bootstrap"
)

// launched joins the job of a launcher over TCP; the shared-memory
// transport needs Linux.
func launched(ctx context.Context, env bootstrap.Env) (*Job, error) {
	switch env.Transport {
	case "tcp", "hybrid":
		return launchedTCP(ctx, env)
	case "", "shm":
		return nil, fmt.Errorf("join: rank %d of %d: the shm transport needs Linux (shared memory and futexes); use tcp", env.Rank, env.Size)
	default:
		return nil, fmt.Errorf("join: %s=%q: unknown transport (want tcp; shm needs Linux)", bootstrap.EnvTransport, env.Transport)
	}
}
