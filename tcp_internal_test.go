package narma

// The message counts of the Notified Access paper, made visible over TCP:
// a notified put is one frame, a put followed by flush and flag at least
// three. This file is an internal test so that it can run a job over TCP
// endpoints it keeps, to read their frame counters.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/tcp"
)

// runTCP runs fn on n goroutine ranks whose endpoints are those of the TCP
// transport made with cfg; fn may read eps(rank) for their counters.
func runTCP(ctx context.Context, n int, cfg tcp.Config, fn func(c *Comm, ep *tcp.Endpoint) error) error {
	var eps []*tcp.Endpoint
	prev := newEndpoints
	defer func() { newEndpoints = prev }()
	newEndpoints = func(n int) ([]transport.Endpoint, error) {
		cfg.Size = n
		g, err := tcp.Group(ctx, cfg)
		if err != nil {
			return nil, err
		}
		eps = g
		out := make([]transport.Endpoint, n)
		for i, e := range g {
			out[i] = e
		}
		return out, nil
	}
	return RunContext(ctx, n, func(c *Comm) error { return fn(c, eps[c.Rank()]) })
}

// sentSince returns the frames ep sent since the snapshot before, by kind.
func sentSince(ep *tcp.Endpoint, before tcp.Stats) map[tcp.Kind]uint64 {
	d := map[tcp.Kind]uint64{}
	for k, n := range ep.Stats().Sent {
		if v := n.Frames - before.Sent[k].Frames; v > 0 {
			d[k] = v
		}
	}
	return d
}

// notifyPingPong bounces buf between ranks 0 and 1 iters times with
// notified puts matched by a persistent request. The reply to a message
// is the proof that it arrived, so no flush is needed; w must use the
// Immediate strategy (a deferred lock moves nothing before a flush).
func notifyPingPong(c *Comm, w *Win[int64], buf []int64, iters int) error {
	ctx := c.Context()
	peer := 1 - c.Rank()
	r, err := w.NotifyInit(peer, 1, 1)
	if err != nil {
		return err
	}
	defer r.Free()
	wait := func() error {
		if err := r.Start(); err != nil {
			return err
		}
		_, err := r.Wait(ctx)
		return err
	}
	for i := 0; i < iters; i++ {
		if c.Rank() == 1 {
			if err := wait(); err != nil {
				return err
			}
		}
		if err := w.PutNotify(buf, peer, 0, Tag(1)); err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flagPingPong bounces buf with a put, a flush and an update of a flag
// word (at displacement len(buf), an accumulate with Replace so that it is
// atomic at the target) that the receiver polls in its own window. Flags
// count up from their value at the call, which both ranks share.
func flagPingPong(c *Comm, w *Win[int64], buf []int64, iters int) error {
	ctx := c.Context()
	me, peer := c.Rank(), 1-c.Rank()
	flagAt := len(buf)
	local := (*atomic.Int64)(unsafe.Pointer(&w.Local()[flagAt]))
	seen := local.Load()
	if err := c.Barrier(ctx); err != nil { // both read their flag before either bumps the other's
		return err
	}
	wait := func() error {
		// Yield a few times, then sleep a microsecond between looks: a
		// goroutine that only yields keeps Go's scheduler from polling
		// the network, so the flag would never come.
		for i := 0; local.Load() == seen; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if i < 16 {
				runtime.Gosched()
			} else {
				time.Sleep(time.Microsecond)
			}
		}
		seen = local.Load()
		return nil
	}
	next := []int64{0}
	for i := 0; i < iters; i++ {
		if me == 1 {
			if err := wait(); err != nil {
				return err
			}
		}
		if err := w.Put(buf, peer, 0); err != nil {
			return err
		}
		if err := w.Flush(ctx, peer); err != nil {
			return err
		}
		next[0] = seen + 1
		if err := w.Accumulate(next, peer, flagAt, Replace); err != nil {
			return err
		}
		if me == 0 {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	return nil
}

// sendRecvPingPong bounces buf with Send and Recv.
func sendRecvPingPong(c *Comm, buf []int64, iters int) error {
	ctx := c.Context()
	peer := 1 - c.Rank()
	msg := Bytes(buf)
	for i := 0; i < iters; i++ {
		if c.Rank() == 1 {
			if _, err := c.Recv(ctx, msg, peer, 1); err != nil {
				return err
			}
		}
		if err := c.Send(ctx, msg, peer, 1); err != nil {
			return err
		}
		if c.Rank() == 0 {
			if _, err := c.Recv(ctx, msg, peer, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestTCPFrameCounts: over TCP, a notified-put ping-pong sends exactly one
// frame per message and nothing else, while put + flush + flag sends at
// least three frames per message (put, flush, flag put), as the
// transport's own counters show.
func TestTCPFrameCounts(t *testing.T) {
	const iters = 50
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type counts struct{ notify, flag map[tcp.Kind]uint64 }
	var got [2]counts
	err := runTCP(ctx, 2, tcp.Config{PeerTimeout: time.Minute}, func(c *Comm, ep *tcp.Endpoint) error {
		jctx := c.Context()
		w, err := Allocate[int64](jctx, c, 2, WithStrategy(Immediate))
		if err != nil {
			return err
		}
		if err := w.LockAll(jctx, 0); err != nil {
			return err
		}
		buf := []int64{int64(c.Rank())}
		if err := c.Barrier(jctx); err != nil {
			return err
		}
		before := ep.Stats()
		if err := notifyPingPong(c, w, buf, iters); err != nil {
			return err
		}
		got[c.Rank()].notify = sentSince(ep, before)
		if err := c.Barrier(jctx); err != nil {
			return err
		}
		before = ep.Stats()
		if err := flagPingPong(c, w, buf, iters); err != nil {
			return err
		}
		got[c.Rank()].flag = sentSince(ep, before)
		if err := w.UnlockAll(jctx); err != nil {
			return err
		}
		return w.Free(jctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	for r, g := range got {
		want := map[tcp.Kind]uint64{tcp.KindPut: iters}
		if fmt.Sprint(g.notify) != fmt.Sprint(want) {
			t.Errorf("rank %d: notified ping-pong of %d messages sent %v, want exactly %v", r, iters, g.notify, want)
		}
		// The flag ping-pong starts with a barrier (its active messages
		// are counted too): count the frames of the exchange itself.
		perMsg := float64(g.flag[tcp.KindPut]+g.flag[tcp.KindFlush]+g.flag[tcp.KindAccumulate]) / iters
		if perMsg < 3 {
			t.Errorf("rank %d: put + flush + flag sent %v: %.1f frames per message, want at least 3", r, g.flag, perMsg)
		}
		t.Logf("rank %d: notified: %v; put+flush+flag: %v", r, g.notify, g.flag)
	}
}

// BenchmarkTCPPingPong is the producer-consumer ping-pong of two ranks
// (goroutines of this process) over the TCP transport on loopback, against
// a plain Go TCP ping-pong of the same payload between two goroutines (the
// "raw" limit), measured interleaved in rounds. It reports each variant's
// median half round trip and the ratios notify/raw, flag/notify and
// sendrecv/notify. NARMA_BENCH_DELAY (a Go duration, e.g. 100us) delays
// every frame of the transport by that much (the raw limit is then
// skipped): the cost of message counts on a long link.
func BenchmarkTCPPingPong(b *testing.B) {
	var delay time.Duration
	if s := os.Getenv("NARMA_BENCH_DELAY"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("NARMA_BENCH_DELAY: %v", err)
		}
		delay = d
	}
	variants := []string{"raw", "put-notify", "put-flag", "send-recv"}
	if delay > 0 {
		variants = variants[1:]
	}
	if s := os.Getenv("NARMA_BENCH_VARIANTS"); s != "" {
		variants = slices.DeleteFunc(variants, func(v string) bool { return !slices.Contains(strings.Split(s, ","), v) })
	}
	for _, size := range []int{8, 64, 512, 4 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			iters := max(10, min(1000, (16<<20)/size/8))
			rounds := 15
			if delay > 0 {
				iters, rounds = max(5, iters/20), 7
			}
			if s := os.Getenv("NARMA_BENCH_SCALE"); s != "" {
				if k, err := strconv.Atoi(s); err == nil && k > 0 {
					iters, rounds = max(4, iters/k), 3
				}
			}
			times, err := tcpPingPongRounds(size, iters, rounds, delay, variants)
			if err != nil {
				b.Fatal(err)
			}
			med := map[string]float64{}
			for _, v := range variants {
				t := times[v]
				slices.Sort(t)
				med[v] = t[len(t)/2]
				b.ReportMetric(med[v], "ns-"+v)
			}
			ratio := func(name, num, den string) {
				if med[num] != 0 && med[den] != 0 {
					b.ReportMetric(med[num]/med[den], name)
				}
			}
			ratio("notify/raw", "put-notify", "raw")
			ratio("flag/notify", "put-flag", "put-notify")
			ratio("sendrecv/notify", "send-recv", "put-notify")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// tcpPingPongRounds measures the variants in rounds and returns each one's
// half round trips in nanoseconds.
func tcpPingPongRounds(size, iters, rounds int, delay time.Duration, variants []string) (map[string][]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	raw, err := newRawPair(size)
	if err != nil {
		return nil, err
	}
	defer raw.close()
	times := map[string][]float64{}
	err = runTCP(ctx, 2, tcp.Config{PeerTimeout: time.Minute, Delay: delay}, func(c *Comm, _ *tcp.Endpoint) error {
		jctx := c.Context()
		n := size / 8
		w, err := Allocate[int64](jctx, c, n+1, WithStrategy(Immediate))
		if err != nil {
			return err
		}
		if err := w.LockAll(jctx, 0); err != nil {
			return err
		}
		buf := make([]int64, n)
		for round := 0; round < rounds; round++ {
			for _, v := range variants {
				if err := c.Barrier(jctx); err != nil {
					return err
				}
				start := time.Now()
				switch v {
				case "raw":
					if c.Rank() == 0 {
						err = raw.pingPong(iters)
					}
				case "put-notify":
					err = notifyPingPong(c, w, buf, iters)
				case "put-flag":
					err = flagPingPong(c, w, buf, iters)
					start = time.Now() // its opening barrier is not part of it
					if err == nil {
						err = flagPingPong(c, w, buf, iters)
					}
				case "send-recv":
					err = sendRecvPingPong(c, buf, iters)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", v, err)
				}
				if c.Rank() == 0 {
					times[v] = append(times[v], float64(time.Since(start).Nanoseconds())/float64(2*iters))
				}
			}
		}
		if err := w.UnlockAll(jctx); err != nil {
			return err
		}
		return w.Free(jctx)
	})
	return times, err
}

// rawPair is two ends of a loopback TCP connection, one served by an echo
// goroutine: the plain Go ping-pong.
type rawPair struct {
	a, b   net.Conn
	buf    []byte
	rounds chan int
	done   chan error
}

func newRawPair(size int) (*rawPair, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, err
	}
	b, err := ln.Accept()
	if err != nil {
		a.Close()
		return nil, err
	}
	p := &rawPair{a: a, b: b, buf: make([]byte, size), rounds: make(chan int), done: make(chan error, 1)}
	go p.echo(size)
	return p, nil
}

// echo returns every message it reads, for the iterations it is told.
func (p *rawPair) echo(size int) {
	buf := make([]byte, size)
	for iters := range p.rounds {
		var err error
		for i := 0; i < iters && err == nil; i++ {
			if _, err = io.ReadFull(p.b, buf); err == nil {
				_, err = p.b.Write(buf)
			}
		}
		p.done <- err
	}
}

func (p *rawPair) pingPong(iters int) error {
	p.rounds <- iters
	for i := 0; i < iters; i++ {
		if _, err := p.a.Write(p.buf); err != nil {
			return err
		}
		if _, err := io.ReadFull(p.a, p.buf); err != nil {
			return err
		}
	}
	return <-p.done
}

func (p *rawPair) close() {
	close(p.rounds)
	p.a.Close()
	p.b.Close()
}
