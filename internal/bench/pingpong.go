package bench

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/narma-rma/narma"
)

// Tags of the ping-pong's notices and messages.
const (
	tagData  = 1 // put-notify's notices, send-recv's messages
	tagReady = 2 // get-notify: a message is ready to be read
	tagRead  = 3 // get-notify: the message has been read
)

// ppVariant is one ping-pong variant: how a message is sent and how its
// arrival is learnt, over the window of a pingPong. open and close, run
// untimed around each measured run, open and close its epochs.
type ppVariant struct {
	Variant
	open  func(p *pingPong) error
	send  func(p *pingPong, n int, stamp int64) error
	recv  func(p *pingPong, n int, stamp int64) error
	close func(p *pingPong) error
}

var ppVariants = []ppVariant{
	{Variant: Variant{Name: "send-recv", Summary: "two-sided Send and Recv", Classic: true},
		send: sendMsg, recv: recvMsg},
	{Variant: Variant{Name: "fence", Summary: "Put between two Fences", Classic: true},
		open: fenceOpen, send: fenceSend, recv: fenceRecv, close: fenceClose},
	{Variant: Variant{Name: "pscw", Summary: "Put in Start/Complete, target in Post/Wait", Classic: true},
		open: pscwOpen, send: pscwSend, recv: pscwRecv, close: pscwClose},
	{Variant: Variant{Name: "put-flag", Summary: "Put, Flush, atomic flag (FetchAndOp Replace), Flush; target polls the flag", Classic: true},
		open: lockAll, send: flagSend, recv: flagRecv, close: unlockAll},
	{Variant: Variant{Name: "shared-store", Summary: "stores into the peer's window memory (SharedQuery), then an atomic flag store; target polls its flag (shared-memory windows only)"},
		open: sharedOpen, send: sharedSend, recv: sharedRecv},
	{Variant: Variant{Name: "put-notify", Summary: "PutNotify with a Tag; target waits with a persistent request"},
		open: lockAll, send: notifySend, recv: notifyRecv, close: unlockAll},
	{Variant: Variant{Name: "put-notify-local", Summary: "PutNotify with a Tag, FlushLocal (the buffer is free again; the answer says the data arrived); target waits with a persistent request"},
		open: lockAll, send: notifyLocalSend, recv: notifyRecv, close: unlockAll},
	{Variant: Variant{Name: "get-notify", Summary: "owner notifies 'ready' (zero-byte PutNotify), peer GetNotify's the message; its notice frees the owner's buffer"},
		open: lockAll, send: getSend, recv: getRecv, close: getClose},
	{Variant: Variant{Name: "counter", Summary: "PutNotify with a Counter; target WaitCounter"},
		open: lockAll, send: counterSend, recv: counterRecv, close: unlockAll},
	{Variant: Variant{Name: "signal", Summary: "PutNotify with a Signal (set); target WaitSignal"},
		open: lockAll, send: signalSend, recv: signalRecv, close: unlockAll},
	{Variant: Variant{Name: "unsync", Summary: "Put, Flush; target spins on the first and last word (lower bound, not a correct RMA program)", Unsound: true},
		open: lockAll, send: unsyncSend, recv: unsyncRecv, close: unlockAll},
}

// PingPong returns experiment 1, the ping-pong latency of Belli and
// Hoefler's Fig. 3: ranks 0 and 1 bounce a message back and forth, and
// each message is known to have arrived at its target before the target
// answers. Every variant checks every message: its first and last words
// carry a stamp that changes with every message. The check of a received
// message comes after the answer is sent, off the round trip's path, as
// the references of the machine's floor and of Open MPI, which do not
// read the data, have it: messages rotate through ppSlots areas of the
// window, so that the peer writes a message's area again only after this
// rank's next answer, that is after the check. Rank 0 times each round
// trip; a round's time is its median half round trip (measure).
func PingPong() Experiment {
	return Experiment{
		Name:     "pingpong",
		Summary:  "ping-pong latency between two ranks, 8 B to 1 MiB (Belli & Hoefler, Fig. 3)",
		Measure:  "half round trip",
		Ranks:    2,
		Variants: tableVariants(ppVariants),
		Run:      runPingPong,
	}
}

// pingPong is one rank's state in the ping-pong job.
type pingPong struct {
	c        *narma.Comm
	ctx      context.Context
	cfg      Config
	variant  string
	w        *narma.Win[int64]
	me, peer int
	nmax     int     // words of the largest message: the size of a slot
	flag     int     // displacement of put-flag's flag word
	sig      int     // displacement of signal's signal word
	msg      []int64 // outgoing messages of the put variants and send-recv
	peerMem  []int64 // shared-store: the peer's window memory (SharedQuery)
	flagWord *int64  // shared-store: this rank's flag word
	in       []int64 // incoming messages of send-recv and get-notify
	data     *narma.Request
	ready    *narma.Request
	read     *narma.Request
	counted  uint64          // counter notices received so far
	unread   bool            // get-notify: the peer has not yet read our message
	stamps   int64           // messages stamped so far, by both ranks
	rts      []time.Duration // the round trips of a round, reused

	// The received message to check after the answer (expect, verify).
	pending      []int64
	pendingStamp int64
}

// newPingPong returns a rank's state for ping-pongs of up to nmax words,
// with its window: the message areas, put-flag's flag word, signal's
// word.
func newPingPong(c *narma.Comm, cfg Config, nmax int) (*pingPong, error) {
	p := &pingPong{c: c, ctx: c.Context(), cfg: cfg, me: c.Rank(), peer: 1 - c.Rank(), nmax: nmax,
		flag: ppSlots*nmax + ppGap, sig: ppSlots*nmax + 2*ppGap, msg: make([]int64, nmax), in: make([]int64, nmax)}
	var err error
	if p.w, err = narma.Allocate[int64](p.ctx, c, ppSlots*nmax+3*ppGap, narma.WithStrategy(cfg.Strategy)); err != nil {
		return nil, err
	}
	return p, nil
}

// ppGap is the distance in words between the message areas, the flag
// word and the signal word: two cache lines, so that no word that a rank
// polls shares a line, or the pair of lines that the processor's
// spatial prefetcher fetches together, with data the peer writes.
const ppGap = 16

// ppSlots is how many message areas the window holds. A rank checks
// message k after it has sent k+1 (the responder) or k+2 (rank 0, which
// sends before it checks); the peer writes k's area again with k+ppSlots,
// which needs this rank's answer after that check.
const ppSlots = 4

// at returns the displacement of the area of the message stamped stamp.
func (p *pingPong) at(stamp int64) int { return int(stamp%ppSlots) * p.nmax }

// area returns the n words of this rank's window where the message
// stamped stamp arrives.
func (p *pingPong) area(n int, stamp int64) []int64 {
	a := p.at(stamp)
	return p.w.Local()[a : a+n]
}

// itersFor is the default number of round trips per round at size bytes:
// about 64 MiB each way, between 100 and 1000. Variants take turns round
// by round, and the first round trips after another variant's find the
// message areas in the other core's cache or evicted (at 1 MiB, 60 to
// 90 us instead of 20): a round's median must be over enough round trips
// that these few do not count, as in the reference programs, which time
// a thousand.
func itersFor(size int) int { return max(100, min(1000, (64<<20)/size)) }

func runPingPong(c *narma.Comm, cfg Config) (rows []Row, err error) {
	e := PingPong()
	if err := e.Check(cfg); err != nil {
		return nil, err
	}
	if c.Size() != 2 {
		return nil, fmt.Errorf("pingpong needs 2 ranks, the job has %d", c.Size())
	}
	sizes := cfg.sizesOr(DefaultSizes)
	rounds := cfg.rounds()
	variants := selectedEntries(e, cfg, ppVariants)
	ctx := c.Context()
	nmax := slices.Max(sizes) / 8
	p, err := newPingPong(c, cfg, nmax)
	if err != nil {
		return nil, err
	}
	if _, err := p.w.SharedQuery(p.peer); err != nil {
		// The peer's memory is not mapped here (TCP, libfabric): no
		// shared-store, on both ranks alike (sharing is symmetric).
		variants = slices.DeleteFunc(variants, func(v ppVariant) bool { return v.Name == "shared-store" })
		p.progress("shared-store skipped: %v", err)
	}
	if err := p.w.SetCounters(ctx, 1); err != nil {
		return nil, err
	}
	for _, r := range []struct {
		req **narma.Request
		tag int
	}{{&p.data, tagData}, {&p.ready, tagReady}, {&p.read, tagRead}} {
		if *r.req, err = p.w.NotifyInit(p.peer, r.tag, 1); err != nil {
			return nil, err
		}
	}

	for si, size := range sizes {
		n := size / 8
		iters := cfg.Iters
		if iters == 0 {
			iters = itersFor(size)
		}
		warm := cfg.Warmup
		if warm == 0 {
			warm = max(2, iters/10)
		}
		times, err := interleavedRounds(variants, newPlan(c, cfg, e, si, sizes, iters, warm, 2),
			func(v ppVariant, iters int) (float64, error) { return p.measure(v, n, iters) })
		if err != nil {
			return nil, err
		}
		if p.me != 0 {
			continue
		}
		rows = appendRows(rows, e.Name, variants, times, size, c.Size(), rounds, float64(size))
	}

	for _, r := range []*narma.Request{p.data, p.ready, p.read} {
		if err := r.Free(); err != nil {
			return nil, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	if err := p.w.Free(ctx); err != nil {
		return nil, err
	}
	return rows, nil
}

func (p *pingPong) progress(format string, args ...any) {
	progressf(p.cfg, p.me, format, args...)
}

// measure runs iters round trips of n-word messages with variant v and
// returns the median of the round trips rank 0 timed, in ns (zero on rank
// 1). Each round trip is timed on its own, as the machine's floor in C
// and Open MPI's benchmarks time theirs (anchors, mpi/pingpong.c): the
// median of single round trips is what the path costs, which a hiccup of
// the machine (a preemption, a timer, a page fault) does not move, while
// it moves a round's mean by as much as it lasts.
func (p *pingPong) measure(v ppVariant, n, iters int) (float64, error) {
	p.variant = v.Name
	if v.open != nil {
		if err := v.open(p); err != nil {
			return 0, p.errorf("open: %w", err)
		}
	}
	if err := p.c.Barrier(p.ctx); err != nil {
		return 0, err
	}
	if cap(p.rts) < iters {
		p.rts = make([]time.Duration, 0, iters)
	}
	rts := p.rts[:0]
	for i := 0; i < iters; i++ {
		start := time.Now()
		ping := p.stamps + 1
		pong := ping + 1
		p.stamps += 2
		var err error
		if p.me == 0 {
			if err = v.send(p, n, ping); err == nil {
				if err = p.verify(); err == nil {
					err = v.recv(p, n, pong)
				}
			}
		} else {
			if err = v.recv(p, n, ping); err == nil {
				if err = v.send(p, n, pong); err == nil {
					err = p.verify()
				}
			}
		}
		if err != nil {
			return 0, p.errorf("%s: %w", FormatSize(8*n), err)
		}
		rts = append(rts, time.Since(start))
	}
	if err := p.verify(); err != nil {
		return 0, p.errorf("%s: %w", FormatSize(8*n), err)
	}
	if v.close != nil {
		if err := v.close(p); err != nil {
			return 0, p.errorf("close: %w", err)
		}
	}
	if p.me != 0 || len(rts) == 0 {
		return 0, nil
	}
	slices.Sort(rts)
	return float64(median(rts).Nanoseconds()), nil
}

// median returns the median of sorted durations d (not empty).
func median(d []time.Duration) time.Duration {
	if n := len(d); n%2 == 0 {
		return (d[n/2-1] + d[n/2]) / 2
	}
	return d[len(d)/2]
}

func (p *pingPong) errorf(format string, args ...any) error {
	return fmt.Errorf("pingpong %s: %w", p.variant, fmt.Errorf(format, args...))
}

// stamp writes the message's stamp into its first and last words and
// gives it to the corrupting hook, if any.
func (p *pingPong) stamp(msg []int64, stamp int64) {
	msg[0], msg[len(msg)-1] = stamp, stamp
	if p.cfg.Corrupt != nil {
		p.cfg.Corrupt(p.variant, msg)
	}
}

// expect notes that msg, received, must be the message stamped stamp;
// verify checks it after the answer.
func (p *pingPong) expect(msg []int64, stamp int64) error {
	p.pending, p.pendingStamp = msg, stamp
	return nil
}

// verify checks the message expect noted, if any.
func (p *pingPong) verify() error {
	if p.pending == nil {
		return nil
	}
	msg := p.pending
	p.pending = nil
	return p.check(msg, p.pendingStamp)
}

// check verifies that msg is the message stamped stamp.
func (p *pingPong) check(msg []int64, stamp int64) error {
	first, last := msg[0], msg[len(msg)-1]
	if first != stamp || last != stamp {
		return fmt.Errorf("message %d from rank %d arrived with first word %d and last word %d, want %d: data not delivered", stamp, p.peer, first, last, stamp)
	}
	return nil
}

// send-recv

func sendMsg(p *pingPong, n int, stamp int64) error {
	p.stamp(p.msg[:n], stamp)
	return p.c.Send(p.ctx, narma.Bytes(p.msg[:n]), p.peer, tagData)
}

func recvMsg(p *pingPong, n int, stamp int64) error {
	st, err := p.c.Recv(p.ctx, narma.Bytes(p.in[:n]), p.peer, tagData)
	if err != nil {
		return err
	}
	if st.Count != 8*n {
		return fmt.Errorf("message %d of %d bytes, want %d", stamp, st.Count, 8*n)
	}
	return p.expect(p.in[:n], stamp)
}

// fence: one Fence per message on both ranks; the sender puts before it,
// the receiver checks after it.

func fenceOpen(p *pingPong) error { return p.w.Fence(p.ctx, narma.NoPrecede) }

func fenceSend(p *pingPong, n int, stamp int64) error {
	p.stamp(p.msg[:n], stamp)
	if err := p.w.Put(p.msg[:n], p.peer, p.at(stamp)); err != nil {
		return err
	}
	return p.w.Fence(p.ctx, 0)
}

func fenceRecv(p *pingPong, n int, stamp int64) error {
	if err := p.w.Fence(p.ctx, 0); err != nil {
		return err
	}
	return p.expect(p.area(n, stamp), stamp)
}

func fenceClose(p *pingPong) error { return p.w.Fence(p.ctx, narma.NoSucceed) }

// pscw: each rank keeps its window posted to the peer for the next
// message; the receiver posts again as soon as it has checked one.

func pscwOpen(p *pingPong) error { return p.w.Post([]int{p.peer}, 0) }

func pscwSend(p *pingPong, n int, stamp int64) error {
	p.stamp(p.msg[:n], stamp)
	if err := p.w.Start(p.ctx, []int{p.peer}, 0); err != nil {
		return err
	}
	if err := p.w.Put(p.msg[:n], p.peer, p.at(stamp)); err != nil {
		return err
	}
	return p.w.Complete(p.ctx)
}

func pscwRecv(p *pingPong, n int, stamp int64) error {
	if err := p.w.Wait(p.ctx); err != nil {
		return err
	}
	if err := p.expect(p.area(n, stamp), stamp); err != nil {
		return err
	}
	return p.w.Post([]int{p.peer}, 0)
}

// pscwClose ends the exposure epoch still posted: an empty access epoch
// to the peer completes the peer's.
func pscwClose(p *pingPong) error {
	if err := p.w.Start(p.ctx, []int{p.peer}, 0); err != nil {
		return err
	}
	if err := p.w.Complete(p.ctx); err != nil {
		return err
	}
	return p.w.Wait(p.ctx)
}

// The passive variants run in one LockAll epoch per measured run.

func lockAll(p *pingPong) error   { return p.w.LockAll(p.ctx, 0) }
func unlockAll(p *pingPong) error { return p.w.UnlockAll(p.ctx) }

// put-flag: the flag holds the stamp of the last message, so a waiter
// cannot mistake an old flag for a new one (stamps only grow), which
// spares the read of a base value before a barrier that a counting flag
// needs.

func flagSend(p *pingPong, n int, stamp int64) error {
	p.stamp(p.msg[:n], stamp)
	if err := p.w.Put(p.msg[:n], p.peer, p.at(stamp)); err != nil {
		return err
	}
	if err := p.w.Flush(p.ctx, p.peer); err != nil {
		return err
	}
	var old int64
	if err := p.w.FetchAndOp(stamp, &old, p.peer, p.flag, narma.Replace); err != nil {
		return err
	}
	return p.w.Flush(p.ctx, p.peer)
}

func flagRecv(p *pingPong, n int, stamp int64) error {
	err := poll(p.ctx, func() (bool, error) {
		var v int64
		if err := p.w.FetchAndOp(0, &v, p.me, p.flag, narma.NoOp); err != nil {
			return false, err
		}
		if err := p.w.Flush(p.ctx, p.me); err != nil {
			return false, err
		}
		if v > stamp {
			return false, fmt.Errorf("flag %d while waiting for message %d", v, stamp)
		}
		return v == stamp, nil
	})
	if err != nil {
		return err
	}
	return p.expect(p.area(n, stamp), stamp)
}

// shared-store: the machine's floor in Go (copy, then an atomic store of
// a flag that the target polls) on narma's shared-memory window.

func sharedOpen(p *pingPong) error {
	var err error
	p.peerMem, err = p.w.SharedQuery(p.peer)
	p.flagWord = &p.w.Local()[p.flag]
	return err
}

func sharedSend(p *pingPong, n int, stamp int64) error {
	p.stamp(p.msg[:n], stamp)
	a := p.at(stamp)
	copy(p.peerMem[a:a+n], p.msg[:n])
	atomic.StoreInt64(&p.peerMem[p.flag], stamp)
	return nil
}

func sharedRecv(p *pingPong, n int, stamp int64) error {
	flag := p.flagWord
	// Look without poll's closure and pacing first, for about a
	// microsecond: the flag of a short round trip comes within these
	// looks, as in the Go floor's loop.
	for range 4096 {
		if atomic.LoadInt64(flag) == stamp {
			return p.expect(p.area(n, stamp), stamp)
		}
	}
	err := poll(p.ctx, func() (bool, error) {
		for range 64 {
			if v := atomic.LoadInt64(flag); v == stamp {
				return true, nil
			} else if v > stamp {
				return false, fmt.Errorf("flag %d while waiting for message %d", v, stamp)
			}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	return p.expect(p.area(n, stamp), stamp)
}

// put-notify

func notifySend(p *pingPong, n int, stamp int64) error {
	p.stamp(p.msg[:n], stamp)
	if err := p.w.PutNotify(p.msg[:n], p.peer, p.at(stamp), narma.Tag(tagData)); err != nil {
		return err
	}
	return p.w.Flush(p.ctx, p.peer)
}

// put-notify-local: as put-notify, but the origin waits only until its
// buffer is free (FlushLocal), not until the data arrived (a Flush, as in
// the listing of the Notified Access paper): the answer says that it
// did. On a transport whose puts complete at the target when issued, the
// two are the same.

func notifyLocalSend(p *pingPong, n int, stamp int64) error {
	p.stamp(p.msg[:n], stamp)
	if err := p.w.PutNotify(p.msg[:n], p.peer, p.at(stamp), narma.Tag(tagData)); err != nil {
		return err
	}
	return p.w.FlushLocal(p.ctx, p.peer)
}

func notifyRecv(p *pingPong, n int, stamp int64) error {
	if err := wait(p.ctx, p.data); err != nil {
		return err
	}
	return p.expect(p.area(n, stamp), stamp)
}

// wait arms a persistent notification request and waits for its notice.
func wait(ctx context.Context, r *narma.Request) error {
	if err := r.Start(); err != nil {
		return err
	}
	_, err := r.Wait(ctx)
	return err
}

// get-notify: a pull protocol. The owner of a message writes it into its
// own window and tells the peer with a zero-byte notified put; the peer
// reads it with a notified get, whose notice tells the owner that its
// buffer may be overwritten. The owner waits for that notice before it
// writes its next message (by then it has usually arrived).

func getSend(p *pingPong, n int, stamp int64) error {
	if p.unread {
		if err := wait(p.ctx, p.read); err != nil {
			return err
		}
		p.unread = false
	}
	p.stamp(p.area(n, stamp), stamp)
	if err := p.w.PutNotify(nil, p.peer, 0, narma.Tag(tagReady)); err != nil {
		return err
	}
	p.unread = true
	return p.w.Flush(p.ctx, p.peer)
}

func getRecv(p *pingPong, n int, stamp int64) error {
	if err := wait(p.ctx, p.ready); err != nil {
		return err
	}
	if err := p.w.GetNotify(p.in[:n], p.peer, p.at(stamp), narma.Tag(tagRead)); err != nil {
		return err
	}
	if err := p.w.Flush(p.ctx, p.peer); err != nil {
		return err
	}
	return p.expect(p.in[:n], stamp)
}

// getClose waits until the last message has been read: the window's
// message area is the next variant's.
func getClose(p *pingPong) error {
	if p.unread {
		if err := wait(p.ctx, p.read); err != nil {
			return err
		}
		p.unread = false
	}
	return unlockAll(p)
}

// counter

func counterSend(p *pingPong, n int, stamp int64) error {
	p.stamp(p.msg[:n], stamp)
	if err := p.w.PutNotify(p.msg[:n], p.peer, p.at(stamp), narma.Counter(0)); err != nil {
		return err
	}
	return p.w.Flush(p.ctx, p.peer)
}

func counterRecv(p *pingPong, n int, stamp int64) error {
	p.counted++
	if err := p.w.WaitCounter(p.ctx, 0, p.counted); err != nil {
		return err
	}
	return p.expect(p.area(n, stamp), stamp)
}

// signal: the signal word is set to the stamp.

func signalSend(p *pingPong, n int, stamp int64) error {
	p.stamp(p.msg[:n], stamp)
	if err := p.w.PutNotify(p.msg[:n], p.peer, p.at(stamp), narma.Signal(p.sig, uint64(stamp), narma.SignalSet)); err != nil {
		return err
	}
	return p.w.Flush(p.ctx, p.peer)
}

func signalRecv(p *pingPong, n int, stamp int64) error {
	v, err := p.w.WaitSignal(p.ctx, p.sig, narma.CmpGE, uint64(stamp))
	if err != nil {
		return err
	}
	if v != uint64(stamp) {
		return fmt.Errorf("signal %d while waiting for message %d", v, stamp)
	}
	return p.expect(p.area(n, stamp), stamp)
}

// unsync: the receiver spins on the first and last word of the message
// area until both hold the stamp. Not a correct program under the RMA
// model (nothing orders the put's stores, nor makes the middle visible);
// it bounds what any synchronization could achieve on this transport.

func unsyncSend(p *pingPong, n int, stamp int64) error {
	p.stamp(p.msg[:n], stamp)
	if err := p.w.Put(p.msg[:n], p.peer, p.at(stamp)); err != nil {
		return err
	}
	return p.w.Flush(p.ctx, p.peer)
}

func unsyncRecv(p *pingPong, n int, stamp int64) error {
	msg := p.area(n, stamp)
	// A look is up to 64 spins, the pauses of poll come between them.
	return poll(p.ctx, func() (bool, error) {
		for range 64 {
			if atomic.LoadInt64(&msg[0]) == stamp && atomic.LoadInt64(&msg[n-1]) == stamp {
				return true, nil
			}
		}
		return false, nil
	})
}
