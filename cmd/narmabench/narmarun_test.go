package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/bench"
)

// The tests of this file run narmabench as narmarun runs it, one process
// per rank: they build both commands and check what rank 0 prints, the
// exit status, and that the job leaves no shared-memory segment behind.

// launchedRow holds the fields of a JSON row that the tests check; the
// rows may carry more.
type launchedRow struct {
	Experiment string  `json:"experiment"`
	Variant    string  `json:"variant"`
	Bytes      int     `json:"bytes"`
	Ranks      int     `json:"ranks"`
	Iters      int     `json:"iters"`
	Rounds     int     `json:"rounds"`
	MedianNs   float64 `json:"median_ns"`
	MinNs      float64 `json:"min_ns"`
	MaxNs      float64 `json:"max_ns"`
	Unsound    bool    `json:"unsound"`
}

// parseLaunchedRows parses the JSON that narmabench --json - prints:
// either an array of rows or an object with the rows in "rows" (and
// anything else beside them). It must be one JSON value: a second one
// would be a second rank's output.
func parseLaunchedRows(out []byte) ([]launchedRow, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON value in the output (%v)", err)
	}
	var rows []launchedRow
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		err := json.Unmarshal(t, &rows)
		return rows, err
	}
	var res struct {
		Rows *[]launchedRow `json:"rows"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	if res.Rows == nil {
		return nil, errors.New(`neither an array of rows nor an object with "rows"`)
	}
	return *res.Rows, nil
}

// buildLaunched builds narmarun and narmabench into dir, with the race
// detector if this test binary has it, and returns their paths.
func buildLaunched(t *testing.T, dir string) (narmarun, narmabench string) {
	t.Helper()
	narmarun, narmabench = filepath.Join(dir, "narmarun"), filepath.Join(dir, "narmabench")
	for _, b := range [][2]string{{narmarun, "../narmarun"}, {narmabench, "."}} {
		args := []string{"build", "-o", b[0]}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, b[1])...).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	return narmarun, narmabench
}

// launched is the outcome of one narmarun run.
type launched struct {
	status         int
	stdout, stderr []byte
}

// launch runs narmarun with args and checks that the job left no
// shared-memory segment: narmarun names its jobs' segments
// /dev/shm/narma.PID-*, PID being its own.
func launch(t *testing.T, narmarun string, args ...string) launched {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, narmarun, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("narmarun %s: %v in %v", strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("narmarun: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("narmarun did not end in time; stderr:\n%s", stderr.Bytes())
	}
	left, err := filepath.Glob(fmt.Sprintf("/dev/shm/narma.%d-*", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("the job left segments behind: %v", left)
	}
	return launched{status: cmd.ProcessState.ExitCode(), stdout: stdout.Bytes(), stderr: stderr.Bytes()}
}

// TestUnderNarmarun: narmabench under narmarun runs the experiment with
// one rank per process, over shared memory by default and over TCP;
// rank 0 alone prints the rows as JSON: one per variant and size, each
// with the job's number of ranks and positive times in order. A run that
// fails exits with the failing rank's status and says why.
func TestUnderNarmarun(t *testing.T) {
	if testing.Short() {
		t.Skip("short: builds narmarun and narmabench")
	}
	if runtime.GOOS != "linux" {
		t.Skip("narmarun's jobs on one host need Linux")
	}
	narmarun, narmabench := buildLaunched(t, t.TempDir())

	for _, c := range []struct {
		name       string
		ranks      int
		experiment string
		sizes      []int
		transport  string // "" for narmarun's default
		variants   []string
	}{
		{name: "pingpong", ranks: 2, experiment: "pingpong", sizes: []int{8, 4096}},
		{name: "alltoall", ranks: 4, experiment: "alltoall", sizes: []int{8}},
		{name: "pingpong-tcp", ranks: 2, experiment: "pingpong", sizes: []int{8}, transport: "tcp",
			variants: []string{"send-recv", "put-notify"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, ok := bench.Lookup(c.experiment)
			if !ok {
				t.Fatalf("no experiment %s", c.experiment)
			}
			variants := c.variants
			if variants == nil {
				for _, v := range e.Variants {
					variants = append(variants, v.Name)
				}
			}
			sizes := make([]string, len(c.sizes))
			for i, s := range c.sizes {
				sizes[i] = strconv.Itoa(s)
			}
			args := []string{"-n", strconv.Itoa(c.ranks), "--timeout", "120s"}
			if c.transport != "" {
				args = append(args, "--transport", c.transport)
			}
			args = append(args, narmabench, c.experiment, "--quick", "--sizes", strings.Join(sizes, ","), "--json", "-")
			if c.variants != nil {
				args = append(args, "--variants", strings.Join(c.variants, ","))
			}
			r := launch(t, narmarun, args...)
			if r.status != 0 {
				t.Fatalf("status %d, stderr:\n%s", r.status, r.stderr)
			}
			rows, err := parseLaunchedRows(r.stdout)
			if err != nil {
				t.Fatalf("the output: %v\n%s", err, r.stdout)
			}
			checkLaunchedRows(t, e, rows, variants, c.sizes, c.ranks)
			if len(r.stderr) > 0 {
				t.Errorf("stderr of a good run: %s", r.stderr)
			}
		})
	}

	// Every rank finds the command line wrong and exits with status 2;
	// rank 0 alone says why.
	for _, c := range []struct {
		name  string
		ranks int
		args  []string
		want  string
	}{
		{name: "failure", ranks: 2, args: []string{"pingpong", "--quick", "--sizes", "8", "--variants", "put-notify,nosuch", "--json", "-"},
			want: `no variant "nosuch"`},
		{name: "flags", ranks: 3, args: []string{"alltoall", "--bogus"}, want: "Usage of narmabench alltoall:"},
		{name: "ranks", ranks: 3, args: []string{"pingpong", "--quick", "--sizes", "8"}, want: "the launcher's job has 3 ranks, pingpong needs 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := launch(t, narmarun, append([]string{"-n", strconv.Itoa(c.ranks), "--timeout", "120s", narmabench}, c.args...)...)
			if r.status == 0 {
				t.Fatalf("a run with a bad command line succeeded:\n%s", r.stdout)
			}
			if r.status != exitUsage {
				t.Errorf("status %d, want %d (the ranks' usage error); stderr:\n%s", r.status, exitUsage, r.stderr)
			}
			if len(r.stdout) > 0 {
				t.Errorf("stdout of a failed run: %s", r.stdout)
			}
			if n := bytes.Count(r.stderr, []byte(c.want)); n != 1 {
				t.Errorf("stderr says %q %d times, want once (rank 0):\n%s", c.want, n, r.stderr)
			}
		})
	}

	t.Run("list", func(t *testing.T) {
		var want bytes.Buffer
		list(&want)
		r := launch(t, narmarun, "-n", "3", narmabench, "list")
		if r.status != 0 || !bytes.Equal(r.stdout, want.Bytes()) || len(r.stderr) > 0 {
			t.Errorf("status %d, stdout:\n%s\nstderr:\n%s\nwant status 0 and the list once", r.status, r.stdout, r.stderr)
		}
	})
}

// checkLaunchedRows checks that rows hold one row of e per variant and
// size, sizes outermost, each run on ranks ranks with --quick's
// repetitions and positive times in order.
func checkLaunchedRows(t *testing.T, e bench.Experiment, rows []launchedRow, variants []string, sizes []int, ranks int) {
	t.Helper()
	if len(rows) != len(variants)*len(sizes) {
		t.Fatalf("%d rows, want %d (%d variants at %d sizes): %+v", len(rows), len(variants)*len(sizes), len(variants), len(sizes), rows)
	}
	i := 0
	for _, size := range sizes {
		for _, v := range variants {
			r := rows[i]
			i++
			unsound := slices.ContainsFunc(e.Variants, func(x bench.Variant) bool { return x.Name == v && x.Unsound })
			if r.Experiment != e.Name || r.Variant != v || r.Bytes != size || r.Ranks != ranks || r.Iters != 50 || r.Rounds != 5 || r.Unsound != unsound {
				t.Errorf("row %+v, want %s %s at %d B on %d ranks, 50 iters, 5 rounds, unsound %v", r, e.Name, v, size, ranks, unsound)
			}
			if !(r.MinNs > 0 && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs) {
				t.Errorf("row %+v: times not positive or out of order", r)
			}
		}
	}
}

// TestUnderOtherLauncher: narmabench started as srun starts its tasks
// (Slurm's variables, and the rendezvous variables narma.Init needs
// there) joins that job, one rank per process, instead of running a job
// of goroutine ranks in every process: rank 0 alone prints the rows, run
// on the job's 2 ranks, and its metadata names Slurm and TCP.
func TestUnderOtherLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("short: builds narmabench")
	}
	dir := t.TempDir()
	_, narmabench := buildLaunched(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var base []string
	for _, kv := range os.Environ() { // no launcher's variables but ours
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "NARMA_") && !strings.HasPrefix(k, "SLURM_") &&
			!strings.HasPrefix(k, "OMPI_") && !strings.HasPrefix(k, "PMI") {
			base = append(base, kv)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 2
	var outs, errs [n]bytes.Buffer
	var cmds [n]*exec.Cmd
	for r := range n {
		cmd := exec.CommandContext(ctx, narmabench, "pingpong", "--quick", "--sizes", "8", "--variants", "put-notify,send-recv", "--json", "-")
		cmd.Env = append(slices.Clone(base),
			"SLURM_PROCID="+strconv.Itoa(r), "SLURM_STEP_NUM_TASKS="+strconv.Itoa(n), "SLURM_JOB_ID=4242",
			"NARMA_RENDEZVOUS="+addr, "NARMA_SECRET="+strings.Repeat("5a", 32))
		cmd.Stdout, cmd.Stderr = &outs[r], &errs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
	}
	for r, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("rank %d: %v\nstderr:\n%s", r, err, errs[r].Bytes())
		}
	}
	if t.Failed() {
		return
	}
	if outs[1].Len() > 0 {
		t.Errorf("rank 1 printed:\n%s", outs[1].Bytes())
	}
	e, _ := bench.Lookup("pingpong")
	rows, err := parseLaunchedRows(outs[0].Bytes())
	if err != nil {
		t.Fatalf("rank 0's output: %v\n%s", err, outs[0].Bytes())
	}
	checkLaunchedRows(t, e, rows, []string{"send-recv", "put-notify"}, []int{8}, n) // in the experiment's order
	var res struct {
		Meta bench.Meta `json:"meta"`
	}
	if err := json.Unmarshal(outs[0].Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if m := res.Meta; m.Launcher != "slurm" || m.Transport != "tcp" || m.JobRanks != n {
		t.Errorf("metadata: launcher %q, transport %q, %d ranks; want slurm, tcp, %d", m.Launcher, m.Transport, m.JobRanks, n)
	}
}
