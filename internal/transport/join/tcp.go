package join

import (
	"context"
	"fmt"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport/tcp"
)

// launchedTCP joins the job of a launcher over the TCP transport, on any
// operating system. The library's memory stays ordinary Go memory: the
// peers reach it through this process's reader goroutines, not by
// mapping it.
func launchedTCP(ctx context.Context, env bootstrap.Env) (*Job, error) {
	secret, err := env.SecretBytes(tcp.MinSecret)
	if err != nil {
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	client, err := bootstrap.Dial(ctx, env.Addr, env.Rank, env.Size)
	if err != nil {
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	ep, err := tcp.New(ctx, tcp.Config{
		Rank:        env.Rank,
		Size:        env.Size,
		Listen:      env.Listen,
		Exchange:    client.Exchange,
		Secret:      secret,
		PeerTimeout: env.PeerTimeout,
	})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	// A peer may send as soon as it has this rank's address, and the
	// transport drops an active message that finds no handler: the
	// bootstrap stays open for one more round, which Ready runs once the
	// handlers are installed. From then on the transport's connections,
	// heartbeats included, watch the peers.
	ready := func(ctx context.Context) error {
		defer client.Close()
		if _, err := client.Exchange(ctx, nil); err != nil {
			return fmt.Errorf("join: rank %d of %d: waiting for the other ranks: %w", env.Rank, env.Size, err)
		}
		return nil
	}
	return &Job{Endpoint: ep, Transport: "tcp", Ready: ready}, nil
}
