// Command narmabench runs the experiments of the Notified Access papers
// over narma and prints their results as a table, optionally also as CSV
// or JSON.
//
//	narmabench list                         # the experiments and their variants
//	narmabench pingpong --quick             # ranks as goroutines in this process
//	narmarun -n 2 narmabench pingpong       # ranks as processes, under the launcher
//
// By default the ranks of the job are goroutines of this process (over the
// in-process transport, or the one NARMA_TRANSPORT selects). Started by
// narmarun, every process is one rank of the launcher's job, and rank 0
// prints the results. Flags of `narmabench pingpong`:
//
//	-n N          ranks (default 2; pingpong needs exactly 2)
//	--sizes LIST  message sizes, e.g. 8,64,1K,1M (K, M, G: binary units)
//	--variants L  variants to measure, e.g. put-notify,send-recv
//	--iters N     round trips per round (default: by size)
//	--rounds N    measured rounds; the table shows the median
//	--strategy S  windows' synchronization: default, immediate or deferred
//	--quick       a short run: fewer round trips and rounds
//	--csv FILE    also write the rows as CSV ("-": to stdout, instead of the table)
//	--json FILE   also write the rows as JSON ("-": to stdout, instead of the table)
//	--timeout D   give up after D (default 10m)
//
// Every variant checks that each message arrived intact and fails the run
// otherwise. The exit status is 0 on success, 1 if the run failed and 2
// for bad usage.
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
