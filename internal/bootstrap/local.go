package bootstrap

import (
	"context"
	"errors"
	"io"
	"sync"
)

// ErrLocalFailed is returned by the exchanges of a [Local] after Fail.
var ErrLocalFailed = errors.New("bootstrap: a rank of the in-process job failed to start")

// Local is the allgather of a job whose ranks are goroutines of one
// process: what a launcher's [Server] is to processes, for transports
// that are started in-process (tests, and jobs of narma.Run over a
// process transport). Its zero value is not usable; make one with
// [NewLocal].
type Local struct {
	mu     sync.Mutex
	cond   sync.Cond
	n      int
	round  int
	got    int
	data   [][]byte
	result [][]byte
	failed bool
}

// NewLocal returns the allgather of n ranks.
func NewLocal(n int) *Local {
	x := &Local{n: n, data: make([][]byte, n)}
	x.cond.L = &x.mu
	return x
}

// Exchange returns rank's exchange function, of the signature that
// transports take: it contributes data to the current round and returns
// every rank's contribution, indexed by rank, once all have contributed.
// The context is not consulted: the ranks of a Local start together, and
// one that fails calls Fail.
func (x *Local) Exchange(rank int) func(context.Context, []byte) ([][]byte, error) {
	return func(_ context.Context, d []byte) ([][]byte, error) { return x.do(rank, d) }
}

func (x *Local) do(rank int, d []byte) ([][]byte, error) {
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
		return nil, ErrLocalFailed
	}
	return x.result, nil
}

// Fail ends every pending and later exchange with ErrLocalFailed.
func (x *Local) Fail() {
	x.mu.Lock()
	x.failed = true
	x.cond.Broadcast()
	x.mu.Unlock()
}

// StartLocal starts the n ranks of a job whose ranks are goroutines of
// this process: it calls start for every rank at once, each on its own
// goroutine, with that rank's exchange of a shared Local, and returns the
// results in rank order. If any rank fails, the exchanges of the others
// fail too, those that started are closed, and the errors are returned.
func StartLocal[T io.Closer](n int, start func(rank int, exchange func(context.Context, []byte) ([][]byte, error)) (T, error)) ([]T, error) {
	x := NewLocal(n)
	out := make([]T, n)
	errs := make([]error, n)
	ok := make([]bool, n)
	var wg sync.WaitGroup
	for r := range out {
		wg.Go(func() {
			out[r], errs[r] = start(r, x.Exchange(r))
			if ok[r] = errs[r] == nil; !ok[r] {
				x.Fail()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for r, e := range out {
			if ok[r] {
				e.Close()
			}
		}
		return nil, err
	}
	return out, nil
}
