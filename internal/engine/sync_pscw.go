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
//
// If a rank of group is known to have failed, Post posts to nobody, opens
// no epoch and returns an error wrapping ErrPeer that names it. If a post
// cannot be sent (its rank failing meanwhile), no epoch is open either,
// but the origins posted to before it will access the window and complete:
// the Wait of the next exposure epoch that includes each of them waits for
// that complete as well as its own.
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
			if w.c.peerFailed(r) {
				return opErr("Post", w.c.rank, ErrPeer, "rank %d failed", r)
			}
		}
		for i, r := range group {
			if err := w.sendCtl("Post", r, winPost); err != nil {
				for _, p := range group[:i] {
					w.owedCompletes[p]++
				}
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
//
// If a target fails before posting, the immediate Start opens no epoch and
// returns an error wrapping ErrPeer that names it; it takes the others'
// posts and ends its (empty) epoch with them at once, so that their Wait
// returns and the next epochs stay in step. If ctx ends first, no epoch is
// open and no post is taken.
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
			if w.postsTaken {
				// A target failed: complete the empty epoch with the
				// others, whose posts were taken.
				for _, r := range group {
					if !w.c.peerFailed(r) {
						_ = w.sendCtl("Start", r, winComplete) // fails only if r fails too
					}
				}
			}
			return err
		}
	}
	for _, r := range group {
		w.targets[r].inAccess = true
	}
	w.accessOn = true
	return nil
}

// takePosts waits for, and consumes, one post from every target of the
// access group, and sets postsTaken. A target that failed before posting
// does not stop it: the others' posts are taken, and the error (wrapping
// ErrPeer) names the first that failed. Left in the control words, a live
// target's post would open the next access epoch to it before the target
// posts again. If ctx ends first, nothing is taken.
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
	var failed error
	for _, r := range w.access {
		if w.ctlPending(winPost, r) == 0 {
			if failed == nil {
				failed = opErr(name, w.c.rank, ErrPeer, "rank %d failed before posting", r)
			}
			continue
		}
		w.seenPosts[r]++
	}
	w.postsTaken = true
	return failed
}

// Complete ends the access epoch: every operation is complete at its
// target when the target's Wait returns. With the deferred strategy this is
// where the posts are awaited and the queued operations performed (if ctx
// ends first, the epoch stays open and Complete may be called again).
//
// A target that has failed does not stop the epoch with the others: their
// operations are completed and they are told, so that their Wait returns;
// the operations queued for the failed target are dropped, and Complete
// returns an error wrapping ErrPeer that names it.
func (w *Win) Complete(ctx context.Context) error {
	if err := w.check("Complete"); err != nil {
		return err
	}
	if !w.accessOn {
		return opErr("Complete", w.c.rank, ErrEpoch, "no access epoch is open")
	}
	var first error
	if !w.accessNoCheck && !w.postsTaken {
		if err := w.takePosts(ctx, "Complete"); err != nil {
			if !w.postsTaken {
				return err // ctx ended: the epoch stays open; Complete may be retried
			}
			first = err // a target failed before posting
		}
	}
	for _, r := range w.access {
		if w.c.peerFailed(r) {
			// Nobody will see these operations, and r's post may never
			// have come: drop them.
			err := opErr("Complete", w.c.rank, ErrPeer, "rank %d failed", r)
			w.discard(r, err)
			if first == nil {
				first = err
			}
			continue
		}
		if err := w.replay("Complete", r, false); err != nil && first == nil {
			first = err
		}
	}
	for _, r := range w.access {
		w.targets[r].inAccess = false
		if w.c.peerFailed(r) {
			if first == nil {
				first = opErr("Complete", w.c.rank, ErrPeer, "rank %d failed", r)
			}
			continue
		}
		// r's Wait returns on this message and r then reads its window:
		// it is sent only once the operations on r are complete there.
		// A target whose flush failed (the context ended, say, with
		// operations still in flight) learns of the failure as it waits.
		if err := w.c.ep.Flush(ctx, w.c.jobRank(r)); err != nil {
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
// group has called Complete, so all their operations are visible. An
// origin that failed before its Complete does not stop it: the others'
// completes are taken, the epoch ends, and the error (wrapping ErrPeer)
// names the failed origin. If ctx ends first, the epoch stays open.
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

// completesIn reports whether every origin of the exposure group has sent
// its complete (and those it owes, see Post) or failed.
func (w *Win) completesIn() bool {
	for _, r := range w.exposeGrp {
		if w.ctlPending(winComplete, r) <= w.owedCompletes[r] && !w.c.peerFailed(r) {
			return false
		}
	}
	return true
}

// takeCompletes ends the exposure epoch once completesIn holds: it takes
// the complete of every origin of the group (and those it owed), of a
// failed origin as many as came, and reports the first origin that failed
// without completing. Left in the control words, a live origin's complete
// would end the next exposure epoch before that origin completes it.
func (w *Win) takeCompletes(name string) error {
	w.exposeOn = false
	var failed error
	for _, r := range w.exposeGrp {
		want := w.owedCompletes[r] + 1
		got := min(w.ctlPending(winComplete, r), want)
		if got < want && failed == nil {
			failed = opErr(name, w.c.rank, ErrPeer, "rank %d failed before completing", r)
		}
		w.seenCompletes[r] += got
		w.owedCompletes[r] = 0
	}
	return failed
}
