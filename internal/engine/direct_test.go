package engine

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/narma-rma/narma/internal/transport"
)

// racingPoller stands in for a transport whose background delivery and a
// waiter's poll interleave: PollNotices first delivers bg through the
// engine's installed handler (as the background goroutine would, just
// before the poll takes over), then polled through the handler it is
// given.
type racingPoller struct {
	c          *Comm
	key        transport.Key
	bg, polled []int // sources of tag-7 notices
}

func (p *racingPoller) Poll() bool { return p.PollNotices(nil) }

func (p *racingPoller) PollNotices(t transport.NoticeTaker) bool {
	did := len(p.bg)+len(p.polled) > 0
	for _, src := range p.bg {
		p.c.handleNotice(src, p.key, transport.TagNotice(transport.NoticeTag, 7))
	}
	p.bg = nil
	for len(p.polled) > 0 {
		src := p.polled[0]
		p.polled = p.polled[1:]
		if t == nil {
			p.c.handleNotice(src, p.key, transport.TagNotice(transport.NoticeTag, 7))
		} else if t(src, p.key, transport.TagNotice(transport.NoticeTag, 7)) {
			break // as a transport does: the rest waits for the next poll
		}
	}
	return did
}

// racingWin returns rank 0's window of a job of 3 ranks, its Comm's
// poller replaced by a racingPoller on the window's key.
func racingWin(t *testing.T) (*Win, *racingPoller) {
	cs := newComms(t, 3)
	ws := make([]*Win, 3)
	runOK(t, cs, func(ctx context.Context, c *Comm) error {
		w, err := c.Allocate(ctx, 64, WinOptions{})
		ws[c.rank] = w
		return err
	})
	c, w := cs[0], ws[0]
	p := &racingPoller{c: c, key: w.key}
	c.poller = p
	t.Cleanup(func() { c.poller = nil })
	return w, p
}

func (p *racingPoller) Yield() {}
func (p *racingPoller) Park()  {}

// TestDirectNoticesKeepArrivalOrder: notices a request takes straight from
// the transport (PollNotices) never overtake older ones that background
// delivery put in the inbox, even when the background delivers while the
// request polls; and notices for other tags or windows take the usual way.
func TestDirectNoticesKeepArrivalOrder(t *testing.T) {
	w, p := racingWin(t)

	r, err := w.NotifyInit(AnySource, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Each round: what background delivery puts in the inbox while the
	// request polls, what the poll itself finds, and the sources the
	// request must match in that round, in order. Rank 1's notice in the
	// first round is older than rank 2's. In the last round the poll finds
	// nothing, and the notice background delivery left must still be
	// seen by the same Test.
	rounds := []struct{ bg, polled, want []int }{
		{[]int{1}, []int{2}, []int{1, 2}},
		{nil, []int{1, 2, 2}, []int{1, 2, 2}},
		{nil, nil, nil},
		{[]int{2}, nil, []int{2}},
	}
	active := false
	for i, rd := range rounds {
		p.bg, p.polled = rd.bg, rd.polled
		var got []int
		for {
			if !active {
				if err := r.Start(); err != nil {
					t.Fatal(err)
				}
				active = true
			}
			st, done, err := r.Test()
			if err != nil {
				t.Fatal(err)
			}
			if !done {
				break
			}
			active = false
			got = append(got, st.Source)
		}
		if !slices.Equal(got, rd.want) {
			t.Fatalf("round %d: matched sources %v, want %v", i, got, rd.want)
		}
	}
	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
}

// TestDirectTakeStopsAtCount: the taker a request gives PollNotices
// reports done once the request has its count of matches, and not
// before, so that the transport leaves later notices for later polls.
func TestDirectTakeStopsAtCount(t *testing.T) {
	w, p := racingWin(t)

	for _, tc := range []struct {
		src, count int
		polled     []int
		wantSrc    int
		left       int // notices the poll must leave to the transport
	}{
		{AnySource, 2, []int{1, 2, 1}, 2, 1},
		{2, 1, []int{1, 2, 1, 2}, 2, 2}, // rank 1's notice goes to the queue on the way
		{1, 3, []int{1, 1, 1}, 1, 0},
	} {
		r, err := w.NotifyInit(tc.src, 7, tc.count)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		p.polled = tc.polled
		st, done, err := r.Test()
		if err != nil || !done {
			t.Fatalf("%+v: Test: done=%v err=%v", tc, done, err)
		}
		if st.Source != tc.wantSrc {
			t.Errorf("%+v: matched source %d", tc, st.Source)
		}
		if len(p.polled) != tc.left {
			t.Errorf("%+v: the poll left %d notices to the transport, want %d", tc, len(p.polled), tc.left)
		}
		if err := r.Free(); err != nil {
			t.Fatal(err)
		}
		// Take what is left, so that the next case starts empty.
		drain, err := w.NotifyInit(AnySource, AnyTag, 1)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if err := drain.Start(); err != nil {
				t.Fatal(err)
			}
			if _, done, _ := drain.Test(); !done {
				break
			}
		}
		if err := drain.Free(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDirectTakeBehindClaimedSlot: a notice a request's poll takes from
// the transport does not overtake older notices of its source still in
// the inbox, behind a position another producer claimed and has not yet
// filled: it goes into the inbox behind them.
func TestDirectTakeBehindClaimedSlot(t *testing.T) {
	w, _ := racingWin(t)
	r, err := w.NotifyInit(AnySource, AnyTag, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	var seen atomic.Uint64
	pos, ok := w.inbox.r.tryClaim(&seen) // rank 2 claimed, not filled
	if !ok {
		t.Fatal("claim failed")
	}
	w.inbox.push(1, 1) // rank 1's older notice, behind the claim
	w.directReq = r
	done := w.takeNotice(1, w.key, transport.TagNotice(transport.NoticeTag, 2))
	w.directReq = nil
	if done || r.matched != 0 {
		t.Fatalf("the polled notice matched (done %v, matched %d) ahead of an older one", done, r.matched)
	}
	w.inbox.r.fill(pos, 2, 9, true)
	var got []Status
	for range 3 {
		st, done, err := r.Test()
		if err != nil || !done {
			t.Fatalf("Test: %v, done %v", err, done)
		}
		got = append(got, st)
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
	}
	want := []Status{{Source: 2, Tag: 9}, {Source: 1, Tag: 1}, {Source: 1, Tag: 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("matched %v, want %v", got, want)
	}
}
