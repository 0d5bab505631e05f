package narma_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/narma-rma/narma"
)

const tcpBenchCall = "bench-tcp-pingpong:"

// tcpProcVariants are the variants of BenchmarkTCPProcPingPong: a plain Go
// TCP ping-pong between the two processes, then narma's. put-flag is left
// out unless NARMA_BENCH_VARIANTS names it: with one processor per rank
// (GOMAXPROCS, which the launcher shares out among the ranks of a host),
// a rank that polls a flag in its own memory keeps the Go scheduler from
// polling the network, and each flag waits for the scheduler's own
// network poll (about 10 ms); BenchmarkTCPPingPong measures it in one
// process. raw-handoff (rawHandoff) and raw-epoll (rawEpoll) are
// optional too.
var tcpProcVariants = []string{"raw", "put-notify", "send-recv"}

// tcpProcOptional are the variants of BenchmarkTCPProcPingPong measured
// only if NARMA_BENCH_VARIANTS names them.
var tcpProcOptional = []string{"put-flag", "raw-handoff", "raw-epoll"}

// BenchmarkTCPProcPingPong is the producer-consumer ping-pong between two
// processes over the TCP transport on loopback (one rank per process, as
// deployed), against a plain Go TCP ping-pong of the same payload between
// the same two processes, interleaved in rounds. It reports the median
// half round trips and the ratios notify/raw, flag/notify (put-flag is
// put, flush, flag: three messages) and sendrecv/notify.
//
// NARMA_BENCH_TRANSPORT=hybrid runs it over the hybrid transport instead,
// the two ranks on two pretend hosts (TCP between them), where a waiting
// rank also polls shared memory.
func BenchmarkTCPProcPingPong(b *testing.B) {
	transport := "tcp"
	if os.Getenv("NARMA_BENCH_TRANSPORT") == "hybrid" {
		transport = "hybrid"
	}
	for _, size := range []int{8, 64, 512, 4 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			got := runPingPongJob(b, transport, tcpBenchCall+strconv.Itoa(size), benchVariants(tcpProcVariants, tcpProcOptional...))
			reportRatio(b, got, "notify/raw", "put-notify", "raw")
			reportRatio(b, got, "flag/notify", "put-flag", "put-notify")
			reportRatio(b, got, "sendrecv/notify", "send-recv", "put-notify")
		})
	}
}

// tcpPingPongRank is one rank process of BenchmarkTCPProcPingPong for the
// message size in call.
func tcpPingPongRank(call string) error {
	c, size, done, err := joinPingPong(call)
	if err != nil {
		return err
	}
	defer done()
	jctx := c.Context()
	raw, err := dialRaw(c, size)
	if err != nil {
		return err
	}
	defer raw.Close()
	n := size / 8
	w, err := narma.Allocate[int64](jctx, c, n+1, narma.WithStrategy(narma.Immediate))
	if err != nil {
		return err
	}
	if err := w.LockAll(jctx, 0); err != nil {
		return err
	}
	buf := make([]int64, n)
	rbuf := make([]byte, size)
	iters, rounds := benchScale(max(10, min(1000, (16<<20)/size/8)), 15, 3)
	variants := benchVariants(tcpProcVariants, tcpProcOptional...)
	times, err := pingPongRounds(c, variants, iters, rounds, func(v string) error {
		switch v {
		case "raw":
			return rawPingPong(raw, c.Rank(), rbuf, iters)
		case "raw-handoff":
			return rawHandoff(raw, c.Rank(), rbuf, iters)
		case "raw-epoll":
			return rawEpoll(raw, c.Rank(), rbuf, iters)
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
	if err := w.UnlockAll(jctx); err != nil {
		return err
	}
	if err := c.Barrier(jctx); err != nil {
		return err
	}
	if err := w.Free(jctx); err != nil {
		return err
	}
	if c.Rank() == 0 {
		printMedians(times, variants)
	}
	return nil
}

// dialRaw connects the two ranks with a plain TCP connection on loopback:
// rank 0 listens and sends its address to rank 1, which dials.
func dialRaw(c *narma.Comm, size int) (net.Conn, error) {
	ctx := c.Context()
	if c.Rank() == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		if err := c.Send(ctx, []byte(ln.Addr().String()), 1, 78); err != nil {
			return nil, err
		}
		return ln.Accept()
	}
	addr := make([]byte, 256)
	st, err := c.Recv(ctx, addr, 0, 78)
	if err != nil {
		return nil, err
	}
	return net.Dial("tcp", string(addr[:st.Count]))
}

// rawPingPong bounces buf over conn: rank 0 writes first.
func rawPingPong(conn net.Conn, rank int, buf []byte, iters int) error {
	for i := 0; i < iters; i++ {
		if rank == 1 {
			if _, err := io.ReadFull(conn, buf); err != nil {
				return err
			}
		}
		if _, err := conn.Write(buf); err != nil {
			return err
		}
		if rank == 0 {
			if _, err := io.ReadFull(conn, buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// rawHandoff is rawPingPong with the reading done by another goroutine,
// which hands each message to the ping-pong loop over a channel: the
// shape of any receiver that reads the network in the background, as
// narma's TCP transport does. The optional variant "raw-handoff" shows
// what that handoff costs on its own.
func rawHandoff(conn net.Conn, rank int, buf []byte, iters int) error {
	got := make(chan error, 1)
	go func() {
		rb := make([]byte, len(buf))
		for i := 0; i < iters; i++ {
			_, err := io.ReadFull(conn, rb)
			got <- err
			if err != nil {
				return
			}
		}
	}()
	for i := 0; i < iters; i++ {
		if rank == 1 {
			if err := <-got; err != nil {
				return err
			}
		}
		if _, err := conn.Write(buf); err != nil {
			return err
		}
		if rank == 0 {
			if err := <-got; err != nil {
				return err
			}
		}
	}
	return nil
}
