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
// (fabric.RawPingPong) of the same completion semantics, and with
// narma's tcp transport: ranks as two goroutines of this process.
func init() { extraCommands["fabric"] = fabricCommand }

func fabricCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("narmabench fabric", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizesFlag := fs.String("sizes", "8,64,4K", "message sizes")
	iters := fs.Int("iters", 2000, "round trips per round")
	rounds := fs.Int("rounds", 5, "measured rounds, interleaved")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: narmabench fabric [--sizes LIST] [--iters N] [--rounds N]")
		fmt.Fprintln(stderr, "Ping-pong of notified puts (8-byte tags) between two goroutine ranks. Raw, sent: libfabric's own fi_writedata")
		fmt.Fprintln(stderr, "loop, writes completing when sent, against narma's put-notify-local (PutNotify, FlushLocal) over the fabric")
		fmt.Fprintln(stderr, "transport. Raw, delivered: the writer waits for each write's delivery completion, against put-notify")
		fmt.Fprintln(stderr, "(PutNotify, Flush) over the fabric transport and over tcp. NARMA_FABRIC_PROVIDER (default tcp;ofi_rxm),")
		fmt.Fprintln(stderr, "NARMA_FABRIC_NODE (default 127.0.0.1 for tcp and sockets) and NARMA_FABRIC_DOMAIN choose the fabric.")
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

	// Two pairs, each narma against the raw loop of the same completion
	// semantics: a put whose origin waits only for its buffer
	// (put-notify-local) against fi_writedata completing when sent, and
	// a put followed by a Flush (put-notify, the paper's listing) against
	// fi_writedata whose writer waits for delivery completion.
	type column struct {
		name    string
		raw     bool   // the raw loop, else narma
		arg     string // the raw loop: "delivered" or ""; narma: its transport
		variant string // narma's ping-pong variant
		base    int    // the column a ratio is to, or -1
	}
	cols := []column{
		{name: "raw, sent", raw: true, base: -1},
		{name: "narma put-notify-local", arg: "fabric", variant: "put-notify-local", base: 0},
		{name: "raw, delivered", raw: true, arg: "delivered", base: -1},
		{name: "narma put-notify", arg: "fabric", variant: "put-notify", base: 2},
		{name: "tcp put-notify", arg: "tcp", variant: "put-notify", base: 2},
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "size\t")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t", c.name)
		if c.base >= 0 {
			fmt.Fprint(tw, "ratio\t")
		}
	}
	fmt.Fprintln(tw)
	for _, size := range sizes {
		times := make([][]float64, len(cols))
		for range *rounds {
			for i, c := range cols {
				if ctx.Err() != nil {
					return exitFail
				}
				var ns float64
				if c.raw {
					d, err := fabric.RawPingPong(cfg, size, *iters, *iters/10, c.arg == "delivered")
					if err != nil {
						fmt.Fprintf(stderr, "narmabench fabric: raw ping-pong of %d bytes: %v\n", size, err)
						return exitFail
					}
					ns = float64(d.Nanoseconds())
				} else {
					var err error
					if ns, err = pingPongOver(ctx, c.arg, c.variant, size, *iters); err != nil {
						fmt.Fprintf(stderr, "narmabench fabric: %s over %s, %d bytes: %v\n", c.variant, c.arg, size, err)
						return exitFail
					}
				}
				times[i] = append(times[i], ns)
			}
		}
		med := make([]float64, len(times))
		for i, t := range times {
			slices.Sort(t)
			med[i] = t[len(t)/2]
		}
		fmt.Fprintf(tw, "%s\t", bench.FormatSize(size))
		for i, c := range cols {
			fmt.Fprintf(tw, "%s\t", time.Duration(med[i]).Round(10*time.Nanosecond))
			if c.base >= 0 {
				fmt.Fprintf(tw, "%.2fx\t", med[i]/med[c.base])
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	return exitOK
}

// pingPongOver runs one round of the ping-pong experiment's variant
// between two goroutine ranks over the in-process transport tr and
// returns its half round trip in ns.
func pingPongOver(ctx context.Context, tr, variant string, size, iters int) (float64, error) {
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
		rows, err := bench.PingPong().Run(c, bench.Config{Sizes: []int{size}, Variants: []string{variant}, Iters: iters, Rounds: 1, Warmup: iters / 10})
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
