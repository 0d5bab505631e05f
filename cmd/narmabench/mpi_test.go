package main

import (
	"strings"
	"testing"
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
