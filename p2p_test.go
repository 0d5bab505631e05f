package narma_test

// Two-sided messages: Send/Recv, Isend/Irecv, Probe/Iprobe with wildcards,
// MPI's non-overtaking order, cancellation by Free, truncation, bad tags and
// ranks, context cancellation, and separation from the library's own
// collective traffic.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// TestSendRecvRing: every rank sends to its right neighbour and receives
// from its left, with status checks, for 1..5 ranks (one rank sends to
// itself).
func TestSendRecvRing(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, n, func(c *narma.Comm) error {
				ctx := c.Context()
				me := c.Rank()
				right, left := (me+1)%n, (me+n-1)%n
				if c.Size() != n {
					return fmt.Errorf("Size() = %d, want %d", c.Size(), n)
				}
				msg := []byte(fmt.Sprintf("from %d", me))
				if err := c.Send(ctx, msg, right, 10+me); err != nil {
					return err
				}
				msg[0] = 'X' // Send copied the data before returning
				buf := make([]byte, 32)
				st, err := c.Recv(ctx, buf, left, 10+left)
				if err != nil {
					return err
				}
				want := fmt.Sprintf("from %d", left)
				if st.Source != left || st.Tag != 10+left || st.Count != len(want) {
					return fmt.Errorf("status %+v, want source %d tag %d count %d", st, left, 10+left, len(want))
				}
				if got := string(buf[:st.Count]); got != want {
					return fmt.Errorf("received %q, want %q", got, want)
				}
				// A zero-byte message.
				if err := c.Send(ctx, nil, right, 0); err != nil {
					return err
				}
				st, err = c.Recv(ctx, buf, left, 0)
				if err != nil {
					return err
				}
				if st.Count != 0 || st.Source != left {
					return fmt.Errorf("zero-byte message status %+v", st)
				}
				return nil
			})
		})
	}
}

// TestIsendIrecv: receives posted before the sends complete with the data
// and status; Test reports completion; a second Irecv posted later gets the
// second message.
func TestIsendIrecv(t *testing.T) {
	const n = 3
	run(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		me := c.Rank()
		right, left := (me+1)%n, (me+n-1)%n
		b1, b2 := make([]byte, 8), make([]byte, 8)
		r1, err := c.Irecv(b1, left, 4)
		if err != nil {
			return err
		}
		r2, err := c.Irecv(b2, narma.AnySource, 4)
		if err != nil {
			return err
		}
		if _, done, err := r1.Test(); err != nil || done {
			return fmt.Errorf("Test of an Irecv with nothing sent: done=%v err=%v", done, err)
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		s1, err := c.Isend(ctx, u64(uint64(100+me)), right, 4)
		if err != nil {
			return err
		}
		s2, err := c.Isend(ctx, u64(uint64(200+me)), right, 4)
		if err != nil {
			return err
		}
		for _, s := range []*narma.Request{s1, s2} {
			if _, err := s.Wait(ctx); err != nil {
				return err
			}
		}
		st, err := r1.Wait(ctx)
		if err != nil {
			return err
		}
		if st.Source != left || st.Tag != 4 || st.Count != 8 || binary.LittleEndian.Uint64(b1) != uint64(100+left) {
			return fmt.Errorf("first Irecv: status %+v, data %d; want the first message of rank %d", st, binary.LittleEndian.Uint64(b1), left)
		}
		st, err = r2.Wait(ctx)
		if err != nil {
			return err
		}
		if st.Source != left || binary.LittleEndian.Uint64(b2) != uint64(200+left) {
			return fmt.Errorf("second Irecv: status %+v, data %d; want the second message of rank %d", st, binary.LittleEndian.Uint64(b2), left)
		}
		st, done, err := r2.Test()
		if err != nil || !done || st.Source != left {
			return fmt.Errorf("Test after Wait: %+v, %v, %v", st, done, err)
		}
		return errors.Join(r1.Free(), r2.Free(), s1.Free(), s2.Free())
	})
}

// TestProbeIprobe: Probe and Iprobe with AnySource and AnyTag report a
// waiting message without receiving it; a non-matching Iprobe reports
// nothing.
func TestProbeIprobe(t *testing.T) {
	const n = 3
	run(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		me := c.Rank()
		if me != 0 {
			return c.Send(ctx, bytes.Repeat([]byte{byte(me)}, me*3), 0, 20+me)
		}
		seen := map[int]bool{}
		for i := 0; i < n-1; i++ {
			st, err := c.Probe(ctx, narma.AnySource, narma.AnyTag)
			if err != nil {
				return err
			}
			if st.Source < 1 || st.Source >= n || st.Tag != 20+st.Source || st.Count != 3*st.Source {
				return fmt.Errorf("Probe status %+v", st)
			}
			st2, found, err := c.Iprobe(st.Source, narma.AnyTag)
			if err != nil || !found || st2 != st {
				return fmt.Errorf("Iprobe after Probe: %+v, %v, %v; want %+v", st2, found, err, st)
			}
			if _, found, err := c.Iprobe(st.Source, 99); err != nil || found {
				return fmt.Errorf("Iprobe with a tag nobody sent: found=%v err=%v", found, err)
			}
			buf := make([]byte, st.Count)
			st3, err := c.Recv(ctx, buf, narma.AnySource, st.Tag)
			if err != nil {
				return err
			}
			if st3 != st || !bytes.Equal(buf, bytes.Repeat([]byte{byte(st.Source)}, st.Count)) {
				return fmt.Errorf("Recv after Probe: %+v %v; want %+v", st3, buf, st)
			}
			if seen[st.Source] {
				return fmt.Errorf("message of rank %d received twice", st.Source)
			}
			seen[st.Source] = true
		}
		if _, found, err := c.Iprobe(narma.AnySource, narma.AnyTag); err != nil || found {
			return fmt.Errorf("Iprobe after receiving everything: found=%v err=%v", found, err)
		}
		return nil
	})
}

// TestNonOvertaking: messages from one sender with the same tag are
// received in the order sent, with specific and wildcard receives, and a
// wildcard receive takes the oldest message of a sender.
func TestNonOvertaking(t *testing.T) {
	const n, k = 4, 60
	run(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		me := c.Rank()
		if me != 0 {
			for i := 0; i < k; i++ {
				if err := c.Send(ctx, u64(uint64(me*1000+i)), 0, 7); err != nil {
					return err
				}
				if i%7 == 0 {
					yield(1)
				}
			}
			// Once rank 0 has all the tag-7 messages: tags 3, 1, 2 and a
			// final marker on tag 9.
			if _, err := c.Recv(ctx, nil, 0, 50); err != nil {
				return err
			}
			for _, tag := range []int{3, 1, 2} {
				if err := c.Send(ctx, u64(uint64(tag)), 0, tag); err != nil {
					return err
				}
			}
			return c.Send(ctx, nil, 0, 9)
		}
		next := make([]int, n)
		buf := make([]byte, 8)
		for i := 0; i < (n-1)*k; i++ {
			var st narma.Status
			var err error
			switch i % 3 {
			case 0:
				st, err = c.Recv(ctx, buf, narma.AnySource, 7)
			case 1:
				st, err = c.Recv(ctx, buf, narma.AnySource, narma.AnyTag)
			default:
				src := 1 + i%(n-1)
				if next[src] >= k {
					st, err = c.Recv(ctx, buf, narma.AnySource, 7)
				} else {
					st, err = c.Recv(ctx, buf, src, narma.AnyTag)
				}
			}
			if err != nil {
				return err
			}
			if st.Tag != 7 {
				return fmt.Errorf("receive %d: tag %d overtook the tag-7 messages of rank %d", i, st.Tag, st.Source)
			}
			v := binary.LittleEndian.Uint64(buf)
			if want := uint64(st.Source*1000 + next[st.Source]); v != want {
				return fmt.Errorf("receive %d from rank %d: message %d, want %d (overtaken)", i, st.Source, v, want)
			}
			next[st.Source]++
		}
		for src := 1; src < n; src++ {
			if err := c.Send(ctx, nil, src, 50); err != nil {
				return err
			}
		}
		for src := 1; src < n; src++ {
			// After the marker, all of src's messages are queued; the
			// wildcard receive picks the oldest: tag 3.
			if _, err := c.Recv(ctx, nil, src, 9); err != nil {
				return err
			}
			st, err := c.Recv(ctx, buf, src, narma.AnyTag)
			if err != nil {
				return err
			}
			if st.Tag != 3 || binary.LittleEndian.Uint64(buf) != 3 {
				return fmt.Errorf("Recv(%d, AnyTag) got tag %d, want the oldest message (tag 3)", src, st.Tag)
			}
			st, err = c.Recv(ctx, buf, src, 2)
			if err != nil || st.Tag != 2 {
				return fmt.Errorf("Recv(%d, 2): %+v, %v", src, st, err)
			}
			st, err = c.Recv(ctx, buf, src, narma.AnyTag)
			if err != nil || st.Tag != 1 {
				return fmt.Errorf("Recv(%d, AnyTag) after taking tag 2: %+v, %v; want tag 1", src, st, err)
			}
		}
		return nil
	})
}

// TestIrecvFreeCancels: Free of an unmatched Irecv cancels it: a later
// message goes to a later receive and the freed buffer is not written.
func TestIrecvFreeCancels(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		if c.Rank() == 1 {
			if err := c.Barrier(ctx); err != nil {
				return err
			}
			return c.Send(ctx, []byte("late"), 0, 5)
		}
		dead := []byte("....")
		r, err := c.Irecv(dead, 1, 5)
		if err != nil {
			return err
		}
		wild, err := c.Irecv(dead, narma.AnySource, narma.AnyTag)
		if err != nil {
			return err
		}
		if err := r.Free(); err != nil {
			return err
		}
		if err := wild.Free(); err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		buf := make([]byte, 4)
		st, err := c.Recv(rctx, buf, 1, 5)
		if err != nil {
			return fmt.Errorf("Recv after freeing matching Irecvs: %v (the message went to a cancelled request?)", err)
		}
		if string(buf[:st.Count]) != "late" {
			return fmt.Errorf("received %q, want %q", buf[:st.Count], "late")
		}
		if string(dead) != "...." {
			return fmt.Errorf("a freed Irecv wrote its buffer: %q", dead)
		}
		return nil
	})
}

// TestRecvTruncate: a message longer than the receive buffer fills the
// buffer and returns ErrTruncate with the full length in the status; the
// message is consumed.
func TestRecvTruncate(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		k := newChecks(c)
		if c.Rank() == 1 {
			for _, m := range []string{"0123456789abcdef", "second message!!", "after"} {
				if err := c.Send(ctx, []byte(m), 0, 1); err != nil {
					return err
				}
			}
			return nil
		}
		buf := make([]byte, 8)
		st, err := c.Recv(ctx, buf, 1, 1)
		k.isIn("Recv into a short buffer", err, narma.ErrTruncate, "Recv", "16", "8")
		if st.Count != 16 || st.Source != 1 || st.Tag != 1 {
			k.errorf("truncated Recv status %+v, want count 16 from rank 1 tag 1", st)
		}
		if string(buf) != "01234567" {
			k.errorf("truncated Recv buffer %q, want %q", buf, "01234567")
		}
		r, err := c.Irecv(buf, 1, 1)
		if err != nil {
			return err
		}
		st, err = r.Wait(ctx)
		k.is("Irecv into a short buffer", err, narma.ErrTruncate, "Irecv")
		if st.Count != 16 || string(buf) != "second m" {
			k.errorf("truncated Irecv: status %+v, buffer %q", st, buf)
		}
		st, err = c.Recv(ctx, buf, 1, 1)
		k.ok("Recv after truncations", err)
		if string(buf[:st.Count]) != "after" {
			k.errorf("message after the truncated ones: %q, want %q", buf[:st.Count], "after")
		}
		return k.err()
	})
}

// TestP2PBadArguments: negative tags, tags beyond 2^31-1 and ranks out of
// range are refused (ErrTag, ErrRank) and send nothing.
func TestP2PBadArguments(t *testing.T) {
	const n = 2
	run(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		me := c.Rank()
		other := 1 - me
		k := newChecks(c)
		buf := []byte{1, 2}
		k.isIn("Send with tag -1", c.Send(ctx, buf, other, -1), narma.ErrTag, "Send", "-1")
		k.isIn("Send with tag -5", c.Send(ctx, buf, other, -5), narma.ErrTag, "Send", "-5")
		k.is("Send with tag 2^31", c.Send(ctx, buf, other, 1<<31), narma.ErrTag, "Send")
		k.isIn("Send to rank n", c.Send(ctx, buf, n, 0), narma.ErrRank, "Send", fmt.Sprint(n))
		k.is("Send to rank -1", c.Send(ctx, buf, -1, 0), narma.ErrRank, "Send")
		r, err := c.Isend(ctx, buf, other, -2)
		k.is("Isend with tag -2", err, narma.ErrTag, "Isend")
		if r != nil {
			k.errorf("Isend with a bad tag returned a request")
		}
		_, err = c.Recv(ctx, buf, other, -2)
		k.is("Recv with tag -2", err, narma.ErrTag, "Recv")
		_, err = c.Recv(ctx, buf, n+1, 0)
		k.is("Recv from rank n+1", err, narma.ErrRank, "Recv")
		_, err = c.Irecv(buf, other, -3)
		k.is("Irecv with tag -3", err, narma.ErrTag, "Irecv")
		_, err = c.Irecv(buf, -3, 0) // (-2 is ProcNull)
		k.is("Irecv from rank -3", err, narma.ErrRank, "Irecv")
		_, err = c.Probe(ctx, n, 0)
		k.is("Probe of rank n", err, narma.ErrRank, "Probe")
		_, _, err = c.Iprobe(other, -4)
		k.is("Iprobe with tag -4", err, narma.ErrTag, "Iprobe")
		if !bytes.Equal(buf, []byte{1, 2}) {
			k.errorf("refused receives wrote the buffer: %v", buf)
		}
		// Nothing was sent: the first message each rank receives is the
		// valid one sent after the barrier.
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := c.Send(ctx, []byte{9}, other, 0); err != nil {
			return err
		}
		st, err := c.Recv(ctx, buf, narma.AnySource, narma.AnyTag)
		if err != nil {
			return err
		}
		if st.Tag != 0 || st.Count != 1 || buf[0] != 9 {
			k.errorf("first message received: %+v %v, want the valid one (tag 0, [9])", st, buf[:st.Count])
		}
		if _, found, _ := c.Iprobe(narma.AnySource, narma.AnyTag); found {
			k.errorf("a refused send delivered a message")
		}
		return k.err()
	})
}

// TestRecvContextCancel: a Recv blocked on a message that never comes
// returns promptly once its context is cancelled or its deadline passes.
func TestRecvContextCancel(t *testing.T) {
	done := make(chan struct{})
	// Goroutine ranks only: rank 1 waits on done, closed by rank 0, which
	// processes do not share.
	runLocal(t, 2, func(c *narma.Comm) error {
		if c.Rank() == 1 {
			return await(c, done)
		}
		defer close(done)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(50 * time.Millisecond)
			cancel()
		}()
		start := time.Now()
		_, err := c.Recv(ctx, make([]byte, 1), 1, 0)
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Recv with a cancelled context: %v, want context.Canceled", err)
		}
		if !bytes.Contains([]byte(err.Error()), []byte("Recv")) {
			return fmt.Errorf("error %q does not name Recv", err)
		}
		dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer dcancel()
		_, err = c.Recv(dctx, make([]byte, 1), narma.AnySource, narma.AnyTag)
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("Recv past its deadline: %v, want context.DeadlineExceeded", err)
		}
		if el := time.Since(start); el > 10*time.Second {
			return fmt.Errorf("cancelled receives took %v", el)
		}
		// The cancelled receives are gone: a message sent now is received
		// by a new Recv.
		if err := c.Send(c.Context(), []byte{42}, 0, 0); err != nil {
			return err
		}
		buf := make([]byte, 1)
		if _, err := c.Recv(c.Context(), buf, 0, 0); err != nil || buf[0] != 42 {
			return fmt.Errorf("Recv after cancelled receives: %v, %v", buf, err)
		}
		return nil
	})
}

// TestUserMessagesApartFromCollectives: a wildcard receive posted during
// collectives and window creation matches only user messages.
func TestUserMessagesApartFromCollectives(t *testing.T) {
	const n = 3
	run(t, n, func(c *narma.Comm) error {
		ctx := c.Context()
		buf := make([]byte, 8)
		r, err := c.Irecv(buf, narma.AnySource, narma.AnyTag)
		if err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		sum := []int64{0}
		if err := narma.Allreduce(ctx, c, []int64{1}, sum, narma.Sum); err != nil {
			return err
		}
		if err := narma.Bcast(ctx, c, []int64{int64(c.Rank())}, 0); err != nil {
			return err
		}
		w, err := narma.Allocate[int64](ctx, c, 1)
		if err != nil {
			return err
		}
		if err := w.Fence(ctx, 0); err != nil {
			return err
		}
		if err := w.Fence(ctx, narma.NoSucceed); err != nil {
			return err
		}
		if _, found, err := c.Iprobe(narma.AnySource, narma.AnyTag); err != nil || found {
			return fmt.Errorf("Iprobe sees library traffic: found=%v err=%v", found, err)
		}
		if _, done, err := r.Test(); err != nil || done {
			return fmt.Errorf("a wildcard Irecv matched library traffic: done=%v err=%v", done, err)
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if err := c.Send(ctx, []byte("user"), (c.Rank()+1)%n, 123); err != nil {
			return err
		}
		st, err := r.Wait(ctx)
		if err != nil {
			return err
		}
		if st.Tag != 123 || string(buf[:st.Count]) != "user" {
			return fmt.Errorf("wildcard Irecv got %+v %q", st, buf[:st.Count])
		}
		if sum[0] != n {
			return fmt.Errorf("Allreduce under a posted wildcard receive: %d, want %d", sum[0], n)
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		return w.Free(ctx)
	})
}

// TestUnexpectedLargeMessages: large messages that arrive before their
// receives are kept whole and in order, rounds after rounds, whatever
// their sizes (the buffers of matched ones are reused for later ones, so
// a reuse that lent a buffer still in use, or kept stale bytes, shows
// here), and over shared memory each is reassembled from several ring
// records.
func TestUnexpectedLargeMessages(t *testing.T) {
	sizes := []int{64 << 10, 8 << 10, 300 << 10, 16 << 10, 1 << 20, 5 << 20, 100}
	run(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		fill := func(b []byte, round, i int) {
			for k := range b {
				b[k] = byte(round*31 + i*7 + k%251)
			}
		}
		for round := range 3 {
			if c.Rank() == 0 {
				for i, n := range sizes {
					b := make([]byte, n)
					fill(b, round, i)
					if err := c.Send(ctx, b, 1, i); err != nil {
						return err
					}
				}
				// Rank 1 receives only after all have arrived.
				if err := c.Send(ctx, nil, 1, 99); err != nil {
					return err
				}
			} else {
				if _, err := c.Recv(ctx, nil, 0, 99); err != nil {
					return err
				}
				for i, n := range sizes {
					got := make([]byte, n)
					st, err := c.Recv(ctx, got, 0, i)
					if err != nil {
						return err
					}
					want := make([]byte, n)
					fill(want, round, i)
					if st.Count != n || !bytes.Equal(got, want) {
						return fmt.Errorf("round %d, message %d of %d bytes: count %d, contents differ: %v", round, i, n, st.Count, !bytes.Equal(got, want))
					}
				}
			}
			if err := c.Barrier(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}
