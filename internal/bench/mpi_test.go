package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseMPICSV(t *testing.T) {
	good := strings.Join(CSVHeader, ",") + "\n\n# comment\n" +
		"pingpong,mpi-send-recv,8,2,100,3,369.4,360.9,371.6,21.7,false,0.0\n" +
		"stencil,mpi-fence,256,4,50,3,275951.9,249291.9,377017.0,0.9,false,0.0\n"
	rows, err := ParseMPICSV(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(rows))
	}
	want := Row{Experiment: "pingpong", Variant: "mpi-send-recv", Bytes: 8, Ranks: 2, Iters: 100, Rounds: 3,
		MedianNs: 369.4, MinNs: 360.9, MaxNs: 371.6, MBps: 21.7}
	if rows[0] != want {
		t.Errorf("row 0 = %+v, want %+v", rows[0], want)
	}
	if rows[1].Variant != "mpi-fence" || rows[1].Ranks != 4 {
		t.Errorf("row 1 = %+v", rows[1])
	}
	for _, bad := range []string{
		"pingpong,mpi-send-recv,8,2,100,3,369.4\n",
		"pingpong,mpi-send-recv,eight,2,100,3,369.4,360.9,371.6,21.7,false,0.0\n",
		"pingpong,mpi-send-recv,8,2,100,3,x,360.9,371.6,21.7,false,0.0\n",
		"pingpong,mpi-send-recv,8,2,100,3,369.4,360.9,371.6,21.7,maybe,0.0\n",
		",,8,2,100,3,369.4,360.9,371.6,21.7,false,0.0\n",
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
	src, err := MPISourceDir(ctx)
	if err != nil {
		t.Skip(err)
	}
	exe, err := m.Build(ctx, src, t.TempDir(), "pingpong")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := m.RunProgram(ctx, exe, 2, MPIArgs(Config{Iters: 10, Rounds: 2, Warmup: 2}, []int{8}))
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
	}
}
