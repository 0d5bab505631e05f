package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseMPICSV(t *testing.T) {
	good := strings.Join(CSVRowColumns, ",") + "\n\n# comment\n" +
		"pingpong,mpi-send-recv,8,2,100,3,369.4,360.9,371.6,21.7,false,0.0,362.6,371.2\n" +
		"stencil,mpi-fence,256,4,50,3,275951.9,249291.9,377017.0,0.9,false,0.0,255624.9,357803.9\n"
	rows, err := ParseMPICSV(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(rows))
	}
	want := Row{Experiment: "pingpong", Variant: "mpi-send-recv", Bytes: 8, Ranks: 2, Iters: 100, Rounds: 3,
		MedianNs: 369.4, MinNs: 360.9, MaxNs: 371.6, P10Ns: 362.6, P90Ns: 371.2, MBps: 21.7}
	if rows[0] != want {
		t.Errorf("row 0 = %+v, want %+v", rows[0], want)
	}
	if rows[1].Variant != "mpi-fence" || rows[1].Ranks != 4 {
		t.Errorf("row 1 = %+v", rows[1])
	}
	for _, bad := range []string{
		"pingpong,mpi-send-recv,8,2,100,3,369.4\n",
		"pingpong,mpi-send-recv,8,2,100,3,369.4,360.9,371.6,21.7,false,0.0\n", // without the spread
		"pingpong,mpi-send-recv,eight,2,100,3,369.4,360.9,371.6,21.7,false,0.0,362.6,371.2\n",
		"pingpong,mpi-send-recv,8,2,100,3,x,360.9,371.6,21.7,false,0.0,362.6,371.2\n",
		"pingpong,mpi-send-recv,8,2,100,3,369.4,360.9,371.6,21.7,maybe,0.0,362.6,371.2\n",
		"pingpong,mpi-send-recv,8,2,100,3,369.4,360.9,371.6,21.7,false,0.0,362.6,p90\n",
		",,8,2,100,3,369.4,360.9,371.6,21.7,false,0.0,362.6,371.2\n",
		"mpirun noise on stdout\n",
	} {
		if _, err := ParseMPICSV(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseMPICSV(%q): no error", bad)
		}
	}
}

func TestWithMPIVariants(t *testing.T) {
	e := PingPong()
	rows := []Row{{Experiment: "pingpong", Variant: "send-recv"}, {Experiment: "pingpong", Variant: "mpi-pscw"},
		{Experiment: "pingpong", Variant: "mpi-pscw", Bytes: 64}, {Experiment: "stencil", Variant: "mpi-fence"}}
	got := WithMPIVariants(e, rows)
	if len(got.Variants) != len(e.Variants)+1 || got.Variants[len(e.Variants)].Name != "mpi-pscw" {
		t.Fatalf("variants %v", got.variantNames())
	}
	if got.Variants[len(e.Variants)].Classic {
		t.Error("an MPI variant is Classic")
	}
	if len(PingPong().Variants) != len(e.Variants) {
		t.Error("WithMPIVariants changed the experiment's variants")
	}
}

func TestParseMPIOutput(t *testing.T) {
	out := strings.Join(CSVRowColumns, ",") + "\n" +
		"# config mpi-send-recv two-sided: MPI_Send, MPI_Recv\n" +
		"# config mpi-put-flag one-sided: MPI_Win_allocate_shared; MPI_Put: then a flag\n" +
		"# a comment\n" +
		"pingpong,mpi-send-recv,8,2,100,3,369.4,360.9,371.6,21.7,false,0.0,362.6,371.2\n"
	rows, configs, err := ParseMPIOutput(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []MPIConfig{{Variant: "mpi-send-recv", Calls: "MPI_Send, MPI_Recv"},
		{Variant: "mpi-put-flag", OneSided: true, Calls: "MPI_Win_allocate_shared; MPI_Put: then a flag"}}
	if len(rows) != 1 || !reflect.DeepEqual(configs, want) {
		t.Errorf("rows %+v, configs %+v; want 1 row and %+v", rows, configs, want)
	}
	for _, bad := range []string{
		"# config mpi-put-flag: no kind\n",
		"# config mpi-put-flag sideways: MPI_Put\n",
		"# config put-flag one-sided: not an MPI variant\n",
		"# config mpi-put-flag one-sided:\n",
		"# config mpi-put-flag one-sided no colon\n",
	} {
		if _, _, err := ParseMPIOutput(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseMPIOutput(%q): no error", bad)
		}
	}
}

// TestMPIDescribe: a variant's description names the components of its
// kind in the launch that ran, then its calls.
func TestMPIDescribe(t *testing.T) {
	m := &MPI{OpenMPI: true}
	run := &MPIRun{Launch: m.Launches()[0], Configs: []MPIConfig{
		{Variant: "mpi-send-recv", Calls: "MPI_Send, MPI_Recv"},
		{Variant: "mpi-put-flag", OneSided: true, Calls: "MPI_Win_allocate_shared"}}}
	for v, want := range map[string]string{
		"mpi-send-recv": "pml ob1, btl self,vader; MPI_Send, MPI_Recv",
		"mpi-put-flag":  "osc sm; MPI_Win_allocate_shared",
	} {
		if got, ok := run.Describe(v); !ok || got != want {
			t.Errorf("Describe(%q) = %q, %v; want %q", v, got, ok, want)
		}
	}
	if _, ok := run.Describe("mpi-fence"); ok {
		t.Error("Describe of a variant the program did not describe")
	}
}

// TestMPILaunches: Open MPI is tried first on its fastest components on
// one host, then on its own choice; another MPI on its own choice.
func TestMPILaunches(t *testing.T) {
	ls := (&MPI{OpenMPI: true}).Launches()
	if len(ls) != 2 {
		t.Fatalf("Open MPI: %d launches, want 2: %v", len(ls), ls)
	}
	if got, want := ls[0].String(), "mpirun --mca pml ob1 --mca btl self,vader --mca osc sm"; got != want {
		t.Errorf("first launch %q, want %q", got, want)
	}
	if ls[0].OneSided != "osc sm" || len(ls[1].Args) != 0 {
		t.Errorf("launches %+v", ls)
	}
	if ls := (&MPI{}).Launches(); len(ls) != 1 || len(ls[0].Args) != 0 {
		t.Errorf("another MPI: launches %+v, want one with no arguments", ls)
	}
}

// fakeMPIRun writes a shell script that stands for mpirun: it appends
// its arguments to a log, refuses (fails without output) a launch with
// "--mca osc sm" if refuse is set, and otherwise prints out and exits
// with status. It returns the script's path and reads the log.
func fakeMPIRun(t *testing.T, refuse bool, out string, status int) (string, func() []string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands for mpirun")
	}
	dir := t.TempDir()
	log, data := filepath.Join(dir, "log"), filepath.Join(dir, "out")
	if err := os.WriteFile(data, []byte(out), 0o666); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\n"
	if refuse {
		script += "case \"$*\" in *'--mca osc sm'*) echo 'osc sm: no shared memory' >&2; exit 1;; esac\n"
	}
	script += fmt.Sprintf("cat '%s'\nexit %d\n", data, status)
	run := filepath.Join(dir, "mpirun")
	if err := os.WriteFile(run, []byte(script), 0o777); err != nil {
		t.Fatal(err)
	}
	return run, func() []string {
		b, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// TestMPIFallback: a launch that fails before the program's header is
// refused and the next one runs; a failure after the header is an
// error, with no other launch tried.
func TestMPIFallback(t *testing.T) {
	out := strings.Join(CSVRowColumns, ",") + "\n" +
		"# config mpi-put-flag one-sided: MPI_Win_allocate in MPI_Win_lock_all (MPI_Win_allocate_shared refused)\n" +
		"pingpong,mpi-put-flag,8,2,100,3,369.4,360.9,371.6,21.7,false,0.0,362.6,371.2\n"
	ctx := context.Background()

	exe, calls := fakeMPIRun(t, true, out, 0)
	m := &MPI{Run: exe, OpenMPI: true}
	run, err := m.RunProgram(ctx, "pingpong", 2, []string{"8"})
	if err != nil {
		t.Fatal(err)
	}
	if got := calls(); len(got) != 2 || !strings.Contains(got[0], "--mca osc sm") || strings.Contains(got[1], "--mca") {
		t.Errorf("mpirun ran with %q: want the fastest launch, then the defaults", got)
	}
	if len(run.Refused) != 1 || !strings.Contains(run.Refused[0].Err.Error(), "osc sm: no shared memory") ||
		run.Refused[0].Launch.OneSided != "osc sm" {
		t.Errorf("refused %+v", run.Refused)
	}
	if len(run.Rows) != 1 || len(run.Launch.Args) != 0 {
		t.Errorf("rows %+v from %v", run.Rows, run.Launch)
	}
	if how, _ := run.Describe("mpi-put-flag"); !strings.HasPrefix(how, "Open MPI's default osc; MPI_Win_allocate ") {
		t.Errorf("put-flag ran as %q", how)
	}

	// Refused by every launch: the last one's error.
	exe, calls = fakeMPIRun(t, true, "", 1)
	m = &MPI{Run: exe, OpenMPI: true}
	if _, err := m.RunProgram(ctx, "pingpong", 2, []string{"8"}); err == nil || len(calls()) != 2 {
		t.Errorf("refused twice: error %v after %d launches", err, len(calls()))
	}

	// Failed while measuring: an error at once.
	exe, calls = fakeMPIRun(t, false, out, 1)
	m = &MPI{Run: exe, OpenMPI: true}
	if _, err := m.RunProgram(ctx, "pingpong", 2, []string{"8"}); err == nil || len(calls()) != 1 {
		t.Errorf("failure after the header: error %v after %d launches, want an error after 1", err, len(calls()))
	}
}

// runMPIProgram builds the MPI reference program prog and runs it on np
// ranks at sizes, if mpicc and mpirun are installed; it checks that the
// rows are prog's and that every variant describes how it calls MPI.
func runMPIProgram(t *testing.T, prog string, np int, cfg Config, sizes []int) *MPIRun {
	t.Helper()
	if testing.Short() {
		t.Skip("short")
	}
	m, err := FindMPI()
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := t.TempDir()
	if err := WriteMPISources(src); err != nil {
		t.Fatal(err)
	}
	exe, err := m.Build(ctx, src, t.TempDir(), prog)
	if err != nil {
		t.Fatal(err)
	}
	run, err := m.RunProgram(ctx, exe, np, MPIArgs(cfg, sizes))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Refused {
		t.Logf("refused: %v", r.Err)
	}
	t.Logf("ran with %v", run.Launch)
	for _, r := range run.Rows {
		if r.Experiment != prog || !strings.HasPrefix(r.Variant, MPIPrefix) || !slices.Contains(sizes, r.Bytes) ||
			r.Ranks != np || r.MedianNs <= 0 {
			t.Errorf("bad row %+v", r)
		}
		checkSpread(t, r)
		how, ok := run.Describe(r.Variant)
		if !ok {
			t.Errorf("%s: the program does not say how it calls MPI", r.Variant)
		}
		t.Logf("%s at %d B: %.0f ns; %s", r.Variant, r.Bytes, r.MedianNs, how)
	}
	return run
}

// checkMPIVariants checks that run has one row per variant and size, and
// that mpi-put-flag ran on the fastest one-sided set-up if nothing was
// refused: a window of MPI_Win_allocate_shared, polled locally, and with
// Open MPI osc sm.
func checkMPIVariants(t *testing.T, run *MPIRun, variants []string, sizes []int) {
	t.Helper()
	for _, v := range variants {
		for _, s := range sizes {
			if n := len(slices.DeleteFunc(slices.Clone(run.Rows), func(r Row) bool { return r.Variant != v || r.Bytes != s })); n != 1 {
				t.Errorf("%d rows of %s at %d B, want 1", n, v, s)
			}
		}
	}
	if len(run.Rows) != len(variants)*len(sizes) {
		t.Errorf("%d rows, want %d", len(run.Rows), len(variants)*len(sizes))
	}
	how, _ := run.Describe("mpi-put-flag")
	if len(run.Refused) == 0 && (!strings.Contains(how, "MPI_Win_allocate_shared") || !strings.Contains(how, "local poll")) {
		t.Errorf("mpi-put-flag ran as %q, want a shared window polled locally", how)
	}
	if len(run.Refused) == 0 && len(run.Launch.Args) > 0 && !strings.HasPrefix(how, "osc sm; ") {
		t.Errorf("mpi-put-flag ran as %q under %v, want osc sm", how, run.Launch)
	}
}

// TestMPIPingPong builds and runs the MPI ping-pong at 8 B and 4 KiB, if
// mpicc and mpirun are installed.
func TestMPIPingPong(t *testing.T) {
	sizes := []int{8, 4096}
	run := runMPIProgram(t, "pingpong", 2, Config{Iters: 10, Rounds: 3, Warmup: 2}, sizes)
	checkMPIVariants(t, run, []string{"mpi-send-recv", "mpi-fence", "mpi-pscw", "mpi-put-flag"}, sizes)
}

// TestMPIStencil builds and runs the MPI stencil on 2 and 3 ranks, if
// mpicc and mpirun are installed; the program checks the grid (the PRK
// corner and every value) and aborts if it is wrong.
func TestMPIStencil(t *testing.T) {
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprint(np), func(t *testing.T) {
			sizes := []int{256}
			run := runMPIProgram(t, "stencil", np, Config{Iters: 3, Rounds: 2, Warmup: 1}, sizes)
			checkMPIVariants(t, run, []string{"mpi-send-recv", "mpi-fence", "mpi-pscw", "mpi-put-flag"}, sizes)
		})
	}
}

// TestMPISources: the embedded sources of the MPI reference programs are
// complete: the Makefile builds every program of MPIPrograms from its
// NAME.c, every file a source includes with quotes is there, and
// WriteMPISources writes them all as they are.
func TestMPISources(t *testing.T) {
	want := []string{"Makefile", "README.md", "common.h", "pingpong.c", "stencil.c"}
	entries, err := fs.ReadDir(MPISources, "mpi")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("embedded %v, want %v", names, want)
	}
	read := func(name string) string {
		b, err := MPISources.ReadFile("mpi/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	makefile := read("Makefile")
	include := regexp.MustCompile(`(?m)^#include "([^"]+)"`)
	for exp, prog := range MPIPrograms {
		if _, ok := Lookup(exp); !ok {
			t.Errorf("MPIPrograms names %q, no experiment", exp)
		}
		src := read(prog + ".c")
		rule := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prog) + `:(.*)$`).FindStringSubmatch(makefile)
		if rule == nil || !slices.Contains(strings.Fields(rule[1]), prog+".c") {
			t.Errorf("the Makefile has no rule %q from %s.c", prog, prog)
		}
		if all := regexp.MustCompile(`(?m)^all:(.*)$`).FindStringSubmatch(makefile); all == nil || !slices.Contains(strings.Fields(all[1]), prog) {
			t.Errorf("the Makefile's all does not build %s", prog)
		}
		for _, m := range include.FindAllStringSubmatch(src, -1) {
			if !slices.Contains(names, m[1]) {
				t.Errorf("%s.c includes %q, not embedded", prog, m[1])
			}
			if rule != nil && !slices.Contains(strings.Fields(rule[1]), m[1]) {
				t.Errorf("the Makefile's rule of %s does not depend on %s", prog, m[1])
			}
		}
		// The program prints the columns ParseMPICSV takes.
		if !strings.Contains(read("common.h"), strings.Join(CSVRowColumns, ",")) {
			t.Errorf("common.h does not print the header %s", strings.Join(CSVRowColumns, ","))
		}
	}
	dir := t.TempDir()
	if err := WriteMPISources(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != read(name) {
			t.Errorf("written %s: %v, or not as embedded", name, err)
		}
	}
}
