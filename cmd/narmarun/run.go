package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
	"github.com/narma-rma/narma/internal/transport/registry"
)

// Exit statuses of narmarun besides a rank's own, which it passes on
// unchanged. Its own failures are 125, as for timeout(1) and env(1), not
// 1 or 2: those are what ranks exit with (1 for an error, 2 for a Go
// panic), and must not be mistaken for them.
const (
	exitFailure   = 125 // narmarun or the bootstrap failed
	exitUsage     = 125 // bad command line
	exitTimeout   = 124 // --timeout expired, as timeout(1)
	exitCannotRun = 126 // the program exists but cannot be run
	exitNotFound  = 127 // the program does not exist
	exitSignal    = 128 // plus a signal number
)

// transports lists the transports narmarun can set up: those the
// registry knows how to join.
func transports() []string {
	return registry.Names(func(t registry.Transport) bool { return t.Join != nil })
}

// tcpListen is the address the ranks of a tcp job on this host alone
// listen on. The ranks of a job on several hosts listen on "auto": the
// interface through which they reach the bootstrap server.
const tcpListen = "127.0.0.1:0"

// config is what the command line asks for.
type config struct {
	n         int
	timeout   time.Duration
	grace     time.Duration
	tag       bool
	transport string
	// network is the transport's registry.Transport.Network: its ranks
	// listen on TCP, and take the TCP settings below.
	network bool
	// hosts are those of --hosts or --hostfile (nil: every rank on this
	// host, which is not a multi-host job); hostOf is the host of each
	// rank, an index in hosts.
	hosts  []host
	hostOf []int
	// launcher is the remote-start agent and its arguments (--launcher);
	// bootstrapAddr is --bootstrap-addr.
	launcher      []string
	bootstrapAddr string
	// peerTimeout is the tcp transport's peer timeout, from
	// NARMA_TCP_TIMEOUT in narmarun's environment (0: the default).
	peerTimeout time.Duration
	// spin is how long the tcp transport's readers poll, from
	// NARMA_TCP_SPIN (as bootstrap.Env.Spin: 0 for the transport's
	// choice, negative for none).
	spin    time.Duration
	verbose bool
	program string
	args    []string
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
	var hostList, hostfile, launcher string
	fs.IntVar(&cfg.n, "n", 0, "number of ranks to start (at least 1; required without --hosts or --hostfile,\nwhose slots it defaults to)")
	fs.DurationVar(&cfg.timeout, "timeout", 0, "stop the job after `duration` and exit with status 124 (0: no limit)")
	fs.DurationVar(&cfg.grace, "grace", 2*time.Second, "time between SIGTERM and SIGKILL when stopping the ranks")
	fs.BoolVar(&cfg.tag, "tag-output", false, `prefix each line of the ranks' output with "[rank] " ("[rank@host] " with --hosts)`)
	fs.StringVar(&cfg.transport, "transport", "", "transport between the ranks, by `name`: shm (shared memory, Linux only; the default\non one host), tcp (connections authenticated with a fresh secret per job), or hybrid\n(shared memory between the ranks of a host, tcp between hosts; the default when ranks\nrun on other hosts)")
	fs.StringVar(&hostList, "hosts", "", "run the ranks on these hosts, `host[:slots],...` (slots default to 1), in blocks:\nranks 0 to slots-1 on the first host, and so on")
	fs.StringVar(&hostfile, "hostfile", "", "read the hosts from `file`: one host[:slots] per line, # starts a comment")
	fs.StringVar(&launcher, "launcher", "ssh", "remote-start agent, run as `command` host env VAR=value... program args;\nits arguments, if any, separated by spaces")
	fs.StringVar(&cfg.bootstrapAddr, "bootstrap-addr", "", "with ranks on other hosts, listen for them on `ip:port` (default: the address\nof the interface towards the first other host, port 0)")
	fs.BoolVar(&cfg.verbose, "v", false, "report the job id, the ranks' pids and hosts and stale segments removed, on stderr")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: narmarun -n N [flags] program [args...]\n"+
			"       narmarun --hosts host[:slots],... [-n N] [flags] program [args...]\n\n"+
			"Starts N processes of program, the ranks of one narma job, on this host or on\n"+
			"the hosts listed. Flags (-flag or --flag) end at the program name; what follows\n"+
			"goes to the program.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nRanks on this host (localhost, 127.0.0.1 or its hostname) start directly, the\n"+
			"others through the launcher agent, which must pass its standard input on (the\n"+
			"job secret goes that way, never on a command line); the program must be at the\n"+
			"same path on every host. Each rank gets %s, the index of its host in the list.\n"+
			"\nWith --transport tcp or hybrid, %s in narmarun's environment, if set, is\n"+
			"the peer timeout: how long a silent rank is waited for (a duration, e.g. 30s);\n"+
			"%s, if set, how long a rank's reader polls its socket before it waits (a\n"+
			"duration, e.g. 50us; 0: never; unset: while the ranks of a host each have a core).\n",
			bootstrap.EnvHost, bootstrap.EnvTCPTimeout, bootstrap.EnvTCPSpin)
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
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	switch {
	case set["hosts"] && set["hostfile"]:
		return usage("--hosts and --hostfile exclude each other")
	case set["hosts"]:
		cfg.hosts, err = parseHosts(hostList)
	case set["hostfile"]:
		cfg.hosts, err = readHostfile(hostfile)
	}
	if err != nil {
		return usage("%v", err)
	}
	if cfg.hosts != nil && !set["n"] {
		for _, h := range cfg.hosts {
			cfg.n += h.slots
		}
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
	case set["transport"] && !slices.Contains(transports(), cfg.transport):
		return usage("unknown transport %q (supported: %s)", cfg.transport, strings.Join(transports(), ", "))
	}
	if cfg.hosts != nil {
		if cfg.hostOf, err = place(cfg.hosts, cfg.n); err != nil {
			return usage("%v", err)
		}
	}
	if cfg.launcher = strings.Fields(launcher); len(cfg.launcher) == 0 {
		return usage("--launcher is empty")
	}
	if cfg.bootstrapAddr != "" {
		if host, _, err := net.SplitHostPort(cfg.bootstrapAddr); err != nil || host == "" {
			return usage("--bootstrap-addr %q is not ip:port", cfg.bootstrapAddr)
		}
	}
	switch {
	case cfg.transport == "" && cfg.remote():
		cfg.transport = "hybrid"
	case cfg.transport == "":
		cfg.transport = "shm"
	}
	t, _ := registry.Lookup(cfg.transport)
	if t.OneHost && cfg.remote() {
		return usage("--transport %s needs every rank on this host; ranks on other hosts need %s", cfg.transport,
			strings.Join(registry.Names(func(t registry.Transport) bool { return t.Join != nil && !t.OneHost }), " or "))
	}
	cfg.network = t.Network
	if v := os.Getenv(bootstrap.EnvTCPTimeout); v != "" && cfg.network {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return usage("%s=%q is not a duration of at least 0 (such as 30s)", bootstrap.EnvTCPTimeout, v)
		}
		cfg.peerTimeout = d
	}
	if v := os.Getenv(bootstrap.EnvTCPSpin); v != "" && cfg.network {
		d, err := bootstrap.ParseSpin(v)
		if err != nil {
			return usage("%v", err)
		}
		cfg.spin = d
	}
	cfg.program, cfg.args = fs.Arg(0), fs.Args()[1:]
	return cfg, 0, true
}

// remote reports whether some ranks run on other hosts.
func (cfg *config) remote() bool {
	for _, h := range cfg.hostOf {
		if !cfg.hosts[h].local {
			return true
		}
	}
	return false
}

// ranksOn returns the number of ranks on host h.
func (cfg *config) ranksOn(h int) int {
	n := 0
	for r := range cfg.n {
		if cfg.host(r) == h {
			n++
		}
	}
	return n
}

// isRemote reports whether rank r runs on another host.
func (cfg *config) isRemote(r int) bool {
	return cfg.hosts != nil && !cfg.hosts[cfg.hostOf[r]].local
}

// host returns the index of rank r's host in the list (0 without one).
func (cfg *config) host(r int) int {
	if cfg.hosts == nil {
		return 0
	}
	return cfg.hostOf[r]
}
