package shm

import (
	"context"
	"errors"
	"sync"
)

// exchange is an in-memory allgather among the goroutines of a Group.
type exchange struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      int
	round  int
	got    int
	data   [][]byte
	result [][]byte
	failed bool
}

func newExchange(n int) *exchange {
	x := &exchange{n: n, data: make([][]byte, n)}
	x.cond = sync.NewCond(&x.mu)
	return x
}

// do contributes rank's data to the current round and returns everyone's.
func (x *exchange) do(rank int, d []byte) ([][]byte, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	round := x.round
	x.data[rank] = append([]byte(nil), d...)
	x.got++
	if x.got == x.n {
		x.result = x.data
		x.data = make([][]byte, x.n)
		x.got = 0
		x.round++
		x.cond.Broadcast()
	}
	for x.round == round && !x.failed {
		x.cond.Wait()
	}
	if x.failed {
		return nil, errors.New("shm: a rank of the group failed to start")
	}
	return x.result, nil
}

func (x *exchange) fail() {
	x.mu.Lock()
	x.failed = true
	x.cond.Broadcast()
	x.mu.Unlock()
}

// Group returns n connected endpoints in this process, endpoint i having
// rank i, over heap's job: the shared-memory transport without processes,
// for tests and for measuring the transport itself. heap should be mem's
// source (mem.SetSource) so that the engine's memory can be exposed.
func Group(ctx context.Context, heap *Heap, n int) ([]*Endpoint, error) {
	return GroupConfig(ctx, Config{Heap: heap, Size: n})
}

// GroupConfig is Group with the settings of cfg (its Rank and Exchange
// are ignored).
func GroupConfig(ctx context.Context, cfg Config) ([]*Endpoint, error) {
	if cfg.Size < 1 {
		return nil, errors.New("shm: group of no ranks")
	}
	x := newExchange(cfg.Size)
	eps := make([]*Endpoint, cfg.Size)
	errs := make([]error, cfg.Size)
	var wg sync.WaitGroup
	for r := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cfg
			c.Rank = r
			c.Exchange = func(_ context.Context, d []byte) ([][]byte, error) { return x.do(r, d) }
			eps[r], errs[r] = New(ctx, c)
			if errs[r] != nil {
				x.fail()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, e := range eps {
			if e != nil {
				e.Close()
			}
		}
		return nil, err
	}
	return eps, nil
}

// Kill simulates the abrupt failure of the endpoint's rank, for tests of
// ranks that share a process: the endpoint stops as by Close, but its
// control segment says "failed", so that its peers report it to their
// FailureHandler (within their check interval) as they would a process
// that died.
func (e *Endpoint) Kill() error { return e.shutdown(stateFailed) }
