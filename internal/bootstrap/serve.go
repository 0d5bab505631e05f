package bootstrap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Serve runs the job's exchanges. It accepts one connection per rank;
// each rank introduces itself (rank, size, pid); then any number of rounds
// follow, in each of which every rank sends a blob and receives all the
// ranks' blobs.
//
// Serve returns nil once every rank has connected and then closed its
// connection outside a round. It returns an error, and sends the reason
// to every rank still connected, when ctx ends, when a rank's hello is
// bad (rank out of range, rank already connected, wrong size), when a
// rank sends a malformed or unexpected message, when a rank's connection
// drops while a round is under way (or a round begins after a rank left),
// or when Close is called. The error of a failed job names the rank at
// fault; it has a method FaultyRank() int giving that rank (-1 when no
// rank is to blame). Once ctx has ended, or Halt was called, Serve
// judges nothing more: a launcher that calls Halt, or cancels ctx,
// before it kills the ranks gets an error wrapping context.Canceled, not
// one blaming a rank it killed. Before it returns, Serve reads each
// rank's reports of failed peers ([Server.PeerFailures]) until the rank
// closes its end, for a few seconds at most. Serve may be called once.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return fmt.Errorf("bootstrap: serve: %w", os.ErrClosed)
	case s.serving:
		s.mu.Unlock()
		return errors.New("bootstrap: serve: called twice")
	}
	s.serving = true
	s.mu.Unlock()

	j := &job{
		s:      s,
		events: make(chan event),
		done:   make(chan struct{}),
		byRank: make([]*peer, s.size),
		got:    make([][]byte, s.size),
		sent:   make([]bool, s.size),
		gone:   -1,
	}
	j.wg.Go(j.accept)
	err := j.run(ctx)
	j.shutdown(err)
	return err
}

// event is what the connection goroutines report to Serve: a message or
// a read error of p, or, with p nil, an accept error.
type event struct {
	p   *peer
	m   message
	err error
}

// job is the state of one Serve. Apart from the channels and wg, it
// belongs to the goroutine of Serve.
type job struct {
	s      *Server
	events chan event
	done   chan struct{} // closed when Serve stops listening to events
	wg     sync.WaitGroup

	byRank []*peer // connected ranks, kept after they leave
	nleft  int     // ranks that closed their connection
	gone   int     // first rank that left, or -1

	round uint32   // current round
	got   [][]byte // blobs of the current round
	sent  []bool   // which ranks sent theirs
	ngot  int
}

// accept accepts connections until the listener is closed. Over TCP
// each connection is authenticated on a goroutine of its own, so that a
// slow or silent one holds up nobody.
func (j *job) accept() {
	for {
		conn, err := j.s.ln.Accept()
		if err != nil {
			j.report(event{err: err})
			return
		}
		if uc, ok := conn.(*net.UnixConn); ok && checkPeer(uc) != nil {
			conn.Close() // another user: not one of our ranks
			j.s.countRefused()
			continue
		}
		p := &peer{conn: conn, rank: -1, slot: -1, authed: j.s.secret == nil, acked: make(chan struct{})}
		if !j.s.track(p) {
			conn.Close()
			return
		}
		j.wg.Go(func() {
			if j.s.secret != nil {
				if serverAuth(conn, j.s.secret) != nil {
					j.s.refuse(p) // not a rank of this job: no event
					return
				}
				if !j.s.authenticated(p) {
					conn.Close()
					return
				}
			}
			j.read(p)
		})
	}
}

// read reports the messages of p until its connection fails or ends.
// It records a rank's reports of failed peers itself, and keeps reading
// them after Serve has stopped (see shutdown), until the rank's end of
// the connection closes: a rank that exits because a peer failed sends
// its report just before it exits, and the launcher needs it to tell the
// rank that failed first from those that failed because of it.
func (j *job) read(p *peer) {
	defer p.conn.Close()
	r := bufio.NewReaderSize(p.conn, 64<<10)
	serving := true
	for {
		m, err := readMessage(r)
		switch {
		case err != nil:
			p.ack() // Halt need not wait for it
			j.s.departed(p)
		case m.kind == kindFailed:
			j.s.peerFailed(p, m.rank)
			continue
		case m.kind == kindWatch:
			j.s.watches(p)
			continue
		case m.kind == kindTold:
			p.ack()
			continue
		}
		if serving {
			serving = j.report(event{p: p, m: m, err: err})
		}
		if err != nil {
			return
		}
	}
}

// report hands ev to Serve; it returns false if Serve has stopped.
func (j *job) report(ev event) bool {
	select {
	case j.events <- ev:
		return true
	case <-j.done:
		return false
	}
}

// run handles events until the job ends well (nil) or fails.
func (j *job) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return j.canceled(ctx)
		case ev := <-j.events:
			if ctx.Err() != nil || j.s.haltReason() != "" {
				// Once ctx has ended, events are not judged: a launcher
				// stopping the job cancels ctx before it kills ranks.
				// Nor once it has called Halt, just before: a rank may
				// exit in between, and leave the reason unread (which
				// resets its connection).
				return j.canceled(ctx)
			}
			finished, err := j.handle(ev)
			if err != nil || finished {
				return err
			}
		}
	}
}

// canceled returns the error of a job stopped because ctx ended (or
// Halt was called, and ctx is about to end).
func (j *job) canceled(ctx context.Context) error {
	if reason := j.s.haltReason(); reason != "" {
		return fail(nil, context.Canceled, "%s", reason)
	}
	return fail(nil, ctx.Err(), "the launcher stopped the job")
}

// handle applies one event; finished reports that every rank has left.
func (j *job) handle(ev event) (finished bool, err error) {
	if j.s.isClosed() {
		return false, fmt.Errorf("bootstrap: serve: %w", os.ErrClosed)
	}
	p := ev.p
	switch {
	case p == nil:
		return false, fail(nil, ev.err, "accepting connections: %v", ev.err)
	case ev.err != nil:
		return j.lost(p, ev.err)
	case p.rank < 0:
		return false, j.hello(p, ev.m)
	case ev.m.kind == kindData:
		return false, j.data(p, ev.m)
	default:
		return false, fail(p, nil, "%s sent an unexpected message of kind %q", p.name(), ev.m.kind)
	}
}

// hello admits p as the rank its hello names.
func (j *job) hello(p *peer, m message) error {
	switch {
	case m.kind != kindHello:
		return fail(nil, nil, "a connection sent a message of kind %q before its hello", m.kind)
	case m.rank >= j.s.size:
		return fail(nil, nil, "rank %d (pid %d) is out of range: the job has %d ranks", m.rank, m.pid, j.s.size)
	case m.size != j.s.size:
		return fail(nil, nil, "rank %d (pid %d) believes the job has %d ranks; it has %d", m.rank, m.pid, m.size, j.s.size)
	case j.byRank[m.rank] != nil:
		return fail(nil, nil, "rank %d connected twice (pids %d and %d)", m.rank, j.byRank[m.rank].pid, m.pid)
	}
	p.rank, p.pid = m.rank, m.pid
	j.byRank[m.rank] = p
	j.s.admit(p, m.rank, m.pid)
	// A read error of p will tell if this write failed.
	_ = p.write(appendMessage(nil, message{kind: kindAccept}))
	return nil
}

// data records p's blob for the current round, and answers every rank
// when the round is complete.
func (j *job) data(p *peer, m message) error {
	switch {
	case j.gone >= 0:
		return fail(j.byRank[j.gone], nil, "%s closed its connection, so round %d, begun by %s, cannot complete",
			j.byRank[j.gone].name(), j.round, p.name())
	case m.round != j.round:
		return fail(p, nil, "%s sent data for round %d during round %d", p.name(), m.round, j.round)
	case j.sent[p.rank]:
		return fail(p, nil, "%s sent data twice in round %d", p.name(), j.round)
	}
	j.sent[p.rank], j.got[p.rank] = true, m.data
	j.ngot++
	if j.ngot < j.s.size {
		return nil
	}
	n := 0
	for _, b := range j.got {
		n += lenBytes + 1 + blobHeader + len(b)
	}
	answer := make([]byte, 0, n)
	for r, b := range j.got {
		answer = appendMessage(answer, message{kind: kindBlob, round: j.round, rank: r, data: b})
	}
	for _, q := range j.byRank {
		j.wg.Go(func() {
			if q.write(answer) != nil {
				q.conn.Close() // its reader reports the failure
			}
		})
	}
	clear(j.got)
	clear(j.sent)
	j.ngot = 0
	j.round++
	return nil
}

// lost handles the end of p's connection (err is io.EOF when it closed
// between messages).
func (j *job) lost(p *peer, err error) (finished bool, _ error) {
	switch {
	case errors.Is(err, errMalformed):
		return false, fail(p, err, "%s sent a malformed message: %v", p.name(), err)
	case !errors.Is(err, io.EOF):
		return false, fail(p, err, "the connection of %s failed: %v", p.name(), err)
	case p.rank < 0:
		j.s.forget(p) // not a rank: it never said hello
		return false, nil
	case j.ngot > 0:
		return false, fail(p, nil, "%s closed its connection during round %d, before every rank had sent its data", p.name(), j.round)
	}
	j.s.forget(p)
	j.nleft++
	if j.gone < 0 {
		j.gone = p.rank
	}
	return j.nleft == j.s.size, nil
}

// shutdown ends Serve: it stops accepting, tells every rank still
// connected why the job ended (if err is not nil and Halt has not told
// it already), and only then closes the connections, so that every rank
// has the reason before any other rank sees its connection close; then
// it waits for the goroutines.
func (j *job) shutdown(err error) {
	j.s.mu.Lock()
	j.s.over = true
	peers := j.s.takePeers()
	var told []*peer
	for _, p := range peers {
		if err != nil && p.authed && !p.told {
			p.told = true
			told = append(told, p)
		}
	}
	j.s.mu.Unlock()
	close(j.done)
	_ = j.s.closeListener()

	if len(told) > 0 {
		tell(told, appendMessage(nil, errorMessage(farewell(err))))
	}
	for _, p := range peers {
		j.hangUp(p)
	}
	j.wg.Wait()
}

// drainPatience bounds how long, once Serve has ended, the server still
// reads a rank's connection for its last reports of failed peers.
const drainPatience = 2 * time.Second

// hangUp ends the server's side of p's connection: a rank's watching
// end sees it close, but its reader goes on until the rank's own end
// closes (for drainPatience at most), so that what the rank sent before
// it exited is read; any other connection is closed.
func (j *job) hangUp(p *peer) {
	cw, ok := p.conn.(interface{ CloseWrite() error })
	if p.rank < 0 || !ok {
		p.conn.Close()
		return
	}
	_ = p.conn.SetReadDeadline(time.Now().Add(drainPatience))
	if cw.CloseWrite() != nil {
		p.conn.Close()
	}
}

// farewell returns what the ranks are told when Serve fails with err: a
// sentence that stands alone in a rank's message.
func farewell(err error) string {
	je, ok := errors.AsType[*jobError](err)
	switch {
	case !ok:
		return "the job failed: " + err.Error()
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return je.reason // "the launcher stopped the job..."
	}
	return "the job failed: " + je.reason
}
