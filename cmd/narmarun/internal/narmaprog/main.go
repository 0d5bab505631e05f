// Narmaprog is a narma program for narmarun's tests: it joins its job
// with narma.Init, prints "job <id>" (the job id from the environment),
// allocates a window and passes a token around the ranks with notified
// puts for -rounds rounds, then prints "rank R of N: ok".
//
// With -kill-rank R, rank R kills itself with SIGKILL in round
// -kill-round, leaving the others waiting for its token. With -fail-rank
// R, rank R instead fails after a first Barrier, as -fail-how says: it
// panics ("panic") or exits with status 3 ("exit3"), while the others
// wait in a second Barrier and exit with status 1 when it fails. With
// -print-listen, every rank prints "rank R listens on ADDR" for each TCP
// socket it listens on once it has joined (Linux: read from /proc), so
// that a test can check where the tcp transport listened. With -joined,
// every rank prints "rank R joined" once narma.Init has returned.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/narma-rma/narma"
)

// sayJoined is -joined.
var sayJoined bool

func main() {
	rounds := flag.Int("rounds", 100, "rounds of the token ring")
	killRank := flag.Int("kill-rank", -1, "rank that kills itself")
	killRound := flag.Int("kill-round", 10, "round in which it does")
	printListen := flag.Bool("print-listen", false, "print the TCP addresses this rank listens on")
	failRank := flag.Int("fail-rank", -1, "rank that fails after a first Barrier")
	failHow := flag.String("fail-how", "exit3", "how it fails: panic or exit3")
	flag.BoolVar(&sayJoined, "joined", false, `print "rank R joined" once Init has returned`)
	flag.Parse()
	if *failRank >= 0 {
		if err := fail(*failRank, *failHow); err != nil {
			fmt.Fprintln(os.Stderr, "narmaprog:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rounds, *killRank, *killRound, *printListen); err != nil {
		fmt.Fprintln(os.Stderr, "narmaprog:", err)
		os.Exit(1)
	}
}

func run(rounds, killRank, killRound int, printListen bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := narma.Init(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if sayJoined {
		fmt.Printf("rank %d joined\n", c.Rank())
	}
	if c.Rank() == 0 {
		fmt.Printf("job %s\n", os.Getenv("NARMA_JOB"))
	}
	if printListen {
		addrs, err := listening()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			fmt.Printf("rank %d listens on %s\n", c.Rank(), a)
		}
	}
	w, err := narma.Allocate[int64](ctx, c, 1)
	if err != nil {
		return err
	}
	if err := w.LockAll(ctx, 0); err != nil {
		return err
	}
	r, err := w.NotifyInit(narma.AnySource, 1, 1)
	if err != nil {
		return err
	}
	me, n := c.Rank(), c.Size()
	next := (me + 1) % n
	token := []int64{0}
	for k := 0; k < rounds; k++ {
		if me == killRank && k == killRound {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		if me != 0 || k > 0 {
			if err := r.Start(); err != nil {
				return err
			}
			if _, err := r.Wait(ctx); err != nil {
				return err
			}
			token[0] = w.Local()[0] + 1
		}
		if err := w.PutNotify(token, next, 0, narma.Tag(1)); err != nil {
			return err
		}
		if err := w.Flush(ctx, next); err != nil {
			return err
		}
	}
	if me == 0 {
		// The last token, from rank n-1, closes the ring.
		if err := r.Start(); err != nil {
			return err
		}
		if _, err := r.Wait(ctx); err != nil {
			return err
		}
		if got, want := w.Local()[0], int64(rounds*n-1); got != want {
			return fmt.Errorf("token %d after %d rounds of %d ranks, want %d", got, rounds, n, want)
		}
	}
	if err := r.Free(); err != nil {
		return err
	}
	if err := w.UnlockAll(ctx); err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if err := w.Free(ctx); err != nil {
		return err
	}
	fmt.Printf("rank %d of %d: ok\n", me, n)
	return nil
}

// fail runs the job of -fail-rank: rank failRank fails, as how says,
// once every rank has passed a first Barrier, a moment later so that
// the others wait in the second.
func fail(failRank int, how string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := narma.Init(ctx)
	if err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if c.Rank() == failRank {
		time.Sleep(20 * time.Millisecond)
		switch how {
		case "panic":
			panic(fmt.Sprintf("rank %d fails", failRank))
		case "exit3":
			os.Exit(3)
		}
		return fmt.Errorf("-fail-how %q: want panic or exit3", how)
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	return fmt.Errorf("rank %d did not fail", failRank)
}
