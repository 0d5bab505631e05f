//go:build fabric

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/narma-rma/narma"
	"github.com/narma-rma/narma/internal/bench"
	"github.com/narma-rma/narma/internal/transport/fabric"
)

// `narmabench fabric` (builds with the tag fabric) compares, in one run
// and in interleaved rounds, a ping-pong of notified puts over the
// fabric transport with libfabric's own ping-pong of fi_writedata
// (fabric.RawPingPong) and with narma's tcp transport: ranks as two
// goroutines of this process.
func init() { extraCommands["fabric"] = fabricCommand }

func fabricCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("narmabench fabric", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizesFlag := fs.String("sizes", "8,64,4K", "message sizes")
	iters := fs.Int("iters", 2000, "round trips per round")
	rounds := fs.Int("rounds", 5, "measured rounds, interleaved")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: narmabench fabric [--sizes LIST] [--iters N] [--rounds N]")
		fmt.Fprintln(stderr, "Ping-pong of notified puts (8-byte tags) between two goroutine ranks: libfabric's own fi_writedata")
		fmt.Fprintln(stderr, "loop, narma's put-notify over the fabric transport and over tcp. NARMA_FABRIC_PROVIDER (default")
		fmt.Fprintln(stderr, "tcp;ofi_rxm), NARMA_FABRIC_NODE (default 127.0.0.1 for tcp and sockets) and NARMA_FABRIC_DOMAIN choose the fabric.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	sizes, err := bench.ParseSizes(*sizesFlag)
	if err != nil || *iters <= 0 || *rounds <= 0 {
		fmt.Fprintf(stderr, "narmabench fabric: bad --sizes, --iters or --rounds (%v)\n", err)
		return exitUsage
	}
	cfg := fabric.Config{Provider: os.Getenv("NARMA_FABRIC_PROVIDER"), Node: os.Getenv("NARMA_FABRIC_NODE"), Domain: os.Getenv("NARMA_FABRIC_DOMAIN")}
	if cfg.Provider == "" {
		cfg.Provider = "tcp;ofi_rxm"
	}
	if cfg.Node == "" && (cfg.Provider == "tcp;ofi_rxm" || cfg.Provider == "sockets") {
		cfg.Node = "127.0.0.1"
	}
	// The narma jobs of this run read their transport's settings from
	// the environment.
	os.Setenv("NARMA_FABRIC_PROVIDER", cfg.Provider)
	os.Setenv("NARMA_FABRIC_NODE", cfg.Node)
	desc, err := fabric.Describe(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "narmabench fabric: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "# %s\n# ranks: 2 goroutines of this process; %d round trips per round, %d rounds interleaved; half round trips, medians\n", desc, *iters, *rounds)

	variants := []string{"raw fi_writedata", "narma put-notify (fabric)", "narma put-notify (tcp)"}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "size\t%s\t%s\tratio\t%s\tratio\t\n", variants[0], variants[1], variants[2])
	for _, size := range sizes {
		times := make([][]float64, len(variants))
		for range *rounds {
			if ctx.Err() != nil {
				return exitFail
			}
			d, err := fabric.RawPingPong(cfg, size, *iters, *iters/10)
			if err != nil {
				fmt.Fprintf(stderr, "narmabench fabric: raw ping-pong of %d bytes: %v\n", size, err)
				return exitFail
			}
			times[0] = append(times[0], float64(d.Nanoseconds()))
			for i, tr := range []string{"fabric", "tcp"} {
				ns, err := putNotifyOver(ctx, tr, size, *iters)
				if err != nil {
					fmt.Fprintf(stderr, "narmabench fabric: put-notify over %s, %d bytes: %v\n", tr, size, err)
					return exitFail
				}
				times[1+i] = append(times[1+i], ns)
			}
		}
		med := make([]float64, len(times))
		for i, t := range times {
			slices.Sort(t)
			med[i] = t[len(t)/2]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\t%s\t%.2fx\t\n", bench.FormatSize(size),
			time.Duration(med[0]).Round(10*time.Nanosecond), time.Duration(med[1]).Round(10*time.Nanosecond), med[1]/med[0],
			time.Duration(med[2]).Round(10*time.Nanosecond), med[2]/med[0])
	}
	tw.Flush()
	return exitOK
}

// putNotifyOver runs one round of the ping-pong experiment's put-notify
// variant between two goroutine ranks over the in-process transport tr
// and returns its half round trip in ns.
func putNotifyOver(ctx context.Context, tr string, size, iters int) (float64, error) {
	prev, had := os.LookupEnv("NARMA_TRANSPORT")
	os.Setenv("NARMA_TRANSPORT", tr)
	defer func() {
		if had {
			os.Setenv("NARMA_TRANSPORT", prev)
		} else {
			os.Unsetenv("NARMA_TRANSPORT")
		}
	}()
	var ns float64
	err := narma.RunContext(ctx, 2, func(c *narma.Comm) error {
		rows, err := bench.PingPong().Run(c, bench.Config{Sizes: []int{size}, Variants: []string{"put-notify"}, Iters: iters, Rounds: 1, Warmup: iters / 10})
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			if len(rows) != 1 {
				return fmt.Errorf("%d rows", len(rows))
			}
			ns = rows[0].MedianNs
		}
		return nil
	})
	return ns, err
}
