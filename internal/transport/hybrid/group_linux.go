package hybrid

import (
	"context"
	"errors"
	"fmt"

	"github.com/narma-rma/narma/internal/transport/shm"
	"github.com/narma-rma/narma/internal/transport/tcp"
)

// Config describes an in-process hybrid job to GroupConfig.
type Config struct {
	// Hosts gives the host of every rank (equal values: same host).
	Hosts []int
	// Heap is the shared heap of every host's shm endpoints; it should
	// be mem's source (mem.SetSource) so that the memory the engine
	// exposes lies in its segments.
	Heap *shm.Heap
	// Local holds the settings of every host's shm endpoints (its Rank,
	// Size, Heap and Exchange are ignored).
	Local shm.Config
	// Remote holds the settings of the TCP endpoints (its Rank, Size and
	// Exchange are ignored).
	Remote tcp.Config
}

// Group returns a hybrid job in this process, endpoint i having rank i
// on host hosts[i]: for each host a group of shm endpoints over its
// ranks, all over heap, and a group of TCP endpoints over all ranks on
// loopback. It is the hybrid transport without processes or hosts, for
// tests.
func Group(ctx context.Context, heap *shm.Heap, hosts []int) ([]*Endpoint, error) {
	return GroupConfig(ctx, Config{Hosts: hosts, Heap: heap})
}

// GroupConfig is Group with the settings of cfg.
func GroupConfig(ctx context.Context, cfg Config) ([]*Endpoint, error) {
	n := len(cfg.Hosts)
	if n == 0 {
		return nil, errors.New("hybrid: group of no ranks")
	}
	if cfg.Heap == nil {
		return nil, errors.New("hybrid: Config needs a Heap")
	}
	// The ranks of each host, hosts in order of their first rank.
	var order []int
	ranks := make(map[int][]int)
	for r, h := range cfg.Hosts {
		if ranks[h] == nil {
			order = append(order, h)
		}
		ranks[h] = append(ranks[h], r)
	}
	locals := make([]*shm.Endpoint, n) // by global rank
	var remotes []*tcp.Endpoint
	fail := func(err error) ([]*Endpoint, error) {
		for _, e := range locals {
			if e != nil {
				e.Close()
			}
		}
		for _, e := range remotes {
			e.Close()
		}
		return nil, err
	}
	// One host after the other: the groups share the heap's job, in
	// which an shm endpoint names its control segment after its (local)
	// rank until every rank of its group has mapped it. In a real job
	// each host has its own /dev/shm.
	for _, h := range order {
		c := cfg.Local
		c.Heap, c.Size = cfg.Heap, len(ranks[h])
		eps, err := shm.GroupConfig(ctx, c)
		if err != nil {
			return fail(fmt.Errorf("hybrid: shm group of host %d: %w", h, err))
		}
		for l, e := range eps {
			locals[ranks[h][l]] = e
		}
	}
	rc := cfg.Remote
	rc.Size = n
	remotes, err := tcp.Group(ctx, rc)
	if err != nil {
		return fail(fmt.Errorf("hybrid: tcp group: %w", err))
	}
	eps := make([]*Endpoint, n)
	for r := range eps {
		if eps[r], err = New(r, cfg.Hosts, locals[r], remotes[r]); err != nil {
			return fail(err)
		}
	}
	return eps, nil
}
