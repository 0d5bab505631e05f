package narma_test

// The message counts of the Notified Access paper, made visible over TCP:
// a notified put is one frame, a put followed by flush and flag at least
// three, counted by the transport itself.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/transport/tcp"
)

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
	err := narma.RunTCP(ctx, 2, tcp.Config{PeerTimeout: time.Minute}, func(c *narma.Comm, ep *tcp.Endpoint) error {
		jctx := c.Context()
		w, err := narma.Allocate[int64](jctx, c, 2, narma.WithStrategy(narma.Immediate))
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
		if err := pcNotifyNoFlush(c, w, buf, iters); err != nil {
			return err
		}
		got[c.Rank()].notify = sentSince(ep, before)
		if err := c.Barrier(jctx); err != nil {
			return err
		}
		before = ep.Stats()
		if err := pcFlagLean(c, w, buf, iters); err != nil {
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
	variants = benchVariants(variants)
	for _, size := range []int{8, 64, 512, 4 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			iters, rounds := max(10, min(1000, (16<<20)/size/8)), 15
			if delay > 0 {
				iters, rounds = max(5, iters/20), 7
			}
			iters, rounds = benchScale(iters, rounds, 3)
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
	var times map[string][]float64
	err = narma.RunTCP(ctx, 2, tcp.Config{PeerTimeout: time.Minute, Delay: delay}, func(c *narma.Comm, _ *tcp.Endpoint) error {
		jctx := c.Context()
		n := size / 8
		w, err := narma.Allocate[int64](jctx, c, n+1, narma.WithStrategy(narma.Immediate))
		if err != nil {
			return err
		}
		if err := w.LockAll(jctx, 0); err != nil {
			return err
		}
		buf := make([]int64, n)
		// put-flag is timed with the barrier it opens with (a small
		// share of a round: against it, not for it).
		mine, err := pingPongRounds(c, variants, iters, rounds, func(v string) error {
			switch v {
			case "raw":
				if c.Rank() == 0 {
					return raw.pingPong(iters)
				}
			case "put-notify":
				return pcNotifyNoFlush(c, w, buf, iters)
			case "put-flag":
				return pcFlagLean(c, w, buf, iters)
			case "send-recv":
				return pcSendRecv(c, w, buf, iters)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			times = mine
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
