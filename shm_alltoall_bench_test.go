package narma_test

import (
	"bufio"
	"context"
	"fmt"
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

const allToAllCall = "bench-alltoall"

// BenchmarkShmAllToAll measures rounds of an all-to-all exchange of 8-byte
// notified puts between processes over the shared-memory transport, with
// as many ranks as cores and with more: every rank puts 8 bytes with a
// tag into every other rank's window, then waits for the n-1 puts of the
// round aimed at it with one counting request (any source). It shows how
// waiting behaves when ranks share cores (busy polling libraries lose
// whole scheduler ticks there).
//
// Interleaved with narma's rounds, the same processes run the exchange's
// limit (limitAllToAll): flags in shared memory stored and polled by hand,
// the waiter yielding the processor to the other processes between polls.
// With more ranks than cores its rounds cost context switches, whatever
// the software does; narma's rounds are compared with it.
//
// Jobs of 2, 4 and 16 ranks run in turn, three times, so that every size
// sees the same drift of the virtual cores. Reported: the median round
// (us-<n>ranks, limit-us-<n>ranks) and its 90th percentile
// (p90us-<n>ranks) over the three jobs' medians, narma over the limit
// (x-limit-<n>ranks), and x4/2, the 4-rank median over the 2-rank median,
// for narma and for the limit (limit-x4/2). Run it with -benchtime=1x.
func BenchmarkShmAllToAll(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("processes over shared memory need Linux")
	}
	sizes := []int{2, 4, 16}
	type fig struct{ med, p90, limit []float64 }
	figs := map[int]*fig{}
	for _, n := range sizes {
		figs[n] = &fig{}
	}
	for rep := 0; rep < 3; rep++ {
		for _, n := range sizes {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			res, err := testjob.Run(ctx, n, allToAllCall, "-test.run=^$")
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			got, err := parseAllToAll(res[0].Output)
			if err != nil {
				b.Fatalf("%d ranks: %v\n%s", n, err, res[0].Output)
			}
			f := figs[n]
			f.med = append(f.med, got["A2A"][0])
			f.p90 = append(f.p90, got["A2A"][1])
			f.limit = append(f.limit, got["LIMIT"][0])
		}
	}
	for _, n := range sizes {
		f := figs[n]
		b.ReportMetric(median(f.med)/1e3, fmt.Sprintf("us-%dranks", n))
		b.ReportMetric(median(f.p90)/1e3, fmt.Sprintf("p90us-%dranks", n))
		b.ReportMetric(median(f.limit)/1e3, fmt.Sprintf("limit-us-%dranks", n))
		b.ReportMetric(median(f.med)/median(f.limit), fmt.Sprintf("x-limit-%dranks", n))
	}
	b.ReportMetric(median(figs[4].med)/median(figs[2].med), "x4/2")
	b.ReportMetric(median(figs[4].limit)/median(figs[2].limit), "limit-x4/2")
	b.ReportMetric(0, "ns/op")
}

// parseAllToAll reads rank 0's lines "A2A <median ns> <p90 ns>" and
// "LIMIT <median ns> <p90 ns>".
func parseAllToAll(out string) (map[string][2]float64, error) {
	got := map[string][2]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || (f[0] != "A2A" && f[0] != "LIMIT") {
			continue
		}
		med, err1 := strconv.ParseFloat(f[1], 64)
		p90, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad line %q", sc.Text())
		}
		got[f[0]] = [2]float64{med, p90}
	}
	if len(got) != 2 {
		return nil, fmt.Errorf("no A2A and LIMIT lines")
	}
	return got, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// allToAllRank is one rank process of BenchmarkShmAllToAll. It runs
// narma's exchange and its limit in alternating blocks of rounds and rank
// 0 prints "A2A <median ns> <p90 ns>" of its narma rounds and "LIMIT
// <median ns> <p90 ns>" of its limit rounds.
func allToAllRank() error {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := narma.Init(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	n := c.Size()
	area, err := sharedArea(c, n*n*lineBytes)
	if err != nil {
		return err
	}
	defer unix.Munmap(area)
	const blocks = 5
	rounds := allToAllRounds(n) / blocks
	var times, limit []int64
	for b := 0; b < blocks; b++ {
		t, err := notifiedAllToAll(c, rounds)
		if err != nil {
			return err
		}
		times = append(times, t...)
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		limit = append(limit, limitAllToAll(area, n, c.Rank(), b*rounds, rounds)...)
		if err := c.Barrier(ctx); err != nil {
			return err
		}
	}
	if c.Rank() == 0 {
		for _, l := range []struct {
			name string
			t    []int64
		}{{"A2A", times}, {"LIMIT", limit}} {
			slices.Sort(l.t)
			fmt.Printf("%s %d %d\n", l.name, l.t[len(l.t)/2], l.t[len(l.t)*9/10])
		}
	}
	return nil
}

// limitAllToAll is the limit of the all-to-all exchange on n processes
// sharing area: the word at line dst*n+src holds the last round src sent
// to dst. Each round, a rank stores the round's number into its word at
// every other rank, then waits until every word addressed to it holds
// that number, polling 64 times and then yielding the processor to other
// processes (sched_yield) between polls: ranks that share a core take
// turns without waiting for the scheduler's tick. Rounds are numbered
// from base+1. It returns the rank's time per round in nanoseconds.
func limitAllToAll(area []byte, n, me, base, rounds int) []int64 {
	word := func(dst, src int) []byte { return area[(dst*n+src)*lineBytes:][:8] }
	times := make([]int64, 0, rounds)
	for k := base + 1; k <= base+rounds; k++ {
		start := time.Now()
		for i := 1; i < n; i++ {
			mem.AtomicStore64(word((me+i)%n, me), uint64(k))
		}
		for i := 1; i < n; i++ {
			w := word(me, (me+n-i)%n)
			for polls := 0; mem.AtomicLoad64(w) < uint64(k); polls++ {
				if polls >= 64 {
					schedYield()
				}
			}
		}
		times = append(times, time.Since(start).Nanoseconds())
	}
	return times
}

// allToAllRounds is the number of rounds for n ranks: about a tenth of a
// second of work on two cores.
func allToAllRounds(n int) int {
	if n > 4 {
		return 400
	}
	return 3000
}

// notifiedAllToAll runs rounds of the all-to-all exchange on c and returns this
// rank's time per round in nanoseconds. Rounds alternate between two
// tags: a rank can be at most one round ahead of another (it needs that
// rank's put of the current round to finish it), so the round parity
// tells the rounds apart.
func notifiedAllToAll(c *narma.Comm, rounds int) ([]int64, error) {
	ctx := c.Context()
	n, me := c.Size(), c.Rank()
	if n < 2 {
		return nil, fmt.Errorf("all-to-all of %d ranks", n)
	}
	w, err := narma.Allocate[int64](ctx, c, n)
	if err != nil {
		return nil, err
	}
	if err := w.LockAll(ctx, 0); err != nil {
		return nil, err
	}
	var reqs [2]*narma.Request
	for i := range reqs {
		if reqs[i], err = w.NotifyInit(narma.AnySource, i, n-1); err != nil {
			return nil, err
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	val := []int64{int64(me)}
	times := make([]int64, 0, rounds)
	for k := 0; k < rounds; k++ {
		start := time.Now()
		r := reqs[k%2]
		if err := r.Start(); err != nil {
			return nil, err
		}
		for i := 1; i < n; i++ {
			if err := w.PutNotify(val, (me+i)%n, me, narma.Tag(k%2)); err != nil {
				return nil, err
			}
		}
		// Under the deferred strategy nothing is sent before a flush.
		if err := w.FlushAll(ctx); err != nil {
			return nil, err
		}
		if _, err := r.Wait(ctx); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start).Nanoseconds())
	}
	for _, r := range reqs {
		if err := r.Free(); err != nil {
			return nil, err
		}
	}
	if err := w.UnlockAll(ctx); err != nil {
		return nil, err
	}
	// Check what landed: every other rank's last put holds its rank.
	for src, v := range w.Local() {
		if src != me && v != int64(src) {
			return nil, fmt.Errorf("rank %d: word %d holds %d", me, src, v)
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return nil, err
	}
	return times, w.Free(ctx)
}

// TestAllToAllRounds runs the exchange of BenchmarkShmAllToAll briefly
// over goroutine ranks and over processes (through run), up to 16 of
// them, more than cores, checking the data that lands.
func TestAllToAllRounds(t *testing.T) {
	for _, n := range []int{2, 3, 16} {
		t.Run(fmt.Sprintf("%dranks", n), func(t *testing.T) {
			run(t, n, func(c *narma.Comm) error {
				times, err := notifiedAllToAll(c, 50)
				if err == nil && len(times) != 50 {
					err = fmt.Errorf("%d round times, want 50", len(times))
				}
				return err
			})
		})
	}
}
