package coarray

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// query returns the event's count, reporting errors.
func query(t *testing.T, e *Event) int {
	t.Helper()
	n, err := e.Query()
	if err != nil {
		t.Errorf("Query: %v", err)
	}
	return n
}

// shortWait waits for untilCount with a context that expires soon and
// checks that it does expire.
func shortWait(t *testing.T, what string, wait func(context.Context, int) error, untilCount int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := wait(ctx, untilCount); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%s: Wait(%d) with nothing to take: %v, want a deadline error", what, untilCount, err)
	}
}

// TestEventCountsEveryPost has every image post to every image (itself
// included) a different number of times, interleaved, and checks that
// each image's waits take exactly the total.
func TestEventCountsEveryPost(t *testing.T) {
	const base = 25
	runImages(t, 4, func(ctx context.Context, im *Images) error {
		me, np := im.ThisImage(), im.NumImages()
		ev, err := NewEvent(ctx, im)
		if err != nil {
			return err
		}
		for k := range base + me {
			for j := range np {
				if err := ev.Post((j + k) % np); err != nil {
					return err
				}
			}
		}
		total := 0
		for r := range np {
			total += base + r
		}
		// Take all but 5 at once, then one by one, while others may
		// still be posting.
		if err := ev.Wait(ctx, total-5); err != nil {
			return err
		}
		for range 5 {
			if err := ev.Wait(ctx, 1); err != nil {
				return err
			}
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if n := query(t, ev); n != 0 {
			t.Errorf("image %d: %d posts left after waiting for all", me, n)
		}
		shortWait(t, "event", ev.Wait, 1)
		// One more post from everybody to image 0, counted by Query
		// after the synchronization and left there.
		if err := im.SyncAll(ctx); err != nil { // no post before everyone's shortWait
			return err
		}
		if err := ev.Post(0); err != nil {
			return err
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		want := 0
		if me == 0 {
			want = np
		}
		if n := query(t, ev); n != want {
			t.Errorf("image %d: Query %d, want %d", me, n, want)
		}
		return ev.Free(ctx)
	})
}

func TestEventWaitConsumes(t *testing.T) {
	runImages(t, 2, func(ctx context.Context, im *Images) error {
		ev, err := NewEvent(ctx, im)
		if err != nil {
			return err
		}
		if im.ThisImage() == 1 {
			for range 3 {
				if err := ev.Post(0); err != nil {
					return err
				}
			}
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if im.ThisImage() == 0 {
			steps := []struct{ wait, left int }{{2, 1}, {0, 0}} // until_count 0 means 1
			if n := query(t, ev); n != 3 {
				t.Errorf("Query %d after 3 posts", n)
			}
			for _, s := range steps {
				if err := ev.Wait(ctx, s.wait); err != nil {
					return err
				}
				if n := query(t, ev); n != s.left {
					t.Errorf("Query %d after Wait(%d), want %d", n, s.wait, s.left)
				}
			}
			shortWait(t, "event", ev.Wait, 1)
			if n := query(t, ev); n != 0 {
				t.Errorf("a Wait that timed out consumed: Query %d", n)
			}
		} else if n := query(t, ev); n != 0 {
			t.Errorf("image 1 counts %d posts it sent elsewhere", n)
		}
		return ev.Free(ctx)
	})
}

// TestPostNeverBlocks posts many times to an image that is busy waiting
// for a message sent after the posts: the posts must neither wait for it
// nor be lost.
func TestPostNeverBlocks(t *testing.T) {
	const posts = 1000
	runImages(t, 2, func(ctx context.Context, im *Images) error {
		ev, err := NewEvent(ctx, im)
		if err != nil {
			return err
		}
		c := im.Comm()
		if im.ThisImage() == 1 {
			for range posts {
				if err := ev.Post(0); err != nil {
					return err
				}
			}
			if err := c.Send(ctx, []byte{1}, 0, 7); err != nil {
				return err
			}
		} else {
			if _, err := c.Recv(ctx, make([]byte, 1), 1, 7); err != nil {
				return err
			}
			if n := query(t, ev); n != posts {
				t.Errorf("Query %d after %d posts", n, posts)
			}
			if err := ev.Wait(ctx, posts); err != nil {
				return err
			}
		}
		return ev.Free(ctx)
	})
}

// TestPostOrdersEarlierPuts checks EVENT POST's segment order: data put
// (anywhere) before a post is in place when the matching wait returns.
func TestPostOrdersEarlierPuts(t *testing.T) {
	const rounds = 200
	runImages(t, 3, func(ctx context.Context, im *Images) error {
		me := im.ThisImage()
		a, err := New[int64](ctx, im, 64)
		if err != nil {
			return err
		}
		ready, done := [2]*Event{}, [2]*Event{}
		for i := range 2 {
			if ready[i], err = NewEvent(ctx, im); err != nil {
				return err
			}
			if done[i], err = NewEvent(ctx, im); err != nil {
				return err
			}
		}
		src := make([]int64, 64)
		for r := range rounds {
			switch me {
			case 0: // producer: fill image 1's block, then image 2's, then post to 1
				for i := range src {
					src[i] = int64(r*1000 + i)
				}
				if err := a.Put(1, 0, src); err != nil {
					return err
				}
				if err := a.Put(2, 0, src); err != nil {
					return err
				}
				if err := ready[0].Post(1); err != nil {
					return err
				}
				if err := done[0].Wait(ctx, 1); err != nil {
					return err
				}
			case 1: // relays to image 2: its data came before our post
				if err := ready[0].Wait(ctx, 1); err != nil {
					return err
				}
				check(t, me, r, a.Local())
				if err := ready[1].Post(2); err != nil {
					return err
				}
				if err := done[1].Wait(ctx, 1); err != nil {
					return err
				}
				if err := done[0].Post(0); err != nil {
					return err
				}
			case 2:
				if err := ready[1].Wait(ctx, 1); err != nil {
					return err
				}
				check(t, me, r, a.Local())
				if err := done[1].Post(1); err != nil {
					return err
				}
			}
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		for i := range 2 {
			if err := ready[i].Free(ctx); err != nil {
				return err
			}
			if err := done[i].Free(ctx); err != nil {
				return err
			}
		}
		return a.Free(ctx)
	})
}

func check(t *testing.T, image, round int, got []int64) {
	t.Helper()
	for i, v := range got {
		if v != int64(round*1000+i) {
			t.Errorf("image %d round %d: element %d is %d", image, round, i, v)
			return
		}
	}
}

func TestNotifyVariables(t *testing.T) {
	const rounds = 50
	runImages(t, 4, func(ctx context.Context, im *Images) error {
		me, np := im.ThisImage(), im.NumImages()
		a, err := New[float64](ctx, im, np)
		if err != nil {
			return err
		}
		nv, err := NewNotify(ctx, im)
		if err != nil {
			return err
		}
		ack, err := NewEvent(ctx, im)
		if err != nil {
			return err
		}
		// Every image (image 0 too) puts into its element of image 0's
		// block with notify; image 0 waits for all, checks, and lets
		// them go on. No SyncAll, no flush: the notice says the data is
		// there.
		for r := range rounds {
			if err := a.Put(0, me, []float64{float64(r*np + me)}, WithNotify(nv)); err != nil {
				return err
			}
			if me == 0 {
				if err := nv.Wait(ctx, np); err != nil {
					return err
				}
				for j, v := range a.Local() {
					if v != float64(r*np+j) {
						t.Errorf("round %d: element %d is %v", r, j, v)
					}
				}
				for j := 1; j < np; j++ {
					if err := ack.Post(j); err != nil {
						return err
					}
				}
			} else if err := ack.Wait(ctx, 1); err != nil {
				return err
			}
		}
		// NOTIFY WAIT subtracts until_count; an empty notified put
		// notifies too.
		if me == 1 {
			for i := range 3 {
				if err := a.Put(0, i, []float64{-1}, WithNotify(nv)); err != nil {
					return err
				}
			}
			if err := a.Put(0, np, nil, WithNotify(nv)); err != nil {
				return err
			}
		}
		if me == 0 {
			if err := nv.Wait(ctx, 3); err != nil {
				return err
			}
			if err := nv.Wait(ctx, 1); err != nil {
				return err
			}
			shortWait(t, "notify", nv.Wait, 1)
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if err := ack.Free(ctx); err != nil {
			return err
		}
		if err := nv.Free(ctx); err != nil {
			return err
		}
		return a.Free(ctx)
	})
}

// TestAttach checks which puts post an attached event: every put that
// writes into the attached range, once, whatever else it writes.
func TestAttach(t *testing.T) {
	runImages(t, 2, func(ctx context.Context, im *Images) error {
		me := im.ThisImage()
		a, err := New[int32](ctx, im, 10)
		if err != nil {
			return err
		}
		var e1, e2, e3 *Event
		for _, e := range []**Event{&e1, &e2, &e3} {
			if *e, err = NewEvent(ctx, im); err != nil {
				return err
			}
		}
		nv, err := NewNotify(ctx, im)
		if err != nil {
			return err
		}
		if err := Attach(ctx, e2, a, 5, 8); err != nil {
			return err
		}
		if err := Attach(ctx, e1, a, 2, 5); err != nil { // before e2 in the array's list
			return err
		}
		ones := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
		if me == 1 {
			puts := []struct{ lo, hi int }{
				{0, 2},  // outside both: no post
				{3, 4},  // inside e1
				{0, 10}, // everything: e1 and e2 once each
				{4, 6},  // across the boundary: e1 and e2 once each
				{8, 10}, // outside both
				{7, 9},  // partly in e2
				{5, 5},  // nothing: no post
			}
			for _, p := range puts {
				if err := a.Put(0, p.lo, ones[p.lo:p.hi]); err != nil {
					return err
				}
			}
			// A notify variable may notify puts outside attached ranges
			// only.
			if err := a.Put(0, 8, ones[8:9], WithNotify(nv)); err != nil {
				t.Errorf("notified put outside the attached ranges: %v", err)
			}
			if err := a.Put(0, 7, ones[7:9], WithNotify(nv)); !errors.Is(err, ErrAttached) {
				t.Errorf("notified put into an attached range: %v", err)
			}
			if err := a.Put(0, 2, nil, WithNotify(nv)); err != nil {
				t.Errorf("empty notified put at an attached element: %v", err)
			}
		} else {
			// Waiting on an attached event counts puts: the data is in
			// place, without any synchronization.
			if err := e1.Wait(ctx, 3); err != nil {
				return err
			}
			if err := e2.Wait(ctx, 3); err != nil {
				return err
			}
			if err := nv.Wait(ctx, 2); err != nil {
				return err
			}
			if got := a.Local(); got[2] != 3 || got[7] != 8 {
				t.Errorf("block %v after the attached puts", got)
			}
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if n := query(t, e1) + query(t, e2); n != 0 {
			t.Errorf("image %d: %d posts more than expected", me, n)
		}
		// An attached event cannot be posted, attached twice, or
		// overlapped; mistakes fail on every image.
		wantErr(t, "Post of an attached event", e1.Post(0), ErrAttached)
		wantErr(t, "second Attach", Attach(ctx, e1, a, 8, 10), ErrAttached)
		wantErr(t, "overlapping Attach", Attach(ctx, e3, a, 7, 9), ErrAttached)
		wantErr(t, "empty range", Attach(ctx, e3, a, 9, 9), narma.ErrBounds)
		wantErr(t, "range past the end", Attach(ctx, e3, a, 8, 11), narma.ErrBounds)
		wantErr(t, "negative range", Attach(ctx, e3, a, -1, 1), narma.ErrBounds)
		wantErr(t, "Detach of an unattached event", Detach(ctx, e3), narma.ErrInvalid)
		// Images that disagree are all told so.
		hi := 9 + me // 9 on image 0, 10 on image 1
		wantErr(t, "asymmetric Attach", Attach(ctx, e3, a, 8, hi), narma.ErrCollective)
		// After Detach, puts no longer post e1 and e1 may be posted.
		if err := Detach(ctx, e1); err != nil {
			return err
		}
		if me == 1 {
			if err := a.Put(0, 2, ones[2:5]); err != nil {
				return err
			}
			if err := e1.Post(0); err != nil {
				return err
			}
		}
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		if want := 1 - me; query(t, e1) != want {
			t.Errorf("image %d: e1 counts %d after Detach, want %d", me, query(t, e1), want)
		}
		// e1 can be attached again; freeing the array detaches e1 and e2.
		if err := Attach(ctx, e1, a, 0, 5); err != nil {
			return err
		}
		wantErr(t, "Post of a re-attached event", e1.Post(0), ErrAttached)
		if err := a.Free(ctx); err != nil {
			return err
		}
		for _, e := range []*Event{e1, e2} {
			if err := e.Post(me); err != nil {
				t.Errorf("Post after the array was freed: %v", err)
			}
		}
		// Freeing an attached event detaches it.
		b, err := New[int32](ctx, im, 4)
		if err != nil {
			return err
		}
		if err := Attach(ctx, e3, b, 0, 4); err != nil {
			return err
		}
		if err := e3.Free(ctx); err != nil {
			return err
		}
		if err := b.Put(1-me, 0, ones[:4]); err != nil {
			t.Errorf("put after the attached event was freed: %v", err)
		}
		if err := Attach(ctx, e2, b, 0, 4); err != nil {
			t.Errorf("attaching another event to the range: %v", err)
		}
		if err := b.Free(ctx); err != nil {
			return err
		}
		for _, e := range []*Event{e1, e2} {
			if err := e.Free(ctx); err != nil {
				return err
			}
		}
		return nv.Free(ctx)
	})
}

// TestMisuse checks the errors of wrong images, ranges and freed objects,
// and that refused puts write nothing.
func TestMisuse(t *testing.T) {
	runImages(t, 3, func(ctx context.Context, im *Images) error {
		np := im.NumImages()
		a, err := New[uint16](ctx, im, 4)
		if err != nil {
			return err
		}
		ev, err := NewEvent(ctx, im)
		if err != nil {
			return err
		}
		nv, err := NewNotify(ctx, im)
		if err != nil {
			return err
		}
		buf := []uint16{7, 7}
		for _, img := range []int{-1, np} {
			wantErr(t, "Put to a bad image", a.Put(img, 0, buf), narma.ErrRank)
			wantErr(t, "Get from a bad image", a.Get(img, 0, buf), narma.ErrRank)
			wantErr(t, "Post to a bad image", ev.Post(img), narma.ErrRank)
			wantErr(t, "SyncImages with a bad image", im.SyncImages(ctx, []int{img}), narma.ErrRank)
		}
		wantErr(t, "SyncImages with a repeated image", im.SyncImages(ctx, []int{1, 0, 1}), narma.ErrInvalid)
		for _, off := range []int{-1, 3, 5} {
			wantErr(t, "Put outside the block", a.Put(0, off, buf), narma.ErrBounds)
			wantErr(t, "notified Put outside the block", a.Put(0, off, buf, WithNotify(nv)), narma.ErrBounds)
			wantErr(t, "Get outside the block", a.Get(0, off, buf), narma.ErrBounds)
		}
		wantErr(t, "WithNotify(nil)", a.Put(0, 0, buf, WithNotify(nil)), narma.ErrInvalid)
		if err := im.SyncAll(ctx); err != nil {
			return err
		}
		for i, v := range a.Local() {
			if v != 0 {
				t.Errorf("a refused put wrote %d at %d", v, i)
			}
		}
		if n := query(t, ev); n != 0 {
			t.Errorf("refused posts counted: %d", n)
		}
		shortWait(t, "notify after refused notified puts", nv.Wait, 1)
		// Collective calls with different arguments fail everywhere.
		wantErr(t, "New of different lengths", errOf(New[uint16](ctx, im, 4+im.ThisImage())), narma.ErrCollective)
		if im.ThisImage() == 1 {
			wantErr(t, "New of a negative length", errOf(New[int8](ctx, im, -1)), narma.ErrInvalid)
		} else {
			wantErr(t, "New beside a negative length", errOf(New[int8](ctx, im, 1)), narma.ErrCollective)
		}
		if im.ThisImage() == 2 {
			wantErr(t, "New of another type", errOf(New[int64](ctx, im, 4)), narma.ErrCollective)
		} else {
			wantErr(t, "New of another type", errOf(New[float64](ctx, im, 4)), narma.ErrCollective)
		}
		wantErr(t, "New beyond the heap", errOf(New[int64](ctx, im, 1<<20)), ErrNoMemory)
		// Freed objects.
		if err := a.Free(ctx); err != nil {
			return err
		}
		if err := ev.Free(ctx); err != nil {
			return err
		}
		if err := nv.Free(ctx); err != nil {
			return err
		}
		if a.Local() != nil {
			t.Errorf("Local of a freed array: %v", a.Local())
		}
		wantErr(t, "Put into a freed array", a.Put(0, 0, buf), narma.ErrFreed)
		wantErr(t, "Get from a freed array", a.Get(0, 0, buf), narma.ErrFreed)
		wantErr(t, "second Free of an array", a.Free(ctx), narma.ErrFreed)
		wantErr(t, "Post of a freed event", ev.Post(0), narma.ErrFreed)
		wantErr(t, "Wait on a freed event", ev.Wait(ctx, 1), narma.ErrFreed)
		wantErr(t, "Query of a freed event", errOf(ev.Query()), narma.ErrFreed)
		wantErr(t, "second Free of an event", ev.Free(ctx), narma.ErrFreed)
		wantErr(t, "Wait on a freed notify variable", nv.Wait(ctx, 1), narma.ErrFreed)
		wantErr(t, "second Free of a notify variable", nv.Free(ctx), narma.ErrFreed)
		b, err := New[uint16](ctx, im, 4)
		if err != nil {
			return err
		}
		wantErr(t, "Put notifying a freed variable", b.Put(0, 0, buf, WithNotify(nv)), narma.ErrFreed)
		ev2, err := NewEvent(ctx, im)
		if err != nil {
			return err
		}
		wantErr(t, "Attach of a freed event", Attach(ctx, ev, b, 0, 4), narma.ErrFreed)
		wantErr(t, "Attach to a freed array", Attach(ctx, ev2, a, 0, 4), narma.ErrFreed)
		if err := ev2.Free(ctx); err != nil {
			return err
		}
		return b.Free(ctx)
	})
}

// errOf keeps the error of a two-valued call.
func errOf[V any](_ V, err error) error { return err }

func TestObjectsOfAnotherJob(t *testing.T) {
	// Objects of two Images of one image cannot be mixed.
	runImages(t, 2, func(ctx context.Context, im *Images) error {
		other, err := Init(ctx, im.Comm(), WithHeapSize(256))
		if err != nil {
			return err
		}
		a, err := New[int32](ctx, im, 2)
		if err != nil {
			return err
		}
		nv, err := NewNotify(ctx, other)
		if err != nil {
			return err
		}
		ev, err := NewEvent(ctx, other)
		if err != nil {
			return err
		}
		wantErr(t, "WithNotify of another Images", a.Put(0, 0, []int32{1}, WithNotify(nv)), narma.ErrInvalid)
		wantErr(t, "Attach of another Images' event", Attach(ctx, ev, a, 0, 2), narma.ErrInvalid)
		if err := other.Finalize(ctx); err != nil {
			return err
		}
		wantErr(t, "Wait after Finalize", nv.Wait(ctx, 1), narma.ErrFreed)
		wantErr(t, "Post after Finalize", ev.Post(0), narma.ErrFreed)
		wantErr(t, "SyncAll after Finalize", other.SyncAll(ctx), narma.ErrFreed)
		wantErr(t, "second Finalize", other.Finalize(ctx), narma.ErrFreed)
		wantErr(t, "New after Finalize", errOf(New[int32](ctx, other, 1)), narma.ErrFreed)
		return a.Free(ctx)
	})
}

func TestInitRefusesBadSizes(t *testing.T) {
	runComm(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		_, err := Init(ctx, c, WithHeapSize(1024*(1+c.Rank())))
		wantErr(t, "Init with different heap sizes", err, narma.ErrCollective)
		size := 1024
		if c.Rank() == 0 {
			size = -1
		}
		_, err = Init(ctx, c, WithHeapSize(size))
		if c.Rank() == 0 {
			wantErr(t, "Init with a negative heap size", err, narma.ErrInvalid)
		} else {
			wantErr(t, "Init beside a negative heap size", err, narma.ErrCollective)
		}
		_, err = Init(ctx, nil)
		wantErr(t, "Init(nil)", err, narma.ErrInvalid)
		return nil
	})
}

func TestNilObjects(t *testing.T) {
	ctx := context.Background()
	var a *Array[int32]
	var ev *Event
	var nv *Notify
	var im *Images
	wantErr(t, "Put on a nil Array", a.Put(0, 0, nil), narma.ErrInvalid)
	wantErr(t, "Get on a nil Array", a.Get(0, 0, nil), narma.ErrInvalid)
	wantErr(t, "Free of a nil Array", a.Free(ctx), narma.ErrInvalid)
	wantErr(t, "Post on a nil Event", ev.Post(0), narma.ErrInvalid)
	wantErr(t, "Wait on a nil Event", ev.Wait(ctx, 1), narma.ErrInvalid)
	wantErr(t, "Query on a nil Event", errOf(ev.Query()), narma.ErrInvalid)
	wantErr(t, "Free of a nil Event", ev.Free(ctx), narma.ErrInvalid)
	wantErr(t, "Wait on a nil Notify", nv.Wait(ctx, 1), narma.ErrInvalid)
	wantErr(t, "Free of a nil Notify", nv.Free(ctx), narma.ErrInvalid)
	wantErr(t, "Attach of nil", Attach(ctx, ev, a, 0, 1), narma.ErrInvalid)
	wantErr(t, "Detach of nil", Detach(ctx, ev), narma.ErrInvalid)
	wantErr(t, "New on nil Images", errOf(New[int32](ctx, im, 1)), narma.ErrInvalid)
	wantErr(t, "NewEvent on nil Images", errOf(NewEvent(ctx, im)), narma.ErrInvalid)
	wantErr(t, "NewNotify on nil Images", errOf(NewNotify(ctx, im)), narma.ErrInvalid)
	wantErr(t, "SyncAll on nil Images", im.SyncAll(ctx), narma.ErrInvalid)
	if a.Local() != nil || a.Len() != 0 {
		t.Errorf("nil Array: Local %v, Len %d", a.Local(), a.Len())
	}
}
