package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/ranktest"
	"github.com/narma-rma/narma/internal/testjob"
)

// The tests of this file run the experiments with their ranks as
// processes of the test binary (package testjob), over each transport
// between processes: every experiment's checks of the data it receives
// then run over shared memory and TCP as narmarun would run them, not
// only over the in-process transports of the other tests. A rank process
// finds what to run in its testjob call, "bench-procs:NAME" for the case
// NAME of procCases, and TestMain runs it instead of the tests.

// procCall prefixes the testjob calls of the rank processes.
const procCall = "bench-procs:"

// procTimeout bounds each job of processes; a small run takes well
// under a second.
const procTimeout = 45 * time.Second

// rowsMarker starts the line on which rank 0 prints its rows as JSON.
const rowsMarker = "bench-procs rows: "

// TestMain lets the test binary serve as the rank processes of the
// experiments run as processes (procCases); otherwise it runs the tests.
func TestMain(m *testing.M) {
	if name, ok := strings.CutPrefix(testjob.Call(), procCall); ok {
		os.Exit(procRank(name))
	}
	os.Exit(m.Run())
}

// procCase is an experiment run by a job of processes.
type procCase struct {
	name  string
	e     Experiment
	ranks int
	cfg   Config
	// transports are those the case runs over.
	transports []string
	// corrupt, if not nil, makes the Config.Corrupt of the rank: the
	// case is then a run that must fail, with the error saying want.
	corrupt func(rank int) func(variant string, msg []int64)
	want    string
}

// procTransports are the transports between processes; hybrid only
// differs from tcp with more than two ranks (ranks alternate between two
// pretend hosts), so the cases of two ranks leave it out.
func procTransports(ranks int) []string {
	if ranks > 2 {
		return []string{"shm", "tcp", "hybrid"}
	}
	return []string{"shm", "tcp"}
}

// procCases are the runs of TestExperimentsOverProcesses, one per
// experiment, small and short: one round, two operations, no warm-up,
// the variants the other tests run (the unsound ones left out under the
// race detector) at two sizes where the experiment takes them; then the
// runs of TestProcessesDetectCorruption.
func procCases() []procCase {
	small := func(e Experiment, ranks int, sizes ...int) procCase {
		return procCase{name: e.Name, e: e, ranks: ranks, transports: procTransports(ranks),
			cfg: Config{Sizes: sizes, Variants: testVariantNames(e), Iters: 2, Rounds: 1, Warmup: -1}}
	}
	// damage returns a Config.Corrupt under which rank bad damages the
	// last word of the nth message it sends of variant v.
	damage := func(v string, bad, nth int) func(rank int) func(string, []int64) {
		return func(rank int) func(string, []int64) {
			sent := 0
			return func(variant string, msg []int64) {
				if variant != v {
					panic(fmt.Sprintf("Corrupt called for %q in a run of %q", variant, v))
				}
				if sent++; rank == bad && sent == nth {
					msg[len(msg)-1]++
				}
			}
		}
	}
	corrupted := func(e Experiment, ranks int, v string, bad, nth int) procCase {
		return procCase{name: e.Name + "-corrupt", e: e, ranks: ranks, transports: procTransports(ranks),
			cfg:     Config{Sizes: []int{64}, Variants: []string{v}, Iters: 4, Rounds: 1, Warmup: -1},
			corrupt: damage(v, bad, nth), want: "data not delivered"}
	}
	return []procCase{
		small(PingPong(), 2, 8, 4096),
		small(Overlap(), 2, 8, 4096),
		small(Stencil(), 3, 32*8, 48*8),
		small(TreeReduce(), 3, 8, 1024),
		small(Cholesky(), 3, 64),
		small(AllToAll(), 3, 8, 1024),
		small(Halo(), 4, 8, 4*8),
		small(FenceCost(), 3, 8, 1024),
		small(LogGP(), 2, 8, 64),
		small(Summa(), 4, 8*8, 13*8),
		// Rank 1's second reply, received by rank 0.
		corrupted(PingPong(), 2, "put-notify", 1, 2),
		// Rank 2's third partial sum, received by rank 0 (the root,
		// whose children are ranks 1 and 2).
		corrupted(TreeReduce(), 3, "put-notify", 2, 3),
		// Rank 1's third panel message (8 x 8 matrices on 2 x 2 ranks:
		// it owns A's panel of step 1 and B's of step 0 on its column).
		corrupted(Summa(), 4, "put-notify", 1, 3),
	}
}

func lookupProcCase(name string) (procCase, bool) {
	for _, c := range procCases() {
		if c.name == name {
			return c, true
		}
	}
	return procCase{}, false
}

// skipUnlessProcs skips t where the ranks cannot be processes (not
// Linux) or where they are not wanted: NARMA_TEST_PROCS=0, or a set
// NARMA_TRANSPORT, which asks for a run of the tests over an in-process
// transport and would only repeat these jobs (as for ranktest.Run).
func skipUnlessProcs(t *testing.T) {
	t.Helper()
	if !ranktest.Procs() {
		t.Skip("ranks as processes: Linux only, and not with NARMA_TRANSPORT set or NARMA_TEST_PROCS=0")
	}
}

// runProcCase runs case c with its ranks as processes over transport tr
// and returns the job's results and error.
func runProcCase(t *testing.T, c procCase, tr string) ([]testjob.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout+10*time.Second)
	defer cancel()
	start := time.Now()
	res, err := testjob.RunOn(ctx, tr, c.ranks, procCall+c.name, "-test.run=^$")
	t.Logf("%s over %d processes, %s: %v", c.name, c.ranks, tr, time.Since(start).Round(time.Millisecond))
	if res == nil && err != nil {
		t.Fatal(err)
	}
	return res, err
}

// TestExperimentsOverProcesses: every experiment runs its variants at
// small sizes with the ranks as processes, over shared memory, TCP and
// (with more than two ranks) the hybrid transport, checks every message
// as it does over goroutine ranks, and yields on rank 0 one row per
// variant and size with the job's number of ranks and times in order.
func TestExperimentsOverProcesses(t *testing.T) {
	skipUnlessProcs(t)
	names := map[string]bool{}
	for _, c := range procCases() {
		if c.corrupt != nil {
			continue
		}
		names[c.e.Name] = true
		for _, tr := range c.transports {
			t.Run(c.name+"/"+tr, func(t *testing.T) {
				res, err := runProcCase(t, c, tr)
				if err != nil {
					t.Fatal(err)
				}
				rows, err := procRows(res[0].Output)
				if err != nil {
					t.Fatalf("rank 0: %v; its output:\n%s", err, res[0].Output)
				}
				checkProcRows(t, c, tr, rows)
			})
		}
	}
	for _, e := range Experiments() {
		if !names[e.Name] {
			t.Errorf("experiment %s has no run over processes", e.Name)
		}
	}
}

// TestProcessesDetectCorruption: a message damaged on its way out fails
// a job of processes too, over every transport, with the rank that
// received it saying so.
func TestProcessesDetectCorruption(t *testing.T) {
	skipUnlessProcs(t)
	for _, c := range procCases() {
		if c.corrupt == nil {
			continue
		}
		for _, tr := range c.transports {
			t.Run(c.name+"/"+tr, func(t *testing.T) {
				res, err := runProcCase(t, c, tr)
				if err == nil {
					t.Fatalf("the run with a damaged message succeeded")
				}
				said := false
				for _, r := range res {
					said = said || r.Err != nil && strings.Contains(r.Output, c.want) && strings.Contains(r.Output, c.cfg.Variants[0])
					// testjob kills the ranks still running 5 s after
					// the first failure: the others must have seen
					// their failed peer by then.
					if ee, ok := errors.AsType[*exec.ExitError](r.Err); ok && ee.ExitCode() < 0 {
						t.Errorf("rank %d did not end on its own: %v", r.Rank, r.Err)
					}
				}
				if !said {
					t.Fatalf("no failed rank says %q of %s: %v", c.want, c.cfg.Variants[0], err)
				}
			})
		}
	}
}

// checkProcRows checks the rows of case c, as checkRows does for the
// experiments with a row per variant and size; LogGP's rows are its
// parameters.
func checkProcRows(t *testing.T, c procCase, tr string, rows []Row) {
	t.Helper()
	if c.e.Params {
		checkLogGPRows(t, rows, c.ranks, c.cfg)
		return
	}
	variants := c.cfg.Variants
	if tr != "shm" {
		// Ranks that do not map each other's memory (TCP, or two
		// pretend hosts) skip the shared-memory variant.
		if variants == nil {
			for _, v := range c.e.Variants {
				variants = append(variants, v.Name)
			}
		}
		variants = slices.DeleteFunc(slices.Clone(variants), func(v string) bool { return v == "shared-store" })
	}
	checkRows(t, rows, rowsWant{experiment: c.e.Name, variants: variants, sizes: c.cfg.Sizes,
		ranks: c.ranks, iters: c.cfg.Iters, rounds: c.cfg.Rounds, unsound: unsoundVariant(c.e),
		noBandwidth: c.e.Name == "overlap"}, nil)
}

// unsoundVariant returns the name of e's unsound variant, if any.
func unsoundVariant(e Experiment) string {
	for _, v := range e.Variants {
		if v.Unsound {
			return v.Name
		}
	}
	return ""
}

// checkLogGPRows checks LogGP's rows: o_s per size, then o_r, g, L and
// G, finite, with positive overheads in order.
func checkLogGPRows(t *testing.T, rows []Row, ranks int, cfg Config) {
	t.Helper()
	type param struct {
		name  string
		bytes int
	}
	var want []param
	for _, s := range cfg.Sizes {
		want = append(want, param{"o_s", s})
	}
	want = append(want, param{"o_r", 8}, param{"g", 8}, param{"L", 0}, param{"G", 0})
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.Experiment != "loggp" || r.Variant != w.name || r.Bytes != w.bytes || r.Ranks != ranks || r.Rounds != cfg.Rounds {
			t.Errorf("row %d: %+v, want loggp %s at %d B, %d ranks, %d rounds", i, r, w.name, w.bytes, ranks, cfg.Rounds)
		}
		for _, v := range []float64{r.MedianNs, r.MinNs, r.MaxNs} {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				t.Errorf("row %+v: not finite", r)
			}
		}
		if (r.Variant == "o_s" || r.Variant == "o_r") && !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs) {
			t.Errorf("row %+v: overhead not positive or out of order", r)
		}
	}
}

// procRows returns the rows that rank 0 printed in out.
func procRows(out string) ([]Row, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if js, ok := strings.CutPrefix(sc.Text(), rowsMarker); ok {
			var rows []Row
			if err := json.Unmarshal([]byte(js), &rows); err != nil {
				return nil, fmt.Errorf("its rows: %w", err)
			}
			return rows, nil
		}
	}
	return nil, fmt.Errorf("no line of rows")
}

// procRank is a rank process of case name: it joins the job, runs the
// experiment and, on rank 0, prints the rows on one line of JSON. It
// returns the exit status: 0 on success, 1 on failure, leaving at once
// (without Close's barrier) so that the others see a failed peer.
func procRank(name string) int {
	c, ok := lookupProcCase(name)
	if !ok {
		fmt.Fprintf(os.Stderr, "bench-procs: no case %q\n", name)
		return 1
	}
	fail := func(rank int, err error) int {
		fmt.Fprintf(os.Stderr, "bench-procs %s: rank %d: %v\n", name, rank, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	defer cancel()
	comm, err := narma.Init(ctx)
	if err != nil {
		return fail(-1, err)
	}
	rank := comm.Rank()
	if comm.Size() != c.ranks {
		return fail(rank, fmt.Errorf("joined a job of %d ranks, want %d", comm.Size(), c.ranks))
	}
	cfg := c.cfg
	if c.corrupt != nil {
		cfg.Corrupt = c.corrupt(rank)
	}
	rows, err := c.e.Run(comm, cfg)
	if err != nil {
		return fail(rank, err)
	}
	if rank == 0 {
		b, err := json.Marshal(rows)
		if err != nil {
			return fail(rank, err)
		}
		fmt.Printf("%s%s\n", rowsMarker, b)
	} else if rows != nil {
		return fail(rank, fmt.Errorf("rank %d returned rows", rank))
	}
	if err := comm.Close(); err != nil {
		return fail(rank, err)
	}
	return 0
}
