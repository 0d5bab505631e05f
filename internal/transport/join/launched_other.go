//go:build !linux

package join

import (
	"context"
	"fmt"

	"github.com/narma-rma/narma/internal/bootstrap"
)

// launched fails: the transports between processes need Linux.
func launched(ctx context.Context, env bootstrap.Env) (*Job, error) {
	return nil, fmt.Errorf("join: rank %d of %d: jobs of several processes need Linux (shared memory and futexes)", env.Rank, env.Size)
}
