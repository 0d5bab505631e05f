// Command narmabench runs the experiments of the Notified Access papers
// over narma and prints their results as a table, optionally also as CSV
// or JSON.
//
//	narmabench list                         # the experiments and their variants
//	narmabench pingpong --quick             # ranks as goroutines in this process
//	narmarun -n 2 narmabench pingpong       # ranks as processes, under the launcher
//	narmabench all --plot plots/            # a quick run of every experiment, a summary, plots
//
// By default the ranks of the job are goroutines of this process (over the
// in-process transport, or the one NARMA_TRANSPORT selects). Started by
// narmarun, every process is one rank of the launcher's job, and rank 0
// prints the results; so too under srun, mpirun or mpiexec, with the
// rendezvous variables narma.Init needs there. Flags of `narmabench
// pingpong`:
//
//	-n N          ranks (default 2; pingpong needs exactly 2)
//	--sizes LIST  message sizes, e.g. 8,64,1K,1M (K, M, G: binary units)
//	--variants L  variants to measure, e.g. put-notify,send-recv
//	--iters N     round trips per round (default: by size)
//	--rounds N    measured rounds (default 15, 5 with --quick); the table
//	              shows the median and the widest spread, the CSV and JSON
//	              every row's median, 10th and 90th percentiles, minimum
//	              and maximum
//	--warmup N    warm-up operations per size (default: by size; negative: none)
//	--budget D    time budget of each variant's rounds at each size (default
//	              10s; 0: none; with --iters, none unless given): a variant
//	              whose warm-up says it would take longer runs fewer
//	              operations per round, at least one; its rows say how many
//	              and a line under the table names it
//	--strategy S  windows' synchronization: default, immediate or deferred
//	--quick       a short run: 50 round trips per round, 5 rounds
//	--csv FILE    also write the rows as CSV ("-": to stdout, instead of the table)
//	--json FILE   also write the rows as JSON ("-": to stdout, instead of the table)
//	--plot FILE   also plot the rows: median time against size, one line per variant
//	              (the format follows the extension: .svg or .png)
//	--mpi         also run the MPI reference program (pingpong, stencil):
//	              narmabench carries its C sources, writes them to a temporary
//	              directory, builds them there with mpicc, runs them with mpirun
//	              and removes the directory; without mpicc or mpirun, one line
//	              on stderr says they are skipped
//	--timeout D   give up after D (default 10m)
//
// A line above the table says whether the ranks were goroutines of this
// process or processes (under which launcher), the transport, the
// strategy and the commit; the table's title says the experiment's ranks.
// On a terminal, stderr shows the progress of the run in one line that
// is rewritten as it goes: the time since the start, the experiment, the
// size (and how many), the round, and an estimate of the time left at
// this size; not with --csv - or --json -, nor when stderr is not a
// terminal.
//
// The CSV and JSON also describe the run (see bench.Meta): the transport
// (under narmarun the launcher's, shm, tcp or hybrid; over goroutines the
// in-process one NARMA_TRANSPORT selects, local if unset), the launcher
// (narmarun, slurm, openmpi, mpich or none), the strategy, the job's ranks, the commit of the
// build (+dirty if the tree had changes; for a build without VCS
// information, such as -buildvcs=false, git's commit of the module's tree
// if narmabench runs inside it), the Go version, GOOS, GOARCH,
// the number of CPUs, GOMAXPROCS and the date (RFC 3339). The JSON is one
// object, {"meta": {...}, "rows": [...]} (earlier versions wrote the bare
// array of rows; bench.ReadJSON reads both); the CSV repeats the metadata in
// columns after the row's on every line (transport, launcher, strategy,
// job_ranks, commit, go_version, goos, goarch, num_cpu, gomaxprocs, date),
// so that it stays one table for any CSV reader and the rows of several
// runs stay apart when their files are put together. Columns added since
// the first version (p10_ns, p90_ns, then the metadata) come after the
// earlier ones, which keep their places.
//
// `narmabench all` runs every experiment one after the other, quickly by
// default (5 rounds of 50 operations; --quick=false for the experiments'
// defaults), prints each
// table as it ends and then a summary: per experiment and size, the ratio
// of the best classic variant to put-notify (above 1: notified access is
// faster). It takes the flags above but --variants, and:
//
//	-n N          ranks of the experiments that take any number (default 4);
//	              the others run with the ranks they need
//	--sound       leave out the unsound variants (the lower bounds)
//	--csv, --json the rows of every experiment, in one file
//	--plot DIR/   one plot per experiment, DIR/EXPERIMENT.svg (DIR: an existing
//	              directory, or a name ending in /, which is created)
//	--plot P.EXT  one plot per experiment, P-EXPERIMENT.EXT (P/.EXT: P/EXPERIMENT.EXT)
//
// Under narmarun, `all` runs the experiments that fit the job's number of
// ranks and skips the others with a line on stderr. It skips the same way
// the experiments that cannot take the sizes of --sizes (the stencil's
// rows need two columns per rank, LogGP two distinct sizes) and runs the
// rest.
//
// Every variant checks that each message arrived intact and fails the run
// otherwise. The exit status is 0 on success, 1 if the run failed and 2
// for bad usage. Under narmarun every rank checks the command line, and
// rank 0 alone prints the usage, the list of experiments or what is
// wrong with the command line (the other ranks exit with status 2 too).
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	status := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(status)
}
