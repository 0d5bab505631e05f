package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// FormatSize returns a size in bytes as tables show it: "8 B", "4 KiB",
// "1 MiB" (in bytes when it is not a whole number of KiB or MiB).
func FormatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// ParseSize parses a size in bytes: a number with an optional binary
// suffix K, M or G (case-insensitive, optionally followed by "iB" or
// "B"), e.g. "8", "1K", "64KiB", "1M".
func ParseSize(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	shift := 0
	if k := len(t); k > 0 {
		switch t[k-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		}
		if shift > 0 {
			t = t[:k-1]
		}
	}
	v, err := strconv.Atoi(t)
	if err != nil || v < 0 || v > math.MaxInt32 {
		return 0, fmt.Errorf("bad size %q: want a number of bytes with an optional K, M or G suffix", s)
	}
	return v << shift, nil
}

// ParseSizes parses a comma-separated list of sizes (see ParseSize).
func ParseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		v, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		sizes = append(sizes, v)
	}
	return sizes, nil
}

// WriteTable writes the rows of experiment e as an aligned text table:
// one line per variant, one column per size, each cell the median time
// (what e.Measure says) in nanoseconds; then, per size, the ratio of the best
// classic variant to put-notify (above 1: notified access is faster),
// and a footnote for unsound variants.
func WriteTable(w io.Writer, e Experiment, rows []Row) error {
	if e.Params {
		return writeParams(w, e, rows)
	}
	var sizes []int
	cell := map[string]map[int]Row{}
	rounds := 0
	for _, r := range rows {
		if r.Experiment != e.Name {
			continue
		}
		if cell[r.Variant] == nil {
			cell[r.Variant] = map[int]Row{}
		}
		if _, seen := cell[r.Variant][r.Bytes]; !seen && !slices.Contains(sizes, r.Bytes) {
			sizes = append(sizes, r.Bytes)
		}
		cell[r.Variant][r.Bytes] = r
		rounds = r.Rounds
	}
	if len(sizes) == 0 {
		_, err := fmt.Fprintf(w, "%s: no measurements\n", e.Name)
		return err
	}
	measure, unit := e.Measure, "ns"
	if measure == "" {
		measure = "time"
	}
	if e.Value != nil {
		unit = e.Unit
	}
	fmt.Fprintf(w, "%s: %s in %s, median of %d rounds\n\n", e.Name, measure, unit, rounds)
	// Right-aligned numbers; the variant names, padded to one width,
	// stay left-aligned.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	width := len("variant")
	for _, v := range e.Variants {
		width = max(width, len(v.Label()))
	}
	fmt.Fprintf(tw, "%-*s\t", width, "variant")
	for _, s := range sizes {
		fmt.Fprintf(tw, "%s\t", FormatSize(s))
	}
	fmt.Fprintln(tw)
	var unsound []Variant
	for _, v := range e.Variants {
		bySize, ok := cell[v.Name]
		if !ok {
			continue
		}
		if v.Unsound {
			unsound = append(unsound, v)
		}
		fmt.Fprintf(tw, "%-*s\t", width, v.Label())
		for _, s := range sizes {
			if r, ok := bySize[s]; ok && e.Value != nil {
				fmt.Fprintf(tw, "%.1f\t", e.Value(r))
			} else if ok {
				fmt.Fprintf(tw, "%.0f\t", r.MedianNs)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if notify, ok := cell["put-notify"]; ok && e.Value == nil {
		header := false
		for _, s := range sizes {
			n, ok := notify[s]
			if !ok {
				continue
			}
			best, bestName := math.Inf(1), ""
			for _, v := range e.Variants {
				if r, ok := cell[v.Name][s]; ok && v.Classic && r.MedianNs < best {
					best, bestName = r.MedianNs, v.Name
				}
			}
			if bestName == "" {
				continue
			}
			if !header {
				fmt.Fprintln(w, "\nbest classic variant / put-notify (above 1: notified access is faster):")
				header = true
			}
			fmt.Fprintf(w, "%9s  %-10s %6.2f\n", FormatSize(s), bestName, best/n.MedianNs)
		}
	}
	if len(unsound) > 0 {
		fmt.Fprintln(w)
	}
	for _, v := range unsound {
		fmt.Fprintf(w, "* %s: %s.\n", v.Name, v.Summary)
	}
	return nil
}

// CSVHeader is the header line of WriteCSV, one name per column.
var CSVHeader = []string{"experiment", "variant", "bytes", "ranks", "iters", "rounds", "median_ns", "min_ns", "max_ns", "mb_per_s", "unsound", "overlap_pct"}

// WriteCSV writes rows as CSV with the header CSVHeader.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	for _, r := range rows {
		rec := []string{r.Experiment, r.Variant, strconv.Itoa(r.Bytes), strconv.Itoa(r.Ranks),
			strconv.Itoa(r.Iters), strconv.Itoa(r.Rounds), f(r.MedianNs), f(r.MinNs), f(r.MaxNs),
			f(r.MBps), strconv.FormatBool(r.Unsound), f(r.OverlapPct)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes rows as an indented JSON array of Row objects.
func WriteJSON(w io.Writer, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// writeParams is WriteTable for a parameter experiment: one line per
// row, with the value (e.Value, else the median time), where it was
// measured, and its range over the rounds.
func writeParams(w io.Writer, e Experiment, rows []Row) error {
	value := func(r Row) float64 { return r.MedianNs }
	if e.Value != nil {
		value = e.Value
	}
	fmt.Fprintf(w, "%s: %s, median of the rounds\n\n", e.Name, e.Measure)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "parameter\tvalue\tmeasured at\tmin\tmax\t")
	n := 0
	for _, r := range rows {
		if r.Experiment != e.Name {
			continue
		}
		at := "-"
		if r.Bytes > 0 {
			at = FormatSize(r.Bytes)
		}
		fmt.Fprintf(tw, "%s\t%.4g\t%s\t%.4g\t%.4g\t\n", r.Variant, value(r), at, r.MinNs, r.MaxNs)
		n++
	}
	if n == 0 {
		_, err := fmt.Fprintf(w, "%s: no measurements\n", e.Name)
		return err
	}
	return tw.Flush()
}
