package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/bench"
)

// narmabench runs the command with args and returns its status and
// output.
func narmabench(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	status := run(context.Background(), args, &out, &errb)
	return status, out.String(), errb.String()
}

func TestList(t *testing.T) {
	status, out, _ := narmabench("list")
	if status != 0 {
		t.Fatalf("list: status %d", status)
	}
	for _, want := range []string{"pingpong", "send-recv", "put-notify", "get-notify", "unsync*"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
}

// TestUsageErrors: bad command lines exit with status 2 and say what is
// wrong.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"nosuch"}, `no experiment "nosuch"`},
		{[]string{"pingpong", "--sizes", "8,1X"}, `bad size "1X"`},
		{[]string{"pingpong", "--sizes", "12"}, "multiple of 8"},
		{[]string{"pingpong", "--variants", "put-notify,smoke-signal"}, `no variant "smoke-signal"`},
		{[]string{"pingpong", "-n", "3"}, "needs exactly 2 ranks"},
		{[]string{"pingpong", "--iters", "-1"}, "must not be negative"},
		{[]string{"pingpong", "--strategy", "lazy"}, `--strategy "lazy"`},
		{[]string{"pingpong", "--bogus"}, "flag provided but not defined"},
		{[]string{"pingpong", "extra"}, "unexpected arguments"},
	} {
		status, _, errs := narmabench(c.args...)
		if status != 2 || strings.Count(errs, c.want) != 1 {
			t.Errorf("narmabench %q: status %d, stderr %q; want 2 and %q once", c.args, status, errs, c.want)
		}
	}
}

// TestLaunchedUsage: under narmarun, rank 0 says what is wrong with the
// command line, also with the job's size (before joining it); another
// rank exits with status 2 too but says nothing while it waits for
// narmarun to stop it (here its context ends), and says it itself if
// nothing comes. Only rank 0 prints the list.
func TestLaunchedUsage(t *testing.T) {
	launchedAs := func(rank int) {
		t.Setenv("NARMA_BOOTSTRAP", "unix:"+filepath.Join(t.TempDir(), "sock"))
		t.Setenv("NARMA_RANK", strconv.Itoa(rank))
		t.Setenv("NARMA_SIZE", "3")
		t.Setenv("NARMA_JOB", "job")
		t.Setenv("NARMA_TRANSPORT", "tcp")
	}
	bad := []string{"pingpong", "--variants", "nosuch"}
	const want = `no variant "nosuch"`
	launchedAs(0)
	if status, _, errs := narmabench(bad...); status != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("rank 0: status %d, stderr %q; want %d and %q", status, errs, exitUsage, want)
	}
	const wantSize = "the launcher's job has 3 ranks, pingpong needs 2"
	if status, _, errs := narmabench("pingpong"); status != exitUsage || !strings.Contains(errs, wantSize) {
		t.Errorf("rank 0 of a job too large: status %d, stderr %q; want %d and %q", status, errs, exitUsage, wantSize)
	}

	launchedAs(1)
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{bad, {"pingpong"}, {"all", "-n", "2"}, nil} {
		var out, errb bytes.Buffer
		if status := run(stopped, args, &out, &errb); status != exitUsage || out.Len()+errb.Len() > 0 {
			t.Errorf("rank 1, stopped: narmabench %q: status %d, stdout %q, stderr %q; want %d and nothing", args, status, out.String(), errb.String(), exitUsage)
		}
	}
	if status, out, errs := narmabench("list"); status != 0 || out+errs != "" {
		t.Errorf("rank 1: list: status %d, %d bytes on stdout, stderr %q; want 0 and nothing", status, len(out), errs)
	}
	defer func(g time.Duration) { usageGrace = g }(usageGrace)
	usageGrace = time.Millisecond
	if status, _, errs := narmabench(bad...); status != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("rank 1, not stopped: status %d, stderr %q; want %d and %q", status, errs, exitUsage, want)
	}
}

// TestRun: a short run prints the table and writes CSV and JSON files.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	csvFile, jsonFile := filepath.Join(dir, "pp.csv"), filepath.Join(dir, "pp.json")
	status, out, errs := narmabench("pingpong", "--sizes", "8,1K", "--variants", "put-notify,send-recv",
		"--iters", "3", "--rounds", "1", "--strategy", "deferred", "--csv", csvFile, "--json", jsonFile)
	if status != 0 {
		t.Fatalf("status %d, stderr:\n%s", status, errs)
	}
	for _, want := range []string{"put-notify", "send-recv", "1 KiB", "best classic variant / put-notify"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if errs != "" {
		t.Errorf("stderr is not a terminal, yet: %q", errs)
	}
	res := readJSON(t, jsonFile)
	if len(res.Rows) != 4 {
		t.Errorf("%d JSON rows, want 4", len(res.Rows))
	}
	checkMeta(t, res.Meta, inProcess(), "deferred", 2)
	recs := readCSV(t, csvFile)
	if len(recs) != 4 {
		t.Errorf("%d CSV rows, want 4", len(recs))
	}
	for i, rec := range recs {
		if i < len(res.Rows) && (rec["variant"] != res.Rows[i].Variant || rec["commit"] != res.Meta.Commit || rec["date"] != res.Meta.Date) {
			t.Errorf("CSV row %v, JSON %+v, %+v", rec, res.Rows[i], res.Meta)
		}
	}
	if !strings.Contains(out, "every row's spread over the rounds (p10_ns, p90_ns, min_ns, max_ns): --csv or --json") {
		t.Errorf("the table does not say where the spread is:\n%s", out)
	}

	// JSON to stdout replaces the table.
	status, out, errs = narmabench("pingpong", "--sizes", "8", "--variants", "counter", "--iters", "2", "--rounds", "1", "--json", "-")
	if status != 0 {
		t.Fatalf("status %d, stderr:\n%s", status, errs)
	}
	res, err := bench.ReadJSON(strings.NewReader(out))
	if err != nil || len(res.Rows) != 1 || res.Rows[0].Variant != "counter" {
		t.Errorf("--json -: %v, rows %+v from\n%s", err, res.Rows, out)
	}
}

// TestMetaTransport: the metadata names the in-process transport that
// NARMA_TRANSPORT selects, and under the launcher its transport, its
// ranks and the launcher.
func TestMetaTransport(t *testing.T) {
	t.Setenv("NARMA_TRANSPORT", "async")
	status, out, errs := narmabench("pingpong", "--sizes", "8", "--variants", "send-recv", "--iters", "2", "--rounds", "1",
		"--strategy", "immediate", "--csv", "-")
	if status != 0 {
		t.Fatalf("status %d, stderr:\n%s", status, errs)
	}
	recs := parseCSV(t, out)
	if len(recs) != 1 || recs[0]["transport"] != "async" || recs[0]["launcher"] != "none" || recs[0]["strategy"] != "immediate" {
		t.Errorf("CSV %v", recs)
	}

	// As a rank of narmarun's job sees its environment.
	t.Setenv("NARMA_BOOTSTRAP", "unix:"+filepath.Join(t.TempDir(), "sock"))
	t.Setenv("NARMA_RANK", "0")
	t.Setenv("NARMA_SIZE", "3")
	t.Setenv("NARMA_JOB", "job")
	t.Setenv("NARMA_TRANSPORT", "tcp")
	m, err := jobMeta(options{ranks: 2})
	if err != nil {
		t.Fatal(err)
	}
	if m.Transport != "tcp" || m.Launcher != "narmarun" || m.JobRanks != 3 || m.Strategy != "default" {
		t.Errorf("under narmarun: %+v", m)
	}
}

// readJSON reads the JSON file that --json wrote.
func readJSON(t *testing.T, file string) bench.Results {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := bench.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// readCSV reads the CSV file that --csv wrote: see parseCSV.
func readCSV(t *testing.T, file string) []map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return parseCSV(t, string(b))
}

// parseCSV parses the CSV of --csv and returns its rows, each a map from
// column name to value, after checking its header and that every row's
// times are in order.
func parseCSV(t *testing.T, s string) []map[string]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v\n%s", err, s)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], bench.CSVHeader) {
		t.Fatalf("CSV header %v, want %v", recs, bench.CSVHeader)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, name := range recs[0] {
			m[name] = rec[i]
		}
		num := func(name string) float64 {
			v, err := strconv.ParseFloat(m[name], 64)
			if err != nil {
				t.Errorf("CSV %s: %v", name, err)
			}
			return v
		}
		checkSpread(t, bench.Row{Experiment: m["experiment"], Variant: m["variant"], MedianNs: num("median_ns"),
			MinNs: num("min_ns"), MaxNs: num("max_ns"), P10Ns: num("p10_ns"), P90Ns: num("p90_ns")})
		rows = append(rows, m)
	}
	return rows
}

// checkSpread checks that r's times are in order, min <= p10 <= median
// <= p90 <= max, and that it has the percentiles.
func checkSpread(t *testing.T, r bench.Row) {
	t.Helper()
	if r.P10Ns == 0 && r.P90Ns == 0 && r.MaxNs > 0 {
		t.Errorf("%s %s %d B: no p10 and p90", r.Experiment, r.Variant, r.Bytes)
		return
	}
	if !(r.MinNs <= r.P10Ns && r.P10Ns <= r.MedianNs && r.MedianNs <= r.P90Ns && r.P90Ns <= r.MaxNs) {
		t.Errorf("%s %s %d B: min %g, p10 %g, median %g, p90 %g, max %g: out of order",
			r.Experiment, r.Variant, r.Bytes, r.MinNs, r.P10Ns, r.MedianNs, r.P90Ns, r.MaxNs)
	}
}

// checkMeta checks the metadata of a run over goroutine ranks.
// inProcess is the transport of the in-process jobs of these tests: the
// one NARMA_TRANSPORT names, local if none.
func inProcess() string {
	if name := os.Getenv("NARMA_TRANSPORT"); name != "" {
		return name
	}
	return "local"
}

func checkMeta(t *testing.T, m bench.Meta, transport, strategy string, ranks int) {
	t.Helper()
	if m.Transport != transport || m.Launcher != "none" || m.Strategy != strategy || m.JobRanks != ranks ||
		m.Commit == "" || m.GoVersion != runtime.Version() || m.GOOS != runtime.GOOS || m.GOARCH != runtime.GOARCH ||
		m.NumCPU < 1 || m.GOMAXPROCS < 1 {
		t.Errorf("metadata %+v, want transport %s, strategy %s, %d ranks", m, transport, strategy, ranks)
	}
	if d, err := time.Parse(time.RFC3339, m.Date); err != nil || time.Since(d) > time.Hour || time.Until(d) > time.Minute {
		t.Errorf("date %q: %v", m.Date, err)
	}
}

// TestRunSaysJob: the table is headed by the job's line: goroutine ranks
// and the transport; under --csv - there is no such line.
func TestRunSaysJob(t *testing.T) {
	args := []string{"pingpong", "--sizes", "8", "--variants", "put-notify,send-recv", "--iters", "2", "--rounds", "1"}
	status, out, errs := narmabench(args...)
	if status != 0 {
		t.Fatalf("status %d, stderr:\n%s", status, errs)
	}
	want := "run: ranks as goroutines of one process over the " + inProcess() + " transport, strategy default, commit "
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "\npingpong: half round trip in ns, median of 1 rounds, 2 ranks\n") {
		t.Errorf("output does not begin with %q and the title:\n%s", want, out)
	}
	status, out, errs = narmabench(append(args, "--csv", "-")...)
	if status != 0 || strings.Contains(out, "run:") {
		t.Errorf("--csv -: status %d, stderr %q, output:\n%s", status, errs, out)
	}
}

// TestQuickFlags: the defaults of a quick run and of the time budget,
// and what -h says of them.
func TestQuickFlags(t *testing.T) {
	pp, _ := bench.Lookup("pingpong")
	parse := func(name string, es []bench.Experiment, args ...string) options {
		t.Helper()
		var errb bytes.Buffer
		o, err := parseFlags(name, es, args, &errb)
		if err != nil {
			t.Fatalf("%s %q: %v %s", name, args, err, errb.String())
		}
		return o
	}
	for _, c := range []struct {
		name          string
		args          []string
		rounds, iters int
		budget        time.Duration
	}{
		{"all", nil, quickRounds, quickIters, defaultBudget},
		{"all", []string{"--quick=false"}, 0, 0, defaultBudget},
		{"pingpong", nil, 0, 0, defaultBudget},
		{"pingpong", []string{"--quick"}, quickRounds, quickIters, defaultBudget},
		{"pingpong", []string{"--quick", "--rounds", "7"}, 7, quickIters, defaultBudget},
		{"pingpong", []string{"--iters", "9"}, 0, 9, 0},
		{"pingpong", []string{"--iters", "9", "--budget", "2s"}, 0, 9, 2 * time.Second},
		{"pingpong", []string{"--budget", "0"}, 0, 0, 0},
	} {
		es := []bench.Experiment{pp}
		if c.name == "all" {
			es = bench.Experiments()
		}
		o := parse(c.name, es, c.args...)
		if o.cfg.Rounds != c.rounds || o.cfg.Iters != c.iters || o.cfg.Budget != c.budget {
			t.Errorf("%s %q: rounds %d, iters %d, budget %v; want %d, %d, %v", c.name, c.args,
				o.cfg.Rounds, o.cfg.Iters, o.cfg.Budget, c.rounds, c.iters, c.budget)
		}
	}
	if status, _, errs := narmabench("pingpong", "--budget", "-1s"); status != exitUsage || !strings.Contains(errs, "must not be negative") {
		t.Errorf("--budget -1s: status %d, stderr %q", status, errs)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"all", "-h"}, []string{"measured rounds (default 5, as all runs quickly; 15 with --quick=false)",
			"operations per round (default 50, as all runs quickly; by size with --quick=false)"}},
		{[]string{"pingpong", "-h"}, []string{"measured rounds (default 15; 5 with --quick)", "(default: by size; 50 with --quick)", "-budget"}},
	} {
		status, out, errs := narmabench(c.args...)
		for _, want := range c.want {
			if status != 0 || !strings.Contains(out+errs, want) {
				t.Errorf("%q: status %d, help lacks %q:\n%s%s", c.args, status, want, out, errs)
			}
		}
	}
}

// TestProgressQuiet: progress shows on a terminal only, and not when the
// rows go to stdout.
func TestProgressQuiet(t *testing.T) {
	if p := newProgress(&bytes.Buffer{}, options{}); p.w != nil {
		t.Error("progress on a buffer")
	}
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0) // the master of a new pseudo-terminal: a terminal device
	if err != nil {
		t.Skipf("no terminal to test with: %v", err)
	}
	defer tty.Close()
	if p := newProgress(tty, options{}); p.w == nil {
		t.Error("no progress on a terminal")
	}
	for _, o := range []options{{csv: "-"}, {json: "-"}} {
		if p := newProgress(tty, o); p.w != nil {
			t.Errorf("progress with %+v", o)
		}
	}
}
