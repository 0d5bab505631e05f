package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
)

// Exit statuses of narmarun besides a rank's own.
const (
	exitFailure   = 1   // narmarun or the bootstrap failed
	exitUsage     = 2   // bad command line
	exitTimeout   = 124 // --timeout expired, as timeout(1)
	exitCannotRun = 126 // the program exists but cannot be run
	exitNotFound  = 127 // the program does not exist
	exitSignal    = 128 // plus a signal number
)

// transports lists the transports narmarun can set up.
var transports = []string{"shm", "tcp"}

// tcpListen is the address the ranks of a tcp job listen on: narmarun
// starts them all on this host.
const tcpListen = "127.0.0.1:0"

// config is what the command line asks for.
type config struct {
	n         int
	timeout   time.Duration
	grace     time.Duration
	tag       bool
	transport string
	// peerTimeout is the tcp transport's peer timeout, from
	// NARMA_TCP_TIMEOUT in narmarun's environment (0: the default).
	peerTimeout time.Duration
	verbose     bool
	program     string
	args        []string
}

// run is narmarun with its command-line arguments (without the command
// name); it returns the exit status. Canceling ctx stops the job as a
// signal does (see interruptStatus).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, status, ok := parseArgs(args, stderr)
	if !ok {
		return status
	}
	return launch(ctx, cfg, stdout, stderr)
}

// parseArgs parses the command line. When it returns ok false, narmarun
// must exit with status; it has printed why.
func parseArgs(args []string, stderr io.Writer) (cfg config, status int, ok bool) {
	fs := flag.NewFlagSet("narmarun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.n, "n", 0, "number of ranks to start (required, at least 1)")
	fs.DurationVar(&cfg.timeout, "timeout", 0, "stop the job after `duration` and exit with status 124 (0: no limit)")
	fs.DurationVar(&cfg.grace, "grace", 2*time.Second, "time between SIGTERM and SIGKILL when stopping the ranks")
	fs.BoolVar(&cfg.tag, "tag-output", false, `prefix each line of the ranks' output with "[rank] "`)
	fs.StringVar(&cfg.transport, "transport", "shm", "transport between the ranks, by `name`: shm (shared memory, Linux only)\nor tcp (loopback connections authenticated with a fresh secret per job)")
	fs.BoolVar(&cfg.verbose, "v", false, "report the job id, the ranks' pids and stale segments removed, on stderr")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: narmarun -n N [flags] program [args...]\n\n"+
			"Starts N processes of program, the ranks of one narma job. Flags (-flag or\n"+
			"--flag) end at the program name; what follows goes to the program.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nWith --transport tcp, %s in narmarun's environment, if set, is\n"+
			"the peer timeout: how long a silent rank is waited for (a duration, e.g. 30s).\n", bootstrap.EnvTCPTimeout)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, 0, false
		}
		return cfg, exitUsage, false // flag has printed the error and the usage
	}
	usage := func(format string, args ...any) (config, int, bool) {
		fmt.Fprintf(stderr, "narmarun: "+format+"\n", args...)
		fs.Usage()
		return cfg, exitUsage, false
	}
	switch {
	case fs.NArg() == 0:
		return usage("no program to run")
	case cfg.n < 1:
		return usage("-n must be at least 1 (got %d)", cfg.n)
	case cfg.timeout < 0:
		return usage("--timeout must not be negative (got %v)", cfg.timeout)
	case cfg.grace < 0:
		return usage("--grace must not be negative (got %v)", cfg.grace)
	case !slices.Contains(transports, cfg.transport):
		return usage("unknown transport %q (supported: %s)", cfg.transport, strings.Join(transports, ", "))
	}
	if v := os.Getenv(bootstrap.EnvTCPTimeout); v != "" && cfg.transport == "tcp" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return usage("%s=%q is not a duration of at least 0 (such as 30s)", bootstrap.EnvTCPTimeout, v)
		}
		cfg.peerTimeout = d
	}
	cfg.program, cfg.args = fs.Arg(0), fs.Args()[1:]
	return cfg, 0, true
}
