package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/narma-rma/narma/internal/bench"
)

// tiny are the flags of a very short run of all; under the race
// detector, without the unsound variants, which are data races by design.
// The experiments' default sizes: some have a smallest size of their own.
var tiny = []string{"--iters", "1", "--rounds", "1", "--warmup", "-1", "--sound=" + strconv.FormatBool(raceEnabled)}

// TestAll: `all` runs every registered experiment, prints each table and
// the summary, and writes the rows of all of them and a plot of each.
func TestAll(t *testing.T) {
	dir := t.TempDir()
	jsonFile, csvFile, plotDir := filepath.Join(dir, "all.json"), filepath.Join(dir, "all.csv"), filepath.Join(dir, "plots")+"/"
	args := append([]string{"all", "--json", jsonFile, "--csv", csvFile, "--plot", plotDir}, tiny...)
	status, out, errs := narmabench(args...)
	if status != 0 {
		t.Fatalf("all: status %d, stderr:\n%s", status, errs)
	}
	res := readJSON(t, jsonFile)
	rows := res.Rows
	checkMeta(t, res.Meta, inProcess(), "default", 4)
	if recs := readCSV(t, csvFile); len(recs) != len(rows) {
		t.Errorf("CSV of %d rows, JSON of %d", len(recs), len(rows))
	}
	if !strings.Contains(out, "summary: best classic variant / put-notify") {
		t.Errorf("no summary:\n%s", out)
	}
	summary := out[strings.Index(out, "summary:"):]
	for _, e := range bench.Experiments() {
		if !strings.Contains(out, e.Name+": ") {
			t.Errorf("no table of %s:\n%s", e.Name, out)
		}
		n := 0
		for _, r := range rows {
			if r.Experiment == e.Name {
				n++
				checkSpread(t, r)
				if r.Unsound && raceEnabled {
					t.Errorf("%s: unsound variant %s ran with --sound", e.Name, r.Variant)
				}
				want := 4
				if e.Ranks > 0 {
					want = e.Ranks
				}
				if r.Ranks != want {
					t.Errorf("%s ran on %d ranks", e.Name, r.Ranks)
				}
			}
		}
		if n == 0 {
			t.Errorf("no rows of %s", e.Name)
		}
		if inSummary := strings.Contains(summary, "\n  "+e.Name+" "); inSummary != (len(bench.Summarize(e, rows)) > 0) {
			t.Errorf("%s in the summary: %v, ratios %v", e.Name, inSummary, bench.Summarize(e, rows))
		}
		if st, err := os.Stat(filepath.Join(plotDir, e.Name+".svg")); err != nil || st.Size() == 0 {
			t.Errorf("plot of %s: %v", e.Name, err)
		}
	}
	if errs != "" {
		t.Errorf("stderr: %q", errs)
	}
}

// TestAllJSONStdout: JSON to stdout replaces the tables and the summary.
func TestAllJSONStdout(t *testing.T) {
	status, out, errs := narmabench(append([]string{"all", "--json", "-"}, tiny...)...)
	if status != 0 {
		t.Fatalf("status %d, stderr:\n%s", status, errs)
	}
	res, err := bench.ReadJSON(strings.NewReader(out))
	if err != nil || len(res.Rows) == 0 {
		t.Errorf("--json -: %v, %d rows from\n%s", err, len(res.Rows), out)
	}
}

// TestAllSkipsSizes: `all --sizes 8` skips, with a line each, the
// experiments that cannot take 8 B on 4 ranks (the stencil's rows need 2
// columns per rank, LogGP two sizes), runs the others and succeeds.
func TestAllSkipsSizes(t *testing.T) {
	status, out, errs := narmabench(append([]string{"all", "--sizes", "8", "--json", "-"}, tiny...)...)
	if status != exitOK {
		t.Fatalf("status %d, stderr:\n%s", status, errs)
	}
	skipped := map[string]string{
		"stencil": "narmabench all: skipping stencil: rows of 8 B: 1 columns over 4 ranks, need at least 2 per rank\n",
		"loggp":   "narmabench all: skipping loggp: needs at least two distinct sizes to fit G and L, got [8]\n",
	}
	want := ""
	for _, e := range bench.Experiments() {
		want += skipped[e.Name]
	}
	if errs != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errs, want)
	}
	res, err := bench.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range bench.Experiments() {
		n := 0
		for _, r := range res.Rows {
			if r.Experiment == e.Name {
				n++
				if r.Bytes != 8 {
					t.Errorf("%s: a row of %d B", e.Name, r.Bytes)
				}
			}
		}
		if _, skip := skipped[e.Name]; skip != (n == 0) {
			t.Errorf("%s: %d rows, skipped %v", e.Name, n, skip)
		}
	}
}

// TestPlot: --plot writes the experiment's plot in the extension's
// format.
func TestPlot(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pp.png")
	status, _, errs := narmabench("pingpong", "--sizes", "8,1K", "--variants", "put-notify,send-recv",
		"--iters", "2", "--rounds", "1", "--plot", file)
	if status != 0 {
		t.Fatalf("status %d, stderr:\n%s", status, errs)
	}
	b, err := os.ReadFile(file)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("plot: %v, %d bytes", err, len(b))
	}
}

func TestPlotFile(t *testing.T) {
	dir := t.TempDir()
	e := bench.Experiment{Name: "pingpong"}
	for name, want := range map[string]string{
		"out.svg":          "out-pingpong.svg",
		"res/run1.png":     "res/run1-pingpong.png",
		"res/.png":         "res/pingpong.png",
		"res/":             filepath.Join("res", "pingpong.svg"),
		dir:                filepath.Join(dir, "pingpong.svg"),
		filepath.Join(dir): filepath.Join(dir, "pingpong.svg"),
	} {
		if got := plotFile(name, e); got != want {
			t.Errorf("plotFile(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestAllUsageErrors: bad command lines of `all` exit with status 2.
func TestAllUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"all", "--bogus"}, "flag provided but not defined"},
		{[]string{"all", "--variants", "put-notify"}, "flag provided but not defined"},
		{[]string{"all", "-n", "1"}, "at least 2 ranks"},
		{[]string{"all", "--sizes", "12"}, "multiple of 8"},
		{[]string{"all", "--rounds", "-1"}, "must not be negative"},
		{[]string{"all", "--plot", "out.gif"}, "want a directory or a name ending in .svg or .png"},
		{[]string{"all", "extra"}, "unexpected arguments"},
		{[]string{"pingpong", "--plot", "out.pdf"}, "want a file name ending in .svg or .png"},
		{[]string{"pingpong", "--plot", "out"}, "want a file name ending in .svg or .png"},
	} {
		status, _, errs := narmabench(c.args...)
		if status != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("narmabench %q: status %d, stderr %q; want 2 and %q", c.args, status, errs, c.want)
		}
	}
}
