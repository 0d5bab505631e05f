package bench

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// MPIPrefix begins the names of the variants measured by the MPI
// reference programs (see MPISources), e.g. "mpi-send-recv".
const MPIPrefix = "mpi-"

// MPIPrograms maps the experiments that have an MPI reference program to
// the program's name in MPISources (its source is NAME.c).
var MPIPrograms = map[string]string{"pingpong": "pingpong", "stencil": "stencil"}

// ErrNoMPI is returned by FindMPI when mpicc or mpirun is not on PATH.
var ErrNoMPI = errors.New("MPI not found (mpicc/mpirun)")

// ParseMPICSV parses the output of an MPI reference program: CSV lines in
// the column order of CSVRowColumns. The header line, empty lines and lines
// beginning with '#' are skipped; any other line that is not a row, e.g.
// with a wrong number of fields or a bad number, is an error.
func ParseMPICSV(r io.Reader) ([]Row, error) {
	rows, _, err := ParseMPIOutput(r)
	return rows, err
}

// MPIConfig is how a variant of an MPI reference program calls MPI, as
// the program says in a line "# config VARIANT KIND: CALLS" after its
// header, KIND being "two-sided" or "one-sided".
type MPIConfig struct {
	Variant  string // e.g. "mpi-put-flag"
	OneSided bool
	Calls    string // e.g. "MPI_Win_allocate_shared ...; MPI_Put of the data, ..."
}

// ParseMPIOutput is ParseMPICSV that also returns the configurations
// the program printed. A "# config" line that does not name a variant
// beginning with MPIPrefix and its kind is an error.
func ParseMPIOutput(r io.Reader) ([]Row, []MPIConfig, error) {
	var rows []Row
	var configs []MPIConfig
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	header := strings.Join(CSVRowColumns, ",")
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(text, "# config "); ok {
			c, err := parseMPIConfig(rest)
			if err != nil {
				return nil, nil, fmt.Errorf("MPI output line %d %q: %w", line, text, err)
			}
			configs = append(configs, c)
			continue
		}
		if text == "" || text == header || strings.HasPrefix(text, "#") {
			continue
		}
		rec, err := csv.NewReader(strings.NewReader(text)).Read()
		if err != nil {
			return nil, nil, fmt.Errorf("MPI output line %d: %w", line, err)
		}
		row, err := parseMPIRecord(rec)
		if err != nil {
			return nil, nil, fmt.Errorf("MPI output line %d %q: %w", line, text, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	return rows, configs, nil
}

// parseMPIConfig parses what follows "# config " on a line.
func parseMPIConfig(s string) (MPIConfig, error) {
	head, calls, ok := strings.Cut(s, ": ")
	f := strings.Fields(head)
	if !ok || len(f) != 2 || !strings.HasPrefix(f[0], MPIPrefix) || strings.TrimSpace(calls) == "" {
		return MPIConfig{}, errors.New(`want "# config VARIANT KIND: CALLS"`)
	}
	c := MPIConfig{Variant: f[0], Calls: strings.TrimSpace(calls)}
	switch f[1] {
	case "one-sided":
		c.OneSided = true
	case "two-sided":
	default:
		return MPIConfig{}, fmt.Errorf("kind %q: want one-sided or two-sided", f[1])
	}
	return c, nil
}

func parseMPIRecord(rec []string) (Row, error) {
	cols := CSVRowColumns
	if len(rec) != len(cols) {
		return Row{}, fmt.Errorf("%d fields, want %d (%s)", len(rec), len(cols), strings.Join(cols, ","))
	}
	r := Row{Experiment: rec[0], Variant: rec[1]}
	if r.Experiment == "" || r.Variant == "" {
		return Row{}, errors.New("empty experiment or variant")
	}
	ints := []*int{&r.Bytes, &r.Ranks, &r.Iters, &r.Rounds}
	for i, p := range ints {
		v, err := strconv.Atoi(rec[2+i])
		if err != nil || v < 0 {
			return Row{}, fmt.Errorf("%s: bad count %q", cols[2+i], rec[2+i])
		}
		*p = v
	}
	floats := []struct {
		col int
		p   *float64
	}{{6, &r.MedianNs}, {7, &r.MinNs}, {8, &r.MaxNs}, {9, &r.MBps}, {12, &r.P10Ns}, {13, &r.P90Ns}}
	for _, f := range floats {
		v, err := strconv.ParseFloat(rec[f.col], 64)
		if err != nil || v < 0 {
			return Row{}, fmt.Errorf("%s: bad number %q", cols[f.col], rec[f.col])
		}
		*f.p = v
	}
	u, err := strconv.ParseBool(rec[10])
	if err != nil {
		return Row{}, fmt.Errorf("unsound: bad boolean %q", rec[10])
	}
	r.Unsound = u
	if r.OverlapPct, err = strconv.ParseFloat(rec[11], 64); err != nil {
		return Row{}, fmt.Errorf("overlap_pct: bad number %q", rec[11])
	}
	return r, nil
}

// WithMPIVariants returns e with a Variant appended for every variant of
// the rows of e that begins with MPIPrefix and that e does not know, in
// the rows' order, so that WriteTable and WritePlot show them. They are
// not Classic: the ratios of the tables stay between narma's variants.
func WithMPIVariants(e Experiment, rows []Row) Experiment {
	vs := slices.Clone(e.Variants)
	for _, r := range rows {
		if r.Experiment != e.Name || !strings.HasPrefix(r.Variant, MPIPrefix) ||
			slices.ContainsFunc(vs, func(v Variant) bool { return v.Name == r.Variant }) {
			continue
		}
		vs = append(vs, Variant{Name: r.Variant, Unsound: r.Unsound,
			Summary: "the MPI reference program (internal/bench/mpi) for " + strings.TrimPrefix(r.Variant, MPIPrefix)})
	}
	e.Variants = vs
	return e
}

// MPI is an installed MPI: the paths of its compiler wrapper and
// launcher.
type MPI struct {
	CC, Run string
	// OpenMPI reports whether mpirun is Open MPI's, which needs
	// --allow-run-as-root and --oversubscribe to run as root or on more
	// ranks than cores.
	OpenMPI bool
}

// FindMPI looks for mpicc and mpirun on PATH; it returns ErrNoMPI if
// either is missing.
func FindMPI() (*MPI, error) {
	cc, err1 := exec.LookPath("mpicc")
	run, err2 := exec.LookPath("mpirun")
	if err1 != nil || err2 != nil {
		return nil, ErrNoMPI
	}
	m := &MPI{CC: cc, Run: run}
	out, _ := exec.Command(run, "--version").CombinedOutput()
	m.OpenMPI = bytes.Contains(bytes.ToLower(out), []byte("open mpi")) || bytes.Contains(out, []byte("OpenRTE"))
	return m, nil
}

// MPISources holds the C sources of the MPI reference programs, the
// directory mpi beside this file (Makefile, common.h, pingpong.c,
// stencil.c and a README), so that an installed narmabench has them
// without the checkout. WriteMPISources writes them out for mpicc.
//
//go:embed mpi/Makefile mpi/README.md mpi/*.h mpi/*.c
var MPISources embed.FS

// WriteMPISources writes the files of MPISources into the directory dir,
// which must exist: dir is then a source directory for Build.
func WriteMPISources(dir string) error {
	files, err := fs.ReadDir(MPISources, "mpi")
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := MPISources.ReadFile(path.Join("mpi", f.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name()), b, 0o666); err != nil {
			return err
		}
	}
	return nil
}

// Build compiles the program prog (e.g. "pingpong") of the source
// directory src with mpicc -O2 into the directory out and returns the
// executable's path.
func (m *MPI) Build(ctx context.Context, src, out, prog string) (string, error) {
	exe := filepath.Join(out, prog)
	cmd := exec.CommandContext(ctx, m.CC, "-O2", "-o", exe, filepath.Join(src, prog+".c"))
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mpicc %s.c: %w\n%s", prog, err, b)
	}
	return exe, nil
}

// MPIArgs returns the command-line arguments of a reference program for
// cfg at sizes: -i ITERS -r ROUNDS -w WARMUP SIZE...
func MPIArgs(cfg Config, sizes []int) []string {
	rounds := cfg.rounds()
	args := []string{"-i", strconv.Itoa(cfg.Iters), "-r", strconv.Itoa(rounds), "-w", strconv.Itoa(cfg.Warmup)}
	for _, s := range sizes {
		args = append(args, strconv.Itoa(s))
	}
	return args
}

// MPILaunch is a way to start the reference programs with mpirun: the
// arguments it adds before the program's, and the components of the MPI
// that they select for each kind of variant.
type MPILaunch struct {
	// Args are mpirun's arguments, e.g. "--mca", "pml", "ob1"; none
	// leaves the choice to the MPI.
	Args []string
	// TwoSided and OneSided name what serves the two-sided variants
	// (mpi-send-recv) and the one-sided ones, e.g. "pml ob1, btl
	// self,vader" and "osc sm".
	TwoSided, OneSided string
}

// String returns the launch as a command, "mpirun ARGS", or "mpirun with
// the MPI's defaults".
func (l MPILaunch) String() string {
	if len(l.Args) == 0 {
		return "mpirun with the MPI's defaults"
	}
	return "mpirun " + strings.Join(l.Args, " ")
}

// Launches returns the ways RunProgram tries, fastest first. With Open
// MPI, first its fastest components on one host: pml ob1 over btl self
// and vader (shared memory) for messages, and osc sm alone for windows,
// so that every window of the programs is osc sm's, and the flag window
// (see common.h) one of MPI_Win_allocate_shared polled with loads; then
// Open MPI's own choice, the configuration of earlier versions, for a
// job osc sm or vader cannot serve (ranks on several hosts). Another
// MPI runs with its defaults.
func (m *MPI) Launches() []MPILaunch {
	defaults := MPILaunch{TwoSided: "the MPI's default components", OneSided: "the MPI's default components"}
	if !m.OpenMPI {
		return []MPILaunch{defaults}
	}
	defaults.TwoSided, defaults.OneSided = "Open MPI's default pml and btl", "Open MPI's default osc"
	return []MPILaunch{
		{Args: []string{"--mca", "pml", "ob1", "--mca", "btl", "self,vader", "--mca", "osc", "sm"},
			TwoSided: "pml ob1, btl self,vader", OneSided: "osc sm"},
		defaults,
	}
}

// MPIRun is what RunProgram returns: the rows of the program, and how
// they were measured.
type MPIRun struct {
	Rows []Row
	// Launch is the launch the rows come from.
	Launch MPILaunch
	// Refused are the faster launches tried before it, each with why it
	// failed.
	Refused []MPIRefusal
	// Configs are how the program's variants call MPI, in its order.
	Configs []MPIConfig
}

// MPIRefusal is a launch that failed before its program began to
// measure, and the error.
type MPIRefusal struct {
	Launch MPILaunch
	// Err is mpirun's failure, with the MPI's error output; Stderr is
	// that output alone.
	Err    error
	Stderr string
}

// Reason returns why the launch failed in one line: the first line of
// the MPI's error output with words in it (Open MPI frames its messages
// with lines of dashes), else the first line of Err.
func (r MPIRefusal) Reason() string {
	for line := range strings.Lines(r.Stderr) {
		if line = strings.TrimSpace(line); strings.ContainsFunc(line, unicode.IsLetter) {
			return line
		}
	}
	first, _, _ := strings.Cut(r.Err.Error(), "\n")
	return first
}

// Describe returns how variant ran in r: the components of its kind in
// r.Launch, then its calls, e.g. "osc sm; MPI_Win_allocate_shared ...";
// false if the program did not say.
func (r *MPIRun) Describe(variant string) (string, bool) {
	for _, c := range r.Configs {
		if c.Variant == variant {
			comp := r.Launch.TwoSided
			if c.OneSided {
				comp = r.Launch.OneSided
			}
			return comp + "; " + c.Calls, true
		}
	}
	return "", false
}

// RunProgram runs the executable exe on np ranks with mpirun and returns
// its rows and how it ran. It tries the launches of m.Launches in turn:
// a run that fails before the program printed its CSV header (which it
// does once its windows exist) is a launch the MPI refused, and the next
// one is tried; a run that fails after it is an error, as is the last
// launch's refusal. With Open MPI it adds --allow-run-as-root when
// running as root and --oversubscribe when np exceeds the cores.
func (m *MPI) RunProgram(ctx context.Context, exe string, np int, args []string) (*MPIRun, error) {
	run := &MPIRun{}
	launches := m.Launches()
	for i, l := range launches {
		stdout, stderr, err := m.launch(ctx, l, exe, np, args)
		if err == nil {
			run.Launch = l
			run.Rows, run.Configs, err = ParseMPIOutput(bytes.NewReader(stdout))
			if err != nil {
				return nil, err
			}
			return run, nil
		}
		began := bytes.Contains(stdout, []byte(strings.Join(CSVRowColumns, ",")))
		if began || i == len(launches)-1 || ctx.Err() != nil {
			return nil, err
		}
		run.Refused = append(run.Refused, MPIRefusal{Launch: l, Err: err, Stderr: stderr})
	}
	panic("bench: no MPI launch") // Launches returns at least one
}

// launch runs exe once with l and returns its standard output and
// error output.
func (m *MPI) launch(ctx context.Context, l MPILaunch, exe string, np int, args []string) ([]byte, string, error) {
	margs := slices.Clone(l.Args)
	margs = append(margs, "-np", strconv.Itoa(np))
	if m.OpenMPI {
		if os.Geteuid() == 0 {
			margs = append(margs, "--allow-run-as-root")
		}
		if os.Geteuid() == 0 || np > runtime.NumCPU() {
			margs = append(margs, "--oversubscribe")
		}
	}
	margs = append(margs, exe)
	margs = append(margs, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, m.Run, margs...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), stderr.String(), fmt.Errorf("%s %s: %w\n%s", l, filepath.Base(exe), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), stderr.String(), nil
}
