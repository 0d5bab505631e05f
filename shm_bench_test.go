package narma_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/testjob"
)

// TestMain lets the test binary serve as the rank processes of the
// process benchmarks (BenchmarkShmPingPong, BenchmarkShmAllToAll) and of
// TestProcessPeerDeath; runTests (ranktest.Main) runs the tests, those of
// run's process jobs included.
func TestMain(m *testing.M) {
	if testjob.Call() == peerDeathCall {
		if err := peerDeathRank(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if testjob.Call() == allToAllCall {
		if err := allToAllRank(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if testjob.Call() == externalCall {
		if err := externalRank(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if call, ok := strings.CutPrefix(testjob.Call(), tcpBenchCall); ok {
		if err := tcpPingPongRank(call); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if call, ok := strings.CutPrefix(testjob.Call(), benchCall); ok {
		if err := pingPongRank(call); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	runTests(m)
}

const benchCall = "bench-pingpong:"

// BenchmarkShmPingPong is the producer-consumer ping-pong between two
// processes over the shared-memory transport, against the hardware limit.
// For each size one job of two processes measures, interleaved in rounds
// so that the drift of the virtual cores hits every variant alike:
//
//   - line: the limit of signalling, one cache line ping-ponged with
//     atomic stores and loads (no data);
//   - copy: an n-byte copy into shared memory, then that flag; the buffer
//     is the writer's own and the reader never touches it, so no data
//     crosses between the cores: a bound below any real transfer;
//   - xfer: the limit of a transfer, the data movement of the put
//     ping-pong done by hand: each rank copies the buffer it received
//     into the other's buffer, then sets the flag, so the data does cross
//     (the peer reads it to send it back);
//   - put-notify: the notified put, its target's persistent request
//     matching the tag; no flush, the partner's answer being the proof
//     that the put arrived (the paper's producer-consumer);
//   - put-flag, send-recv: those variants of BenchmarkProducerConsumer;
//   - put-notify-flush (only if NARMA_BENCH_VARIANTS names it): the
//     notified put flushed each time (over shm the flush waits for
//     nothing: a put is complete at its target when it returns).
//
// It reports each variant's median half round trip (ns-<variant>) and
// the ratios x-xfer and x-copy (put-notify / xfer and / copy: the goal is
// 1.5 at 8 B, 1.1 from 64 KiB) and flag/notify and sendrecv/notify (above
// 1: notified access wins). Run it with -benchtime=1x: each sub-benchmark is one job.
func BenchmarkShmPingPong(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("processes over shared memory need Linux")
	}
	for _, size := range []int{8, 64, 512, 4 << 10, 64 << 10, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			got := runPingPongJob(b, "shm", benchCall+strconv.Itoa(size), benchVariants(pingPongVariants, "put-notify-flush"))
			reportRatio(b, got, "x-xfer", "put-notify", "xfer")
			reportRatio(b, got, "x-copy", "put-notify", "copy")
			reportRatio(b, got, "flag/notify", "put-flag", "put-notify")
			reportRatio(b, got, "sendrecv/notify", "send-recv", "put-notify")
		})
	}
}

// runPingPongJob runs a ping-pong job of two processes over transport,
// whose rank 0 prints "PP <variant> <median ns>" lines, and reports and
// returns the figures of the variants.
func runPingPongJob(b *testing.B, transport, call string, variants []string) map[string]float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := testjob.RunOn(ctx, transport, 2, call, "-test.run=^$")
	if err != nil {
		b.Fatal(err)
	}
	got := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(res[0].Output))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "PP" {
			v, _ := strconv.ParseFloat(f[2], 64)
			got[f[1]] = v
		}
	}
	for _, v := range variants {
		if got[v] == 0 {
			b.Fatalf("no figure for %s in:\n%s", v, res[0].Output)
		}
		b.ReportMetric(got[v], "ns-"+v)
	}
	b.ReportMetric(0, "ns/op")
	return got
}

// reportRatio reports got[num]/got[den] as metric name, if both exist.
func reportRatio(b *testing.B, got map[string]float64, name, num, den string) {
	if got[num] != 0 && got[den] != 0 {
		b.ReportMetric(got[num]/got[den], name)
	}
}

// benchScale returns iters and rounds, shortened when NARMA_BENCH_SCALE=k
// asks for a quick run (iterations divided by k, quick rounds).
func benchScale(iters, rounds, quick int) (int, int) {
	if s := os.Getenv("NARMA_BENCH_SCALE"); s != "" {
		if k, err := strconv.Atoi(s); err == nil && k > 0 {
			return max(4, iters/k), quick
		}
	}
	return iters, rounds
}

// pingPongRounds runs each variant, iters round trips at a time, rounds
// times, interleaved (each round starting one variant further), each run
// after a barrier, and returns each variant's half round trips in
// nanoseconds. run does iters round trips of one variant.
func pingPongRounds(c *narma.Comm, variants []string, iters, rounds int, run func(v string) error) (map[string][]float64, error) {
	times := map[string][]float64{}
	for round := 0; round < rounds; round++ {
		// Each round starts one variant further: a variant may leave the
		// processes in a state that helps or hinders the one after it
		// (over TCP, the one after the raw ping-pong pays for the
		// runtime's return to narma's connections), and the rotation
		// spreads that over all of them.
		for i := range variants {
			v := variants[(i+round)%len(variants)]
			if err := c.Barrier(c.Context()); err != nil {
				return nil, err
			}
			start := time.Now()
			if err := run(v); err != nil {
				return nil, fmt.Errorf("%s: %w", v, err)
			}
			// Half round trip: iters round trips of two messages.
			times[v] = append(times[v], float64(time.Since(start).Nanoseconds())/float64(2*iters))
		}
	}
	return times, nil
}

// printMedians prints, for rank 0 of a ping-pong job, the median of each
// variant's times as "PP <variant> <median ns>".
func printMedians(times map[string][]float64, variants []string) {
	for _, v := range variants {
		t := times[v]
		slices.Sort(t)
		fmt.Printf("PP %s %.1f\n", v, t[len(t)/2])
	}
}

var pingPongVariants = []string{"line", "copy", "xfer", "put-notify", "put-flag", "send-recv"}

// benchVariants returns the variants to measure: those of defaults and
// optional listed in NARMA_BENCH_VARIANTS (comma-separated), e.g. to
// profile one, or else defaults.
func benchVariants(defaults []string, optional ...string) []string {
	s := os.Getenv("NARMA_BENCH_VARIANTS")
	if s == "" {
		return defaults
	}
	all := append(slices.Clone(defaults), optional...)
	var vs []string
	for _, v := range strings.Split(s, ",") {
		if slices.Contains(all, v) {
			vs = append(vs, v)
		}
	}
	return vs
}

// joinPingPong joins the two-rank job of a ping-pong rank process whose
// call is the message size in bytes (a multiple of 8); done leaves it.
func joinPingPong(call string) (c *narma.Comm, size int, done func(), err error) {
	size, err = strconv.Atoi(call)
	if err != nil || size < 8 || size%8 != 0 {
		return nil, 0, nil, fmt.Errorf("bad call %q", call)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	c, err = narma.Init(ctx)
	if err != nil {
		cancel()
		return nil, 0, nil, err
	}
	done = func() {
		c.Close()
		cancel()
	}
	if c.Size() != 2 {
		done()
		return nil, 0, nil, fmt.Errorf("%d ranks, want 2", c.Size())
	}
	return c, size, done, nil
}

// pingPongRank is one rank process of BenchmarkShmPingPong for the
// message size in call. Rank 0 prints "PP <variant> <median ns>" lines.
func pingPongRank(call string) error {
	c, size, done, err := joinPingPong(call)
	if err != nil {
		return err
	}
	defer done()
	me := c.Rank()
	n := size / 8
	jctx := c.Context()

	// Raw shared memory for the limits: one flag line, then one buffer per
	// rank, each on lines of its own. Rank 0 makes the file and tells
	// rank 1 its name.
	span := (size + lineBytes - 1) / lineBytes * lineBytes
	area, err := sharedArea(c, 2*lineBytes+2*span)
	if err != nil {
		return err
	}
	flag := area[:8]
	bufs := [2][]byte{area[2*lineBytes : 2*lineBytes+size], area[2*lineBytes+span : 2*lineBytes+span+size]}
	src := make([]byte, size)

	w, err := narma.Allocate[int64](jctx, c, n+1)
	if err != nil {
		return err
	}
	if err := w.LockAll(jctx, 0); err != nil {
		return err
	}
	msg := make([]int64, n)
	// Many short rounds: the median over rounds drops those that a
	// descheduled process or a move of the virtual cores spoiled.
	iters, rounds := benchScale(max(10, min(2000, (4<<20)/size)), 25, 5)
	variants := benchVariants(pingPongVariants, "put-notify-flush")
	var seq uint64
	times, err := pingPongRounds(c, variants, iters, rounds, func(v string) error {
		switch v {
		case "line":
			seq = limitPingPong(me, flag, nil, nil, seq, iters)
		case "copy":
			seq = limitPingPong(me, flag, bufs[me], src, seq, iters)
		case "xfer":
			seq = limitPingPong(me, flag, bufs[1-me], bufs[me], seq, iters)
		case "put-notify":
			return pcNotifyNoFlush(c, w, w.Local()[:n], iters)
		case "put-notify-flush":
			return pcNotify(c, w, w.Local()[:n], iters)
		case "put-flag":
			return pcFlag(c, w, w.Local()[:n], iters)
		case "send-recv":
			return pcSendRecv(c, w, msg, iters)
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
	if me == 0 {
		printMedians(times, variants)
	}
	return nil
}

const lineBytes = 64

// limitPingPong is the hardware limit: rank 0 and rank 1 take turns
// storing the next value of the shared flag word and spinning until the
// other does; with buf, each first copies src into buf (n-byte copy, then
// flag). It returns the last value of the flag.
func limitPingPong(me int, flag, buf, src []byte, seq uint64, iters int) uint64 {
	for i := 0; i < iters; i++ {
		if me == 1 {
			seq++
			for mem.AtomicLoad64(flag) != seq {
			}
		}
		copy(buf, src)
		seq++
		mem.AtomicStore64(flag, seq)
		if me == 0 {
			seq++
			for mem.AtomicLoad64(flag) != seq {
			}
		}
	}
	return seq
}

// sharedArea maps n bytes of shared memory on every rank: rank 0 creates
// a file under /dev/shm, sends its name to the others, and removes it
// once all have mapped it.
func sharedArea(c *narma.Comm, n int) ([]byte, error) {
	ctx := c.Context()
	var name string
	if c.Rank() == 0 {
		f, err := os.CreateTemp("/dev/shm", "narma-bench-")
		if err != nil {
			return nil, err
		}
		defer f.Close()
		defer os.Remove(f.Name())
		if err := f.Truncate(int64(n)); err != nil {
			return nil, err
		}
		name = f.Name()
		for r := 1; r < c.Size(); r++ {
			if err := c.Send(ctx, []byte(name), r, 77); err != nil {
				return nil, err
			}
		}
	} else {
		buf := make([]byte, 4096)
		st, err := c.Recv(ctx, buf, 0, 77)
		if err != nil {
			return nil, err
		}
		name = string(buf[:st.Count])
		if filepath.Dir(name) != "/dev/shm" {
			return nil, fmt.Errorf("area %q not under /dev/shm", name)
		}
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	// All mapped before rank 0 removes the name.
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	return b, nil
}
