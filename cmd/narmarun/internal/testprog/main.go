package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/narma-rma/narma/internal/bootstrap"
)

func main() {
	failRank := flag.Int("fail-rank", -1, "rank that exits with status 3 after the first round")
	failAt := flag.String("fail-at", "round1", "when the failing rank exits: dial, round1 or end")
	flag.Parse()
	if err := run(*failRank, *failAt); err != nil {
		fmt.Fprintln(os.Stderr, "testprog:", err)
		os.Exit(1)
	}
}

// blob is what rank sends in round of job.
func blob(job string, rank, round int) []byte {
	return fmt.Appendf(nil, "%s/rank %d/round %d", job, rank, round)
}

func run(failRank int, failAt string) error {
	env, ok, err := bootstrap.FromEnv()
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("not started by a launcher")
	}
	if env.Rank == failRank && failAt == "dial" {
		os.Exit(3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := env.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	for round := range 2 {
		if round == 1 && env.Rank == failRank && failAt == "round1" {
			os.Exit(3)
		}
		all, err := c.Exchange(ctx, blob(env.Job, env.Rank, round))
		if err != nil {
			return err
		}
		if len(all) != env.Size {
			return fmt.Errorf("round %d: %d blobs for %d ranks", round, len(all), env.Size)
		}
		for r, b := range all {
			if want := blob(env.Job, r, round); !bytes.Equal(b, want) {
				return fmt.Errorf("round %d: rank %d sent %q, want %q", round, r, b, want)
			}
		}
	}
	if failAt == "end" {
		// Keep the connection until the process exits, as a rank that
		// joined does.
		if err := c.Watch(func(error) { os.Exit(1) }); err != nil {
			return err
		}
		if env.Rank == failRank {
			os.Exit(3)
		}
		// The others fail a moment later, as ranks that lost it.
		time.Sleep(300 * time.Millisecond)
		return fmt.Errorf("rank %d is gone", failRank)
	}
	if err := c.Close(); err != nil {
		return err
	}
	fmt.Printf("rank %d of %d: ok\n", env.Rank, env.Size)
	return nil
}
