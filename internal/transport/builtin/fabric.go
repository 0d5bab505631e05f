//go:build fabric

package builtin

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/fabric"
	"github.com/narma-rma/narma/internal/transport/registry"
)

// The fabric transport is registered only in builds with the tag fabric
// (cgo and libfabric).
func init() {
	registry.Register(registry.Transport{
		Name:    "fabric",
		Summary: "ranks on any hosts over libfabric (RDMA networks; tcp;ofi_rxm, sockets or shm for development): one fi_writedata per notified put",
		Group:   fabricGroup,
		Join:    launchedFabric,
		Status:  fabricStatus,
	})
}

// fabricConfig reads the choice of provider, address and domain:
// NARMA_FABRIC_PROVIDER (else libfabric's own FI_PROVIDER applies),
// NARMA_FABRIC_NODE and NARMA_FABRIC_DOMAIN; NARMA_FABRIC_ATOMICS=software
// applies atomics in software at the target even where the provider has
// native ones; NARMA_FABRIC_TIMEOUT (a duration, "30s" if unset) bounds
// the wait for a peer's answer and how long a peer may stay silent.
func fabricConfig() (fabric.Config, error) {
	cfg := fabric.Config{
		Provider:        os.Getenv("NARMA_FABRIC_PROVIDER"),
		Node:            os.Getenv("NARMA_FABRIC_NODE"),
		Domain:          os.Getenv("NARMA_FABRIC_DOMAIN"),
		SoftwareAtomics: os.Getenv("NARMA_FABRIC_ATOMICS") == "software",
	}
	if v := os.Getenv("NARMA_FABRIC_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Millisecond {
			return cfg, fmt.Errorf("NARMA_FABRIC_TIMEOUT=%q: want a duration of at least 10ms, such as 30s", v)
		}
		cfg.Timeout = d
	}
	return cfg, nil
}

// fabricGroup returns n endpoints of the fabric transport in this process.
func fabricGroup(n int) ([]transport.Endpoint, error) {
	cfg, err := fabricConfig()
	if err != nil {
		return nil, err
	}
	eps, err := fabric.Group(cfg, n)
	if err != nil {
		return nil, err
	}
	return endpoints(eps), nil
}

// launchedFabric joins the job of a launcher over the fabric transport:
// the endpoints' addresses travel over the bootstrap.
func launchedFabric(ctx context.Context, env bootstrap.Env) (*registry.Joined, error) {
	client, err := env.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	cfg, err := fabricConfig()
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	cfg.Rank, cfg.Size, cfg.Exchange = env.Rank, env.Size, client.Exchange
	ep, err := fabric.New(ctx, cfg)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	// As over tcp, a peer may send once it has this rank's address.
	return &registry.Joined{Endpoint: ep, Name: "fabric", Boot: client, Ready: lastRound(client, env)}, nil
}

// fabricStatus opens an endpoint as a rank would and names what
// libfabric chose.
func fabricStatus() string {
	cfg, err := fabricConfig()
	if err != nil {
		return err.Error()
	}
	s, err := fabric.Describe(cfg)
	if err != nil {
		return err.Error()
	}
	return s
}
