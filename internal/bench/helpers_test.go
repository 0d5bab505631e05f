package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma"
)

// strategies are the synchronization strategies the tests run under.
var strategies = []narma.Strategy{narma.Immediate, narma.Deferred}

// jobTimeout bounds the jobs of the tests that run with a timeout.
const jobTimeout = 20 * time.Second

// runJob runs e over n goroutine ranks and returns rank 0's rows; the
// other ranks must return none.
func runJob(e Experiment, n int, cfg Config) ([]Row, error) {
	return runJobContext(context.Background(), e, n, cfg)
}

// runJobTimeout is runJob with the job aborted after jobTimeout.
func runJobTimeout(e Experiment, n int, cfg Config) ([]Row, error) {
	ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
	defer cancel()
	return runJobContext(ctx, e, n, cfg)
}

func runJobContext(ctx context.Context, e Experiment, n int, cfg Config) ([]Row, error) {
	var rows []Row
	err := narma.RunContext(ctx, n, func(c *narma.Comm) error {
		r, err := e.Run(c, cfg)
		if c.Rank() == 0 {
			rows = r
		} else if r != nil {
			return fmt.Errorf("rank %d returned rows", c.Rank())
		}
		return err
	})
	return rows, err
}

// testVariantNames returns the names of the variants of e the tests run:
// all of them, but the unsound ones under the race detector (they are
// data races by design).
func testVariantNames(e Experiment) []string {
	var vs []string
	for _, v := range e.Variants {
		if v.Name == "shared-store" && !peersMapped() {
			continue // skipped where ranks do not map each other's memory
		}
		if !(v.Unsound && raceEnabled) {
			vs = append(vs, v.Name)
		}
	}
	return vs
}

// peersMapped reports whether the goroutine ranks of this test binary's
// jobs (the transport NARMA_TRANSPORT selects) map each other's window
// memory, as shared-store needs.
var peersMapped = sync.OnceValue(func() bool {
	mapped := false
	err := narma.Run(2, func(c *narma.Comm) error {
		w, err := narma.Allocate[int64](c.Context(), c, 1)
		if err != nil {
			return err
		}
		if _, err := w.SharedQuery(1 - c.Rank()); err == nil && c.Rank() == 0 {
			mapped = true
		}
		return w.Free(c.Context())
	})
	return err == nil && mapped
})

// rowsWant describes the rows a run should yield: one per size and
// variant, sizes outermost.
type rowsWant struct {
	experiment           string
	variants             []string
	sizes                []int
	ranks, iters, rounds int
	// unsound names the variant whose rows are marked unsound, if any.
	unsound string
	// noBandwidth skips the check of a positive bandwidth.
	noBandwidth bool
}

// checkRows checks that rows are the rows w describes, with their times
// in order, and calls extra, if not nil, on each row with its variant
// and size.
func checkRows(t *testing.T, rows []Row, w rowsWant, extra func(r Row, variant string, size int)) {
	t.Helper()
	if len(rows) != len(w.variants)*len(w.sizes) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(w.variants)*len(w.sizes), rows)
	}
	i := 0
	for _, size := range w.sizes {
		for _, v := range w.variants {
			r := rows[i]
			i++
			if r.Experiment != w.experiment || r.Variant != v || r.Bytes != size || r.Ranks != w.ranks || r.Iters != w.iters || r.Rounds != w.rounds {
				t.Errorf("row %+v, want %s %s %d B, %d ranks, %d iters, %d rounds", r, w.experiment, v, size, w.ranks, w.iters, w.rounds)
			}
			if r.Unsound != (v == w.unsound) {
				t.Errorf("row %+v: unsound %v", r, r.Unsound)
			}
			if !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs) {
				t.Errorf("row %+v: times out of order", r)
			}
			if !w.noBandwidth && !(r.MBps > 0) {
				t.Errorf("row %+v: bandwidth not positive", r)
			}
			if extra != nil {
				extra(r, v, size)
			}
		}
	}
}

// corruptHook returns a Config.Corrupt for a run of variant v alone: it
// reports a call for another variant and hands each message, with its
// number counted from 1 over all ranks, to damage.
func corruptHook(t *testing.T, v string, damage func(n int32, msg []int64)) func(string, []int64) {
	var sent atomic.Int32
	return func(variant string, msg []int64) {
		if variant != v {
			t.Errorf("Corrupt called for %q in a run of %q", variant, v)
		}
		damage(sent.Add(1), msg)
	}
}

// wantFailure fails t unless err is an error of variant v that says
// want; damaged names what the run damaged.
func wantFailure(t *testing.T, err error, v, want, damaged string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), v) {
		t.Fatalf("run with %s: %v, want a %s error saying %q", damaged, err, v, want)
	}
	t.Log(err)
}

// wantNotDelivered fails t unless err is an error of variant v saying
// the data was not delivered.
func wantNotDelivered(t *testing.T, err error, v, damaged string) {
	t.Helper()
	wantFailure(t, err, v, "data not delivered", damaged)
}

// checkTableSays checks that the table of rows names measure.
func checkTableSays(t *testing.T, e Experiment, rows []Row, measure string) {
	t.Helper()
	var b strings.Builder
	if err := WriteTable(&b, e, rows); err != nil || !strings.Contains(b.String(), measure) {
		t.Errorf("table (%v) lacks %q:\n%s", err, measure, b.String())
	}
}
