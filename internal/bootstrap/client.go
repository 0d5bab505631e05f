package bootstrap

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Dial retries while the socket is missing or refuses connections (the
// launcher may not have created it yet), for at most dialPatience, waiting
// between dialBackoff and maxDialBackoff between tries.
const (
	dialPatience   = 10 * time.Second
	dialBackoff    = 5 * time.Millisecond
	maxDialBackoff = 200 * time.Millisecond
)

// errNoPeek is returned where a connection's pending data cannot be
// looked at without reading it.
var errNoPeek = errors.New("cannot peek at the connection")

// errJobFailed is wrapped by the errors of a client whose job the server
// declared failed.
var errJobFailed = errors.New("job failed")

// Client is a rank's end of the bootstrap. Its methods are safe for
// concurrent use, but each Exchange is one round, so the order of
// concurrent Exchange calls is the order of the rounds. After an Exchange
// fails the Client is unusable: the job has failed, or will when the
// server sees this rank's connection close. After its last round a rank
// calls Watch, and keeps the connection open until its process exits: the
// server, and through it the launcher, learn that the rank ended when the
// connection does, and the rank learns that the launcher ended the job
// (or died) when the server closes it. A Client must not be copied.
type Client struct {
	rank, size int
	conn       net.Conn
	r          *bufio.Reader
	closed     atomic.Bool

	mu       sync.Mutex // serializes Exchange
	round    uint32
	err      error // why the connection is unusable
	watching bool

	wmu      sync.Mutex   // serializes writes
	reported map[int]bool // peers reported failed (guarded by wmu)

	// stopped is the reason the server gave for ending the job, once the
	// watching goroutine has seen it (see Stopped).
	stopped atomic.Pointer[abortError]
}

// Dial connects to addr as rank of a job of size ranks, and introduces
// itself with its pid. addr is "unix:" followed by a socket path, or
// "tcp:" followed by host:port; over TCP the client and the server first
// prove to each other that they hold secret, the job secret (at least
// MinSecret bytes; it is not used over a Unix socket). Dial waits for the
// server to accept the introduction, so a rank out of range or connected
// twice is an error here. While the socket does not exist yet, or the
// address refuses connections, it retries, for a few seconds at most; ctx
// bounds the whole call.
func Dial(ctx context.Context, addr string, rank, size int, secret []byte) (*Client, error) {
	network, address, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	if size < 1 || size > maxSize || rank < 0 || rank >= size {
		return nil, fmt.Errorf("bootstrap: dial: rank %d of %d ranks is not valid", rank, size)
	}
	if network == "tcp" && len(secret) < MinSecret {
		return nil, fmt.Errorf("bootstrap: rank %d: dial %s: a job secret of at least %d bytes is required, got %d (%s)",
			rank, addr, MinSecret, len(secret), EnvSecret)
	}
	conn, err := dialRetry(ctx, network, address)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: rank %d: dial %s: %w", rank, addr, err)
	}
	c := &Client{rank: rank, size: size, conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
	if network == "tcp" {
		if err := c.authenticate(ctx, secret); err != nil {
			conn.Close()
			return nil, c.describe(ctx, "dial "+addr, err)
		}
	}
	if err := c.hello(ctx); err != nil {
		conn.Close()
		return nil, c.describe(ctx, "dial "+addr, err)
	}
	return c, nil
}

// dialRetry connects to address on network, retrying while a socket does
// not exist or the address refuses connections.
func dialRetry(ctx context.Context, network, address string) (net.Conn, error) {
	giveUp := time.Now().Add(dialPatience)
	wait := dialBackoff
	for {
		d := net.Dialer{Timeout: time.Until(giveUp)}
		conn, err := d.DialContext(ctx, network, address)
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		retry := errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EAGAIN)
		if !retry || time.Now().After(giveUp) {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, maxDialBackoff)
	}
}

// authenticate runs the rank's side of the TCP handshake, within
// authTimeout and ctx.
func (c *Client) authenticate(ctx context.Context, secret []byte) error {
	defer c.interruptOn(ctx)()
	if err := c.conn.SetDeadline(time.Now().Add(authTimeout)); err != nil {
		return err
	}
	if err := clientAuth(c.conn, secret); err != nil {
		return err
	}
	return c.conn.SetDeadline(time.Time{})
}

// LocalAddr returns the local address of the connection to the server:
// over TCP, the address of the interface through which this host
// reaches the server's (a *net.TCPAddr); over a Unix socket, a
// *net.UnixAddr.
func (c *Client) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// hello introduces the client and waits for the server's answer.
func (c *Client) hello(ctx context.Context) error {
	defer c.interruptOn(ctx)()
	hello := appendMessage(nil, message{kind: kindHello, rank: c.rank, size: c.size, pid: os.Getpid()})
	if _, err := c.conn.Write(hello); err != nil {
		return c.reasonAfter(err)
	}
	m, err := readMessage(c.r)
	switch {
	case err != nil:
		return err
	case m.kind == kindError:
		return &abortError{reason: string(m.data)}
	case m.kind != kindAccept:
		return malformed("message of kind %q in answer to the hello", m.kind)
	}
	return nil
}

// Exchange sends data (at most 1 MiB) as this rank's contribution to the
// next round, and returns every rank's data, indexed by rank, once all
// ranks have sent theirs. The returned slices are the caller's. It fails
// when ctx ends, when the job fails (the error gives the server's reason,
// naming the rank at fault), or when the Client is closed.
func (c *Client) Exchange(ctx context.Context, data []byte) ([][]byte, error) {
	if len(data) > maxBlob {
		return nil, fmt.Errorf("bootstrap: rank %d: exchange: %d bytes of data, more than %d", c.rank, len(data), maxBlob)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed.Load():
		return nil, fmt.Errorf("bootstrap: rank %d: exchange: %w", c.rank, os.ErrClosed)
	case c.err != nil:
		return nil, c.err
	case ctx.Err() != nil:
		return nil, fmt.Errorf("bootstrap: rank %d: exchange: %w", c.rank, ctx.Err())
	}
	all, err := c.exchange(ctx, data)
	if err != nil {
		c.err = c.describe(ctx, fmt.Sprintf("exchange (round %d)", c.round), err)
		c.conn.Close()
		return nil, c.err
	}
	c.round++
	return all, nil
}

// exchange does one round.
func (c *Client) exchange(ctx context.Context, data []byte) ([][]byte, error) {
	defer c.interruptOn(ctx)()
	if err := c.write(appendMessage(nil, message{kind: kindData, round: c.round, data: data})); err != nil {
		return nil, c.reasonAfter(err)
	}
	all := make([][]byte, c.size)
	for r := range all {
		m, err := readMessage(c.r)
		switch {
		case err != nil:
			return nil, err
		case m.kind == kindError:
			return nil, &abortError{reason: string(m.data)}
		case m.kind != kindBlob:
			return nil, malformed("message of kind %q during a round", m.kind)
		case m.round != c.round || m.rank != r:
			return nil, malformed("blob of rank %d in round %d, want rank %d in round %d", m.rank, m.round, r, c.round)
		}
		all[r] = m.data
	}
	return all, nil
}

// write writes frame b in one piece.
func (c *Client) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.conn.Write(b)
	return err
}

// PeerFailed tells the server that this rank's transport declared rank
// peer failed, once per peer. A rank calls it as soon as it learns of the
// failure, before its program can act on it (and exit): the launcher
// reads it before it sees the connection end, and takes a rank that
// exits with an error after such a report for a consequence of the
// peer's failure, not its cause. It does not wait for an answer; it
// fails only if the connection does.
func (c *Client) PeerFailed(peer int) error {
	if peer < 0 || peer >= c.size || peer == c.rank {
		return fmt.Errorf("bootstrap: rank %d: peer failed: rank %d is not a peer", c.rank, peer)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.reported[peer] {
		return nil
	}
	if c.reported == nil {
		c.reported = make(map[int]bool)
	}
	c.reported[peer] = true
	if _, err := c.conn.Write(appendMessage(nil, message{kind: kindFailed, rank: peer})); err != nil {
		return fmt.Errorf("bootstrap: rank %d: peer failed: %w", c.rank, err)
	}
	return nil
}

// Stopped returns, without waiting, the reason the server gave for ending
// the job, once it has reached this rank's end of the connection of a
// watching rank (see [Client.Watch]), whether or not the rank has read it
// yet; nil before. The server sends its reason to every rank before it
// closes any connection, and a launcher that stops a job sends it before
// it signals any rank: a rank that sees a peer fail can tell by Stopped
// that the peer was stopped with it, and end for the launcher's reason.
func (c *Client) Stopped() error {
	// Look at the socket before the reason the watching goroutine
	// stored: it stores the reason before it reads it from the socket.
	buf := make([]byte, lenBytes+1+maxText)
	n, _ := peek(c.conn, buf)
	if a, ok := decodeReason(buf[:n]); ok {
		return a
	}
	if a := c.stopped.Load(); a != nil {
		return a
	}
	return nil
}

// decodeReason returns the server's reason for ending the job if b
// starts with a complete frame carrying it.
func decodeReason(b []byte) (*abortError, bool) {
	if len(b) < lenBytes {
		return nil, false
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n < 1 || len(b)-lenBytes < n {
		return nil, false
	}
	m, err := decodeMessage(b[lenBytes : lenBytes+n])
	if err != nil || m.kind != kindError {
		return nil, false
	}
	return &abortError{reason: string(m.data)}, true
}

// reasonAfter returns the server's failure reason if a write failed
// because the server closed the connection after sending one, and werr
// otherwise.
func (c *Client) reasonAfter(werr error) error {
	if m, err := readMessage(c.r); err == nil && m.kind == kindError {
		return &abortError{reason: string(m.data)}
	}
	return werr
}

// interruptOn makes blocked reads and writes of c return when ctx ends;
// the returned function undoes that.
func (c *Client) interruptOn(ctx context.Context) (stop func()) {
	s := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	return func() { s() }
}

// describe turns err, met during op, into the error a caller sees.
func (c *Client) describe(ctx context.Context, op string, err error) error {
	if a, ok := errors.AsType[*abortError](err); ok {
		return fmt.Errorf("bootstrap: rank %d: %s: %w", c.rank, op, a)
	}
	switch {
	case c.closed.Load():
		return fmt.Errorf("bootstrap: rank %d: %s: %w", c.rank, op, os.ErrClosed)
	case ctx.Err() != nil:
		return fmt.Errorf("bootstrap: rank %d: %s: %w", c.rank, op, ctx.Err())
	case errors.Is(err, io.EOF):
		return fmt.Errorf("bootstrap: rank %d: %s: the server closed the connection: %w", c.rank, op, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("bootstrap: rank %d: %s: %w", c.rank, op, err)
}

// Watch is for a rank that has done its last round: it keeps the
// connection open, for the life of the rank's process, and waits for the
// server to end it, on a goroutine of its own. The server ends it when
// the job is over for the launcher: the launcher stops the job (a rank
// failed, the time is up, the user interrupted it), the job failed, or
// the launcher died (the kernel closes its end); or when the network
// between them fails. lost is then called once, with an error saying
// why: a rank must not outlive its job, and a rank on another host has no
// other sign that its launcher gave up on it. lost is not called after
// Close. Once Watch is called, Exchange fails; Watch may be called once
// (or WatchTold).
func (c *Client) Watch(lost func(error)) error { return c.WatchTold(nil, lost) }

// WatchTold is Watch, and also calls told, if not nil, as soon as the
// server's reason for ending the job arrives, with that reason, on the
// watching goroutine; when told returns, the rank tells the server so.
// [Server.Halt] waits for that (a second at most) before the launcher
// closes any connection or signals any rank: a rank that says why it
// ends in told says it before any other rank can end because the
// launcher stopped the job, even when its program then reports a peer
// that was stopped with it. lost is still called when the connection
// ends.
func (c *Client) WatchTold(told, lost func(error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed.Load():
		return fmt.Errorf("bootstrap: rank %d: watch: %w", c.rank, os.ErrClosed)
	case c.watching:
		return fmt.Errorf("bootstrap: rank %d: watch: called twice", c.rank)
	case c.err != nil:
		return c.err
	}
	c.watching = true
	c.err = fmt.Errorf("bootstrap: rank %d: exchange after Watch: the rounds are over", c.rank)
	// The server waits for the acknowledgment of its reason only from
	// a rank that said it watches. If this write fails, so will the
	// watch.
	_ = c.write(appendMessage(nil, message{kind: kindWatch}))
	go func() {
		err := c.watch(told)
		c.conn.Close()
		if c.closed.Load() {
			return
		}
		lost(err)
	}()
	return nil
}

// endPatience bounds the wait for the server to close the connection
// once it has said why the job ends.
const endPatience = 5 * time.Second

// watch waits for the server to end the connection, and returns why, in
// a sentence that stands alone: the reason the server gave ("the
// launcher stopped the job: rank 1 (pid 1234) exited with status 3"),
// or that the launcher is gone. The server gives its reason to every
// rank before it closes any connection; a rank acts on it only once its
// own connection closes, so that every rank has it before any of them
// can see another exit.
func (c *Client) watch(told func(error)) error {
	// The server sends nothing after the last round but the reason it
	// ends the job, if it has one.
	c.awaitReason()
	m, err := readMessage(c.r)
	switch {
	case err != nil:
		return c.lostLauncher(err)
	case m.kind != kindError:
		return c.lostLauncher(malformed("message of kind %q after the last round", m.kind))
	}
	a := &abortError{reason: string(m.data)}
	c.stopped.Store(a)
	if told != nil {
		told(a)
	}
	_ = c.write(appendMessage(nil, message{kind: kindTold}))
	_ = c.conn.SetReadDeadline(time.Now().Add(endPatience))
	_, _ = io.Copy(io.Discard, c.r) // until the server closes
	return a
}

// awaitReason waits, reading nothing, until the server's reason for
// ending the job has arrived whole, or the connection ends, and stores
// the reason for Stopped: Stopped, which peeks at the socket, then finds
// it either there or stored. Where sockets cannot be peeked at, it
// returns at once.
func (c *Client) awaitReason() {
	if c.r.Buffered() > 0 {
		// Arrived before Watch: it is in the reader's buffer.
		if b, err := c.r.Peek(c.r.Buffered()); err == nil {
			if a, ok := decodeReason(b); ok {
				c.stopped.Store(a)
			}
		}
		return
	}
	buf := make([]byte, lenBytes+1+maxText)
	_ = waitPeek(c.conn, buf, func(n int, eof bool) bool {
		if a, ok := decodeReason(buf[:n]); ok {
			c.stopped.Store(a)
			return true
		}
		// Anything else ends the wait too: the read that follows
		// tells what it is.
		return eof || n > 0 && !isReasonPrefix(buf[:n])
	})
}

// isReasonPrefix reports whether b may be the beginning of a frame
// carrying the server's reason: its kind, once there, is kindError.
func isReasonPrefix(b []byte) bool {
	return len(b) <= lenBytes || kind(b[lenBytes]) == kindError
}

// lostLauncher describes the end of a watched connection without a
// reason from the server.
func (c *Client) lostLauncher(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("the launcher is gone: the server closed the connection (%w)", io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("lost the launcher: its bootstrap connection failed: %w", err)
}

// Close closes the connection. A rank closes it after its last round (or
// leaves that to its exit, after Watch); the job ends well when every rank
// has. Closing twice returns an error wrapping os.ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return fmt.Errorf("bootstrap: rank %d: close: %w", c.rank, os.ErrClosed)
	}
	if err := c.conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("bootstrap: rank %d: close: %w", c.rank, err)
	}
	return nil
}

// abortError carries the reason the server gave for failing the job.
// The reason is a sentence that stands alone ("the job failed: ...",
// "the launcher stopped the job: ...").
type abortError struct{ reason string }

func (e *abortError) Error() string { return e.reason }
func (e *abortError) Unwrap() error { return errJobFailed }
