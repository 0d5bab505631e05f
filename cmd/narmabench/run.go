package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/bench"
	"github.com/narma-rma/narma/internal/bootstrap"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError is an error of the command line's making (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// run is the command: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "list":
		list(stdout)
		return exitOK
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	e, ok := bench.Lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "narmabench: no experiment %q (see narmabench list)\n", args[0])
		return exitUsage
	}
	o, err := parseFlags(e, args[1:], stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "narmabench %s: %v\n", e.Name, err)
		return exitUsage
	}
	if err := runExperiment(ctx, e, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "narmabench %s: %v\n", e.Name, err)
		if ue := (*usageError)(nil); errors.As(err, &ue) {
			return exitUsage
		}
		return exitFail
	}
	return exitOK
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: narmabench list")
	fmt.Fprintln(w, "       narmabench EXPERIMENT [flags]   (narmabench EXPERIMENT -h for its flags)")
	fmt.Fprintln(w, "       narmarun -n N narmabench EXPERIMENT [flags]")
}

// list writes the experiments and their variants.
func list(w io.Writer) {
	for _, e := range bench.Experiments() {
		ranks := "any number of ranks"
		if e.Ranks > 0 {
			ranks = fmt.Sprintf("%d ranks", e.Ranks)
		}
		fmt.Fprintf(w, "%s: %s; %s\n", e.Name, e.Summary, ranks)
		for _, v := range e.Variants {
			fmt.Fprintf(w, "  %-12s %s\n", v.Label(), v.Summary)
		}
	}
}

// options are the parsed flags of an experiment.
type options struct {
	ranks    int
	ranksSet bool
	cfg      bench.Config
	csv      string
	json     string
	timeout  time.Duration
}

// parseFlags parses the flags of experiment e.
func parseFlags(e bench.Experiment, args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("narmabench "+e.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	defRanks := e.Ranks
	if defRanks == 0 {
		defRanks = 2
	}
	fs.IntVar(&o.ranks, "n", defRanks, "number of ranks (as goroutines; under narmarun, the launcher's)")
	sizes := fs.String("sizes", "", "message sizes, comma-separated, with optional K, M, G suffixes (default 8,64,512,4K,32K,256K,1M)")
	variants := fs.String("variants", "", "variants to measure, comma-separated (default all; see narmabench list)")
	fs.IntVar(&o.cfg.Iters, "iters", 0, "round trips per round (default: by size)")
	fs.IntVar(&o.cfg.Rounds, "rounds", 0, fmt.Sprintf("measured rounds (default %d)", bench.DefaultRounds))
	strategy := fs.String("strategy", "default", "synchronization strategy of the windows: default (the transport's), immediate or deferred")
	quick := fs.Bool("quick", false, "a short run: fewer round trips and rounds")
	fs.StringVar(&o.csv, "csv", "", "write the rows as CSV to `file` (- for stdout)")
	fs.StringVar(&o.json, "json", "", "write the rows as JSON to `file` (- for stdout)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "stop the run after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w", err) // the flag package has printed it with the usage
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { o.ranksSet = o.ranksSet || f.Name == "n" })
	if o.ranks < 1 {
		return o, fmt.Errorf("-n %d: need at least one rank", o.ranks)
	}
	if e.Ranks > 0 && o.ranks != e.Ranks {
		return o, fmt.Errorf("-n %d: %s needs exactly %d ranks", o.ranks, e.Name, e.Ranks)
	}
	if *sizes != "" {
		s, err := bench.ParseSizes(*sizes)
		if err != nil {
			return o, fmt.Errorf("--sizes: %w", err)
		}
		o.cfg.Sizes = s
	}
	if *variants != "" {
		for _, v := range strings.Split(*variants, ",") {
			o.cfg.Variants = append(o.cfg.Variants, strings.TrimSpace(v))
		}
	}
	switch *strategy {
	case "default":
		o.cfg.Strategy = narma.StrategyDefault
	case "immediate":
		o.cfg.Strategy = narma.Immediate
	case "deferred":
		o.cfg.Strategy = narma.Deferred
	default:
		return o, fmt.Errorf("--strategy %q: want default, immediate or deferred", *strategy)
	}
	if *quick {
		if o.cfg.Rounds == 0 {
			o.cfg.Rounds = 5
		}
		if o.cfg.Iters == 0 {
			o.cfg.Iters = 50
		}
	}
	if o.cfg.Iters < 0 {
		return o, fmt.Errorf("--iters %d: must not be negative", o.cfg.Iters)
	}
	if o.cfg.Rounds < 0 {
		return o, fmt.Errorf("--rounds %d: must not be negative", o.cfg.Rounds)
	}
	if err := e.Check(o.cfg); err != nil {
		return o, err
	}
	if o.csv != "" && o.csv == o.json && o.csv != "-" {
		return o, fmt.Errorf("--csv and --json name the same file %q", o.csv)
	}
	return o, nil
}

// runExperiment runs e as a job (goroutine ranks, or this process's rank
// under the launcher) and, on rank 0, writes the results.
func runExperiment(ctx context.Context, e bench.Experiment, o options, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	progress := newProgress(stderr)
	o.cfg.Progress = progress.show
	rows, root, err := runJob(ctx, e, o)
	progress.clear()
	if err != nil || !root {
		return err
	}
	if o.csv != "-" && o.json != "-" {
		if err := bench.WriteTable(stdout, e, rows); err != nil {
			return err
		}
	}
	if err := writeFile(o.csv, stdout, func(w io.Writer) error { return bench.WriteCSV(w, rows) }); err != nil {
		return fmt.Errorf("--csv: %w", err)
	}
	if err := writeFile(o.json, stdout, func(w io.Writer) error { return bench.WriteJSON(w, rows) }); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}

// runJob runs e on every rank of the job and returns rank 0's rows; root
// reports whether this process holds rank 0. Under the launcher this
// process is one rank; otherwise the ranks are goroutines.
func runJob(ctx context.Context, e bench.Experiment, o options) (rows []bench.Row, root bool, err error) {
	_, launched, err := bootstrap.FromEnv()
	if err != nil {
		return nil, false, err
	}
	if !launched {
		var mu sync.Mutex
		err := narma.RunContext(ctx, o.ranks, func(c *narma.Comm) error {
			r, err := e.Run(c, o.cfg)
			if c.Rank() == 0 {
				mu.Lock()
				rows = r
				mu.Unlock()
			}
			return err
		})
		return rows, true, err
	}
	c, err := narma.Init(ctx)
	if err != nil {
		return nil, false, err
	}
	if e.Ranks > 0 && c.Size() != e.Ranks || o.ranksSet && c.Size() != o.ranks {
		c.Close()
		return nil, false, &usageError{fmt.Sprintf("the launcher's job has %d ranks, %s needs %d", c.Size(), e.Name, max(e.Ranks, o.ranks))}
	}
	// The job's context ends with the job; ctx's end (timeout, Ctrl-C)
	// ends the run through the launcher, which stops every rank.
	rows, err = e.Run(c, o.cfg)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return rows, c.Rank() == 0, err
}

// writeFile writes with write to the file named name: nothing if name is
// empty, stdout if it is "-".
func writeFile(name string, stdout io.Writer, write func(io.Writer) error) error {
	switch name {
	case "":
		return nil
	case "-":
		return write(stdout)
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// progress shows one line of progress on stderr when stderr is a
// terminal, and nothing otherwise.
type progress struct {
	w     io.Writer
	shown bool
}

func newProgress(stderr io.Writer) *progress {
	f, ok := stderr.(*os.File)
	if !ok {
		return &progress{}
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return &progress{}
	}
	return &progress{w: stderr}
}

func (p *progress) show(msg string) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s", msg)
	p.shown = true
}

func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
