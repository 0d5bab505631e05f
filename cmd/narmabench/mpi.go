package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/narma-rma/narma/internal/bench"
)

// mpiSkipped is the line --mpi prints on stderr when there is no MPI.
const mpiSkipped = "narmabench: MPI not found (mpicc/mpirun): skipping the MPI reference programs"

// runMPI runs the MPI reference program of e, for --mpi: it writes the
// sources that narmabench carries (bench.MPISources) into a temporary
// directory, compiles the program there with mpicc, runs it with mpirun
// on ranks ranks with o's sizes, iterations, rounds and warm-up, removes
// the directory, and returns the program's rows, whose variants begin
// with "mpi-". It says on stderr how the program ran (see writeMPIRun).
// Without mpicc or mpirun it says so in one line on stderr and returns
// no rows; if e has no reference program it returns none.
func runMPI(ctx context.Context, e bench.Experiment, o options, ranks int, stderr io.Writer) ([]bench.Row, error) {
	prog, ok := bench.MPIPrograms[e.Name]
	if !ok {
		return nil, nil
	}
	m, err := bench.FindMPI()
	if errors.Is(err, bench.ErrNoMPI) {
		fmt.Fprintln(stderr, mpiSkipped)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "narmabench-mpi-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := bench.WriteMPISources(dir); err != nil {
		return nil, fmt.Errorf("MPI reference: %w", err)
	}
	exe, err := m.Build(ctx, dir, dir, prog)
	if err != nil {
		return nil, err
	}
	sizes := o.cfg.Sizes
	if len(sizes) == 0 {
		sizes = bench.DefaultSizes
		if e.Name == "stencil" {
			sizes = bench.DefaultStencilSizes
		}
	}
	run, err := m.RunProgram(ctx, exe, ranks, bench.MPIArgs(o.cfg, sizes))
	if err != nil {
		return nil, fmt.Errorf("MPI reference: %w", err)
	}
	writeMPIRun(stderr, e.Name, run)
	return run.Rows, nil
}

// writeMPIRun says on w how the MPI reference program of experiment ran:
// the launches the MPI refused and why (MPIRefusal.Reason),
// the launch that ran, and for each variant of the rows the components
// that served it and the calls it made, e.g.
//
//	narmabench: MPI reference pingpong: mpirun --mca pml ob1 --mca btl self,vader --mca osc sm
//	narmabench:   mpi-put-flag: osc sm; MPI_Win_allocate_shared ...
//
// The table, CSV and JSON name the variants only; this says what they
// were.
func writeMPIRun(w io.Writer, experiment string, run *bench.MPIRun) {
	for _, r := range run.Refused {
		fmt.Fprintf(w, "narmabench: MPI reference %s: %s refused (%s); falling back\n", experiment, r.Launch, r.Reason())
	}
	fmt.Fprintf(w, "narmabench: MPI reference %s: %s\n", experiment, run.Launch)
	var seen []string
	for _, row := range run.Rows {
		if slices.Contains(seen, row.Variant) {
			continue
		}
		seen = append(seen, row.Variant)
		how, ok := run.Describe(row.Variant)
		if !ok {
			how = "the program did not say"
		}
		fmt.Fprintf(w, "narmabench:   %s: %s\n", row.Variant, how)
	}
}
