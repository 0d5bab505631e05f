package engine

import "context"

// checkGroup validates a PSCW group: ranks in range, no duplicates.
func (w *Win) checkGroup(name string, group []int) error {
	seen := make(map[int]bool, len(group))
	for _, r := range group {
		if r < 0 || r >= w.c.size {
			return opErr(name, w.c.rank, ErrGroup, "rank %d not in [0,%d)", r, w.c.size)
		}
		if seen[r] {
			return opErr(name, w.c.rank, ErrGroup, "rank %d appears twice", r)
		}
		seen[r] = true
	}
	return nil
}

// Post starts an exposure epoch for the origins in group: they may access
// this rank's window until Wait returns. Unless NoCheck is asserted (by
// Post and the matching Starts alike), each origin is sent a post message.
// Post does not block.
func (w *Win) Post(group []int, assert Assert) error {
	if err := w.check("Post"); err != nil {
		return err
	}
	if err := w.checkGroup("Post", group); err != nil {
		return err
	}
	if err := w.checkAssert("Post", assert, postAsserts); err != nil {
		return err
	}
	if w.exposeOn {
		return opErr("Post", w.c.rank, ErrEpoch, "an exposure epoch is already open")
	}
	if err := w.closeIdleFence("Post"); err != nil {
		return err
	}
	if assert&NoCheck == 0 {
		for _, r := range group {
			if err := w.sendCtl("Post", r, winPost); err != nil {
				return err
			}
		}
	}
	w.exposeGrp = append(w.exposeGrp[:0], group...)
	w.exposeOn = true
	return nil
}

// Start starts an access epoch to the targets in group. With the immediate
// strategy it waits for each target's post; with the deferred strategy it
// returns at once and Complete waits. NoCheck skips the wait.
func (w *Win) Start(ctx context.Context, group []int, assert Assert) error {
	if err := w.check("Start"); err != nil {
		return err
	}
	if err := w.checkGroup("Start", group); err != nil {
		return err
	}
	if err := w.checkAssert("Start", assert, startAsserts); err != nil {
		return err
	}
	if w.accessOn {
		return opErr("Start", w.c.rank, ErrEpoch, "an access epoch is already open")
	}
	if w.nlocks > 0 || w.lockAll {
		return opErr("Start", w.c.rank, ErrEpoch, "a lock epoch is open")
	}
	if err := w.closeIdleFence("Start"); err != nil {
		return err
	}
	w.access = append(w.access[:0], group...)
	w.accessNoCheck = assert&NoCheck != 0
	w.postsTaken = false
	if w.strategy == Immediate && !w.accessNoCheck {
		if err := w.takePosts(ctx, "Start"); err != nil {
			return err
		}
	}
	for _, r := range group {
		w.accessSet[r] = true
	}
	w.accessOn = true
	return nil
}

// takePosts waits for, and consumes, one post from every target of the
// access group.
func (w *Win) takePosts(ctx context.Context, name string) error {
	err := w.c.wait(ctx, func() bool {
		for _, r := range w.access {
			if w.ctlPending(winPost, r) == 0 && !w.c.peerFailed(r) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return w.c.ctxErr(name, err)
	}
	for _, r := range w.access {
		if w.ctlPending(winPost, r) == 0 {
			return opErr(name, w.c.rank, ErrPeer, "rank %d failed before posting", r)
		}
	}
	for _, r := range w.access {
		w.seenPosts[r]++
	}
	w.postsTaken = true
	return nil
}

// Complete ends the access epoch: every operation is complete at its
// target when the target's Wait returns. With the deferred strategy this is
// where the posts are awaited and the queued operations performed; if a
// target fails before posting, the epoch ends with an error wrapping
// ErrPeer and the queued operations are dropped (if ctx ends first, the
// epoch stays open and Complete may be called again).
func (w *Win) Complete(ctx context.Context) error {
	if err := w.check("Complete"); err != nil {
		return err
	}
	if !w.accessOn {
		return opErr("Complete", w.c.rank, ErrEpoch, "no access epoch is open")
	}
	if !w.accessNoCheck && !w.postsTaken {
		if err := w.takePosts(ctx, "Complete"); err != nil {
			if ctx.Err() != nil {
				return err // the epoch stays open; Complete may be retried
			}
			// A target failed: the epoch cannot complete. End it, dropping
			// the operations queued for its group.
			for _, r := range w.access {
				w.discard(r, err)
				w.accessSet[r] = false
			}
			w.accessOn = false
			return err
		}
	}
	var first error
	for _, r := range w.access {
		if err := w.replay("Complete", r, false); err != nil && first == nil {
			first = err
		}
	}
	for _, r := range w.access {
		w.accessSet[r] = false
		// r's Wait returns on this message and r then reads its window:
		// it is sent only once the operations on r are complete there.
		// A target whose flush failed (the context ended, say, with
		// operations still in flight) learns of the failure as it waits.
		if err := w.c.ep.Flush(ctx, r); err != nil {
			if first == nil {
				first = w.c.transportFailure("Complete", ctx, err, "flush rank %d", r)
			}
			continue
		}
		if err := w.sendCtl("Complete", r, winComplete); err != nil && first == nil {
			first = err
		}
	}
	w.accessOn = false
	return first
}

// Wait ends the exposure epoch: it returns when every origin of the post
// group has called Complete, so all their operations are visible.
func (w *Win) Wait(ctx context.Context) error {
	if err := w.check("Wait"); err != nil {
		return err
	}
	if !w.exposeOn {
		return opErr("Wait", w.c.rank, ErrEpoch, "no exposure epoch is open")
	}
	err := w.c.wait(ctx, w.completesIn)
	if err != nil {
		return w.c.ctxErr("Wait", err)
	}
	return w.takeCompletes("Wait")
}

// Test is the nonblocking Wait: it reports whether the exposure epoch has
// ended, and ends it if so.
func (w *Win) Test() (bool, error) {
	if err := w.check("Test"); err != nil {
		return false, err
	}
	if !w.exposeOn {
		return false, opErr("Test", w.c.rank, ErrEpoch, "no exposure epoch is open")
	}
	w.c.progress()
	if !w.completesIn() {
		return false, nil
	}
	return true, w.takeCompletes("Test")
}

func (w *Win) completesIn() bool {
	for _, r := range w.exposeGrp {
		if w.ctlPending(winComplete, r) == 0 && !w.c.peerFailed(r) {
			return false
		}
	}
	return true
}

func (w *Win) takeCompletes(name string) error {
	w.exposeOn = false
	for _, r := range w.exposeGrp {
		if w.ctlPending(winComplete, r) == 0 {
			return opErr(name, w.c.rank, ErrPeer, "rank %d failed before completing", r)
		}
	}
	for _, r := range w.exposeGrp {
		w.seenCompletes[r]++
	}
	return nil
}
