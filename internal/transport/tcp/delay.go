package tcp

import (
	"net"
	"runtime"
	"sync"
	"time"
)

// wrap returns c, a connection to peer that the endpoint opened (out) or
// accepted, as the endpoint uses it: itself, or behind a delay line if
// the endpoint has a Delay (and behind a test's wrapper, if any).
func (e *Endpoint) wrap(c net.Conn, peer int, out bool) net.Conn {
	if e.wrapConn != nil {
		c = e.wrapConn(e.rank, peer, out, c)
	}
	if e.delay <= 0 {
		return c
	}
	d := &delayConn{Conn: c, delay: e.delay, kick: make(chan struct{}, 1), quit: make(chan struct{})}
	go d.run()
	return d
}

// delayConn holds every write for a fixed time before it reaches the
// connection, as a long link would; writes return at once. It is a test
// hook, not a model of bandwidth: the queue is unbounded.
type delayConn struct {
	net.Conn
	delay time.Duration

	mu    sync.Mutex
	queue []delayed
	err   error

	kick chan struct{}
	quit chan struct{}
	once sync.Once
}

type delayed struct {
	due time.Time
	b   []byte
}

// Write queues a copy of b, due after the delay.
func (d *delayConn) Write(b []byte) (int, error) {
	d.mu.Lock()
	if d.err != nil {
		d.mu.Unlock()
		return 0, d.err
	}
	d.queue = append(d.queue, delayed{time.Now().Add(d.delay), append([]byte(nil), b...)})
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default:
	}
	return len(b), nil
}

// Close closes the connection and drops what is still queued.
func (d *delayConn) Close() error {
	d.once.Do(func() { close(d.quit) })
	return d.Conn.Close()
}

// run writes the queued data when it is due.
func (d *delayConn) run() {
	for {
		d.mu.Lock()
		var next delayed
		ok := len(d.queue) > 0
		if ok {
			next = d.queue[0]
			d.queue = d.queue[1:]
		}
		d.mu.Unlock()
		if !ok {
			select {
			case <-d.kick:
				continue
			case <-d.quit:
				return
			}
		}
		if !d.until(next.due) {
			return
		}
		if _, err := d.Conn.Write(next.b); err != nil {
			d.mu.Lock()
			d.err = err
			d.mu.Unlock()
			return
		}
	}
}

// until waits until due, or until the connection closes (false). Go's
// timers round sleeps below a millisecond up when the process is idle,
// so the last millisecond is spent yielding instead: a delay of 100 µs
// stays 100 µs.
func (d *delayConn) until(due time.Time) bool {
	if wait := time.Until(due) - time.Millisecond; wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-d.quit:
			t.Stop()
			return false
		}
	}
	for time.Now().Before(due) {
		select {
		case <-d.quit:
			return false
		default:
		}
		runtime.Gosched()
	}
	return true
}
