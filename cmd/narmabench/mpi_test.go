package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/narma-rma/narma/internal/bench"
)

// TestMPISkipped checks that --mpi without mpicc and mpirun on PATH says
// so in one line and still runs the experiment.
func TestMPISkipped(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	status, out, errs := narmabench("pingpong", "--mpi", "--sizes", "8", "--iters", "5", "--rounds", "1", "--variants", "send-recv")
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, errs)
	}
	if strings.Count(errs, mpiSkipped) != 1 {
		t.Errorf("stderr %q: want the line %q once", errs, mpiSkipped)
	}
	if !strings.Contains(out, "send-recv") || strings.Contains(out, "mpi-") {
		t.Errorf("table:\n%s", out)
	}
}

// fakeMPI puts on PATH an mpicc that makes an empty file and an mpirun
// that says it is Open MPI's, refuses the launch on osc sm without output
// (as on ranks of several hosts) and otherwise prints a ping-pong's
// header, configurations and rows at 8 B, whatever it runs.
func fakeMPI(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell scripts stand for mpicc and mpirun")
	}
	dir := t.TempDir()
	out := strings.Join(bench.CSVRowColumns, ",") + "\n" +
		"# config mpi-send-recv two-sided: MPI_Send, MPI_Recv\n" +
		"# config mpi-put-flag one-sided: MPI_Win_allocate in MPI_Win_lock_all (MPI_Win_allocate_shared refused)\n" +
		"pingpong,mpi-send-recv,8,2,5,1,369.4,360.9,371.6,21.7,false,0.0,362.6,371.2\n" +
		"pingpong,mpi-put-flag,8,2,5,1,469.4,460.9,471.6,17.0,false,0.0,462.6,471.2\n"
	if err := os.WriteFile(filepath.Join(dir, "out"), []byte(out), 0o666); err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{
		"mpicc": "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then : > \"$2\"; fi; shift; done\n",
		"mpirun": "#!/bin/sh\ncase \"$*\" in\n" +
			"--version) echo 'mpirun (Open MPI) 4.1.4'; exit 0;;\n" +
			"*'--mca osc sm'*) echo 'There are not enough slots: osc sm refused' >&2; exit 1;;\n" +
			"esac\ncat '" + filepath.Join(dir, "out") + "'\n",
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestMPIConfigSaid: --mpi says on stderr which launch was refused and
// why, which ran, and how each MPI variant ran; the table has the MPI
// rows and their ratio to put-notify.
func TestMPIConfigSaid(t *testing.T) {
	fakeMPI(t)
	status, out, errs := narmabench("pingpong", "--mpi", "--sizes", "8", "--iters", "5", "--rounds", "1", "--variants", "put-notify")
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, errs)
	}
	for _, want := range []string{
		"narmabench: MPI reference pingpong: mpirun --mca pml ob1 --mca btl self,vader --mca osc sm refused (",
		"There are not enough slots: osc sm refused",
		"narmabench: MPI reference pingpong: mpirun with the MPI's defaults\n",
		"narmabench:   mpi-send-recv: Open MPI's default pml and btl; MPI_Send, MPI_Recv\n",
		"narmabench:   mpi-put-flag: Open MPI's default osc; MPI_Win_allocate in MPI_Win_lock_all (MPI_Win_allocate_shared refused)\n",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	for _, want := range []string{"mpi-send-recv", "mpi-put-flag", "best MPI variant / narma's put-notify"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// runWithMPI runs narmabench with --mpi and args if mpicc and mpirun are
// installed, and checks that the table has narma's put-notify, every
// MPI variant and their ratio, and that stderr says how each MPI
// variant ran, mpi-put-flag on a shared window polled locally unless a
// launch was refused.
func runWithMPI(t *testing.T, args ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("short")
	}
	if _, err := bench.FindMPI(); err != nil {
		t.Skip(err)
	}
	status, out, errs := narmabench(append(args, "--mpi")...)
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, errs)
	}
	t.Logf("table:\n%s\nstderr:\n%s", out, errs)
	for _, v := range []string{"put-notify", "mpi-send-recv", "mpi-fence", "mpi-pscw", "mpi-put-flag", "best MPI variant / narma's put-notify"} {
		if !strings.Contains(out, v) {
			t.Errorf("table lacks %q", v)
		}
		if strings.HasPrefix(v, "mpi-") && !strings.Contains(errs, "narmabench:   "+v+": ") {
			t.Errorf("stderr does not say how %s ran", v)
		}
	}
	if !strings.Contains(errs, "refused") && !strings.Contains(errs, "MPI_Win_allocate_shared (alloc_shared_noncontig) in MPI_Win_lock_all") {
		t.Errorf("mpi-put-flag did not run on a shared window, and no launch was refused")
	}
}

func TestMPIPingPongRun(t *testing.T) {
	runWithMPI(t, "pingpong", "--sizes", "8", "--iters", "20", "--rounds", "3", "--variants", "put-notify,send-recv")
}

func TestMPIStencilRun(t *testing.T) {
	runWithMPI(t, "stencil", "-n", "2", "--sizes", "256", "--iters", "3", "--rounds", "2", "--variants", "put-notify,send-recv")
}
