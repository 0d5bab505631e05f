package coarray

import (
	"context"
	"errors"
	"slices"

	"github.com/narma-rma/narma"
)

// ErrAttached reports a conflict with an attached event: an explicit Post
// of an event that is attached to an array, a put WithNotify into a range
// to which an event is attached, an Attach of an event that is already
// attached, or an Attach to a range that overlaps another event's.
var ErrAttached = errors.New("coarray: event attached")

// counter is the mechanism of events and notify variables: a notification
// counter of the heap's window, the same index on every image, which
// notified puts (and posts: empty notified puts) increment at their
// target. The counter only grows; consumed is how much of it this image's
// waits have taken.
type counter struct {
	im       *Images
	idx      int
	consumed uint64
	freed    bool
}

// newCounter makes a counter, collectively.
func newCounter(ctx context.Context, im *Images, op string) (counter, error) {
	if im == nil {
		return counter{}, im.check(op)
	}
	if err := im.agree(ctx, opNewCounter, op, im.check(op)); err != nil {
		return counter{}, err
	}
	idx, err := im.h.NewCounter(ctx)
	if err != nil {
		return counter{}, err
	}
	return counter{im: im, idx: idx}, nil
}

// check reports whether the counter may be used.
func (c *counter) check(op, what string) error {
	if err := c.im.check(op); err != nil {
		return err
	}
	if c.freed {
		return c.im.errorf(op, narma.ErrFreed, "%s freed", what)
	}
	return nil
}

// wait waits until untilCount more notices than consumed so far have
// arrived, and consumes them.
func (c *counter) wait(ctx context.Context, op, what string, untilCount int) error {
	if err := c.check(op, what); err != nil {
		return err
	}
	n := uint64(max(untilCount, 1))
	if err := c.im.w.WaitCounter(ctx, c.idx, c.consumed+n); err != nil {
		return err
	}
	c.consumed += n
	return nil
}

// free releases the counter, collectively, after every image's puts and
// posts are complete.
func (c *counter) free(ctx context.Context, op, what string) error {
	local := c.check(op, what)
	if c.im == nil {
		return local // a zero-value object: nobody to agree with
	}
	if local == nil {
		local = c.im.heapCall(op)
	}
	if local == nil {
		local = c.im.w.FlushAll(ctx)
	}
	if err := c.im.agree(ctx, opFreeCounter, op, local, int64(c.idx)); err != nil {
		return err
	}
	c.freed = true
	return c.im.h.FreeCounter(ctx, c.idx)
}

// Event is an event variable, type(event_type) :: ev[*]: a counter on every
// image that any image increments with Post (EVENT POST) and that its own
// image waits on with Wait (EVENT WAIT) and reads with Query (EVENT_QUERY).
// Attach makes puts into an array post it (the proposed EVENT ATTACH).
// NewEvent makes one.
type Event struct {
	c      counter
	on     *object // the array the event is attached to, or nil
	lo, hi int     // the attached range, in elements
}

// NewEvent makes an event variable, at zero on every image, collectively.
func NewEvent(ctx context.Context, im *Images) (*Event, error) {
	c, err := newCounter(ctx, im, "coarray.NewEvent")
	if err != nil {
		return nil, err
	}
	return &Event{c: c}, nil
}

// Post increments the event on image (a number in the current team): EVENT
// POST (ev[image+1]). It never waits for image or for any other image. Like
// EVENT POST, it orders segments: it first completes every put this image
// issued (to any image), so that an image whose Wait this post satisfies
// sees them; then it sends the increment itself, an empty notified put,
// which reaches image even if image never calls into the library.
//
// An event attached to an array cannot be posted explicitly (the paper's
// rule: its count is the count of puts): Post returns an error wrapping
// ErrAttached. Use a second event for explicit posts.
func (e *Event) Post(image int) error {
	const op = "coarray.Event.Post"
	if e == nil {
		return nilError(op, "Event")
	}
	if err := e.c.check(op, "event"); err != nil {
		return err
	}
	im := e.c.im
	target, err := im.target(op, selector{}, image)
	if err != nil {
		return err
	}
	if e.on != nil {
		return im.errorf(op, ErrAttached, "the event is attached to elements [%d, %d) of an array: puts into them post it, explicit posts are not allowed", e.lo, e.hi)
	}
	ctx := im.c.Context()
	if err := im.w.FlushAll(ctx); err != nil {
		return err
	}
	if err := im.w.PutNotify(nil, target, 0, narma.Counter(e.c.idx)); err != nil {
		return err
	}
	return im.w.Flush(ctx, target)
}

// Wait waits until the event on this image has been posted untilCount
// times more than earlier Waits consumed, then consumes untilCount posts:
// EVENT WAIT (ev, UNTIL_COUNT=untilCount). As in Fortran, an untilCount
// below 1 means 1. Posts that arrive during the wait are kept for later
// waits: the counter is never decremented (a post may race with the
// wait), this image keeps the total it consumed instead. An attached event
// counts puts into its range. If ctx is done first, Wait returns its error
// and consumes nothing.
func (e *Event) Wait(ctx context.Context, untilCount int) error {
	if e == nil {
		return nilError("coarray.Event.Wait", "Event")
	}
	return e.c.wait(ctx, "coarray.Event.Wait", "event", untilCount)
}

// Query returns the number of posts of the event on this image that no
// Wait has consumed: EVENT_QUERY(ev, count). It does not wait and changes
// nothing. A post issued by another image is counted once it has arrived,
// which is certain after a later synchronization with that image.
func (e *Event) Query() (int, error) {
	const op = "coarray.Event.Query"
	if e == nil {
		return 0, nilError(op, "Event")
	}
	if err := e.c.check(op, "event"); err != nil {
		return 0, err
	}
	n, err := e.c.im.w.Counter(e.c.idx)
	if err != nil {
		return 0, err
	}
	return int(n - e.c.consumed), nil
}

// Free releases the event on every image, collectively, after every
// image's puts and posts are complete; an attached event is detached. The
// event is unusable afterwards (narma.ErrFreed).
func (e *Event) Free(ctx context.Context) error {
	const op = "coarray.Event.Free"
	if e == nil {
		return nilError(op, "Event")
	}
	if err := e.c.free(ctx, op, "event"); err != nil {
		return err
	}
	e.detach()
	return nil
}

// detach removes the event from its array's attachments.
func (e *Event) detach() {
	if e.on == nil {
		return
	}
	e.on.attached = slices.DeleteFunc(e.on.attached, func(x *Event) bool { return x == e })
	e.on = nil
}

// Attach attaches event e to elements [lo, hi) of array a, collectively
// (every image passes the same event, array and range): the EVENT ATTACH
// proposed by Fanfarillo and Del Vento. Use lo = 0, hi = a.Len() for the
// whole array. From then on every Put into that range of any image's block
// carries a notice that posts e on that image once the data is in place:
// one post per put that writes any element of the range, however many it
// writes and whether or not the put also writes outside it (the part
// outside is not covered by the post). The put needs no separate Post and
// no flush; the target learns of it by e.Wait, which counts such puts.
//
// Puts issued by an image before its Attach do not post e. An event is
// attached to one range at a time, and the ranges of the events attached
// to one array must not overlap (each put carries at most one notice per
// range); such an Attach fails with ErrAttached. An attached event cannot
// be posted explicitly, and a put WithNotify into its range is refused.
// Detach, e.Free and a.Free end the attachment. A range outside the array,
// or empty, is refused with narma.ErrBounds. If any image's arguments are
// wrong, Attach fails on every image and attaches nothing.
func Attach[T narma.Elem](ctx context.Context, e *Event, a *Array[T], lo, hi int) error {
	const op = "coarray.Attach"
	// An image with a nil event or array still takes part in the
	// agreement if it can reach its Images, so the others fail too
	// instead of waiting for it.
	var im *Images
	switch {
	case a != nil && a.obj != nil:
		im = a.obj.im
	case e != nil:
		im = e.c.im
	}
	if im == nil {
		return nilError(op, "Event or Array")
	}
	if e == nil || a == nil || a.obj == nil {
		local := nilError(op, "Event or Array")
		if err := im.agree(ctx, opAttach, op, local, -1, -1, int64(lo), int64(hi)); err != nil {
			return err
		}
		return local
	}
	local := a.obj.check(op)
	switch {
	case local != nil:
	case e.c.im != im:
		local = im.errorf(op, narma.ErrInvalid, "event and array of different Images")
	case e.c.freed:
		local = e.c.check(op, "event")
	case e.on != nil:
		local = im.errorf(op, ErrAttached, "the event is already attached to elements [%d, %d) of an array", e.lo, e.hi)
	case lo < 0 || hi > a.obj.n || lo >= hi:
		local = im.errorf(op, narma.ErrBounds, "range [%d, %d) is empty or outside the array of %d", lo, hi, a.obj.n)
	default:
		if x := a.obj.overlap(lo, hi); x != nil {
			local = im.errorf(op, ErrAttached, "range [%d, %d) overlaps [%d, %d), to which another event is attached", lo, hi, x.lo, x.hi)
		}
	}
	if err := im.agree(ctx, opAttach, op, local, int64(e.c.idx), int64(a.obj.off), int64(lo), int64(hi)); err != nil {
		return err
	}
	e.on, e.lo, e.hi = a.obj, lo, hi
	i := 0
	for i < len(a.obj.attached) && a.obj.attached[i].lo < lo {
		i++
	}
	a.obj.attached = slices.Insert(a.obj.attached, i, e)
	return nil
}

// Detach ends the attachment of e, collectively: puts an image issues
// after its Detach no longer post e, and e may be posted explicitly again.
// Posts already counted stay. Detaching an event that is not attached
// fails with narma.ErrInvalid.
func Detach(ctx context.Context, e *Event) error {
	const op = "coarray.Detach"
	if e == nil {
		return nilError(op, "Event")
	}
	im := e.c.im
	local := e.c.check(op, "event")
	if im == nil {
		return local // a zero-value Event: nobody to agree with
	}
	if local == nil && e.on == nil {
		local = im.errorf(op, narma.ErrInvalid, "the event is not attached")
	}
	if err := im.agree(ctx, opDetach, op, local, int64(e.c.idx)); err != nil {
		return err
	}
	e.detach()
	return nil
}

// Notify is a notify variable, type(notify_type) :: nv[*] of Fortran 2023:
// a counter on every image that notified puts (Put with WithNotify)
// increment at their target once their data is in place, and that its own
// image waits on with Wait (NOTIFY WAIT). Unlike an event it cannot be
// posted. NewNotify makes one.
type Notify struct {
	c counter
}

// NewNotify makes a notify variable, at zero on every image, collectively.
func NewNotify(ctx context.Context, im *Images) (*Notify, error) {
	c, err := newCounter(ctx, im, "coarray.NewNotify")
	if err != nil {
		return nil, err
	}
	return &Notify{c: c}, nil
}

// Wait waits until untilCount notified puts more than earlier Waits
// consumed have reached this image, then subtracts untilCount: NOTIFY WAIT
// (nv, UNTIL_COUNT=untilCount). An untilCount below 1 means 1. Once it
// returns, the data of those puts is in place. Like Event.Wait, it keeps
// the consumed total instead of decrementing the counter.
func (nv *Notify) Wait(ctx context.Context, untilCount int) error {
	if nv == nil {
		return nilError("coarray.Notify.Wait", "Notify")
	}
	return nv.c.wait(ctx, "coarray.Notify.Wait", "notify variable", untilCount)
}

// Free releases the notify variable on every image, collectively, after
// every image's puts are complete. It is unusable afterwards
// (narma.ErrFreed).
func (nv *Notify) Free(ctx context.Context) error {
	const op = "coarray.Notify.Free"
	if nv == nil {
		return nilError(op, "Notify")
	}
	return nv.c.free(ctx, op, "notify variable")
}

// checkFor checks that nv may notify a put of im.
func (nv *Notify) checkFor(op string, im *Images) error {
	if nv == nil {
		return im.errorf(op, narma.ErrInvalid, "WithNotify(nil)")
	}
	if nv.c.im != im {
		return im.errorf(op, narma.ErrInvalid, "notify variable of different Images")
	}
	return nv.c.check(op, "notify variable")
}
