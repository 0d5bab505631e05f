package tcp

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
)

// slowConn is a link of limited bandwidth: it writes piece bytes at a
// time and pauses after each, so a writer waits on it as on a slow
// network (unlike Config.Delay, which queues without bound).
type slowConn struct {
	net.Conn
	piece int
	pause time.Duration
}

func (c *slowConn) Write(b []byte) (int, error) {
	total := 0
	for len(b) > 0 {
		n, err := c.Conn.Write(b[:min(len(b), c.piece)])
		total += n
		if err != nil {
			return total, err
		}
		b = b[n:]
		time.Sleep(c.pause)
	}
	return total, nil
}

// TestLargePutSlowLink puts several chunks' worth of data over a link
// that takes a few peer timeouts to carry it: neither end may take the
// other for failed while the bytes flow, the put is split into frames
// of chunkPayload bytes, and its notice is delivered once, after all the
// data.
func TestLargePutSlowLink(t *testing.T) {
	const (
		timeout = 300 * time.Millisecond
		size    = 6 * chunkPayload // about 32 MiB/s: 750 ms, 2.5 timeouts
		piece   = 256 << 10
		pause   = 8 * time.Millisecond
	)
	eps := newGroup(t, Config{Size: 2, PeerTimeout: timeout,
		wrapConn: func(self, peer int, out bool, c net.Conn) net.Conn {
			if self == 0 && out {
				return &slowConn{Conn: c, piece: piece, pause: pause}
			}
			return c
		}})
	failures := make(chan failure, 16)
	for _, e := range eps {
		e.SetFailureHandler(func(peer int, err error) { failures <- failure{peer, err} })
	}
	src := mem.Alloc(size)
	for i := range src {
		src[i] = byte(i*13 + i>>16)
	}
	win := mem.Alloc(size)
	key, err := eps[1].Expose(win)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notices []transport.Notice
	complete := 0 // notices that found all the data in place
	eps[1].SetNoticeHandler(func(_ int, _ transport.Key, n transport.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n)
		if bytes.Equal(win, src) {
			complete++
		}
	})
	r, err := eps[0].Region(1, key, size)
	if err != nil {
		t.Fatal(err)
	}
	before := eps[0].Stats().Sent[KindPut].Frames
	start := time.Now()
	if err := r.Put(0, src, transport.TagNotice(transport.NoticeTag, 9), nil); err != nil {
		t.Fatalf("Put of %d MiB after %v: %v", size>>20, time.Since(start), err)
	}
	ctx, cancel := testContext()
	defer cancel()
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatalf("Flush after %v: %v", time.Since(start), err)
	}
	took := time.Since(start)
	if took < 2*timeout {
		t.Logf("the put took only %v: the link was not slow enough to test the timeout", took)
	}
	mu.Lock()
	if len(notices) != 1 || notices[0].Tag() != 9 || complete != 1 {
		t.Errorf("%d notices %v, %d of them after all the data; want one, tag 9, after the data", len(notices), notices, complete)
	}
	mu.Unlock()
	if frames := eps[0].Stats().Sent[KindPut].Frames - before; frames != size/chunkPayload {
		t.Errorf("the put went out in %d frames, want %d", frames, size/chunkPayload)
	}
	select {
	case f := <-failures:
		t.Errorf("rank %d reported failed during the put: %v", f.rank, f.err)
	default:
	}
}
