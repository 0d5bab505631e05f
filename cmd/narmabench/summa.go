package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/narma-rma/narma/internal/bench"
)

// `narmabench summa` is the SUMMA experiment's command: the flags of every
// experiment (parseFlags) and two of its own, --grid and --panel, which
// choose its layout (bench.SummaLayout). `list` and `all` take the
// experiment from the suite, with its default layout.
func init() { extraCommands["summa"] = summaCommand }

// summaHelp is what `narmabench summa -h` says of the flags of its own,
// after the others.
const summaHelp = `  -grid PRxPC
    	the process grid, PR rows by PC columns of ranks, e.g. 2x3; without -n, the job's
    	ranks are PR*PC (default: the most square grid of the job's ranks, PR <= PC)
  -panel B
    	panel width: columns of A and rows of B per step (default 32)
`

// summaCommand runs `narmabench summa` and returns the exit status.
func summaCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Under narmarun, rank 0 alone says what is wrong with the command
	// line, as command does: every rank finds the same (the flags of
	// summa name no files that one host could see and another not), and
	// run waits for narmarun to stop the others.
	ustderr := stderr
	if launchedRank() > 0 {
		ustderr = io.Discard
	}
	const name = "narmabench summa"
	rest, l, err := cutSummaFlags(args)
	if err != nil {
		fmt.Fprintf(ustderr, "%s: %v\n", name, err)
		return exitUsage
	}
	e := bench.SummaWith(l)
	o, err := parseFlags(e.Name, []bench.Experiment{e}, rest, ustderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(ustderr, summaHelp)
		return exitOK
	}
	if err != nil {
		if err != errPrinted {
			fmt.Fprintf(ustderr, "%s: %v\n", name, err)
		}
		return exitUsage
	}
	if n := l.Rows * l.Cols; n > 0 {
		if o.ranksSet && o.ranks != n {
			fmt.Fprintf(ustderr, "%s: -n %d: a grid of %d x %d needs %d ranks\n", name, o.ranks, l.Rows, l.Cols, n)
			return exitUsage
		}
		// Under the launcher, runJob then checks the job's size.
		o.ranks, o.ranksSet = n, true
	}
	return exitStatus(name, runExperiment(ctx, e, o, stdout, stderr), stderr, ustderr)
}

// valueFlags are the flags of parseFlags that take a value; cutSummaFlags
// skips their values (TestValueFlags checks the list against
// parseFlags).
var valueFlags = []string{"n", "sizes", "variants", "iters", "warmup", "rounds", "budget", "strategy", "csv", "json", "plot", "timeout"}

// cutSummaFlags takes --grid and --panel (with one or two dashes, the
// value after "=" or in the next argument) out of args, which it
// returns without them, with the layout they give. It stops where the
// flag package stops: at "--" or at the first argument that is not a
// flag.
func cutSummaFlags(args []string) (rest []string, l bench.SummaLayout, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return append(rest, args[i:]...), l, nil
		}
		fname, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if fname != "grid" && fname != "panel" {
			rest = append(rest, a)
			if !hasValue && slices.Contains(valueFlags, fname) && i+1 < len(args) {
				i++
				rest = append(rest, args[i])
			}
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, l, fmt.Errorf("flag needs an argument: -%s", fname)
			}
			i++
			value = args[i]
		}
		if fname == "grid" {
			if l.Rows, l.Cols, err = parseGrid(value); err != nil {
				return nil, l, err
			}
			continue
		}
		if l.Panel, err = strconv.Atoi(value); err != nil || l.Panel < 1 {
			return nil, l, fmt.Errorf("--panel %q: want a positive number of columns", value)
		}
	}
	return rest, l, nil
}

// parseGrid parses a process grid, PRxPC, e.g. "2x3".
func parseGrid(s string) (rows, cols int, err error) {
	r, c, ok := strings.Cut(strings.ToLower(s), "x")
	rows, err1 := strconv.Atoi(r)
	cols, err2 := strconv.Atoi(c)
	if !ok || err1 != nil || err2 != nil || rows < 1 || cols < 1 {
		return 0, 0, fmt.Errorf("--grid %q: want ROWSxCOLUMNS of ranks, e.g. 2x3", s)
	}
	return rows, cols, nil
}
