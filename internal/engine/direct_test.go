package engine

import (
	"context"
	"slices"
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

func (p *racingPoller) PollNotices(h transport.NoticeHandler) bool {
	did := len(p.bg)+len(p.polled) > 0
	for _, src := range p.bg {
		p.c.handleNotice(src, p.key, transport.TagNotice(transport.NoticeTag, 7))
	}
	if h == nil {
		h = p.c.handleNotice
	}
	for _, src := range p.polled {
		h(src, p.key, transport.TagNotice(transport.NoticeTag, 7))
	}
	p.bg, p.polled = nil, nil
	return did
}

func (p *racingPoller) Yield() {}
func (p *racingPoller) Park()  {}

// TestDirectNoticesKeepArrivalOrder: notices a request takes straight from
// the transport (PollNotices) never overtake older ones that background
// delivery put in the inbox, even when the background delivers while the
// request polls; and notices for other tags or windows take the usual way.
func TestDirectNoticesKeepArrivalOrder(t *testing.T) {
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
	defer func() { c.poller = nil }()

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
