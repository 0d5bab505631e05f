package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/narma-rma/narma/internal/bench"
)

// mpiSkipped is the line --mpi prints on stderr when there is no MPI.
const mpiSkipped = "narmabench: MPI not found (mpicc/mpirun): skipping the MPI reference programs"

// runMPI runs the MPI reference program of e, for --mpi: it writes the
// sources that narmabench carries (bench.MPISources) into a temporary
// directory, compiles the program there with mpicc, runs it with mpirun
// on ranks ranks with o's sizes, iterations, rounds and warm-up, removes
// the directory, and returns the program's rows, whose variants begin
// with "mpi-". Without mpicc or mpirun it says so in one line on stderr
// and returns no rows; if e has no reference program it returns none.
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
	rows, err := m.RunProgram(ctx, exe, ranks, bench.MPIArgs(o.cfg, sizes))
	if err != nil {
		return nil, fmt.Errorf("MPI reference: %w", err)
	}
	return rows, nil
}
