package bench

import (
	"context"
	"os"
	"runtime"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
)

// Pacing of poll's looks.
const (
	pollYields    = 64                    // looks followed by a yield at least
	pollYieldTime = 50 * time.Microsecond // time the looks are followed by a yield at least
	pollClockLook = 8                     // the look after which poll starts its clock
	pollSleep     = time.Microsecond      // pause between the later looks
)

// poll calls look until it reports done or fails, and returns look's
// error, or ctx's if ctx ends first (the variants' polling calls do not
// block, so they do not see the job's end themselves).
//
// Between the first 64 looks, and for 50 µs, poll only yields
// (runtime.Gosched), which keeps a short wait short; after that it
// sleeps for a microsecond between looks, parking the goroutine. A
// goroutine that only yields is always runnable, so with one processor
// per rank (GOMAXPROCS=1, as narmarun gives each rank of a host with no
// more cores than ranks) Go's scheduler polls the network only when
// sysmon makes it, every ~10 ms, and a flag put over TCP takes that long
// to arrive; and a yield does not give the core to another process, so
// with more ranks than cores the rank that is to write the flag may not
// run either. Parked, the goroutine lets the scheduler poll the network
// and the OS thread give its core away. The root package's benchmarks
// pace their polling the same way (flagLoop in notify_bench_test.go).
//
// The 50 µs count from the 8th look: the many short waits do not read
// the clock (a read costs about as much as a look on goroutine ranks).
//
// poll sleeps only over a transport whose arrivals come through the
// network poller (pollParks). Elsewhere a flag is written straight into
// memory and nothing ends a sleep early: an idle Go process sleeps in
// milliseconds, so a 1 µs sleep lasts up to about 1 ms, and the waits of
// large transfers (over 50 µs) would each pay it.
func poll(ctx context.Context, look func() (done bool, err error)) error {
	var start time.Time
	for looks := 1; ; looks++ {
		done, err := look()
		if done || err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if looks == pollClockLook {
			start = time.Now()
		}
		if !pollParks || looks <= max(pollYields, pollClockLook) || time.Since(start) < pollYieldTime {
			runtime.Gosched()
		} else {
			time.Sleep(pollSleep)
		}
	}
}

// pollParks reports whether poll parks between its later looks: whether
// the job's transport (NARMA_TRANSPORT, which narmarun sets for its ranks
// and which selects the in-process transport of goroutine ranks) delivers
// through the network poller.
var pollParks = func() bool {
	t := os.Getenv(bootstrap.EnvTransport)
	return t == "tcp" || t == "hybrid"
}()
