package hybrid

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/engine"
	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// TestEngine runs the engine over a hybrid job of four ranks on two
// hosts, with both window strategies: collectives (active messages on
// both paths); exclusive locks on rank 0, whose lock word its host's
// ranks take with shm atomics and the others with TCP atomics, guarding a
// read-modify-write that must never be lost; and notified puts from
// every rank to every other, matched by notification requests.
func TestEngine(t *testing.T) {
	eps := newWorld(t, nil, []int{0, 1, 0, 1})
	cs := make([]*engine.Comm, len(eps))
	for r, e := range eps {
		cs[r] = engine.New(e, nil, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = engineRank(ctx, c)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func engineRank(ctx context.Context, c *engine.Comm) error {
	const iters, tag = 30, 5
	n, me := c.Size(), c.Rank()
	le := binary.LittleEndian
	for _, s := range []engine.Strategy{engine.Deferred, engine.Immediate} {
		w, err := c.Allocate(ctx, 8+8*n, engine.WinOptions{Strategy: s})
		if err != nil {
			return err
		}
		if w.Strategy() != s {
			return fmt.Errorf("window strategy %v, want %v", w.Strategy(), s)
		}
		buf := make([]byte, 8)
		for i := 0; i < iters; i++ {
			if err := w.Lock(ctx, true, 0, 0); err != nil {
				return err
			}
			if err := w.Do(&engine.Access{Kind: engine.KindGet, Type: mem.Int64, Origin: buf, Target: 0}); err != nil {
				return err
			}
			if err := w.Flush(ctx, 0); err != nil {
				return err
			}
			le.PutUint64(buf, le.Uint64(buf)+1)
			if err := w.Do(&engine.Access{Kind: engine.KindPut, Type: mem.Int64, Origin: buf, Target: 0}); err != nil {
				return err
			}
			if err := w.Unlock(ctx, 0); err != nil {
				return err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if me == 0 {
			if v := le.Uint64(w.Memory()); v != uint64(n*iters) {
				return fmt.Errorf("%v: counter %d after %d locked increments", s, v, n*iters)
			}
		}

		req, err := w.NotifyInit(engine.AnySource, tag, n-1)
		if err != nil {
			return err
		}
		if err := req.Start(); err != nil {
			return err
		}
		if err := w.LockAll(ctx, 0); err != nil {
			return err
		}
		val := make([]byte, 8)
		le.PutUint64(val, uint64(1000*me+1))
		for t := 0; t < n; t++ {
			if t == me {
				continue
			}
			a := &engine.Access{Kind: engine.KindPut, Type: mem.Int64, Origin: val, Target: t, Disp: 8 + 8*me,
				Notice: transport.TagNotice(transport.NoticeTag, tag)}
			if err := w.Do(a); err != nil {
				return err
			}
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		if _, err := req.Wait(ctx); err != nil {
			return err
		}
		for src := 0; src < n; src++ {
			if v := le.Uint64(w.Memory()[8+8*src:]); src != me && v != uint64(1000*src+1) {
				return fmt.Errorf("%v: the notices are in, but the data of rank %d is %d", s, src, v)
			}
		}
		if err := req.Free(); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := w.Free(ctx); err != nil {
			return err
		}
	}
	return c.Barrier(ctx)
}
