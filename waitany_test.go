package narma_test

// The wait family (WaitAny, TestAny, WaitAll, TestSome) over a mix of
// notification requests, counter thresholds, receives and request-based
// RMA: each reports whatever completes next, a completed request once, and
// skips nil and inactive requests.

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
)

// Slots of the request array of TestWaitFamilyDataflow.
const (
	slotNotify   = iota // notification request (1, notifyTag), started
	slotCounter         // threshold on counter 0, one more than now
	slotRecv            // Irecv from rank 2
	slotRput            // Rput to rank 3, issued when its turn comes
	slotInactive        // notification request (AnySource, AnyTag), never started
	slotNil             // nil
	nslots
)

const (
	notifyTag = 5
	recvTag   = 9
	recvLen   = 16
)

// TestWaitFamilyDataflow: rank 0 holds a notification request, a counter
// threshold, a receive and a request-based put, plus an inactive
// notification request and a nil. It triggers one event at a time, in a
// random order, and WaitAny must return exactly the request that event
// completes, with its status; completed requests are not reported again
// and the inactive one never. Then TestSome and WaitAll over the rearmed
// set.
func TestWaitFamilyDataflow(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	forStrategies(t, func(t *testing.T, st narma.Strategy) {
		run(t, 4, func(c *narma.Comm) error {
			ctx := c.Context()
			w, err := narma.Allocate[int64](ctx, c, 4, narma.WithStrategy(st))
			if err != nil {
				return err
			}
			if err := w.SetCounters(ctx, 1); err != nil {
				return err
			}
			if err := w.LockAll(ctx, 0); err != nil {
				return err
			}
			me := c.Rank()
			if me != 0 {
				// Rank 1 sends tag notices, rank 2 messages, rank 3
				// counter notices.
				seq := int64(0)
				err := serve(ctx, c, func([]int64) error {
					seq++
					switch me {
					case 1:
						if err := w.PutNotify([]int64{seq}, 0, 1, narma.Tag(notifyTag)); err != nil {
							return err
						}
						return w.Flush(ctx, 0)
					case 2:
						msg := make([]byte, recvLen)
						msg[0] = byte(seq)
						return c.Send(ctx, msg, 0, recvTag)
					default:
						if err := w.PutNotify(nil, 0, 0, narma.Counter(0)); err != nil {
							return err
						}
						return w.Flush(ctx, 0)
					}
				})
				if err != nil {
					return err
				}
			} else {
				k := newChecks(c)
				if err := waitFamilyDriver(c, k, w, rounds); err != nil {
					return err
				}
				if err := stopServing(ctx, c, 1, 2, 3); err != nil {
					return err
				}
				if err := k.err(); err != nil {
					return err
				}
			}
			if err := w.UnlockAll(ctx); err != nil {
				return err
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			return w.Free(ctx)
		})
	})
}

func waitFamilyDriver(c *narma.Comm, k *checks, w *narma.Win[int64], rounds int) error {
	ctx := c.Context()
	rng := rand.New(rand.NewSource(77))
	reqs := make([]*narma.Request, nslots)
	var err error
	if reqs[slotNotify], err = w.NotifyInit(1, notifyTag, 1); err != nil {
		return err
	}
	if reqs[slotInactive], err = w.NotifyInit(narma.AnySource, narma.AnyTag, 1); err != nil {
		return err
	}
	counted := uint64(0) // counter notices sent so far
	recvBuf := make([]byte, recvLen)
	msgs := 0
	rputSrc := []int64{0}
	rputs := int64(0)
	// arm prepares every slot for one more completion.
	arm := func() error {
		if err := reqs[slotNotify].Start(); err != nil {
			return err
		}
		var err error
		if reqs[slotCounter], err = w.CounterThreshold(0, counted+1); err != nil {
			return err
		}
		if reqs[slotRecv], err = c.Irecv(recvBuf, 2, recvTag); err != nil {
			return err
		}
		reqs[slotRput] = nil
		return nil
	}
	// trigger makes the event of slot s happen (remote events are
	// acknowledged later, by ack).
	trigger := func(s int) error {
		switch s {
		case slotNotify:
			return command(ctx, c, 1, 0)
		case slotRecv:
			msgs++
			return command(ctx, c, 2, 0)
		case slotCounter:
			counted++
			return command(ctx, c, 3, 0)
		case slotRput:
			rputs++
			rputSrc[0] = rputs
			var err error
			reqs[slotRput], err = w.Rput(rputSrc, 3, 2)
			return err
		}
		return fmt.Errorf("no event for slot %d", s)
	}
	ack := func(s int) error {
		switch s {
		case slotNotify:
			return awaitAck(ctx, c, 1)
		case slotRecv:
			return awaitAck(ctx, c, 2)
		case slotCounter:
			return awaitAck(ctx, c, 3)
		}
		return nil
	}
	checkStatus := func(what string, s int, st narma.Status) {
		switch s {
		case slotNotify:
			k.status(what, st, 1, notifyTag)
		case slotRecv:
			if st.Source != 2 || st.Tag != recvTag || st.Count != recvLen {
				k.errorf("%s: receive status %+v", what, st)
			}
			if recvBuf[0] != byte(msgs) {
				k.errorf("%s: received message %d, want %d", what, recvBuf[0], msgs)
			}
		}
	}
	events := []int{slotNotify, slotCounter, slotRecv, slotRput}

	// WaitAny: one event at a time.
	for round := 0; round < rounds && len(k.errs) == 0; round++ {
		if err := arm(); err != nil {
			return err
		}
		perm := slices.Clone(events)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for _, s := range perm {
			what := fmt.Sprintf("round %d, event %d", round, s)
			if err := trigger(s); err != nil {
				return err
			}
			i, st, err := narma.WaitAny(ctx, reqs)
			if err != nil {
				k.errorf("%s: WaitAny: %v", what, err)
				return nil
			}
			if i != s {
				k.errorf("%s: WaitAny returned request %d (status %+v), want %d", what, i, st, s)
				return nil
			}
			checkStatus(what, s, st)
			if err := ack(s); err != nil {
				return err
			}
			if i, st, err := narma.TestAny(reqs); i != -1 || err != nil {
				k.errorf("%s: TestAny after WaitAny reported request %d (%+v, %v); nothing else has completed", what, i, st, err)
			}
		}
		// Everything is reported or inactive.
		if i, _, err := narma.WaitAny(ctx, reqs); i != -1 || err != nil {
			k.errorf("round %d: WaitAny with every request reported: %d, %v; want -1", round, i, err)
		}
		if done, err := narma.TestSome(reqs, nil); len(done) != 0 || err != nil {
			k.errorf("round %d: TestSome with every request reported: %v, %v", round, done, err)
		}
	}
	if len(k.errs) > 0 {
		return nil
	}

	// TestSome: two events happened, exactly those two are reported,
	// once.
	if err := arm(); err != nil {
		return err
	}
	for _, s := range []int{slotNotify, slotRecv} {
		if err := trigger(s); err != nil {
			return err
		}
		if err := ack(s); err != nil {
			return err
		}
	}
	done := make([]int, 0, nslots)
	done, err = narma.TestSome(reqs, done)
	k.ok("TestSome", err)
	if !slices.Equal(done, []int{slotNotify, slotRecv}) {
		k.errorf("TestSome after the notify and receive events: %v, want [%d %d]", done, slotNotify, slotRecv)
	}
	done, err = narma.TestSome(reqs, done[:0])
	k.ok("TestSome", err)
	if len(done) != 0 {
		k.errorf("second TestSome reported %v again", done)
	}

	// WaitAll: the other two, and the notification request started
	// again, in any order.
	if err := reqs[slotNotify].Start(); err != nil {
		return err
	}
	for _, s := range []int{slotCounter, slotRput, slotNotify} {
		if err := trigger(s); err != nil {
			return err
		}
	}
	statuses := make([]narma.Status, nslots)
	k.ok("WaitAll", narma.WaitAll(ctx, reqs, statuses))
	k.status("WaitAll", statuses[slotNotify], 1, notifyTag)
	for _, s := range []int{slotCounter, slotNotify} {
		if err := ack(s); err != nil {
			return err
		}
	}
	if _, done, err := reqs[slotCounter].Test(); !done || err != nil {
		k.errorf("threshold after WaitAll: done %v, %v", done, err)
	}
	if _, done, err := reqs[slotRput].Test(); !done || err != nil {
		k.errorf("Rput after WaitAll: done %v, %v", done, err)
	}
	if i, _, err := narma.TestAny(reqs); i != -1 || err != nil {
		k.errorf("TestAny after WaitAll: %d, %v", i, err)
	}
	if v, err := w.Counter(0); err != nil || v != counted {
		k.errorf("counter %d, %v; want %d", v, err, counted)
	}
	// The inactive request never took the notices: its pattern matches
	// none now, since the started request took each.
	if err := reqs[slotInactive].Start(); err != nil {
		return err
	}
	if _, done, err := reqs[slotInactive].Test(); done || err != nil {
		k.errorf("a notice was left for the (AnySource, AnyTag) request: done %v, %v", done, err)
	}
	// Started, it takes part: the next notice completes it.
	if err := trigger(slotNotify); err != nil {
		return err
	}
	i, st, err := narma.WaitAny(ctx, reqs)
	if i != slotInactive || err != nil {
		k.errorf("WaitAny after starting the wildcard request: %d, %v", i, err)
	}
	k.status("wildcard request", st, 1, notifyTag)
	if err := ack(slotNotify); err != nil {
		return err
	}
	return nil
}

// TestWaitAnyEmpty: WaitAny, TestAny, WaitAll and TestSome over nothing,
// nil and inactive requests return at once.
func TestWaitAnyEmpty(t *testing.T) {
	run(t, 1, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		w, err := narma.Allocate[int64](ctx, c, 1)
		if err != nil {
			return err
		}
		inactive, err := w.NotifyInit(0, 1, 1)
		if err != nil {
			return err
		}
		freed, err := w.NotifyInit(0, 1, 1)
		if err != nil {
			return err
		}
		k.ok("Start", freed.Start())
		k.ok("Free", freed.Free())
		for _, reqs := range [][]*narma.Request{nil, {nil}, {nil, inactive, nil}, {freed, inactive}} {
			if i, _, err := narma.WaitAny(ctx, reqs); i != -1 || err != nil {
				k.errorf("WaitAny(%v): %d, %v", reqs, i, err)
			}
			if i, _, err := narma.TestAny(reqs); i != -1 || err != nil {
				k.errorf("TestAny(%v): %d, %v", reqs, i, err)
			}
			k.ok("WaitAll", narma.WaitAll(ctx, reqs, nil))
			if done, err := narma.TestSome(reqs, nil); len(done) != 0 || err != nil {
				k.errorf("TestSome(%v): %v, %v", reqs, done, err)
			}
		}
		err = narma.WaitAll(ctx, []*narma.Request{inactive, nil}, make([]narma.Status, 1))
		k.is("WaitAll with 1 status for 2 requests", err, narma.ErrInvalid, "WaitAll")
		if err := w.Free(ctx); err != nil {
			return err
		}
		return k.err()
	})
}
