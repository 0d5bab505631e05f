package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/bench"
	"github.com/narma-rma/narma/internal/transport/join"
)

// runAllCommand is `narmabench all`: it returns the exit status. The
// usage and the usage errors go to ustderr (see run).
func runAllCommand(ctx context.Context, args []string, stdout, stderr, ustderr io.Writer) int {
	es := bench.Experiments()
	o, err := parseFlags("all", es, args, ustderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		if err != errPrinted {
			fmt.Fprintf(ustderr, "narmabench all: %v\n", err)
		}
		return exitUsage
	}
	err = runAll(ctx, es, o, stdout, stderr)
	return exitStatus("narmabench all", err, stderr, ustderr)
}

// allJob runs the experiments of `all` one after the other, as goroutine
// ranks or as this process's rank of the launcher's job.
type allJob struct {
	o        options
	comm     *narma.Comm // under the launcher; nil for goroutine ranks
	progress *progress
}

// ranks returns the number of ranks e runs with over goroutines.
func (j *allJob) ranks(e bench.Experiment) int {
	if e.Ranks > 0 {
		return e.Ranks
	}
	return j.o.ranks
}

// skip returns why e does not fit the launcher's job or the sizes of
// the command line, or "". Every rank of the job comes to the same
// answer.
func (j *allJob) skip(e bench.Experiment) string {
	ranks := j.ranks(e)
	if j.comm != nil {
		ranks = j.comm.Size()
		switch {
		case e.Ranks > 0 && ranks != e.Ranks:
			return fmt.Sprintf("needs %d ranks, the job has %d", e.Ranks, ranks)
		case e.Ranks == 0 && ranks < 2:
			return fmt.Sprintf("needs at least 2 ranks, the job has %d", ranks)
		}
	}
	if err := e.CheckSizes(j.o.cfg, ranks); err != nil {
		return err.Error()
	}
	return ""
}

// run runs e, the n-th of the of experiments that run (for the
// progress line), on every rank
// and returns rank 0's rows.
func (j *allJob) run(ctx context.Context, e bench.Experiment, n, of int) ([]bench.Row, error) {
	cfg := j.o.cfg
	cfg.Progress = func(msg string) { j.progress.show(fmt.Sprintf("experiment %d of %d: %s", n, of, msg)) }
	if j.o.sound {
		cfg.Variants = nil
		for _, v := range e.Variants {
			if !v.Unsound {
				cfg.Variants = append(cfg.Variants, v.Name)
			}
		}
	}
	defer j.progress.clear()
	if j.comm != nil {
		return e.Run(j.comm, cfg)
	}
	var rows []bench.Row
	var mu sync.Mutex
	err := narma.RunContext(ctx, j.ranks(e), func(c *narma.Comm) error {
		r, err := e.Run(c, cfg)
		if c.Rank() == 0 {
			mu.Lock()
			rows = r
			mu.Unlock()
		}
		return err
	})
	return rows, err
}

// runAll runs every experiment of es that fits the job and the sizes (a
// quick run unless the flags say otherwise; the others are skipped with
// a line on stderr), writes each one's table as it ends, then the
// summary of the ratios of the best classic variant to put-notify, and
// the files of --csv, --json and --plot with the rows of every
// experiment.
func runAll(ctx context.Context, es []bench.Experiment, o options, stdout, stderr io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	meta, err := jobMeta(o)
	if err != nil {
		return err
	}
	j := &allJob{o: o, progress: newProgress(stderr, o)}
	env, launched, err := join.Describe()
	if err != nil {
		return err
	}
	root := true
	if launched {
		// Checked before joining, as the flags are (see run).
		if o.ranksSet && env.Size != o.ranks {
			return &usageError{fmt.Sprintf("the launcher's job has %d ranks, -n says %d", env.Size, o.ranks)}
		}
		c, err := narma.Init(ctx)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := c.Close(); err == nil {
				err = cerr
			}
		}()
		j.comm, root = c, c.Rank() == 0
	}
	tables := root && o.csv != "-" && o.json != "-"
	if tables {
		fmt.Fprintf(stdout, "%s\n\n", meta.Describe())
	}
	if o.mpi && root {
		if _, err := bench.FindMPI(); err != nil {
			fmt.Fprintln(stderr, mpiSkipped) // once, not per experiment
			o.mpi = false
		}
	}
	var all []bench.Row
	var ratios []bench.Ratio
	type plotted struct {
		e    bench.Experiment
		rows []bench.Row
	}
	var plots []plotted
	of, n := 0, 0
	for _, e := range es {
		if j.skip(e) == "" {
			of++
		}
	}
	for _, e := range es {
		if why := j.skip(e); why != "" {
			if root {
				fmt.Fprintf(stderr, "narmabench all: skipping %s: %s\n", e.Name, why)
			}
			continue
		}
		n++
		rows, err := j.run(ctx, e, n, of)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name, err)
		}
		if !root {
			continue
		}
		if o.mpi {
			mrows, err := runMPI(ctx, e, o, j.ranks(e), stderr)
			if err != nil {
				return fmt.Errorf("%s: %w", e.Name, err)
			}
			rows = append(rows, mrows...)
			e = bench.WithMPIVariants(e, rows)
		}
		if tables {
			if err := bench.WriteTable(stdout, e, rows); err != nil {
				return err
			}
			fmt.Fprintln(stdout)
		}
		all = append(all, rows...)
		ratios = append(ratios, bench.Summarize(e, rows)...)
		plots = append(plots, plotted{e, rows})
	}
	if !root {
		return nil
	}
	if tables {
		if err := bench.WriteSummary(stdout, ratios); err != nil {
			return err
		}
	}
	if err := writeRows(o, stdout, meta, all); err != nil {
		return err
	}
	if o.plot != "" {
		for _, p := range plots {
			if len(p.rows) == 0 {
				continue
			}
			file := plotFile(o.plot, p.e)
			if err := os.MkdirAll(filepath.Dir(file), 0o777); err != nil {
				return fmt.Errorf("--plot: %w", err)
			}
			if err := bench.WritePlot(file, p.e, p.rows); err != nil {
				return fmt.Errorf("--plot: %w", err)
			}
		}
	}
	return nil
}
