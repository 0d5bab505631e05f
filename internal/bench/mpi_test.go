package bench

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
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

// TestMPIPingPong builds and runs the MPI ping-pong at 8 B, if mpicc and
// mpirun are installed.
func TestMPIPingPong(t *testing.T) {
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
	exe, err := m.Build(ctx, src, t.TempDir(), "pingpong")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := m.RunProgram(ctx, exe, 2, MPIArgs(Config{Iters: 10, Rounds: 3, Warmup: 2}, []int{8}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("got %d rows, want 4: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if r.Experiment != "pingpong" || !strings.HasPrefix(r.Variant, MPIPrefix) || r.Bytes != 8 || r.Ranks != 2 || r.MedianNs <= 0 {
			t.Errorf("bad row %+v", r)
		}
		checkSpread(t, r)
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
