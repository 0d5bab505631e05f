package builtin

import (
	"context"
	"fmt"
	"strconv"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/hybrid"
	"github.com/narma-rma/narma/internal/transport/shm"
)

// withHostMemory turns the tcp endpoint of a rank of a job on several
// hosts into a hybrid one when some host runs more than one rank: ranks
// on the same host (the same NARMA_HOST) then talk through shared memory,
// the others over TCP, as MPI libraries do. Every rank of the job calls
// it at the same point of the start-up, since it takes bootstrap rounds:
// one to learn every rank's host and, for a hybrid job, the two of the
// shared-memory transport's start-up, which every rank makes with the
// ranks of its own host (a rank alone on its host with itself). The
// segments of each host are named after the job and the host, so that
// pretend hosts on one machine (network namespaces) do not collide.
func withHostMemory(ctx context.Context, env bootstrap.Env, client *bootstrap.Client, ep transport.Endpoint) (transport.Endpoint, string, error) {
	all, err := client.Exchange(ctx, []byte(strconv.Itoa(env.Host)))
	if err != nil {
		return nil, "", fmt.Errorf("exchange of hosts: %w", err)
	}
	hosts := make([]int, len(all))
	count := map[int]int{}
	for r, b := range all {
		if hosts[r], err = strconv.Atoi(string(b)); err != nil {
			return nil, "", fmt.Errorf("rank %d announced host %q", r, b)
		}
		count[hosts[r]]++
	}
	shared := false
	for _, n := range count {
		shared = shared || n > 1
	}
	if !shared {
		return ep, "tcp", nil
	}
	var local []int // the ranks of this host, in rank order
	me := -1
	for r, h := range hosts {
		if h == env.Host {
			if r == env.Rank {
				me = len(local)
			}
			local = append(local, r)
		}
	}
	heap, err := shm.NewHeap(shm.HostJob(env.Job, env.Host))
	if err != nil {
		return nil, "", err
	}
	prev := mem.SetSource(heap)
	sub := func(ctx context.Context, d []byte) ([][]byte, error) {
		all, err := client.Exchange(ctx, d)
		if err != nil {
			return nil, err
		}
		out := make([][]byte, len(local))
		for i, r := range local {
			out[i] = all[r]
		}
		return out, nil
	}
	sep, err := shm.New(ctx, shm.Config{Rank: me, Size: len(local), Heap: heap, Exchange: sub})
	if err != nil {
		mem.SetSource(prev)
		return nil, "", err
	}
	h, err := hybrid.New(env.Rank, hosts, sep, ep)
	if err != nil {
		sep.Close()
		mem.SetSource(prev)
		return nil, "", err
	}
	return h, "hybrid", nil
}
