package engine

import "context"

// The wait family over any mix of requests: two-sided, request-based RMA,
// notification and counter-threshold requests. Nil and freed requests are
// skipped, as MPI skips MPI_REQUEST_NULL, and so is a request whose
// completion one of these functions has already reported (MPI sets it to
// MPI_REQUEST_NULL); a notification request takes part again once started.

// pending reports whether r takes part in a wait: it exists, is not
// freed, and is not an inactive persistent request.
func (r *Request) pending() bool {
	if r == nil || r.freed {
		return false
	}
	if r.kind == reqNotify {
		return r.active
	}
	return !r.reported
}

// Each function of the family has a generic form (TestAnyOf, ...) that
// takes the requests as a slice of another type, with eng to get at each
// one's engine Request: the public package's Request, a type of its own,
// goes through them without a copy of the slice.

// self is the eng of a slice of engine Requests.
func self(r *Request) *Request { return r }

// commOf returns the Comm of the first request that takes part.
func commOf[R any](reqs []R, eng func(R) *Request) *Comm {
	for _, x := range reqs {
		if r := eng(x); r.pending() {
			return r.c
		}
	}
	return nil
}

// TestAny tests the requests in order and reports the first that is
// complete: its index and status. It returns index -1 if none is complete
// (or none takes part).
func TestAny(reqs []*Request) (int, Status, error) { return TestAnyOf(reqs, self) }

// TestAnyOf is TestAny over requests of another type.
func TestAnyOf[R any](reqs []R, eng func(R) *Request) (int, Status, error) {
	if c := commOf(reqs, eng); c != nil {
		c.progress()
	}
	return testAny("TestAny", reqs, eng)
}

func testAny[R any](name string, reqs []R, eng func(R) *Request) (int, Status, error) {
	for i, x := range reqs {
		r := eng(x)
		if !r.pending() {
			continue
		}
		st, done, err := r.test(name)
		if done || err != nil {
			r.reported = true
			return i, st, err
		}
	}
	return -1, Status{}, nil
}

// WaitAny waits until one of the requests completes and returns its index
// and status. It returns index -1 at once if no request takes part.
func WaitAny(ctx context.Context, reqs []*Request) (int, Status, error) {
	return WaitAnyOf(ctx, reqs, self)
}

// WaitAnyOf is WaitAny over requests of another type.
func WaitAnyOf[R any](ctx context.Context, reqs []R, eng func(R) *Request) (int, Status, error) {
	c := commOf(reqs, eng)
	if c == nil {
		return -1, Status{}, nil
	}
	var idx int
	var st Status
	var err error
	cond := func() bool {
		idx, st, err = testAny("WaitAny", reqs, eng)
		return idx >= 0
	}
	var werr error
	if needsPolling(reqs, eng) {
		// A request-based operation queued under a deferred lock
		// completes when a try at the lock succeeds, and the lock's
		// release wakes nobody here: poll with backoff.
		werr = c.poll(ctx, "WaitAny", cond)
	} else {
		werr = c.wait(ctx, cond)
	}
	if werr != nil && idx < 0 {
		if _, ok := werr.(*OpError); ok {
			return -1, Status{}, werr
		}
		return -1, Status{}, c.ctxErr("WaitAny", werr)
	}
	return idx, st, err
}

// WaitAll waits until every request completes. statuses, if not nil, must
// have len(reqs) entries and receives each status. It returns the first
// error of a request, after all have completed or ctx is done.
func WaitAll(ctx context.Context, reqs []*Request, statuses []Status) error {
	return WaitAllOf(ctx, reqs, self, statuses, func(st Status) Status { return st })
}

// WaitAllOf is WaitAll over requests and statuses of other types; conv
// converts a status.
func WaitAllOf[R, S any](ctx context.Context, reqs []R, eng func(R) *Request, statuses []S, conv func(Status) S) error {
	if statuses != nil && len(statuses) != len(reqs) {
		return opErr("WaitAll", -1, ErrInvalidArgs, "%d statuses for %d requests", len(statuses), len(reqs))
	}
	var first error
	for i, x := range reqs {
		r := eng(x)
		if !r.pending() {
			continue
		}
		st, err := r.Wait(ctx)
		if err == nil || ctx.Err() == nil {
			r.reported = true
		}
		if statuses != nil {
			statuses[i] = conv(st)
		}
		if err != nil && first == nil {
			first = err
			if ctx.Err() != nil {
				return first
			}
		}
	}
	return first
}

// TestSome tests every request and appends the indices of those that are
// complete to done (which may be nil; pass a reused slice to avoid
// allocating). It returns the first error met.
func TestSome(reqs []*Request, done []int) ([]int, error) { return TestSomeOf(reqs, self, done) }

// TestSomeOf is TestSome over requests of another type.
func TestSomeOf[R any](reqs []R, eng func(R) *Request, done []int) ([]int, error) {
	if c := commOf(reqs, eng); c != nil {
		c.progress()
	}
	var first error
	for i, x := range reqs {
		r := eng(x)
		if !r.pending() {
			continue
		}
		_, ok, err := r.test("TestSome")
		if ok || err != nil {
			r.reported = true
			done = append(done, i)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return done, first
}

// needsPolling reports whether some request completes only through this
// rank's own attempts (a request-based operation queued under a deferred
// lock not yet taken), which no wake-up announces.
func needsPolling[R any](reqs []R, eng func(R) *Request) bool {
	for _, x := range reqs {
		if r := eng(x); r.pending() && r.kind == reqRMA && r.win != nil && !r.comp.Complete() {
			return true
		}
	}
	return false
}

// poll checks cond with backoff between checks until it holds or ctx
// ends.
func (c *Comm) poll(ctx context.Context, name string, cond func() bool) error {
	for try := 0; ; try++ {
		if cond() {
			return nil
		}
		if err := c.backoff(ctx, name, -1, try); err != nil {
			return err
		}
	}
}
