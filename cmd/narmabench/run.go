package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/bench"
	"github.com/narma-rma/narma/internal/transport/join"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// errPrinted is parseFlags's error for a command line that the flag
// package has already reported, with the usage.
var errPrinted = errors.New("bad flags")

// usageError is an error of the command line's making (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// run is the command: it returns the exit status.
//
// Under narmarun every rank runs the same command line, and rank 0 alone
// prints the usage, the list and what is wrong with the command line
// (the ranks find it before they join the job). The other ranks keep
// what they would print, and on a usage error wait for narmarun to stop
// them (see waitStopped) before they exit with status 2 too.
// extraCommands are commands that builds with a build tag add (fabric):
// they get the arguments after their name and return the exit status.
var extraCommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rank := launchedRank()
	if rank <= 0 {
		return command(ctx, args, stdout, stderr, stdout, stderr)
	}
	var said bytes.Buffer
	status := command(ctx, args, stdout, stderr, io.Discard, &said)
	if status == exitUsage && !waitStopped(ctx, usageGrace) {
		stderr.Write(said.Bytes())
	}
	return status
}

// command is run with the usage, the list and the usage errors written
// to ustdout and ustderr.
func command(ctx context.Context, args []string, stdout, stderr, ustdout, ustderr io.Writer) int {
	if len(args) == 0 {
		usage(ustderr)
		return exitUsage
	}
	switch args[0] {
	case "list":
		list(ustdout)
		return exitOK
	case "help", "-h", "-help", "--help":
		usage(ustdout)
		return exitOK
	case "all":
		return runAllCommand(ctx, args[1:], stdout, stderr, ustderr)
	}
	if f, ok := extraCommands[args[0]]; ok {
		return f(ctx, args[1:], stdout, stderr)
	}
	e, ok := bench.Lookup(args[0])
	if !ok {
		fmt.Fprintf(ustderr, "narmabench: no experiment %q (see narmabench list)\n", args[0])
		return exitUsage
	}
	o, err := parseFlags(e.Name, []bench.Experiment{e}, args[1:], ustderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		if err != errPrinted {
			fmt.Fprintf(ustderr, "narmabench %s: %v\n", e.Name, err)
		}
		return exitUsage
	}
	err = runExperiment(ctx, e, o, stdout, stderr)
	return exitStatus("narmabench "+e.Name, err, stderr, ustderr)
}

// exitStatus says what err is, if anything, on stderr (on ustderr for a
// usage error) with prefix, and returns the exit status for it.
func exitStatus(prefix string, err error, stderr, ustderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if ue := (*usageError)(nil); errors.As(err, &ue) {
		fmt.Fprintf(ustderr, "%s: %v\n", prefix, err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
	return exitFail
}

// launchedRank returns this process's rank in the job of the launcher
// that started it (narmarun, or srun, mpirun, mpiexec: see narma.Init),
// read from the environment as runJob and runAll read it before they
// join the job, or -1 if no launcher started this process (or its
// variables are amiss: runJob and runAll then say so).
func launchedRank() int {
	env, ok, err := join.Describe()
	if !ok || err != nil {
		return -1
	}
	return env.Rank
}

// usageGrace is how long a rank other than 0 waits, after a usage error,
// for narmarun to stop it. Tests shorten it.
var usageGrace = 10 * time.Second

// waitStopped waits for narmarun to stop this process (SIGTERM), or for
// ctx to end (SIGINT), for at most grace; it reports whether either came.
//
// A rank other than 0 that ends on a usage error leaves it to rank 0 to
// say what is wrong. Were it to exit at once, narmarun would stop the
// other ranks, rank 0 among them, possibly before rank 0 has said it; so
// it waits for rank 0 to exit, with the same status, and narmarun to
// stop the job. If that does not come within grace, rank 0 did not find
// the command line wrong (one host sees a file that another does not,
// say), and the rank says what is wrong itself.
func waitStopped(ctx context.Context, grace time.Duration) bool {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-term:
		return true
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: narmabench list")
	fmt.Fprintln(w, "       narmabench EXPERIMENT [flags]   (narmabench EXPERIMENT -h for its flags)")
	fmt.Fprintln(w, "       narmabench all [flags]          (a quick run of every experiment, and a summary)")
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

// The rounds and operations per round of a quick run (--quick), unless
// --rounds or --iters say otherwise.
const (
	quickRounds = 5
	quickIters  = 50
)

// defaultBudget is the default of --budget: at the default rounds, an
// iteration of up to about 1 ms runs the iterations the experiment
// chooses by size; a slower variant (alltoall's flags with more ranks
// than cores took 5 ms per iteration, over a minute per size) is cut.
const defaultBudget = 10 * time.Second

// options are the parsed flags of an experiment.
type options struct {
	ranks    int
	ranksSet bool
	cfg      bench.Config
	csv      string
	json     string
	plot     string
	sound    bool
	mpi      bool
	timeout  time.Duration
}

// parseFlags parses the flags of the command name, which runs the
// experiments es: one experiment, or every one for `all`. For `all` the
// default is a quick run on 4 ranks (for the experiments that take any
// number of ranks) and there is no --variants flag.
func parseFlags(name string, es []bench.Experiment, args []string, stderr io.Writer) (options, error) {
	all := name == "all"
	fs := flag.NewFlagSet("narmabench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	defRanks := 2
	if all {
		defRanks = 4
	} else if es[0].Ranks > 0 {
		defRanks = es[0].Ranks
	}
	ranksHelp := "number of ranks (as goroutines; under narmarun, the launcher's)"
	if all {
		ranksHelp = "number of ranks of the experiments that take any number (as goroutines; under narmarun, the launcher's)"
	}
	fs.IntVar(&o.ranks, "n", defRanks, ranksHelp)
	sizesHelp := "message sizes, comma-separated, with optional K, M, G suffixes (default: the experiment's)"
	if !all && es[0].Name == "pingpong" {
		sizesHelp = "message sizes, comma-separated, with optional K, M, G suffixes (default 8,64,512,4K,32K,256K,1M)"
	}
	sizes := fs.String("sizes", "", sizesHelp)
	variants := new(string)
	if !all {
		variants = fs.String("variants", "", "variants to measure, comma-separated (default all; see narmabench list)")
	}
	// The defaults of --iters and --rounds depend on --quick, which is
	// parsed with them: the help says both (0 stands for "not set").
	itersHelp := fmt.Sprintf("operations per round (default: by size; %d with --quick)", quickIters)
	roundsHelp := fmt.Sprintf("measured rounds (default %d; %d with --quick)", bench.DefaultRounds, quickRounds)
	if all {
		itersHelp = fmt.Sprintf("operations per round (default %d, as all runs quickly; by size with --quick=false)", quickIters)
		roundsHelp = fmt.Sprintf("measured rounds (default %d, as all runs quickly; %d with --quick=false)", quickRounds, bench.DefaultRounds)
	}
	fs.IntVar(&o.cfg.Iters, "iters", 0, itersHelp)
	fs.IntVar(&o.cfg.Warmup, "warmup", 0, "warm-up operations per size before the measured rounds (default: by size; negative: none)")
	fs.IntVar(&o.cfg.Rounds, "rounds", 0, roundsHelp)
	fs.DurationVar(&o.cfg.Budget, "budget", defaultBudget,
		"time budget of each variant's measured rounds at each size: a variant whose warm-up says it would take longer runs fewer operations per round, and the table names it (0: no budget; with --iters, none unless --budget is given)")
	strategy := fs.String("strategy", "default", "synchronization strategy of the windows: default (the transport's), immediate or deferred")
	quick := fs.Bool("quick", all, "a short run: fewer operations and rounds")
	fs.StringVar(&o.csv, "csv", "", "write the rows as CSV to `file` (- for stdout)")
	fs.StringVar(&o.json, "json", "", "write the rows as JSON to `file` (- for stdout)")
	plotHelp := "write a plot of the rows to `file` (.svg or .png)"
	if all {
		plotHelp = "write a plot per experiment: into `dir` (existing, or ending in /) as EXPERIMENT.svg, or for PREFIX.EXT as PREFIX-EXPERIMENT.EXT (EXT: .svg or .png)"
	}
	fs.StringVar(&o.plot, "plot", "", plotHelp)
	if all {
		fs.BoolVar(&o.sound, "sound", false, "leave out the unsound variants (the lower bounds that are not correct RMA programs)")
	}
	if all || es[0].Name == "pingpong" || es[0].Name == "stencil" {
		fs.BoolVar(&o.mpi, "mpi", false, "also run the MPI reference programs (pingpong, stencil; C sources built into narmabench) with mpicc and mpirun, if installed")
	}
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "stop the run after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, errPrinted // the flag package has printed it with the usage
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.ranksSet = set["n"]
	if set["iters"] && !set["budget"] {
		o.cfg.Budget = 0 // the operations the user asked for
	}
	if o.ranks < 1 {
		return o, fmt.Errorf("-n %d: need at least one rank", o.ranks)
	}
	if all && o.ranks < 2 {
		return o, fmt.Errorf("-n %d: the experiments need at least 2 ranks", o.ranks)
	}
	if !all && es[0].Ranks > 0 && o.ranks != es[0].Ranks {
		return o, fmt.Errorf("-n %d: %s needs exactly %d ranks", o.ranks, es[0].Name, es[0].Ranks)
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
			o.cfg.Rounds = quickRounds
		}
		if o.cfg.Iters == 0 {
			o.cfg.Iters = quickIters
		}
	}
	if o.cfg.Budget < 0 {
		return o, fmt.Errorf("--budget %v: must not be negative", o.cfg.Budget)
	}
	if o.cfg.Iters < 0 {
		return o, fmt.Errorf("--iters %d: must not be negative", o.cfg.Iters)
	}
	if o.cfg.Rounds < 0 {
		return o, fmt.Errorf("--rounds %d: must not be negative", o.cfg.Rounds)
	}
	for _, e := range es {
		if err := e.Check(o.cfg); err != nil {
			return o, err
		}
	}
	if o.csv != "" && o.csv == o.json && o.csv != "-" {
		return o, fmt.Errorf("--csv and --json name the same file %q", o.csv)
	}
	if o.plot != "" {
		if err := checkPlot(o.plot, all); err != nil {
			return o, err
		}
	}
	return o, nil
}

// checkPlot checks the --plot argument: a file with a plot format's
// extension; for all, also a directory.
func checkPlot(name string, all bool) error {
	if all && isPlotDir(name) {
		return nil
	}
	if ext := strings.ToLower(filepath.Ext(name)); !slices.Contains(bench.PlotFormats, ext) {
		if all {
			return fmt.Errorf("--plot %q: want a directory or a name ending in %s", name, strings.Join(bench.PlotFormats, " or "))
		}
		return fmt.Errorf("--plot %q: want a file name ending in %s", name, strings.Join(bench.PlotFormats, " or "))
	}
	return nil
}

// isPlotDir reports whether the --plot argument of all names a
// directory: one that exists, or a name ending in a separator.
func isPlotDir(name string) bool {
	if strings.HasSuffix(name, "/") || strings.HasSuffix(name, string(filepath.Separator)) {
		return true
	}
	st, err := os.Stat(name)
	return err == nil && st.IsDir()
}

// plotFile returns the file of experiment e's plot for the --plot
// argument name of all: DIR/EXPERIMENT.svg for a directory,
// PREFIX-EXPERIMENT.EXT for PREFIX.EXT (EXPERIMENT.EXT if PREFIX is
// empty or a directory, as in "plots/.png").
func plotFile(name string, e bench.Experiment) string {
	if isPlotDir(name) {
		return filepath.Join(name, e.Name+".svg")
	}
	ext := filepath.Ext(name)
	prefix := strings.TrimSuffix(name, ext)
	if prefix == "" || strings.HasSuffix(prefix, "/") || strings.HasSuffix(prefix, string(filepath.Separator)) {
		return prefix + e.Name + ext
	}
	return prefix + "-" + e.Name + ext
}

// runExperiment runs e as a job (goroutine ranks, or this process's rank
// under the launcher) and, on rank 0, writes the results.
func runExperiment(ctx context.Context, e bench.Experiment, o options, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	meta, err := jobMeta(o)
	if err != nil {
		return err
	}
	progress := newProgress(stderr, o)
	o.cfg.Progress = progress.show
	rows, root, err := runJob(ctx, e, o)
	progress.clear()
	if err != nil || !root {
		return err
	}
	if o.mpi {
		ranks := o.ranks
		if e.Ranks > 0 {
			ranks = e.Ranks
		}
		mrows, err := runMPI(ctx, e, o, ranks, stderr)
		if err != nil {
			return err
		}
		rows = append(rows, mrows...)
		e = bench.WithMPIVariants(e, rows)
	}
	if o.csv != "-" && o.json != "-" {
		fmt.Fprintln(stdout, meta.Describe())
		if err := bench.WriteTable(stdout, e, rows); err != nil {
			return err
		}
	}
	if err := writeRows(o, stdout, meta, rows); err != nil {
		return err
	}
	if o.plot != "" {
		if err := bench.WritePlot(o.plot, e, rows); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	return nil
}

// runJob runs e on every rank of the job and returns rank 0's rows; root
// reports whether this process holds rank 0. Under the launcher this
// process is one rank; otherwise the ranks are goroutines.
func runJob(ctx context.Context, e bench.Experiment, o options) (rows []bench.Row, root bool, err error) {
	env, launched, err := join.Describe()
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
	// Checked before joining, as the flags are (see run).
	if e.Ranks > 0 && env.Size != e.Ranks || o.ranksSet && env.Size != o.ranks {
		return nil, false, &usageError{fmt.Sprintf("the launcher's job has %d ranks, %s needs %d", env.Size, e.Name, max(e.Ranks, o.ranks))}
	}
	c, err := narma.Init(ctx)
	if err != nil {
		return nil, false, err
	}
	// The job's context ends with the job; ctx's end (timeout, Ctrl-C)
	// ends the run through the launcher, which stops every rank.
	rows, err = e.Run(c, o.cfg)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return rows, c.Rank() == 0, err
}

// writeRows writes meta and rows to the --csv and --json files of o, if
// any.
func writeRows(o options, stdout io.Writer, meta bench.Meta, rows []bench.Row) error {
	if err := writeFile(o.csv, stdout, func(w io.Writer) error { return bench.WriteCSV(w, meta, rows) }); err != nil {
		return fmt.Errorf("--csv: %w", err)
	}
	if err := writeFile(o.json, stdout, func(w io.Writer) error { return bench.WriteJSON(w, meta, rows) }); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
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

// progress shows one line of progress on stderr, rewritten as the run
// goes: the time since the start, the experiment, the size and the
// round, with an estimate of the time left at this size. It shows
// nothing when stderr is not a terminal (under narmarun with
// --tag-output, in a pipe or a file) or when the rows go to stdout
// (--csv - or --json -), where the table would have been.
type progress struct {
	w     io.Writer
	start time.Time
	shown bool
}

func newProgress(stderr io.Writer, o options) *progress {
	if o.csv == "-" || o.json == "-" || !isTerminal(stderr) {
		return &progress{}
	}
	return &progress{w: stderr, start: time.Now()}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progress) show(msg string) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K[%v] %s", time.Since(p.start).Round(time.Second), msg)
	p.shown = true
}

func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
