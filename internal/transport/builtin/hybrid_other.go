//go:build !linux

package builtin

import (
	"context"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport"
)

// withHostMemory keeps the tcp endpoint: shared memory between the ranks
// of a host needs Linux. It takes the same bootstrap round as on Linux
// (the hosts), so that a job mixing systems starts alike everywhere.
func withHostMemory(ctx context.Context, env bootstrap.Env, client *bootstrap.Client, ep transport.Endpoint) (transport.Endpoint, string, error) {
	if _, err := client.Exchange(ctx, nil); err != nil {
		return nil, "", err
	}
	return ep, "tcp", nil
}
