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

	"github.com/narma-rma/narma"
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
// Jobs of 2, 4 and 16 ranks run in turn, three times, so that every size
// sees the same drift of the virtual cores. Reported: the median round
// (us-<n>ranks) and its 90th percentile (p90us-<n>ranks) over the three
// jobs' medians, and x4/2, the 4-rank median over the 2-rank median. Run
// it with -benchtime=1x.
func BenchmarkShmAllToAll(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("processes over shared memory need Linux")
	}
	sizes := []int{2, 4, 16}
	med := map[int][]float64{}
	p90 := map[int][]float64{}
	for rep := 0; rep < 3; rep++ {
		for _, n := range sizes {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			res, err := testjob.Run(ctx, n, allToAllCall, "-test.run=^$")
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			m, p, err := parseAllToAll(res[0].Output)
			if err != nil {
				b.Fatalf("%d ranks: %v\n%s", n, err, res[0].Output)
			}
			med[n] = append(med[n], m)
			p90[n] = append(p90[n], p)
		}
	}
	for _, n := range sizes {
		b.ReportMetric(median(med[n])/1e3, fmt.Sprintf("us-%dranks", n))
		b.ReportMetric(median(p90[n])/1e3, fmt.Sprintf("p90us-%dranks", n))
	}
	b.ReportMetric(median(med[4])/median(med[2]), "x4/2")
	b.ReportMetric(0, "ns/op")
}

// parseAllToAll reads rank 0's "A2A <median ns> <p90 ns>" line.
func parseAllToAll(out string) (med, p90 float64, err error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "A2A" {
			med, err1 := strconv.ParseFloat(f[1], 64)
			p90, err2 := strconv.ParseFloat(f[2], 64)
			if err1 != nil || err2 != nil {
				break
			}
			return med, p90, nil
		}
	}
	return 0, 0, fmt.Errorf("no A2A line")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// allToAllRank is one rank process of BenchmarkShmAllToAll; rank 0 prints
// "A2A <median ns> <p90 ns>" of its round times.
func allToAllRank() error {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := narma.Init(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	times, err := notifiedAllToAll(c, allToAllRounds(c.Size()))
	if err != nil {
		return err
	}
	if c.Rank() == 0 {
		slices.Sort(times)
		fmt.Printf("A2A %d %d\n", times[len(times)/2], times[len(times)*9/10])
	}
	return nil
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
