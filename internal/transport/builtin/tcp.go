package builtin

import (
	"context"
	"fmt"
	"net"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/registry"
	"github.com/narma-rma/narma/internal/transport/tcp"
)

// launchedTCP joins the job of a launcher over the TCP transport, on any
// operating system, or, if hybrid, over the hybrid one (shared memory
// between the ranks of a host, on Linux). The library's memory stays
// ordinary Go memory: the peers reach it through this process's reader
// goroutines, not by mapping it.
func launchedTCP(ctx context.Context, env bootstrap.Env, hybrid bool) (*registry.Joined, error) {
	secret, err := env.SecretBytes(tcp.MinSecret)
	if err != nil {
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	client, err := bootstrap.Dial(ctx, env.Addr, env.Rank, env.Size, secret)
	if err != nil {
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	listen := env.Listen
	if listen == "" || listen == bootstrap.ListenAuto {
		listen = autoListen(client.LocalAddr())
	}
	ep, err := tcp.New(ctx, tcp.Config{
		Rank:        env.Rank,
		Size:        env.Size,
		Listen:      listen,
		Exchange:    client.Exchange,
		Secret:      secret,
		PeerTimeout: env.PeerTimeout,
		Spin:        env.Spin,
	})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
	}
	var all transport.Endpoint = ep
	name := "tcp"
	if hybrid {
		if all, name, err = withHostMemory(ctx, env, client, ep); err != nil {
			ep.Close()
			client.Close()
			return nil, fmt.Errorf("join: rank %d of %d: %w", env.Rank, env.Size, err)
		}
	}
	// A peer may send as soon as it has this rank's address, and the
	// transport drops an active message that finds no handler: the
	// bootstrap stays open for one more round, which Ready runs once the
	// handlers are installed. From then on the transport's connections,
	// heartbeats included, watch the peers, and the bootstrap
	// connection, open until the process exits, watches the launcher.
	return &registry.Joined{Endpoint: all, Name: name, Boot: client, Ready: lastRound(client, env)}, nil
}

// lastRound returns the Ready of a rank whose peers may send as soon as
// they have its address: one more bootstrap round, once its handlers are
// installed.
func lastRound(client *bootstrap.Client, env bootstrap.Env) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if _, err := client.Exchange(ctx, nil); err != nil {
			client.Close()
			return fmt.Errorf("join: rank %d of %d: waiting for the other ranks: %w", env.Rank, env.Size, err)
		}
		return nil
	}
}

// autoListen returns the address the tcp transport listens on when the
// launcher leaves it to the rank (NARMA_TCP_LISTEN unset or "auto"): the
// local address of its bootstrap connection, the interface through which
// this host reaches the launcher's, and so the one the other hosts of the
// job reach it through, port 0; loopback when the bootstrap is a Unix
// socket, the job being on one host.
func autoListen(local net.Addr) string {
	if a, ok := local.(*net.TCPAddr); ok && a.IP != nil && !a.IP.IsUnspecified() {
		return (&net.TCPAddr{IP: a.IP, Zone: a.Zone}).String()
	}
	return "127.0.0.1:0"
}
