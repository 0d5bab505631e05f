package narma_test

import (
	"context"
	"testing"

	"github.com/narma-rma/narma"
)

// TestHotPathsAllocateNothing: in the steady state, Put, Get, Flush and
// FetchAndOp allocate nothing, with either strategy (deferred queues are
// reused once they have grown).
func TestHotPathsAllocateNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts need a quiet run")
	}
	for _, st := range []narma.Strategy{narma.Immediate, narma.Deferred} {
		t.Run(st.String(), func(t *testing.T) {
			err := narma.Run(2, func(c *narma.Comm) error {
				ctx := c.Context()
				w, err := narma.Allocate[int64](ctx, c, 64, narma.WithStrategy(st))
				if err != nil {
					return err
				}
				if c.Rank() == 0 {
					if err := w.Lock(ctx, narma.Shared, 1, 0); err != nil {
						return err
					}
					src := make([]int64, 8)
					dst := make([]int64, 8)
					var old int64
					var callErr error
					calls := map[string]func(){
						"Put":        func() { callErr = w.Put(src, 1, 0) },
						"Get":        func() { callErr = w.Get(dst, 1, 8) },
						"FetchAndOp": func() { callErr = w.FetchAndOp(1, &old, 1, 16, narma.Sum) },
						"Flush":      func() { callErr = w.Flush(ctx, 1) },
						"Put+Flush": func() {
							if callErr = w.Put(src, 1, 0); callErr == nil {
								callErr = w.Flush(ctx, 1)
							}
						},
					}
					for name, f := range calls {
						f() // warm up: deferred queues grow once
						if callErr == nil {
							callErr = w.Flush(ctx, 1)
						}
						allocs := testing.AllocsPerRun(100, func() {
							f()
							if callErr == nil && name != "Flush" && name != "Put+Flush" && st == narma.Deferred {
								// keep the deferred queue from growing
								callErr = w.Flush(ctx, 1)
							}
						})
						if callErr != nil {
							t.Errorf("%s: %v", name, callErr)
						}
						if allocs != 0 {
							t.Errorf("%s allocates %.1f times per call", name, allocs)
						}
					}
					if err := w.Unlock(ctx, 1); err != nil {
						return err
					}
					// 1 warm-up call, then AllocsPerRun's own warm-up and 100
					// runs: the last fetch saw 101 earlier increments.
					if old != 101 {
						t.Errorf("counter read %d, want 101", old)
					}
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				return w.Free(context.Background())
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNotifyPathsAllocateNothing: in the steady state, a notified put, a
// notification request's Start, Test and Wait, and the wait family over
// reused slices allocate nothing through the public package (its Request
// and Status are the engine's, seen through conversions that copy
// nothing).
func TestNotifyPathsAllocateNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts need a quiet run")
	}
	for _, st := range []narma.Strategy{narma.Immediate, narma.Deferred} {
		t.Run(st.String(), func(t *testing.T) {
			err := narma.Run(1, func(c *narma.Comm) error {
				ctx := c.Context()
				w, err := narma.Allocate[int64](ctx, c, 8, narma.WithStrategy(st))
				if err != nil {
					return err
				}
				if err := w.LockAll(ctx, 0); err != nil {
					return err
				}
				req, err := w.NotifyInit(0, 5, 1)
				if err != nil {
					return err
				}
				src := []int64{1}
				reqs := []*narma.Request{req}
				statuses := make([]narma.Status, 1)
				var callErr error
				// Each round: Start, a notified put to this rank, its
				// Flush (which moves it under Deferred), then one way
				// of taking the notice.
				round := func(take func() (narma.Status, error)) {
					if callErr = req.Start(); callErr != nil {
						return
					}
					if callErr = w.PutNotify(src, 0, 0, narma.Tag(5)); callErr != nil {
						return
					}
					if callErr = w.Flush(ctx, 0); callErr != nil {
						return
					}
					var s narma.Status
					if s, callErr = take(); callErr == nil && (s.Source != 0 || s.Tag != 5) {
						t.Errorf("status %+v, want source 0 tag 5", s)
					}
				}
				takes := map[string]func() (narma.Status, error){
					"Wait": func() (narma.Status, error) { return req.Wait(ctx) },
					"Test": func() (narma.Status, error) {
						for {
							s, done, err := req.Test()
							if done || err != nil {
								return s, err
							}
						}
					},
					"WaitAny": func() (narma.Status, error) {
						_, s, err := narma.WaitAny(ctx, reqs)
						return s, err
					},
					"WaitAll": func() (narma.Status, error) {
						err := narma.WaitAll(ctx, reqs, statuses)
						return statuses[0], err
					},
				}
				for name, take := range takes {
					round(take) // warm up
					allocs := testing.AllocsPerRun(100, func() { round(take) })
					if callErr != nil {
						t.Errorf("%s: %v", name, callErr)
					}
					if allocs != 0 {
						t.Errorf("PutNotify, Start, Flush and %s allocate %.1f times per round", name, allocs)
					}
				}
				if err := req.Free(); err != nil {
					return err
				}
				if err := w.UnlockAll(ctx); err != nil {
					return err
				}
				return w.Free(context.Background())
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
