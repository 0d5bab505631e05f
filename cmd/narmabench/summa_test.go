package main

import (
	"bytes"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/narma-rma/narma/internal/bench"
)

// TestCutSummaFlags: --grid and --panel are taken out of the command
// line in every form the flag package takes, the other flags and their
// values are left as they were, and nothing after the flags is looked at.
func TestCutSummaFlags(t *testing.T) {
	for _, c := range []struct {
		args, rest []string
		l          bench.SummaLayout
	}{
		{nil, nil, bench.SummaLayout{}},
		{[]string{"--grid", "2x3"}, nil, bench.SummaLayout{Rows: 2, Cols: 3}},
		{[]string{"-grid=3X1", "--panel=16"}, nil, bench.SummaLayout{Rows: 3, Cols: 1, Panel: 16}},
		{[]string{"--sizes", "1K", "-panel", "8", "--quick", "--csv", "-grid", "-n", "4"},
			[]string{"--sizes", "1K", "--quick", "--csv", "-grid", "-n", "4"}, bench.SummaLayout{Panel: 8}},
		{[]string{"--iters=3", "--grid", "1x4", "extra", "--panel", "2"},
			[]string{"--iters=3", "extra", "--panel", "2"}, bench.SummaLayout{Rows: 1, Cols: 4}},
		{[]string{"--", "--grid", "2x2"}, []string{"--", "--grid", "2x2"}, bench.SummaLayout{}},
	} {
		rest, l, err := cutSummaFlags(c.args)
		if err != nil || !slices.Equal(rest, c.rest) || l != c.l {
			t.Errorf("cutSummaFlags(%q) = %q, %+v, %v; want %q, %+v", c.args, rest, l, err, c.rest, c.l)
		}
	}
}

// TestValueFlags: valueFlags lists every flag of summa's parseFlags that
// takes a value, and no other: the help prints those with the name of
// their value.
func TestValueFlags(t *testing.T) {
	var help bytes.Buffer
	if _, err := parseFlags("summa", []bench.Experiment{bench.Summa()}, []string{"-h"}, &help); err == nil {
		t.Fatal("-h: no error")
	}
	var takes []string
	for _, line := range strings.Split(help.String(), "\n") {
		if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(line, "  -") {
			takes = append(takes, strings.TrimPrefix(f[0], "-"))
		}
	}
	want := slices.Sorted(slices.Values(valueFlags))
	if slices.Sort(takes); !slices.Equal(takes, want) {
		t.Errorf("flags with a value %q, valueFlags %q", takes, want)
	}
}

// TestSummaCommand: `summa --grid` runs on the grid's ranks with the
// panels asked for, prints the table with the note of the grid and
// writes the rows.
func TestSummaCommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "summa.json")
	status, out, errs := narmabench("summa", "--grid", "2x3", "--panel", "4", "--sizes", "64,104",
		"--iters", "1", "--rounds", "1", "--warmup", "-1", "--json", file)
	if status != exitOK {
		t.Fatalf("status %d, stderr:\n%s", status, errs)
	}
	for _, want := range []string{"summa: time per multiplication in ns, median of 1 rounds, 6 ranks",
		"on a grid of 2 x 3 ranks, panels of 4 columns", "grid of 2 x 3 ranks, panels of up to 4 columns",
		"13x13: send-recv", "best classic variant / put-notify"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	res := readJSON(t, file)
	checkMeta(t, res.Meta, inProcess(), "default", 6)
	e, _ := bench.Lookup("summa")
	if len(res.Rows) != 2*len(e.Variants) {
		t.Fatalf("%d rows, want %d", len(res.Rows), 2*len(e.Variants))
	}
	for _, r := range res.Rows {
		if r.Experiment != "summa" || r.Ranks != 6 || r.Iters != 1 {
			t.Errorf("row %+v", r)
		}
	}
	// Without --grid, the most square grid of -n.
	status, out, errs = narmabench("summa", "-n", "4", "--sizes", "64", "--variants", "put-notify,bcast",
		"--iters", "1", "--rounds", "1", "--warmup", "-1")
	if status != exitOK || !strings.Contains(out, "grid of 2 x 2 ranks, panels of up to 32 columns") {
		t.Errorf("status %d, stderr %q, output:\n%s", status, errs, out)
	}
}

// TestSummaUsage: bad grids, panels and ranks exit with status 2 and
// say what is wrong, once (matrices too large for the experiment end
// the run with status 1, as the stencil's rows do); -h lists the flags
// of summa too.
func TestSummaUsage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"summa", "--grid", "2x3", "-n", "4"}, exitUsage, "-n 4: a grid of 2 x 3 needs 6 ranks"},
		{[]string{"summa", "--grid", "0x2"}, exitUsage, `--grid "0x2": want ROWSxCOLUMNS`},
		{[]string{"summa", "--grid", "two"}, exitUsage, `--grid "two": want ROWSxCOLUMNS`},
		{[]string{"summa", "--grid"}, exitUsage, "flag needs an argument: -grid"},
		{[]string{"summa", "--panel", "0"}, exitUsage, `--panel "0": want a positive number`},
		{[]string{"summa", "--variants", "put-notify,smoke"}, exitUsage, `no variant "smoke"`},
		{[]string{"summa", "--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"summa", "--sizes", "64K"}, exitFail, "rows of 64 KiB: at most 32 KiB"},
	} {
		status, _, errs := narmabench(c.args...)
		if status != c.status || strings.Count(errs, c.want) != 1 {
			t.Errorf("narmabench %q: status %d, stderr %q; want %d and %q once", c.args, status, errs, c.status, c.want)
		}
	}
	status, out, errs := narmabench("summa", "-h")
	for _, want := range []string{"-grid PRxPC", "-panel B", "-sizes"} {
		if status != exitOK || !strings.Contains(out+errs, want) {
			t.Errorf("summa -h: status %d, help lacks %q:\n%s%s", status, want, out, errs)
		}
	}
}

// TestSummaUnderNarmarun: `narmarun -n 4 narmabench summa --grid 2x2`
// runs one rank per process and rank 0 prints the rows; a grid that
// does not fit the job is a usage error that rank 0 alone reports.
func TestSummaUnderNarmarun(t *testing.T) {
	if testing.Short() {
		t.Skip("short: builds narmarun and narmabench")
	}
	if runtime.GOOS != "linux" {
		t.Skip("narmarun's jobs on one host need Linux")
	}
	narmarun, narmabench := buildLaunched(t, t.TempDir())
	e, _ := bench.Lookup("summa")
	var variants []string
	for _, v := range e.Variants {
		variants = append(variants, v.Name)
	}
	r := launch(t, narmarun, "-n", "4", "--timeout", "120s", narmabench, "summa", "--grid", "2x2", "--panel", "4",
		"--quick", "--sizes", "64,128", "--json", "-")
	if r.status != 0 {
		t.Fatalf("status %d, stderr:\n%s", r.status, r.stderr)
	}
	rows, err := parseLaunchedRows(r.stdout)
	if err != nil {
		t.Fatalf("the output: %v\n%s", err, r.stdout)
	}
	checkLaunchedRows(t, e, rows, variants, []int{64, 128}, 4)
	if len(r.stderr) > 0 {
		t.Errorf("stderr of a good run: %s", r.stderr)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"summa", "--grid", "2x3", "--quick"}, "the launcher's job has 4 ranks, summa needs 6"},
		{[]string{"summa", "--grid", "2"}, `--grid "2": want ROWSxCOLUMNS`},
	} {
		r := launch(t, narmarun, append([]string{"-n", "4", "--timeout", "120s", narmabench}, c.args...)...)
		if r.status != exitUsage || len(r.stdout) > 0 {
			t.Errorf("%q: status %d, stdout %q; want %d and nothing", c.args, r.status, r.stdout, exitUsage)
		}
		if n := bytes.Count(r.stderr, []byte(c.want)); n != 1 {
			t.Errorf("%q: stderr says %q %d times, want once (rank 0):\n%s", c.args, c.want, n, r.stderr)
		}
	}
}
